"""The big-saves benchmark (`amfkit bench saves`), run once in --quick mode through the
runner as a correctness test: every peer writes the edited save (amfkit's byte for byte
but for the edited value), each run is timed in a child process, and the report has its
goals, table and charts. Its timings are not judged here (tests/saves/test_sol_big.py
holds the quick ratio to Py3AMF)."""

from __future__ import annotations

import contextlib
import io
import json
import sys

import pytest

from amfkit import sol
from amfkit.cli.main import main as cli_main
from amfkit_bench import model, peers, saves


def test_quick_saves_benchmark(tmp_path):
    out = tmp_path / "results.json"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = cli_main(["bench", "saves", "--quick", "--json", str(out), "--quiet"])
    printed = stdout.getvalue()
    results = json.loads(out.read_text(encoding="utf-8"))
    report = results["experiments"]["saves"]
    assert status == 0 and report["ok"], printed[-3000:]
    assert report["options"]["quick"] is True and report["options"]["repeat"] == 1
    assert report["save"] == {"bytes": report["save"]["bytes"], "values": saves.QUICK_VALUES, "records": 2_000, "edit": "world[1000].hp"}
    assert abs(report["save"]["bytes"] - saves.QUICK_SIZE) < saves.QUICK_SIZE // 20

    rows = {row["peer"]: row for row in report["results"]}
    expected = ["amfkit sol.edit (lossless)", "amfkit sol.load/dump", "Py3AMF pyamf.sol (pure Python)"]
    cython = "Py3AMF pyamf.sol (Cython)"
    if peers.py3amf_ext_built():
        expected.append(cython)
    else:
        assert [s["peer"] for s in report["skipped"]] == [cython]
        assert "--py3amf-python" in report["skipped"][0]["reason"]
    assert list(rows) == expected
    for name, row in rows.items():
        assert row["check"] is True and row["bytes_written"] == report["save"]["bytes"], row
        assert row["python"] == sys.executable and row["time"]["repeat"] == 1
        wall = row["time"]["wall_ms"]
        assert 0 < wall["min"] <= wall["median"] <= wall["max"]
        assert row["time"]["cpu_ms"]["median"] > 0
        assert 0 <= row["peak_rss_growth_mb"] < row["peak_rss_mb"]
        assert row["vs_py3amf"]["pure"] > 0 and row["vs_py3amf_cpu"]["pure"] > 0
    for name in expected[:2]:
        assert rows[name]["codec"] == "amfkit" and rows[name]["bytes_differing"] == 1
    assert rows["Py3AMF pyamf.sol (pure Python)"]["codec"] == "pyamf.amf3"
    assert rows["Py3AMF pyamf.sol (pure Python)"]["vs_py3amf"]["pure"] == 1.0 and "baseline" in printed

    goals = [g["goal"] for g in report["goals"]]
    assert len(goals) == 3
    assert goals[0].startswith("sol.edit at least 20x faster than Py3AMF's pyamf.sol (pure Python, as pip installs it; wall clock and CPU time)")
    assert goals[1].startswith("sol.edit under 1 s") and goals[2].startswith("sol.edit's peak memory growth at most 3x")
    assert all(g.endswith(" (at 1.0 MB; goals set at 10 MB)") for g in goals)  # a quick run is smaller

    assert "amfkit bench saves: A save of" in printed and "vs Py3AMF pure" in printed
    assert "goals (sol.edit against the pure-Python Py3AMF of the run):" in printed
    assert "summary: 1 experiment(s), every check passed" in printed

    [section] = saves.sections(report)
    assert [len(row) for row in section.tables[0].rows] == [len(section.tables[0].headers)] * len(expected)
    assert [len(chart.bars) for chart in section.charts] == [len(expected), len(expected)]
    for chart in section.charts:
        for bar in chart.bars:
            assert bar.value > 0 and (bar.low is None or bar.low <= bar.value <= bar.high)
    assert any(f.startswith("By CPU time (steadier when other processes take the cores), sol.edit is ") for f in section.findings)
    assert section.findings[:3] == [f"{g['goal']}: {g['value']} ({'met' if g['met'] else 'NOT met'})." for g in report["goals"]]
    json.dumps(model.to_dict(section))


def test_an_interpreter_without_the_cython_build_is_refused_not_timed(tmp_path):
    """--py3amf-python must name an interpreter where Py3AMF uses its Cython codec: this
    one (pure Python here, or made so) fails the check and nothing is timed."""
    if peers.py3amf_ext_built():
        pytest.skip("this interpreter has Py3AMF's Cython build: the refusal cannot be shown with it")
    options = saves.parse_options(["--quick", "--peers", "py3amf-cython", "--py3amf-python", sys.executable])
    report = saves.run(options)
    assert report["ok"] is False
    [row] = report["results"]
    assert row["check"] is False and "time" not in row
    assert row["error"] == "Py3AMF ran with pyamf.amf3, not its Cython codec"
    assert report["goals"] == [] and report["skipped"] == []


def test_the_check_refuses_a_file_changed_anywhere_else():
    data = saves.build_save(200, 20_000)
    index, path = saves.edit_path(200)
    expected = sol.loads(data)
    old = expected["world"][index]["hp"]
    expected["world"][index]["hp"] = 100
    edit, py3amf = saves.PEERS[0], saves.PEERS[2]
    save = sol.edit(data)
    save[path] = 100
    good = save.dumps()
    assert saves._check(edit, data, good, expected, old, "amfkit", False) is None
    save[f"world[{index + 1}].hp"] = 0  # every hp is 1 to 99
    twice = save.dumps()
    assert saves._check(edit, data, twice, expected, old, "amfkit", False) == f"2 bytes differ from the input (expected one: {old} -> 100)"
    # Py3AMF's file is judged by what it reads back as, not by its bytes.
    assert saves._check(py3amf, data, good, expected, old, "pyamf.amf3", False) is None
    problem = saves._check(py3amf, data, twice, expected, old, "pyamf.amf3", False)
    assert problem is not None and f"world[{index + 1}]" in problem and "hp" in problem
    assert saves._check(py3amf, data, good[:-3], expected, old, "pyamf.amf3", False).startswith("the file written does not read back")


def test_bad_options_are_refused(capsys):
    for argv, message in (
        (["--peers", "edit,nope"], "unknown peer(s) nope"),
        (["--repeat", "-1"], "--repeat must be at least 1"),
        (["--peers", "edit", "--py3amf-python", "python3"], "--py3amf-python runs the py3amf-cython peer"),
    ):
        try:
            saves.parse_options(argv)
        except SystemExit as exc:
            assert exc.code == 2
        else:
            raise AssertionError(f"{argv} was accepted")
        assert message in capsys.readouterr().err
