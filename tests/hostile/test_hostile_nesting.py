"""Nesting through every container: 100,000 levels are a clean DecodeError naming the
depth limit; exactly `max_depth` levels decode and `max_depth + 1` do not, with the
default (128) and custom limits (10, 1000, and the ceiling 4096, which decodes in the
main thread and in a new thread without exhausting the stack). Also through remoting
packets (the gateway's own limit is 64), .sol files and the AMF0 to AMF3 switch (which
counts as one level).

Depth counts containers: arrays, objects, vectors, dictionaries, AVM+ switches. Flex's
ArrayCollection and ObjectProxy are two levels each (the object and its body).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pytest

from gateway_util import raw_packet
from wire import ARRAY_COLLECTION, OBJECT_PROXY, s3, typed3, utf

from .harness import Case, expect_decode_error, expect_ok, run

DEEP = 100_000
CEILING = 4096


@dataclass(frozen=True)
class Container:
    codec: str  # amf0 or amf3: what decodes the whole input
    first: bytes  # the outermost level's opening bytes
    next: bytes  # every other level's opening bytes (references to the first's strings/traits)
    close: bytes  # what ends one level after its child
    per_level: int = 1  # depth each level adds
    extra: int = 0  # depth added once (the AVM+ switch)

    def build(self, levels: int) -> bytes:
        inner = b"\x05" if self.codec == "amf0" and not self.extra else b"\x01"
        if levels == 0:
            return inner
        return self.first + self.next * (levels - 1) + inner + self.close * levels

    def depth(self, levels: int) -> int:
        return self.extra + self.per_level * levels if levels else 0

    def exactly(self, depth: int) -> bytes:
        """Input nested exactly `depth` deep: as many levels of this container as fit,
        inside plain arrays that make up the rest."""
        levels = max(0, (depth - self.extra) // self.per_level)
        wrap = b"\x0a\x00\x00\x00\x01" if self.codec == "amf0" else b"\x09\x03\x01"
        return wrap * (depth - self.depth(levels)) + self.build(levels)


CONTAINERS = {
    "amf0/strict-array": Container("amf0", b"\x0a\x00\x00\x00\x01", b"\x0a\x00\x00\x00\x01", b""),
    "amf0/object": Container("amf0", b"\x03" + utf("a"), b"\x03" + utf("a"), b"\x00\x00\x09"),
    "amf0/ecma-array": Container("amf0", b"\x08\x00\x00\x00\x01" + utf("a"), b"\x08\x00\x00\x00\x01" + utf("a"), b"\x00\x00\x09"),
    "amf0/typed-object": Container("amf0", b"\x10" + utf("T") + utf("a"), b"\x10" + utf("T") + utf("a"), b"\x00\x00\x09"),
    "amf0/registered-object": Container("amf0", b"\x10" + utf("hostile.Recorder") + utf("a"), b"\x10" + utf("hostile.Recorder") + utf("a"), b"\x00\x00\x09"),
    "amf0/avmplus-array": Container("amf0", b"\x11\x09\x03\x01", b"\x09\x03\x01", b"", extra=1),
    "amf0/avmplus-object": Container("amf0", b"\x11" + typed3("") + s3("a"), b"\x0a\x01\x00", b"\x01", extra=1),
    "amf3/array-dense": Container("amf3", b"\x09\x03\x01", b"\x09\x03\x01", b""),
    "amf3/array-assoc": Container("amf3", b"\x09\x01" + s3("a"), b"\x09\x01\x00", b"\x01"),
    "amf3/anonymous-object": Container("amf3", typed3("") + s3("a"), b"\x0a\x01\x00", b"\x01"),
    "amf3/typed-sealed": Container("amf3", typed3("T", dynamic=False, sealed=("a",)), b"\x0a\x01", b""),
    "amf3/typed-dynamic-member": Container("amf3", typed3("T") + s3("a"), b"\x0a\x01\x02", b"\x01"),
    "amf3/registered-object": Container("amf3", typed3("hostile.Recorder") + s3("a"), b"\x0a\x01\x02", b"\x01"),
    "amf3/dictionary-key": Container("amf3", b"\x11\x03\x00", b"\x11\x03\x00", b"\x01"),
    "amf3/dictionary-value": Container("amf3", b"\x11\x03\x00\x04\x01", b"\x11\x03\x00\x04\x01", b""),
    "amf3/vector-object": Container("amf3", b"\x10\x03\x00\x01", b"\x10\x03\x00\x01", b""),
    "amf3/array-collection": Container("amf3", typed3(ARRAY_COLLECTION, externalizable=True) + b"\x09\x03\x01", b"\x0a\x01\x09\x03\x01", b"", per_level=2),
    "amf3/object-proxy": Container("amf3", typed3(OBJECT_PROXY, externalizable=True) + typed3("") + s3("a"), b"\x0a\x01\x0a\x05\x02", b"\x01", per_level=2),
    "amf3/registered-externalizable": Container("amf3", typed3("hostile.External", externalizable=True), b"\x0a\x01", b""),
}
#: Registered externalizable classes read their body in Python (__readamf__): each level
#: nests Python frames, so Python's recursion limit (1000) ends them before 4096 does.
PYTHON_RECURSION = {"amf3/registered-externalizable"}
LIMITS = [None, 10, 1000, CEILING]


def cases() -> list[Case]:
    out = []
    for name, c in CONTAINERS.items():
        deep = c.build(DEEP)
        out.append(Case(f"{name}/deep", c.codec, deep))
        out.append(Case(f"{name}/deep-ceiling", c.codec, deep, {"max_depth": CEILING}))
        for limit in LIMITS:
            kw = {} if limit is None else {"max_depth": limit}
            depth = limit or 128
            out.append(Case(f"{name}/at-{depth}", c.codec, c.exactly(depth), kw))
            out.append(Case(f"{name}/over-{depth}", c.codec, c.exactly(depth + 1), kw))
        out.append(Case(f"{name}/ceiling-in-thread", "in_thread", c.exactly(CEILING), {"codec": c.codec, "max_depth": CEILING}))
    strict = CONTAINERS["amf0/strict-array"]
    out.append(Case("packet/deep", "packet", raw_packet(0, [("t", "/1", strict.build(DEEP))])))
    out.append(Case("packet/deep-header", "packet", raw_packet(0, [], [("h", False, strict.build(DEEP))])))
    out.append(Case("packet/deep-amf3", "packet", raw_packet(3, [("t", "/1", CONTAINERS["amf0/avmplus-array"].build(DEEP))])))
    out.append(Case("packet/at-128", "packet", raw_packet(0, [("t", "/1", strict.exactly(128))])))
    out.append(Case("packet/over-128", "packet", raw_packet(0, [("t", "/1", strict.exactly(129))])))
    out.append(Case("packet/at-10", "packet", raw_packet(0, [("t", "/1", strict.exactly(10))]), {"max_depth": 10}))
    out.append(Case("packet/over-10", "packet", raw_packet(0, [("t", "/1", strict.exactly(11))]), {"max_depth": 10}))
    for depth, status in ((64, 200), (65, 400), (DEEP, 400)):
        body = strict.exactly(depth) if depth < DEEP else strict.build(DEEP)
        # the body value is the argument list: one strict array around the nested value
        out.append(Case(f"gateway/{depth}", "gateway", raw_packet(0, [("EchoService.echo", "/1", body)])))
    amf3_sol = b"\x00\xbf\x00\x00\x00\x00TCSO\x00\x04\x00\x00\x00\x00" + utf("so") + b"\x00\x00\x00\x03"
    amf0_sol = b"\x00\xbf\x00\x00\x00\x00TCSO\x00\x04\x00\x00\x00\x00" + utf("so") + b"\x00\x00\x00\x00"
    out.append(Case("sol/deep-amf3", "sol", amf3_sol + s3("k") + CONTAINERS["amf3/array-dense"].build(DEEP) + b"\x00"))
    out.append(Case("sol/deep-amf0", "sol", amf0_sol + utf("k") + strict.build(DEEP) + b"\x00"))
    out.append(Case("sol/at-128", "sol", amf3_sol + s3("k") + CONTAINERS["amf3/array-dense"].exactly(128) + b"\x00"))
    out.append(Case("sol/over-128", "sol", amf3_sol + s3("k") + CONTAINERS["amf3/array-dense"].exactly(129) + b"\x00"))
    return out


@functools.cache
def results() -> dict[str, Any]:
    return run(cases())


def test_inputs_are_as_deep_as_they_claim() -> None:
    """`exactly(n)` is n deep: the nesting of a few decoded values, counted in Python."""
    import amfkit

    def depth(v: Any, seen: set[int]) -> int:
        if isinstance(v, amfkit.ObjectKey):
            v = v.value
        if id(v) in seen:
            return 0
        if isinstance(v, (list, dict)):
            seen = seen | {id(v)}
            items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v]
            return 1 + max([depth(k, seen) for k, _ in items] + [depth(x, seen) for _, x in items], default=0)
        return 0

    for name in ("amf0/strict-array", "amf0/object", "amf3/array-dense", "amf3/dictionary-key", "amf3/vector-object"):
        c = CONTAINERS[name]
        codec = amfkit.amf0 if c.codec == "amf0" else amfkit.amf3
        assert depth(codec.decode(c.exactly(20)), set()) == 20, name


@pytest.mark.parametrize("name", CONTAINERS)
def test_100000_deep_is_a_clean_error(name: str) -> None:
    expect_decode_error(results()[f"{name}/deep"], match="nesting deeper than the limit of 128")
    o = results()[f"{name}/deep-ceiling"]
    if name in PYTHON_RECURSION:
        expect_decode_error(o, match="nested deeper than python's recursion limit")
    else:
        expect_decode_error(o, match=f"nesting deeper than the limit of {CEILING}")


@pytest.mark.parametrize("limit", LIMITS, ids=lambda x: f"max_depth={x or 'default'}")
@pytest.mark.parametrize("name", CONTAINERS)
def test_depth_at_the_limit_and_one_past(name: str, limit: int | None) -> None:
    depth = limit or 128
    at = results()[f"{name}/at-{depth}"]
    over = results()[f"{name}/over-{depth}"]
    if name in PYTHON_RECURSION and depth > 200:
        expect_decode_error(at, match="recursion limit")
        expect_decode_error(over, match="recursion limit")
        return
    expect_ok(at)
    expect_decode_error(over, match=f"nesting deeper than the limit of {depth}")


@pytest.mark.parametrize("name", CONTAINERS)
def test_the_ceiling_fits_the_stack_of_a_new_thread(name: str) -> None:
    o = results()[f"{name}/ceiling-in-thread"]
    value = expect_ok(o)
    if name in PYTHON_RECURSION:
        assert value["raised"] == ["DecodeError", "externalizable objects nested deeper than python's recursion limit"], o.describe()
    else:
        assert "value" in value, o.describe()


def test_packets() -> None:
    for name in ("deep", "deep-header", "deep-amf3", "over-128"):
        expect_decode_error(results()[f"packet/{name}"], match="nesting deeper than the limit of 128")
    expect_decode_error(results()["packet/over-10"], match="nesting deeper than the limit of 10")
    expect_ok(results()["packet/at-128"])
    expect_ok(results()["packet/at-10"])


@pytest.mark.parametrize("depth, status", [(64, 200), (65, 400), (DEEP, 400)])
def test_gateway_depth_limit(depth: int, status: int) -> None:
    o = results()[f"gateway/{depth}"]
    value = expect_ok(o)
    assert value["status"] == status and value["still_serving"], o.describe()
    if status == 400:
        assert "nesting deeper than the limit of 64" in value["body"], o.describe()


def test_sol_files() -> None:
    expect_decode_error(results()["sol/deep-amf3"], match="nesting deeper than the limit of 128")
    expect_decode_error(results()["sol/deep-amf0"], match="nesting deeper than the limit of 128")
    expect_decode_error(results()["sol/over-128"], match="nesting deeper than the limit of 128")
    expect_ok(results()["sol/at-128"])
