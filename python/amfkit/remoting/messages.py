"""Flex messages: what RemoteObject, Producer and Consumer send and receive, in their
full forms (typed objects) and their small ones (`DSK`, `DSA`, `DSC`: externalizable,
flag bytes then the flagged values); docs/gateway.md, "Flex messages", has the layout.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Any

from .._registry import register_class

__all__ = [
    "AbstractMessage",
    "AcknowledgeMessage",
    "AsyncMessage",
    "CommandMessage",
    "ErrorMessage",
    "RemotingMessage",
    "Operation",
    "new_id",
]


_random = b""  # random bytes read ahead from the OS, 16 per id
_taken = 0
_random_lock = threading.Lock()


def _forked() -> None:
    """A forked child must not hand out the ids its parent will."""
    global _random, _taken
    _random, _taken = b"", 0


os.register_at_fork(after_in_child=_forked)


def new_id() -> str:
    """A Flex message or client id: an uppercase random (version 4) UUID. Its 122 random
    bits come from the OS's generator as `uuid.uuid4`'s do, read 4 KiB at a time: a
    third of the cost (ids are made for every message and answer)."""
    global _random, _taken
    with _random_lock:
        if _taken >= len(_random):
            _random, _taken = os.urandom(4096), 0
        b = _random[_taken : _taken + 16]
        _taken += 16
    h = b.hex().upper()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89AB'[b[8] & 3]}{h[17:20]}-{h[20:]}"


def _now_ms() -> int:
    return int(time.time() * 1000)


class Operation:
    """CommandMessage operations."""

    SUBSCRIBE = 0
    UNSUBSCRIBE = 1
    POLL = 2
    CLIENT_SYNC = 4
    CLIENT_PING = 5
    CLUSTER_REQUEST = 7
    LOGIN = 8
    LOGOUT = 9
    SUBSCRIPTION_INVALIDATE = 10
    MULTI_SUBSCRIBE = 11
    DISCONNECT = 12
    TRIGGER_CONNECT = 13


class AbstractMessage:
    # Class defaults: a message decoded with fewer sealed members than its class has
    # (any peer may send one) reads None for the missing ones.
    body: Any = None
    clientId: Any = None
    destination: Any = None
    headers: Any = None
    messageId: Any = None
    timestamp: Any = None
    timeToLive: Any = None

    _fields: tuple[str, ...] = ("body", "clientId", "destination", "headers", "messageId", "timestamp", "timeToLive")

    def __init__(self, **members: Any) -> None:
        self.body = None
        self.clientId = None
        self.destination = None
        self.headers = {}
        self.messageId = new_id()
        self.timestamp = _now_ms()
        self.timeToLive = 0
        for k, v in members.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={getattr(self, k, None)!r}" for k in type(self)._fields)
        return f"{type(self).__name__}({shown})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, k, None) == getattr(other, k, None) for k in type(self)._fields)

    __hash__ = None  # type: ignore[assignment]

    # --- small forms -------------------------------------------------------------

    def _read_small(self, input: Any) -> None:
        flags = _read_flags(input)
        for i, f in enumerate(flags):
            known = 0
            if i == 0:
                for bit, name in enumerate(AbstractMessage._fields):
                    if f & (1 << bit):
                        setattr(self, name, input.read_object())
                known = 7
            elif i == 1:
                if f & 0x01:
                    self.clientId = _uuid_text(input.read_object())
                if f & 0x02:
                    self.messageId = _uuid_text(input.read_object())
                known = 2
            _skip(input, f, known)

    def _write_small(self, output: Any) -> None:
        # The values in AbstractMessage._fields order (every pushed copy goes through
        # here: plain attribute reads, no lookups by name).
        values = (self.body, self.clientId, self.destination, self.headers, self.messageId, self.timestamp, self.timeToLive)
        flags = 0
        bit = 1
        for value in values:
            if value is not None:
                flags |= bit
            bit <<= 1
        output.write_byte(flags)
        for value in values:
            if value is not None:
                output.write_object(value)


class AsyncMessage(AbstractMessage):
    correlationId: Any = None
    _fields = AbstractMessage._fields + ("correlationId",)

    def __init__(self, **members: Any) -> None:
        self.correlationId = None
        super().__init__(**members)

    def _read_small(self, input: Any) -> None:
        super()._read_small(input)
        for i, f in enumerate(_read_flags(input)):
            known = 0
            if i == 0:
                if f & 0x01:
                    self.correlationId = input.read_object()
                if f & 0x02:
                    self.correlationId = _uuid_text(input.read_object())
                known = 2
            _skip(input, f, known)

    def _write_small(self, output: Any) -> None:
        super()._write_small(output)
        if self.correlationId is None:
            output.write_byte(0)
        else:
            output.write_byte(0x01)
            output.write_object(self.correlationId)


class AcknowledgeMessage(AsyncMessage):
    """The answer to a message; `body` is the result."""

    small = False

    def _read_small(self, input: Any) -> None:
        super()._read_small(input)
        for f in _read_flags(input):
            _skip(input, f, 0)

    def _write_small(self, output: Any) -> None:
        super()._write_small(output)
        output.write_byte(0)


class ErrorMessage(AcknowledgeMessage):
    """A fault. Every field is always written: strict clients reject partial ones."""

    faultCode: Any = None
    faultString: Any = None
    faultDetail: Any = None
    rootCause: Any = None
    extendedData: Any = None
    _fields = AcknowledgeMessage._fields + ("faultCode", "faultString", "faultDetail", "rootCause", "extendedData")

    def __init__(self, **members: Any) -> None:
        self.faultCode = None
        self.faultString = None
        self.faultDetail = None
        self.rootCause = None
        self.extendedData = None
        super().__init__(**members)


class RemotingMessage(AbstractMessage):
    """A RemoteObject call: `destination` (the service), `operation` (the method), `body`
    (the arguments)."""

    operation: Any = None
    source: Any = None
    _fields = AbstractMessage._fields + ("operation", "source")

    def __init__(self, **members: Any) -> None:
        self.operation = None
        self.source = None
        super().__init__(**members)


class CommandMessage(AsyncMessage):
    """A command: ping, login, logout, subscribe, poll... (`operation`, see `Operation`)."""

    operation: Any = None
    messageRefType: Any = None
    _fields = AsyncMessage._fields + ("operation", "messageRefType")

    def __init__(self, **members: Any) -> None:
        self.operation = Operation.CLIENT_PING
        self.messageRefType = None
        super().__init__(**members)

    def _read_small(self, input: Any) -> None:
        super()._read_small(input)
        for i, f in enumerate(_read_flags(input)):
            known = 0
            if i == 0:
                if f & 0x01:
                    self.operation = input.read_object()
                known = 1
            _skip(input, f, known)

    def _write_small(self, output: Any) -> None:
        super()._write_small(output)
        output.write_byte(0x01)
        output.write_object(self.operation)


def _read_flags(input: Any) -> list[int]:
    flags = []
    while True:
        f = input.read_unsigned_byte()
        flags.append(f)
        if not f & 0x80:
            return flags
        if len(flags) > 16:
            raise input.error("a small-form message with more than 16 flag bytes")


def _skip(input: Any, flags: int, known: int) -> None:
    """Read and drop the values of flag bits this reader does not know."""
    for bit in range(known, 7):
        if flags & (1 << bit):
            input.read_object()


def _uuid_text(raw: Any) -> Any:
    if isinstance(raw, (bytes, bytearray)) and len(raw) == 16:
        return str(uuid.UUID(bytes=bytes(raw))).upper()
    return raw


# The small forms: externalizable subclasses reading and writing the flag layout.


class _Small:
    small = True

    def __readamf__(self, input: Any) -> None:
        # Built with __new__: every field starts absent, then the flagged ones are read.
        for name in self._fields:  # type: ignore[attr-defined]
            setattr(self, name, None)
        self.headers: dict[str, Any] = {}
        self._read_small(input)  # type: ignore[attr-defined]

    def __writeamf__(self, output: Any) -> None:
        self._write_small(output)  # type: ignore[attr-defined]


class AcknowledgeMessageExt(_Small, AcknowledgeMessage):
    pass


class AsyncMessageExt(_Small, AsyncMessage):
    pass


class CommandMessageExt(_Small, CommandMessage):
    pass


_FULL = "flex.messaging.messages."
for _cls in (AbstractMessage, AsyncMessage, AcknowledgeMessage, ErrorMessage, RemotingMessage, CommandMessage):
    register_class(_cls, _FULL + _cls.__name__, static=tuple(sorted(_cls._fields)), dynamic=False)
register_class(AcknowledgeMessageExt, "DSK", externalizable=True)
register_class(AsyncMessageExt, "DSA", externalizable=True)
register_class(CommandMessageExt, "DSC", externalizable=True)
