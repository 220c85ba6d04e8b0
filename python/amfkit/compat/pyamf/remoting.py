"""`pyamf.remoting`: the remoting envelope (`Envelope`, `Request`, `Response`, faults)
and its `encode`/`decode`, on amfkit's packet codec (`amfkit.remoting.packet`).

As PyAMF: a body whose target ends in `/onResult`, `/onStatus` or `/onDebugEvents` is a
`Response` (keyed by the target without it), any other a `Request` (keyed by its response
id); an `/onStatus` object becomes an `ErrorFault`. Flex messages in the bodies come back
as amfkit's message classes (`amfkit.remoting.messages`: `messageId`, `body`,
`correlationId`, ... as attributes). Unlike PyAMF, `encode` always writes the real
header and body lengths (PyAMF writes 0 unless strict; readers ignore them).
"""

from __future__ import annotations

from typing import Any, Iterator

from amfkit.remoting import packet

from . import _classes
from ._codec import AMF3, _no_timezone_offset, decode_values
from ._errors import BaseError
from ._shapes import Writer
from ._types import ASObject
from .util import BufferedByteStream, as_bytes

__all__ = [
    "BaseFault",
    "Envelope",
    "ErrorFault",
    "HeaderCollection",
    "Message",
    "RemotingCallFailed",
    "RemotingError",
    "Request",
    "Response",
    "decode",
    "encode",
    "get_exception_from_fault",
    "get_fault",
    "get_fault_class",
]

STATUS_OK = 0
STATUS_ERROR = 1
STATUS_DEBUG = 2
STATUS_CODES = {STATUS_OK: "/onResult", STATUS_ERROR: "/onStatus", STATUS_DEBUG: "/onDebugEvents"}

CONTENT_TYPE = "application/x-amf"

ERROR_CALL_FAILED = 0
ERROR_CODES = {ERROR_CALL_FAILED: "Server.Call.Failed"}

APPEND_TO_GATEWAY_URL = "AppendToGatewayUrl"
REPLACE_GATEWAY_URL = "ReplaceGatewayUrl"
REQUEST_PERSISTENT_HEADER = "RequestPersistentHeader"


class RemotingError(BaseError):
    """A remoting call failed."""


class RemotingCallFailed(RemotingError):
    """The fault code `Server.Call.Failed`."""


if ERROR_CODES[ERROR_CALL_FAILED] not in _classes.state().ERROR_CLASS_MAP:
    _classes.add_error_class(RemotingCallFailed, ERROR_CODES[ERROR_CALL_FAILED])


class HeaderCollection(dict):
    """The envelope's headers: name -> value, and which ones must be understood."""

    def __init__(self, raw_headers: Any = ()) -> None:
        super().__init__()
        self.required: list[str] = []
        for name, required, value in raw_headers:
            self[name] = value
            if required:
                self.required.append(name)

    def is_required(self, idx: str) -> bool:
        if idx not in self:
            raise KeyError(f"unknown header {idx}")
        return idx in self.required

    def set_required(self, idx: str, value: bool = True) -> None:
        if idx not in self:
            raise KeyError(f"unknown header {idx}")
        if value and idx not in self.required:
            self.required.append(idx)
        elif not value and idx in self.required:
            self.required.remove(idx)


class Message:
    """A body of the envelope: its `body` (the value); `headers` are the envelope's."""

    def __init__(self, envelope: Envelope | None, body: Any) -> None:
        self.envelope = envelope
        self.body = body

    @property
    def headers(self) -> HeaderCollection | None:
        return None if self.envelope is None else self.envelope.headers

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.__class__) and self.body == other.body

    __hash__ = None  # type: ignore[assignment]


class Request(Message):
    """A call: `target` (`"Service.method"`) and `body`, the list of arguments."""

    def __init__(self, target: str, body: Any = None, envelope: Envelope | None = None) -> None:
        super().__init__(envelope, body or [])
        self.target = target

    def __repr__(self) -> str:
        return f"<{type(self).__name__} target={self.target!r}>{self.body!r}</{type(self).__name__}>"

    def __eq__(self, other: object) -> bool:
        return super().__eq__(other) and self.target == other.target  # type: ignore[attr-defined]


class Response(Message):
    """An answer: `body` (the result, or a fault) and `status` (`STATUS_OK`, ...)."""

    def __init__(self, body: Any, status: int = STATUS_OK, envelope: Envelope | None = None) -> None:
        super().__init__(envelope, body)
        self.status = status

    def __repr__(self) -> str:
        return f"<{type(self).__name__} status={_status(self.status)}>{self.body!r}</{type(self).__name__}>"

    def __eq__(self, other: object) -> bool:
        return super().__eq__(other) and self.status == other.status  # type: ignore[attr-defined]


class Envelope:
    """A whole remoting packet: `amfVersion` (0 or 3), `headers`, and `bodies` (a list
    of (name, Request or Response)); indexed by name like a dict."""

    def __init__(self, amfVersion: int | None = None) -> None:
        self.amfVersion = amfVersion
        self.headers = HeaderCollection()
        self.bodies: list[tuple[str, Message]] = []

    def __repr__(self) -> str:
        lines = [f"<Envelope amfVersion={self.amfVersion!r}>"]
        lines += [f" {h!r}" for h in self.headers]
        lines += [f" {body!r}" for body in self]
        return "\n".join(lines + ["</Envelope>"])

    def __setitem__(self, name: str, value: Message) -> None:
        if not isinstance(value, Message):
            raise TypeError("Message instance expected")
        for i, (key, _) in enumerate(self.bodies):
            if key == name:
                self.bodies[i] = (name, value)
                break
        else:
            self.bodies.append((name, value))
        value.envelope = self

    def __getitem__(self, name: str) -> Message:
        for key, value in self.bodies:
            if key == name:
                return value
        raise KeyError(name)

    def __bool__(self) -> bool:
        return bool(self.bodies) or bool(self.headers)

    def __iter__(self) -> Iterator[tuple[str, Message]]:
        return iter(list(self.bodies))

    def __len__(self) -> int:
        return len(self.bodies)

    def iteritems(self) -> Iterator[tuple[str, Message]]:
        return iter(list(self.bodies))

    def keys(self) -> list[str]:
        return [key for key, _ in self.bodies]

    def items(self) -> list[tuple[str, Message]]:
        return self.bodies

    def __contains__(self, name: object) -> bool:
        return any(key == name for key, _ in self.bodies)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Envelope):
            return (self.amfVersion, self.headers, self.bodies) == (other.amfVersion, other.headers, other.bodies)
        if hasattr(other, "keys") and hasattr(other, "items"):
            return sorted(self.keys()) == sorted(other.keys()) and all(self[k] == v for k, v in other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class BaseFault:
    """A fault (Flex's `mx.rpc.Fault`): `level`, `code`, `type`, `details`, `description`."""

    level: str | None = None

    class __amf__:
        static = ("level", "code", "type", "details", "description")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.code = kwargs.get("code", "")
        self.type = kwargs.get("type", "")
        self.details = kwargs.get("details", "")
        self.description = kwargs.get("description", "")

    def __repr__(self) -> str:
        text = f"{type(self).__name__} level={self.level}"
        for name in ("code", "type", "description"):
            value = getattr(self, name)
            if value not in ("", None):
                text += f" {name}={value!r}"
        if self.details not in ("", None):
            text += f"\nTraceback:\n{self.details!r}"
        return text

    def raiseException(self) -> None:
        """Raise the exception class mapped to this fault's code (`add_error_class`)."""
        raise get_exception_from_fault(self)(self.description, None)


class ErrorFault(BaseFault):
    """A fault of level `error`."""

    level = "error"


_classes.register_class(ErrorFault)


def get_fault_class(level: str, **kwargs: Any) -> type[BaseFault]:
    return ErrorFault if level == "error" else BaseFault


def get_fault(data: dict[str, Any]) -> BaseFault:
    """The fault an `/onStatus` object describes."""
    members = dict(data)
    level = members.pop("level", "error")
    return get_fault_class(level, **members)(**{str(k): v for k, v in members.items()})


def get_exception_from_fault(fault: BaseFault) -> type[BaseException]:
    return _classes.state().ERROR_CLASS_MAP.get(fault.code, RemotingError)


def _status(status: int) -> str:
    if status not in STATUS_CODES:
        raise ValueError("unknown status code")
    return STATUS_CODES[status]


def decode(stream: Any, strict: bool = False, logger: Any = None, timezone_offset: Any = None, **kwargs: Any) -> Envelope:
    """The envelope in `stream` (bytes, a `BufferedByteStream` from its position, or a
    file-like object); a malformed one raises `DecodeError`."""
    _no_timezone_offset(timezone_offset)
    if isinstance(stream, BufferedByteStream):
        data = stream.read(stream.remaining()) if stream.remaining() else b""
    elif hasattr(stream, "read"):
        data = stream.read()
    else:
        data = as_bytes(stream)
    decoded: list[packet.Envelope] = []

    def read(data: bytes) -> list[Any]:
        decoded[:] = [packet.decode(data)]
        env = decoded[0]
        return [h.value for h in env.headers] + [b.value for b in env.bodies]

    values = decode_values(read, data)
    raw = decoded[0]
    msg = Envelope(raw.version)
    for header, value in zip(raw.headers, values):
        msg.headers[header.name] = value
        if header.must_understand:
            msg.headers.set_required(header.name)
    for body, value in zip(raw.bodies, values[len(raw.headers) :]):
        target = body.target
        for status, suffix in STATUS_CODES.items():
            if target.endswith(suffix):
                if status == STATUS_ERROR and isinstance(value, ASObject):
                    value = get_fault(value)
                msg[target[: -len(suffix)]] = Response(value, status)
                break
        else:
            msg[body.response] = Request(target, body=value)
    return msg


def encode(msg: Envelope, strict: bool = False, logger: Any = None, timezone_offset: Any = None, **kwargs: Any) -> BufferedByteStream:
    """The envelope's bytes, as a `BufferedByteStream` at position 0."""
    _no_timezone_offset(timezone_offset)
    headers = [packet.Header(name, value, must_understand=msg.headers.is_required(name)) for name, value in msg.headers.items()]
    bodies = []
    for name, message in msg.items():
        if isinstance(message, Request):
            bodies.append(packet.Body(str(message.target), name, list(message.body)))
        elif isinstance(message, Response):
            bodies.append(packet.Body(f"{name}{_status(message.status)}", "null", message.body))
        else:
            raise TypeError("unknown message type")
    version = AMF3 if msg.amfVersion == AMF3 else (msg.amfVersion or 0)
    with Writer(strict=strict) as writer:
        data = packet.encode(packet.Envelope(version, headers, bodies), default=writer.default)
    return BufferedByteStream(data)
