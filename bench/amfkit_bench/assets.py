"""`amfkit bench assets`: the file storage article's ten images fetched from amfkit's asset
store on every backend, beside nginx serving the same files (docs/benchmarks.md,
"Assets: the file storage article").
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from . import daemons, peers, timing
from .model import Bar, Chart, Section, Table, experiment_main, options_dict
from .servers import uvicorn
from .text import machine_lines, text_table

NAME = "assets"
#: The article this experiment reproduces (docs/benchmarks.md).
ARTICLE = "the file storage article"
SUMMARY = f"10 images x 100 loops ({ARTICLE}) from every asset backend through amfkit vs nginx serving the files"

PREFIX = "/assets/"

#: The article's averages, seconds per 1000 requests (three runs each), and what stands
#: for each here.
ARTICLE_FIGURES = [
    ("webserver direct filesystem access", 14.143, "nginx"),
    ("filesystem through PHP (readfile)", 15.730, "file"),
    ("memcache", 16.315, "memcached"),
    ("persistent database (mysql_pconnect)", 18.009, "postgresql"),
    ("non-persistent database (mysql_connect)", 19.520, "postgresql (new connection each)"),
]


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    url: str = ""  # which store: file, sqlite, postgresql, memcached, redis
    cache: str = ""  # memcached or redis in front
    options: tuple[tuple[str, Any], ...] = ()
    fast_path: bool = True
    goal: str = ""  # "floor" (the Python-side file route), "backend", "cache"


VARIANTS = [
    Variant("nginx"),
    Variant("file", "file"),
    Variant("file (Python route)", "file", fast_path=False, goal="floor"),
    Variant("sqlite", "sqlite", goal="backend"),
    Variant("postgresql", "postgresql", goal="backend"),
    Variant("postgresql (new connection each)", "postgresql", options=(("pool", False),)),
    Variant("memcached", "memcached", goal="backend"),
    Variant("redis", "redis", goal="backend"),
    Variant("postgresql + memcached", "postgresql", cache="memcached", goal="cache"),
    Variant("postgresql + redis", "postgresql", cache="redis", goal="cache"),
]

_WRK_SCRIPT = r"""
local paths = {}
for p in string.gmatch(os.getenv("AMFKIT_PATHS"), "[^,]+") do paths[#paths + 1] = p end
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("AMFKIT %d %d %d %d %.1f %.1f\n", summary.requests, summary.duration,
    e.connect + e.read + e.write + e.timeout, e.status, latency.mean, latency:percentile(99)))
end
"""


#: A large file beside the ten, served by nginx and by amfkit from the file system (the
#: fast path does not take it: the ASGI route streams it in chunks read in threads).
LARGE_NAME = "large/16mib.bin"
LARGE_SIZE = 16 * 1024 * 1024
LARGE_CONNECTIONS = 4
LARGE_VARIANTS = ("nginx", "file")


@dataclasses.dataclass
class Options:
    duration: float = 5.0
    connections: int = 16
    loops: int = 100
    workers: int = 2
    quick: bool = False
    variants: tuple[str, ...] = tuple(v.name for v in VARIANTS)
    json_path: str | None = None


def _files() -> list[tuple[str, bytes]]:
    from amfkit.demo.images import files

    return files()


def _fetch_all(port: int, files: list[tuple[str, bytes]], content_type: str = "image/png") -> None:
    """Every file once, compared byte for byte (and its Content-Type)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for name, data in files:
            conn.request("GET", PREFIX + name)
            response = conn.getresponse()
            body = response.read()
            if response.status != 200 or body != data:
                raise RuntimeError(f"GET {PREFIX}{name}: status {response.status}, {len(body)} bytes (expected 200, {len(data)} bytes)")
            if response.getheader("content-type") != content_type:
                raise RuntimeError(f"GET {PREFIX}{name}: content type {response.getheader('content-type')!r}")
    finally:
        conn.close()


def _sequential(port: int, files: list[tuple[str, bytes]], loops: int, new_connection: bool) -> float:
    """Seconds for `loops` x the files, one request after another (each on a new
    connection when `new_connection`); every answer's status and length checked."""
    paths = [(PREFIX + name, len(data)) for name, data in files]
    headers = {"Connection": "close"} if new_connection else {}
    conn = None if new_connection else http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    started = time.perf_counter()
    try:
        for _ in range(loops):
            for path, size in paths:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30) if conn is None else conn
                c.request("GET", path, headers=headers)
                response = c.getresponse()
                n = len(response.read())
                if conn is None:
                    c.close()
                if response.status != 200 or n != size:
                    raise RuntimeError(f"GET {path}: status {response.status}, {n} bytes under load")
    finally:
        if conn is not None:
            conn.close()
    return time.perf_counter() - started


def _wrk(port: int, names: list[str], connections: int, duration: float, workdir: str) -> dict[str, Any]:
    """wrk over `connections` keep-alive connections cycling through `names`."""
    script = os.path.join(workdir, "assets.lua")
    with open(script, "w") as f:
        f.write(_WRK_SCRIPT)
    env = {**os.environ, "AMFKIT_PATHS": ",".join(PREFIX + name for name in names)}
    threads = min(2, connections)
    cmd = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{max(1, round(duration))}s", "-s", script, f"http://127.0.0.1:{port}"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=duration + 60)
    for line in out.stdout.splitlines():
        if line.startswith("AMFKIT "):
            requests, duration_us, sock_errors, status_errors, mean_us, p99_us = line.split()[1:]
            seconds = int(duration_us) / 1e6
            return {
                "requests": int(requests),
                "rps": int(requests) / seconds if seconds else 0.0,
                "errors": int(sock_errors) + int(status_errors),
                "latency_ms": {"mean": float(mean_us) / 1000, "p99": float(p99_us) / 1000},
            }
    raise RuntimeError(f"wrk gave no result: {out.stdout[-500:]} {out.stderr[-500:]}")


class _Backends:
    """The store URLs of the run; the servers behind them start on first use."""

    def __init__(self, stack: contextlib.ExitStack, workdir: str) -> None:
        self.stack = stack
        self.workdir = workdir
        self.urls: dict[str, str] = {}

    def url(self, kind: str) -> str:
        if kind not in self.urls:
            if kind == "file":
                self.urls[kind] = "file://" + os.path.join(self.workdir, "files")
            elif kind == "sqlite":
                self.urls[kind] = "sqlite:///" + os.path.join(self.workdir, "assets.db")
            elif kind == "postgresql":
                self.urls[kind] = self.stack.enter_context(daemons.postgres(max_connections=60)).url
            elif kind == "memcached":
                self.urls[kind] = self.stack.enter_context(daemons.memcached())
            elif kind == "redis":
                self.urls[kind] = self.stack.enter_context(daemons.redis())
            else:
                raise ValueError(kind)
        return self.urls[kind]


@contextlib.contextmanager
def _serve(variant: Variant, backends: _Backends, files: list[tuple[str, bytes]], options: Options) -> Iterator[int]:
    if variant.name == "nginx":
        folder = os.path.join(backends.workdir, "files")
        with daemons.nginx(folder, PREFIX, workers=options.workers) as port:
            yield port
        return
    from amfkit.assets import AssetStore

    url = backends.url(variant.url)
    cache = backends.url(variant.cache) if variant.cache else None
    store_options = dict(variant.options)
    store = AssetStore.open(url, cache=cache, **store_options)
    try:
        for name, data in files:
            store.put(name, data, content_type="image/png")
    finally:
        store.close()
    env = {
        "AMFKIT_BENCH_ASSETS": url,
        "AMFKIT_BENCH_ASSETS_CACHE": cache or "",
        "AMFKIT_BENCH_ASSETS_OPTIONS": json.dumps(store_options),
        "AMFKIT_BENCH_ASSETS_FAST": "1" if variant.fast_path else "0",
    }
    args = ["--workers", str(options.workers), "--http", "amfkit.serving:HttpToolsProtocol"]
    with uvicorn("amfkit_bench.apps:assets", env=env, args=args) as server:
        yield server.port


def run(options: Options) -> dict[str, Any]:
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (apt-get install wrk; `make bench` does it)")
    machine = timing.machine_facts(peers.package_versions("amfkit", "uvicorn", "httptools", "uvloop", "psycopg", "psycopg-pool", "redis", "pymemcache"))
    started = time.perf_counter()
    files = _files()
    loops = 10 if options.quick else options.loops
    rows: list[dict[str, Any]] = []
    ok = True
    with tempfile.TemporaryDirectory(prefix="amfkit-bench-assets-") as workdir, contextlib.ExitStack() as stack:
        os.chmod(workdir, 0o755)  # nginx's workers read the files
        backends = _Backends(stack, workdir)
        # The file variants and nginx serve the same folder: the files are put there first.
        from amfkit.assets import AssetStore

        large = (LARGE_NAME, os.urandom(LARGE_SIZE))
        with AssetStore.open(backends.url("file")) as store:
            for name, data in files:
                store.put(name, data, content_type="image/png")
            store.put(*large)
        for variant in VARIANTS:
            if variant.name not in options.variants:
                continue
            row: dict[str, Any] = {"variant": variant.name, "goal": variant.goal}
            try:
                with _serve(variant, backends, files, options) as port:
                    _fetch_all(port, files)
                    row["check"] = True
                    row["sequential_s"] = _sequential(port, files, loops, False) * 1000 / (loops * len(files))
                    row["new_connection_s"] = _sequential(port, files, loops, True) * 1000 / (loops * len(files))
                    row.update(_wrk(port, [name for name, _ in files], options.connections, options.duration, workdir))
                    row["check"] = row["errors"] == 0
                    if not row["check"]:
                        row["error"] = f"{row['errors']} errors under load"
                    elif variant.name in LARGE_VARIANTS:
                        _fetch_all(port, [large], "application/octet-stream")
                        big = _wrk(port, [large[0]], LARGE_CONNECTIONS, options.duration, workdir)
                        row["large_mb_s"] = big["rps"] * len(large[1]) / 1e6
                        row["check"] = big["errors"] == 0
            except Exception as exc:  # reported, never timed
                row["check"] = False
                row["error"] = str(exc)[:300]
            ok = ok and row["check"]
            rows.append(row)
    report = {
        "experiment": NAME,
        "summary": SUMMARY,
        "ok": ok,
        "options": options_dict(options),
        "machine": machine,
        "elapsed_s": round(time.perf_counter() - started, 3),
        "requests": loops * len(files),
        "results": rows,
    }
    _ratios(report)
    report["goals"] = _goals(report)
    return report


def _row(report: dict[str, Any], name: str) -> dict[str, Any] | None:
    for row in report["results"]:
        if row["variant"] == name and row.get("check"):
            return row
    return None


def _ratios(report: dict[str, Any]) -> None:
    """Each variant against nginx (1.0): requests/s at 16 connections, and time per
    1000 requests (nginx's time over the variant's, so higher is better everywhere)."""
    base = _row(report, "nginx")
    if base is None:
        return
    for row in report["results"]:
        if not row.get("check"):
            continue
        row["vs_nginx"] = {
            "rps": row["rps"] / base["rps"],
            "sequential": base["sequential_s"] / row["sequential_s"],
            "new_connection": base["new_connection_s"] / row["new_connection_s"],
        }


def _goals(report: dict[str, Any]) -> list[dict[str, Any]]:
    goals = []
    nginx, file, floor = _row(report, "nginx"), _row(report, "file"), _row(report, "file (Python route)")
    if nginx and file:
        r = file["rps"] / nginx["rps"]
        goals.append({"goal": "file system through amfkit >= 0.7x nginx (16 connections)", "value": f"{r:.2f}x", "met": r >= 0.7})
    if floor:
        for row in report["results"]:
            if row.get("goal") not in ("backend", "cache") or not row.get("check"):
                continue
            need = 0.5 if row["goal"] == "backend" else 0.8
            r = row["rps"] / floor["rps"]
            goals.append({"goal": f"{row['variant']} >= {need}x amfkit's Python-side file route", "value": f"{r:.2f}x", "met": r >= need})
    return goals


def format_report(report: dict[str, Any]) -> str:
    o = report["options"]
    lines = [
        f"amfkit bench assets: the file storage article, {report['requests']} requests over 10 files; {o['workers']} worker processes per server; "
        f"wrk {o['connections']} connections for {o['duration']:g} s",
        "",
    ]
    rows = []
    for row in report["results"]:
        vs = row.get("vs_nginx", {})
        if not row.get("check"):
            rows.append([row["variant"], "-", "-", "-", "-", "-", "-", "FAILED " + row.get("error", "")])
            continue
        ratio = (lambda key: f"{vs[key]:.2f}") if vs else (lambda key: "-")  # no nginx in this run
        rows.append(
            [
                row["variant"],
                f"{row['sequential_s']:.3f}",
                f"{row['new_connection_s']:.3f}",
                f"{row['rps']:,.0f}",
                ratio("sequential"),
                ratio("new_connection"),
                ratio("rps"),
                "ok",
            ]
        )
    lines += text_table(
        ["variant", "s/1000 seq", "s/1000 new conn", f"req/s {o['connections']} conns", "x nginx seq", "x nginx new", "x nginx rps", "check"],
        rows,
        {1, 2, 3, 4, 5, 6},
    )
    large = [(row["variant"], row["large_mb_s"]) for row in report["results"] if row.get("large_mb_s")]
    if large:
        lines += ["", f"a {LARGE_SIZE >> 20} MiB file, wrk {LARGE_CONNECTIONS} connections: " + ", ".join(f"{v} {mb:,.0f} MB/s" for v, mb in large)]
    lines += ["", "the article (Apache 2.2 + PHP 5.2, Duron 1800+, 2010), s/1000 requests, new connection each:"]
    for label, seconds, ours in ARTICLE_FIGURES:
        lines.append(f"  {label:42} {seconds:7.3f} s  ({ARTICLE_FIGURES[0][1] / seconds:.2f}x the web server; here: {ours})")
    lines += ["", "goals:"]
    for g in report["goals"]:
        lines.append(f"  {g['goal']}: {g['value']}: {'met' if g['met'] else 'NOT met'}")
    lines += machine_lines(report)
    return "\n".join(lines)


def sections(report: dict[str, Any]) -> list[Section]:
    o = report["options"]
    good = [row for row in report["results"] if row.get("check")]
    table = Table(
        ["variant", "s/1000 sequential", "s/1000 new connection", "req/s", "x nginx (seq)", "x nginx (new conn)", "x nginx (req/s)", "check"],
        [
            [
                row["variant"],
                round(row["sequential_s"], 3) if row.get("check") else "-",
                round(row["new_connection_s"], 3) if row.get("check") else "-",
                round(row["rps"]) if row.get("check") else "-",
                round(row.get("vs_nginx", {}).get("sequential", 0), 2) if row.get("check") else "-",
                round(row.get("vs_nginx", {}).get("new_connection", 0), 2) if row.get("check") else "-",
                round(row.get("vs_nginx", {}).get("rps", 0), 2) if row.get("check") else "-",
                "ok" if row.get("check") else f"FAILED {row.get('error', '')}",
            ]
            for row in report["results"]
        ],
    )
    article = Table(
        ["the article's variant", "s/1000 requests", "x the web server", "stands for"],
        [[label, seconds, round(ARTICLE_FIGURES[0][1] / seconds, 2), ours] for label, seconds, ours in ARTICLE_FIGURES],
    )
    charts = [
        Chart(f"requests per second, {o['connections']} keep-alive connections (higher is better)", "requests/s", [Bar(r["variant"], float(r["rps"]), group="nginx" if r["variant"] == "nginx" else "amfkit") for r in good]),
        Chart("seconds per 1000 requests, a new connection each (lower is better)", "seconds", [Bar(r["variant"], float(r["new_connection_s"]), group="nginx" if r["variant"] == "nginx" else "amfkit") for r in good]),
    ]
    found = [f"{g['goal']}: {g['value']} ({'met' if g['met'] else 'NOT met'})." for g in report.get("goals", [])]
    found += [f"{row['variant']} FAILED: {row.get('error', '')}" for row in report["results"] if not row.get("check")]
    large = {row["variant"]: row["large_mb_s"] for row in report["results"] if row.get("large_mb_s")}
    if large:
        found.append(f"A {LARGE_SIZE >> 20} MiB file over {LARGE_CONNECTIONS} connections: " + ", ".join(f"{v} {mb:,.0f} MB/s" for v, mb in large.items()) + ".")
    return [
        Section(
            "The file storage article: files from every asset backend",
            f"{report['requests']} requests over the article's ten images: one keep-alive connection, a new connection "
            f"per request (as the article's client), and wrk with {o['connections']} keep-alive connections; "
            f"{o['workers']} worker processes per server, all on 127.0.0.1 (the load generator shares the cores).",
            [table, article],
            charts,
            findings=found,
        )
    ]


def parse_options(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="amfkit bench assets", description=SUMMARY)
    p.add_argument("--quick", action="store_true", help="10 loops and 1 s of wrk per variant (a correctness run)")
    p.add_argument("--duration", type=float, default=5.0, help="seconds of wrk load per variant (default 5)")
    p.add_argument("--connections", type=int, default=16, help="wrk's keep-alive connections (default 16)")
    p.add_argument("--loops", type=int, default=100, help="loops over the ten files, sequential and new-connection runs (default 100)")
    p.add_argument("--workers", type=int, default=2, help="worker processes per server (default 2)")
    p.add_argument("--variants", default=",".join(v.name for v in VARIANTS), help="which variants, comma-separated (default all)")
    p.add_argument("--json", dest="json_path", help="write the report as JSON")
    a = p.parse_args(argv)
    known = {v.name for v in VARIANTS}
    variants = tuple(s.strip() for s in a.variants.split(",") if s.strip())
    unknown = [v for v in variants if v not in known]
    if unknown:
        p.error(f"unknown variant(s) {', '.join(unknown)} (choose from: {', '.join(known)})")
    return Options(
        duration=1.0 if a.quick else a.duration,
        connections=a.connections,
        loops=a.loops,
        workers=a.workers,
        quick=a.quick,
        variants=variants,
        json_path=a.json_path,
    )


def main(argv: list[str] | None = None) -> int:
    """`amfkit bench assets [options]`: print the report; 0 if every check passed, else 1."""
    return experiment_main(argv, parse_options, run, format_report)


if __name__ == "__main__":
    sys.exit(main())
