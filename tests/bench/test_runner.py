"""`amfkit bench` running several experiments: one real --quick run of codec and gateway into
a results JSON and an HTML report (docs/benchmarks.md's Results section is generated from
it too), then the command line's edges with stand-in experiments."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import types

import pytest

import amfkit_bench
from amfkit_bench import codec, gateway, markdown, runner
from amfkit_bench import results as results_file
from amfkit.cli.main import main as cli_main


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """`amfkit bench codec gateway --quick` (codec at 200 items), once for this module."""
    out = tmp_path_factory.mktemp("bench")
    json_path, html_path = out / "results.json", out / "report.html"
    argv = ["codec", "gateway", "--quick", "--codec-args", "--size 200",
            "--json", str(json_path), "--report", str(html_path), "--quiet"]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = cli_main(["bench", *argv])
    return {"status": status, "stdout": stdout.getvalue(), "json": json_path, "html": html_path, "argv": argv}


def test_quick_run_writes_the_results_json(quick_run):
    assert quick_run["status"] == 0, quick_run["stdout"][-3000:]
    results = json.loads(quick_run["json"].read_text(encoding="utf-8"))
    assert results["format"] == "amfkit-bench-results"
    assert results["format_version"] == results_file.RESULTS_FORMAT
    assert results["amfkit_version"]
    assert results["ok"] is True
    assert results["command"] == "amfkit bench " + " ".join(
        "'--size 200'" if a == "--size 200" else a for a in quick_run["argv"]
    )
    for key in ("cpu", "cpu_count", "load_average", "python", "platform", "versions"):
        assert key in results["machine"], key
    assert {"amfkit", "py3amf", "orjson", "uvicorn"} <= set(results["machine"]["versions"])

    assert list(results["experiments"]) == ["codec", "gateway"]
    codec_report, gateway_report = results["experiments"]["codec"], results["experiments"]["gateway"]
    assert codec_report["ok"] and gateway_report["ok"]
    assert codec_report["options"]["size"] == 200 and codec_report["options"]["quick"] is True
    assert gateway_report["options"]["quick"] is True
    assert {row["server"] for row in gateway_report["results"]} == {"amfkit", "py3amf", "bare"}
    assert results["runs"]["codec"]["argv"] == ["--quick", "--size", "200"]
    assert results["runs"]["gateway"]["argv"] == ["--quick"]
    assert all(run["elapsed_s"] > 0 and run["ok"] for run in results["runs"].values())


def test_quick_run_writes_the_html_report(quick_run):
    page = quick_run["html"].read_text(encoding="utf-8")
    results = results_file.load_results(str(quick_run["json"]))
    sections = codec.sections(results["experiments"]["codec"]) + gateway.sections(results["experiments"]["gateway"])
    assert page.count("<svg") == sum(len(s.charts) for s in sections) >= 12
    for section in sections:
        assert f">{section.title}</h3>" in page
    assert "complex graph, 200 items" in page and "Requests per second" in page
    assert not re.search(r"https?://", page)
    assert "the article's own figures" in page.lower()


def test_quick_run_prints_the_reports_and_a_summary(quick_run):
    out = quick_run["stdout"]
    assert "amfkit bench codec: AMFBench graphs, 200 items each" in out
    assert "requests/s under wrk" in out
    summary = out[out.index("summary: 2 experiment(s), every check passed"):]
    assert re.search(r"^  codec +ok ", summary, re.M) and re.search(r"^  gateway +ok ", summary, re.M)
    assert "amfkit AMF3 encodes complex-200" in summary
    assert "echo AMF3: amfkit >= 10x Py3AMF requests/s" in summary
    assert f"results: {quick_run['json']}" in out and f"report: {quick_run['html']}" in out


# --------------------------------------------------------------------------- docs/benchmarks.md's Results


PAGE = """# Benchmarks

intro

## Results

Old hand-written figures.

```sh
## not a heading: inside a code block
```

More old text.

## Testing

make test
"""


def test_results_section_from_the_quick_run(quick_run, tmp_path, capsys):
    results = results_file.load_results(str(quick_run["json"]))
    block = markdown.render(results, source="out/results.json")
    assert block.startswith(markdown.START) and block.endswith(markdown.END)
    assert results["command"] in block  # the command that reproduces it
    assert "python -m amfkit_bench.markdown out/results.json --write" in block
    assert "From a `--quick` run" in block
    assert "### codec: " in block and "### gateway: " in block
    assert "| peer | n | encode ms |" in block and "| case | server | req/s |" in block
    assert "| check" not in block  # every check passed: the column says nothing
    assert "- amfkit AMF3 encodes complex-200" in block
    assert "- echo AMF3: amfkit >= 10x Py3AMF requests/s" in block
    assert results["machine"]["cpu"] in block

    path = tmp_path / "benchmarks.md"
    path.write_text(PAGE, encoding="utf-8")
    assert markdown.main([str(quick_run["json"]), "--write", str(path)]) == 0
    assert "Results section replaced" in capsys.readouterr().out
    text = path.read_text(encoding="utf-8")
    assert "Old hand-written figures" not in text and "More old text" not in text
    assert text.count("## Results") == 1 and text.count(markdown.START) == 1
    assert text.startswith("# Benchmarks\n\nintro\n\n## Results\n\n" + markdown.START)
    assert text.endswith(markdown.END + "\n\n## Testing\n\nmake test\n")

    # with the markers in place, only the text between them is replaced
    again = markdown.replace_section(text.replace("## Testing", "## Testing (edited)"), "<!-- results:start -->new<!-- results:end -->")
    assert "## Results\n\n<!-- results:start -->new<!-- results:end -->\n\n## Testing (edited)" in again

    assert markdown.main([str(quick_run["json"])]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("## Results\n\n" + markdown.START)


def test_results_section_is_appended_when_there_is_none():
    assert markdown.replace_section("# x\n", "BLOCK") == "# x\n\n## Results\n\nBLOCK\n"
    assert markdown.replace_section("# x\n\n## Results\n\nold\n", "BLOCK") == "# x\n\n## Results\n\nBLOCK\n"


def test_the_results_say_how_much_their_timings_varied():
    """No fixed claim about noise: the closing line is computed from the run's cores, load
    and the spread of its repeated timings."""

    def timed(median, low, high, repeat=5):
        return {"wall_ms": {"median": median, "min": low, "max": high}, "repeat": repeat}

    results = {
        "machine": {"cpu_count": 8, "load_average": [0.25, 0.5, 0.5]},
        "experiments": {"x": {"results": [{"a": timed(10.0, 9.0, 11.0)}, {"a": timed(10.0, 9.5, 10.5), "b": timed(1.0, 1.0, 1.0, 1)}]}},
    }
    line = markdown._variation(results)
    assert line.startswith("Measured on 8 cores with a load average of 0.25 at the start.")
    assert "by 15% of its median in the typical case and by up to 20% for nine figures in ten (2 repeated figures)" in line

    results["machine"] = {"cpu_count": 2}
    results["experiments"]["x"]["results"] = [{"a": timed(1.0, 1.0, 1.0, 1)}]
    assert markdown._variation(results).startswith("Measured on 2 cores; no timing was repeated")


# --------------------------------------------------------------------------- the command line


@pytest.fixture
def fake_experiments(monkeypatch):
    """Register stand-in experiments: `fine` (reports progress), `boom` (raises), `legacy` (main only)."""
    calls: dict[str, list] = {"fine": [], "legacy": []}

    fine = types.ModuleType("fake_bench_fine")

    class Options:
        def __init__(self, argv):
            self.argv = argv
            self.progress = None

    def parse_options(argv):
        if "--bad" in argv:
            print("fine: error: unrecognized arguments: --bad", file=sys.stderr)
            raise SystemExit(2)
        return Options(argv)

    def run(options):
        calls["fine"].append(options.argv)
        for i in range(3):
            if options.progress:
                options.progress(f"step {i}", done=i + 1, total=3)
        return {"experiment": "fine", "ok": True, "options": {"quick": "--quick" in options.argv}, "results": [{"case": "a", "t_ms": 1.0}]}

    fine.NAME, fine.SUMMARY = "fine", "a stand-in that passes"  # type: ignore[attr-defined]
    fine.parse_options, fine.run = parse_options, run  # type: ignore[attr-defined]
    fine.format_report = lambda report: "fine: text report"  # type: ignore[attr-defined]

    boom = types.ModuleType("fake_bench_boom")
    boom.SUMMARY = "a stand-in that raises"  # type: ignore[attr-defined]
    boom.parse_options = lambda argv: types.SimpleNamespace()  # type: ignore[attr-defined]

    def explode(options):
        raise RuntimeError("the load generator is missing")

    boom.run = explode  # type: ignore[attr-defined]

    legacy = types.ModuleType("fake_bench_legacy")
    legacy.main = lambda argv: calls["legacy"].append(argv) or 3  # type: ignore[attr-defined]

    for name, module in (("fine", fine), ("boom", boom), ("legacy", legacy)):
        monkeypatch.setitem(sys.modules, module.__name__, module)
        monkeypatch.setitem(amfkit_bench.EXPERIMENTS, name, module.__name__)
    return calls


def test_a_failing_experiment_is_recorded_and_the_others_still_run(fake_experiments, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert runner.main(["boom", "fine", "--quick", "--json", str(out), "--quiet"]) == 1
    printed = capsys.readouterr()
    assert "RuntimeError: the load generator is missing" in printed.err  # the traceback
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["ok"] is False
    assert results["experiments"]["boom"] == {
        "experiment": "boom", "ok": False, "error": "RuntimeError: the load generator is missing", "results": [],
    }
    assert results["experiments"]["fine"]["ok"] is True
    assert fake_experiments["fine"] == [["--quick"]]
    assert "boom: FAILED: RuntimeError: the load generator is missing" in printed.out
    assert "fine: text report" in printed.out
    assert re.search(r"^  boom +FAILED", printed.out, re.M)


def test_progress_reaches_the_display(fake_experiments):
    seen = []

    class Recorder:
        def start(self, name):
            seen.append(("start", name))

        def step(self, name, message, done, total):
            seen.append((name, message, done, total))

        def finish(self, name, ok, elapsed):
            seen.append(("finish", name, ok))

    plans = runner.plan(["fine"], ["--quick"])
    runner.run_plans(plans, Recorder())
    assert seen == [("start", "fine"), ("fine", "step 0", 1, 3), ("fine", "step 1", 2, 3), ("fine", "step 2", 3, 3), ("finish", "fine", True)]
    assert plans[0].options.progress is None  # handed back as it was

    # the rich display takes the same calls (drawn on standard error)
    with runner._Bars(["fine", "boom"]) as bars:
        runner.run_plans(runner.plan(["fine", "boom"], []), bars)


def test_per_experiment_arguments(fake_experiments, capsys):
    assert runner.main(["fine", "--quick", "--fine-args", "--x 1", "--quiet"]) == 0
    assert fake_experiments["fine"] == [["--quick", "--x", "1"]]


def test_usage_errors_exit_2_before_anything_runs(fake_experiments, capsys):
    assert runner.main(["nonsense"]) == 2
    assert "unknown experiment 'nonsense'" in capsys.readouterr().err
    assert runner.main(["fine", "boom", "--bad"]) == 2
    err = capsys.readouterr().err
    assert "fine refused --bad" in err and "--fine-args" in err
    assert fake_experiments["fine"] == []
    assert runner.main(["fine", "--boom-args", "--x"]) == 2
    assert "boom is not among the experiments run" in capsys.readouterr().err
    assert runner.main(["fine", "--json"]) == 2
    assert "--json needs a value" in capsys.readouterr().err


def test_an_experiment_refusing_a_common_option_is_named(capsys):
    assert runner.main(["codec", "gateway", "--size", "100"]) == 2
    assert "gateway refused --size 100" in capsys.readouterr().err


def test_a_module_with_only_main_runs_through_it(fake_experiments):
    assert runner.main(["legacy", "--quick"]) == 3
    assert fake_experiments["legacy"] == [["--quick"]]


def test_list_and_help(capsys):
    assert cli_main(["bench", "--list"]) == 0
    listed = capsys.readouterr().out
    for name in amfkit_bench.names():
        assert re.search(rf"^{name} +\S", listed, re.M), name
    assert cli_main(["bench", "--help"]) == 0
    assert "usage: amfkit bench [EXPERIMENT ...]" in capsys.readouterr().out
    assert cli_main(["bench", "codec", "--help"]) == 0
    assert "usage: amfkit bench codec" in capsys.readouterr().out


def test_load_results_accepts_one_experiments_own_json(tmp_path):
    single = {"experiment": "codec", "ok": True, "machine": {"cpu": "x", "versions": {"amfkit": "9.9"}}, "results": []}
    path = tmp_path / "codec.json"
    path.write_text(json.dumps(single), encoding="utf-8")
    results = results_file.load_results(str(path))
    assert results["experiments"] == {"codec": single}
    assert results["amfkit_version"] == "9.9" and results["ok"] is True
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(ValueError, match="not amfkit bench results"):
        results_file.load_results(str(path))
