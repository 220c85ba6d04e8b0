"""Read AMF bytes whose framing is not known: one value or a stream, AMF0 or AMF3 (the
value readings of `amfkit decode` and `amfkit.payload.read`).

AMF0 and AMF3 give the same marker bytes different meanings, so `decode_auto` tries the
readings in a fixed order and keeps the first that uses every byte; when none fits,
`DetectError` carries every attempt's error. The order, and why: docs/cli.md ("Which
format decode reads").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Decoded", "DetectError", "decode_auto", "attempts_for"]


@dataclass
class Decoded:
    """What `decode_auto` read: the AMF version, whether a stream, and the values."""

    version: int
    stream: bool
    values: list[Any]
    size: int

    @property
    def value(self) -> Any:
        """The single value (for a stream: the list of values)."""
        return self.values if self.stream else self.values[0]

    def describe(self) -> str:
        """`amf3 value, 57 bytes` or `amf0 stream, 3 values, 120 bytes`."""
        size = f"{self.size} byte" + ("" if self.size == 1 else "s")
        if self.stream:
            n = len(self.values)
            return f"amf{self.version} stream, {n} value{'' if n == 1 else 's'}, {size}"
        return f"amf{self.version} value, {size}"


class DetectError(ValueError):
    """No reading fitted: `attempts` holds (label, error) for each one tried."""

    def __init__(self, attempts: list[tuple[str, Exception]]) -> None:
        super().__init__(attempts)
        self.attempts = attempts

    @property
    def best(self) -> tuple[str, Exception] | None:
        """The attempt that got furthest into the input (the first one on a tie)."""
        if not self.attempts:
            return None
        order = {id(a): i for i, a in enumerate(self.attempts)}
        return max(self.attempts, key=lambda a: (_offset(a[1]), -order[id(a)]))

    @property
    def offset(self) -> int | None:
        best = self.best
        return None if best is None else getattr(best[1], "offset", None)

    def __str__(self) -> str:
        best = self.best
        if best is None:
            return "empty input"
        label, err = best
        if len(self.attempts) == 1:
            return str(err)
        labels = [a[0] for a in self.attempts]
        tried = ", ".join(labels[:-1]) + " or " + labels[-1]
        return f"cannot be read as {tried}; as {label}: {err}"


def attempts_for(version: int | None, stream: bool | None) -> list[tuple[int, bool]]:
    """The (version, stream) readings tried, in order, for what the caller forced."""
    if version is None and stream is None:
        return [(0, False), (3, False), (0, True)]
    if version is None:
        return [(0, True), (3, True)] if stream else [(0, False), (3, False)]
    if stream is None:
        return [(version, False), (version, True)]
    return [(version, stream)]


def decode_auto(
    data: bytes,
    *,
    version: int | None = None,
    stream: bool | None = None,
    **options: Any,
) -> Decoded:
    """Decode `data` as docs/cli.md describes ("Which format decode reads"); `options`
    go to the decoder.

    Raises `DetectError` (a `ValueError`) when no reading uses every byte."""
    from . import DecodeError, amf0, amf3

    if version not in (None, 0, 3):
        raise ValueError(f"version must be 0 or 3, not {version!r}")
    opts = {k: v for k, v in options.items() if v is not None}
    plan = attempts_for(version, stream)
    if not data:
        if stream:
            return Decoded(version or 0, True, [], 0)
        raise DetectError([])
    errors: list[tuple[str, Exception]] = []
    for v, many in plan:
        module = amf0 if v == 0 else amf3
        label = f"{'a stream of ' if many else 'one '}AMF{v} value{'s' if many else ''}"
        try:
            if many:
                values = list(module.Decoder(**opts).decode_all(data))
            else:
                values = [module.decode(data, **opts)]
        except DecodeError as e:
            errors.append((label, e))
            continue
        return Decoded(v, many, values, len(data))
    raise DetectError(errors)


def _offset(err: Exception) -> int:
    off = getattr(err, "offset", None)
    return off if isinstance(off, int) else -1
