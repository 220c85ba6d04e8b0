"""`amfkit bench tiles`: the Amfphp tiles article's 1000-row query on the demo, in the
article's shapes and as typed columns, AMF0 and AMF3: server phases, bytes with gzip,
client decoding and the computed time to data-ready (docs/benchmarks.md, "The tiles
experiment").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import operator
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import peers as peer_libs
from .model import Bar, Chart, Section, Table, experiment_main, options_dict, timing_bar
from .text import fmt_factor, fmt_figure, machine_lines, text_table, timing_cell
from .timing import machine_facts, measure

__all__ = [
    "NAME",
    "ARTICLE_FIGURES",
    "SHAPES",
    "SUMMARY",
    "Options",
    "findings",
    "format_report",
    "main",
    "parse_options",
    "rows_of",
    "run",
    "sections",
]

NAME = "tiles"
#: The article this experiment reproduces (docs/benchmarks.md).
ARTICLE = "the Amfphp tiles article"
SUMMARY = (
    f"1000 tiles x 5 shapes, AMF0/AMF3 ({ARTICLE}): server phases, bytes with gzip and thresholds, "
    "client decode to rows, computed time to data-ready"
)

#: The shapes, by the suffix of their TileService method (getTilesAs<shape>).
SHAPES = ("String", "Array", "RecordSet", "TypedObjects", "Columns")
SHAPE_WORDS = {
    "String": "string",
    "Array": "array of objects",
    "RecordSet": "recordset",
    "TypedObjects": "typed objects",
    "Columns": "typed columns",
}
#: (shape, version) -> why a peer cannot decode that answer; the check is that it refuses.
PEER_LIMITS = {("Columns", 3): "Py3AMF has no Vector support (docs/py3amf.md): the colours are a Vector.<uint>"}
VERSIONS = (0, 3)
SET_ID = 1
ROWS = 1000
GZIP_LEVELS = (1, 6)
#: Wire options of the data-ready model: raw, or gzip at a level.
WIRE_OPTIONS = ("raw", "gzip1", "gzip6")
WIRE_WORDS = {"raw": "raw", "gzip1": "gzip -1", "gzip6": "gzip -6"}

DEFAULT_REPEAT = 50
DEFAULT_WARMUP = 5
QUICK_REPEAT = 3
QUICK_WARMUP = 1
SLOW_REPEAT = 5  # Py3AMF: pure Python, tens of milliseconds a call
DEFAULT_THRESHOLDS = (0, 1024, 5 * 1024, 25 * 1024)
THRESHOLD_WORDS = {0: "0 (always)", 1024: "1 KiB (amfkit's default)", 5 * 1024: "5 KiB (the article's setting)", 25 * 1024: "25 KiB (Amfphp's default)"}
DEFAULT_LINKS_MBIT = (1.0, 8.0, 100.0)
DEFAULT_RTT_MS = 50.0

_HEADERS = {"content-type": "application/x-amf"}
_HEADERS_GZIP = {"content-type": "application/x-amf", "accept-encoding": "gzip"}

# The article's own figures (AMF0; Amfphp 1.9 beta 2 on PHP 4.3.9 without its C extension,
# MySQL 5.0.22, a Dual AMD Opteron 246 at 2.0 GHz; Flash Player 9 clients). Its "mysql"
# row is the recordset. sd: the standard deviation it gave.
ARTICLE_FIGURES: dict[str, Any] = {
    "article": f"{ARTICLE} (TheBroth developer diary, 22 February 2007)",
    "setup": (
        "AMF0; Amfphp 1.9 beta 2 on PHP 4.3.9 (not built with Amfphp's C extension), MySQL 5.0.22, "
        "Dual AMD Opteron 246 2.0 GHz, 2 GB; 1000 rows (slot_number, x, y, color, rotation)"
    ),
    "gzip_threshold_default": 25 * 1024,
    "gzip_threshold_used": 5 * 1024,
    "string_raw_approx_kb": 21,
    "server": {
        "Array": {"raw_bytes": 49584, "encode_ms": 368.0, "encode_sd": 10.2, "creation_ms": 8.75, "creation_sd": 2.8, "total_ms": 376.75, "content_length": 12940},
        "RecordSet": {"raw_bytes": 50312, "encode_ms": 125.25, "encode_sd": 1.9, "creation_ms": None, "creation_sd": None, "total_ms": 125.25, "content_length": 14099},
        "String": {"raw_bytes": 20581, "encode_ms": 2.5, "encode_sd": 0.6, "creation_ms": 11.0, "creation_sd": 0.0, "total_ms": 13.5, "content_length": 10420},
    },
    "client_machines": {
        "Laptop": "P3 895 MHz, 256 MB, Windows XP, Firefox 1.5, Flash 9.0 r28",
        "Desktop": "Athlon XP 2500+, 512 MB, Ubuntu edgy, Firefox 2.0, Flash 9.0 r31",
        "Mac": "iMac G5 1.8 GHz, 512 MB, OS X 10.4.8, Firefox 2.0, Flash 9.0 r28",
    },
    # client function time: [median-ish mean, sd] per machine
    "client_ms": {
        "Array": {"Laptop": [20.0, 0.0], "Desktop": [8.5, 0.58], "Mac": [15.0, 0.0]},
        "RecordSet": {"Laptop": [50.25, 0.5], "Desktop": [21.25, 0.5], "Mac": [39.75, 11.84]},
        "String": {"Laptop": [67.75, 5.19], "Desktop": [26.75, 0.5], "Mac": [58.25, 3.3]},
    },
    "string_split_extra_laptop_ms": 47.75,
    "extra_server_ms": {"Array": 363.25, "RecordSet": 111.75},
    "fast_link_kbit": 8000,
    "fast_link_saving": "about 50% of the data length",
}
#: The article's client machine used where one figure stands for its client.
ARTICLE_CLIENT = "Desktop"


@dataclass
class Options:
    """What to run. `repeat`/`warmup` apply to amfkit's figures; Py3AMF gets `slow_repeat`
    timed calls after its correctness check (which warms it up)."""

    repeat: int = DEFAULT_REPEAT
    warmup: int = DEFAULT_WARMUP
    slow_repeat: int = SLOW_REPEAT
    py3amf: bool = True
    quick: bool = False
    thresholds: tuple[int, ...] = DEFAULT_THRESHOLDS
    links_mbit: tuple[float, ...] = DEFAULT_LINKS_MBIT
    rtt_ms: float = DEFAULT_RTT_MS
    json_path: str | None = None
    progress: Callable[[str], None] | None = field(default=None, repr=False, compare=False)


# --------------------------------------------------------------------------- the shapes


def _conversions() -> dict[str, Callable[[list[tuple[Any, ...]], int], Any]]:
    """Rows -> each shape, as `TileService` builds it (the check compares the bytes)."""
    from amfkit.data.recordset import RecordSet
    from amfkit.demo.services import TILE_ALIAS, TILE_COLUMNS, Tile, TileColumns
    from amfkit.remoting.services import Context

    contexts = {0: Context(protocol="amf0"), 3: Context(protocol="amf3")}

    def string(rows: list[tuple[Any, ...]], version: int) -> str:
        return "\n".join([f"{n},{x},{y},{c},{r}" for n, x, y, c, r in rows])

    def array(rows: list[tuple[Any, ...]], version: int) -> list[dict[str, Any]]:
        return [dict(zip(TILE_COLUMNS, row)) for row in rows]

    def recordset(rows: list[tuple[Any, ...]], version: int) -> Any:
        return RecordSet(TILE_COLUMNS, rows, alias=TILE_ALIAS).for_context(contexts[version])

    def typed(rows: list[tuple[Any, ...]], version: int) -> list[Any]:
        return [Tile(*row) for row in rows]

    def columns(rows: list[tuple[Any, ...]], version: int) -> TileColumns:
        return TileColumns.from_rows(rows, contexts[version].protocol)

    return {"String": string, "Array": array, "RecordSet": recordset, "TypedObjects": typed, "Columns": columns}


def rows_of(value: Any) -> list[tuple[Any, ...]]:
    """A client's step from a decoded tile answer (amfkit's decoder) to rows, a tuple
    (n, x, y, c, r) each: the string is split; the columns are zipped (the colours
    formatted as text again); the AS2 recordset's rows are arrays in `columnNames`
    order; objects are read by member name (dicts by key, `Tile` by attribute)."""
    from amfkit.demo.services import TILE_COLUMNS, TileColumns, parse_tiles_string

    if isinstance(value, str):
        return parse_tiles_string(value)
    if isinstance(value, TileColumns):
        return value.rows()
    if isinstance(value, Mapping) and "serverInfo" in value:
        info = value["serverInfo"]
        columns = list(info["columnNames"])
        data = info["initialData"]
        if columns == list(TILE_COLUMNS):
            return list(map(tuple, data))
        return list(map(operator.itemgetter(*(columns.index(c) for c in TILE_COLUMNS)), data))
    if not value:
        return []
    first = value[0]
    getter = operator.itemgetter(*TILE_COLUMNS) if isinstance(first, Mapping) else operator.attrgetter(*TILE_COLUMNS)
    return list(map(getter, value))


def _py3amf_rows(value: Any, recordset_class: Any) -> list[tuple[Any, ...]]:
    """The same step for Py3AMF's decoded values (its AS2 RecordSet keeps `columns`, `items`)."""
    from amfkit.demo.services import TILE_COLUMNS

    if isinstance(value, recordset_class):
        columns = list(value.columns)
        getter = operator.itemgetter(*(columns.index(c) for c in TILE_COLUMNS))
        return list(map(getter, value.items))
    return rows_of(value)


def _expected_rows() -> list[tuple[Any, ...]]:
    """The rows the query must return, from the demo data's generator."""
    from amfkit.demo import data as demo_data

    return [(slot, x, y, color, rotation) for _, slot, x, y, _, color, rotation in demo_data.tiles(SET_ID, demo_data.SETS[SET_ID])]


# --------------------------------------------------------------------------- the run


def _versions() -> dict[str, str | None]:
    import sqlite3

    return {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
        **peer_libs.package_versions("amfkit", "py3amf"),
    }


def _m(fn: Callable[[], Any], options: Options, *, slow: bool = False) -> dict[str, Any]:
    if slow:
        return measure(fn, repeat=options.slow_repeat, warmup=0).to_dict()
    return measure(fn, repeat=options.repeat, warmup=options.warmup).to_dict()


def _fail(checks: list[dict[str, Any]], case: str, what: str, detail: str) -> None:
    checks.append({"case": case, "check": what, "ok": False, "detail": detail[:300]})


def _pass(checks: list[dict[str, Any]], case: str, what: str) -> None:
    checks.append({"case": case, "check": what, "ok": True, "detail": ""})


@dataclass
class _Peer:
    """Py3AMF as a client: its remoting decoder in one mode, its AS2 RecordSet class, and
    the exception it raises on what it cannot decode."""

    name: str
    decode: Callable[[bytes], Any]
    recordset_class: Any
    decode_error: type[BaseException]


def _py3amf_peers(stack: contextlib.ExitStack, skipped: list[dict[str, str]]) -> list[_Peer]:
    """Py3AMF's remoting decoder, pure Python and (when built) Cython, with the demo's
    `Tile` and `TileColumns` registered for the run as a Py3AMF client would
    (unregistered afterwards)."""
    try:
        # amf0 for its RecordSet; flex for Flex's ArrayCollection
        pyamf = peer_libs.import_py3amf("amf0", "flex", "remoting")
    except ImportError as exc:
        skipped.append({"peer": "py3amf", "reason": f"not installed ({exc})"})
        return []
    from amfkit.demo.services import TILE_ALIAS, TILE_COLUMNS_ALIAS, Tile, TileColumns

    peer_libs.register_py3amf(stack, pyamf, Tile, TILE_ALIAS)
    peer_libs.register_py3amf(stack, pyamf, TileColumns, TILE_COLUMNS_ALIAS)

    def decoder(use_ext: bool) -> Callable[[bytes], Any]:
        def decode(data: bytes) -> Any:
            return pyamf.remoting.decode(data, use_ext=use_ext)

        return decode

    peers = [_Peer("py3amf", decoder(False), pyamf.amf0.RecordSet, pyamf.DecodeError)]
    if peer_libs.py3amf_ext_built():
        peers.append(_Peer("py3amf-ext", decoder(True), pyamf.amf0.RecordSet, pyamf.DecodeError))
    else:
        skipped.append({"peer": "py3amf-ext", "reason": "Py3AMF's Cython extension (cpyamf) is not built here"})
    return peers


def run(options: Options) -> dict[str, Any]:
    """Run the experiment; return the report (JSON-ready)."""
    from amfkit.demo import app as demo_app, data as demo_data
    from amfkit.demo.services import TILE_QUERY  # the query TileService runs
    from amfkit.remoting import http as amf_http
    from amfkit.remoting import packet

    progress = options.progress or (lambda message: None)
    machine = machine_facts(_versions())  # load average before the run loads the machine
    started = time.perf_counter()
    checks: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    thresholds: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    conversions = _conversions()
    query_timing: dict[str, Any] | None = None

    with contextlib.ExitStack() as stack:
        peers: list[_Peer] = []
        if options.py3amf:
            peers = _py3amf_peers(stack, skipped)
        else:
            skipped.append({"peer": "py3amf", "reason": "--no-py3amf"})
        workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="amfkit-bench-tiles-"))
        db_path = demo_data.create_database(Path(workdir) / "tiles.sqlite3")
        loop = asyncio.new_event_loop()
        stack.callback(loop.close)
        conn = demo_data.connect(db_path)
        stack.callback(conn.close)
        gateway = demo_app.build(db_path, gzip_threshold=None, browser=False)
        gateway_gz = demo_app.build(db_path, browser=False)  # amfkit's defaults: 1 KiB, level 1
        try:
            # -- the query: checked against the generator, timed once (every shape runs it)
            progress("query")

            def query() -> list[tuple[Any, ...]]:
                return conn.execute(TILE_QUERY, (SET_ID,)).fetchall()

            rows = query()
            if rows == _expected_rows() and len(rows) == ROWS:
                _pass(checks, "query", "rows equal the demo data")
            else:
                _fail(checks, "query", "rows equal the demo data", f"{len(rows)} rows, not the generator's")
            query_timing = _m(query, options)

            for version in VERSIONS:
                for shape in SHAPES:
                    case = f"{shape} AMF{version}"
                    progress(case)
                    row = _run_case(
                        case, shape, version, rows, conversions[shape], gateway, gateway_gz, loop,
                        peers, options, checks, packet, amf_http,
                    )
                    if row is not None:
                        row["server"]["query"] = query_timing
                        row["server_ms"] = sum(row["server"][k]["wall_ms"]["median"] for k in ("query", "conversion", "encoding"))
                        results.append(row)

            progress("gzip thresholds")
            thresholds = _thresholds(options, results, gateway_gz, loop, checks, amf_http)
        finally:
            del gateway, gateway_gz  # their services close their connections when freed
            gc.collect()

    report: dict[str, Any] = {
        "experiment": NAME,
        "summary": SUMMARY,
        "options": options_dict(options),
        "machine": machine,
        "rows": ROWS,
        "results": results,
        "query": query_timing,
        "thresholds": thresholds,
        "checks": checks,
        "skipped": skipped,
        "article_figures": ARTICLE_FIGURES,
    }
    report["ready"] = _ready(report)
    report["elapsed_s"] = round(time.perf_counter() - started, 3)
    report["ok"] = bool(checks) and all(c["ok"] for c in checks) and len(results) == len(SHAPES) * len(VERSIONS)
    report["findings"] = findings(report)
    return report


def _run_case(
    case: str,
    shape: str,
    version: int,
    rows: list[tuple[Any, ...]],
    convert: Callable[[list[tuple[Any, ...]], int], Any],
    gateway: Any,
    gateway_gz: Any,
    loop: asyncio.AbstractEventLoop,
    peers: list[_Peer],
    options: Options,
    checks: list[dict[str, Any]],
    packet: Any,
    amf_http: Any,
) -> dict[str, Any] | None:
    """Check one shape and version, then time its phases; None when a check failed."""
    request = packet.encode(packet.Envelope(version, bodies=[packet.Body(f"TileService.getTilesAs{shape}", "/1", [SET_ID])]))

    def respond(gw: Any, headers: dict[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
        return loop.run_until_complete(gw.respond("POST", "/gateway", headers, request))

    def encode(value: Any) -> bytes:
        return packet.encode(packet.Envelope(version, bodies=[packet.Body("/1/onResult", "null", value)]))

    # -- checks: the phases give the gateway's answer; the client gets the rows back
    try:
        status, _, answer = respond(gateway, _HEADERS)
        raw = encode(convert(rows, version))
        if status != 200 or raw != answer:
            _fail(checks, case, "phases give the gateway's answer", f"HTTP {status}; {len(raw)} bytes vs the gateway's {len(answer)}")
            return None
        _pass(checks, case, "phases give the gateway's answer")
        envelope = packet.decode(raw)
        body = envelope.bodies[0]
        if not body.target.endswith("/onResult") or rows_of(body.value) != rows:
            _fail(checks, case, "client rows equal the query's", f"target {body.target}; rows differ")
            return None
        _pass(checks, case, "client rows equal the query's")
        compressed = {level: amf_http.gzip(raw, level) for level in GZIP_LEVELS}
        if any(zlib.decompress(data, 47) != raw for data in compressed.values()):
            _fail(checks, case, "gzip round trip", "a gzip level does not inflate back to the packet")
            return None
        _pass(checks, case, "gzip round trip")
        status, headers, gz_answer = respond(gateway_gz, _HEADERS_GZIP)
        if status != 200 or ("content-encoding", "gzip") not in headers or zlib.decompress(gz_answer, 47) != raw:
            _fail(checks, case, "gateway gzip answer", f"HTTP {status}, headers {headers}")
            return None
        _pass(checks, case, "gateway gzip answer")
    except Exception as exc:  # a failure is reported, never timed
        _fail(checks, case, "check", f"{type(exc).__name__}: {exc}")
        return None

    value = convert(rows, version)
    decoded = body.value
    row: dict[str, Any] = {
        "case": case,
        "shape": shape,
        "version": version,
        "bytes": {"raw": len(raw), **{f"gzip{level}": len(data) for level, data in compressed.items()}},
        "server": {
            "conversion": _m(lambda: convert(rows, version), options),
            "encoding": _m(lambda: encode(value), options),
            "gateway": _m(lambda: respond(gateway, _HEADERS), options),
            "gateway_gzip": _m(lambda: respond(gateway_gz, _HEADERS_GZIP), options),
        },
        "compress": {f"gzip{level}": _m(_bind(amf_http.gzip, raw, level), options) for level in GZIP_LEVELS},
        "decompress": {f"gzip{level}": _m(_bind(zlib.decompress, data, 47), options) for level, data in compressed.items()},
        "client": {
            "decode": _m(lambda: packet.decode(raw), options),
            "rows": _m(lambda: rows_of(decoded), options),
            "total": _m(lambda: rows_of(packet.decode(raw).bodies[0].value), options),
        },
        "peers": {},
    }
    for peer in peers:
        row["peers"][peer.name] = _run_peer(case, raw, rows, peer, options, checks, PEER_LIMITS.get((shape, version)))
    return row


def _bind(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """`fn` with its arguments fixed (a loop variable captured by value)."""
    return lambda: fn(*args)


def _run_peer(
    case: str,
    raw: bytes,
    rows: list[tuple[Any, ...]],
    peer: _Peer,
    options: Options,
    checks: list[dict[str, Any]],
    limit: str | None = None,
) -> dict[str, Any] | None:
    """A peer as the client: decode the packet and get the rows (its check warms it up).
    With a `limit` (why the peer cannot decode this answer) the check is that it refuses
    the packet with its decode error; nothing is timed."""
    what = f"{peer.name} client rows equal the query's"

    def client() -> list[tuple[Any, ...]]:
        envelope = peer.decode(raw)
        return _py3amf_rows(next(iter(envelope.bodies))[1].body, peer.recordset_class)

    with peer_libs.quietly():  # Py3AMF warns on some calls (deprecated APIs)
        try:
            got = client()
        except Exception as exc:
            if limit is not None and isinstance(exc, peer.decode_error):
                _pass(checks, case, f"{peer.name} refuses it: {limit}")
            else:
                _fail(checks, case, what, f"{type(exc).__name__}: {exc}")
            return None
        if got != rows:
            _fail(checks, case, what, "rows differ")
            return None
        _pass(checks, case, what)
        return {"total": _m(client, options, slow=True)}


def _thresholds(
    options: Options,
    results: list[dict[str, Any]],
    gateway_gz: Any,
    loop: asyncio.AbstractEventLoop,
    checks: list[dict[str, Any]],
    amf_http: Any,
) -> list[dict[str, Any]]:
    """What the gateway sends at each gzip threshold (level 1), asked with Accept-Encoding:
    gzip; checked against the rule (compressed when the packet is at least the threshold)."""
    from amfkit.remoting import packet

    out = []
    default = gateway_gz.gzip_threshold
    try:
        for threshold in options.thresholds:
            gateway_gz.gzip_threshold = threshold
            cases = []
            for row in results:
                request = packet.encode(
                    packet.Envelope(row["version"], bodies=[packet.Body(f"TileService.getTilesAs{row['shape']}", "/1", [SET_ID])])
                )
                status, headers, body = loop.run_until_complete(gateway_gz.respond("POST", "/gateway", _HEADERS_GZIP, request))
                compressed = ("content-encoding", "gzip") in headers
                raw = row["bytes"]["raw"]
                expected = row["bytes"][f"gzip{gateway_gz.gzip_level}"] if raw >= threshold else raw
                what = f"threshold {threshold}: gateway sends {'gzip' if raw >= threshold else 'raw'}"
                if status == 200 and compressed == (raw >= threshold) and len(body) == expected:
                    _pass(checks, row["case"], what)
                else:
                    _fail(checks, row["case"], what, f"HTTP {status}, compressed={compressed}, {len(body)} bytes, expected {expected}")
                cases.append({"case": row["case"], "compressed": compressed, "wire_bytes": len(body)})
            out.append({"threshold": threshold, "level": gateway_gz.gzip_level, "cases": cases})
    finally:
        gateway_gz.gzip_threshold = default
    return out


def _med(timing: dict[str, Any] | None, key: str = "median") -> float:
    return float(timing["wall_ms"][key]) if timing else 0.0


def _ready(report: dict[str, Any]) -> dict[str, Any]:
    """Time to data-ready per link speed, wire option and case, COMPUTED from the measured
    times and sizes: server (gateway call) + compress + RTT + bytes at the link's rate +
    decompress + client (decode and rows). low/high use the minima and maxima."""
    rtt = float(report["options"]["rtt_ms"])
    out: list[dict[str, Any]] = []
    for link in report["options"]["links_mbit"]:
        for row in report["results"]:
            for option in WIRE_OPTIONS:
                wire = row["bytes"][option]
                transfer = rtt + wire * 8 / (link * 1e6) * 1e3
                parts = {}
                for key in ("median", "min", "max"):
                    parts[key] = {
                        "server": _med(row["server"]["gateway"], key),
                        "compress": 0.0 if option == "raw" else _med(row["compress"][option], key),
                        "transfer": transfer,
                        "decompress": 0.0 if option == "raw" else _med(row["decompress"][option], key),
                        "client": _med(row["client"]["total"], key),
                    }
                out.append(
                    {
                        "link_mbit": link,
                        "case": row["case"],
                        "option": option,
                        "wire_bytes": wire,
                        "total_ms": sum(parts["median"].values()),
                        "low_ms": sum(parts["min"].values()),
                        "high_ms": sum(parts["max"].values()),
                        "parts_ms": parts["median"],
                    }
                )
    article = []
    for link in report["options"]["links_mbit"]:
        for shape, s in ARTICLE_FIGURES["server"].items():
            client = ARTICLE_FIGURES["client_ms"][shape][ARTICLE_CLIENT][0]
            article.append(
                {
                    "link_mbit": link,
                    "shape": shape,
                    "total_ms": s["total_ms"] + rtt + s["content_length"] * 8 / (link * 1e6) * 1e3 + client,
                }
            )
    return {
        "computed": True,
        "model": (
            "server (in-process gateway call, no gzip) + gzip time at the level + one round trip "
            "+ bytes on the wire at the link's rate + gunzip time + client decode and rows; "
            "no TCP slow start, HTTP headers or request bytes"
        ),
        "rtt_ms": rtt,
        "rows": out,
        "article": article,
        "article_model": (
            f"the article's server total + one round trip + its Content-length at the link's rate "
            f"+ its {ARTICLE_CLIENT} client function time (its figures exclude Flash's decoding)"
        ),
    }


# --------------------------------------------------------------------------- findings


def _row(report: dict[str, Any], shape: str, version: int) -> dict[str, Any] | None:
    for row in report["results"]:
        if row["shape"] == shape and row["version"] == version:
            return row
    return None


def _pct(a: float, b: float) -> str:
    """How a compares with b, in words: "N% smaller than" / "N% larger than" / "the same size as"."""
    if b == 0:
        return "not comparable with"
    d = (a - b) / b
    if abs(d) < 0.0005:
        return "the same size as"
    amount = f"{abs(d):.1%}" if abs(d) < 0.095 else f"{abs(d):.0%}"
    return f"{amount} {'larger' if d > 0 else 'smaller'} than"


def _x(a: float, b: float) -> str:
    if b <= 0:
        return "-"
    return fmt_factor(a / b)


def _mbit(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _link(value: float) -> str:
    return f"{value:g}"


def findings(report: dict[str, Any]) -> dict[str, list[str]]:
    """Plain-language findings by topic ("wire", "server", "client", "ready"), each
    computed from the report's figures."""
    out: dict[str, list[str]] = {"wire": [], "server": [], "client": [], "ready": []}
    if not report.get("results"):
        return out
    _wire_findings(report, out["wire"])
    _server_findings(report, out["server"])
    _client_findings(report, out["client"])
    _ready_findings(report, out["ready"])
    return out


def _wire_findings(report: dict[str, Any], out: list[str]) -> None:
    s3, rs3 = _row(report, "String", 3), _row(report, "RecordSet", 3)
    if s3 and rs3:
        out.append(
            f"AMF3: the recordset is {_pct(rs3['bytes']['raw'], s3['bytes']['raw'])} the string uncompressed "
            f"({rs3['bytes']['raw']:,} vs {s3['bytes']['raw']:,} bytes) and {_pct(rs3['bytes']['gzip6'], s3['bytes']['gzip6'])} "
            f"it gzipped at level 6 ({rs3['bytes']['gzip6']:,} vs {s3['bytes']['gzip6']:,}; level 1: "
            f"{rs3['bytes']['gzip1']:,} vs {s3['bytes']['gzip1']:,})."
        )
    c3 = _row(report, "Columns", 3)
    if s3 and c3:
        out.append(
            f"AMF3: the typed columns are {_pct(c3['bytes']['raw'], s3['bytes']['raw'])} the string uncompressed "
            f"({c3['bytes']['raw']:,} vs {s3['bytes']['raw']:,} bytes), {_pct(c3['bytes']['gzip1'], s3['bytes']['gzip1'])} it "
            f"gzipped at level 1 ({c3['bytes']['gzip1']:,} vs {s3['bytes']['gzip1']:,}) and {_pct(c3['bytes']['gzip6'], s3['bytes']['gzip6'])} "
            f"it at level 6 ({c3['bytes']['gzip6']:,} vs {s3['bytes']['gzip6']:,})."
        )
    s0, a0, t0, rs0 = (_row(report, s, 0) for s in ("String", "Array", "TypedObjects", "RecordSet"))
    if s0 and a0 and t0 and rs0:
        out.append(
            f"AMF0 repeats every member name in every row: the array of objects is {_x(a0['bytes']['raw'], s0['bytes']['raw'])} "
            f"the string's size raw and typed objects {_x(t0['bytes']['raw'], s0['bytes']['raw'])} (the recordset, "
            f"numbers as 9-byte doubles, {_x(rs0['bytes']['raw'], s0['bytes']['raw'])}); gzip -6 brings them to "
            f"{_x(a0['bytes']['gzip6'], s0['bytes']['gzip6'])}, {_x(t0['bytes']['gzip6'], s0['bytes']['gzip6'])} and "
            f"{_x(rs0['bytes']['gzip6'], s0['bytes']['gzip6'])} the gzipped string."
        )
        article = ARTICLE_FIGURES["server"]
        out.append(
            f"Against the article's AMF0 sizes: our string is {_pct(s0['bytes']['raw'], article['String']['raw_bytes'])} its "
            f"{article['String']['raw_bytes']:,} bytes ({s0['bytes']['raw']:,}) and our recordset {_pct(rs0['bytes']['raw'], article['RecordSet']['raw_bytes'])} "
            f"its {article['RecordSet']['raw_bytes']:,} ({rs0['bytes']['raw']:,}); our array of objects is "
            f"{_pct(a0['bytes']['raw'], article['Array']['raw_bytes'])} its {article['Array']['raw_bytes']:,} ({a0['bytes']['raw']:,}: "
            f"our values are numbers, its PHP rows held strings). Gzipped at level 6 our string is "
            f"{_pct(s0['bytes']['gzip6'], article['String']['content_length'])} its Content-length of {article['String']['content_length']:,}."
        )
    # gzip 6 vs 1: extra saving, extra time, break-even link
    saves, costs, breaks = [], [], []
    for row in report["results"]:
        b1, b6 = row["bytes"]["gzip1"], row["bytes"]["gzip6"]
        t1 = _med(row["compress"]["gzip1"]) + _med(row["decompress"]["gzip1"])
        t6 = _med(row["compress"]["gzip6"]) + _med(row["decompress"]["gzip6"])
        saves.append((b1 - b6) / b1 if b1 else 0.0)
        if t1 > 0:
            costs.append(_med(row["compress"]["gzip6"]) / max(_med(row["compress"]["gzip1"]), 1e-9))
        if t6 > t1 and b1 > b6:
            breaks.append((b1 - b6) * 8 / ((t6 - t1) / 1e3) / 1e6)
    if saves and costs:
        text = (
            f"gzip -6 saves a further {min(saves):.0%}-{max(saves):.0%} of the bytes over gzip -1 for "
            f"{min(costs):.1f}-{max(costs):.1f}x its compression time"
        )
        if breaks:
            text += f"; it pays only on links slower than {_mbit(min(breaks))}-{_mbit(max(breaks))} Mbit/s (break-even computed from these sizes and times)"
        out.append(text + ".")
    groups: list[tuple[list[str], dict[str, Any]]] = []  # thresholds with the same outcome
    for entry in report.get("thresholds", []):
        word = THRESHOLD_WORDS.get(entry["threshold"], f"{entry['threshold']:,} bytes")
        key = [(c["case"], c["compressed"]) for c in entry["cases"]]
        if groups and [(c["case"], c["compressed"]) for c in groups[-1][1]["cases"]] == key:
            groups[-1][0].append(word)
        else:
            groups.append(([word], entry))
    for words, entry in groups:
        raw = [c["case"] for c in entry["cases"] if not c["compressed"]]
        total = len(entry["cases"])
        wire = sum(c["wire_bytes"] for c in entry["cases"])
        said = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
        head = f"At a gzip threshold of {said}" if len(words) == 1 else f"At gzip thresholds of {said}"
        if not raw:
            out.append(f"{head} all {total} answers are compressed ({wire:,} bytes on the wire for the {total}).")
        elif len(raw) == total:
            out.append(f"{head} no answer is compressed ({wire:,} bytes on the wire for the {total}).")
        else:
            out.append(
                f"{head} {total - len(raw)} of {total} answers are compressed; {', '.join(raw)} go out raw "
                f"({wire:,} bytes on the wire for the {total})."
            )


def _server_findings(report: dict[str, Any], out: list[str]) -> None:
    rows = report["results"]
    s0, a0, rs0 = (_row(report, s, 0) for s in ("String", "Array", "RecordSet"))
    fastest = min(rows, key=lambda r: r["server_ms"])
    slowest = max(rows, key=lambda r: r["server_ms"])
    article = ARTICLE_FIGURES["server"]
    if s0 and a0:
        out.append(
            f"Server time (query + conversion + encoding, medians): {fmt_figure(fastest['server_ms'])} ms for the fastest "
            f"({fastest['case']}) to {fmt_figure(slowest['server_ms'])} ms for the slowest ({slowest['case']}); the AMF0 array of "
            f"objects takes {_x(a0['server_ms'], s0['server_ms'])} the string's time, where the article measured "
            f"{_x(article['Array']['total_ms'], article['String']['total_ms'])} ({article['Array']['total_ms']} vs {article['String']['total_ms']} ms)."
        )
    q = _med(report["query"])
    shares = [q / r["server_ms"] for r in rows if r["server_ms"] > 0]
    if shares:
        out.append(
            f"The SQL query and fetch ({fmt_figure(q)} ms) is {min(shares):.0%}-{max(shares):.0%} of the server time; "
            f"encoding ranges from {fmt_figure(min(_med(r['server']['encoding']) for r in rows))} to "
            f"{fmt_figure(max(_med(r['server']['encoding']) for r in rows))} ms."
        )
    if a0 and rs0 and s0:
        out.append(
            f"Encoding the AMF0 array of objects takes {fmt_figure(_med(a0['server']['encoding']))} ms here against Amfphp's "
            f"{article['Array']['encode_ms']} ms ({_x(article['Array']['encode_ms'], _med(a0['server']['encoding']))} less time), the recordset "
            f"{fmt_figure(_med(rs0['server']['encoding']))} against {article['RecordSet']['encode_ms']} ms, the string "
            f"{fmt_figure(_med(s0['server']['encoding']))} against {article['String']['encode_ms']} ms (different machines and PHP 4 against compiled code)."
        )
    conv = {r["shape"]: _med(r["server"]["conversion"]) for r in rows if r["version"] == 3}
    if len(conv) == len(SHAPES):
        out.append(
            f"Conversion (AMF3): the recordset only wraps the fetched tuples ({fmt_figure(conv['RecordSet'])} ms; the encoder "
            f"writes the rows straight from them), a Tile per row costs {fmt_figure(conv['TypedObjects'])} ms, a dict per row "
            f"{fmt_figure(conv['Array'])} ms and the string join {fmt_figure(conv['String'])} ms; the article's PHP loop (fetch "
            f"included) took {ARTICLE_FIGURES['server']['String']['creation_ms']:g} ms for the string and {ARTICLE_FIGURES['server']['Array']['creation_ms']:g} ms for the array."
        )
    s3, c3 = _row(report, "String", 3), _row(report, "Columns", 3)
    if s3 and c3:
        out.append(
            f"The AMF3 typed columns take {_x(c3['server_ms'], s3['server_ms'])} the string's server time (query + conversion + "
            f"encoding: {fmt_figure(c3['server_ms'])} vs {fmt_figure(s3['server_ms'])} ms) and "
            f"{_x(_med(c3['server']['gateway']), _med(s3['server']['gateway']))} its gateway call "
            f"({fmt_figure(_med(c3['server']['gateway']))} vs {fmt_figure(_med(s3['server']['gateway']))} ms): turning the rows into "
            f"columns costs {fmt_figure(_med(c3['server']['conversion']))} ms against the join's {fmt_figure(_med(s3['server']['conversion']))}, "
            f"and encoding them {fmt_figure(_med(c3['server']['encoding']))} ms."
        )
    extra = [_med(r["server"]["gateway"]) - r["server_ms"] for r in rows]
    gz = [_med(r["server"]["gateway_gzip"]) - _med(r["server"]["gateway"]) for r in rows]
    out.append(
        f"The whole in-process gateway call adds {fmt_figure(min(extra))}-{fmt_figure(max(extra))} ms to the three phases "
        f"(request decoding, dispatch, the event loop); compressing at amfkit's default (1 KiB, level 1) adds "
        f"{fmt_figure(min(gz))}-{fmt_figure(max(gz))} ms more."
    )


def _client_findings(report: dict[str, Any], out: list[str]) -> None:
    s3, rs3, s0, a0 = (_row(report, s, v) for s, v in (("String", 3), ("RecordSet", 3), ("String", 0), ("Array", 0)))
    rows = report["results"]
    if s3 and rs3:
        out.append(
            f"The string needs {fmt_figure(_med(s3['client']['rows']))} ms of client splitting (parse_tiles_string) after a "
            f"{fmt_figure(_med(s3['client']['decode']))} ms decode; the AMF3 recordset needs {fmt_figure(_med(rs3['client']['decode']))} ms to "
            f"decode and {fmt_figure(_med(rs3['client']['rows']))} ms to read its rows: {fmt_figure(_med(s3['client']['total']))} against "
            f"{fmt_figure(_med(rs3['client']['total']))} ms to rows in all."
        )
    c3 = _row(report, "Columns", 3)
    if s3 and c3:
        out.append(
            f"The AMF3 typed columns decode in {fmt_figure(_med(c3['client']['decode']))} ms and zip back into rows (the colours "
            f"formatted as text again) in {fmt_figure(_med(c3['client']['rows']))} ms: {fmt_figure(_med(c3['client']['total']))} ms "
            f"to rows against the string's {fmt_figure(_med(s3['client']['total']))}; a Flash or Royale client uses the columns "
            f"as they come."
        )
    fastest = min(rows, key=lambda r: _med(r["client"]["total"]))
    slowest = max(rows, key=lambda r: _med(r["client"]["total"]))
    out.append(
        f"Decode plus rows with amfkit: fastest {fastest['case']} ({fmt_figure(_med(fastest['client']['total']))} ms), "
        f"slowest {slowest['case']} ({fmt_figure(_med(slowest['client']['total']))} ms)."
    )
    if s0 and a0:
        article = ARTICLE_FIGURES["client_ms"]
        out.append(
            f"Splitting the string against reading the AMF0 array's objects: {_x(_med(s0['client']['rows']), _med(a0['client']['rows']))} "
            f"here ({fmt_figure(_med(s0['client']['rows']))} vs {fmt_figure(_med(a0['client']['rows']))} ms), "
            f"{_x(article['String'][ARTICLE_CLIENT][0], article['Array'][ARTICLE_CLIENT][0])} in the article's Flash client "
            f"({article['String'][ARTICLE_CLIENT][0]} vs {article['Array'][ARTICLE_CLIENT][0]} ms on its {ARTICLE_CLIENT.lower()})."
        )
    for peer in _peer_names(report):
        ratios = [
            (_med(r["peers"][peer]["total"]) / _med(r["client"]["total"]), r["case"])
            for r in rows
            if (r.get("peers") or {}).get(peer) and _med(r["client"]["total"]) > 0 and r["shape"] != "String"
        ]
        strings = [
            _med(r["peers"][peer]["total"]) / _med(r["client"]["total"])
            for r in rows
            if (r.get("peers") or {}).get(peer) and _med(r["client"]["total"]) > 0 and r["shape"] == "String"
        ]
        if ratios:
            lo, hi = min(ratios), max(ratios)
            text = (
                f"{_PEER_WORDS.get(peer, peer)} as the client takes {_x(lo[0], 1)} ({lo[1]}) to {_x(hi[0], 1)} ({hi[1]}) "
                f"amfkit's time to decode the object shapes and get their rows"
            )
            if strings:
                text += f" (the string, where splitting dominates: {_x(min(strings), 1)}-{_x(max(strings), 1)})"
            out.append(text + ".")
    for check in report["checks"]:
        for peer in _PEER_WORDS:
            if check["ok"] and check["check"].startswith(f"{peer} refuses it: "):
                reason = check["check"].split(": ", 1)[1]
                out.append(f"{_PEER_WORDS[peer]} cannot decode {check['case']}: {reason}; it is not timed there.")


_PEER_WORDS = {"py3amf": "Py3AMF (pure Python)", "py3amf-ext": "Py3AMF with its Cython extension"}


def _peer_names(report: dict[str, Any]) -> list[str]:
    names: dict[str, None] = {}
    for r in report["results"]:
        for name, timing in (r.get("peers") or {}).items():
            if timing:
                names[name] = None
    return list(names)


def _ready_findings(report: dict[str, Any], out: list[str]) -> None:
    ready = report.get("ready") or {}
    entries = ready.get("rows", [])
    if not entries:
        return
    out.append(
        f"Data-ready times are computed, not measured: {ready['model']}; round trip {ready['rtt_ms']:g} ms."
    )
    for link in report["options"]["links_mbit"]:
        at = [e for e in entries if e["link_mbit"] == link]
        best = min(at, key=lambda e: e["total_ms"])
        worst = max(at, key=lambda e: e["total_ms"])
        per_shape = []
        for shape in SHAPES:
            mine = [e for e in at if e["case"].startswith(shape + " ")]
            if mine:
                e = min(mine, key=lambda e: e["total_ms"])
                per_shape.append(f"{SHAPE_WORDS[shape]} {fmt_figure(e['total_ms'])} ({e['case'].split()[-1]} {WIRE_WORDS[e['option']]})")
        text = (
            f"At {_link(link)} Mbit/s the fastest to data-ready is {best['case']} {WIRE_WORDS[best['option']]} "
            f"({fmt_figure(best['total_ms'])} ms, {best['wire_bytes']:,} bytes); best per shape: {', '.join(per_shape)} ms; "
            f"the slowest is {worst['case']} {WIRE_WORDS[worst['option']]} ({fmt_figure(worst['total_ms'])} ms)."
        )
        out.append(text)
    article_rows = ready.get("article", [])
    if article_rows:
        parts = []
        for link in report["options"]["links_mbit"]:
            at = sorted((e for e in article_rows if e["link_mbit"] == link), key=lambda e: e["total_ms"])
            if at:
                parts.append(f"{_link(link)} Mbit/s: " + ", ".join(f"{SHAPE_WORDS[e['shape']]} {fmt_figure(e['total_ms'])}" for e in at) + " ms")
        out.append("The article's own figures through the same model (its " + ARTICLE_CLIENT.lower() + " client): " + "; ".join(parts) + ".")
    breaks = []
    for row in report["results"]:
        saved = row["bytes"]["raw"] - row["bytes"]["gzip1"]
        cost = _med(row["compress"]["gzip1"]) + _med(row["decompress"]["gzip1"])
        if saved > 0 and cost > 0:
            breaks.append((saved * 8 / (cost / 1e3) / 1e6, row["case"]))
    if breaks:
        lo, hi = min(breaks), max(breaks)
        out.append(
            f"gzip -1 beats sending raw on links slower than {_mbit(lo[0])} Mbit/s ({lo[1]}) to "
            f"{_mbit(hi[0])} Mbit/s ({hi[1]}) (break-even computed from the bytes it saves and its compress + decompress time)."
        )


# --------------------------------------------------------------------------- the report


def _article_lines() -> list[str]:
    s, c = ARTICLE_FIGURES["server"], ARTICLE_FIGURES["client_ms"]
    names = {"String": "string", "Array": "array", "RecordSet": "mysql result (recordset)"}
    lines = [f"source: {ARTICLE_FIGURES['article']}", f"setup: {ARTICLE_FIGURES['setup']}"]
    for shape in ("String", "Array", "RecordSet"):
        x = s[shape]
        creation = f"{x['creation_ms']:g} ms (sd {x['creation_sd']:g})" if x["creation_ms"] is not None else "n/a"
        lines.append(
            f"{names[shape]}: uncompressed {x['raw_bytes']:,} bytes; Content-length (gzipped) {x['content_length']:,} bytes; "
            f"Amfphp encode {x['encode_ms']:g} ms (sd {x['encode_sd']:g}); PHP result creation {creation}; total {x['total_ms']:g} ms"
        )
    for shape in ("String", "Array", "RecordSet"):
        lines.append(
            f"{names[shape]}: client function (Flash) "
            + "; ".join(f"{m} {v[0]:g} ms (sd {v[1]:g})" for m, v in c[shape].items())
        )
    lines += [
        "client machines: " + "; ".join(f"{m}: {d}" for m, d in ARTICLE_FIGURES["client_machines"].items()),
        f"gzip threshold: Amfphp's default {ARTICLE_FIGURES['gzip_threshold_default']:,} bytes (25*1024), lowered to "
        f"{ARTICLE_FIGURES['gzip_threshold_used']:,} (5*1024) because the string was about {ARTICLE_FIGURES['string_raw_approx_kb']} KB",
        f"string splitting on the laptop: {ARTICLE_FIGURES['string_split_extra_laptop_ms']:g} ms longer than the array; extra server time: "
        f"array {ARTICLE_FIGURES['extra_server_ms']['Array']:g} ms, recordset {ARTICLE_FIGURES['extra_server_ms']['RecordSet']:g} ms",
        f"comments: on a fast connection ({ARTICLE_FIGURES['fast_link_kbit']:,} kbit/s) the string is still quickest from request to "
        f"data-ready; gzip saves {ARTICLE_FIGURES['fast_link_saving']}",
    ]
    return lines


def _tables(report: dict[str, Any]) -> dict[str, Table]:
    """The report's tables (display strings, shared by the text report and the sections)."""
    results = report["results"]
    server = Table(
        ["case", "query ms", "conversion ms", "encoding ms", "sum ms", "gateway call ms", "gateway + gzip ms"],
        [
            [
                r["case"],
                timing_cell(r["server"]["query"]),
                timing_cell(r["server"]["conversion"]),
                timing_cell(r["server"]["encoding"]),
                fmt_figure(r["server_ms"]),
                timing_cell(r["server"]["gateway"]),
                timing_cell(r["server"]["gateway_gzip"]),
            ]
            for r in results
        ],
    )
    wire = Table(
        ["case", "raw bytes", "gzip -1", "gzip -6", "gzip -1 ms", "gzip -6 ms", "gunzip -1 ms", "gunzip -6 ms"],
        [
            [
                r["case"],
                f"{r['bytes']['raw']:,}",
                f"{r['bytes']['gzip1']:,}",
                f"{r['bytes']['gzip6']:,}",
                fmt_figure(_med(r["compress"]["gzip1"])),
                fmt_figure(_med(r["compress"]["gzip6"])),
                fmt_figure(_med(r["decompress"]["gzip1"])),
                fmt_figure(_med(r["decompress"]["gzip6"])),
            ]
            for r in results
        ],
    )
    th = report.get("thresholds", [])
    thresholds = Table(
        ["case"] + [f"{t['threshold']:,} B" for t in th],
        [
            [r["case"]]
            + [
                next(
                    (f"{c['wire_bytes']:,} {'gz' if c['compressed'] else 'raw'}" for c in t["cases"] if c["case"] == r["case"]),
                    "-",
                )
                for t in th
            ]
            for r in results
        ],
    )
    peers = _peer_names(report)
    client_rows = []
    for r in results:
        cells: list[Any] = [
            r["case"],
            timing_cell(r["client"]["decode"]),
            timing_cell(r["client"]["rows"]),
            timing_cell(r["client"]["total"]),
        ]
        for peer in peers:
            timing = (r.get("peers") or {}).get(peer)
            cells.append(timing_cell(timing["total"]) if timing else "-")
            cells.append(_x(_med(timing["total"]), _med(r["client"]["total"])) if timing else "-")
        client_rows.append(cells)
    client = Table(
        ["case", "decode ms", "rows ms", "decode + rows ms"]
        + [h for peer in peers for h in (f"{peer} decode + rows ms", f"{peer} / amfkit")],
        client_rows,
    )
    ready = report.get("ready") or {}
    links = report["options"]["links_mbit"]
    ready_rows = []
    for r in results:
        for option in WIRE_OPTIONS:
            cells = [f"{r['case']} {WIRE_WORDS[option]}", f"{r['bytes'][option]:,}"]
            for link in links:
                e = next((e for e in ready.get("rows", []) if e["case"] == r["case"] and e["option"] == option and e["link_mbit"] == link), None)
                cells.append(fmt_figure(e["total_ms"]) if e else "-")
            ready_rows.append(cells)
    for shape in ("String", "Array", "RecordSet"):
        cells = [f"article {shape} (its figures)", f"{ARTICLE_FIGURES['server'][shape]['content_length']:,}"]
        for link in links:
            e = next((e for e in ready.get("article", []) if e["shape"] == shape and e["link_mbit"] == link), None)
            cells.append(fmt_figure(e["total_ms"]) if e else "-")
        ready_rows.append(cells)
    ready_table = Table(["case / wire", "bytes"] + [f"{_link(link)} Mbit/s ms" for link in links], ready_rows)
    return {"server": server, "wire": wire, "thresholds": thresholds, "client": client, "ready": ready_table}


def format_report(report: dict[str, Any]) -> str:
    """The report as plain text: a table per part, the article's figures, the findings."""
    opts = report["options"]
    tables = _tables(report)
    out = [
        f"amfkit bench tiles: the demo's {report['rows']:,}-row tile query ({ARTICLE}), {len(SHAPES)} shapes x AMF0/AMF3",
        f"times: wall-clock ms, median (min-max) of {opts['repeat']} repetitions after {opts['warmup']} warm-up "
        f"(Py3AMF: {opts['slow_repeat']})",
        "",
        "server, per phase (the query is timed once: every shape runs it):",
        *text_table(tables["server"].headers, tables["server"].rows),
        "",
        "bytes on the wire (the gateway's gzip()) and gzip times:",
        *text_table(tables["wire"].headers, tables["wire"].rows),
        "",
        "what the gateway sends at each gzip threshold (level 1; gz = compressed):",
        *text_table(tables["thresholds"].headers, tables["thresholds"].rows),
        "",
        "client: decode (amfkit.remoting.packet.decode) and get rows (list of tuples):",
        *text_table(tables["client"].headers, tables["client"].rows),
        "",
        f"time to data-ready, COMPUTED (round trip {report['ready']['rtt_ms']:g} ms): {report['ready']['model']}",
        f"article rows: {report['ready']['article_model']}",
        *text_table(tables["ready"].headers, tables["ready"].rows),
        "",
        "the article's own figures:",
        *(f"  {line}" for line in _article_lines()),
    ]
    found = report.get("findings") or findings(report)
    out += ["", "findings:"]
    for topic in ("wire", "server", "client", "ready"):
        out += [f"  - {text}" for text in found.get(topic, [])]
    failed = [c for c in report["checks"] if not c["ok"]]
    passed = len(report["checks"]) - len(failed)
    out += ["", f"checks: {passed} passed, {len(failed)} failed"]
    out += [f"  FAILED {c['case']}: {c['check']}: {c['detail']}" for c in failed]
    for skip in report.get("skipped", []):
        out.append(f"skipped {skip['peer']}: {skip['reason']}")
    out += machine_lines(report)
    return "\n".join(out)


def sections(report: dict[str, Any]) -> list[Section]:
    """The report as sections: server phases, bytes, client, data-ready; each with its
    tables, charts (bars with min-max spread; the article's figures as reference bars),
    the article's numbers and the findings."""
    if not report.get("results"):
        return [Section(f"{NAME}: no results", intro="every check failed; see the checks in the JSON report")]
    tables = _tables(report)
    found = report.get("findings") or findings(report)
    article = ARTICLE_FIGURES["server"]
    results = report["results"]
    article_lines = _article_lines()

    server_charts = []
    for version in VERSIONS:
        bars = []
        for r in (r for r in results if r["version"] == version):
            for phase in ("query", "conversion", "encoding", "gateway"):
                bars.append(timing_bar(f"{r['shape']} {phase if phase != 'gateway' else 'gateway call'}", r["server"][phase], phase))
        reference = []
        if version == 0:
            for shape in ("String", "Array", "RecordSet"):
                x = article[shape]
                reference.append(Bar(f"article {shape} encode", x["encode_ms"], x["encode_ms"] - x["encode_sd"], x["encode_ms"] + x["encode_sd"], "encoding"))
                if x["creation_ms"] is not None:
                    reference.append(
                        Bar(f"article {shape} result creation", x["creation_ms"], x["creation_ms"] - x["creation_sd"], x["creation_ms"] + x["creation_sd"], "conversion")
                    )
        server_charts.append(Chart(f"Server time per phase, AMF{version} (1000 tiles)", "ms", bars, log=bool(reference), reference=reference))

    wire_charts = []
    for version in VERSIONS:
        bars = [
            Bar(f"{r['shape']} {WIRE_WORDS[o]}", float(r["bytes"][o]), group=WIRE_WORDS[o])
            for r in results
            if r["version"] == version
            for o in WIRE_OPTIONS
        ]
        reference = []
        if version == 0:
            for shape in ("String", "Array", "RecordSet"):
                reference.append(Bar(f"article {shape} raw", float(article[shape]["raw_bytes"]), group="raw"))
                reference.append(Bar(f"article {shape} gzipped", float(article[shape]["content_length"]), group="gzip -6"))
        wire_charts.append(Chart(f"Bytes on the wire, AMF{version}", "bytes", bars, reference=reference))
    th = report.get("thresholds", [])
    if th:
        wire_charts.append(
            Chart(
                f"Bytes the gateway sends at each gzip threshold (all {len(th[0]['cases'])} answers)",
                "bytes",
                [
                    Bar(THRESHOLD_WORDS.get(t["threshold"], f"{t['threshold']:,} B"), float(sum(c["wire_bytes"] for c in t["cases"])), group="threshold")
                    for t in th
                ],
            )
        )

    client_bars = []
    for r in results:
        client_bars.append(timing_bar(f"{r['case']} decode", r["client"]["decode"], "amfkit decode"))
        client_bars.append(timing_bar(f"{r['case']} rows", r["client"]["rows"], "amfkit rows"))
        for peer, timing in (r.get("peers") or {}).items():
            if timing:
                client_bars.append(timing_bar(f"{r['case']} {peer} decode + rows", timing["total"], f"{peer} decode + rows"))
    client_ref = [
        Bar(f"article {shape} client function ({machine})", v[0], max(v[0] - v[1], 0.0), v[0] + v[1], "article")
        for shape in ("String", "Array", "RecordSet")
        for machine, v in ARTICLE_FIGURES["client_ms"][shape].items()
    ]
    client_chart = Chart("Client: decode and get rows (ms)", "ms", client_bars, log=True, reference=client_ref)

    ready = report["ready"]
    ready_charts = []
    for link in report["options"]["links_mbit"]:
        bars = [
            Bar(f"{e['case']} {WIRE_WORDS[e['option']]}", e["total_ms"], e["low_ms"], e["high_ms"], WIRE_WORDS[e["option"]])
            for e in ready["rows"]
            if e["link_mbit"] == link
        ]
        reference = [Bar(f"article {e['shape']} (its figures)", e["total_ms"], group="article") for e in ready["article"] if e["link_mbit"] == link]
        ready_charts.append(
            Chart(f"Time to data-ready at {_link(link)} Mbit/s, RTT {ready['rtt_ms']:g} ms (computed)", "ms", bars, reference=reference)
        )

    opts = report["options"]
    method = (
        f"median (min-max) of {opts['repeat']} repetitions after {opts['warmup']} warm-up calls, garbage collector held "
        f"still; every case checked before it is timed ({sum(c['ok'] for c in report['checks'])} of {len(report['checks'])} checks passed)."
    )
    return [
        Section(
            f"tiles: server time ({ARTICLE})",
            intro=(
                "The demo's 1000-row tile query (TileService over SQLite) in five shapes, AMF0 and AMF3. Server time split into "
                "the SQL query and fetch, the conversion of the rows into the shape, and the encoding of the response packet; "
                "beside them the whole in-process gateway call (Gateway.respond, no HTTP). The article's Amfphp figures (AMF0, "
                "PHP 4 on a 2007 Opteron) are the hatched bars. " + method
            ),
            tables=[tables["server"]],
            charts=server_charts,
            article=article_lines[:5],
            findings=found.get("server", []),
        ),
        Section(
            "tiles: bytes on the wire and gzip",
            intro=(
                "Each answer raw and gzipped at levels 1 (amfkit's default) and 6 (zlib's default), and what the gateway "
                "sends at each gzip threshold (checked against a gateway at that threshold)."
            ),
            tables=[tables["wire"], tables["thresholds"]],
            charts=wire_charts,
            article=[article_lines[i] for i in (2, 3, 4, 9)],
            findings=found.get("wire", []),
        ),
        Section(
            "tiles: client decode to rows",
            intro=(
                "Time for a Python client to decode the answer (amfkit.remoting.packet.decode) and get a list of row tuples; "
                "the string is split with parse_tiles_string. Py3AMF's decoder is the slow client. The article's Flash "
                "client figures time only its loop over the already-decoded result."
            ),
            tables=[tables["client"]],
            charts=[client_chart],
            article=article_lines[5:9],
            findings=found.get("client", []),
        ),
        Section(
            "tiles: time to data-ready (computed)",
            intro=f"COMPUTED, not measured: {ready['model']}; round trip {ready['rtt_ms']:g} ms. Article bars: {ready['article_model']}.",
            tables=[tables["ready"]],
            charts=ready_charts,
            article=article_lines[10:],
            findings=found.get("ready", []),
        ),
    ]


# --------------------------------------------------------------------------- command line


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in text.split(",") if x.strip())


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def parse_options(argv: list[str] | None = None) -> Options:
    """Command-line arguments -> `Options` (exits with status 2 on bad arguments)."""
    p = argparse.ArgumentParser(prog="amfkit bench tiles", description=SUMMARY)
    p.add_argument("--quick", action="store_true", help=f"{QUICK_REPEAT} repetitions, Py3AMF once (a correctness run)")
    p.add_argument("--repeat", type=int, help=f"timed repetitions (default {DEFAULT_REPEAT}; --quick: {QUICK_REPEAT})")
    p.add_argument("--warmup", type=int, help=f"untimed calls first (default {DEFAULT_WARMUP}; --quick: {QUICK_WARMUP})")
    p.add_argument("--slow-repeat", type=int, help=f"Py3AMF's timed repetitions (default {SLOW_REPEAT}; --quick: 1)")
    p.add_argument("--no-py3amf", action="store_true", help="leave out Py3AMF as the slow client")
    p.add_argument("--thresholds", default=",".join(map(str, DEFAULT_THRESHOLDS)), help="gzip thresholds in bytes (default 0,1024,5120,25600)")
    p.add_argument("--links", default=",".join(f"{x:g}" for x in DEFAULT_LINKS_MBIT), help="link speeds in Mbit/s for the computed data-ready time (default 1,8,100)")
    p.add_argument("--rtt-ms", type=float, default=DEFAULT_RTT_MS, help=f"round-trip time of the computed data-ready time (default {DEFAULT_RTT_MS:g})")
    p.add_argument("--json", dest="json_path", metavar="PATH", help="also write the report as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    a = p.parse_args(argv)
    repeat = a.repeat if a.repeat is not None else (QUICK_REPEAT if a.quick else DEFAULT_REPEAT)
    warmup = a.warmup if a.warmup is not None else (QUICK_WARMUP if a.quick else DEFAULT_WARMUP)
    slow = a.slow_repeat if a.slow_repeat is not None else (1 if a.quick else SLOW_REPEAT)
    try:
        thresholds = _ints(a.thresholds)
        links = _floats(a.links)
    except ValueError:
        p.error("--thresholds takes integers and --links numbers, separated by commas")
    if repeat < 1 or slow < 1 or warmup < 0:
        p.error("--repeat and --slow-repeat must be at least 1, --warmup at least 0")
    if any(t < 0 for t in thresholds):
        p.error("--thresholds must be 0 or more")
    if not links or any(x <= 0 for x in links):
        p.error("--links must be positive numbers")
    if a.rtt_ms < 0:
        p.error("--rtt-ms must be 0 or more")
    progress = None if a.quiet else (lambda message: print(f"tiles: {message}", file=sys.stderr, flush=True))
    return Options(
        repeat=repeat,
        warmup=warmup,
        slow_repeat=slow,
        py3amf=not a.no_py3amf,
        quick=a.quick,
        thresholds=thresholds,
        links_mbit=links,
        rtt_ms=a.rtt_ms,
        json_path=a.json_path,
        progress=progress,
    )


def main(argv: list[str] | None = None) -> int:
    """`amfkit bench tiles [options]`: print the report; 0 if every check passed, else 1."""
    return experiment_main(argv, parse_options, run, format_report)


if __name__ == "__main__":
    sys.exit(main())
