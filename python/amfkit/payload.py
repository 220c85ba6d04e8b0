"""AMF found in bytes of any form: `read(data)` takes the input's form off
(`amfkit.forms`), then tells a remoting packet from one value or a stream of values, and
decodes it.

    >>> from amfkit import payload
    >>> p = payload.read(b"00 00 00 00 00 01 00 04 74 65 73 74 00 02 2f 31 00 00 00 05 02 00 02 68 69")
    >>> p.describe()
    'amf packet, version 0, 0 headers, 1 body, 25 bytes (from hex)'
    >>> p.value.bodies[0]
    Body(target='test', response='/1', value='hi')

The readings are tried in a fixed order, the first that uses every byte winning: a
packet first when the bytes start like one (a version of 0, 1 or 3), then the value
readings of `amfkit.framing` (one AMF0 value, one AMF3 value, a stream of AMF0
values). `packet`, `version` and `stream` force a reading. When none fits, `PayloadError`
says why in one line: the error of the reading that got furthest, or, for bytes that do
not look like AMF at all, what they look like (`amfkit.forms.describe`).

`Payload.document()` is the exact document of the same bytes (`amfkit.wire`): what
`amfkit decode --json` prints for a packet and what `amfkit.diff` compares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

from . import forms

__all__ = ["Payload", "PayloadError", "looks_like_packet", "mismatch_text", "read", "readings"]

_Buffer = Union[bytes, bytearray, memoryview, str]


class PayloadError(ValueError):
    """The bytes hold no AMF that reads: the message says why in one line. `layers` are
    the forms taken off before, `attempts` each reading's error (label, exception)."""

    def __init__(self, message: str, layers: list[str] | None = None, attempts: list[tuple[str, Exception]] | None = None) -> None:
        super().__init__(message)
        self.layers = layers or []
        self.attempts = attempts or []


@dataclass
class Payload:
    """What `read` found.

    - `kind`: `"packet"`, `"value"` or `"stream"`; `version`: the packet's version, or
      the AMF version of the value(s);
    - `value`: an `amfkit.remoting.Envelope`, the value, or the list of a stream's values;
    - `data`: the AMF bytes; `layers`: the forms taken off them, outermost first;
    - `notes`: what the decoder's `on_mismatch` reported (a registered class, such as a
      Flex message, whose members on the wire are not the ones it declares);
    - `options`: the lenient options it was read with, for `document()`.
    """

    kind: str
    version: int
    value: Any
    data: bytes
    layers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def form(self) -> str:
        """The `amfkit.wire` form of the bytes: `"packet"`, `"amf0"` or `"amf3"`."""
        return "packet" if self.kind == "packet" else f"amf{self.version}"

    def document(self) -> Any:
        """The exact document of the bytes (`amfkit.wire.read`)."""
        from . import wire

        return wire.read(self.data, self.form, stream=self.kind == "stream", **self.options)

    def describe(self) -> str:
        """One line: `amf packet, version 3, 1 header, 2 bodies, 120 bytes (from
        base64, zlib)`, `amf3 value, 43 bytes`, `amf0 stream, 3 values, 120 bytes`."""
        size = _plural(len(self.data), "byte")
        if self.kind == "packet":
            env = self.value
            what = f"amf packet, version {env.version}, {_plural(len(env.headers), 'header')}, {_plural(len(env.bodies), 'body', 'bodies')}, {size}"
        elif self.kind == "stream":
            what = f"amf{self.version} stream, {_plural(len(self.value), 'value')}, {size}"
        else:
            what = f"amf{self.version} value, {size}"
        if self.layers:
            what += f" (from {', '.join(self.layers)})"
        return what


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def mismatch_text(alias: str, undeclared: tuple[str, ...], missing: tuple[str, ...]) -> str:
    """The note for what the decoder's `on_mismatch` reports: `class 'X' arrived with
    members it does not declare (a, b), dropped and none of c, d`."""
    parts = []
    if undeclared:
        parts.append(f"members it does not declare ({', '.join(undeclared)}), dropped")
    if missing:
        parts.append(f"none of {', '.join(missing)}")
    return f"class {alias!r} arrived with " + " and ".join(parts)


def looks_like_packet(data: bytes) -> bool:
    """Whether `data` starts like a remoting packet: a version of 0, 1 or 3, and room
    for the header and body counts."""
    return len(data) >= 6 and data[0] == 0 and data[1] in (0, 1, 3)


def readings(data: bytes, packet: bool | None = None, version: int | None = None, stream: bool | None = None) -> list[tuple[str, int, bool]]:
    """The readings tried, in order: `("packet", 0, False)`, or `("value", version,
    stream)` for each of `amfkit.framing.attempts_for`."""
    from .framing import attempts_for

    if packet:
        return [("packet", 0, False)]
    plan: list[tuple[str, int, bool]] = []
    if packet is None and version is None and stream is None and looks_like_packet(data):
        plan.append(("packet", 0, False))
    plan += [("value", v, s) for v, s in attempts_for(version, stream)]
    return plan


def read(
    data: _Buffer,
    *,
    form: str = "auto",
    packet: bool | None = None,
    version: int | None = None,
    stream: bool | None = None,
    max_inflate: int = forms.DEFAULT_MAX_SIZE,
    max_depth: int | None = None,
    max_objects: int | None = None,
    max_size: int | None = None,
    tz_aware: bool = False,
    unknown_externalizable: str = "error",
    externalizable: Mapping[str, str] | None = None,
    on_mismatch: Callable[[str, tuple[str, ...], tuple[str, ...]], Any] | None = None,
) -> Payload:
    """Find and decode the AMF in `data` (see the module's docstring).

    `form` is the input's outer form (`amfkit.forms.peel`; `"auto"` detects it) and
    `max_inflate` the most bytes one of its layers may make. `packet` True reads a
    packet only, False never one; `version` (0 or 3) and `stream` force the value
    readings as `amfkit.framing.decode_auto` does. The rest are the decoder's options
    (`amfkit.amf3.decode`); what `on_mismatch` reports is also kept in `notes`.

    Raises `PayloadError` (a `ValueError`) when nothing reads, and `forms.FormError`
    (a `ValueError`) for a layer that is not what it claims."""
    from . import DecodeError, amf0, amf3
    from .framing import DetectError
    from .remoting import packet as packets

    peeled = forms.peel(data, form, max_size=max_inflate)
    raw = peeled.data
    limits = {k: v for k, v in (("max_depth", max_depth), ("max_objects", max_objects), ("max_size", max_size)) if v is not None}
    lenient: dict[str, Any] = {"unknown_externalizable": unknown_externalizable, "externalizable": externalizable}
    notes: list[str] = []

    def heard(alias: str, undeclared: tuple[str, ...], missing: tuple[str, ...]) -> Any:
        notes.append(mismatch_text(alias, undeclared, missing))
        return on_mismatch(alias, undeclared, missing) if on_mismatch is not None else None

    options: dict[str, Any] = {**limits, "tz_aware": tz_aware, **lenient, "on_mismatch": heard}
    if not raw:
        if stream:
            return Payload("stream", version or 0, [], raw, peeled.layers)
        raise PayloadError(_after(peeled.layers) + "empty input", peeled.layers)
    attempts: list[tuple[str, Exception]] = []
    for kind, v, many in readings(raw, packet, version, stream):
        del notes[:]
        try:
            if kind == "packet":
                env = packets.decode(raw, **options)
                return Payload("packet", env.version, env, raw, peeled.layers, list(notes), {**limits, **lenient})
            module = amf0 if v == 0 else amf3
            if many:
                values = list(module.Decoder(**options).decode_all(raw))
                return Payload("stream", v, values, raw, peeled.layers, list(notes), {**limits, **lenient})
            value = module.decode(raw, **options)
            return Payload("value", v, value, raw, peeled.layers, list(notes), {**limits, **lenient})
        except DecodeError as e:
            label = "an AMF packet" if kind == "packet" else f"{'a stream of ' if many else 'one '}AMF{v} value{'s' if many else ''}"
            attempts.append((label, e))
    if forms.detect(raw) != "raw" or _is_sol(raw):
        said = forms.describe(raw, max_size=max_inflate)
        if peeled.layers and form == "auto" and said.startswith("not AMF: this looks like binary data"):
            # Text taken for a text form that held nothing: say what the text is.
            raise PayloadError(forms.describe(data, max_size=max_inflate), [], attempts)
        raise PayloadError(_after(peeled.layers) + said, peeled.layers, attempts)
    raise PayloadError(_after(peeled.layers) + str(DetectError(attempts)), peeled.layers, attempts)


def _is_sol(data: bytes) -> bool:
    return data[:2] == b"\x00\xbf" and data[6:10] == b"TCSO"


def _after(layers: list[str]) -> str:
    return f"(after taking off {', '.join(layers)}) " if layers else ""
