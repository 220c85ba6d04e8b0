"""Unknown and reserved type markers, at the top level and inside every container, in
AMF0, AMF3, remoting packets and the gateway: a clean DecodeError at the marker's byte
(a 400 at the gateway).

AMF0 (specification section 2.1): 0x04 movieclip and 0x0E recordset are reserved and
refused; 0x09 is the object-end marker, never a value; 0x0D unsupported is a value and
decodes to `amfkit.Undefined` (documented); 0x12 and above are unknown. AMF3 (section
3.1) defines 0x00 to 0x11; 0x12 and above are unknown.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from gateway_util import raw_packet
from wire import ARRAY_COLLECTION, OBJECT_PROXY, s3, typed3

from .harness import Case, expect_decode_error, expect_ok, run

PAD = b"\x00" * 8  # bytes after the marker, so that no failure is about running out

AMF0_CONTEXTS = {
    "top": b"",
    "strict-array": b"\x0a\x00\x00\x00\x01",
    "object": b"\x03\x00\x01a",
    "ecma-array": b"\x08\x00\x00\x00\x01\x00\x01a",
    "typed-object": b"\x10\x00\x01T\x00\x01a",
    "object-in-strict-array": b"\x0a\x00\x00\x00\x01\x03\x00\x01a",
}
AVM_CONTEXTS = {
    "avmplus": b"\x11",
    "avmplus-in-strict-array": b"\x0a\x00\x00\x00\x01\x11",
    "avmplus-in-object": b"\x03\x00\x01a\x11",
}
AMF3_CONTEXTS = {
    "top": b"",
    "array-dense": b"\x09\x03\x01",
    "array-assoc": b"\x09\x01" + s3("a"),
    "object-dynamic": typed3("") + s3("a"),
    "object-sealed": typed3("T", dynamic=False, sealed=("a",)),
    "typed-dynamic": typed3("T") + s3("a"),
    "dictionary-key": b"\x11\x03\x00",
    "dictionary-value": b"\x11\x03\x00\x04\x01",
    "vector-object": b"\x10\x03\x00\x01",
    "array-collection-body": typed3(ARRAY_COLLECTION, externalizable=True),
    "array-collection-item": typed3(ARRAY_COLLECTION, externalizable=True) + b"\x09\x03\x01",
    "object-proxy-body": typed3(OBJECT_PROXY, externalizable=True),
    "object-proxy-member": typed3(OBJECT_PROXY, externalizable=True) + typed3("") + s3("a"),
    "registered-externalizable-body": typed3("hostile.External", externalizable=True),
}
#: What completes each AMF0 context after one value.
AMF0_CLOSE = {
    "top": b"",
    "strict-array": b"",
    "object": b"\x00\x00\x09",
    "ecma-array": b"\x00\x00\x09",
    "typed-object": b"\x00\x00\x09",
    "object-in-strict-array": b"\x00\x00\x09",
}
RESERVED0 = {0x04: "movieclip", 0x0E: "recordset"}
UNKNOWN = range(0x12, 0x100)
GATEWAY_MARKERS = [0x04, 0x0E, 0x12, 0x7F, 0xFF]


def amf0_packet(value: bytes, where: str) -> bytes:
    if where == "header":
        return raw_packet(0, [], [("h", False, value)])
    return raw_packet(0, [("t", "/1", value)])


def cases() -> list[Case]:
    out = []
    for ctx, prefix in AMF0_CONTEXTS.items():
        out.append(Case(f"amf0/{ctx}/0d", "amf0", prefix + b"\x0d" + AMF0_CLOSE[ctx]))
        for marker in [*RESERVED0, 0x09, *UNKNOWN]:
            out.append(Case(f"amf0/{ctx}/{marker:02x}", "amf0", prefix + bytes([marker]) + PAD, {"allow_trailing": True}))
    for ctx, prefix in AVM_CONTEXTS.items():
        for marker in UNKNOWN:
            out.append(Case(f"amf0/{ctx}/{marker:02x}", "amf0", prefix + bytes([marker]) + PAD, {"allow_trailing": True}))
    for ctx, prefix in AMF3_CONTEXTS.items():
        for marker in UNKNOWN:
            out.append(Case(f"amf3/{ctx}/{marker:02x}", "amf3", prefix + bytes([marker]) + PAD, {"allow_trailing": True}))
    for where in ("header", "body"):
        for marker in [*RESERVED0, 0x09, *UNKNOWN]:
            out.append(Case(f"packet/{where}/{marker:02x}", "packet", amf0_packet(bytes([marker]) + PAD, where)))
        for marker in UNKNOWN:
            out.append(Case(f"packet/{where}-avmplus/{marker:02x}", "packet", amf0_packet(b"\x11" + bytes([marker]) + PAD, where)))
    for marker in GATEWAY_MARKERS:
        out.append(Case(f"gateway/{marker:02x}", "gateway", raw_packet(0, [("EchoService.echo", "/1", b"\x0a\x00\x00\x00\x01" + bytes([marker]))])))
        if marker in RESERVED0:
            continue  # valid AMF3 markers (Date and Vector.<uint>)
        out.append(Case(f"gateway-avmplus/{marker:02x}", "gateway", raw_packet(3, [("EchoService.echo", "/1", b"\x0a\x00\x00\x00\x01\x11" + bytes([marker]))])))
    return out


@functools.cache
def results() -> dict[str, Any]:
    return run(cases())


def at_marker(case_id: str, prefix: bytes, reason: str) -> None:
    o = results()[case_id]
    expect_decode_error(o, match=reason)
    assert o.offset == len(prefix), f"the error is not at the marker's byte {len(prefix)}\n  " + o.describe()


@pytest.mark.parametrize("ctx", AMF0_CONTEXTS)
@pytest.mark.parametrize("marker", RESERVED0, ids=[f"{m:#04x}-{n}" for m, n in RESERVED0.items()])
def test_amf0_reserved_markers(ctx: str, marker: int) -> None:
    at_marker(f"amf0/{ctx}/{marker:02x}", AMF0_CONTEXTS[ctx], f"reserved amf0 marker {marker:#04x} ({RESERVED0[marker]})")


@pytest.mark.parametrize("ctx", AMF0_CONTEXTS)
def test_amf0_object_end_is_not_a_value(ctx: str) -> None:
    at_marker(f"amf0/{ctx}/09", AMF0_CONTEXTS[ctx], "object-end marker 0x09 outside an object")


@pytest.mark.parametrize("ctx", AMF0_CONTEXTS)
def test_amf0_unsupported_marker_is_undefined(ctx: str) -> None:
    value = expect_ok(results()[f"amf0/{ctx}/0d"])
    assert "Undefined" in value["repr"], value


@pytest.mark.parametrize("ctx", AMF0_CONTEXTS)
def test_amf0_unknown_markers(ctx: str) -> None:
    for marker in UNKNOWN:
        at_marker(f"amf0/{ctx}/{marker:02x}", AMF0_CONTEXTS[ctx], f"unknown amf0 marker {marker:#04x}")


@pytest.mark.parametrize("ctx", AVM_CONTEXTS)
def test_unknown_amf3_markers_after_the_avmplus_switch(ctx: str) -> None:
    for marker in UNKNOWN:
        at_marker(f"amf0/{ctx}/{marker:02x}", AVM_CONTEXTS[ctx], f"unknown amf3 marker {marker:#04x}")


@pytest.mark.parametrize("ctx", AMF3_CONTEXTS)
def test_amf3_unknown_markers(ctx: str) -> None:
    for marker in UNKNOWN:
        at_marker(f"amf3/{ctx}/{marker:02x}", AMF3_CONTEXTS[ctx], f"unknown amf3 marker {marker:#04x}")


@pytest.mark.parametrize("where", ["header", "body"])
def test_packet_values_with_bad_markers(where: str) -> None:
    for marker in [*RESERVED0, 0x09, *UNKNOWN]:
        o = results()[f"packet/{where}/{marker:02x}"]
        expect_decode_error(o, match="marker")
        plural = {"header": "headers", "body": "bodies"}[where]
        assert (o.path or "").startswith(f"$.{plural}[0]"), o.describe()
    for marker in UNKNOWN:
        expect_decode_error(results()[f"packet/{where}-avmplus/{marker:02x}"], match=f"unknown amf3 marker {marker:#04x}")


@pytest.mark.parametrize("marker", GATEWAY_MARKERS, ids=lambda m: f"{m:#04x}")
def test_gateway_answers_bad_markers_with_400(marker: int) -> None:
    for kind in ("gateway",) if marker in RESERVED0 else ("gateway", "gateway-avmplus"):
        o = results()[f"{kind}/{marker:02x}"]
        value = expect_ok(o)
        assert value["status"] == 400 and "marker" in value["body"], o.describe()
        assert "Traceback" not in value["body"] and value["still_serving"], o.describe()
