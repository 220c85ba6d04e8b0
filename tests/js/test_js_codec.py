"""The TypeScript AMF codec of js/ (the browser page's codec): its own test suite, interop
with amfkit's Python codec both ways, and the committed bundle
(python/amfkit/browser/static/amfkit-codec.js) being what the sources build to.

- `npm test` in js/ type-checks the sources and runs node's test runner over
  js/test/*.test.mjs (the shared fixtures/ vectors, limits, packet, Flex messages...).
- Node to Python: js/test/interop/encode.mjs encodes a set of values; amfkit decodes
  each and it must be the value this file expects.
- Python to node: amfkit encodes values; js/test/interop/decode.mjs decodes them and
  prints the canonical typed JSON of fixtures/README.md, which must be the notation of
  the Python values (tests/support/canonical.py).

Needs node and js/node_modules (`make js-deps` runs `npm ci` in js/).
"""

from __future__ import annotations

import array
import datetime as dt
import json
import math
import shutil
import subprocess

import pytest

import amfkit
from amfkit import amf0, amf3
from amfkit_bench import graphs
from amfkit.remoting import messages, packet

import canonical  # tests/support/canonical.py
from repo import ROOT

JS = ROOT / "js"
BUNDLE = ROOT / "python" / "amfkit" / "browser" / "static"
NODE = shutil.which("node")
NPM = shutil.which("npm")


def _need_node() -> str:
    if NODE is None:
        pytest.fail("node is not installed: the TypeScript codec's tests need node (and npm) on PATH")
    return NODE


def _need_node_modules() -> None:
    _need_node()
    if NPM is None:
        pytest.fail("npm is not installed: the TypeScript codec's tests need it (`make js-deps`)")
    if not (JS / "node_modules" / ".bin" / "tsc").exists() or not (JS / "node_modules" / "esbuild").exists():
        pytest.fail("js/node_modules is missing: run `make js-deps` (npm ci in js/) first")


def _node(script: str, *args: str, timeout: int = 120) -> str:
    r = subprocess.run(
        [_need_node(), str(JS / script), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    assert r.returncode == 0, f"node {script} failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return r.stdout


# -- the node suite --------------------------------------------------------------------


def test_npm_test_passes():
    """js/'s own suite: tsc --noEmit (strict), then node --test js/test/*.test.mjs."""
    _need_node_modules()
    r = subprocess.run([NPM, "test"], cwd=JS, capture_output=True, text=True, timeout=280)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-8000:]
    summary = {k: int(v) for k, v in (line[2:].split() for line in out.splitlines() if line.startswith(("# pass", "# fail", "# tests")))}
    assert summary["fail"] == 0 and summary["pass"] == summary["tests"] and summary["tests"] > 500, summary


def test_bundle_is_not_stale_run_make_js_build(tmp_path):
    """The committed bundle (and its source map) is byte for byte what js/src builds to
    with the pinned esbuild. If this fails: run make js-build, and commit the result."""
    _need_node_modules()
    _node("scripts/build.mjs", "--out", str(tmp_path))
    for name in ("amfkit-codec.js", "amfkit-codec.js.map"):
        built = (tmp_path / name).read_bytes()
        committed = (BUNDLE / name).read_bytes() if (BUNDLE / name).exists() else b""
        assert built == committed, f"python/amfkit/browser/static/{name} is stale: run make js-build"


# -- node to Python --------------------------------------------------------------------


@pytest.fixture(scope="module")
def from_node() -> dict:
    encoded = json.loads(_node("test/interop/encode.mjs"))
    return {name: bytes.fromhex(entry["hex"]) for name, entry in encoded.items()}


def _both(from_node: dict, name: str):
    """The AMF3 and the AMF0 encoding of one value, decoded by amfkit."""
    return amf3.decode(from_node[f"amf3/{name}"]), amf0.decode(from_node[f"amf0/{name}"])


def _same_type_and_value(got, want):
    assert type(got) is type(want), (got, want)
    if isinstance(want, float) and math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == want
        if isinstance(want, float):
            assert math.copysign(1, got) == math.copysign(1, want)


def test_node_strings(from_node):
    want = ["", "héllo wörld", "日本語", "😀 emoji", "é" * 40000]
    for got in _both(from_node, "strings"):
        assert got == want
    # AMF0: a string past 65535 UTF-8 bytes is a long string (0x0C).
    assert b"\x0c\x00\x01\x38\x80" in from_node["amf0/strings"]


def test_node_integers_at_the_29_bit_limits(from_node):
    v3, v0 = _both(from_node, "ints")
    want3 = [0, 1, -1, 2**28 - 1, -(2**28), float(2**28), float(-(2**28) - 1), float(2**31), float(2**53)]
    for got, want in zip(v3, want3):
        _same_type_and_value(got, want)
    assert v0 == [0, 1, -1, 2**28 - 1, -(2**28), 2**28, -(2**28) - 1, 2**31, 2**53]


def test_node_doubles(from_node):
    v3, v0 = _both(from_node, "doubles")
    want = [1.5, -0.0, 0.1, 1e300, math.nan, math.inf, -math.inf, 5e-324, 1.0]
    for got, w in zip(v3, want):
        _same_type_and_value(got, w)
    assert math.copysign(1, v0[1]) == -1 and math.isnan(v0[4]) and v0[8] == 1


def test_node_dates(from_node):
    want = [dt.datetime(1970, 1, 1), dt.datetime(2009, 2, 13, 23, 31, 30, 123000), dt.datetime(1900, 1, 1)]
    for got in _both(from_node, "dates"):
        assert got == want


def test_node_arrays_objects_and_scalars(from_node):
    for got in _both(from_node, "arrays"):
        assert got == [[1, [2, [3]]], [], [None, amfkit.Undefined, True, False]]
        assert got[2][1] is amfkit.Undefined
    for got in _both(from_node, "objects"):
        assert got == {"a": 1, "b": {"c": "d"}, "key with space": None, "ü": True}
        assert list(got) == ["a", "b", "key with space", "ü"]


def test_node_typed_objects(from_node):
    v3, v0 = _both(from_node, "typed")
    for point, sealed in (v3, v0):
        assert isinstance(point, amfkit.TypedObject) and point.alias == "org.example.Point"
        assert point == amfkit.TypedObject("org.example.Point", {"x": 1, "y": 2.5})
        assert sealed == amfkit.TypedObject("org.example.Sealed", {"id": 7, "tag": "t"})
    assert v3[1].sealed == ("id",) and v3[1].dynamic is True
    # The same bytes as amfkit writes for the same objects.
    assert from_node["amf3/typed"] == amf3.encode(v3)


def test_node_bytes_xml_and_flex_wrappers(from_node):
    for got in _both(from_node, "bytes"):
        assert got == b"\x00\x01\xff"
    v3, v0 = _both(from_node, "xml")
    assert [type(x) for x in v3] == [amfkit.XML, amfkit.XMLDocument] and v3 == ["<a/>", "<b>t</b>"]
    # AMF0 has only the XML document type.
    assert [type(x) for x in v0] == [amfkit.XMLDocument, amfkit.XMLDocument] and v0 == ["<a/>", "<b>t</b>"]
    for collection, proxy in _both(from_node, "flex"):
        assert type(collection) is amfkit.ArrayCollection and collection == [1, 2]
        assert type(proxy) is amfkit.ObjectProxy and proxy == {"a": 1}


def test_node_shared_references_and_cycles(from_node):
    for got in _both(from_node, "shared"):
        assert got["a"] is got["b"] and got["a"] == {"name": "child"}
        assert got["cycle"]["self"] is got["cycle"]
        assert got["list"][0] == "x" and got["list"][1] is got["list"]


def test_node_mixed_arrays_dictionaries_vectors(from_node):
    v3, v0 = _both(from_node, "mixed")
    assert type(v3) is amfkit.MixedArray and v3 == {"k": 1, 0: "x"}
    assert type(v0) is amfkit.MixedArray and v0 == {0: "x", "k": 1}
    d3, d0 = _both(from_node, "dictionary")
    for d in (d3, d0):
        assert type(d) is amfkit.Dictionary and d == {1: "one", "s": 2} and d.weak_keys is True
    ints, uints, numbers, objects = amf3.decode(from_node["amf3/vectors"])
    assert ints == array.array("i", [1, -1]) and uints == array.array("I", [2**32 - 1])
    assert numbers.tolist() == [1.5, -0.0] and math.copysign(1, numbers[1]) == -1
    assert isinstance(objects, amfkit.ObjectVector) and objects == ["a"]
    assert objects.type_name == "String" and objects.fixed is True


def test_node_flex_messages(from_node):
    m = amf3.decode(from_node["amf3/message"])
    assert type(m) is messages.RemotingMessage
    assert (m.destination, m.operation, m.body) == ("EchoService", "echo", ["hi", 1, 2.5])
    assert m.headers == {"DSId": "nil", "DSEndpoint": "amfkit-amf"}
    assert m.messageId == "6D5A8C36-0B3B-4C5E-9C59-2B3A9E3C3F10" and m.timestamp == 1234567890123
    assert m.timeToLive == 0 and m.clientId is None and m.source is None
    ack = amf3.decode(from_node["amf3/small-ack"])
    assert isinstance(ack, messages.AcknowledgeMessage) and ack.small is True
    assert (ack.body, ack.correlationId, ack.clientId, ack.messageId, ack.timestamp) == ("ok", "C", "K", "M", 1)


def test_node_packets(from_node):
    p = packet.decode(from_node["packet/v3"])
    assert p.version == 3
    assert p.headers == [packet.Header("Credentials", {"userid": "ada", "password": "s3cret"}, must_understand=True)]
    assert p.bodies[0] == packet.Body("EchoService.echo", "/1", ["hi", 1])
    flex = p.bodies[1]
    assert (flex.target, flex.response) == ("null", "/2")
    assert type(flex.value[0]) is messages.RemotingMessage and flex.value[0].operation == "echo"
    p0 = packet.decode(from_node["packet/v0"])
    assert p0.version == 0 and p0.bodies[0].value == [dt.datetime(1970, 1, 1), {"a": 1}]


def test_node_writes_the_bench_graph_as_amfkit_does(from_node):
    """The AMFBench complex graph built in JS (js/bench/graphs.mjs) and in Python
    (amfkit_bench/graphs.py): the same bytes from both writers, string, traits and object
    references alike."""
    amfkit.register_class(graphs.Node, "org.amfkit.bench.Node")
    try:
        nodes, _ = graphs.build_complex(50)
        assert from_node["amf3/complex-50"] == amf3.encode(nodes)
        assert from_node["amf0/complex-50"] == amf0.encode(nodes)
        back = amf3.decode(from_node["amf3/complex-50"])
        assert back[7].child is back[7].again and back[7].text == nodes[7].text
    finally:
        amfkit.unregister_class(graphs.Node)


# -- Python to node --------------------------------------------------------------------


def _python_values() -> dict:
    shared = {"name": "child"}
    cycle: dict = {"name": "cycle"}
    cycle["self"] = cycle
    return {
        "scalars": [None, amfkit.Undefined, True, False, 0, 2**28 - 1, -(2**28), float(2**28), 1.5, -0.0, 1.0],
        "strings": ["", "héllo", "日本語", "😀", "z" * 70000],
        "special-doubles": [math.nan, math.inf, -math.inf, 5e-324],
        "dates": [dt.datetime(2009, 2, 13, 23, 31, 30, 123000), dt.datetime(1900, 1, 1), amfkit.Date(0.5)],
        "containers": {"list": [1, [2]], "shared": [shared, shared], "cycle": cycle, "empty": {}},
        "typed": [
            amfkit.TypedObject("org.example.Point", {"x": 1, "y": 2}, sealed=("x", "y"), dynamic=False),
            amfkit.TypedObject("org.example.Point", {"x": 3, "y": 4}, sealed=("x", "y"), dynamic=False),
            amfkit.TypedObject("Item", {"id": 7, "tag": "t"}, sealed=("id",)),
        ],
        "mixed": amfkit.MixedArray({0: "a", 1: "b", "k": True}),
        "dictionary": amfkit.Dictionary({1: "x", "s": 2}, weak_keys=True),
        "vectors": [
            array.array("i", [1, -1, -(2**31)]),
            array.array("I", [0, 2**32 - 1]),
            amfkit.FixedVector("d", [1.5, -0.0]),
            amfkit.ObjectVector(["a", "b"], type_name="String", fixed=True),
        ],
        "binary": [b"\x00\x01\xff", amfkit.XML("<a/>"), amfkit.XMLDocument("not <xml")],
        "flex": [amfkit.ArrayCollection([1, "x"]), amfkit.ObjectProxy({"a": 1})],
    }


def test_python_values_decode_in_node(tmp_path):
    values = _python_values()
    payload = {}
    expected = {}
    for name, value in values.items():
        for version, codec in ((3, amf3), (0, amf0)):
            data = codec.encode(value)
            payload[f"amf{version}/{name}"] = {"version": version, "hex": data.hex()}
            # What amfkit itself reads back from those bytes (in AMF0 an XML value comes
            # back an XML document: AMF0 has no other XML type).
            tree = canonical.to_canonical(codec.decode(data), version)
            expected[f"amf{version}/{name}"] = canonical.amf0_level(tree) if version == 0 else tree
            if version == 3:
                assert tree == canonical.to_canonical(value, 3), name
    (tmp_path / "in.json").write_text(json.dumps(payload))
    got = json.loads(_node("test/interop/decode.mjs", str(tmp_path / "in.json")))
    for name, want in expected.items():
        tree = got[name]
        if name.startswith("amf0/"):
            tree = canonical.amf0_level(tree)  # values after the AVM+ switch show as AMF3
        assert tree == want, name


def _flex_fields(m) -> dict:
    return {k: getattr(m, k) for k in type(m)._fields}


def test_python_flex_messages_and_packets_decode_in_node(tmp_path):
    ack = messages.AcknowledgeMessage(body={"result": [1, 2]}, correlationId="C-1", clientId="K-1", headers={"DSId": "K-1"})
    error = messages.ErrorMessage(correlationId="C-2", faultCode="Server.Processing", faultString="boom", faultDetail="")
    small = messages.AcknowledgeMessageExt(body="ok", correlationId="C-3", clientId="K-1")
    ping = messages.CommandMessageExt(operation=messages.Operation.CLIENT_PING, headers={"DSMessagingVersion": 1})
    envelope = packet.Envelope(
        3,
        headers=[packet.Header("AppendToGatewayUrl", "?amfkit_session=abc", must_understand=False)],
        bodies=[packet.Body("/1/onResult", "", ack), packet.Body("/2/onStatus", "", error), packet.Body("/3/onResult", "", [small])],
    )
    payload = {
        "ack": {"version": 3, "hex": amf3.encode(ack).hex()},
        "error": {"version": 3, "hex": amf3.encode(error).hex()},
        "small": {"version": 3, "hex": amf3.encode(small).hex()},
        "ping": {"version": 3, "hex": amf3.encode(ping).hex()},
        "packet": {"version": "packet", "hex": packet.encode(envelope).hex()},
    }
    (tmp_path / "in.json").write_text(json.dumps(payload))
    got = json.loads(_node("test/interop/decode.mjs", str(tmp_path / "in.json")))

    def check(seen, message, alias, is_small):
        assert seen["message"] == "flex.messaging.messages." + alias, seen
        assert seen["small"] is is_small
        # At the level where ints and numbers are one: a Python int past 2**28 (the
        # timestamp) is a double on the wire.
        want = {k: canonical.amf0_level(canonical.to_canonical(v, 3)) for k, v in _flex_fields(message).items()}
        assert canonical.amf0_level(seen["fields"]) == want, alias

    check(got["ack"], ack, "AcknowledgeMessage", False)
    check(got["error"], error, "ErrorMessage", False)
    assert set(got["error"]["fields"]) == set(messages.ErrorMessage._fields)
    check(got["small"], small, "AcknowledgeMessage", True)
    check(got["ping"], ping, "CommandMessage", True)
    p = got["packet"]
    assert p["version"] == 3
    assert p["headers"] == [
        {"name": "AppendToGatewayUrl", "mustUnderstand": False, "value": {"t": "string", "v": "?amfkit_session=abc"}}
    ]
    assert [(b["target"], b["response"]) for b in p["bodies"]] == [("/1/onResult", ""), ("/2/onStatus", ""), ("/3/onResult", "")]
    check(p["bodies"][0]["value"], ack, "AcknowledgeMessage", False)
    check(p["bodies"][1]["value"], error, "ErrorMessage", False)
    check(p["bodies"][2]["value"][0], small, "AcknowledgeMessage", True)
