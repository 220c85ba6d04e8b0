"""Members are written in the order Python iterates the dict, whatever its table looks like.

The encoder walks a dict's entries itself on CPython 3.11 (and through PyDict_Next
elsewhere). These tests build dicts of every table kind CPython has: str keys only,
keys of other types, the split tables of instance dicts (shared keys, each instance
with its own order), with deletions and re-insertions, and check that the decoded
members come back in `list(d)` order, in both versions.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import amfkit
from amfkit import amf0, amf3

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
