"""The HTML report: one self-contained file (nothing to fetch), an inline <svg> per chart,
every piece of text escaped; and the sections the codec and gateway experiments give it."""

from __future__ import annotations

import copy
import re
import sys
import types
from html.parser import HTMLParser

import pytest

import amfkit_bench
from amfkit_bench import codec, gateway, report, text
from amfkit_bench import results as results_file
from amfkit_bench.model import Bar, Chart, Section, Table

HOSTILE = '<script>alert("x")</script> & $x$ \'q\''


def _codec_report(size: int = 50) -> dict:
    """A real codec run, small: two graphs, no Py3AMF (fast)."""
    return codec.run(codec.Options(size=size, graphs=("complex", "static"), repeat=1, slow_repeat=1, py3amf=False))


def _gateway_report() -> dict:
    """A gateway report in the shape `gateway.run` returns (its figures from a --quick run)."""
    rows = []
    for server, case, rps, wire in (
        ("amfkit", "echo AMF3", 20772.0, 79),
        ("amfkit", "tiles String AMF3", 1009.0, 20498),
        ("amfkit", "tiles String AMF3 gzip", 857.0, 10959),
        ("amfkit", "tiles RecordSet AMF3", 1161.0, 20483),
        ("amfkit", "tiles RecordSet AMF3 gzip", 884.0, 11954),
        ("py3amf", "echo AMF3", 2673.0, 79),
        ("py3amf", "tiles String AMF3", 718.0, 20498),
        ("bare", "echo AMF3", 22939.0, 79),
    ):
        rows.append(
            {
                "server": server, "case": case, "check": True, "wire_bytes": wire, "requests": int(rps),
                "rps": rps, "errors": 0, "latency_ms": {"mean": 0.85, "p99": 4.1}, "runs": 1,
            }
        )
    report_ = {
        "experiment": "gateway",
        "ok": True,
        "options": {"duration": 1.0, "connections": 16, "threads": 1, "quick": True,
                    "servers": ["amfkit", "py3amf", "bare"], "json_path": None},
        "machine": {"cpu": "test CPU", "cpu_count": 2, "load_average": [0.5, 0.4, 0.3], "versions": {"uvicorn": "0.54.0"}},
        "results": rows,
        "server_times": {
            "String AMF3": {"median_ms": 0.90, "min_ms": 0.86},
            "RecordSet AMF3": {"median_ms": 0.76, "min_ms": 0.72},
        },
    }
    report_["goals"] = gateway._goals(report_)
    return report_


@pytest.fixture(scope="module")
def results() -> dict:
    return results_file.build_results(
        {"codec": _codec_report(), "gateway": _gateway_report()},
        {"codec": {"argv": ["--quick"], "elapsed_s": 1.0, "ok": True}},
        command="amfkit bench codec gateway --quick",
        elapsed=2.0,
    )


class _Checker(HTMLParser):
    """Collects every attribute and tag, and checks that non-void HTML tags nest."""

    VOID = {"meta", "br", "hr", "img", "input", "link"}

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.stack: list[str] = []
        self.svg_depth = 0
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs
        if tag == "svg":
            self.svg_depth += 1
        if tag not in self.VOID and not self.svg_depth:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg_depth -= 1
            return
        if self.svg_depth:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:]}")
        else:
            self.stack.pop()


def _charts(sections: list[Section]) -> int:
    return sum(len(s.charts) for s in sections)


def test_the_page_is_self_contained(results):
    page = report.render_html(results)
    checker = _Checker()
    checker.feed(page)
    assert checker.problems == [] and checker.stack == []

    # nothing to fetch: no URL at all, no scripts, no external styles, fonts or images
    assert not re.search(r"https?://", page, re.I)
    assert "//" not in "".join(value or "" for name, value in checker.attrs if name in ("src", "href"))
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(checker.tags)
    assert "@import" not in page and "@font-face" not in page
    assert re.findall(r"url\(([^)]*)\)", page) and all(u.startswith("#") for u in re.findall(r"url\(([^)]*)\)", page))

    # an inline <svg> per chart, ids unique across the page
    expected = _charts(codec.sections(results["experiments"]["codec"])) + _charts(gateway.sections(results["experiments"]["gateway"]))
    assert page.count("<svg") == expected >= 8
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    for ref in re.findall(r'(?:href="#|url\(#)([^")]+)', page):
        assert ref in ids, ref

    # the machine, the command, the sections and the text reports
    for text in ("amfkit bench codec gateway --quick", "Machine", "complex graph, 50 items", "static graph, 50 items",
                 "Requests per second", "Server time in process", "plain-text report", "every check passed"):
        assert text in page, text


def test_every_text_is_escaped(results):
    hostile = copy.deepcopy(results)
    hostile["command"] = f"amfkit bench {HOSTILE}"
    hostile["machine"]["cpu"] = HOSTILE
    rows = hostile["experiments"]["codec"]["results"]
    rows[0]["peer"] = HOSTILE  # a peer name: in tables, chart labels and findings
    rows[0]["check"] = {"ok": False, "detail": HOSTILE}
    hostile["experiments"]["gateway"]["error"] = HOSTILE
    page = report.render_html(hostile)
    assert "<script" not in page
    assert "&lt;script&gt;" in page
    assert "alert(&quot;x&quot;)" in page
    assert "FAILED" in page


def test_chart_svg_keeps_dollars_literal_and_prefixes_ids():
    chart = Chart(
        "costs in $ (<b>)",
        "ms",
        [Bar("a $x$", 2.0, 1.5, 2.5, group="one"), Bar("b", 40.0, 39.0, 41.0, group="two")],
        log=True,
        reference=[Bar("article figure", 160.0, group="article")],
    )
    svg = report.chart_svg(chart, ident="t1")
    assert svg.startswith("<svg ") and svg.endswith("</svg>")
    assert "<?xml" not in svg and "<metadata" not in svg and "http" not in svg
    assert "a $x$" in svg  # drawn as written, not as math
    assert "&lt;b&gt;" in svg
    assert "article figure (article)" in svg
    assert "the article (its own machine)" in svg  # the legend names the hatched bars
    ids = re.findall(r'\bid="([^"]+)"', svg)
    assert ids and all(i.startswith("t1-") for i in ids)
    # the same chart gives the same SVG (stable ids): a report can be diffed
    assert report.chart_svg(chart, ident="t1") == svg


def test_empty_and_non_positive_charts_render():
    assert "<svg" in report.chart_svg(Chart("nothing", "ms", []), ident="e")
    assert "<svg" in report.chart_svg(Chart("zero on log", "ms", [Bar("z", 0.0), Bar("one", 1.0)], log=True), ident="z")


def test_an_experiment_without_sections_gets_its_text_report(results, monkeypatch):
    plain = types.ModuleType("fake_plain_experiment")
    plain.SUMMARY = "a plain experiment"  # type: ignore[attr-defined]
    plain.format_report = lambda rep: f"plain text <report> of {len(rep['results'])} rows"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_plain_experiment", plain)
    monkeypatch.setitem(amfkit_bench.EXPERIMENTS, "plain", "fake_plain_experiment")
    data = copy.deepcopy(results)
    data["experiments"] = {"plain": {"experiment": "plain", "ok": True, "results": [{}]}}
    page = report.render_html(data)
    assert "<svg" not in page
    assert "a plain experiment" in page
    assert "<details open><summary>plain-text report</summary><pre>plain text &lt;report&gt; of 1 rows</pre>" in page


def test_sections_failure_is_reported_not_raised(monkeypatch):
    monkeypatch.setattr(codec, "sections", lambda rep: 1 / 0)
    found = report.experiment_sections("codec", {"results": []})
    assert found[0].findings == ["sections() raised ZeroDivisionError: division by zero"]


def test_tables_render_numbers_and_escape_cells():
    html = report._table_html(Table(["a<b", "n"], [["x & y", 12345], ["z", 0.5]]))
    assert "a&lt;b" in html and "x &amp; y" in html
    assert '<td class="num">12,345</td>' in html and '<td class="num">0.500</td>' in html


def test_fmt_number():
    assert text.fmt_number(1234567) == "1,234,567"
    assert text.fmt_number(1234.5) == "1,234"
    assert text.fmt_number(12.345) == "12.3"
    assert text.fmt_number(1.2345) == "1.23"
    assert text.fmt_number(0.12345) == "0.123"
    assert text.fmt_number(0.012345) == "0.0123"
    assert text.fmt_number(None) == "-"
    assert text.fmt_number("text") == "text"


# --------------------------------------------------------------------------- sections


def test_codec_sections_put_the_article_graph_first_with_findings():
    rep = _codec_report()
    sections = codec.sections(rep)
    assert [s.title for s in sections] == ["complex graph, 50 items", "static graph, 50 items"]
    complex_ = sections[0]
    assert len(complex_.charts) == 3  # encode, decode, size
    encode = complex_.charts[0]
    assert {bar.label for bar in encode.bars} >= {"amfkit AMF3", "amfkit AMF0", "pickle 5"}
    for bar in encode.bars:
        assert bar.low is not None and bar.high is not None and bar.low <= bar.value <= bar.high
    assert encode.reference == []  # the article's figures are for 10,000 items, not 50
    assert any("0.6b2 ext: encode AMF3 0.163 s" in line for line in complex_.article)
    assert any("Not charted" in line for line in complex_.article)
    assert any(f.startswith("AMF3 writes complex-50 in") for f in complex_.findings)
    assert "not run: py3amf" in complex_.intro


def test_codec_sections_chart_the_article_figures_at_its_size():
    rep = _codec_report()
    for row in rep["results"]:
        row["size"] = codec.ARTICLE_SIZE
    sections = codec.sections(rep)
    encode, decode = sections[0].charts[:2]
    assert [b.value for b in encode.reference] == pytest.approx([163.156, 234.642, 1764.296, 2063.210])
    assert [b.value for b in decode.reference] == pytest.approx([223.002, 238.912, 3265.473, 4383.258])
    assert encode.log  # 3 ms beside 2,000 ms
    assert any("PyAMF 0.6b2 with its C extension, took 163 ms" in f for f in sections[0].findings)


def test_gateway_sections_state_the_goals():
    sections = gateway.sections(_gateway_report())
    assert [s.title for s in sections] == [
        "Requests per second", "Server time in process, 1000 tiles", "Bytes on the wire, 1000 tiles (amfkit)",
    ]
    load = sections[0]
    assert "echo AMF3: amfkit >= 10x Py3AMF requests/s: 7.8x (NOT met)." in load.findings
    assert "echo AMF3: amfkit within 20% of the bare endpoint: 91% of bare (met)." in load.findings
    assert [c.title.split(":")[0] for c in load.charts] == ["echo", "1000 tiles"]
    assert {b.group for b in load.charts[0].bars} == {"amfkit", "py3amf", "bare"}
    assert any(f.startswith("gzip takes String AMF3 from 20,498 to 10,959 bytes") for f in sections[2].findings)
