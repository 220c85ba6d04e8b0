"""The largest-capture timing in its quick form (tools/capture_big_bench.py; `make
bench-capture` runs the full 56 MB one): a pcap of 200 calls answered by 26 KB packets
is read by `amfkit inspect --summary` and by `Gateway.from_capture`, and a replayed call
answers; neither holds the decoded answers (memory stays near the capture's size)."""

from __future__ import annotations

import sys

from repo import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import capture_big_bench  # noqa: E402


def test_quick_capture_bench() -> None:
    figures = capture_big_bench.run(calls=200)
    size_mb = figures["pcap_bytes"] / 1e6
    assert 5 < size_mb < 7
    inspect, replay = figures["inspect"], figures["replay"]
    assert inspect["status"] == 0
    assert inspect["summary"][0].startswith("# 200 AMF calls, 0 faults, 200 HTTP exchanges")
    assert replay["answer_bytes"] > 20_000
    # Python and amfkit take about 40 MB; the capture is held about four times over while
    # it is read (the file, its streams, its bodies, copies). Holding every decoded answer, as
    # an earlier version did, took 107 MB here.
    for part in (inspect, replay):
        assert part["peak_mb"] < 45 + 8 * size_mb, figures
