"""The Python-layer fuzz targets: one function per entry point that takes arbitrary bytes
and checks what amfkit promises for them.

Used twice: `tests/codec/test_fuzz_python.py` feeds them mutated fixtures through hypothesis
(a short run in `make test`), and `crates/fuzz/atheris_fuzz.py` drives them with atheris for
as long as `make fuzz-python` says. The Rust targets in crates/fuzz cover the core with
its own value model; these cover what only the extension and the Python layer do: the
Python object builder and the class registry, the packet objects, and the gateway's
ASGI application with every content type it answers.

The promises:
- a decoder returns a value or raises `amfkit.DecodeError`, nothing else, and the error's
  text is bounded (`MAX_ERROR_TEXT`) whatever the input;
- whatever decodes re-encodes, and decoding that gives the same graph (values, types and
  shared references) and the same bytes again;
- bytes in any input form (`amfkit.payload.read`) give a payload or one bounded line
  (`PayloadError`, `FormError`), nothing else, and never more than the inflation cap;
  what reads has an exact document that writes bytes that read back to the same
  document (a fixed point from the first writing on);
- the gateway answers every body with 200 (a well-formed answer), 400, 413 or 415,
  never a 500 and never an exception out of the ASGI call (204 for a JSON-RPC
  notification), and no answer is much larger than its request (`answer_bound`).
"""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

import amfkit
from amfkit import amf0, amf3
from amfkit.remoting import Gateway, packet

from gateway_util import asgi_post
from graphs import assert_isomorphic
from repo import FIXTURES

#: The longest text of a DecodeError (SECURITY.md: a reason of at most 1,024
#: characters, a path of at most 16 segments of at most 64 characters).
MAX_ERROR_TEXT = 3 * 1024


def refused(e: amfkit.DecodeError) -> None:
    """A decoder's refusal: bounded text, an offset."""
    assert len(str(e)) <= MAX_ERROR_TEXT, f"an error text of {len(str(e))} characters"
    assert e.offset is not None


def answer_bound(request: bytes) -> int:
    """The largest answer the gateway may give to `request`: an echo of it plus the
    answer's own framing, or a bounded error."""
    return max(8 * 1024, 2 * len(request))


class FuzzPoint:
    """A registered class, so decoded input can reach the registry's paths."""

    def __init__(self) -> None:  # pragma: no cover - decoding never calls it
        raise AssertionError("decoding called __init__")


class FuzzEcho:
    def echo(self, value: Any) -> Any:
        return value


def setup() -> None:
    """Register what the targets rely on (idempotent)."""
    if "fuzz.Point" not in amfkit.registered_classes():
        amfkit.register_class(FuzzPoint, "fuzz.Point")


# --- seeds -------------------------------------------------------------------------


def seeds() -> dict[str, list[bytes]]:
    """Seed inputs per target, from fixtures/: the vectors (by AMF version), packets built
    around them, and the .sol files."""
    vectors = json.loads((FIXTURES / "vectors.json").read_text())
    by_version: dict[int, list[bytes]] = {0: [], 3: []}
    for v in vectors:
        by_version[v["version"]].append((FIXTURES / v["file"]).read_bytes())
    by_version[3] += _flex_messages()
    packets = [_packet(0, body) for body in by_version[0][:40]]
    packets += [_packet(3, b"\x11" + body) for body in by_version[3][:40]]
    packets += [_flex_packet(body) for body in _flex_messages()]
    sols = [p.read_bytes() for p in sorted((FIXTURES / "sol").glob("*.sol"))]
    nested = [bytes([i % len(NESTED_CODECS)]) + _wrapped(NESTED_CODECS[i % len(NESTED_CODECS)], body)
              for i, body in enumerate(by_version[3][:30] + by_version[0][:30])]
    foreign = [p.read_bytes() for p in sorted((FIXTURES / "foreign").glob("*")) if p.suffix in (".bin", ".amf0")]
    found = [bytes([i % 2]) + _form(i, body) for i, body in enumerate(foreign + packets[:20] + by_version[3][:20])]
    return {
        "amf0": by_version[0],
        "amf3": by_version[3],
        "packet": packets,
        "sol": sols,
        "nested": nested,
        "forms": found,
    }


def _form(i: int, body: bytes) -> bytes:
    """`body` in one of the input forms `amfkit decode` reads, by `i`."""
    import base64
    import gzip
    import zlib

    kind = i % 6
    if kind == 1:
        return body.hex(" ").encode()
    if kind == 2:
        return base64.b64encode(body)
    if kind == 3:
        return zlib.compress(body)
    if kind == 4:
        return b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n" + gzip.compress(body, mtime=0)
    if kind == 5:
        return str(list(body)).encode()
    return body


def _wrapped(codec: str, body: bytes) -> bytes:
    """`body` (AMF bytes) as the nested data of a save member that `codec` reads."""
    import base64
    import gzip
    import zlib

    if codec == "zlib":
        return zlib.compress(body, 9)
    if codec == "deflate":
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        return c.compress(body) + c.flush()
    if codec == "gzip":
        return gzip.compress(body, mtime=0)
    if codec == "base64":
        return base64.b64encode(body)
    return body


def _flex_messages() -> list[bytes]:
    """Flex messages in their full and small forms (DSK, DSA, DSC), as AMF3 values."""
    from amfkit.remoting import messages as m

    return [
        amf3.encode(m.RemotingMessage(destination="EchoService", operation="echo", body=[{"a": 1}], headers={"DSId": "nil"})),
        amf3.encode(m.CommandMessage(operation=5, headers={"DSMessagingVersion": 1, "DSId": "nil"})),
        amf3.encode(m.CommandMessageExt(operation=2, clientId="abc", headers={"DSId": "0123456789"})),
        amf3.encode(m.AcknowledgeMessageExt(body=[1, "x"], correlationId="c", headers={"DSId": "d"})),
        amf3.encode(m.AsyncMessageExt(body={"k": [1.5]}, destination="chat", correlationId="c")),
        amf3.encode(m.ErrorMessage(faultCode="F", faultString="s", rootCause={"r": 1})),
    ]


def _flex_packet(message: bytes) -> bytes:
    """A Flex body: target "null", response "/1", an AMF0 strict array holding the message."""
    args = b"\x0a\x00\x00\x00\x01\x11" + message
    return struct.pack(">HHH", 3, 0, 1) + _utf("null") + _utf("/1") + struct.pack(">I", len(args)) + args


def _utf(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def _packet(version: int, value: bytes) -> bytes:
    """One body calling EchoService.echo with `value` as its argument array's one item."""
    args = b"\x0a\x00\x00\x00\x01" + value
    return (
        struct.pack(">HH", version, 0)
        + struct.pack(">H", 1)
        + _utf("EchoService.echo")
        + _utf("/1")
        + struct.pack(">I", len(args))
        + args
    )


# --- the codec ---------------------------------------------------------------------


def codec(data: bytes, version: int) -> None:
    """One value and a stream of values, decoded, re-encoded and decoded again."""
    mod = amf0 if version == 0 else amf3
    try:
        values = [mod.decode(data)]
    except amfkit.DecodeError as e:
        refused(e)
        values = None
    if values is not None:
        _round_trip(mod, values[0], version)
    try:
        stream = mod.Decoder().decode_all(data)
    except amfkit.DecodeError as e:
        refused(e)
        return
    encoder = mod.Encoder()
    first = encoder.encode_all(stream)
    again = mod.Decoder().decode_all(first)
    assert_isomorphic(stream, again, amf0=version == 0)
    assert mod.Encoder().encode_all(again) == first, "a stream's second encoding differs"


def _round_trip(mod: Any, value: Any, version: int) -> None:
    first = mod.encode(value)
    again = mod.decode(first)
    assert_isomorphic(value, again, amf0=version == 0)
    assert mod.encode(again) == first, "second encoding differs"


def amf0_target(data: bytes) -> None:
    codec(data, 0)


def amf3_target(data: bytes) -> None:
    codec(data, 3)


# --- packets -----------------------------------------------------------------------


def packet_target(data: bytes) -> None:
    try:
        env = packet.decode(data)
    except amfkit.DecodeError as e:
        refused(e)
        return
    first = packet.encode(env)
    again = packet.decode(first)
    assert again.version == env.version
    assert [(h.name, h.must_understand) for h in again.headers] == [(h.name, h.must_understand) for h in env.headers]
    assert [(b.target, b.response) for b in again.bodies] == [(b.target, b.response) for b in env.bodies]
    # Packet headers and bodies are AMF0 values (AMF3 ones behind the AVM+ switch), and a
    # version-3 packet writes them as AMF3: the first round trip may normalise what only
    # AMF0 holds (assert_isomorphic's amf0 mode); from there on the bytes are a fixed point.
    assert_isomorphic(_values(env), _values(again), amf0=True)
    second = packet.encode(again)
    third = packet.decode(second)
    assert_isomorphic(_values(again), _values(third))
    assert packet.encode(third) == second, "a packet's encoding is not a fixed point"


def _values(env: packet.Envelope) -> list[Any]:
    return [h.value for h in env.headers] + [b.value for b in env.bodies]


# --- .sol files ----------------------------------------------------------------------


def sol_target(data: bytes) -> None:
    from amfkit import sol

    try:
        shared = sol.loads(data)
    except amfkit.DecodeError as e:
        refused(e)
        return
    first = sol.dumps(shared)
    again = sol.loads(first)
    assert (again.name, again.amf_version) == (shared.name, shared.amf_version)
    assert_isomorphic(dict(shared), dict(again))
    assert sol.dumps(again) == first, "a .sol file's second encoding differs"


# --- nested data in a save's members (amfkit.nested) ------------------------------------

NESTED_CODECS = ("zlib", "deflate", "gzip", "base64", "amf3", "amf0")


def nested_target(data: bytes) -> None:
    """The first byte picks the step (`NESTED_CODECS`), the rest is the member's bytes: a
    step gives the content or raises `LayerError` (one bounded line), inflation stops at
    its cap, and the content written back unchanged is the member's own bytes (AMF:
    the same graph, and a stable second encoding)."""
    from amfkit import nested

    if not data:
        return
    codec = NESTED_CODECS[data[0] % len(NESTED_CODECS)]
    value = data[1:]
    cap = 1 << 20
    try:
        content, layer = nested.open_layer(value, codec, max_size=cap)
    except nested.LayerError as e:
        assert len(str(e)) <= MAX_ERROR_TEXT and "\n" not in str(e)
        return
    if codec in ("amf3", "amf0"):
        again = layer.encode(content)
        second, layer2 = nested.open_layer(again, codec)
        assert_isomorphic(content, second)
        assert layer2.encode(second) == again, "nested AMF's second encoding differs"
        return
    assert len(content) <= cap
    assert layer.encode(content) == value, f"|{codec} did not give back the member's bytes"


# --- bytes in any form (amfkit.payload, amfkit.forms, amfkit.wire) ----------------------

FORMS_CAP = 1 << 20


def forms_target(data: bytes) -> None:
    """The first byte's low bit asks for opaque bodies; the rest is read as `amfkit
    decode` reads a file."""
    from amfkit import forms, payload, wire

    if not data:
        return
    lenient = {"unknown_externalizable": "opaque" if data[0] & 1 else "error"}
    try:
        p = payload.read(data[1:], max_inflate=FORMS_CAP, **lenient)
    except (payload.PayloadError, forms.FormError) as e:
        text = str(e)
        assert len(text) <= MAX_ERROR_TEXT and "\n" not in text, text[:300]
        return
    assert len(p.data) <= FORMS_CAP or not p.layers
    stream = p.kind == "stream"
    doc = p.document()
    written = wire.write(doc, p.form, stream=stream)
    again = wire.read(written, p.form, stream=stream, **lenient)
    assert wire.write(again, p.form, stream=stream) == written, "the exact document is not a fixed point"


# --- the gateway ---------------------------------------------------------------------

_GATEWAY: Gateway | None = None
_LOOP: asyncio.AbstractEventLoop | None = None

CONTENT_TYPES = ("application/x-amf", "application/json", "text/xml", "")
# 204: a JSON-RPC notification (a call without an id) has no answer.
ANSWERS = {200, 204, 400, 413, 415}


def _gateway() -> tuple[Gateway, asyncio.AbstractEventLoop]:
    global _GATEWAY, _LOOP
    if _GATEWAY is None or _LOOP is None:
        _GATEWAY = Gateway({"EchoService": FuzzEcho()}, max_body_size=1 << 20)
        _LOOP = asyncio.new_event_loop()
    return _GATEWAY, _LOOP


def post(body: bytes, content_type: str, *, encoding: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """POST `body` to the gateway's ASGI application in this process."""
    gw, loop = _gateway()
    extra = [("content-encoding", encoding)] if encoding else []
    return asgi_post(gw, body, content_type or None, extra_headers=extra, loop=loop)


def gateway_target(data: bytes) -> None:
    """The first byte picks the content type; the rest is the body."""
    if not data:
        return
    content_type = CONTENT_TYPES[data[0] % len(CONTENT_TYPES)]
    status, headers, out = post(data[1:], content_type)
    assert status in ANSWERS, (status, out[:300])
    assert len(out) <= answer_bound(data), f"a {len(out)}-byte answer to {len(data)} bytes"
    if status == 200 and headers["content-type"] == "application/x-amf":
        packet.decode(out)  # a well-formed answer
    elif status == 200 and headers["content-type"] == "application/json":
        json.loads(out)


TARGETS = {
    "amf0": amf0_target,
    "amf3": amf3_target,
    "packet": packet_target,
    "gateway": gateway_target,
    "sol": sol_target,
    "nested": nested_target,
    "forms": forms_target,
}
