"""`amfkit bench codec`: the PyAMF speed article's AMFBench graphs encoded and decoded by
amfkit and its peers, each graph at each size in a process of its own (docs/benchmarks.md,
"The codec experiment").
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import gzip
import multiprocessing
import pickle
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from . import graphs, peers
from amfkit.compare import first_difference
from .model import Bar, Chart, Section, Table, add_ratios, experiment_main, options_dict, round_trip, timing_bar
from .text import fmt_figure, machine_lines, ratio_cell, text_table, than, timing_cell, waited
from .timing import machine_facts, measure

__all__ = ["NAME", "SUMMARY", "Options", "Variant", "format_report", "main", "parse_options", "run", "sections"]

NAME = "codec"
#: The article this experiment reproduces (docs/benchmarks.md).
ARTICLE = "the PyAMF speed article"
SUMMARY = f"AMFBench graphs ({ARTICLE}): encode/decode time and size, amfkit vs Py3AMF, pickle, orjson, msgpack"

BASELINE = "amfkit AMF3"
QUICK_SIZE = 1_000
DEFAULT_SIZE = 10_000
#: What a full run covers: 1,000 to 200,000 items (is the cost per item flat?).
FULL_SIZES = (1_000, 10_000, 50_000, 200_000)
#: The pure-Python peers stop here (at 200,000 items they take minutes a graph).
SLOW_MAX_SIZE = 50_000
DEFAULT_REPEAT = 5
SLOW_REPEAT_CAP = 3
GZIP_LEVEL = 6


@dataclass
class Options:
    """What to run. `repeat` applies to the fast variants; slow ones get `slow_repeat`."""

    size: int = DEFAULT_SIZE
    #: Further graph sizes run beside `size` (the full run covers 1,000 to 200,000).
    more_sizes: tuple[int, ...] = ()
    graphs: tuple[str, ...] = graphs.GRAPH_NAMES
    repeat: int = DEFAULT_REPEAT
    slow_repeat: int = SLOW_REPEAT_CAP
    py3amf: bool = True
    quick: bool = False
    json_path: str | None = None
    progress: Callable[[str], None] | None = field(default=None, repr=False, compare=False)

    def all_sizes(self) -> list[int]:
        return sorted({self.size, *self.more_sizes})


@dataclass
class Variant:
    """One codec under test: a name, what it is fed, and its encode and decode callables."""

    name: str
    library: str
    format: str
    input: str  # "amf": typed objects and shared references; "json": the plain-dict twin
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    slow: bool = False
    noisy: bool = False  # emits warnings on its first calls (lazy imports); checked quietly

    @property
    def keeps_references(self) -> bool:
        return self.input == "amf"


# --------------------------------------------------------------------------- variants


def _amfkit_variants(stack: contextlib.ExitStack, versions: dict[str, str | None]) -> list[Variant]:
    import amfkit

    versions["amfkit"] = peers.package_version("amfkit")
    for cls, spec in graphs.CLASSES.items():
        peers.register_amfkit(stack, cls, spec.alias, static=spec.static or None, dynamic=spec.dynamic)
    variants = []
    for fmt, module in (("AMF3", amfkit.amf3), ("AMF0", amfkit.amf0)):
        encoder, decoder = module.Encoder(), module.Decoder()
        variants.append(Variant(f"amfkit {fmt}", "amfkit", fmt, "amf", encoder.encode, decoder.decode))
    for fmt, module in (("AMF3", amfkit.amf3), ("AMF0", amfkit.amf0)):
        variants.append(Variant(f"amfkit {fmt} fn", "amfkit", fmt, "amf", module.encode, module.decode))
    return variants


def _py3amf_variants(stack: contextlib.ExitStack, versions: dict[str, str | None], skipped: list[dict[str, str]]) -> list[Variant]:
    pyamf = peers.import_py3amf()
    versions["py3amf"] = peers.package_version("py3amf")
    for cls, spec in graphs.CLASSES.items():
        peers.register_py3amf(stack, pyamf, cls, spec.alias, static=spec.static or None, dynamic=spec.dynamic)
    variants = []
    for fmt, version in (("AMF3", 3), ("AMF0", 0)):
        enc, dec = peers.py3amf_codec(pyamf, version, use_ext=False)
        variants.append(Variant(f"py3amf {fmt}", "py3amf (pure)", fmt, "amf", enc, dec, slow=True, noisy=True))
    if not peers.py3amf_ext_built():
        skipped.append({"peer": "py3amf ext", "reason": "Py3AMF's Cython extension (cpyamf) is not built here"})
        return variants
    for fmt, version in (("AMF3", 3), ("AMF0", 0)):
        enc, dec = peers.py3amf_codec(pyamf, version, use_ext=True)
        variants.append(Variant(f"py3amf-ext {fmt}", "py3amf (Cython)", fmt, "amf", enc, dec, noisy=True))
    return variants


def _pickle_variants(versions: dict[str, str | None]) -> list[Variant]:
    versions["pickle"] = f"protocol 5 (Python {sys.version.split()[0]})"
    return [
        Variant(
            "pickle 5",
            "pickle",
            "pickle",
            "amf",
            lambda obj: pickle.dumps(obj, protocol=5),
            pickle.loads,
        )
    ]


def _orjson_variants(versions: dict[str, str | None]) -> list[Variant]:
    import orjson

    versions["orjson"] = peers.package_version("orjson")
    return [Variant("orjson", "orjson", "JSON", "json", orjson.dumps, orjson.loads)]


def _msgpack_variants(versions: dict[str, str | None]) -> list[Variant]:
    import msgpack  # type: ignore[import-untyped]

    versions["msgpack"] = peers.package_version("msgpack")
    return [Variant("msgpack", "msgpack", "MessagePack", "json", msgpack.packb, msgpack.unpackb)]


@contextlib.contextmanager
def _variants(options: Options, versions: dict[str, str | None], skipped: list[dict[str, str]]) -> Iterator[list[Variant]]:
    """Set up every variant (registering classes), yield them, then undo the registrations."""
    with contextlib.ExitStack() as stack:
        variants = _amfkit_variants(stack, versions)
        optional: list[tuple[str, Callable[[], list[Variant]]]] = []
        if options.py3amf:
            optional.append(("py3amf", lambda: _py3amf_variants(stack, versions, skipped)))
        else:
            skipped.append({"peer": "py3amf", "reason": "--no-py3amf"})
        optional += [
            ("pickle", lambda: _pickle_variants(versions)),
            ("orjson", lambda: _orjson_variants(versions)),
            ("msgpack", lambda: _msgpack_variants(versions)),
        ]
        for name, factory in optional:
            try:
                variants += factory()
            except ImportError as exc:
                skipped.append({"peer": name, "reason": f"not installed ({exc})"})
        yield variants


# --------------------------------------------------------------------------- the run


def _check(variant: Variant, graph: Any) -> tuple[bytes | None, dict[str, Any]]:
    """Round-trip `graph` once through `variant`; return the bytes and the check record."""
    with peers.quietly(variant.noisy):
        data, decoded, failure = round_trip(variant.encode, variant.decode, graph)
    if failure:
        return data, {"ok": False, "detail": failure}
    problem = first_difference(graph, decoded, refs=variant.keeps_references, exact=False)
    if problem is not None and variant.format == "AMF0" and _amf0_table_overflows(graph):
        # AMF0 references are 16-bit: past 65,535 objects a repeat must be written as a
        # copy (every AMF0 writer does so). Values must still be equal.
        if first_difference(graph, decoded, refs=False, exact=False) is None:
            return data, {"ok": True, "detail": "sharing past AMF0's 65,535-reference limit is written as copies, as the format requires"}
    return data, {"ok": problem is None, "detail": problem or ""}


def _amf0_table_overflows(graph: Any) -> bool:
    """Whether writing `graph` in AMF0 takes more than 65,536 reference-table entries
    (objects, typed objects and arrays, each counted once)."""
    seen: set[int] = set()
    stack = [graph]
    while stack:
        value = stack.pop()
        if isinstance(value, (dict, list, tuple)) or hasattr(value, "__dict__") and not isinstance(value, type):
            if id(value) in seen:
                continue
            seen.add(id(value))
            if len(seen) > 65_536:
                return True
            if isinstance(value, dict):
                stack.extend(value.values())
            elif isinstance(value, (list, tuple)):
                stack.extend(value)
            else:
                stack.extend(vars(value).values())
    return False


def _in_fresh_process(options: Options, graph_name: str, size: int) -> dict[str, Any]:
    """`_run_graph` in a new process (spawned, so it starts from a clean heap)."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(_run_graph, options, graph_name, size).result()


def _run_graph(options: Options, graph_name: str, size: int) -> dict[str, Any]:
    """Set up the variants, build one graph and its plain twin, check and time every
    variant on it; the rows, the versions seen and the peers skipped."""
    versions: dict[str, str | None] = {}
    skipped: list[dict[str, str]] = []
    rows: list[dict[str, Any]] = []
    with _variants(options, versions, skipped) as variants:
        amf_graph, json_graph = graphs.build(graph_name, size)
        for variant in variants:
            if variant.slow and size > SLOW_MAX_SIZE:
                continue
            graph = amf_graph if variant.input == "amf" else json_graph
            rows.append(_run_variant(variant, graph_name, graph, options, size))
        slow_peers = [variant.name for variant in variants if variant.slow]
    return {"rows": rows, "versions": versions, "skipped": skipped, "slow_peers": slow_peers}


def run(options: Options) -> dict[str, Any]:
    """Run the experiment; return the report (JSON-ready: plain dicts, lists, numbers, strings)."""
    unknown = [name for name in options.graphs if name not in graphs.BUILDERS]
    if unknown:
        raise ValueError(f"unknown graph(s) {', '.join(unknown)}; choose from {', '.join(graphs.GRAPH_NAMES)}")
    progress = options.progress or (lambda message: None)
    versions: dict[str, str | None] = {"python": sys.version.split()[0]}
    skipped: list[dict[str, str]] = []
    machine = machine_facts()  # load average before the run loads the machine
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    slow_peers: list[str] = []
    child_options = replace(options, progress=None)
    for size in options.all_sizes():
        for graph_name in options.graphs:
            progress(f"{graph_name} x{size:,}")
            part = _in_fresh_process(child_options, graph_name, size)
            rows += part["rows"]
            versions.update(part["versions"])
            skipped += [s for s in part["skipped"] if s not in skipped]
            slow_peers = part["slow_peers"]
    if any(size > SLOW_MAX_SIZE for size in options.all_sizes()):
        for name in slow_peers:
            skipped.append({"peer": f"{name} past {SLOW_MAX_SIZE:,} items", "reason": "pure Python: minutes per graph"})
    machine["versions"] = versions
    add_ratios(rows, BASELINE, _group, {"encode": _median("encode"), "decode": _median("decode"), "bytes": _bytes})
    return {
        "experiment": NAME,
        "summary": SUMMARY,
        "options": options_dict(options),
        "machine": machine,
        "baseline": BASELINE,
        "elapsed_s": round(time.perf_counter() - started, 3),
        "results": rows,
        "skipped": skipped,
        "ok": all(row["check"]["ok"] for row in rows),
    }


def _run_variant(variant: Variant, graph_name: str, graph: Any, options: Options, size: int) -> dict[str, Any]:
    data, check = _check(variant, graph)
    repeat = min(options.repeat, options.slow_repeat) if variant.slow else options.repeat
    # The slow pure-Python peers were just warmed up by the check; the others get three
    # untimed calls (the first series measured on a freshly built graph runs ~10% slow
    # otherwise, whichever peer it is: cold caches, first allocations).
    warmup = 0 if variant.slow else 3
    row: dict[str, Any] = {
        "graph": graph_name,
        "size": size,
        "peer": variant.name,
        "library": variant.library,
        "format": variant.format,
        "input": variant.input,
        "slow": variant.slow,
        "check": check,
        "encode": None,
        "decode": None,
        "bytes": None,
        "bytes_gzip": None,
    }
    if data is None:
        return row
    row["bytes"] = len(data)
    row["bytes_gzip"] = len(gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0))
    row["encode"] = measure(variant.encode, graph, repeat=repeat, warmup=warmup).to_dict()
    if check["detail"].startswith("decode raised"):
        return row
    row["decode"] = measure(variant.decode, data, repeat=repeat, warmup=warmup).to_dict()
    return row


def _group(row: dict[str, Any]) -> tuple[str, int]:
    return row["graph"], row["size"]


def _median(key: str) -> Callable[[dict[str, Any]], float | None]:
    """A row's median wall time in ms for `key` ("encode" or "decode"), when it was timed."""
    return lambda row: row[key]["wall_ms"]["median"] if row[key] else None


def _bytes(row: dict[str, Any]) -> int | None:
    return row["bytes"]


# --------------------------------------------------------------------------- the report


def format_report(report: dict[str, Any]) -> str:
    """The report as plain aligned text: a table per graph, then the goals and the machine."""
    options = report["options"]
    out = [
        "amfkit bench codec: AMFBench graphs, "
        + " and ".join(f"{n:,}" for n in sorted({options["size"], *options.get("more_sizes", [])}))
        + " items each",
        "times are wall-clock milliseconds, median (min-max) of the repetitions in column 'n';",
        f"ratios compare the median with {BASELINE} (reusable Encoder/Decoder) on the same graph;",
        "'fn' rows use the module-level encode/decode; JSON peers get the same data as plain dicts.",
    ]
    headers = ["peer", "n", "encode ms", "decode ms", "bytes", "gzip -6", "encode", "decode", "size", "check"]
    right = {1, 2, 3, 4, 5, 6, 7, 8}
    groups = list(dict.fromkeys((row["graph"], row["size"]) for row in report["results"]))
    failures = []
    for graph_name, group_size in groups:
        rows = [row for row in report["results"] if (row["graph"], row["size"]) == (graph_name, group_size)]
        body = []
        for row in rows:
            timing = row["encode"] or row["decode"] or {}
            ratios = row.get("vs_baseline") or {}
            size_ratio = ratios.get("bytes")
            baseline = row["peer"] == BASELINE
            body.append(
                [
                    row["peer"],
                    str(timing.get("repeat", "-")),
                    timing_cell(row["encode"], mark_waited=True),
                    timing_cell(row["decode"], mark_waited=True),
                    row["bytes"],
                    row["bytes_gzip"],
                    ratio_cell(ratios.get("encode"), baseline=baseline),
                    ratio_cell(ratios.get("decode"), baseline=baseline),
                    "1.00x" if row["peer"] == BASELINE else (f"{size_ratio:.2f}x" if size_ratio else "-"),
                    "ok" if row["check"]["ok"] else "FAILED",
                ]
            )
            if not row["check"]["ok"]:
                failures.append(f"  {graph_name} / {row['peer']}: {row['check']['detail']}")
        out += ["", f"{graph_name} ({rows[0]['size']:,} items)", *text_table(headers, body, right)]
    slow = sorted({row["peer"] for row in report["results"] if row.get("slow")})
    if slow:
        out += [
            "",
            f"{', '.join(slow)}: pure Python, so at most {options['slow_repeat']} repetition(s)"
            " and no separate warm-up (the correctness check run warms it up).",
        ]
    if any(waited(row[key]) for row in report["results"] for key in ("encode", "decode")):
        out += ["", "* wall time over 1.25x the CPU time: the process was kept waiting (another load?); rerun on a quiet machine."]
    out += _per_item_lines(report)
    out += _goal_lines(report)
    if failures:
        out += ["", "correctness checks FAILED:", *failures]
    for skip in report["skipped"]:
        out.append(f"skipped {skip['peer']}: {skip['reason']}")
    out += machine_lines(report)
    return "\n".join(out)


#: The peers whose cost per item is followed across sizes.
PER_ITEM_PEERS = ("amfkit AMF3", "amfkit AMF0", "orjson")


def per_item_table(report: dict[str, Any]) -> Table | None:
    """Nanoseconds per item (median) for each graph and size, encode/decode, for the
    `PER_ITEM_PEERS`, and the growth from the smallest size to the largest: whether a
    codec's cost per item stays flat as the graph grows. None with one size."""
    results = report["results"]
    sizes = sorted({row["size"] for row in results})
    if len(sizes) < 2:
        return None
    rows = []
    for graph_name in dict.fromkeys(row["graph"] for row in results):
        for peer in PER_ITEM_PEERS:
            by_size = {row["size"]: row for row in results if row["graph"] == graph_name and row["peer"] == peer}
            if not by_size:
                continue
            for key in ("encode", "decode"):
                cells = []
                for size in sizes:
                    row = by_size.get(size)
                    cells.append(row[key]["wall_ms"]["median"] * 1e6 / size if row and row[key] and size else None)
                known = [c for c in cells if c is not None]
                growth = f"{known[-1] / known[0]:.2f}x" if len(known) > 1 and known[0] else "-"
                rows.append([graph_name, peer, key, *(f"{c:,.0f}" if c is not None else "-" for c in cells), growth])
    headers = ["graph", "peer", "", *(f"ns/item at {size:,}" for size in sizes), f"{sizes[-1]:,} vs {sizes[0]:,}"]
    return Table(headers, rows)


def _per_item_lines(report: dict[str, Any]) -> list[str]:
    table = per_item_table(report)
    if table is None:
        return []
    right = set(range(3, len(table.headers)))
    return ["", "cost per item as the graph grows (median ns per item):", *text_table(table.headers, table.rows, right)]


def _goal_lines(report: dict[str, Any]) -> list[str]:
    """The issue's performance goal on the complex graph: AMF3 >= 50x pure Py3AMF, no slower than orjson."""
    sizes = sorted({row["size"] for row in report["results"] if row["graph"] == "complex"})
    if not sizes:
        return []
    goal_size = DEFAULT_SIZE if DEFAULT_SIZE in sizes else sizes[-1]
    rows = {row["peer"]: row for row in report["results"] if row["graph"] == "complex" and row["size"] == goal_size}
    base = rows.get(BASELINE)
    if not base or not base["encode"] or not base["decode"]:
        return []
    note = "" if base["size"] == DEFAULT_SIZE else f"; the issue sets them at {DEFAULT_SIZE:,}"
    lines = ["", f"goals on complex ({base['size']:,} items{note}):"]
    targets = (("py3amf AMF3", 50.0, ">= 50x faster"), ("orjson", 1.0, "no slower"))
    for peer, factor, wording in targets:
        row = rows.get(peer)
        if not row:
            continue
        for key in ("encode", "decode"):
            ratio = row["vs_baseline"].get(key)
            if ratio is None:
                continue
            verdict = "met" if ratio >= factor else "NOT met"
            speed = than(ratio, "faster", "slower")
            noisy = " (*: timing disturbed, rerun)" if waited(row[key]) or waited(base[key]) else ""
            lines.append(f"  {BASELINE} {key} vs {peer}: {speed} (goal {wording}): {verdict}{noisy}")
    return lines


# --------------------------------------------------------------------------- sections (HTML report, summary, docs)

#: The PyAMF speed article's figures: AMFBench "complex" graph, 10,000 items, on a 2.8 GHz
#: Core 2 Duo MacBook Pro with Python 2.5.4, in seconds: version -> (decode AMF0, decode
#: AMF3, encode AMF0, encode AMF3).
ARTICLE_SIZE = 10_000
ARTICLE_MACHINE = "MacBook Pro 2.8 GHz Core 2 Duo, 4 GB, Mac OS X 10.6.4, Python 2.5.4 (2010)"
ARTICLE_FIGURES: dict[str, tuple[float, float, float, float]] = {
    "PyAMF 0.4.2 pure": (7.337149, 5.572225, 7.472614, 6.472192),
    "PyAMF 0.4.2 ext": (7.371916, 5.363055, 7.437613, 6.270130),
    "PyAMF 0.5.1 pure": (5.837454, 4.428469, 2.507936, 2.263408),
    "PyAMF 0.5.1 ext": (1.284588, 1.897327, 1.233649, 1.436250),
    "PyAMF 0.6b2 pure": (4.383258, 3.265473, 2.063210, 1.764296),
    "PyAMF 0.6b2 ext": (0.238912, 0.223002, 0.234642, 0.163156),
}
#: The article's versions drawn beside ours (the others are in its figures' lines).
ARTICLE_CHARTED = ("PyAMF 0.6b2 ext", "PyAMF 0.6b2 pure")

GRAPH_INTROS = {
    "simple": "flat anonymous objects of scalars, no object references (AMF3 still shares the member names)",
    "complex": "typed Node objects mixing scalars, a list, a dict, a shared string and a sub-object referenced "
    f"twice: {ARTICLE}'s \"real world\" graph",
    "static": "typed Score objects with sealed members only, so AMF3 writes the traits once and then values",
    "reference": "a handful of objects, each referenced thousands of times: the reference tables at work",
}

#: The peers each graph's findings compare amfkit AMF3 with, when they ran.
FINDING_PEERS = (
    ("py3amf AMF3", "Py3AMF (pure Python) AMF3"),
    ("py3amf-ext AMF3", "Py3AMF's C extension, AMF3"),
    ("orjson", "orjson (plain dicts)"),
)


def _time_bars(rows: list[dict[str, Any]], key: str) -> list[Bar]:
    return [timing_bar(row["peer"], row[key], row["library"]) for row in rows if row[key]]


def _spans_orders(bars: list[Bar]) -> bool:
    values = [bar.value for bar in bars if bar.value > 0]
    return bool(values) and max(values) / min(values) > 30


def _graph_section(report: dict[str, Any], graph_name: str, rows: list[dict[str, Any]]) -> Section:
    size = rows[0]["size"]
    by_peer = {row["peer"]: row for row in rows}
    base = by_peer.get(BASELINE)
    table = Table(
        ["peer", "n", "encode ms", "decode ms", "bytes", "gzip -6", f"encode vs {BASELINE}", f"decode vs {BASELINE}", "check"],
        [
            [
                row["peer"],
                (row["encode"] or row["decode"] or {}).get("repeat", "-"),
                timing_cell(row["encode"], mark_waited=True),
                timing_cell(row["decode"], mark_waited=True),
                row["bytes"],
                row["bytes_gzip"],
                ratio_cell((row.get("vs_baseline") or {}).get("encode"), baseline=row["peer"] == BASELINE),
                ratio_cell((row.get("vs_baseline") or {}).get("decode"), baseline=row["peer"] == BASELINE),
                "ok" if row["check"]["ok"] else f"FAILED: {row['check']['detail']}",
            ]
            for row in rows
        ],
    )
    at_article_size = graph_name == "complex" and size == ARTICLE_SIZE
    charts = []
    for key, column in (("encode", 2), ("decode", 0)):
        bars = _time_bars(rows, key)
        reference = []
        if at_article_size:
            for version in ARTICLE_CHARTED:
                figures = ARTICLE_FIGURES[version]
                reference += [
                    Bar(f"{version} AMF3", figures[column + 1] * 1e3, group="article"),
                    Bar(f"{version} AMF0", figures[column] * 1e3, group="article"),
                ]
        charts.append(
            Chart(
                f"{key}, {graph_name} graph, {size:,} items",
                "milliseconds, median (error bar: min-max)",
                bars,
                log=_spans_orders(bars + reference),
                reference=reference,
            )
        )
    size_bars: list[Bar] = []
    seen: set[tuple[str, str]] = set()
    for row in rows:
        if row["bytes"] is None or (row["library"], row["format"]) in seen:
            continue  # the module-level functions write the same bytes as the Encoder
        seen.add((row["library"], row["format"]))
        label = row["peer"].removesuffix(" fn")
        size_bars.append(Bar(label, float(row["bytes"]), group="raw"))
        size_bars.append(Bar(f"{label} gzip", float(row["bytes_gzip"]), group="gzip -6"))
    charts.append(Chart(f"encoded size, {graph_name} graph, {size:,} items", "bytes", size_bars, log=_spans_orders(size_bars)))

    found = [f"{graph_name}: {row['peer']} FAILED its correctness check: {row['check']['detail']}" for row in rows if not row["check"]["ok"]]
    if base and base["encode"] and base["decode"]:
        for peer, wording in FINDING_PEERS:
            peer_row = by_peer.get(peer)
            ratios = (peer_row or {}).get("vs_baseline") or {}
            if not ratios.get("encode") or not ratios.get("decode"):
                continue
            goal = ""
            if size != DEFAULT_SIZE:
                pass  # the goals are set at DEFAULT_SIZE items
            elif graph_name == "complex" and peer == "py3amf AMF3":
                met = ratios["encode"] >= 50 and ratios["decode"] >= 50
                goal = f" (goal: 50x both ways, {'met' if met else 'NOT met'})"
            elif graph_name == "complex" and peer == "orjson":
                met = ratios["encode"] >= 1 and ratios["decode"] >= 1
                goal = f" (goal: no slower, {'met' if met else 'NOT met'})"
            found.append(
                f"amfkit AMF3 encodes {graph_name}-{size:,} {than(ratios['encode'], 'faster', 'slower')} than {wording}, "
                f"and decodes it {than(ratios['decode'], 'faster', 'slower')}{goal}."
            )
        named = {peer for peer, _ in FINDING_PEERS}
        others = [row for row in rows if row["library"] != "amfkit" and row["encode"] and row["decode"]]
        for key in ("encode", "decode"):
            if not others:
                break
            best = min(others, key=lambda row: row[key]["wall_ms"]["median"])
            if best["peer"] in named:
                continue  # already compared above
            ratio = best[key]["wall_ms"]["median"] / base[key]["wall_ms"]["median"]
            found.append(
                f"The fastest other peer to {key} {graph_name}-{size:,} is {best['peer']} "
                f"({fmt_figure(best[key]['wall_ms']['median'])} ms); amfkit AMF3 takes "
                f"{fmt_figure(base[key]['wall_ms']['median'])} ms, {than(ratio, 'faster', 'slower')}."
            )
    amf0 = by_peer.get("amfkit AMF0")
    plain = by_peer.get("orjson")
    if base and base["bytes"]:
        parts = []
        if amf0 and amf0["bytes"]:
            parts.append(f"{base['bytes'] / amf0['bytes']:.0%} of AMF0's")
        if plain and plain["bytes"]:
            parts.append(f"{base['bytes'] / plain['bytes']:.0%} of JSON's")
        gz = f"; gzip -6 takes it to {base['bytes_gzip'] / base['bytes']:.0%} of that" if base["bytes_gzip"] else ""
        found.append(f"AMF3 writes {graph_name}-{size:,} in {base['bytes']:,} bytes" + (f", {' and '.join(parts)}" if parts else "") + f"{gz}.")

    article: list[str] = []
    if graph_name == "complex":
        article.append(f"AMFBench complex graph, {ARTICLE_SIZE:,} items ({ARTICLE}), on a {ARTICLE_MACHINE}; seconds.")
        for version, (dec0, dec3, enc0, enc3) in ARTICLE_FIGURES.items():
            article.append(f"{version}: encode AMF3 {enc3:.3f} s, AMF0 {enc0:.3f} s; decode AMF3 {dec3:.3f} s, AMF0 {dec0:.3f} s")
        if not at_article_size:
            article.append(f"(Not charted: this run used {size:,} items, the article {ARTICLE_SIZE:,}.)")
        elif base and base["encode"] and base["decode"]:
            article_best = ARTICLE_FIGURES["PyAMF 0.6b2 ext"]
            found.append(
                f"The article's best, PyAMF 0.6b2 with its C extension, took {article_best[3] * 1e3:.0f} ms to encode "
                f"and {article_best[1] * 1e3:.0f} ms to decode this graph in AMF3 on 2010 hardware; amfkit AMF3 takes "
                f"{fmt_figure(base['encode']['wall_ms']['median'])} ms and {fmt_figure(base['decode']['wall_ms']['median'])} ms here "
                "(different machines: compare orders of magnitude only)."
            )
    description = GRAPH_INTROS.get(graph_name, graph_name)
    intro = f"{description[:1].upper()}{description[1:]}."
    return Section(f"{graph_name} graph, {size:,} items", intro, [table], charts, article, found)


def sections(report: dict[str, Any]) -> list[Section]:
    """The report's sections: one per graph, the article's graph (complex) first."""
    results = report["results"]
    groups = list(dict.fromkeys((row["graph"], row["size"]) for row in results))
    # the article's graph and size first, then the other sizes of it, then the rest
    order = {g: i for i, g in enumerate(groups)}
    groups.sort(key=lambda g: (g[0] != "complex", g[1] != ARTICLE_SIZE, order[g]))
    out = [
        _graph_section(report, name, [row for row in results if (row["graph"], row["size"]) == (name, size)])
        for name, size in groups
    ]
    if out:
        notes = [f"Times in milliseconds, median (min-max) of the repetitions in column n; ratios against {BASELINE}"
                 " (reusable Encoder/Decoder) on the same graph; 'fn' rows use the module-level encode/decode;"
                 " orjson and msgpack get the same data as plain dicts"]
        if any(waited(row[key]) for row in results for key in ("encode", "decode")):
            notes.append("* marks a wall time over 1.25x its CPU time: the process was kept waiting, rerun on a quiet machine")
        notes += [f"not run: {skip['peer']} ({skip['reason']})" for skip in report.get("skipped", [])]
        out[0].intro = f"{out[0].intro} {'; '.join(notes)}."
    table = per_item_table(report)
    if table is not None:
        out.append(
            Section(
                "cost per item as the graph grows",
                "Median nanoseconds per item at each size, and the largest size's against the smallest's"
                " (1.00x: the cost per item stays flat).",
                [table],
            )
        )
    return out


# --------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="amfkit bench codec",
        description=SUMMARY,
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SIZE:,} items and 1 repetition (a correctness run)")
    parser.add_argument("--size", type=int, help=f"items per graph (default {DEFAULT_SIZE:,}; --quick: {QUICK_SIZE:,})")
    parser.add_argument(
        "--sizes",
        help=f"comma-separated item counts to run (default: {','.join(map(str, FULL_SIZES))}; "
        "--quick or --size: that one size)",
    )
    parser.add_argument(
        "--graphs",
        default=",".join(graphs.GRAPH_NAMES),
        help=f"comma-separated graphs to run (default: {','.join(graphs.GRAPH_NAMES)})",
    )
    parser.add_argument("--repeat", type=int, help=f"timed repetitions (default {DEFAULT_REPEAT}; --quick: 1)")
    parser.add_argument("--no-py3amf", action="store_true", help="leave out Py3AMF (the slowest peer)")
    parser.add_argument("--json", metavar="PATH", help="also write the results and machine facts as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def parse_options(argv: list[str] | None = None) -> Options:
    """Command-line arguments -> `Options` (exits with status 2 on bad arguments, as argparse does)."""
    parser = _parser()
    args = parser.parse_args(argv)
    size = args.size if args.size is not None else (QUICK_SIZE if args.quick else DEFAULT_SIZE)
    more: tuple[int, ...] = ()
    if args.sizes:
        try:
            listed = [int(x) for x in args.sizes.split(",") if x.strip()]
        except ValueError:
            parser.error("--sizes: comma-separated item counts")
        if not listed or min(listed) < 1:
            parser.error("--sizes: item counts of at least 1")
        size, more = (DEFAULT_SIZE if DEFAULT_SIZE in listed else listed[0]), tuple(listed)
    elif args.size is None and not args.quick:
        more = FULL_SIZES
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else DEFAULT_REPEAT)
    if size < 1:
        parser.error("--size must be at least 1")
    if repeat < 1:
        parser.error("--repeat must be at least 1")
    chosen = tuple(name.strip() for name in args.graphs.split(",") if name.strip())
    unknown = [name for name in chosen if name not in graphs.BUILDERS]
    if unknown or not chosen:
        parser.error(f"--graphs: choose from {','.join(graphs.GRAPH_NAMES)}")
    progress = None if args.quiet else (lambda message: print(f"codec: {message}", file=sys.stderr, flush=True))
    return Options(
        size=size,
        more_sizes=tuple(n for n in more if n != size),
        graphs=chosen,
        repeat=repeat,
        slow_repeat=min(repeat, SLOW_REPEAT_CAP),
        py3amf=not args.no_py3amf,
        quick=args.quick,
        json_path=args.json,
        progress=progress,
    )


def main(argv: list[str] | None = None) -> int:
    """`amfkit bench codec [options]`: print the table; 0 if every check passed, else 1."""
    return experiment_main(argv, parse_options, run, format_report)


if __name__ == "__main__":
    sys.exit(main())
