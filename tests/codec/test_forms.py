"""Input forms (`amfkit.forms`) and finding the AMF in them (`amfkit.payload`), on packets
nobody here wrote (fixtures/foreign/: Py3AMF's, an Amfphp fault, Ruffle's and Flash's
arrays) in every form: raw, hex with every separator and the dumps of xxd, hexdump and
od, base64 (standard, URL-safe, wrapped, unpadded), decimal byte lists, zlib, gzip, raw
deflate, base64 of zlib, and HTTP messages (Content-Length, chunked, gzip or deflate
content). Every inflation is capped; what is not AMF is named in one line."""

from __future__ import annotations

import base64
import gzip
import subprocess
import zlib

import pytest

import amfkit
from amfkit import forms, payload
from amfkit.remoting import packet

from repo import FIXTURES

FOREIGN = sorted((FIXTURES / "foreign").glob("*.bin"))
SAMPLE = (FIXTURES / "foreign" / "py3amf-flex-request.bin").read_bytes()


def _dump(tool: list[str], data: bytes, tmp_path) -> bytes:
    f = tmp_path / "body.bin"
    f.write_bytes(data)
    return subprocess.run([*tool, str(f)], check=True, capture_output=True, timeout=60).stdout


def _chunked(body: bytes, size: int = 7) -> bytes:
    out = b""
    for i in range(0, len(body), size):
        part = body[i : i + size]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\n\r\n"


#: name -> (how the bytes are written, the form `detect` names, the layers `peel` takes off)
FORMS = {
    "raw": (lambda d, t: d, "raw", []),
    "hex-spaces": (lambda d, t: d.hex(" ").encode(), "hex", ["hex"]),
    "hex-upper-colons": (lambda d, t: d.hex(":").upper().encode(), "hex", ["hex"]),
    "hex-0x-commas": (lambda d, t: ", ".join(f"0x{b:02x}" for b in d).encode(), "hex", ["hex"]),
    "hex-escapes": (lambda d, t: "".join(f"\\x{b:02x}" for b in d).encode(), "hex", ["hex"]),
    "hex-lines": (lambda d, t: b"\r\n".join(d[i : i + 16].hex(" ").encode() for i in range(0, len(d), 16)) + b"\n", "hex", ["hex"]),
    "hex-plain": (lambda d, t: d.hex().encode(), "hex", ["hex"]),
    "xxd": (lambda d, t: _dump(["xxd"], d, t), "hex", ["hex"]),
    "hexdump-C": (lambda d, t: _dump(["hexdump", "-C"], d, t), "hex", ["hex"]),
    "od": (lambda d, t: _dump(["od", "-Ax", "-tx1"], d, t), "hex", ["hex"]),
    "base64": (lambda d, t: base64.b64encode(d), "base64", ["base64"]),
    "base64-wrapped": (lambda d, t: base64.encodebytes(d), "base64", ["base64"]),
    "base64-urlsafe-unpadded": (lambda d, t: base64.urlsafe_b64encode(d + b"\xfb\xff").rstrip(b"="), "base64", ["base64"]),
    "list": (lambda d, t: str(list(d)).encode(), "list", ["list"]),
    "list-signed": (lambda d, t: ("{" + ", ".join(str(b - 256 if b > 127 else b) for b in d) + "}").replace("{", "[").replace("}", "]").encode(), "list", ["list"]),
    "zlib": (lambda d, t: zlib.compress(d, 9), "zlib", ["zlib"]),
    "gzip": (lambda d, t: gzip.compress(d), "gzip", ["gzip"]),
    "deflate": (lambda d, t: zlib.compress(d)[2:-4], "deflate", ["deflate"]),
    "base64-of-zlib": (lambda d, t: base64.b64encode(zlib.compress(d)), "base64", ["base64", "zlib"]),
    "http-request": (
        lambda d, t: b"POST /gateway HTTP/1.1\r\nHost: example.org\r\nContent-Type: application/x-amf\r\nContent-Length: %d\r\n\r\n" % len(d) + d,
        "http",
        ["http"],
    ),
    "http-response-chunked-gzip": (
        lambda d, t: b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amf\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" + _chunked(gzip.compress(d)),
        "http",
        ["http"],
    ),
    "http-bare-newlines-deflate": (
        lambda d, t: b"HTTP/1.0 200 OK\nContent-Type: application/x-amf\nContent-Encoding: deflate\n\n" + zlib.compress(d),
        "http",
        ["http"],
    ),
}


@pytest.mark.parametrize("name", sorted(FORMS))
@pytest.mark.parametrize("fixture", FOREIGN, ids=lambda p: p.name)
def test_every_foreign_packet_reads_the_same_in_every_form(fixture, name, tmp_path):
    raw = fixture.read_bytes()
    make, form, layers = FORMS[name]
    data = make(raw, tmp_path)
    if name == "base64-urlsafe-unpadded":
        raw += b"\xfb\xff"  # two bytes whose base64 uses the URL-safe alphabet
    assert forms.detect(data) == form
    peeled = forms.peel(data)
    assert peeled.layers == layers and peeled.data == raw
    if name == "base64-urlsafe-unpadded":
        return
    p = payload.read(data)
    assert p.kind == "packet" and p.layers == layers
    assert p.value == packet.decode(raw) or _same_packet(p.value, packet.decode(raw))
    # The exact document does not depend on the form the bytes came in.
    assert p.document() == amfkit.wire.read(raw, "packet")


def _same_packet(a, b) -> bool:
    from amfkit.compare import first_difference

    return first_difference(a, b, exact=False) is None


def test_the_arrays_of_ruffle_pr_23772_are_values():
    for name, kind in (("ruffle-pr23772-ruffle.amf0", amfkit.MixedArray), ("ruffle-pr23772-flash.amf0", list)):
        data = (FIXTURES / "foreign" / name).read_bytes()
        p = payload.read(data.hex())
        assert (p.kind, p.version, p.layers) == ("value", 0, ["hex"])
        assert type(p.value) is kind and list(p.value.values() if kind is amfkit.MixedArray else p.value) == ["G2C Online"]


def test_a_form_can_be_named_and_a_layer_that_is_not_one_is_an_error():
    assert forms.unwrap(SAMPLE.hex(), "hex") == SAMPLE
    assert forms.unwrap(SAMPLE, "raw") == SAMPLE
    assert forms.unwrap(base64.b64encode(zlib.compress(SAMPLE)), "base64") == SAMPLE  # the inner zlib is found
    with pytest.raises(forms.FormError, match="not hex") as e:
        forms.unwrap(b"zz 00", "hex")
    assert e.value.form == "hex"
    with pytest.raises(forms.FormError, match="corrupt zlib data"):
        forms.unwrap(b"\x78\x9c\xff\xff\xff\xff", "zlib")
    with pytest.raises(forms.FormError, match="not a decimal byte list"):
        forms.unwrap(b"[1, 2, 300]", "list")
    with pytest.raises(ValueError, match="unknown form 'rot13'"):
        forms.unwrap(SAMPLE, "rot13")


def test_every_layer_is_capped():
    bomb = zlib.compress(bytes(50_000_000), 9)  # 48 KiB that inflate to 50 MB
    assert len(bomb) < 100_000
    with pytest.raises(forms.FormError, match="inflates to more than 1000000 bytes") as e:
        forms.unwrap(bomb, max_size=1_000_000)
    assert e.value.form == "zlib"
    gz = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n" + gzip.compress(bytes(5_000_000))
    with pytest.raises(forms.FormError, match="more than 1000000 bytes"):
        forms.unwrap(gz, max_size=1_000_000)
    big = b"HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\n\r\n" + bytes(2_000_000)
    with pytest.raises(forms.FormError, match="an HTTP body of more than 1000000 bytes"):
        forms.unwrap(big, max_size=1_000_000)
    with pytest.raises(forms.FormError, match="hex text of more than 100 bytes"):
        forms.unwrap(bytes(101).hex(), max_size=100)
    # Layers on layers stop too.
    nested = SAMPLE
    for _ in range(forms.MAX_LAYERS + 1):
        nested = zlib.compress(nested)
    with pytest.raises(forms.FormError, match="more than 8 layers"):
        forms.unwrap(nested)


def test_an_http_body_cut_short_or_encoded_unknown_ways_is_an_error():
    cut = b"POST /gateway HTTP/1.1\r\nContent-Length: 500\r\n\r\n" + SAMPLE
    with pytest.raises(forms.FormError, match="the HTTP body is cut short"):
        forms.unwrap(cut)
    br = b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\n\r\n" + SAMPLE
    with pytest.raises(forms.FormError, match="Content-Encoding 'br' is not one amfkit reads"):
        forms.unwrap(br)


def test_text_inside_a_text_form_is_not_taken_apart_again():
    # The hex of the hex text "abcd" is "61626364": one layer off gives "abcd", which is
    # hex itself, and stays text.
    assert forms.peel(b"abcd".hex()).data == b"abcd"
    assert forms.peel(b"abcd".hex()).layers == ["hex"]


@pytest.mark.parametrize(
    "data, says",
    [
        (b"<!DOCTYPE html>\n<html><body><h1>502 Bad Gateway</h1></body></html>", "this looks like an HTML page"),
        (b"<?xml version='1.0'?><cross-domain-policy/>", "this looks like a crossdomain.xml policy file"),
        (b"<?xml version='1.0'?><methodResponse/>", "this looks like an XML document"),
        (b'{"jsonrpc": "2.0", "result": 1, "id": 1}', "this looks like a JSON document"),
        (b"Internal Server Error", "this looks like text ('Internal Server Error'), and no hex, base64 or byte list"),
        (gzip.compress(b"<html><body>x</body></html>"), "this looks like gzip data holding an HTML page"),
        (b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/html\r\n\r\n<html>oops</html>", "this looks like an HTTP response whose body (text/html) is an HTML page"),
        (b"FWS\x0a\x00\x00\x00", "this looks like a Flash movie (SWF), not AMF"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "this looks like a PNG image"),
        (b"\x00\xbf\x00\x00\x00\x18TCSO\x00\x04\x00\x00\x00\x00", "this is a local shared object (.sol) file: read it with `amfkit sol`"),
        (b"\x7fELF\x02\x01", "this looks like an ELF executable"),
        (b"\xfe\xed\xfa\xce\x00", "this looks like binary data that is not AMF (it starts with fe ed fa ce 00)"),
        (b"", "empty input"),
    ],
)
def test_what_is_not_amf_is_named_in_one_line(data, says):
    assert forms.describe(data) == "not AMF: " + says
    with pytest.raises(payload.PayloadError) as e:
        payload.read(data)
    text = str(e.value)
    if data[:2] == b"\x1f\x8b" or data.startswith(b"HTTP/"):
        # payload.read takes the gzip or HTTP layer off, then names what it held.
        assert text.startswith("(after taking off ") and text.endswith("not AMF: this looks like an HTML page")
    else:
        assert text == "not AMF: " + says if data else text == "empty input"
    assert "\n" not in text


def test_a_layer_holding_what_is_not_amf_says_so_after_its_layers():
    with pytest.raises(payload.PayloadError) as e:
        payload.read(base64.b64encode(b"<html><body>no</body></html>"))
    assert str(e.value) == "(after taking off base64) not AMF: this looks like an HTML page"
    assert e.value.layers == ["base64"]


def test_amf_that_fails_to_decode_keeps_the_decoders_error():
    cut = SAMPLE[:-3]
    with pytest.raises(payload.PayloadError) as e:
        payload.read(cut.hex())
    text = str(e.value)
    assert text.startswith("(after taking off hex) cannot be read as an AMF packet, one AMF0 value, one AMF3 value or a stream of AMF0 values; as an AMF packet: ")
    assert [label for label, _ in e.value.attempts][0] == "an AMF packet"


def test_readings_can_be_forced():
    data = (FIXTURES / "foreign" / "py3amf-netconnection-amf0.bin").read_bytes()
    assert payload.read(data, packet=True).kind == "packet"
    with pytest.raises(payload.PayloadError, match="cannot be read as one AMF0 value"):
        payload.read(data, packet=False)
    value = amfkit.amf3.encode({"a": 1})
    with pytest.raises(payload.PayloadError):
        payload.read(value, packet=True)
    stream = payload.read(amfkit.amf0.Encoder().encode_all(["x", 1.0]), stream=True)
    assert (stream.kind, stream.value) == ("stream", ["x", 1.0])
    assert stream.describe() == "amf0 stream, 2 values, 13 bytes"
    assert payload.read(b"", stream=True).value == []
    with pytest.raises(payload.PayloadError, match="empty input"):
        payload.read(b"")


def test_detection_is_cheap_and_never_takes_amf_for_text():
    for fixture in FOREIGN:
        assert forms.detect(fixture.read_bytes()) == "raw"
    # A value starting with each AMF marker is raw, whatever follows.
    for marker in range(0x12):
        assert forms.detect(bytes([marker]) + b"<html>") == "raw"
