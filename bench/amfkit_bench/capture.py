"""`amfkit bench capture`: the largest capture (docs/benchmarks.md, "The largest capture"):
a pcap of one keep-alive connection carrying 2,000 AMF3 calls, each answered by a packet
of 1,000 objects (26 KB), 56 MB in all, read by `amfkit inspect --summary` and loaded by
`Gateway.from_capture`, then one recorded call replayed; every run a child process of its
own (time, peak memory), every run's output checked.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

from . import capture_work
from . import peers as peer_libraries
from .model import Bar, Chart, Section, Table, experiment_main, options_dict
from .text import fmt_figure, machine_lines, text_table, waited
from .timing import Stats, machine_facts

__all__ = [
    "COMPARE_KEYS",
    "NAME",
    "SUMMARY",
    "Options",
    "answer_value",
    "build_pcap",
    "format_report",
    "main",
    "parse_options",
    "run",
    "sections",
]

NAME = "capture"
SUMMARY = (
    "the largest capture: a 56 MB pcap of 2,000 keep-alive AMF3 calls read by amfkit inspect --summary "
    "and Gateway.from_capture, one call replayed (time, peak memory, a child process per run)"
)
COMPARE_KEYS = ("case", "calls")

#: The capture of the issue's closing note: 2,000 calls answered by 1,000 objects each.
CALLS = 2000
ROWS = 1000
QUICK_CALLS = 200

CLIENT, SERVER = ("10.0.0.1", 51234), ("10.0.0.2", 80)
#: A run that takes longer than this is stopped and reported as failed.
CHILD_TIMEOUT_S = 900

CASES = (
    ("inspect", "amfkit inspect --summary"),
    ("replay", "Gateway.from_capture"),
)


@dataclasses.dataclass
class Options:
    calls: int = CALLS
    rows: int = ROWS
    repeat: int = 3
    quick: bool = False
    json_path: str | None = None
    progress: Callable[..., None] | None = None


# --------------------------------------------------------------------------- the capture


def answer_value(rows: int, call: int) -> list[dict[str, Any]]:
    """The result recorded for call number `call`: `rows` tiles (an id, a position, a
    colour and a kind), each call's positions its own."""
    return [{"id": i, "x": (i * 7 + call) % 640, "y": (i * 13) % 480, "colour": f"{(i * 2654435761) % 0xFFFFFF:06x}", "kind": i % 4} for i in range(rows)]


def build_pcap(path: str, calls: int = CALLS, rows: int = ROWS) -> int:
    """Write the capture to `path` (Ethernet frames of 1,460 bytes of TCP payload, one
    connection, call `n` sending `TileService.getTiles(n % 50)`); its size in bytes."""
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


def replayed_call(calls: int) -> int:
    """The recorded call whose answer the replay gives last: the call with the argument
    `capture_work.ARGUMENT` is answered in recorded order, then with the last again."""
    recorded = [n for n in range(calls) if n % 50 == capture_work.ARGUMENT]
    return recorded[min(capture_work.CALLS, len(recorded)) - 1]


# --------------------------------------------------------------------------- one run


def _child(work: str, path: str, answer: str) -> dict[str, Any]:
    """`work` once in a fresh process of this interpreter: the figures capture_work prints.
    RuntimeError with the child's last words when it fails."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "amfkit_bench.capture_work", work, path, answer, str(capture_work.CALLS)],
            capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{work} took over {CHILD_TIMEOUT_S} s") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{work} exited with {done.returncode}: {' | '.join(tail)}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _check(work: str, figures: dict[str, Any], answer: str, calls: int, rows: int) -> str | None:
    """None when the run did what it should, else why not: inspect found every call,
    without a fault, in one exchange each; the replay answered the recorded result."""
    if work == "inspect":
        head = f"# {calls} AMF calls, 0 faults, {calls} HTTP exchanges (0 not AMF)"
        summary = figures.get("summary") or []
        if figures.get("status") != 0 or summary[:1] != [head]:
            return f"inspect exited with {figures.get('status')}, printing {summary[:1]} (expected {head!r})"
        if len(summary) < 3 or summary[2].split()[:2] != ["TileService.getTiles", str(calls)]:
            return f"inspect's summary row is {summary[2:3]}, expected TileService.getTiles with {calls} calls"
        return None
    from amfkit.remoting import packet

    if figures.get("status") != 200:
        return f"the replayed call was answered with HTTP {figures.get('status')}"
    with open(answer, "rb") as f:
        got = packet.decode(f.read())
    expected = answer_value(rows, replayed_call(calls))
    bodies = [(b.target, b.value) for b in got.bodies]
    if bodies != [("/1/onResult", expected)]:
        return f"the replay answered {len(bodies)} bodies, not the result recorded for call {replayed_call(calls)}"
    return None


# --------------------------------------------------------------------------- the run


def run(options: Options) -> dict[str, Any]:
    """Write the capture, then per case `repeat` runs, each in a fresh child process and
    checked; return the report (JSON-ready)."""
    progress = options.progress or (lambda message, done=None, total=None: None)
    machine = machine_facts(peer_libraries.package_versions("amfkit"))
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    total, done = len(CASES) * options.repeat, 0
    with tempfile.TemporaryDirectory(prefix="amfkit-bench-capture-") as tmp:
        path = os.path.join(tmp, "big.pcap")
        answer = os.path.join(tmp, "answer.amf")
        progress(f"writing a pcap of {options.calls:,} calls", 0, total)
        t0 = time.perf_counter()
        size = build_pcap(path, options.calls, options.rows)
        built = time.perf_counter() - t0
        for work, case in CASES:
            row: dict[str, Any] = {"case": case, "calls": options.calls, "pcap_bytes": size}
            runs: list[dict[str, Any]] = []
            try:
                for attempt in range(options.repeat):
                    progress(f"{case}: run {attempt + 1}/{options.repeat}", done, total)
                    figures = _child(work, path, answer)
                    done += 1
                    problem = _check(work, figures, answer, options.calls, options.rows)
                    if problem:
                        raise RuntimeError(problem)
                    runs.append(figures)
            except Exception as exc:  # noqa: BLE001 - a failed case is reported, not timed
                row["check"] = False
                row["error"] = str(exc)[:500]
            else:
                row["check"] = True
                seconds = [r["load_s"] if work == "replay" else r["wall_s"] for r in runs]
                cpu = [r["load_cpu_s"] if work == "replay" else r["cpu_s"] for r in runs]
                row["time"] = {"wall_ms": Stats.of(seconds).to_ms(), "cpu_ms": Stats.of(cpu).to_ms(), "repeat": len(runs), "warmup": 0}
                peaks = [r["peak_rss_mb"] for r in runs if r.get("peak_rss_mb") is not None]
                growth = [r["peak_rss_growth_mb"] for r in runs if r.get("peak_rss_growth_mb") is not None]
                row["peak_rss_mb"] = max(peaks) if peaks else None
                row["peak_rss_growth_mb"] = max(growth) if growth else None
                # False where the peak could not be reset before the work (not Linux).
                row["peak_reset"] = all(r.get("peak_reset") for r in runs)
                if work == "replay":
                    call = Stats.of([r["call_ms_median"] for r in runs])  # in ms already
                    row["call_ms"] = {"median": call.median, "min": call.min, "max": call.max}
                    row["answer_bytes"] = runs[-1]["answer_bytes"]
                else:
                    row["summary"] = runs[-1]["summary"]
            rows.append(row)
    progress("done", total, total)
    return {
        "experiment": NAME,
        "summary": SUMMARY,
        "ok": all(row["check"] for row in rows),
        "options": options_dict(options),
        "machine": machine,
        "elapsed_s": round(time.perf_counter() - started, 3),
        "capture": {"calls": options.calls, "rows": options.rows, "pcap_bytes": size, "build_s": round(built, 3)},
        "results": rows,
    }


# --------------------------------------------------------------------------- report


def _seconds_cell(row: dict[str, Any]) -> str:
    t = row["time"]["wall_ms"]
    mark = "*" if waited(row["time"]) else ""
    return f"{mark}{fmt_figure(t['median'] / 1e3)} ({fmt_figure(t['min'] / 1e3)}-{fmt_figure(t['max'] / 1e3)})"


HEADERS = ["case", "seconds (min-max)", "CPU s", "peak RSS MB", "peak memory +MB", "one replayed call ms", "check"]


def _table_rows(report: dict[str, Any]) -> list[list[Any]]:
    out = []
    for row in report["results"]:
        if not row.get("check"):
            out.append([row["case"], "-", "-", "-", "-", "-", f"FAILED {row.get('error', '')}"])
            continue
        peak, growth = row.get("peak_rss_mb"), row.get("peak_rss_growth_mb")
        call = row.get("call_ms")
        out.append([
            row["case"],
            _seconds_cell(row),
            fmt_figure(row["time"]["cpu_ms"]["median"] / 1e3),
            "-" if peak is None else fmt_figure(peak),
            "-" if growth is None else fmt_figure(growth),
            "-" if call is None else fmt_figure(call["median"]),
            "ok",
        ])  # fmt: skip
    return out


def _intro(report: dict[str, Any]) -> str:
    c, o = report["capture"], report["options"]
    return (
        f"A pcap of {c['pcap_bytes'] / 1e6:.1f} MB: one keep-alive TCP connection (Ethernet frames of 1,460 bytes of payload) "
        f"carrying {c['calls']:,} AMF3 calls, each answered by a packet of {c['rows']:,} objects. "
        f"`amfkit inspect --summary` reads it (every call paired with its answer); `Gateway.from_capture` loads it "
        f"(its time is the load's), then answers one recorded call {capture_work.CALLS} times through its request path "
        f"(the median of those is the replayed call's time). Every run is a child process of its own (imports not timed): "
        f"{'the median of ' + str(o['repeat']) + ' runs (min-max)' if o['repeat'] > 1 else 'one run'}, each checked "
        f"(inspect's summary counts every call; the replay's answer is the recorded result). Peak memory: the process's peak "
        f"resident memory during the work (reset to its resident memory before it, Linux), and its rise above that."
    )


def format_report(report: dict[str, Any]) -> str:
    lines = [f"amfkit bench capture: {_intro(report)}", ""]
    lines += text_table(HEADERS, _table_rows(report), set(range(1, len(HEADERS) - 1)))
    lines += machine_lines(report)
    return "\n".join(lines)


def _findings(report: dict[str, Any]) -> list[str]:
    c = report["capture"]
    found = []
    for row in report["results"]:
        if not row.get("check"):
            found.append(f"{row['case']} FAILED: {row.get('error', '')}")
            continue
        seconds = row["time"]["wall_ms"]["median"] / 1e3
        text = f"{row['case']} on the {c['pcap_bytes'] / 1e6:.0f} MB capture of {c['calls']:,} calls: {fmt_figure(seconds)} s"
        if row.get("peak_rss_mb") is not None:
            text += f", peak memory {fmt_figure(row['peak_rss_mb'])} MB"
            if row.get("peak_rss_growth_mb") is not None:
                growth = row["peak_rss_growth_mb"]
                text += f" ({fmt_figure(growth)} MB above the process before it: {growth * 2**20 / c['pcap_bytes']:.1f}x the file)"
        if row.get("call_ms"):
            text += f"; one replayed call {fmt_figure(row['call_ms']['median'])} ms"
        found.append(text + ".")
    return found


def sections(report: dict[str, Any]) -> list[Section]:
    good = [row for row in report["results"] if row.get("check")]
    charts = [
        Chart("seconds to read the capture (lower is better)", "seconds",
              [Bar(row["case"], row["time"]["wall_ms"]["median"] / 1e3, row["time"]["wall_ms"]["min"] / 1e3, row["time"]["wall_ms"]["max"] / 1e3) for row in good]),
    ]  # fmt: skip
    memory = [row for row in good if row.get("peak_rss_mb") is not None]
    if memory:
        charts.append(Chart("peak memory (lower is better)", "MB", [Bar(row["case"], float(row["peak_rss_mb"])) for row in memory]))
    c = report["capture"]
    return [
        Section(
            f"The largest capture: {c['pcap_bytes'] / 1e6:.0f} MB, {c['calls']:,} calls",
            _intro(report),
            [Table(HEADERS, _table_rows(report))],
            charts,
            findings=_findings(report),
        )
    ]


# --------------------------------------------------------------------------- command line


def parse_options(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="amfkit bench capture", description=SUMMARY)
    p.add_argument("--quick", action="store_true", help=f"{QUICK_CALLS:,} calls (a 5.6 MB pcap), one run per case (a correctness run)")
    p.add_argument("--calls", type=int, help=f"calls in the capture (default {CALLS:,})")
    p.add_argument("--rows", type=int, help=f"objects in each answer (default {ROWS:,})")
    p.add_argument("--repeat", type=int, help="runs per case (default 3; 1 with --quick)")
    p.add_argument("--json", dest="json_path", help="write the report as JSON")
    a = p.parse_args(argv)
    calls = a.calls if a.calls is not None else (QUICK_CALLS if a.quick else CALLS)
    rows = a.rows if a.rows is not None else ROWS
    repeat = a.repeat if a.repeat is not None else (1 if a.quick else 3)
    for name, value in (("--calls", calls), ("--rows", rows), ("--repeat", repeat)):
        if value < 1:
            p.error(f"{name} must be at least 1")
    if calls <= capture_work.ARGUMENT:
        p.error(f"--calls must be more than {capture_work.ARGUMENT} (the replayed call's argument is recorded at call {capture_work.ARGUMENT})")
    return Options(calls=calls, rows=rows, repeat=repeat, quick=a.quick, json_path=a.json_path)


def main(argv: list[str] | None = None) -> int:
    """`amfkit bench capture [options]`: print the report; 0 if every check passed, else 1."""
    return experiment_main(argv, parse_options, run, format_report)


if __name__ == "__main__":
    sys.exit(main())
