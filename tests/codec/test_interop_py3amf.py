"""Differential tests against Py3AMF (PyPI ``py3amf``, import name ``pyamf``).

Graphs go both ways, in AMF0 and in AMF3: written by Py3AMF and read by amfkit, written by
amfkit and read by Py3AMF. Where both follow the specification the bytes are identical
(the cases are listed in ``BYTE_IDENTICAL``). Where Py3AMF does not, the divergence is a
test of its own that states exactly what each side does; each one cites the section of
``docs/py3amf.md`` that documents it. ``tests/support/peers.py`` drives Py3AMF.
"""

from __future__ import annotations

import array
import datetime
import math
import struct
import sys
import uuid
import zlib
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import amfkit

import peers  # tests/support/peers.py (tests/conftest.py puts tests/support on sys.path)

AMF0, AMF3, pyamf = peers.AMF0, peers.AMF3, peers.pyamf
assert_same_graph, from_py3amf, to_py3amf, registered = (
    peers.assert_same_graph,
    peers.from_py3amf,
    peers.to_py3amf,
    peers.registered,
)

VERSIONS = [pytest.param(AMF0, id="amf0"), pytest.param(AMF3, id="amf3")]


def h(text: str) -> bytes:
    """Bytes from spaced hex, with "quoted" ASCII allowed: h('06 05 "ab"')."""
    out = bytearray()
    for i, part in enumerate(text.split('"')):
        out += part.encode() if i % 2 else bytes.fromhex(part)
    return bytes(out)


def codec(version: int) -> Any:
    return peers.amfkit_codec(version)


def py3amf_pure() -> bool:
    return pyamf._get_amf_module(pyamf.AMF3).__name__ == "pyamf.amf3"


# ---------------------------------------------------------------------------------------
# Classes registered with both libraries by the fixtures below


class Point:
    """Registered with only an alias: attributes travel as dynamic members."""

    def __init__(self, x: Any = None, y: Any = None) -> None:
        self.x = x
        self.y = y


class Sealed:
    """Registered with static members and dynamic=False."""


class Half:
    """Registered with static members, still dynamic."""


class NotOnAmfkit:
    """Registered with Py3AMF only: amfkit sees an unregistered alias."""


@pytest.fixture
def point():
    with registered(Point, "com.example.Point"):
        yield Point


@pytest.fixture
def sealed():
    # Py3AMF sorts static names; giving them sorted keeps both sides in the same order.
    with registered(Sealed, "com.example.Sealed", static=("a", "b"), dynamic=False):
        yield Sealed


@pytest.fixture
def half():
    with registered(Half, "com.example.Half", static=("a", "b")):
        yield Half


@pytest.fixture
def py3amf_only():
    pyamf.register_class(NotOnAmfkit, "com.example.NotOnAmfkit")
    try:
        yield NotOnAmfkit
    finally:
        pyamf.unregister_class(NotOnAmfkit)


class Switched:
    """Registered with Py3AMF only, as a class it writes through the AVM+ switch in AMF0."""

    class __amf__:
        amf3 = True


@pytest.fixture
def py3amf_switched():
    pyamf.register_class(Switched, "Switched")
    try:
        yield Switched
    finally:
        pyamf.unregister_class(Switched)


def make(cls: Any, **attrs: Any) -> Any:
    """An instance built without __init__, its attributes set in the order given."""
    obj = cls.__new__(cls)
    for k, v in attrs.items():
        setattr(obj, k, v)
    return obj


# ---------------------------------------------------------------------------------------
# Sample graphs. Each builder returns a fresh graph (sharing inside it is deliberate).


def _shared_dict() -> Any:
    sub = {"z": 1}
    return [sub, sub, {"w": sub}]


def _shared_list() -> Any:
    inner = [1, "x"]
    return {"a": inner, "b": inner}


def _self_list() -> Any:
    x: list[Any] = [1]
    x.append(x)
    return x


def _self_dict() -> Any:
    x: dict[str, Any] = {"a": 1}
    x["self"] = x
    return x


def _mutual() -> Any:
    a: dict[str, Any] = {"name": "a"}
    b: dict[str, Any] = {"name": "b", "peer": a}
    a["peer"] = b
    return [a, b]


def _mixed_nested() -> Any:
    return {
        "id": 7,
        "name": "name",
        "score": 2.5,
        "tags": ["name", "x", ""],
        "ok": True,
        "none": None,
        "child": {"name": "child", "list": [[], {}, [1, [2, [3]]]]},
    }


# (id, builder) pairs of plain graphs that both libraries write and read alike.
PLAIN_GRAPHS: list[tuple[str, Callable[[], Any]]] = [
    ("none", lambda: None),
    ("true", lambda: True),
    ("false", lambda: False),
    ("zero", lambda: 0),
    ("int-127", lambda: 127),
    ("int-128", lambda: 128),
    ("int-2^14", lambda: 2**14),
    ("int-2^21", lambda: 2**21),
    ("int-max29", lambda: 2**28 - 1),
    ("int-over29", lambda: 2**28),
    ("int-min29", lambda: -(2**28)),
    ("int-under29", lambda: -(2**28) - 1),
    ("int-minus1", lambda: -1),
    ("int-2^53", lambda: 2**53),
    ("float", lambda: 1.5),
    ("float-integral", lambda: 3.0),
    ("float-neg", lambda: -2.25),
    ("float-big", lambda: 1e300),
    ("float-tiny", lambda: 5e-324),
    ("inf", lambda: math.inf),
    ("-inf", lambda: -math.inf),
    ("nan", lambda: math.nan),
    ("empty-string", lambda: ""),
    ("string", lambda: "hello"),
    ("unicode", lambda: "é€😀\u0000"),
    ("repeated-strings", lambda: ["ab", "ab", "", "", "ab", "cd", "ab"]),
    ("key-equals-value", lambda: {"ab": "ab", "cd": ["ab", "cd"]}),
    ("empty-list", lambda: []),
    ("list", lambda: [1, "a", None, True, 2.5]),
    ("empty-dict", lambda: {}),
    ("dict", lambda: {"a": 1, "b": "x"}),
    ("two-dicts-same-keys", lambda: [{"a": 1}, {"a": 2}]),
    ("two-dicts-other-keys", lambda: [{"a": 1}, {"b": 2}, {}]),
    ("nested", _mixed_nested),
    ("shared-dict", _shared_dict),
    ("shared-list", _shared_list),
    ("self-list", _self_list),
    ("self-dict", _self_dict),
    ("mutual-cycle", _mutual),
    ("long-string", lambda: "é" * 40000),  # 80,000 UTF-8 bytes: AMF0 long string
    ("datetime", lambda: datetime.datetime(2020, 1, 2, 3, 4, 5, 678000)),
    ("datetime-1970", lambda: datetime.datetime(1970, 1, 1)),
    ("datetime-pre1970-whole-second", lambda: datetime.datetime(1960, 5, 6, 7, 8, 9)),
    ("datetimes-in-list", lambda: [datetime.datetime(2001, 2, 3), {"at": datetime.datetime(1999, 12, 31, 23, 59)}]),
]


def _ids(pairs: list[tuple[str, Any]]) -> list[Any]:
    return [pytest.param(builder, id=name) for name, builder in pairs]


# ---------------------------------------------------------------------------------------
# (a) written by Py3AMF, read by amfkit


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("build", _ids(PLAIN_GRAPHS))
def test_py3amf_to_amfkit_plain(build: Callable[[], Any], version: int) -> None:
    value = build()
    data = peers.encode(value, version)
    assert_same_graph(value, codec(version).decode(data))


@pytest.mark.parametrize("version", VERSIONS)
def test_py3amf_to_amfkit_special_values(version: int) -> None:
    cases = [
        (pyamf.Undefined, amfkit.Undefined),
        ([pyamf.Undefined, None], [amfkit.Undefined, None]),
        (datetime.date(2020, 1, 2), datetime.datetime(2020, 1, 2)),
        (
            datetime.datetime(2020, 1, 2, 4, 4, 5, 678000, tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
            datetime.datetime(2020, 1, 2, 3, 4, 5, 678000),
        ),
        (pyamf.amf3.ByteArray(b"ab\x00\xff"), b"ab\x00\xff"),
        (pyamf.MixedArray({0: "a", 1: "b", "k": "c"}), amfkit.MixedArray({0: "a", 1: "b", "k": "c"})),
        (pyamf.MixedArray({"k": 1}), amfkit.MixedArray({"k": 1})),
        ({0: "a", 1: "b"}, {"0": "a", "1": "b"}),  # Py3AMF writes int keys as strings
        ((1, 2, (3,)), [1, 2, [3]]),
    ]
    for written, expected in cases:
        assert_same_graph(expected, codec(version).decode(peers.encode(written, version)))


@pytest.mark.parametrize("version", VERSIONS)
def test_py3amf_to_amfkit_registered_class(point: type, version: int) -> None:
    p = Point(1, "a")
    q = make(Point, y=2.5, x=[p])
    got = codec(version).decode(peers.encode([p, q, p], version))
    assert type(got[0]) is Point and type(got[1]) is Point
    assert vars(got[0]) == {"x": 1, "y": "a"}
    assert got[1].y == 2.5 and got[1].x[0] is got[0] and got[2] is got[0]


@pytest.mark.parametrize("version", VERSIONS)
def test_py3amf_to_amfkit_static_members(sealed: type, half: type, version: int) -> None:
    s = make(Sealed, a=1, b="x")
    t = make(Half, a=[1], b=None)
    got = codec(version).decode(peers.encode([s, t, s], version))
    assert type(got[0]) is Sealed and vars(got[0]) == {"a": 1, "b": "x"}
    assert type(got[1]) is Half and vars(got[1]) == {"a": [1], "b": None}
    assert got[2] is got[0]


@pytest.mark.parametrize("version", VERSIONS)
def test_py3amf_to_amfkit_unregistered_alias(py3amf_only: type, version: int) -> None:
    obj = make(NotOnAmfkit, n=1, s="x")
    got = codec(version).decode(peers.encode(obj, version))
    assert isinstance(got, amfkit.TypedObject)
    assert got.alias == "com.example.NotOnAmfkit"
    assert dict(got) == {"n": 1, "s": "x"}


def test_py3amf_to_amfkit_xml() -> None:
    element = pyamf.xml.fromstring("<a><b>t</b></a>")
    assert amfkit.amf3.decode(peers.encode(element, AMF3)) == amfkit.XML("<a><b>t</b></a>")
    assert type(amfkit.amf3.decode(peers.encode(element, AMF3))) is amfkit.XML
    got0 = amfkit.amf0.decode(peers.encode(element, AMF0))
    assert type(got0) is amfkit.XMLDocument and got0 == "<a><b>t</b></a>"


def test_py3amf_to_amfkit_amf0_stream_shares_amf3_context(py3amf_switched: type) -> None:
    # Several top-level values in one AMF0 stream, each through the AVM+ switch: Py3AMF
    # keeps one AMF3 context for the stream (docs/py3amf.md, "The AVM+ switch"), so the
    # second object refers to the first one's traits and strings.
    data = peers.encode_all([make(Switched, s="hello"), "x", make(Switched, s="hello")], AMF0)
    assert data == h('11 0a 0b 11 "Switched" 03 "s" 06 0b "hello" 01 02 00 01 "x" 11 0a 01 02 06 04 01')
    got = amfkit.amf0.Decoder().decode_all(data)
    assert got == [amfkit.TypedObject("Switched", {"s": "hello"}), "x", amfkit.TypedObject("Switched", {"s": "hello"})]
    assert got[0] is not got[2]


# ---------------------------------------------------------------------------------------
# (b) written by amfkit, read by Py3AMF


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("build", _ids(PLAIN_GRAPHS))
def test_amfkit_to_py3amf_plain(build: Callable[[], Any], version: int) -> None:
    value = build()
    data = codec(version).encode(value)
    assert_same_graph(value, from_py3amf(peers.decode(data, version)))


@pytest.mark.parametrize("version", VERSIONS)
def test_amfkit_to_py3amf_special_values(version: int) -> None:
    blob = b"ab\x00\xff"
    cases = [
        amfkit.Undefined,
        [amfkit.Undefined, None],
        blob,
        [blob, blob],  # one bytes object twice: one ByteArray, referenced
        amfkit.MixedArray({0: "a", 1: "b", "k": "c"}),
        amfkit.MixedArray({"k": 1, "j": [1]}),
        datetime.datetime(1969, 12, 31, 23, 59, 59, 500000),  # read right; see test_pre1970
        datetime.datetime(1900, 1, 1, 0, 0, 0, 250000),
    ]
    for value in cases:
        assert_same_graph(value, from_py3amf(peers.decode(codec(version).encode(value), version)))


@pytest.mark.parametrize("version", VERSIONS)
def test_amfkit_to_py3amf_registered_class(point: type, version: int) -> None:
    p = Point(1, "a")
    q = make(Point, y=2.5, x=[p])
    got = peers.decode(codec(version).encode([p, q, p]), version)
    assert type(got[0]) is Point and type(got[1]) is Point
    assert vars(got[0]) == {"x": 1, "y": "a"}
    assert got[1].y == 2.5 and got[1].x[0] is got[0] and got[2] is got[0]


@pytest.mark.parametrize("version", VERSIONS)
def test_amfkit_to_py3amf_static_members(sealed: type, half: type, version: int) -> None:
    s = make(Sealed, a=1, b="x")
    t = make(Half, a=[1], b=None, extra="dyn")
    got = peers.decode(codec(version).encode([s, t, s]), version)
    assert type(got[0]) is Sealed and vars(got[0]) == {"a": 1, "b": "x"}
    assert type(got[1]) is Half and vars(got[1]) == {"a": [1], "b": None, "extra": "dyn"}
    assert got[2] is got[0]


@pytest.mark.parametrize("version", VERSIONS)
def test_amfkit_to_py3amf_typed_object(version: int) -> None:
    value = amfkit.TypedObject("com.example.Unknown", {"n": 1, "s": "x"})
    got = peers.decode(codec(version).encode(value), version)
    assert isinstance(got, pyamf.TypedObject)
    assert got.alias == "com.example.Unknown" and dict(got) == {"n": 1, "s": "x"}


def test_amfkit_to_py3amf_xml() -> None:
    for version, value in [
        (AMF3, amfkit.XML("<a><b>t</b></a>")),
        (AMF3, amfkit.XMLDocument("<a><b>t</b></a>")),
        (AMF0, amfkit.XMLDocument("<a><b>t</b></a>")),
    ]:
        got = peers.decode(codec(version).encode(value), version)
        assert got.tag == "a" and got[0].tag == "b" and got[0].text == "t"


def test_amfkit_to_py3amf_amf0_stream_shares_amf3_context() -> None:
    # A stream of values sharing one reference context, read by Py3AMF's one decoder.
    shared = {"k": "v"}
    values = ["x", shared, b"ab", shared, "x"]
    data = amfkit.amf0.Encoder().encode_all(values)
    got = from_py3amf(peers.decode_all(data, AMF0))
    assert_same_graph(values, got)


# ---------------------------------------------------------------------------------------
# (c) byte-identical output where both follow the specification
#
# (id, versions, value for amfkit, value for Py3AMF or SAME, expected bytes per version).
# The expected bytes pin both writers to the specification, not only to each other.

SAME = object()
BYTE_IDENTICAL: list[tuple[str, tuple[int, ...], Callable[[], Any], Any, dict[int, str]]] = [
    ("null", (AMF0, AMF3), lambda: None, SAME, {AMF0: "05", AMF3: "01"}),
    ("undefined", (AMF0, AMF3), lambda: amfkit.Undefined, lambda: pyamf.Undefined, {AMF0: "06", AMF3: "00"}),
    ("true", (AMF0, AMF3), lambda: True, SAME, {AMF0: "01 01", AMF3: "03"}),
    ("false", (AMF0, AMF3), lambda: False, SAME, {AMF0: "01 00", AMF3: "02"}),
    ("int-0", (AMF3,), lambda: 0, SAME, {AMF3: "04 00"}),
    ("int-127", (AMF3,), lambda: 127, SAME, {AMF3: "04 7f"}),
    ("int-128", (AMF3,), lambda: 128, SAME, {AMF3: "04 81 00"}),
    ("int-16383", (AMF3,), lambda: 16383, SAME, {AMF3: "04 ff 7f"}),
    ("int-16384", (AMF3,), lambda: 16384, SAME, {AMF3: "04 81 80 00"}),
    ("int-2097151", (AMF3,), lambda: 2097151, SAME, {AMF3: "04 ff ff 7f"}),
    ("int-2097152", (AMF3,), lambda: 2097152, SAME, {AMF3: "04 80 c0 80 00"}),
    ("int-max29", (AMF3,), lambda: 2**28 - 1, SAME, {AMF3: "04 bf ff ff ff"}),
    ("int-over29", (AMF3,), lambda: 2**28, SAME, {AMF3: "05 41 b0 00 00 00 00 00 00"}),
    ("int-minus1", (AMF3,), lambda: -1, SAME, {AMF3: "04 ff ff ff ff"}),
    ("int-min29", (AMF3,), lambda: -(2**28), SAME, {AMF3: "04 c0 80 80 00"}),
    ("int-under29", (AMF3,), lambda: -(2**28) - 1, SAME, {AMF3: "05 c1 b0 00 00 01 00 00 00"}),
    ("int-amf0", (AMF0,), lambda: 5, SAME, {AMF0: "00 40 14 00 00 00 00 00 00"}),
    ("float", (AMF0, AMF3), lambda: 1.5, SAME, {AMF0: "00 3f f8 00 00 00 00 00 00", AMF3: "05 3f f8 00 00 00 00 00 00"}),
    ("float-integral", (AMF3,), lambda: 1.0, SAME, {AMF3: "05 3f f0 00 00 00 00 00 00"}),
    ("minus-zero", (AMF0, AMF3), lambda: -0.0, SAME, {AMF0: "00 80 00 00 00 00 00 00 00", AMF3: "05 80 00 00 00 00 00 00 00"}),
    ("inf", (AMF0, AMF3), lambda: math.inf, SAME, {AMF0: "00 7f f0 00 00 00 00 00 00", AMF3: "05 7f f0 00 00 00 00 00 00"}),
    ("empty-string", (AMF0, AMF3), lambda: "", SAME, {AMF0: "02 00 00", AMF3: "06 01"}),
    ("unicode", (AMF0, AMF3), lambda: "é€😀", SAME, {AMF0: "02 00 09 c3 a9 e2 82 ac f0 9f 98 80", AMF3: "06 13 c3 a9 e2 82 ac f0 9f 98 80"}),
    (
        "string-refs",
        (AMF0, AMF3),
        lambda: ["ab", "ab", "", "", "ab"],
        SAME,
        {
            AMF0: '0a 00 00 00 05 02 00 02 "ab" 02 00 02 "ab" 02 00 00 02 00 00 02 00 02 "ab"',
            AMF3: '09 0b 01 06 05 "ab" 06 00 06 01 06 01 06 00',
        },
    ),
    ("key-value-share-table", (AMF3,), lambda: {"ab": "ab"}, SAME, {AMF3: '0a 0b 01 05 "ab" 06 00 01'}),
    ("empty-list", (AMF0, AMF3), lambda: [], SAME, {AMF0: "0a 00 00 00 00", AMF3: "09 01 01"}),
    (
        "list",
        (AMF0, AMF3),
        lambda: [1, "a", None],
        SAME,
        {AMF0: '0a 00 00 00 03 00 3f f0 00 00 00 00 00 00 02 00 01 "a" 05', AMF3: '09 07 01 04 01 06 03 "a" 01'},
    ),
    ("tuple", (AMF3,), lambda: (1, 2), SAME, {AMF3: "09 05 01 04 01 04 02"}),
    ("empty-dict", (AMF0, AMF3), lambda: {}, SAME, {AMF0: "03 00 00 09", AMF3: "0a 0b 01 01"}),
    (
        "dict",
        (AMF0, AMF3),
        lambda: {"a": 1, "b": "x"},
        SAME,
        {
            AMF0: '03 00 01 "a" 00 3f f0 00 00 00 00 00 00 00 01 "b" 02 00 01 "x" 00 00 09',
            AMF3: '0a 0b 01 03 "a" 04 01 03 "b" 06 03 "x" 01',
        },
    ),
    (
        "anonymous-trait-reference",
        (AMF3,),
        lambda: [{"a": 1}, {"a": 2}, {"b": 3}],
        SAME,
        {AMF3: '09 07 01 0a 0b 01 03 "a" 04 01 01 0a 01 00 04 02 01 0a 01 03 "b" 04 03 01'},
    ),
    (
        "shared-dict",
        (AMF0, AMF3),
        lambda: (lambda s: [s, s])({"z": 1}),
        SAME,
        {
            AMF0: '0a 00 00 00 02 03 00 01 "z" 00 3f f0 00 00 00 00 00 00 00 00 09 07 00 01',
            AMF3: '09 05 01 0a 0b 01 03 "z" 04 01 01 0a 02',
        },
    ),
    ("self-list", (AMF0, AMF3), _self_list, SAME, {AMF0: "0a 00 00 00 02 00 3f f0 00 00 00 00 00 00 07 00 00", AMF3: "09 05 01 04 01 09 00"}),
    (
        "self-dict",
        (AMF0, AMF3),
        _self_dict,
        SAME,
        {
            AMF0: '03 00 01 "a" 00 3f f0 00 00 00 00 00 00 00 04 "self" 07 00 00 00 00 09',
            AMF3: '0a 0b 01 03 "a" 04 01 09 "self" 0a 00 01',
        },
    ),
    (
        "datetime",
        (AMF0, AMF3),
        lambda: datetime.datetime(2020, 1, 2, 3, 4, 5, 678000),
        SAME,
        {AMF0: "0b 42 76 f6 43 5c f2 e0 00 00 00", AMF3: "08 01 42 76 f6 43 5c f2 e0 00"},
    ),
    (
        "aware-datetime",
        (AMF0, AMF3),
        lambda: datetime.datetime(2020, 1, 2, 4, 4, 5, 678000, tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
        SAME,
        {AMF0: "0b 42 76 f6 43 5c f2 e0 00 00 00", AMF3: "08 01 42 76 f6 43 5c f2 e0 00"},
    ),
    ("date", (AMF0, AMF3), lambda: datetime.date(2020, 1, 2), SAME, {AMF0: "0b 42 76 f6 38 d4 40 00 00 00 00", AMF3: "08 01 42 76 f6 38 d4 40 00 00"}),
    (
        "shared-datetime",  # AMF0: test_amf0_shared_date_is_a_reference_as_flash_player_writes_it
        (AMF3,),
        lambda: (lambda d: [d, d])(datetime.datetime(2020, 1, 2)),
        SAME,
        {AMF3: "09 05 01 08 01 42 76 f6 38 d4 40 00 00 08 02"},
    ),
    ("bytes-as-bytearray", (AMF0, AMF3), lambda: b"ab", lambda: pyamf.amf3.ByteArray(b"ab"), {AMF0: '11 0c 05 "ab"', AMF3: '0c 05 "ab"'}),
    (
        "shared-bytes",
        (AMF3,),
        lambda: (lambda b: [b, b])(b"ab"),
        lambda: (lambda b: [b, b])(pyamf.amf3.ByteArray(b"ab")),
        {AMF3: '09 05 01 0c 05 "ab" 0c 02'},
    ),
    (
        "mixed-array",
        (AMF3,),
        lambda: amfkit.MixedArray({0: "a", 1: "b", "k": "c"}),
        lambda: pyamf.MixedArray({0: "a", 1: "b", "k": "c"}),
        {AMF3: '09 05 03 "k" 06 03 "c" 01 06 03 "a" 06 03 "b"'},
    ),
    ("xml", (AMF3,), lambda: amfkit.XML("<a><b>t</b></a>"), lambda: pyamf.xml.fromstring("<a><b>t</b></a>"), {AMF3: '0b 1f "<a><b>t</b></a>"'}),
    (
        "xml-document-amf0",
        (AMF0,),
        lambda: amfkit.XMLDocument("<a><b>t</b></a>"),
        lambda: pyamf.xml.fromstring("<a><b>t</b></a>"),
        {AMF0: '0f 00 00 00 0f "<a><b>t</b></a>"'},
    ),
    ("long-string", (AMF0,), lambda: "a" * 65536, SAME, {AMF0: "0c 00 01 00 00" + " 61" * 65536}),
]


@pytest.mark.parametrize(
    "build, py_build, version, expected",
    [
        pytest.param(build, py_build, version, hexes[version], id=f"{name}-amf{version}")
        for name, versions, build, py_build, hexes in BYTE_IDENTICAL
        for version in versions
    ],
)
def test_byte_identical(build: Callable[[], Any], py_build: Any, version: int, expected: str) -> None:
    py_value = build() if py_build is SAME else py_build()
    assert peers.encode(py_value, version) == h(expected)
    assert codec(version).encode(build()) == h(expected)


@pytest.mark.parametrize("version", VERSIONS)
def test_byte_identical_registered_alias_only(point: type, version: int) -> None:
    # Only an alias: every attribute is a dynamic member, in __dict__ order, per instance;
    # the second instance refers to the traits of the first (docs/py3amf.md, "Registered
    # classes").
    p = Point(1, "a")
    q = make(Point, y=2, x=3)
    empty = make(Point)
    expected = {
        AMF3: h('09 07 01 0a 0b 23 "com.example.Point" 03 "x" 04 01 03 "y" 06 03 "a" 01'
                ' 0a 01 04 04 02 02 04 03 01 0a 01 01'),
        AMF0: h('0a 00 00 00 03'
                ' 10 00 11 "com.example.Point" 00 01 "x" 00 3f f0 00 00 00 00 00 00 00 01 "y" 02 00 01 "a" 00 00 09'
                ' 10 00 11 "com.example.Point" 00 01 "y" 00 40 00 00 00 00 00 00 00 00 01 "x" 00 40 08 00 00 00 00 00 00 00 00 09'
                ' 10 00 11 "com.example.Point" 00 00 09'),
    }[version]
    assert peers.encode([p, q, empty], version) == expected
    assert codec(version).encode([p, q, empty]) == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_byte_identical_static_members(sealed: type, half: type, version: int) -> None:
    s1 = make(Sealed, a=1, b=2)
    s2 = make(Sealed, b=6, a=5)
    t = make(Half, a=1, b=2)
    expected = {
        AMF3: h('09 07 01 0a 23 25 "com.example.Sealed" 03 "a" 03 "b" 04 01 04 02'
                ' 0a 01 04 05 04 06'
                ' 0a 2b 21 "com.example.Half" 02 04 04 01 04 02 01'),  # names: string refs 1, 2
        AMF0: h('0a 00 00 00 03'
                ' 10 00 12 "com.example.Sealed" 00 01 "a" 00 3f f0 00 00 00 00 00 00 00 01 "b" 00 40 00 00 00 00 00 00 00 00 00 09'
                ' 10 00 12 "com.example.Sealed" 00 01 "a" 00 40 14 00 00 00 00 00 00 00 01 "b" 00 40 18 00 00 00 00 00 00 00 00 09'
                ' 10 00 10 "com.example.Half" 00 01 "a" 00 3f f0 00 00 00 00 00 00 00 01 "b" 00 40 00 00 00 00 00 00 00 00 00 09'),
    }[version]
    assert peers.encode([s1, s2, t], version) == expected
    assert codec(version).encode([s1, s2, t]) == expected


def test_byte_identical_amf0_references_past_65535() -> None:
    # An AMF0 reference is a U16: an object past index 65535 is written inline again by
    # both (docs/py3amf.md, "Shared references and cycles").
    lists: list[Any] = [[] for _ in range(65537)]
    value = lists + [lists[65536], lists[3]]  # indices 65537 (too far) and 4
    theirs = peers.encode(value, AMF0)
    assert amfkit.amf0.encode(value) == theirs
    assert theirs.endswith(h("0a 00 00 00 00 0a 00 00 00 00 07 00 04"))
    got = amfkit.amf0.decode(theirs)
    assert got[-1] is got[3] and got[-2] == [] and got[-2] is not got[65536]


# ---------------------------------------------------------------------------------------
# (d) documented divergences (docs/py3amf.md)


DATE_2020 = datetime.datetime(2020, 1, 2)
DATE_2020_HEX = "42 76 f6 38 d4 40 00 00"
NUMBER_1_HEX = "3f f0 00 00 00 00 00 00"


def test_amf0_date_takes_a_reference_index_as_flash_player_counts() -> None:
    # docs/py3amf.md "AMF0 references": Flash Player gives every Date (and XML document)
    # an AMF0 reference index, although the specification's list does not name them.
    # Py3AMF's decoder counts them as Flash Player does; its encoder does not, so its own
    # streams misdecode (in its reader and in amfkit's): reference 1 is the Date.
    obj = {"a": 1}
    flash = h(f'0a 00 00 00 03 0b {DATE_2020_HEX} 00 00 03 00 01 "a" 00 {NUMBER_1_HEX} 00 00 09 07 00 02')
    assert amfkit.amf0.encode([DATE_2020, obj, obj]) == flash
    mine = amfkit.amf0.decode(flash)
    assert mine == [DATE_2020, {"a": 1}, {"a": 1}] and mine[2] is mine[1]
    theirs = peers.decode(flash, AMF0)
    assert theirs[2] is theirs[1] and theirs[1] == {"a": 1}

    py3amf_bytes = peers.encode([DATE_2020, obj, obj], AMF0)
    assert py3amf_bytes == flash[:-1] + b"\x01"  # reference 1: the Date, for Flash Player
    assert peers.decode(py3amf_bytes, AMF0)[2] == DATE_2020
    assert amfkit.amf0.decode(py3amf_bytes)[2] == DATE_2020


def test_amf0_date_shifts_later_references() -> None:
    # The same, one position later: Flash Player numbers [Date, [1], obj, obj] as
    # 0, 1, 2, 3, so the last value is reference 3; Py3AMF writes 2 (the list).
    obj = {"a": 1}
    value = [DATE_2020, [1], obj, obj]
    data = amfkit.amf0.encode(value)
    assert data.endswith(h("07 00 03"))
    mine = amfkit.amf0.decode(data)
    assert mine[3] is mine[2]
    theirs = peers.decode(data, AMF0)
    assert theirs[3] is theirs[2] and theirs[3] == {"a": 1}
    py3amf_bytes = peers.encode(value, AMF0)
    assert py3amf_bytes == data[:-1] + b"\x02"
    assert amfkit.amf0.decode(py3amf_bytes)[3] == [1]


def test_amf0_xml_document_takes_a_reference_index() -> None:
    # docs/py3amf.md "AMF0 references": the same for the XML document marker 0x0F.
    obj = {"a": 1}
    flash = h(f'0a 00 00 00 03 0f 00 00 00 04 "<a/>" 03 00 01 "a" 00 {NUMBER_1_HEX} 00 00 09 07 00 02')
    assert amfkit.amf0.encode([amfkit.XMLDocument("<a/>"), obj, obj]) == flash
    mine = amfkit.amf0.decode(flash)
    assert mine[2] is mine[1] and mine[1] == {"a": 1}
    theirs = peers.decode(flash, AMF0)
    assert theirs[2] is theirs[1] and theirs[1] == {"a": 1}


def test_amf0_shared_date_is_a_reference_as_flash_player_writes_it() -> None:
    # The same datetime twice: amfkit writes a reference to index 1 (Flash Player's
    # numbering); Py3AMF writes the Date twice. Each reads the other's bytes.
    when = datetime.datetime(2020, 1, 2)
    mine = amfkit.amf0.encode([when, when])
    assert mine == h("0a 00 00 00 02 0b 42 76 f6 38 d4 40 00 00 00 00 07 00 01")
    assert peers.decode(mine, AMF0) == [when, when]
    theirs = peers.encode([when, when], AMF0)
    assert theirs == h("0a 00 00 00 02 0b 42 76 f6 38 d4 40 00 00 00 00 0b 42 76 f6 38 d4 40 00 00 00 00")
    assert amfkit.amf0.decode(theirs) == [when, when]


def test_amf0_values_after_the_avmplus_switch_are_not_amf0_references() -> None:
    # docs/py3amf.md "AMF0 references": Py3AMF's AMF0 encoder counts a value it writes
    # through the AVM+ switch (here a ByteArray) as an AMF0 object and refers to it with
    # an AMF0 reference; no reader (its own included) has it in the AMF0 table.
    obj = {"a": 1}
    theirs = peers.encode([pyamf.amf3.ByteArray(b"ab"), obj, obj], AMF0)
    assert theirs == h(f'0a 00 00 00 03 11 0c 05 "ab" 03 00 01 "a" 00 {NUMBER_1_HEX} 00 00 09 07 00 02')
    with pytest.raises(pyamf.ReferenceError):
        peers.decode(theirs, AMF0)
    with pytest.raises(amfkit.DecodeError):
        amfkit.amf0.decode(theirs)

    mine = amfkit.amf0.encode([b"ab", obj, obj])
    assert mine == h(f'0a 00 00 00 03 11 0c 05 "ab" 03 00 01 "a" 00 {NUMBER_1_HEX} 00 00 09 07 00 01')
    got = peers.decode(mine, AMF0)
    assert got[2] is got[1] and got[0] == b"ab"

    # And a ByteArray that occurs twice: Py3AMF writes an AMF0 reference to it.
    ba = pyamf.amf3.ByteArray(b"ab")
    assert peers.encode([ba, ba], AMF0) == h('0a 00 00 00 02 11 0c 05 "ab" 07 00 01')
    with pytest.raises(pyamf.ReferenceError):
        peers.decode(peers.encode([ba, ba], AMF0), AMF0)


def test_amf0_stream_of_switched_values() -> None:
    # docs/py3amf.md "The AVM+ switch" and "AMF0 references": in a stream of AMF0 values,
    # one AMF3 context spans the switches, so a ByteArray written twice is an AMF3
    # reference the second time (amfkit), which Py3AMF reads; Py3AMF itself writes an AMF0
    # reference to the switched value, which neither reader has in its AMF0 table.
    blob = b"ab"
    mine = amfkit.amf0.Encoder().encode_all([blob, blob])
    assert mine == h('11 0c 05 "ab" 11 0c 00')
    got = peers.decode_all(mine, AMF0)
    assert got[0] is got[1] and got[0] == blob

    ba = pyamf.amf3.ByteArray(blob)
    theirs = peers.encode_all([ba, ba], AMF0)
    assert theirs == h('11 0c 05 "ab" 07 00 00')
    with pytest.raises(pyamf.ReferenceError):
        peers.decode_all(theirs, AMF0)
    with pytest.raises(amfkit.DecodeError):
        amfkit.amf0.Decoder().decode_all(theirs)


@pytest.mark.parametrize(
    "when, theirs_ms, spec_ms",
    [
        (datetime.datetime(1969, 12, 31, 23, 59, 59, 500000), -1500.0, -500.0),
        (datetime.datetime(1960, 5, 6, 7, 8, 9, 123000), -304707111123.0, -304707110877.0),
        (datetime.datetime(1900, 1, 1, 0, 0, 0, 250000), -2208988800250.0, -2208988799750.0),
    ],
    ids=["1969-half-second", "1960", "1900"],
)
def test_pre1970_dates(when: datetime.datetime, theirs_ms: float, spec_ms: float) -> None:
    # docs/py3amf.md "Dates": Py3AMF subtracts the fraction of a second of a pre-1970 date
    # instead of adding it; its decoder is right.
    for version, prefix in [(AMF3, "08 01"), (AMF0, "0b")]:
        suffix = b"" if version == AMF3 else h("00 00")
        assert peers.encode(when, version) == h(prefix) + struct.pack(">d", theirs_ms) + suffix
        assert codec(version).encode(when) == h(prefix) + struct.pack(">d", spec_ms) + suffix
        assert peers.decode(codec(version).encode(when), version) == when
        # amfkit reads what Py3AMF wrote, faithfully: a different instant.
        wrong = when + datetime.timedelta(milliseconds=theirs_ms - spec_ms)
        assert codec(version).decode(peers.encode(when, version)) == wrong


@pytest.mark.parametrize("version", VERSIONS)
def test_bytes_are_written_as_strings_by_py3amf(version: int) -> None:
    # docs/py3amf.md "Bytes and bytearray": Py3AMF writes bytes as a string; amfkit writes
    # a ByteArray (AMF0: through the AVM+ switch), as Py3AMF does for its ByteArray class.
    theirs = peers.encode(b"ab", version)
    assert theirs == {AMF0: h('02 00 02 "ab"'), AMF3: h('06 05 "ab"')}[version]
    got = codec(version).decode(theirs)
    assert got == "ab" and type(got) is str
    mine = codec(version).encode(b"ab")
    assert mine == peers.encode(pyamf.amf3.ByteArray(b"ab"), version)
    assert from_py3amf(peers.decode(mine, version)) == b"ab"
    for other in (bytearray(b"ab"), memoryview(b"ab")):
        assert codec(version).encode(other) == mine
        with pytest.raises(AttributeError):
            peers.encode(other, version)


def test_non_utf8_bytes_make_an_invalid_string() -> None:
    # Py3AMF writes b"\xff" as a string holding invalid UTF-8; no reader can take it as text.
    theirs = peers.encode(b"\xff", AMF3)
    assert theirs == h("06 03 ff")
    with pytest.raises(UnicodeDecodeError):
        peers.decode(theirs, AMF3)
    with pytest.raises(amfkit.DecodeError):
        amfkit.amf3.decode(theirs)


def test_zlib_looking_bytearray_is_changed_by_py3amf() -> None:
    # docs/py3amf.md "Bytes and bytearray": a ByteArray starting with 78 9c is compressed
    # on write and decompressed on read by Py3AMF; amfkit keeps bytes as they are.
    blob = zlib.compress(b"hello hello hello")
    assert blob[:2] == b"\x78\x9c"
    mine = amfkit.amf3.encode(blob)
    assert mine == bytes([0x0C, len(blob) * 2 + 1]) + blob
    assert amfkit.amf3.decode(mine) == blob
    assert peers.decode(mine, AMF3).getvalue() == b"hello hello hello"  # silently inflated

    theirs = peers.encode(pyamf.amf3.ByteArray(blob), AMF3)
    assert theirs != mine
    got = amfkit.amf3.decode(theirs)
    assert got != blob and zlib.decompress(got) == blob  # Py3AMF compressed it once more


def test_vectors_are_not_supported_by_py3amf() -> None:
    # docs/py3amf.md "How it decodes": no Vector support; Py3AMF writes array.array as an
    # ordinary Array.
    for value in (array.array("i", [1, -2]), array.array("I", [1, 2]), array.array("d", [0.5]),
                  amfkit.ObjectVector([{"a": 1}], type_name="Object")):
        with pytest.raises(pyamf.DecodeError):
            peers.decode(amfkit.amf3.encode(value), AMF3)
    theirs = peers.encode(array.array("i", [1, -2]), AMF3)
    assert theirs == h("09 05 01 04 01 04 ff ff ff fe")
    assert amfkit.amf3.decode(theirs) == [1, -2]


def test_dictionary_is_read_as_a_tuple_by_py3amf() -> None:
    # docs/py3amf.md "How it decodes": the pure build reads a Dictionary as a tuple
    # (dict, weak_keys) and does not register it for references; the Cython build rejects it.
    value = amfkit.Dictionary({"a": 1, 2: "b"}, weak_keys=True)
    data = amfkit.amf3.encode(value)
    if py3amf_pure():
        got = peers.decode(data, AMF3)
        assert got == ({"a": 1, 2: "b"}, True)
        assert_same_graph(value, from_py3amf(got))
        # A second occurrence is a reference (11 02); Py3AMF reads it as a new Dictionary
        # header and runs off the end of the input.
        with pytest.raises(OSError):
            peers.decode(amfkit.amf3.encode([value, value]), AMF3)
    else:
        with pytest.raises(pyamf.DecodeError):
            peers.decode(data, AMF3)
    # Py3AMF cannot write one: a dict with int keys becomes an object with string keys.
    assert peers.encode({2: "b"}, AMF3) == h('0a 0b 01 03 "2" 06 03 "b" 01')


def test_amf0_ecma_keys() -> None:
    # docs/py3amf.md "How it decodes": Py3AMF turns every ECMA key int() accepts into an
    # int, so "01" lands on 1 and overwrites it. amfkit converts canonical decimal integers
    # only ("-1" yes; "01", " 2", "1_0" no), so no key is lost.
    def s(text: str) -> bytes:
        return len(text.encode()).to_bytes(2, "big") + text.encode()

    pairs = [("0", "a"), ("1", "b"), ("k", "c"), ("01", "d"), ("-1", "e"), (" 2", "f"), ("1_0", "g")]
    data = b"\x08\x00\x00\x00\x02" + b"".join(s(k) + b"\x02" + s(v) for k, v in pairs) + b"\x00\x00\x09"
    theirs = peers.decode(data, AMF0)
    assert dict(theirs) == {0: "a", 1: "d", "k": "c", -1: "e", 2: "f", 10: "g"}
    mine = amfkit.amf0.decode(data)
    assert isinstance(mine, amfkit.MixedArray)
    assert dict(mine) == {0: "a", 1: "b", "k": "c", "01": "d", -1: "e", " 2": "f", "1_0": "g"}


def test_amf0_ecma_count_field() -> None:
    # Py3AMF writes the highest int key as the ECMA array's count (docs/py3amf.md
    # "MixedArray"); readers ignore the field, so each reads the other's array.
    theirs = peers.encode(pyamf.MixedArray({0: "a", 1: "b", "k": "c"}), AMF0)
    assert theirs[:5] == h("08 00 00 00 01")
    assert amfkit.amf0.decode(theirs) == amfkit.MixedArray({0: "a", 1: "b", "k": "c"})
    mine = amfkit.amf0.encode(amfkit.MixedArray({0: "a", 1: "b", "k": "c"}))
    assert mine[:5] == h("08 00 00 00 03")  # amfkit writes the number of entries
    assert mine[5:] == theirs[5:]
    assert dict(peers.decode(mine, AMF0)) == {0: "a", 1: "b", "k": "c"}


def test_static_members_are_sorted_by_py3amf() -> None:
    # docs/py3amf.md "Registered classes": Py3AMF writes static members sorted by name;
    # amfkit writes them in the declared order. Each reads the other's.
    class Order:
        pass

    with registered(Order, "com.example.Order", static=("b", "a"), dynamic=False):
        obj = make(Order, a=1, b=2)
        assert peers.encode(obj, AMF3) == h('0a 23 23 "com.example.Order" 03 "a" 03 "b" 04 01 04 02')
        assert amfkit.amf3.encode(obj) == h('0a 23 23 "com.example.Order" 03 "b" 03 "a" 04 02 04 01')
        for version in (AMF0, AMF3):
            assert vars(codec(version).decode(peers.encode(obj, version))) == {"a": 1, "b": 2}
            assert vars(peers.decode(codec(version).encode(obj), version)) == {"a": 1, "b": 2}


def test_unregistered_alias_round_trip() -> None:
    # docs/py3amf.md "Unregistered aliases": Py3AMF re-encodes an unknown typed object as an
    # anonymous one; amfkit gives back the same bytes, sealed traits included.
    dynamic = h('0a 0b 07 "a.B" 03 "x" 04 01 01')
    sealed = h('0a 13 07 "a.B" 03 "x" 04 01')
    for data in (dynamic, sealed):
        assert amfkit.amf3.encode(amfkit.amf3.decode(data)) == data
        theirs = peers.decode(data, AMF3)
        assert theirs.alias == "a.B" and dict(theirs) == {"x": 1}
        assert peers.encode(theirs, AMF3) == h('0a 0b 01 03 "x" 04 01 01')


def test_decoding_never_imports_a_module(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/py3amf.md "Unregistered aliases and imports": Py3AMF imports the module named by
    # a class alias and builds the class without calling __init__. amfkit never imports.
    name = f"amfkit_probe_{uuid.uuid4().hex}"
    marker = tmp_path / "imported"
    (tmp_path / f"{name}.py").write_text(
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('yes')\n"
        "class Thing:\n"
        "    def __init__(self):\n"
        f"        pathlib.Path({str(tmp_path / 'init')!r}).write_text('yes')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    alias = f"{name}.Thing".encode()
    data = b"\x0a\x0b" + bytes([len(alias) * 2 + 1]) + alias + h('03 "x" 04 01 01')

    got = amfkit.amf3.decode(data)
    assert isinstance(got, amfkit.TypedObject) and got.alias == alias.decode() and got == {"x": 1}
    assert name not in sys.modules and not marker.exists()

    try:
        theirs = peers.decode(data, AMF3)
        assert name in sys.modules and marker.read_text() == "yes"
        assert type(theirs).__name__ == "Thing" and vars(theirs) == {"x": 1}
        assert not (tmp_path / "init").exists()  # built with __new__, __init__ not called
        assert alias.decode() in pyamf.CLASS_CACHE  # and registered globally as a side effect
    finally:
        if alias.decode() in pyamf.CLASS_CACHE:
            pyamf.unregister_class(alias.decode())
        sys.modules.pop(name, None)


@pytest.mark.parametrize("version", VERSIONS)
def test_truncated_input(version: int) -> None:
    # docs/py3amf.md summary 7: input that stops at a value boundary inside a container
    # gives no value and no error from Py3AMF's iterator; amfkit reports where it stopped.
    data = {AMF3: h("09 05 01 04 01"), AMF0: h("0a 00 00 00 02 05")}[version]
    assert list(pyamf.decode(data, encoding=peers._ENCODING[version])) == []
    with pytest.raises(amfkit.DecodeError) as info:
        codec(version).decode(data)
    assert 0 < info.value.offset <= len(data)


def test_amf0_integral_numbers_and_minus_zero() -> None:
    # docs/py3amf.md "How it decodes": Py3AMF's AMF0 reader returns integral numbers as int,
    # so -0.0 loses its sign; amfkit keeps the double.
    data = amfkit.amf0.encode(-0.0)
    theirs = peers.decode(data, AMF0)
    assert theirs == 0 and type(theirs) is int
    mine = amfkit.amf0.decode(data)
    assert mine == 0 and math.copysign(1.0, mine) == -1.0


def test_empty_string_key() -> None:
    # docs/py3amf.md summary 9: Py3AMF writes {"": 1} in AMF3 as a corrupt object (the empty
    # key ends the members), and in AMF0 as an empty key followed by a value, which it also
    # reads back. In AMF3 the empty name ends the members, so amfkit refuses to write one.
    # In AMF0 an empty name followed by a value marker (never 0x09) is unambiguous, so
    # amfkit reads and writes it as Py3AMF does.
    assert peers.encode({"": 1}, AMF3) == h("0a 0b 01 01 04 01 01")
    with pytest.raises(amfkit.EncodeError, match="empty member name"):
        codec(AMF3).encode({"": 1})
    theirs = peers.encode({"": 1}, AMF0)
    assert theirs == h(f"03 00 00 00 {NUMBER_1_HEX} 00 00 09")
    assert peers.decode(theirs, AMF0) == {"": 1}
    assert amfkit.amf0.decode(theirs) == {"": 1}
    assert codec(AMF0).encode({"": 1}) == theirs


def test_amf0_long_member_name() -> None:
    # docs/py3amf.md "Anonymous objects": AMF0 member names and class names are UTF-8 with a
    # U16 length. Py3AMF writes a U32 length for a name over 65535 bytes, a stream nobody
    # can read (its own decoder included); amfkit refuses to write it.
    name = "k" * 70000
    theirs = peers.encode({name: 1}, AMF0)
    assert theirs[:5] == h("03 00 01 11 70")  # 70000 as a U32 where a U16 belongs
    with pytest.raises(pyamf.DecodeError):
        peers.decode(theirs, AMF0)
    with pytest.raises(amfkit.EncodeError, match="65535"):
        amfkit.amf0.encode({name: 1})
    # AMF3 has no such limit: both write the same bytes.
    assert amfkit.amf3.encode({name: 1}) == peers.encode({name: 1}, AMF3)


def test_nan_date() -> None:
    # Flash writes Date(NaN); Py3AMF cannot read it (ValueError), amfkit reads amfkit.Date.
    data = h("08 01") + struct.pack(">d", math.nan)
    with pytest.raises(ValueError):
        peers.decode(data, AMF3)
    got = amfkit.amf3.decode(data)
    assert isinstance(got, amfkit.Date) and math.isnan(got.millis)


def test_amf0_date_time_zone_field() -> None:
    # Py3AMF ignores the AMF0 Date time-zone field; amfkit keeps a non-zero one.
    data = h("0b") + struct.pack(">d", 0.0) + h("00 3c")
    assert peers.decode(data, AMF0) == datetime.datetime(1970, 1, 1)
    assert amfkit.amf0.decode(data) == amfkit.Date(0.0, tz=60)


@pytest.mark.parametrize("version", VERSIONS)
def test_flex_wrappers(version: int) -> None:
    # flex.messaging.io.ArrayCollection and ObjectProxy (externalizable, one AMF3 value
    # inside): Py3AMF knows both out of the box; the bytes are the same (AMF0: through the
    # AVM+ switch), and each reads the other's.
    alias = b"flex.messaging.io.ArrayCollection"
    collection = bytes([0x0A, 0x07, len(alias) * 2 + 1]) + alias + h("09 05 01 04 01 04 02")
    alias = b"flex.messaging.io.ObjectProxy"
    proxy = bytes([0x0A, 0x07, len(alias) * 2 + 1]) + alias + h('0a 0b 01 03 "a" 04 01 01')
    prefix = h("11") if version == AMF0 else b""
    cases = [
        (amfkit.ArrayCollection([1, 2]), pyamf.flex.ArrayCollection([1, 2]), prefix + collection),
        (amfkit.ObjectProxy({"a": 1}), pyamf.flex.ObjectProxy({"a": 1}), prefix + proxy),
    ]
    for mine, theirs, expected in cases:
        assert peers.encode(theirs, version) == expected
        assert codec(version).encode(mine) == expected
        assert_same_graph(mine, codec(version).decode(expected))
        assert_same_graph(mine, from_py3amf(peers.decode(expected, version)))


# ---------------------------------------------------------------------------------------
# (e) hypothesis: JSON-like graphs with shared references and cycles, both directions

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.integers(min_value=-(2**28) - 2, max_value=2**28 + 1),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.sampled_from(["id", "name", "value", ""]),
)
_keys = st.one_of(st.sampled_from(["a", "b", "id", "name"]), st.text(min_size=1, max_size=6))


@st.composite
def graphs(draw: Any) -> Any:
    """A root container plus up to five more; every slot holds a scalar or any container
    (so containers are shared, and cycles happen)."""
    count = draw(st.integers(min_value=1, max_value=6))
    nodes: list[Any] = [[] if draw(st.booleans()) else {} for _ in range(count)]
    for i, node in enumerate(nodes):
        for _ in range(draw(st.integers(min_value=0, max_value=5))):
            if draw(st.integers(min_value=0, max_value=2)) == 0:  # a third of the slots
                # mostly a later container (sharing), sometimes any (cycles)
                low = i + 1 if i + 1 < count and draw(st.integers(0, 3)) else 0
                item = nodes[draw(st.integers(min_value=low, max_value=count - 1))]
            else:
                item = draw(_scalars)
            if isinstance(node, list):
                node.append(item)
            else:
                node[draw(_keys)] = item
    return nodes[0]


_graph_settings = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("version", VERSIONS)
@_graph_settings
@given(value=graphs())
def test_differential_graphs(version: int, value: Any) -> None:
    theirs = peers.encode(value, version)
    mine = codec(version).encode(value)
    assert_same_graph(value, codec(version).decode(theirs))
    assert_same_graph(value, from_py3amf(peers.decode(mine, version)))
    assert mine == theirs


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=50, deadline=None)
@given(value=graphs())
def test_differential_graphs_through_the_peer_value_model(version: int, value: Any) -> None:
    # What Py3AMF decodes, re-encoded by Py3AMF and read by amfkit, is still the graph.
    back = peers.decode(peers.encode(value, version), version)
    assert_same_graph(value, codec(version).decode(peers.encode(to_py3amf(from_py3amf(back)), version)))
