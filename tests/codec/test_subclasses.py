"""An instance of a subclass of one of amfkit's value types is written as that type
(`class Tagged(amfkit.MixedArray)` is a MixedArray on the wire), whatever the subclass
adds; a subclass of a plain dict or list stays an anonymous object or an array."""

from __future__ import annotations

import pytest

import amfkit
from amfkit import amf0, amf3


class Mixed(amfkit.MixedArray):
    __slots__ = ()


class Typed(amfkit.TypedObject):
    pass  # with a __dict__ of its own


class Dictionary(amfkit.Dictionary):
    __slots__ = ()


class Proxy(amfkit.ObjectProxy):
    __slots__ = ()


class Collection(amfkit.ArrayCollection):
    __slots__ = ()

    def first(self):
        return self[0]


class Vector(amfkit.ObjectVector):
    __slots__ = ()


class E4X(amfkit.XML):
    __slots__ = ()


class Document(amfkit.XMLDocument):
    __slots__ = ()


PAIRS = [
    (Mixed({"a": 1, 0: "x"}), amfkit.MixedArray({"a": 1, 0: "x"})),
    (Typed("com.example.T", {"a": 1}, sealed=("a",), dynamic=False), amfkit.TypedObject("com.example.T", {"a": 1}, sealed=("a",), dynamic=False)),
    (Dictionary({1: "one"}, weak_keys=True), amfkit.Dictionary({1: "one"}, weak_keys=True)),
    (Proxy({"a": 1}), amfkit.ObjectProxy({"a": 1})),
    (Collection([1, "two"]), amfkit.ArrayCollection([1, "two"])),
    (Vector([{"a": 1}], type_name="com.example.V", fixed=True), amfkit.ObjectVector([{"a": 1}], type_name="com.example.V", fixed=True)),
    (E4X("<a/>"), amfkit.XML("<a/>")),
    (Document("<b/>"), amfkit.XMLDocument("<b/>")),
]


@pytest.mark.parametrize("codec", [amf3, amf0], ids=["amf3", "amf0"])
@pytest.mark.parametrize("sub, base", PAIRS, ids=[type(s).__name__ for s, _ in PAIRS])
def test_a_subclass_is_written_as_its_amfkit_base(codec, sub, base):
    assert codec.encode([sub, sub]) == codec.encode([base, base])  # the second one a reference


def test_what_a_subclass_adds_stays_in_python():
    t = Typed("com.example.T", {"a": 1})
    t.note = "not on the wire"
    assert amf3.encode(t) == amf3.encode(amfkit.TypedObject("com.example.T", {"a": 1}))


def test_subclasses_of_plain_dicts_and_lists_stay_objects_and_arrays():
    class Plain(dict):
        pass

    class Items(list):
        pass

    assert amf3.encode(Plain(a=1)) == amf3.encode({"a": 1})
    assert amf3.encode(Items([1])) == amf3.encode([1])
