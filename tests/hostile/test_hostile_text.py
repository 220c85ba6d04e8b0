"""Text and numbers an attacker shapes: XML with entities, DOCTYPEs and external
references stays inert text (no parse, no file opened, no connection made to a socket
the child listens on, no audit event); invalid UTF-8 is a DecodeError at the first bad
byte in every string position (amfkit has no lenient mode, and every position agrees);
NaN, infinite and out-of-range dates decode to `amfkit.Date` and encode back to the same
bytes.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

import pytest

from gateway_util import raw_packet
from wire import s3, typed3, utf

from .harness import Case, expect_decode_error, expect_ok, run

LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">\n'
    + "".join(f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n' for i in range(1, 10))
    + "]>\n<lolz>&lol9;</lolz>"
)
XML_PAYLOADS = {
    "billion-laughs": LAUGHS,
    "xxe-file": '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><r>&xxe;</r>',
    "xxe-http": '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY xxe SYSTEM "http://127.0.0.1:PORT/secret">]><r>&xxe;</r>',
    "parameter-entity": '<!DOCTYPE r [<!ENTITY % remote SYSTEM "http://127.0.0.1:PORT/evil.dtd">%remote;]><r/>',
    "external-dtd": '<!DOCTYPE r SYSTEM "http://127.0.0.1:PORT/r.dtd"><r/>',
    "xinclude": '<r xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="file:///etc/passwd" parse="text"/></r>',
    "quadratic": '<!DOCTYPE r [<!ENTITY a "' + "x" * 20_000 + '">]><r>' + "&a;" * 20_000 + "</r>",
    "not-well-formed": "<<r>&undefined;<![CDATA[ ]]]]><!-- -- --><?pi?></x>",
}
XML_KINDS = {"amf0-xml-document": (0, 0x0F), "amf3-xml": (3, 0x0B), "amf3-xml-document": (3, 0x07)}

BAD_UTF8 = {
    "invalid-continuation": b"\xc3\x28",
    "surrogate": b"\xed\xa0\x80",
    "overlong-nul": b"\xc0\x80",
    "overlong-slash": b"\xe0\x80\xaf",
    "above-10ffff": b"\xf4\x90\x80\x80",
    "byte-ff": b"\xff",
    "lone-continuation": b"\x80",
    "truncated-sequence": b"\xe2\x82",
}


def positions(bad: bytes) -> dict[str, tuple[str, bytes, int]]:
    """Every string position: (codec, input, offset of the first bad byte). Each string
    is "ok" followed by the bad bytes, so the error must point two bytes in."""
    t = b"ok" + bad
    p = {
        "amf0/string": ("amf0", b"\x02" + utf(t), 3),
        "amf0/long-string": ("amf0", b"\x0c" + struct.pack(">I", len(t)) + t, 5),
        "amf0/xml-document": ("amf0", b"\x0f" + struct.pack(">I", len(t)) + t, 5),
        "amf0/object-key": ("amf0", b"\x03" + utf(t) + b"\x05\x00\x00\x09", 3),
        "amf0/ecma-array-key": ("amf0", b"\x08\x00\x00\x00\x01" + utf(t) + b"\x05\x00\x00\x09", 7),
        "amf0/typed-object-name": ("amf0", b"\x10" + utf(t) + b"\x00\x00\x09", 3),
        "amf0/typed-object-key": ("amf0", b"\x10" + utf("T") + utf(t) + b"\x05\x00\x00\x09", 6),
        "amf3/string": ("amf3", b"\x06" + s3(t), 2),
        "amf3/xml": ("amf3", b"\x0b" + s3(t), 2),
        "amf3/xml-document": ("amf3", b"\x07" + s3(t), 2),
        "amf3/object-key": ("amf3", typed3("") + s3(t) + b"\x01\x01", 4),
        "amf3/array-assoc-key": ("amf3", b"\x09\x01" + s3(t) + b"\x01\x01", 3),
        "amf3/class-alias": ("amf3", b"\x0a\x0b" + s3(t) + b"\x01", 3),
        "amf3/sealed-name": ("amf3", b"\x0a\x13\x01" + s3(t) + b"\x01", 4),
        "amf3/vector-type-name": ("amf3", b"\x10\x03\x00" + s3(t) + b"\x01", 4),
        "amf3/string-in-array": ("amf3", b"\x09\x03\x01\x06" + s3(t), 5),
    }
    head = struct.pack(">HH", 0, 1)
    p["packet/header-name"] = ("packet", head + utf(t) + b"\x00\x00\x00\x00\x01\x05\x00\x00", 6)
    p["packet/body-target"] = ("packet", struct.pack(">HHH", 0, 0, 1) + utf(t) + utf("/1") + b"\x00\x00\x00\x01\x05", 8)
    p["packet/body-response"] = ("packet", struct.pack(">HHH", 0, 0, 1) + utf("t") + utf(t) + b"\x00\x00\x00\x01\x05", 11)
    p["packet/body-value"] = ("packet", raw_packet(0, [("t", "/1", b"\x02" + utf(t))]), 20)
    return p


def _bits(x: float) -> str:
    return struct.pack(">d", x).hex()


DATES = {  # bits of the millisecond double
    "nan": "7ff8000000000000",
    "nan-payload": "7ff8000000000001",
    "negative-nan": "fff8000000000000",
    "signalling-nan": "7ff0000000000001",
    "infinity": _bits(float("inf")),
    "negative-infinity": _bits(float("-inf")),
    "max-double": _bits(1.7976931348623157e308),
    "min-double": _bits(-1.7976931348623157e308),
    "beyond-ecmascript-range": _bits(8.64e15 + 1),
    "before-ecmascript-range": _bits(-8.64e15 - 1),
    "year-10000": _bits(253402300800000.0),
    "year-0": _bits(-62167219200000.0),
    "before-year-1": _bits(-62135596800001.0),
}
TIME_ZONES = [0, 1, -1, 0x7FFF, -0x8000]

DATE_SNIPPET = """
codec = {{"amf0": amf0, "amf3": amf3}}["{codec}"]
v = codec.decode(data)
result = {{"type": type(v).__name__, "same": codec.encode(v) == data, "repr": repr(v)}}
"""


def cases() -> list[Case]:
    out = []
    for name, text in XML_PAYLOADS.items():
        for kind, (version, marker) in XML_KINDS.items():
            out.append(Case(f"xml/{kind}/{name}", "xml", b"", {"template": text, "version": version, "marker": marker}))
    for bad_name, bad in BAD_UTF8.items():
        for where, (codec, data, _) in positions(bad).items():
            out.append(Case(f"utf8/{where}/{bad_name}", codec, data))
    for where in ("packet/body-target", "packet/body-value"):
        data = positions(BAD_UTF8["surrogate"])[where][1]
        out.append(Case(f"utf8-gateway/{where}", "gateway", data))
    for name, bits in DATES.items():
        raw = bytes.fromhex(bits)
        out.append(Case(f"date/amf3/{name}", "python", b"\x08\x01" + raw, {"snippet": DATE_SNIPPET.format(codec="amf3")}))
        for tz in TIME_ZONES:
            out.append(Case(f"date/amf0/{name}/tz{tz}", "python", b"\x0b" + raw + struct.pack(">h", tz), {"snippet": DATE_SNIPPET.format(codec="amf0")}))
    return out


@functools.cache
def results() -> dict[str, Any]:
    return run(cases())


@pytest.mark.parametrize("kind", XML_KINDS)
@pytest.mark.parametrize("name", XML_PAYLOADS)
def test_xml_is_inert_text(name: str, kind: str) -> None:
    o = results()[f"xml/{kind}/{name}"]
    value = expect_ok(o, seconds=0.1)
    expected_type = "XML" if kind == "amf3-xml" else "XMLDocument"
    assert value == {"type": expected_type, "equal": True, "connections": 0, "events": [], "same_bytes": True}, o.describe()


@pytest.mark.parametrize("bad", BAD_UTF8)
@pytest.mark.parametrize("where", list(positions(b"")))
def test_invalid_utf8_in_every_string_position(where: str, bad: str) -> None:
    o = results()[f"utf8/{where}/{bad}"]
    expect_decode_error(o, match="invalid utf-8")
    assert o.offset == positions(BAD_UTF8[bad])[where][2] + 2, "the error must point at the first bad byte\n  " + o.describe()


@pytest.mark.parametrize("where", ["packet/body-target", "packet/body-value"])
def test_invalid_utf8_at_the_gateway_is_a_400(where: str) -> None:
    o = results()[f"utf8-gateway/{where}"]
    value = expect_ok(o)
    assert value["status"] == 400 and "invalid utf-8" in value["body"] and value["still_serving"], o.describe()


@pytest.mark.parametrize("name", DATES)
def test_nan_infinite_and_huge_dates(name: str) -> None:
    o = results()[f"date/amf3/{name}"]
    value = expect_ok(o)
    assert value["type"] == "Date" and value["same"], o.describe()
    for tz in TIME_ZONES:
        o = results()[f"date/amf0/{name}/tz{tz}"]
        value = expect_ok(o)
        assert value["type"] == "Date" and value["same"], o.describe()
