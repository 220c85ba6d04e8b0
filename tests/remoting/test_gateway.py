"""The gateway's AMF core with AS2/AS3 NetConnection clients: calls, batching, faults,
credentials, headers and sessions (in process, through `Gateway.respond`)."""

from __future__ import annotations

import datetime
import logging
import struct

import pytest

import amfkit
from amfkit.remoting import packet
from amfkit.remoting.gateway import INTERNAL_ERROR_MESSAGE, Gateway
from amfkit.remoting.services import Services

from gateway_util import (
    EchoService,
    answer,
    authenticate,
    authenticate_async,
    call,
    fp9_args,
    gateway,
    nc,
    raw_packet,
    request,
)

STATUS_KEYS = {"level", "code", "description", "details", "type", "line"}


# --- calls -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 3])
def test_echo_round_trips_values(version: int) -> None:
    value = {"s": "héllo", "n": 1.5, "i": 7, "l": [1, None, True], "d": datetime.datetime(2020, 1, 2, 3, 4, 5), "b": b"\x00\x01"}
    if version == 0:
        value["b"] = "bytes travel as AMF3 only"  # plain AMF0 has no byte array
    body = nc(gateway(), "EchoService.echo", value, version=version)
    assert body.target == "/1/onResult"
    assert body.response == "null"
    assert body.value == value


def test_answer_has_the_request_version() -> None:
    gw = gateway()
    for version in (0, 1, 3):
        env = answer(gw, request(version, [("EchoService.echo", "/1", [1])]))
        assert env.version == version


def test_version_3_answer_uses_the_avm_plus_switch() -> None:
    status, _, out = call(gateway(), request(3, [("EchoService.echo", "/1", ["x"])]))
    assert status == 200
    # version, 0 headers, 1 body, target "/1/onResult", response "null", length, 0x11 switch
    assert out[:6] == b"\x00\x03\x00\x00\x00\x01"
    start = 6 + 2 + len("/1/onResult") + 2 + len("null") + 4
    assert out[start] == 0x11


def test_version_0_answer_is_plain_amf0() -> None:
    status, _, out = call(gateway(), request(0, [("EchoService.echo", "/1", ["x"])]))
    start = 6 + 2 + len("/1/onResult") + 2 + len("null") + 4
    assert out[start] == 0x02  # AMF0 string


def test_flash_player_9_amf3_arguments() -> None:
    data = raw_packet(3, [("EchoService.add", "/1", fp9_args(2, 40))])
    env = answer(gateway(), data)
    assert env.bodies[0].value == 42


@pytest.mark.parametrize("length", [0xFFFFFFFF, 0, 1, 12345])
def test_length_fields_are_not_trusted(length: int) -> None:
    data = raw_packet(0, [("EchoService.echo", "/1", b"\x0a\x00\x00\x00\x01\x02\x00\x02hi")], length=length)
    assert answer(gateway(), data).bodies[0].value == "hi"


def test_a_non_array_body_is_the_single_argument() -> None:
    data = raw_packet(0, [("EchoService.echo", "/1", b"\x02\x00\x02hi")])
    assert answer(gateway(), data).bodies[0].value == "hi"


def test_async_service_method() -> None:
    assert nc(gateway(), "EchoService.slow_echo", [1, 2]).value == [1, 2]


def test_context_protocol_follows_the_packet_version() -> None:
    assert nc(gateway(), "EchoService.protocol", version=0).value == "amf0"
    assert nc(gateway(), "EchoService.protocol", version=3).value == "amf3"


def test_services_may_be_a_services_object() -> None:
    services = Services()

    @services.service("Math")
    def double(x: int) -> int:
        return 2 * x

    gw = Gateway(services)
    assert nc(gw, "Math", 21).value == 42


def test_typed_objects_travel_both_ways() -> None:
    class Point:
        def __init__(self, x: int = 0, y: int = 0) -> None:
            self.x = x
            self.y = y

    amfkit.register_class(Point, "test.gateway.Point")
    try:
        out = nc(gateway(), "EchoService.echo", Point(1, 2), version=3).value
        assert isinstance(out, Point) and (out.x, out.y) == (1, 2)
        assert nc(gateway(), "EchoService.kind", Point(1, 2), version=0).value == "Point"
    finally:
        amfkit.unregister_class(Point)


# --- batching and faults ---------------------------------------------------------------


def test_batch_one_failing_body_does_not_fail_the_others() -> None:
    data = request(
        0,
        [
            ("EchoService.echo", "/1", ["a"]),
            ("EchoService.fail", "/2", ["boom"]),
            ("EchoService.add", "/3", [1, 2]),
            ("NoSuchService.x", "/4", []),
            ("EchoService.add", "/5", ["x"]),  # wrong argument type
            ("EchoService.echo", "/6", ["z"]),
        ],
    )
    env = answer(gateway(), data)
    targets = [b.target for b in env.bodies]
    assert targets == ["/1/onResult", "/2/onStatus", "/3/onResult", "/4/onStatus", "/5/onStatus", "/6/onResult"]
    assert env.bodies[0].value == "a"
    assert env.bodies[2].value == 3
    assert env.bodies[5].value == "z"
    assert env.bodies[1].value["code"] == "Server.Processing"
    assert env.bodies[3].value["code"] == "Server.ResourceUnavailable"
    assert env.bodies[4].value["code"] == "Client.Argument"


def test_on_status_fault_shape() -> None:
    body = nc(gateway(), "EchoService.fail", "it broke")
    assert body.target == "/1/onStatus"
    assert body.response == "null"
    status = body.value
    assert set(status) == STATUS_KEYS
    assert status["level"] == "error"
    assert status["code"] == "Server.Processing"
    # An unexpected exception's text stays in the log: only a Fault's reaches the client.
    assert status["description"] == INTERNAL_ERROR_MESSAGE
    assert status["details"] == ""
    assert status["type"] == ""
    assert status["line"] == 0


def test_fault_keeps_its_code_and_details() -> None:
    status = nc(gateway(), "EchoService.fault", "bad name").value
    assert status["code"] == "App.Custom"
    assert status["description"] == "bad name"
    assert status["details"] == {"field": "name"}


def test_no_traceback_without_debug(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="amfkit.gateway"):
        status, _, out = call(gateway(), request(0, [("EchoService.fail", "/1", ["secret path /etc"])]))
    assert b"Traceback" not in out and b"secret path" not in out
    assert b"test_gateway" not in out and b"gateway_util" not in out
    # ... but the server's log has it
    assert any(r.exc_info for r in caplog.records)
    assert any("secret path /etc" in r.getMessage() for r in caplog.records)


def test_debug_mode_sends_the_traceback() -> None:
    status = nc(gateway(debug=True), "EchoService.fail", "boom").value
    assert status["description"] == "boom"
    assert "Traceback" in status["details"]
    assert "RuntimeError: boom" in status["details"]
    assert status["type"] == "RuntimeError"


def test_unencodable_result_becomes_a_fault_for_that_body_only() -> None:
    data = request(3, [("EchoService.unencodable", "/1", []), ("EchoService.echo", "/2", [5])])
    env = answer(gateway(), data)
    assert env.bodies[0].target == "/1/onStatus"
    assert env.bodies[0].value["code"] == "Server.Processing"
    assert "cannot be encoded" in env.bodies[0].value["description"]
    assert env.bodies[1].value == 5


def test_default_hook_encodes_other_results() -> None:
    gw = gateway(default=lambda obj: f"<{type(obj).__name__}>")
    assert nc(gw, "EchoService.unencodable").value == "<object>"


def test_failing_default_hook_faults_that_body_only() -> None:
    def default(obj: object) -> object:
        raise ValueError("no way")

    env = answer(gateway(default=default), request(0, [("EchoService.unencodable", "/1", []), ("EchoService.echo", "/2", [1])]))
    assert env.bodies[0].target == "/1/onStatus" and "no way" in env.bodies[0].value["description"]
    assert env.bodies[1].value == 1


def test_private_names_are_not_callable() -> None:
    status = nc(gateway(), "EchoService.__init__").value
    assert status["code"] == "Server.ResourceUnavailable"


# --- headers and credentials -----------------------------------------------------------


def test_unknown_must_understand_header_faults_every_body() -> None:
    data = request(0, [("EchoService.echo", "/1", [1]), ("EchoService.echo", "/2", [2])], [("Exotic", 1, True)])
    env = answer(gateway(), data)
    assert [b.target for b in env.bodies] == ["/1/onStatus", "/2/onStatus"]
    assert all(b.value["code"] == "Client.UnknownHeader" for b in env.bodies)
    assert "Exotic" in env.bodies[0].value["description"]


def test_unknown_header_without_must_understand_is_ignored_and_visible() -> None:
    body = nc(gateway(), "EchoService.headers", headers=[("Exotic", 1, False)])
    assert body.value == ["Exotic"]


def test_understood_headers_option() -> None:
    body = nc(gateway(understood_headers=["Exotic"]), "EchoService.echo", 1, headers=[("Exotic", 1, True)])
    assert body.value == 1


@pytest.mark.parametrize("auth", [authenticate, authenticate_async])
def test_credentials_header_authenticates(auth) -> None:  # type: ignore[no-untyped-def]
    gw = gateway(authenticator=auth)
    creds = [("Credentials", {"userid": "alice", "password": "wonderland"}, False)]
    assert nc(gw, "EchoService.whoami", headers=creds).value == {"name": "alice", "roles": ["admin"]}
    assert nc(gw, "EchoService.secret", headers=creds).value == "s3cret"
    env = answer(gw, request(0, [("EchoService.echo", "/1", [1])], creds))
    assert env.headers == []  # no session needed: the client sends its credentials each time


def test_roles_are_checked() -> None:
    gw = gateway(authenticator=authenticate)
    bob = [("Credentials", {"userid": "bob", "password": "builder"}, False)]
    assert nc(gw, "EchoService.secret", headers=bob).value["code"] == "Client.Authorization"
    assert nc(gw, "EchoService.secret").value["code"] == "Client.Authentication"


def test_refused_credentials_fault_every_body() -> None:
    gw = gateway(authenticator=authenticate)
    creds = [("Credentials", {"userid": "alice", "password": "wrong"}, True)]
    env = answer(gw, request(0, [("EchoService.echo", "/1", [1]), ("EchoService.echo", "/2", [2])], creds))
    assert [b.target for b in env.bodies] == ["/1/onStatus", "/2/onStatus"]
    assert {b.value["code"] for b in env.bodies} == {"Client.Authentication"}


def test_malformed_credentials_header() -> None:
    gw = gateway(authenticator=authenticate)
    body = nc(gw, "EchoService.echo", 1, headers=[("Credentials", "alice:wonderland", False)])
    assert body.value["code"] == "Client.Authentication"


def test_credentials_without_an_authenticator_are_ignored() -> None:
    creds = [("Credentials", {"userid": "alice", "password": "x"}, True)]
    assert nc(gateway(), "EchoService.whoami", headers=creds).value is None


def test_authenticator_errors_are_server_faults() -> None:
    def broken(user: str, password: str) -> None:
        raise OSError("directory unreachable")

    body = nc(gateway(authenticator=broken), "EchoService.echo", 1, headers=[("Credentials", {"userid": "a", "password": "b"}, False)])
    assert body.value["code"] == "Server.Processing"


def test_authenticator_returning_true_names_the_user() -> None:
    gw = gateway(authenticator=lambda u, p: p == "ok")
    body = nc(gw, "EchoService.whoami", headers=[("Credentials", {"userid": "carol", "password": "ok"}, False)])
    assert body.value == {"name": "carol", "roles": []}


# --- sessions --------------------------------------------------------------------------


def _session_url(env: packet.Envelope) -> str:
    h = env.header("AppendToGatewayUrl")
    assert h is not None and isinstance(h.value, str)
    return h.value


def test_session_via_append_to_gateway_url() -> None:
    gw = gateway()
    env = answer(gw, request(0, [("EchoService.remember", "/1", ["kept"])]))
    suffix = _session_url(env)
    assert suffix.startswith("?amfkit_session=")
    assert not env.header("AppendToGatewayUrl").must_understand  # type: ignore[union-attr]
    # the next call, on the URL the client was told to use, sees the session
    env2 = answer(gw, request(0, [("EchoService.recall", "/1", [])]), path="/gateway" + suffix)
    assert env2.bodies[0].value == "kept"
    assert env2.header("AppendToGatewayUrl") is None
    # without it, no session
    assert nc(gw, "EchoService.recall").value is None


def test_no_session_is_created_for_plain_calls() -> None:
    gw = gateway()
    env = answer(gw, request(0, [("EchoService.echo", "/1", [1])]))
    assert env.headers == []
    assert len(gw.sessions) == 0  # type: ignore[arg-type]


def test_unknown_or_malformed_session_ids_are_not_adopted() -> None:
    gw = gateway()
    for sid in ("DEADBEEF-0000-0000-0000-000000000000", "x", "../../etc", "a" * 100):
        env = answer(gw, request(0, [("EchoService.remember", "/1", [1])]), path=f"/gateway?amfkit_session={sid}")
        fresh = _session_url(env)
        assert sid not in fresh
        assert fresh.startswith("&amfkit_session=")  # the URL already has a query string


def test_session_changes_are_saved() -> None:
    gw = gateway()
    suffix = _session_url(answer(gw, request(0, [("EchoService.remember", "/1", [1])])))
    answer(gw, request(0, [("EchoService.remember", "/1", [2])]), path="/gateway" + suffix)
    assert answer(gw, request(0, [("EchoService.recall", "/1", [])]), path="/gateway" + suffix).bodies[0].value == 2


def test_clear_credentials_moves_the_login_into_a_session() -> None:
    gw = gateway(authenticator=authenticate, clear_credentials=True)
    creds = [("Credentials", {"userid": "alice", "password": "wonderland"}, False)]
    env = answer(gw, request(0, [("EchoService.secret", "/1", [])], creds))
    assert env.bodies[0].value == "s3cret"
    clear = env.header("RequestPersistentHeader")
    assert clear is not None
    assert clear.value == {"name": "Credentials", "mustUnderstand": False, "data": None}
    suffix = _session_url(env)
    # the client dropped its Credentials header; the session carries the login
    env2 = answer(gw, request(0, [("EchoService.secret", "/1", [])]), path="/gateway" + suffix)
    assert env2.bodies[0].value == "s3cret"
    assert env2.headers == []


def test_session_param_name_is_configurable() -> None:
    gw = gateway(session_param="PHPSESSID")
    suffix = _session_url(answer(gw, request(0, [("EchoService.remember", "/1", ["v"])])))
    assert suffix.startswith("?PHPSESSID=")
    assert answer(gw, request(0, [("EchoService.recall", "/1", [])]), path="/gateway" + suffix).bodies[0].value == "v"


def test_version_zero_body_count_zero() -> None:
    env = answer(gateway(), struct.pack(">HHH", 0, 0, 0))
    assert env.bodies == [] and env.version == 0


def test_the_echo_service_class_is_instantiated_once() -> None:
    gw = Gateway({"EchoService": EchoService})
    assert nc(gw, "EchoService.add", 1, 1).value == 2
