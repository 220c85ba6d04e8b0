"""A short fuzzing run of the Python-layer targets (tests/support/fuzz_targets.py) in every
`make test`: hypothesis mutates the fixtures (bit flips, inserted and deleted runs,
copied runs, splices of two seeds, huge length prefixes) and each target checks its
promises. `make fuzz-python` runs the same targets under atheris for longer.

AMFKIT_FUZZ_EXAMPLES raises the number of inputs per target (default 300)."""

from __future__ import annotations

import base64
import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import amfkit
import fuzz_targets
from amfkit import amf3

EXAMPLES = int(os.environ.get("AMFKIT_FUZZ_EXAMPLES", "300"))
SEEDS = fuzz_targets.seeds()
fuzz_targets.setup()

# Values that make length prefixes lie: U29 maximum, u32 maximum, u16 maximum, zero.
LIES = [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\xff\xff", b"\x00\x00", b"\x00\x00\x00\x00"]


@st.composite
def mutated(draw, pool: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(pool)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.integers(0, 6))
        at = draw(st.integers(0, len(data)))
        if op == 0 and data:  # flip bits of one byte
            i = min(at, len(data) - 1)
            data[i] ^= draw(st.integers(1, 255))
        elif op == 1:  # insert random bytes
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == 2:  # delete a run
            del data[at : at + draw(st.integers(1, 8))]
        elif op == 3:  # copy a run elsewhere (repeats structure, references)
            n = draw(st.integers(1, 16))
            data[draw(st.integers(0, len(data))) : 0] = data[at : at + n]
        elif op == 4:  # splice with another seed
            other = draw(st.sampled_from(pool))
            data = data[:at] + other[draw(st.integers(0, len(other))) :]
        elif op == 5:  # a lying length prefix
            data[at : at + 2] = draw(st.sampled_from(LIES))
        else:  # a marker byte
            data[at:at] = bytes([draw(st.integers(0, 0x14))])
    return bytes(data)


def fuzz(target: str, pool: list[bytes]):
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(mutated(pool))
    def run(data: bytes) -> None:
        fuzz_targets.TARGETS[target](data)

    return run


test_amf0_mutated_fixtures = fuzz("amf0", SEEDS["amf0"])
test_amf3_mutated_fixtures = fuzz("amf3", SEEDS["amf3"])
test_packet_mutated_fixtures = fuzz("packet", SEEDS["packet"])
test_gateway_mutated_requests = fuzz(
    "gateway",
    # The first byte picks the content type (fuzz_targets.CONTENT_TYPES): AMF packets, and
    # the same packets offered as JSON-RPC and XML-RPC, plus real JSON-RPC and XML-RPC calls.
    [bytes([0]) + p for p in SEEDS["packet"]]
    + [bytes([1]) + b'{"jsonrpc":"2.0","id":1,"method":"EchoService.echo","params":[{"a":[1,2.5,"x",null]}]}']
    + [bytes([2]) + b"<?xml version='1.0'?><methodCall><methodName>EchoService.echo</methodName>"
       b"<params><param><value><struct><member><name>a</name><value><array><data><value><i4>1</i4>"
       b"</value></data></array></value></member></struct></value></param></params></methodCall>"],
)
test_sol_mutated_files = fuzz("sol", SEEDS["sol"])
test_nested_mutated_members = fuzz("nested", SEEDS["nested"])
test_forms_mutated_inputs = fuzz("forms", SEEDS["forms"])


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_every_seed_passes_its_target(name: str) -> None:
    """The unmutated seeds pass their target, so a mutated failure is the mutation's."""
    target = fuzz_targets.TARGETS[name]
    assert SEEDS[name]
    for data in SEEDS[name]:
        target(data)
    if name == "packet":
        for data in SEEDS[name][:20]:
            status, _, _ = fuzz_targets.post(data, "application/x-amf")
            assert status == 200


def test_the_gateway_target_sees_every_answer_class() -> None:
    """The gateway target is not vacuous: the same in-process POST gives each status the
    target accepts, for inputs built to get it."""
    ok = SEEDS["packet"][0]
    assert fuzz_targets.post(ok, "application/x-amf")[0] == 200
    assert fuzz_targets.post(ok[:-3], "application/x-amf")[0] == 400
    assert fuzz_targets.post(b"x" * ((1 << 20) + 1), "application/x-amf")[0] == 413
    assert fuzz_targets.post(ok, "image/png")[0] == 415
    assert fuzz_targets.post(struct.pack(">HHH", 3, 0, 0), "application/x-amf")[0] in (200, 400)


# --- regressions: inputs the fuzzers found, each named for what it does -------------


def test_anonymous_object_with_a_sealed_member_named_empty_round_trips() -> None:
    """Found by atheris (amf3 target): anonymous traits with two sealed members, the first
    named "". As a dict it could not be written back (AMF3's dynamic members end at the
    empty name); it now decodes as a TypedObject with alias "" that writes the same bytes."""
    data = bytes.fromhex("0a23" "01" "01" "0361" "0401" "0402")  # sealed "", "a" = 1, 2
    value = amf3.decode(data)
    assert type(value) is amfkit.TypedObject
    assert (value.alias, value.sealed, value.dynamic, dict(value)) == ("", ("", "a"), False, {"": 1, "a": 2})
    assert amf3.encode(value) == data
    fuzz_targets.amf3_target(base64.b64decode("EQUACiMBAREAAAADAQEAAAAAAAAABAEEAg=="))  # as found


def test_a_dump_line_with_text_among_its_hex_is_not_taken_for_a_dump() -> None:
    """Found by the forms target: a lone line starting like a dump's (an offset), with a
    token that is not hex before its hex ones. Reading it as a dump's last line took the
    first tokens for hex without looking (a ValueError out of `bytes.fromhex`); it is now
    refused as hex that is not hex, in one line."""
    from amfkit import forms, payload

    data = b"0000 :3 00 00 00 01 00 0b 2f 31"
    with pytest.raises(forms.FormError, match="^not hex: "):
        payload.read(data)
    fuzz_targets.forms_target(b"\x01" + data)
