"""Convert decoded amfkit Python values to the canonical typed JSON of fixtures/README.md,
so they can be compared with the manifest fixtures/vectors.json.

The conversion works at the level of Python types: an AMF3 integer decodes to `int` and
an AMF3 double to `float`, so they show as {"t": "int"} and {"t": "number"}. In AMF0
every number is a double on the wire, but amfkit's AMF0 reader hands out an `int` for
an integral one (as Py3AMF does), so the Python side cannot tell an AMF0 number 5.0 from
an AMF3 integer 5 read after an AVM+ switch: `amf0_level` shows both as numbers, and
the AMF0 comparisons are made at that level.

Containers (dict, list, array.array and amfkit's container types) that occur more than
once in the graph, by identity, get "id" on their first occurrence and {"t": "ref"}
later, exactly as the manifest writes shared references and cycles.
"""

from __future__ import annotations

import array
import datetime as _dt
import math
import struct
from typing import Any

import amfkit

__all__ = ["to_canonical", "to_canonical_stream", "restrict_ids", "number", "amf0_level"]

_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MS = _dt.timedelta(milliseconds=1)
_VECTOR_KINDS = {"i": "int", "I": "uint", "d": "number"}


def number(x: float):
    """A double as the notation writes it: a JSON number, or "NaN", "NaN:<bits>",
    "Infinity", "-Infinity", "-0"."""
    x = float(x)
    bits = struct.pack(">d", x).hex()
    if math.isnan(x):
        return "NaN" if bits == "7ff8000000000000" else "NaN:" + bits
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 and bits[0] == "8":
        return "-0"
    return int(x) if x.is_integer() and abs(x) < 2**63 else x


def _is_container(v: Any) -> bool:
    return isinstance(v, (dict, list, array.array))


def _children(v: Any):
    if isinstance(v, amfkit.Dictionary):
        for k, x in v.items():
            yield k.value if isinstance(k, amfkit.ObjectKey) else k
            yield x
    elif isinstance(v, dict):
        yield from v.values()
    elif isinstance(v, list):
        yield from v


class _Converter:
    def __init__(self, version: int, roots: list):
        self.version = version
        self.counts: dict = {}
        self.keep: list = []  # keep visited objects alive so ids stay unique
        for r in roots:
            self._count(r)
        self.ids: dict = {}

    def _count(self, v: Any) -> None:
        if not _is_container(v):
            return
        self.keep.append(v)
        n = self.counts.get(id(v), 0) + 1
        self.counts[id(v)] = n
        if n == 1:
            for c in _children(v):
                self._count(c)

    def _head(self, t: str, v: Any) -> dict:
        out = {"t": t}
        if self.counts.get(id(v), 0) > 1:
            out["id"] = self.ids[id(v)]
        return out

    def conv(self, v: Any):
        if _is_container(v) and self.counts.get(id(v), 0) > 1:
            if id(v) in self.ids:
                return {"t": "ref", "id": self.ids[id(v)]}
            self.ids[id(v)] = len(self.ids) + 1
        if v is None:
            return {"t": "null"}
        if v is amfkit.Undefined:
            return {"t": "undefined"}
        if isinstance(v, bool):
            return {"t": "bool", "v": v}
        if isinstance(v, int):
            return {"t": "int", "v": v}
        if isinstance(v, float):
            return {"t": "number", "v": number(v)}
        if isinstance(v, amfkit.XMLDocument):
            return {"t": "xmldoc", "v": str(v)}
        if isinstance(v, amfkit.XML):
            return {"t": "xml", "v": str(v)}
        if isinstance(v, str):
            return {"t": "string", "v": str(v)}
        if isinstance(v, (bytes, bytearray, memoryview)):
            return {"t": "bytes", "hex": bytes(v).hex()}
        if isinstance(v, _dt.datetime):
            if v.tzinfo is None:
                ms = (v - _EPOCH) / _MS
            else:
                ms = (v - _EPOCH_UTC) / _MS
            return {"t": "date", "ms": number(ms), "tz": 0}
        if isinstance(v, amfkit.Date):
            return {"t": "date", "ms": number(v.millis), "tz": v.tz}
        if isinstance(v, amfkit.ArrayCollection):
            # Flex's one-value wrapper; Python keeps only the wrapped Array's items.
            out = self._head("external", v)
            out["class"] = "flex.messaging.io.ArrayCollection"
            out["v"] = {"t": "array", "dense": [self.conv(x) for x in v], "assoc": []}
            return out
        if isinstance(v, amfkit.ObjectProxy):
            out = self._head("external", v)
            out["class"] = "flex.messaging.io.ObjectProxy"
            out["v"] = {"t": "object", "class": "", "sealed": [],
                        "dynamic": [[k, self.conv(x)] for k, x in v.items()]}
            return out
        if isinstance(v, amfkit.TypedObject):
            out = self._head("object", v)
            out["class"] = v.alias
            if self.version == 0:
                sealed_names: tuple = ()
                dynamic = True
            else:
                sealed_names = tuple(v.sealed)
                dynamic = bool(v.dynamic)
            out["sealed"] = [[k, self.conv(v[k])] for k in sealed_names]
            rest = [[k, self.conv(x)] for k, x in v.items() if k not in sealed_names]
            out["dynamic"] = rest if dynamic else None
            if not dynamic and rest:
                out["dynamic"] = rest  # shows the inconsistency instead of hiding it
            return out
        if isinstance(v, amfkit.MixedArray):
            if self.version == 0:
                out = self._head("ecma", v)
                out["items"] = [[str(k), self.conv(x)] for k, x in v.items()]
                return out
            out = self._head("array", v)
            dense_keys = [k for k in v if isinstance(k, int) and not isinstance(k, bool)]
            if sorted(dense_keys) != list(range(len(dense_keys))):
                raise AssertionError(f"MixedArray int keys are not 0..n-1: {dense_keys}")
            out["dense"] = [self.conv(v[k]) for k in range(len(dense_keys))]
            out["assoc"] = [[k, self.conv(x)] for k, x in v.items() if isinstance(k, str)]
            return out
        if isinstance(v, amfkit.Dictionary):
            out = self._head("dict", v)
            out["weak"] = bool(v.weak_keys)
            items = []
            for k, x in v.items():
                key = k.value if isinstance(k, amfkit.ObjectKey) else k
                items.append([self.conv(key), self.conv(x)])
            out["items"] = items
            return out
        if isinstance(v, dict):
            out = self._head("object", v)
            out["class"] = ""
            out["sealed"] = []
            out["dynamic"] = [[k, self.conv(x)] for k, x in v.items()]
            return out
        if isinstance(v, amfkit.ObjectVector):
            out = self._head("vector", v)
            out["kind"] = "object"
            out["fixed"] = bool(v.fixed)
            out["type"] = v.type_name
            out["items"] = [self.conv(x) for x in v]
            return out
        if isinstance(v, array.array):
            out = self._head("vector", v)
            kind = _VECTOR_KINDS.get(v.typecode)
            if kind is None:
                raise AssertionError(f"array.array typecode {v.typecode!r} is no Vector kind")
            out["kind"] = kind
            out["fixed"] = isinstance(v, amfkit.FixedVector)  # a plain array.array is not fixed
            out["items"] = [number(x) if kind == "number" else int(x) for x in v]
            return out
        if isinstance(v, (list, tuple)):
            out = self._head("array", v)
            out["dense"] = [self.conv(x) for x in v]
            out["assoc"] = []
            return out
        raise AssertionError(f"no canonical form for {type(v).__name__}: {v!r}")


def amf0_level(tree):
    """The notation as Python's AMF0 model can show it: {"t": "int"} becomes
    {"t": "number"} (see the module docstring)."""
    if isinstance(tree, dict):
        if tree.get("t") == "int":
            return {"t": "number", "v": tree["v"]}
        return {k: amf0_level(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [amf0_level(v) for v in tree]
    return tree


def to_canonical(value: Any, version: int):
    return _Converter(version, [value]).conv(value)


def to_canonical_stream(values: list, version: int) -> list:
    c = _Converter(version, list(values))
    return [c.conv(v) for v in values]


def restrict_ids(values: list) -> list:
    """Drop "id"s that no {"t": "ref"} in `values` uses and renumber the rest in order
    of first appearance (for comparing a prefix of a stream's values)."""
    used: set = set()

    def scan(n):
        if isinstance(n, dict):
            if n.get("t") == "ref":
                used.add(n["id"])
            for x in n.values():
                scan(x)
        elif isinstance(n, list):
            for x in n:
                scan(x)

    scan(values)
    new: dict = {}

    def fix(n):
        if isinstance(n, dict):
            out = {}
            for k, x in n.items():
                if k == "id" and n.get("t") != "ref":
                    if x in used:
                        new[x] = len(new) + 1
                        out[k] = new[x]
                    continue
                out[k] = fix(x)
            if n.get("t") == "ref":
                out["id"] = new[n["id"]]
            return out
        if isinstance(n, list):
            return [fix(x) for x in n]
        return n

    return fix(values)
