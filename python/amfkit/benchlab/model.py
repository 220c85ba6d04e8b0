"""What an experiment hands the report: sections of tables, charts, seed figures and
findings, as plain JSON-ready data (the HTML renderer and the text report both read it).

An experiment module provides `sections(report: dict) -> list[Section]`, built from its
own `run()` report. Keeping this separate from rendering lets every experiment describe
its results once, and lets `amfkit bench compare` and the README generator read the same
figures from the JSON.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

__all__ = ["Bar", "Chart", "Section", "Table", "options_dict", "to_dict", "write_json"]


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
    `log=True` for values spanning orders of magnitude; `reference` bars (the seed
    article's own figures) are drawn hatched beside ours."""

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
    #: The seed article's own numbers, as "what" -> "figure" lines.
    seed: list[str] = field(default_factory=list)
    #: Short plain-language findings, computed from the figures (never hard-coded).
    findings: list[str] = field(default_factory=list)


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


def fmt_figure(value: float) -> str:
    """A measured figure to about three significant digits: 1,234 / 12.3 / 1.23 / 0.123."""
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def fmt_factor(x: float) -> str:
    """A ratio as a factor: 123x, 12.3x, 1.23x."""
    if x >= 100:
        return f"{x:,.0f}x"
    if x >= 10:
        return f"{x:.1f}x"
    return f"{x:.2f}x"


def machine_lines(report: dict[str, Any]) -> list[str]:
    """The closing lines of an experiment's text report: the machine, the load, the time
    taken and the versions measured."""
    machine = report["machine"]
    versions = ", ".join(f"{name} {version}" for name, version in machine["versions"].items() if version)
    load = machine["load_average"]
    return [
        "",
        f"machine: {machine['cpu']}, {machine['cpu_count']} cores, {machine['platform']}",
        f"load average at start: {' '.join(map(str, load)) if load else 'unknown'}; took {report['elapsed_s']:.1f} s",
        f"versions: {versions}",
    ]


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
