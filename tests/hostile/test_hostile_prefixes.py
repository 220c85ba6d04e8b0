"""Every strict prefix of every fixture, of sample remoting packets and of .sol files
fails with a clean DecodeError (or, through the gateway, a 400), in a child process.

A prefix of a stream fixture that ends on a value boundary is a complete stream: it must
decode to the stream's first values. No other strict prefix is a complete value.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

import amfkit
from amfkit.remoting import messages as m

from gateway_util import flex_shape, fp9_args, raw_packet, request, royale_shape

from .harness import FIXTURES, Case, expect_ok, run

MANIFEST = json.loads((FIXTURES / "vectors.json").read_text())
#: The slowest prefix of any input must take less CPU time than this (the largest fixture
#: is 64 KiB).
PREFIX_SECONDS = 0.05
#: The whole walk over one input's prefixes: CPU time, so bounded generously.
WALK_SECONDS = 10.0


def fixture_cases() -> list[Case]:
    cases = []
    for entry in MANIFEST:
        data = (FIXTURES / entry["file"]).read_bytes()
        codec = f"amf{entry['version']}" + ("_all" if entry.get("stream") else "")
        kw: dict[str, Any] = {"codec": codec}
        if entry.get("stream"):
            kw["boundaries"] = entry["boundaries"]
        cases.append(Case(f"fixture/{entry['file']}", "prefixes", data, kw))
    return cases


@functools.cache
def sample_packets() -> dict[str, bytes]:
    """Requests in the shapes real clients send, plus one packet per valid fixture whose
    body is that fixture's value (AMF0 as is in a version-0 packet, AMF3 after the AVM+
    switch in a version-3 packet)."""
    small = m.CommandMessageExt(operation=m.Operation.CLIENT_PING, headers={"DSId": "nil"}, destination="")
    remoting = m.RemotingMessage(destination="EchoService", operation="echo", body=["hi", 1, [2.5]], headers={"DSId": "nil"})
    packets = {
        "netconnection-amf0": request(0, [("EchoService.echo", "/1", ["hi", {"a": [1, 2]}])], [("Credentials", {"userid": "u", "password": "p"}, False)]),
        "netconnection-amf3": request(3, [("EchoService.echo", "/1", [amfkit.MixedArray({"a": 1}), b"bytes"])]),
        "flex": raw_packet(3, [("null", "/1", flex_shape(remoting))], length=1),
        "royale": raw_packet(3, [("null", "/2", royale_shape(remoting))], length=0xFFFFFFFF),
        "fp9": raw_packet(3, [("EchoService.echo", "/3", fp9_args("hi", [1, 2], {"k": None}))]),
        "flex-small-form": raw_packet(3, [("null", "/4", flex_shape(small))]),
    }
    for entry in MANIFEST:
        if entry["name"].startswith("bad-") or entry.get("stream"):
            continue
        value = (FIXTURES / entry["file"]).read_bytes()
        if entry["version"] == 0:
            packets[f"fixture/{entry['file']}"] = raw_packet(0, [("t", "/1", value)])
        else:
            packets[f"fixture/{entry['file']}"] = raw_packet(3, [("t", "/1", b"\x11" + value)])
    return packets


GATEWAY_PACKETS = ["netconnection-amf0", "netconnection-amf3", "flex", "royale", "fp9", "flex-small-form"]


def sol_files() -> dict[str, bytes]:
    from amfkit import sol

    shared = {"score": 42, "name": "Ada", "list": [1, "x", None], "nested": {"a": {"b": [True]}}}
    files = {
        "amf3": sol.dumps(sol.SOL("game", shared)),
        "amf0": sol.dumps(sol.SOL("game", shared, amf_version=0)),
        "amf3-shared": sol.dumps(sol.SOL("s", {"a": (x := {"k": 1}), "b": x})),
    }
    return files


@functools.cache
def results() -> dict[str, Any]:
    cases = fixture_cases()
    for name, data in sample_packets().items():
        cases.append(Case(f"packet/{name}", "prefixes", data, {"codec": "packet"}))
    for name in GATEWAY_PACKETS:
        cases.append(Case(f"gateway/{name}", "gateway_prefixes", sample_packets()[name]))
    for name, data in sol_files().items():
        cases.append(Case(f"sol/{name}", "prefixes", data, {"codec": "sol"}))
    return run(cases)


def check_walk(case_id: str) -> None:
    o = results()[case_id]
    value = expect_ok(o, seconds=WALK_SECONDS, rss_kb=64 * 1024)
    assert value["problems"] == [], o.describe()
    assert value["slowest"] < PREFIX_SECONDS, o.describe()


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_every_prefix_of_every_fixture(entry: dict[str, Any]) -> None:
    check_walk(f"fixture/{entry['file']}")


@pytest.mark.parametrize("name", list(sample_packets()))
def test_every_prefix_of_a_packet(name: str) -> None:
    check_walk(f"packet/{name}")


@pytest.mark.parametrize("name", GATEWAY_PACKETS)
def test_every_prefix_of_a_request_is_a_400(name: str) -> None:
    o = results()[f"gateway/{name}"]
    value = expect_ok(o, seconds=WALK_SECONDS, rss_kb=64 * 1024)
    assert value["problems"] == [], o.describe()
    assert value["whole"] == 200, o.describe()


@pytest.mark.parametrize("name", ["amf3", "amf0", "amf3-shared"])
def test_every_prefix_of_a_sol_file(name: str) -> None:
    check_walk(f"sol/{name}")


def test_the_walk_covers_the_whole_corpus() -> None:
    """173 vectors (every file of fixtures/amf0 and fixtures/amf3), each prefix walked."""
    files = sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.glob("amf*/*.amf"))
    assert files == sorted(e["file"] for e in MANIFEST)
    total = sum(results()[f"fixture/{f}"].value["count"] for f in files)
    assert total == sum((FIXTURES / f).stat().st_size for f in files)
