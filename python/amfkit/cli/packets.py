"""Print a remoting packet as `amfkit decode` does: its headers and bodies, each value as
the tree of `amfkit.cli.tree`, and the Flex message a body holds named by its class.

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

`iter_packet_lines(envelope)` gives the lines (the values' trees indented below each
part); `flex_summary(value)` names the Flex message in a body's value, or None.
"""

from __future__ import annotations

from typing import Any, Iterator

from .._text import shown
from .tree import iter_lines

__all__ = ["OPERATIONS", "flex_summary", "iter_packet_lines", "message_in"]

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
    from .._types import Opaque
    from ..remoting.messages import AbstractMessage

    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, (AbstractMessage, Opaque)) else None


def flex_summary(value: Any) -> str | None:
    """One line naming the Flex message a body's value holds, with what says the most
    about it (a call's destination and operation, a command's operation by name, a
    fault's code and text), or None when it holds none."""
    from .._types import Opaque
    from ..remoting import messages as m

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
