"""Between amfkit's values and the shapes PyAMF code expects.

- `to_pyamf(values)`, after a decode: anonymous objects become `ASObject`s (dicts with
  attribute access), amfkit's MixedArray, ArrayCollection and ObjectProxy the door's
  (PyAMF's methods), externalizable stand-ins their user's class; `readonly` members are
  dropped. Containers are changed in place, so shared references and cycles stay what
  they were; one walk, no recursion (a graph as deep as the decoder's limits allows is
  fine).
- `Writer(encoder).default`, the encoder's `default=` hook: what amfkit cannot write
  itself, PyAMF writes as this: a registered anonymous class or an unregistered instance
  as an anonymous object of its attributes, a `ByteArray` as its bytes, an
  externalizable instance through its stand-in, `add_type` types as their function
  says, a `Decimal` as a float (unless strict). The same object gives the same stand-in
  throughout one encode, so references stay references.
"""

from __future__ import annotations

import datetime
import decimal
import types
from typing import Any, Callable

import amfkit

from . import _classes
from ._errors import EncodeError
from ._types import ArrayCollection, ASObject, MixedArray, ObjectProxy
from .util import BufferedByteStream

__all__ = ["Writer", "to_pyamf"]

_ATOMS = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        str,
        bytes,
        amfkit.XML,
        amfkit.XMLDocument,
        amfkit.UndefinedType,
        amfkit.Date,
        datetime.datetime,
        datetime.date,
    }
)
#: amfkit's types that the door swaps for its own subclass, in place.
_RECLASS: dict[type, type] = {
    amfkit.MixedArray: MixedArray,
    amfkit.ArrayCollection: ArrayCollection,
    amfkit.ObjectProxy: ObjectProxy,
}
_SEQUENCES = (list, amfkit.ObjectVector)
#: What PyAMF refuses to write: code, not data.
_NOT_DATA = (
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.BuiltinMethodType,
    types.ModuleType,
    types.GeneratorType,
    types.CodeType,
)


def to_pyamf(values: list[Any], aliases: set[str] | None = None) -> list[Any]:
    """`values` (a decode's top-level values) in PyAMF's shapes; the aliases of the
    TypedObjects met are added to `aliases` (class loaders are asked about them)."""
    registered = set(amfkit.registered_classes().values())
    shims = _classes.SHIMS
    externals = set(shims.values())
    readonly = {
        entry.klass: entry.readonly_attrs
        for key, entry in list(_classes.state().CLASS_CACHE.items())
        if isinstance(key, type) and entry.readonly_attrs
    }
    memo: dict[int, Any] = {}
    keep: list[Any] = []  # originals replaced by new objects: alive, so ids stay unique
    todo: list[Any] = []

    def visit(v: Any) -> Any:
        t = type(v)
        if t in _ATOMS:
            return v
        r = memo.get(id(v))
        if r is not None:
            return r
        if t is dict:
            r = ASObject()
            memo[id(v)] = r
            keep.append(v)
            todo.append((v, r))
            return r
        memo[id(v)] = v
        new = _RECLASS.get(t)
        if new is not None:
            v.__class__ = new
        elif t in shims:
            v.__class__ = shims[t]
        todo.append((v, v))
        return v

    out = [visit(v) for v in values]
    while todo:
        src, dst = todo.pop()
        t = type(src)
        if src is not dst:  # a dict becoming an ASObject
            for k, x in src.items():
                dict.__setitem__(dst, k, visit(x))
        elif isinstance(src, _SEQUENCES):
            for i, x in enumerate(src):
                y = visit(x)
                if y is not x:
                    src[i] = y
        elif isinstance(src, dict):
            if aliases is not None and isinstance(src, amfkit.TypedObject):
                aliases.add(src.alias)
            for k, x in src.items():
                if type(k) is amfkit.ObjectKey:
                    k.value = visit(k.value)
                elif type(k) not in _ATOMS:
                    visit(k)
                y = visit(x)
                if y is not x:
                    dict.__setitem__(src, k, y)
        elif t in registered or t in externals:
            _walk_members(src, visit)
            for name in readonly.get(t, ()):
                try:
                    delattr(src, name)
                except AttributeError:
                    pass
    return out


def _walk_members(obj: Any, visit: Callable[[Any], Any]) -> None:
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        for k, x in d.items():
            y = visit(x)
            if y is not x:
                d[k] = y
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            try:
                x = getattr(obj, name)
            except AttributeError:
                continue
            y = visit(x)
            if y is not x:
                setattr(obj, name, y)


class Writer:
    """The `default=` hook of one encode (`encoder` is what `add_type` functions get)."""

    def __init__(self, encoder: Any = None, strict: bool = False) -> None:
        self.encoder = encoder
        self.strict = strict
        self._memo: dict[int, Any] = {}
        self._stand_ins: list[int] = []

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        for i in self._stand_ins:
            _classes.TARGETS.pop(i, None)
        self._stand_ins.clear()
        self._memo.clear()

    def default(self, obj: Any) -> Any:
        r = self._memo.get(id(obj))
        if r is not None:
            return r[1]
        out = self._encodable(obj)
        self._memo[id(obj)] = (obj, out)  # obj kept alive: its id stays its own
        return out

    def _encodable(self, obj: Any) -> Any:
        func = _classes.custom_type_func(obj)
        if func is not None:
            return func(obj, encoder=self.encoder)
        t = type(obj)
        if isinstance(obj, BufferedByteStream):  # ByteArray included
            return obj.getvalue()
        shim = _classes.EXTERNAL.get(t)
        if shim is not None:
            maker: Any = shim
            stand_in = maker.__new__(maker)
            _classes.TARGETS[id(stand_in)] = obj
            self._stand_ins.append(id(stand_in))
            return stand_in
        if isinstance(obj, decimal.Decimal):
            if self.strict:
                raise EncodeError("Decimal is not supported in strict mode (it would lose precision as a float)")
            return float(obj)
        if isinstance(obj, _NOT_DATA):
            raise EncodeError(f"unable to encode {obj!r} (type {t.__name__})")
        entry = _classes.state().CLASS_CACHE.get(t)
        return _anonymous(obj, entry)


def _anonymous(obj: Any, entry: _classes.ClassAlias | None) -> ASObject:
    """An instance written as an anonymous object: its attributes (the `__amf__` meta of
    an anonymous registration applied)."""
    attrs: dict[str, Any] = {}
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        attrs.update(d)
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                attrs.setdefault(name, getattr(obj, name))
    if not attrs and d is None and not hasattr(obj, "__slots__"):
        raise EncodeError(f"cannot encode an object of type {type(obj).__name__}")
    out = ASObject()
    if entry is not None:
        for name in entry.static_attrs:
            attrs.pop(name, None)
            dict.__setitem__(out, name, getattr(obj, name, amfkit.Undefined))
        if not entry.dynamic:
            attrs.clear()
        for name in entry.exclude_attrs:
            attrs.pop(name, None)
    for k, v in attrs.items():
        if isinstance(k, str):
            dict.__setitem__(out, k, v)
    return out

