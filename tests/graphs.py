"""Graph comparison for the codec tests: equal values AND the same sharing.

`assert_isomorphic(a, b)` walks both graphs together and checks that wherever `a` has
the same container twice (by identity), `b` does too, and nowhere else: references must
stay references, and cycles must come back as cycles.
"""

from __future__ import annotations

import array
import math
from typing import Any

import amfkit

_CONTAINERS = (dict, list, array.array)


def assert_isomorphic(a: Any, b: Any, path: str = "$") -> None:
    _Walker().walk(a, b, path)


class _Walker:
    def __init__(self) -> None:
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
        assert type(a) is type(b) or _equivalent_types(a, b), f"{path}: {type(a).__name__} != {type(b).__name__}"
        if isinstance(a, amfkit.TypedObject):
            assert (a.alias, a.sealed, a.dynamic) == (b.alias, b.sealed, b.dynamic), path
        if isinstance(a, dict):
            assert list(a.keys()) == list(b.keys()), f"{path}: keys {list(a)} != {list(b)}"
            for k in a:
                self.walk(a[k], b[k], f"{path}[{k!r}]")
        elif isinstance(a, list):
            assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
            for i, (x, y) in enumerate(zip(a, b)):
                self.walk(x, y, f"{path}[{i}]")
        elif hasattr(a, "__dict__") and not isinstance(a, type):
            self.walk(dict(vars(a)), dict(vars(b)), path + ".__dict__")
        else:
            assert a == b, f"{path}: {a!r} != {b!r}"


def _equivalent_types(a: Any, b: Any) -> bool:
    # A tuple is written as an Array and read back as a list.
    return isinstance(a, tuple) and isinstance(b, list)
