"""Remoting interop with Py3AMF, over real HTTP on 127.0.0.1.

- amfkit's Client against Py3AMF's WSGI gateway (``pyamf.remoting.gateway.wsgi``), under
  wsgiref and under uvicorn's WSGI adapter: NetConnection AMF0 and AMF3, Flex
  RemoteObject, echo of many value types, faults, batching, credentials, sessions.
- Py3AMF's ``RemotingService`` client against amfkit's Gateway under uvicorn (AMF0 and
  AMF3), and amfkit's Client against amfkit's Gateway.

Where Py3AMF does something else than amfkit, a test is named after it and says what
Py3AMF does (its codec findings are in docs/py3amf.md).
"""

from __future__ import annotations

import array
import datetime
import math
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

import amfkit
from amfkit.remoting import Context, Principal, requires
from amfkit.remoting.client import AsyncClient, Client, TransportError
from amfkit.remoting.gateway import INTERNAL_ERROR_MESSAGE, Gateway
from amfkit.remoting.services import Fault

import peers  # imports pyamf with its import-time warnings handled
from servers import serve_asgi, serve_py3amf_gateway, serve_wsgi

# Py3AMF (the peer, its gateway included) reads dates with a call CPython 3.12+ deprecates.
pytestmark = pytest.mark.filterwarnings(r"ignore:datetime\.datetime\.utcfromtimestamp:DeprecationWarning")

pyamf = peers.pyamf
assert_same_graph = peers.assert_same_graph

MODES = [
    pytest.param({"amf3": False}, id="amf0"),
    pytest.param({"amf3": True}, id="amf3"),
    pytest.param({"flex": True}, id="flex"),
]
NETCONNECTION = MODES[:2]


# --------------------------------------------------------------------------------------
# Py3AMF's gateway


class Echo:
    """What both gateways' echo services do."""

    def echo(self, value: Any) -> Any:
        return value

    def echo_args(self, *args: Any) -> list[Any]:
        return list(args)

    def same(self, a: Any, b: Any) -> bool:
        return a is b

    def fail(self, message: str) -> None:
        raise ValueError(message)


class EchoService(Echo):
    """The services given to Py3AMF's gateway."""

    def type_name(self, value: Any) -> str:
        return f"{type(value).__module__}.{type(value).__qualname__}"


def _authenticate(userid: str | None, password: str | None) -> bool:
    return (userid, password) == ("alice", "wonderland")


class Point:
    def __init__(self, x: int, y: int) -> None:
        self.x = x
        self.y = y


@pytest.fixture(scope="module", params=["wsgiref", "uvicorn"])
def py3amf_gateway(request: pytest.FixtureRequest) -> Iterator[str]:
    """Py3AMF's WSGI gateway with EchoService, under wsgiref or uvicorn: its URL."""
    with serve_py3amf_gateway({"EchoService": EchoService()}, server=request.param) as server:
        yield server.url + "/gateway"


@pytest.fixture(scope="module")
def py3amf_wsgiref() -> Iterator[str]:
    """Py3AMF's gateway under wsgiref only (its error replies are only whole there)."""
    with serve_py3amf_gateway({"EchoService": EchoService()}) as server:
        yield server.url + "/gateway"


@pytest.fixture(scope="module")
def py3amf_secured() -> Iterator[str]:
    with serve_py3amf_gateway({"EchoService": EchoService()}, authenticator=_authenticate) as server:
        yield server.url + "/gateway"


def _client(url: str, mode: dict[str, Any], **options: Any) -> Client:
    return Client(url, **mode, **options)


# Values that make the round trip client -> Py3AMF gateway -> client unchanged, in every
# mode (compared by AMF meaning and sharing with peers.assert_same_graph).
_shared = {"shared": True}
_cycle: list[Any] = [1]
_cycle.append(_cycle)
ROUND_TRIP = {
    "null": None,
    "true": True,
    "false": False,
    "zero": 0,
    "int": 123456,
    "negative": -98765,
    "int29-max": 2**28 - 1,
    "int29-min": -(2**28),
    "beyond-int29": 2**28,
    "big": 2**52,
    "float": 3.25,
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
    "empty-string": "",
    "unicode": "héllo wörld ✓ 𝄞",
    "long-string": "x" * 70_000,
    "list": [1, "two", 3.5, None, True],
    "nested": {"a": {"b": {"c": [1, {"d": []}]}}},
    "empty-dict": {},
    "datetime": datetime.datetime(2021, 6, 7, 8, 9, 10, 123000),
    "epoch": datetime.datetime(1970, 1, 1),
    "pre-1970-whole-seconds": datetime.datetime(1960, 5, 6, 7, 8, 9),
    "bytes": b"\x00\x01\xfe\xff",
    "empty-bytes": b"",
    "mixed": amfkit.MixedArray({0: "a", 1: "b", "key": "value"}),
    "array-collection": amfkit.ArrayCollection([1, {"a": 2}]),
    "object-proxy": amfkit.ObjectProxy({"a": 1}),
    "undefined": amfkit.Undefined,
    "dense-list-of-dicts": [{"id": i, "name": f"n{i}"} for i in range(50)],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(ROUND_TRIP))
def test_echo_through_py3amf_gateway(py3amf_gateway: str, mode: dict[str, Any], name: str) -> None:
    value = ROUND_TRIP[name]
    with _client(py3amf_gateway, mode) as c:
        assert_same_graph(value, c.EchoService.echo(value))


@pytest.mark.parametrize("mode", [MODES[1], MODES[2]])
def test_shared_references_and_cycles_survive_in_amf3(py3amf_gateway: str, mode: dict[str, Any]) -> None:
    value = {"pair": [_shared, _shared], "cycle": _cycle}
    with _client(py3amf_gateway, mode) as c:
        out = c.EchoService.echo(value)
        assert_same_graph(value, out)
        assert out["pair"][0] is out["pair"][1]
        assert out["cycle"][1] is out["cycle"]
        # two arguments that are one object stay one object on the server
        assert c.EchoService.same(_shared, _shared) is True
        assert c.EchoService.same(_shared, dict(_shared)) is False


@pytest.mark.parametrize("mode", MODES)
def test_several_arguments(py3amf_gateway: str, mode: dict[str, Any]) -> None:
    with _client(py3amf_gateway, mode) as c:
        assert c.EchoService.echo_args() == []
        assert c.EchoService.echo_args(1, "a", [2], {"b": None}) == [1, "a", [2], {"b": None}]
        assert c.call("EchoService.echo_args", 5) == [5]


@pytest.mark.parametrize("mode", MODES)
def test_registered_class_round_trips(py3amf_gateway: str, mode: dict[str, Any]) -> None:
    with peers.registered(Point, "test.interop.Point"):
        with _client(py3amf_gateway, mode) as c:
            out = c.EchoService.echo(Point(1, 2))
            assert type(out) is Point and vars(out) == {"x": 1, "y": 2}
            assert c.EchoService.type_name(Point(1, 2)).endswith(".Point")


@pytest.mark.parametrize("mode", MODES)
def test_what_python_types_py3amf_sees(py3amf_gateway: str, mode: dict[str, Any]) -> None:
    with _client(py3amf_gateway, mode) as c:
        assert c.EchoService.type_name({"a": 1}) == "pyamf.ASObject"
        assert c.EchoService.type_name([1]) == "builtins.list"
        assert c.EchoService.type_name(b"ab") == "pyamf.amf3.ByteArray"
        assert c.EchoService.type_name(amfkit.MixedArray({"k": 1})) == "pyamf.MixedArray"
        assert c.EchoService.type_name(amfkit.ArrayCollection([])) == "pyamf.flex.ArrayCollection"
        assert c.EchoService.type_name(datetime.datetime(2020, 1, 1)) == "datetime.datetime"
        number = c.EchoService.type_name(1.0)
        # AMF0 has one number type, and Py3AMF decodes integral AMF0 numbers as int
        assert number == ("builtins.int" if mode.get("amf3") is False else "builtins.float")


# -- faults -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_service_exception_is_a_fault(py3amf_gateway: str, mode: dict[str, Any]) -> None:
    with _client(py3amf_gateway, mode) as c:
        with pytest.raises(Fault) as info:
            c.EchoService.fail("it went wrong")
    assert str(info.value) == "it went wrong"
    assert info.value.code == "ValueError"  # Py3AMF: the exception's class name
    assert info.value.details is None  # no traceback unless the gateway runs in debug


@pytest.mark.parametrize("mode", NETCONNECTION)
def test_netconnection_status_object_shape(py3amf_gateway: str, mode: dict[str, Any]) -> None:
    with _client(py3amf_gateway, mode) as c, pytest.raises(Fault) as info:
        c.EchoService.fail("x")
    # an anonymous object with exactly these members
    assert info.value.raw == {  # type: ignore[attr-defined]
        "code": "ValueError",
        "description": "x",
        "details": None,
        "level": "error",
        "type": "",
    }


def test_flex_error_message_shape(py3amf_gateway: str) -> None:
    with Client(py3amf_gateway, flex=True) as c, pytest.raises(Fault) as info:
        c.EchoService.fail("x")
    error = info.value.raw  # type: ignore[attr-defined]
    assert isinstance(error, amfkit.remoting.messages.ErrorMessage)
    assert (error.faultCode, error.faultString, error.faultDetail) == ("ValueError", "x", None)
    # Py3AMF writes the exception as rootCause {message, name}, and seconds, not
    # milliseconds, as the timestamp
    assert error.rootCause == {"message": "x", "name": "ValueError"}
    assert error.extendedData is None
    assert 1e9 < error.timestamp < 1e11


@pytest.mark.parametrize("mode", MODES)
def test_unknown_service_and_method(py3amf_gateway: str, mode: dict[str, Any]) -> None:
    with _client(py3amf_gateway, mode) as c:
        with pytest.raises(Fault) as info:
            c.NoSuchService.method()
        assert info.value.code == "Service.ResourceNotFound"
        with pytest.raises(Fault) as info:
            c.EchoService.noSuchMethod()
        assert info.value.code == "Service.MethodNotFound"
        with pytest.raises(Fault) as info:
            c.EchoService["_private"]()
        assert info.value.code == "Service.MethodInvalid"
        with pytest.raises(Fault) as info:
            c.EchoService.echo()  # wrong argument count: a TypeError in the service
        assert info.value.code == "TypeError"


# -- batching ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_batch_through_py3amf_gateway(py3amf_gateway: str, mode: dict[str, Any]) -> None:
    with _client(py3amf_gateway, mode) as c:
        with c.batch() as b:
            first = b.EchoService.echo("first")
            failing = b.EchoService.fail("only me")
            missing = b.Nope.nothing()
            last = b.EchoService.echo_args(1, 2)
    assert first.result() == "first"
    assert last.result() == [1, 2]
    with pytest.raises(Fault, match="only me"):
        failing.result()
    assert isinstance(missing.exception(), Fault)


def test_async_client_against_py3amf_gateway(py3amf_gateway: str) -> None:
    import asyncio

    async def main() -> None:
        for mode in ({"amf3": False}, {"amf3": True}, {"flex": True}):
            async with AsyncClient(py3amf_gateway, **mode) as c:
                results = await asyncio.gather(*(c.EchoService.echo(i) for i in range(6)))
                assert results == list(range(6))
                async with c.batch() as b:
                    ok, bad = b.EchoService.echo([1]), b.EchoService.fail("no")
                assert ok.result() == [1]
                assert isinstance(bad.exception(), Fault)

    asyncio.run(main())


# -- credentials ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", NETCONNECTION)
def test_credentials_header_with_py3amf_authenticator(py3amf_secured: str, mode: dict[str, Any]) -> None:
    with _client(py3amf_secured, mode, credentials=("alice", "wonderland")) as c:
        assert c.EchoService.echo("in") == "in"
    for credentials in [("alice", "wrong"), None]:
        with _client(py3amf_secured, mode, credentials=credentials) as c, pytest.raises(Fault) as info:
            c.EchoService.echo("in")
        assert info.value.code == "AuthenticationError"
        assert str(info.value) == "Authentication failed"


def test_flex_login_is_not_supported_by_py3amf(py3amf_gateway: str) -> None:
    # Py3AMF answers a LOGIN command with an ErrorMessage; the client raises it.
    with Client(py3amf_gateway, flex=True, credentials=("alice", "wonderland")) as c:
        with pytest.raises(Fault) as info:
            c.EchoService.echo(1)
    assert info.value.code == "Server.Call.Failed"
    assert str(info.value) == "Authorization is not supported in RemoteObject"


def test_flex_mode_gets_a_dsid_from_py3amf(py3amf_gateway: str) -> None:
    with Client(py3amf_gateway, flex=True) as c:
        c.connect()
        dsid = c.dsid
        assert dsid is not None and len(dsid) == 36  # Py3AMF: a lowercase uuid4
        c.EchoService.echo(1)
        assert c.dsid == dsid


# -- the HTTP session -------------------------------------------------------------------


def _cookie_gateway() -> Any:
    """Py3AMF's gateway behind a middleware that sets a session cookie, with a service
    that returns the Cookie header it got (Py3AMF's expose_request)."""
    from pyamf.remoting.gateway.wsgi import WSGIGateway

    gateway = WSGIGateway({"EchoService": EchoService()})
    gateway.addService(lambda environ: environ.get("HTTP_COOKIE"), "Session.cookie", expose_request=True)

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            return start_response(status, [*headers, ("Set-Cookie", "sid=py3amf; Path=/")], exc_info)

        return gateway(environ, start)

    return app


@pytest.mark.parametrize("mode", MODES)
def test_cookies_are_sent_back_to_py3amf(mode: dict[str, Any]) -> None:
    with serve_wsgi(_cookie_gateway(), server="uvicorn") as server, _client(server.url + "/gateway", mode) as c:
        first = c.call("Session.cookie")
        assert c.call("Session.cookie") == "sid=py3amf"
        # in Flex mode the ping was the first request, so even the first call had it
        assert first == ("sid=py3amf" if mode.get("flex") else None)


def test_keep_alive_with_py3amf_under_uvicorn() -> None:
    from pyamf.remoting.gateway.wsgi import WSGIGateway

    peers_seen: set[Any] = set()
    gateway = WSGIGateway({"EchoService": EchoService()})

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        peers_seen.add((environ.get("REMOTE_ADDR"), environ.get("HTTP_CONNECTION")))
        return gateway(environ, start_response)

    with serve_wsgi(app, server="uvicorn") as server, Client(server.url) as c:
        for i in range(5):
            assert c.EchoService.echo(i) == i
    assert len(peers_seen) == 1


# --------------------------------------------------------------------------------------
# Where Py3AMF's gateway differs (each test says what it does)


def test_py3amf_amf0_request_arguments_are_not_counted_as_a_reference(py3amf_wsgiref: str) -> None:
    # The AMF0 spec counts the request body's argument array in the reference table
    # (amfkit writes [o, o] as arguments array #0, list #1, o #2, then a reference to #2).
    # Py3AMF's gateway reads the argument array without counting it, so the reference
    # points past its table: it fails to decode the request (HTTP 500 from wsgiref,
    # because Py3AMF's own 400 reply is a str that wsgiref refuses to send).
    shared = {"a": 1}
    with Client(py3amf_wsgiref, amf3=False) as c:
        with pytest.raises(TransportError) as info:
            c.EchoService.echo([shared, shared])
        assert info.value.status == 500
        with pytest.raises(TransportError):
            c.EchoService.same(shared, shared)
        # A Date before the shared object takes an entry in amfkit's table and in
        # Py3AMF's decoder alike (Flash Player numbers dates): the argument array is still
        # the one Py3AMF's gateway leaves out, so the reference is still past its table.
        d = datetime.datetime(2020, 1, 2)
        with pytest.raises(TransportError) as info:
            c.EchoService.echo([d, shared, shared])
        assert info.value.status == 500
        with pytest.raises(TransportError):
            c.EchoService.echo([d, d, shared, shared])
    with Client(py3amf_wsgiref, amf3=True) as c:  # AMF3 references are right
        assert c.EchoService.same(shared, shared) is True


def test_py3amf_error_replies_are_not_whole_under_uvicorn() -> None:
    # Py3AMF's WSGI gateway returns a str body for its 400/500 replies; under uvicorn's
    # WSGI adapter the headers go out and the connection is dropped mid-body.
    with serve_py3amf_gateway({"EchoService": EchoService()}, server="uvicorn") as server:
        with Client(server.url) as c:
            with pytest.raises(TransportError, match="RemoteProtocolError"):
                c.EchoService.echo(array.array("i", [1, 2]))
            assert c.EchoService.echo(1) == 1  # the server keeps serving


@pytest.mark.parametrize("mode", MODES)
def test_py3amf_cannot_read_vectors(py3amf_wsgiref: str, mode: dict[str, Any]) -> None:
    with _client(py3amf_wsgiref, mode) as c:
        for value in (array.array("i", [1, 2]), array.array("d", [1.5]), amfkit.ObjectVector([{"a": 1}])):
            with pytest.raises(TransportError) as info:
                c.EchoService.echo(value)
            assert info.value.status == 500
            assert info.value.content_type == "text/plain"


@pytest.mark.parametrize("mode", MODES)
def test_py3amf_turns_a_dictionary_into_a_pair(py3amf_wsgiref: str, mode: dict[str, Any]) -> None:
    # Py3AMF (pure build) decodes an AMF3 Dictionary as a tuple (dict, weak_keys) and
    # writes that tuple back as an array; AMF3 object keys come back as strings.
    with _client(py3amf_wsgiref, mode) as c:
        assert c.EchoService.echo(amfkit.Dictionary({1: "a"}, weak_keys=True)) == [{"1": "a"}, True]


@pytest.mark.parametrize("mode", MODES)
def test_py3amf_drops_unknown_aliases(py3amf_wsgiref: str, mode: dict[str, Any]) -> None:
    # An unregistered alias decodes to pyamf.TypedObject, which Py3AMF writes back as
    # an anonymous object.
    with _client(py3amf_wsgiref, mode) as c:
        out = c.EchoService.echo(amfkit.TypedObject("org.example.NotHere", {"x": 1}))
    assert type(out) is dict and out == {"x": 1}


@pytest.mark.parametrize("mode", MODES)
def test_py3amf_xml_comes_back_as_element_tree_text(py3amf_wsgiref: str, mode: dict[str, Any]) -> None:
    # Py3AMF parses XML into an ElementTree element and writes it back serialized by
    # ElementTree, as AMF3 XML (0x0B) in an AMF3 reply and as an XML document in AMF0.
    with _client(py3amf_wsgiref, mode) as c:
        for value in (amfkit.XML("<a><b/></a>"), amfkit.XMLDocument("<a><b/></a>")):
            out = c.EchoService.echo(value)
            if mode.get("amf3") is False:
                assert out == amfkit.XMLDocument("<a><b /></a>")
            else:
                assert out == amfkit.XML("<a><b /></a>")


@pytest.mark.parametrize("mode", MODES)
def test_py3amf_recompresses_zlib_looking_byte_arrays(py3amf_wsgiref: str, mode: dict[str, Any]) -> None:
    data = zlib.compress(b"hello " * 20)
    with _client(py3amf_wsgiref, mode) as c:
        out = c.EchoService.echo(data)
    # Py3AMF inflates a ByteArray starting 78 9c on read and deflates it again on write
    # with the second byte set to da: other bytes, the same inflated content.
    assert out != data
    assert out[:2] == b"\x78\xda"
    assert zlib.decompress(out) == b"hello " * 20


@pytest.mark.parametrize("mode", MODES)
def test_py3amf_writes_pre_1970_fractions_wrong(py3amf_wsgiref: str, mode: dict[str, Any]) -> None:
    with _client(py3amf_wsgiref, mode) as c:
        out = c.EchoService.echo(datetime.datetime(1969, 12, 31, 23, 59, 59, 500000))
    assert out == datetime.datetime(1969, 12, 31, 23, 59, 58, 500000)  # a second early


def test_py3amf_amf3_mixed_array_without_keys_becomes_a_list(py3amf_wsgiref: str) -> None:
    with Client(py3amf_wsgiref) as c:
        assert c.EchoService.echo(amfkit.MixedArray({0: "a", 1: "b"})) == ["a", "b"]
    with Client(py3amf_wsgiref, amf3=False) as c:
        out = c.EchoService.echo(amfkit.MixedArray({0: "a", 1: "b"}))
        assert type(out) is amfkit.MixedArray and out == {0: "a", 1: "b"}


def test_py3amf_amf0_negative_zero_loses_its_sign(py3amf_wsgiref: str) -> None:
    with Client(py3amf_wsgiref, amf3=False) as c:
        out = c.EchoService.echo(-0.0)
    assert out == 0 and math.copysign(1, out) == 1.0
    with Client(py3amf_wsgiref) as c:
        assert math.copysign(1, c.EchoService.echo(-0.0)) == -1.0


def test_py3amf_does_not_accept_gzip_requests(py3amf_wsgiref: str) -> None:
    with Client(py3amf_wsgiref, compress_requests=1) as c, pytest.raises(TransportError) as info:
        c.EchoService.echo("x")
    assert info.value.status == 500  # its 400 "could not decode" reply, broken by wsgiref


def test_py3amf_gateway_rejects_get(py3amf_wsgiref: str) -> None:
    import httpx

    response = httpx.get(py3amf_wsgiref)
    assert response.status_code == 500  # its 400 reply is a str, which wsgiref refuses


# --------------------------------------------------------------------------------------
# amfkit's Gateway (under uvicorn): amfkit's Client, and Py3AMF's RemotingService


class GatewayEcho(Echo):
    """The services given to amfkit's gateway."""

    def fault(self, message: str, code: str) -> None:
        raise Fault(message, code=code, details={"why": message})

    def add(self, a: int, b: int) -> int:
        return a + b

    async def slow_echo(self, value: Any) -> Any:
        import asyncio

        await asyncio.sleep(0.01)
        return value

    def whoami(self, context: Context) -> str | None:
        return context.principal.name if context.principal else None

    def header_names(self, context: Context) -> list[str]:
        return sorted(context.headers)

    def remember(self, value: Any, context: Context) -> bool:
        context.session["value"] = value
        return True

    def recall(self, context: Context) -> Any:
        return context.session.get("value")

    @requires("admin")
    def admin_only(self) -> str:
        return "secret"

    def text(self, size: int) -> str:
        return "abcdefgh" * (size // 8)


def _gateway_authenticator(userid: str, password: str) -> Principal | None:
    users = {"alice": ("wonderland", {"admin"}), "bob": ("builder", set())}
    if userid in users and users[userid][0] == password:
        return Principal(userid, frozenset(users[userid][1]))
    return None


@pytest.fixture(scope="module")
def amfkit_gateway() -> Iterator[str]:
    gateway = Gateway({"EchoService": GatewayEcho()}, authenticator=_gateway_authenticator)
    with serve_asgi(gateway) as server:
        yield server.url + "/gateway"


@pytest.fixture(scope="module")
def amfkit_gateway_clearing() -> Iterator[str]:
    """A gateway that trades NetConnection credentials for a session (clear_credentials)."""
    gateway = Gateway({"EchoService": GatewayEcho()}, authenticator=_gateway_authenticator, clear_credentials=True)
    with serve_asgi(gateway) as server:
        yield server.url + "/gateway"


# Values amfkit's gateway gives back exactly as sent, in every mode, beyond ROUND_TRIP:
# the types Py3AMF cannot carry.
AMFKIT_ONLY = {
    "vector-int": array.array("i", [1, -2, 3]),
    "vector-uint": array.array("I", [1, 2**32 - 1]),
    "vector-double": array.array("d", [1.5, -0.0]),
    "object-vector": amfkit.ObjectVector([{"a": 1}, None], type_name="Object"),
    "dictionary": amfkit.Dictionary({1: "a", "k": [2]}, weak_keys=True),
    "typed": amfkit.TypedObject("org.example.NotRegistered", {"x": 1}),
    "xml": amfkit.XML("<a><b>t</b></a>"),
    "xml-document": amfkit.XMLDocument("<a><b>t</b></a>"),
    "pre-1970-fraction": datetime.datetime(1969, 12, 31, 23, 59, 59, 500000),
    "zlib-bytes": zlib.compress(b"hello " * 20),
    "negative-zero": -0.0,
    "mixed-int-keys-only": amfkit.MixedArray({0: "a", 1: "b"}),
    "shared-and-cycle": {"pair": [_shared, _shared], "cycle": _cycle},
}


def _same_exactly(expected: Any, actual: Any) -> None:
    if isinstance(expected, array.array):
        assert type(actual) is array.array and actual.typecode == expected.typecode and actual == expected
    elif isinstance(expected, float) and expected == 0:
        assert actual == 0 and math.copysign(1, actual) == math.copysign(1, expected)
    elif isinstance(expected, amfkit.ObjectVector):
        assert type(actual) is amfkit.ObjectVector and list(actual) == list(expected)
        assert (actual.type_name, actual.fixed) == (expected.type_name, expected.fixed)
    elif isinstance(expected, (amfkit.XML, amfkit.XMLDocument)):
        assert type(actual) is type(expected) and actual == expected
    else:
        assert_same_graph(expected, actual)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", [*ROUND_TRIP, *AMFKIT_ONLY])
def test_echo_through_amfkit_gateway(amfkit_gateway: str, mode: dict[str, Any], name: str) -> None:
    value = ROUND_TRIP[name] if name in ROUND_TRIP else AMFKIT_ONLY[name]
    with _client(amfkit_gateway, mode) as c:
        out = c.EchoService.echo(value)
    amf0 = mode.get("amf3") is False
    if name == "mixed-int-keys-only" and not amf0:
        # an AMF3 array without string keys is a dense array: it decodes as a list
        value = ["a", "b"]
    elif name == "xml" and amf0:
        # AMF0 has one XML type, the XML document
        value = amfkit.XMLDocument(value)
    _same_exactly(value, out)


@pytest.mark.parametrize("mode", MODES)
def test_arguments_and_identity_through_amfkit_gateway(amfkit_gateway: str, mode: dict[str, Any]) -> None:
    shared = {"s": 1}
    with _client(amfkit_gateway, mode) as c:
        assert c.EchoService.same(shared, shared) is True
        assert c.EchoService.same(shared, dict(shared)) is False
        assert c.EchoService.echo_args(1, [2], {"3": 3}) == [1, [2], {"3": 3}]
        assert c.EchoService.add(2, 3) == 5
        assert c.EchoService.slow_echo("later") == "later"


@pytest.mark.parametrize("mode", MODES)
def test_faults_from_amfkit_gateway(amfkit_gateway: str, mode: dict[str, Any]) -> None:
    with _client(amfkit_gateway, mode) as c:
        with pytest.raises(Fault) as info:
            c.EchoService.fault("chosen by the service", "App.Custom")
        assert (str(info.value), info.value.code) == ("chosen by the service", "App.Custom")
        if mode.get("flex"):
            # an ErrorMessage's faultDetail is a string: other details go to extendedData
            assert info.value.details == ""
            assert info.value.raw.extendedData == {"why": "chosen by the service"}  # type: ignore[attr-defined]
        else:
            assert info.value.details == {"why": "chosen by the service"}
        with pytest.raises(Fault) as info:
            c.EchoService.fail("plain exception")
        # a plain exception's text stays in the server's log (Fault is for the client)
        assert (str(info.value), info.value.code) == (INTERNAL_ERROR_MESSAGE, "Server.Processing")
        assert "Traceback" not in repr(info.value.details)  # no traceback without debug
        with pytest.raises(Fault) as info:
            c.NoSuchService.m()
        assert info.value.code == "Server.ResourceUnavailable"
        with pytest.raises(Fault) as info:
            c.EchoService.add(1)
        assert info.value.code == "Client.Argument"
        with pytest.raises(Fault) as info:
            c.EchoService.add("1", 2)
        assert info.value.code == "Client.Argument"
        with pytest.raises(Fault) as info:
            c.EchoService.admin_only()
        assert info.value.code == "Client.Authentication"


def test_flex_error_message_from_amfkit_gateway_has_every_field(amfkit_gateway: str) -> None:
    with Client(amfkit_gateway, flex=True) as c, pytest.raises(Fault) as info:
        c.EchoService.fault("x", "App.Code")
    error = info.value.raw  # type: ignore[attr-defined]
    assert isinstance(error, amfkit.remoting.messages.ErrorMessage)
    assert error.faultCode == "App.Code" and error.faultString == "x"
    assert error.extendedData == {"why": "x"}
    assert error.correlationId and error.messageId and error.clientId == c.dsid
    assert isinstance(error.timestamp, (int, float)) and error.timestamp > 1e12  # milliseconds


@pytest.mark.parametrize("mode", MODES)
def test_batch_through_amfkit_gateway(amfkit_gateway: str, mode: dict[str, Any]) -> None:
    with _client(amfkit_gateway, mode) as c:
        with c.batch() as b:
            calls = [b.EchoService.echo(i) for i in range(5)]
            bad = b.EchoService.fail("one of many")
            missing = b["com.example.Missing"].m()
            last = b.EchoService.add(1, 2)
    assert [p.result() for p in calls] == list(range(5))
    assert last.result() == 3
    with pytest.raises(Fault) as info:
        bad.result()
    assert (str(info.value), info.value.code) == (INTERNAL_ERROR_MESSAGE, "Server.Processing")
    assert missing.exception().code == "Server.ResourceUnavailable"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
def test_credentials_with_amfkit_gateway(amfkit_gateway: str, mode: dict[str, Any]) -> None:
    with _client(amfkit_gateway, mode, credentials=("alice", "wonderland")) as c:
        assert c.EchoService.whoami() == "alice"
        assert c.EchoService.admin_only() == "secret"
        assert c.EchoService.whoami() == "alice"
    with _client(amfkit_gateway, mode, credentials=("bob", "builder")) as c:
        assert c.EchoService.whoami() == "bob"
        with pytest.raises(Fault) as info:
            c.EchoService.admin_only()
        assert info.value.code == "Client.Authorization"
    with _client(amfkit_gateway, mode, credentials=("alice", "wrong")) as c, pytest.raises(Fault) as info:
        c.EchoService.whoami()
    assert info.value.code == "Client.Authentication"
    with _client(amfkit_gateway, mode) as c:
        assert c.EchoService.whoami() is None


def test_flex_logout_with_amfkit_gateway(amfkit_gateway: str) -> None:
    with Client(amfkit_gateway, flex=True, credentials=("alice", "wonderland")) as c:
        assert c.EchoService.whoami() == "alice"
        c.logout()
        assert c.EchoService.whoami() is None


@pytest.mark.parametrize("mode", MODES)
def test_sessions_with_amfkit_gateway(amfkit_gateway: str, mode: dict[str, Any]) -> None:
    with _client(amfkit_gateway, mode) as c, _client(amfkit_gateway, mode) as other:
        assert c.EchoService.recall() is None
        assert c.EchoService.remember({"cart": [1, 2]}) is True
        if not mode.get("flex"):
            # NetConnection: the session id came back as AppendToGatewayUrl
            assert "?amfkit_session=" in c.url
        assert c.EchoService.recall() == {"cart": [1, 2]}
        assert other.EchoService.recall() is None


@pytest.mark.parametrize("mode", NETCONNECTION)
def test_clear_credentials_trades_the_password_for_a_session(amfkit_gateway_clearing: str, mode: dict[str, Any]) -> None:
    with _client(amfkit_gateway_clearing, mode, credentials=("alice", "wonderland")) as c:
        assert c.EchoService.header_names() == ["Credentials"]
        # the gateway answered AppendToGatewayUrl and RequestPersistentHeader(Credentials, null)
        assert c.amf_headers == {}
        assert "amfkit_session=" in c.url
        assert c.EchoService.header_names() == []
        assert c.EchoService.whoami() == "alice"
        assert c.EchoService.admin_only() == "secret"


@pytest.mark.parametrize("gzip", [True, False])
def test_gzip_with_amfkit_gateway(amfkit_gateway: str, gzip: bool) -> None:
    import httpx

    seen: list[httpx.Response] = []
    with httpx.Client(event_hooks={"response": [seen.append]}) as http:
        with Client(amfkit_gateway, gzip=gzip, compress_requests=True, http_client=http) as c:
            assert c.EchoService.text(100_000) == "abcdefgh" * 12_500
            assert c.EchoService.echo("z" * 50_000) == "z" * 50_000  # a gzip request body
    assert all(r.status_code == 200 for r in seen)
    assert (seen[0].headers.get("content-encoding") == "gzip") is gzip
    size = int(seen[0].headers["content-length"])
    assert size < 10_000 if gzip else size > 100_000


def test_async_client_against_amfkit_gateway(amfkit_gateway: str) -> None:
    import asyncio

    async def main() -> None:
        for mode in ({"amf3": False}, {"amf3": True}, {"flex": True}):
            async with AsyncClient(amfkit_gateway, credentials=("alice", "wonderland"), **mode) as c:
                results = await asyncio.gather(*(c.EchoService.slow_echo(i) for i in range(20)))
                assert results == list(range(20))
                assert await c.EchoService.whoami() == "alice"
                async with c.batch() as b:
                    ok, bad = b.EchoService.add(1, 1), b.EchoService.fail("async batch")
                assert ok.result() == 2
                assert isinstance(bad.exception(), Fault)

    asyncio.run(main())


def test_client_against_amfkit_gateway_wsgi_adapter() -> None:
    gateway = Gateway({"EchoService": GatewayEcho()})
    for server_kind in ("wsgiref", "uvicorn"):
        with serve_wsgi(gateway.wsgi, server=server_kind) as server:
            for mode in ({"amf3": False}, {"amf3": True}, {"flex": True}):
                with Client(server.url + "/gateway", **mode) as c:
                    assert c.EchoService.echo({"via": server_kind}) == {"via": server_kind}
                    with pytest.raises(Fault):
                        c.EchoService.fail("wsgi")


def test_transport_errors_from_amfkit_gateway(amfkit_gateway: str) -> None:
    with Client(amfkit_gateway.replace("/gateway", "/elsewhere")) as c, pytest.raises(TransportError) as info:
        c.EchoService.echo(1)
    assert info.value.status == 404
    small = Gateway({"EchoService": GatewayEcho()}, max_body_size=1000)
    with serve_asgi(small) as server, Client(server.url + "/gateway") as c:
        with pytest.raises(TransportError) as info:
            c.EchoService.echo("x" * 5000)
        assert info.value.status == 413
        assert c.EchoService.echo("still serving") == "still serving"


# -- Py3AMF's RemotingService client against amfkit's gateway ---------------------------


PY3AMF_VERSIONS = [pytest.param(peers.AMF0, id="amf0"), pytest.param(peers.AMF3, id="amf3")]


def _py3amf_client(url: str, version: int, **options: Any) -> Any:
    from pyamf.remoting.client import RemotingService

    return RemotingService(url, amf_version=version, **options)


# What Py3AMF's client can send and get back unchanged (it writes bytes as strings, so
# they go as pyamf.amf3.ByteArray through peers.to_py3amf).
PY3AMF_CLIENT_VALUES = dict(ROUND_TRIP)


@pytest.mark.parametrize("version", PY3AMF_VERSIONS)
@pytest.mark.parametrize("name", list(PY3AMF_CLIENT_VALUES))
def test_py3amf_client_echo_through_amfkit_gateway(amfkit_gateway: str, version: int, name: str) -> None:
    value = PY3AMF_CLIENT_VALUES[name]
    service = _py3amf_client(amfkit_gateway, version).getService("EchoService")
    with peers._quiet_dates():
        out = service.echo(peers.to_py3amf(value))
    assert_same_graph(value, peers.from_py3amf(out))


@pytest.mark.parametrize("version", PY3AMF_VERSIONS)
def test_py3amf_client_registered_class_through_amfkit_gateway(amfkit_gateway: str, version: int) -> None:
    with peers.registered(Point, "test.interop.Point"):
        out = _py3amf_client(amfkit_gateway, version).getService("EchoService").echo(Point(3, 4))
    assert type(out) is Point and vars(out) == {"x": 3, "y": 4}


@pytest.mark.parametrize("version", PY3AMF_VERSIONS)
def test_py3amf_client_gets_faults_from_amfkit_gateway(amfkit_gateway: str, version: int) -> None:
    service = _py3amf_client(amfkit_gateway, version).getService("EchoService")
    # Py3AMF turns an onStatus body into pyamf.remoting.ErrorFault and raises the
    # exception class registered for its code (RemotingError for codes it does not know)
    with pytest.raises(pyamf.remoting.RemotingError) as info:
        service.fail("from amfkit")
    assert info.value.args[0] == INTERNAL_ERROR_MESSAGE
    with pytest.raises(pyamf.remoting.RemotingError) as info:
        service.fault("custom", "App.Custom")
    assert info.value.args[0] == "custom"
    with pytest.raises(pyamf.remoting.RemotingError):
        _py3amf_client(amfkit_gateway, version).getService("Nope").m()


@pytest.mark.parametrize("version", PY3AMF_VERSIONS)
def test_py3amf_client_batch_against_amfkit_gateway(amfkit_gateway: str, version: int) -> None:
    client = _py3amf_client(amfkit_gateway, version)
    service = client.getService("EchoService", auto_execute=False)
    first = service.echo("one")
    failing = service.fail("two")
    third = service.add(1, 2)
    envelope = client.execute()
    assert envelope[first.id].body == "one"
    assert envelope[failing.id].status == pyamf.remoting.STATUS_ERROR
    assert envelope[failing.id].body.description == INTERNAL_ERROR_MESSAGE
    assert envelope[failing.id].body.code == "Server.Processing"
    assert envelope[third.id].body == 3


@pytest.mark.parametrize("version", PY3AMF_VERSIONS)
def test_py3amf_client_credentials_against_amfkit_gateway(amfkit_gateway: str, version: int) -> None:
    client = _py3amf_client(amfkit_gateway, version)
    client.setCredentials("alice", "wonderland")  # a must-understand Credentials header
    service = client.getService("EchoService")
    assert service.whoami() == "alice"
    assert service.admin_only() == "secret"
    bad = _py3amf_client(amfkit_gateway, version)
    bad.setCredentials("alice", "nope")
    with pytest.raises(pyamf.remoting.RemotingError, match="authentication failed"):
        bad.getService("EchoService").whoami()


@pytest.mark.parametrize("version", PY3AMF_VERSIONS)
def test_py3amf_client_follows_append_to_gateway_url(amfkit_gateway: str, version: int) -> None:
    client = _py3amf_client(amfkit_gateway, version)
    service = client.getService("EchoService")
    assert service.remember(42) is True
    assert "?amfkit_session=" in client._root_url
    assert service.recall() == 42


@pytest.mark.parametrize("version", PY3AMF_VERSIONS)
def test_py3amf_client_misreads_request_persistent_header(amfkit_gateway_clearing: str, version: int) -> None:
    # RequestPersistentHeader's value is {name, mustUnderstand, data}. Py3AMF's client
    # copies each member of it into its own header: after the gateway asks it to clear
    # Credentials it sends headers "name", "mustUnderstand" and "data", and the
    # Credentials header still.
    client = _py3amf_client(amfkit_gateway_clearing, version)
    client.setCredentials("alice", "wonderland")
    service = client.getService("EchoService")
    assert service.header_names() == ["Credentials"]
    assert service.header_names() == ["Credentials", "data", "mustUnderstand", "name"]
    assert service.whoami() == "alice"


def test_py3amf_client_amf0_references_are_misread_by_a_spec_reader(amfkit_gateway: str) -> None:
    # Py3AMF's client does not count the request's argument array in the AMF0 reference
    # table (its gateway does not either, see above); amfkit reads the packet as the spec
    # says, so Py3AMF's reference #1 to the shared object is amfkit's #1, the list itself.
    shared = {"a": 1}
    service = _py3amf_client(amfkit_gateway, peers.AMF0).getService("EchoService")
    out = service.echo([shared, shared])
    assert out[0] == {"a": 1}
    assert isinstance(out[1], list)  # not the shared object: a reference to the list
    # AMF3 references are right
    service = _py3amf_client(amfkit_gateway, peers.AMF3).getService("EchoService")
    assert service.same(shared, shared) is True
