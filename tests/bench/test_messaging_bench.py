"""The messaging benchmark, run once in --quick mode as a correctness test: a real uvicorn
server per channel, a load-generator process with raw consumers on every channel, every
copy delivered once and in order, and a report with its phases, goals and sections."""

from __future__ import annotations

import json

from amfkit_bench import messaging


def test_quick_messaging_benchmark(tmp_path, capsys):
    out = tmp_path / "messaging.json"
    status = messaging.main(["--quick", "--consumers", "5", "--json", str(out)])
    report = json.loads(out.read_text())
    failures = [(row["channel"], row.get("error"), row.get("errors")) for row in report["results"] if not row.get("check")]
    assert status == 0 and report["ok"], failures
    assert [row["channel"] for row in report["results"]] == list(messaging.CHANNELS)
    for row in report["results"]:
        assert row["consumers"] == 5 and row["check"] and row["error_count"] == 0
        assert row["check_messages"] == 20 and row["bytes_per_message"] > 0
        # the broker ends with every consumer subscribed and nothing left queued
        assert row["broker"]["consumers"] == 5 and row["broker"]["queued"] == 0
        fixed, high, load = row["fixed_rate"], row["high_rate"], row["load"]
        assert (fixed["target_per_s"], high["target_per_s"]) == (1000, 20000)
        assert fixed["published"] == 100 and high["published"] == 2000  # 0.5 s at 200 and 4,000 per second
        assert load["delivered"] > 0 and load["delivered_per_s"] > 0
        assert load["window"] == (messaging.POLLING_WINDOW if row["channel"] == "polling" else 16)
        for phase in (fixed, high, load):
            lat = phase["latency"]
            assert lat["n"] == phase["published"] * 5  # every copy timed
            assert 0 <= lat["min_ms"] <= lat["median_ms"] <= lat["p99_ms"] <= lat["max_ms"]
            assert lat["min_ms"] <= lat["first_copy_ms"] <= lat["last_copy_ms"] <= lat["max_ms"]
            assert phase["server_cpu"] > 0 and phase["client_cpu"] > 0
    goals = {g["goal"] for g in report["goals"]}
    assert "websocket: at least 20,000 messages/s delivered to 5 consumers" in goals
    assert "streaming: p99 publish-to-delivery under 50 ms at 20,000 messages/s" in goals
    assert {f"{c}: median latency at 1,000 messages/s under 5 ms" for c in ("long-poll", "streaming", "websocket")} <= goals
    assert all(isinstance(g["met"], bool) for g in report["goals"])
    text = capsys.readouterr().out
    assert "amfkit bench messaging: 5 consumers" in text and "goals:" in text and "CometD" in text
    (section,) = messaging.sections(report)
    assert len(section.tables[0].rows) == 4 and len(section.tables[1].rows) == 12  # per channel; per channel and phase
    assert section.charts and any("hundred messages per second" in line for line in section.article)
    assert any("CometD" in line for line in section.findings)
    assert any("NOT met" in f or "(met)" in f for f in section.findings)


def test_options():
    quick = messaging.parse_options(["--quick"])
    assert (quick.consumers, quick.duration, quick.check_messages) == (10, 0.5, 20)
    full = messaging.parse_options([])
    assert (full.consumers, full.duration, full.rate, full.high_rate, full.window) == (100, 5.0, 1000, 20000, 16)
    assert full.channels == messaging.CHANNELS
    picked = messaging.parse_options(["--channels", "websocket,long-poll", "--consumers", "7", "--duration", "2"])
    assert (picked.channels, picked.consumers, picked.duration) == (("websocket", "long-poll"), 7, 2.0)
