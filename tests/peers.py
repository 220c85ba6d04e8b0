"""Drive Py3AMF (PyPI ``py3amf``, import name ``pyamf``), amfkit's peer in the
differential tests and the benchmarks.

What Py3AMF does on the wire, and why these helpers look the way they do, is written up in
``docs/py3amf.md``. In short:

- Importing pyamf is silent, but its first encode of a non-scalar imports
  ``defusedxml.cElementTree`` (and ``defusedxml.lxml`` when lxml is installed), which
  raise ``DeprecationWarning``; the suite runs with warnings as errors, so that import
  happens here, once, with exactly those warnings ignored.
- ``pyamf.decode`` is an iterator that swallows truncation at a value boundary, so
  ``decode`` here reads exactly one value and fails on truncated or trailing input.
- Py3AMF writes ``bytes`` as a string and wants its own ``ByteArray`` class, its
  ``MixedArray`` and ``Undefined`` are its own types, and it decodes anonymous objects to
  ``pyamf.ASObject``: ``to_py3amf`` and ``from_py3amf`` translate between amfkit's value
  model and Py3AMF's, keeping shared references and cycles.
- Py3AMF's class registry is global: ``registered`` registers a class with both
  libraries for the duration of a ``with`` block.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import warnings
from typing import Any, Iterable, Iterator

with warnings.catch_warnings():
    warnings.filterwarnings(
        "ignore", message=r"defusedxml\..* is deprecated", category=DeprecationWarning
    )
    warnings.filterwarnings("ignore", message=r".*pkg_resources is deprecated")
    import pyamf
    import pyamf.amf0
    import pyamf.amf3
    import pyamf.flex
    import pyamf.xml

    # Py3AMF finds its ElementTree modules lazily, on the first encode of anything that is
    # not a plain scalar; make that happen now, under the filter above.
    pyamf.xml.is_xml(None)

import amfkit

__all__ = [
    "AMF0",
    "AMF3",
    "amfkit_codec",
    "assert_same_graph",
    "decode",
    "decode_all",
    "encode",
    "encode_all",
    "from_py3amf",
    "pyamf",
    "registered",
    "to_py3amf",
]

AMF0 = 0
AMF3 = 3
_ENCODING = {AMF0: pyamf.AMF0, AMF3: pyamf.AMF3}


def amfkit_codec(version: int) -> Any:
    """amfkit's module for an encoding: ``amfkit.amf0`` or ``amfkit.amf3``."""
    return {AMF0: amfkit.amf0, AMF3: amfkit.amf3}[version]


@contextlib.contextmanager
def _quiet_dates() -> Iterator[None]:
    # Py3AMF decodes dates with datetime.utcfromtimestamp, deprecated from Python 3.12.
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*utcfromtimestamp.* is deprecated", category=DeprecationWarning
        )
        yield


# ---------------------------------------------------------------------------------------
# Encoding and decoding


def encode(obj: Any, version: int, *, use_ext: bool | None = None) -> bytes:
    """Encode one value with Py3AMF (``version`` is ``AMF0`` or ``AMF3``).

    ``use_ext=False`` forces the pure-Python codec, ``True`` the Cython one (when built);
    ``None`` lets Py3AMF choose, as its own ``pyamf.encode`` does.
    """
    return encode_all([obj], version, use_ext=use_ext)


def encode_all(objs: Iterable[Any], version: int, *, use_ext: bool | None = None) -> bytes:
    """Encode several values with one Py3AMF encoder, so they share one reference context."""
    encoder = pyamf.get_encoder(_ENCODING[version], use_ext=use_ext)
    for obj in objs:
        encoder.writeElement(obj)
    return bytes(encoder.stream.getvalue())


def decode(data: bytes, version: int, *, strict: bool = False, use_ext: bool | None = None) -> Any:
    """Decode exactly one value with Py3AMF.

    Input that ends before the value does raises (``pyamf.EOStream`` at a value boundary,
    where Py3AMF's own iterator would silently yield nothing, ``OSError`` inside a value);
    trailing bytes raise ``ValueError``.
    """
    decoder = pyamf.get_decoder(_ENCODING[version], bytes(data), strict=strict, use_ext=use_ext)
    with _quiet_dates():
        value = decoder.readElement()
    left = decoder.stream.remaining()
    if left:
        raise ValueError(f"{left} trailing bytes after the value")
    return value


def decode_all(data: bytes, version: int, *, strict: bool = False, use_ext: bool | None = None) -> list[Any]:
    """Decode every value in ``data`` with one Py3AMF decoder (one reference context)."""
    decoder = pyamf.get_decoder(_ENCODING[version], bytes(data), strict=strict, use_ext=use_ext)
    values = []
    with _quiet_dates():
        while decoder.stream.remaining():
            values.append(decoder.readElement())
    return values


# ---------------------------------------------------------------------------------------
# Translating between the two value models (both keep sharing and cycles)


def to_py3amf(value: Any) -> Any:
    """An amfkit-side graph rewritten with the types Py3AMF needs to write the same AMF.

    ``bytes``/``bytearray``/``memoryview`` become ``pyamf.amf3.ByteArray`` (Py3AMF writes
    ``bytes`` as a string), ``amfkit.MixedArray`` becomes ``pyamf.MixedArray``,
    ``amfkit.Undefined`` becomes ``pyamf.Undefined``, ``amfkit.ArrayCollection`` and
    ``amfkit.ObjectProxy`` become ``pyamf.flex``'s. Lists, tuples and dicts are copied
    (a tuple becomes a list); other values are passed through.
    """
    memo: dict[int, Any] = {}

    def conv(v: Any) -> Any:
        if v is amfkit.Undefined:
            return pyamf.Undefined
        if isinstance(v, (bytes, bytearray, memoryview)):
            if id(v) not in memo:
                memo[id(v)] = pyamf.amf3.ByteArray(bytes(v))
            return memo[id(v)]
        if isinstance(v, (list, tuple)):
            if id(v) in memo:
                return memo[id(v)]
            out: list[Any] = pyamf.flex.ArrayCollection() if isinstance(v, amfkit.ArrayCollection) else []
            memo[id(v)] = out
            out.extend(conv(x) for x in v)
            return out
        if isinstance(v, amfkit.ObjectProxy):
            if id(v) not in memo:
                memo[id(v)] = pyamf.flex.ObjectProxy({})
                memo[id(v)]._amf_object = {k: conv(x) for k, x in v.items()}
            return memo[id(v)]
        if isinstance(v, dict) and not isinstance(v, (amfkit.TypedObject, amfkit.Dictionary)):
            if id(v) in memo:
                return memo[id(v)]
            d: dict[Any, Any] = pyamf.MixedArray() if isinstance(v, amfkit.MixedArray) else {}
            memo[id(v)] = d
            for k, x in v.items():
                d[k] = conv(x)
            return d
        return v

    return conv(value)


def from_py3amf(value: Any) -> Any:
    """A graph decoded by Py3AMF rewritten into amfkit's value model.

    ``pyamf.ASObject`` becomes ``dict``, ``pyamf.MixedArray`` ``amfkit.MixedArray``,
    ``pyamf.TypedObject`` ``amfkit.TypedObject`` (alias and members; Py3AMF does not keep
    the trait shape), ``pyamf.amf3.ByteArray`` ``bytes``, ``pyamf.Undefined``
    ``amfkit.Undefined``, the ``(dict, weak_keys)`` tuple Py3AMF returns for a Dictionary
    ``amfkit.Dictionary``, ``pyamf.flex.ArrayCollection``/``ObjectProxy`` amfkit's
    ``ArrayCollection``/``ObjectProxy``. Instances of registered classes and XML elements
    are passed through.
    """
    memo: dict[int, Any] = {}

    def conv(v: Any) -> Any:
        if v is pyamf.Undefined:
            return amfkit.Undefined
        if isinstance(v, pyamf.amf3.ByteArray):
            return bytes(v.getvalue())  # not bytes(v): that re-compresses "compressed" ones
        if id(v) in memo:
            return memo[id(v)]
        if isinstance(v, list):
            out: list[Any] = amfkit.ArrayCollection() if isinstance(v, pyamf.flex.ArrayCollection) else []
            memo[id(v)] = out
            out.extend(conv(x) for x in v)
            return out
        if isinstance(v, pyamf.flex.ObjectProxy):
            proxy = amfkit.ObjectProxy()
            memo[id(v)] = proxy
            for k, x in v._amf_object.items():
                proxy[k] = conv(x)
            return proxy
        if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], dict) and isinstance(v[1], bool):
            dic = amfkit.Dictionary(weak_keys=v[1])
            memo[id(v)] = dic
            for k, x in v[0].items():
                key = conv(k)
                if isinstance(key, (dict, list)):
                    key = amfkit.ObjectKey(key)
                dic[key] = conv(x)
            return dic
        if isinstance(v, dict):
            d: dict[Any, Any]
            if isinstance(v, pyamf.TypedObject):
                alias = v.alias.decode() if isinstance(v.alias, bytes) else v.alias
                d = amfkit.TypedObject(alias)
            elif isinstance(v, pyamf.MixedArray):
                d = amfkit.MixedArray()
            else:
                d = {}
            memo[id(v)] = d
            for k, x in v.items():
                d[k] = conv(x)
            return d
        return v

    return conv(value)


# ---------------------------------------------------------------------------------------
# Comparing graphs


_MAPPINGS = (dict,)
_SEQUENCES = (list, tuple)


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if v is amfkit.Undefined or v is pyamf.Undefined:
        return "undefined"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, amfkit.XML):
        return "xml"
    if isinstance(v, amfkit.XMLDocument):
        return "xmldocument"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (bytes, bytearray, memoryview, pyamf.amf3.ByteArray)):
        return "bytes"
    if isinstance(v, (datetime.datetime, datetime.date)):
        return "date"
    if isinstance(v, (amfkit.TypedObject, pyamf.TypedObject)):
        return "typed"
    if isinstance(v, (amfkit.MixedArray, pyamf.MixedArray)):
        return "mixed"
    if isinstance(v, amfkit.Dictionary):
        return "dictionary"
    if isinstance(v, (amfkit.ArrayCollection, pyamf.flex.ArrayCollection)):
        return "arraycollection"
    if isinstance(v, (amfkit.ObjectProxy, pyamf.flex.ObjectProxy)):
        return "objectproxy"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, _SEQUENCES):
        return "array"
    return "instance:" + type(v).__qualname__


def assert_same_graph(expected: Any, actual: Any) -> None:
    """Assert that two object graphs are equal *and shaped alike*.

    Values compare by AMF meaning (an ``int`` equals the same ``float``; NaN equals NaN;
    a ``bytes`` equals a ``pyamf.amf3.ByteArray`` with the same content), containers member
    by member, and sharing must match: a container that occurs twice (or inside itself) in
    ``expected`` must be one object in ``actual`` too, and vice versa. The failure message
    names the path, like ``$[1]['a']``.
    """
    ab: dict[int, int] = {}
    ba: dict[int, int] = {}
    keep: list[Any] = []  # keep compared containers alive so that their ids stay unique

    def fail(path: str, why: str) -> None:
        raise AssertionError(f"{path}: {why}")

    def walk(a: Any, b: Any, path: str) -> None:
        ka, kb = _kind(a), _kind(b)
        if ka != kb:
            fail(path, f"expected {ka} {a!r:.80}, got {kb} {b!r:.80}")
        if ka in ("null", "undefined"):
            return
        if ka == "number":
            if not (a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))):
                fail(path, f"expected {a!r}, got {b!r}")
            return
        if ka in ("bool", "string", "xml", "xmldocument"):
            if a != b:
                fail(path, f"expected {a!r:.80}, got {b!r:.80}")
            return
        if ka == "bytes":
            ga = a.getvalue() if isinstance(a, pyamf.amf3.ByteArray) else bytes(a)
            gb = b.getvalue() if isinstance(b, pyamf.amf3.ByteArray) else bytes(b)
            if ga != gb:
                fail(path, f"expected {ga!r:.80}, got {gb!r:.80}")
            return
        if ka == "date":
            if a != b or type(a) is not type(b):
                fail(path, f"expected {a!r}, got {b!r}")
            return
        # containers and instances: check sharing first
        if id(a) in ab or id(b) in ba:
            if ab.get(id(a)) != id(b) or ba.get(id(b)) != id(a):
                fail(path, "shared references differ (an object is shared on one side only)")
            return
        ab[id(a)] = id(b)
        ba[id(b)] = id(a)
        keep.extend((a, b))
        if ka == "objectproxy":
            a = a._amf_object if isinstance(a, pyamf.flex.ObjectProxy) else a
            b = b._amf_object if isinstance(b, pyamf.flex.ObjectProxy) else b
            ka = "object"
        if ka in ("array", "arraycollection"):
            if len(a) != len(b):
                fail(path, f"expected {len(a)} items, got {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{path}[{i}]")
            return
        if ka in ("object", "mixed", "typed", "dictionary"):
            if ka == "typed":
                aa = a.alias.decode() if isinstance(a.alias, bytes) else a.alias
                bb = b.alias.decode() if isinstance(b.alias, bytes) else b.alias
                if aa != bb:
                    fail(path, f"expected alias {aa!r}, got {bb!r}")
            if ka == "dictionary" and a.weak_keys != b.weak_keys:
                fail(path, f"expected weak_keys={a.weak_keys}, got {b.weak_keys}")
            if set(a) != set(b):
                fail(path, f"expected keys {sorted(map(repr, a))}, got {sorted(map(repr, b))}")
            for k in a:
                walk(a[k], b[k], f"{path}[{k!r}]")
            return
        # an instance of a registered class: same class, same attributes
        if type(a) is not type(b):
            fail(path, f"expected {type(a).__qualname__}, got {type(b).__qualname__}")
        va, vb = _attrs(a), _attrs(b)
        if set(va) != set(vb):
            fail(path, f"expected attributes {sorted(va)}, got {sorted(vb)}")
        for k in va:
            walk(va[k], vb[k], f"{path}.{k}")

    walk(expected, actual, "$")


def _attrs(obj: Any) -> dict[str, Any]:
    out = dict(getattr(obj, "__dict__", {}))
    for klass in type(obj).__mro__:
        for name in klass.__dict__.get("__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                out[name] = getattr(obj, name)
    return out


# ---------------------------------------------------------------------------------------
# Class registration in both libraries


@contextlib.contextmanager
def registered(
    cls: type,
    alias: str,
    *,
    static: Iterable[str] | None = None,
    dynamic: bool = True,
) -> Iterator[type]:
    """Register ``cls`` under ``alias`` with amfkit and with Py3AMF for a ``with`` block.

    ``static`` and ``dynamic`` are given to both. Py3AMF reads these options from a
    ``class __amf__`` on the class; here they are set on the (lazily compiled) alias object
    its ``register_class`` returns, so the test classes stay plain. Py3AMF writes static
    members in sorted order whatever order is given (docs/py3amf.md).
    """
    static_names = tuple(static) if static is not None else None
    amfkit.register_class(cls, alias, static=static_names, dynamic=dynamic)
    try:
        py_alias = pyamf.register_class(cls, alias)
        if static_names is not None:
            py_alias.static_attrs = list(static_names)
        if not dynamic:
            py_alias.dynamic = False
        try:
            yield cls
        finally:
            with contextlib.suppress(Exception):
                pyamf.unregister_class(cls)
    finally:
        amfkit.unregister_class(cls)
