"""`amfkit bench compare A B`: rows matched by experiment and case, ratios, a threshold for
"unchanged", exit status 0 whatever changed. B is A with numbers edited by the test."""

from __future__ import annotations

import copy
import json

import pytest

from amfkit_bench import codec, compare, model
from amfkit_bench import results as results_file
from amfkit.cli.main import main as cli_main


def _scale(timing: dict, factor: float) -> None:
    for key in ("median", "min", "max"):
        timing["wall_ms"][key] *= factor


def _row(results: dict, graph: str, peer: str) -> dict:
    return next(r for r in results["experiments"]["codec"]["results"] if r["graph"] == graph and r["peer"] == peer)


@pytest.fixture(scope="module")
def run_a() -> dict:
    report = codec.run(codec.Options(size=40, graphs=("complex", "simple"), repeat=3, py3amf=False))
    gateway = {
        "experiment": "gateway",
        "ok": True,
        "options": {"quick": True},
        "results": [
            {"server": "amfkit", "case": "echo AMF3", "check": True, "rps": 20000.0, "wire_bytes": 79, "requests": 20000},
            {"server": "py3amf", "case": "echo AMF3", "check": True, "rps": 2500.0, "wire_bytes": 79, "requests": 2500},
            {"server": "amfkit", "case": "tiles String AMF3", "check": True, "rps": 1000.0, "wire_bytes": 20498, "requests": 1000},
        ],
        "server_times": {"String AMF3": {"median_ms": 0.9, "min_ms": 0.85}},
        "goals": [],
    }
    return results_file.build_results({"codec": report, "gateway": gateway}, command="amfkit bench --quick")


@pytest.fixture
def files(tmp_path, run_a):
    b = copy.deepcopy(run_a)
    _scale(_row(b, "complex", "amfkit AMF3")["encode"], 2.0)  # slower
    _scale(_row(b, "simple", "pickle 5")["decode"], 0.25)  # faster
    _scale(_row(b, "simple", "orjson")["encode"], 1.05)  # within the threshold
    _row(b, "complex", "msgpack")["bytes"] += 10  # a size moved
    b["experiments"]["gateway"]["results"][0]["rps"] *= 1.5  # more requests/s: faster
    b["experiments"]["gateway"]["server_times"]["String AMF3"]["median_ms"] *= 3  # slower
    b["experiments"]["codec"]["results"] = [
        r for r in b["experiments"]["codec"]["results"] if not (r["graph"] == "simple" and r["peer"] == "msgpack")
    ]
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    model.write_json(run_a, str(pa))
    model.write_json(b, str(pb))
    return pa, pb


def test_compare_reports_slower_faster_and_unchanged(files):
    a, b = (results_file.load_results(str(p)) for p in files)
    result = compare.compare(a, b, threshold=0.10)

    worse = {result.label(c.a): c for c in result.worse if c.a.kind != "size"}
    better = {result.label(c.a): c for c in result.better}
    assert set(worse) == {
        "codec: complex, amfkit AMF3: encode",
        "gateway: String AMF3: server_times",
    }
    assert worse["codec: complex, amfkit AMF3: encode"].speedup == pytest.approx(0.5)
    assert worse["gateway: String AMF3: server_times"].speedup == pytest.approx(1 / 3)
    assert set(better) == {"codec: simple, pickle 5: decode", "gateway: amfkit, echo AMF3: rps"}
    sizes = [c for c in result.worse if c.a.kind == "size"]
    assert [result.label(c.a) for c in sizes] == ["codec: complex, msgpack: bytes"]  # bigger is worse
    assert better["codec: simple, pickle 5: decode"].speedup == pytest.approx(4.0)
    assert better["gateway: amfkit, echo AMF3: rps"].speedup == pytest.approx(1.5)  # a rate: higher is better

    unchanged = {result.label(c.a) for c in result.unchanged}
    assert "codec: simple, orjson: encode" in unchanged  # 5% < 10%
    assert "codec: complex, amfkit AMF0: decode" in unchanged
    assert {result.label(f) for f in result.only_a} == {
        f"codec: simple, msgpack: {metric}" for metric in ("encode", "decode", "bytes", "bytes_gzip")
    }
    assert result.only_b == []

    strict = compare.compare(a, b, threshold=0.01)
    assert "codec: simple, orjson: encode" in {strict.label(c.a) for c in strict.worse}


def test_every_codec_row_is_matched_by_its_case(run_a):
    result = compare.compare(run_a, copy.deepcopy(run_a))
    assert result.worse == result.better == result.only_a == result.only_b == []
    rows = len(run_a["experiments"]["codec"]["results"])
    # encode, decode, bytes, bytes_gzip per codec row; rps, wire_bytes per gateway row; a server time
    assert len(result.unchanged) == rows * 4 + 3 * 2 + 1
    assert result.label_fields[("codec", ("graph", "size", "peer", "library", "format", "input"))] == ["graph", "peer"]
    assert result.label_fields[("gateway", ("server", "case"))] == ["server", "case"]
    assert result.label_fields[("gateway", ("table", "case"))] == ["case"]


def test_cli_prints_the_changes_and_exits_0(files, capsys):
    a, b = files
    assert cli_main(["bench", "compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    slower = out[out.index("slower in B (2):"):out.index("faster in B")]
    assert "codec: complex, amfkit AMF3: encode:" in slower and "2.00x slower" in slower
    assert "3.00x slower" in slower
    faster = out[out.index("faster in B"):]
    assert "codec: simple, pickle 5: decode:" in faster and "4.00x faster" in faster
    assert "gateway: amfkit, echo AMF3: rps: 20,000/s -> 30,000/s, 1.50x faster" in faster
    assert "sizes changed (1):" in out
    assert "only in A (4):" in out
    assert "unchanged within 10%:" in out
    assert out.rstrip().splitlines()[-2].startswith("A: ")

    assert cli_main(["bench", "compare", str(a), str(b), "--threshold", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "codec: complex, amfkit AMF3: encode" in out and "pickle 5: decode" in out  # 2x and 4x beat 50%
    assert "gateway: amfkit, echo AMF3: rps" not in out.split("unchanged within")[0]  # 1.5x does not


def test_one_experiments_own_json_compares_with_a_results_file(tmp_path, run_a, capsys):
    single = tmp_path / "codec.json"
    single.write_text(json.dumps(run_a["experiments"]["codec"]), encoding="utf-8")
    both = tmp_path / "all.json"
    model.write_json(run_a, str(both))
    assert compare.main([str(single), str(both)]) == 0
    out = capsys.readouterr().out
    assert "only in B (7):" in out  # the gateway's figures are only in the results file
    assert "slower in B" not in out and "faster in B" not in out  # the same codec figures


def test_unreadable_files_exit_1(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"neither": 1}', encoding="utf-8")
    assert compare.main([str(bad), str(bad)]) == 1
    assert "not amfkit bench results" in capsys.readouterr().err
    assert compare.main([str(tmp_path / "missing.json"), str(bad)]) == 1
