"""amfkit.Table: rows of one shape as typed objects sharing one traits entry."""

from __future__ import annotations

import datetime as dt

import pytest

import amfkit
from amfkit import amf0, amf3


ROWS = [(1, "red", 2.5), (2, "blue", None), (3, "red", -1.0)]


def test_amf3_writes_one_traits_entry_and_values_by_position():
    t = amfkit.Table("Tile", ("id", "color", "x"), ROWS)
    data = amf3.encode(t)
    # Array of 3: first object with inline traits (3 sealed, not dynamic: 0x33), alias,
    # names; the others reference traits 0 (0x01).
    assert data.startswith(b"\x09\x07\x01\x0a\x33\x09Tile\x05id\x0bcolor\x03x")
    assert data.count(b"\x0a\x01") == 2
    back = amf3.decode(data)
    assert [dict(o) for o in back] == [dict(zip(t.columns, r)) for r in ROWS]
    assert all(isinstance(o, amfkit.TypedObject) and o.alias == "Tile" and o.sealed == t.columns for o in back)


def test_same_bytes_as_typed_objects_of_that_shape():
    t = amfkit.Table("Tile", ("id", "color", "x"), ROWS)
    typed = [amfkit.TypedObject("Tile", dict(zip(t.columns, r)), sealed=t.columns, dynamic=False) for r in ROWS]
    assert amf3.encode(t) == amf3.encode(typed)
    assert amf0.encode(t) == amf0.encode(typed)


def test_collection_wraps_in_an_array_collection():
    t = amfkit.Table("Tile", ("id",), [(1,), (2,)], collection=True)
    back = amf3.decode(amf3.encode(t))
    assert isinstance(back, amfkit.ArrayCollection) and [o["id"] for o in back] == [1, 2]
    assert amf3.encode(amfkit.ArrayCollection(amf3.decode(amf3.encode(amfkit.Table("Tile", ("id",), [(1,), (2,)]))))) == amf3.encode(t)
    # AMF0 writes it through the AVM+ switch
    assert amf0.decode(amf0.encode(t)) == back


def test_registered_class_decodes_rows():
    class Tile:
        pass

    amfkit.register_class(Tile, "Tile", static=("id", "when"), dynamic=False)
    try:
        when = dt.datetime(2020, 1, 2)
        back = amf3.decode(amf3.encode(amfkit.Table("Tile", ("id", "when"), [[7, when]])))
        assert type(back[0]) is Tile and back[0].id == 7 and back[0].when == when
    finally:
        amfkit.unregister_class(Tile)


def test_anonymous_rows_in_amf0():
    data = amf0.encode(amfkit.Table("", ("a",), [(1,)]))
    assert data == amf0.encode([{"a": 1}])


def test_bad_rows_name_the_path():
    with pytest.raises(amfkit.EncodeError, match="a Table row of 1 values for 2 columns"):
        amf3.encode(amfkit.Table("T", ("a", "b"), [(1, 2), (3,)]))
    with pytest.raises(amfkit.EncodeError, match="tuple or a list"):
        amf3.encode(amfkit.Table("T", ("a",), [{"a": 1}]))
    with pytest.raises(amfkit.EncodeError) as e:
        amf3.encode(amfkit.Table("T", ("a", "b"), [(1, 2), (3, object())]))
    assert e.value.path == "$[1].b"


def test_a_table_in_a_stream_and_shared_twice():
    t = amfkit.Table("T", ("a",), [(1,)])
    back = amf3.decode(amf3.encode({"x": t, "y": t}))
    assert back["x"] is back["y"]
