"""The AMF calls of a capture: each exchange's request and response packets decoded by
`amfkit.remoting.packet.decode` (with its limits, and leniently: `LENIENT`), batches split
into calls, each call paired with its answer: NetConnection bodies by response URI (`/1`
and `/1/onResult` or `/1/onStatus`), Flex messages by messageId and correlationId."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable

from .. import _amfkit
from .._text import error_text
from ..remoting import packet
from ..remoting.messages import AbstractMessage, CommandMessage, ErrorMessage, RemotingMessage
from .exchange import Exchange

__all__ = ["AMF_TYPE", "LENIENT", "Call", "Calls", "Limits", "calls_of", "command_name", "fault_of"]

AMF_TYPE = "application/x-amf"

#: How a captured body is read besides its limits. Someone else wrote it, so an
#: externalizable class nobody registered here is kept as an `amfkit.Opaque` (its bytes,
#: written back byte for byte) instead of failing the whole body, where the decoder finds
#: that sound: where the object ends its body, or its part's length field is true
#: (docs/cli.md, "Bytes others wrote"); elsewhere the body is still refused. Reading
#: captures only: a replay gateway reads its live clients' requests strictly.
LENIENT: Mapping[str, str] = MappingProxyType({"unknown_externalizable": "opaque"})

#: CommandMessage operations by name (MESSAGING-NOTES.md).
_COMMANDS = {
    0: "subscribe", 1: "unsubscribe", 2: "poll", 4: "client_sync", 5: "ping", 7: "cluster_request",
    8: "login", 9: "logout", 10: "subscription_invalidate", 11: "multi_subscribe", 12: "disconnect",
    13: "trigger_connect",
}


@dataclass(frozen=True)
class Limits:
    """The decoder limits every captured body is read with (the library's defaults)."""

    max_depth: int = _amfkit.DEFAULT_MAX_DEPTH
    max_objects: int = _amfkit.DEFAULT_MAX_OBJECTS
    max_size: int = _amfkit.DEFAULT_MAX_SIZE


class Call:
    """One call of a capture and what answered it.

    `target` is "Service.method" (a NetConnection target, or a Flex RemotingMessage's
    destination and operation) or "command NAME" for a Flex CommandMessage; `arguments`
    the argument list; `result` the value answered (a Flex acknowledgement's body);
    `fault` (code, message, details) when the answer was a fault; `answered` False when
    the capture holds no answer for it.

    A call read from a capture keeps its answer as the response's bytes and decodes it
    when `result` or `answer` is read (each time: a capture of thousands of large answers
    is never held decoded at once); the arguments and the fault are decoded up front."""

    __slots__ = ("index", "exchange", "version", "response_uri", "target", "arguments", "message", "answered", "fault",
                 "headers", "batch", "packets", "_result", "_answer", "_source")

    def __init__(
        self,
        index: int,
        exchange: Exchange,
        version: int,
        response_uri: str,
        target: str,
        arguments: list[Any],
        message: AbstractMessage | None = None,
        answered: bool = False,
        result: Any = None,
        fault: tuple[str, str, Any] | None = None,
        answer: Any = None,
        headers: list[packet.Header] | None = None,
        batch: int = 1,
    ) -> None:
        self.index = index
        self.exchange = exchange
        self.version = version
        self.response_uri = response_uri
        self.target = target
        self.arguments = arguments
        self.message = message
        self.answered = answered
        self.fault = fault
        self.headers = headers if headers is not None else []
        self.batch = batch
        #: The bytes of the request and the response packets it was read from (a body as
        #: recorded, or the alternative reading of a lossy one); None when not read so.
        self.packets: tuple[bytes, bytes | None] | None = None
        self._result = result
        self._answer = answer
        #: (the response packet's bytes, the answering body's index, the decoder's options).
        self._source: tuple[bytes, int, Mapping[str, Any]] | None = None

    def __repr__(self) -> str:
        return f"Call({self.index}, {self.target!r}, {self.outcome})"

    def _decoded(self) -> tuple[Any, Any]:
        """(result, answer) from the response's bytes."""
        assert self._source is not None
        raw, i, options = self._source
        body = packet.decode(raw, **options).bodies[i]
        msg = message_of(body.value)
        if msg is not None:
            return (None if isinstance(msg, ErrorMessage) else msg.body), msg
        return (None if self.fault is not None else body.value), body.value

    @property
    def result(self) -> Any:
        return self._decoded()[0] if self._source is not None else self._result

    @result.setter
    def result(self, value: Any) -> None:
        self._source, self._result = None, value

    @property
    def answer(self) -> Any:
        return self._decoded()[1] if self._source is not None else self._answer

    @answer.setter
    def answer(self, value: Any) -> None:
        self._source, self._answer = None, value

    @property
    def kind(self) -> str:
        """"netconnection", "remoting" (a Flex RemotingMessage) or "command"."""
        if self.message is None:
            return "netconnection"
        return "command" if isinstance(self.message, CommandMessage) else "remoting"

    @property
    def message_id(self) -> str | None:
        mid = getattr(self.message, "messageId", None)
        return mid if isinstance(mid, str) else None

    @property
    def correlation_id(self) -> str | None:
        cid = getattr(self.answer, "correlationId", None)
        return cid if isinstance(cid, str) else None

    @property
    def outcome(self) -> str:
        """"ok", "fault" or "unanswered"."""
        if not self.answered:
            return "unanswered"
        return "fault" if self.fault is not None else "ok"


@dataclass
class Calls:
    """A capture read as calls: `calls` in order; `problems` one line for each AMF
    exchange that could not be read (or was read with a doubt, such as a lossy body);
    `notes` one line for each registered class that arrived with other members than it
    declares (read all the same: `amfkit decode`'s notes); `skipped` the count of
    exchanges that are not AMF."""

    calls: list[Call] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: int = 0
    exchanges: int = 0

    def filtered(self, *, target: str | None = None, url: str | None = None, status: str | None = None) -> list[Call]:
        """The calls whose target matches the glob `target` ("UserService.*"), whose URL
        contains `url` (or matches it as a glob), and whose `status` is the HTTP status
        ("200", "5xx") or the outcome ("ok", "fault", "unanswered")."""
        out = []
        for c in self.calls:
            if target is not None and not fnmatch.fnmatchcase(c.target, target):
                continue
            if url is not None and url not in c.exchange.url and not fnmatch.fnmatchcase(c.exchange.url, url):
                continue
            if status is not None and not _status_matches(c, status):
                continue
            out.append(c)
        return out


def _status_matches(call: Call, status: str) -> bool:
    s = status.strip().lower()
    if s in ("ok", "fault", "unanswered"):
        return call.outcome == s
    code = call.exchange.status
    if code is None:
        return False
    text = str(code)
    return len(s) == len(text) and all(p == "x" or p == t for p, t in zip(s, text))


def is_amf(ex: Exchange) -> bool:
    return AMF_TYPE in (ex.request_type, ex.response_type)


def calls_of(
    exchanges: Iterable[Exchange],
    limits: Limits = Limits(),
    *,
    unknown_externalizable: str = LENIENT["unknown_externalizable"],
    externalizable: Mapping[str, str] | None = None,
) -> Calls:
    """Every AMF call of `exchanges`, in order. The bodies are read with `limits` and the
    decoder's lenient options: `unknown_externalizable` ("opaque", the default here, or
    "error") and `externalizable` (`{"com.x.List": "arraycollection"}`: how to read
    classes known to carry one value; `amfkit.remoting.packet.decode`). A registered
    class whose members on the wire are not the ones it declares is read all the same,
    and named once in `notes`."""
    out = Calls()
    options: dict[str, Any] = {
        "max_depth": limits.max_depth,
        "max_objects": limits.max_objects,
        "max_size": limits.max_size,
        "unknown_externalizable": unknown_externalizable,
        "externalizable": dict(externalizable) if externalizable else None,
    }
    mismatches: set[str] = set()
    for ex in exchanges:
        out.exchanges += 1
        if not is_amf(ex):
            out.skipped += 1
            continue
        where = ex.source or f"exchange #{ex.index}"
        for note in ex.notes:
            out.problems.append(f"{where}: {note}")
        if ex.request_body is None:
            if not ex.notes:
                out.problems.append(f"{where}: no request body recorded")
            continue
        heard: list[str] = []
        request, why, sent = _decode(ex.request_body, ex.candidates.get("request", ()), options, heard)
        if request is None:
            out.problems.append(f"{where}: request: {why}")
            continue
        response, raw = None, b""
        if ex.response_body is not None:
            response, why, raw = _decode(ex.response_body, ex.candidates.get("response", ()), options, heard)
            if response is None:
                out.problems.append(f"{where}: response: {why}")
        for note in heard:
            if note not in mismatches:  # once per capture: every answer of a server repeats it
                mismatches.add(note)
                out.notes.append(f"{where}: {note}")
        paired = _pair(ex, request, response, len(out.calls), (raw, options))
        for call in paired:
            call.packets = (sent, raw if response is not None else None)
        out.calls.extend(paired)
    return out


def _decode(data: bytes, alternatives: Iterable[bytes], options: Mapping[str, Any], heard: list[str]) -> tuple[packet.Envelope | None, str, bytes]:
    """The packet in `data` (or the first of `alternatives` that decodes) and the bytes
    it was read from, or None and the first error. What the decoder's `on_mismatch`
    reports goes to `heard`, one line each."""

    from ..payload import mismatch_text

    def mismatch(alias: str, undeclared: tuple[str, ...], missing: tuple[str, ...]) -> None:
        heard.append(mismatch_text(alias, undeclared, missing))

    first = ""
    for raw in (data, *alternatives):
        try:
            return packet.decode(raw, **options, on_mismatch=mismatch), "", raw
        except Exception as e:  # DecodeError, or a reader of an externalizable class
            if not first:
                first = f"not an AMF packet: {error_text(e)}" if raw else "empty body"
    return None, first, b""


def _pair(ex: Exchange, request: packet.Envelope, response: packet.Envelope | None, start: int, source: tuple[bytes, Mapping[str, Any]]) -> list[Call]:
    answers: dict[str, tuple[int, packet.Body]] = {}
    by_correlation: dict[str, tuple[int, packet.Body]] = {}
    for i, body in enumerate(response.bodies if response is not None else ()):
        uri, _, _ = body.target.rpartition("/")
        answers.setdefault(uri, (i, body))
        msg = message_of(body.value)
        cid = getattr(msg, "correlationId", None)
        if isinstance(cid, str):
            by_correlation.setdefault(cid, (i, body))
    out: list[Call] = []
    for body in request.bodies:
        msg = message_of(body.value)
        if msg is None:
            args = body.value if isinstance(body.value, list) else [body.value]
            call = Call(start + len(out), ex, request.version, body.response, body.target, list(args))
        else:
            call = Call(start + len(out), ex, request.version, body.response, target_of(msg), _arguments(msg), msg)
        call.headers = request.headers
        call.batch = len(request.bodies)
        answer = answers.get(body.response)
        if call.message_id is not None:
            by_id = by_correlation.get(call.message_id)
            if by_id is not None:
                answer = by_id
        if answer is not None:
            _answer(call, *answer, source)
        out.append(call)
    return out


def _answer(call: Call, index: int, body: packet.Body, source: tuple[bytes, Mapping[str, Any]]) -> None:
    """Pair `call` with the response body `index`: the fault now, the result and answer
    decoded again from the response's bytes when read."""
    call.answered = True
    msg = message_of(body.value)
    if isinstance(msg, ErrorMessage):
        call.fault = fault_of(msg)
    elif msg is None and body.target.endswith("/onStatus"):
        call.fault = fault_of(body.value)
    call._source = (source[0], index, source[1])


def fault_of(value: Any) -> tuple[str, str, Any]:
    """(code, message, details) of a recorded fault: a Flex ErrorMessage, or the status
    object of a NetConnection `onStatus` answer."""
    if isinstance(value, ErrorMessage):
        details = value.extendedData if value.extendedData is not None else value.faultDetail
        return _text(value.faultCode), _text(value.faultString), details
    get = value.get if isinstance(value, dict) else (lambda k, d=None: getattr(value, k, d))
    return _text(get("code")), _text(get("description")), get("details")


def _text(v: Any) -> str:
    return v if isinstance(v, str) else "" if v is None else str(v)


def message_of(value: Any) -> AbstractMessage | None:
    """The Flex message a body holds, alone or in an array of one."""
    if isinstance(value, AbstractMessage):
        return value
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], AbstractMessage):
        return value[0]
    return None


def command_name(message: CommandMessage) -> str:
    op = message.operation
    if isinstance(op, (int, float)) and not isinstance(op, bool) and op == int(op):
        return _COMMANDS.get(int(op), f"operation {int(op)}")
    return f"operation {op!r}"


def target_of(message: AbstractMessage) -> str:
    """What a Flex message calls: "destination.operation" or "command NAME"."""
    if isinstance(message, RemotingMessage):
        return f"{_text(message.destination)}.{_text(message.operation)}"
    if isinstance(message, CommandMessage):
        return f"command {command_name(message)}"
    return f"message to {_text(message.destination)}"


def _arguments(message: AbstractMessage) -> list[Any]:
    if isinstance(message, CommandMessage):
        return [] if message.body is None else [message.body]
    body = message.body
    if body is None:
        return []
    return list(body) if isinstance(body, list) else [body]
