"""The text `amfkit decode` prints: `render(data)` (the whole text for bytes in any form),
`iter_payload_lines(payload)` (for what `amfkit.payload.read` found: the first line
naming it, then a packet part by part, a stream value by value, or a value's tree),
`iter_packet_lines(envelope)` (a packet: each header and body, its value as the tree of
`amfkit.tree`, the Flex message a body holds named by its class) and `flex_summary(value)`.
The command line, `amfkit inspect --packets` and the mitmproxy view print with these, so
the same bytes give the same text everywhere.

    >>> from amfkit.remoting import messages, packet
    >>> call = messages.RemotingMessage(destination="EchoService", operation="echo", body=["hi"])
    >>> env = packet.Envelope(3, bodies=[packet.Body("null", "/1", [call])])
    >>> flex_summary(env.bodies[0].value)
    "Flex RemotingMessage: destination 'EchoService', operation 'echo'"
    >>> for line in list(iter_packet_lines(env))[:3]:
    ...     print(line)
    body 0: target 'null', response '/1'
      Flex RemotingMessage: destination 'EchoService', operation 'echo'
      array [1]
    >>> print(render(packet.encode(packet.Envelope(0, bodies=[packet.Body("Echo.echo", "/1", ["hi"])]))))
    # amf packet, version 0, 0 headers, 1 body, 35 bytes
    body 0: target 'Echo.echo', response '/1'
      strict array [1]
        [0]: string 'hi'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from ._text import shown
from .tree import iter_lines, iter_stream_lines

if TYPE_CHECKING:
    from .payload import Payload

__all__ = ["OPERATIONS", "flex_summary", "iter_packet_lines", "iter_payload_lines", "message_in", "render"]

#: CommandMessage operations by number (MESSAGING-NOTES, BlazeDS's CommandMessage).
OPERATIONS = {
    0: "subscribe",
    1: "unsubscribe",
    2: "poll",
    4: "client sync",
    5: "client ping",
    7: "cluster request",
    8: "login",
    9: "logout",
    10: "subscription invalidate",
    11: "multi-subscribe",
    12: "disconnect",
    13: "trigger connect",
    10000: "unknown",
}

#: The small forms' aliases, by the message class they stand for.
_SMALL = {"AcknowledgeMessageExt": "DSK", "AsyncMessageExt": "DSA", "CommandMessageExt": "DSC"}


def message_in(value: Any) -> Any:
    """The Flex message (or opaque externalizable object) a body's value holds: alone,
    or in an array of one (Flex sends an AMF0 strict array holding an AMF3 message,
    Royale an AMF3 array); None for any other value."""
    from ._types import Opaque
    from .remoting.messages import AbstractMessage

    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, (AbstractMessage, Opaque)) else None


def flex_summary(value: Any) -> str | None:
    """One line naming the Flex message a body's value holds, with what says the most
    about it (a call's destination and operation, a command's operation by name, a
    fault's code and text), or None when it holds none."""
    from ._types import Opaque
    from .remoting import messages as m

    msg = message_in(value)
    if msg is None:
        return None
    if isinstance(msg, Opaque):
        return f"externalizable {shown(msg.alias)} kept opaque ({len(msg.data)} bytes)"
    cls = type(msg)
    small = _SMALL.get(cls.__name__)
    name = cls.__mro__[2].__name__ if small else cls.__name__
    head = f"Flex {name}" + (f" (small form {small})" if small else "")
    facts: list[str] = []
    if isinstance(msg, m.ErrorMessage):
        facts += [f"faultCode {shown(msg.faultCode)}", f"faultString {shown(msg.faultString)}"]
    elif isinstance(msg, m.RemotingMessage):
        facts += [f"destination {shown(msg.destination)}", f"operation {shown(msg.operation)}"]
    elif isinstance(msg, m.CommandMessage):
        op = msg.operation
        named = OPERATIONS.get(op) if isinstance(op, int) and not isinstance(op, bool) else None
        facts.append(f"operation {op!r}" + (f" ({named})" if named else ""))
        if msg.destination:
            facts.append(f"destination {shown(msg.destination)}")
    elif isinstance(msg, m.AcknowledgeMessage):
        if msg.correlationId is not None:
            facts.append(f"correlationId {shown(msg.correlationId)}")
    elif msg.destination is not None:
        facts.append(f"destination {shown(msg.destination)}")
    return head + (": " + ", ".join(facts) if facts else "")


def iter_packet_lines(envelope: Any, *, max_string: int = 120) -> Iterator[str]:
    """The lines of a packet (`amfkit.remoting.Envelope`): each header and body on a
    line of its own, its value's tree indented below it (AMF0 names for a version-0
    packet, AMF3 ones for a version-3 packet, whose values Flash writes in AMF3), a Flex
    message named first."""
    version = 3 if envelope.version == 3 else 0
    for i, h in enumerate(envelope.headers):
        must = ", must understand" if h.must_understand else ""
        yield f"header {i}: {shown(h.name)}{must}"
        for line in iter_lines(h.value, version=version, max_string=max_string):
            yield "  " + line
    for i, b in enumerate(envelope.bodies):
        yield f"body {i}: target {shown(b.target)}, response {shown(b.response)}"
        summary = flex_summary(b.value)
        if summary is not None:
            yield "  " + summary
        for line in iter_lines(b.value, version=version, max_string=max_string):
            yield "  " + line


def iter_payload_lines(payload: Payload, *, max_string: int = 120) -> Iterator[str]:
    """The lines `amfkit decode` prints for `payload` (`amfkit.payload.read`'s): `#` and
    what was read (`payload.describe()`), then the packet, the stream or the value."""
    yield f"# {payload.describe()}"
    if payload.kind == "packet":
        yield from iter_packet_lines(payload.value, max_string=max_string)
    elif payload.kind == "stream":
        yield from iter_stream_lines(payload.value, version=payload.version, max_string=max_string)
    else:
        yield from iter_lines(payload.value, version=payload.version, max_string=max_string)


def render(data: bytes | bytearray | memoryview | str, *, max_string: int = 120, **options: Any) -> str:
    """What `amfkit decode` prints for `data` (no trailing newline): `options` go to
    `amfkit.payload.read` (`form`, `packet`, the limits, the lenient options). Raises what
    it raises (`PayloadError`, `forms.FormError`: `ValueError`s)."""
    from .payload import read

    return "\n".join(iter_payload_lines(read(data, **options), max_string=max_string))
