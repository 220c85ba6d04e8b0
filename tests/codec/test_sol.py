"""Local shared object files (`amfkit.sol`, `amfkit sol`): the hand-built fixtures of
fixtures/sol/, round trips, references spanning members, every malformed case, the
command line, and interoperability with Py3AMF's `pyamf.sol` both ways."""

from __future__ import annotations

import ctypes
import datetime
import doctest
import importlib.util
import io
import json
import struct
import subprocess

import pytest

import amfkit
from amfkit import MixedArray, TypedObject, Undefined, sol
from amfkit.cli.main import main

import peers  # tests/support/peers.py (tests/conftest.py puts tests/support on sys.path)
import pyamf.sol  # noqa: E402  (after peers, which imports pyamf quietly)

from repo import FIXTURES

SOL_DIR = FIXTURES / "sol"
_spec = importlib.util.spec_from_file_location("make_sol", SOL_DIR / "make_sol.py")
assert _spec is not None and _spec.loader is not None
make_sol = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_sol)

BORN = datetime.datetime(2001, 9, 9, 1, 46, 40)  # 1e12 ms


def header(name: bytes, version: int, length: int = 0) -> bytes:
    return b"\x00\xbf" + struct.pack(">I", length) + b"TCSO\x00\x04\x00\x00\x00\x00" + struct.pack(">H", len(name)) + name + struct.pack(">I", version)


def fixed_length(data: bytes) -> bytes:
    return data[:2] + struct.pack(">I", len(data) - 6) + data[6:]


# -- the fixtures --------------------------------------------------------------------------


def test_fixture_files_match_their_source():
    """fixtures/sol/*.sol are what make_sol.py writes, and nothing else is there."""
    assert make_sol.main(["--check"]) == 0


def test_basic_fixtures_decode_to_their_values():
    plain = {
        "volume": 0.5,
        "muted": False,
        "player": "Ada",
        "nested": {"deep": {"a": None}},
    }
    s0 = sol.load(SOL_DIR / "amf0-basic.sol")
    assert (s0.name, s0.amf_version) == ("prefs", 0)
    assert list(s0) == ["volume", "muted", "player", "nothing", "gone", "nested", "saved"]
    assert s0 == sol.SOL("prefs", {**plain, "nothing": None, "gone": Undefined, "saved": BORN}, amf_version=0)
    s3 = sol.load(SOL_DIR / "amf3-basic.sol")
    assert (s3.name, s3.amf_version) == ("prefs", 3)
    assert list(s3) == ["volume", "muted", "level", "player", "tags", "nested", "nothing"]
    # "tags"[1] is a string reference to the first key: keys are in the string table.
    assert s3 == sol.SOL("prefs", {**plain, "level": 42, "tags": ["sound", "volume"], "nothing": None})
    assert type(s3["level"]) is int and type(s3["volume"]) is float


@pytest.mark.parametrize("version", [0, 3])
def test_references_span_members(version):
    s = sol.load(SOL_DIR / f"amf{version}-refs.sol")
    assert (s.name, s.amf_version) == ("hero", version)
    player = s["player"]
    assert s["leader"] is player  # a reference from the second member into the first
    assert player["self"] is player  # a self-reference
    assert player["name"] == "Ada" and player["born"] == BORN
    assert player["pos"] == TypedObject("com.example.Point", {"x": 1, "y": 2})
    if version == 0:
        assert list(s) == ["player", "leader", "scores", "flags"]
        assert s["scores"] == [10, player["pos"]] and s["scores"][1] is player["pos"]
        assert s["flags"] == MixedArray({"sound": True}) and type(s["flags"]) is MixedArray
    else:
        assert list(s) == ["player", "leader", "goal", "name", "when"]
        # goal's traits are a reference to player.pos's; "name" is a key written as a
        # string reference, its value a reference to the string "Ada".
        assert s["goal"] == TypedObject("com.example.Point", {"x": 3, "y": 4})
        assert s["name"] == "Ada"
        assert s["when"] is player["born"]


def test_amf0_references_are_numbered_as_flash_player_numbers_them():
    """The layout of a SharedObject Flash Player wrote (fixtures/sol/make_sol.py,
    AMF0_FLASH_REFERENCES): its references 3, 5, 10 and 15 name arr_strict, arr_mixed,
    t_reg and cyclic_object only if every Date and XML document before them took a
    reference entry. Read by the specification's list, reference 15 was out of range and
    the others named the wrong values."""
    s = sol.load(SOL_DIR / "amf0-flash-references.sol")
    payload = s["payload"]
    assert payload["arr_strict_ref"] is payload["arr_strict"] == ["index_0", "index_1", "index_2"]
    assert payload["arr_mixed_ref"] is payload["arr_mixed"]
    assert payload["t_reg_ref"] is payload["t_reg"] and payload["t_reg"].alias == "com.tests.RegClass"
    assert payload["cyclic_object"]["prop"] is payload["cyclic_object"]
    assert payload["n_date"] == datetime.datetime(2023, 1, 1)
    inner = payload["nest_deep"]["innerArray"]
    assert inner[1] == datetime.datetime(2001, 9, 9, 1, 46, 40) and inner[2] == "<deep><nest/></deep>"
    # written back: the same numbering, the same bytes
    assert sol.dumps(s) == (SOL_DIR / "amf0-flash-references.sol").read_bytes()


# Files whose writer made a choice amfkit's writer does not (anonymous traits written
# inline again, sealed members on an anonymous object, strings never referenced; the
# dynamic bit Flash Player sets in ObjectProxy's externalizable traits, an ArrayList):
# the ordinary model writes them its way, a lossless read as they were.
LOSSLESS_ONLY = {"amf3-traits-choices.sol", "amf3-inline-strings.sol", "amf3-flex-collections.sol"}


@pytest.mark.parametrize("name", sorted(make_sol.FILES))
def test_fixtures_re_encode(name):
    data = make_sol.FILES[name]
    s = sol.loads(data)
    again = sol.dumps(s)
    if name.startswith("lenient-") or name in LOSSLESS_ONLY:
        assert again != data
    else:
        assert again == data  # byte for byte, through the Python model
    exact = sol.dumps(sol.loads(data, lossless=True))
    assert (exact == data) is (not name.startswith("lenient-")), name
    assert again[2:6] == struct.pack(">I", len(again) - 6) and again[-1] == 0
    back = sol.loads(again)
    peers.assert_same_graph(dict(s), dict(back))
    assert (back.name, back.amf_version) == (s.name, s.amf_version)


@pytest.mark.parametrize("name", sorted(make_sol.BAD))
def test_bad_fixtures_fail_with_an_offset(name):
    data, offset, message = make_sol.BAD[name]
    assert (SOL_DIR / name).read_bytes() == data
    with pytest.raises(amfkit.DecodeError) as info:
        sol.loads(data)
    assert info.value.offset == offset
    assert message in str(info.value)
    assert isinstance(info.value, ValueError) and info.value.path.startswith("$")


@pytest.mark.parametrize("name", sorted(make_sol.FILES))
def test_a_prefix_is_an_error_or_the_first_members(name):
    data = make_sol.FILES[name]
    whole = sol.loads(data)
    for n in range(len(data)):
        try:
            part = sol.loads(data[:n])
        except amfkit.DecodeError as e:
            assert 0 <= e.offset <= n
            continue
        # a cut after a member (or only its padding byte) is a shorter file
        assert len(part) < len(whole) or n == len(data) - 1
        assert list(part) == list(whole)[: len(part)]


# -- malformed input -------------------------------------------------------------------------


MEMBER0 = b"\x00\x01k\x05\x00"  # "k": null, padding (members start at byte 23 below)


@pytest.mark.parametrize(
    "data, offset, message",
    [
        pytest.param(b"", 0, "unexpected end of input", id="empty"),
        pytest.param(b"\x00", 1, "unexpected end of input", id="one-byte"),
        pytest.param(b"\xbf\x00" + header(b"p", 0)[2:], 0, "expected the magic 00 bf", id="magic"),
        pytest.param(b"PK\x03\x04" + bytes(30), 0, "not a .sol file", id="zip-file"),
        pytest.param(header(b"p", 0)[:6] + b"TSCO" + header(b"p", 0)[10:], 6, 'signature "TCSO"', id="signature"),
        pytest.param(header(b"p", 1) + MEMBER0, 19, "unknown .sol amf version 1", id="version-1"),
        pytest.param(header(b"p", 0x0300) + MEMBER0, 19, "unknown .sol amf version 768", id="version-as-u16"),
        pytest.param(header(b"p", 0) + b"\x00\x01k\x05\x02", 27, "padding byte 0x02", id="padding"),
        pytest.param(header(b"p", 0) + b"\x00\x01k\x05" + b"\x00\x01l\x05", 30, "364 exceeds the 1 byte left", id="missing-padding-mid-file"),
        pytest.param(header(b"p", 0) + MEMBER0 + b"\x00", 27, "unexpected end of input", id="trailing-byte"),
        pytest.param(header(b"p", 0) + MEMBER0 + b"\xff\xff", 30, "65535 exceeds the 0 bytes left", id="trailing-length"),
        pytest.param(header(b"p", 0) + MEMBER0 + b"\x00\x01k", 27, "unexpected end of input", id="trailing-name"),
        pytest.param(header(b"p", 3) + b"\x03k\x04\x01\x00" + b"\x02", 28, "string reference 1 is out of range", id="amf3-key-reference"),
        pytest.param(header(b"p", 3) + b"\x03k\x0a\x00\x00", 26, "object reference 0 is out of range", id="amf3-object-reference"),
        pytest.param(header(b"p\xc3", 0), 19, "invalid utf-8", id="name-utf8"),
        pytest.param(header(b"p", 0)[:16] + b"\xff\xff" + b"p" + bytes(4), 18, "65535 exceeds the 5 bytes left", id="name-length"),
        pytest.param(header(b"p", 3) + b"\x03k\x06\xbf\xff\xff\xff", 30, "exceeds the 0 bytes left", id="amf3-string-length"),
    ],
)
def test_malformed_files_raise_decode_error(data, offset, message):
    with pytest.raises(amfkit.DecodeError) as info:
        sol.loads(data)
    e = info.value
    assert message in str(e), str(e)
    if message == "unexpected end of input":
        assert e.offset == len(data)
    else:
        assert e.offset == offset, str(e)


@pytest.mark.parametrize("version, member", [(0, b"\x00\x01k\x05"), (3, b"\x03k\x01")])
def test_a_missing_last_padding_byte_and_a_wrong_length_are_accepted(version, member):
    for length in (0, 1, 0xFFFFFFFF, len(header(b"p", 0)) + len(member)):
        s = sol.loads(header(b"p", version, length) + member)
        assert s == sol.SOL("p", {"k": None}, amf_version=version)
    # written back with the real length and the padding byte
    assert sol.dumps(s) == fixed_length(header(b"p", version) + member + b"\x00")


def test_an_empty_body_and_an_empty_name():
    data = fixed_length(header(b"", 3))
    s = sol.loads(data)
    assert s == sol.SOL("", {}) and s.amf_version == 3
    assert sol.dumps(s) == data


def test_limits_span_the_whole_file():
    data = make_sol.FILES["amf0-refs.sol"]  # 4 objects and a date in all
    assert sol.loads(data, max_objects=5)
    with pytest.raises(amfkit.DecodeError, match="more than the limit of 4 objects"):
        sol.loads(data, max_objects=4)
    with pytest.raises(amfkit.DecodeError, match="nesting deeper than the limit of 1") as info:
        sol.loads(data, max_depth=1)
    assert info.value.path == "$.player.pos"
    with pytest.raises(amfkit.DecodeError, match="string length of 3 bytes exceeds the limit of 2"):
        sol.loads(data, max_size=2)
    with pytest.raises(ValueError, match="max_depth"):
        sol.loads(data, max_depth=0)


def test_a_huge_declared_length_allocates_nothing():
    # a 256 MiB string declared in a 30-byte file: refused before anything is allocated
    data = header(b"p", 3) + b"\x03k\x06\xff\xff\xff\xff"
    with pytest.raises(amfkit.DecodeError, match="exceeds"):
        sol.loads(data, max_size=1 << 40)


# -- round trips -----------------------------------------------------------------------------


def sample() -> dict:
    shared = {"hp": 10, "tags": ["a", "b"]}
    shared["self"] = shared
    return {
        "player": shared,
        "ally": shared,
        "score": 12.5,
        "level": 3,
        "name": "Zoë",
        "when": datetime.datetime(2024, 5, 17, 12, 30),
        "flag": True,
        "none": None,
        "typed": TypedObject("com.example.Point", {"x": 1, "y": 2}),
        "again": TypedObject("com.example.Point", {"x": 3, "y": 4}),
        "blob": b"\x00\x01",
    }


@pytest.mark.parametrize("version", [0, 3])
def test_round_trip_keeps_values_order_and_sharing(version):
    original = sol.SOL("game/slot 1", sample(), amf_version=version)
    data = sol.dumps(original)
    back = sol.loads(data)
    assert (back.name, back.amf_version) == ("game/slot 1", version)
    assert list(back) == list(original)
    peers.assert_same_graph(dict(original), dict(back))
    assert back["ally"] is back["player"] and back["player"]["self"] is back["player"]
    assert sol.dumps(back) == data


def test_amf3_keys_go_through_the_string_table():
    s = sol.SOL("t", {"alpha": "alpha", "beta": {"alpha": 1}})
    data = sol.dumps(s)
    assert data.count(b"alpha") == 1  # written once: a key, then references
    assert sol.loads(data) == s
    s0 = sol.SOL("t", {"alpha": "alpha"}, amf_version=0)
    assert sol.dumps(s0).count(b"alpha") == 2  # AMF0 has no string table


def test_sol_model():
    s = sol.SOL("n", [("b", 1), ("a", 2)], amf_version=0)
    assert list(s) == ["b", "a"]
    assert repr(s) == "SOL('n', {'b': 1, 'a': 2}, amf_version=0)"
    assert s == {"b": 1, "a": 2}  # a dict compares by its members
    assert s != sol.SOL("other", s, amf_version=0) and s != sol.SOL("n", s)
    c = s.copy()
    assert type(c) is sol.SOL and c == s and c is not s
    assert sol.SOL().name == "" and sol.SOL().amf_version == 3
    with pytest.raises(TypeError):
        hash(s)


def test_dumps_of_a_plain_mapping_and_the_default_hook():
    data = sol.dumps({"k": 1})
    assert sol.loads(data) == sol.SOL("", {"k": 1}, amf_version=3)

    class Thing:
        pass

    with pytest.raises(amfkit.EncodeError) as info:
        sol.dumps(sol.SOL("t", {"thing": Thing()}))
    assert info.value.path == "$.thing"
    assert sol.loads(sol.dumps(sol.SOL("t", {"thing": Thing()}), default=lambda o: "a thing")) == {"thing": "a thing"}


@pytest.mark.parametrize(
    "s, error, message",
    [
        (sol.SOL("t", {1: "x"}), amfkit.EncodeError, "member name must be a str, not int"),  # type: ignore[dict-item]
        (sol.SOL("t", {}, amf_version=2), ValueError, "amf_version must be 0 or 3, not 2"),
        (sol.SOL("n" * 70000, {}), amfkit.EncodeError, "exceeds the format's 65535"),
        (sol.SOL("t", {"k" * 70000: 1}, amf_version=0), amfkit.EncodeError, "exceeds amf0's 65535"),
    ],
)
def test_what_cannot_be_written(s, error, message):
    with pytest.raises(error, match=message):
        sol.dumps(s)


def test_load_and_dump_paths_and_files(tmp_path):
    s = sol.SOL("files", {"k": [1, 2]}, amf_version=0)
    path = tmp_path / "a.sol"
    sol.dump(s, path)
    assert sol.load(path) == s and sol.load(str(path)) == s
    buf = io.BytesIO()
    sol.dump(s, buf)
    assert buf.getvalue() == path.read_bytes()
    with open(path, "rb") as f:
        assert sol.load(f, max_depth=4) == s
    with pytest.raises(TypeError, match="binary file"):
        sol.load(io.StringIO("text"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="path or a binary file"):
        sol.load(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="path or a binary file"):
        sol.dump(s, 42)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        sol.load(tmp_path / "missing.sol")


def test_the_encoder_hands_its_bytes_over_without_a_copy():
    """`encode_sol` gives its output as a read-only buffer (`dump` writes a path from it);
    `dumps` copies it into bytes."""
    s = sol.SOL("buf", {"k": "v" * 100})
    encoded = amfkit._amfkit.encode_sol(s.name, 3, s)
    assert isinstance(encoded, amfkit._amfkit.Encoded) and len(encoded) == len(sol.dumps(s))
    view = memoryview(encoded)
    assert view.readonly and bytes(view) == bytes(encoded) == sol.dumps(s)
    with pytest.raises(TypeError):
        view[0] = 0
    with pytest.raises(TypeError, match="not writable"):
        (ctypes.c_char * len(encoded)).from_buffer(encoded)  # asks for a writable buffer
    del encoded
    assert bytes(view) == sol.dumps(s)  # the view keeps the bytes alive


def test_a_read_remembers_its_size_for_the_writer():
    """`dumps` reserves its output for the size the values were read from (a copy keeps
    it); a SOL built in code has none."""
    data = sol.dumps(sol.SOL("sized", {"k": "v" * 1000}))
    for s in (sol.loads(data), sol.loads(bytearray(data), lossless=True), sol.loads(memoryview(data)).copy()):
        assert s._size_hint == len(data) and sol.dumps(s) == data
    assert sol.SOL("new", {"k": 1})._size_hint == 0


def test_loads_accepts_buffers_and_tz_aware():
    data = make_sol.FILES["amf0-basic.sol"]
    assert sol.loads(bytearray(data)) == sol.loads(memoryview(data))
    aware = sol.loads(data, tz_aware=True)["saved"]
    assert aware == BORN.replace(tzinfo=datetime.timezone.utc)
    with pytest.raises(TypeError):
        sol.loads("text")  # type: ignore[arg-type]


def test_module_docstring_example():
    result = doctest.testmod(sol)
    assert result.failed == 0 and result.attempted > 0


# -- the command line ------------------------------------------------------------------------


def test_cli_prints_name_version_and_a_tree_spanning_members(capsys):
    assert main(["sol", str(SOL_DIR / "amf3-refs.sol")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "# sol 'hero', amf3, 5 members, 136 bytes",
        "player: object (4 members) #1",
        "  name: string 'Ada'",
        "  self: <ref #1>",
        "  born: date 2001-09-09T01:46:40Z",
        "  pos: object 'com.example.Point' (2 members, 2 sealed, not dynamic)",
        "    x: integer 1",
        "    y: integer 2",
        "leader: <ref #1>",
        "goal: object 'com.example.Point' (2 members, 2 sealed, not dynamic)",
        "  x: integer 3",
        "  y: integer 4",
        "name: string 'Ada'",
        "when: date 2001-09-09T01:46:40Z",
    ]


def test_cli_names_amf0_types(capsys):
    assert main(["sol", str(SOL_DIR / "amf0-refs.sol")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# sol 'hero', amf0, 4 members, 192 bytes\n")
    assert "  pos: typed object 'com.example.Point' (2 members) #2\n" in out
    assert "scores: strict array [2]\n  [0]: number 10\n  [1]: <ref #2>\n" in out
    assert "flags: ECMA array [1]\n" in out


def test_cli_json(capsys):
    assert main(["sol", "--json", "--compact", str(SOL_DIR / "amf0-refs.sol")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["name"] == "hero" and doc["amf_version"] == 0
    assert list(doc["values"]) == ["player", "leader", "scores", "flags"]
    assert doc["values"]["leader"] == {"__ref__": "$.values.player"}
    assert doc["values"]["player"]["born"] == {"__date__": "2001-09-09T01:46:40Z"}


def test_cli_errors_are_one_line(capsys, tmp_path):
    assert main(["sol", str(SOL_DIR / "bad-padding.sol")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"amfkit sol: {SOL_DIR / 'bad-padding.sol'}: padding byte 0x01 after a member is not 0x00, at byte 31 ($.k)\n"
    assert main(["sol", str(tmp_path / "missing.sol")]) == 1
    assert "No such file" in capsys.readouterr().err
    assert main(["sol", "--max-depth", "1", str(SOL_DIR / "amf3-refs.sol")]) == 1
    assert "nesting deeper than the limit of 1" in capsys.readouterr().err


def test_cli_reads_stdin(python_exe, python_env):
    r = subprocess.run(
        [python_exe, "-m", "amfkit", "sol", "-"],
        input=make_sol.FILES["amf3-basic.sol"],
        capture_output=True,
        env=python_env,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines()[:2] == ["# sol 'prefs', amf3, 7 members, 125 bytes", "volume: double 0.5"]


# -- Py3AMF ----------------------------------------------------------------------------------


def py3amf_decode(data: bytes, strict: bool = True):
    with peers._quiet_dates():
        return peers.pyamf.sol.decode(data, strict=strict)


@pytest.mark.parametrize("name", ["amf0-basic.sol", "amf0-refs.sol", "amf3-basic.sol", "amf3-refs.sol"])
def test_py3amf_reads_the_fixtures(name):
    data = make_sol.FILES[name]
    py_name, values = py3amf_decode(data)
    ours = sol.loads(data)
    assert py_name == ours.name
    got = peers.from_py3amf(dict(values))
    # amf0-refs.sol numbers its references as Flash Player does (player.born, a Date,
    # takes entry 1): Py3AMF's decoder counts dates too, so both read the same graph.
    peers.assert_same_graph(dict(ours), got)


@pytest.mark.parametrize("version", [0, 3])
def test_py3amf_reads_what_amfkit_writes(version):
    s = sol.SOL("interop", sample(), amf_version=version)
    del s["blob"]  # Py3AMF reads an AMF0 ByteArray (AVM+ switch) as its own type: compared below
    py_name, values = py3amf_decode(sol.dumps(s))
    assert py_name == "interop"
    got = peers.from_py3amf(dict(values))
    peers.assert_same_graph(dict(s), got)
    assert got["ally"] is got["player"]


class SolPoint:
    pass


@pytest.mark.parametrize("version", [0, 3])
def test_amfkit_reads_what_py3amf_writes(version):
    pyamf = peers.pyamf
    shared = pyamf.ASObject({"hp": 10, "tags": ["a", "b"]})
    shared["self"] = shared
    point = SolPoint()
    point.x, point.y = 1, 2  # type: ignore[attr-defined]
    values = {
        "player": shared,
        "ally": shared,
        "score": 12.5,
        "name": "Zoë",
        "when": datetime.datetime(2024, 5, 17, 12, 30),
        "typed": point,
        "none": None,
    }
    with peers.registered(SolPoint, "test.sol.Point"):
        data = bytes(pyamf.sol.encode("from-py3amf", values, encoding=version).getvalue())
        s = sol.loads(data)
    assert (s.name, s.amf_version) == ("from-py3amf", version)
    assert list(s) == list(values)
    assert type(s["typed"]) is SolPoint and vars(s["typed"]) == {"x": 1, "y": 2}
    peers.assert_same_graph(peers.from_py3amf({k: v for k, v in values.items() if k != "typed"}), {k: v for k, v in s.items() if k != "typed"})
    assert s["ally"] is s["player"] and s["player"]["self"] is s["player"]
    # Py3AMF writes the real length and every padding byte, as amfkit does.
    assert data[2:6] == struct.pack(">I", len(data) - 6) and data[-1] == 0


def test_py3amf_is_stricter_than_amfkit_about_framing():
    """Pinned: Py3AMF's `pyamf.sol.decode` refuses a length field that is not the size of
    the rest of the file unless strict=False, and refuses a missing last padding byte
    even then; amfkit reads both (fixtures lenient-*)."""
    wrong_length = make_sol.FILES["lenient-amf3-length.sol"]
    with pytest.raises(peers.pyamf.DecodeError, match="Inconsistent stream header length"):
        py3amf_decode(wrong_length)
    assert py3amf_decode(wrong_length, strict=False) == ("prefs", {"k": 1})
    no_padding = make_sol.FILES["lenient-amf0-length-and-padding.sol"]
    with pytest.raises(OSError, match="only 0 remain"):
        py3amf_decode(no_padding, strict=False)
    assert sol.loads(wrong_length) == {"k": 1} and sol.loads(no_padding) == {"k": None}


def test_py3amf_writes_its_unregistered_typed_object_as_an_anonymous_object():
    """Pinned: `pyamf.TypedObject("alias")` keeps its alias only when read; Py3AMF writes
    it without the alias (AMF3 traits with an empty class name), so a .sol file it writes
    loses the type (docs/py3amf.md, summary item 8). amfkit's `TypedObject` keeps it."""
    t = peers.pyamf.TypedObject("com.example.Point")
    t["x"] = 1
    data = bytes(peers.pyamf.sol.encode("t", {"t": t}, encoding=3).getvalue())
    assert data.endswith(b"\x03t\x0a\x0b\x01\x03x\x04\x01\x01\x00")  # class name "" (0x01)
    got = sol.loads(data)["t"]
    assert type(got) is dict and got == {"x": 1}
