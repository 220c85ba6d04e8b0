"""`amfkit bench messaging`: Flex messaging through the gateway (publish-to-delivery latency
and messages/s to N consumers on each channel), the worker messages article's handoff
between two processes, and the server's CPU while its consumers wait
(docs/benchmarks.md, "Messaging through the gateway").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import selectors
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any, Callable, Optional

from . import handoff, peers, timing
from .servers import uvicorn
from .model import Bar, Chart, Section, Table, experiment_main, options_dict
from .text import fmt_figure, machine_lines, text_table

__all__ = ["CHANNELS", "COMPARE_KEYS", "NAME", "PARTS", "SUMMARY", "Options", "format_report", "main", "parse_options", "run", "sections"]

NAME = "messaging"
#: The article whose messages this experiment sends (docs/benchmarks.md).
ARTICLE = "the Protocol Buffers article"
SUMMARY = (
    "Flex messaging through the gateway: publish-to-delivery latency and messages/s to N "
    "consumers on long-polling, HTTP streaming, WebSocket (and plain polling); one message "
    "back and forth between two processes (the worker messages article); idle CPU"
)

#: Channel keys, in report order: plain polling is the reference row.
CHANNELS = ("long-poll", "streaming", "websocket", "polling")
#: The experiment's parts, in run order (`--only`).
PARTS = ("handoff", "idle", "delivery")
#: Broker schemes for the delivery phases (`--brokers`) and the idle one.
BROKERS = ("memory", "shm", "redis")
#: The row fields that identify a case for `amfkit bench compare` (`scheme`, the
#: broker's, and `workers` are only in the rows of a shared broker or several workers).
COMPARE_KEYS = ("channel", "consumers", "message", "scheme", "workers")

GOAL_RATE = 20_000  # messages/s delivered in total, WebSocket and streaming
GOAL_P99_MS = 50.0  # p99 publish-to-delivery at GOAL_RATE
GOAL_FIXED_RATE = 1_000  # messages/s delivered in total
GOAL_MEDIAN_MS = 5.0  # at that rate, every channel but plain polling
GOAL_CONSUMERS = 100
GOAL_IDLE_CORE = 0.01  # idle: the server's CPU as a share of one core
GOAL_WORKERS_SPEEDUP = 1.5  # --workers 2 on shm against one worker, the most
# Issue 29, redis:// against shm:// (one worker each, the same run, --brokers shm,redis):
GOAL_REDIS_SHARE = 0.5  # redis's messages/s at the most, as a share of shm's, every channel
GOAL_REDIS_MEDIAN_MS = 10.0  # redis at GOAL_FIXED_RATE: median publish-to-delivery
GOAL_REDIS_P99_MS = 50.0  # and p99
GOAL_REDIS_CORE = 0.5  # redis at GOAL_FIXED_RATE: the server's CPU, a share of one core

#: The idle phase's cases: (broker, workers).
IDLE_CASES = (("memory", 1), ("shm", 1), ("shm", 2), ("redis", 1), ("redis", 2))
IDLE_CASES_QUICK = (("memory", 1), ("shm", 2), ("redis", 2))
#: The channels an idle phase's consumers use, in turn.
IDLE_CHANNELS = ("long-poll", "streaming", "websocket")

#: CometD's published long-polling figures, the anchor (not measured here).
COMETD = "CometD (Java, long-polling): median latency 2-4 ms up to 10,000 messages/s"

#: What the Protocol Buffers article needed of its messages, and its AMF3 Small size.
ARTICLE_FIGURES: dict[str, Any] = {
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
    #: which parts run (PARTS)
    parts: tuple[str, ...] = PARTS
    #: the delivery phases' brokers and worker counts (every pair but memory with more than one)
    brokers: tuple[str, ...] = ("memory",)
    workers: tuple[int, ...] = (1,)
    #: a Redis URL for the redis cases; None: a redis-server started for the run
    redis: Optional[str] = None
    handoff_runs: int = 5
    handoff_round_trips: int = 1000
    handoff_warmup: int = handoff.WARMUP
    handoff_placements: tuple[str, ...] = handoff.PLACEMENTS
    idle_clients: int = GOAL_CONSUMERS
    idle_duration: float = 10.0
    idle_cases: tuple[tuple[str, int], ...] = IDLE_CASES
    #: progress(message, done=None, total=None), called before each step
    progress: Optional[Callable[..., None]] = dataclasses.field(default=None, repr=False, compare=False)


# --------------------------------------------------------------------------- the server


@contextlib.contextmanager
def _server(env: dict[str, str], logs: list[str], workers: int = 1) -> Iterator[tuple[int, int]]:
    """uvicorn serving the messaging gateway in its own process (with `workers`, a
    supervisor and its workers): yields (port, pid); what it wrote to standard error is
    added to `logs` when it stops."""
    server = None
    args = ["--timeout-graceful-shutdown", "2"]
    if workers != 1:
        args += ["--workers", str(workers)]  # the last --workers given counts
    try:
        with uvicorn("amfkit_bench.apps:messaging", env=env, args=args) as server:
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


class _Brokers:
    """The broker URLs of one run: a fresh shm:// name or Redis key prefix per server."""

    def __init__(self, redis_url: str | None, redis_why: str) -> None:
        self.redis_url = redis_url
        self.redis_why = redis_why
        self.n = 0

    def url(self, broker: str) -> tuple[str | None, str]:
        """(url, "") or (None, why not)."""
        self.n += 1
        tag = f"{os.getpid()}-{self.n}"
        if broker == "memory":
            return "memory://", ""
        if broker == "shm":
            return f"shm://bench-{tag}", ""
        if self.redis_url is None:
            return None, self.redis_why or "no Redis"
        return handoff.with_prefix(self.redis_url, f"bench-{tag}:"), ""


def _case_fields(broker: str, workers: int) -> dict[str, Any]:
    """What tells a row of a shared broker or several workers from the default one."""
    return {} if (broker, workers) == ("memory", 1) else {"scheme": broker, "workers": workers}


# --------------------------------------------------------------------------- one channel


def _run_channel(
    channel: str, options: Options, workdir: str, logs: list[str], broker: str = "memory", url: str = "memory://", workers: int = 1
) -> dict[str, Any]:
    """Start a server, run the load generator against it, return the channel's row (a
    failure is the row's `error`, never an exception)."""
    row: dict[str, Any] = {"channel": channel, "consumers": options.consumers, "message": options.size, **_case_fields(broker, workers)}
    missing = _missing_channel(channel)
    if missing:
        row.update(check=False, error=missing)
        return row
    env = {"AMFKIT_BENCH_POLL_WAIT": "0" if channel == "polling" else "25", "AMFKIT_BENCH_QUEUE_SIZE": "1000", "AMFKIT_BENCH_BROKER": url}
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
    name = f"{channel}-{broker}-{workers}"
    spec_path = os.path.join(workdir, f"{name}.spec.json")
    out_path = os.path.join(workdir, f"{name}.out.json")
    limit = 60 + 6 * options.duration + options.consumers * 0.1
    try:
        with _server(env, logs, workers) as (port, pid):
            spec.update(port=port, server_pid=pid, out=out_path)
            with open(spec_path, "w", encoding="utf-8") as f:
                json.dump(spec, f)
            cmd = [sys.executable, "-m", "amfkit_bench.messaging", "--load-generator", spec_path]
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


def _delivery_cases(options: Options) -> tuple[list[tuple[str, int]], list[str]]:
    """The (broker, workers) pairs the delivery phases run, the default first; and why
    the others do not."""
    cases: list[tuple[str, int]] = []
    skipped: list[str] = []
    for broker in options.brokers:
        for workers in options.workers:
            if broker == "memory" and workers != 1:
                skipped.append(f"memory:// with {workers} workers: each worker would have a broker of its own")
            elif (broker, workers) not in cases:
                cases.append((broker, workers))
    cases.sort(key=lambda c: c != ("memory", 1))
    return cases, skipped


# --------------------------------------------------------------------------- idle


def _cpu_of(pids: dict[int, float] | None) -> float:
    return sum(pids.values()) if pids else 0.0


def _idle(options: Options, workdir: str, logs: list[str], brokers: _Brokers, redis_pid: int | None) -> dict[str, Any]:
    """Every idle case's server with its consumers parked, measured over one window."""
    rows: list[dict[str, Any]] = []
    out: dict[str, Any] = {"clients": options.idle_clients, "channels": list(IDLE_CHANNELS), "rows": rows}
    live: list[tuple[dict[str, Any], int, subprocess.Popen[str], str]] = []
    with contextlib.ExitStack() as stack:
        wanted: list[tuple[dict[str, Any], str, int, dict[str, str]]] = []
        for broker, workers in options.idle_cases:
            row: dict[str, Any] = {"scheme": broker, "workers": workers, "clients": options.idle_clients}
            rows.append(row)
            url, why = brokers.url(broker)
            if url is None:
                row.update(check=None, not_run=why)
                continue
            wanted.append((row, broker, workers, {"AMFKIT_BENCH_POLL_WAIT": "25", "AMFKIT_BENCH_QUEUE_SIZE": "1000", "AMFKIT_BENCH_BROKER": url}))
        started = _start_servers(stack, [(env, workers) for _, _, workers, env in wanted], logs)
        for (row, broker, workers, _), got in zip(wanted, started):
            if isinstance(got, Exception):
                row.update(check=False, error=str(got)[:600])
                continue
            port, pid = got
            name = f"idle-{broker}-{workers}"
            spec = {
                "idle": True, "port": port, "server_pid": pid, "consumers": options.idle_clients, "channels": list(IDLE_CHANNELS),
                "size": options.size, "out": os.path.join(workdir, f"{name}.out.json"), "settle": 0.2 if options.quick else 0.5,
            }  # fmt: skip
            spec_path = os.path.join(workdir, f"{name}.spec.json")
            with open(spec_path, "w", encoding="utf-8") as f:
                json.dump(spec, f)
            err = stack.enter_context(tempfile.TemporaryFile(mode="w+"))
            cmd = [sys.executable, "-m", "amfkit_bench.messaging", "--load-generator", spec_path]
            gen = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
            stack.callback(_reap, gen)
            live.append((row, pid, gen, str(spec["out"])))
            row["_err"] = err
        # Every generator says "ready" once its consumers are subscribed.
        deadline = time.monotonic() + 60 + options.idle_clients * 0.1
        waiting = {gen.stdout.fileno(): (row, gen) for row, _, gen, _ in live if gen.stdout is not None}
        with selectors.DefaultSelector() as sel:
            for fd in waiting:
                sel.register(fd, selectors.EVENT_READ)
            while waiting and time.monotonic() < deadline:
                for key, _ in sel.select(max(0.0, deadline - time.monotonic())):
                    row, gen = waiting.pop(key.fd)
                    sel.unregister(key.fd)
                    assert gen.stdout is not None
                    said = gen.stdout.readline().strip()
                    if said != "ready":
                        row["_failed"] = f"the consumers' process said {said or 'nothing'!r}"
        for row, _ in waiting.values():
            row["_failed"] = "the consumers were not subscribed in time"
        measured = [(row, pid, gen, path) for row, pid, gen, path in live if "_failed" not in row]
        before = {id(row): (_tree_cpu(pid), _tree_cpu(gen.pid)) for row, pid, gen, _ in measured}
        redis_before = _stat(redis_pid) if redis_pid else None
        t0 = time.perf_counter()
        time.sleep(options.idle_duration)
        wall = time.perf_counter() - t0
        after = {id(row): (_tree_cpu(pid), _tree_cpu(gen.pid)) for row, pid, gen, _ in measured}
        redis_after = _stat(redis_pid) if redis_pid else None
        out["window_s"] = round(wall, 3)
        if redis_before and redis_after:
            out["redis_server_cpu"] = (redis_after[1] - redis_before[1]) / wall
        for row, _, gen, path in live:
            err = row.pop("_err")
            failed = row.pop("_failed", None)
            with contextlib.suppress(OSError, ValueError):
                assert gen.stdin is not None
                gen.stdin.write("stop\n")
                gen.stdin.flush()
            try:
                gen.wait(30)
            except subprocess.TimeoutExpired:
                gen.kill()
                gen.wait()
            if id(row) in before:
                (srv0, gen0), (srv1, gen1) = before[id(row)], after[id(row)]
                workers_cpu = {p: srv1[p] - srv0.get(p, 0.0) for p in srv1}
                row["server_cpu"] = _cpu_of(workers_cpu) / wall
                row["processes"] = len(srv1)
                row["per_process_cpu"] = sorted((v / wall for v in workers_cpu.values()), reverse=True)
                row["client_cpu"] = (_cpu_of(gen1) - _cpu_of(gen0)) / wall
            result: dict[str, Any] = {}
            with contextlib.suppress(OSError, ValueError):
                with open(path, encoding="utf-8") as f:
                    result = json.load(f)
            if failed or not result:
                err.seek(0)
                row.update(check=False, error=(failed or f"the consumers' process failed ({gen.returncode})") + f": {result.get('error') or err.read()[-400:]}")
                continue
            row.update({k: result[k] for k in ("setup_s", "channels", "broker", "errors", "error_count", "error") if k in result})
            row["check"] = bool(result.get("check"))
    out["ok"] = all(row.get("check") is not False for row in rows) and any(row.get("check") for row in rows)
    return out


def _start_servers(stack: contextlib.ExitStack, wanted: list[tuple[dict[str, str], int]], logs: list[str]) -> list[tuple[int, int] | Exception]:
    """Start the servers side by side (each waits for its port), stopped side by side
    when `stack` closes: (port, pid) for each, or why it did not start."""
    from concurrent.futures import ThreadPoolExecutor

    servers = [_server(env, logs, workers) for env, workers in wanted]
    if not servers:
        return []

    def enter(cm: Any) -> tuple[int, int] | Exception:
        try:
            started: tuple[int, int] = cm.__enter__()
            return started
        except RuntimeError as exc:
            return exc

    with ThreadPoolExecutor(len(servers)) as pool:
        got = list(pool.map(enter, servers))
    running = [cm for cm, g in zip(servers, got) if not isinstance(g, Exception)]

    def stop_all() -> None:
        with ThreadPoolExecutor(max(1, len(running))) as pool:
            list(pool.map(lambda cm: cm.__exit__(None, None, None), running))

    stack.callback(stop_all)
    return got


def _reap(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for f in (proc.stdin, proc.stdout):
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()


# --------------------------------------------------------------------------- run


def run(options: Options) -> dict[str, Any]:
    machine = timing.machine_facts(peers.package_versions("amfkit", "uvicorn", "httptools", "uvloop", "websockets", "redis"))
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    logs: list[str] = []
    report: dict[str, Any] = {"experiment": NAME, "summary": SUMMARY, "options": options_dict(options), "machine": machine}
    cases, skipped = _delivery_cases(options) if "delivery" in options.parts else ([], [])
    steps = (
        [("handoff", None, None)] * ("handoff" in options.parts)
        + [("idle", None, None)] * ("idle" in options.parts)
        + [("delivery", case, channel) for case in cases for channel in options.channels if case == ("memory", 1) or channel != "polling"]
    )
    needs_redis = (
        ("handoff" in options.parts)
        or ("idle" in options.parts and any(b == "redis" for b, _ in options.idle_cases))
        or any(b == "redis" for b, _ in cases)
    )
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="amfkit-bench-") as workdir:
        redis_url, redis_pid, redis_why = options.redis, None, ""
        if needs_redis and redis_url is None:
            redis_url, redis_pid, redis_why = stack.enter_context(handoff.local_redis())
        report["redis"] = {"url": redis_url and handoff.shown_url(redis_url), "started": redis_pid is not None, "why_not": redis_why or None}
        brokers = _Brokers(redis_url, redis_why)
        for i, (part, case, channel) in enumerate(steps):
            if part == "handoff":
                if options.progress:
                    options.progress("handoff: one message back and forth between two processes", i, len(steps))
                h = handoff.Options(
                    round_trips=options.handoff_round_trips,
                    runs=options.handoff_runs,
                    warmup=options.handoff_warmup,
                    placements=options.handoff_placements,
                    redis=redis_url,
                )
                report["handoff"] = handoff.run(h, redis_url, redis_why)
                # The handoff's figures by case, where `amfkit bench compare` finds them.
                report["handoff_times"] = {
                    f"{r['transport']}, {r['size']}, {r['placement']}": {
                        "total_ms": {"median_ms": r["total_ms"], "min_ms": r["total_min_ms"], "max_ms": r["total_max_ms"]},
                        "round_trips_per_s": r["round_trips_per_s"],
                    }
                    for r in report["handoff"]["rows"]
                    if "total_ms" in r
                }
            elif part == "idle":
                if options.progress:
                    options.progress(f"idle: {options.idle_clients} consumers parked, {options.idle_duration:g} s", i, len(steps))
                report["idle"] = _idle(options, workdir, logs, brokers, redis_pid)
            else:
                assert case is not None and channel is not None
                broker, workers = case
                if options.progress:
                    where = "" if case == ("memory", 1) else f" ({broker}://, {workers} worker{'s' * (workers > 1)})"
                    options.progress(f"{channel}{where}: {options.consumers} consumers", i, len(steps))
                url, why = brokers.url(broker)
                if url is None:
                    rows.append({"channel": channel, "consumers": options.consumers, "message": options.size, **_case_fields(broker, workers), "check": None, "not_run": why})
                    continue
                rows.append(_run_channel(channel, options, workdir, logs, broker, url, workers))
    oks = [row.get("check") is not False for row in rows] + [bool(report[p]["ok"]) for p in ("handoff", "idle") if p in report]
    report.update(
        {
            "ok": bool(steps) and all(oks) and (not rows or any(row.get("check") for row in rows)),
            "elapsed_s": round(time.perf_counter() - started, 3),
            "results": rows,
            "skipped": skipped,
            "article_figures": ARTICLE_FIGURES,
            "server_log": logs,
        }
    )
    report["goals"] = _goals(report)
    return report


# --------------------------------------------------------------------------- goals and report


def _row(report: dict[str, Any], channel: str, broker: str = "memory", workers: int = 1) -> dict[str, Any] | None:
    want = _case_fields(broker, workers)
    for row in report["results"]:
        if row["channel"] == channel and row.get("scheme") == want.get("scheme") and row.get("workers") == want.get("workers"):
            return row
    return None


def _where(row: dict[str, Any]) -> str:
    """A row's case: its channel, and its broker and workers when not the default."""
    if "scheme" not in row:
        return str(row["channel"])
    return f"{row['channel']} ({row['scheme']}://, {row['workers']} worker{'s' * (row['workers'] > 1)})"


def _goals(report: dict[str, Any]) -> list[dict[str, Any]]:
    goals: list[dict[str, Any]] = []
    if "handoff" in report:
        goals += report["handoff"]["goals"]
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
    for channel in ("streaming", "websocket", "long-poll"):
        two = _row(report, channel, "shm", 2)
        one = _row(report, channel) or _row(report, channel, "shm", 1)
        if not (two and one and two.get("load") and one.get("load")):
            continue
        ratio = two["load"]["delivered_per_s"] / one["load"]["delivered_per_s"]
        goals.append({
            "goal": f"{channel}: --workers 2 on shm:// at least {GOAL_WORKERS_SPEEDUP:g}x one worker's messages/s at the most ({_where(one)})",
            "value": f"{ratio:.2f}x ({two['load']['delivered_per_s']:,.0f} vs {one['load']['delivered_per_s']:,.0f}/s)",
            "met": ratio >= GOAL_WORKERS_SPEEDUP,
        })
    for channel in ("long-poll", "streaming", "websocket"):
        redis, shm = _row(report, channel, "redis", 1), _row(report, channel, "shm", 1)
        if redis and shm and redis.get("load") and shm.get("load"):
            share = redis["load"]["delivered_per_s"] / shm["load"]["delivered_per_s"]
            goals.append({
                "goal": f"{channel}: redis:// at least {GOAL_REDIS_SHARE:g}x shm://'s messages/s at the most (1 worker each)",
                "value": f"{share:.2f}x ({redis['load']['delivered_per_s']:,.0f} vs {shm['load']['delivered_per_s']:,.0f}/s)",
                "met": share >= GOAL_REDIS_SHARE,
            })
        fixed = redis.get("fixed_rate") if redis else None
        if fixed:
            latency = fixed["latency"]
            goals.append({
                "goal": f"{channel}: redis:// at {fixed['target_per_s']:,.0f} messages/s: median under {GOAL_REDIS_MEDIAN_MS:g} ms, p99 under {GOAL_REDIS_P99_MS:g} ms",
                "value": f"{fmt_figure(latency['median_ms'])} / {fmt_figure(latency['p99_ms'])} ms",
                "met": latency["median_ms"] < GOAL_REDIS_MEDIAN_MS and latency["p99_ms"] < GOAL_REDIS_P99_MS,
            })
            goals.append({
                "goal": f"{channel}: redis:// at {fixed['target_per_s']:,.0f} messages/s: the worker under {GOAL_REDIS_CORE:.0%} of a core",
                "value": f"{fixed['server_cpu']:.0%}",
                "met": fixed["server_cpu"] < GOAL_REDIS_CORE,
            })
    idle = report.get("idle")
    if idle:
        for row in idle["rows"]:
            if "server_cpu" in row:
                goals.append({
                    "goal": f"idle: {row['scheme']}://, {row['workers']} worker{'s' * (row['workers'] > 1)}, "
                    f"{row['clients']} consumers parked: under {GOAL_IDLE_CORE:.0%} of a core",
                    "value": f"{row['server_cpu']:.2%}",
                    # judged as shown (to 0.01%): one clock tick in a 1 s window is 1% of a core
                    "met": round(row["server_cpu"], 4) < GOAL_IDLE_CORE and bool(row.get("check")),
                })
    return goals


def _ms(value: Any) -> str:
    return fmt_figure(value) if isinstance(value, (int, float)) else "-"


def _cpu(phase: dict[str, Any]) -> str:
    return f"{phase['server_cpu']:.0%} / {phase['client_cpu']:.0%}"


def _state(row: dict[str, Any]) -> str:
    if row.get("check"):
        return "ok"
    if row.get("not_run"):
        return f"not run: {row['not_run']}"
    return f"FAILED {row.get('error', '')}".strip()


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
                _where(row),
                row["consumers"],
                _ms(fixed.get("median_ms")),
                _ms(fixed.get("p99_ms")),
                f"{_ms(fixed['first_copy_ms'])} / {_ms(fixed['last_copy_ms'])}" if fixed else "-",
                _ms(high.get("median_ms")),
                _ms(high.get("p99_ms")),
                round(load["delivered_per_s"]) if load else "-",
                _ms(ll.get("median_ms")),
                _ms(ll.get("p99_ms")),
                _state(row),
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
                    _where(row),
                    f"{label}: {asked}",
                    phase["published"],
                    round(phase["delivered_per_s"]),
                    _cpu(phase),
                    phase["bytes_per_message"],
                ]
            )
    return Table(["channel", "phase", "published", "delivered msg/s", "cpu srv / gen", "bytes/msg"], rows)


def _handoff_table(report: dict[str, Any]) -> Table:
    headers, rows = handoff.table(report["handoff"])
    return Table(headers, rows)


def _idle_table(report: dict[str, Any]) -> Table:
    idle = report["idle"]
    rows: list[list[Any]] = []
    for row in idle["rows"]:
        if "server_cpu" in row:
            per = " + ".join(f"{v:.2%}" for v in row["per_process_cpu"]) if row.get("processes", 1) > 1 else "-"
            rows.append([f"{row['scheme']}://", row["workers"], row["clients"], f"{row['server_cpu']:.2%}", per, f"{row['client_cpu']:.2%}", _state(row)])
        else:
            rows.append([f"{row['scheme']}://", row["workers"], row["clients"], "-", "-", "-", _state(row)])
    return Table(["broker", "workers", "consumers parked", "server cpu (of a core)", "per process", "consumers' cpu", "check"], rows)


def _idle_note(report: dict[str, Any]) -> str:
    idle = report["idle"]
    text = (
        f"{idle['clients']} consumers ({', '.join(IDLE_CHANNELS)} in turn) parked on each server, nothing published, "
        f"over the same {idle.get('window_s', 0):g} s window; server cpu: user + system time of all its processes "
        "(uvicorn's supervisor, its workers and multiprocessing's resource tracker; per process: largest first)"
    )
    if idle.get("redis_server_cpu") is not None:
        text += f"; the redis-server started for the run used {idle['redis_server_cpu']:.2%} of a core meanwhile"
    return text + "."


def format_report(report: dict[str, Any]) -> str:
    o = report["options"]
    lines: list[str] = []
    if "handoff" in report:
        lines += handoff.format_report(report["handoff"]).splitlines()
        lines += [""]
    if "idle" in report:
        idle = _idle_table(report)
        lines += ["idle: the server's CPU with its consumers parked and nothing published:"]
        lines += text_table(idle.headers, idle.rows, {1, 2, 3, 5})
        lines += [_idle_note(report), ""]
    if report["results"]:
        lines += [
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
            "cpu srv / gen: the server's and the load generator's CPU time over the phase's wall time (100%: a core;",
            "with several workers, all of them);",
            "bytes/msg: what the consumers read per copy delivered (frames, HTTP heads, poll answers).",
        ]
        for row in report["results"]:
            if row.get("errors"):
                lines.append(f"  {_where(row)}: {row.get('error_count', len(row['errors']))} errors, first: {row['errors'][0]}")
        for why in report.get("skipped", []):
            lines.append(f"  not run: {why}")
    else:
        lines += [f"amfkit bench messaging: {', '.join(o['parts'])}"]
    lines += ["", "goals:"]
    for g in report["goals"]:
        lines.append(f"  {g['goal']}: {g['value']}: {'met' if g['met'] else 'NOT met'}")
    if report["results"]:
        lines += ["", f"anchor: {COMETD} (published, not measured here)."]
    lines += machine_lines(report)
    return "\n".join(lines)


def sections(report: dict[str, Any]) -> list[Section]:
    """One section: the table per channel (latency at both fixed rates, the most
    delivered) and the table per phase (rates, CPU, bytes), then the handoff's table
    (the worker messages article) and the idle one when they ran; charts of the
    messages/s, of the latencies and of the round trips; the goals, the fan-out and
    CometD's figures (the anchor) as findings, the articles' own figures as its `article` lines."""
    o = report["options"]
    rows = report["results"]
    charts = []
    bars = [Bar(_where(row), float(row["load"]["delivered_per_s"]), group=row.get("scheme", "memory")) for row in rows if row.get("load")]
    if bars:
        charts.append(Chart(f"messages delivered per second to {o['consumers']} consumers (higher is better)", "messages/s", bars))
    lat = []
    for key in ("fixed_rate", "high_rate", "load"):
        for row in rows:
            p = row.get(key)
            if p:
                la = p["latency"]
                label = f"at {p['target_per_s']:,.0f}/s" if key != "load" else "at the most"
                lat.append(Bar(f"{_where(row)} {label}", float(la["median_ms"]), float(la["min_ms"]), float(la["p99_ms"]), group=row["channel"]))
    if lat:
        charts.append(Chart("publish-to-delivery latency: median, bar from the fastest copy to p99 (lower is better)", "ms", lat, log=True))
    h = report.get("handoff")
    if h:
        trips = [
            Bar(f"{r['transport']} {r['size']}", float(r["p50_us"]), float(r["min_us"]), float(r["p99_us"]), group=r["transport"])
            for r in h["rows"] if "p50_us" in r
        ]  # fmt: skip
        if trips:
            ref = [Bar("article: MessageChannel (Flash Player 11.9)", handoff.ARTICLE_FIGURES["MessageChannel_ms"] * 1000 / handoff.ARTICLE_FIGURES["round_trips"], group="article")]
            charts.append(Chart("handoff: one round trip between two processes, median, bar from the fastest to p99 (lower is better)", "µs", trips, log=True, reference=ref))
    found = [f"{g['goal']}: {g['value']} ({'met' if g['met'] else 'NOT met'})." for g in report.get("goals", [])]
    found += [f"{_where(row)} FAILED: {row.get('error') or 'errors under load'}" for row in rows if row.get("check") is False]
    found += [f"{_where(row)}: not run ({row['not_run']})." for row in rows if row.get("not_run")]
    for row in rows:
        load, fixed = row.get("load"), row.get("fixed_rate")
        if fixed:
            fl = fixed["latency"]
            found.append(
                f"{_where(row)} at {fixed['target_per_s']:,.0f}/s: a message's first copy arrives after "
                f"{fmt_figure(fl['first_copy_ms'])} ms and its last after {fmt_figure(fl['last_copy_ms'])} ms (medians): "
                f"the copies to the {row['consumers']} consumers leave the server one after another."
            )
        if load:
            found.append(
                f"{_where(row)}: {load['delivered_per_s']:,.0f} messages/s delivered at most, the server using "
                f"{load['server_cpu']:.0%} of a core and the load generator {load['client_cpu']:.0%}."
            )
    if h:
        found += [f for f in handoff.findings(h) if not any(f.startswith(g["goal"]) for g in h["goals"])]
    if report.get("idle"):
        found.append(f"idle: {_idle_note(report)}")
        found += [f"idle {row['scheme']}://, {row['workers']} workers: {_state(row)}" for row in report["idle"]["rows"] if not row.get("check")]
    if rows:
        found.append(f"The anchor, {COMETD}: published by CometD, not measured here.")
    intro = ""
    if rows:
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
        if any("scheme" in row for row in rows):
            intro += " Rows naming a broker and workers ran on that shared broker with that many uvicorn workers."
    if h:
        intro += (
            f" Handoff (the worker messages article): two processes pass one message back and forth, "
            f"{h['round_trips']:,} round trips, through each transport (every reply checked), the median of {h['runs']} runs; "
            "the article's own figures were measured in Flash Player 11.9 on a 2013 Mac: compare ratios only."
        )
    if report.get("idle"):
        intro += f" Idle: {_idle_note(report)}"
    article = []
    if rows:
        article += [
            f"{ARTICLE_FIGURES['source']}: its application needed {ARTICLE_FIGURES['need']}.",
            f"its AMF3 InstrumentPrice Small/Medium/Large: {' / '.join(map(str, ARTICLE_FIGURES['bytes']['AMF3']))} bytes.",
        ]
    if h:
        article += handoff.article_lines()
    tables = []
    if rows:
        tables += [_summary_table(report), _phase_table(report)]
    if h:
        tables.append(_handoff_table(report))
    if report.get("idle"):
        tables.append(_idle_table(report))
    return [Section("Messaging: delivery through the gateway", intro.strip(), tables, charts, article=article, findings=found)]


def _names(text: str, choices: tuple[str, ...], what: str, p: argparse.ArgumentParser) -> tuple[str, ...]:
    picked = tuple(c for c in text.split(",") if c)
    unknown = [c for c in picked if c not in choices]
    if unknown or not picked:
        p.error(f"unknown {what} {', '.join(unknown) or '(none)'}; choose from {', '.join(choices)}")
    return picked


def parse_options(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="amfkit bench messaging", description=SUMMARY)
    p.add_argument(
        "--quick", action="store_true", help="10 consumers, 0.5 s per phase, 1 handoff run on 2 cores, 1 s idle (a correctness run)"
    )
    p.add_argument("--consumers", type=int, default=None, help=f"consumers, each its own client (default {GOAL_CONSUMERS}; --quick: 10)")
    p.add_argument("--duration", type=float, default=None, help="seconds per timed phase (default 5; --quick: 0.5)")
    p.add_argument("--channels", default=",".join(CHANNELS), help=f"which channels, comma-separated (default {','.join(CHANNELS)})")
    p.add_argument("--rate", type=float, default=GOAL_FIXED_RATE, help="messages/s delivered in total in the first fixed-rate phase (default 1000)")
    p.add_argument("--high-rate", type=float, default=GOAL_RATE, help="messages/s delivered in total in the second (default 20000)")
    p.add_argument("--window", type=int, default=16, help="the most: messages kept in flight (default 16)")
    p.add_argument("--size", choices=("small", "medium", "large"), default="small", help="the InstrumentPrice message (default small)")
    p.add_argument("--poll-interval", type=float, default=0.1, help="plain polling: seconds between a consumer's polls (default 0.1)")
    p.add_argument("--only", default=",".join(PARTS), help=f"which parts, comma-separated (default {','.join(PARTS)})")
    p.add_argument(
        "--brokers", default="memory",
        help="delivery: brokers, comma-separated, from memory,shm,redis (default memory); each runs with every --workers count",
    )  # fmt: skip
    p.add_argument("--workers", default="1", help="delivery: uvicorn worker counts, comma-separated (default 1; memory:// runs with 1 only)")
    p.add_argument("--redis", help="a Redis URL for the redis cases (default: start a redis-server on a free port for the run)")
    p.add_argument("--handoff-runs", type=int, default=None, help="handoff: runs per transport and message (default 5; --quick: 1)")
    p.add_argument("--handoff-round-trips", type=int, default=None, help="handoff: round trips per run (default 1000; --quick: 200)")
    p.add_argument("--idle-clients", type=int, default=None, help="idle: consumers parked (default: --consumers)")
    p.add_argument("--idle-duration", type=float, default=None, help="idle: seconds measured (default 10; --quick: 1)")
    p.add_argument("--json", dest="json_path", help="write the report as JSON")
    a = p.parse_args(argv)
    channels = _names(a.channels, CHANNELS, "channel(s)", p)
    parts = _names(a.only, PARTS, "part(s)", p)
    brokers = _names(a.brokers, BROKERS, "broker(s)", p)
    try:
        workers = tuple(int(w) for w in a.workers.split(",") if w)
    except ValueError:
        p.error(f"--workers takes counts, comma-separated, not {a.workers!r}")
    consumers = a.consumers if a.consumers is not None else (10 if a.quick else GOAL_CONSUMERS)
    duration = a.duration if a.duration is not None else (0.5 if a.quick else 5.0)
    if consumers < 1 or duration <= 0 or a.rate <= 0 or a.high_rate <= 0 or a.window < 1 or a.poll_interval <= 0:
        p.error("--consumers, --duration, --rate, --high-rate, --window and --poll-interval must be positive")
    handoff_runs = a.handoff_runs if a.handoff_runs is not None else (1 if a.quick else 5)
    round_trips = a.handoff_round_trips if a.handoff_round_trips is not None else (200 if a.quick else 1000)
    idle_clients = a.idle_clients if a.idle_clients is not None else consumers
    idle_duration = a.idle_duration if a.idle_duration is not None else (1.0 if a.quick else 10.0)
    if not workers or min(workers) < 1 or handoff_runs < 1 or round_trips < 1 or idle_clients < 1 or idle_duration <= 0:
        p.error("--workers, --handoff-runs, --handoff-round-trips, --idle-clients and --idle-duration must be positive")
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
        parts=parts,
        brokers=brokers,
        workers=workers,
        redis=a.redis,
        handoff_runs=handoff_runs,
        handoff_round_trips=round_trips,
        handoff_warmup=20 if a.quick else handoff.WARMUP,
        handoff_placements=handoff.PLACEMENTS[:1] if a.quick else handoff.PLACEMENTS,
        idle_clients=idle_clients,
        idle_duration=idle_duration,
        idle_cases=IDLE_CASES_QUICK if a.quick else IDLE_CASES,
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
        from amfkit.demo.services import instrument_price

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
    from amfkit.remoting.messages import AsyncMessage, AsyncMessageExt

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
    from amfkit.remoting import packet
    from amfkit.remoting.messages import ErrorMessage

    body = packet.decode(data).bodies[0]
    if isinstance(body.value, ErrorMessage) or not body.target.endswith("/onResult"):
        raise RuntimeError(f"fault: {getattr(body.value, 'faultCode', '')} {getattr(body.value, 'faultString', body.value)}"[:300])
    return body.value


def _ping() -> Any:
    from amfkit.remoting.messages import CommandMessage, Operation

    return CommandMessage(operation=Operation.CLIENT_PING, headers={"DSMessagingVersion": 1.0, "DSId": "nil"})


def _subscribe(client_id: str) -> Any:
    from amfkit.remoting.messages import CommandMessage, Operation

    return CommandMessage(operation=Operation.SUBSCRIBE, destination=_DESTINATION, clientId=None, headers={"DSId": client_id, "DSEndpoint": "amf"})


def _poll(client_id: str) -> Any:
    """A channel's poll in its small form (`DSC`), as Flex sends it."""
    from amfkit.remoting.messages import CommandMessageExt, Operation, new_id

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
    from amfkit.remoting.messages import CommandMessage, Operation

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
    from amfkit.remoting.messages import AcknowledgeMessage, CommandMessage, Operation

    # Ping, subscribe, then open the stream on the same keep-alive connection: with
    # several workers, a stream opened on a new connection may reach a worker that did
    # not see the ping (which refuses it: a stream needs a greeted client).
    stream = await _handshake(consumer, port)
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
    from amfkit.remoting.messages import AcknowledgeMessage, ErrorMessage

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
        from amfkit.remoting import packet

        data = packet.encode(packet.Envelope(0, bodies=[packet.Body(f"MessagingBench.{method}", "/1", list(args))]))
        status, out = await self.conn.request(_PATH, data)
        if status != 200:
            raise RuntimeError(f"MessagingBench.{method}: HTTP {status}")
        return _answer(out)

    async def disconnect(self, client_ids: list[str]) -> None:
        """Disconnect each client (a DISCONNECT command carrying its DSId)."""
        from amfkit.remoting.messages import CommandMessage, Operation

        for client_id in client_ids:
            await self.conn.request(_PATH, _flex_packet(CommandMessage(operation=Operation.DISCONNECT, headers={"DSId": client_id})))

    async def publish(self, count: int) -> None:
        first = self.seq
        self.seq += count
        self.calls += 1
        await self.call("publish", count, first, self.size)


# --- the phases ---------------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds of all its threads) of a process (Linux
    /proc); None when it is gone or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _tree_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of a process and of every process under it (uvicorn's supervisor
    and its workers), by pid."""
    stats: dict[int, tuple[int, float]] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                st = _stat(int(name))
                if st is not None:
                    stats[int(name)] = st
    found: dict[int, float] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        if p in stats and p not in found:
            found[p] = stats[p][1]
            todo += [c for c, (parent, _) in stats.items() if parent == p]
    return found


def _server_cpu(pid: int) -> float:
    """The server's user + system CPU seconds: its process and those under it (0 where
    there is no /proc)."""
    return sum(_tree_cpu(pid).values())


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
        await _release(consumers, publisher)
    return _verdict(out, hub, "under load")


async def _park(spec: dict[str, Any]) -> dict[str, Any]:
    """The idle phase's consumers: subscribe them (the channels in turn), say "ready" on
    standard output, stay parked until "stop" comes on standard input; then check that
    nothing arrived and nothing failed."""
    _message_types()
    hub = _Hub(spec["size"])
    port, n, mix = spec["port"], spec["consumers"], spec["channels"]
    consumers = [_Consumer(i, hub) for i in range(n)]
    out: dict[str, Any] = {"check": False, "channels": {c: sum(1 for i in range(n) if mix[i % len(mix)] == c) for c in mix}}
    gate = asyncio.Semaphore(32)

    async def start(c: _Consumer) -> None:
        async with gate:
            channel = mix[c.index % len(mix)]
            if channel == "long-poll":
                await _start_polling(c, port, None)
            elif channel == "streaming":
                await _start_streaming(c, port)
            else:
                await _start_websocket(c, port)

    publisher = _Publisher(hub, port, spec["size"])
    loop = asyncio.get_running_loop()
    try:
        t0 = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*(start(c) for c in consumers)), 60)
        await publisher.connect()
        stats = await publisher.call("stats")
        out["setup_s"] = round(time.perf_counter() - t0, 3)
        if stats.get("consumers") != n:
            raise RuntimeError(f"the broker holds {stats.get('consumers')} consumers, not {n}")
        await asyncio.sleep(spec.get("settle", 0.5))  # the last subscribe's answers, parked polls
        print("ready", flush=True)
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if line.strip() != "stop":
            raise RuntimeError(f"told {line.strip()!r}, not stop")
        if hub.delivered:
            raise RuntimeError(f"{hub.delivered} messages arrived while nothing was published")
        # A new connection: the server closed the idle one (its keep-alive timeout).
        if publisher.conn.transport is not None:
            publisher.conn.transport.close()
        publisher = _Publisher(hub, port, spec["size"])
        await publisher.connect()
        stats = await publisher.call("stats")
        if stats.get("consumers") != n:
            raise RuntimeError(f"after the idle phase the broker holds {stats.get('consumers')} consumers, not {n}")
        out["broker"] = stats
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:600]
        print("failed", flush=True)
    finally:
        await _release(consumers, publisher)
    return _verdict(out, hub, "while parked")


async def _release(consumers: list[_Consumer], publisher: _Publisher) -> None:
    """Disconnect every client (its parked poll is answered, its stream ends) and close
    the connections, so that the server has nothing held when it is told to stop."""
    for c in consumers:
        c.closed = True
    with contextlib.suppress(Exception):
        await asyncio.wait_for(publisher.disconnect([c.client_id for c in consumers if c.client_id != "nil"]), 10)
    for c in consumers:
        c.close()
    if publisher.conn.transport is not None:
        publisher.conn.transport.close()
    await asyncio.sleep(0.05)


def _verdict(out: dict[str, Any], hub: _Hub, when: str) -> dict[str, Any]:
    """`out` with the load generator's errors and whether the phase checked out."""
    out["errors"] = hub.errors
    out["error_count"] = hub.error_count
    out["check"] = "error" not in out and hub.error_count == 0
    if hub.error_count and "error" not in out:
        out["error"] = f"{hub.error_count} errors {when}, first: {hub.errors[0]}"
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
    result = runner(_park(spec) if spec.get("idle") else _generate(spec))
    with open(spec["out"], "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
