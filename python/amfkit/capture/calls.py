"""The AMF calls of a capture: each exchange's request and response packets decoded by
`amfkit.remoting.packet.decode` (with its limits), batches split into calls, each call
paired with its answer: NetConnection bodies by response URI (`/1` and `/1/onResult` or
`/1/onStatus`), Flex messages by messageId and correlationId."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import _amfkit
from .._text import error_text
from ..remoting import packet
from ..remoting.messages import AbstractMessage, CommandMessage, ErrorMessage, RemotingMessage
from .exchange import Exchange

__all__ = ["AMF_TYPE", "Call", "Calls", "Limits", "calls_of", "command_name", "fault_of"]

AMF_TYPE = "application/x-amf"

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


@dataclass
class Call:
    """One call of a capture and what answered it.

    `target` is "Service.method" (a NetConnection target, or a Flex RemotingMessage's
    destination and operation) or "command NAME" for a Flex CommandMessage; `arguments`
    the argument list; `result` the value answered (a Flex acknowledgement's body);
    `fault` (code, message, details) when the answer was a fault; `answered` False when
    the capture holds no answer for it."""

    index: int
    exchange: Exchange
    version: int
    response_uri: str
    target: str
    arguments: list[Any]
    message: AbstractMessage | None = None
    answered: bool = False
    result: Any = None
    fault: tuple[str, str, Any] | None = None
    answer: Any = None
    headers: list[packet.Header] = field(default_factory=list)
    batch: int = 1

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
    `skipped` the count of exchanges that are not AMF."""

    calls: list[Call] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
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


def calls_of(exchanges: Iterable[Exchange], limits: Limits = Limits()) -> Calls:
    """Every AMF call of `exchanges`, in order."""
    out = Calls()
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
        request, why = _decode(ex.request_body, ex.candidates.get("request", ()), limits)
        if request is None:
            out.problems.append(f"{where}: request: {why}")
            continue
        response = None
        if ex.response_body is not None:
            response, why = _decode(ex.response_body, ex.candidates.get("response", ()), limits)
            if response is None:
                out.problems.append(f"{where}: response: {why}")
        out.calls.extend(_pair(ex, request, response, len(out.calls)))
    return out


def _decode(data: bytes, alternatives: Iterable[bytes], limits: Limits) -> tuple[packet.Envelope | None, str]:
    """The packet in `data` (or the first of `alternatives` that decodes), or None and
    the first error."""
    first = ""
    for raw in (data, *alternatives):
        try:
            return packet.decode(raw, max_depth=limits.max_depth, max_objects=limits.max_objects, max_size=limits.max_size), ""
        except Exception as e:  # DecodeError, or a reader of an externalizable class
            if not first:
                first = f"not an AMF packet: {error_text(e)}" if raw else "empty body"
    return None, first


def _pair(ex: Exchange, request: packet.Envelope, response: packet.Envelope | None, start: int) -> list[Call]:
    answers: dict[str, packet.Body] = {}
    by_correlation: dict[str, packet.Body] = {}
    for body in response.bodies if response is not None else ():
        uri, _, _ = body.target.rpartition("/")
        answers.setdefault(uri, body)
        msg = message_of(body.value)
        cid = getattr(msg, "correlationId", None)
        if isinstance(cid, str):
            by_correlation.setdefault(cid, body)
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
            _answer(call, answer)
        out.append(call)
    return out


def _answer(call: Call, body: packet.Body) -> None:
    call.answered = True
    msg = message_of(body.value)
    if msg is not None:
        call.answer = msg
        if isinstance(msg, ErrorMessage):
            call.fault = fault_of(msg)
        else:
            call.result = msg.body
        return
    call.answer = body.value
    if body.target.endswith("/onStatus"):
        call.fault = fault_of(body.value)
    else:
        call.result = body.value


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
