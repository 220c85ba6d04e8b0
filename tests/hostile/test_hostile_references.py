"""References: out of range (every AMF3 table and reference-carrying type, the AMF0
object table) is a clean DecodeError; references to an object still being built
(self-references) work wherever the format allows them; reference DAGs that would
explode if expanded (2^60 leaves) decode and encode in linear time and keep sharing.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

import pytest

from gateway_util import raw_packet
from wire import ARRAY_COLLECTION, OBJECT_PROXY, s3, typed3, u29, utf

from .harness import Case, expect_decode_error, expect_ok, run

HUGE_REF = u29(((1 << 28) - 1) << 1)  # reference index 2^28 - 1

#: AMF3 markers whose U29 header may be a reference into the object table.
AMF3_REFERENCED = {
    "object": 0x0A,
    "array": 0x09,
    "date": 0x08,
    "xml": 0x0B,
    "xml-document": 0x07,
    "bytearray": 0x0C,
    "vector-int": 0x0D,
    "vector-uint": 0x0E,
    "vector-double": 0x0F,
    "vector-object": 0x10,
    "dictionary": 0x11,
}

OUT_OF_RANGE: dict[str, tuple[str, bytes, str]] = {}
for _name, _marker in AMF3_REFERENCED.items():
    OUT_OF_RANGE[f"amf3/{_name}/empty-table"] = ("amf3", bytes([_marker, 0x00]), "object reference 0")
    OUT_OF_RANGE[f"amf3/{_name}/huge"] = ("amf3", bytes([_marker]) + HUGE_REF, "object reference")
    # inside an array, which is object 0: index 1 is one past the end
    OUT_OF_RANGE[f"amf3/{_name}/one-past"] = ("amf3", b"\x09\x03\x01" + bytes([_marker, 0x02]), "object reference 1")
OUT_OF_RANGE.update(
    {
        "amf3/string/empty-table": ("amf3", b"\x06\x00", "string reference 0"),
        "amf3/string/huge": ("amf3", b"\x06" + HUGE_REF, "string reference"),
        "amf3/string/one-past": ("amf3", b"\x09\x05\x01\x06\x03a\x06\x02", "string reference 1"),
        "amf3/string/as-key": ("amf3", typed3("") + b"\x00", "string reference 0"),
        "amf3/string/as-assoc-key": ("amf3", b"\x09\x01\x02", "string reference 1"),
        "amf3/string/as-class-name": ("amf3", b"\x0a\x0b\x00", "string reference 0"),
        "amf3/string/as-sealed-name": ("amf3", b"\x0a\x13\x01\x00", "string reference 0"),
        "amf3/string/as-vector-type-name": ("amf3", b"\x10\x03\x00\x00", "string reference 0"),
        "amf3/traits/empty-table": ("amf3", b"\x0a\x01", "traits reference 0"),
        "amf3/traits/one-past": ("amf3", b"\x09\x05\x01" + typed3("") + b"\x01" + b"\x0a\x05", "traits reference 1"),
        "amf3/traits/huge": ("amf3", b"\x0a" + u29(((1 << 27) - 1) << 2 | 1), "traits reference"),
        "amf3/object/forward": ("amf3", b"\x09\x05\x01\x0a\x04" + typed3("") + b"\x01", "object reference 2"),
        "amf3/object/in-array-collection": ("amf3", typed3(ARRAY_COLLECTION, externalizable=True) + b"\x09\x03\x01\x09\x06", "object reference 3"),
        "amf3/object/in-registered-externalizable": ("amf3", typed3("hostile.External", externalizable=True) + b"\x0a\x04", "object reference 2"),
        "amf0/empty-table": ("amf0", b"\x07\x00\x00", "object reference 0"),
        "amf0/huge": ("amf0", b"\x07\xff\xff", "object reference 65535"),
        "amf0/one-past": ("amf0", b"\x0a\x00\x00\x00\x01\x07\x00\x01", "object reference 1"),
        "amf0/forward": ("amf0", b"\x0a\x00\x00\x00\x02\x07\x00\x01\x03\x00\x00\x09", "object reference 1"),
        "amf0/after-avmplus": ("amf0", b"\x0a\x00\x00\x00\x01\x11\x09\x02", "object reference 1"),
        "packet/body": ("packet", raw_packet(0, [("t", "/1", b"\x07\x00\x00")]), "object reference 0"),
        # each body is its own reference context: body 2 cannot see body 1's object
        "packet/across-bodies": ("packet", raw_packet(0, [("t", "/1", b"\x03\x00\x00\x09"), ("t", "/2", b"\x07\x00\x00")]), "object reference 0"),
        "packet/across-amf3-bodies": ("packet", raw_packet(3, [("t", "/1", b"\x11\x06\x03a"), ("t", "/2", b"\x11\x06\x00")]), "string reference 0"),
    }
)

#: Self-references (a reference to an object still being built) that must decode to a
#: real cycle: (codec, bytes, a Python expression on `v` that must be true).
SELF_REFERENCES: dict[str, tuple[str, bytes, str]] = {
    "amf3/array": ("amf3", b"\x09\x03\x01\x09\x00", "v[0] is v"),
    "amf3/array-assoc": ("amf3", b"\x09\x01\x03a\x09\x00\x01", "v['a'] is v"),
    "amf3/object": ("amf3", typed3("") + s3("a") + b"\x0a\x00\x01", "v['a'] is v"),
    "amf3/typed-sealed": ("amf3", typed3("T", dynamic=False, sealed=("a",)) + b"\x0a\x00", "v['a'] is v and v.alias == 'T'"),
    "amf3/registered": ("amf3", typed3("hostile.Recorder") + s3("a") + b"\x0a\x00\x01", "v.a is v"),
    "amf3/registered-externalizable": ("amf3", typed3("hostile.External", externalizable=True) + b"\x0a\x00", "v.inner is v"),
    "amf3/dictionary-value": ("amf3", b"\x11\x03\x00\x04\x01\x11\x00", "v[1] is v"),
    "amf3/dictionary-key": ("amf3", b"\x11\x03\x00\x11\x00\x01", "list(v)[0].value is v"),
    "amf3/vector-object": ("amf3", b"\x10\x03\x00\x01\x10\x00", "v[0] is v"),
    "amf3/array-collection": ("amf3", typed3(ARRAY_COLLECTION, externalizable=True) + b"\x09\x03\x01\x0a\x00", "v[0] is v"),
    "amf3/object-proxy": ("amf3", typed3(OBJECT_PROXY, externalizable=True) + typed3("") + s3("a") + b"\x0a\x00\x01", "v['a'] is v"),
    "amf0/object": ("amf0", b"\x03" + utf("a") + b"\x07\x00\x00\x00\x00\x09", "v['a'] is v"),
    "amf0/ecma-array": ("amf0", b"\x08\x00\x00\x00\x01" + utf("a") + b"\x07\x00\x00\x00\x00\x09", "v['a'] is v"),
    "amf0/strict-array": ("amf0", b"\x0a\x00\x00\x00\x01\x07\x00\x00", "v[0] is v"),
    "amf0/typed-object": ("amf0", b"\x10" + utf("T") + utf("a") + b"\x07\x00\x00\x00\x00\x09", "v['a'] is v"),
    "amf0/registered": ("amf0", b"\x10" + utf("hostile.Recorder") + utf("a") + b"\x07\x00\x00\x00\x00\x09", "v.a is v"),
}

DAG_LEVELS = 60


def dag_amf3(levels: int = DAG_LEVELS) -> bytes:
    """`levels` arrays, each holding the one below twice (inline, then by reference);
    the innermost is [null, null]. Expanded, 2^levels leaves."""
    refs = b"".join(b"\x09" + u29(index << 1) for index in range(levels, 0, -1))
    return b"\x09\x05\x01" * levels + b"\x09\x05\x01\x01\x01" + refs


def dag_amf0(levels: int = DAG_LEVELS) -> bytes:
    refs = b"".join(b"\x07" + struct.pack(">H", index) for index in range(levels, 0, -1))
    return b"\x0a\x00\x00\x00\x02" * levels + b"\x0a\x00\x00\x00\x02\x05\x05" + refs


ENCODE_DAG = """
kind, codec, levels = data.decode().split()
levels = int(levels)
enc = {"amf0": amf0, "amf3": amf3}[codec]
node = [None, None] if kind == "list" else {"a": None, "b": None}
for _ in range(levels):
    node = [node, node] if kind == "list" else {"a": node, "b": node}
out = enc.encode(node)
back = enc.decode(out)
shared = True
for _ in range(levels):
    pair = back if kind == "list" else [back["a"], back["b"]]
    shared = shared and pair[0] is pair[1]
    back = pair[0]
result = {"size": len(out), "shared": shared}
"""

PACKET_DAG = """
from amfkit.remoting import packet
env = packet.decode(data)
node = env.bodies[0].value
shared = True
for _ in range(60):
    shared = shared and node[0] is node[1]
    node = node[0]
result = shared
"""


def check(codec: str, expr: str) -> str:
    return f"v = {{'amf0': amf0, 'amf3': amf3}}['{codec}'].decode(data)\nresult = bool({expr})\n"


def cases() -> list[Case]:
    out = [Case(f"out-of-range/{name}", codec, data) for name, (codec, data, _) in OUT_OF_RANGE.items()]
    for name, (codec, data, expr) in SELF_REFERENCES.items():
        out.append(Case(f"self/{name}", "python", data, {"snippet": check(codec, expr)}))
        # and the bytes come back the same from the decoded cycle
        out.append(Case(f"self-reencode/{name}", "python", data, {"snippet": check(codec, f"{codec}.encode(v) == data")}))
    out.append(Case("dag/amf3", "dag", dag_amf3(), {"codec": "amf3", "levels": DAG_LEVELS}))
    out.append(Case("dag/amf0", "dag", dag_amf0(), {"codec": "amf0", "levels": DAG_LEVELS}))
    for kind in ("list", "dict"):
        for codec in ("amf0", "amf3"):
            out.append(Case(f"encode-dag/{kind}/{codec}", "python", f"{kind} {codec} {DAG_LEVELS}".encode(), {"snippet": ENCODE_DAG}))
    out.append(Case("dag/packet-amf0", "python", raw_packet(0, [("t", "/1", dag_amf0())]), {"snippet": PACKET_DAG}))
    out.append(Case("dag/packet-amf3", "python", raw_packet(3, [("t", "/1", b"\x11" + dag_amf3())]), {"snippet": PACKET_DAG}))
    return out


@functools.cache
def results() -> dict[str, Any]:
    return run(cases())


@pytest.mark.parametrize("name", OUT_OF_RANGE)
def test_out_of_range_references(name: str) -> None:
    expect_decode_error(results()[f"out-of-range/{name}"], match=OUT_OF_RANGE[name][2])


@pytest.mark.parametrize("name", SELF_REFERENCES)
def test_self_references_build_cycles(name: str) -> None:
    o = results()[f"self/{name}"]
    assert expect_ok(o) is True, o.describe()
    o = results()[f"self-reencode/{name}"]
    assert expect_ok(o) is True, o.describe()


@pytest.mark.parametrize("codec", ["amf3", "amf0"])
def test_reference_dag_is_not_expanded(codec: str) -> None:
    """60 levels: 2^60 leaves if expanded; 61 objects decoded, shared, written back as
    references (the output is no longer than the input), in well under a second."""
    o = results()[f"dag/{codec}"]
    value = expect_ok(o, seconds=0.1, rss_kb=1024)
    data = dag_amf3() if codec == "amf3" else dag_amf0()
    assert value == {"shared": True, "distinct": DAG_LEVELS + 1, "reencoded": len(data)}, o.describe()


@pytest.mark.parametrize("codec", ["amf3", "amf0"])
@pytest.mark.parametrize("kind", ["list", "dict"])
def test_encoding_a_dag_built_in_python_writes_references(kind: str, codec: str) -> None:
    o = results()[f"encode-dag/{kind}/{codec}"]
    value = expect_ok(o, seconds=0.1, rss_kb=1024)
    assert value["shared"] and value["size"] < 1000, o.describe()


@pytest.mark.parametrize("version", ["amf0", "amf3"])
def test_reference_dag_in_a_packet_body(version: str) -> None:
    o = results()[f"dag/packet-{version}"]
    assert expect_ok(o, seconds=0.1, rss_kb=1024) is True, o.describe()
