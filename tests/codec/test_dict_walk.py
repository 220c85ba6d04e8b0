"""Members are written in the order Python iterates the dict, whatever its table looks like.

The encoder walks a dict's entries itself on CPython 3.11, 3.12 and 3.13, each with its
own layout (and through PyDict_Next elsewhere); `make test-pythons` runs these tests on
every supported version. These tests build dicts of every table kind CPython has: str keys only,
keys of other types, the split tables of instance dicts (shared keys, each instance
with its own order), with deletions and re-insertions, and check that the decoded
members come back in `list(d)` order, in both AMF versions.
"""

from __future__ import annotations

import sys
import sysconfig

import pytest
from hypothesis import given
from hypothesis import strategies as st

import amfkit
from amfkit import _amfkit, amf0, amf3

NAMES = [f"m{i}" for i in range(12)]


class Bag:
    """A registered dynamic class: its instances' dicts share one keys table."""


@pytest.fixture(scope="module", autouse=True)
def _bag_registered():
    amfkit.register_class(Bag, "org.amfkit.test.Bag")
    yield
    amfkit.unregister_class(Bag)


#: (op, name, value): op True sets the name, False deletes it when present.
OPS = st.lists(st.tuples(st.booleans(), st.sampled_from(NAMES), st.integers(-5, 5)), max_size=40)


def _apply(target: dict, ops) -> None:
    for put, name, value in ops:
        if put:
            target[name] = value
        else:
            target.pop(name, None)


def _bag(ops) -> Bag:
    bag = Bag()
    for put, name, value in ops:
        if put:
            setattr(bag, name, value)
        elif hasattr(bag, name):
            delattr(bag, name)
    return bag


@pytest.mark.parametrize("codec", [amf3, amf0], ids=["amf3", "amf0"])
@given(ops=OPS)
def test_a_str_keyed_dict_keeps_its_order(codec, ops):
    d: dict = {}
    _apply(d, ops)
    back = codec.decode(codec.encode(d))
    assert list(back.items()) == list(d.items())


@pytest.mark.parametrize("codec", [amf3, amf0], ids=["amf3", "amf0"])
@given(first=OPS, ops=OPS)
def test_instances_sharing_keys_each_keep_their_own_order(codec, first, ops):
    # The first instance fixes the class's shared keys; the second sets and deletes in
    # another order, so its order differs from the shared table's.
    one, two = _bag(first), _bag(ops)
    back = codec.decode(codec.encode([one, two]))
    assert [list(vars(b).items()) for b in back] == [list(vars(one).items()), list(vars(two).items())]


@given(ops=OPS)
def test_a_dict_with_other_keys_keeps_its_order(ops):
    # An int key turns the table general (entries with hashes): AMF0 writes it as an
    # ECMA array (the int's text as the name, read back as the int).
    d: dict = {0: "zero"}
    _apply(d, ops)
    back = amf0.decode(amf0.encode(d))
    assert list(back.items()) == list(d.items())


def test_a_dict_subclass_and_a_dict_emptied_by_deletions():
    class Ordered(dict):
        pass

    d = Ordered(b=1, a=2, c=3)
    del d["a"]
    d["a"] = 4
    assert list(amf3.decode(amf3.encode(d)).items()) == [("b", 1), ("c", 3), ("a", 4)]
    e = {"x": 1}
    del e["x"]
    assert amf3.decode(amf3.encode(e)) == {}
    bag = Bag()
    bag.only = 1
    del bag.only
    assert vars(amf3.decode(amf3.encode(bag))) == {}


def test_the_walk_in_place_is_built_where_the_layout_is_known():
    # build.rs turns the in-place walk on for the CPython versions whose dict layout
    # dictwalk.rs mirrors (3.11, 3.12, 3.13; release builds with the GIL), and only there.
    known = (
        sys.implementation.name == "cpython"
        and (3, 11) <= sys.version_info[:2] <= (3, 13)
        and not sysconfig.get_config_var("Py_DEBUG")
        and not sysconfig.get_config_var("Py_GIL_DISABLED")
    )
    assert _amfkit.DICT_WALK == ("in place" if known else "PyDict_Next")


def test_an_instance_before_and_after_its_dict_is_made():
    # Until something asks for `__dict__`, CPython 3.11+ keeps an instance's values
    # without a dict (3.12 marks that in the managed-dict slot; 3.13 keeps them inline):
    # the encoder reads the members either way, in the same order.
    bag = Bag()
    bag.b = 1
    bag.a = [2]
    before = amf3.encode(bag)
    assert list(vars(bag)) == ["b", "a"]  # makes the dict
    assert amf3.encode(bag) == before
    assert list(vars(amf3.decode(before)).items()) == [("b", 1), ("a", [2])]


class Oops(Exception):
    """A registered exception: its `__dict__` sits at a fixed offset (`tp_dictoffset`),
    not in the managed-dict slot."""


def test_an_instance_whose_dict_is_at_its_types_dict_offset():
    amfkit.register_class(Oops, "org.amfkit.test.Oops")
    try:
        oops = Oops()
        oops.code = 7
        oops.where = "here"
        for codec in (amf3, amf0):
            back = codec.decode(codec.encode(oops))
            assert type(back) is Oops and list(vars(back).items()) == [("code", 7), ("where", "here")]
    finally:
        amfkit.unregister_class(Oops)
