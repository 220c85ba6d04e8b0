"""Server-Timing: the gateway's per-phase timings of a POST (decoding, each call,
encoding, gzip, total), as a response header and a debug log line (docs/gateway.md,
"Server-Timing"). Off by default; on with `debug=True` or `server_timing=True`."""

from __future__ import annotations

import gzip
import json
import logging
import re
from typing import Any

import httpx
import pytest

from amfkit.remoting import messages as m
from amfkit.remoting import packet
from amfkit.remoting.gateway import Gateway
from amfkit.remoting.request import MAX_TIMED_CALLS, MAX_TIMING_DESC

from gateway_util import EchoService, asgi_post, call, flex_shape, gateway, raw_packet, request

# --- the header's syntax (W3C Server Timing, over RFC 9110's tokens and quoted strings) ---

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = r'"(?:[\t !#-\[\]-~]|\\[\t -~])*"'
_OWS = r"[ \t]*"
_PARAM = re.compile(rf"{_OWS};{_OWS}({_TOKEN}){_OWS}={_OWS}({_TOKEN}|{_QUOTED})")
_NAME = re.compile(rf"{_OWS}({_TOKEN})")
_COMMA = re.compile(rf"{_OWS},")
_DUR = re.compile(r"[0-9]+\.[0-9]{3}")


def parse(value: str) -> list[tuple[str, dict[str, str]]]:
    """`Server-Timing: value` as (metric, {param: value}) in order; an AssertionError
    when it is not the syntax (quoted values unquoted)."""
    metrics: list[tuple[str, dict[str, str]]] = []
    pos = 0
    while True:
        match = _NAME.match(value, pos)
        assert match, f"no metric name at {pos}: {value!r}"
        name, pos = match.group(1), match.end()
        params: dict[str, str] = {}
        while (p := _PARAM.match(value, pos)) is not None:
            raw = p.group(2)
            params[p.group(1)] = re.sub(r"\\(.)", r"\1", raw[1:-1]) if raw.startswith('"') else raw
            pos = p.end()
        metrics.append((name, params))
        comma = _COMMA.match(value, pos)
        if comma is None:
            assert value[pos:].strip(" \t") == "", f"trailing text {value[pos:]!r}"
            return metrics
        pos = comma.end()


def timings(headers: dict[str, str]) -> list[tuple[str, dict[str, str]]]:
    """The parsed Server-Timing of a response, checked: every metric has a duration
    (milliseconds, 3 decimals, non-negative), `total` comes last and is at least the
    sum of the phases (the rounding of each aside)."""
    assert "server-timing" in headers, headers
    metrics = parse(headers["server-timing"])
    for name, params in metrics:
        assert _DUR.fullmatch(params.get("dur", "")), (name, params)
        assert float(params["dur"]) >= 0
    names = [n for n, _ in metrics]
    assert names[-1] == "total" and names.count("total") == 1, names
    phases = sum(float(p["dur"]) for n, p in metrics[:-1])
    assert float(metrics[-1][1]["dur"]) + 0.0005 * len(metrics) >= phases, metrics
    return metrics


def names(metrics: list[tuple[str, dict[str, str]]]) -> list[str]:
    return [n for n, _ in metrics]


def calls(metrics: list[tuple[str, dict[str, str]]]) -> list[str]:
    return [p["desc"] for n, p in metrics if n == "call"]


def test_the_parser() -> None:
    assert parse('decode;dur=0.100, call;desc="A.b";dur=1.000,total;dur=2.500') == [
        ("decode", {"dur": "0.100"}),
        ("call", {"desc": "A.b", "dur": "1.000"}),
        ("total", {"dur": "2.500"}),
    ]
    assert parse('x ; desc="a\\"b, c;d" ; dur=1') == [("x", {"desc": 'a"b, c;d', "dur": "1"})]
    for bad in ('call;desc="open', "call;desc=a b", "a,,b", 'call;desc="\r\n"', ""):
        with pytest.raises(AssertionError):
            parse(bad)


# --- the bodies sent -------------------------------------------------------------------

BATCH = request(3, [("EchoService.echo", "/1", ["hi"]), ("EchoService.fail", "/2", ["boom"]), ("EchoService.add", "/3", [1, 2])])
JSON_BATCH = json.dumps(
    [
        {"jsonrpc": "2.0", "method": "EchoService.echo", "params": ["hi"], "id": 1},
        {"jsonrpc": "2.0", "method": "EchoService.fail", "params": ["boom"], "id": 2},
        {"jsonrpc": "2.0", "method": "EchoService.add", "params": [1, 2], "id": 3},
    ]
).encode()
XML_CALL = b"<methodCall><methodName>EchoService.add</methodName><params><param><value><int>1</int></value></param><param><value><int>2</int></value></param></params></methodCall>"
XML_MULTI = (
    b"<methodCall><methodName>system.multicall</methodName><params><param><value><array><data>"
    b"<value><struct><member><name>methodName</name><value>EchoService.echo</value></member>"
    b"<member><name>params</name><value><array><data><value>hi</value></data></array></value></member></struct></value>"
    b"<value><struct><member><name>methodName</name><value>EchoService.fail</value></member>"
    b"<member><name>params</name><value><array><data><value>boom</value></data></array></value></member></struct></value>"
    b"</data></array></value></param></params></methodCall>"
)
# A target crafted to break out of the header (or a naive parser of it).
EVIL = 'Echo"Service\\;dur=9,evil;desc="x"\r\nSet-Cookie: a=b\x00\x7f\u2028é.echo'


def _flex(*args: Any, operation: str = "echo", destination: str = "EchoService") -> bytes:
    msg = m.RemotingMessage(destination=destination, operation=operation, body=list(args), headers={"DSId": "nil"}, messageId="m-1")
    return raw_packet(3, [("null", "/1", flex_shape(msg))])


# --- on and off ------------------------------------------------------------------------


def test_the_decision() -> None:
    assert Gateway({}).server_timing is False
    assert Gateway({}, debug=True).server_timing is True
    assert Gateway({}, server_timing=True).server_timing is True
    assert Gateway({}, debug=True, server_timing=False).server_timing is False


@pytest.mark.parametrize("options", [{}, {"debug": False}, {"debug": True, "server_timing": False}])
def test_off_no_header(options: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    gw = gateway(**options)
    caplog.set_level(logging.DEBUG, logger="amfkit.gateway")
    plain = request(3, [("EchoService.echo", "/1", ["hi"])])
    answers = [
        asgi_post(gw, plain),  # the short ASGI path
        asgi_post(gw, BATCH, extra_headers=[("accept-encoding", "gzip")]),
        asgi_post(gw, _flex("x")),
        asgi_post(gw, JSON_BATCH, "application/json"),
        asgi_post(gw, XML_CALL, "text/xml"),
        asgi_post(gw, b"\x00\x03garbage"),  # 400
        call(gw, BATCH),  # respond
    ]
    for status, headers, _ in answers:
        assert "server-timing" not in headers, (status, headers)
    assert not [r for r in caplog.records if "timings" in r.getMessage()]


ON = [{"debug": True}, {"server_timing": True}]


@pytest.mark.parametrize("options", ON)
def test_amf_batch(options: dict[str, Any]) -> None:
    status, headers, out = asgi_post(gateway(**options), BATCH)
    assert status == 200
    bodies = packet.decode(out).bodies
    assert [b.target for b in bodies] == ["/1/onResult", "/2/onStatus", "/3/onResult"]
    assert bodies[0].value == "hi" and bodies[2].value == 3
    metrics = timings(headers)
    assert names(metrics) == ["decode", "call", "call", "call", "encode", "total"]
    assert calls(metrics) == ["EchoService.echo", "EchoService.fail", "EchoService.add"]


@pytest.mark.parametrize("options", ON)
def test_amf_plain_call_on_the_short_path(options: dict[str, Any]) -> None:
    """A request the short ASGI path takes when timings are off."""
    for version in (0, 3):
        status, headers, out = asgi_post(gateway(**options), request(version, [("EchoService.echo", "/1", ["hi"])]))
        assert status == 200 and packet.decode(out).bodies[0].value == "hi"
        assert calls(timings(headers)) == ["EchoService.echo"]


@pytest.mark.parametrize("options", ON)
def test_flex_remoting_message(options: dict[str, Any]) -> None:
    status, headers, out = asgi_post(gateway(**options), _flex("hi"))
    assert status == 200
    ack = packet.decode(out).bodies[0].value
    assert isinstance(ack, m.AcknowledgeMessage) and ack.body == "hi"
    metrics = timings(headers)
    assert names(metrics) == ["decode", "call", "encode", "total"]
    assert calls(metrics) == ["EchoService.echo"]


@pytest.mark.parametrize("options", ON)
def test_jsonrpc_batch(options: dict[str, Any]) -> None:
    status, headers, out = asgi_post(gateway(**options), JSON_BATCH, "application/json")
    assert status == 200
    replies = json.loads(out)
    assert replies[0]["result"] == "hi" and "error" in replies[1] and replies[2]["result"] == 3
    metrics = timings(headers)
    assert names(metrics) == ["decode", "call", "call", "call", "encode", "total"]
    assert calls(metrics) == ["EchoService.echo", "EchoService.fail", "EchoService.add"]


@pytest.mark.parametrize("options", ON)
def test_xmlrpc(options: dict[str, Any]) -> None:
    gw = gateway(**options)
    status, headers, out = asgi_post(gw, XML_CALL, "text/xml")
    assert status == 200 and b"<int>3</int>" in out
    metrics = timings(headers)
    assert names(metrics) == ["decode", "call", "encode", "total"]
    assert calls(metrics) == ["EchoService.add"]
    status, headers, out = asgi_post(gw, XML_MULTI, "text/xml")
    assert status == 200 and b">hi<" in out and b"faultCode" in out
    assert calls(timings(headers)) == ["EchoService.echo", "EchoService.fail"]


def test_wsgi_and_respond() -> None:
    """The general core answers the same way (the WSGI adapter and `respond`)."""
    status, headers, _ = call(gateway(server_timing=True), BATCH)
    assert status == 200 and len(calls(timings(headers))) == 3


def test_gzip_only_when_compressed() -> None:
    gw = gateway(server_timing=True, gzip_threshold=1024)
    big = request(0, [("EchoService.big", "/1", [200])])
    status, headers, out = asgi_post(gw, big, extra_headers=[("accept-encoding", "gzip")])
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert packet.decode(gzip.decompress(out)).bodies[0].value.startswith("tile,")
    assert names(timings(headers)) == ["decode", "call", "encode", "gzip", "total"]
    for compressed_not in (
        asgi_post(gw, big),  # not accepted
        asgi_post(gw, request(0, [("EchoService.echo", "/1", ["small"])]), extra_headers=[("accept-encoding", "gzip")]),
    ):
        assert "content-encoding" not in compressed_not[1]
        assert "gzip" not in names(timings(compressed_not[1]))
    big_json = json.dumps({"jsonrpc": "2.0", "method": "EchoService.big", "params": [200], "id": 1}).encode()
    status, headers, _ = asgi_post(gw, big_json, "application/json", extra_headers=[("accept-encoding", "gzip")])
    assert headers["content-encoding"] == "gzip" and names(timings(headers)) == ["decode", "call", "encode", "gzip", "total"]


def _safe(desc: str) -> None:
    assert re.fullmatch(r"[A-Za-z0-9 _.:/@()<>'+-]*(\.\.\.)?", desc), desc
    assert len(desc) <= MAX_TIMING_DESC + 3


def test_desc_is_never_raw_input() -> None:
    gw = gateway(server_timing=True)
    long_name = "S" * 5000 + ".m"
    answers = [
        asgi_post(gw, request(3, [(EVIL, "/1", []), (long_name, "/2", [])])),
        asgi_post(gw, _flex(destination=EVIL, operation='op"\r\n;,')),
        asgi_post(gw, json.dumps([{"jsonrpc": "2.0", "method": EVIL, "id": 1}, {"jsonrpc": "2.0", "method": long_name, "id": 2}]).encode(), "application/json"),
        asgi_post(gw, b"<methodCall><methodName>" + EVIL.replace("\x00", "").replace("\x7f", "").encode().replace(b"\r", b"&#13;") + b"</methodName></methodCall>", "text/xml"),
    ]
    for status, headers, _ in answers:
        assert status == 200
        raw = headers["server-timing"]
        assert raw.isascii() and raw.isprintable(), raw
        metrics = timings(headers)
        descs = calls(metrics)
        assert descs and all(d.count("_") > 0 for d in descs[:1])
        for desc in descs:
            _safe(desc)
            for c in '";,\\=\r\n\x00':
                assert c not in desc
        assert len(metrics) == len(descs) + 3  # decode, encode, total: no metric smuggled in
    descs = calls(timings(answers[0][1]))
    assert descs[1] == "S" * MAX_TIMING_DESC + "..."


def test_the_number_of_call_entries_is_capped() -> None:
    n = MAX_TIMED_CALLS + 8
    gw = gateway(server_timing=True)
    status, headers, out = asgi_post(gw, request(3, [("EchoService.add", f"/{i}", [i, 1]) for i in range(n)]))
    assert status == 200 and len(packet.decode(out).bodies) == n
    metrics = timings(headers)
    assert names(metrics) == ["decode", *["call"] * MAX_TIMED_CALLS, "calls", "encode", "total"]
    assert metrics[-3][1]["desc"] == "8 more"
    batch = json.dumps([{"jsonrpc": "2.0", "method": "EchoService.add", "params": [i, 1], "id": i} for i in range(n)]).encode()
    metrics = timings(asgi_post(gw, batch, "application/json")[1])
    assert names(metrics).count("call") == MAX_TIMED_CALLS and metrics[-3][0] == "calls"


def test_refusals_carry_the_total() -> None:
    gw = gateway(server_timing=True)
    status, headers, _ = asgi_post(gw, b"\x00\x03garbage")
    assert status == 400 and names(timings(headers)) == ["total"]
    status, headers, _ = asgi_post(gw, b"x", "image/png")
    assert status == 415 and names(timings(headers)) == ["total"]
    status, headers, _ = asgi_post(gw, b"{not json", "application/json")
    assert status == 200 and names(timings(headers)) == ["total"]  # a parse error: nothing decoded
    status, headers, _ = asgi_post(gw, b"", method="GET")  # discovery: not a POST
    assert status == 200 and "server-timing" not in headers


def test_the_log_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="amfkit.gateway")
    _, headers, _ = asgi_post(gateway(server_timing=True), BATCH)
    lines = [r.getMessage() for r in caplog.records if r.name == "amfkit.gateway" and "timings" in r.getMessage()]
    assert len(lines) == 1 and all(r.levelno == logging.DEBUG for r in caplog.records if "timings" in r.getMessage())
    for name, params in parse(headers["server-timing"]):
        figure = f"{name} {params['desc']} {params['dur']} ms" if "desc" in params else f"{name} {params['dur']} ms"
        assert figure in lines[0], (figure, lines[0])


def test_under_uvicorn() -> None:
    from servers import serve_asgi

    with serve_asgi(gateway(debug=True)) as server, serve_asgi(Gateway({"EchoService": EchoService})) as plain:
        with httpx.Client(timeout=10) as client:
            r = client.post(server.url + "/gateway", content=BATCH, headers={"content-type": "application/x-amf"})
            assert r.status_code == 200
            assert calls(timings(dict(r.headers))) == ["EchoService.echo", "EchoService.fail", "EchoService.add"]
            r = client.post(
                server.url + "/gateway",
                content=request(0, [("EchoService.big", "/1", [200])]),
                headers={"content-type": "application/x-amf", "accept-encoding": "gzip"},
            )
            assert r.headers["content-encoding"] == "gzip" and "gzip" in names(timings(dict(r.headers)))
            assert packet.decode(r.content).bodies[0].value.startswith("tile,")  # httpx inflated it
            r = client.post(server.url + "/gateway", content=JSON_BATCH, headers={"content-type": "application/json"})
            assert len(calls(timings(dict(r.headers)))) == 3
            r = client.post(plain.url + "/gateway", content=BATCH, headers={"content-type": "application/x-amf"})
            assert r.status_code == 200 and "server-timing" not in r.headers
