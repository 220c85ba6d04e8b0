"""The gateway with Flex and Royale RemoteObject clients: message shapes, acknowledgements,
error messages with every field, commands (ping, login, logout), client ids and small
forms."""

from __future__ import annotations

import base64
from typing import Any

import pytest

import amfkit
from amfkit.remoting import messages as m
from amfkit.remoting.gateway import INTERNAL_ERROR_MESSAGE
from amfkit.remoting.packet import Body

from gateway_util import answer, authenticate, call, flex_shape, gateway, raw_packet, request, royale_shape

ACK_FIELDS = {"body", "clientId", "destination", "headers", "messageId", "timestamp", "timeToLive", "correlationId"}
ERROR_FIELDS = ACK_FIELDS | {"faultCode", "faultString", "faultDetail", "rootCause", "extendedData"}


def remoting(operation: str, *args: Any, destination: str = "EchoService", dsid: str | None = None, **headers: Any) -> m.RemotingMessage:
    h = dict(headers)
    if dsid is not None:
        h["DSId"] = dsid
    return m.RemotingMessage(destination=destination, operation=operation, body=list(args), headers=h)


def command(operation: int, body: Any = None, dsid: str | None = "nil", **headers: Any) -> m.CommandMessage:
    h = dict(headers)
    if dsid is not None:
        h["DSId"] = dsid
    return m.CommandMessage(operation=operation, body=body, headers=h, destination="")


def send(gw: Any, *messages: Any, version: int = 3, shape: str = "flex") -> list[Body]:
    """POST messages as Flex does (one body each, AMF0 array of an AMF3 message), or as
    Royale does (`shape="royale"`), or through packet.encode (`shape="encode"`)."""
    if shape == "encode":
        data = request(version, [("null", f"/{i + 1}", [msg]) for i, msg in enumerate(messages)])
    else:
        to_bytes = flex_shape if shape == "flex" else royale_shape
        data = raw_packet(version, [("null", f"/{i + 1}", to_bytes(msg)) for i, msg in enumerate(messages)])
    env = answer(gw, data)
    assert env.version == version
    assert len(env.bodies) == len(messages)
    return env.bodies


def fields(msg: Any) -> set[str]:
    return {k for k in vars(msg) if not k.startswith("_")}


@pytest.mark.parametrize("shape", ["flex", "royale", "encode"])
def test_remoting_message_is_acknowledged_with_every_field(shape: str) -> None:
    msg = remoting("echo", {"a": [1, 2]}, dsid="nil")
    (body,) = send(gateway(), msg, shape=shape)
    assert body.target == "/1/onResult"
    assert body.response == "null"
    ack = body.value
    assert type(ack) is m.AcknowledgeMessage
    assert fields(ack) >= ACK_FIELDS
    assert ack.body == {"a": [1, 2]}
    assert ack.correlationId == msg.messageId
    assert ack.destination == "EchoService"
    assert isinstance(ack.messageId, str) and ack.messageId != msg.messageId
    assert isinstance(ack.clientId, str) and len(ack.clientId) == 36
    assert ack.headers == {"DSId": ack.clientId}
    assert ack.timeToLive == 0
    assert ack.timestamp > 1.6e12  # milliseconds since 1970


def test_error_message_has_every_field() -> None:
    msg = remoting("fail", "boom", dsid="nil")
    (body,) = send(gateway(), msg)
    assert body.target == "/1/onStatus"
    err = body.value
    assert type(err) is m.ErrorMessage
    assert fields(err) == ERROR_FIELDS
    assert err.faultCode == "Server.Processing"
    assert err.faultString == INTERNAL_ERROR_MESSAGE
    assert err.faultDetail == ""
    assert err.rootCause is None and err.extendedData is None and err.body is None
    assert err.correlationId == msg.messageId
    assert err.destination == "EchoService"
    assert err.headers == {}
    assert err.timeToLive == 0
    assert isinstance(err.clientId, str) and isinstance(err.messageId, str)
    assert err.timestamp > 1.6e12


def test_error_message_wire_form_writes_every_member() -> None:
    """A strict client rejects an ErrorMessage missing a member: check the bytes name all
    thirteen sealed members, each once."""
    data = raw_packet(3, [("null", "/1", flex_shape(remoting("fail", "x")))])
    status, _, raw = call(gateway(), data)
    assert status == 200
    assert b"flex.messaging.messages.ErrorMessage" in raw
    for name in ERROR_FIELDS:
        assert raw.count(name.encode()) >= 1, name


def test_fault_code_and_extended_data() -> None:
    (body,) = send(gateway(), remoting("fault", "bad"))
    assert body.value.faultCode == "App.Custom"
    assert body.value.extendedData == {"field": "name"}
    assert body.value.faultDetail == ""
    second = send(gateway(), remoting("fault_text", "worse"))[0].value
    assert second.faultCode == "App.Text"
    assert second.faultDetail == "see the manual"
    assert second.extendedData is None


def test_debug_fault_detail_is_the_traceback() -> None:
    err = send(gateway(debug=True), remoting("fail", "boom"))[0].value
    assert "Traceback" in err.faultDetail and "RuntimeError: boom" in err.faultDetail
    assert err.faultString == "boom"
    err = send(gateway(), remoting("fail", "boom"))[0].value
    assert "Traceback" not in err.faultDetail and "boom" not in err.faultString


def test_unknown_destination_and_argument_errors() -> None:
    bodies = send(gateway(), remoting("echo", destination="Nope"), remoting("add", "x", "y"), remoting("add", 1))
    assert [b.value.faultCode for b in bodies] == ["Server.ResourceUnavailable", "Client.Argument", "Client.Argument"]


def test_batch_of_messages_one_failing() -> None:
    bodies = send(gateway(), remoting("echo", 1), remoting("fail", "x"), remoting("add", 2, 3))
    assert [b.target for b in bodies] == ["/1/onResult", "/2/onStatus", "/3/onResult"]
    assert bodies[0].value.body == 1 and bodies[2].value.body == 5


def test_array_collection_and_object_proxy_arguments() -> None:
    items = amfkit.ArrayCollection([1, 2, 3])
    proxy = amfkit.ObjectProxy({"k": "v"})
    bodies = send(gateway(), remoting("count", items), remoting("echo", proxy), remoting("kind", items))
    assert bodies[0].value.body == 3
    assert bodies[1].value.body == {"k": "v"}
    assert bodies[2].value.body == "ArrayCollection"


def test_message_body_that_is_not_an_array_is_one_argument() -> None:
    msg = m.RemotingMessage(destination="EchoService", operation="echo", body="solo", headers={})
    assert send(gateway(), msg)[0].value.body == "solo"
    msg = m.RemotingMessage(destination="EchoService", operation="protocol", body=None, headers={})
    assert send(gateway(), msg)[0].value.body == "amf3"


# --- client ids and commands -----------------------------------------------------------


def test_ping_assigns_a_client_id() -> None:
    (body,) = send(gateway(), command(m.Operation.CLIENT_PING))
    ack = body.value
    assert isinstance(ack, m.AcknowledgeMessage)
    dsid = ack.headers["DSId"]
    assert isinstance(dsid, str) and len(dsid) == 36 and dsid != "nil"
    assert ack.clientId == dsid


def test_messages_without_a_client_id_in_one_request_get_the_same_one() -> None:
    bodies = send(gateway(), command(m.Operation.CLIENT_PING), remoting("echo", 1, dsid="nil"), remoting("echo", 2))
    ids = {b.value.headers["DSId"] for b in bodies}
    assert len(ids) == 1
    # ... and separate requests get separate ids
    other = send(gateway(), command(m.Operation.CLIENT_PING))[0].value.headers["DSId"]
    assert other not in ids


def test_known_client_id_is_kept() -> None:
    gw = gateway()
    dsid = send(gw, command(m.Operation.CLIENT_PING))[0].value.headers["DSId"]
    ack = send(gw, remoting("echo", 1, dsid=dsid))[0].value
    assert ack.headers == {"DSId": dsid}
    assert ack.clientId == dsid


def test_message_client_id_is_echoed() -> None:
    msg = remoting("echo", 1, dsid="nil")
    msg.clientId = "AGENT-0001-CLIENT"
    ack = send(gateway(), msg)[0].value
    assert ack.clientId == "AGENT-0001-CLIENT"


@pytest.mark.parametrize("op", [m.Operation.TRIGGER_CONNECT, m.Operation.DISCONNECT])
def test_other_acknowledged_commands(op: int) -> None:
    ack = send(gateway(), command(op))[0].value
    assert type(ack) is m.AcknowledgeMessage


@pytest.mark.parametrize("op", [m.Operation.SUBSCRIBE, m.Operation.POLL, 99])
def test_unsupported_commands_are_errors(op: int) -> None:
    body = send(gateway(), command(op))[0]
    assert body.target == "/1/onStatus"
    assert type(body.value) is m.ErrorMessage
    assert body.value.faultCode == "Server.Processing"


def test_async_message_is_an_error_for_now() -> None:
    body = send(gateway(), m.AsyncMessage(destination="chat", body="hi", headers={}))[0]
    assert type(body.value) is m.ErrorMessage


def _login(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def test_login_keeps_the_principal_for_the_client() -> None:
    gw = gateway(authenticator=authenticate)
    dsid = send(gw, command(m.Operation.CLIENT_PING))[0].value.headers["DSId"]
    assert send(gw, remoting("secret", dsid=dsid))[0].value.faultCode == "Client.Authentication"
    ack = send(gw, command(m.Operation.LOGIN, _login("alice", "wonderland"), dsid=dsid))[0].value
    assert type(ack) is m.AcknowledgeMessage
    assert ack.body == "success"
    assert send(gw, remoting("secret", dsid=dsid))[0].value.body == "s3cret"
    assert send(gw, remoting("whoami", dsid=dsid))[0].value.body == {"name": "alice", "roles": ["admin"]}
    # another client is not logged in
    assert send(gw, remoting("secret", dsid="nil"))[0].value.faultCode == "Client.Authentication"
    # logout forgets it
    assert send(gw, command(m.Operation.LOGOUT, dsid=dsid))[0].value.body == "success"
    assert send(gw, remoting("secret", dsid=dsid))[0].value.faultCode == "Client.Authentication"


def test_login_and_call_in_one_request() -> None:
    gw = gateway(authenticator=authenticate)
    dsid = "0F0E0D0C-0B0A-0908-0706-050403020100"
    bodies = send(gw, command(m.Operation.LOGIN, _login("alice", "wonderland"), dsid=dsid), remoting("secret", dsid=dsid))
    assert bodies[1].value.body == "s3cret"
    assert send(gw, remoting("secret", dsid=dsid))[0].value.body == "s3cret"


@pytest.mark.parametrize("body", [_login("alice", "nope"), _login("mallory", "x"), "not base64!", base64.b64encode(b"nocolon").decode(), 42])
def test_failed_login_is_a_client_authentication_error(body: Any) -> None:
    gw = gateway(authenticator=authenticate)
    out = send(gw, command(m.Operation.LOGIN, body))[0]
    assert out.target == "/1/onStatus"
    assert type(out.value) is m.ErrorMessage
    assert out.value.faultCode == "Client.Authentication"


def test_login_without_an_authenticator() -> None:
    out = send(gateway(), command(m.Operation.LOGIN, _login("a", "b")))[0].value
    assert out.faultCode == "Client.Authentication"


def test_flex_session_data_is_kept_per_client() -> None:
    gw = gateway()
    dsid = send(gw, command(m.Operation.CLIENT_PING))[0].value.headers["DSId"]
    send(gw, remoting("remember", "mine", dsid=dsid))
    assert send(gw, remoting("recall", dsid=dsid))[0].value.body == "mine"
    assert send(gw, remoting("recall", dsid="nil"))[0].value.body is None


def test_packet_credentials_header_applies_to_flex_messages() -> None:
    gw = gateway(authenticator=authenticate)
    # a Credentials header in AMF0: an object {userid, password}
    creds = b"\x03" + b"\x00\x06userid\x02\x00\x05alice" + b"\x00\x08password\x02\x00\x0awonderland" + b"\x00\x00\x09"
    data = raw_packet(3, [("null", "/1", flex_shape(remoting("secret")))], [("Credentials", False, creds)])
    assert answer(gw, data).bodies[0].value.body == "s3cret"


# --- small forms -----------------------------------------------------------------------


def test_small_form_request_gets_a_small_form_answer() -> None:
    msg = m.CommandMessageExt()
    for name in msg._fields:
        setattr(msg, name, None)
    msg.operation = m.Operation.CLIENT_PING
    msg.messageId = m.new_id()
    msg.headers = {"DSId": "nil"}
    (body,) = send(gateway(), msg)
    ack = body.value
    assert type(ack) is m.AcknowledgeMessageExt
    assert ack.correlationId == msg.messageId
    assert ack.headers["DSId"] == ack.clientId


def test_ds_messaging_version_asks_for_small_forms() -> None:
    ping = command(m.Operation.CLIENT_PING, DSMessagingVersion=1)
    assert type(send(gateway(), ping)[0].value) is m.AcknowledgeMessageExt
    assert type(send(gateway(), command(m.Operation.CLIENT_PING))[0].value) is m.AcknowledgeMessage


def test_errors_are_never_small() -> None:
    msg = remoting("fail", "x", DSMessagingVersion=1)
    assert type(send(gateway(), msg)[0].value) is m.ErrorMessage


def test_small_form_bytes_on_the_wire() -> None:
    ping = command(m.Operation.CLIENT_PING, DSMessagingVersion=1)
    data = raw_packet(3, [("null", "/1", flex_shape(ping))])
    status, _, out = call(gateway(), data)
    assert status == 200
    assert b"DSK" in out
    assert b"flex.messaging.messages.AcknowledgeMessage" not in out


def test_flex_message_in_a_version_0_packet_is_answered_in_full_form() -> None:
    msg = m.RemotingMessage(destination="EchoService", operation="echo", body=[1], headers={"DSMessagingVersion": 1})
    (body,) = send(gateway(), msg, version=0, shape="encode")
    assert type(body.value) is m.AcknowledgeMessage
    assert body.value.body == 1


def test_a_shared_store_out_of_reach_is_a_fault_to_retry_not_an_internal_error(caplog: Any) -> None:
    # A session lookup or a service touching the shared store while Redis restarts.
    from amfkit.messaging.logstore import StoreError
    from amfkit.remoting import Gateway

    class Desk:
        def look(self) -> None:
            raise StoreError("redis redis://:secret@store.internal:6379/0: get key 's:1' failed: Connection refused")

    (body,) = send(Gateway({"Desk": Desk()}), remoting("look", destination="Desk", dsid="nil"))
    err = body.value
    assert type(err) is m.ErrorMessage
    assert err.faultCode == "Server.Processing.Unavailable"
    assert err.faultString == "the server's shared store cannot be reached now; try again"
    assert "store.internal" not in repr(err.__dict__)  # nothing of the store's address
    assert not [r for r in caplog.records if r.exc_info], "a traceback in the log"
    assert any("Connection refused" in r.getMessage() for r in caplog.records)
