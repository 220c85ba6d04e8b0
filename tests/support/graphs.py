"""Graph comparison for the codec tests: equal values AND the same sharing.

`assert_isomorphic(a, b)` walks both graphs together and checks that wherever `a` has
the same container twice (by identity), `b` does too, and nowhere else: references must
stay references, and cycles must come back as cycles. Values keep their types, mappings
their key order, Vectors their bits (`amfkit.compare`, exact mode: the one
comparison the benchmark lab, the demo and the tests share).
"""

from __future__ import annotations

from typing import Any

from amfkit.compare import first_difference


def assert_isomorphic(a: Any, b: Any, *, amf0: bool = False) -> None:
    """`amf0=True` for `b` re-read from AMF0, which has one XML type and one number type:
    an `XML` in `a` (read through the AVM+ switch) may come back as an `XMLDocument`, and
    an integral float as the equal int; and a version-3 packet writes its values as AMF3,
    where a large int is a double, a MixedArray's named keys come first (and one with
    only dense items is a list), and an AMF0
    Date's time-zone field (kept in `amfkit.Date`) is gone."""
    problem = first_difference(a, b, amf0=amf0)
    assert problem is None, problem
