"""Classes and aliases as PyAMF has them: `register_class` (reading a class's `__amf__`
meta), `unregister_class`, class loaders, custom types (`add_type`) and error classes.

A class registered with an alias is registered with amfkit (`amfkit.register_class`), so
the codec reads and writes it; one registered without an alias is written as an
anonymous object, as PyAMF does. An externalizable class (`__amf__.external`) keeps its
PyAMF-style `__readamf__`/`__writeamf__`: they get readers and writers with PyAMF's
method names (`readObject`, `writeUTF`, ...), through a stand-in subclass that only the
codec sees.

What the door refuses on purpose: `load_class` never imports a module named by an alias
(PyAMF imports any module a stream names; amfkit never does). A class is found through
`register_class` or a loader of the program's own (`register_class_loader`), else the
object decodes as a `TypedObject`.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any, Callable

import amfkit

from ._errors import UnknownClassAlias

__all__ = [
    "CLASS_CACHE",
    "CLASS_LOADERS",
    "ERROR_CLASS_MAP",
    "TYPE_MAP",
    "ClassAlias",
    "add_error_class",
    "add_type",
    "get_class_alias",
    "get_class_meta",
    "get_type",
    "load_class",
    "register_class",
    "register_class_loader",
    "register_package",
    "remove_error_class",
    "remove_type",
    "unregister_class",
    "unregister_class_loader",
]

#: alias -> ClassAlias and class -> ClassAlias, as PyAMF keeps them.
CLASS_CACHE: dict[Any, ClassAlias] = {}
#: Functions alias -> class (or None), asked for aliases nobody registered.
CLASS_LOADERS: set[Callable[[str], Any]] = set()
#: type (or tuple of types, or predicate) -> function(obj, encoder=...) giving what to write.
TYPE_MAP: dict[Any, Callable[..., Any]] = {}
#: Fault codes -> exception classes, for `ErrorFault.raiseException`.
ERROR_CLASS_MAP: dict[str, type[BaseException]] = {
    cls.__name__: cls for cls in (TypeError, KeyError, LookupError, IndexError, NameError, ValueError)
}



def state() -> Any:
    """The door's package, whose CLASS_CACHE, CLASS_LOADERS, TYPE_MAP and ERROR_CLASS_MAP
    the functions use, as PyAMF's use its module's: a program may rebind them."""
    return sys.modules[__package__]


#: stand-in class -> the user's externalizable class (decode gives the user's class back).
SHIMS: dict[type, type] = {}
#: the user's externalizable class -> its stand-in (encode writes the stand-in).
EXTERNAL: dict[type, type] = {}
#: stand-in instance id -> the object it stands for, while an encode writes it.
TARGETS: dict[int, Any] = {}

_META = ("alias", "amf3", "dynamic", "external")
_META_ATTRS = ("static", "exclude", "readonly", "proxy", "synonym")


def get_class_meta(klass: type) -> dict[str, Any]:
    """The `__amf__` meta of a class (a nested class or a dict), as PyAMF reads it."""
    if not isinstance(klass, type) or klass is object:
        raise TypeError(f"klass must be a class object, got {type(klass)!r}")
    meta: dict[str, Any] = {key: None for key in _META}
    meta.update({f"{key}_attrs": None for key in _META_ATTRS})
    a = klass.__dict__.get("__amf__", getattr(klass, "__amf__", None))
    if a is None:
        return meta
    has = (lambda k: k in a) if isinstance(a, dict) else (lambda k: hasattr(a, k))
    get = a.__getitem__ if isinstance(a, dict) else (lambda k: getattr(a, k))
    for key in _META:
        if has(key):
            meta[key] = get(key)
    for key in _META_ATTRS:
        if has(key):
            meta[f"{key}_attrs"] = get(key)
    return meta


class ClassAlias:
    """What `register_class` returns: the class, its alias ('' when anonymous) and the
    meta it was registered with."""

    def __init__(self, klass: type, alias: str | None = None, **meta: Any) -> None:
        self.klass = klass
        self.anonymous = alias is None
        self.alias = "" if alias is None else alias
        self.static_attrs = tuple(sorted(meta.get("static_attrs") or ()))
        self.exclude_attrs = tuple(meta.get("exclude_attrs") or ())
        self.readonly_attrs = tuple(meta.get("readonly_attrs") or ())
        self.dynamic = meta.get("dynamic") is not False
        self.external = bool(meta.get("external"))
        self.amf3 = meta.get("amf3")

    def createInstance(self, codec: Any = None) -> Any:
        klass: Any = self.klass
        return klass.__new__(klass)

    def __repr__(self) -> str:
        return f"<ClassAlias alias={self.alias!r} class={self.klass!r} @ 0x{id(self):x}>"

    def __str__(self) -> str:
        return self.alias

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self.alias == other
        if isinstance(other, ClassAlias):
            return self.klass is other.klass
        if isinstance(other, type):
            return self.klass is other
        return False

    def __hash__(self) -> int:
        return id(self)


def register_class(klass: type, alias: str | bytes | None = None) -> ClassAlias:
    """Register `klass` under `alias` (Flash's `registerClassAlias`); without one (and
    no `__amf__.alias`) its instances are written as anonymous objects. Reads the
    class's `__amf__` meta: `static` (sealed members, written sorted, as PyAMF does),
    `exclude`, `readonly` (written, never set by a decode), `dynamic`, `external`."""
    meta = get_class_meta(klass)
    if alias is not None:
        meta["alias"] = alias
    name = meta.pop("alias")
    if isinstance(name, bytes):
        name = name.decode("utf-8")
    if name == "":
        raise ValueError("cannot set class alias as ''")
    for unsupported in ("proxy_attrs", "synonym_attrs"):
        if meta.get(unsupported):
            raise ValueError(
                f"__amf__.{unsupported[:-6]} of {klass.__qualname__} is not supported by amfkit's PyAMF door "
                "(docs/migrating.md): write the members as they should go on the wire"
            )
    entry = ClassAlias(klass, name, **meta)
    if entry.alias in state().CLASS_CACHE or klass in state().CLASS_CACHE:
        _forget(state().CLASS_CACHE.get(klass) or state().CLASS_CACHE[entry.alias])
    if not entry.anonymous:
        if entry.external:
            _register_external(klass, entry)
        else:
            _free_alias(entry.alias, klass)
            amfkit.register_class(
                klass,
                entry.alias,
                static=entry.static_attrs,
                dynamic=entry.dynamic,
                exclude=entry.exclude_attrs,
            )
        state().CLASS_CACHE[entry.alias] = entry
    state().CLASS_CACHE[klass] = entry
    return entry


def _free_alias(alias: str, klass: type) -> None:
    """As in PyAMF, the last registration of an alias wins: one that amfkit holds for
    another class is dropped first."""
    other = amfkit.registered_classes().get(alias)
    if other is not None and other is not klass:
        amfkit.unregister_class(alias)


def unregister_class(alias: Any) -> ClassAlias:
    """Forget a class (by alias or by class); `UnknownClassAlias` if it is not known."""
    try:
        entry = state().CLASS_CACHE[alias]
    except (KeyError, TypeError):
        raise UnknownClassAlias(f"unknown alias {alias!r}") from None
    _forget(entry)
    return entry


def _forget(entry: ClassAlias) -> None:
    if not entry.anonymous:
        state().CLASS_CACHE.pop(entry.alias, None)
        shim = EXTERNAL.pop(entry.klass, None)
        if shim is not None:
            SHIMS.pop(shim, None)
        try:
            amfkit.unregister_class(entry.alias)
        except KeyError:
            pass
    state().CLASS_CACHE.pop(entry.klass, None)


def get_class_alias(klass_or_alias: Any) -> ClassAlias:
    """The ClassAlias of a class or an alias (an alias may come from a loader)."""
    if isinstance(klass_or_alias, (str, bytes)):
        return load_class(klass_or_alias)
    try:
        return state().CLASS_CACHE[klass_or_alias]
    except (KeyError, TypeError):
        raise UnknownClassAlias(f"unknown alias for {klass_or_alias!r}") from None


def register_class_loader(loader: Callable[[str], Any]) -> None:
    """Add a function that is given an alias nobody registered and returns its class (or
    a ClassAlias), or None. Decoding asks the loaders for every such alias it meets."""
    if not callable(loader):
        raise TypeError("loader must be callable")
    state().CLASS_LOADERS.add(loader)


def unregister_class_loader(loader: Callable[[str], Any]) -> None:
    try:
        state().CLASS_LOADERS.remove(loader)
    except KeyError:
        raise LookupError("loader not found") from None


def load_class(alias: str | bytes) -> ClassAlias:
    """The ClassAlias for `alias`: registered, or from a class loader. Unlike PyAMF, never
    imports the module an alias names: `UnknownClassAlias` when nothing gives one."""
    if isinstance(alias, bytes):
        alias = alias.decode("utf-8")
    entry = state().CLASS_CACHE.get(alias)
    if entry is not None:
        return entry
    for loader in list(state().CLASS_LOADERS):
        klass = loader(alias)
        if klass is None:
            continue
        if isinstance(klass, ClassAlias):
            return register_class(klass.klass, alias)
        if isinstance(klass, type):
            return register_class(klass, alias)
        raise TypeError("expecting a class or a ClassAlias from a loader")
    raise UnknownClassAlias(f"unknown alias for {alias!r}")


def register_package(
    module: Any = None,
    package: str | None = None,
    separator: str = ".",
    ignore: Any = None,
    strict: bool = True,
) -> dict[type, ClassAlias]:
    """Register every class of a module (or dict of names, or list of classes) under
    `package + separator + class name`."""
    ignore = set(ignore or ())
    if isinstance(module, str):
        if not module:
            raise TypeError(f"cannot get a list of classes from {module!r}")
        package, module = module, None
    if module is None:
        frame = inspect.stack()[1][0]
        module = frame.f_locals
    if isinstance(module, dict):
        items = list(module.items())
        name = module.get("__name__")
    elif isinstance(module, list):
        items = [(getattr(c, "__name__", str(i)), c) for i, c in enumerate(module)]
        name = None
        strict = False
    else:
        items = [(k, getattr(module, k)) for k in getattr(module, "__all__", dir(module))]
        name = getattr(module, "__name__", None)
    if package is None:
        if name is None:
            raise TypeError(f"cannot get a list of classes from {module!r}")
        package = name
    registered = {}
    for _, attr in items:
        if not isinstance(attr, type) or attr.__name__ in ignore:
            continue
        if strict and name is not None and attr.__module__ != name:
            continue
        registered[attr] = register_class(attr, f"{package}{separator}{attr.__name__}")
    return registered


# -- custom types and error classes ------------------------------------------------------


def add_type(type_: Any, func: Callable[..., Any] | None = None) -> None:
    """Write values of `type_` (a class, a tuple of classes, or a predicate) as what
    `func(value, encoder=...)` returns."""
    if isinstance(type_, list):
        type_ = tuple(type_)
    if type_ in state().TYPE_MAP:
        raise KeyError(f"type {type_!r} already exists")
    for t in type_ if isinstance(type_, tuple) else (type_,):
        if not (isinstance(t, type) or callable(t)):
            raise TypeError(f"unable to add {t!r} as a custom type (expected a class or callable)")
    state().TYPE_MAP[type_] = func


def get_type(type_: Any) -> Callable[..., Any]:
    if isinstance(type_, list):
        type_ = tuple(type_)
    for k, v in state().TYPE_MAP.items():
        if k == type_:
            return v
    raise KeyError(f"unknown type {type_!r}")


def remove_type(type_: Any) -> Callable[..., Any]:
    func = get_type(type_)
    del state().TYPE_MAP[tuple(type_) if isinstance(type_, list) else type_]
    return func


def custom_type_func(obj: Any) -> Callable[..., Any] | None:
    """The `add_type` function that takes `obj`, if any."""
    for type_, func in state().TYPE_MAP.items():
        if isinstance(type_, tuple) and all(isinstance(t, type) for t in type_):
            if isinstance(obj, type_):
                return func
        elif isinstance(type_, type):
            if isinstance(obj, type_):
                return func
        elif callable(type_) and type_(obj):
            return func
    return None


def add_error_class(klass: type, code: str | bytes) -> None:
    """Map a fault code to an exception class (for `ErrorFault.raiseException`)."""
    if isinstance(code, bytes):
        code = code.decode("utf-8")
    if not isinstance(klass, type):
        raise TypeError("klass must be a class type")
    if not issubclass(klass, Exception):
        raise TypeError("error classes must subclass the Exception class")
    if code in state().ERROR_CLASS_MAP:
        raise ValueError(f"code {code} is already registered")
    state().ERROR_CLASS_MAP[code] = klass


def remove_error_class(klass: type | str) -> None:
    if isinstance(klass, str):
        if klass not in state().ERROR_CLASS_MAP:
            raise ValueError(f"code {klass} is not registered")
        del state().ERROR_CLASS_MAP[klass]
        return
    if not isinstance(klass, type):
        raise TypeError("invalid type, expected class or string")
    for code, value in list(state().ERROR_CLASS_MAP.items()):
        if value is klass:
            del state().ERROR_CLASS_MAP[code]
            return
    raise ValueError(f"class {klass} is not registered")


# -- externalizable classes ---------------------------------------------------------------


class DataInput:
    """PyAMF's names for amfkit's reader of an externalizable body."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def readObject(self) -> Any:
        return self._raw.read_object()

    def readBoolean(self) -> bool:
        return bool(self._raw.read_boolean())

    def readByte(self) -> int:
        return int(self._raw.read_byte())

    def readUnsignedByte(self) -> int:
        return int(self._raw.read_unsigned_byte())

    def readShort(self) -> int:
        return int(self._raw.read_short())

    def readUnsignedShort(self) -> int:
        return int(self._raw.read_unsigned_short())

    def readInt(self) -> int:
        return int(self._raw.read_int())

    def readUnsignedInt(self) -> int:
        return int(self._raw.read_unsigned_int())

    def readFloat(self) -> float:
        return float(self._raw.read_float())

    def readDouble(self) -> float:
        return float(self._raw.read_double())

    def readUTF(self) -> str:
        return str(self._raw.read_utf())

    def readUTFBytes(self, length: int) -> str:
        return str(self._raw.read_utf_bytes(length))

    def readMultiByte(self, length: int, charset: str) -> str:
        return bytes(self._raw.read_bytes(length)).decode(charset)


class DataOutput:
    """PyAMF's names for amfkit's writer of an externalizable body."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def writeObject(self, value: Any) -> None:
        self._raw.write_object(value)

    def writeBoolean(self, value: Any) -> None:
        self._raw.write_boolean(bool(value))

    def writeByte(self, value: int) -> None:
        self._raw.write_byte(value)

    def writeShort(self, value: int) -> None:
        self._raw.write_short(value)

    def writeUnsignedShort(self, value: int) -> None:
        self._raw.write_short(value)

    def writeInt(self, value: int) -> None:
        self._raw.write_int(value)

    def writeUnsignedInt(self, value: int) -> None:
        self._raw.write_unsigned_int(value)

    def writeFloat(self, value: float) -> None:
        self._raw.write_float(value)

    def writeDouble(self, value: float) -> None:
        self._raw.write_double(value)

    def writeUTF(self, value: str) -> None:
        self._raw.write_utf(value)

    def writeUTFBytes(self, value: str) -> None:
        self._raw.write_utf_bytes(value)

    def writeMultiByte(self, value: str, charset: str) -> None:
        self._raw.write_bytes(value.encode(charset))


def _register_external(klass: type, entry: ClassAlias) -> None:
    for hook in ("__readamf__", "__writeamf__"):
        if not callable(getattr(klass, hook, None)):
            raise TypeError(f"externalizable class {klass.__qualname__} needs a {hook} method")

    def __readamf__(self: Any, input: Any) -> None:
        klass.__readamf__(self, DataInput(input))  # type: ignore[attr-defined]

    def __writeamf__(self: Any, output: Any) -> None:
        klass.__writeamf__(TARGETS.get(id(self), self), DataOutput(output))  # type: ignore[attr-defined]

    shim = type(
        klass.__name__,
        (klass,),
        {"__slots__": (), "__module__": klass.__module__, "__readamf__": __readamf__, "__writeamf__": __writeamf__},
    )
    _free_alias(entry.alias, shim)
    amfkit.register_class(shim, entry.alias, externalizable=True)
    SHIMS[shim] = klass
    EXTERNAL[klass] = shim
