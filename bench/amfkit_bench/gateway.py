"""`amfkit bench gateway`: the gateway's requests/s under wrk beside the bare HTTP floor on
each server and interface, and against Py3AMF's gateway (docs/benchmarks.md, "The
gateway against the HTTP floor").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from . import peers, timing
from .servers import Server, cpu_seconds, granian, uvicorn
from .model import Bar, Chart, Section, Table, experiment_main, options_dict
from .text import machine_lines, text_table

NAME = "gateway"
SUMMARY = "gateway requests/s (echo, 1000 tiles x 5 shapes) vs Py3AMF's gateway, and echo against the HTTP floor on uvicorn and granian"

SHAPES = ("String", "Array", "RecordSet", "TypedObjects", "Columns")
#: Shapes served in AMF3 only (typed columns: Vectors, which AMF0 clients cannot read).
AMF3_ONLY = ("Columns",)

_WRK_SCRIPT = r"""
local f = assert(io.open(os.getenv("AMFKIT_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*all")
f:close()
wrk.headers["Content-Type"] = "application/x-amf"
local ae = os.getenv("AMFKIT_AE")
if ae and ae ~= "" then wrk.headers["Accept-Encoding"] = ae end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("AMFKIT %d %d %d %d %.1f %.1f\n", summary.requests, summary.duration,
    e.connect + e.read + e.write + e.timeout, e.status, latency.mean, latency:percentile(99)))
end
"""


@dataclasses.dataclass
class Options:
    duration: float = 5.0
    connections: int = 16
    threads: int = 1
    quick: bool = False
    servers: tuple[str, ...] = ("amfkit", "py3amf", "bare")
    json_path: str | None = None
    http_servers: tuple[str, ...] = ("uvicorn", "granian")
    workers: tuple[int, ...] = (1, 2)
    repeat: int = 3
    floors_only: bool = False


DEMO_APP = "amfkit.demo.app:app"
#: amfkit's HTTP protocol for uvicorn (what `amfkit serve` runs).
PROTOCOL = "amfkit.serving:HttpToolsProtocol"


@dataclasses.dataclass(frozen=True)
class Variant:
    """One HTTP server and interface the floors are measured on: the bare app and the
    demo gateway, each served the same way."""

    server: str  # "uvicorn" or "granian"
    interface: str  # "asgi", "rsgi" or "wsgi"
    protocol: str  # uvicorn's HTTP protocol ("" for granian)
    bare: str  # MODULE:ATTR
    amfkit: str

    @property
    def name(self) -> str:
        return f"{self.server} {self.interface}" + (f" ({self.protocol})" if self.protocol else "")

    @contextlib.contextmanager
    def serve(self, kind: str, workers: int, env: dict[str, str]) -> Iterator[Server]:
        app = self.bare if kind == "bare" else self.amfkit
        if self.server == "uvicorn":
            http = PROTOCOL if self.protocol == "amfkit.serving" else self.protocol
            with uvicorn(app, env=env, workers=workers, args=["--http", http]) as server:
                yield server
        else:
            with granian(app, interface=self.interface, env=env, workers=workers) as server:
                yield server


def variants(http_servers: tuple[str, ...]) -> list[Variant]:
    """The floors' servers and interfaces, for the HTTP servers named (granian only when
    it is installed)."""
    from importlib.util import find_spec

    out = []
    if "uvicorn" in http_servers:
        out.append(Variant("uvicorn", "asgi", "amfkit.serving", "amfkit_bench.apps:bare", DEMO_APP))
        out.append(Variant("uvicorn", "asgi", "httptools", "amfkit_bench.apps:bare", DEMO_APP))
    if "granian" in http_servers and find_spec("granian") is not None:
        out.append(Variant("granian", "rsgi", "", "amfkit_bench.apps:bare_rsgi", DEMO_APP))
        out.append(Variant("granian", "asgi", "", "amfkit_bench.apps:bare", DEMO_APP))
        out.append(Variant("granian", "wsgi", "", "amfkit_bench.apps:bare_wsgi", DEMO_APP + ".wsgi"))
    return out


def default_variant() -> str:
    """The floors' name for the server and interface `amfkit serve` runs by default."""
    from amfkit.serving import DEFAULT_SERVER

    return "uvicorn asgi (amfkit.serving)" if DEFAULT_SERVER == "uvicorn" else "granian rsgi"


@dataclasses.dataclass
class Case:
    name: str
    server_ok: tuple[str, ...]
    body: bytes
    gzip: bool
    check: Any  # callable(decoded result) -> bool


@contextlib.contextmanager
def _server(app: str, *, wsgi: bool, env: dict[str, str]) -> Iterator[str]:
    args = ["--interface", "wsgi"] if wsgi else ["--http", PROTOCOL]
    with uvicorn(app, env=env, args=args) as server:
        yield server.url


def _request(version: int, target: str, args: list[Any]) -> bytes:
    from amfkit.remoting import packet

    return packet.encode(packet.Envelope(version, bodies=[packet.Body(target, "/1", args)]))


def _echo_case() -> Case:
    from .apps import echo_request, echo_value

    return Case("echo AMF3", ("amfkit", "py3amf", "bare"), echo_request(3), False, lambda r: r == echo_value())


def _cases() -> list[Case]:
    from .apps import echo_request, echo_value

    cases = [
        _echo_case(),
        Case("echo AMF0", ("amfkit", "py3amf"), echo_request(0), False, lambda r: r == echo_value()),
    ]
    for version in (3, 0):
        for shape in SHAPES:
            if version == 0 and shape in AMF3_ONLY:
                continue
            for gz in (False, True):
                servers = ("amfkit", "py3amf") if shape in ("String", "Array") else ("amfkit",)
                cases.append(
                    Case(
                        f"tiles {shape} AMF{version}{' gzip' if gz else ''}",
                        servers,
                        _request(version, f"TileService.getTilesAs{shape}", [1]),
                        gz,
                        _tiles_ok,
                    )
                )
    return cases


def _tiles_ok(result: Any) -> bool:
    if hasattr(result, "rows"):  # TileColumns
        return len(result.rows()) == 1000
    if isinstance(result, str):
        return result.count("\n") == 999
    if hasattr(result, "get") and "serverInfo" in result:
        return len(result["serverInfo"]["initialData"]) == 1000
    return len(result) == 1000


def _post(url: str, case: Case, *, must_gzip: bool) -> tuple[Any, int]:
    """Send the case once; return the decoded result and the bytes on the wire."""
    import httpx

    from amfkit.remoting import packet

    headers = {"Content-Type": "application/x-amf", "Accept-Encoding": "gzip" if case.gzip else "identity"}
    with httpx.Client(timeout=30) as client:
        with client.stream("POST", url, content=case.body, headers=headers) as r:
            wire = b"".join(r.iter_raw())
            if r.status_code != 200:
                raise RuntimeError(f"HTTP {r.status_code}")
            gzipped = r.headers.get("content-encoding", "").lower() == "gzip"
    if must_gzip and case.gzip and len(wire) > 1024 and not gzipped:
        raise RuntimeError("a large answer to a gzip-accepting request was not compressed")
    envelope = packet.decode(gzip.decompress(wire) if gzipped else wire)
    body = envelope.bodies[0]
    if not body.target.endswith("/onResult"):
        raise RuntimeError(f"fault: {body.value!r}"[:200])
    return body.value, len(wire)


def _wrk(url: str, case: Case, options: Options, workdir: str, pid: int | None = None) -> dict[str, Any]:
    """One wrk run; with `pid`, also the server's CPU time per request (µs)."""
    before = cpu_seconds(pid) if pid is not None else None
    result = _wrk_run(url, case, options, workdir)
    after = cpu_seconds(pid) if pid is not None else None
    if before is not None and after is not None and result["requests"]:
        result["cpu_us"] = (after - before) * 1e6 / result["requests"]
    return result


def _wrk_run(url: str, case: Case, options: Options, workdir: str) -> dict[str, Any]:
    body_path = os.path.join(workdir, "body.amf")
    with open(body_path, "wb") as f:
        f.write(case.body)
    script = os.path.join(workdir, "post.lua")
    with open(script, "w") as f:
        f.write(_WRK_SCRIPT)
    env = {**os.environ, "AMFKIT_BODY": body_path, "AMFKIT_AE": "gzip" if case.gzip else ""}
    cmd = ["wrk", "-t", str(options.threads), "-c", str(options.connections), "-d", f"{max(1, round(options.duration))}s", "-s", script, url]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=options.duration + 60)
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


def _server_times(options: Options, db: str) -> dict[str, dict[str, float]]:
    """Each tile call's time in process: `Gateway.respond`, no HTTP."""
    from amfkit.demo.app import build

    gateway = build(db, browser=False)  # as in production: no page, no Server-Timing
    out: dict[str, dict[str, float]] = {}

    async def once(body: bytes) -> None:
        status, _, _ = await gateway.respond("POST", "/gateway", {"content-type": "application/x-amf"}, body)
        assert status == 200

    loop = asyncio.new_event_loop()
    try:
        for version in (3, 0):
            for shape in SHAPES:
                if version == 0 and shape in AMF3_ONLY:
                    continue
                body = _request(version, f"TileService.getTilesAs{shape}", [1])
                m = timing.measure(lambda: loop.run_until_complete(once(body)), repeat=5 if options.quick else 30, warmup=2)
                out[f"{shape} AMF{version}"] = {"median_ms": m.wall.median * 1000, "min_ms": m.wall.min * 1000}
    finally:
        loop.close()
    return out


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median and spread of repeated wrk runs of one server."""
    rps = sorted(r["rps"] for r in runs)
    cpu = sorted(r["cpu_us"] for r in runs if "cpu_us" in r)
    return {
        "rps": statistics.median(rps),
        "rps_min": rps[0],
        "rps_max": rps[-1],
        "cpu_us": statistics.median(cpu) if cpu else None,
        "latency_ms": sorted((r["latency_ms"] for r in runs), key=lambda lat: lat["mean"])[len(runs) // 2],
        "runs": len(runs),
        "errors": sum(r["errors"] for r in runs),
    }


def _floors(options: Options, env: dict[str, str], workdir: str) -> list[dict[str, Any]]:
    """Echo AMF3 and the bare app on every server and interface, for each worker count:
    all of one count started at once, each checked, then measured in turns."""
    case = _echo_case()
    rows: list[dict[str, Any]] = []
    for workers in options.workers:
        with contextlib.ExitStack() as stack:
            running: list[tuple[Variant, str, Server]] = []
            for variant in variants(options.http_servers):
                for kind in ("bare", "amfkit"):
                    running.append((variant, kind, stack.enter_context(variant.serve(kind, workers, env))))
            found: dict[tuple[str, str], dict[str, Any]] = {}
            for variant, kind, server in running:
                entry = found[(variant.name, kind)] = {"runs": [], "check": False}
                try:
                    result, _ = _post(server.url, case, must_gzip=False)
                    entry["check"] = bool(case.check(result))
                except Exception as exc:  # reported, never timed
                    entry["error"] = str(exc)[:200]
            for _ in range(options.repeat):
                for variant, kind, server in running:
                    entry = found[(variant.name, kind)]
                    if entry["check"]:
                        entry["runs"].append(_wrk(server.url, case, options, workdir, server.pid))
        for variant in variants(options.http_servers):
            row: dict[str, Any] = {"workers": workers, "server": variant.server, "interface": variant.interface, "variant": variant.name}
            for kind in ("bare", "amfkit"):
                entry = found[(variant.name, kind)]
                figures = _summary(entry["runs"]) if entry["runs"] else {}
                row[kind] = {"check": entry["check"] and figures.get("errors", 1) == 0, **figures}
                if "error" in entry:
                    row[kind]["error"] = entry["error"]
            if row["bare"].get("rps") and row["amfkit"].get("rps"):
                row["ratio"] = row["amfkit"]["rps"] / row["bare"]["rps"]
            rows.append(row)
        fastest = max((r["bare"].get("rps", 0.0) for r in rows if r["workers"] == workers), default=0.0)
        for row in rows:
            if row["workers"] == workers and fastest and row["amfkit"].get("rps"):
                row["vs_fastest_bare"] = row["amfkit"]["rps"] / fastest
    return rows


def run(options: Options) -> dict[str, Any]:
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (apt-get install wrk; `make bench` does it)")
    from amfkit.demo.data import ensure_database

    machine = timing.machine_facts(peers.package_versions("amfkit", "uvicorn", "httptools", "uvloop", "granian", "py3amf"))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="amfkit-bench-") as workdir:
        db = str(ensure_database(os.path.join(workdir, "tiles.sqlite3")))
        env = {"AMFKIT_DEMO_DB": db, "AMFKIT_BENCH_DB": db, "AMFKIT_DEMO_BROWSER": "0"}
        floors = _floors(options, env, workdir)
        ok = all(row[kind]["check"] for row in floors for kind in ("bare", "amfkit"))
        servers = {
            "amfkit": (DEMO_APP, False),
            "py3amf": ("amfkit_bench.apps:py3amf_wsgi", True),
            "bare": ("amfkit_bench.apps:bare", False),
        }
        rows: list[dict[str, Any]] = []
        cases = _cases()
        if options.quick:
            cases = [c for c in cases if c.name.startswith("echo") or ("AMF3" in c.name and "String" in c.name) or ("AMF3" in c.name and "RecordSet" in c.name)]
        for server in () if options.floors_only else options.servers:
            app, wsgi = servers[server]
            with _server(app, wsgi=wsgi, env=env) as url:
                for case in cases:
                    if server not in case.server_ok:
                        continue
                    row: dict[str, Any] = {"server": server, "case": case.name}
                    try:
                        # Py3AMF's gateway never compresses; amfkit's must, over its threshold.
                        result, wire = _post(url, case, must_gzip=server == "amfkit")
                        row["check"] = bool(case.check(result))
                        row["wire_bytes"] = wire
                    except Exception as exc:  # a failed check is reported, never timed
                        row["check"] = False
                        row["error"] = str(exc)[:200]
                    if row["check"]:
                        # The echo figures carry the goals: the median of three runs
                        # (wrk shares the machine's cores with the server).
                        repeat = 3 if case.name.startswith("echo") and not options.quick else 1
                        runs = [_wrk(url, case, options, workdir) for _ in range(repeat)]
                        runs.sort(key=lambda r: r["rps"])
                        row.update(runs[len(runs) // 2])
                        row["runs"] = len(runs)
                        row["errors"] = sum(r["errors"] for r in runs)
                        row["check"] = row["errors"] == 0
                    ok = ok and row["check"]
                    rows.append(row)
        server_times = {} if options.floors_only else _server_times(options, db)
    report = {
        "experiment": NAME,
        "summary": SUMMARY,
        "ok": ok,
        "options": options_dict(options),
        "machine": machine,
        "elapsed_s": round(time.perf_counter() - started, 3),
        "default_server": default_variant(),
        "floors": floors,
        "results": rows,
        "server_times": server_times,
    }
    report["goals"] = _goals(report)
    return report


def _rps(report: dict[str, Any], server: str, case: str) -> float | None:
    for row in report["results"]:
        if row["server"] == server and row["case"] == case and "rps" in row:
            return float(row["rps"])
    return None


def _wire(report: dict[str, Any], case: str) -> int | None:
    for row in report["results"]:
        if row["server"] == "amfkit" and row["case"] == case:
            return row.get("wire_bytes")
    return None


def _goals(report: dict[str, Any]) -> list[dict[str, Any]]:
    goals = []
    a, p, b = (_rps(report, s, "echo AMF3") for s in ("amfkit", "py3amf", "bare"))
    if a and p:
        goals.append({"goal": "echo AMF3: amfkit >= 10x Py3AMF requests/s", "value": f"{a / p:.1f}x", "met": a >= 10 * p})
    if a and b:
        goals.append({"goal": "echo AMF3: amfkit within 20% of the bare endpoint", "value": f"{a / b:.0%} of bare", "met": a >= 0.8 * b})
    for row in report.get("floors", ()):
        if row["variant"] == report.get("default_server") and "ratio" in row:
            goals.append(
                {
                    "goal": f"echo AMF3 >= 0.9x the bare app on the same server ({row['variant']}, {row['workers']} worker{'s' if row['workers'] > 1 else ''})",
                    "value": f"{row['ratio']:.2f}x",
                    "met": row["ratio"] >= 0.9,
                }
            )
    st = report["server_times"]
    for v in ("AMF3", "AMF0"):
        rs, s = st.get(f"RecordSet {v}"), st.get(f"String {v}")
        if rs and s:
            r = rs["median_ms"] / s["median_ms"]
            goals.append({"goal": f"tiles {v}: recordset server time within 2x of the string", "value": f"{r:.2f}x", "met": r <= 2})
        rw, sw = _wire(report, f"tiles RecordSet {v} gzip"), _wire(report, f"tiles String {v} gzip")
        if rw and sw:
            goals.append({"goal": f"tiles {v}: recordset gzip size <= string gzip size", "value": f"{rw:,} vs {sw:,} bytes", "met": rw <= sw})
    # Issue 16: the typed columns, no bigger than the string gzipped and no slower to serve.
    cs, s = st.get("Columns AMF3"), st.get("String AMF3")
    if cs and s:
        r = cs["median_ms"] / s["median_ms"]
        goals.append({"goal": "tiles AMF3: columns server time <= the string's", "value": f"{r:.2f}x", "met": r <= 1})
    cw, sw = _wire(report, "tiles Columns AMF3 gzip"), _wire(report, "tiles String AMF3 gzip")
    if cw and sw:
        goals.append({"goal": "tiles AMF3: columns gzip size <= string gzip size", "value": f"{cw:,} vs {sw:,} bytes", "met": cw <= sw})
    return goals


def _floor_cells(row: dict[str, Any]) -> list[Any]:
    def rps(figures: dict[str, Any]) -> str:
        if "rps" not in figures:
            return "FAILED " + figures.get("error", "") if not figures.get("check") else "-"
        return f"{figures['rps']:,.0f} ({figures['rps_min']:,.0f}-{figures['rps_max']:,.0f})"

    def cpu(figures: dict[str, Any]) -> str:
        return f"{figures['cpu_us']:.1f}" if figures.get("cpu_us") is not None else "-"

    return [
        row["workers"],
        row["variant"],
        rps(row["bare"]),
        rps(row["amfkit"]),
        f"{row['ratio']:.2f}x" if "ratio" in row else "-",
        f"{row['vs_fastest_bare']:.2f}x" if "vs_fastest_bare" in row else "-",
        cpu(row["bare"]),
        cpu(row["amfkit"]),
    ]


FLOOR_HEADERS = ["workers", "server", "bare req/s", "amfkit echo req/s", "amfkit/bare", "amfkit/fastest bare", "bare CPU µs/req", "amfkit CPU µs/req"]


def _floor_findings(report: dict[str, Any]) -> list[str]:
    """Per worker count: the fastest bare floor, amfkit serve's echo and the fastest
    amfkit echo on any server, against it."""
    found = []
    floors = report.get("floors") or []
    for workers in sorted({row["workers"] for row in floors}):
        rows = [row for row in floors if row["workers"] == workers and row["bare"].get("rps")]
        echoes = [row for row in rows if row["amfkit"].get("rps")]
        if not rows or not echoes:
            continue
        fastest = max(rows, key=lambda row: row["bare"]["rps"])
        best = max(echoes, key=lambda row: row["amfkit"]["rps"])
        line = (
            f"{workers} worker{'s' if workers > 1 else ''}: the fastest bare floor is {fastest['variant']} "
            f"({fastest['bare']['rps']:,.0f} req/s); amfkit's fastest echo is on {best['variant']} "
            f"({best['amfkit']['rps']:,.0f} req/s, {best['vs_fastest_bare']:.2f}x that floor"
        )
        served = [row for row in echoes if row["variant"] == report.get("default_server")]
        if served and served[0] is not best:
            line += f"; as amfkit serve runs it, {served[0]['variant']}: {served[0]['amfkit']['rps']:,.0f} req/s, {served[0]['vs_fastest_bare']:.2f}x"
        found.append(line + ").")
    return found


def format_report(report: dict[str, Any]) -> str:
    options = report["options"]
    lines = [
        "amfkit bench gateway: requests/s under wrk "
        f"({options['connections']} connections, {options['duration']} s a run)",
    ]
    if report.get("floors"):
        lines += [
            "",
            f"echo AMF3 against a bare app on the same server and interface: median (min-max) of {options['repeat']} runs "
            f"each, taken in turns; server CPU time per request; amfkit serve runs {report['default_server']}",
        ]
        lines += text_table(FLOOR_HEADERS, [_floor_cells(row) for row in report["floors"]], {0, 2, 3, 4, 5, 6, 7})
        lines += ["  " + line for line in _floor_findings(report)]
    if report["results"]:
        lines += ["", "uvicorn, one worker each: amfkit and the bare app with amfkit's protocol (as amfkit serve runs them), Py3AMF's WSGI gateway:"]
    rows = []
    for row in report["results"]:
        lat = row.get("latency_ms", {})
        rows.append(
            [
                row["case"],
                row["server"],
                f"{row['rps']:,.0f}" if "rps" in row else "-",
                f"{lat.get('mean', 0):.2f}",
                f"{lat.get('p99', 0):.2f}",
                row.get("wire_bytes", 0),
                "ok" if row["check"] else "FAILED " + row.get("error", ""),
            ]
        )
    if rows:
        lines += text_table(["case", "server", "req/s", "mean ms", "p99 ms", "wire bytes", "check"], rows, {2, 3, 4, 5})
    if report["server_times"]:
        lines += ["", "server time in process (Gateway.respond, no HTTP), 1000 tiles:"]
    for name, t in report["server_times"].items():
        lines.append(f"  {name:22} {t['median_ms']:7.2f} ms (min {t['min_ms']:.2f})")
    lines += ["", "goals:"]
    for g in report["goals"]:
        lines.append(f"  {g['goal']}: {g['value']}: {'met' if g['met'] else 'NOT met'}")
    lines += machine_lines(report)
    return "\n".join(lines)


def sections(report: dict[str, Any]) -> list[Section]:
    """Requests/s per server and case (the goals as findings), the server time in process,
    and the bytes on the wire with and without gzip."""
    options = report["options"]
    rows = report["results"]
    servers = list(dict.fromkeys(row["server"] for row in rows))
    table = Table(
        ["case", "server", "req/s", "mean ms", "p99 ms", "wire bytes", "check"],
        [
            [
                row["case"],
                row["server"],
                round(row["rps"]) if "rps" in row else "-",
                row.get("latency_ms", {}).get("mean", "-"),
                row.get("latency_ms", {}).get("p99", "-"),
                row.get("wire_bytes", "-"),
                "ok" if row["check"] else f"FAILED {row.get('error', '')}".strip(),
            ]
            for row in rows
        ],
    )
    charts = []
    for title, wanted in (("echo", lambda case: case.startswith("echo")), ("1000 tiles", lambda case: case.startswith("tiles"))):
        bars = [
            Bar(f"{row['case']} · {row['server']}", float(row["rps"]), group=row["server"])
            for server in servers
            for row in rows
            if row["server"] == server and wanted(row["case"]) and "rps" in row
        ]
        if bars:
            charts.append(Chart(f"{title}: requests per second (higher is better)", "requests/s", bars))
    found = [f"{g['goal']}: {g['value']} ({'met' if g['met'] else 'NOT met'})." for g in report.get("goals", [])]
    found += _floor_findings(report)
    found += [f"{row['case']} on {row['server']} FAILED: {row.get('error', 'errors under load')}" for row in rows if not row["check"]]
    for case in ("tiles String AMF3", "tiles Array AMF3"):  # the echo ratio is a goal above
        a, p = _rps(report, "amfkit", case), _rps(report, "py3amf", case)
        if a and p:
            found.append(f"{case}: amfkit serves {a / p:.1f}x Py3AMF's requests/s ({a:,.0f} vs {p:,.0f}).")
    load = Section(
        "Requests per second",
        f"wrk, {options['connections']} keep-alive connections, {options['duration']:g} s per case, one uvicorn "
        "worker per server on the same 127.0.0.1 (wrk shares the cores): amfkit and 'bare' (it answers every POST "
        "with a pre-encoded echo reply: the floor under any gateway) with amfkit's HTTP protocol, as amfkit serve "
        "runs them; Py3AMF's WSGI gateway.",
        [table],
        charts,
        findings=found,
    )
    out = [load] if rows else []
    if report.get("floors"):
        out.append(_floor_section(report))

    times = report.get("server_times") or {}
    if times:
        bars = [Bar(name, t["median_ms"], t["min_ms"], t["median_ms"], group=name.rsplit(" ", 1)[-1]) for name, t in times.items()]
        fastest = min(times.items(), key=lambda item: item[1]["median_ms"])
        slowest = max(times.items(), key=lambda item: item[1]["median_ms"])
        out.append(
            Section(
                "Server time in process, 1000 tiles",
                "Gateway.respond with no HTTP: the query, the conversion to the shape and the encoding; "
                "median of the repetitions, error bar from the fastest.",
                [Table(["call", "median ms", "min ms"], [[name, t["median_ms"], t["min_ms"]] for name, t in times.items()])],
                [Chart("server time per call, 1000 tiles (lower is better)", "milliseconds", bars)],
                findings=[
                    f"Fastest shape to serve: {fastest[0]} ({fastest[1]['median_ms']:.2f} ms); slowest: "
                    f"{slowest[0]} ({slowest[1]['median_ms']:.2f} ms)."
                ],
            )
        )

    wire = {row["case"]: row["wire_bytes"] for row in rows if row["server"] == "amfkit" and row["case"].startswith("tiles") and row.get("wire_bytes")}
    pairs = [(case, wire[case], wire.get(f"{case} gzip")) for case in wire if not case.endswith(" gzip")]
    if pairs:
        bars = []
        for case, raw, gz in pairs:
            label = case.removeprefix("tiles ")
            bars.append(Bar(label, float(raw), group="identity"))
            if gz:
                bars.append(Bar(f"{label} gzip", float(gz), group="gzip"))
        found = [f"gzip takes {case.removeprefix('tiles ')} from {raw:,} to {gz:,} bytes ({gz / raw:.0%})." for case, raw, gz in pairs if gz]
        out.append(
            Section(
                "Bytes on the wire, 1000 tiles (amfkit)",
                "the HTTP body of each answer, asked for with and without Accept-Encoding: gzip.",
                [Table(["call", "bytes", "gzip bytes", "gzip/raw"], [[case, raw, gz or "-", f"{gz / raw:.0%}" if gz else "-"] for case, raw, gz in pairs])],
                [Chart("response body size (lower is better)", "bytes", bars)],
                findings=found,
            )
        )
    return out


def _floor_section(report: dict[str, Any]) -> Section:
    options = report["options"]
    floors = report["floors"]
    bars = []
    for row in floors:
        for kind in ("bare", "amfkit"):
            figures = row[kind]
            if figures.get("rps"):
                label = f"{row['variant']} · {row['workers']}w · {'bare' if kind == 'bare' else 'amfkit echo'}"
                bars.append(Bar(label, float(figures["rps"]), float(figures["rps_min"]), float(figures["rps_max"]), group=kind))
    found = [f"{g['goal']}: {g['value']} ({'met' if g['met'] else 'NOT met'})." for g in report.get("goals", []) if "bare app" in g["goal"]]
    found += _floor_findings(report)
    found += [
        f"{row['variant']}, {row['workers']} worker(s): amfkit echo {row['ratio']:.2f}x the bare app "
        f"(CPU per request {row['amfkit']['cpu_us']:.1f} vs {row['bare']['cpu_us']:.1f} µs)."
        for row in floors
        if "ratio" in row and row["amfkit"].get("cpu_us") is not None and row["bare"].get("cpu_us") is not None
    ]
    return Section(
        "Echo against the HTTP floor, per server",
        f"echo AMF3 and a bare app (it reads the request and answers the pre-encoded echo reply) on each server and "
        f"interface; wrk, {options['connections']} keep-alive connections, {options['duration']:g} s a run, "
        f"{options['repeat']} runs each taken in turns; median (min-max) requests/s and the server's CPU time per "
        f"request. amfkit serve runs {report['default_server']}.",
        [Table(FLOOR_HEADERS, [_floor_cells(row) for row in floors])],
        [Chart("echo AMF3: requests per second (higher is better)", "requests/s", bars)] if bars else [],
        findings=found,
    )


def parse_options(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="amfkit bench gateway", description=SUMMARY)
    p.add_argument("--quick", action="store_true", help="1 s per case, echo and two tile cases (a correctness run)")
    p.add_argument("--duration", type=float, default=5.0, help="seconds of load per case (default 5)")
    p.add_argument("--connections", type=int, default=16, help="keep-alive connections (default 16)")
    p.add_argument("--servers", default="amfkit,py3amf,bare", help="the servers of the echo and tile cases (default amfkit,py3amf,bare)")
    p.add_argument("--http-servers", default="uvicorn,granian", help="the HTTP servers of the floors (default uvicorn,granian)")
    p.add_argument("--workers", default=None, help="worker processes of the floors' servers, a list (default 1,2; --quick: 1)")
    p.add_argument("--repeat", type=int, default=None, help="runs of each floor server, taken in turns (default 3; --quick: 1)")
    p.add_argument("--floors-only", action="store_true", help="the floors only (no tile cases, no Py3AMF)")
    p.add_argument("--json", dest="json_path", help="write the report as JSON")
    a = p.parse_args(argv)
    servers = tuple(s for s in a.servers.split(",") if s)
    http_servers = tuple(s for s in a.http_servers.split(",") if s)
    unknown = set(http_servers) - {"uvicorn", "granian"}
    if unknown:
        p.error(f"unknown HTTP server(s): {', '.join(sorted(unknown))} (uvicorn, granian)")
    try:
        workers = tuple(int(w) for w in (a.workers or ("1" if a.quick else "1,2")).split(",") if w)
    except ValueError:
        p.error("--workers takes a list of numbers (1,2)")
    return Options(
        duration=1.0 if a.quick else a.duration,
        connections=a.connections,
        quick=a.quick,
        servers=servers,
        json_path=a.json_path,
        http_servers=http_servers,
        workers=workers,
        repeat=a.repeat if a.repeat is not None else (1 if a.quick else 3),
        floors_only=a.floors_only,
    )


def main(argv: list[str] | None = None) -> int:
    """`amfkit bench gateway [options]`: print the report; 0 if every check passed, else 1."""
    return experiment_main(argv, parse_options, run, format_report)


if __name__ == "__main__":
    sys.exit(main())
