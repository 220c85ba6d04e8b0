"""AMF values as plain values: what JSON-RPC, XML-RPC and the CLI write for dates,
registered classes' instances and record sets.

    >>> import datetime
    >>> iso_utc(datetime.datetime(2024, 5, 1, 12, 30, 0, 250_000))
    '2024-05-01T12:30:00.250Z'
    >>> js_iso(-62198755200000.0)
    '-000001-01-01T00:00:00.000Z'
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from . import amf3
from ._registry import _slot_names, registered_classes

__all__ = [
    "alias_of",
    "attributes",
    "civil_from_days",
    "float_text",
    "iso_utc",
    "js_iso",
    "naive_utc",
    "object_members",
    "recordset_records",
    "split_millis",
    "year_text",
]

# JavaScript's Date holds +-8.64e15 ms around the epoch.
_JS_DATE_LIMIT = 8.64e15


def alias_of(obj: Any) -> str:
    """The alias `obj`'s class is registered under, else `module.QualifiedName`."""
    try:
        for alias, cls in registered_classes().items():
            if cls is type(obj):
                return alias
    except Exception:  # the registry is a nicety here, never a reason to fail printing
        pass
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def attributes(obj: Any) -> list[tuple[str, Any]]:
    """The attributes an instance holds: `__dict__`, then slots (the class's first)."""
    items: list[tuple[str, Any]] = []
    seen: set[str] = set()
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        for k, v in d.items():
            items.append((k, v))
            seen.add(k)
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        for name in slots:
            if name in seen or name in ("__dict__", "__weakref__"):
                continue
            seen.add(name)
            try:
                items.append((name, getattr(obj, name)))
            except AttributeError:
                pass
    return items


def object_members(obj: Any) -> dict[str, Any] | None:
    """The members of a registered class's instance, exactly as AMF writes them (its
    `static`, `exclude` and `dynamic` rules applied), or None when `type(obj)` is not
    registered.

    The instance goes through an AMF3 round trip: the decoded copy holds the members
    the encoder wrote, and nothing else.
    """
    cls = type(obj)
    if cls not in registered_classes().values():
        return None
    copy = amf3.decode(amf3.encode(obj))
    members: dict[str, Any] = {}
    attrs = getattr(copy, "__dict__", None)
    if attrs:
        for name, value in attrs.items():
            if not (name.startswith("__") and name.endswith("__")):
                members[name] = value
    for name in _slot_names(cls):
        if name not in members and hasattr(copy, name):
            members[name] = getattr(copy, name)
    return members


def recordset_records(obj: Any) -> list[dict[str, Any]] | None:
    """The rows of an `amfkit.data.RecordSet` returned as is (one dict per row), or None
    for anything else."""
    # Imported here: amfkit.data imports amfkit.remoting, whose modules import this one.
    from .data.recordset import RecordSet

    return obj.records() if isinstance(obj, RecordSet) else None


def naive_utc(value: datetime.datetime) -> datetime.datetime:
    """`value` in UTC without a tzinfo (a naive datetime is UTC already: amfkit's rule)."""
    if value.tzinfo is not None and value.utcoffset() is not None:
        return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value.replace(tzinfo=None)


def iso_utc(value: datetime.datetime, *, millis: bool = True) -> str:
    """ISO 8601 in UTC ending in "Z"; a fraction of a second as ".ffffff", or with
    `millis` as ".fff" when it is whole milliseconds."""
    value = naive_utc(value)
    whole = millis and value.microsecond % 1000 == 0 and value.microsecond
    return value.isoformat(timespec="milliseconds" if whole else "auto") + "Z"


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of the proleptic Gregorian calendar, `days` after 1970-01-01,
    for any year (astronomical numbering: year 0 is 1 BC)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def split_millis(millis: float) -> tuple[int, int, int, int, int, int, int] | None:
    """(year, month, day, hour, minute, second, millisecond) of a UTC time in milliseconds
    since the epoch, or None when it is NaN, infinite or outside JavaScript's range."""
    if not math.isfinite(millis) or abs(millis) > _JS_DATE_LIMIT:
        return None
    days, ms = divmod(math.floor(millis), 86_400_000)
    year, month, day = civil_from_days(days)
    hour, ms = divmod(ms, 3_600_000)
    minute, ms = divmod(ms, 60_000)
    second, ms = divmod(ms, 1000)
    return year, month, day, hour, minute, second, ms


def year_text(year: int) -> str:
    """A year as ISO 8601 writes it: four digits, or signed six outside 0..9999."""
    return f"{year:04d}" if 0 <= year <= 9999 else f"{year:+07d}"


def js_iso(millis: float) -> str | None:
    """An `amfkit.Date`'s milliseconds as JavaScript's `Date.toISOString` writes them;
    None when NaN, infinite or beyond JavaScript's range."""
    parts = split_millis(millis)
    if parts is None:
        return None
    year, month, day, hour, minute, second, ms = parts
    return f"{year_text(year)}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.{ms:03d}Z"


def float_text(x: float) -> str:
    """A float as ActionScript writes it: `NaN`, `Infinity`, `-Infinity`, else its repr."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return repr(x)
