"""Messaging: publish-to-delivery latency and messages delivered per second, through the
gateway to N Flex consumers on each channel (long-polling, HTTP streaming, WebSocket, and
plain polling as a reference).

    amfkit bench messaging [--quick] [--consumers N] [--duration S] [--channels LIST] [--json PATH]

The server is a real uvicorn process (httptools, uvloop, one worker, no access log) on
127.0.0.1 serving `amfkit.benchlab.apps:messaging`: a `Gateway` with `Messaging(["prices"])`
and one service, `MessagingBench.publish(count, first, size)`, which publishes `count`
InstrumentPrice messages (the Protocol Buffers article's Small one by default;
docs/benchmarks.md names the articles) with `context.publish`, each stamped with the
server's `time.time()` in its `sent` header just before it is published and numbered in
its `seq` header. A fresh server runs for each channel (plain polling needs
`poll_wait=0`).

The load generator is one other process on the same machine (asyncio on uvloop): N raw
consumers, each its own Flex client (ping, subscribe, then its channel), written
directly on asyncio transports (HTTP/1.1 with chunked bodies, WebSocket frames) with
`amfkit.amf3` decoding every message, so that neither the Python client API nor a
general HTTP library sits between the wire and the figures; and one publisher calling
`MessagingBench.publish` over a keep-alive HTTP connection. The consumers announce
`DSMessagingVersion` on their ping as Flex does, so the server pushes the small forms
(`DSA`). Publishing through a service's `context.publish` measures the server's delivery
path alone (broker fan-out, each copy's encoding, the channel's writes, uvicorn); a
Producer's sends would add the decoding of each sent message to the publisher's side.

For each channel, in order:

1. **check** (untimed): a few dozen messages in bursts; every consumer must receive
   every one exactly once, in order, addressed to it, with the right body;
2. **fixed rates**: `--rate` messages/s delivered in total (default 1,000: 10 published
   messages/s to 100 consumers), then `--high-rate` (default 20,000), `--duration`
   seconds each, published on a schedule: the publish-to-delivery latency of every copy,
   median and p99 (receipt time taken when its bytes reach the consumer), and the
   median latency of each message's first and last copy (the fan-out's spread);
3. **the most**: the publisher keeps `--window` messages in flight (published, not yet
   received by every consumer) for `--duration` seconds: messages delivered per second
   in total, and the latency at that load. In-flight copies are window x N, so the
   latency there is about window x N / rate: the window is large enough to keep the
   server busy, small enough to keep queues short. Plain polling gets `POLLING_WINDOW`
   (half the queue bound): its poll interval is its limit.

Every phase's copies are checked for order and gaps; the server's and the load
generator's CPU use (from /proc and `time.process_time`) are reported beside the
figures (they share the machine's cores).

Goals (issue 12): at least 20,000 messages/s delivered in total to 100 WebSocket
consumers and to 100 streaming consumers (the most), with p99 publish-to-delivery under
50 ms (measured at the fixed 20,000 messages/s); median latency at 1,000 messages/s under
5 ms on every channel but plain polling. The anchor: CometD's published long-polling
figures (median 2-4 ms up to 10,000 messages/s).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any, Callable, Optional

from . import peers, timing
from .servers import uvicorn
from .model import Bar, Chart, Section, Table, experiment_main, options_dict
from .text import fmt_figure, machine_lines, text_table

__all__ = ["CHANNELS", "COMPARE_KEYS", "NAME", "SUMMARY", "Options", "format_report", "main", "parse_options", "run", "sections"]

NAME = "messaging"
#: The article whose messages this experiment sends (docs/benchmarks.md).
ARTICLE = "the Protocol Buffers article"
SUMMARY = (
    "Flex messaging through the gateway: publish-to-delivery latency and messages/s to N "
    "consumers on long-polling, HTTP streaming, WebSocket (and plain polling)"
)

#: Channel keys, in report order: plain polling is the reference row.
CHANNELS = ("long-poll", "streaming", "websocket", "polling")
#: The row fields that identify a case for `amfkit bench compare`.
COMPARE_KEYS = ("channel", "consumers", "message")

GOAL_RATE = 20_000  # messages/s delivered in total, WebSocket and streaming
GOAL_P99_MS = 50.0  # p99 publish-to-delivery at GOAL_RATE
GOAL_FIXED_RATE = 1_000  # messages/s delivered in total
GOAL_MEDIAN_MS = 5.0  # at that rate, every channel but plain polling
GOAL_CONSUMERS = 100

#: CometD's published long-polling figures, the anchor (not measured here).
COMETD = "CometD (Java, long-polling): median latency 2-4 ms up to 10,000 messages/s"

#: What the Protocol Buffers article needed of its messages, and its AMF3 Small size.
SEED: dict[str, Any] = {
    "source": f"{ARTICLE}: Protocol Buffers vs AMF3 in Flex, April 2010",
    "need": "more than a hundred messages per second, shown with minimal latency",
    "bytes": {"AMF3": (198, 290, 371)},
}

#: Plain polling's window in the load phase: half the server's queue bound, so that the
#: poll interval, not the window, limits what a consumer gets per poll.
POLLING_WINDOW = 500

_PATH = "/gateway"
_DESTINATION = "prices"
_SERVER_WAIT = 30.0


@dataclasses.dataclass
class Options:
    channels: tuple[str, ...] = CHANNELS
    consumers: int = GOAL_CONSUMERS
    duration: float = 5.0
    rate: float = GOAL_FIXED_RATE
    high_rate: float = GOAL_RATE
    window: int = 16
    size: str = "small"
    poll_interval: float = 0.1
    check_messages: int = 50
    quick: bool = False
    json_path: Optional[str] = None
    #: progress(message, done=None, total=None), called before each step
    progress: Optional[Callable[..., None]] = dataclasses.field(default=None, repr=False, compare=False)


# --------------------------------------------------------------------------- the server


@contextlib.contextmanager
def _server(env: dict[str, str], logs: list[str]) -> Iterator[tuple[int, int]]:
    """uvicorn serving the messaging gateway in its own process: yields (port, pid); what
    it wrote to standard error is added to `logs` when it stops."""
    server = None
    try:
        with uvicorn("amfkit.benchlab.apps:messaging", env=env, args=["--timeout-graceful-shutdown", "2"]) as server:
            yield server.port, server.pid
    finally:
        if server is not None and server.log:
            logs.append(server.log[-2000:])


def _missing_channel(channel: str) -> str | None:
    """Why the server cannot run `channel` here, or None when it can."""
    import importlib.util

    module = {"streaming": "amfkit.messaging.streaming", "websocket": "amfkit.messaging.websocket"}.get(channel)
    if module is not None and importlib.util.find_spec(module) is None:
        return f"this amfkit has no {channel} channel ({module} is missing)"
    if channel == "websocket" and importlib.util.find_spec("websockets") is None:
        return "the websockets package is not installed (uvicorn's WebSocket protocol)"
    return None


# --------------------------------------------------------------------------- one channel


def _run_channel(channel: str, options: Options, workdir: str, logs: list[str]) -> dict[str, Any]:
    """Start a server, run the load generator against it, return the channel's row (a
    failure is the row's `error`, never an exception)."""
    row: dict[str, Any] = {"channel": channel, "consumers": options.consumers, "message": options.size}
    missing = _missing_channel(channel)
    if missing:
        row.update(check=False, error=missing)
        return row
    env = {"AMFKIT_BENCH_POLL_WAIT": "0" if channel == "polling" else "25", "AMFKIT_BENCH_QUEUE_SIZE": "1000"}
    spec = {
        "channel": channel,
        "consumers": options.consumers,
        "duration": options.duration,
        "rate": options.rate,
        "high_rate": options.high_rate,
        "window": options.window,
        "size": options.size,
        "poll_interval": options.poll_interval,
        "check_messages": options.check_messages,
    }
    spec_path = os.path.join(workdir, f"{channel}.spec.json")
    out_path = os.path.join(workdir, f"{channel}.out.json")
    limit = 60 + 6 * options.duration + options.consumers * 0.1
    try:
        with _server(env, logs) as (port, pid):
            spec.update(port=port, server_pid=pid, out=out_path)
            with open(spec_path, "w", encoding="utf-8") as f:
                json.dump(spec, f)
            cmd = [sys.executable, "-m", "amfkit.benchlab.messaging", "--load-generator", spec_path]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        row.update(check=False, error=f"the load generator did not finish within {limit:.0f} s")
        return row
    except RuntimeError as exc:  # the server did not start
        row.update(check=False, error=str(exc)[:600])
        return row
    if done.returncode != 0 or not os.path.exists(out_path):
        row.update(check=False, error=f"the load generator failed ({done.returncode}): {(done.stderr or done.stdout)[-600:]}")
        return row
    with open(out_path, encoding="utf-8") as f:
        result = json.load(f)
    row.update(result)
    return row


def run(options: Options) -> dict[str, Any]:
    machine = timing.machine_facts(peers.package_versions("amfkit", "uvicorn", "httptools", "uvloop", "websockets"))
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    logs: list[str] = []
    with tempfile.TemporaryDirectory(prefix="amfkit-bench-") as workdir:
        for i, channel in enumerate(options.channels):
            if options.progress:
                options.progress(f"{channel}: {options.consumers} consumers", i, len(options.channels))
            rows.append(_run_channel(channel, options, workdir, logs))
    report: dict[str, Any] = {
        "experiment": NAME,
        "summary": SUMMARY,
        "ok": bool(rows) and all(row.get("check") for row in rows),
        "options": options_dict(options),
        "machine": machine,
        "elapsed_s": round(time.perf_counter() - started, 3),
        "results": rows,
        "seed": SEED,
        "server_log": logs,
    }
    report["goals"] = _goals(report)
    return report


# --------------------------------------------------------------------------- goals and report


def _row(report: dict[str, Any], channel: str) -> dict[str, Any] | None:
    for row in report["results"]:
        if row["channel"] == channel:
            return row
    return None


def _goals(report: dict[str, Any]) -> list[dict[str, Any]]:
    goals: list[dict[str, Any]] = []
    for channel in ("websocket", "streaming"):
        row = _row(report, channel)
        if not row:
            continue
        n = row["consumers"]
        load = row.get("load")
        if load:
            rate = load["delivered_per_s"]
            goals.append({
                "goal": f"{channel}: at least {GOAL_RATE:,} messages/s delivered to {n} consumers",
                "value": f"{rate:,.0f}/s",
                "met": rate >= GOAL_RATE,
            })
        high = row.get("high_rate")
        if high:
            p99 = high["latency"]["p99_ms"]
            goals.append({
                "goal": f"{channel}: p99 publish-to-delivery under {GOAL_P99_MS:g} ms at {high['target_per_s']:,.0f} messages/s",
                "value": f"{fmt_figure(p99)} ms (delivered {high['delivered_per_s']:,.0f}/s)",
                "met": p99 < GOAL_P99_MS and high["delivered_per_s"] >= 0.95 * high["target_per_s"],
            })
    for channel in ("long-poll", "streaming", "websocket"):
        row = _row(report, channel)
        fixed = row.get("fixed_rate") if row else None
        if not fixed:
            continue
        median = fixed["latency"]["median_ms"]
        goals.append({
            "goal": f"{channel}: median latency at {fixed['target_per_s']:,.0f} messages/s under {GOAL_MEDIAN_MS:g} ms",
            "value": f"{fmt_figure(median)} ms",
            "met": median < GOAL_MEDIAN_MS,
        })
    return goals


def _ms(value: Any) -> str:
    return fmt_figure(value) if isinstance(value, (int, float)) else "-"


def _cpu(phase: dict[str, Any]) -> str:
    return f"{phase['server_cpu']:.0%} / {phase['client_cpu']:.0%}"


def _summary_table(report: dict[str, Any]) -> Table:
    """One row per channel: the latency at both fixed rates, the most delivered."""
    o = report["options"]
    headers = [
        "channel", "consumers",
        f"{o['rate']:,.0f}/s median ms", "p99 ms", "1st / last copy ms",
        f"{o['high_rate']:,.0f}/s median ms", "p99 ms",
        "most msg/s", "median ms", "p99 ms", "check",
    ]
    rows: list[list[Any]] = []
    for row in report["results"]:
        fixed = (row.get("fixed_rate") or {}).get("latency") or {}
        high = (row.get("high_rate") or {}).get("latency") or {}
        load = row.get("load") or {}
        ll = load.get("latency") or {}
        rows.append(
            [
                row["channel"],
                row["consumers"],
                _ms(fixed.get("median_ms")),
                _ms(fixed.get("p99_ms")),
                f"{_ms(fixed['first_copy_ms'])} / {_ms(fixed['last_copy_ms'])}" if fixed else "-",
                _ms(high.get("median_ms")),
                _ms(high.get("p99_ms")),
                round(load["delivered_per_s"]) if load else "-",
                _ms(ll.get("median_ms")),
                _ms(ll.get("p99_ms")),
                "ok" if row.get("check") else f"FAILED {row.get('error', '')}".strip(),
            ]
        )
    return Table(headers, rows)


_PHASES = (("fixed_rate", "fixed rate"), ("high_rate", "fixed rate"), ("load", "the most"))


def _phase_table(report: dict[str, Any]) -> Table:
    """One row per channel and phase: what was asked and delivered, both processes' CPU."""
    rows: list[list[Any]] = []
    for key, label in _PHASES:
        for row in report["results"]:
            phase = row.get(key)
            if not phase:
                continue
            asked = f"{phase['target_per_s']:,.0f} msg/s" if key != "load" else f"{phase['window']} in flight"
            rows.append(
                [
                    row["channel"],
                    f"{label}: {asked}",
                    phase["published"],
                    round(phase["delivered_per_s"]),
                    _cpu(phase),
                    phase["bytes_per_message"],
                ]
            )
    return Table(["channel", "phase", "published", "delivered msg/s", "cpu srv / gen", "bytes/msg"], rows)


def format_report(report: dict[str, Any]) -> str:
    o = report["options"]
    lines = [
        f"amfkit bench messaging: {o['consumers']} consumers, {o['size']} InstrumentPrice messages, "
        f"{o['duration']:g} s per phase; the most: {o['window']} messages kept in flight",
        "",
        "publish-to-delivery latency at two fixed rates (messages/s delivered in total), and the most delivered:",
    ]
    summary, phases = _summary_table(report), _phase_table(report)
    lines += text_table(summary.headers, summary.rows, set(range(1, 10)))
    lines += [""]
    lines += text_table(phases.headers, phases.rows, {2, 3, 4, 5})
    lines += [
        "",
        "1st / last copy: the median over the messages of the latency of each one's first and of its last copy;",
        "cpu srv / gen: the server's and the load generator's CPU time over the phase's wall time (100%: a core);",
        "bytes/msg: what the consumers read per copy delivered (frames, HTTP heads, poll answers).",
    ]
    for row in report["results"]:
        if row.get("errors"):
            lines.append(f"  {row['channel']}: {row.get('error_count', len(row['errors']))} errors, first: {row['errors'][0]}")
    lines += ["", "goals:"]
    for g in report["goals"]:
        lines.append(f"  {g['goal']}: {g['value']}: {'met' if g['met'] else 'NOT met'}")
    lines += ["", f"anchor: {COMETD} (published, not measured here)."]
    lines += machine_lines(report)
    return "\n".join(lines)


def sections(report: dict[str, Any]) -> list[Section]:
    """One section: the table per channel (latency at both fixed rates, the most
    delivered) and the table per phase (rates, CPU, bytes), charts of the messages/s and
    of the latencies, the goals, the fan-out and CometD's figures (the anchor) as
    findings, the article's need as its seed."""
    o = report["options"]
    rows = report["results"]
    charts = []
    bars = [Bar(row["channel"], float(row["load"]["delivered_per_s"]), group=row["channel"]) for row in rows if row.get("load")]
    if bars:
        charts.append(Chart(f"messages delivered per second to {o['consumers']} consumers (higher is better)", "messages/s", bars))
    lat = []
    for key in ("fixed_rate", "high_rate", "load"):
        for row in rows:
            p = row.get(key)
            if p:
                la = p["latency"]
                label = f"at {p['target_per_s']:,.0f}/s" if key != "load" else "at the most"
                lat.append(Bar(f"{row['channel']} {label}", float(la["median_ms"]), float(la["min_ms"]), float(la["p99_ms"]), group=row["channel"]))
    if lat:
        charts.append(Chart("publish-to-delivery latency: median, bar from the fastest copy to p99 (lower is better)", "ms", lat, log=True))
    found = [f"{g['goal']}: {g['value']} ({'met' if g['met'] else 'NOT met'})." for g in report.get("goals", [])]
    found += [f"{row['channel']} FAILED: {row.get('error') or 'errors under load'}" for row in rows if not row.get("check")]
    for row in rows:
        load, fixed = row.get("load"), row.get("fixed_rate")
        if fixed:
            fl = fixed["latency"]
            found.append(
                f"{row['channel']} at {fixed['target_per_s']:,.0f}/s: a message's first copy arrives after "
                f"{fmt_figure(fl['first_copy_ms'])} ms and its last after {fmt_figure(fl['last_copy_ms'])} ms (medians): "
                f"the copies to the {row['consumers']} consumers leave the server one after another."
            )
        if load:
            found.append(
                f"{row['channel']}: {load['delivered_per_s']:,.0f} messages/s delivered at most, the server using "
                f"{load['server_cpu']:.0%} of a core and the load generator {load['client_cpu']:.0%}."
            )
    found.append(f"The anchor, {COMETD}: published by CometD, not measured here.")
    intro = (
        f"One uvicorn worker serves the gateway; one load-generator process on the same machine runs "
        f"{o['consumers']} raw Flex consumers (each its own client, small forms as Flex asks) and the publisher, "
        "which calls a service publishing with context.publish. Latency runs from the server's clock just before each "
        "publish to the moment the copy's bytes reach its consumer; every copy is checked for order and gaps, and the "
        f"check phase also compares every body. Fixed rates: {o['rate']:,.0f} and {o['high_rate']:,.0f} messages/s "
        f"delivered in total for {o['duration']:g} s each; the most: the publisher keeps {o['window']} messages in flight "
        f"for {o['duration']:g} s. Plain polling (a reference) polls every {o['poll_interval'] * 1000:g} ms with "
        f"{POLLING_WINDOW} messages in flight, half the queue bound: its interval limits it, not the window. "
        f"The anchor: {COMETD}."
    )
    seed = [
        f"{SEED['source']}: its application needed {SEED['need']}.",
        f"its AMF3 InstrumentPrice Small/Medium/Large: {' / '.join(map(str, SEED['bytes']['AMF3']))} bytes.",
    ]
    tables = [_summary_table(report), _phase_table(report)]
    return [Section("Messaging: delivery through the gateway", intro, tables, charts, seed=seed, findings=found)]


def parse_options(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="amfkit bench messaging", description=SUMMARY)
    p.add_argument("--quick", action="store_true", help="10 consumers, 0.5 s per phase (a correctness run)")
    p.add_argument("--consumers", type=int, default=None, help=f"consumers, each its own client (default {GOAL_CONSUMERS}; --quick: 10)")
    p.add_argument("--duration", type=float, default=None, help="seconds per timed phase (default 5; --quick: 0.5)")
    p.add_argument("--channels", default=",".join(CHANNELS), help=f"which channels, comma-separated (default {','.join(CHANNELS)})")
    p.add_argument("--rate", type=float, default=GOAL_FIXED_RATE, help="messages/s delivered in total in the first fixed-rate phase (default 1000)")
    p.add_argument("--high-rate", type=float, default=GOAL_RATE, help="messages/s delivered in total in the second (default 20000)")
    p.add_argument("--window", type=int, default=16, help="the most: messages kept in flight (default 16)")
    p.add_argument("--size", choices=("small", "medium", "large"), default="small", help="the InstrumentPrice message (default small)")
    p.add_argument("--poll-interval", type=float, default=0.1, help="plain polling: seconds between a consumer's polls (default 0.1)")
    p.add_argument("--json", dest="json_path", help="write the report as JSON")
    a = p.parse_args(argv)
    channels = tuple(c for c in a.channels.split(",") if c)
    unknown = [c for c in channels if c not in CHANNELS]
    if unknown or not channels:
        p.error(f"unknown channel(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(CHANNELS)}")
    consumers = a.consumers if a.consumers is not None else (10 if a.quick else GOAL_CONSUMERS)
    duration = a.duration if a.duration is not None else (0.5 if a.quick else 5.0)
    if consumers < 1 or duration <= 0 or a.rate <= 0 or a.high_rate <= 0 or a.window < 1 or a.poll_interval <= 0:
        p.error("--consumers, --duration, --rate, --high-rate, --window and --poll-interval must be positive")
    return Options(
        channels=channels,
        consumers=consumers,
        duration=duration,
        rate=a.rate,
        high_rate=a.high_rate,
        window=a.window,
        size=a.size,
        poll_interval=a.poll_interval,
        check_messages=20 if a.quick else 50,
        quick=a.quick,
        json_path=a.json_path,
    )


def main(argv: list[str] | None = None) -> int:
    """`amfkit bench messaging [options]`: print the report; 0 if every check passed, else 1."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--load-generator"] and len(args) == 2:
        return _load_generator(args[1])
    return experiment_main(args, parse_options, run, format_report)


# =========================================================================== the load generator
#
# Everything below runs in the load-generator process (`--load-generator SPEC`).


_MAX_ERRORS = 20


class _Hub:
    """What the consumers share: the counts, the latencies of the phase, the checks."""

    def __init__(self, size: str) -> None:
        from ..demo.services import instrument_price

        self.size = size
        self.expected = instrument_price
        self.delivered = 0
        self.received_bytes = 0
        self.latencies: list[float] | None = None
        self.spans: dict[int, list[float]] = {}  # seq -> [first copy's latency, last copy's]
        self.check_bodies = False
        self.errors: list[str] = []
        self.error_count = 0
        self.progress = asyncio.Event()

    def error(self, text: str) -> None:
        self.error_count += 1
        if len(self.errors) < _MAX_ERRORS:
            self.errors.append(text)


class _Consumer:
    """One Flex client with one Consumer on "prices"; `on_message` checks each copy."""

    def __init__(self, index: int, hub: _Hub) -> None:
        self.index = index
        self.hub = hub
        self.client_id = "nil"  # DSId, from the ping
        self.consumer_id: str | None = None
        self.next = 0  # the seq expected next
        self.closed = False
        self.task: asyncio.Task[None] | None = None
        self.transports: list[asyncio.BaseTransport] = []

    def on_message(self, msg: Any, t: float) -> None:
        hub = self.hub
        headers = getattr(msg, "headers", None)
        if type(msg) not in _ASYNC_TYPES or not isinstance(headers, dict):
            hub.error(f"consumer {self.index}: unexpected {type(msg).__name__}: {str(getattr(msg, 'faultString', msg))[:160]}")
            return
        seq = headers.get("seq")
        if seq != self.next:
            hub.error(f"consumer {self.index}: message {seq!r} where {self.next} was due")
            if isinstance(seq, int) and seq > self.next:
                self.next = seq + 1
            return
        self.next = seq + 1
        if msg.clientId != self.consumer_id:
            hub.error(f"consumer {self.index}: a copy for {msg.clientId!r}")
        hub.delivered += 1
        if hub.latencies is not None:
            lat = t - headers["sent"]
            hub.latencies.append(lat)
            span = hub.spans.get(seq)
            if span is None:
                hub.spans[seq] = [lat, lat]
            elif lat > span[1]:
                span[1] = lat
        if hub.check_bodies and msg.body != hub.expected(hub.size, seq):
            hub.error(f"consumer {self.index}: message {seq} has the wrong body: {msg.body!r}"[:200])
        hub.progress.set()

    def close(self) -> None:
        self.closed = True
        if self.task is not None:
            self.task.cancel()
        for t in self.transports:
            t.close()


_ASYNC_TYPES: tuple[type, ...] = ()


def _message_types() -> None:
    global _ASYNC_TYPES
    from ..remoting.messages import AsyncMessage, AsyncMessageExt

    _ASYNC_TYPES = (AsyncMessage, AsyncMessageExt)


# --- HTTP/1.1 on an asyncio transport ---------------------------------------------------


class _HTTP(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: `request` for whole answers, `stream` for an
    answer whose body is handed to a sink as it arrives (content-length or chunked). The
    answers are parsed by httptools (the C parser uvicorn uses)."""

    def __init__(self, hub: _Hub) -> None:
        import httptools

        self.hub = hub
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.parse_error = httptools.HttpParserError
        self.status = 0
        self.body = bytearray()
        self.sink: Callable[[bytes, float], None] | None = None
        self.waiter: asyncio.Future[Any] | None = None
        self.head_waiter: asyncio.Future[int] | None = None
        self.t = 0.0
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        for fut in (self.waiter, self.head_waiter):
            if fut is not None and not fut.done():
                fut.set_exception(ConnectionError(f"connection closed ({exc or 'by the server'})"))

    def _send(self, method: str, target: str, body: bytes, content_type: str) -> None:
        assert self.transport is not None
        if self.lost:
            raise ConnectionError("connection closed")
        head = (
            f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        self.body = bytearray()
        self.transport.write(head + body)

    async def request(self, target: str, body: bytes, content_type: str = "application/x-amf") -> tuple[int, bytes]:
        self.sink = None
        self.waiter = asyncio.get_running_loop().create_future()
        self._send("POST", target, body, content_type)
        await self.waiter
        return self.status, bytes(self.body)

    async def stream(self, target: str, body: bytes, content_type: str, sink: Callable[[bytes, float], None]) -> int:
        """Send the request; return its status once the head arrives; the body goes to
        `sink(data, receipt_time)`; `self.waiter` ends with the body."""
        loop = asyncio.get_running_loop()
        self.sink = sink
        self.waiter = loop.create_future()
        self.head_waiter = loop.create_future()
        self._send("POST", target, body, content_type)
        return await self.head_waiter

    def data_received(self, data: bytes) -> None:
        self.t = time.time()
        self.hub.received_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except self.parse_error as exc:  # a protocol error: report it on the waiter
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_exception(exc)
            if self.transport is not None:
                self.transport.close()

    # httptools' callbacks

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if self.head_waiter is not None and not self.head_waiter.done():
            self.head_waiter.set_result(self.status)

    def on_body(self, data: bytes) -> None:
        if self.sink is not None:
            self.sink(data, self.t)
        else:
            self.body += data

    def on_message_complete(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


async def _connect(port: int, protocol: asyncio.Protocol) -> asyncio.Transport:
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_connection(lambda: protocol, "127.0.0.1", port)
    return transport


# --- Flex messages as Flex sends them ----------------------------------------------------


def _flex_packet(message: Any) -> bytes:
    """A Flex channel's request: an AMF3-version packet, one body to target "null" whose
    value is an AMF0 strict array of one AVM+-switched AMF3 message."""
    import amfkit

    value = b"\x0a\x00\x00\x00\x01\x11" + amfkit.amf3.encode(message)
    target, response = b"null", b"/1"
    return (
        struct.pack(">HHH", 3, 0, 1)
        + struct.pack(">H", len(target)) + target
        + struct.pack(">H", len(response)) + response
        + struct.pack(">I", len(value)) + value
    )


def _answer(data: bytes) -> Any:
    """The first body's value of an answer packet; a RuntimeError for a fault."""
    from ..remoting import packet
    from ..remoting.messages import ErrorMessage

    body = packet.decode(data).bodies[0]
    if isinstance(body.value, ErrorMessage) or not body.target.endswith("/onResult"):
        raise RuntimeError(f"fault: {getattr(body.value, 'faultCode', '')} {getattr(body.value, 'faultString', body.value)}"[:300])
    return body.value


def _ping() -> Any:
    from ..remoting.messages import CommandMessage, Operation

    return CommandMessage(operation=Operation.CLIENT_PING, headers={"DSMessagingVersion": 1.0, "DSId": "nil"})


def _subscribe(client_id: str) -> Any:
    from ..remoting.messages import CommandMessage, Operation

    return CommandMessage(operation=Operation.SUBSCRIBE, destination=_DESTINATION, clientId=None, headers={"DSId": client_id, "DSEndpoint": "amf"})


def _poll(client_id: str) -> Any:
    """A channel's poll in its small form (`DSC`), as Flex sends it."""
    from ..remoting.messages import CommandMessageExt, Operation, new_id

    poll = CommandMessageExt.__new__(CommandMessageExt)
    for name in CommandMessageExt._fields:
        setattr(poll, name, None)
    poll.operation = Operation.POLL
    poll.headers = {"DSId": client_id}
    poll.messageId = new_id()
    poll.timestamp = 0
    poll.timeToLive = 0
    return poll


async def _handshake(consumer: _Consumer, port: int) -> _HTTP:
    """Ping (a DSId) and subscribe over plain POSTs; the connection stays open."""
    conn = _HTTP(consumer.hub)
    consumer.transports.append(await _connect(port, conn))
    status, data = await conn.request(_PATH, _flex_packet(_ping()))
    if status != 200:
        raise RuntimeError(f"ping: HTTP {status}")
    consumer.client_id = _answer(data).headers["DSId"]
    status, data = await conn.request(_PATH, _flex_packet(_subscribe(consumer.client_id)))
    if status != 200:
        raise RuntimeError(f"subscribe: HTTP {status}")
    consumer.consumer_id = _answer(data).clientId
    return conn


# --- the channels, consumer side ----------------------------------------------------------


async def _start_polling(consumer: _Consumer, port: int, interval: float | None) -> None:
    """Long-polling (interval None: poll again at once) or plain polling."""
    from ..remoting.messages import CommandMessage, Operation

    conn = await _handshake(consumer, port)

    async def loop() -> None:
        while not consumer.closed:
            status, data = await conn.request(_PATH, _flex_packet(_poll(consumer.client_id)))
            t = conn.t
            if status != 200:
                raise RuntimeError(f"poll: HTTP {status}")
            reply = _answer(data)
            if isinstance(reply, CommandMessage) and reply.operation == Operation.CLIENT_SYNC and reply.body:
                for msg in reply.body:
                    consumer.on_message(msg, t)
            if interval:
                await asyncio.sleep(interval)

    consumer.task = asyncio.ensure_future(_guard(consumer, loop()))


class _Frames:
    """The streaming channel's frames after HTTP de-chunking: `<hex length>\\r\\n<AMF3
    value>\\r\\n`, 0x00 bytes between them (heartbeats)."""

    def __init__(self, on_value: Callable[[Any, float], None]) -> None:
        import amfkit

        self.decode = amfkit.amf3.decode
        self.on_value = on_value
        self.buf = bytearray()

    def feed(self, data: bytes, t: float) -> None:
        buf = self.buf
        buf += data
        pos, n = 0, len(buf)
        while pos < n:
            if buf[pos] == 0:
                pos += 1
                continue
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                break
            size = int(bytes(buf[pos:eol]), 16)
            start = eol + 2
            end = start + size
            if end + 2 > n:
                break
            value = self.decode(bytes(buf[start:end]))
            pos = end + 2
            self.on_value(value, t)
        del buf[:pos]


async def _start_streaming(consumer: _Consumer, port: int) -> None:
    from ..remoting.messages import AcknowledgeMessage, CommandMessage, Operation

    conn = await _handshake(consumer, port)
    consumer.transports[-1].close()  # the command connection: a new one holds the stream
    stream = _HTTP(consumer.hub)
    consumer.transports.append(await _connect(port, stream))
    opened: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def on_value(value: Any, t: float) -> None:
        if not opened.done():
            if isinstance(value, AcknowledgeMessage) and value.correlationId == "open":
                opened.set_result(value.body)
            else:
                opened.set_exception(RuntimeError(f"the stream began with {value!r}"[:200]))
            return
        if isinstance(value, CommandMessage) and value.operation == Operation.DISCONNECT:
            if not consumer.closed:
                consumer.hub.error(f"consumer {consumer.index}: the server closed the stream")
            return
        consumer.on_message(value, t)

    frames = _Frames(on_value)
    body = f"DSId={consumer.client_id}".encode()
    status = await stream.stream(f"{_PATH}?command=open&version=1", body, "application/x-www-form-urlencoded", frames.feed)
    if status != 200:
        raise RuntimeError(f"stream open: HTTP {status}")
    await asyncio.wait_for(opened, 10)
    del conn

    async def watch() -> None:
        assert stream.waiter is not None
        await stream.waiter
        if not consumer.closed:
            raise RuntimeError("the stream ended")

    consumer.task = asyncio.ensure_future(_guard(consumer, watch()))


class _WS(asyncio.Protocol):
    """A WebSocket client connection: binary frames of one AMF3 value each. The framing,
    masking, pings and closing are the `websockets` library's sans-I/O client protocol;
    this class only moves bytes between it and the socket."""

    def __init__(self, hub: _Hub, port: int, on_value: Callable[[Any, float], None]) -> None:
        import amfkit
        from websockets.client import ClientProtocol
        from websockets.frames import Frame, Opcode
        from websockets.typing import Subprotocol
        from websockets.uri import parse_uri

        self.hub = hub
        self.decode = amfkit.amf3.decode
        self.encode = amfkit.amf3.encode
        self.on_value = on_value
        self.protocol = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}{_PATH}"), subprotocols=[Subprotocol("amf3")], max_size=None)
        self.binary, self.text, self.close_op = Opcode.BINARY, Opcode.TEXT, Opcode.CLOSE
        self.frame_type = Frame
        self.transport: asyncio.Transport | None = None
        self.upgraded: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.protocol.send_request(self.protocol.connect())
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        for fut in (self.upgraded, self.closed):
            if not fut.done():
                fut.set_exception(ConnectionError(f"connection closed ({exc or 'by the server'})"))

    def _flush(self) -> None:
        assert self.transport is not None
        for data in self.protocol.data_to_send():
            if data:
                self.transport.write(data)
            else:  # the protocol is done with the connection
                self.transport.close()

    def send(self, message: Any) -> None:
        self.protocol.send_binary(self.encode(message))
        self._flush()

    def data_received(self, data: bytes) -> None:
        t = time.time()
        self.hub.received_bytes += len(data)
        self.protocol.receive_data(data)
        for event in self.protocol.events_received():
            if not isinstance(event, self.frame_type):  # the handshake's response
                if self.protocol.handshake_exc is not None:
                    self.upgraded.set_exception(RuntimeError(f"WebSocket upgrade refused: {self.protocol.handshake_exc}"))
                elif not self.upgraded.done():
                    self.upgraded.set_result(None)
                continue
            if event.opcode is self.binary:
                self.on_value(self.decode(event.data), t)
            elif event.opcode is self.text:
                self.hub.error("a text frame on the WebSocket")
            elif event.opcode is self.close_op and not self.closed.done():
                self.closed.set_exception(ConnectionError(f"the server closed the WebSocket ({self.protocol.close_code})"))
        self._flush()  # pongs, the close handshake


async def _start_websocket(consumer: _Consumer, port: int) -> None:
    from ..remoting.messages import AcknowledgeMessage, ErrorMessage

    loop = asyncio.get_running_loop()
    replies: dict[str, asyncio.Future[Any]] = {}

    def on_value(value: Any, t: float) -> None:
        if isinstance(value, AcknowledgeMessage):  # ErrorMessage too
            fut = replies.pop(value.correlationId, None)
            if fut is not None:
                fut.set_result(value)
                return
        consumer.on_message(value, t)

    ws = _WS(consumer.hub, port, on_value)
    consumer.transports.append(await _connect(port, ws))
    await asyncio.wait_for(ws.upgraded, 10)

    async def ask(message: Any) -> Any:
        fut = loop.create_future()
        replies[message.messageId] = fut
        ws.send(message)
        reply = await asyncio.wait_for(fut, 10)
        if isinstance(reply, ErrorMessage):
            raise RuntimeError(f"fault: {reply.faultCode} {reply.faultString}")
        return reply

    consumer.client_id = (await ask(_ping())).headers["DSId"]
    consumer.consumer_id = (await ask(_subscribe(consumer.client_id))).clientId

    async def watch() -> None:
        await ws.closed

    consumer.task = asyncio.ensure_future(_guard(consumer, watch()))


async def _guard(consumer: _Consumer, work: Any) -> None:
    try:
        await work
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if not consumer.closed:
            consumer.hub.error(f"consumer {consumer.index}: {type(exc).__name__}: {exc}"[:300])


# --- the publisher --------------------------------------------------------------------------


class _Publisher:
    def __init__(self, hub: _Hub, port: int, size: str) -> None:
        self.hub = hub
        self.port = port
        self.size = size
        self.seq = 0  # the next seq to publish
        self.conn = _HTTP(hub)
        self.calls = 0

    async def connect(self) -> None:
        await _connect(self.port, self.conn)

    async def call(self, method: str, *args: Any) -> Any:
        from ..remoting import packet

        data = packet.encode(packet.Envelope(0, bodies=[packet.Body(f"MessagingBench.{method}", "/1", list(args))]))
        status, out = await self.conn.request(_PATH, data)
        if status != 200:
            raise RuntimeError(f"MessagingBench.{method}: HTTP {status}")
        return _answer(out)

    async def disconnect(self, client_ids: list[str]) -> None:
        """Disconnect each client (a DISCONNECT command carrying its DSId)."""
        from ..remoting.messages import CommandMessage, Operation

        for client_id in client_ids:
            await self.conn.request(_PATH, _flex_packet(CommandMessage(operation=Operation.DISCONNECT, headers={"DSId": client_id})))

    async def publish(self, count: int) -> None:
        first = self.seq
        self.seq += count
        self.calls += 1
        await self.call("publish", count, first, self.size)


# --- the phases ---------------------------------------------------------------------------


def _server_cpu(pid: int) -> float:
    """The server process's user + system CPU seconds (Linux /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _latency(samples: list[float], spans: dict[int, list[float]]) -> dict[str, float]:
    """Percentiles of every copy's latency (ms); and, over the messages, the median
    latency of each message's first copy and of its last (the fan-out's spread)."""
    if not samples:
        return {"n": 0, "min_ms": 0.0, "median_ms": 0.0, "p90_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0, "first_copy_ms": 0.0, "last_copy_ms": 0.0}
    s = sorted(samples)
    n = len(s)

    def pct(p: float) -> float:
        return s[min(n - 1, max(0, math.ceil(p * n) - 1))] * 1000

    firsts = sorted(v[0] for v in spans.values())
    lasts = sorted(v[1] for v in spans.values())
    return {
        "n": n, "min_ms": s[0] * 1000, "median_ms": pct(0.5), "p90_ms": pct(0.9), "p99_ms": pct(0.99), "max_ms": s[-1] * 1000,
        "first_copy_ms": firsts[len(firsts) // 2] * 1000, "last_copy_ms": lasts[len(lasts) // 2] * 1000,
    }


class _Meter:
    """CPU of both processes and deliveries over one phase."""

    def __init__(self, hub: _Hub, pid: int) -> None:
        self.hub, self.pid = hub, pid
        self.wall = time.perf_counter()
        self.client = time.process_time()
        self.server = _server_cpu(pid)
        self.delivered = hub.delivered
        self.bytes = hub.received_bytes

    def stop(self) -> dict[str, Any]:
        wall = time.perf_counter() - self.wall
        delivered = self.hub.delivered - self.delivered
        return {
            "wall_s": round(wall, 4),
            "delivered": delivered,
            "delivered_per_s": delivered / wall if wall > 0 else 0.0,
            "server_cpu": (_server_cpu(self.pid) - self.server) / wall if wall > 0 else 0.0,
            "client_cpu": (time.process_time() - self.client) / wall if wall > 0 else 0.0,
            "received_bytes": self.hub.received_bytes - self.bytes,
            "bytes_per_message": round((self.hub.received_bytes - self.bytes) / max(1, delivered)),
        }


async def _settle(consumers: list[_Consumer], hub: _Hub, target: int, timeout: float) -> bool:
    """Wait until every consumer has received every message up to `target` (exclusive)."""
    deadline = time.monotonic() + timeout
    while min(c.next for c in consumers) < target:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        hub.progress.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(hub.progress.wait(), min(remaining, 0.5))
    return True


async def _generate(spec: dict[str, Any]) -> dict[str, Any]:
    _message_types()
    hub = _Hub(spec["size"])
    channel, port, n = spec["channel"], spec["port"], spec["consumers"]
    consumers = [_Consumer(i, hub) for i in range(n)]
    out: dict[str, Any] = {"check": False}
    gate = asyncio.Semaphore(32)

    async def start(c: _Consumer) -> None:
        async with gate:
            if channel == "long-poll":
                await _start_polling(c, port, None)
            elif channel == "polling":
                await _start_polling(c, port, spec["poll_interval"])
            elif channel == "streaming":
                await _start_streaming(c, port)
            else:
                await _start_websocket(c, port)

    publisher = _Publisher(hub, port, spec["size"])
    try:
        t0 = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*(start(c) for c in consumers)), 60)
        await publisher.connect()
        stats = await publisher.call("stats")
        out["setup_s"] = round(time.perf_counter() - t0, 3)
        if stats.get("consumers") != n:
            raise RuntimeError(f"the broker holds {stats.get('consumers')} consumers, not {n}")
        slack = 10.0 + (spec["poll_interval"] if channel == "polling" else 0)

        # 1. check: every copy once, in order, addressed, with the right body
        hub.check_bodies = True
        total = spec["check_messages"]
        while publisher.seq < total:
            await publisher.publish(min(10, total - publisher.seq))
            await _settle(consumers, hub, publisher.seq, slack)
        hub.check_bodies = False
        behind = [c.index for c in consumers if c.next != publisher.seq]
        if behind or hub.error_count:
            raise RuntimeError(f"check failed: {len(behind)} consumer(s) without every message; {hub.errors[:3]}")
        out["check_messages"] = total

        phases = spec.get("phases", ("fixed", "high", "load"))  # all, but for profiling one

        async def at_rate(rate: float) -> dict[str, Any]:
            """Publish on a schedule for `duration` seconds, `rate` deliveries/s in total
            (bursts catch up when a publish call falls behind it); then wait for every copy."""
            per_s = rate / n  # published messages/s
            total = max(1, round(per_s * spec["duration"]))
            hub.latencies, hub.spans = [], {}
            meter = _Meter(hub, spec["server_pid"])
            first = publisher.seq
            start_t = time.perf_counter()
            sent = 0
            while sent < total:
                due = min(total, int((time.perf_counter() - start_t) * per_s) + 1)
                if due > sent:
                    await publisher.publish(due - sent)
                    sent = due
                else:
                    await asyncio.sleep(max(0.0, start_t + sent / per_s - time.perf_counter()))
            publishing = time.perf_counter() - start_t
            await _settle(consumers, hub, publisher.seq, slack)
            phase = meter.stop()
            phase["published"] = publisher.seq - first
            phase["target_per_s"] = rate
            phase["delivered_per_s"] = phase["published"] * n / max(publishing, spec["duration"])
            phase["latency"] = _latency(hub.latencies, hub.spans)
            return phase

        # 2. fixed rates: `rate` deliveries/s in total (the median latency goal), then
        # `high_rate` (the p99 goal)
        if "fixed" in phases:
            out["fixed_rate"] = await at_rate(spec["rate"])
        if "high" in phases:
            out["high_rate"] = await at_rate(spec["high_rate"])

        # 3. load: `window` messages in flight for `duration` seconds
        hub.latencies, hub.spans = [], {}
        window = max(spec["window"], POLLING_WINDOW) if channel == "polling" else spec["window"]
        meter = _Meter(hub, spec["server_pid"])
        end_t = time.perf_counter() + (spec["duration"] if "load" in phases else 0)
        first = publisher.seq
        while time.perf_counter() < end_t:
            low = min(c.next for c in consumers)
            room = window - (publisher.seq - low)
            if room > 0:
                await publisher.publish(room)
            else:
                hub.progress.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(hub.progress.wait(), max(0.001, end_t - time.perf_counter()))
        load = meter.stop()
        load["published"] = publisher.seq - first
        load["window"] = window
        # What the consumers read per delivered copy under load (frames, HTTP heads, polls' answers).
        out["bytes_per_message"] = round(load["received_bytes"] / max(1, load["delivered"]))
        settled = await _settle(consumers, hub, publisher.seq, slack)
        load["latency"] = _latency(hub.latencies, hub.spans)
        hub.latencies = None
        out["load"] = load
        if not settled:
            hub.error(f"{sum(1 for c in consumers if c.next < publisher.seq)} consumer(s) did not receive every message")
        stats = await publisher.call("stats")
        out["broker"] = stats
        out["published"] = publisher.seq
        out["publish_calls"] = publisher.calls
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:600]
    finally:
        for c in consumers:
            c.closed = True
        # Disconnect every client (its parked poll is answered, its stream ends) so that
        # the server has nothing held when it is told to stop.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(publisher.disconnect([c.client_id for c in consumers if c.client_id != "nil"]), 10)
        for c in consumers:
            c.close()
        if publisher.conn.transport is not None:
            publisher.conn.transport.close()
        await asyncio.sleep(0.05)
    out["errors"] = hub.errors
    out["error_count"] = hub.error_count
    out["check"] = "error" not in out and hub.error_count == 0
    if hub.error_count and "error" not in out:
        out["error"] = f"{hub.error_count} errors under load, first: {hub.errors[0]}"
    return out


def _load_generator(spec_path: str) -> int:
    """The load-generator process: run the phases against the server, write the results."""
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:
        runner = asyncio.run
    result = runner(_generate(spec))
    with open(spec["out"], "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
