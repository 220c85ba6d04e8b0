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
from typing import Any

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
