"""Lossless .sol round trips (`amfkit.sol.loads(..., lossless=True)`): the real files of
fixtures/sol/samples/ (Flash Player and other tools wrote them; provenance in
fixtures/README.md) and hand-written ones, byte for byte; edits change only what was
edited."""

from __future__ import annotations

import array
import gc
import struct
import weakref

import pytest

import amfkit
from amfkit import FixedVector, MixedArray, TypedObject, sol

from repo import FIXTURES

SAMPLES = FIXTURES / "sol" / "samples"
SAMPLE_NAMES = sorted(p.name for p in SAMPLES.glob("*.sol"))
CORRUPT = "2.sol"


def test_the_35_samples_are_there():
    assert len(SAMPLE_NAMES) == 35 and CORRUPT in SAMPLE_NAMES


@pytest.mark.parametrize("name", [n for n in SAMPLE_NAMES if n != CORRUPT])
def test_every_real_sample_loads_and_writes_back_byte_for_byte(name):
    data = (SAMPLES / name).read_bytes()
    s = sol.loads(data, lossless=True)
    assert s.lossless and len(s) > 0
    assert s.amf_version == (0 if name.startswith("AS2") else 3)
    assert s.name == name.removesuffix(".sol")
    assert sol.dumps(s) == data
    # The values are the ordinary ones (a lossless read only adds how they were
    # written): written by the ordinary writer, they give the ordinary read's bytes.
    plain = sol.SOL(s.name, s, amf_version=s.amf_version)
    assert not plain.lossless
    assert sol.dumps(plain) == sol.dumps(sol.loads(data))


def test_the_ordinary_model_writes_back_all_samples_but_one():
    """Before lossless reads and Flash Player's AMF0 numbering, 30 of the 34 readable
    samples came back byte for byte; the ordinary model now writes back 33 (the ECMA
    count, the fixed flag and the Date/XML numbering); AS3-Demo.sol repeats anonymous
    traits inline, which Flash Player's writer would reference: only a lossless read
    keeps that."""
    exact = [n for n in SAMPLE_NAMES if n != CORRUPT and sol.dumps(sol.loads((SAMPLES / n).read_bytes())) == (SAMPLES / n).read_bytes()]
    assert len(exact) == 33
    assert "AS3-Demo.sol" not in exact


def test_the_corrupt_sample_is_refused_with_its_offset():
    data = (SAMPLES / CORRUPT).read_bytes()
    for lossless in (False, True):
        with pytest.raises(amfkit.DecodeError) as info:
            sol.loads(data, lossless=lossless)
        assert info.value.offset == 56
        assert "sealed member count 19 exceeds the 10 bytes left" in str(info.value)


def test_an_edit_changes_only_the_edited_bytes():
    data = (SAMPLES / "AS3-Demo.sol").read_bytes()
    s = sol.loads(data, lossless=True)
    assert s["myInt"] == 7 and s["myObject"]["p1"] == 5
    s["myInt"] = 8
    s["myObject"]["p1"] = 6
    out = sol.dumps(s)
    assert len(out) == len(data)
    changed = [i for i, (a, b) in enumerate(zip(data, out)) if a != b]
    assert [(data[i], out[i]) for i in changed] == [(7, 8), (5, 6)]


def test_a_new_member_is_written_as_flash_player_would_and_the_rest_kept():
    data = (SAMPLES / "AS3-Demo.sol").read_bytes()
    s = sol.loads(data, lossless=True)
    s["added"] = {"gold": 9999}
    out = sol.dumps(s)
    back = sol.loads(out, lossless=True)
    assert back["added"] == {"gold": 9999}
    # Everything before the new member is the original body, byte for byte.
    assert out[6:len(data)] == data[6:]
    del back["added"]
    assert sol.dumps(back) == data


def test_anonymous_sealed_members_and_inline_traits_are_kept():
    data = (FIXTURES / "sol" / "amf3-traits-choices.sol").read_bytes()
    s = sol.loads(data, lossless=True)
    assert s == {"a": {"x": 1, "y": 2, "z": 3}, "b": {"x": 5}, "c": {"x": 6}, "d": {"x": 7}}
    assert type(s["a"]) is dict
    assert sol.dumps(s) == data
    # Without the lossless read: the same values, written as Flash Player would.
    plain = sol.dumps(sol.loads(data))
    assert plain != data and sol.loads(plain) == s
    # An object that no longer fits its sealed traits (a sealed member removed) is
    # written as a plain object; the others keep their choices.
    del s["a"]["y"]
    out = sol.loads(sol.dumps(s), lossless=True)
    assert out == {"a": {"x": 1, "z": 3}, "b": {"x": 5}, "c": {"x": 6}, "d": {"x": 7}}


def test_a_writer_that_never_references_strings_is_written_back_its_way():
    data = (FIXTURES / "sol" / "amf3-inline-strings.sol").read_bytes()
    s = sol.loads(data, lossless=True)
    assert s == {"name": "Ada", "friend": {"name": "Ada"}}
    assert sol.dumps(s) == data
    assert len(sol.dumps(sol.loads(data))) < len(data)  # references, as Flash Player writes


def test_typed_objects_keep_their_traits_and_a_changed_shape_falls_back():
    data = (SAMPLES / "AS3-VectorTypedObject-Demo.sol").read_bytes()
    s = sol.loads(data, lossless=True)
    assert sol.dumps(s) == data
    objects = [v for v in _walk(dict(s)) if isinstance(v, TypedObject)]
    assert objects
    objects[0].sealed = tuple(objects[0].sealed) + ("extra",)
    objects[0]["extra"] = 1
    back = sol.loads(sol.dumps(s))
    assert any(isinstance(v, TypedObject) and v.get("extra") == 1 for v in _walk(dict(back)))


def test_what_flash_player_sees_is_kept_by_the_ordinary_model():
    ecma = sol.loads((FIXTURES / "sol" / "amf0-ecma-length.sol").read_bytes())
    assert isinstance(ecma["scores"], MixedArray) and ecma["scores"].length == 15
    vectors = sol.loads((FIXTURES / "sol" / "amf3-fixed-vectors.sol").read_bytes())
    assert isinstance(vectors["ints"], FixedVector) and list(vectors["ints"]) == [1, -1]
    assert type(vectors["uints"]) is array.array and isinstance(vectors["nums"], FixedVector)
    for name in ("amf0-ecma-length.sol", "amf3-fixed-vectors.sol"):
        data = (FIXTURES / "sol" / name).read_bytes()
        assert sol.dumps(sol.loads(data)) == data


def test_copy_and_load_keep_the_lossless_read(tmp_path):
    data = (SAMPLES / "AS3-Demo.sol").read_bytes()
    path = tmp_path / "save.sol"
    path.write_bytes(data)
    s = sol.load(path, lossless=True)
    assert sol.dumps(s.copy()) == data
    with open(path, "rb") as f:
        assert sol.dumps(sol.load(f, lossless=True)) == data
    assert not sol.loads(data).lossless and not sol.SOL("x").lossless
    assert struct.unpack(">I", sol.dumps(s)[2:6])[0] == len(data) - 6


def _walk(value):
    stack = [value]
    while stack:
        v = stack.pop()
        yield v
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def test_an_object_proxy_keeps_the_dynamic_bit_flash_player_wrote():
    """Flash Player writes ObjectProxy's externalizable traits as 0x0f (the dynamic bit of
    a dynamic class); a lossless round trip keeps it, and the bodies' references to
    earlier anonymous traits, and an ArrayList's name (fixtures/sol/make_sol.py)."""
    data = (FIXTURES / "sol" / "amf3-flex-collections.sol").read_bytes()
    s = sol.loads(data, lossless=True)
    proxies = s["list"]
    assert isinstance(proxies, amfkit.ArrayCollection) and all(isinstance(p, amfkit.ObjectProxy) for p in proxies)
    assert sol.dumps(s) == data
    # The ordinary writer writes 0x07 (and an ArrayCollection for the ArrayList).
    plain = sol.dumps(sol.loads(data))
    assert b"\x0a\x0f" in data and b"\x0a\x0f" not in plain
    # An edit inside a proxy changes only its value's bytes.
    proxies[1]["x"] = "Cyd"
    edited = sol.dumps(s)
    assert [(a, b) for a, b in zip(data, edited) if a != b] == [(ord("B"), ord("C")), (ord("o"), ord("y")), (ord("b"), ord("d"))]
    assert len(edited) == len(data) and edited.count(b"\x0a\x0f") == 1
    back = sol.loads(edited)
    assert back["list"][1] == {"x": "Cyd"} and back["list"][0] == {"x": "Ada"}
    # A member added to a proxy fits its body's traits (anonymous, dynamic): only the
    # new member's bytes are added.
    proxies[0]["hp"] = 3
    grown = sol.dumps(s)
    assert grown.count(b"\x0a\x0f") == 1 and sol.loads(grown)["list"][0] == {"x": "Ada", "hp": 3}


def test_a_lossless_read_caught_in_a_reference_cycle_is_collected():
    """The layout of a lossless read holds the objects it records; the garbage collector
    sees those references, so a save whose values point back at it is freed like any
    other cycle."""
    data = sol.dumps(sol.SOL("cycle", {"player": {"gold": 120}, "items": [{"id": 1}]}))
    s = sol.loads(data, lossless=True)
    assert s.lossless and len(s._layout) == 2  # the two objects, recorded
    s["player"]["save"] = s  # a cycle through an object the layout holds
    gone = weakref.ref(s)
    del s
    gc.collect()
    assert gone() is None


def test_the_layout_is_opaque_and_reports_what_it_holds():
    data = sol.dumps(sol.SOL("r", {"a": {"x": 1}, "b": {"y": 2}}))
    layout = sol.loads(data, lossless=True)._layout
    assert isinstance(layout, amfkit._amfkit.Layout) and len(layout) == 2
    assert repr(layout) == f"<Layout: 2 objects, traits definitions: 1, read from {len(data)} bytes>"
    assert sol.loads(data)._layout is None
