"""What an experiment hands the report, as plain JSON-ready data (sections of tables,
charts, the article's own figures and findings), and the plumbing every experiment
shares: its options and ratios as report data, its JSON file, its command line.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

__all__ = ["Bar", "Chart", "Section", "Table", "add_ratios", "experiment_main", "options_dict", "round_trip", "timing_bar", "to_dict", "write_json"]


@dataclass
class Table:
    """A table: column headers and rows of cells (str or numbers)."""

    headers: list[str]
    rows: list[list[Any]]


@dataclass
class Bar:
    """One bar: its label, value, and optional spread (min, max) shown as an error bar."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    group: str = ""  # bars with the same group share a color (e.g. the peer)


@dataclass
class Chart:
    """A horizontal bar chart: `unit` names the axis ("ms", "bytes", "req/s");
    `log=True` for values spanning orders of magnitude; `reference` bars (the figures
    the reproduced article published) are drawn hatched beside ours."""

    title: str
    unit: str
    bars: list[Bar]
    log: bool = False
    reference: list[Bar] = field(default_factory=list)


@dataclass
class Section:
    """One part of the report (an experiment, or one graph of it)."""

    title: str
    intro: str = ""
    tables: list[Table] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    #: The reproduced article's own numbers (docs/benchmarks.md names the articles), as
    #: "what: figure" lines.
    article: list[str] = field(default_factory=list)
    #: Short plain-language findings, computed from the figures (never hard-coded).
    findings: list[str] = field(default_factory=list)


def timing_bar(label: str, timing: dict[str, Any] | None, group: str = "", scale: float = 1.0) -> Bar:
    """A bar for a measurement (`timing.Measurement.to_dict()`): its median wall time in
    ms times `scale`, with the min-max spread; a zero bar when it was not timed."""
    wall = timing["wall_ms"] if timing else {"median": 0.0, "min": 0.0, "max": 0.0}
    return Bar(label, float(wall["median"]) * scale, float(wall["min"]) * scale, float(wall["max"]) * scale, group)


def to_dict(section: Section) -> dict[str, Any]:
    return asdict(section)


def options_dict(options: Any) -> dict[str, Any]:
    """An experiment's `Options` (a dataclass) as report data, without its progress
    callback (tuples stay tuples: json writes them as lists)."""
    data = asdict(options)
    data.pop("progress", None)
    return data


def write_json(data: dict[str, Any], path: str) -> None:
    """Write a report or a results file as indented UTF-8 JSON, making its directory."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False, default=str)
        f.write("\n")


def add_ratios(rows: list[dict[str, Any]], baseline: str, group: Callable[[dict[str, Any]], Any], figures: dict[str, Callable[[dict[str, Any]], Any]]) -> None:
    """Set each row's `vs_baseline`: every figure (`figures[name](row)`: a time or a size)
    divided by the same figure of the baseline peer's row in its group (`group(row)`);
    above 1 the row is slower or bigger. None where either figure is missing or zero."""
    base = {group(row): row for row in rows if row["peer"] == baseline}
    for row in rows:
        ref = base.get(group(row))
        ratios: dict[str, float | None] = {}
        for name, figure in figures.items():
            mine, theirs = (figure(row), figure(ref)) if ref is not None else (None, None)
            ratios[name] = mine / theirs if mine and theirs else None
        row["vs_baseline"] = ratios


def round_trip(encode: Callable[[Any], bytes], decode: Callable[[bytes], Any], value: Any) -> tuple[bytes | None, Any, str | None]:
    """One encode and one decode of `value`, for a correctness check: (the bytes, the
    decoded value, None), or when a step raised, what there is and what raised (a peer
    failing is a result, not a crash of the benchmark)."""
    try:
        data = encode(value)
    except Exception as exc:  # noqa: BLE001
        return None, None, f"encode raised {type(exc).__name__}: {exc}"
    try:
        return data, decode(data), None
    except Exception as exc:  # noqa: BLE001
        return data, None, f"decode raised {type(exc).__name__}: {exc}"


def experiment_main(
    argv: list[str] | None,
    parse_options: Callable[[list[str] | None], Any],
    run: Callable[[Any], dict[str, Any]],
    format_report: Callable[[dict[str, Any]], str],
) -> int:
    """What `amfkit bench EXPERIMENT [options]` does: run, print the report, write the
    JSON when `--json` names a file; 0 if every check passed, else 1."""
    options = parse_options(argv)
    report = run(options)
    print(format_report(report))
    if options.json_path:
        write_json(report, options.json_path)
        print(f"results written to {options.json_path}")
    return 0 if report["ok"] else 1
