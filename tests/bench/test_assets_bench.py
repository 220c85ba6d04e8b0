"""The file storage article's benchmark (`amfkit bench assets`), run once in --quick mode
as a correctness test: nginx and every asset backend serve the ten files byte for byte,
under load without errors, and the report has its goals and the article's figures."""

from __future__ import annotations

import json

from amfkit_bench import assets


def test_quick_assets_benchmark(tmp_path, capsys):
    out = tmp_path / "assets.json"
    assert assets.main(["--quick", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["ok"]
    assert [row["variant"] for row in report["results"]] == [v.name for v in assets.VARIANTS]
    for row in report["results"]:
        assert row["check"] and row["rps"] > 0 and row["errors"] == 0, row
        assert row["sequential_s"] > 0 and row["new_connection_s"] > 0
        assert row["vs_nginx"]["rps"] > 0
        assert (row.get("large_mb_s", 0) > 0) == (row["variant"] in assets.LARGE_VARIANTS)
    goals = {g["goal"] for g in report["goals"]}
    assert "file system through amfkit >= 0.7x nginx (16 connections)" in goals
    assert "postgresql + memcached >= 0.8x amfkit's Python-side file route" in goals
    text = capsys.readouterr().out
    assert "webserver direct filesystem access" in text and "x nginx rps" in text
    sections = assets.sections(report)
    assert sections and sections[0].tables[1].rows[0][1] == 14.143
