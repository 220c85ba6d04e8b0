"""JSON-RPC 2.0 on amfkit services: every error path, batches, notifications, values."""

from __future__ import annotations

import array
import asyncio
import dataclasses
import datetime
import doctest
import json

import pytest

import amfkit
from gateway_util import Vault, ping
from amfkit.remoting import Context, Fault, Principal, Services, jsonrpc, requires
from amfkit.remoting.services import INTERNAL_ERROR_MESSAGE


class Echo:
    """Echoes things back."""

    def __init__(self) -> None:
        self.seen: list[object] = []

    def echo(self, value):
        """Return the argument unchanged."""
        return value

    async def echo_async(self, value):
        await asyncio.sleep(0)
        return value

    def add(self, a: int, b: int = 10) -> int:
        return a + b

    def named(self, a, *, b=2, c=3):
        return [a, b, c]

    def record(self, value):
        self.seen.append(value)
        return value

    def fail(self, message: str):
        raise RuntimeError(message)

    def fail_record(self, value):
        self.seen.append(value)
        raise RuntimeError("recorded, then failed")

    def fault(self, message, code, details=None):
        raise Fault(message, code=code, details=details)

    def protocol(self, context: Context):
        return context.protocol

    def whoami(self, context: Context):
        return context.principal.name if context.principal else None

    @requires("ops")
    def restart(self):
        return "restarted"

    def _private(self):
        return "never"

    def unwritable(self):
        return {"ok": [1, object()]}

    def cycle(self):
        a: list[object] = []
        a.append(a)
        return a

    def nan(self):
        return [float("nan"), float("inf"), -float("inf"), 1.5, {"x": float("nan")}]

    def odd_details(self):
        raise Fault("odd", code="App.Odd", details={"when": object()})


@pytest.fixture
def echo():
    return Echo()


@pytest.fixture
def services(echo):
    s = Services({"Echo": echo, "ping": ping})
    s.register("Vault", Vault, roles=["admin"])
    return s


def rpc(services, payload, *, context=None, debug=False, raw=False):
    """POST a payload (JSON-encoded unless bytes) through handle(); the decoded answer."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    out = asyncio.run(jsonrpc.handle(body, services, context or Context(), debug=debug))
    assert isinstance(out, bytes)
    if raw:
        return out
    return json.loads(out) if out else None


def req(method, params=None, id=1, **extra):
    r = {"jsonrpc": "2.0", "method": method, **extra}
    if params is not None:
        r["params"] = params
    if id is not ...:
        r["id"] = id
    return r


def error_code(answer):
    assert "result" not in answer, answer
    return answer["error"]["code"]


# --- calls ---------------------------------------------------------------------------


def test_positional_params(services):
    assert rpc(services, req("Echo.add", [1, 2])) == {"jsonrpc": "2.0", "result": 3, "id": 1}


def test_wire_form_is_compact_utf8(services):
    out = rpc(services, req("Echo.echo", ["héllo ☃"], id="a"), raw=True)
    assert out == '{"jsonrpc":"2.0","result":"héllo ☃","id":"a"}'.encode()


def test_named_params_and_defaults(services):
    assert rpc(services, req("Echo.add", {"a": 1}))["result"] == 11
    assert rpc(services, req("Echo.add", {"b": 5, "a": 1}))["result"] == 6
    assert rpc(services, req("Echo.named", {"a": 1, "c": 9}))["result"] == [1, 2, 9]


def test_params_omitted(services):
    assert rpc(services, req("ping"))["result"] == "pong"
    assert rpc(services, req("ping", []))["result"] == "pong"
    assert rpc(services, req("ping", {}))["result"] == "pong"


def test_async_method(services):
    assert rpc(services, req("Echo.echo_async", [[1, "x"]]))["result"] == [1, "x"]


def test_context_protocol_is_set(services):
    ctx = Context(protocol="amf3")
    assert rpc(services, req("Echo.protocol"), context=ctx)["result"] == "jsonrpc"
    assert ctx.protocol == "jsonrpc"


def test_context_parameter_cannot_be_passed_by_the_client(services):
    ctx = Context(principal=Principal("ann"))
    assert rpc(services, req("Echo.whoami", {"context": "forged"}), context=ctx)["result"] == "ann"


def test_ids_are_echoed(services):
    for rid in ["x", 7, 2.5, None, -1, ""]:
        answer = rpc(services, req("ping", id=rid))
        assert answer["id"] == rid and answer["result"] == "pong"


def test_unknown_members_are_ignored(services):
    assert rpc(services, req("ping", extra="x"))["result"] == "pong"


def test_deep_but_acceptable_params(services):
    value: list[object] = []
    for _ in range(200):
        value = [value]
    assert rpc(services, req("Echo.echo", [value]))["result"] == value


# --- notifications -------------------------------------------------------------------


def test_notification_is_called_and_not_answered(services, echo):
    assert rpc(services, req("Echo.record", ["n1"], id=...), raw=True) == b""
    assert echo.seen == ["n1"]


def test_failing_notifications_are_not_answered(services, echo, caplog):
    assert rpc(services, req("Echo.fail_record", ["n2"], id=...), raw=True) == b""
    assert echo.seen == ["n2"]
    assert rpc(services, req("Nope.nothing", id=...), raw=True) == b""
    assert rpc(services, req("Echo.add", ["x"], id=...), raw=True) == b""
    assert rpc(services, req("rpc.discover", id=...), raw=True) == b""
    # A service's own exception is logged on the server, since no one else hears of it.
    assert any("recorded, then failed" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_null_id_is_a_request_not_a_notification(services):
    assert rpc(services, req("ping", id=None)) == {"jsonrpc": "2.0", "result": "pong", "id": None}


def test_invalid_request_without_id_is_answered(services):
    # It cannot be known to be a notification: the spec's {"jsonrpc": "2.0", "method": 1, "params": "bar"}.
    answer = rpc(services, {"jsonrpc": "2.0", "method": 1, "params": "bar"})
    assert error_code(answer) == -32600 and answer["id"] is None


# --- batches -------------------------------------------------------------------------


def test_batch_mixed(services, echo):
    answers = rpc(
        services,
        [
            req("Echo.add", [1, 2], id="1"),
            req("Echo.record", [7], id=...),
            req("Echo.add", {"a": 42, "b": -23}, id="2"),
            {"foo": "boo"},
            req("foo.get", {"name": "myself"}, id="5"),
            req("Echo.echo", [["hello", 5]], id="9"),
            req("Echo.fail", ["bad"], id="10"),
            req("Echo.unwritable", id="11"),
            req("ping", id="12"),
        ],
    )
    assert [a["id"] for a in answers] == ["1", "2", None, "5", "9", "10", "11", "12"]
    assert answers[0]["result"] == 3
    assert answers[1]["result"] == 19
    assert error_code(answers[2]) == -32600
    assert error_code(answers[3]) == -32601
    assert answers[4]["result"] == ["hello", 5]
    assert error_code(answers[5]) == -32000 and answers[5]["error"]["message"] == INTERNAL_ERROR_MESSAGE
    assert error_code(answers[6]) == -32603
    assert answers[7]["result"] == "pong"
    assert echo.seen == [7]


def test_batch_of_notifications_only_has_an_empty_body(services, echo):
    out = rpc(services, [req("Echo.record", [1], id=...), req("Echo.record", [2], id=...), req("Nope.x", id=...)], raw=True)
    assert out == b""
    assert echo.seen == [1, 2]


def test_batch_runs_in_order(services, echo):
    rpc(services, [req("Echo.record", [i], id=i) for i in range(20)])
    assert echo.seen == list(range(20))


def test_empty_batch_is_one_invalid_request(services):
    answer = rpc(services, [])
    assert isinstance(answer, dict)
    assert error_code(answer) == -32600 and answer["id"] is None


def test_batch_of_non_objects(services):
    answers = rpc(services, [1, 2, 3])
    assert len(answers) == 3
    assert all(error_code(a) == -32600 and a["id"] is None for a in answers)


def test_batch_containing_a_batch(services):
    answers = rpc(services, [[req("ping")]])
    assert len(answers) == 1 and error_code(answers[0]) == -32600


def test_single_answer_is_not_wrapped_in_a_list(services):
    assert isinstance(rpc(services, req("ping")), dict)
    assert isinstance(rpc(services, [req("ping")]), list)


# --- -32700 parse error --------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"   ",
        b"{",
        b'{"jsonrpc": "2.0", "method": "ping", "id": 1',
        b'[{"jsonrpc": "2.0", "method": "ping", "id": 1}, {"jsonrpc": "2.0", "method"]',
        b"not json",
        b'{"jsonrpc": "2.0", "method": "Echo.echo", "params": [NaN], "id": 1}',
        b'{"jsonrpc": "2.0", "method": "Echo.echo", "params": [Infinity], "id": 1}',
        b'{"jsonrpc": "2.0", "method": "Echo.echo", "params": [-Infinity], "id": 1}',
        b"\x00\x01\x02",
    ],
)
def test_parse_error(services, body):
    answer = rpc(services, body)
    assert error_code(answer) == -32700
    assert answer["id"] is None
    assert answer["jsonrpc"] == "2.0"
    assert answer["error"]["message"].startswith("Parse error")


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "method": "Echo.echo", "params": ["\xff"], "id": 1}',
        b'{"jsonrpc": "2.0", "method": "Echo.echo", "params": ["\xc3"], "id": 1}',
        # An encoded surrogate is not UTF-8 either (json.loads(bytes) would let it through).
        b'{"jsonrpc": "2.0", "method": "Echo.echo", "params": ["\xed\xa0\x80"], "id": 1}',
        '{"jsonrpc": "2.0", "method": "ping", "id": 1}'.encode("utf-16"),
    ],
)
def test_invalid_utf8_is_a_parse_error(services, body):
    answer = rpc(services, body)
    assert error_code(answer) == -32700
    assert "UTF-8" in answer["error"]["message"]


def test_byte_order_mark_is_ignored(services):
    assert rpc(services, b"\xef\xbb\xbf" + json.dumps(req("ping")).encode())["result"] == "pong"


@pytest.mark.parametrize("body", [b"[" * 100_000, b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000])
def test_deep_nesting_is_a_clean_parse_error(services, body):
    answer = rpc(services, body)
    assert error_code(answer) == -32700
    assert "deep" in answer["error"]["message"]
    # and the next request is served as usual
    assert rpc(services, req("ping"))["result"] == "pong"


def test_huge_integer_literal_is_a_parse_error(services):
    body = b'{"jsonrpc": "2.0", "method": "Echo.echo", "params": [' + b"9" * 100_000 + b'], "id": 1}'
    assert error_code(rpc(services, body)) == -32700


def test_large_body(services):
    value = ["x" * 100, 1.5, None, True] * 50_000
    assert rpc(services, req("Echo.echo", [value]))["result"] == value


# --- -32600 invalid request ----------------------------------------------------------


@pytest.mark.parametrize(
    "payload, echoed_id",
    [
        ("just a string", None),
        (42, None),
        (None, None),
        (True, None),
        ({}, None),
        ({"method": "ping", "id": 1}, 1),  # JSON-RPC 1.0 style: no "jsonrpc"
        ({"jsonrpc": "1.0", "method": "ping", "id": 1}, 1),
        ({"jsonrpc": 2.0, "method": "ping", "id": 1}, 1),
        ({"jsonrpc": "2.0", "id": 1}, 1),
        ({"jsonrpc": "2.0", "method": 5, "id": "x"}, "x"),
        ({"jsonrpc": "2.0", "method": None, "id": 2}, 2),
        ({"jsonrpc": "2.0", "method": "ping", "params": "bar", "id": 3}, 3),
        ({"jsonrpc": "2.0", "method": "ping", "params": 1, "id": 3}, 3),
        ({"jsonrpc": "2.0", "method": "ping", "params": None, "id": 3}, 3),
        ({"jsonrpc": "2.0", "method": "ping", "id": True}, None),
        ({"jsonrpc": "2.0", "method": "ping", "id": [1]}, None),
        ({"jsonrpc": "2.0", "method": "ping", "id": {"a": 1}}, None),
    ],
)
def test_invalid_request(services, payload, echoed_id):
    answer = rpc(services, payload)
    assert error_code(answer) == -32600
    assert answer["id"] == echoed_id
    assert answer["error"]["message"].startswith("Invalid Request")
    assert isinstance(answer["error"]["data"]["details"], str)


# --- -32601 method not found ---------------------------------------------------------


@pytest.mark.parametrize(
    "method",
    ["Nope.nothing", "Echo.nothing", "Echo._private", "Echo.__init__", "Echo.__class__", "", "Echo", "ping.ping", "rpc.discover", "rpc.ping"],
)
def test_method_not_found(services, method):
    answer = rpc(services, req(method, id=4))
    assert error_code(answer) == -32601
    assert answer["id"] == 4
    assert answer["error"]["data"]["code"] == "Server.ResourceUnavailable"


def test_rpc_names_are_reserved_even_for_a_registered_service(services):
    services.register("rpc", Echo())
    assert error_code(rpc(services, req("rpc.echo", [1]))) == -32601


# --- -32602 invalid params -----------------------------------------------------------


@pytest.mark.parametrize(
    "method, params",
    [
        ("Echo.add", []),
        ("Echo.add", [1, 2, 3]),
        ("Echo.add", ["x"]),
        ("Echo.add", [1, True]),
        ("Echo.add", {"a": 1, "zz": 2}),
        ("Echo.add", {"b": 2}),
        ("Echo.add", {"a": "1"}),
        ("Echo.named", [1, 2]),
        ("ping", [1]),
    ],
)
def test_invalid_params(services, method, params):
    answer = rpc(services, req(method, params))
    assert error_code(answer) == -32602
    assert answer["error"]["data"]["code"] == "Client.Argument"
    assert method.split(".")[-1] in answer["error"]["message"]


# --- -32000 server errors ------------------------------------------------------------


def test_authentication_and_authorization(services):
    answer = rpc(services, req("Vault.open"))
    assert error_code(answer) == -32000
    assert answer["error"]["data"]["code"] == "Client.Authentication"
    answer = rpc(services, req("Vault.open"), context=Context(principal=Principal("bob", frozenset({"user"}))))
    assert error_code(answer) == -32000
    assert answer["error"]["data"]["code"] == "Client.Authorization"
    ok = rpc(services, req("Vault.open"), context=Context(principal=Principal("root", frozenset({"admin"}))))
    assert ok["result"] == "gold"
    assert rpc(services, req("Echo.restart"))["error"]["data"]["code"] == "Client.Authentication"
    ops = Context(principal=Principal("op", frozenset({"ops"})))
    assert rpc(services, req("Echo.restart"), context=ops)["result"] == "restarted"


def test_exception_becomes_server_error(services):
    answer = rpc(services, req("Echo.fail", ["boom"]))
    # the exception's own text stays in the server's log (debug mode sends it)
    assert answer["error"] == {"code": -32000, "message": INTERNAL_ERROR_MESSAGE, "data": {"code": "Server.Processing", "details": None}}


def test_fault_with_own_code_and_details(services):
    answer = rpc(services, req("Echo.fault", ["no stock", "Shop.Empty", {"sku": "A1", "left": 0}]))
    assert answer["error"] == {
        "code": -32000,
        "message": "no stock",
        "data": {"code": "Shop.Empty", "details": {"sku": "A1", "left": 0}},
    }


def test_fault_with_int_code_keeps_it(services):
    assert error_code(rpc(services, req("Echo.fault", ["teapot", 418]))) == 418
    assert error_code(rpc(services, req("Echo.fault", ["neg", -1]))) == -1
    # The reserved range stays reserved.
    assert error_code(rpc(services, req("Echo.fault", ["reserved", -32601]))) == -32000
    assert error_code(rpc(services, req("Echo.fault", ["reserved", -32768]))) == -32000


def test_fault_details_that_json_cannot_carry_are_sent_as_repr(services):
    answer = rpc(services, req("Echo.odd_details"))
    assert error_code(answer) == -32000
    assert answer["error"]["data"]["details"].startswith("{'when': <object object")


def test_tracebacks_only_in_debug(services):
    quiet = rpc(services, req("Echo.fail", ["boom"]))
    assert "traceback" not in quiet["error"]["data"]
    assert "Traceback" not in json.dumps(quiet)
    loud = rpc(services, req("Echo.fail", ["boom"]), debug=True)
    tb = loud["error"]["data"]["traceback"]
    assert "Traceback" in tb and "RuntimeError: boom" in tb and "in fail" in tb
    loud = rpc(services, req("Echo.unwritable"), debug=True)
    assert error_code(loud) == -32603 and "Traceback" in loud["error"]["data"]["traceback"]
    assert "traceback" not in rpc(services, req("Echo.unwritable"))["error"]["data"]
    assert "traceback" not in rpc(services, b"{")["error"]["data"]


# --- -32603 internal error -----------------------------------------------------------


@pytest.mark.parametrize("method", ["Echo.unwritable", "Echo.cycle"])
def test_unwritable_result_is_internal_error(services, method):
    answer = rpc(services, req(method, id=8))
    assert error_code(answer) == -32603
    assert answer["id"] == 8
    assert method in answer["error"]["data"]["details"]


def test_unwritable_dictionary_keys():
    s = Services({"get": lambda: amfkit.Dictionary({(1, 2): "tuple key"})})
    assert error_code(rpc(s, req("get"))) == -32603


# --- values --------------------------------------------------------------------------


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Account:
    def __init__(self, name, password):
        self.name = name
        self.password = password
        self.created = datetime.datetime(2020, 1, 2, 3, 4, 5)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a = a
        self.b = b


@pytest.fixture
def registered():
    amfkit.register_class(Point, "test.jsonrpc.Point")
    amfkit.register_class(Account, "test.jsonrpc.Account", exclude=("password",))
    amfkit.register_class(Slotted, "test.jsonrpc.Slotted", static=("a", "b"), dynamic=False)
    yield
    for cls in (Point, Account, Slotted):
        amfkit.unregister_class(cls)


def result_of(value):
    s = Services({"get": lambda: value})
    answer = rpc(s, req("get"))
    assert "error" not in answer, answer
    return answer["result"]


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, None),
        (amfkit.Undefined, None),
        (True, True),
        (0, 0),
        (2**70, 2**70),
        (-1.25, -1.25),
        ("", ""),
        (amfkit.XML("<a/>"), "<a/>"),
        (amfkit.XMLDocument("<b/>"), "<b/>"),
        ((1, 2), [1, 2]),
        ({3}, [3]),
        (frozenset({"x"}), ["x"]),
        (array.array("i", [1, -2]), [1, -2]),
        (array.array("d", [0.5, float("nan")]), [0.5, None]),
        (amfkit.ArrayCollection([1, "a"]), [1, "a"]),
        (amfkit.ObjectVector([{"a": 1}], type_name="Foo"), [{"a": 1}]),
        (amfkit.TypedObject("com.example.Thing", {"a": 1}), {"a": 1}),
        (amfkit.ObjectProxy({"p": [1]}), {"p": [1]}),
        (amfkit.MixedArray({0: "a", 1: "b", "k": "v"}), {"0": "a", "1": "b", "k": "v"}),
        (amfkit.Dictionary({"a": 1, 2: "b"}), {"a": 1, "2": "b"}),
        (b"\x00\xffhi", "AP9oaQ=="),
        (bytearray(b"ab"), "YWI="),
        (memoryview(b"abc"), "YWJj"),
        (b"", ""),
        (float("nan"), None),
        (float("inf"), None),
        ({"x": [float("-inf")]}, {"x": [None]}),
        ("\ud800", "\ud800"),
    ],
)
def test_value_mapping(value, expected):
    assert result_of(value) == expected


def test_datetimes():
    assert result_of(datetime.datetime(2024, 5, 1, 12, 30)) == "2024-05-01T12:30:00Z"
    assert result_of(datetime.datetime(2024, 5, 1, 12, 30, 0, 1500)) == "2024-05-01T12:30:00.001500Z"
    tz = datetime.timezone(datetime.timedelta(hours=2))
    assert result_of(datetime.datetime(2024, 5, 1, 12, 30, tzinfo=tz)) == "2024-05-01T10:30:00Z"
    assert result_of(datetime.date(2024, 5, 1)) == "2024-05-01"
    assert result_of(datetime.time(12, 30)) == "12:30:00"


@pytest.mark.parametrize(
    "millis, expected",
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (1.5, "1970-01-01T00:00:00.001Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (951782400000, "2000-02-29T00:00:00.000Z"),
        (253402300800000, "+010000-01-01T00:00:00.000Z"),
        (8.64e15, "+275760-09-13T00:00:00.000Z"),
        (-8.64e15, "-271821-04-20T00:00:00.000Z"),
        (-62198755200000, "-000001-01-01T00:00:00.000Z"),
        (-62167219200000, "0000-01-01T00:00:00.000Z"),
        (8.64e15 + 1, None),
        (float("nan"), None),
        (float("inf"), None),
    ],
)
def test_amfkit_date_as_javascript_writes_it(millis, expected):
    # The expected strings are what JavaScript's new Date(millis).toISOString() gives.
    assert result_of(amfkit.Date(millis)) == expected


def test_registered_objects_write_the_members_amf_writes(registered):
    assert result_of(Point(1.5, -2)) == {"x": 1.5, "y": -2}
    assert result_of(Account("ann", "hunter2")) == {"name": "ann", "created": "2020-01-02T03:04:05Z"}
    assert result_of(Slotted(1, [Point(0, 0)])) == {"a": 1, "b": [{"x": 0, "y": 0}]}
    assert result_of({"nested": [Account("bob", "pw")]}) == {"nested": [{"name": "bob", "created": "2020-01-02T03:04:05Z"}]}
    assert "hunter2" not in rpc(Services({"get": lambda: Account("ann", "hunter2")}), req("get"), raw=True).decode()


def test_registered_object_with_nan_member(registered):
    assert result_of(Point(float("nan"), 1)) == {"x": None, "y": 1}


def test_unregistered_object_is_internal_error():
    s = Services({"get": lambda: Point(1, 2)})
    answer = rpc(s, req("get"))
    assert error_code(answer) == -32603
    assert "Point" in answer["error"]["data"]["details"]


def test_table_rows_become_objects():
    table = amfkit.Table("test.Tile", ("x", "y", "color"), [(1, 2, "red"), (3, 4, None)])
    assert result_of(table) == [{"x": 1, "y": 2, "color": "red"}, {"x": 3, "y": 4, "color": None}]
    assert result_of(amfkit.Table("t", ("v",), [(float("nan"),)])) == [{"v": None}]


def test_arguments_arrive_as_plain_json_types(services):
    args = [{"a": [1, 2.5, "3", None, True]}, "2024-05-01T12:30:00Z", 12345678901234567890]
    assert rpc(services, req("Echo.echo", [args]))["result"] == args


def test_lone_surrogate_round_trips_escaped(services):
    out = rpc(services, b'{"jsonrpc": "2.0", "method": "Echo.echo", "params": ["a\\ud800b"], "id": 1}', raw=True)
    assert out == b'{"jsonrpc":"2.0","result":"a\\ud800b","id":1}'


def test_content_types():
    assert "application/json" in jsonrpc.CONTENT_TYPES
    assert all(ct == ct.lower() and ";" not in ct for ct in jsonrpc.CONTENT_TYPES)


def test_module_docstring_example():
    result = doctest.testmod(jsonrpc)
    assert result.failed == 0 and result.attempted > 0


def test_accepts_bytes_like_bodies(services):
    body = json.dumps(req("ping")).encode()
    for b in (bytearray(body), memoryview(body)):
        out = asyncio.run(jsonrpc.handle(b, services, Context()))
        assert json.loads(out)["result"] == "pong"


def test_registered_object_holding_an_unencodable_value_is_internal_error(registered):
    s = Services({"get": lambda: Point(object(), 1)})
    answer = rpc(s, req("get"))
    assert error_code(answer) == -32603
    assert rpc(Services({"get": lambda: Point(3, 4)}), req("get"))["result"] == {"x": 3, "y": 4}


def test_recordset_returned_as_is_becomes_objects():
    import sqlite3

    from amfkit.data import RecordSet

    db = sqlite3.connect(":memory:")
    db.execute("create table t (id integer, name text, score real)")
    db.executemany("insert into t values (?, ?, ?)", [(1, "a", 0.5), (2, None, None)])
    rs = RecordSet.from_cursor(db.execute("select id, name, score from t order by id"))
    db.close()
    assert result_of(rs) == [{"id": 1, "name": "a", "score": 0.5}, {"id": 2, "name": None, "score": None}]
    # The view a service asks for with its context is the same.

    def get(context: Context):
        return rs.for_context(context)

    s = Services({"get": get})
    assert rpc(s, req("get"))["result"] == [{"id": 1, "name": "a", "score": 0.5}, {"id": 2, "name": None, "score": None}]
