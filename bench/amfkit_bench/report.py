"""The HTML report of a run: one self-contained file (inline styles, matplotlib's charts
as embedded SVG, nothing fetched), every text from the results escaped
(docs/benchmarks.md, "The lab's code").
"""

from __future__ import annotations

import html
import io
import os
import re
from typing import Any, Iterable

from .model import Bar, Chart, Section, Table
from .text import fmt_number

__all__ = ["chart_svg", "draw_chart", "experiment_sections", "key_findings", "render_html", "text_report", "write_html"]

#: Bar colors, one per group in order of first appearance (colorblind-friendly, Okabe-Ito).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999", "#000000")
REFERENCE_LABEL = "the article (its own machine)"


# --------------------------------------------------------------------------- numbers


def _is_numeric_cell(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    # pre-formatted figures ("2.70 (2.61-2.93)", "12,345", "3.1x faster") align right too
    return isinstance(value, str) and bool(re.match(r"^[*~<>]?[-+]?[\d.,]+", value.strip()))


# --------------------------------------------------------------------------- charts


def _mpl_text(text: str) -> str:
    """matplotlib reads `$...$` as math: keep dollar signs literal."""
    return text.replace("$", r"\$")


def chart_svg(chart: Chart, *, ident: str = "chart") -> str:
    """Draw `chart` as horizontal bars and return the `<svg>` element (no XML prolog,
    no metadata, no namespace URLs, ids prefixed with `ident` so several charts can
    share one page)."""
    buf = io.StringIO()
    draw_chart(chart, buf, format="svg", ident=ident)
    return _clean_svg(buf.getvalue(), ident)


def draw_chart(chart: Chart, out: Any, *, format: str = "svg", ident: str = "chart") -> None:
    """Draw `chart` into the file object `out` in `format` ("svg", or "png" to look at one)."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, NullFormatter

    bars: list[tuple[Bar, bool]] = [(bar, False) for bar in chart.bars] + [(bar, True) for bar in chart.reference]
    if chart.log:
        bars = [(bar, ref) for bar, ref in bars if bar.value > 0]
    with matplotlib.rc_context(
        {
            "svg.fonttype": "none",  # text stays text: smaller, searchable, no glyph paths
            "svg.hashsalt": f"amfkit-{ident}",  # stable ids, so the same results give the same file
            "font.family": "sans-serif",
            "font.size": 9,
        }
    ):
        fig = Figure(figsize=(8.0, 1.3 + 0.27 * max(len(bars), 1)), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        groups: dict[str, str] = {}
        for bar, ref in bars:
            if not ref and bar.group not in groups:
                groups[bar.group] = PALETTE[len(groups) % len(PALETTE)]
        positions = list(range(len(bars)))
        widest = 0.0
        for y, (bar, ref) in zip(positions, bars):
            low = bar.low if bar.low is not None else bar.value
            high = bar.high if bar.high is not None else bar.value
            xerr = None
            if bar.low is not None or bar.high is not None:
                xerr = [[max(bar.value - low, 0.0)], [max(high - bar.value, 0.0)]]
            if ref:
                ax.barh(y, bar.value, height=0.7, color="white", edgecolor="#555555", hatch="///", linewidth=0.8)
            else:
                ax.barh(y, bar.value, height=0.7, color=groups[bar.group], xerr=xerr,
                        error_kw={"ecolor": "#333333", "elinewidth": 1.0, "capsize": 2.5})
            end = max(bar.value, high)
            widest = max(widest, end)
            ax.text(end * (1.06 if chart.log else 1.0), y, f"  {fmt_number(float(bar.value))}",
                    va="center", ha="left", fontsize=8, color="#333333")
        ax.set_yticks(positions)
        ax.set_yticklabels([_mpl_text(bar.label + (" (article)" if ref else "")) for bar, ref in bars])
        ax.invert_yaxis()  # first bar on top, as in the table
        if chart.log:
            ax.set_xscale("log")
            smallest = min((bar.value for bar, _ in bars), default=1.0)
            if widest > 0:
                ax.set_xlim(smallest / 2, widest * 4)
        elif widest > 0:
            ax.set_xlim(0, widest * 1.18)
        # plain tick labels ("1,000", "0.1"), never matplotlib's math text
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:,.6g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(_mpl_text(chart.title), loc="left", fontsize=10)
        ax.set_xlabel(_mpl_text(chart.unit + (" (log scale)" if chart.log else "")))
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        handles = [Patch(facecolor=color, label=_mpl_text(group)) for group, color in groups.items() if group]
        if chart.reference:
            handles.append(Patch(facecolor="white", edgecolor="#555555", hatch="///", label=REFERENCE_LABEL))
        if len(handles) > 1 or chart.reference:
            # below the plot, so the bars keep the page's width
            fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6), fontsize=8, frameon=False)
        metadata = {"Date": None, "Creator": None, "Format": None, "Type": None} if format == "svg" else None
        fig.savefig(out, format=format, metadata=metadata)


def _clean_svg(svg: str, ident: str) -> str:
    """matplotlib's SVG document -> an inline `<svg>` element with page-unique ids and no URLs."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)  # HTML's parser knows the SVG namespaces
    ids = set(re.findall(r'\bid="([^"]+)"', svg))

    def rename(match: re.Match[str]) -> str:
        name = match.group(2)
        return f"{match.group(1)}{ident}-{name}" if name in ids else match.group(0)

    svg = re.sub(r'(\bid=")([^"]+)', rename, svg)
    svg = re.sub(r"(url\(#)([^)]+)", rename, svg)
    svg = re.sub(r'(href="#)([^"]+)', rename, svg)
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{html.escape(ident)}" ', 1)
    return svg.strip()


# --------------------------------------------------------------------------- sections


def experiment_sections(name: str, report: dict[str, Any]) -> list[Section]:
    """The experiment's own `sections(report)`; [] when it has none or is not registered.

    A failing `sections()` becomes a section saying so, so one experiment's bug never
    costs the whole report."""
    module = _module(name)
    make = getattr(module, "sections", None) if module is not None else None
    if make is None or report.get("error"):
        return []
    try:
        return list(make(report))
    except Exception as exc:  # noqa: BLE001 - reported in the page
        return [Section(title=f"{name}: sections() failed", findings=[f"sections() raised {type(exc).__name__}: {exc}"])]


def key_findings(sections: list[Section], limit: int) -> list[str]:
    """The findings worth a summary: all of the first section's, then the first of each
    other section, then the rest; no repeats, at most `limit`."""
    ordered: list[str] = []
    if sections:
        ordered += sections[0].findings
        ordered += [s.findings[0] for s in sections[1:] if s.findings]
        ordered += [f for s in sections[1:] for f in s.findings[1:]]
    return list(dict.fromkeys(ordered))[:limit]


def text_report(name: str, report: dict[str, Any]) -> str:
    """The experiment's plain-text report (`format_report`), or "" when it cannot give one."""
    if report.get("error"):
        return ""
    module = _module(name)
    fmt = getattr(module, "format_report", None) if module is not None else None
    if fmt is None:
        return ""
    try:
        return str(fmt(report))
    except Exception as exc:  # noqa: BLE001 - reported in the page
        return f"format_report() raised {type(exc).__name__}: {exc}"


def _module(name: str) -> Any:
    from . import EXPERIMENTS, experiment

    if name not in EXPERIMENTS:
        return None
    try:
        return experiment(name)
    except ImportError:
        return None


# --------------------------------------------------------------------------- HTML

_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b;
       max-width: 1100px; margin: 2em auto; padding: 0 1.2em; }
h1 { font-size: 1.7em; margin-bottom: .2em; }
h2 { border-bottom: 2px solid #0072B2; padding-bottom: .2em; margin-top: 2.2em; }
h3 { margin-top: 1.6em; }
.sub { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: .8em 0; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: .25em .7em; text-align: left; vertical-align: top; }
th { background: #f3f5f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: .15em 1em; font-size: 14px; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
ul.findings li { margin: .2em 0; }
ul.article { color: #444; font-size: 14px; }
.status-ok { color: #1a7f37; font-weight: 600; } .status-failed { color: #c0392b; font-weight: 600; }
.error { background: #fdecea; border-left: 4px solid #c0392b; padding: .5em .8em; white-space: pre-wrap; }
pre { background: #f6f8fa; padding: .8em; overflow-x: auto; font-size: 12px; line-height: 1.35; }
nav ul { columns: 2; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _table_html(table: Table) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in table.headers)
    rows = []
    for row in table.rows:
        cells = []
        for cell in row:
            css = ' class="num"' if _is_numeric_cell(cell) else ""
            cells.append(f"<td{css}>{_e(fmt_number(cell))}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _list_html(items: Iterable[str], css: str) -> str:
    items = list(items)
    if not items:
        return ""
    return f'<ul class="{css}">' + "".join(f"<li>{_e(item)}</li>" for item in items) + "</ul>"


def _machine_html(machine: dict[str, Any]) -> str:
    rows = []
    labels = (
        ("cpu", "CPU"), ("cpu_count", "cores"), ("load_average", "load average at start"),
        ("platform", "platform"), ("python", "Python"), ("python_implementation", "implementation"),
        ("python_build", "Python build"), ("time", "measured at"),
    )
    for key, label in labels:
        if key in machine and machine[key] is not None:
            value = machine[key]
            if isinstance(value, list):
                value = " ".join(map(str, value))
            rows.append(f"<dt>{_e(label)}</dt><dd>{_e(value)}</dd>")
    versions = machine.get("versions") or {}
    if versions:
        text = ", ".join(f"{name} {version}" for name, version in versions.items() if version)
        rows.append(f"<dt>versions</dt><dd>{_e(text)}</dd>")
    return f'<dl class="facts">{"".join(rows)}</dl>'


def _section_html(section: Section, anchor: str, counter: list[int]) -> str:
    out = [f'<h3 id="{_e(anchor)}">{_e(section.title)}</h3>']
    if section.intro:
        out.append(f"<p>{_e(section.intro)}</p>")
    out.append(_list_html(section.findings, "findings"))
    for table in section.tables:
        out.append(_table_html(table))
    for chart in section.charts:
        counter[0] += 1
        svg = chart_svg(chart, ident=f"c{counter[0]}")
        out.append(f"<figure>{svg}<figcaption class=\"sub\">{_e(chart.title)}</figcaption></figure>")
    if section.article:
        out.append("<p class=\"sub\"><strong>The article's own figures</strong> (its machine, not this one):</p>")
        out.append(_list_html(section.article, "article"))
    return "\n".join(part for part in out if part)


def render_html(results: dict[str, Any]) -> str:
    """The whole report page for a results dict (`runner.build_results` / `runner.load_results`)."""
    experiments: dict[str, dict[str, Any]] = results.get("experiments", {})
    machine = results.get("machine") or {}
    title = "amfkit bench report"
    ok = results.get("ok", all(r.get("ok") for r in experiments.values()))
    status = '<span class="status-ok">every check passed</span>' if ok else '<span class="status-failed">some checks FAILED</span>'
    stamp = []
    if results.get("amfkit_version"):
        stamp.append(f"amfkit {results['amfkit_version']}")
    if results.get("git_commit"):
        stamp.append(f"commit {results['git_commit']}")
    if results.get("created"):
        stamp.append(str(results["created"]))
    body = [
        f"<h1>{_e(title)}</h1>",
        f'<p class="sub">{_e(" · ".join(stamp))} · {status}</p>',
    ]
    if results.get("command"):
        body.append(f"<p>Reproduce with <code>{_e(results['command'])}</code>.</p>")
    body += [
        "<p>Times are wall-clock medians of the repetitions, with the min-max spread drawn as an "
        "error bar; every variant's output was checked for correctness before it was timed. "
        "Hatched bars are the figures of the articles the experiments reproduce (docs/benchmarks.md "
        "in amfkit's repository names them), measured on their authors' machines years ago: compare "
        "the ratios, not the absolute numbers.</p>",
        "<h2 id=\"machine\">Machine</h2>",
        _machine_html(machine),
    ]
    toc = []
    parts = []
    counter = [0]
    for name, report in experiments.items():
        anchor = f"exp-{_slug(name)}"
        summary = report.get("summary") or getattr(_module(name), "SUMMARY", "")
        toc.append(f'<li><a href="#{anchor}">{_e(name)}</a>{" — " + _e(summary) if summary else ""}</li>')
        part = [f'<h2 id="{anchor}">{_e(name)}</h2>']
        run = (results.get("runs") or {}).get(name, {})
        meta = []
        if summary:
            meta.append(_e(summary))
        elapsed = run.get("elapsed_s", report.get("elapsed_s"))
        if elapsed is not None:
            meta.append(f"took {_e(fmt_number(float(elapsed)))} s")
        if run.get("argv") is not None:
            meta.append(f"options <code>{_e(' '.join(run['argv']) or '(defaults)')}</code>")
        meta.append('<span class="status-ok">ok</span>' if report.get("ok") else '<span class="status-failed">FAILED</span>')
        part.append(f'<p class="sub">{" · ".join(meta)}</p>')
        if report.get("error"):
            part.append(f'<div class="error">{_e(report["error"])}</div>')
        sections = experiment_sections(name, report)
        for index, section in enumerate(sections):
            part.append(_section_html(section, f"{anchor}-{index + 1}", counter))
        text = text_report(name, report)
        if text:
            opened = "" if sections else " open"
            part.append(f"<details{opened}><summary>plain-text report</summary><pre>{_e(text)}</pre></details>")
        parts.append("\n".join(part))
    if toc:
        body.append(f"<nav><h2>Experiments</h2><ul>{''.join(toc)}</ul></nav>")
    body += parts
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def write_html(results: dict[str, Any], path: str) -> None:
    """Render and write the report (creating the directory)."""
    page = render_html(results)
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
