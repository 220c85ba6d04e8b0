"""The worker messages article between two processes: one message back and forth, 1000
round trips, through each transport in the same run (`amfkit bench messaging --only
handoff`, or `python -m amfkit_bench.handoff`; docs/benchmarks.md, "handoff").
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import math
import multiprocessing
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any, Callable, Optional

__all__ = [
    "GOAL_SPEEDUP", "PLACEMENTS", "ARTICLE_FIGURES", "RAW", "SIZES", "TRANSPORTS", "Options", "cpus", "format_report", "left_lines",
    "local_redis", "main", "parse_options", "run", "shown_url", "with_prefix",
]  # fmt: skip

#: Transports in report order: `mp.Queue` is the baseline; "shm segment" is the raw
#: segment under the shm broker, its round trips in Rust on both sides (the floor).
TRANSPORTS = ("mp.Queue", "mp.Pipe", "os.pipe", "shm", "shm segment", "redis")
#: The raw segment's row: what the shm broker's round trip is compared with.
RAW = "shm segment"
BASELINE = "mp.Queue"
#: Where A and B run: each pinned to a core of its own, or both to one core.
PLACEMENTS = ("2 cores", "1 core")
#: Size label -> the body sent (AMF3: 3 and 2,048 bytes).
SIZES: dict[str, str] = {"1 char": "1", "2 KB": "x" * 2045}
#: The shm broker's speed against mp.Queue's, 1-character message (round trips/s).
GOAL_SPEEDUP = 50.0
GOAL_SIZE = "1 char"

CHECKS = 20
WARMUP = 100
#: Seconds a broker's receive waits for a reply before the transport fails.
REPLY_TIMEOUT = 10.0
#: Seconds B may take to start and say it is ready.
START_TIMEOUT = 60.0

#: The article's figures (Flash Player 11.9 on a 2013 Mac): not comparable in absolute
#: terms with ours, only its ratio.
ARTICLE_FIGURES: dict[str, Any] = {
    "source": "the worker messages article: Send ActionScript Worker Messages 2.5x Faster, Jackson Dunstan, late 2013",
    "machine": "Flash Player 11.9.900.117 (release) in Chrome 30, 2.3 GHz Intel Core i7, Mac OS X 10.9.0",
    "message": 'a one-character string ("1"), between two ActionScript workers',
    "round_trips": 1000,
    "MessageChannel_ms": 153.0,
    "MessageChannel_column": 6.53,  # its "Messages/sec" column: 1000 / 153 ms, per millisecond
    "drop_box_speedup": 2.5,  # setSharedProperty/getSharedProperty polled against MessageChannel
}


@dataclasses.dataclass
class Options:
    round_trips: int = 1000
    runs: int = 5
    warmup: int = WARMUP
    transports: tuple[str, ...] = TRANSPORTS
    sizes: tuple[str, ...] = tuple(SIZES)
    placements: tuple[str, ...] = PLACEMENTS
    #: A Redis URL for the redis row; None: start a redis-server for the run if there is one.
    redis: Optional[str] = None
    json_path: Optional[str] = None
    progress: Optional[Callable[..., None]] = dataclasses.field(default=None, repr=False, compare=False)


class CheckFailed(Exception):
    """A reply differs from what was sent, or a count does not add up."""


# --------------------------------------------------------------------------- the ends


class _End:
    """One side of a transport: `send(body)` and `recv() -> body`."""

    def send(self, body: Any) -> None:
        raise NotImplementedError

    def recv(self) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


#: What A's watchdog puts in A's own queue to end a blocked `get` (B hung or died).
_ABORT = None


class _QueueEnd(_End):
    def __init__(self, out: Any, into: Any) -> None:
        from amfkit import amf3

        self.out, self.into = out, into
        self.encode, self.decode = amf3.encode, amf3.decode

    def send(self, body: Any) -> None:
        self.out.put(self.encode(body))

    def recv(self) -> Any:
        data = self.into.get()
        if data is _ABORT:
            raise TimeoutError("no reply: the other process hung or died")
        return self.decode(data)


class _PipeEnd(_End):
    def __init__(self, conn: Connection) -> None:
        from amfkit import amf3

        self.conn = conn
        self.encode, self.decode = amf3.encode, amf3.decode

    def send(self, body: Any) -> None:
        self.conn.send_bytes(self.encode(body))

    def recv(self) -> Any:
        return self.decode(self.conn.recv_bytes())

    def close(self) -> None:
        self.conn.close()


_HEADER = struct.Struct("<I")


class _FdEnd(_End):
    """Raw pipes: one `os.write` per message (a 4-byte length, then the bytes), read with
    `os.read` into a buffer (with one message in flight, one read usually holds it whole)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        from amfkit import amf3

        self.rfd, self.wfd = read_fd, write_fd
        self.encode, self.decode = amf3.encode, amf3.decode
        self.buf = bytearray()

    def send(self, body: Any) -> None:
        data = self.encode(body)
        view = memoryview(_HEADER.pack(len(data)) + data)
        while view:
            view = view[os.write(self.wfd, view) :]

    def recv(self) -> Any:
        buf, fd = self.buf, self.rfd
        while len(buf) < 4:
            self._more(fd)
        n = _HEADER.unpack_from(buf)[0] + 4
        while len(buf) < n:
            self._more(fd)
        data = bytes(buf[4:n])
        del buf[:n]
        return self.decode(data)

    def _more(self, fd: int) -> None:
        chunk = os.read(fd, 65536)
        if not chunk:
            raise EOFError("the other process closed its pipe")
        self.buf += chunk

    def close(self) -> None:
        for fd in (self.rfd, self.wfd):
            with contextlib.suppress(OSError):
                os.close(fd)


class _BrokerEnd(_End):
    def __init__(self, url: str, out: str, into: str) -> None:
        from amfkit.messaging import Broker

        self.broker = Broker.open(url)
        self.out = out
        self.sub = self.broker.subscribe(into)

    def send(self, body: Any) -> None:
        self.broker.publish(self.out, body)

    def recv(self) -> Any:
        message = self.sub.receive(REPLY_TIMEOUT)
        if message is None:
            raise TimeoutError(f"no message on {self.sub.destination!r} within {REPLY_TIMEOUT:g} s")
        return message.body

    def close(self) -> None:
        self.sub.close()
        shutdown = getattr(self.broker, "shutdown", None)
        if shutdown is not None:
            shutdown()  # a shared broker: stop its listener, let go of the store


class _Fd:
    """A file descriptor handed to a spawned process (duplicated into it as it starts)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self) -> Any:
        from multiprocessing.reduction import DupFd

        return (_Fd._rebuild, (DupFd(self.fd),))

    @staticmethod
    def _rebuild(dup: Any) -> _Fd:
        return _Fd(dup.detach())


class _SegmentEnd(_End):
    """The raw segment under the shm broker (`ShmSegment`), no broker: the body's AMF3
    appended to one log and read from the other. The timed round trips run in Rust on
    both sides (`shm_ping` in A, `shm_echo` in B: an append, a wait on the log's head, a
    read, no Python per message, and B echoes the bytes as they came); the checks before
    go through Python (append, read, and wait on the bell)."""

    def __init__(self, url: str, out: str, into: str) -> None:
        from amfkit import amf3
        from amfkit._amfkit import ShmSegment

        self.seg = ShmSegment(url.partition("://")[2])
        self.out, self.into = out, into
        self.cursor = self.seg.head(into)  # before the other side may send
        self.encode, self.decode = amf3.encode, amf3.decode

    def send(self, body: Any) -> None:
        self.seg.append(self.out, self.encode(body))

    def recv(self) -> Any:
        seg = self.seg
        deadline = time.monotonic() + REPLY_TIMEOUT
        while True:
            bell = seg.bell()
            items, self.cursor, _ = seg.read(self.into, self.cursor, 1)
            if items:
                return self.decode(items[0][1])
            if time.monotonic() > deadline:
                raise TimeoutError(f"no record on {self.into!r} within {REPLY_TIMEOUT:g} s")
            seg.wait(bell, 0.1)

    def round_trips(self, body: Any, n: int) -> list[int]:
        """`n` timed round trips of `body`, in Rust; each one's nanoseconds (every reply
        compared with what was sent)."""
        from amfkit._amfkit import shm_ping

        times, self.cursor = shm_ping(self.seg, self.out, self.into, self.cursor, self.encode(body), n, REPLY_TIMEOUT)
        return times

    def echo(self) -> int:
        """B: echo every record until A's None; how many were echoed (the watchdog ends
        a B that waits forever)."""
        from amfkit._amfkit import shm_echo

        return shm_echo(self.seg, self.into, self.out, self.cursor, self.encode(None), 3600.0)

    def close(self) -> None:
        self.seg.close()


def _b_end(kind: str, spec: Any) -> _End:
    """B's end of a transport, from what A handed it."""
    if kind == "mp.Queue":
        return _QueueEnd(spec[1], spec[0])
    if kind == "mp.Pipe":
        return _PipeEnd(spec)
    if kind == "os.pipe":
        return _FdEnd(spec[0].fd, spec[1].fd)
    if kind == RAW:
        return _SegmentEnd(spec, "pong", "ping")
    return _BrokerEnd(spec, "pong", "ping")


def _pin(cpu: int | None) -> None:
    """Run the calling thread (and the threads it starts from now on) on `cpu` only."""
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


def _echo(kind: str, spec: Any, control: Connection, cpu: int | None = None) -> None:
    """Process B: open its end, say it is ready, echo every body until None; then say
    how many it echoed."""
    count = 0
    end: _End | None = None
    try:
        _pin(cpu)
        end = _b_end(kind, spec)
        control.send(("ready", os.getpid()))
        gc.disable()
        if isinstance(end, _SegmentEnd):
            control.send(("done", end.echo()))
            return
        while True:
            body = end.recv()
            if body is None:
                break
            end.send(body)
            count += 1
        control.send(("done", count))
    except BaseException as exc:  # noqa: BLE001 (told to A, whatever it is)
        with contextlib.suppress(Exception):
            control.send(("error", f"{type(exc).__name__}: {exc}"[:500]))
    finally:
        if end is not None:
            with contextlib.suppress(Exception):
                end.close()


# --------------------------------------------------------------------------- one transport


class _Pair:
    """A's end of a transport and process B at the other end."""

    def __init__(self, kind: str, url: str | None, cpu: int | None = None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.kind = kind
        self.control, their_control = ctx.Pipe()
        theirs: list[Any] = []  # A's copies of B's ends: closed once B has them
        spec: Any
        if kind == "mp.Queue":
            ab, ba = ctx.Queue(), ctx.Queue()
            self.end: _End = _QueueEnd(ab, ba)
            self.abort: Callable[[], None] = lambda: ba.put(_ABORT)
            spec = (ab, ba)
        elif kind == "mp.Pipe":
            mine, other = ctx.Pipe(duplex=True)
            self.end = _PipeEnd(mine)
            self.abort = lambda: None  # B's end closes when B dies: A's read ends
            spec = other
            theirs.append(other)
        elif kind == "os.pipe":
            r1, w1 = os.pipe()  # A -> B
            r2, w2 = os.pipe()  # B -> A
            self.end = _FdEnd(r2, w1)
            self.abort = lambda: None
            spec = (_Fd(r1), _Fd(w2))
            theirs += [r1, w2]
        elif kind == RAW:
            assert url is not None
            self.end = _SegmentEnd(url, "ping", "pong")  # its cursor in "pong" before B starts
            self.abort = lambda: None  # A's wait times out
            spec = url
        else:
            assert url is not None
            self.end = _BrokerEnd(url, "ping", "pong")  # subscribed to "pong" before B starts
            self.abort = lambda: None  # A's receive times out
            spec = url
        self.process = ctx.Process(target=_echo, args=(kind, spec, their_control, cpu), name=f"handoff-{kind}", daemon=True)
        try:
            self.process.start()
        finally:
            their_control.close()
            for t in theirs:
                if isinstance(t, int):
                    os.close(t)
                else:
                    t.close()
        if not self.control.poll(START_TIMEOUT):
            self.close()
            raise RuntimeError(f"process B did not start within {START_TIMEOUT:g} s")
        what, value = self.control.recv()
        if what != "ready":
            self.close()
            raise RuntimeError(f"process B failed: {value}")
        self.pid = int(value)
        self.sent = 0
        self.finished = False

    def finish(self) -> int:
        """Tell B to stop; how many bodies it echoed."""
        self.end.send(None)
        if not self.control.poll(REPLY_TIMEOUT):
            raise RuntimeError("process B did not finish")
        what, value = self.control.recv()
        if what != "done":
            raise RuntimeError(f"process B failed: {value}")
        self.finished = True
        return int(value)

    def error(self) -> str | None:
        """What B said went wrong, if it said so."""
        with contextlib.suppress(Exception):
            if self.control.poll(0.5):
                what, value = self.control.recv()
                if what == "error":
                    return str(value)
        return None

    @contextlib.contextmanager
    def watchdog(self, seconds: float) -> Iterator[None]:
        """Kill B and end A's wait if what follows takes longer than `seconds`."""

        def fire() -> None:
            self.process.kill()
            self.abort()

        timer = threading.Timer(seconds, fire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def close(self) -> None:
        if getattr(self, "finished", False):
            self.process.join(5)
        if self.process.is_alive():  # failed, or hung: no need to wait for it
            self.process.kill()
            self.process.join(5)
        self.end.close()
        self.control.close()


def _check(pair: _Pair, size: str) -> None:
    """Distinct bodies of the size, each reply equal to what was sent, in order."""
    base = SIZES[size]
    for i in range(CHECKS):
        body = str(i % 10) if len(base) == 1 else f"{i:04d}" + base[4:]
        pair.end.send(body)
        pair.sent += 1
        got = pair.end.recv()
        if got != body:
            raise CheckFailed(f"check {i}: sent {body[:20]!r} ({len(body)} chars), got {str(got)[:20]!r}")


def _series(pair: _Pair, body: str, n: int) -> list[int]:
    """`n` timed round trips (ns each); every reply compared after the clock is read."""
    end = pair.end
    if isinstance(end, _SegmentEnd):
        pair.sent += n
        return end.round_trips(body, n)
    send, recv = end.send, end.recv
    clock = time.perf_counter_ns
    times = [0] * n
    for i in range(n):
        t0 = clock()
        send(body)
        got = recv()
        t1 = clock()
        times[i] = t1 - t0
        if got != body:
            raise CheckFailed(f"round trip {i}: the reply differs from what was sent ({str(got)[:20]!r})")
    pair.sent += n
    return times


def _pct(sorted_ns: list[int], p: float) -> float:
    n = len(sorted_ns)
    return sorted_ns[min(n - 1, max(0, math.ceil(p * n) - 1))] / 1000.0


def _wire(kind: str, body: str) -> int:
    """Bytes carried per message: the body's AMF3 (a broker: its message record)."""
    from amfkit import amf3

    if kind in ("shm", "redis"):
        from amfkit.messaging.broker import make_message
        from amfkit.messaging.shared import encode_message

        return len(encode_message(make_message("ping", body, None, None, None)))
    return len(amf3.encode(body))


def cpus(placement: str) -> tuple[int | None, int | None] | None:
    """The CPUs of A and B for a placement; None when this process may not use two;
    (None, None) where processes cannot be pinned (left to the scheduler)."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return (None, None)
    if placement == "2 cores":
        return (allowed[0], allowed[1]) if len(allowed) > 1 else None
    return (allowed[0], allowed[0])


def _transport(kind: str, url: str | None, options: Options, placement: str, where: tuple[int | None, int | None]) -> list[dict[str, Any]]:
    """The rows of one transport, one per size, A and B on the CPUs `where` (a failure
    is each row's `error`)."""
    from amfkit import amf3

    rows: list[dict[str, Any]] = [
        {"transport": kind, "placement": placement, "cpus": list(where), "size": size, "body_bytes": len(amf3.encode(SIZES[size]))}
        for size in options.sizes
    ]
    pair: _Pair | None = None
    saved = os.sched_getaffinity(0) if where[0] is not None else None
    try:
        _pin(where[0])
        pair = _Pair(kind, url, where[1])
        per_round_trip = 0.05 if kind == "redis" else 0.01
        limit = 30 + per_round_trip * len(options.sizes) * (CHECKS + options.warmup + options.runs * options.round_trips)
        with pair.watchdog(limit):
            for row in rows:
                size = str(row["size"])
                body = SIZES[size]
                row["wire_bytes"] = _wire(kind, body)
                _check(pair, size)
                row["checked"] = CHECKS
                gc.collect()
                gc.disable()
                try:
                    _series(pair, body, options.warmup)
                    runs = [_series(pair, body, options.round_trips) for _ in range(options.runs)]
                finally:
                    gc.enable()
                totals = sorted((sum(times), i) for i, times in enumerate(runs))
                median_total, median_run = totals[(len(totals) - 1) // 2]
                times = sorted(runs[median_run])
                total_s = median_total / 1e9
                row.update(
                    round_trips=options.round_trips,
                    runs=options.runs,
                    warmup=options.warmup,
                    total_ms=median_total / 1e6,
                    total_min_ms=totals[0][0] / 1e6,
                    total_max_ms=totals[-1][0] / 1e6,
                    round_trips_per_s=options.round_trips / total_s if total_s > 0 else 0.0,
                    p50_us=_pct(times, 0.5),
                    p99_us=_pct(times, 0.99),
                    min_us=times[0] / 1000.0,
                    max_us=times[-1] / 1000.0,
                )
            echoed = pair.finish()
        if echoed != pair.sent:
            raise CheckFailed(f"process B echoed {echoed} messages, A sent {pair.sent}")
        for row in rows:
            row["check"] = True
    except Exception as exc:  # a failed transport is its rows' error, never a crash
        said = pair.error() if pair is not None else None
        text = f"{type(exc).__name__}: {exc}" + (f" (process B: {said})" if said else "")
        for row in rows:
            row["check"] = False
            row["error"] = text[:600]
            for key in ("total_ms", "round_trips_per_s", "p50_us", "p99_us"):
                row.pop(key, None)
    finally:
        if pair is not None:
            pair.close()
        if saved is not None:
            os.sched_setaffinity(0, saved)
    return rows


# --------------------------------------------------------------------------- Redis


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@contextlib.contextmanager
def local_redis() -> Iterator[tuple[str | None, int | None, str]]:
    """A throw-away redis-server on a free port of 127.0.0.1 (no persistence, files in a
    temporary directory), stopped after: yields (url, pid, "") or, without one, (None,
    None, why)."""
    from .servers import free_port

    executable = shutil.which("redis-server")
    if executable is None:
        yield None, None, "redis-server is not installed (apt-get install redis-server), and no --redis URL was given"
        return
    with tempfile.TemporaryDirectory(prefix="amfkit-bench-redis-") as workdir:
        proc = None
        why = "redis-server did not start"
        for _ in range(3):  # a free port can be taken before the server binds it
            port = free_port()
            argv = [
                executable, "--bind", "127.0.0.1", "--port", str(port), "--protected-mode", "no",
                "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", workdir, "--logfile", "",
            ]  # fmt: skip
            proc = subprocess.Popen(argv, cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and proc.poll() is None and not _ping(port):
                time.sleep(0.02)
            if proc.poll() is None and _ping(port):
                break
            why = f"redis-server did not start on port {port} (exit {proc.poll()})"
            _stop(proc)
            proc = None
        try:
            if proc is None:
                yield None, None, why
            else:
                yield f"redis://127.0.0.1:{port}/0", proc.pid, ""
        finally:
            if proc is not None:
                _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def shown_url(url: str) -> str:
    """A URL for a report: without its user and password."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if sep else url


def with_prefix(url: str, prefix: str) -> str:
    """A redis:// URL with its own key prefix (runs never see each other's keys)."""
    return f"{url}{'&' if '?' in url else '?'}prefix={prefix}"


# --------------------------------------------------------------------------- run


def run(options: Options, redis_url: str | None = None, redis_why: str | None = None) -> dict[str, Any]:
    """Every transport, each size: the rows, the ratios to mp.Queue and the goal. The
    redis row uses `redis_url` (or `options.redis`); without either, a redis-server is
    started for the run when there is one, unless `redis_why` says why there is none."""
    redis_url = redis_url or options.redis
    if redis_url is None and redis_why is None and "redis" in options.transports:
        with local_redis() as (started_url, _, why):
            return run(options, started_url, why)
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    tag = f"{os.getpid()}-{time.monotonic_ns() % 1_000_000}"
    steps = [(placement, kind) for placement in options.placements for kind in options.transports]
    for i, (placement, kind) in enumerate(steps):
        if options.progress:
            options.progress(f"handoff: {kind}, {placement}", i, len(steps))
        where = cpus(placement)
        url: str | None = None
        why = "" if where is not None else "this process may run on one CPU only"
        if kind in ("shm", RAW):
            url = f"shm://bench-{tag}-{i}"
        elif kind == "redis":
            if redis_url is None:
                why = why or redis_why or "no Redis"
            url = redis_url and with_prefix(redis_url, f"bench-{tag}-{i}:")
        if why or where is None:
            rows += [{"transport": kind, "placement": placement, "size": size, "check": None, "not_run": why} for size in options.sizes]
            continue
        rows += _transport(kind, url, options, placement, where)
    _ratios(rows)
    report: dict[str, Any] = {
        "round_trips": options.round_trips,
        "runs": options.runs,
        "warmup": options.warmup,
        "checked": CHECKS,
        "placements": list(options.placements),
        "bodies": {size: {"chars": len(body), "amf3_bytes": rows_bytes(rows, size)} for size, body in SIZES.items() if size in options.sizes},
        "rows": rows,
        "ok": bool(rows) and all(row.get("check") is not False for row in rows) and any(row.get("check") for row in rows),
        "elapsed_s": round(time.perf_counter() - started, 3),
    }
    report["goals"] = goals(report)
    return report


def rows_bytes(rows: list[dict[str, Any]], size: str) -> int | None:
    for row in rows:
        if row["size"] == size and "body_bytes" in row:
            return int(row["body_bytes"])
    return None


def _ratios(rows: list[dict[str, Any]]) -> None:
    """Each row's speed against mp.Queue's of the same size (above 1: faster)."""
    base = {(row["placement"], row["size"]): row.get("total_ms") for row in rows if row["transport"] == BASELINE}
    for row in rows:
        ref, mine = base.get((row["placement"], row["size"])), row.get("total_ms")
        row["vs_queue"] = ref / mine if ref and mine else None


def row_of(report: dict[str, Any], transport: str, size: str, placement: str | None = None) -> dict[str, Any] | None:
    """The row of a transport and size (in `placement`; None: the first placement run)."""
    for row in report["rows"]:
        if row["transport"] == transport and row["size"] == size and placement in (None, row["placement"]):
            return row
    return None


def _measured(report: dict[str, Any], transport: str, size: str) -> dict[str, Any] | None:
    """The row of the first placement where it was measured (else the first row)."""
    for placement in report.get("placements", PLACEMENTS):
        row = row_of(report, transport, size, placement)
        if row is not None and "total_ms" in row:
            return row
    return row_of(report, transport, size)


def goals(report: dict[str, Any]) -> list[dict[str, Any]]:
    row = _measured(report, "shm", GOAL_SIZE)
    if row is None:
        return []
    goal = f"handoff: the shm broker at least {GOAL_SPEEDUP:g}x mp.Queue's round trips/s ({GOAL_SIZE} message, {row['placement']})"
    ratio = row.get("vs_queue")
    if ratio is None:
        return [{"goal": goal, "value": f"not measured ({row.get('error') or row.get('not_run') or 'no mp.Queue row'})", "met": False}]
    return [{"goal": goal, "value": f"{ratio:.2f}x ({row['round_trips_per_s']:,.0f} vs {row['round_trips_per_s'] / ratio:,.0f} round trips/s)", "met": ratio >= GOAL_SPEEDUP}]


# --------------------------------------------------------------------------- the report


def table(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """Headers and rows: one per placement, transport and size, then the article's."""
    from .text import fmt_factor, fmt_figure

    n = report["round_trips"]
    headers = [
        "transport", "A, B on", "message", "bytes sent", f"total ms / {n:,} round trips", "round trips/s", "p50 µs", "p99 µs",
        "vs mp.Queue", "check",
    ]  # fmt: skip
    rows: list[list[Any]] = []
    for row in report["rows"]:
        label = f"{row['size']} ({row['body_bytes']} B AMF3)" if "body_bytes" in row else row["size"]
        pinned = row.get("cpus") or [None]
        where = row["placement"] + (f" ({', '.join(map(str, pinned))})" if pinned[0] is not None else " (not pinned)" if "cpus" in row else "")
        if "total_ms" in row:
            ratio = row.get("vs_queue")
            rows.append(
                [
                    row["transport"], where, label, row.get("wire_bytes", "-"),
                    f"{fmt_figure(row['total_ms'])} ({fmt_figure(row['total_min_ms'])}-{fmt_figure(row['total_max_ms'])})",
                    round(row["round_trips_per_s"]), fmt_figure(row["p50_us"]), fmt_figure(row["p99_us"]),
                    "baseline" if row["transport"] == BASELINE else (fmt_factor(ratio) if ratio else "-"),
                    "ok",
                ]
            )  # fmt: skip
        else:
            why = row.get("error") or f"not run: {row.get('not_run')}"
            rows.append([row["transport"], where, label, "-", "-", "-", "-", "-", "-", ("FAILED " if row.get("error") else "") + why])
    s = ARTICLE_FIGURES
    rows.append(
        [
            "article: MessageChannel", "2 workers", '"1" (Flash Player 11.9, 2013 Mac)', "-", fmt_figure(s["MessageChannel_ms"]),
            round(s["round_trips"] / s["MessageChannel_ms"] * 1000), "-", "-", "-", "its figure",
        ]
    )  # fmt: skip
    rows.append(["article: drop box", "2 workers", "setSharedProperty, polled", "-", "-", "-", "-", "-", f"{s['drop_box_speedup']:g}x MessageChannel", "its ratio"])
    return headers, rows


def article_lines() -> list[str]:
    s = ARTICLE_FIGURES
    return [
        f"{s['source']}: {s['round_trips']:,} round trips of {s['message']}.",
        f"MessageChannel: {s['MessageChannel_ms']:g} ms for {s['round_trips']:,} round trips (its 'messages/sec' column reads "
        f"{s['MessageChannel_column']:g}: 1000 / 153 ms, per millisecond); the drop box polled with setSharedProperty: "
        f"{s['drop_box_speedup']:g}x faster.",
        f"Measured on {s['machine']}: not comparable with ours in absolute terms, only its ratio.",
    ]


def left_lines(report: dict[str, Any]) -> list[str]:
    """Per placement, the shm broker's round trip against the raw segment's (what is left
    is the broker's own work)."""
    from .text import fmt_figure

    lines = []
    for placement in report.get("placements", PLACEMENTS):
        shm, raw = row_of(report, "shm", GOAL_SIZE, placement), row_of(report, RAW, GOAL_SIZE, placement)
        if shm and raw and "p50_us" in shm and "p50_us" in raw:
            lines.append(
                f"{GOAL_SIZE}, {placement}: the raw segment's ping-pong (Rust on both sides, no Python per message) takes "
                f"{fmt_figure(raw['p50_us'])} µs a round trip (median), the shm broker's {fmt_figure(shm['p50_us'])} µs: the "
                f"broker's own work (its record, the Message, both sides' Python calls) is the "
                f"{fmt_figure(max(shm['p50_us'] - raw['p50_us'], 0.0))} µs left."
            )
    return lines


def findings(report: dict[str, Any]) -> list[str]:
    from .text import fmt_factor, fmt_figure

    found = [f"{g['goal']}: {g['value']} ({'met' if g['met'] else 'NOT met'})." for g in report.get("goals", [])]
    found += left_lines(report)
    for placement in report.get("placements", PLACEMENTS):
        for size in SIZES:
            shm, queue = row_of(report, "shm", size, placement), row_of(report, BASELINE, size, placement)
            if shm and queue and shm.get("vs_queue"):
                found.append(
                    f"{size}, {placement}: a round trip through the shm broker takes {fmt_figure(shm['p50_us'])} µs (median), "
                    f"through mp.Queue {fmt_figure(queue['p50_us'])} µs: {fmt_factor(shm['vs_queue'])} the round trips/s "
                    f"(the article's drop box: {ARTICLE_FIGURES['drop_box_speedup']:g}x its MessageChannel)."
                )
        fastest = [r for r in report["rows"] if r["size"] == GOAL_SIZE and r["placement"] == placement and "p50_us" in r]
        if fastest:
            best = min(fastest, key=lambda r: r["p50_us"])
            found.append(f"The fastest {GOAL_SIZE} round trip, {placement}: {best['transport']}, {fmt_figure(best['p50_us'])} µs (median).")
    if len(report.get("placements", ())) > 1:
        for transport in TRANSPORTS:
            two, one = (row_of(report, transport, GOAL_SIZE, p) for p in ("2 cores", "1 core"))
            if two and one and "p50_us" in two and "p50_us" in one:
                found.append(
                    f"{transport}, {GOAL_SIZE}: {fmt_figure(two['p50_us'])} µs with A and B on two cores, "
                    f"{fmt_figure(one['p50_us'])} µs on one ({fmt_factor(one['p50_us'] / two['p50_us'])})."
                )
    for row in report["rows"]:
        if row["size"] != GOAL_SIZE:
            continue
        if row.get("not_run"):
            found.append(f"{row['transport']}, {row['placement']}: not run ({row['not_run']}).")
        elif row.get("error"):
            found.append(f"{row['transport']}, {row['placement']} FAILED: {row['error']}")
    return found


def format_report(report: dict[str, Any]) -> str:
    from .text import text_table

    headers, rows = table(report)
    lines = [
        f"handoff (the worker messages article): one message back and forth between two processes, "
        f"{report['round_trips']:,} round trips, the median of {report['runs']} runs after {report['warmup']} warm-up round trips:",
    ]
    lines += text_table(headers, rows, {3, 4, 5, 6, 7})
    lines += [
        "A, B on: the CPUs the two processes are pinned to; total ms: the median run (min-max over the runs); p50, p99:",
        "that run's round trips; vs mp.Queue: round trips/s against mp.Queue's (same message, same CPUs, same run). Every",
        "transport carries the body's AMF3 (bytes sent: a broker's message record); every reply is compared with what",
        "was sent.",
    ]
    lines += [f"  {line}" for line in article_lines()]
    for g in report["goals"]:
        lines.append(f"goal: {g['goal']}: {g['value']}: {'met' if g['met'] else 'NOT met'}")
    lines += left_lines(report)
    return "\n".join(lines)


def parse_options(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="python -m amfkit_bench.handoff", description="one message back and forth between two processes, per transport")
    p.add_argument("--round-trips", type=int, default=1000, help="round trips per run (default 1000)")
    p.add_argument("--runs", type=int, default=5, help="runs per transport and message (default 5; the median is reported)")
    p.add_argument("--warmup", type=int, default=WARMUP, help=f"untimed round trips first (default {WARMUP})")
    p.add_argument("--transports", default=",".join(TRANSPORTS), help=f"comma-separated (default {','.join(TRANSPORTS)})")
    p.add_argument("--placements", default=",".join(PLACEMENTS), help=f"where A and B run, comma-separated (default {','.join(PLACEMENTS)})")
    p.add_argument("--redis", help="a Redis URL for the redis row (default: start a redis-server for the run)")
    p.add_argument("--json", dest="json_path", help="write the report as JSON")
    a = p.parse_args(argv)
    transports = tuple(t for t in a.transports.split(",") if t)
    if not transports or any(t not in TRANSPORTS for t in transports):
        p.error(f"choose transports from {', '.join(TRANSPORTS)}")
    placements = tuple(t for t in a.placements.split(",") if t)
    if not placements or any(t not in PLACEMENTS for t in placements):
        p.error(f"choose placements from {', '.join(PLACEMENTS)}")
    if a.round_trips < 1 or a.runs < 1 or a.warmup < 0:
        p.error("--round-trips and --runs must be positive, --warmup 0 or more")
    return Options(round_trips=a.round_trips, runs=a.runs, warmup=a.warmup, transports=transports, placements=placements, redis=a.redis, json_path=a.json_path)


def main(argv: list[str] | None = None) -> int:
    from .model import write_json

    options = parse_options(argv)
    report = run(options)
    print(format_report(report))
    if options.json_path:
        write_json(report, options.json_path)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
