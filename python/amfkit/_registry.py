"""The class-alias registry: which Python class an AMF class alias decodes to.

Only registered classes are ever instantiated by a decoder; any other alias decodes to
`amfkit.TypedObject`. Decoding never imports a module and never calls `__init__`: a
registered class is created with `cls.__new__(cls)` and its members are set afterwards.
"""

from __future__ import annotations

from typing import Any, Iterable

from . import _amfkit

__all__ = ["register_class", "unregister_class", "registered_classes"]


def register_class(
    cls: type,
    alias: str | None = None,
    /,
    *,
    static: Iterable[str] | None = None,
    dynamic: bool = True,
    exclude: Iterable[str] = (),
    externalizable: bool = False,
) -> type:
    """Register `cls` under the AMF class alias `alias` (default: the class's qualified name).

    - With only a class and an alias, an instance's attributes (its `__dict__`, dataclass
      fields or `__slots__`) are written as dynamic members, as Flash's dynamic classes
      and Py3AMF do.
    - `static`: names written as sealed members, in this order, before any dynamic ones.
    - `dynamic=False`: only the sealed members are written; members a peer sends that
      the class does not declare are ignored on decode.
    - `exclude`: attribute names never written.
    - `externalizable=True`: the class writes and reads its own body through
      `__writeamf__(self, output)` and `__readamf__(self, input)`.

    Members whose names start and end with a double underscore are never read into a
    registered class. Returns `cls`, so it also works as a decorator factory argument.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_class() expects a class, not {type(cls).__name__}")
    if alias is None:
        alias = f"{cls.__module__}.{cls.__qualname__}"
    if not isinstance(alias, str) or not alias:
        raise ValueError("a class alias must be a non-empty string")
    static_names = tuple(static) if static is not None else ()
    for name in static_names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"static member names must be non-empty strings, not {name!r}")
    if len(set(static_names)) != len(static_names):
        raise ValueError("static member names must be unique")
    if externalizable:
        for hook in ("__readamf__", "__writeamf__"):
            if not callable(getattr(cls, hook, None)):
                raise TypeError(f"externalizable class {cls.__qualname__} needs a {hook} method")
    _amfkit._register_class(
        cls,
        alias,
        static_names,
        bool(dynamic),
        tuple(exclude),
        bool(externalizable),
        _slot_names(cls),
    )
    return cls


def unregister_class(cls_or_alias: type | str) -> None:
    """Remove a class (or an alias) from the registry; unknown ones raise `KeyError`."""
    _amfkit._unregister_class(cls_or_alias)


def registered_classes() -> dict[str, type]:
    """A snapshot of the registry: alias -> class."""
    return dict(_amfkit._registered_classes())


def _slot_names(cls: type) -> tuple[str, ...]:
    """The attribute names a `__slots__` class stores outside any `__dict__`, base first."""
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        raw: Any = klass.__dict__.get("__slots__", ())
        if isinstance(raw, str):
            raw = (raw,)
        for name in raw:
            if name in ("__dict__", "__weakref__") or name in names:
                continue
            names.append(name)
    return tuple(names)
