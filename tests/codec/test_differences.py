"""`amfkit.diff`: where two payloads differ, each read in its own form, down to what only
the wire shows. The two payloads of ruffle-rs/ruffle pull request #23772 first (Ruffle
wrote an AS3 Array as an ECMA array where Flash Player writes a strict array), then one
test per kind of difference."""

from __future__ import annotations

import base64
import zlib

import pytest

import amfkit
from amfkit.differences import Difference, diff_documents
from amfkit.remoting import messages, packet

from repo import FIXTURES

FOREIGN = FIXTURES / "foreign"


def _packet(value, version=3, target="Echo.echo", response="/1"):
    return packet.encode(packet.Envelope(version, bodies=[packet.Body(target, response, value)]))


def test_ruffle_pr_23772_values_differ_by_their_array_type():
    ruffle = (FOREIGN / "ruffle-pr23772-ruffle.amf0").read_bytes()
    flash = (FOREIGN / "ruffle-pr23772-flash.amf0").read_bytes()
    assert amfkit.diff(ruffle, flash) == [Difference("$", "type", "ECMA array", "strict array")]
    # Their values are the same: the item is compared inside both.
    assert amfkit.amf0.decode(ruffle)[0] == amfkit.amf0.decode(flash)[0]


def test_ruffle_pr_23772_packets_differ_at_the_argument():
    ruffle = (FOREIGN / "ruffle-pr23772-ruffle-packet.bin").read_bytes()
    flash = (FOREIGN / "ruffle-pr23772-flash-packet.bin").read_bytes()
    found = amfkit.diff(ruffle, flash)
    assert [str(d) for d in found] == ["$.bodies[0][0]: ECMA array vs strict array"]
    # Each read in its own form: the same difference from hex and from base64 of zlib.
    assert amfkit.diff(ruffle.hex(" "), base64.b64encode(zlib.compress(flash))) == found


@pytest.mark.parametrize("fixture", sorted(FOREIGN.glob("*.bin")), ids=lambda p: p.name)
def test_a_payload_is_the_same_as_itself_in_any_form(fixture):
    data = fixture.read_bytes()
    assert amfkit.diff(data, data) == []
    assert amfkit.diff(data, base64.b64encode(data)) == []
    assert amfkit.diff(list(data).__repr__(), data.hex(":")) == []


def test_types_and_values():
    a = _packet([{"n": 1, "s": "x", "f": 1.5, "t": True}])
    b = _packet([{"n": 1.0, "s": "y", "f": 1.5, "t": None}])
    assert [(d.path, d.kind, d.a, d.b) for d in amfkit.diff(a, b)] == [
        ("$.bodies[0][0].n", "type", "integer 1", "double 1.0"),
        ("$.bodies[0][0].s", "value", "string 'x'", "string 'y'"),
        ("$.bodies[0][0].t", "type", "boolean true", "null"),
    ]


def test_missing_members_order_and_lengths():
    a = amfkit.amf3.encode({"a": 1, "b": [1, 2], "c": 3})
    b = amfkit.amf3.encode({"b": [1], "a": 1, "d": 3})
    assert [str(d) for d in amfkit.diff(a, b)] == [
        "$.b: 2 items vs 1 item",
        "$.c: integer 3 vs no such member",
        "$.d: no such member vs integer 3",
        "$: members a, b vs members b, a",
    ]


def test_a_reference_against_an_inline_copy():
    shared = {"k": 1}
    a = amfkit.amf3.encode([shared, shared])
    b = amfkit.amf3.encode([{"k": 1}, {"k": 1}])
    assert amfkit.diff(a, b) == [Difference("$[1]", "reference", "a reference to $[0]", "an inline object")]
    assert amfkit.diff(b, a) == [Difference("$[1]", "reference", "an inline object", "a reference to $[0]")]
    # References to different values.
    x, y = {"k": 1}, {"k": 1}
    c = amfkit.amf3.encode([x, y, x])
    d = amfkit.amf3.encode([x, y, y])
    assert amfkit.diff(c, d) == [Difference("$[2]", "reference", "a reference to $[0]", "a reference to $[1]")]
    # Cycles end: an object holding itself against a copy holding the copy.
    loop: dict = {"k": 1}
    loop["self"] = loop
    other: dict = {"k": 2}
    other["self"] = other
    found = amfkit.diff(amfkit.amf3.encode(loop), amfkit.amf3.encode(other))
    assert [str(f) for f in found] == ["$.k: integer 1 vs integer 2"]


def test_sealed_against_dynamic_and_classes():
    sealed = amfkit.TypedObject("com.x.P", {"x": 1, "y": 2}, sealed=("x", "y"), dynamic=False)
    dynamic = amfkit.TypedObject("com.x.P", {"x": 1, "y": 2}, sealed=(), dynamic=True)
    other = amfkit.TypedObject("com.x.Q", {"x": 1, "y": 2}, sealed=("x", "y"), dynamic=False)
    assert amfkit.diff(amfkit.amf3.encode(sealed), amfkit.amf3.encode(dynamic)) == [
        Difference("$", "traits", "sealed (x, y), not dynamic", "no sealed members, dynamic")
    ]
    assert amfkit.diff(amfkit.amf3.encode(sealed), amfkit.amf3.encode(other)) == [
        Difference("$", "type", "typed object 'com.x.P'", "typed object 'com.x.Q'")
    ]


def test_the_avm_switch_and_a_packets_own_fields():
    amf0_obj = packet.encode(packet.Envelope(0, bodies=[packet.Body("a.b", "/1", {"x": 1.0})]))
    switched = bytearray(packet.encode(packet.Envelope(3, bodies=[packet.Body("a.b", "/1", {"x": 1})])))
    switched[1] = 0  # the same bytes in a version-0 packet: an AVM+ switch before the object
    found = amfkit.diff(amf0_obj, bytes(switched))
    assert [str(d) for d in found] == [
        "$.bodies[0]: AMF0 vs AMF3 after an AVM+ switch",
        "$.bodies[0].x: number 1 vs integer 1",
    ]
    a = packet.encode(packet.Envelope(3, [packet.Header("A", 1, must_understand=True)], [packet.Body("x.y", "/1", 1), packet.Body("x.y", "/2", 2)]))
    b = packet.encode(packet.Envelope(0, [packet.Header("B", 1)], [packet.Body("x.z", "/9", 1)]))
    assert [str(d) for d in amfkit.diff(a, b)] == [
        "$: version 3 vs version 0",
        "$: 2 bodies vs 1 body",
        "$.headers[0]: name 'A' vs name 'B'",
        "$.headers[0]: must_understand True vs must_understand False",
        "$.bodies[0]: target 'x.y' vs target 'x.z'",
        "$.bodies[0]: response '/1' vs response '/9'",
        "$.bodies[0]: AMF3 after an AVM+ switch vs AMF0",
        "$.bodies[0]: integer 1 vs number 1",
    ]


def test_length_fields_and_flex_messages():
    py3amf = (FOREIGN / "py3amf-flex-request.bin").read_bytes()
    doc = amfkit.wire.read(py3amf, "packet")
    del doc["bodies"][0]["length"]
    real = amfkit.wire.write(doc)
    assert amfkit.diff(py3amf, real) == [Difference("$.bodies[0]", "length", "length field 0", "the real length")]
    call = messages.RemotingMessage(destination="EchoService", operation="echo", body=["hi"], messageId="A", timestamp=1, clientId=None)
    other = messages.RemotingMessage(destination="EchoService", operation="echo", body=["ho"], messageId="A", timestamp=1, clientId=None)
    assert [str(d) for d in amfkit.diff(_packet([call]), _packet([other]))] == ["$.bodies[0][0].body[0]: string 'hi' vs string 'ho'"]


def test_forms_that_differ_are_one_difference():
    assert amfkit.diff(amfkit.amf3.encode(1), amfkit.amf0.encode("x")) == [
        Difference("$", "form", "amf3 value", "amf0 value")
    ]
    assert amfkit.diff(_packet(1), amfkit.amf3.encode(1))[0].kind == "form"


def test_a_long_list_of_differences_is_cut():
    a = amfkit.amf3.encode(list(range(50)))
    b = amfkit.amf3.encode(list(range(1, 51)))
    found = amfkit.diff(a, b, max_differences=10)
    assert len(found) == 11 and found[-1] == Difference("$", "more", "40 more differences", "not listed")


def test_documents_compare_directly():
    assert diff_documents({"__ecma__": {"0": 1}}, [1], form="amf0") == [Difference("$", "type", "ECMA array", "strict array")]
    assert diff_documents(["a", "b"], ["a"], form="amf0-stream") == [Difference("$", "items", "2 values", "1 value")]
