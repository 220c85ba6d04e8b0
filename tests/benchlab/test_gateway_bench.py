"""The gateway benchmark, run once in --quick mode as a correctness test: every server
starts, answers every case correctly under load, and the report has its goals."""

from __future__ import annotations

import json

from amfkit.benchlab import gateway


def test_quick_gateway_benchmark(tmp_path, capsys):
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
    assert {g["goal"] for g in report["goals"]} >= {
        "echo AMF3: amfkit >= 10x Py3AMF requests/s",
        "echo AMF3: amfkit within 20% of the bare endpoint",
    }
    assert "requests/s under wrk" in capsys.readouterr().out
