"""The instruments benchmark (the Protocol Buffers article) runs once, quick, as a correctness test: every
peer's round trip is right, the sizes are sane, and the report's sections build. Its
timings are not judged."""

from __future__ import annotations

import importlib.util
import json
import warnings

import pytest

import amfkit
from amfkit.demo import services as demo_services
from amfkit_bench import instruments, model
from amfkit.compare import first_difference

needs_protobuf = pytest.mark.skipif(
    importlib.util.find_spec("google.protobuf") is None or importlib.util.find_spec("grpc_tools") is None,
    reason="protobuf and grpcio-tools are the Protocol Buffers article's peer",
)


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _row(report, case, message, peer, count=1):
    [row] = [
        r
        for r in report["results"]
        if r["case"] == case and r["message"] == message and r["peer"] == peer and r["count"] == count
    ]
    return row


@needs_protobuf
def test_quick_run_passes_every_check(tmp_path, capsys):
    out = tmp_path / "instruments.json"
    status = instruments.main(["--quick", "--quiet", "--json", str(out)])
    printed = capsys.readouterr().out
    report = json.loads(out.read_text(encoding="utf-8"))

    failed = [(r["case"], r["message"], r["peer"], r["check"]["detail"]) for r in report["results"] if not r["check"]["ok"]]
    assert failed == []
    assert report["errors"] == []
    assert status == 0 and report["ok"] is True

    backend = report["protobuf"]["backend"]
    assert backend in ("upb", "python", "cpp")
    peers = {r["peer"] for r in report["results"]}
    expected = {"amfkit AMF3", "amfkit AMF0", f"protobuf ({backend})", f"protobuf ({backend}) +classes"}
    if backend != "python":
        expected.add("protobuf (python)")  # the pure-Python backend, from the child process
    if _installed("pyamf"):
        expected.add("py3amf AMF3")
    if _installed("orjson"):
        expected.add("orjson")
    assert expected <= peers

    cases = {(r["case"], r["message"], r["count"]) for r in report["results"]}
    for message in instruments.MESSAGES:
        assert ("single", message, 1) in cases
        for count in instruments.QUICK_PACKETS:
            assert ("packet", message, count) in cases

    for r in report["results"]:
        assert r["bytes"] > 0
        per = r["iterations"] if r["case"] == "single" else r["count"]
        if r["case"] == "single":
            assert r["iterations"] == (instruments.QUICK_SLOW_ITERATIONS if r["slow"] else instruments.QUICK_ITERATIONS)
        for key in ("encode", "decode"):
            wall = r[key]["wall_ms"]
            assert 0 < wall["min"] <= wall["median"] <= wall["max"]
            assert r[key]["repeat"] == 1
            assert r[f"{key}_us"] == pytest.approx(wall["median"] * 1e3 / per)

    # Sizes within the article's ballpark. Our AMF3 messages carry the same member names
    # as the article's (198 / 290 / 371 bytes), so they land within 25% of them. Our
    # protobuf messages come out 1.5-1.8x the article's 31 / 80 / 123 bytes because its
    # string values were very short and ours are quote texts; protobuf stays 2-4x
    # smaller than AMF3 for one message, as in the article (3-6.4x).
    pb = f"protobuf ({backend})"
    for index, message in enumerate(instruments.MESSAGES):
        amf3 = _row(report, "single", message, "amfkit AMF3")["bytes"]
        proto = _row(report, "single", message, pb)["bytes"]
        article_amf3 = instruments.ARTICLE_FIGURES["bytes"]["AMF3"][index]
        article_pb = instruments.ARTICLE_FIGURES["bytes"]["Protocol Buffers"][index]
        assert 0.75 * article_amf3 <= amf3 <= 1.25 * article_amf3, (message, amf3)
        assert article_pb <= proto <= 2.5 * article_pb, (message, proto)
        assert 1.5 <= amf3 / proto <= 7, (message, amf3, proto)
        assert _row(report, "single", message, "amfkit AMF0")["bytes"] > amf3
        # Many in one packet: AMF3's traits and strings are sent once, so a message costs
        # far less than alone and less than protobuf's; protobuf's stays about the same.
        big = max(instruments.QUICK_PACKETS)
        amf3_packed = _row(report, "packet", message, "amfkit AMF3", big)["bytes_per_message"]
        pb_packed = _row(report, "packet", message, pb, big)["bytes_per_message"]
        assert amf3_packed < amf3 / 3
        assert amf3_packed < pb_packed
        # protobuf gains only the repeated field's tag and length per message (the packet's
        # messages have varied values: longer texts, larger numbers than message 0's)
        assert proto <= pb_packed <= 1.3 * proto + 4
        if _installed("pyamf"):
            assert _row(report, "packet", message, "py3amf AMF3", big)["bytes"] == _row(report, "packet", message, "amfkit AMF3", big)["bytes"]

    sections = instruments.sections(report)
    assert len(sections) == 2 and all(isinstance(s, model.Section) for s in sections)
    single, packet = sections
    assert single.article and any("198 / 290 / 371" in line for line in single.article)
    assert single.findings and packet.findings
    assert [len(c.reference) for c in single.charts] == [6, 6, 6]
    for section in sections:
        assert section.tables and all(len(row) == len(t.headers) for t in section.tables for row in t.rows)
        for chart in section.charts:
            assert chart.bars and all(bar.value > 0 for bar in chart.bars)
            for bar in chart.bars + chart.reference:
                if bar.low is not None:
                    assert bar.low <= bar.value <= bar.high
    json.dumps([model.to_dict(s) for s in sections])

    assert "many messages in one packet" in printed
    assert "baseline" in printed
    assert "findings:" in printed


def test_run_leaves_the_registries_as_it_found_them():
    before = amfkit.registered_classes()
    pyamf = None
    if _installed("pyamf"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pyamf
        cached = set(pyamf.CLASS_CACHE)
    peers = tuple(p for p in instruments.PEER_KEYS if p != "protobuf-python")
    if not _installed("grpc_tools"):
        peers = tuple(p for p in peers if not p.startswith("protobuf"))
    options = instruments.Options(iterations=5, slow_iterations=3, packets=(3,), repeat=1, peers=peers)
    report = instruments.run(options)
    assert report["ok"], [r["check"] for r in report["results"] if not r["check"]["ok"]]
    assert amfkit.registered_classes() == before
    if pyamf is not None:
        assert set(pyamf.CLASS_CACHE) == cached
    for cls in (demo_services.ValueDate, demo_services.InstrumentPriceSmall, demo_services.InstrumentPriceLarge):
        assert "__amf__" not in cls.__dict__


@needs_protobuf
def test_the_proto_matches_the_demo_classes():
    pb = instruments.proto_module()
    assert instruments.proto_module() is pb  # compiled once per process
    for cls in (demo_services.InstrumentPriceSmall, demo_services.InstrumentPriceMedium, demo_services.InstrumentPriceLarge):
        fields = getattr(pb, cls.__name__).DESCRIPTOR.fields
        assert tuple(sorted(f.name for f in fields)) == tuple(sorted(cls.FIELDS))
        for f in fields:
            expected = "ValueDate" if f.name.startswith("date") else None
            assert (f.message_type.name if f.message_type else None) == expected
        items = getattr(pb, f"{cls.__name__}List").DESCRIPTOR.fields_by_name["items"]
        assert items.message_type.name == cls.__name__
    assert [f.name for f in pb.ValueDate.DESCRIPTOR.fields] == list(demo_services.ValueDate.__slots__)


def test_the_check_compares_every_field():
    """The instruments experiment's check: `first_difference` by value and type (exact),
    without references."""

    def same_price(expected, got):
        return first_difference(expected, got, refs=False)

    a = demo_services.instrument_price("medium", 3)
    b = demo_services.instrument_price("medium", 3)
    assert same_price(a, b) is None
    b.date4 = demo_services.ValueDate(2010, 4, 2)
    assert "date4.day" in same_price(a, b)
    b = demo_services.instrument_price("medium", 3)
    b.numeric2 = float(b.numeric2)
    assert "numeric2" in same_price(a, b)
    assert "expected a InstrumentPriceMedium" in same_price(a, {"numeric1": 1})


def test_options():
    quick = instruments.parse_options(["--quick", "--quiet"])
    assert quick.iterations == instruments.QUICK_ITERATIONS
    assert quick.slow_iterations == instruments.QUICK_SLOW_ITERATIONS
    assert quick.packets == instruments.QUICK_PACKETS and quick.repeat == 1
    full = instruments.parse_options(["--quiet"])
    assert full.iterations == full.slow_iterations == 10_000
    assert full.packets == (100, 10_000) and full.repeat == 5
    some = instruments.parse_options(["--messages", "large,small", "--packets", "none", "--no-py3amf", "--quiet"])
    assert some.messages == ("large", "small") and some.packets == () and "py3amf" not in some.peers
    for bad in (["--messages", "huge"], ["--peers", "amf3,xml"], ["--packets", "0,10"], ["--iterations", "0"]):
        with pytest.raises(SystemExit) as excinfo:
            instruments.parse_options(bad)
        assert excinfo.value.code == 2
