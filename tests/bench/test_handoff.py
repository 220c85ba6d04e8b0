"""The handoff experiment (the worker messages article), run small as a correctness test:
one message back and forth between two processes on every transport (the shm broker
and a real Redis included, never skipped), every reply compared with what was sent, and
the report's shape; a transport whose reply differs fails its check instead of being
timed; `amfkit bench messaging --only handoff` runs it alone."""

from __future__ import annotations

import json
import os

import pytest

from amfkit_bench import handoff, messaging


def _segments() -> set[str]:
    """This process's benchmark segments (their names carry the pid of the process that
    runs the experiment): another run on the machine makes its own, not ours."""
    mine = f"amfkit.bench-{os.getpid()}-"
    try:
        return {name for name in os.listdir("/dev/shm") if name.startswith(mine)}
    except OSError:
        return set()


def test_every_transport_carries_every_message_intact(redis_server):
    before = _segments()
    report = handoff.run(handoff.Options(round_trips=50, runs=2, warmup=5), redis_server.url)
    rows = report["rows"]
    assert [(r["placement"], r["transport"], r["size"]) for r in rows] == [
        (p, t, s) for p in handoff.PLACEMENTS for t in handoff.TRANSPORTS for s in handoff.SIZES
    ]
    assert len(os.sched_getaffinity(0)) > 1, "the machine gives this test one CPU: the 2-core rows cannot run"
    failures = [(r["placement"], r["transport"], r["size"], r.get("error") or r.get("not_run")) for r in rows if r.get("check") is not True]
    assert not failures and report["ok"], failures
    assert report["bodies"] == {"1 char": {"chars": 1, "amf3_bytes": 3}, "2 KB": {"chars": 2045, "amf3_bytes": 2048}}
    for r in rows:
        assert r["checked"] == handoff.CHECKS and (r["round_trips"], r["runs"], r["warmup"]) == (50, 2, 5)
        assert 0 < r["min_us"] <= r["p50_us"] <= r["p99_us"] <= r["max_us"]
        assert 0 < r["total_min_ms"] <= r["total_ms"] <= r["total_max_ms"]
        assert r["round_trips_per_s"] == pytest.approx(50 / (r["total_ms"] / 1000))
        assert r["vs_queue"] == pytest.approx(report_row(report, "mp.Queue", r["size"], r["placement"])["total_ms"] / r["total_ms"])
        a, b = r["cpus"]
        assert (a != b) == (r["placement"] == "2 cores")
        if r["transport"] in ("shm", "redis"):  # the broker's message record: the body and its envelope
            assert r["wire_bytes"] > r["body_bytes"]
        else:
            assert r["wire_bytes"] == r["body_bytes"]
    (goal,) = report["goals"]
    assert goal["goal"].startswith("handoff: the shm broker at least 50x") and "2 cores" in goal["goal"] and isinstance(goal["met"], bool)
    text = handoff.format_report(report)
    for transport in handoff.TRANSPORTS:
        assert f"\n{transport} " in text
    assert "article: MessageChannel" in text and "153" in text and "2.5x MessageChannel" in text
    assert _segments() <= before, "a shared-memory segment outlived the run"


def report_row(report, transport, size, placement):
    row = handoff.row_of(report, transport, size, placement)
    assert row is not None
    return row


def test_a_reply_that_differs_fails_the_check_and_is_not_timed(monkeypatch):
    real = handoff._PipeEnd.recv
    monkeypatch.setattr(handoff._PipeEnd, "recv", lambda self: str(real(self)) + "!")
    report = handoff.run(handoff.Options(round_trips=20, runs=1, warmup=2, transports=("mp.Queue", "mp.Pipe")), redis_why="not wanted")
    pipe = [r for r in report["rows"] if r["transport"] == "mp.Pipe"]
    assert pipe and all(r["check"] is False and "check 0" in r["error"] and "total_ms" not in r for r in pipe)
    assert all(r["check"] for r in report["rows"] if r["transport"] == "mp.Queue")
    assert not report["ok"]


def test_redis_not_there_is_a_row_not_run():
    report = handoff.run(handoff.Options(round_trips=10, runs=1, warmup=1, transports=("mp.Queue", "redis")), redis_why="no redis-server here")
    redis = [r for r in report["rows"] if r["transport"] == "redis"]
    assert redis and all(r["check"] is None and r["not_run"] == "no redis-server here" for r in redis)
    assert report["ok"]  # what ran passed its checks
    assert "not run: no redis-server here" in handoff.format_report(report)


def test_messaging_only_handoff(redis_server, tmp_path, capsys):
    out = tmp_path / "handoff.json"
    status = messaging.main(["--only", "handoff", "--quick", "--handoff-round-trips", "30", "--redis", redis_server.url, "--json", str(out)])
    report = json.loads(out.read_text())
    assert status == 0 and report["ok"]
    assert report["results"] == [] and "idle" not in report
    assert report["redis"] == {"url": redis_server.url, "started": False, "why_not": None}
    h = report["handoff"]
    assert (h["round_trips"], h["runs"], h["placements"]) == (30, 1, ["2 cores"])
    assert {r["transport"] for r in h["rows"] if r["check"]} == set(handoff.TRANSPORTS)
    assert [g["goal"] for g in report["goals"]] == [g["goal"] for g in h["goals"]]
    text = capsys.readouterr().out
    assert "handoff (the worker messages article)" in text and "goals:" in text
    (section,) = messaging.sections(report)
    (table,) = section.tables
    assert table.headers[0] == "transport" and len(table.rows) == 2 * len(handoff.TRANSPORTS) + 2  # and the article's two
    assert any("MessageChannel" in line for line in section.article)
    assert section.charts and section.charts[0].reference


def test_options():
    full = messaging.parse_options([])
    assert full.parts == messaging.PARTS and full.brokers == ("memory",) and full.workers == (1,)
    assert (full.handoff_runs, full.handoff_round_trips, full.idle_duration, full.idle_clients) == (5, 1000, 10.0, 100)
    quick = messaging.parse_options(["--quick"])
    assert (quick.handoff_runs, quick.handoff_round_trips, quick.idle_duration, quick.idle_clients) == (1, 200, 1.0, 10)
    assert quick.handoff_placements == ("2 cores",) and full.handoff_placements == ("2 cores", "1 core")
    picked = messaging.parse_options(["--only", "handoff,delivery", "--brokers", "memory,shm", "--workers", "1,2", "--redis", "redis://h:1/0"])
    assert (picked.parts, picked.brokers, picked.workers, picked.redis) == (("handoff", "delivery"), ("memory", "shm"), (1, 2), "redis://h:1/0")
    cases, skipped = messaging._delivery_cases(picked)
    assert cases == [("memory", 1), ("shm", 1), ("shm", 2)] and len(skipped) == 1 and "memory://" in skipped[0]
    for bad in (["--only", "nothing"], ["--brokers", "mqtt"], ["--workers", "0"], ["--workers", "two"]):
        with pytest.raises(SystemExit):
            messaging.parse_options(bad)
