"""XML-RPC on amfkit services: types both ways, faults, introspection, multicall, and
hostile XML (external entities, entity expansion, DTDs, deep and huge documents).

Responses are read back with the stdlib `xmlrpc.client.loads`, which is fine for our own
output; requests are parsed by amfkit through defusedxml only.
"""

from __future__ import annotations

import array
import asyncio
import base64
import dataclasses
import datetime
import doctest
import time
import xmlrpc.client

import pytest

import amfkit
from gateway_util import Vault, ping
from amfkit.remoting import Context, Fault, Principal, Services, requires
from amfkit.remoting import xmlrpc as amf_xmlrpc
from amfkit.remoting.services import INTERNAL_ERROR_MESSAGE


class Echo:
    """Echoes things back."""

    def echo(self, value):
        """Return the argument unchanged."""
        return value

    async def echo_async(self, value):
        await asyncio.sleep(0)
        return value

    def echo_all(self, *values):
        return list(values)

    def add(self, a: int, b: int = 10) -> int:
        """Add two ints."""
        return a + b

    def scale(self, v: float, by: float = 2.0, *, rounding: bool = False) -> float:
        return v * by

    def needs_keyword(self, a, *, b):
        return a

    def fail(self, message: str):
        raise RuntimeError(message)

    def fault(self, message, code):
        raise Fault(message, code=code)

    def protocol(self, context: Context):
        return context.protocol

    @requires("ops")
    def restart(self):
        return "restarted"

    def _private(self):
        return "never"


@pytest.fixture
def services():
    s = Services({"Echo": Echo(), "ping": ping})
    s.register("Vault", Vault, roles=["admin"])
    return s


def post(services, body, *, context=None, debug=False) -> bytes:
    out = asyncio.run(amf_xmlrpc.handle(body, services, context or Context(), debug=debug))
    assert isinstance(out, bytes)
    assert out.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<methodResponse>')
    return out


def call(services, method, *args, context=None, debug=False):
    """A stdlib-made request through handle(); the stdlib's reading of our answer
    (raises xmlrpc.client.Fault for a fault)."""
    body = xmlrpc.client.dumps(args, method, allow_none=True).encode()
    out = post(services, body, context=context, debug=debug)
    (result,), _ = xmlrpc.client.loads(out, use_builtin_types=True)
    return result


def fault_of(out: bytes) -> tuple[int, str]:
    with pytest.raises(xmlrpc.client.Fault) as info:
        xmlrpc.client.loads(out)
    return info.value.faultCode, info.value.faultString


def raw_call(services, method, params_xml="", **kw) -> bytes:
    body = f"<?xml version='1.0'?><methodCall><methodName>{method}</methodName><params>{params_xml}</params></methodCall>"
    return post(services, body.encode(), **kw)


def value_of(services, value_xml) -> object:
    """What Echo.echo receives for one <value> (read back through our own writer)."""
    out = raw_call(services, "Echo.echo", f"<param>{value_xml}</param>")
    (result,), _ = xmlrpc.client.loads(out, use_builtin_types=True)
    return result


# --- calls ---------------------------------------------------------------------------


def test_call_and_wire_form(services):
    assert call(services, "Echo.add", 1, 2) == 3
    assert call(services, "Echo.add", 1) == 11
    out = raw_call(services, "Echo.add", "<param><value><i4>1</i4></value></param>")
    assert out == (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<methodResponse><params><param>'
        b"<value><int>11</int></value></param></params></methodResponse>"
    )


def test_function_service_async_and_varargs(services):
    assert call(services, "ping") == "pong"
    assert call(services, "Echo.echo_async", [1, "x"]) == [1, "x"]
    assert call(services, "Echo.echo_all", 1, 2, 3) == [1, 2, 3]


def test_no_params_element(services):
    out = post(services, b"<methodCall><methodName>ping</methodName></methodCall>")
    assert xmlrpc.client.loads(out)[0] == ("pong",)


def test_whitespace_and_comments_between_elements(services):
    body = b"""<?xml version="1.0"?>
    <!-- a comment -->
    <methodCall>
      <methodName> Echo.echo </methodName>
      <params>
        <param>
          <value>
            <struct>
              <member> <name>a</name> <value><int> 7 </int></value> </member>
              <!-- inside -->
              <member><name>b</name><value><array> <data>
                 <value>x</value>
                 <value><boolean>1</boolean></value>
              </data> </array></value></member>
            </struct>
          </value>
        </param>
      </params>
    </methodCall>
    """
    (result,), _ = xmlrpc.client.loads(post(services, body))
    assert result == {"a": 7, "b": ["x", True]}


def test_context_protocol_is_set(services):
    ctx = Context(protocol="amf3")
    assert call(services, "Echo.protocol", context=ctx) == "xmlrpc"
    assert ctx.protocol == "xmlrpc"


# --- types, both ways ----------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        0,
        -1,
        2**31 - 1,
        -(2**31),
        True,
        False,
        "",
        "plain",
        "a < b && c > d ]]> 'q' \"dq\"",
        "line\nbreak\ttab",
        "héllo ☃ 𝄞",
        1.5,
        -0.0,
        1e300,
        5e-324,
        None,
        b"",
        b"\x00\x01\xfe\xff" * 100,
        [],
        [1, "two", 3.0, None, [True, []]],
        {},
        {"a": 1, "b": {"c": [b"x", None]}, "": "empty name", "&<>": "escaped name"},
        datetime.datetime(1998, 7, 17, 14, 8, 55),
        datetime.datetime(1, 1, 1),
        datetime.datetime(9999, 12, 31, 23, 59, 59),
    ],
)
def test_round_trip_through_stdlib_client(services, value):
    assert call(services, "Echo.echo", value) == value


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**40, -(2**63), 2**63 - 1])
def test_i8_both_ways(services, value):
    # The stdlib client refuses to send ints beyond 32 bits, but reads <i8>.
    assert value_of(services, f"<value><i8>{value}</i8></value>") == value
    assert result_of(value) == value
    assert result_of([value]) == [value]


def test_all_types_in_one_struct(services):
    value = {
        "int": 42,
        "bool": True,
        "str": "x",
        "double": 2.5,
        "when": datetime.datetime(2024, 5, 1, 12, 30, 1),
        "bin": b"\x00bin",
        "list": [1, [2, [3]]],
        "nil": None,
    }
    assert call(services, "Echo.echo", value) == value


def test_type_elements_on_the_wire(services):
    out = post(
        services,
        xmlrpc.client.dumps(
            ([1, True, "s", 0.5, None, b"b", datetime.datetime(2024, 1, 2, 3, 4, 5), {"k": 1}],),
            "Echo.echo",
            allow_none=True,
        ).encode(),
    ).decode()
    for fragment in [
        "<int>1</int>",
        "<boolean>1</boolean>",
        "<string>s</string>",
        "<double>0.5</double>",
        "<nil/>",
        "<base64>Yg==</base64>",
        "<dateTime.iso8601>20240102T03:04:05</dateTime.iso8601>",
        "<struct><member><name>k</name><value><int>1</int></value></member></struct>",
    ]:
        assert fragment in out


@pytest.mark.parametrize(
    "value_xml, expected",
    [
        ("<value>untyped</value>", "untyped"),
        ("<value>  spaced  </value>", "  spaced  "),
        ("<value></value>", ""),
        ("<value/>", ""),
        ("<value><string/></value>", ""),
        ("<value><string>a&amp;b&lt;&#x263A;&#13;</string></value>", "a&b<☺\r"),
        ("<value><string><![CDATA[<raw> & ]]></string></value>", "<raw> & "),
        ("<value><i4>-12</i4></value>", -12),
        ("<value><int>+12</int></value>", 12),
        ("<value><i8>-9223372036854775808</i8></value>", -(2**63)),
        ("<value><ex:i8 xmlns:ex='http://ws.apache.org/xmlrpc/namespaces/extensions'>5</ex:i8></value>", 5),
        ("<value><boolean>0</boolean></value>", False),
        ("<value><boolean> 1 </boolean></value>", True),
        ("<value><boolean>true</boolean></value>", True),
        ("<value><double>-1.5e3</double></value>", -1500.0),
        ("<value><double>.5</double></value>", 0.5),
        ("<value><double>7</double></value>", 7.0),
        ("<value><dateTime.iso8601>19980717T14:08:55</dateTime.iso8601></value>", datetime.datetime(1998, 7, 17, 14, 8, 55)),
        ("<value><dateTime.iso8601>1998-07-17T14:08:55</dateTime.iso8601></value>", datetime.datetime(1998, 7, 17, 14, 8, 55)),
        ("<value><dateTime.iso8601>1998-07-17T14:08:55Z</dateTime.iso8601></value>", datetime.datetime(1998, 7, 17, 14, 8, 55)),
        ("<value><dateTime.iso8601>1998-07-17T16:08:55+02:00</dateTime.iso8601></value>", datetime.datetime(1998, 7, 17, 14, 8, 55)),
        ("<value><dateTime.iso8601>19980717T09:38:55-0430</dateTime.iso8601></value>", datetime.datetime(1998, 7, 17, 14, 8, 55)),
        ("<value><base64>aGVs\n bG8=\n</base64></value>", b"hello"),
        ("<value><base64></base64></value>", b""),
        ("<value><nil/></value>", None),
        ("<value><ex:nil xmlns:ex='http://ws.apache.org/xmlrpc/namespaces/extensions'/></value>", None),
        ("<value><array><data/></array></value>", []),
        ("<value><struct/></value>", {}),
        ("<value><struct><member><name>a</name><value>1</value></member><member><name>a</name><value>2</value></member></struct></value>", {"a": "2"}),
    ],
)
def test_request_values(services, value_xml, expected):
    assert value_of(services, value_xml) == expected


def test_carriage_returns_survive_both_ways(services):
    # XML turns a raw CR into LF; "&#13;" keeps it. The stdlib client sends raw CRs.
    assert value_of(services, "<value>a&#13;&#10;b\rc</value>") == "a\r\nb\nc"
    assert result_of("a\r\nb\rc") == "a\r\nb\rc"
    assert b"a&#13;\nb&#13;c" in post(Services({"get": lambda: "a\r\nb\rc"}), b"<methodCall><methodName>get</methodName></methodCall>")


def test_datetime_fraction_is_kept_as_microseconds():
    s = Services({"get": lambda v: [v.microsecond, v.second]})
    out = raw_call(s, "get", "<param><value><dateTime.iso8601>20240102T03:04:05.1234567</dateTime.iso8601></value></param>")
    assert xmlrpc.client.loads(out)[0] == ([123456, 5],)


def test_argument_types_reach_the_service():
    seen = []

    def take(*values):
        seen.extend(values)
        return True

    call(Services({"take": take}), "take", 1, 2**30, "s", 1.5, True, None, b"b", datetime.datetime(2024, 1, 2), [1], {"a": 1})
    assert [type(v) for v in seen] == [int, int, str, float, bool, type(None), bytes, datetime.datetime, list, dict]


# --- response values that are not plain Python types ---------------------------------


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Account:
    def __init__(self, name, password):
        self.name = name
        self.password = password


@pytest.fixture
def registered():
    amfkit.register_class(Point, "test.xmlrpc.Point")
    amfkit.register_class(Account, "test.xmlrpc.Account", exclude=("password",))
    yield
    amfkit.unregister_class(Point)
    amfkit.unregister_class(Account)


def result_of(value):
    return call(Services({"get": lambda: value}), "get")


@pytest.mark.parametrize(
    "value, expected",
    [
        (amfkit.Undefined, None),
        ((1, 2), [1, 2]),
        ({3}, [3]),
        (frozenset(), []),
        (array.array("i", [1, -2]), [1, -2]),
        (array.array("d", [0.5]), [0.5]),
        (amfkit.ArrayCollection([1]), [1]),
        (amfkit.ObjectVector(["a"], type_name="String"), ["a"]),
        (amfkit.TypedObject("com.example.T", {"a": 1}), {"a": 1}),
        (amfkit.ObjectProxy({"a": [1]}), {"a": [1]}),
        (amfkit.MixedArray({0: "a", "k": "v"}), {"0": "a", "k": "v"}),
        (amfkit.XML("<a/>"), "<a/>"),
        (bytearray(b"ab"), b"ab"),
        (memoryview(b"ab"), b"ab"),
        (datetime.date(2024, 5, 1), datetime.datetime(2024, 5, 1)),
        (datetime.datetime(2024, 5, 1, 12, 0, 0, 999999), datetime.datetime(2024, 5, 1, 12, 0, 0)),
        (datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.timezone(datetime.timedelta(hours=-5))), datetime.datetime(2024, 5, 1, 17)),
        (amfkit.Date(0), datetime.datetime(1970, 1, 1)),
        (amfkit.Date(float("nan")), None),
        (amfkit.Table("t.Row", ("a", "b"), [(1, "x"), (2, None)]), [{"a": 1, "b": "x"}, {"a": 2, "b": None}]),
    ],
)
def test_response_value_mapping(value, expected):
    assert result_of(value) == expected


def test_out_of_range_amfkit_date_has_an_extended_year():
    out = post(Services({"get": lambda: amfkit.Date(253402300800000)}), b"<methodCall><methodName>get</methodName></methodCall>")
    assert b"<dateTime.iso8601>+0100000101T00:00:00</dateTime.iso8601>" in out


def test_nonfinite_doubles_are_written_as_the_stdlib_does():
    assert [str(v) for v in result_of([float("nan"), float("inf"), -float("inf")])] == ["nan", "inf", "-inf"]


def test_registered_objects(registered):
    assert result_of(Point(1.5, 2)) == {"x": 1.5, "y": 2}
    assert result_of([Account("ann", "hunter2")]) == [{"name": "ann"}]


@pytest.mark.parametrize(
    "value, words",
    [
        (object(), "object"),
        (Point(1, 2), "Point"),
        (2**64, "64 bits"),
        (-(2**63) - 1, "64 bits"),
        ("nul \x00 char", "XML 1.0"),
        ("\x1b[0m", "XML 1.0"),
        ("lone \ud800", "XML 1.0"),
        ({1.5: "x"}, "names must be strings"),
        (amfkit.Dictionary({(1,): "x"}), "names must be strings"),
    ],
)
def test_unwritable_results_are_internal_errors(value, words):
    code, message = fault_of(post(Services({"get": lambda: value}), b"<methodCall><methodName>get</methodName></methodCall>"))
    assert code == -32603
    assert words in message


def test_cyclic_and_deep_results_are_internal_errors():
    a: list[object] = []
    a.append(a)
    deep: list[object] = []
    for _ in range(amf_xmlrpc.MAX_DEPTH + 5):
        deep = [deep]
    for value, words in [(a, "contains itself"), (deep, "nest deeper")]:
        code, message = fault_of(post(Services({"get": lambda v=value: v}), b"<methodCall><methodName>get</methodName></methodCall>"))
        assert code == -32603 and words in message


def test_shared_values_are_not_cycles():
    shared = [1, 2]
    assert result_of({"a": shared, "b": shared, "c": [shared, shared]}) == {"a": [1, 2], "b": [1, 2], "c": [[1, 2], [1, 2]]}


# --- faults --------------------------------------------------------------------------


def expect_fault(services, method, *args, context=None, debug=False):
    with pytest.raises(xmlrpc.client.Fault) as info:
        call(services, method, *args, context=context, debug=debug)
    return info.value.faultCode, info.value.faultString


@pytest.mark.parametrize("method", ["Nope.x", "Echo.nothing", "Echo._private", "Echo.__init__", "Echo", "ping.ping"])
def test_method_not_found(services, method):
    code, message = expect_fault(services, method)
    assert code == -32601 and message.startswith("Server.ResourceUnavailable: ")


@pytest.mark.parametrize("args", [(), (1, 2, 3), ("x",), (1, True)])
def test_invalid_params(services, args):
    code, message = expect_fault(services, "Echo.add", *args)
    assert code == -32602 and message.startswith("Client.Argument: ")


def test_application_errors(services):
    # the exception's own text stays in the server's log (debug mode sends it)
    assert expect_fault(services, "Echo.fail", "boom") == (-32500, "Server.Processing: " + INTERNAL_ERROR_MESSAGE)
    assert expect_fault(services, "Echo.fault", "no stock", "Shop.Empty") == (-32500, "Shop.Empty: no stock")
    assert expect_fault(services, "Echo.fault", "too many", 4) == (4, "4: too many")
    huge = Services({"huge": lambda: Echo().fault("huge", 2**40)})
    assert expect_fault(huge, "huge") == (-32500, "1099511627776: huge")
    code, message = expect_fault(services, "Vault.open")
    assert code == -32500 and message.startswith("Client.Authentication: ")
    bob = Context(principal=Principal("bob", frozenset({"user"})))
    code, message = expect_fault(services, "Vault.open", context=bob)
    assert code == -32500 and message.startswith("Client.Authorization: ")
    root = Context(principal=Principal("root", frozenset({"admin"})))
    assert call(services, "Vault.open", context=root) == "gold"
    assert expect_fault(services, "Echo.restart")[0] == -32500
    assert call(services, "Echo.restart", context=Context(principal=Principal("op", frozenset({"ops"})))) == "restarted"


def test_tracebacks_only_in_debug(services):
    _, quiet = expect_fault(services, "Echo.fail", "boom")
    assert "Traceback" not in quiet
    _, loud = expect_fault(services, "Echo.fail", "boom", debug=True)
    assert loud.startswith("Server.Processing: boom\n\nTraceback") and "RuntimeError: boom" in loud


def test_fault_string_with_characters_xml_cannot_carry(services):
    def f() -> None:
        raise Fault("bad \x00 byte & <tag>")

    code, message = expect_fault(Services({"f": f}), "f")
    assert code == -32500 and message == "Server.Processing: bad \ufffd byte & <tag>"


def test_fault_wire_form(services):
    out = post(services, b"<methodCall><methodName>Nope.x</methodName></methodCall>")
    assert out.startswith(
        b'<?xml version="1.0" encoding="UTF-8"?>\n<methodResponse><fault><value><struct>'
        b"<member><name>faultCode</name><value><int>-32601</int></value></member>"
        b"<member><name>faultString</name><value><string>"
    )
    assert out.endswith(b"</string></value></member></struct></value></fault></methodResponse>")


# --- invalid requests ----------------------------------------------------------------


@pytest.mark.parametrize(
    "body, code",
    [
        (b"", -32700),
        (b"   ", -32700),
        (b"not xml", -32700),
        (b"<methodCall><methodName>ping</methodName>", -32700),
        (b"<methodCall><methodName>ping</methodName></methodcall>", -32700),
        (b"<methodCall><methodName>ping</methodName></methodCall><extra/>", -32700),
        (b"<a>&undefined;</a>", -32700),
        (b"\xff\xfe<\x00a\x00", -32700),
        (b"<?xml version='1.0' encoding='x-no-such-encoding'?><methodCall/>", -32701),
        (b"<methodResponse><params/></methodResponse>", -32600),
        (b"<methodCall/>", -32600),
        (b"<methodCall><methodName></methodName></methodCall>", -32600),
        (b"<methodCall><methodName><b/></methodName></methodCall>", -32600),
        (b"<methodCall>text<methodName>ping</methodName></methodCall>", -32600),
        (b"<methodCall><methodName>ping</methodName><params/><params/></methodCall>", -32600),
        (b"<methodCall><methodName>ping</methodName><other/></methodCall>", -32600),
        (b"<methodCall><methodName>ping</methodName><params><value>1</value></params></methodCall>", -32600),
        (b"<methodCall><methodName>ping</methodName><params><param/></params></methodCall>", -32600),
        (b"<methodCall><methodName>ping</methodName><params><param>x<value/></param></params></methodCall>", -32600),
    ],
)
def test_invalid_documents(services, body, code):
    assert fault_of(post(services, body))[0] == code


@pytest.mark.parametrize(
    "value_xml",
    [
        "<value><int>abc</int></value>",
        "<value><int></int></value>",
        "<value><int>1.5</int></value>",
        "<value><int>" + "9" * 5000 + "</int></value>",
        "<value><i4><b/></i4></value>",
        "<value><boolean>2</boolean></value>",
        "<value><boolean>yes</boolean></value>",
        "<value><double>nan</double></value>",
        "<value><double>inf</double></value>",
        "<value><double>1_000</double></value>",
        "<value><double></double></value>",
        "<value><dateTime.iso8601>yesterday</dateTime.iso8601></value>",
        "<value><dateTime.iso8601>19981317T14:08:55</dateTime.iso8601></value>",
        "<value><dateTime.iso8601>19980717T25:08:55</dateTime.iso8601></value>",
        "<value><base64>not base64!</base64></value>",
        "<value><base64>YQ</base64></value>",
        "<value><nil>x</nil></value>",
        "<value><float>1</float></value>",
        "<value><int>1</int><int>2</int></value>",
        "<value>text<int>1</int></value>",
        "<value><int>1</int>tail</value>",
        "<value><struct><value>1</value></struct></value>",
        "<value><struct><member><name>a</name></member></struct></value>",
        "<value><struct><member><value>1</value></member></struct></value>",
        "<value><struct><member><name>a</name><value>1</value><value>2</value></member></struct></value>",
        "<value><struct><member><name><b/></name><value>1</value></member></struct></value>",
        "<value><struct>text</struct></value>",
        "<value><array></array></value>",
        "<value><array><value>1</value></array></value>",
        "<value><array><data><int>1</int></data></array></value>",
        "<value><array><data/><data/></array></value>",
    ],
)
def test_invalid_values(services, value_xml):
    code, message = fault_of(raw_call(services, "Echo.echo", f"<param>{value_xml}</param>"))
    assert code == -32600, message


def test_depth_limit(services):
    def nested(n):
        return "<value><array><data>" * n + "<value>x</value>" + "</data></array></value>" * n

    ok = nested(amf_xmlrpc.MAX_DEPTH - 1)
    out = raw_call(services, "Echo.echo", f"<param>{ok}</param>")
    (result,), _ = xmlrpc.client.loads(out)
    for _ in range(amf_xmlrpc.MAX_DEPTH - 1):
        (result,) = result
    assert result == "x"
    code, message = fault_of(raw_call(services, "Echo.echo", f"<param>{nested(amf_xmlrpc.MAX_DEPTH)}</param>"))
    assert code == -32600 and "deeper" in message


def test_very_deep_documents_are_refused_cleanly(services):
    n = 100_000
    for body in [
        b"<methodCall><methodName>Echo.echo</methodName><params><param>"
        + b"<value><array><data>" * n
        + b"</data></array></value>" * n
        + b"</param></params></methodCall>",
        b"<methodCall><methodName>Echo.echo</methodName><params><param>"
        + b"<value><struct><member><name>a</name>" * n
        + b"</member></struct></value>" * n
        + b"</param></params></methodCall>",
        b"<a>" * n + b"</a>" * n,
        b"<a>" * n,
    ]:
        code, _ = fault_of(post(services, body))
        assert code in (-32600, -32700)
    assert call(services, "ping") == "pong"


def test_huge_documents(services):
    big = "x" * 5_000_000
    assert call(services, "Echo.echo", big) == big
    many = list(range(100_000))
    assert call(services, "Echo.echo", many) == many


def test_invalid_utf8(services):
    for body in [
        b"<methodCall><methodName>Echo.echo</methodName><params><param><value>\xff</value></param></params></methodCall>",
        b"<methodCall><methodName>Echo.echo</methodName><params><param><value>\xc3</value></param></params></methodCall>",
        b"<methodCall><methodName>Echo.echo</methodName><params><param><value>\xed\xa0\x80</value></param></params></methodCall>",
        b"<?xml version='1.0' encoding='utf-8'?><methodCall><methodName>\xe9</methodName></methodCall>",
    ]:
        assert fault_of(post(services, body))[0] == -32700


def test_declared_encodings(services):
    body = "<?xml version='1.0' encoding='iso-8859-1'?><methodCall><methodName>Echo.echo</methodName><params><param><value>café</value></param></params></methodCall>"
    assert xmlrpc.client.loads(post(services, body.encode("latin-1")))[0] == ("café",)
    body16 = body.replace("iso-8859-1", "utf-16").encode("utf-16")
    assert xmlrpc.client.loads(post(services, body16))[0] == ("café",)


# --- hostile XML ---------------------------------------------------------------------


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("TOP-SECRET-7f3a9c")
    return path


def assert_refused(services, body: bytes, *, forbidden: str | None = None) -> None:
    out = post(services, body)
    code, message = fault_of(out)
    assert code == -32600, message
    assert "not accepted" in message
    if forbidden is not None:
        assert forbidden.encode() not in out


def test_external_entity_is_never_read(services, secret):
    url = secret.as_uri()
    for body in [
        f'<?xml version="1.0"?><!DOCTYPE methodCall [<!ENTITY xxe SYSTEM "{url}">]>'
        f"<methodCall><methodName>Echo.echo</methodName><params><param><value><string>&xxe;</string></value></param></params></methodCall>",
        f'<!DOCTYPE methodCall [<!ENTITY xxe SYSTEM "{secret}">]>'
        f"<methodCall><methodName>Echo.echo</methodName><params><param><value>&xxe;</value></param></params></methodCall>",
        f'<!DOCTYPE methodCall [<!ENTITY % p SYSTEM "{url}"> %p;]>'
        "<methodCall><methodName>Echo.echo</methodName></methodCall>",
        f'<!DOCTYPE methodCall SYSTEM "{url}"><methodCall><methodName>Echo.echo</methodName></methodCall>',
        f'<!DOCTYPE methodCall PUBLIC "-//x//y" "{url}"><methodCall><methodName>Echo.echo</methodName></methodCall>',
        f'<!DOCTYPE methodCall [<!ENTITY xxe SYSTEM "{url}">]>'
        "<methodCall><methodName>&xxe;</methodName></methodCall>",
    ]:
        assert_refused(services, body.encode(), forbidden="TOP-SECRET-7f3a9c")


def test_billion_laughs_is_refused_quickly(services):
    lines = ['<!ENTITY lol0 "lol">']
    for i in range(1, 10):
        lines.append(f'<!ENTITY lol{i} "{"&lol%d;" % (i - 1) * 10}">')
    body = (
        "<?xml version='1.0'?><!DOCTYPE methodCall [" + "".join(lines) + "]>"
        "<methodCall><methodName>Echo.echo</methodName><params><param><value>&lol9;</value></param></params></methodCall>"
    ).encode()
    # The CPU time of this thread (the parse runs here, in asyncio.run's loop): what the
    # refusal costs, whatever else the machine is running.
    started = time.thread_time()
    assert_refused(services, body, forbidden="lollol")
    assert time.thread_time() - started < 1.0


def test_quadratic_blowup_is_refused(services):
    body = (
        '<!DOCTYPE m [<!ENTITY a "' + "x" * 50_000 + '">]><methodCall><methodName>Echo.echo</methodName>'
        "<params><param><value>" + "&a;" * 1000 + "</value></param></params></methodCall>"
    ).encode()
    assert_refused(services, body, forbidden="xxxx")


def test_any_doctype_is_refused(services):
    assert_refused(services, b"<!DOCTYPE methodCall><methodCall><methodName>ping</methodName></methodCall>")
    assert_refused(services, b'<!DOCTYPE methodCall [<!ENTITY e "harmless">]><methodCall><methodName>ping</methodName></methodCall>')


def test_xinclude_is_not_processed(services, secret):
    body = (
        '<methodCall xmlns:xi="http://www.w3.org/2001/XInclude"><methodName>Echo.echo</methodName><params><param>'
        f'<value><string><xi:include href="{secret.as_uri()}" parse="text"/></string></value>'
        "</param></params></methodCall>"
    ).encode()
    out = post(services, body)
    assert b"TOP-SECRET" not in out
    assert fault_of(out)[0] == -32600


def test_without_defusedxml_nothing_is_parsed(services, monkeypatch):
    monkeypatch.setattr(amf_xmlrpc, "_defused", None)
    code, message = fault_of(post(services, b"<methodCall><methodName>ping</methodName></methodCall>"))
    assert code == -32400 and "defusedxml" in message


# --- introspection and multicall -----------------------------------------------------


def test_list_methods(services):
    names = call(services, "system.listMethods")
    assert names == [
        "Echo.add",
        "Echo.echo",
        "Echo.echo_all",
        "Echo.echo_async",
        "Echo.fail",
        "Echo.fault",
        "Echo.needs_keyword",
        "Echo.protocol",
        "Echo.restart",
        "Echo.scale",
        "Vault.open",
        "ping",
        "system.listMethods",
        "system.methodHelp",
        "system.methodSignature",
        "system.multicall",
    ]
    assert expect_fault(services, "system.listMethods", 1)[0] == -32602


def test_method_help(services):
    assert call(services, "system.methodHelp", "Echo.add") == "Add two ints."
    assert call(services, "system.methodHelp", "ping") == "A function registered as a service."
    assert call(services, "system.methodHelp", "Echo.fail") == ""
    assert "several calls" in call(services, "system.methodHelp", "system.multicall").lower()
    assert expect_fault(services, "system.methodHelp", "Echo._private")[0] == -32601
    assert expect_fault(services, "system.methodHelp", "Nope.x")[0] == -32601
    assert expect_fault(services, "system.methodHelp")[0] == -32602
    assert expect_fault(services, "system.methodHelp", 1)[0] == -32602


def test_method_signature(services):
    assert call(services, "system.methodSignature", "Echo.add") == [["int", "int"], ["int", "int", "int"]]
    assert call(services, "system.methodSignature", "Echo.scale") == [["double", "double"], ["double", "double", "double"]]
    assert call(services, "system.methodSignature", "Echo.echo") == [["any", "any"]]
    assert call(services, "system.methodSignature", "ping") == [["any"]]
    assert call(services, "system.methodSignature", "Echo.echo_all") == "undef"
    assert call(services, "system.methodSignature", "Echo.needs_keyword") == "undef"
    assert call(services, "system.methodSignature", "Echo.protocol") == [["any"]]
    assert call(services, "system.methodSignature", "system.methodHelp") == [["string", "string"]]
    assert expect_fault(services, "system.methodSignature", "Nope.x")[0] == -32601


def test_multicall_as_the_stdlib_sends_it(services):
    calls = [
        {"methodName": "Echo.add", "params": [1, 2]},
        {"methodName": "Echo.fail", "params": ["boom"]},
        {"methodName": "ping", "params": []},
        {"methodName": "Nope.x", "params": []},
        {"methodName": "system.multicall", "params": [[]]},
        {"methodName": "bad", "params": []},
        {"no": "methodName"},
        "not a struct",
        {"methodName": "system.methodHelp", "params": ["Echo.add"]},
    ]
    services.register("bad", lambda: object())  # a result XML-RPC cannot carry
    results = call(services, "system.multicall", calls)
    assert results[0] == [3]
    assert results[1]["faultCode"] == -32500 and results[1]["faultString"] == "Server.Processing: " + INTERNAL_ERROR_MESSAGE
    assert results[2] == ["pong"]
    assert results[3]["faultCode"] == -32601
    assert results[4]["faultCode"] == -32600
    assert results[5]["faultCode"] == -32603
    assert results[6]["faultCode"] == -32600
    assert results[7]["faultCode"] == -32600
    assert results[8] == ["Add two ints."]
    iterator = xmlrpc.client.MultiCallIterator(results)
    assert iterator[0] == 3
    with pytest.raises(xmlrpc.client.Fault):
        iterator[1]


def test_multicall_bad_arguments(services):
    assert expect_fault(services, "system.multicall")[0] == -32602
    assert expect_fault(services, "system.multicall", "x")[0] == -32602
    assert call(services, "system.multicall", []) == []


def test_system_names_take_precedence(services):
    services.register("system", Echo())
    assert "system.echo" in call(services, "system.listMethods")
    assert call(services, "system.echo", 5) == 5
    assert call(services, "system.methodHelp", "system.listMethods") != "Return the argument unchanged."


def test_content_types():
    assert "text/xml" in amf_xmlrpc.CONTENT_TYPES
    assert all(ct == ct.lower() and ";" not in ct for ct in amf_xmlrpc.CONTENT_TYPES)


def test_module_docstring_example():
    result = doctest.testmod(amf_xmlrpc)
    assert result.failed == 0 and result.attempted > 0


def test_base64_argument_from_stdlib_binary(services):
    blob = bytes(range(256)) * 40  # the stdlib writes base64 in 76-character lines
    body = xmlrpc.client.dumps((xmlrpc.client.Binary(blob),), "Echo.echo").encode()
    assert b"\n" in body.split(b"<base64>")[1].split(b"</base64>")[0]
    (result,), _ = xmlrpc.client.loads(post(services, body), use_builtin_types=True)
    assert result == blob
    assert base64.b64encode(blob).decode() in post(services, body).decode()


def test_registered_object_holding_an_unencodable_value_is_internal_error(registered):
    s = Services({"get": lambda: Point(object(), 1)})
    body = b"<methodCall><methodName>get</methodName></methodCall>"
    assert fault_of(post(s, body))[0] == -32603
    code, message = fault_of(post(s, body, debug=True))
    assert code == -32603 and "Traceback" in message


def test_recordset_returned_as_is_becomes_structs():
    import sqlite3

    from amfkit.data import RecordSet

    db = sqlite3.connect(":memory:")
    db.execute("create table t (id integer, name text)")
    db.executemany("insert into t values (?, ?)", [(1, "a"), (2, None)])
    rs = RecordSet.from_cursor(db.execute("select id, name from t order by id"))
    db.close()
    assert result_of(rs) == [{"id": 1, "name": "a"}, {"id": 2, "name": None}]

    def get(context: Context):
        return rs.for_context(context)

    assert call(Services({"get": get}), "get") == [{"id": 1, "name": "a"}, {"id": 2, "name": None}]
