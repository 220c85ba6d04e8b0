"""Packets and Flex messages that Py3AMF writes, read by amfkit in every input form: the
fixtures of fixtures/foreign/ are what the installed Py3AMF still writes, fresh packets
(random ids, every Flex message class and small form Py3AMF has) decode to the same
messages whatever their form, their exact documents write back to the same bytes, and
a document edited and written by amfkit is read by Py3AMF."""

from __future__ import annotations

import base64
import datetime
import gzip
import importlib.util
import uuid
import zlib

import pytest

import amfkit
from amfkit import payload, wire
from amfkit.remoting import messages

import peers  # imports pyamf with its import-time warnings handled
from repo import FIXTURES

pyamf = peers.pyamf
import pyamf.flex.messaging as fm  # noqa: E402
import pyamf.remoting as remoting  # noqa: E402

FORMS = {
    "raw": lambda d: d,
    "hex": lambda d: d.hex(" ").encode(),
    "base64": base64.b64encode,
    "list": lambda d: str(list(d)).encode(),
    "zlib": zlib.compress,
    "gzip": gzip.compress,
    "http": lambda d: b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amf\r\nContent-Length: %d\r\n\r\n" % len(d) + d,
}


def _make_foreign():
    spec = importlib.util.spec_from_file_location("make_foreign", FIXTURES / "foreign" / "make_foreign.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fixtures_are_what_the_installed_py3amf_writes():
    for name, data in _make_foreign().files().items():
        assert (FIXTURES / "foreign" / name).read_bytes() == data, name


def _now() -> datetime.datetime:
    return datetime.datetime(2024, 1, 2, 3, 4, 5)


def _messages() -> dict:
    """One of each Flex message Py3AMF writes, with fresh ids."""
    cid, mid, corr = uuid.uuid4(), uuid.uuid4(), str(uuid.uuid4()).upper()
    common = {"timestamp": _now(), "timeToLive": 0, "headers": {"DSId": str(cid).upper()}}
    return {
        "RemotingMessage": fm.RemotingMessage(destination="Svc", operation="go", source=None, body=[1, "a"], clientId=None, messageId=str(mid).upper(), **common),
        "CommandMessage": fm.CommandMessage(operation=2, destination="feed", body={}, clientId=str(cid).upper(), messageId=str(mid).upper(), correlationId="", **common),
        "AcknowledgeMessage": fm.AcknowledgeMessage(body={"ok": True}, clientId=str(cid).upper(), messageId=str(mid).upper(), correlationId=corr, destination=None, **common),
        "ErrorMessage": fm.ErrorMessage(faultCode="Client.Error", faultString="no", faultDetail="d", rootCause=None, extendedData=None, body=None, clientId=None, messageId=str(mid).upper(), correlationId=corr, destination="Svc", **common),
        "DSK": fm.AcknowledgeMessageExt(body=[1, 2], clientId=cid, messageId=mid, correlationId=corr, destination=None, **common),
        "DSA": fm.AsyncMessageExt(body="price", clientId=cid, messageId=mid, correlationId=corr, destination="feed", **common),
        "DSC": fm.CommandMessageExt(operation=5, body=None, clientId=cid, messageId=mid, correlationId=corr, destination="", **common),
    }


#: The amfkit class each one decodes to, and the members it must carry.
EXPECTED = {
    "RemotingMessage": (messages.RemotingMessage, {"destination": "Svc", "operation": "go", "body": [1, "a"]}),
    "CommandMessage": (messages.CommandMessage, {"operation": 2, "destination": "feed"}),
    "AcknowledgeMessage": (messages.AcknowledgeMessage, {"body": {"ok": True}}),
    "ErrorMessage": (messages.ErrorMessage, {"faultCode": "Client.Error", "faultString": "no", "faultDetail": "d"}),
    "DSK": (messages.AcknowledgeMessageExt, {"body": [1, 2]}),
    "DSA": (messages.AsyncMessageExt, {"body": "price", "destination": "feed"}),
    "DSC": (messages.CommandMessageExt, {"operation": 5}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_py3amf_flex_messages_read_the_same_in_every_form(name):
    msg = _messages()[name]
    env = remoting.Envelope(pyamf.AMF3)
    env["/1"] = remoting.Response([msg]) if name in ("AcknowledgeMessage", "ErrorMessage", "DSK") else remoting.Request("null", [msg])
    data = remoting.encode(env).getvalue()
    cls, members = EXPECTED[name]
    exact = wire.read(data, "packet")
    assert wire.write(exact) == data
    for form, make in FORMS.items():
        p = payload.read(make(data))
        assert p.kind == "packet" and p.layers == ([] if form == "raw" else [form])
        (decoded,) = p.value.bodies[0].value
        assert type(decoded) is cls, form
        for key, want in members.items():
            assert getattr(decoded, key) == want, (form, key)
        assert p.document() == exact
        assert amfkit.diff(make(data), data) == []
    if name.startswith("DS"):
        # Ids in the small forms travel as 16 bytes and read as the uppercase UUID.
        assert decoded.messageId == str(msg.messageId).upper()


def test_a_document_edited_and_written_by_amfkit_is_read_by_py3amf():
    env = remoting.Envelope(pyamf.AMF3)
    env["/1"] = remoting.Request("null", [_messages()["RemotingMessage"]])
    doc = wire.read(remoting.encode(env).getvalue(), "packet")
    call = doc["bodies"][0]["value"][0]["__amf3__"]
    call["operation"] = "stop"
    call["body"] = ["b", 2]
    data = wire.write(doc)
    back = remoting.decode(data)
    (msg,) = back["/1"].body
    assert isinstance(msg, fm.RemotingMessage)
    assert (msg.operation, list(msg.body)) == ("stop", ["b", 2])
    # The length field Py3AMF wrote (0) is kept, and Py3AMF does not mind.
    assert doc["bodies"][0]["length"] == 0
