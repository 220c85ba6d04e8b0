"""The gateway under abuse: a real `amfkit serve --demo` process (uvicorn, httptools,
uvloop, one worker) on 127.0.0.1, valid clients calling the echo and tile services while
other clients send malformed, truncated, oversized and slow requests.

What it proves, in one run (about 20 s; `ABUSE_SECONDS=300` runs the abuse phase that
long, and `ABUSE_REPORT=1` prints the figures):

- every valid call succeeds with the right result, with abuse and without; the p99
  latency under abuse stays under `P99_BOUND` and the slowest call under `MAX_BOUND`;
- each hostile request gets its own answer (400, 413, 415, 431, a JSON-RPC or XML-RPC
  parse error), and a connection that HTTP lets live serves a valid call next;
- slow and silent clients are cut off by the deadlines (`--header-timeout`,
  `--body-timeout`): 408 and a closed connection, or just a close for a client that
  sent nothing; clients that never read their answers cost nothing once they go;
- the server's memory stays flat: the lowest RSS after rounds 2..n is within
  `RSS_GROWTH_BOUND` of the RSS after round 1 (a leak raises every later round; heap
  fragmentation raises a round now and then, and the next one comes back down), and its
  file descriptors come back to where they were;
- the server process never restarts or exits (same pid, same start time) and logs no
  traceback.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import abuse

# Bounds, from measurements on the 2-core development machine while other jobs kept
# its load average at 5-6: under abuse the valid calls' p99 was 110-170 ms and the
# slowest 170-270 ms (without abuse: p99 10-20 ms, slowest 30-140 ms); the abusers run
# in this process, so their threads compete with the valid clients for the GIL. Server
# RSS (glibc told to map blocks of 1 MiB and more, see abuse.start_server) grew by
# 5-6 MiB in the first round and then stayed within 0.2 MiB in most runs; in others (and
# on CI) single rounds ended 2-14 MiB above that floor and the next round came back to
# it (a 300 s soak: floor 38.8 MiB, 15 of 75 rounds above it, the highest at 53.0 MiB,
# the last at 38.8). A leak of 8 KiB per request (about 2,000 a round) would raise every
# round by about 16 MiB; over a 300 s soak (about
# 150,000 requests), one of about 120 bytes per request shows.
P99_BOUND = 1.0
MAX_BOUND = 2.0
RSS_GROWTH_BOUND = 16 * 1024  # KiB, the floor of rounds 2..n over round 1
HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 2.0
ROUND_SECONDS = 4.0
QUIET_SECONDS = 3.0
# How long the valid clients may take to make their first call each (a bound on waiting
# for them, not a pause).
WARM_UP_TIMEOUT = 60.0


ABUSE_SECONDS = float(os.environ.get("ABUSE_SECONDS", "12"))


# A round takes a little more than ROUND_SECONDS (joining the abusers, waiting for the
# descriptors): the hang detector grows with a long soak.
@pytest.mark.timeout(120 + 2 * ABUSE_SECONDS)
def test_gateway_stays_up_under_abuse(tmp_path: Path) -> None:
    rounds = max(2, round(ABUSE_SECONDS / ROUND_SECONDS))
    server = abuse.start_server(tmp_path, header_timeout=HEADER_TIMEOUT, body_timeout=BODY_TIMEOUT)
    try:
        pid, started = server.pid, server.start_time()
        from amfkit.demo.services import TileService

        tiles = TileService(tmp_path / "demo.sqlite3")
        expected = {"string": tiles.getTilesAsString(2), "array": tiles.getTilesAsArray(2)}
        cases = abuse.hostile_requests()

        # Valid clients alone, then with abusers, in rounds: the clients run throughout.
        quiet = {kind: abuse.Tally() for kind in ("amf3", "amf0", "tiles", "jsonrpc")}
        loud = {kind: abuse.Tally() for kind in quiet}
        clients_stop = threading.Event()
        phase: dict[str, dict[str, abuse.Tally]] = {"now": {kind: abuse.Tally() for kind in quiet}}

        # Set once a valid client has made its first call: its connection (and for the
        # tiles, the database) is open from then on.
        connected = {kind: threading.Event() for kind in quiet}

        class Switch(abuse.Tally):
            def __init__(self, kind: str) -> None:
                self.kind = kind

            def ok(self, what: str, latency: float | None = None) -> None:
                phase["now"][self.kind].ok(what, latency)
                connected[self.kind].set()

            def error(self, what: str) -> None:
                phase["now"][self.kind].error(what)

        valid = [
            threading.Thread(target=abuse.valid_client, args=(kind, server, clients_stop, Switch(kind), expected, i), name=f"valid-{kind}")
            for i, kind in enumerate(quiet)
        ]
        for t in valid:
            t.start()
        for kind, event in connected.items():
            assert event.wait(WARM_UP_TIMEOUT), f"the {kind} client made no call in {WARM_UP_TIMEOUT} s: {phase['now'][kind].errors}"
        phase["now"] = quiet = {kind: abuse.Tally() for kind in quiet}  # counted from here
        # The valid clients' connections and the tile database are open from here on.
        fd_base = server.fds()
        time.sleep(QUIET_SECONDS)
        rss_before = server.rss_kib()
        phase["now"] = loud

        bad = abuse.Tally()
        rss: list[int] = []
        fds_after: list[int] = []
        for _ in range(rounds):
            stop = threading.Event()
            abusers = [
                threading.Thread(target=abuse.malformed_client, args=(server, stop, bad, cases)),
                threading.Thread(target=abuse.malformed_client, args=(server, stop, bad, cases[::-1])),
                threading.Thread(target=abuse.oversized_body_client, args=(server, stop, bad)),
                threading.Thread(target=abuse.slowloris, args=(server, stop, bad, 200, 0.25)),
                threading.Thread(target=abuse.slow_body, args=(server, stop, bad, 20, 0.25)),
                threading.Thread(target=abuse.silent, args=(server, stop, bad, 50)),
                threading.Thread(target=abuse.never_reads, args=(server, stop, bad, 20, 50)),
            ]
            for t in abusers:
                t.start()
            time.sleep(ROUND_SECONDS)
            stop.set()
            t_stop = time.monotonic()
            for t in abusers:
                t.join(30)
                assert not t.is_alive(), f"{t.name} did not stop"
            # The valid clients hold one connection each; the abusers' are all gone.
            fds_after.append(server.wait_fds(fd_base, 10))
            if os.environ.get("ABUSE_REPORT"):
                print(f"round {len(fds_after)}: fds back to {fds_after[-1]} {time.monotonic() - t_stop:.1f} s after the abusers stopped")
            rss.append(server.rss_kib())
        phase["now"] = quiet
        clients_stop.set()
        for t in valid:
            t.join(30)

        report(quiet, loud, bad, [rss_before, *rss], fd_base, fds_after, server)

        # The server never restarted and logged no traceback.
        assert server.proc.poll() is None, "the server exited"
        assert (server.pid, server.start_time()) == (pid, started)
        log = server.stderr()
        assert "Traceback" not in log and "ERROR" not in log, log[-3000:]
        assert f"the demo gateway answers at {server.url}" in log, log[:1000]

        # Valid clients: no errors, results checked, latency bounded.
        for name, tallies in (("without abuse", quiet), ("under abuse", loud)):
            for kind, tally in tallies.items():
                assert tally.counts["error"] == 0, (name, kind, tally.errors)
                assert tally.counts[kind] >= 10, (name, kind, tally.counts)
        latencies = [x for t in loud.values() for x in t.latencies]
        assert abuse.percentile(latencies, 99) < P99_BOUND
        assert max(latencies) < MAX_BOUND

        # Each abuse class got its answer.
        assert bad.counts["error"] == 0, bad.errors
        for case in cases:
            outcome = f"{case.name}: {case.status}, " + ("then 200" if case.keep else "closed")
            assert bad.counts[outcome] >= 1, (outcome, dict(bad.counts))
        assert bad.counts["20 MiB chunked: 413, closed"] + bad.counts["20 MiB chunked: 408, closed"] >= 1
        for outcome in ("20 MiB declared: 413, closed", "slowloris: 408, closed", "slow body: 408, closed", "silent: closed", "never reads: closed"):
            assert bad.counts[outcome] >= 1, (outcome, dict(bad.counts))

        # Memory flat, descriptors back.
        assert all(n <= fd_base for n in fds_after), (fd_base, fds_after)
        assert bad.counts["never reads: closed"] == rounds
        assert min(rss[1:]) - rss[0] < RSS_GROWTH_BOUND, rss
    finally:
        server.stop()


def report(quiet: dict[str, Any], loud: dict[str, Any], bad: Any, rss: list[int], fd_base: int, fds_after: list[int], server: Any) -> None:
    if not os.environ.get("ABUSE_REPORT"):
        return
    for name, tallies in (("without abuse", quiet), ("under abuse", loud)):
        lat = [x for t in tallies.values() for x in t.latencies]
        calls = sum(len(t.latencies) for t in tallies.values())
        errors = sum(t.counts["error"] for t in tallies.values())
        print(
            f"\n{name}: {calls} valid calls, {errors} errors; latency p50 {abuse.percentile(lat, 50) * 1e3:.1f} ms, "
            f"p99 {abuse.percentile(lat, 99) * 1e3:.1f} ms, max {max(lat) * 1e3:.1f} ms; "
            + ", ".join(f"{k} {len(t.latencies)}" for k, t in tallies.items())
        )
    print(f"server RSS (KiB) before the abuse {rss[0]}, after each round {rss[1:]}; fds: base {fd_base}, after each round {fds_after}")
    for outcome, n in sorted(bad.counts.items()):
        print(f"  {n:6d}  {outcome}")
    print("server stderr lines:", len(server.stderr().splitlines()))
    print("errors:", bad.errors)


# --- the deadlines and limits one by one, in process (fast) -----------------------------


def _gateway(**options: Any) -> Any:
    from gateway_util import EchoService

    from amfkit.remoting import Gateway

    return Gateway({"EchoService": EchoService()}, **options)


def test_body_timeout_answers_408_and_closes_on_both_paths() -> None:
    from servers import serve_asgi

    with serve_asgi(_gateway(body_timeout=0.3), http="httptools") as server:
        for content_type, query in (("application/x-amf", ""), ("application/json", ""), ("application/x-amf", "?a=1")):
            with abuse.socket.create_connection((server.host, server.port), timeout=5) as s:
                head = abuse.post(b"", content_type=content_type, length=100).replace(b"/gateway", b"/gateway" + query.encode(), 1)
                s.sendall(head + b"{")
                t0 = time.monotonic()
                status, headers, body = abuse.read_response(s, 5)
                assert (status, headers["connection"]) == (408, "close"), (content_type, query, body)
                assert 0.25 < time.monotonic() - t0 < 2.5
                assert abuse.is_closed(s, 2)
        # A body that comes in time is answered as usual, on a connection kept open.
        with abuse.socket.create_connection((server.host, server.port), timeout=5) as s:
            request = abuse.post(abuse.amf_request(3, "EchoService.echo", ["in time"]))
            s.sendall(request[:-5])
            time.sleep(0.1)
            s.sendall(request[-5:])
            buf = bytearray()
            status, _, body = abuse.read_response(s, 5, buf)
            assert status == 200 and abuse.amf_result(body) == "in time"
            s.sendall(request)
            assert abuse.amf_result(abuse.read_response(s, 5, buf)[2]) == "in time"


def test_body_timeout_is_validated() -> None:
    import pytest

    with pytest.raises(ValueError, match="body_timeout"):
        _gateway(body_timeout=0)
    assert _gateway(body_timeout=None).body_timer.start() is None


def test_serving_protocol_bounds_the_request_head() -> None:
    from servers import serve_asgi

    from amfkit import serving

    protocol = type("Short", (serving.HttpToolsProtocol,), {"header_timeout": 0.5, "max_header_size": 4096})
    with serve_asgi(_gateway(), http=protocol) as server:
        address = (server.host, server.port)
        # Silent: closed at the deadline, without an answer.
        with abuse.socket.create_connection(address, timeout=5) as s:
            t0 = time.monotonic()
            assert s.recv(100) == b""
            assert 0.4 < time.monotonic() - t0 < 2.5
        # Part of a head: 408, closed.
        with abuse.socket.create_connection(address, timeout=5) as s:
            s.sendall(b"POST /gateway HTTP/1.1\r\nHost: x\r\n")
            assert abuse.read_response(s, 5)[0] == 408 and abuse.is_closed(s, 2)
        # Too large, in one piece or in many: 431, closed.
        big = b"POST /gateway HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 5000 + b"\r\n\r\n"
        with abuse.socket.create_connection(address, timeout=5) as s:
            s.sendall(big)
            assert abuse.read_response(s, 5)[0] == 431 and abuse.is_closed(s, 2)
        with abuse.socket.create_connection(address, timeout=5) as s:
            for i in range(0, len(big) - 4, 1000):
                s.sendall(big[i : i + 1000])
                time.sleep(0.01)
            assert abuse.read_response(s, 5)[0] == 431
        # A kept-alive connection: the deadline starts again with the next request's
        # first byte, not while the connection is idle between requests.
        with abuse.socket.create_connection(address, timeout=5) as s:
            request = abuse.post(abuse.amf_request(0, "EchoService.echo", [1]))
            buf = bytearray()
            for _ in range(2):
                s.sendall(request)
                assert abuse.read_response(s, 5, buf)[0] == 200
                time.sleep(0.3)
            s.sendall(request[:10])
            assert abuse.read_response(s, 5, buf)[0] == 408
