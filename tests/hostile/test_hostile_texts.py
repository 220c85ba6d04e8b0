"""Texts built from input stay small, and nothing a client sends gets past the gateway as
an exception.

Every error, fault, HTTP body and log line amfkit writes quotes at most
`amfkit._text.MAX_SHOWN` characters of any one input value and is at most
`MAX_MESSAGE` characters long (plus a short note of what was cut): names, destinations
and operations can be megabytes (AMF3 string references make a long text cheap to
repeat: a 256 KiB string referenced 2,000 times is 512 MiB of text for 266 KiB of input,
which a `repr` used to build whole). And every exception between the request and a
service (a Flex message with missing or odd-typed fields, a service whose signature
cannot be read, a failing session store or authenticator) is a fault for its body or a
4xx, never a 500 and never an exception out of the ASGI app.

These run in process (the log records are the point), each in well under a second.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import json
import logging
import struct
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import amfkit
from amfkit._text import MAX_MESSAGE, MAX_SHOWN
from amfkit.remoting import messages as m
from amfkit.remoting import packet
from amfkit.remoting.gateway import Gateway
from amfkit.remoting.services import INTERNAL_ERROR_MESSAGE, Fault
from amfkit.remoting.sessions import MemorySessionStore, new_session_id

from gateway_util import EchoService, asgi_post, raw_packet
from wire import s3, typed3, u29, utf

AMF = "application/x-amf"
JSON = "application/json"
XML = "text/xml"
#: Statuses a gateway answers a POST with (204: a JSON-RPC notification).
ANSWERS = {200, 204, 400, 413, 415}

BIG = 256 * 1024
REFS = 2000
#: The longest fault text or error body: MAX_MESSAGE and the note of what was cut.
TEXT_BOUND = MAX_MESSAGE + 200
#: The longest log message (`record.getMessage()`, the traceback aside).
LOG_BOUND = 4096

RM = "flex.messaging.messages.RemotingMessage"
CM = "flex.messaging.messages.CommandMessage"


# --- helpers ---------------------------------------------------------------------------


def respond(gw: Gateway, body: bytes, ctype: str = AMF, *, method: str = "POST", path: str = "/gateway", headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """The gateway's plain core."""
    h = {"content-type": ctype, **(headers or {})}
    status, out_headers, out = asyncio.run(gw.respond(method, path, h, body))
    return status, dict(out_headers), out


def asgi(gw: Gateway, body: bytes, ctype: str = AMF, *, method: str = "POST", path: str = "/gateway") -> tuple[int, dict[str, str], bytes]:
    """The ASGI app, as a server calls it (a plain AMF POST takes its short path)."""
    return asgi_post(gw, body, ctype, method=method, path=path)


CALLERS = {"respond": respond, "asgi": asgi}


def logs_bounded(records: list[logging.LogRecord]) -> None:
    for r in records:
        text = r.getMessage()
        assert len(text) < LOG_BOUND, f"a {len(text)}-character log message: {text[:200]!r}..."


def string(text: str) -> bytes:
    """An inline AMF3 string value."""
    return b"\x06" + s3(text)


def referenced(first_index: int, total: int = REFS, rows: int = 20) -> bytes:
    """An AMF3 array of `rows` arrays holding `total` strings in all: a BIG-character
    string inline once (string table index `first_index`), then references to it."""
    per_row = total // rows
    out = b"\x09" + u29((rows << 1) | 1) + b"\x01"
    for i in range(rows):
        out += b"\x09" + u29((per_row << 1) | 1) + b"\x01"
        for j in range(per_row):
            out += string("x" * BIG) if i == j == 0 else b"\x06" + u29(first_index << 1)
    return out


def message(alias: str, members: list[tuple[str, bytes]]) -> bytes:
    """An AMF3 typed object with these sealed members (encoded values)."""
    return typed3(alias, dynamic=False, sealed=tuple(n for n, _ in members)) + b"".join(v for _, v in members)


def flex(*values: bytes) -> bytes:
    """A version-3 packet with one Flex-shaped body per AMF3 value."""
    return raw_packet(3, [("null", f"/{i + 1}", b"\x0a\x00\x00\x00\x01\x11" + v) for i, v in enumerate(values)])


# AMF3 reference tables, per body: the strings are the class alias, the sealed member
# names, then the inline string values in order (5 members: the big string comes after
# 6 + the strings before it); the objects are the message (0), then each array or object
# in order.
EMPTY_OBJECT = b"\x0a\x0b\x01\x01"
HUGE_FLEX = {
    "destination-referenced": message(
        RM,
        [("operation", string("echo")), ("messageId", string("M1")), ("headers", EMPTY_OBJECT), ("body", b"\x09\x01\x01"), ("destination", referenced(8))],
    ),
    "destination-long": message(
        RM,
        [("operation", string("echo")), ("messageId", string("M1")), ("headers", EMPTY_OBJECT), ("body", b"\x09\x01\x01"), ("destination", string("d" * BIG))],
    ),
    "operation-referenced": message(
        RM,
        [("destination", string("EchoService")), ("messageId", string("M1")), ("headers", EMPTY_OBJECT), ("body", b"\x09\x01\x01"), ("operation", referenced(8))],
    ),
    "operation-long": message(
        RM,
        [("destination", string("EchoService")), ("messageId", string("M1")), ("headers", EMPTY_OBJECT), ("body", b"\x09\x01\x01"), ("operation", string("o" * BIG))],
    ),
    "command-operation-referenced": message(
        CM,
        [("destination", string("d")), ("messageId", string("M1")), ("headers", EMPTY_OBJECT), ("body", b"\x01"), ("operation", referenced(8))],
    ),
    "command-operation-long": message(
        CM,
        [("destination", string("d")), ("messageId", string("M1")), ("headers", EMPTY_OBJECT), ("body", b"\x01"), ("operation", string("o" * BIG))],
    ),
    "ids-and-destination-referenced": message(
        RM,
        # messageId: the big list (object 3, string 8); destination: the same list;
        # clientId: its first row (object 4)
        [("operation", string("echo")), ("headers", EMPTY_OBJECT), ("body", b"\x09\x01\x01"), ("messageId", referenced(8)), ("destination", b"\x09" + u29(3 << 1)), ("clientId", b"\x09" + u29(4 << 1))],
    ),
}


def test_the_referenced_input_is_small_and_its_text_is_not() -> None:
    """The premise: the input is 266 KiB; its text (what repr() built) 512 MiB."""
    data = HUGE_FLEX["operation-referenced"]
    assert len(data) < BIG + 8 * 1024
    op = amfkit.amf3.decode(data).operation
    assert sum(len(s) for row in op for s in row) == REFS * BIG


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug"])
@pytest.mark.parametrize("name", HUGE_FLEX)
def test_flex_huge_destination_and_operation_are_bounded(name: str, debug: bool, caller: str, caplog: pytest.LogCaptureFixture) -> None:
    data = flex(HUGE_FLEX[name])
    with caplog.at_level(logging.DEBUG, logger="amfkit"):
        status, headers, out = CALLERS[caller](Gateway({"EchoService": EchoService}, debug=debug), data)
    assert status == 200 and headers["content-type"] == AMF, out[:300]
    assert len(out) < len(data) + 4096, f"a {len(out)}-byte answer to {len(data)} bytes"
    (body,) = packet.decode(out).bodies
    err = body.value
    assert body.target == "/1/onStatus" and isinstance(err, m.ErrorMessage), err
    assert isinstance(err.faultString, str) and len(err.faultString) <= TEXT_BOUND
    assert len(err.faultDetail) <= (1 << 16 if debug else TEXT_BOUND)  # debug: the traceback
    if name.startswith("destination") or name.startswith("ids"):
        assert err.faultString.startswith("no service ")
    elif name.startswith("operation"):
        assert err.faultString.startswith("no method ") and err.faultString.endswith(" on 'EchoService'")
    else:
        assert err.faultString.startswith("command operation ")
    if name.endswith("referenced"):
        assert "<list>" in err.faultString
    else:  # the first MAX_SHOWN characters, quoted, and the length
        letter = "d" if name.startswith("destination") else "o"
        assert f"{letter * MAX_SHOWN!r}… ({BIG} characters)" in err.faultString
    # Only text is echoed: an id or destination of another type is left out.
    assert err.destination is None or isinstance(err.destination, str)
    assert err.correlationId is None or isinstance(err.correlationId, str)
    logs_bounded(caplog.records)


def test_flex_messages_with_huge_fields_do_not_fail_the_other_bodies() -> None:
    ok = amfkit.amf3.encode(m.RemotingMessage(destination="EchoService", operation="echo", body=["hi"], headers={}))
    data = flex(HUGE_FLEX["operation-referenced"], ok, HUGE_FLEX["command-operation-referenced"])
    status, _, out = asgi(Gateway({"EchoService": EchoService}), data)
    assert status == 200
    bodies = packet.decode(out).bodies
    assert [b.target for b in bodies] == ["/1/onStatus", "/2/onResult", "/3/onStatus"]
    assert bodies[1].value.body == "hi"


@pytest.mark.parametrize("caller", CALLERS)
def test_netconnection_long_target_and_header_name_are_bounded(caller: str, caplog: pytest.LogCaptureFixture) -> None:
    long = "T" * 65_535  # the longest a packet's u16 string holds
    gw = Gateway({"EchoService": EchoService})
    with caplog.at_level(logging.DEBUG, logger="amfkit"):
        status, _, out = CALLERS[caller](gw, raw_packet(0, [(long, "/1", b"\x0a\x00\x00\x00\x00"), ("EchoService." + long[12:], "/2", b"\x05")]))
        assert status == 200
        first, second = packet.decode(out).bodies
        assert first.value["description"].startswith("no service 'TTT") and len(first.value["description"]) <= TEXT_BOUND
        assert second.value["description"].startswith("no method 'TTT") and len(second.value["description"]) <= TEXT_BOUND
        headed = raw_packet(0, [("EchoService.echo", "/1", b"\x0a\x00\x00\x00\x01\x05")], headers=[(long, True, b"\x05")])
        status, _, out = CALLERS[caller](gw, headed)
        assert status == 200
        (body,) = packet.decode(out).bodies
        assert body.value["code"] == "Client.UnknownHeader"
        assert f"({len(long)} characters) must be understood" in body.value["description"]
        assert len(body.value["description"]) <= TEXT_BOUND
    assert len(out) < 2048
    logs_bounded(caplog.records)


def test_malformed_packet_400_is_bounded() -> None:
    # A registered externalizable class whose reader fails with a huge text: a 400 whose
    # body is clipped (the decoder's own errors are bounded by the Rust core).
    class Loud:
        def __readamf__(self, input: Any) -> None:
            raise ValueError("bad " + input.read_object())

        def __writeamf__(self, output: Any) -> None:  # pragma: no cover
            pass

    amfkit.register_class(Loud, "hostile.texts.Loud", externalizable=True)
    try:
        value = b"\x0a\x07" + s3("hostile.texts.Loud") + string("z" * BIG)
        for caller in CALLERS.values():
            status, _, out = caller(Gateway({"EchoService": EchoService}), raw_packet(3, [("EchoService.echo", "/1", b"\x11" + value)]))
            assert status == 400 and out.startswith(b"malformed AMF packet: bad zzz"), out[:100]
            assert len(out) <= TEXT_BOUND
    finally:
        amfkit.unregister_class(Loud)


def test_jsonrpc_huge_method_name_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    gw = Gateway({"EchoService": EchoService})
    huge = "m" * (1 << 20)
    requests = [
        {"jsonrpc": "2.0", "method": huge, "id": 1},
        {"jsonrpc": "2.0", "method": "rpc." + huge, "id": 2},
        {"jsonrpc": "2.0", "method": f"EchoService.{huge}", "id": 3},
        {"jsonrpc": "2.0", "method": "EchoService.echo", "params": {huge: 1}, "id": 4},
        {"jsonrpc": "2.0", "method": huge},  # a notification: no answer, no big log line
    ]
    body = json.dumps(requests).encode()
    with caplog.at_level(logging.DEBUG, logger="amfkit"):
        status, _, out = respond(gw, body, JSON)
    assert status == 200 and len(out) < 8192, len(out)
    answers = json.loads(out)
    assert [a["id"] for a in answers] == [1, 2, 3, 4]
    for a in answers:
        message = a["error"]["message"]
        assert len(message) <= TEXT_BOUND and " characters)" in message, message[:200]
    assert answers[3]["error"]["code"] == -32602 and "unexpected keyword argument 'mmm" in answers[3]["error"]["message"]
    logs_bounded(caplog.records)


def test_xmlrpc_huge_names_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    gw = Gateway({"EchoService": EchoService})
    huge = "m" * (1 << 20)
    bodies = {
        "method": f"<methodCall><methodName>{huge}</methodName></methodCall>",
        "help": f"<methodCall><methodName>system.methodHelp</methodName><params><param><value>{huge}</value></param></params></methodCall>",
        "tag": f"<methodCall><{huge}/></methodCall>",
        "root": f"<{huge}/>",
        "value-type": f"<methodCall><methodName>EchoService.echo</methodName><params><param><value><{huge}/></value></param></params></methodCall>",
        "int": f"<methodCall><methodName>EchoService.echo</methodName><params><param><value><int>{'9' * (1 << 20)}</int></value></param></params></methodCall>",
        "encoding": f'<?xml version="1.0" encoding="{huge}"?><methodCall/>',
    }
    with caplog.at_level(logging.DEBUG, logger="amfkit"):
        for name, text in bodies.items():
            status, _, out = respond(gw, text.encode(), XML)
            assert status == 200 and b"<fault>" in out, (name, out[:300])
            assert len(out) <= TEXT_BOUND + 512, (name, len(out), out[:300])
    logs_bounded(caplog.records)


def test_http_error_bodies_are_bounded() -> None:
    gw = Gateway({"EchoService": EchoService})
    long = "x" * (1 << 20)
    cases = [
        (404, dict(path="/" + long)),
        (405, dict(method="P" + long)),
        (415, dict(ctype="application/" + long)),
        (415, dict(headers={"content-encoding": long})),
    ]
    for expected, kw in cases:
        ctype = kw.pop("ctype", AMF)
        status, _, out = respond(gw, b"\x00\x03\x00\x00\x00\x00", ctype, **kw)
        assert status == expected and len(out) <= TEXT_BOUND, (status, out[:200])


# --- exceptions between the request and the service -----------------------------------


class Store(dict):  # type: ignore[type-arg]
    """A dict registered as a service, with its inherited `update` (a builtin whose
    signature inspect cannot read, on every supported CPython: `clear`'s it can from
    3.13) and `odd` included on purpose: without `include` neither would be callable."""

    def put(self, key: str, value: Any) -> bool:
        self[key] = value
        return True


class _NoSignature:
    """A callable whose __signature__ is not a Signature (inspect raises TypeError)."""

    __signature__ = "not a signature"

    def __call__(self, *args: Any) -> int:
        return len(args)


Store.odd = _NoSignature()  # type: ignore[attr-defined]


def test_service_without_signature_is_a_fault_not_a_500(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises((ValueError, TypeError)):
        inspect.signature(Store().update)
    gw = Gateway({"Store": Store}, include={"Store": ["put", "update", "odd"]})
    # AMF, the short path (ASGI) and the core: a call that fits works, one that does not
    # is a fault; neither is a 500.
    for caller in CALLERS.values():
        data = raw_packet(
            0,
            [
                ("Store.update", "/1", b"\x0a\x00\x00\x00\x00"),
                ("Store.update", "/2", b"\x0a\x00\x00\x00\x01\x00\x3f\xf0\x00\x00\x00\x00\x00\x00"),
                ("Store.odd", "/3", b"\x0a\x00\x00\x00\x02\x05\x05"),
            ],
        )
        status, _, out = caller(gw, data)
        assert status == 200, out[:300]
        first, second, third = packet.decode(out).bodies
        assert first.target == "/1/onResult" and first.value is None
        assert second.target == "/2/onStatus" and second.value["description"] == INTERNAL_ERROR_MESSAGE
        assert third.target == "/3/onResult" and third.value == 2
    # Flex
    data = packet.encode(packet.Envelope(3, [], [packet.Body("null", "/1", [m.RemotingMessage(destination="Store", operation="update", body=[], headers={})])]))
    status, _, out = asgi(gw, data)
    assert status == 200 and isinstance(packet.decode(out).bodies[0].value, m.AcknowledgeMessage)
    # JSON-RPC
    status, _, out = respond(gw, b'[{"jsonrpc":"2.0","method":"Store.update","id":1},{"jsonrpc":"2.0","method":"Store.update","params":[1],"id":2}]', JSON)
    assert status == 200
    ok, bad = json.loads(out)
    assert ok["result"] is None and bad["error"]["code"] == -32000
    # XML-RPC introspection
    status, _, out = respond(gw, b"<methodCall><methodName>system.methodSignature</methodName><params><param><value>Store.update</value></param></params></methodCall>", XML)
    assert status == 200 and b"<string>undef</string>" in out
    # Discovery
    status, _, out = respond(gw, b"", method="GET")
    assert status == 200
    (service,) = json.loads(out)["services"]
    methods = {x["name"]: x for x in service["methods"]}
    assert methods["update"]["params"] == [{"name": "args", "kind": "var_positional"}]
    assert methods["put"]["params"][0] == {"name": "key", "kind": "positional_or_keyword", "type": "str"}
    assert "odd" in methods
    logs_bounded(caplog.records)


class _Moody:
    """A service with a property that raises: no method, and left out of discovery."""

    @property
    def broken(self) -> Any:
        raise RuntimeError("a property that fails")

    def fine(self) -> str:
        return "fine"


def test_service_attribute_that_raises_is_no_method() -> None:
    gw = Gateway({"Moody": _Moody})
    for caller in CALLERS.values():
        status, _, out = caller(gw, raw_packet(0, [("Moody.broken", "/1", b"\x05"), ("Moody.fine", "/2", b"\x0a\x00\x00\x00\x00")]))
        assert status == 200
        first, second = packet.decode(out).bodies
        assert first.value["code"] == "Server.ResourceUnavailable" and second.value == "fine"
    status, _, out = respond(gw, b"", method="GET")
    assert status == 200 and [x["name"] for x in json.loads(out)["services"][0]["methods"]] == ["fine"]


# Flex messages whose typed object leaves out members of the class, or sets them to
# values of another type than Flex sends.
PARTIAL_FLEX = {
    "remoting-body-only": message(RM, [("body", b"\x09\x01\x01")]),
    "remoting-no-headers-no-id": message(RM, [("destination", string("EchoService")), ("operation", string("echo")), ("body", b"\x09\x03\x01\x04\x01")]),
    "command-operation-only": message(CM, [("operation", b"\x04\x05")]),
    "command-nothing": message(CM, []),
    "remoting-headers-list": message(RM, [("destination", string("EchoService")), ("operation", string("echo")), ("headers", b"\x09\x03\x01\x04\x01"), ("body", b"\x09\x03\x01\x04\x01")]),
    "remoting-ids-objects": message(RM, [("destination", string("EchoService")), ("operation", string("echo")), ("clientId", EMPTY_OBJECT), ("messageId", b"\x09\x01\x01"), ("body", b"\x09\x03\x01\x04\x01")]),
    "remoting-dsid-odd": message(RM, [("destination", string("EchoService")), ("operation", string("echo")), ("headers", b"\x0a\x0b\x01" + s3("DSId") + b"\x09\x01\x01\x01"), ("body", b"\x09\x03\x01\x04\x01")]),
    "remoting-dsid-long": message(RM, [("destination", string("EchoService")), ("operation", string("echo")), ("headers", b"\x0a\x0b\x01" + s3("DSId") + string("A" * 100_000) + b"\x01"), ("body", b"\x09\x03\x01\x04\x01")]),
    "command-operation-object": message(CM, [("operation", EMPTY_OBJECT)]),
    "command-operation-float": message(CM, [("operation", b"\x05\x40\x14\x00\x00\x00\x00\x00\x00")]),
    "command-login-headers-list": message(CM, [("operation", b"\x04\x08"), ("headers", b"\x09\x01\x01"), ("body", string("YTpi"))]),
    "command-login-body-object": message(CM, [("operation", b"\x04\x08"), ("body", EMPTY_OBJECT)]),
    "async-message-bare": message("flex.messaging.messages.AsyncMessage", []),
}


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("name", PARTIAL_FLEX)
def test_partial_and_odd_flex_messages_are_answered(name: str, caller: str, caplog: pytest.LogCaptureFixture) -> None:
    ok = amfkit.amf3.encode(m.RemotingMessage(destination="EchoService", operation="echo", body=[7], headers={}))
    with caplog.at_level(logging.DEBUG, logger="amfkit"):
        status, _, out = CALLERS[caller](Gateway({"EchoService": EchoService}), flex(PARTIAL_FLEX[name], ok))
    assert status == 200, out[:300]
    first, second = packet.decode(out).bodies
    assert isinstance(first.value, m.AcknowledgeMessage), first.value
    if isinstance(first.value, m.ErrorMessage):
        assert first.target == "/1/onStatus" and len(first.value.faultString) <= TEXT_BOUND
    else:  # a call with a destination and an operation, or a ping
        assert first.target == "/1/onResult" and ("remoting-" in name or name.endswith(("-only", "-float"))), name
    assert second.target == "/2/onResult" and second.value.body == 7
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
    logs_bounded(caplog.records)


class _FailingStore(MemorySessionStore):
    def __init__(self, fail: str) -> None:
        super().__init__()
        self.fail = fail

    async def get(self, session_id: str) -> Any:
        if self.fail == "get":
            raise ConnectionError("the store is down " + "!" * 100_000)
        return await super().get(session_id)

    async def save(self, session_id: str, session: Any) -> None:
        if self.fail == "save":
            raise ConnectionError("the store is down " + "!" * 100_000)
        await super().save(session_id, session)

    async def create(self, session_id: str | None = None) -> Any:
        if self.fail == "save":
            raise ConnectionError("the store is down " + "!" * 100_000)
        return await super().create(session_id)


@pytest.mark.parametrize("fail", ["get", "save"])
def test_failing_session_store_is_a_fault_not_a_500(fail: str, caplog: pytest.LogCaptureFixture) -> None:
    gw = Gateway({"EchoService": EchoService}, session_store=_FailingStore(fail))
    remember = raw_packet(0, [("EchoService.remember", "/1", b"\x0a\x00\x00\x00\x01\x00\x40\x00\x00\x00\x00\x00\x00\x00")])
    with caplog.at_level(logging.DEBUG, logger="amfkit"):
        status, _, out = respond(gw, remember)
        assert status == 200, out[:300]
        status, _, out = respond(gw, remember, path=f"/gateway?amfkit_session={new_session_id()}")
        assert status == 200, out[:300]
        (body,) = packet.decode(out).bodies
        if fail == "get":
            assert body.value["code"] == "Server.Processing" and body.value["description"] == INTERNAL_ERROR_MESSAGE
        else:
            assert body.target == "/1/onResult"
        flexed = flex(amfkit.amf3.encode(m.RemotingMessage(destination="EchoService", operation="remember", body=[1], headers={"DSId": new_session_id()})))
        status, _, out = asgi(gw, flexed)
        assert status == 200, out[:300]
    logs_bounded(caplog.records)


def test_failing_authenticator_is_a_401_for_json_rpc(caplog: pytest.LogCaptureFixture) -> None:
    def authenticator(user: str, password: str) -> Any:
        raise RuntimeError("cannot reach the directory for " + user)

    gw = Gateway({"EchoService": EchoService}, authenticator=authenticator)
    token = base64.b64encode(b"u" * 100_000 + b":p").decode()
    with caplog.at_level(logging.DEBUG, logger="amfkit"):
        status, headers, out = respond(gw, b'{"jsonrpc":"2.0","method":"EchoService.echo","params":[1],"id":1}', JSON, headers={"authorization": "Basic " + token})
        assert status == 401 and "www-authenticate" in headers
        # The same failure in a Credentials header is a fault for every body of the packet.
        creds = b"\x03" + utf("userid") + b"\x02" + utf("u" * 60_000) + utf("password") + b"\x02" + utf("p") + b"\x00\x00\x09"
        status, _, out = respond(gw, raw_packet(0, [("EchoService.echo", "/1", b"\x05")], headers=[("Credentials", False, creds)]))
        assert status == 200
        (body,) = packet.decode(out).bodies
        assert body.value["code"] == "Server.Processing" and len(body.value["description"]) <= TEXT_BOUND
    logs_bounded(caplog.records)


def test_authenticator_accepting_an_odd_user_gets_a_bounded_name() -> None:
    gw = Gateway({"EchoService": EchoService}, authenticator=lambda user, password: True)
    big_user = b"\x0a\x00\x00\x00\x02" + b"\x02" + utf("u" * 60_000) + b"\x07\x00\x00"  # [str, ref to itself]
    creds = b"\x03" + utf("userid") + big_user + utf("password") + b"\x02" + utf("p") + b"\x00\x00\x09"
    status, _, out = respond(gw, raw_packet(0, [("EchoService.whoami", "/1", b"\x0a\x00\x00\x00\x00")], headers=[("Credentials", False, creds)]))
    assert status == 200
    (body,) = packet.decode(out).bodies
    assert body.value == {"name": "<list>", "roles": []}


class _OddFault:
    def odd(self) -> None:
        raise Fault("odd", code=object())  # type: ignore[arg-type]  # a code JSON cannot write

    def fine(self) -> int:
        return 1


def test_unexpected_rpc_errors_are_answered_not_500(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from amfkit.remoting import xmlrpc

    gw = Gateway({"S": _OddFault})
    with caplog.at_level(logging.DEBUG, logger="amfkit"):
        status, _, out = respond(gw, b'[{"jsonrpc":"2.0","method":"S.odd","id":1},{"jsonrpc":"2.0","method":"S.fine","id":2}]', JSON)
        assert status == 200
        first, second = json.loads(out)
        assert first["error"]["code"] == -32603 and first["id"] is None and second["result"] == 1

        def broken(body: bytes) -> Any:
            raise RuntimeError("a parser bug " + "!" * 100_000)

        monkeypatch.setattr(xmlrpc, "_parse_call", broken)
        status, _, out = respond(gw, b"<methodCall><methodName>S.fine</methodName></methodCall>", XML)
        assert status == 200 and b"<int>-32603</int>" in out and len(out) < 1024
    logs_bounded(caplog.records)


# --- every hostile body: a bounded answer of an expected status ----------------------

RM_FIELDS = ("body", "clientId", "destination", "headers", "messageId", "timestamp", "timeToLive", "operation", "source", "correlationId", "messageRefType", "extra")
ALIASES = (RM, CM, "flex.messaging.messages.AsyncMessage", "flex.messaging.messages.AcknowledgeMessage", "flex.messaging.messages.ErrorMessage", "some.Other")

texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["EchoService", "EchoService.echo", "EchoService.fail", "echo", "", "null", "/1", "rpc.x", "system.multicall", "_private", "EchoService._x", "DSId", "nil"]),
    st.builds(lambda c, n: c * n, st.characters(blacklist_categories=("Cs",)), st.integers(65, 3000)),
)


amf3_scalars = st.one_of(
    st.just(b"\x01"),  # null
    st.just(b"\x02"),  # false
    st.integers(0, (1 << 28) - 1).map(lambda n: b"\x04" + u29(n)),
    st.floats(allow_nan=True).map(lambda x: b"\x05" + struct.pack(">d", x)),
    texts.map(string),
    st.just(EMPTY_OBJECT),
    texts.map(lambda t: b"\x0a\x0b" + s3(t or "x") + b"\x01"),  # an object of an unknown class
)
amf3_values = st.recursive(
    amf3_scalars,
    lambda inner: st.lists(inner, max_size=4).map(lambda xs: b"\x09" + u29((len(xs) << 1) | 1) + b"\x01" + b"".join(xs)),
    max_leaves=8,
)


@st.composite
def flex_messages(draw: Any) -> bytes:
    alias = draw(st.sampled_from(ALIASES))
    names = draw(st.lists(st.sampled_from(RM_FIELDS), unique=True, max_size=6))
    return message(alias, [(n, draw(amf3_values)) for n in names])


amf0_values = st.one_of(
    st.just(b"\x05"),
    texts.map(lambda t: b"\x02" + utf(t)),
    amf3_values.map(lambda v: b"\x11" + v),
    st.lists(amf3_values, max_size=3).map(lambda xs: b"\x0a" + len(xs).to_bytes(4, "big") + b"".join(b"\x11" + x for x in xs)),
)
body_values = st.one_of(
    amf0_values,
    flex_messages().map(lambda v: b"\x0a\x00\x00\x00\x01\x11" + v),  # Flex
    flex_messages().map(lambda v: b"\x11\x09\x03\x01" + v),  # Royale
)


@st.composite
def amf_packets(draw: Any) -> bytes:
    headers = draw(st.lists(st.tuples(texts, st.booleans(), amf0_values), max_size=2))
    bodies = draw(st.lists(st.tuples(texts, texts, body_values), min_size=1, max_size=3))
    data = raw_packet(draw(st.sampled_from([0, 3])), bodies, headers)
    if draw(st.integers(0, 9)) == 0:  # sometimes cut or corrupted
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.binary(max_size=8))
    return data


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), texts),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=8,
)


@st.composite
def json_requests(draw: Any) -> bytes:
    def one() -> Any:
        req: dict[str, Any] = {}
        if draw(st.booleans()):
            req["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "1.0"]))
        if draw(st.integers(0, 5)):
            req["method"] = draw(st.one_of(texts, json_values))
        if draw(st.booleans()):
            req["params"] = draw(json_values)
        if draw(st.booleans()):
            req["id"] = draw(json_values)
        return req if draw(st.integers(0, 9)) else draw(json_values)

    doc = [one() for _ in range(draw(st.integers(0, 4)))] if draw(st.booleans()) else one()
    text = json.dumps(doc)
    if draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text.encode()


def _xml_text(t: str) -> str:
    return t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


xml_names = st.one_of(st.sampled_from(["value", "int", "string", "struct", "array", "data", "member", "name", "nil", "boolean", "double", "base64", "dateTime.iso8601", "params", "param"]), st.from_regex(r"[a-z][a-z0-9]{0,2000}", fullmatch=True))


@st.composite
def xml_requests(draw: Any) -> bytes:
    def element(depth: int) -> str:
        tag = draw(xml_names)
        if depth > 3 or draw(st.booleans()):
            return f"<{tag}>{_xml_text(draw(texts))}</{tag}>"
        return f"<{tag}>" + "".join(element(depth + 1) for _ in range(draw(st.integers(0, 3)))) + f"</{tag}>"

    method = _xml_text(draw(texts))
    params = "".join(f"<param><value>{element(1)}</value></param>" for _ in range(draw(st.integers(0, 3))))
    text = f"<methodCall><methodName>{method}</methodName><params>{params}</params></methodCall>"
    if draw(st.integers(0, 5)) == 0:
        text = f"<{draw(xml_names)}>{text}"
    return text.encode()


requests = st.one_of(
    st.tuples(st.just(AMF), amf_packets()),
    st.tuples(st.just(JSON), json_requests()),
    st.tuples(st.just(XML), xml_requests()),
    st.tuples(st.sampled_from([AMF, JSON, XML]), st.binary(max_size=64)),
)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def _collecting() -> Iterator[_Collect]:
    handler = _Collect()
    log = logging.getLogger("amfkit")
    old = log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.setLevel(old)


_GATEWAY = Gateway({"EchoService": EchoService, "Store": Store}, max_body_size=1 << 20)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(requests)
def test_every_hostile_body_gets_a_bounded_answer(request: tuple[str, bytes]) -> None:
    ctype, body = request
    with _collecting() as handler:
        for caller in (asgi, respond) if ctype == AMF else (asgi,):
            status, headers, out = caller(_GATEWAY, body, ctype)
            assert status in ANSWERS, (status, out[:300])
            assert len(out) <= max(8 * 1024, 2 * len(body)), f"a {len(out)}-byte answer to {len(body)} bytes"
            if status == 200 and ctype == AMF:
                packet.decode(out)
            if status >= 400:
                assert len(out) <= TEXT_BOUND
        logs_bounded(handler.records)


# --- calls per request ---------------------------------------------------------------------


def test_many_tiny_calls_are_refused_past_max_calls() -> None:
    """Each call of a request is answered, so thousands of tiny ones made an answer ~93x
    the request (a JSON-RPC batch of bare 1s: 100 KB in, 9.3 MB out) and held the event
    loop. `max_calls` (default 1,000) bounds the calls of one request in every protocol;
    at the bound they are all answered."""
    gw = Gateway({"EchoService": EchoService()}, max_calls=50)
    at = raw_packet(0, [("EchoService.echo", f"/{i}", b"\x0a\x00\x00\x00\x01\x00\x3f\xf0" + b"\x00" * 6) for i in range(50)])
    status, _, out = respond(gw, at)
    assert status == 200 and len(packet.decode(out).bodies) == 50
    over = raw_packet(0, [("EchoService.echo", f"/{i}", b"\x05") for i in range(51)])
    for caller in (respond, asgi):
        status, _, out = caller(gw, over)
        assert (status, out) == (400, b"a packet of 51 bodies, more than the 50 allowed\n"), out[:200]

    status, _, out = respond(gw, b"[" + b",".join([b"1"] * 50) + b"]", JSON)
    assert status == 200 and len(json.loads(out)) == 50
    status, _, out = respond(gw, b"[" + b",".join([b"1"] * 51) + b"]", JSON)
    answer = json.loads(out)
    assert status == 200 and answer["error"]["code"] == -32600 and "more than 50 requests" in answer["error"]["message"]

    call = "<value><struct><member><name>methodName</name><value><string>EchoService.echo</string></value></member>" \
        "<member><name>params</name><value><array><data><value><int>1</int></value></data></array></value></member></struct></value>"

    def multicall(n: int) -> bytes:
        return (
            "<?xml version='1.0'?><methodCall><methodName>system.multicall</methodName><params><param><value><array><data>"
            + call * n + "</data></array></value></param></params></methodCall>"
        ).encode()

    status, _, out = respond(gw, multicall(50), XML)
    assert status == 200 and out.count(b"<int>1</int>") == 50
    status, _, out = respond(gw, multicall(51), XML)
    assert status == 200 and b"<name>faultCode</name><value><int>-32600</int>" in out and b"more than 50 calls" in out
    with pytest.raises(ValueError, match="max_calls"):
        Gateway({}, max_calls=0)
