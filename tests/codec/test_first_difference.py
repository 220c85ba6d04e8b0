"""The one graph comparison (`amfkit.compare`): the benchmark lab's checks, the
demo and the codec tests' `assert_isomorphic` / `assert_same_graph` all rest on it, so
here it must see every difference it promises to see."""

from __future__ import annotations

import array
import datetime
import math
import struct

import amfkit
from amfkit.compare import first_difference


class Point:
    def __init__(self, **members):
        self.__dict__.update(members)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


def test_equal_graphs_are_the_same_in_every_mode():
    team = amfkit.TypedObject("com.example.Team", {"name": "Engines"})
    graph = {"teams": [team, team], "when": datetime.datetime(2024, 5, 17), "blob": b"\x00", "n": 2.5, "u": amfkit.Undefined}
    twin = {"teams": [team, team], "when": datetime.datetime(2024, 5, 17), "blob": b"\x00", "n": 2.5, "u": amfkit.Undefined}
    for options in ({}, {"exact": False}, {"refs": False}, {"amf0": True}):
        assert first_difference(graph, graph, **options) is None
        assert first_difference(graph, twin, **options) is None


def test_sharing_and_cycles():
    shared = [1]
    assert "shared reference came back as a separate object" in first_difference([shared, shared], [[1], [1]])
    assert "two distinct objects came back as one shared object" in first_difference([[1], [1]], [shared, shared])
    assert first_difference([shared, shared], [[1], [1]], refs=False) is None
    a: list = []
    a.append(a)
    b: list = []
    b.append(b)
    c: list = [[]]
    c[0].append(c[0])
    assert first_difference(a, b) is None
    assert first_difference(a, b, refs=False) is None  # ends, without references too
    assert first_difference(a, c) is not None  # c is no cycle through its root
    # instances and tuples are objects: their sharing counts
    p = Point(x=1)
    assert first_difference((p, p), [Point(x=1), Point(x=1)]) is not None
    assert first_difference((p, p), [p, p]) is None


def test_paths_name_the_difference():
    assert first_difference({"a": "x"}, {"a": "y"}) == "$.a: expected 'x', got 'y'"
    assert first_difference({"a": "x"}, {"a": 1}) == "$.a: expected str 'x', got int 1"
    assert first_difference([0, {"two words": [1]}], [0, {"two words": [2]}]).startswith("$[1]['two words'][0]: ")
    assert first_difference(Point(p=Point(q=1)), Point(p=Point(q=2))).startswith("$.p.q: ")
    assert "expected a Point instance" in first_difference(Point(x=1), {"x": 1})


def test_exact_types_and_amf0_normalisations():
    assert first_difference(1, 1.0) is not None
    assert first_difference(1.0, 1, amf0=True) is None  # AMF0's one number type
    assert first_difference(2**40, 2**40 * 1.0, amf0=True) is None
    assert first_difference(1.5, 1, amf0=True) is not None
    assert first_difference(True, 1, amf0=True) is not None
    assert first_difference((1, 2), [1, 2]) is None  # a tuple is written as an Array
    assert first_difference([1, 2], (1, 2)) is not None
    assert first_difference(b"x", bytearray(b"x")) is not None
    xml = amfkit.XML("<a/>")
    assert first_difference(xml, amfkit.XMLDocument("<a/>")) is not None
    assert first_difference(xml, amfkit.XMLDocument("<a/>"), amf0=True) is None
    assert first_difference(xml, amfkit.XMLDocument("<b/>"), amf0=True) is not None


def test_nan_numbers_and_dates():
    nan = float("nan")
    assert first_difference([nan], [nan]) is None
    assert first_difference([nan], [0.0]) is not None
    assert first_difference({"n": nan}, {"n": 1.0}, exact=False) is not None
    assert first_difference(amfkit.Date(nan), amfkit.Date(nan)) is None
    assert first_difference(amfkit.Date(nan), amfkit.Date(0.0)) is not None
    # AMF0's time zone field is gone after AMF3; the instant must survive
    with_tz = amfkit.Date(86_400_000.0, tz=60)
    assert first_difference(with_tz, amfkit.Date(86_400_000.0)) is not None
    assert first_difference(with_tz, amfkit.Date(86_400_000.0), amf0=True) is None
    assert first_difference(with_tz, datetime.datetime(1970, 1, 2), amf0=True) is None
    assert first_difference(with_tz, datetime.datetime(1970, 1, 3), amf0=True) is not None
    assert first_difference(amfkit.Date(nan, tz=60), amfkit.Date(nan), amf0=True) is None


def test_vectors_bit_for_bit():
    quiet, payload = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0], struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
    assert math.isnan(quiet) and math.isnan(payload)
    assert first_difference(array.array("d", [quiet]), array.array("d", [quiet])) is None
    assert first_difference(array.array("d", [quiet]), array.array("d", [payload])) is not None
    assert first_difference(array.array("d", [0.0]), array.array("d", [-0.0])) is not None
    assert first_difference(array.array("d", [0.0]), array.array("d", [-0.0]), exact=False) is None
    assert first_difference(array.array("i", [1]), array.array("I", [1])) is not None


def test_mappings_keys_and_traits():
    assert first_difference({"a": 1, "b": 2}, {"b": 2, "a": 1}) is not None  # key order counts
    assert first_difference({"a": 1, "b": 2}, {"b": 2, "a": 1}, exact=False) is None
    typed = amfkit.TypedObject("T", {"a": 1}, sealed=("a",), dynamic=False)
    assert first_difference(typed, amfkit.TypedObject("T", {"a": 1})) is not None  # traits differ
    assert first_difference(typed, amfkit.TypedObject("T", {"a": 1}), exact=False) is None
    assert first_difference(typed, amfkit.TypedObject("U", {"a": 1}, sealed=("a",), dynamic=False), exact=False) is not None
    assert first_difference({"a": 1}, amfkit.TypedObject("T", {"a": 1}), exact=False) is not None
    # a MixedArray: AMF3 writes its named keys first, and one with dense items only as a list
    mixed = amfkit.MixedArray()
    mixed.update({"x": 1, "y": 2})
    reordered = amfkit.MixedArray()
    reordered.update({"y": 2, "x": 1})
    assert first_difference(mixed, reordered) is not None
    assert first_difference(mixed, reordered, amf0=True) is None
    dense = amfkit.MixedArray()
    dense.update({0: "a", 1: "b"})
    assert first_difference(dense, ["a", "b"], amf0=True) is None
    assert first_difference(dense, ["a", "c"], amf0=True) is not None
    assert first_difference(dense, ["a", "b"]) is not None


def test_dictionary_keys_are_walked_by_identity():
    key = [1]
    d = amfkit.Dictionary()
    d[amfkit.ObjectKey(key)] = "k"
    d[float("nan")] = "nan"
    same = amfkit.Dictionary()
    same[amfkit.ObjectKey([1])] = "k"
    same[float("nan")] = "nan"
    assert first_difference(d, same) is None
    other = amfkit.Dictionary()
    other[amfkit.ObjectKey([2])] = "k"
    other[float("nan")] = "nan"
    assert first_difference(d, other).startswith("$.keys()[0]")
    weak = amfkit.Dictionary(weak_keys=True)
    weak.update(same)
    assert first_difference(d, weak) is not None
    # the key object is shared with the graph: that sharing must survive too
    both = [key, d]
    back_key = [1]
    back = amfkit.Dictionary()
    back[amfkit.ObjectKey(back_key)] = "k"
    back[float("nan")] = "nan"
    assert first_difference(both, [back_key, back]) is None
    assert first_difference(both, [[1], back]) is not None


def test_instances_compare_member_by_member():
    assert first_difference(Point(a=1), Point(a=1)) is None
    assert first_difference(Point(a=1), Point(a=2)) is not None
    assert first_difference(Point(a=1, b=2), Point(b=2, a=1)) is not None  # member order, exact
    assert first_difference(Point(a=1, b=2), Point(b=2, a=1), exact=False) is None
    # a registered class's static member written as undefined: absent and Undefined match
    assert first_difference(Point(a=1), Point(a=1, b=amfkit.Undefined)) is None
    assert first_difference(Point(a=1), Point(a=1, b=amfkit.Undefined), exact=False) is not None
    assert first_difference(Slotted(1, [2]), Slotted(1, [2])) is None
    assert first_difference(Slotted(1, [2]), Slotted(1, [3])).startswith("$.b[0]")
    assert first_difference(Point(a=1), Slotted(1, 2)) is not None


def test_by_meaning():
    assert first_difference([1, 2.5], [1.0, 2.5], exact=False) is None
    assert first_difference([True], [1], exact=False) is not None
    assert first_difference(b"x", bytearray(b"x"), exact=False) is None
    assert first_difference(b"x", b"y", exact=False) is not None

    class PeerObject(dict):  # a peer's anonymous-object type
        pass

    assert first_difference({"a": 1}, PeerObject(a=1), exact=False) is None
    assert first_difference({"a": 1}, PeerObject(a=1)) is not None
    assert first_difference([datetime.date(2020, 1, 1)], [datetime.datetime(2020, 1, 1)], exact=False) is not None
    # an amfkit.Date is an object here: its sharing is checked
    when = amfkit.Date(0.0)
    assert first_difference([when, when], [amfkit.Date(0.0), amfkit.Date(0.0)], exact=False) is not None
    assert first_difference([when, when], [amfkit.Date(0.0), amfkit.Date(0.0)]) is None
