"""`amfkit bench compare A.json B.json [--threshold 0.10] [--all]`: what got faster or
slower from run A to run B (docs/benchmarks.md, "Comparing two runs", says which figures
are compared and how rows are matched).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator

from .results import load_results
from .text import fmt_number

__all__ = ["Change", "Figure", "compare", "figures", "format_comparison", "main"]

DEFAULT_THRESHOLD = 0.10

#: Row fields that never identify a case nor hold a figure to compare.
SKIP_FIELDS = frozenset(
    {
        "check", "ok", "error", "detail", "options", "vs_baseline", "latency_ms", "requests", "errors",
        "runs", "repeat", "warmup", "slow", "cpu_ms", "min", "max", "min_ms", "max_ms",
    }
)
#: Integer fields that identify a case (the rest of the ints are figures or counts).
KEY_INTS = frozenset({"size", "items", "messages", "rows", "n"})


@dataclass(frozen=True)
class Figure:
    """One comparable number: `kind` is "time", "rate" or "size"; `low`/`high` its spread."""

    experiment: str
    case: tuple[tuple[str, Any], ...]
    metric: str
    kind: str
    value: float
    low: float | None = None
    high: float | None = None

    @property
    def key(self) -> tuple[str, tuple[tuple[str, Any], ...], str]:
        return (self.experiment, self.case, self.metric)

    def label(self, fields: list[str] | None = None) -> str:
        """"experiment: case: metric", the case told by `fields` (default: all its fields)."""
        case = ", ".join(
            f"{value:,}" if isinstance(value, int) else str(value)
            for name, value in self.case
            if fields is None or name in fields
        )
        return f"{self.experiment}: {case}: {self.metric}"


@dataclass(frozen=True)
class Change:
    """A figure in both runs. `speedup` > 1: B is better (faster, more requests, smaller)."""

    a: Figure
    b: Figure

    @property
    def speedup(self) -> float:
        if self.a.value <= 0 or self.b.value <= 0:
            return 1.0 if self.a.value == self.b.value else float("inf") if self.b.value == 0 else 0.0
        if self.a.kind == "rate":
            return self.b.value / self.a.value
        return self.a.value / self.b.value

    @property
    def overlap(self) -> bool:
        if None in (self.a.low, self.a.high, self.b.low, self.b.high):
            return False
        return not (self.a.high < self.b.low or self.b.high < self.a.low)  # type: ignore[operator]

    def verdict(self, threshold: float) -> str:
        """"better", "worse" or "unchanged" (a size that moved at all is never unchanged)."""
        s = self.speedup
        if self.a.kind == "size":
            return "unchanged" if self.a.value == self.b.value else ("better" if s > 1 else "worse")
        if s > 1 + threshold:
            return "better"
        if s < 1 / (1 + threshold):
            return "worse"
        return "unchanged"


# --------------------------------------------------------------------------- finding figures


def _kind(name: str) -> str | None:
    if name == "rps" or name.endswith("_per_s"):
        return "rate"
    if name == "bytes" or name.endswith("_bytes") or name.startswith("bytes_"):
        return "size"
    if name.endswith("_ms") or name.endswith("_s"):
        return "time"
    return None


def _walk(row: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, str, float, float | None, float | None]]:
    """(metric, kind, value, low, high) for every figure in the row."""
    for name, value in row.items():
        if name in SKIP_FIELDS:
            continue
        path = f"{prefix}{name}"
        if isinstance(value, dict):
            wall = value.get("wall_ms")
            if isinstance(wall, dict) and isinstance(wall.get("median"), (int, float)):
                yield path, "time", float(wall["median"]), _num(wall.get("min")), _num(wall.get("max"))
            elif isinstance(value.get("median_ms"), (int, float)):
                yield path, "time", float(value["median_ms"]), _num(value.get("min_ms")), _num(value.get("max_ms"))
            elif isinstance(value.get("median"), (int, float)) and _kind(name):
                yield path, _kind(name) or "time", float(value["median"]), _num(value.get("min")), _num(value.get("max"))
            else:
                yield from _walk(value, f"{path}.")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            kind = _kind(name)
            if name == "median_ms":
                yield prefix.rstrip(".") or name, "time", float(value), _num(row.get("min_ms")), _num(row.get("max_ms"))
            elif kind and name not in KEY_INTS:
                yield path, kind, float(value), None, None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _case(row: dict[str, Any], keys: tuple[str, ...] | None) -> tuple[tuple[str, Any], ...]:
    if keys is not None:
        return tuple((k, row.get(k)) for k in keys)
    return tuple(
        (k, v)
        for k, v in row.items()
        if k not in SKIP_FIELDS and (isinstance(v, str) or (k in KEY_INTS and isinstance(v, int) and not isinstance(v, bool)))
    )


def _compare_keys(name: str) -> tuple[str, ...] | None:
    from . import EXPERIMENTS, experiment

    if name not in EXPERIMENTS:
        return None
    try:
        keys = getattr(experiment(name), "COMPARE_KEYS", None)
    except ImportError:
        return None
    return tuple(keys) if keys else None


def figures(results: dict[str, Any]) -> list[Figure]:
    """Every comparable figure of a results dict, with its experiment and case."""
    out: list[Figure] = []
    for name, report in results["experiments"].items():
        keys = _compare_keys(name)
        for row in report.get("results") or []:
            if not isinstance(row, dict):
                continue
            case = _case(row, keys)
            for metric, kind, value, low, high in _walk(row):
                out.append(Figure(name, case, metric, kind, value, low, high))
        for table, entries in report.items():
            if table in ("results", "options", "machine") or not isinstance(entries, dict):
                continue
            for entry, values in entries.items():
                if isinstance(values, dict):
                    for metric, kind, value, low, high in _walk({str(entry): values}):
                        sub = metric[len(str(entry)) + 1:] or str(table)
                        out.append(Figure(name, (("table", table), ("case", entry)), sub, kind, value, low, high))
    return out


# --------------------------------------------------------------------------- comparing


@dataclass
class Comparison:
    better: list[Change]
    worse: list[Change]
    unchanged: list[Change]
    only_a: list[Figure]
    only_b: list[Figure]
    threshold: float
    #: Per experiment and kind of row (its field names), the case fields that tell its rows
    #: apart, for short labels.
    label_fields: dict[tuple[str, tuple[str, ...]], list[str]] = field(default_factory=dict)

    def label(self, figure: Figure) -> str:
        names = tuple(name for name, _ in figure.case)
        return figure.label(self.label_fields.get((figure.experiment, names)))


def _label_fields(figs: list[Figure]) -> dict[tuple[str, tuple[str, ...]], list[str]]:
    """Per experiment and row kind, the fewest case fields (in row order) that tell all its
    cases apart: "complex, amfkit AMF3" rather than every field of the row."""
    cases: dict[tuple[str, tuple[str, ...]], dict[tuple[tuple[str, Any], ...], None]] = {}  # ordered sets
    for fig in figs:
        names = tuple(name for name, _ in fig.case)
        cases.setdefault((fig.experiment, names), {})[fig.case] = None
    out: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (name, names), seen in cases.items():
        chosen: list[str] = []
        distinct = 1
        for candidate in names:
            trial = chosen + [candidate]
            count = len({tuple(dict(case).get(f) for f in trial) for case in seen})
            if count > distinct:
                chosen, distinct = trial, count
        out[(name, names)] = chosen or list(names[-1:])
    return out


def compare(a: dict[str, Any], b: dict[str, Any], *, threshold: float = DEFAULT_THRESHOLD) -> Comparison:
    """Match the figures of two results dicts and sort the changes."""
    fa = {f.key: f for f in figures(a)}
    fb = {f.key: f for f in figures(b)}
    result = Comparison(
        [], [], [],
        [f for k, f in fa.items() if k not in fb],
        [f for k, f in fb.items() if k not in fa],
        threshold,
        _label_fields([*fa.values(), *fb.values()]),
    )
    for key, fig_a in fa.items():
        fig_b = fb.get(key)
        if fig_b is None:
            continue
        change = Change(fig_a, fig_b)
        {"better": result.better, "worse": result.worse, "unchanged": result.unchanged}[change.verdict(threshold)].append(change)
    result.better.sort(key=lambda c: -c.speedup)
    result.worse.sort(key=lambda c: c.speedup)
    return result


def _value(figure: Figure) -> str:
    if figure.kind == "time":
        unit = " s" if figure.metric.endswith("_s") and not figure.metric.endswith("_ms") else " ms"
    else:
        unit = {"rate": "/s", "size": " B"}[figure.kind]
    return f"{fmt_number(figure.value)}{unit}"


def _describe(result: Comparison, change: Change) -> str:
    s = change.speedup
    if change.a.kind == "size":
        words = f"{change.b.value / change.a.value:.2f}x the size" if change.a.value else "new size"
    elif s >= 1:
        words = f"{s:.2f}x faster" if s != float("inf") else "faster"
    else:
        words = f"{1 / s:.2f}x slower" if s > 0 else "slower"
    note = " (spreads overlap)" if change.overlap else ""
    return f"  {result.label(change.a)}: {_value(change.a)} -> {_value(change.b)}, {words}{note}"


def format_comparison(result: Comparison, a_name: str, b_name: str, *, show_all: bool = False) -> str:
    pct = f"{result.threshold:.0%}"
    total = len(result.better) + len(result.worse) + len(result.unchanged)
    lines = [
        f"amfkit bench compare: A = {a_name}, B = {b_name}",
        f"{total} figures in both; changes over {pct} count (sizes: any change); "
        "'faster' means B is faster than A.",
    ]
    worse_time = [c for c in result.worse if c.a.kind != "size"]
    better_time = [c for c in result.better if c.a.kind != "size"]
    sizes = [c for c in result.better + result.worse if c.a.kind == "size"]
    if worse_time:
        lines += ["", f"slower in B ({len(worse_time)}):", *(_describe(result, c) for c in worse_time)]
    if better_time:
        lines += ["", f"faster in B ({len(better_time)}):", *(_describe(result, c) for c in better_time)]
    if sizes:
        lines += ["", f"sizes changed ({len(sizes)}):", *(_describe(result, c) for c in sizes)]
    lines += ["", f"unchanged within {pct}: {len(result.unchanged)}"]
    if total == 0 and (result.only_a or result.only_b):
        lines.append("no figure is in both runs: they measured different cases (another --size, --quick, options?)")
    if show_all and result.unchanged:
        lines += [_describe(result, c) for c in result.unchanged]
    if result.only_a:
        lines += ["", f"only in A ({len(result.only_a)}):", *(f"  {result.label(f)}" for f in result.only_a)]
    if result.only_b:
        lines += ["", f"only in B ({len(result.only_b)}):", *(f"  {result.label(f)}" for f in result.only_b)]
    return "\n".join(lines)


def _machine_line(label: str, results: dict[str, Any]) -> str:
    m = results.get("machine") or {}
    load = m.get("load_average")
    return (
        f"{label}: {m.get('cpu', '?')}, {m.get('cpu_count', '?')} cores, load {' '.join(map(str, load)) if load else '?'}, "
        f"amfkit {results.get('amfkit_version') or '?'}"
        + (f" ({results['git_commit']})" if results.get("git_commit") else "")
        + (f", {results['created']}" if results.get("created") else "")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="amfkit bench compare",
        description="Print what got faster or slower from results file A to results file B.",
    )
    parser.add_argument("a", metavar="A.json", help="the earlier run (amfkit bench --json)")
    parser.add_argument("b", metavar="B.json", help="the later run")
    parser.add_argument(
        "--threshold", type=float, default=DEFAULT_THRESHOLD,
        help=f"relative change below which a figure counts as unchanged (default {DEFAULT_THRESHOLD})",
    )
    parser.add_argument("--all", action="store_true", help="list the unchanged figures too")
    args = parser.parse_args(argv)
    if args.threshold < 0:
        parser.error("--threshold must be >= 0")
    try:
        a, b = load_results(args.a), load_results(args.b)
    except (OSError, ValueError) as exc:
        print(f"amfkit bench compare: {exc}", file=sys.stderr)
        return 1
    result = compare(a, b, threshold=args.threshold)
    print(format_comparison(result, args.a, args.b, show_all=args.all))
    print()
    print(_machine_line("A", a))
    print(_machine_line("B", b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
