"""AMF3 through the Python API: exact bytes from the specification, the Python mapping,
references and their scoping, and round trips."""

from __future__ import annotations

import array
import datetime as dt
import math
import struct

import pytest

import amfkit
from amfkit import amf3

from graphs import assert_isomorphic


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, "01"),
        (amfkit.Undefined, "00"),
        (False, "02"),
        (True, "03"),
        (0, "0400"),
        (127, "047f"),
        (128, "048100"),
        (16383, "04ff7f"),
        (16384, "04818000"),
        (2**28 - 1, "04bfffffff"),
        (-1, "04ffffffff"),
        (-(2**28), "04c0808000"),
        (2**28, "05" + struct.pack(">d", 2**28).hex()),
        (-(2**28) - 1, "05" + struct.pack(">d", -(2**28) - 1).hex()),
        (1.5, "053ff8000000000000"),
        ("", "0601"),
        ("é", "0605c3a9"),
        (b"\x00\xff", "0c0500ff"),
        ([], "090101"),
        ([1, "a", "a"], "0907010401060361" + "0600"),
        (["", ""], "09050106010601"),
        ({}, "0a0b0101"),
        ({"a": 1}, "0a0b010361040101"),
        (amfkit.XML("<a/>"), "0b093c612f3e"),
        (amfkit.XMLDocument("<a/>"), "07093c612f3e"),
        (dt.datetime(1970, 1, 1), "080100" + "00000000000000"),
    ],
)
def test_bytes_follow_the_specification(value, expected):
    assert amf3.encode(value).hex() == expected
    back = amf3.decode(bytes.fromhex(expected))
    assert back == value
    # Ints outside the 29-bit range travel as doubles.
    assert type(back) is (float if expected.startswith("05") else type(value))


def test_second_anonymous_object_uses_a_traits_reference():
    data = amf3.encode([{"a": 1}, {"a": 2}])
    # [ {a:1} (inline traits 0x0b, "", a, 1, end), {a:2} (traits ref 0x01, "a" ref, 2, end) ]
    assert data.hex() == "0905" "01" "0a0b01036104010" "1" "0a01" "00" "0402" "01"


def test_shared_values_stay_shared_and_cycles_survive():
    shared = {"x": [1, 2]}
    graph = {"a": shared, "b": shared, "l": [shared, shared["x"]]}
    graph["self"] = graph
    back = amf3.decode(amf3.encode(graph))
    assert back["a"] is back["b"] is back["l"][0]
    assert back["l"][1] is back["a"]["x"]
    assert back["self"] is back
    assert_isomorphic(graph, back)


def test_list_containing_itself():
    x: list = [1]
    x.append(x)
    data = amf3.encode(x)
    assert data.hex() == "0905010401" "0900"
    back = amf3.decode(data)
    assert back[1] is back


def test_equal_but_distinct_objects_are_not_merged():
    back = amf3.decode(amf3.encode([{"a": 1}, {"a": 1}]))
    assert back[0] == back[1] and back[0] is not back[1]


def test_dates():
    for value in [
        dt.datetime(2001, 2, 3, 4, 5, 6, 7000),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
        dt.datetime(1, 1, 1),
        dt.datetime(9999, 12, 31, 23, 59, 59, 999000),
        dt.datetime(1901, 1, 1, 0, 0, 0, 1000),
    ]:
        assert amf3.decode(amf3.encode(value)) == value
    aware = dt.datetime(2020, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert amf3.decode(amf3.encode(aware)) == dt.datetime(2020, 1, 1, 10)
    assert amf3.decode(amf3.encode(aware), tz_aware=True) == aware
    assert amf3.decode(amf3.encode(aware), tz_aware=True).tzinfo is dt.timezone.utc
    assert amf3.decode(amf3.encode(dt.date(2020, 5, 17))) == dt.datetime(2020, 5, 17)


def test_dates_a_datetime_cannot_hold():
    for millis in [float("nan"), float("inf"), -1e17, 1e17]:
        data = b"\x08\x01" + struct.pack(">d", millis)
        back = amf3.decode(data)
        assert isinstance(back, amfkit.Date)
        assert back == amfkit.Date(millis)
        assert amf3.encode(back) == data


def test_date_nan_payload_is_kept():
    data = b"\x08\x01" + bytes.fromhex("7ff8000000000001")
    assert amf3.encode(amf3.decode(data)) == data


def test_the_same_date_object_is_a_reference():
    d = dt.datetime(2000, 1, 1)
    data = amf3.encode([d, d])
    assert data.endswith(b"\x08\x02")  # object reference 1 (the array is 0)
    back = amf3.decode(data)
    assert back[0] is back[1]


def test_bytes_like_values_are_byte_arrays():
    for value in [b"abc", bytearray(b"abc"), memoryview(b"abc")]:
        assert amf3.decode(amf3.encode(value)) == b"abc"


@pytest.mark.parametrize(
    "typecode, items, marker",
    [("i", [-1, 0, 2**31 - 1], 0x0D), ("I", [0, 2**32 - 1], 0x0E), ("d", [1.5, -0.0, math.inf], 0x0F)],
)
def test_number_vectors(typecode, items, marker):
    value = array.array(typecode, items)
    data = amf3.encode(value)
    assert data[0] == marker
    back = amf3.decode(data)
    assert back.typecode == typecode and back.tobytes() == value.tobytes()


def test_vector_of_numbers_keeps_nan_payloads_and_negative_zero_bit_for_bit():
    raw = bytes.fromhex("7ff80000deadbeef" "8000000000000000")
    data = b"\x0f\x05\x00" + raw
    back = amf3.decode(data)
    assert [struct.pack(">d", x) for x in back] == [raw[:8], raw[8:]]
    assert amf3.encode(back) == data


@pytest.mark.filterwarnings("ignore:The 'u' type code is deprecated:DeprecationWarning")  # CPython 3.13+
def test_other_array_typecodes_and_their_range():
    assert amf3.decode(amf3.encode(array.array("h", [-3, 4]))) == array.array("i", [-3, 4])
    assert amf3.decode(amf3.encode(array.array("f", [0.5]))) == array.array("d", [0.5])
    with pytest.raises(amfkit.EncodeError, match="does not fit"):
        amf3.encode(array.array("q", [2**40]))
    with pytest.raises(amfkit.EncodeError, match="typecode"):
        amf3.encode(array.array("u", "ab"))


def test_object_vector():
    v = amfkit.ObjectVector([{"a": 1}, None], type_name="com.example.Thing", fixed=True)
    back = amf3.decode(amf3.encode(v))
    assert isinstance(back, amfkit.ObjectVector)
    assert back == v and back.type_name == "com.example.Thing" and back.fixed is True


def test_dictionary_with_any_keys():
    key_obj = {"k": 1}
    d = amfkit.Dictionary({1: "one", "s": 2, amfkit.ObjectKey(key_obj): 3, None: 4}, weak_keys=True)
    back = amf3.decode(amf3.encode(d))
    assert isinstance(back, amfkit.Dictionary) and back.weak_keys is True
    assert back[1] == "one" and back["s"] == 2 and back[None] == 4
    (wrapped,) = [k for k in back if isinstance(k, amfkit.ObjectKey)]
    assert wrapped.value == key_obj and back[wrapped] == 3


def test_a_plain_dict_with_non_str_keys_is_a_dictionary():
    back = amf3.decode(amf3.encode({1: "a", 2.5: "b"}))
    assert isinstance(back, amfkit.Dictionary) and back == {1: "a", 2.5: "b"}


def test_mixed_arrays():
    m = amfkit.MixedArray({0: "a", 1: "b", "name": "x", "5": "y"})
    data = amf3.encode(m)
    back = amf3.decode(data)
    assert isinstance(back, amfkit.MixedArray)
    assert back == {0: "a", 1: "b", "name": "x", 5: "y"}
    assert amf3.encode(back) == data


def test_typed_object_round_trips_byte_for_byte():
    # Unregistered class "com.example.Point" with sealed x, y and a dynamic member.
    data = bytes.fromhex("0a" "2b" "23" + "com.example.Point".encode().hex() + "0378" "0379" "0401" "0402" "037a" "0403" "01")
    back = amf3.decode(data)
    assert isinstance(back, amfkit.TypedObject)
    assert back.alias == "com.example.Point" and back.sealed == ("x", "y") and back.dynamic is True
    assert back == amfkit.TypedObject("com.example.Point", {"x": 1, "y": 2, "z": 3})
    assert amf3.encode(back) == data


def test_typed_objects_share_traits():
    t = [amfkit.TypedObject("T", {"a": i}, sealed=("a",), dynamic=False) for i in range(2)]
    back = amf3.decode(amf3.encode(t))
    assert [b.alias for b in back] == ["T", "T"] and back[0].sealed is back[1].sealed
    assert amf3.encode(back) == amf3.encode(t)


def test_typed_objects_built_apart_with_one_shape_share_traits():
    a = amfkit.TypedObject("T", {"x": 1}, sealed=tuple(["x"]))
    b = amfkit.TypedObject("".join(["T"]), {"x": 2}, sealed=tuple(["x"]))
    assert a.sealed is not b.sealed
    data = amf3.encode([a, b])
    assert data.endswith(bytes.fromhex("0a01" "0402" "01"))  # traits reference 0, x = 2, end


def test_typed_objects_with_other_aliases_are_not_merged():
    a = amfkit.TypedObject("A", {})
    b = amfkit.TypedObject("B", {})
    back = amf3.decode(amf3.encode([a, b]))
    assert [x.alias for x in back] == ["A", "B"]


def test_array_collection_and_object_proxy():
    ac = amfkit.ArrayCollection([1, {"a": "b"}])
    op = amfkit.ObjectProxy({"k": [1]})
    back = amf3.decode(amf3.encode([ac, op, ac]))
    assert type(back[0]) is amfkit.ArrayCollection and back[0] == ac
    assert type(back[1]) is amfkit.ObjectProxy and back[1] == op
    assert back[2] is back[0]


def test_array_collection_wire_form():
    data = amf3.encode(amfkit.ArrayCollection(["x"]))
    alias = b"flex.messaging.io.ArrayCollection"
    assert data == b"\x0a\x07" + bytes([len(alias) << 1 | 1]) + alias + b"\x09\x03\x01\x06\x03x"


def test_subclasses_of_plain_types():
    import collections
    import enum

    class Color(enum.IntEnum):
        RED = 1

    class Name(str):
        pass

    value = [Color.RED, Name("n"), collections.OrderedDict(a=1), (1, 2), {3}, frozenset()]
    assert amf3.decode(amf3.encode(value)) == [1, "n", {"a": 1}, [1, 2], [3], []]


def test_default_hook():
    import decimal

    value = {"price": decimal.Decimal("1.25")}
    assert amf3.decode(amf3.encode(value, default=float)) == {"price": 1.25}
    enc = amf3.Encoder(default=str)
    assert amf3.decode(enc.encode([decimal.Decimal("2")])) == ["2"]


def test_big_ints_become_doubles_and_huge_ones_fail():
    assert amf3.decode(amf3.encode(2**60)) == float(2**60)
    with pytest.raises(amfkit.EncodeError, match="too large"):
        amf3.encode(10**400)


def test_streams_share_one_reference_context():
    enc = amf3.Encoder()
    shared = {"s": "text"}
    data = enc.encode_all([shared, shared, "text"])
    values = amf3.Decoder().decode_all(data)
    assert values[0] is values[1] and values[2] == "text"
    # Each encode() starts afresh.
    assert enc.encode(shared) == enc.encode(shared)


def test_trailing_bytes():
    with pytest.raises(amfkit.DecodeError, match="1 trailing byte") as e:
        amf3.decode(b"\x01\x01")
    assert e.value.offset == 1
    assert amf3.decode(b"\x01\x01", allow_trailing=True) is None


def test_input_types():
    assert amf3.decode(bytearray(b"\x04\x01")) == 1
    assert amf3.decode(memoryview(b"\x04\x01")) == 1
    with pytest.raises(TypeError, match="not str"):
        amf3.decode("\x04\x01")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        amf3.decode(12)  # type: ignore[arg-type]


@pytest.mark.parametrize("char", ["\x7f", "é", "\u20ac", "\U0001f600"])
def test_text_read_as_ascii_only_when_every_byte_is(char):
    """The decoder copies ASCII text straight into a str, after checking its bytes 16 at
    a time: the last ASCII character passes, and a non-ASCII one anywhere (in a chunk or
    in the tail) sends the text through the UTF-8 decoder."""
    for length in range(0, 40):
        for at in range(length):
            text = "a" * at + char + "b" * (length - at - 1)
            back = amf3.decode(amf3.encode(text))
            assert back == text and len(back) == length, (length, at)
        assert amf3.decode(amf3.encode("c" * length)) == "c" * length


def test_string_with_lone_surrogate_is_an_encode_error():
    with pytest.raises(amfkit.EncodeError, match="surrogate"):
        amf3.encode({"k": "\ud800"})


def test_empty_member_names_cannot_be_written():
    with pytest.raises(amfkit.EncodeError, match="empty member name"):
        amf3.encode({"": 1})


def test_dictionaries_and_vectors_that_contain_themselves():
    d = amfkit.Dictionary()
    d["me"] = d
    d[amfkit.ObjectKey(d)] = 1
    back = amf3.decode(amf3.encode(d))
    assert back["me"] is back
    (key,) = [k for k in back if isinstance(k, amfkit.ObjectKey)]
    assert key.value is back and back[key] == 1
    v = amfkit.ObjectVector(type_name="Object")
    v.append(v)
    back_v = amf3.decode(amf3.encode(v))
    assert back_v[0] is back_v


def test_a_fixed_vector_keeps_its_flag():
    """AS3 Vectors carry a fixed flag; a fixed one decodes as amfkit.FixedVector (an
    array.array subclass) and is written back fixed, so a save written back unchanged is
    the same for the game. A plain array.array is a Vector that is not fixed."""
    fixed = bytes.fromhex("0d050100000007fffffff9")
    value = amf3.decode(fixed)
    assert type(value) is amfkit.FixedVector and value == array.array("i", [7, -7])
    assert amf3.encode(value) == fixed
    assert amf3.encode(array.array("i", [7, -7])) == bytes.fromhex("0d050000000007fffffff9")
    for code in "Id":
        v = amfkit.FixedVector(code, [1, 2])
        assert type(amf3.decode(amf3.encode(v))) is amfkit.FixedVector
