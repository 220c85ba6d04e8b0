"""The AMF remoting packet: what a Flash, Flex, AIR or Royale client POSTs to a gateway
(docs/gateway.md, "The packet").

    >>> from amfkit.remoting import packet
    >>> data = packet.encode(packet.Envelope(0, bodies=[packet.Body("Echo.echo", "/1", ["hi"])]))
    >>> packet.decode(data).bodies[0]
    Body(target='Echo.echo', response='/1', value=['hi'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .. import _amfkit

__all__ = ["Body", "Envelope", "Header", "decode", "encode"]


@dataclass(init=False)
class Header:
    """A packet header. `must_understand` is keyword-only: on the wire it comes between
    the name and the value, so a positional call could mix the two up."""

    name: str
    value: Any = None
    must_understand: bool = False

    def __init__(self, name: str, value: Any = None, *, must_understand: bool = False) -> None:
        self.name = name
        self.value = value
        self.must_understand = must_understand


@dataclass
class Body:
    target: str
    response: str
    value: Any = None


@dataclass
class Envelope:
    """A whole packet. `version`: 0 (AS2), 3 (Flash Player 9 and later); 1 (FMS) is
    treated as 0 by the gateway."""

    version: int = 3
    headers: list[Header] = field(default_factory=list)
    bodies: list[Body] = field(default_factory=list)

    def header(self, name: str) -> Header | None:
        """The first header of that name, if any."""
        for h in self.headers:
            if h.name == name:
                return h
        return None


def decode(
    data: bytes | bytearray | memoryview,
    *,
    max_depth: int = _amfkit.DEFAULT_MAX_DEPTH,
    max_objects: int = _amfkit.DEFAULT_MAX_OBJECTS,
    max_size: int = _amfkit.DEFAULT_MAX_SIZE,
    tz_aware: bool = False,
    unknown_externalizable: str = "error",
    externalizable: Mapping[str, str] | None = None,
    on_mismatch: Callable[[str, tuple[str, ...], tuple[str, ...]], Any] | None = None,
) -> Envelope:
    """Decode a packet; a malformed one raises `amfkit.DecodeError` (with `.path` such as
    `$.bodies[1][0]`).

    The lenient options are the decoders' (`amfkit.amf3.decode`): an externalizable
    class nobody registered is an error unless `unknown_externalizable="opaque"` keeps
    its body as an `amfkit.Opaque` or `externalizable` names how to read it; in a packet
    an opaque body ends with its header or body when that part's length field is true
    (docs/cli.md, "Bytes others wrote"). `on_mismatch(alias, undeclared, missing)` hears
    of registered classes (Flex's messages among them) whose members differ from the
    ones they declare."""
    version, headers, bodies = _amfkit.decode_packet(
        data,
        max_depth=max_depth,
        max_objects=max_objects,
        max_size=max_size,
        tz_aware=tz_aware,
        unknown_externalizable=unknown_externalizable,
        externalizable=externalizable,
        on_mismatch=on_mismatch,
    )
    return Envelope(
        version,
        [Header(name, value, must_understand=mu) for name, mu, value in headers],
        [Body(target, response, value) for target, response, value in bodies],
    )


def encode(envelope: Envelope, *, default: Callable[[Any], Any] | None = None) -> bytes:
    """Encode a packet with real length fields."""
    return _amfkit.encode_packet(
        envelope.version,
        [(h.name, h.must_understand, h.value) for h in envelope.headers],
        [(b.target, b.response, b.value) for b in envelope.bodies],
        default=default,
    )
