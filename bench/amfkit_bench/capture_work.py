"""The work `amfkit bench capture` times, one piece per child process: a capture read by
`amfkit inspect --summary`, or loaded by `Gateway.from_capture` and then called; the
times and the peak memory printed as one line of JSON.

`capture.py` runs it as `python -m amfkit_bench.capture_work WORK CAPTURE ANSWER CALLS`
(this interpreter, a fresh heap): the libraries are imported first, the process's peak
resident memory is reset to its resident memory (`saves_work.reset_peak`: Linux), then
the work runs. The replay's last answer is written to ANSWER for the parent to check.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
import time
from typing import Any

from .saves_work import timed

#: The call the replay answers: recorded with this argument every 50 calls.
ARGUMENT = 7
#: How many times it is called (answered in recorded order, then the last again).
CALLS = 20


def inspect(path: str, answer: str, calls: int) -> dict[str, Any]:
    """`amfkit inspect CAPTURE --summary`, its output kept in memory."""
    from amfkit.cli.main import main

    with contextlib.redirect_stdout(io.StringIO()) as out:
        status = main(["inspect", path, "--summary"])
    return {"status": status, "summary": out.getvalue().splitlines()[:3]}


def replay(path: str, answer: str, calls: int) -> dict[str, Any]:
    """`Gateway.from_capture(CAPTURE)` (timed apart as the load), then the same call
    `calls` times through the gateway's request path, each timed."""
    from amfkit.remoting import Gateway, packet

    t0, c0 = time.perf_counter(), time.process_time()
    gateway = Gateway.from_capture(path)
    load = {"load_s": time.perf_counter() - t0, "load_cpu_s": time.process_time() - c0}
    request = packet.encode(packet.Envelope(3, bodies=[packet.Body("TileService.getTiles", "/1", [ARGUMENT])]))
    headers = [("content-type", "application/x-amf")]
    times: list[float] = []

    async def call() -> tuple[int, bytes]:
        status, body = 0, b""
        for _ in range(calls):
            t = time.perf_counter()
            status, _, body = await gateway.respond("POST", "/gateway", headers, request)
            times.append(time.perf_counter() - t)
        return status, body

    status, body = asyncio.run(call())
    with open(answer, "wb") as f:
        f.write(body)
    times.sort()
    return {**load, "status": status, "answer_bytes": len(body), "call_ms_min": times[0] * 1e3, "call_ms_median": times[len(times) // 2] * 1e3}


WORK = {"inspect": inspect, "replay": replay}


def measure(work: str, path: str, answer: str, calls: int) -> dict[str, Any]:
    """Run `work` once in this process: its wall and CPU seconds, its figures, the peak
    resident memory during it and its rise above the resident memory before it."""
    import amfkit.capture.pcap  # noqa: F401 - imported before the clock (dpkt, h11)
    import amfkit.cli.main  # noqa: F401
    import amfkit.remoting  # noqa: F401

    facts, figures = timed(lambda: WORK[work](path, answer, calls))
    return {**facts, **figures}


def main(argv: list[str]) -> int:
    work, path, answer, calls = argv
    if work not in WORK:
        print(f"unknown work {work!r}; choose from {', '.join(WORK)}", file=sys.stderr)
        return 2
    print(json.dumps(measure(work, path, answer, int(calls))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
