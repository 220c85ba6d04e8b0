#!/usr/bin/env python3
"""The largest capture: a pcap of one keep-alive connection carrying CALLS AMF3 calls,
each answered by a packet of ROWS objects (about 26 KB), read by `amfkit inspect
--summary` and by `Gateway.from_capture`, then one call replayed; each in a child process
of its own (wall time and peak resident memory).

    .venv/bin/python tools/capture_big_bench.py              # 2,000 calls, a 56 MB pcap
    .venv/bin/python tools/capture_big_bench.py --quick      # 200 calls, 5.6 MB
    .venv/bin/python tools/capture_big_bench.py --json out/capture-big.json

`make bench-capture` runs the full form; tests/capture/test_capture_big.py the quick one.
`build_pcap()` writes the capture (frames of 1,460 bytes, as Ethernet carries them).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

CALLS = 2000
ROWS = 1000

CLIENT, SERVER = ("10.0.0.1", 51234), ("10.0.0.2", 80)


def answer_value(rows: int, call: int) -> list[dict[str, Any]]:
    return [{"id": i, "x": (i * 7 + call) % 640, "y": (i * 13) % 480, "colour": f"{(i * 2654435761) % 0xFFFFFF:06x}", "kind": i % 4} for i in range(rows)]


def build_pcap(path: str, calls: int = CALLS, rows: int = ROWS) -> int:
    """Write the capture to `path`; returns its size in bytes."""
    import dpkt  # type: ignore[import-untyped]

    from amfkit.remoting import packet

    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f)
        seq = {CLIENT: 1000, SERVER: 900_000}
        t = [1_700_000_000.0]

        def send(src: tuple[str, int], data: bytes, flags: int = dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, advance: int | None = None) -> None:
            dst = SERVER if src == CLIENT else CLIENT
            for i in range(0, max(len(data), 1), 1460):
                piece = data[i : i + 1460]
                tcp = dpkt.tcp.TCP(sport=src[1], dport=dst[1], seq=seq[src], ack=seq[dst], flags=flags, data=piece, win=65535)
                ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]), p=6, data=tcp, ttl=64)
                eth = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
                t[0] += 0.0001
                w.writepkt(bytes(eth), ts=t[0])
                seq[src] = (seq[src] + (len(piece) if advance is None else advance)) % (1 << 32)

        send(CLIENT, b"", dpkt.tcp.TH_SYN, advance=1)
        send(SERVER, b"", dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, advance=1)
        for n in range(calls):
            body = packet.encode(packet.Envelope(3, bodies=[packet.Body("TileService.getTiles", "/1", [n % 50])]))
            send(CLIENT, b"POST /gateway HTTP/1.1\r\nHost: game.example\r\nContent-Type: application/x-amf\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            answer = packet.encode(packet.Envelope(3, bodies=[packet.Body("/1/onResult", "null", answer_value(rows, n))]))
            send(SERVER, b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amf\r\nContent-Length: %d\r\n\r\n" % len(answer) + answer)
    return os.path.getsize(path)


_CHILD = r"""
import json, resource, sys, time
kind, path = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
out = {}
if kind == "inspect":
    import io, contextlib
    from amfkit.cli.main import main
    with contextlib.redirect_stdout(io.StringIO()) as buf:
        status = main(["inspect", path, "--summary"])
    out["status"] = status
    out["summary"] = buf.getvalue().splitlines()[:3]
else:
    import asyncio
    from amfkit.remoting import Gateway, packet
    gateway = Gateway.from_capture(path)
    out["load_s"] = time.perf_counter() - t0
    request = packet.encode(packet.Envelope(3, bodies=[packet.Body("TileService.getTiles", "/1", [7])]))
    times = []
    headers = [("content-type", "application/x-amf")]

    async def calls():
        for _ in range(20):
            t1 = time.perf_counter()
            status, _, body = await gateway.respond("POST", "/gateway", headers, request)
            times.append(time.perf_counter() - t1)
        return status, body

    status, body = asyncio.run(calls())
    assert status == 200 and len(packet.decode(body).bodies[0].value) > 0
    out["call_ms"] = min(times) * 1000
    out["answer_bytes"] = len(body)
out["seconds"] = time.perf_counter() - t0
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def measure(kind: str, path: str) -> dict[str, Any]:
    """Run `kind` ("inspect" or "replay") on the capture in a child process."""
    out = subprocess.run([sys.executable, "-c", _CHILD, kind, path], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run(calls: int = CALLS, rows: int = ROWS) -> dict[str, Any]:
    """Build the capture in a temporary folder and measure both; the figures as a dict."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.pcap")
        t0 = time.perf_counter()
        size = build_pcap(path, calls, rows)
        built = time.perf_counter() - t0
        return {"calls": calls, "rows": rows, "pcap_bytes": size, "build_s": built, "inspect": measure("inspect", path), "replay": measure("replay", path)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help=f"{CALLS // 10} calls instead of {CALLS}")
    p.add_argument("--calls", type=int, help="the number of calls (overrides --quick)")
    p.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = p.parse_args(argv)
    calls = args.calls or (CALLS // 10 if args.quick else CALLS)
    figures = run(calls)
    mb = figures["pcap_bytes"] / 1e6
    i, r = figures["inspect"], figures["replay"]
    print(f"capture: {figures['calls']} calls, {mb:.1f} MB pcap (written in {figures['build_s']:.1f} s)")
    print(f"amfkit inspect --summary   {i['seconds']:7.2f} s   peak {i['peak_mb']:6.0f} MB")
    print(f"Gateway.from_capture       {r['load_s']:7.2f} s   peak {r['peak_mb']:6.0f} MB   one replayed call {r['call_ms']:.2f} ms")
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
