"""Where two object graphs first differ: `first_difference(expected, actual)` gives None
for the same graph, else a path into `expected` and a reason
(``$.teams[0].name: expected 'Ada', got 'Eve'``). Sharing, cycles and AMF's own types are
compared too; the options say how strictly. The demo, the tests and the benchmark lab
check round trips with it."""

from __future__ import annotations

import array
import datetime
import math
from typing import Any, Optional

from . import (
    XML,
    ArrayCollection,
    Date,
    Dictionary,
    MixedArray,
    ObjectKey,
    ObjectProxy,
    TypedObject,
    Undefined,
    XMLDocument,
)

__all__ = ["first_difference"]

#: The kinds whose values are objects with an identity: sharing is checked for them.
_SHARED_KINDS = frozenset(
    {"typed", "mixed", "dictionary", "objectproxy", "object", "array", "arraycollection", "vector", "instance"}
)
_MAPPING_KINDS = frozenset({"typed", "mixed", "dictionary", "objectproxy", "object"})
_EPOCH = datetime.datetime(1970, 1, 1)

# A path is built only when it is reported: a linked list of (parent, step) pairs, a step
# being ("item", index), ("member", key or name), or ("key" | "value", the entry's index)
# for a mapping whose keys are walked as values.
_Path = Optional[tuple[Any, tuple[str, Any]]]


def first_difference(
    expected: Any, actual: Any, *, refs: bool = True, exact: bool = True, amf0: bool = False
) -> str | None:
    """None when `actual` (typically `expected` after an encode and a decode) is the same
    graph as `expected`, else where and how they first differ. The graphs are walked
    together, depth first, in order (no recursion: any depth; cycles end where a pair was
    already seen).

    - `refs=True`: sharing must be kept exactly. Containers and instances are paired one to
      one as the walk meets them: one reached twice in `expected` must meet the same object
      of `actual` both times (cycles included), and two different objects of `expected`
      must never meet one object of `actual`. `refs=False` compares values only (for
      formats without references, such as JSON).
    - `exact=True` (the codec's own round trips): every value keeps its type (a tuple may
      come back as a list), an `int` is not a `float`, mappings keep their key order, a
      `TypedObject` its alias and traits (sealed members, dynamic), a Vector
      (`array.array`) its bits (NaN payloads, -0.0). Keys that are not all strings (a
      `Dictionary`'s objects, NaN) are compared pairwise, in order, as values. An instance
      of a registered class is compared member by member, a member that is `Undefined`
      counting as absent.
    - `exact=False`: by AMF meaning, for peers that have their own types. Values of the
      same AMF kind compare equal when they mean the same: any number equals an equal
      number (NaN equals NaN) but a bool stays a bool, any `dict` (a peer's
      anonymous-object type too) is an anonymous object, a tuple is a list,
      `bytes`/`bytearray`/`memoryview` compare by content, mappings by their set of keys,
      a `TypedObject` by its alias. Instances of other classes must still be of the same
      class with the same members. An `amfkit.Date` is an object here: with `refs`, its
      sharing is checked too.
    - `amf0=True` (with `exact`): `actual` was re-read from AMF0, or from a version-3
      packet whose values AMF3 wrote: AMF0 has one XML type and one number type, so an
      `XML` may come back as an `XMLDocument` and an integral float as the equal int (and
      a large int as a double); AMF3 writes a `MixedArray`'s named keys before its dense
      items (so their order may change) and one with dense items only as a plain list;
      and an `amfkit.Date`'s time-zone field, which only AMF0 carries, is gone (the
      instant must be the same).
    """
    return _Walk(refs, exact, amf0).run(expected, actual)


def _kind(value: Any) -> str:
    """The AMF kind of a Python value, as the comparison groups them."""
    if value is None:
        return "null"
    if value is Undefined:
        return "undefined"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "xml" if isinstance(value, XML) else "xmldocument" if isinstance(value, XMLDocument) else "string"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "bytes"
    if isinstance(value, (datetime.date, Date)):
        return "date"
    if isinstance(value, dict):
        if isinstance(value, TypedObject):
            return "typed"
        if isinstance(value, MixedArray):
            return "mixed"
        if isinstance(value, Dictionary):
            return "dictionary"
        if isinstance(value, ObjectProxy):
            return "objectproxy"
        return "object"
    if isinstance(value, (list, tuple)):
        return "arraycollection" if isinstance(value, ArrayCollection) else "array"
    if isinstance(value, array.array):
        return "vector"
    if isinstance(value, ObjectKey):
        return "objectkey"
    if not isinstance(value, type) and (hasattr(value, "__dict__") or _slot_names(type(value))):
        return "instance"
    return "other"


_SLOTS: dict[type, tuple[str, ...]] = {}


def _slot_names(cls: type) -> tuple[str, ...]:
    names = _SLOTS.get(cls)
    if names is None:
        names = _SLOTS[cls] = tuple(
            name
            for klass in cls.__mro__
            for name in klass.__dict__.get("__slots__", ())
            if name not in ("__dict__", "__weakref__")
        )
    return names


def _members(obj: Any) -> dict[str, Any]:
    """An instance's members: its `__dict__`, then its set slots."""
    out = dict(getattr(obj, "__dict__", {}))
    for name in _slot_names(type(obj)):
        if name not in out and hasattr(obj, name):
            out[name] = getattr(obj, name)
    return out


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _describe(value: Any, kind: str) -> str:
    if kind == "instance":
        return f"a {type(value).__name__} instance"
    return f"{type(value).__name__} {value!r:.80}"


def _format(path: _Path) -> str:
    steps = []
    while path is not None:
        path, (how, where) = path
        if how == "key":
            steps.append(f".keys()[{where}]")
        elif how == "member" and isinstance(where, str) and where.isidentifier():
            steps.append(f".{where}")
        elif how == "member":
            steps.append(f"[{where!r}]")
        else:  # an item, or the value of a key walked as a value
            steps.append(f"[{where}]")
    return "$" + "".join(reversed(steps))


class _Walk:
    def __init__(self, refs: bool, exact: bool, amf0: bool) -> None:
        self.refs, self.exact, self.amf0 = refs, exact, amf0
        self.to_actual: dict[int, int] = {}
        self.to_expected: dict[int, int] = {}
        self.pairs: set[tuple[int, int]] = set()  # refs=False: pairs already compared
        self.keep: list[Any] = []  # the objects whose ids the maps hold, kept alive
        self.stack: list[tuple[Any, Any, _Path]] = []

    def run(self, expected: Any, actual: Any) -> str | None:
        self.stack.append((expected, actual, None))
        while self.stack:
            a, b, path = self.stack.pop()
            problem = self.compare(a, b, path)
            if problem is not None:
                return f"{_format(path)}: {problem}"
        return None

    def push(self, items: list[tuple[Any, Any, tuple[str, Any]]], path: _Path) -> None:
        """Compare `items` (expected, actual, step) next, in order."""
        self.stack.extend((a, b, (path, step)) for a, b, step in reversed(items))

    def compare(self, a: Any, b: Any, path: _Path) -> str | None:
        ka, kb = _kind(a), _kind(b)
        if self.exact and self.amf0:
            applies, verdict = self.amf0_forms(a, b, path)
            if applies:
                return verdict
        if self.exact:
            if _is_nan(a):
                return None if _is_nan(b) else f"expected NaN, got {b!r:.80}"
            if type(a) is not type(b) and not self.equivalent_types(a, b):
                return f"expected {_describe(a, ka)}, got {_describe(b, kb)}"
        elif ka != kb or (ka in ("date", "instance", "other", "vector") and type(a) is not type(b)):
            return f"expected {_describe(a, ka)}, got {_describe(b, kb)}"
        if ka in _SHARED_KINDS or (not self.exact and type(a) is Date):
            met, problem = self.pair(a, b)
            if met or problem:
                return problem
        return self.contents(a, b, ka, path)

    def amf0_forms(self, a: Any, b: Any, path: _Path) -> tuple[bool, str | None]:
        """The AMF0 normalisations that change a value's form: (whether one applies, the
        verdict: None or the difference)."""
        if type(a) is MixedArray and type(b) is list:
            # In AMF3 a MixedArray with only dense items is a plain Array.
            met, problem = self.pair(a, b)
            if met or problem:
                return True, problem
            if list(a) != list(range(len(b))):
                return True, f"keys {list(a)!r:.200} are not the {len(b)} dense items that came back"
            self.push([(a[i], item, ("item", i)) for i, item in enumerate(b)], path)
            return True, None
        if type(a) is Date and a.tz:
            # The time-zone field is AMF0's alone: the instant must survive.
            if type(b) is datetime.datetime:
                millis = (b - _EPOCH) / datetime.timedelta(milliseconds=1)
                return True, None if abs(a.millis - millis) < 1 else f"expected {a!r}, got {b!r}"
            if type(b) is not Date:
                return True, f"expected {a!r}, got {b!r:.80}"
            same = a.millis == b.millis or math.isnan(a.millis) and math.isnan(b.millis)
            return True, None if same else f"expected {a!r}, got {b!r}"
        return False, None

    def equivalent_types(self, a: Any, b: Any) -> bool:
        """exact: the type changes a round trip may make (a tuple is written as an Array)."""
        if isinstance(a, tuple) and type(b) is list:
            return True
        if self.amf0 and type(a) is XML and type(b) is XMLDocument:
            return True
        return self.amf0 and {type(a), type(b)} == {float, int} and a == b

    def pair(self, a: Any, b: Any) -> tuple[bool, str | None]:
        """Record that `a` came back as `b`: (whether this pair met before, so its contents
        are compared already; what is wrong with the sharing, or None)."""
        ia, ib = id(a), id(b)
        if not self.refs:
            if (ia, ib) in self.pairs:
                return True, None
            self.pairs.add((ia, ib))
            self.keep += (a, b)
            return False, None
        seen_a, seen_b = self.to_actual.get(ia), self.to_expected.get(ib)
        if seen_a is None and seen_b is None:
            self.to_actual[ia], self.to_expected[ib] = ib, ia
            self.keep += (a, b)
            return False, None
        if seen_a == ib and seen_b == ia:
            return True, None
        if seen_a is not None:
            return False, "a shared reference came back as a separate object"
        return False, "two distinct objects came back as one shared object"

    def contents(self, a: Any, b: Any, kind: str, path: _Path) -> str | None:
        if kind in ("null", "undefined"):
            return None
        if kind == "number" and not self.exact:
            return None if a == b or _is_nan(a) and _is_nan(b) else f"expected {a!r}, got {b!r}"
        if kind == "bytes" and not self.exact:
            return None if bytes(a) == bytes(b) else f"expected {bytes(a)!r:.80}, got {bytes(b)!r:.80}"
        if kind == "vector":
            if self.exact:  # bit for bit: NaN payloads and -0.0 survive a round trip
                same = (a.typecode, a.tobytes()) == (b.typecode, b.tobytes())
            else:
                same = a.typecode == b.typecode and len(a) == len(b)
                same = same and all(x == y or _is_nan(x) and _is_nan(y) for x, y in zip(a, b))
            return None if same else f"expected {a!r:.80}, got {b!r:.80}"
        if kind == "objectkey":
            self.push([(a.value, b.value, ("member", "value"))], path)
            return None
        if kind in ("array", "arraycollection"):
            if len(a) != len(b):
                return f"expected {len(a)} items, got {len(b)}"
            self.push([(x, y, ("item", i)) for i, (x, y) in enumerate(zip(a, b))], path)
            return None
        if kind in _MAPPING_KINDS:
            return self.mapping(a, b, kind, path)
        if kind == "instance":
            return self.instance(a, b, path)
        return None if a == b else f"expected {a!r:.80}, got {b!r:.80}"

    def mapping(self, a: Any, b: Any, kind: str, path: _Path) -> str | None:
        if kind == "typed":
            if not self.exact and a.alias != b.alias:
                return f"expected the alias {a.alias!r}, got {b.alias!r}"
            want, got = (a.alias, a.sealed, a.dynamic), (b.alias, b.sealed, b.dynamic)
            if self.exact and want != got:
                return f"expected the traits (alias, sealed, dynamic) {want!r}, got {got!r}"
        if kind == "dictionary" and a.weak_keys != b.weak_keys:
            return f"expected weak_keys={a.weak_keys}, got {b.weak_keys}"
        keys_a, keys_b = list(a), list(b)
        if self.exact and not all(type(k) is str for k in keys_a):
            # Keys that are objects (compared by identity) or NaN (equal to nothing): walk
            # them as values, in order.
            if len(keys_a) != len(keys_b):
                return f"expected {len(keys_a)} keys, got {len(keys_b)}"
            items = []
            for i, (x, y) in enumerate(zip(keys_a, keys_b)):
                items += [(x, y, ("key", i)), (a[x], b[y], ("value", i))]
            self.push(items, path)
            return None
        if not self.exact:
            if set(keys_a) != set(keys_b):
                return f"expected keys {sorted(map(repr, keys_a))}, got {sorted(map(repr, keys_b))}"
        else:
            if self.amf0 and kind == "mixed":
                # An AMF3 Array (a version-3 packet's) holds its named keys before its dense
                # items: the same keys, in another order.
                keys_a, keys_b = sorted(keys_a, key=repr), sorted(keys_b, key=repr)
            if keys_a != keys_b:
                return f"expected keys {keys_a!r:.200}, got {keys_b!r:.200}"
        self.push([(a[k], b[k], ("member", k)) for k in a], path)
        return None

    def instance(self, a: Any, b: Any, path: _Path) -> str | None:
        ma, mb = _members(a), _members(b)
        if self.exact and [k for k in ma if k in mb] != [k for k in mb if k in ma]:
            return f"expected members {list(ma)}, got {list(mb)} (in another order)"
        # The encoder reads a registered instance's members with getattr: one the instance
        # lacks is its class's default if the class has one, else undefined (README,
        # "Errors"); absent and undefined are the same.
        if self.exact:
            for k in mb.keys() - ma.keys():
                ma[k] = getattr(a, k, Undefined)
            for k in ma.keys() - mb.keys():
                mb[k] = getattr(b, k, Undefined)
            ma = {k: v for k, v in ma.items() if v is not Undefined}
            mb = {k: v for k, v in mb.items() if v is not Undefined}
        if ma.keys() != mb.keys():
            return f"expected members {list(ma)}, got {list(mb)}"
        self.push([(v, mb[k], ("member", k)) for k, v in ma.items()], path)
        return None
