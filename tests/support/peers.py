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
import warnings
from typing import Any, Iterable, Iterator

with warnings.catch_warnings():
    warnings.filterwarnings(
        "ignore", message=r"defusedxml\..* is deprecated", category=DeprecationWarning
    )
    warnings.filterwarnings("ignore", message=r".*pkg_resources is deprecated")
    # CPython 3.12+ deprecates what Py3AMF's util calls at import time.
    warnings.filterwarnings("ignore", message=r"datetime\.datetime\.utcfromtimestamp", category=DeprecationWarning)
    import pyamf
    import pyamf.amf0
    import pyamf.amf3
    import pyamf.flex
    import pyamf.xml

    # Py3AMF finds its ElementTree modules lazily, on the first encode of anything that is
    # not a plain scalar; make that happen now, under the filter above.
    pyamf.xml.is_xml(None)

import amfkit
from amfkit.compare import first_difference
from amfkit_bench.peers import register_amfkit, register_py3amf

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


def assert_same_graph(expected: Any, actual: Any) -> None:
    """Assert that two object graphs are equal *and shaped alike*.

    Values compare by AMF meaning (an ``int`` equals the same ``float``; NaN equals NaN;
    ``bytes`` equals a ``bytearray`` with the same content; members in any order),
    containers member by member, and sharing must match: a container that occurs twice
    (or inside itself) in ``expected`` must be one object in ``actual`` too, and vice
    versa. The failure message names the path, like ``$[1].a``. (``from_py3amf`` first
    for a graph Py3AMF decoded: this is ``amfkit.compare``'s comparison by
    meaning, ``exact=False``.)
    """
    problem = first_difference(expected, actual, exact=False)
    assert problem is None, problem


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

    ``static`` and ``dynamic`` are given to both (``amfkit_bench.peers``, which the
    benchmarks use too). Py3AMF reads these options from a ``class __amf__`` on the class;
    here they are set on the (lazily compiled) alias object its ``register_class``
    returns, so the test classes stay plain. Py3AMF writes static members in sorted order
    whatever order is given (docs/py3amf.md).
    """
    static_names = tuple(static) if static is not None else None
    with contextlib.ExitStack() as stack:
        register_amfkit(stack, cls, alias, static=static_names, dynamic=dynamic)
        register_py3amf(stack, pyamf, cls, alias, static=static_names, dynamic=dynamic)
        yield cls
