"""Graph comparison for the codec tests: equal values AND the same sharing.

`assert_isomorphic(a, b)` walks both graphs together and checks that wherever `a` has
the same container twice (by identity), `b` does too, and nowhere else: references must
stay references, and cycles must come back as cycles.
"""

from __future__ import annotations

import array
import datetime
import math
from typing import Any

import amfkit

_CONTAINERS = (dict, list, array.array)


def assert_isomorphic(a: Any, b: Any, path: str = "$", *, amf0: bool = False) -> None:
    """`amf0=True` for `b` re-read from AMF0, which has one XML type and one number type:
    an `XML` in `a` (read through the AVM+ switch) may come back as an `XMLDocument`, and
    an integral float as the equal int; and a version-3 packet writes its values as AMF3,
    where a large int is a double, a MixedArray's named keys come first (and one with
    only dense items is a list), and an AMF0
    Date's time-zone field (kept in `amfkit.Date`) is gone."""
    _Walker(amf0).walk(a, b, path)


class _Walker:
    def __init__(self, amf0: bool = False) -> None:
        self.amf0 = amf0
        self.a_to_b: dict[int, int] = {}
        self.b_to_a: dict[int, int] = {}
        self.keep: list[Any] = []

    def walk(self, a: Any, b: Any, path: str) -> None:
        if isinstance(a, _CONTAINERS) or hasattr(a, "__dict__") and not isinstance(a, type):
            seen_a = self.a_to_b.get(id(a))
            seen_b = self.b_to_a.get(id(b))
            if seen_a is not None or seen_b is not None:
                assert seen_a == id(b) and seen_b == id(a), f"{path}: sharing differs"
                return
            self.a_to_b[id(a)] = id(b)
            self.b_to_a[id(b)] = id(a)
            self.keep += [a, b]
        if isinstance(a, float) and math.isnan(a):
            assert isinstance(b, float) and math.isnan(b), f"{path}: {b!r} is not NaN"
            return
        if self.amf0 and type(a) is amfkit.MixedArray and type(b) is list:
            # In AMF3 a MixedArray with only dense items is a plain Array.
            assert list(a) == list(range(len(b))), f"{path}: keys {list(a)} != {len(b)} dense items"
            for i, y in enumerate(b):
                self.walk(a[i], y, f"{path}[{i}]")
            return
        if self.amf0 and type(a) is amfkit.Date and a.tz:
            if type(b) is datetime.datetime:
                millis = (b - datetime.datetime(1970, 1, 1)) / datetime.timedelta(milliseconds=1)
                assert abs(a.millis - millis) < 1, f"{path}: {a!r} != {b!r}"
            else:
                assert type(b) is amfkit.Date, f"{path}: {a!r} != {b!r}"
                same = a.millis == b.millis or math.isnan(a.millis) and math.isnan(b.millis)
                assert same, f"{path}: {a!r} != {b!r}"
            return
        assert type(a) is type(b) or _equivalent_types(a, b, self.amf0), f"{path}: {type(a).__name__} != {type(b).__name__}"
        if isinstance(a, amfkit.TypedObject):
            assert (a.alias, a.sealed, a.dynamic) == (b.alias, b.sealed, b.dynamic), path
        if isinstance(a, amfkit.ObjectKey):
            self.walk(a.value, b.value, path + ".value")
        elif isinstance(a, dict):
            ka, kb = list(a.keys()), list(b.keys())
            if not all(type(k) is str for k in ka):
                # Dictionary keys: objects (compared by identity), NaN (equal to nothing):
                # walk them as values, in order.
                assert len(ka) == len(kb), f"{path}: {len(ka)} keys != {len(kb)}"
                for i, (x, y) in enumerate(zip(ka, kb)):
                    self.walk(x, y, f"{path}.keys()[{i}]")
                    self.walk(a[x], b[y], f"{path}[{i}]")
                return
            if self.amf0 and isinstance(a, amfkit.MixedArray):
                # An AMF3 Array (a version-3 packet's) holds its named keys before its
                # dense items: the same keys, in another order.
                ka, kb = sorted(ka, key=repr), sorted(kb, key=repr)
            assert ka == kb, f"{path}: keys {ka} != {kb}"
            for k in a:
                self.walk(a[k], b[k], f"{path}[{k!r}]")
        elif isinstance(a, list):
            assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
            for i, (x, y) in enumerate(zip(a, b)):
                self.walk(x, y, f"{path}[{i}]")
        elif hasattr(a, "__dict__") and not isinstance(a, type):
            # A registered instance without one of its static members is written with
            # that member undefined (README, "Errors"): absent and undefined are the same.
            self.walk(_defined(a), _defined(b), path + ".__dict__")
        elif isinstance(a, array.array):
            # Bit for bit: NaN payloads and -0.0 in number vectors survive a round trip.
            assert (a.typecode, a.tobytes()) == (b.typecode, b.tobytes()), f"{path}: {a!r} != {b!r}"
        else:
            assert a == b, f"{path}: {a!r} != {b!r}"


def _defined(obj: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(obj).items() if v is not amfkit.Undefined}


def _equivalent_types(a: Any, b: Any, amf0: bool) -> bool:
    # A tuple is written as an Array and read back as a list.
    if amf0 and type(a) is amfkit.XML and type(b) is amfkit.XMLDocument:
        return True
    if amf0 and {type(a), type(b)} == {float, int}:
        return a == b
    return isinstance(a, tuple) and isinstance(b, list)
