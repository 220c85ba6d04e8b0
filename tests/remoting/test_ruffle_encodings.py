"""What Ruffle writes differently from Flash Player, and how the gateway copes
(docs/gateway.md, "Ruffle"): a dense ActionScript Array sent as an AMF0 ECMA array
reaches a parameter annotated as an array as a list (any other associative array is a
fault naming the parameter); each request is answered in its own encoding, whatever the
client sent before; `amf0_answers="avmplus"` answers AMF0 requests behind the AVM+ switch,
so that objects a result holds twice arrive whole where Ruffle's AVM2 reads an AMF0
reference as undefined."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Optional

import pytest

import amfkit
from amfkit import MixedArray
from amfkit.remoting import Gateway, packet
from amfkit.remoting.services import Context

from gateway_util import answer, call, raw_packet, request

#: Ruffle PR #23772's "before" bytes: `new Array("G2C Online")` as Ruffle wrote it in AMF0,
#: an ECMA array (count 1) with the key "0", where Flash Player writes a strict array.
RUFFLE_BEFORE = bytes.fromhex("08 00000001 0001 30 02 000a") + b"G2C Online" + bytes.fromhex("0000 09")
#: Its "after" (and Flash Player's): a strict array of one string.
RUFFLE_AFTER = bytes.fromhex("0a 00000001 02 000a") + b"G2C Online"


class Maps:
    def getDataMaps(self, names: list) -> Any:  # type: ignore[type-arg]
        return names

    def typed(self, names: list[str]) -> Any:
        return [type(names).__name__, names]

    def sequence(self, names: Sequence[str]) -> Any:
        return [type(names).__name__, list(names)]

    def pair(self, names: tuple) -> Any:  # type: ignore[type-arg]
        return [type(names).__name__, list(names)]

    def maybe(self, names: Optional[list[str]] = None) -> Any:
        return names

    def grid(self, rows: list[list[int]]) -> Any:
        return rows

    def each(self, *rows: list) -> Any:  # type: ignore[type-arg]
        return list(rows)

    def loose(self, anything) -> Any:  # unannotated: taken as sent
        return [type(anything).__name__, dict(anything) if isinstance(anything, dict) else anything]

    def remember(self, value: Any, context: Context) -> str:
        context.session["value"] = value
        return context.protocol


def strict(*values: bytes) -> bytes:
    """An AMF0 strict array of already encoded values (a NetConnection call's arguments)."""
    return b"\x0a" + struct.pack(">I", len(values)) + b"".join(values)


def result(gateway: Gateway, target: str, args: bytes, version: int = 0) -> packet.Body:
    env = answer(gateway, raw_packet(version, [(target, "/1", args)]))
    (body,) = env.bodies
    return body


def test_the_exact_before_bytes_of_ruffle_pr_23772_reach_a_list_parameter() -> None:
    # The bytes decode as the associative array Flash Player servers did not expect...
    assert amfkit.amf0.decode(RUFFLE_BEFORE) == MixedArray({0: "G2C Online"})
    assert amfkit.amf0.decode(RUFFLE_AFTER) == ["G2C Online"]
    gateway = Gateway({"Maps": Maps})
    # ...and the method written for Flash Player gets the same list from either.
    for sent in (RUFFLE_BEFORE, RUFFLE_AFTER):
        body = result(gateway, "Maps.getDataMaps", strict(sent))
        assert body.target == "/1/onResult" and body.value == ["G2C Online"]
    # A version-3 packet of the same AMF0 values (Flash Player 9 writes version 3).
    assert result(gateway, "Maps.getDataMaps", strict(RUFFLE_BEFORE), version=3).value == ["G2C Online"]


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("typed", ["list", ["G2C Online"]]),
        ("sequence", ["list", ["G2C Online"]]),
        ("pair", ["list", ["G2C Online"]]),
        ("maybe", ["G2C Online"]),
        ("each", [["G2C Online"]]),
    ],
)
def test_every_array_annotation_takes_a_dense_ecma_array(method: str, expected: Any) -> None:
    assert result(Gateway({"Maps": Maps}), f"Maps.{method}", strict(RUFFLE_BEFORE)).value == expected


def test_keys_in_order_and_nested_arrays() -> None:
    gateway = Gateway({"Maps": Maps})
    shuffled = amfkit.amf0.encode(MixedArray({"2": "c", "0": "a", "1": "b"}))
    assert result(gateway, "Maps.typed", strict(shuffled)).value == ["list", ["a", "b", "c"]]
    inner = [amfkit.amf0.encode(MixedArray({"0": 1, "1": 2})), amfkit.amf0.encode(MixedArray({"0": 3}))]
    outer = b"\x08" + struct.pack(">I", 2) + b"".join(struct.pack(">H", 1) + str(i).encode() + v for i, v in enumerate(inner)) + b"\x00\x00\x09"
    assert result(gateway, "Maps.grid", strict(outer)).value == [[1, 2], [3]]
    # An AMF3 array whose associative part holds the keys "0".."n-1" (no dense part).
    amf3_assoc = b"\x11\x09\x01" + b"".join(bytes([0x03]) + str(i).encode() + b"\x04" + bytes([i + 5]) for i in range(2)) + b"\x01"
    assert result(gateway, "Maps.typed", strict(amf3_assoc), version=3).value == ["list", [5, 6]]


@pytest.mark.parametrize(
    "value",
    [
        MixedArray({"0": "a", "2": "c"}),  # a hole
        MixedArray({"0": "a", "name": "x"}),  # a named member
        MixedArray({"1": "b"}),  # not from 0
        MixedArray({"00": "a"}),  # not canonical
    ],
)
def test_any_other_associative_array_is_a_fault_naming_the_parameter(value: MixedArray) -> None:
    body = result(Gateway({"Maps": Maps}), "Maps.typed", strict(amfkit.amf0.encode(value)))
    assert body.target == "/1/onStatus"
    assert body.value["code"] == "Client.Argument"
    assert "argument 'names'" in body.value["description"] and "not exactly 0.." in body.value["description"]


def test_an_unannotated_parameter_gets_what_was_sent() -> None:
    body = result(Gateway({"Maps": Maps}), "Maps.loose", strict(RUFFLE_BEFORE))
    assert body.value == ["MixedArray", {0: "G2C Online"}]


def test_a_fault_names_the_item_of_an_array_of_arrays() -> None:
    bad = amfkit.amf0.encode([MixedArray({"0": 1}), MixedArray({"x": 1})])
    body = result(Gateway({"Maps": Maps}), "Maps.grid", strict(bad))
    assert body.value["code"] == "Client.Argument" and "argument 'rows'[1]" in body.value["description"]


# --- each request in its own encoding ------------------------------------------------------

OFFSET = 6 + 2 + len("/1/onResult") + 2 + len("null") + 4  # where the answer's value starts


def test_each_request_is_answered_in_its_own_encoding_whatever_came_before() -> None:
    gateway = Gateway({"Maps": Maps})
    first = answer(gateway, request(3, [("Maps.remember", "/1", ["a"])]))
    suffix = first.header("AppendToGatewayUrl").value  # type: ignore[union-attr]
    assert first.version == 3 and first.bodies[0].value == "amf3"
    # The same client (its session) now sends AMF0, as Ruffle does; then AMF3 again.
    for version, protocol, marker in ((0, "amf0", 0x02), (3, "amf3", 0x11), (0, "amf0", 0x02)):
        status, _, out = call(gateway, request(version, [("Maps.remember", "/1", ["b"])]), path="/gateway" + suffix)
        assert status == 200 and out[:2] == struct.pack(">H", version)
        assert out[OFFSET] == marker  # an AMF0 string, or the AVM+ switch
        assert packet.decode(out).bodies[0].value == protocol


# --- answers Ruffle's AVM2 reads whole ----------------------------------------------------


class Shared:
    def pair(self) -> Any:
        item = {"name": "sword", "power": 7}
        return {"left": item, "right": item}  # one object, twice


def test_amf0_answers_write_a_reference_for_a_shared_object_and_avmplus_does_not() -> None:
    data = request(0, [("Shared.pair", "/1", [])])
    for options, query, switched in (
        ({}, "", False),
        ({"amf0_answers": "avmplus"}, "", True),
        ({}, "?amf0_answers=avmplus", True),
        ({"amf0_answers": "avmplus"}, "?amf0_answers=amf0", False),
    ):
        gateway = Gateway({"Shared": Shared}, **options)
        status, _, out = call(gateway, data, path="/gateway" + query)
        assert status == 200 and out[:2] == b"\x00\x00"  # the request's version, always
        value = out[OFFSET:]
        if switched:
            assert value[0] == 0x11 and amfkit.amf3.decode(value[1:]) == {"left": {"name": "sword", "power": 7}, "right": {"name": "sword", "power": 7}}
        else:
            assert value[0] == 0x03 and b"\x07\x00\x01" in value  # the AMF0 reference Ruffle's AVM2 reads as undefined
        back = packet.decode(out).bodies[0].value
        assert back["left"] == back["right"] == {"name": "sword", "power": 7}


def test_avmplus_answers_cover_faults_and_the_general_path() -> None:
    gateway = Gateway({"Maps": Maps}, amf0_answers="avmplus")
    # A fault (the general path after the short one gave up), still behind the switch.
    status, _, out = call(gateway, raw_packet(0, [("Maps.typed", "/1", strict(amfkit.amf0.encode(MixedArray({"x": 1}))))]))
    env = packet.decode(out)
    assert env.version == 0 and env.bodies[0].target == "/1/onStatus" and out[OFFSET - len("/1/onResult") + len("/1/onStatus")] == 0x11
    # Version 3 is unchanged.
    assert answer(gateway, request(3, [("Maps.typed", "/1", [["a"]])])).bodies[0].value == ["list", ["a"]]


def test_amf0_answers_is_checked() -> None:
    with pytest.raises(ValueError, match="amf0_answers must be one of"):
        Gateway({}, amf0_answers="amf3")
