"""Length and count prefixes far beyond the input, for every sized type of AMF0, AMF3,
remoting packets and .sol files: a fast DecodeError, and the child's peak RSS grows by
less than `SMALL_KB` (a 2^28-1 element list would need 2 GiB: nothing is allocated from
a declared size before it is checked against the bytes left).

Each is also run with `max_size` raised to 2^62, so the check against the input (not
only the size limit) is what refuses it. Length fields that amfkit documents as ignored
(packet header/body lengths, the .sol length field, the AMF0 ECMA array count) are shown
to be ignored: the value decodes, whatever they say.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

import pytest

from gateway_util import raw_packet
from wire import ARRAY_COLLECTION, OBJECT_PROXY, s3, typed3, u29, utf

from .harness import Case, expect_decode_error, expect_ok, run

#: Peak-RSS growth allowed while one of these inputs is refused.
SMALL_KB = 4 * 1024
#: Largest lengths: u16, u32, and the largest inline AMF3 length (U29 0x1FFFFFFF >> 1).
U16 = b"\xff\xff"
U32 = b"\xff\xff\xff\xff"
U29_MAX = b"\xff\xff\xff\xff"  # 0x1FFFFFFF: inline, length 2^28 - 1
TRAITS_MAX = b"\xff\xff\xff\xf3"  # inline sealed traits with 2^25 - 1 member names
FEW = b"abcdefgh"

AMF0 = {
    "string": b"\x02" + U16 + FEW,
    "long-string": b"\x0c" + U32 + FEW,
    "xml-document": b"\x0f" + U32 + FEW,
    "strict-array-count": b"\x0a" + U32 + b"\x05" * 8,
    "typed-object-name": b"\x10" + U16 + FEW,
    "object-key": b"\x03" + U16 + FEW,
    "ecma-array-key": b"\x08\x00\x00\x00\x01" + U16 + FEW,
    "typed-object-key": b"\x10" + utf("T") + U16 + FEW,
    "string-in-strict-array": b"\x0a\x00\x00\x00\x01\x02" + U16 + FEW,
    "long-string-in-object": b"\x03" + utf("a") + b"\x0c" + U32 + FEW,
}
AMF3 = {
    "string": b"\x06" + U29_MAX + FEW,
    "xml": b"\x0b" + U29_MAX + FEW,
    "xml-document": b"\x07" + U29_MAX + FEW,
    "bytearray": b"\x0c" + U29_MAX + FEW,
    "array-dense-count": b"\x09" + U29_MAX + b"\x01" + FEW,
    "array-assoc-key": b"\x09\x01" + U29_MAX + FEW,
    "object-trait-member-count": b"\x0a" + TRAITS_MAX + b"\x01" + FEW,
    "object-class-name": b"\x0a\x0b" + U29_MAX + FEW,
    "object-sealed-name": b"\x0a\x13\x01" + U29_MAX + FEW,
    "object-dynamic-key": typed3("") + U29_MAX + FEW,
    "vector-int-count": b"\x0d" + U29_MAX + b"\x00" + FEW,
    "vector-uint-count": b"\x0e" + U29_MAX + b"\x00" + FEW,
    "vector-double-count": b"\x0f" + U29_MAX + b"\x00" + FEW,
    "vector-object-count": b"\x10" + U29_MAX + b"\x00\x01" + FEW,
    "vector-object-type-name": b"\x10\x03\x00" + U29_MAX + FEW,
    "dictionary-count": b"\x11" + U29_MAX + b"\x00" + FEW,
    "array-collection-inner-count": typed3(ARRAY_COLLECTION, externalizable=True) + b"\x09" + U29_MAX + b"\x01" + FEW,
    "array-collection-inner-string": typed3(ARRAY_COLLECTION, externalizable=True) + b"\x09\x03\x01\x06" + U29_MAX + FEW,
    "object-proxy-inner-traits": typed3(OBJECT_PROXY, externalizable=True) + b"\x0a" + TRAITS_MAX + b"\x01" + FEW,
    "registered-externalizable-inner": typed3("hostile.External", externalizable=True) + b"\x0c" + U29_MAX + FEW,
    "string-in-dictionary-key": b"\x11\x03\x00\x06" + U29_MAX + FEW,
}
#: One byte short: each sized type declares exactly one byte more than is there.
SHORT_BY_ONE = {
    "amf0/string": ("amf0", b"\x02" + utf("abc")[:-1]),
    "amf0/long-string": ("amf0", b"\x0c\x00\x00\x00\x03ab"),
    "amf0/xml-document": ("amf0", b"\x0f\x00\x00\x00\x03ab"),
    "amf0/strict-array": ("amf0", b"\x0a\x00\x00\x00\x03\x05\x05"),
    "amf3/string": ("amf3", b"\x06\x07ab"),
    "amf3/bytearray": ("amf3", b"\x0c\x07ab"),
    "amf3/vector-int": ("amf3", b"\x0d\x05\x00" + b"\x00" * 7),
    "amf3/vector-double": ("amf3", b"\x0f\x05\x00" + b"\x00" * 15),
    "amf3/array": ("amf3", b"\x09\x07\x01\x01\x01"),
    "amf3/vector-object": ("amf3", b"\x10\x07\x00\x01\x01\x01"),
    "amf3/dictionary": ("amf3", b"\x11\x05\x00\x01\x01\x01"),
}


def packet(version: int, header_count: int, body_count: int, rest: bytes = b"") -> bytes:
    return struct.pack(">HH", version, header_count) + rest + struct.pack(">H", body_count)


PACKETS = {
    "header-count": struct.pack(">HH", 3, 0xFFFF) + utf("h") + b"\x00" + U32 + b"\x05",
    "body-count": struct.pack(">HHH", 3, 0, 0xFFFF) + utf("t") + utf("/1") + U32 + b"\x05",
    "header-count-one-more": struct.pack(">HH", 0, 2) + utf("h") + b"\x00" + U32 + b"\x05" + struct.pack(">H", 0),
    "body-count-one-more": struct.pack(">HHH", 0, 0, 2) + utf("t") + utf("/1") + U32 + b"\x05",
    "header-name-length": struct.pack(">HH", 0, 1) + U16 + FEW,
    "body-target-length": struct.pack(">HHH", 0, 0, 1) + U16 + FEW,
    "body-response-length": struct.pack(">HHH", 0, 0, 1) + utf("t") + U16 + FEW,
    "body-value-string": raw_packet(0, [("t", "/1", b"\x02" + U16 + FEW)]),
    "body-value-strict-array": raw_packet(0, [("t", "/1", b"\x0a" + U32 + b"\x05")]),
    "body-value-amf3-array": raw_packet(3, [("t", "/1", b"\x11\x09" + U29_MAX + b"\x01")]),
    "header-value-long-string": raw_packet(0, [], [("h", True, b"\x0c" + U32 + FEW)]),
}
#: Header and body length fields are ignored (peers write -1, 0, 1 or the real length).
IGNORED_LENGTHS = [0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 12345678]
BAD_VERSIONS = [2, 4, 0x0103, 0x8000, 0xFFFF]


def sol(name: bytes = utf("so"), version: bytes = b"\x00\x00\x00\x03", members: bytes = b"", length: bytes | None = None, magic: bytes = b"\x00\xbf", signature: bytes = b"TCSO\x00\x04\x00\x00\x00\x00") -> bytes:
    body = signature + name + version + members
    return magic + (struct.pack(">I", len(body)) if length is None else length) + body


SOLS = {
    "name-length": sol(name=U16 + FEW),
    "amf3-member-name-length": sol(members=U29_MAX + FEW),
    "amf0-member-name-length": sol(version=b"\x00\x00\x00\x00", members=U16 + FEW),
    "amf3-member-value-length": sol(members=s3("k") + b"\x06" + U29_MAX + FEW),
    "amf0-member-value-length": sol(version=b"\x00\x00\x00\x00", members=utf("k") + b"\x0c" + U32 + FEW),
    "amf3-member-array-count": sol(members=s3("k") + b"\x09" + U29_MAX + b"\x01" + FEW),
    "bad-magic": sol(magic=b"\x00\xbe"),
    "bad-signature": sol(signature=b"TCSX\x00\x04\x00\x00\x00\x00"),
    "bad-padding": sol(members=s3("k") + b"\x01\x07"),
    **{f"version-{v:#x}": sol(version=struct.pack(">I", v)) for v in (1, 2, 4, 0x300, 0xFFFFFFFF)},
}
SOL_IGNORED_LENGTHS = [0, 1, 0xFFFFFFFF, 0x7FFFFFFF]


def cases() -> list[Case]:
    out = []
    for name, data in AMF0.items():
        out.append(Case(f"amf0/{name}", "amf0", data))
        out.append(Case(f"amf0/{name}/unlimited", "amf0", data, {"max_size": 2**62}))
        out.append(Case(f"avmplus/{name}", "amf0", b"\x11" + AMF3.get(name, b"\x06" + U29_MAX)))
    for name, data in AMF3.items():
        out.append(Case(f"amf3/{name}", "amf3", data))
        out.append(Case(f"amf3/{name}/unlimited", "amf3", data, {"max_size": 2**62}))
        out.append(Case(f"amf3-all/{name}", "amf3_all", data))
    for name, (codec, data) in SHORT_BY_ONE.items():
        out.append(Case(f"short/{name}", codec, data))
    out.append(Case("amf0/ecma-array-count-lies", "amf0", b"\x08" + U32 + utf("a") + b"\x05\x00\x00\x09"))
    out.append(Case("amf0/ecma-array-count-lies-truncated", "amf0", b"\x08" + U32 + utf("a")))
    for name, data in PACKETS.items():
        out.append(Case(f"packet/{name}", "packet", data))
        out.append(Case(f"gateway/{name}", "gateway", data))
    ok = raw_packet(3, [("EchoService.echo", "/1", b"\x0a\x00\x00\x00\x01\x02" + utf("hi"))], [("Info", False, b"\x05")])
    for n in IGNORED_LENGTHS:
        lying = raw_packet(3, [("EchoService.echo", "/1", b"\x0a\x00\x00\x00\x01\x02" + utf("hi"))], [("Info", False, b"\x05")], length=n)
        out.append(Case(f"packet/lengths-{n:#x}", "packet", lying))
        out.append(Case(f"gateway/lengths-{n:#x}", "gateway", lying))
    for v in BAD_VERSIONS:
        out.append(Case(f"packet/version-{v:#x}", "packet", struct.pack(">H", v) + ok[2:]))
        out.append(Case(f"gateway/version-{v:#x}", "gateway", struct.pack(">H", v) + ok[2:]))
    for name, data in SOLS.items():
        out.append(Case(f"sol/{name}", "sol", data))
    for n in SOL_IGNORED_LENGTHS:
        out.append(Case(f"sol/length-{n:#x}", "sol", sol(members=s3("k") + b"\x04\x05\x00", length=struct.pack(">I", n))))
    return out


@functools.cache
def results() -> dict[str, Any]:
    return run(cases())


def refused(case_id: str, match: str | None = None) -> None:
    expect_decode_error(results()[case_id], match=match, rss_kb=SMALL_KB)


@pytest.mark.parametrize("name", AMF0)
def test_amf0_lengths_beyond_the_input(name: str) -> None:
    refused(f"amf0/{name}", "exceeds")
    refused(f"amf0/{name}/unlimited", "exceeds the")
    refused(f"avmplus/{name}", "exceeds")


@pytest.mark.parametrize("name", AMF3)
def test_amf3_lengths_beyond_the_input(name: str) -> None:
    refused(f"amf3/{name}", "exceeds")
    refused(f"amf3/{name}/unlimited", "exceeds the")
    refused(f"amf3-all/{name}", "exceeds")


@pytest.mark.parametrize("name", SHORT_BY_ONE)
def test_lengths_one_byte_beyond_the_input(name: str) -> None:
    o = results()[f"short/{name}"]
    expect_decode_error(o, rss_kb=SMALL_KB)
    assert "exceeds" in (o.reason or "") or "unexpected end of input" in (o.reason or ""), o.describe()


def test_amf0_ecma_array_count_is_only_a_hint() -> None:
    """The count is documented as unreliable (peers write 0): the entries decide, and a
    huge count allocates nothing; it is kept as the array's `length` (what Flash Player
    reads there), a number and nothing more."""
    value = expect_ok(results()["amf0/ecma-array-count-lies"], rss_kb=SMALL_KB)
    assert value == {"type": "MixedArray", "repr": "MixedArray({'a': None}, length=4294967295)"}
    refused("amf0/ecma-array-count-lies-truncated", "unexpected end of input")


@pytest.mark.parametrize("name", PACKETS)
def test_packet_counts_and_lengths_beyond_the_input(name: str) -> None:
    o = results()[f"packet/{name}"]
    expect_decode_error(o, rss_kb=SMALL_KB)
    assert "exceeds" in (o.reason or "") or "unexpected end of input" in (o.reason or ""), o.describe()
    g = results()[f"gateway/{name}"]
    value = expect_ok(g, rss_kb=SMALL_KB)
    assert value["status"] == 400 and value["still_serving"], g.describe()


@pytest.mark.parametrize("length", IGNORED_LENGTHS, ids=hex)
def test_packet_length_fields_are_ignored(length: int) -> None:
    o = results()[f"packet/lengths-{length:#x}"]
    value = expect_ok(o, rss_kb=SMALL_KB)
    assert value["bodies"] == [["EchoService.echo", "/1", "['hi']"]] and value["headers"] == [["Info", "None"]], o.describe()
    g = results()[f"gateway/lengths-{length:#x}"]
    assert expect_ok(g)["status"] == 200, g.describe()


@pytest.mark.parametrize("version", BAD_VERSIONS, ids=hex)
def test_packet_versions_other_than_0_1_3(version: int) -> None:
    refused(f"packet/version-{version:#x}", f"unknown amf packet version {version}")
    g = results()[f"gateway/version-{version:#x}"]
    value = expect_ok(g)
    assert value["status"] == 400 and "version" in value["body"] and value["still_serving"], g.describe()


@pytest.mark.parametrize("name", SOLS)
def test_sol_bad_headers_and_lengths(name: str) -> None:
    refused(f"sol/{name}")


@pytest.mark.parametrize("length", SOL_IGNORED_LENGTHS, ids=hex)
def test_sol_length_field_is_ignored(length: int) -> None:
    value = expect_ok(results()[f"sol/length-{length:#x}"], rss_kb=SMALL_KB)
    assert value["repr"] == "SOL('so', {'k': 5}, amf_version=3)"
