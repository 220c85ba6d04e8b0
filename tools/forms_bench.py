#!/usr/bin/env python3
"""Input forms: what each costs to detect and to take off, and a body decoded through
each. A remoting packet (Flex's shape: a version-3 packet whose body switches to AMF3,
holding an Array of records) is written in every form `amfkit decode` reads, then
`amfkit.forms.detect`, `amfkit.forms.unwrap` and `amfkit.payload.read` (which decodes
it) are timed on it.

    .venv/bin/python tools/forms_bench.py                  # a 1 MB body in every form
    .venv/bin/python tools/forms_bench.py --size 32M       # the largest body measured
    .venv/bin/python tools/forms_bench.py --json out/forms.json

Each figure is the best of `--repeat` runs (a 2-core machine shared with other work is
noisy; the best run is the one least disturbed). `run()` returns the figures as a dict
(tests/codec/test_forms_bench.py runs it in a quick form and checks what it decoded).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import sys
import time
import zlib
from typing import Any, Callable

FORMS: dict[str, Callable[[bytes], bytes]] = {
    "raw": lambda d: d,
    "hex": lambda d: d.hex(" ").encode(),
    "base64": lambda d: base64.encodebytes(d),
    "list": lambda d: ("[" + ", ".join(map(str, d)) + "]").encode(),
    "zlib": lambda d: zlib.compress(d, 6),
    "gzip": lambda d: gzip.compress(d, 6),
    "deflate": lambda d: zlib.compress(d, 6)[2:-4],
    "http": lambda d: b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amf\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(gzip.compress(d, 1))
    + gzip.compress(d, 1),
}


def build_packet(size: int) -> bytes:
    """A version-3 packet of about `size` bytes: one body, an Array of records (an id,
    a name, a price, a flag and a note), written by amfkit as Flash Player writes AMF3."""
    from amfkit.remoting import packet

    records = []
    i = 0
    note = "x" * 40
    per = 80  # about the bytes of one record after the first
    for i in range(max(1, size // per)):
        records.append({"id": i, "name": f"item-{i}", "price": i * 0.25, "active": i % 2 == 0, "note": note + str(i)})
    env = packet.Envelope(3, bodies=[packet.Body("/1/onResult", "null", records)])
    return packet.encode(env)


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def run(size: int = 1_000_000, *, repeat: int = 3, forms: list[str] | None = None) -> dict[str, Any]:
    """Figures for a packet of about `size` bytes in each form: input bytes, the
    seconds `detect`, `unwrap` and `payload.read` took, and what was read."""
    from amfkit import forms as amf_forms
    from amfkit import payload

    body = build_packet(size)
    out: dict[str, Any] = {"packet_bytes": len(body), "repeat": repeat, "forms": {}}
    max_layer = max(amf_forms.DEFAULT_MAX_SIZE, 2 * len(body))
    for name in forms or list(FORMS):
        data = FORMS[name](body)
        detect_s, form = _best(lambda: amf_forms.detect(data), repeat)
        unwrap_s, raw = _best(lambda: amf_forms.unwrap(data, max_size=max_layer), repeat)
        read_s, p = _best(lambda: payload.read(data, max_inflate=max_layer), repeat)
        out["forms"][name] = {
            "input_bytes": len(data),
            "detected": form,
            "detect_s": detect_s,
            "unwrap_s": unwrap_s,
            "read_s": read_s,
            "same_bytes": raw == body,
            "read": p.describe(),
            "records": len(p.value.bodies[0].value),
        }
        del data, raw, p
    return out


def _size(text: str) -> int:
    units = {"K": 1_000, "M": 1_000_000, "G": 1_000_000_000}
    text = text.strip().upper()
    if text[-1:] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1M", help="the packet's size (1M, 32M, ...; default 1M)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure, the best kept (default 3)")
    ap.add_argument("--form", action="append", choices=list(FORMS), help="measure only these forms (repeatable)")
    ap.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = ap.parse_args(argv)
    result = run(_size(args.size), repeat=args.repeat, forms=args.form)
    print(f"packet: {result['packet_bytes']:,} bytes; best of {args.repeat}")
    print(f"{'form':8} {'input bytes':>14} {'detect':>10} {'unwrap':>10} {'read':>10}  read as")
    for name, f in result["forms"].items():
        print(
            f"{name:8} {f['input_bytes']:>14,} {f['detect_s'] * 1e3:>8.3f}ms {f['unwrap_s'] * 1e3:>8.1f}ms {f['read_s'] * 1e3:>8.1f}ms  {f['read']}"
            + ("" if f["same_bytes"] else "  (NOT THE SAME BYTES)")
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
    return 0 if all(f["same_bytes"] for f in result["forms"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
