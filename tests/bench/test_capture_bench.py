"""The largest-capture benchmark (`amfkit bench capture`), run once in --quick mode through
the runner as a correctness test: a pcap of 200 calls is read by `amfkit inspect --summary`
(every call counted) and loaded by `Gateway.from_capture` (the replayed call answered with
the recorded result), each in a child process, and the report has its table, charts and
findings. Its timings are not judged here; tests/capture/test_capture_big.py bounds the
memory."""

from __future__ import annotations

import contextlib
import io
import json

from amfkit.cli.main import main as cli_main
from amfkit_bench import capture, model


def test_quick_capture_benchmark(tmp_path):
    out = tmp_path / "results.json"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = cli_main(["bench", "capture", "--quick", "--json", str(out), "--quiet"])
    printed = stdout.getvalue()
    report = json.loads(out.read_text(encoding="utf-8"))["experiments"]["capture"]
    assert status == 0 and report["ok"], printed[-3000:]
    assert report["options"]["quick"] is True and report["options"]["repeat"] == 1
    assert report["capture"]["calls"] == capture.QUICK_CALLS and 5e6 < report["capture"]["pcap_bytes"] < 7e6
    rows = {row["case"]: row for row in report["results"]}
    assert list(rows) == ["amfkit inspect --summary", "Gateway.from_capture"]
    for row in rows.values():
        assert row["check"] is True and row["time"]["repeat"] == 1
        wall = row["time"]["wall_ms"]
        assert 0 < wall["min"] <= wall["median"] <= wall["max"]
        assert row["peak_reset"] is True and 0 < row["peak_rss_growth_mb"] < row["peak_rss_mb"]
    inspect = rows["amfkit inspect --summary"]
    assert inspect["summary"][0] == "# 200 AMF calls, 0 faults, 200 HTTP exchanges (0 not AMF)"
    replay = rows["Gateway.from_capture"]
    assert replay["answer_bytes"] > 20_000 and 0 < replay["call_ms"]["median"] < 1000
    assert "amfkit bench capture: A pcap of 5.6 MB" in printed and "one replayed call ms" in printed
    assert "summary: 1 experiment(s), every check passed" in printed

    [section] = capture.sections(report)
    assert [len(row) for row in section.tables[0].rows] == [len(section.tables[0].headers)] * 2
    assert [len(chart.bars) for chart in section.charts] == [2, 2]
    assert len(section.findings) == 2 and section.findings[1].endswith(" ms.")
    json.dumps(model.to_dict(section))


def test_a_wrong_replay_answer_fails_the_check(tmp_path):
    """The check compares the replayed answer with the result recorded for the call the
    replay gives last (in recorded order, then the last again): another call's is refused."""
    from amfkit.remoting import packet

    answer = tmp_path / "answer.amf"
    last = capture.replayed_call(200)
    assert last == 157  # calls 7, 57, 107, 157 recorded; 20 calls answered: the last again
    for call, ok in ((last, True), (107, False)):
        answer.write_bytes(packet.encode(packet.Envelope(3, bodies=[packet.Body("/1/onResult", "null", capture.answer_value(10, call))])))
        problem = capture._check("replay", {"status": 200}, str(answer), 200, 10)
        assert (problem is None) is ok, problem
    problem = capture._check("inspect", {"status": 0, "summary": ["# 199 AMF calls, 0 faults, 199 HTTP exchanges (0 not AMF)"]}, "", 200, 10)
    assert problem is not None and "expected '# 200 AMF calls" in problem


def test_bad_options_are_refused(capsys):
    for argv, message in ((["--repeat", "0"], "--repeat must be at least 1"), (["--calls", "5"], "--calls must be more than 7")):
        try:
            capture.parse_options(argv)
        except SystemExit as exc:
            assert exc.code == 2
        else:
            raise AssertionError(f"{argv} was accepted")
        assert message in capsys.readouterr().err
