"""Figures as text, the same way in every experiment's report: numbers, factors, timing
and ratio cells, aligned plain-text tables and the machine footer.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

__all__ = [
    "fmt_factor",
    "fmt_figure",
    "fmt_number",
    "machine_lines",
    "ratio_cell",
    "text_table",
    "than",
    "timing_cell",
    "waited",
]


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


def fmt_number(value: Any) -> str:
    """A table cell: ints with thousands separators, floats to about three significant digits."""
    if isinstance(value, bool) or value is None:
        return "-" if value is None else ("yes" if value else "no")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        magnitude = abs(value)
        if magnitude >= 0.1:
            return fmt_figure(value)
        if magnitude == 0:
            return "0"
        return f"{value:.3g}"
    return str(value)


def fmt_factor(x: float) -> str:
    """A ratio as a factor: 123x, 12.3x, 1.23x."""
    if x >= 100:
        return f"{x:,.0f}x"
    if x >= 10:
        return f"{x:.1f}x"
    return f"{x:.2f}x"


def than(ratio: float, more: str, less: str) -> str:
    """`ratio` (theirs / ours) as words: 2.0 -> "2.00x <more>", 0.5 -> "2.00x <less>"."""
    if ratio >= 1:
        return f"{fmt_factor(ratio)} {more}"
    return f"{fmt_factor(1 / ratio)} {less}"


def waited(timing: dict[str, Any] | None) -> bool:
    """True when the median wall time exceeds the CPU time by over 25%: the process was kept waiting."""
    if not timing:
        return False
    wall, cpu = timing["wall_ms"]["median"], timing["cpu_ms"]["median"]
    return bool(wall > 0.05 and wall > 1.25 * cpu)


def timing_cell(timing: dict[str, Any] | None, *, per: int | None = None, mark_waited: bool = False) -> str:
    """A measurement as "median (min-max)" in ms; with `per`, also " = X µs" per item;
    with `mark_waited`, a leading "*" when the process was kept waiting."""
    if not timing:
        return "-"
    wall = timing["wall_ms"]
    mark = "*" if mark_waited and waited(timing) else ""
    cell = f"{mark}{fmt_figure(wall['median'])} ({fmt_figure(wall['min'])}-{fmt_figure(wall['max'])})"
    if per:
        cell += f" = {fmt_figure(wall['median'] * 1e3 / per)} µs"
    return cell


def ratio_cell(ratio: float | None, *, baseline: bool) -> str:
    """A row's median time over the baseline row's (>1: slower), for a table."""
    if baseline:
        return "baseline"
    if ratio is None or ratio <= 0:
        return "-"
    return than(ratio, "slower", "faster")


def text_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], right: Iterable[int] | None = None) -> list[str]:
    """The lines of a plain-text table: a header, a rule and the rows, columns two spaces
    apart. Columns whose index is in `right` are aligned right (default: all but the
    first); cells that are not strings are written with `fmt_number`."""
    cells = [[cell if isinstance(cell, str) else fmt_number(cell) for cell in row] for row in rows]
    heads = [str(h) for h in headers]
    aligned = set(range(1, len(heads)) if right is None else right)
    widths = [max(len(cell) for cell in column) for column in zip(heads, *cells)]

    def line(row: list[str]) -> str:
        return "  ".join(
            cell.rjust(width) if index in aligned else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(row, widths))
        ).rstrip()

    return [line(heads), line(["-" * width for width in widths]), *(line(row) for row in cells)]


def machine_lines(report: dict[str, Any]) -> list[str]:
    """The closing lines of an experiment's text report: the machine, the load, the time
    taken and the versions measured."""
    machine = report.get("machine") or {}
    versions = ", ".join(f"{name} {version}" for name, version in (machine.get("versions") or {}).items() if version)
    load = machine.get("load_average")
    took = f"; took {report['elapsed_s']:.1f} s" if report.get("elapsed_s") is not None else ""
    return [
        "",
        f"machine: {machine.get('cpu', 'unknown CPU')}, {machine.get('cpu_count', '?')} cores, {machine.get('platform', 'unknown platform')}",
        f"load average at start: {' '.join(map(str, load)) if load else 'unknown'}{took}",
        f"versions: {versions}",
    ]
