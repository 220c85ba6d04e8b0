"""`amfkit bench forms`: what each input form `amfkit decode` reads costs (docs/benchmarks.md,
"Input forms"): a remoting packet of 1 MB (Flex's shape: a version-3 packet holding an
Array of records) written raw, as hex, base64, a decimal byte list, zlib, gzip, deflate
and an HTTP response with a gzip body; `amfkit.forms.detect`, `amfkit.forms.unwrap` and
`amfkit.payload.read` (which decodes it) timed on each, every result checked; then the
largest body read through each form, in a child process of its own (time, peak memory).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from typing import Any, Callable

from . import peers as peer_libraries
from .model import Bar, Chart, Section, Table, experiment_main, options_dict
from .text import fmt_figure, machine_lines, text_table, timing_cell
from .timing import machine_facts, measure

__all__ = [
    "COMPARE_KEYS",
    "FORMS",
    "NAME",
    "SUMMARY",
    "Options",
    "build_packet",
    "format_report",
    "main",
    "parse_options",
    "run",
    "sections",
]

NAME = "forms"
SUMMARY = (
    "input forms: detecting, taking off and reading a 1 MB packet given raw, as hex, base64, a byte list, "
    "zlib, gzip, deflate or an HTTP message; the largest body read through each (time, peak memory)"
)
COMPARE_KEYS = ("form", "size")


def _http(d: bytes) -> bytes:
    body = gzip.compress(d, 1)
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amf\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(body) + body


#: Each form `amfkit decode` reads, as it is written here (how people hold such bytes).
FORMS: dict[str, Callable[[bytes], bytes]] = {
    "raw": lambda d: d,
    "hex": lambda d: d.hex(" ").encode(),
    "base64": lambda d: base64.encodebytes(d),
    "list": lambda d: ("[" + ", ".join(map(str, d)) + "]").encode(),
    "zlib": lambda d: zlib.compress(d, 6),
    "gzip": lambda d: gzip.compress(d, 6),
    "deflate": lambda d: zlib.compress(d, 6)[2:-4],
    "http": _http,
}
#: How each is written, for the report.
WRITTEN = {
    "raw": "the bytes",
    "hex": 'bytes.hex(" ")',
    "base64": "base64, 76-character lines",
    "list": "[0, 3, ...]",
    "zlib": "level 6",
    "gzip": "level 6",
    "deflate": "raw deflate, level 6",
    "http": "an HTTP response, gzip body",
}

SIZE = 1_000_000
QUICK_SIZE = 200_000
#: The largest body read through each form: half the default per-layer cap (64 MiB), so
#: that every form's layers fit under it (a byte list of it is 150 MB of text, parsed
#: into 34 million Python integers: about 860 MB at the peak).
LARGEST = 33_000_000
QUICK_LARGEST = 2_000_000
#: A child run that takes longer than this is stopped and reported as failed.
CHILD_TIMEOUT_S = 900


@dataclasses.dataclass
class Options:
    size: int = SIZE
    repeat: int = 5
    largest: int = LARGEST
    forms: tuple[str, ...] = tuple(FORMS)
    quick: bool = False
    json_path: str | None = None
    progress: Callable[..., None] | None = None


def build_packet(size: int) -> bytes:
    """A version-3 packet of about `size` bytes: one body, an Array of records (an id, a
    name, a price, a flag and a note), written by amfkit as Flash Player writes AMF3."""
    from amfkit.remoting import packet

    note = "x" * 40
    per = 80  # about the bytes of one record after the first
    records = [{"id": i, "name": f"item-{i}", "price": i * 0.25, "active": i % 2 == 0, "note": note + str(i)} for i in range(max(1, size // per))]
    return packet.encode(packet.Envelope(3, bodies=[packet.Body("/1/onResult", "null", records)]))


# --------------------------------------------------------------------------- the run


def _one(name: str, body: bytes, records: int, repeat: int) -> dict[str, Any]:
    """The row of form `name` on the packet `body`: checked, then timed."""
    from amfkit import forms as amf_forms
    from amfkit import payload

    data = FORMS[name](body)
    cap = max(amf_forms.DEFAULT_MAX_SIZE, 2 * len(body))
    row: dict[str, Any] = {"form": name, "written": WRITTEN[name], "size": len(body), "input_bytes": len(data)}
    detected = amf_forms.detect(data)
    raw = amf_forms.unwrap(data, max_size=cap)
    found = payload.read(data, max_inflate=cap)
    problems = []
    if detected != name:
        problems.append(f"detected as {detected!r}")
    if raw != body:
        problems.append("taken off to other bytes")
    if found.kind != "packet" or found.data != body or len(found.value.bodies[0].value) != records:
        problems.append(f"read as {found.describe()}")
    row["read_as"] = found.describe()
    del raw, found
    if problems:
        row.update(check=False, error="; ".join(problems))
        return row
    row["check"] = True
    row["detect"] = measure(amf_forms.detect, data, repeat=repeat).to_dict()
    row["unwrap"] = measure(amf_forms.unwrap, data, repeat=repeat).to_dict() if name != "raw" else None
    row["read"] = measure(lambda: payload.read(data, max_inflate=cap), repeat=repeat).to_dict()
    return row


def _largest(name: str, size: int, tmp: str, packets: dict[int, str]) -> dict[str, Any]:
    """Form `name` of a packet of about `size` bytes read in a child process: its figures
    (forms_work), checked."""
    packet_path = packets.get(size)
    if packet_path is None:
        packet_path = packets[size] = os.path.join(tmp, f"packet-{size}.amf")
        with open(packet_path, "wb") as f:
            f.write(build_packet(size))
    with open(packet_path, "rb") as f:
        body = f.read()
    source = os.path.join(tmp, f"input.{name}")
    with open(source, "wb") as f:
        f.write(FORMS[name](body))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "amfkit_bench.forms_work", source, packet_path],
            capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"packet_bytes": len(body), "check": False, "error": f"took over {CHILD_TIMEOUT_S} s"}
    finally:
        os.unlink(source)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"packet_bytes": len(body), "check": False, "error": f"exited with {done.returncode}: {' | '.join(tail)}"}
    figures: dict[str, Any] = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    figures["packet_bytes"] = len(body)
    figures["read_s"] = figures.pop("wall_s")
    figures["check"] = bool(figures["same_bytes"])
    if not figures["check"]:
        figures["error"] = f"read as other bytes ({figures['read']})"
    return figures


def run(options: Options) -> dict[str, Any]:
    """Per form: the 1 MB packet checked and timed in this process, then the largest body
    read in a child process; return the report (JSON-ready)."""
    progress = options.progress or (lambda message, done=None, total=None: None)
    machine = machine_facts(peer_libraries.package_versions("amfkit"))
    started = time.perf_counter()
    body = build_packet(options.size)
    from amfkit.remoting import packet

    records = len(packet.decode(body).bodies[0].value)
    rows: list[dict[str, Any]] = []
    total = len(options.forms) * (2 if options.largest else 1)
    done = 0
    with tempfile.TemporaryDirectory(prefix="amfkit-bench-forms-") as tmp:
        packets: dict[int, str] = {}
        for name in options.forms:
            progress(f"{name}: {len(body):,} bytes", done, total)
            try:
                row = _one(name, body, records, options.repeat)
            except Exception as exc:  # noqa: BLE001 - a form that fails is a result
                row = {"form": name, "written": WRITTEN[name], "size": len(body), "check": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
            done += 1
            if options.largest:
                progress(f"{name}: the largest body, {options.largest:,} bytes", done, total)
                row["largest"] = _largest(name, options.largest, tmp, packets)
                done += 1
                if not row["largest"]["check"]:
                    row["check"] = False
                    row.setdefault("error", f"largest: {row['largest'].get('error', '')}")
            rows.append(row)
    progress("done", total, total)
    return {
        "experiment": NAME,
        "summary": SUMMARY,
        "ok": all(row["check"] for row in rows),
        "options": options_dict(options),
        "machine": machine,
        "elapsed_s": round(time.perf_counter() - started, 3),
        "packet": {"bytes": len(body), "records": records},
        "results": rows,
    }


# --------------------------------------------------------------------------- report


HEADERS = ["form", "written", "input bytes", "detect ms", "take off ms", "read ms", "largest: packet (input)", "read s", "peak RSS MB", "check"]


def _largest_cells(row: dict[str, Any]) -> list[Any]:
    big = row.get("largest")
    if not big:
        return ["-", "-", "-"]
    if not big.get("check"):
        return [f"{big.get('packet_bytes', 0) / 1e6:.1f} MB", "-", "-"]
    peak = big.get("peak_rss_mb")
    return [
        f"{big['packet_bytes'] / 1e6:.1f} MB ({big['input_bytes'] / 1e6:.1f} MB)",
        fmt_figure(big["read_s"]),
        "-" if peak is None else fmt_figure(peak),
    ]


def _table_rows(report: dict[str, Any]) -> list[list[Any]]:
    out = []
    for row in report["results"]:
        timed = "detect" in row
        out.append([
            row["form"],
            row["written"],
            row.get("input_bytes", "-"),
            timing_cell(row["detect"]) if timed else "-",
            (timing_cell(row["unwrap"]) if row.get("unwrap") else "-") if timed else "-",
            timing_cell(row["read"]) if timed else "-",
            *_largest_cells(row),
            "ok" if row.get("check") else f"FAILED {row.get('error', '')}",
        ])  # fmt: skip
    return out


def _intro(report: dict[str, Any]) -> str:
    p, o = report["packet"], report["options"]
    text = (
        f"A version-3 remoting packet of {p['bytes']:,} bytes (an Array of {p['records']:,} records, written by amfkit as "
        f"Flash Player writes AMF3) in each form: `forms.detect` (the outer form), `forms.unwrap` (the form taken off) and "
        f"`payload.read` (detection, taking off and decoding into Python objects), each "
        f"{'the median of ' + str(o['repeat']) + ' calls' if o['repeat'] > 1 else 'one call'} after one warm-up (min-max), "
        f"every result checked first (the form detected, the same bytes taken off, the packet "
        f"and its records read)."
    )
    if o["largest"]:
        text += (
            f" Then the largest body read through each form: a packet of about {o['largest'] / 1e6:g} MB, its input read from a file "
            f"in a child process of its own, `payload.read` timed once (the per-layer cap raised to twice the packet), the peak resident memory "
            f"(reset to the resident memory before the read, Linux: the input is held) and the same bytes checked."
        )
    return text


def format_report(report: dict[str, Any]) -> str:
    lines = [f"amfkit bench forms: {_intro(report)}", ""]
    lines += text_table(HEADERS, _table_rows(report), {2, 3, 4, 5, 7, 8})
    lines += machine_lines(report)
    return "\n".join(lines)


def _findings(report: dict[str, Any]) -> list[str]:
    good = [row for row in report["results"] if row.get("check") and "detect" in row]
    found = []
    if good:
        slowest = max(good, key=lambda r: r["detect"]["wall_ms"]["median"])
        found.append(
            f"Detection costs at most {fmt_figure(slowest['detect']['wall_ms']['median'])} ms ({slowest['form']}) on "
            f"{report['packet']['bytes'] / 1e6:.1f} MB: it reads the start of a text form, and of a compressed one."
        )
        costly = max(good, key=lambda r: r["read"]["wall_ms"]["median"])
        raw = next((r for r in good if r["form"] == "raw"), None)
        if raw and costly is not raw:
            ratio = costly["read"]["wall_ms"]["median"] / raw["read"]["wall_ms"]["median"]
            found.append(f"The costliest form to read is {costly['form']}: {ratio:.1f}x the raw packet's {fmt_figure(raw['read']['wall_ms']['median'])} ms.")
    for row in report["results"]:
        big = row.get("largest")
        if big and big.get("check"):
            found.append(
                f"{row['form']}: a {big['packet_bytes'] / 1e6:.1f} MB packet ({big['input_bytes'] / 1e6:.1f} MB of input) read in "
                f"{fmt_figure(big['read_s'])} s, peak memory {fmt_figure(big['peak_rss_mb'] or 0)} MB."
            )
    found += [f"{row['form']} FAILED: {row.get('error', '')}" for row in report["results"] if not row.get("check")]
    return found


def sections(report: dict[str, Any]) -> list[Section]:
    good = [row for row in report["results"] if row.get("check") and "detect" in row]

    def bar(row: dict[str, Any], key: str) -> Bar:
        t = row[key]["wall_ms"]
        return Bar(row["form"], t["median"], t["min"], t["max"])

    charts = [
        Chart(f"read a {report['packet']['bytes'] / 1e6:.1f} MB packet, by form (ms, lower is better)", "ms", [bar(r, "read") for r in good]),
        Chart("detect the form (ms, lower is better)", "ms", [bar(r, "detect") for r in good], log=True),
    ]
    big = [row for row in report["results"] if (row.get("largest") or {}).get("check")]
    if big:
        charts.append(Chart("the largest body: peak memory while read (MB)", "MB", [Bar(r["form"], float(r["largest"]["peak_rss_mb"] or 0)) for r in big]))
    return [Section(f"Input forms: a {report['packet']['bytes'] / 1e6:.1f} MB packet in each", _intro(report), [Table(HEADERS, _table_rows(report))], charts, findings=_findings(report))]


# --------------------------------------------------------------------------- command line


def _bytes_count(text: str) -> int:
    units = {"K": 1_000, "M": 1_000_000, "G": 1_000_000_000}
    t = text.strip().upper()
    try:
        return int(float(t[:-1]) * units[t[-1]]) if t[-1:] in units else int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1000000, 1M, 33M)") from None


def parse_options(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="amfkit bench forms", description=SUMMARY)
    p.add_argument("--quick", action="store_true", help=f"a {QUICK_SIZE / 1e3:g} KB packet, one timed call, the largest body {QUICK_LARGEST / 1e6:g} MB (a correctness run)")
    p.add_argument("--size", type=_bytes_count, help=f"the packet's size (default {SIZE / 1e6:g}M)")
    p.add_argument("--repeat", type=int, help="timed calls per figure (default 5; 1 with --quick)")
    p.add_argument("--largest", type=_bytes_count, help=f"the largest body's size, 0 to skip it (default {LARGEST / 1e6:g}M)")
    p.add_argument("--form", action="append", choices=list(FORMS), help="measure only these forms (repeatable)")
    p.add_argument("--json", dest="json_path", help="write the report as JSON")
    a = p.parse_args(argv)
    size = a.size if a.size is not None else (QUICK_SIZE if a.quick else SIZE)
    repeat = a.repeat if a.repeat is not None else (1 if a.quick else 5)
    largest = a.largest if a.largest is not None else (QUICK_LARGEST if a.quick else LARGEST)
    for name, value in (("--size", size), ("--repeat", repeat)):
        if value < 1:
            p.error(f"{name} must be at least 1")
    if largest < 0:
        p.error("--largest must be 0 or more")
    forms = tuple(dict.fromkeys(a.form)) if a.form else tuple(FORMS)
    return Options(size=size, repeat=repeat, largest=largest, forms=forms, quick=a.quick, json_path=a.json_path)


def main(argv: list[str] | None = None) -> int:
    """`amfkit bench forms [options]`: print the report; 0 if every check passed, else 1."""
    return experiment_main(argv, parse_options, run, format_report)


if __name__ == "__main__":
    sys.exit(main())
