"""Editing a save through the data nested in its members (`amfkit.sol.edit`, value paths
with `|zlib`, `|deflate`, `|gzip`, `|base64`, `|amf3`, `|amf0`): on saves written by
Py3AMF's `pyamf.sol` and on the real files of fixtures/sol/samples/ with a compressed
member added to them. Each layer is written back the way it was, and every byte outside
the edited value stays as it was."""

from __future__ import annotations

import base64
import gzip
import struct
import zlib

import pytest

import amfkit
from amfkit import nested, sol, valuepath
from amfkit.nested import LayerError
from amfkit.valuepath import Codec, PathError

import peers  # tests/support/peers.py
import pyamf.amf3  # noqa: E402  (after peers, which imports pyamf quietly)
import pyamf.sol  # noqa: E402

from repo import FIXTURES

SAMPLES = FIXTURES / "sol" / "samples"
READABLE = sorted(p.name for p in SAMPLES.glob("*.sol") if p.name != "2.sol")

STATE = {"player": {"name": "ADA-GOLD", "gold": 120, "pos": [3, 4]}, "level": 7, "flags": {"music": True}}


def py3amf_state(version: int = 3) -> bytes:
    return peers.encode(peers.to_py3amf(STATE), version)


def deflate_raw(data: bytes, level: int = 6) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def py3amf_sol(members: dict, version: int = 3, name: str = "game") -> bytes:
    with peers._quiet_dates():
        return bytes(pyamf.sol.encode(name, members, encoding=version).getvalue())


def members_by_py3amf() -> dict:
    """Members as games write them, made by Py3AMF: a ByteArray compressed by Py3AMF's
    own ByteArray.compress() (its zlib header claims level 9 for a level-6 body), raw
    deflate, gzip, AMF3 uncompressed, and base64 text of zlib data."""
    inner = py3amf_state()
    sdat = pyamf.amf3.ByteArray(inner)
    sdat.compress()
    return {
        "before": "kept as it was",
        "SDAT": sdat,
        "DFL": pyamf.amf3.ByteArray(deflate_raw(inner, 9)),
        "GZ": pyamf.amf3.ByteArray(gzip.compress(inner, 4, mtime=1_000_000_000)),
        "RAW": pyamf.amf3.ByteArray(inner),
        "B64": base64.b64encode(zlib.compress(inner, 1)).decode(),
        "after": [1, 2, 3],
    }


PATHS = {
    "SDAT": "SDAT|zlib|amf3",
    "DFL": "DFL|deflate|amf3",
    "GZ": "GZ|gzip|amf3",
    "RAW": "RAW|amf3",
    "B64": "B64|base64|zlib|amf3",
}


def inner_of(member: str, value) -> bytes:
    """The AMF bytes inside a member, unwrapped with the standard library."""
    if member == "SDAT":
        return zlib.decompress(value)
    if member == "DFL":
        return zlib.decompress(value, -15)
    if member == "GZ":
        return gzip.decompress(value)
    if member == "RAW":
        return value
    return zlib.decompress(base64.b64decode(value))


@pytest.fixture(scope="module")
def py3amf_save() -> bytes:
    return py3amf_sol(members_by_py3amf())


@pytest.mark.parametrize("member", sorted(PATHS))
def test_a_value_inside_is_read_through_the_steps(py3amf_save, member):
    save = sol.edit(py3amf_save)
    assert save[f"{PATHS[member]}.player.gold"] == 120
    assert save[f"{PATHS[member]}.player.pos[1]"] == 4
    assert save[PATHS[member]] == STATE


@pytest.mark.parametrize("member", sorted(PATHS))
def test_an_edit_inside_changes_only_that_value(py3amf_save, member):
    save = sol.edit(py3amf_save)
    save[f"{PATHS[member]}.player.name"] = "BOB-GOLD"
    edited = save.dumps()
    before, after = sol.loads(py3amf_save), sol.loads(edited)
    # Inside: the AMF bytes differ only by the edited string (same length).
    old_inner, new_inner = inner_of(member, before[member]), inner_of(member, after[member])
    assert new_inner == old_inner.replace(b"ADA-GOLD", b"BOB-GOLD") != old_inner
    # Outside: put the member's old bytes back and the file is the original, byte for byte.
    again = sol.loads(edited, lossless=True)
    again[member] = before[member]
    assert sol.dumps(again) == py3amf_save
    # Py3AMF, which wrote the save, reads the edit.
    with peers._quiet_dates():
        _, values = pyamf.sol.decode(edited)
    got = peers.from_py3amf(dict(values))
    assert peers.decode(inner_of(member, got[member]), peers.AMF3)["player"]["name"] == "BOB-GOLD"


def test_each_layer_is_written_back_the_way_it_was(py3amf_save):
    save = sol.edit(py3amf_save)
    for member, path in PATHS.items():
        save[f"{path}.level"] = 8
    edited = sol.loads(save.dumps())
    original = sol.loads(py3amf_save)
    # Py3AMF's compress(): header 78 da kept, the body at level 6 as Py3AMF made it.
    assert edited["SDAT"][:2] == original["SDAT"][:2] == b"\x78\xda"
    assert edited["SDAT"][2:] == zlib.compress(inner_of("SDAT", edited["SDAT"]), 6)[2:]
    assert edited["DFL"] == deflate_raw(inner_of("DFL", edited["DFL"]), 9)
    assert edited["GZ"][:10] == original["GZ"][:10]  # mtime and XFL (level 4: 0) kept
    assert edited["GZ"] == gzip.compress(inner_of("GZ", edited["GZ"]), 4, mtime=1_000_000_000)
    assert isinstance(edited["B64"], str) and edited["B64"] == base64.b64encode(zlib.compress(inner_of("B64", edited["B64"]), 1)).decode()
    described = dict(save.layers())
    # (levels 6 to 9 make the same bytes of so little data: the header's level is named)
    assert described["SDAT|zlib"] == "zlib, level 9 (reproduced)"
    assert described["DFL|deflate"].startswith("deflate, level ") and described["DFL|deflate"].endswith("(reproduced)")
    assert described["GZ|gzip"].startswith("gzip, level ") and described["GZ|gzip"].endswith("(reproduced)")
    assert described["B64|base64"] == "base64 (standard, padded) in a string"
    assert described["RAW|amf3"] == "AMF3, one value, written back losslessly"


@pytest.mark.parametrize("member", sorted(PATHS))
def test_setting_the_same_value_gives_the_same_file(py3amf_save, member):
    save = sol.edit(py3amf_save)
    save[f"{PATHS[member]}.player.gold"] = 120
    assert save.dumps() == py3amf_save


def test_the_inner_amf_is_written_losslessly():
    """AMF3 bytes whose writer made choices amfkit's writer does not (traits written
    inline again, sealed members on an anonymous object: the body of
    fixtures/sol/amf3-traits-choices.sol, one value per member) come back as they were
    around an edit."""
    inner = bytes.fromhex(
        "0a2b01" "0378" "0379" "0401" "0402" "037a" "0403" "01"   # {x, y sealed; z dynamic}
    )
    outer = sol.dumps(sol.SOL("g", {"SDAT": zlib.compress(inner, 9), "v": 1}))
    save = sol.edit(outer)
    assert save["SDAT|zlib|amf3"] == {"x": 1, "y": 2, "z": 3}
    save["SDAT|zlib|amf3.z"] = 4
    new_inner = zlib.decompress(sol.loads(save.dumps())["SDAT"])
    assert new_inner == inner[:-3] + b"\x04\x04\x01"
    assert amfkit.amf3.encode({"x": 1, "y": 2, "z": 4}) != new_inner  # the ordinary writer's bytes differ


@pytest.mark.parametrize("name", READABLE)
def test_a_real_sample_with_a_compressed_member_added(name):
    """A real save (written by Flash Player and other tools) with a member appended byte
    by byte: an AMF3 ByteArray of zlib-compressed AMF3 (Py3AMF's encoding) in an AS3
    save, an AMF0 string of base64 text of zlib-compressed AMF0 in an AS2 save. Editing
    through it leaves every byte of the real file as it was."""
    sample = (SAMPLES / name).read_bytes()
    amf3 = name.startswith("AS3")
    if amf3:
        payload = zlib.compress(py3amf_state(3), 9)
        member = b"\x09SDAT" + b"\x0c" + _u29((len(payload) << 1) | 1) + payload + b"\x00"
        path = "SDAT|zlib|amf3"
    else:
        text = base64.b64encode(zlib.compress(py3amf_state(0), 9))
        member = b"\x00\x04SDAT" + b"\x02" + struct.pack(">H", len(text)) + text + b"\x00"
        path = "SDAT|base64|zlib|amf0"
    data = _with_length(sample + member)
    save = sol.edit(data)
    assert save[f"{path}.player.gold"] == 120
    save[f"{path}.player.gold"] = 9999
    edited = save.dumps()
    assert edited[:2] == sample[:2] and edited[6 : len(sample)] == sample[6:]  # the real file, untouched
    assert sol.edit(edited)[f"{path}.player.gold"] == 9999
    assert list(sol.loads(edited)) == [*sol.loads(sample), "SDAT"]


def test_a_stream_of_values_is_a_list():
    inner = peers.encode_all([{"slot": 1}, {"slot": 2, "name": "two"}], peers.AMF3)
    data = sol.dumps(sol.SOL("s", {"SAVES": inner}))
    save = sol.edit(data)
    assert save["SAVES|amf3"] == [{"slot": 1}, {"slot": 2, "name": "two"}]
    save["SAVES|amf3[1].name"] = "TWO"
    new_inner = sol.loads(save.dumps())["SAVES"]
    assert new_inner == inner.replace(b"two", b"TWO")
    assert dict(save.layers())["SAVES|amf3"] == "AMF3, a stream of values, written back losslessly"


def test_base64_keeps_its_alphabet_padding_and_lines():
    raw = bytes(range(256)) * 3
    wrapped = base64.encodebytes(raw).decode()  # MIME: lines of 76, "\n" after each
    urlsafe = base64.urlsafe_b64encode(raw[:100]).decode().rstrip("=")
    data = sol.dumps(sol.SOL("b", {"mime": wrapped, "url": urlsafe, "ascii": urlsafe.encode()}))
    save = sol.edit(data)
    assert save["mime|base64"] == raw and save["url|base64"] == raw[:100] and save["ascii|base64"] == raw[:100]
    save["mime|base64"] = raw[::-1]
    save["url|base64"] = raw[100:200]
    save["ascii|base64"] = raw[100:200]
    out = sol.loads(save.dumps())
    assert out["mime"] == base64.encodebytes(raw[::-1]).decode()
    assert out["url"] == base64.urlsafe_b64encode(raw[100:200]).decode().rstrip("=")
    assert out["ascii"] == out["url"].encode()


def test_a_step_replaced_whole_and_a_set_above_an_open_step():
    inner = amfkit.amf3.encode({"gold": 1})
    data = sol.dumps(sol.SOL("g", {"SDAT": zlib.compress(inner, 9)}))
    save = sol.edit(data)
    save["SDAT|zlib|amf3"] = {"gold": 2, "new": True}
    assert amfkit.amf3.decode(zlib.decompress(sol.loads(save.dumps())["SDAT"])) == {"gold": 2, "new": True}
    save["SDAT|zlib"] = amfkit.amf3.encode({"gold": 3})
    assert save["SDAT|zlib|amf3.gold"] == 3
    save["SDAT"] = b"plain now"  # replaces what the open steps below it held
    assert sol.loads(save.dumps())["SDAT"] == b"plain now"
    with pytest.raises(LayerError, match=r"SDAT\|zlib: corrupt zlib data"):
        save["SDAT|zlib"]


def test_delete_inside_and_the_file_s_own_members():
    inner = amfkit.amf3.encode({"gold": 1, "cheat": True})
    data = sol.dumps(sol.SOL("g", {"SDAT": zlib.compress(inner), "x": 1}))
    save = sol.edit(data)
    del save["SDAT|zlib|amf3.cheat"]
    save.delete("x")
    out = sol.loads(save.dumps())
    assert list(out) == ["SDAT"] and amfkit.amf3.decode(zlib.decompress(out["SDAT"])) == {"gold": 1}
    with pytest.raises(PathError, match="a step cannot be deleted"):
        save.delete("SDAT|zlib")


@pytest.mark.parametrize("members, path, error, message", [
    ({"s": "text"}, "s|zlib", LayerError, r"s\|zlib: \|zlib reads a ByteArray, not a string; base64 text takes \|base64 first"),
    ({"n": 5}, "n|amf3", LayerError, r"n\|amf3: \|amf3 reads a ByteArray, not an int"),
    ({"b": b"\x78\x9cnot really"}, "b|zlib", LayerError, r"b\|zlib: corrupt zlib data"),
    ({"b": zlib.compress(b"x" * 1000)[:-5]}, "b|zlib", LayerError, r"b\|zlib: truncated zlib data"),
    ({"b": b"\x0a\x0b\x01\x03x"}, "b|amf3", LayerError, r"b\|amf3: unexpected end of input"),
    ({"b": b""}, "b|amf3", LayerError, r"b\|amf3: \|amf3 reads AMF, and the ByteArray is empty"),
    ({"s": "not base64!"}, "s|base64", LayerError, r"s\|base64: not base64 text"),
    ({"s": "ab+/cd-_"}, "s|base64", LayerError, r"mixes the standard alphabet"),
    ({"b": b"\xff\xfe"}, "b|base64", LayerError, r"this ByteArray is not ASCII"),
    ({"b": zlib.compress(b"x")}, "b|lzma", PathError, r"unknown step \|lzma"),
    ({"b": zlib.compress(b"x")}, "|zlib", PathError, r"\|\.\.\. follows a member"),
    ({"b": zlib.compress(amfkit.amf3.encode({"a": 1}))}, "b|zlib|amf3.nope", PathError, r"no member 'nope' in b\|zlib\|amf3"),
    ({"b": zlib.compress(amfkit.amf3.encode([1]))}, "b|zlib|amf3[3]", PathError, r"index 3 is out of range in b\|zlib\|amf3"),
])
def test_errors_are_one_line_naming_the_step(members, path, error, message):
    save = sol.edit(sol.dumps(sol.SOL("e", members)))
    with pytest.raises(error, match=message) as info:
        save.get(path)
    assert "\n" not in str(info.value)


def test_inflation_is_capped():
    bomb = zlib.compress(b"\0" * 20_000_000, 9)  # 20 KB that inflate to 20 MB
    data = sol.dumps(sol.SOL("b", {"SDAT": bomb}))
    save = sol.edit(data, max_size=1_000_000)
    with pytest.raises(LayerError, match=r"SDAT\|zlib: zlib data inflates to more than 1000000 bytes"):
        save["SDAT|zlib"]
    assert len(sol.edit(data)["SDAT|zlib"]) == 20_000_000  # under the default cap


def test_the_inner_amf_is_held_to_the_limits():
    deep = b"\x09\x03\x01" * 200 + b"\x01"  # 200 nested arrays
    data = sol.dumps(sol.SOL("d", {"SDAT": deep}))
    with pytest.raises(LayerError, match=r"SDAT\|amf3: nesting deeper than the limit of 128, at byte"):
        sol.edit(data)["SDAT|amf3"]
    assert sol.edit(data, max_depth=300)["SDAT|amf3"] is not None


def test_edit_takes_a_path_bytes_or_a_file(tmp_path):
    data = sol.dumps(sol.SOL("g", {"SDAT": zlib.compress(amfkit.amf3.encode({"gold": 1}))}))
    path = tmp_path / "game.sol"
    path.write_bytes(data)
    for source in (str(path), path, data, bytearray(data), memoryview(data)):
        assert sol.edit(source)["SDAT|zlib|amf3.gold"] == 1
    with open(path, "rb") as f:
        save = sol.edit(f)
    save["SDAT|zlib|amf3.gold"] = 2
    save.dump(path)
    assert sol.edit(path)["SDAT|zlib|amf3.gold"] == 2
    assert "SDAT|zlib|amf3.gold" in save and "SDAT|zlib|amf3.nope" not in save
    assert (save.name, save.amf_version) == ("g", 3)
    with pytest.raises(TypeError):
        sol.edit(42)  # type: ignore[arg-type]


def test_a_layer_is_opened_once(monkeypatch):
    data = sol.dumps(sol.SOL("g", {"SDAT": zlib.compress(amfkit.amf3.encode({"a": 1, "b": 2}))}))
    opened = []
    real = nested.open_layer
    monkeypatch.setattr(nested, "open_layer", lambda v, c, **kw: opened.append(c) or real(v, c, **kw))
    save = sol.edit(data)
    save["SDAT|zlib|amf3.a"] = 10
    save["SDAT|zlib|amf3.b"] = 20
    assert save["SDAT|zlib|amf3"] == {"a": 10, "b": 20}
    assert opened == ["zlib", "amf3"]


def test_paths_with_steps_parse_and_print():
    steps = valuepath.parse("SDAT|zlib|amf3.player.gold")
    assert steps == ["SDAT", Codec("zlib"), Codec("amf3"), "player", "gold"]
    assert valuepath.text(steps) == "SDAT|zlib|amf3.player.gold"
    assert valuepath.parse('saves[0]|BASE64|gzip|amf0["a b"]') == ["saves", 0, Codec("base64"), Codec("gzip"), Codec("amf0"), "a b"]
    assert valuepath.parse('["a|b"]') == ["a|b"] and valuepath.text(["a|b"]) == '["a|b"]'
    # valuepath.get opens steps too (the decoders' default limits)
    assert valuepath.get({"s": zlib.compress(amfkit.amf3.encode([5]))}, valuepath.parse("s|zlib|amf3[0]")) == 5
    with pytest.raises(PathError, match="opened by amfkit.sol.edit"):
        valuepath.set_value({"s": b""}, ["s", Codec("zlib")], 1)


def _u29(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    if n < 0x4000:
        return bytes([(n >> 7) | 0x80, n & 0x7F])
    if n < 0x200000:
        return bytes([(n >> 14) | 0x80, ((n >> 7) & 0x7F) | 0x80, n & 0x7F])
    return bytes([(n >> 22) | 0x80, ((n >> 15) & 0x7F) | 0x80, ((n >> 8) & 0x7F) | 0x80, n & 0xFF])


def _with_length(data: bytes) -> bytes:
    return data[:2] + struct.pack(">I", len(data) - 6) + data[6:]


def test_a_negative_index_reaches_the_same_layer():
    data = sol.dumps(sol.SOL("g", {"slots": [zlib.compress(amfkit.amf3.encode({"gold": 1})), b"x"]}))
    save = sol.edit(data)
    save["slots[-2]|zlib|amf3.gold"] = 5
    save["slots[0]|zlib|amf3.hp"] = 7
    assert len(save.layers()) == 2  # one zlib layer and one amf3 layer, not two of each
    assert amfkit.amf3.decode(zlib.decompress(sol.loads(save.dumps())["slots"][0])) == {"gold": 5, "hp": 7}
