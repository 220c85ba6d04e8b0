"""The tiles benchmark (the Amfphp tiles article), run once in --quick mode as a
correctness test: every shape in AMF0 and AMF3 (the typed columns among them) passes its
checks, the report has every part, and its sections build with charts."""

from __future__ import annotations

import json

from amfkit_bench import model, results, tiles


def test_quick_tiles_benchmark(tmp_path, capsys):
    out = tmp_path / "tiles.json"
    assert tiles.main(["--quick", "--quiet", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["ok"]
    assert report["checks"] and all(check["ok"] for check in report["checks"])
    cases = {(row["shape"], row["version"]) for row in report["results"]}
    assert cases == {(shape, version) for shape in tiles.SHAPES for version in (0, 3)}

    for row in report["results"]:
        for phase in ("query", "conversion", "encoding", "gateway", "gateway_gzip"):
            assert row["server"][phase]["wall_ms"]["median"] > 0, (row["case"], phase)
        for part in ("decode", "rows", "total"):
            assert row["client"][part]["wall_ms"]["median"] > 0, (row["case"], part)
        sizes = row["bytes"]
        assert sizes["raw"] > sizes["gzip1"] >= sizes["gzip6"] > 0

    # the string is about the article's 20,581 bytes raw; gzip halves it
    string = next(r for r in report["results"] if r["case"] == "String AMF0")
    assert 19_000 < string["bytes"]["raw"] < 22_000
    assert string["bytes"]["gzip6"] < string["bytes"]["raw"] * 0.6

    # the typed columns: in the run, no bigger than the AMF3 string gzipped at either
    # level; Py3AMF (no Vector support) was checked to refuse them, and not timed
    assert "Columns" in tiles.SHAPES
    columns = next(r for r in report["results"] if r["case"] == "Columns AMF3")
    string3 = next(r for r in report["results"] if r["case"] == "String AMF3")
    assert columns["bytes"]["raw"] < string3["bytes"]["raw"]
    assert all(columns["bytes"][level] <= string3["bytes"][level] for level in ("gzip1", "gzip6"))
    if "py3amf" in columns["peers"]:
        assert columns["peers"]["py3amf"] is None
        assert any(c["case"] == "Columns AMF3" and c["check"].startswith("py3amf refuses it") and c["ok"] for c in report["checks"])
        columns0 = next(r for r in report["results"] if r["case"] == "Columns AMF0")
        assert columns0["peers"]["py3amf"]["total"]["wall_ms"]["median"] > 0  # AMF0: plain arrays, read and timed
    assert any("typed columns" in text for text in report["findings"]["wire"])

    # every threshold was checked against a gateway; 0 compresses everything
    assert [t["threshold"] for t in report["thresholds"]] == list(tiles.DEFAULT_THRESHOLDS)
    assert all(c["compressed"] for c in report["thresholds"][0]["cases"])

    # data-ready: computed for every link, case and wire option, stated as computed
    ready = report["ready"]
    assert ready["computed"] is True
    assert len(ready["rows"]) == len(tiles.DEFAULT_LINKS_MBIT) * 2 * len(tiles.SHAPES) * len(tiles.WIRE_OPTIONS)
    assert all(e["total_ms"] >= ready["rtt_ms"] for e in ready["rows"])

    assert all(report["findings"][topic] for topic in ("wire", "server", "client", "ready"))

    sections = tiles.sections(report)
    assert sections and all(isinstance(s, model.Section) for s in sections)
    charts = [chart for s in sections for chart in s.charts]
    assert charts and all(chart.bars for chart in charts)
    assert any(chart.reference for chart in charts)  # the article's figures beside ours
    assert any(s.article for s in sections) and any(s.findings for s in sections)
    json.dumps([model.to_dict(s) for s in sections])  # JSON-ready

    text = capsys.readouterr().out
    assert "amfkit bench tiles" in text and "COMPUTED" in text

    # A results file of format 1 (the article's figures under "seed") reads as format 2:
    # the same sections as from the report written now.
    old = json.loads(out.read_text())
    old["seed"] = old.pop("article_figures")
    old["ready"]["seed"], old["ready"]["seed_model"] = old["ready"].pop("article"), old["ready"].pop("article_model")
    file_v1 = tmp_path / "results-v1.json"
    file_v1.write_text(json.dumps(results.build_results({"tiles": old}) | {"format_version": 1}))
    read = results.load_results(str(file_v1))
    assert read["format_version"] == results.RESULTS_FORMAT == 2
    assert read["experiments"]["tiles"] == report
    assert [model.to_dict(s) for s in tiles.sections(read["experiments"]["tiles"])] == [model.to_dict(s) for s in sections]
