"""Lenient decoding of what others wrote, as options of the Python decoders: an unknown
externalizable class kept opaque (`amfkit.Opaque`, written back byte for byte) or read
as one value (`externalizable={...}`), the error where an opaque body is not sound, the
limits on every lenient path, packets whose length fields bound an opaque body, and
`on_mismatch` for registered classes whose members differ from the ones they declare
(Flex messages from Amfphp among them)."""

from __future__ import annotations

import copy
import pickle
import struct

import pytest

import amfkit
from amfkit.remoting import messages, packet

from repo import FIXTURES

#: An AMF3 object of the unregistered externalizable class com.x.Ext, its body 5 bytes.
EXT = bytes.fromhex("0a07") + b"\x13com.x.Ext" + bytes([1, 2, 3, 4, 5])
OPAQUE = {"unknown_externalizable": "opaque"}


def test_an_unknown_externalizable_class_is_refused_by_default():
    with pytest.raises(amfkit.DecodeError, match='externalizable class "com.x.Ext" is not registered'):
        amfkit.amf3.decode(EXT)
    with pytest.raises(amfkit.DecodeError):
        amfkit.amf3.Decoder().decode(EXT)
    with pytest.raises(amfkit.DecodeError):
        amfkit.amf3.decode(EXT, unknown_externalizable="error")


def test_an_opaque_body_is_kept_and_written_back_byte_for_byte():
    v = amfkit.amf3.decode(EXT, **OPAQUE)
    assert type(v) is amfkit.Opaque
    assert (v.alias, v.data, v.dynamic) == ("com.x.Ext", bytes([1, 2, 3, 4, 5]), False)
    assert amfkit.amf3.encode(v) == EXT
    # The dynamic bit of the externalizable traits (0x0f) is kept too.
    dyn = bytes.fromhex("0a0f") + EXT[2:]
    d = amfkit.amf3.Decoder(**OPAQUE).decode(dyn)
    assert d.dynamic and amfkit.amf3.encode(d) == dyn


def test_an_opaque_body_at_the_end_of_arrays_and_of_an_amf0_stream():
    data = bytes.fromhex("09050104 01") + EXT  # AMF3 [1, <ext>]
    v = amfkit.amf3.decode(data, **OPAQUE)
    assert v[0] == 1 and isinstance(v[1], amfkit.Opaque)
    assert amfkit.amf3.encode(v) == data
    # AMF0: a strict array whose last item switches to AMF3.
    data = bytes.fromhex("0a00000002 0200026869 11") + EXT
    v = amfkit.amf0.decode(data, **OPAQUE)
    assert v[0] == "hi" and v[1].alias == "com.x.Ext"
    assert amfkit.amf0.encode(v) == data
    # The last value of a stream.
    stream = amfkit.amf0.Encoder().encode_all(["connect", 1.0]) + b"\x11" + EXT
    values = amfkit.amf0.Decoder(**OPAQUE).decode_all(stream)
    assert values[:2] == ["connect", 1.0] and values[2].data == bytes([1, 2, 3, 4, 5])


def test_values_after_an_opaque_body_are_an_error_saying_where_it_applies():
    data = bytes.fromhex("090501") + EXT + bytes.fromhex("0401")  # AMF3 [<ext>, 1]
    with pytest.raises(amfkit.DecodeError) as e:
        amfkit.amf3.decode(data, **OPAQUE)
    assert "an opaque body is sound only where its object ends the input" in str(e.value)
    assert "read from byte 15" in str(e.value)


def test_classes_named_as_collections_read_their_one_value_and_keep_their_name():
    listed = bytes.fromhex("0a07") + b"\x15com.x.List" + bytes.fromhex("0905010401060378")
    bag = bytes.fromhex("0a07") + b"\x13com.x.Bag" + bytes.fromhex("0a0b0103610401 01")
    options = {"externalizable": {"com.x.List": "arraycollection", "com.x.Bag": "objectproxy"}}
    v = amfkit.amf3.decode(listed, **options)
    assert type(v) is amfkit.ArrayCollection and v == [1, "x"] and v.alias == "com.x.List"
    assert amfkit.amf3.encode(v) == listed
    b = amfkit.amf3.decode(bag, **options)
    assert type(b) is amfkit.ObjectProxy and b == {"a": 1} and b.alias == "com.x.Bag"
    assert amfkit.amf3.encode(b) == bag
    # Flex's own collections keep no alias, and write Flex's name.
    plain = amfkit.ArrayCollection([1])
    assert plain.alias is None
    assert amfkit.amf3.decode(amfkit.amf3.encode(plain)).alias is None
    # A body that is not what the class was said to hold is an error.
    with pytest.raises(amfkit.DecodeError, match="an ArrayCollection body that is not an array"):
        amfkit.amf3.decode(bag, externalizable={"com.x.Bag": "arraycollection"})


def test_one_class_may_be_opaque_while_the_others_stay_refused():
    assert amfkit.amf3.decode(EXT, externalizable={"com.x.Ext": "opaque"}).alias == "com.x.Ext"
    other = bytes.fromhex("0a07") + b"\x13com.x.Oth" + b"\x01"
    with pytest.raises(amfkit.DecodeError, match="com.x.Oth"):
        amfkit.amf3.decode(other, externalizable={"com.x.Ext": "opaque"})


def test_a_registered_externalizable_class_is_read_by_its_own_reader_whatever_the_options():
    class Point:
        def __readamf__(self, input):
            self.x = input.read_int()

        def __writeamf__(self, output):
            output.write_int(self.x)

    amfkit.register_class(Point, "com.x.Ext", externalizable=True)
    try:
        data = bytes.fromhex("0a07") + b"\x13com.x.Ext" + struct.pack(">i", 7)
        v = amfkit.amf3.decode(data, **OPAQUE)
        assert type(v) is Point and v.x == 7
    finally:
        amfkit.unregister_class(Point)


def test_the_options_are_checked_and_shown_by_decoders():
    with pytest.raises(ValueError, match='unknown_externalizable must be "error" or "opaque"'):
        amfkit.amf3.decode(EXT, unknown_externalizable="guess")
    with pytest.raises(TypeError, match="externalizable must be a dict"):
        amfkit.amf3.decode(EXT, externalizable=["com.x.Ext"])
    with pytest.raises(ValueError, match='externalizable\\["com.x.Ext"\\] must be "arraycollection"'):
        amfkit.amf3.decode(EXT, externalizable={"com.x.Ext": "list"})
    with pytest.raises(TypeError, match="on_mismatch must be callable"):
        amfkit.amf0.Decoder(on_mismatch=3)
    d = amfkit.amf3.Decoder(unknown_externalizable="opaque", externalizable={"b": "objectproxy", "a": "opaque"})
    assert d.unknown_externalizable == "opaque"
    assert d.externalizable == {"a": "opaque", "b": "objectproxy"}
    assert d.on_mismatch is None
    assert amfkit.amf0.Decoder().unknown_externalizable == "error"


def test_every_lenient_path_stays_inside_the_limits():
    with pytest.raises(amfkit.DecodeError, match="opaque body of 5 bytes exceeds the limit of 4"):
        amfkit.amf3.decode(bytes.fromhex("0a0703") + b"X" + bytes(5), max_size=4, **OPAQUE)
    with pytest.raises(amfkit.DecodeError, match="more than the limit of 1 objects"):
        amfkit.amf3.decode(EXT, max_objects=1, **OPAQUE)
    nested = bytes.fromhex("0903 01 0903 01") + EXT
    with pytest.raises(amfkit.DecodeError, match="nesting deeper than the limit of 2"):
        amfkit.amf3.decode(nested, max_depth=2, **OPAQUE)
    # A collection's one value counts against the depth like any value.
    deep = bytes.fromhex("0a07") + b"\x15com.x.List" + bytes.fromhex("0903 01 0903 01 0901")
    with pytest.raises(amfkit.DecodeError, match="nesting deeper"):
        amfkit.amf3.decode(deep, max_depth=3, externalizable={"com.x.List": "arraycollection"})


def test_opaque_and_collections_pickle_and_copy_with_their_names():
    for v in (amfkit.Opaque("a.B", b"\x01", True), amfkit.ArrayCollection([1], alias="x.L"), amfkit.ObjectProxy({"a": 1}, alias="x.P")):
        for back in (pickle.loads(pickle.dumps(v)), copy.deepcopy(v)):
            assert back == v and type(back) is type(v)
            assert getattr(back, "alias") == v.alias
    assert repr(amfkit.Opaque("a.B", b"\x01\x02")) == "Opaque('a.B', <2 bytes>)"


# -- packets -------------------------------------------------------------------------------


def _packet_with_opaque(length: int | None) -> bytes:
    """A version-3 packet: body 1 is an AVM+ switch to EXT, its length field the real
    length (or `length`); body 2 the string "ok"."""
    first = b"\x11" + EXT
    out = struct.pack(">HHH", 3, 0, 2)
    for target, response, value, n in ((b"null", b"/1", first, length), (b"null", b"/2", b"\x02\x00\x02ok", None)):
        out += struct.pack(">H", len(target)) + target + struct.pack(">H", len(response)) + response
        out += struct.pack(">I", len(value) if n is None else n) + value
    return out


def test_an_opaque_body_ends_with_its_packet_body_when_the_length_field_is_true():
    data = _packet_with_opaque(None)
    with pytest.raises(amfkit.DecodeError):
        packet.decode(data)
    env = packet.decode(data, unknown_externalizable="opaque")
    assert env.bodies[0].value.data == bytes([1, 2, 3, 4, 5])
    assert env.bodies[1].value == "ok"


def test_with_a_length_field_of_zero_an_opaque_body_takes_the_next_body_too():
    with pytest.raises(amfkit.DecodeError, match="sound only where its object ends the input") as e:
        packet.decode(_packet_with_opaque(0), unknown_externalizable="opaque")
    assert e.value.path.startswith("$.bodies[1]")


# -- registered classes whose members differ ------------------------------------------------


class Point:
    pass


@pytest.fixture
def point():
    amfkit.register_class(Point, "com.x.Point", static=("x", "y"), dynamic=False)
    yield Point
    amfkit.unregister_class(Point)


def test_members_a_class_does_not_declare_or_misses_are_reported_once_per_class_definition(point):
    heard = []
    wire = amfkit.TypedObject("com.x.Point", {"x": 1, "z": 2}, sealed=("x", "z"), dynamic=False)
    data = amfkit.amf3.encode([wire, amfkit.TypedObject("com.x.Point", {"x": 3, "z": 4}, sealed=("x", "z"), dynamic=False)])
    a, b = amfkit.amf3.decode(data, on_mismatch=lambda *args: heard.append(args))
    assert vars(a) == {"x": 1} and vars(b) == {"x": 3}  # decoded; z dropped, y absent
    assert heard == [("com.x.Point", ("z",), ("y",))]
    # Nothing is said of a class whose members are the ones it declares.
    heard.clear()
    same = amfkit.TypedObject("com.x.Point", {"x": 1, "y": 2}, sealed=("x", "y"), dynamic=False)
    amfkit.amf3.decode(amfkit.amf3.encode(same), on_mismatch=lambda *args: heard.append(args))
    assert heard == []
    # AMF0 typed objects: every member is dynamic there.
    amfkit.amf0.decode(amfkit.amf0.encode(amfkit.TypedObject("com.x.Point", {"y": 5, "w": 6})), on_mismatch=lambda *args: heard.append(args))
    assert heard == [("com.x.Point", ("w",), ("x",))]


def test_an_on_mismatch_hook_that_raises_stops_the_decode(point):
    def refuse(alias, undeclared, missing):
        raise LookupError(f"{alias}: {undeclared}")

    data = amfkit.amf3.encode(amfkit.TypedObject("com.x.Point", {"q": 1}, sealed=("q",), dynamic=False))
    with pytest.raises(LookupError, match="com.x.Point"):
        amfkit.amf3.Decoder(on_mismatch=refuse).decode(data)
    assert amfkit.amf3.decode(data).__class__ is Point  # without a hook: decoded, silent


def test_flex_messages_with_fewer_sealed_members_decode_with_the_ones_they_have():
    # A RemotingMessage whose traits hold three of its nine sealed members.
    partial = amfkit.TypedObject(
        "flex.messaging.messages.RemotingMessage",
        {"destination": "EchoService", "operation": "echo", "body": ["hi"]},
        sealed=("destination", "operation", "body"),
        dynamic=False,
    )
    heard = []
    msg = amfkit.amf3.decode(amfkit.amf3.encode(partial), on_mismatch=lambda *a: heard.append(a))
    assert type(msg) is messages.RemotingMessage
    assert (msg.destination, msg.operation, msg.body) == ("EchoService", "echo", ["hi"])
    assert msg.messageId is None and msg.headers is None  # the class defaults
    assert heard[0][0] == "flex.messaging.messages.RemotingMessage" and heard[0][1] == ()
    assert set(heard[0][2]) == {"clientId", "headers", "messageId", "source", "timeToLive", "timestamp"}


def test_amfphps_error_message_decodes_with_the_members_it_has():
    """Amfphp writes ErrorMessage with anonymous-style traits: dynamic, no sealed member
    (StdCarrot/Py3AMF issue #15, where Py3AMF refuses it)."""
    data = (FIXTURES / "foreign" / "amfphp-errormessage.bin").read_bytes()
    heard = []
    env = packet.decode(data, on_mismatch=lambda *a: heard.append(a))
    (body,) = env.bodies
    assert (body.target, body.response) == ("/1/onStatus", "null")
    fault = body.value
    assert type(fault) is messages.ErrorMessage
    assert fault.faultCode == "AMFPHP_RUNTIME_ERROR" and fault.faultString == "service not found"
    assert fault.faultDetail.startswith("C:\\wamp\\www\\amfphp") and len(fault.faultDetail) == 127
    assert fault.messageId is None and fault.extendedData is None
    assert env.headers[0].name == "AppendToGatewayUrl"
    assert heard == [("flex.messaging.messages.ErrorMessage", (), ("body", "clientId", "destination", "extendedData", "headers", "messageId", "timeToLive", "timestamp"))]
