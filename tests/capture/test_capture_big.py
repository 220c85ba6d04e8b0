"""The largest capture in its quick form (`amfkit bench capture --quick`; the full one is a
56 MB pcap, docs/benchmarks.md, "The largest capture"): a pcap of 200 calls answered by
26 KB packets is read by `amfkit inspect --summary` and by `Gateway.from_capture`, and a
replayed call answers; neither holds the decoded answers (memory stays near the
capture's size), and each child's peak memory is its own, whatever the parent holds."""

from __future__ import annotations

from amfkit_bench import capture


def test_quick_capture_bench() -> None:
    # The parent holds a large heap, as the full test suite's process does: the children's
    # peak must not start from it (getrusage's ru_maxrss carries it through fork and exec).
    ballast = bytearray(160 * 2**20)
    ballast[:: 4096] = b"\x01" * len(ballast[:: 4096])
    report = capture.run(capture.Options(calls=200, repeat=1))
    del ballast
    assert report["ok"], report["results"]
    size_mb = report["capture"]["pcap_bytes"] / 1e6
    assert 5 < size_mb < 7
    inspect, replay = report["results"]
    assert inspect["summary"][0].startswith("# 200 AMF calls, 0 faults, 200 HTTP exchanges")
    assert replay["answer_bytes"] > 20_000
    # Python and amfkit take about 40 MB; the capture is held about four times over while
    # it is read (the file, its streams, its bodies, copies). Holding every decoded answer, as
    # an earlier version did, took 107 MB here.
    for part in (inspect, replay):
        assert part["peak_reset"] is True
        assert part["peak_rss_mb"] < 45 + 8 * size_mb, report["results"]
