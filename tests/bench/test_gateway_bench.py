"""The gateway benchmark, run once in --quick mode as a correctness test: every server
starts, answers every case correctly under load, the floors cover both HTTP servers and
every interface, and the report has its goals."""

from __future__ import annotations

import json

import pytest

from amfkit_bench import gateway


def test_quick_gateway_benchmark(tmp_path, capsys):
    pytest.importorskip("granian")
    out = tmp_path / "gateway.json"
    assert gateway.main(["--quick", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["ok"]
    servers = {row["server"] for row in report["results"]}
    assert servers == {"amfkit", "py3amf", "bare"}
    assert all(row["check"] and row["rps"] > 0 and row["errors"] == 0 for row in report["results"])
    # amfkit compresses a large answer when asked; the string shape is ~20 KB raw
    sizes = {row["case"]: row["wire_bytes"] for row in report["results"] if row["server"] == "amfkit"}
    assert sizes["tiles String AMF3 gzip"] < sizes["tiles String AMF3"] * 0.7
    # the floors: bare and amfkit on each server and interface, one worker, in one run
    floors = report["floors"]
    assert {row["variant"] for row in floors} == {
        "uvicorn asgi (amfkit.serving)",
        "uvicorn asgi (httptools)",
        "granian rsgi",
        "granian asgi",
        "granian wsgi",
    }
    for row in floors:
        assert row["workers"] == 1
        for kind in ("bare", "amfkit"):
            assert row[kind]["check"] and row[kind]["rps"] > 0 and row[kind]["errors"] == 0
            assert row[kind]["cpu_us"] > 0
        assert row["ratio"] > 0 and 0 < row["vs_fastest_bare"]
    fastest = max(floors, key=lambda row: row["bare"]["rps"])
    assert fastest["vs_fastest_bare"] == pytest.approx(fastest["ratio"])
    assert report["default_server"] == "uvicorn asgi (amfkit.serving)"
    assert {g["goal"] for g in report["goals"]} >= {
        "echo AMF3: amfkit >= 10x Py3AMF requests/s",
        "echo AMF3: amfkit within 20% of the bare endpoint",
        "echo AMF3 >= 0.9x the bare app on the same server (uvicorn asgi (amfkit.serving), 1 worker)",
    }
    text = capsys.readouterr().out
    assert "requests/s under wrk" in text and "the fastest bare floor is" in text


def test_floor_options() -> None:
    options = gateway.parse_options(["--http-servers", "granian", "--workers", "1,2", "--repeat", "5", "--floors-only"])
    assert options.http_servers == ("granian",) and options.workers == (1, 2) and options.repeat == 5 and options.floors_only
    quick = gateway.parse_options(["--quick"])
    assert quick.workers == (1,) and quick.repeat == 1 and quick.http_servers == ("uvicorn", "granian")
    with pytest.raises(SystemExit):
        gateway.parse_options(["--http-servers", "hypercorn"])
