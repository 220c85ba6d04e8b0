"""The shared byte vectors of fixtures/ (see fixtures/README.md), checked through the
Python API. crates/amfkit-core/tests/vectors.rs checks the same files through the Rust
Value model.

For every valid vector: it decodes to the manifest's value; if "exact", encoding the
decoded value gives the same bytes; every strict prefix (the truncated twins) fails with
a DecodeError whose offset lies inside the input; and a trailing byte is refused unless
allowed. Every must-fail vector raises a DecodeError naming the reason.
"""

from __future__ import annotations

import functools
import importlib.util
import json

import pytest

import amfkit

import canonical  # tests/support/canonical.py
from repo import FIXTURES

MANIFEST = json.loads((FIXTURES / "vectors.json").read_text(encoding="utf-8"))
VALID = [e for e in MANIFEST if "error" not in e]
FAILING = [e for e in MANIFEST if "error" in e]
CODECS = {0: amfkit.amf0, 3: amfkit.amf3}


@functools.lru_cache(maxsize=None)
def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_fixtures_{name}", FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _id(entry: dict) -> str:
    return entry["file"].removesuffix(".amf")


def _data(entry: dict) -> bytes:
    return (FIXTURES / entry["file"]).read_bytes()


def _expected(entry: dict):
    return _py(entry, entry.get("python", entry["value"]))


def _decode(entry: dict, data: bytes):
    codec = CODECS[entry["version"]]
    if entry.get("stream"):
        return codec.Decoder().decode_all(data)
    return codec.decode(data)


def _canonical(entry: dict, value):
    if entry.get("stream"):
        return _py(entry, canonical.to_canonical_stream(value, entry["version"]))
    return _py(entry, canonical.to_canonical(value, entry["version"]))


def _py(entry: dict, tree):
    """Compare at the level the Python model can show: in AMF0, ints and numbers alike
    (see tests/support/canonical.py)."""
    return canonical.amf0_level(tree) if entry["version"] == 0 else tree


def _check_offset(err: amfkit.DecodeError, size: int) -> None:
    assert isinstance(err.offset, int) and not isinstance(err.offset, bool)
    assert 0 <= err.offset <= size, f"offset {err.offset} outside [0, {size}]"
    assert isinstance(err.path, str) and err.path.startswith("$")


# ---------------------------------------------------------------------- the corpus


def test_fixture_files_match_their_source():
    """fixtures/*.amf and vectors.json are what make_vectors.py writes."""
    assert _load("make_vectors").main(["--check"]) == 0


def test_manifest_covers_every_marker():
    files = {e["version"]: set() for e in MANIFEST}
    for e in MANIFEST:
        data = _data(e)
        if data:
            files[e["version"]].add(data[0])
    assert set(range(0x00, 0x12)) <= files[0]  # 0x00..0x10 and the AVM+ switch 0x11
    assert set(range(0x00, 0x12)) <= files[3]  # 0x00..0x11


@pytest.mark.parametrize("entry", MANIFEST, ids=_id)
def test_spec_reader_agrees_with_manifest(entry):
    """A second, independent reading of the specifications (fixtures/spec_reader.py)
    agrees with every hand-written value: the corpus is checked against more than
    amfkit itself."""
    reader = _load("spec_reader")
    data = _data(entry)
    if "error" in entry:
        with pytest.raises(reader.SpecError):
            reader.read(data, entry["version"], entry.get("stream", False))
    else:
        assert reader.read(data, entry["version"], entry.get("stream", False)) == entry["value"]


# ---------------------------------------------------------------------- amfkit


@pytest.mark.parametrize("entry", VALID, ids=_id)
def test_decodes_to_manifest_value(entry):
    value = _decode(entry, _data(entry))
    assert _canonical(entry, value) == _expected(entry)


@pytest.mark.parametrize("entry", VALID, ids=_id)
def test_exact_reencoding(entry):
    exact = entry.get("python_exact", entry["exact"])
    data = _data(entry)
    codec = CODECS[entry["version"]]
    value = _decode(entry, data)
    if entry.get("stream"):
        out = codec.Encoder().encode_all(value)
    else:
        out = codec.encode(value)
    if exact:
        assert out.hex() == data.hex()
    else:
        # The manifest is precise: a vector not marked exact is not.
        assert out != data, "re-encodes byte for byte: mark it exact"
        # Not byte-exact, but the same value: decoding what amfkit wrote gives it back.
        again = _decode(entry, out)
        assert _canonical(entry, again) == _canonical(entry, value)


@pytest.mark.parametrize("entry", VALID, ids=_id)
def test_every_strict_prefix_fails(entry):
    """The truncated twins: no strict prefix of a valid value is a valid value. For a
    stream, a prefix that ends on a value boundary is the shorter stream."""
    data = _data(entry)
    codec = CODECS[entry["version"]]
    stream = entry.get("stream", False)
    boundaries = set(entry.get("boundaries", ()))
    decoder = codec.Decoder()
    for k in range(len(data)):
        prefix = data[:k]
        if stream and (k == 0 or k in boundaries):
            got = codec.Decoder().decode_all(prefix)
            count = sorted(boundaries | {0}).index(k)
            want = canonical.restrict_ids(_expected(entry)[:count])
            assert _canonical(entry, got) == want, k
            continue
        with pytest.raises(amfkit.DecodeError) as info:
            if stream:
                codec.Decoder().decode_all(prefix)
            else:
                decoder.decode(prefix)
        _check_offset(info.value, k)


@pytest.mark.parametrize("entry", [e for e in VALID if not e.get("stream")], ids=_id)
def test_trailing_byte_refused_unless_allowed(entry):
    data = _data(entry)
    codec = CODECS[entry["version"]]
    with pytest.raises(amfkit.DecodeError) as info:
        codec.decode(data + b"\x05")
    _check_offset(info.value, len(data) + 1)
    value = codec.decode(data + b"\x05", allow_trailing=True)
    assert _canonical(entry, value) == _expected(entry)


@pytest.mark.parametrize("entry", FAILING, ids=_id)
def test_must_fail(entry):
    data = _data(entry)
    with pytest.raises(amfkit.DecodeError) as info:
        _decode(entry, data)
    assert entry["error"] in str(info.value)
    _check_offset(info.value, len(data))
    assert isinstance(info.value, ValueError) and isinstance(info.value, amfkit.AMFError)


@pytest.mark.parametrize("codec", [amfkit.amf0, amfkit.amf3], ids=["amf0", "amf3"])
def test_empty_input_fails(codec):
    with pytest.raises(amfkit.DecodeError) as info:
        codec.decode(b"")
    _check_offset(info.value, 0)
    assert codec.Decoder().decode_all(b"") == []
