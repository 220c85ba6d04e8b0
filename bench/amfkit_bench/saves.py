"""`amfkit bench saves`: a big save (10 MB, 200,000 values) loaded, edited once and written
to another file by amfkit (`sol.edit`, lossless, and `sol.load`/`sol.dump`) and by
Py3AMF's `pyamf.sol` (pure Python, and its Cython build when there is one), every run in
a child process of its own (docs/benchmarks.md, "Big saves").
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from . import peers as peer_libraries
from . import saves_work
from .model import Bar, Chart, Section, Table, experiment_main, options_dict
from .text import fmt_factor, fmt_figure, machine_lines, text_table, than, waited
from .timing import Stats, machine_facts

__all__ = [
    "COMPARE_KEYS",
    "NAME",
    "PEERS",
    "SUMMARY",
    "Options",
    "build_save",
    "edit_path",
    "format_report",
    "main",
    "parse_options",
    "run",
    "sections",
]

NAME = "saves"
SUMMARY = (
    "a 10 MB save of 200,000 values loaded, edited once and written back: amfkit sol.edit and "
    "sol.load/dump vs Py3AMF's pyamf.sol (pure Python and Cython), a child process per run"
)
COMPARE_KEYS = ("peer", "values")

#: The issue's big save: 200,000 values in about 10 MB (records of ten values).
VALUES = 200_000
SIZE = 10_000_000
QUICK_VALUES = 20_000
QUICK_SIZE = 1_000_000
FIELDS = 10
EDIT_RECORD = 12_345  # the record whose "hp" is edited, when there are that many

#: The goals (issue 28), judged on `sol.edit` against the pure-Python Py3AMF of the same
#: run: at least 20x faster (by the wall clock and by CPU time), under a second, and a
#: peak memory growth of at most three times the save (the input, the output and what
#: indexes them).
GOAL_FACTOR = 20.0
GOAL_SECONDS = 1.0
GOAL_MEMORY_FACTOR = 3.0

#: A run that takes longer than this is stopped and reported as failed.
CHILD_TIMEOUT_S = 900


@dataclasses.dataclass(frozen=True)
class Peer:
    key: str  # its name for --peers
    name: str  # its name in the report
    work: str  # what its child process runs (saves_work.WORK)
    library: str  # "amfkit" or "py3amf"


PEERS = [
    Peer("edit", "amfkit sol.edit (lossless)", "amfkit-edit", "amfkit"),
    Peer("load-dump", "amfkit sol.load/dump", "amfkit-load-dump", "amfkit"),
    Peer("py3amf", "Py3AMF pyamf.sol (pure Python)", "py3amf-pure", "py3amf"),
    Peer("py3amf-cython", "Py3AMF pyamf.sol (Cython)", "py3amf", "py3amf"),
]
GOAL_PEER = "amfkit sol.edit (lossless)"
PURE = "Py3AMF pyamf.sol (pure Python)"
CYTHON = "Py3AMF pyamf.sol (Cython)"


@dataclasses.dataclass
class Options:
    values: int = VALUES
    size: int = SIZE
    repeat: int = 3
    quick: bool = False
    peers: tuple[str, ...] = tuple(p.key for p in PEERS)
    py3amf_python: str | None = None
    json_path: str | None = None
    progress: Callable[..., None] | None = None


# --------------------------------------------------------------------------- the save


def build_save(values: int = VALUES, size: int = SIZE, *, seed: int = 28) -> bytes:
    """An AMF3 save of `values` values (records of ten: ints, floats, a bool, short strings,
    a long text) filling about `size` bytes, written by amfkit's encoder as Flash Player
    writes AMF3 (strings and traits referenced)."""
    from amfkit import sol

    rnd = random.Random(seed)
    records = max(1, values // FIELDS)
    note = max(8, size // records - 60)
    alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ.,"
    kinds = ["knight", "archer", "mage", "rogue", "cleric"]
    world = []
    for i in range(records):
        world.append({
            "id": i,
            "name": f"unit-{i:07d}",
            "kind": kinds[i % len(kinds)],
            "x": rnd.random() * 1000,
            "y": rnd.random() * 1000,
            "hp": rnd.randrange(1, 100),
            "mp": rnd.randrange(0, 50),
            "alive": rnd.random() > 0.1,
            "level": rnd.randrange(1, 60),
            "note": "".join(rnd.choices(alphabet, k=note)),
        })  # fmt: skip
    return sol.dumps(sol.SOL("bigsave", {"version": 3, "world": world}))


def edit_path(values: int) -> tuple[int, str]:
    """The record edited and the value path of its "hp"."""
    records = max(1, values // FIELDS)
    index = EDIT_RECORD if records > EDIT_RECORD else records // 2
    return index, f"world[{index}].hp"


# --------------------------------------------------------------------------- one run


def _child(python: str, work: str, src: str, dst: str, index: int, cwd: str) -> dict[str, Any]:
    """`work` once in a fresh process of `python` (a clean heap, a peak of its own): the
    figures saves_work prints. RuntimeError with the child's last words when it fails."""
    source = Path(saves_work.__file__).read_text(encoding="utf-8")
    try:
        done = subprocess.run(
            [python, "-c", source, work, src, dst, str(index)],
            capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, cwd=cwd, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{work} took over {CHILD_TIMEOUT_S} s") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{work} under {python} exited with {done.returncode}: {' | '.join(tail)}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _check(peer: Peer, data: bytes, written: bytes, expected: Any, old: int, codec: str, cython: bool) -> str | None:
    """None when `written` is the edited save, else why not. amfkit's must be the input
    byte for byte but for the edited value (its one byte); Py3AMF's must read back, with
    amfkit, as the same values with the edit."""
    from amfkit import sol
    from amfkit.compare import first_difference

    if peer.library == "py3amf" and (codec == "cpyamf.amf3") != cython:
        return f"Py3AMF ran with {codec}, not its {'Cython' if cython else 'pure-Python'} codec"
    if peer.library == "amfkit":
        if len(written) != len(data):
            return f"{len(written):,} bytes written for {len(data):,}"
        changed = [(i, a, b) for i, (a, b) in enumerate(zip(data, written)) if a != b]
        if [(a, b) for _, a, b in changed] != [(old, 100)]:
            return f"{len(changed):,} bytes differ from the input (expected one: {old} -> 100)"
    try:
        back = sol.loads(written)
    except Exception as exc:  # noqa: BLE001 - a peer's bad file is a result
        return f"the file written does not read back: {type(exc).__name__}: {exc}"
    if back.name != expected.name:
        return f"name {back.name!r}, expected {expected.name!r}"
    return first_difference(dict(expected), dict(back), refs=False, exact=False)


def _differing(data: bytes, written: bytes) -> int:
    return sum(1 for a, b in zip(data, written) if a != b) + abs(len(data) - len(written))


# --------------------------------------------------------------------------- the run


def _pythons(options: Options, skipped: list[dict[str, str]]) -> dict[str, str]:
    """Peer name -> the interpreter that runs it; peers that cannot run here go to `skipped`."""
    wanted = [p for p in PEERS if p.key in options.peers]
    out: dict[str, str] = {}
    for peer in wanted:
        if peer.library == "amfkit":
            out[peer.name] = sys.executable
        elif peer.key == "py3amf":
            if peer_libraries.package_version("py3amf") is None:
                skipped.append({"peer": peer.name, "reason": "Py3AMF is not installed here (pip install py3amf)"})
            else:
                out[peer.name] = sys.executable
        elif options.py3amf_python:
            out[peer.name] = options.py3amf_python
        elif peer_libraries.py3amf_ext_built():
            out[peer.name] = sys.executable
        else:
            skipped.append({
                "peer": peer.name,
                "reason": "Py3AMF's Cython extension (cpyamf) is not built for this interpreter; "
                "--py3amf-python PYTHON names one where it is (docs/py3amf.md, \"Cython extension\")",
            })  # fmt: skip
    return out


def run(options: Options) -> dict[str, Any]:
    """Build the save, then per peer one checked run and `repeat` timed ones, each in a
    fresh child process; return the report (JSON-ready)."""
    from amfkit import sol

    progress = options.progress or (lambda message, done=None, total=None: None)
    machine = machine_facts(peer_libraries.package_versions("amfkit", "py3amf"))  # the load before the run
    started = time.perf_counter()
    skipped: list[dict[str, str]] = []
    pythons = _pythons(options, skipped)
    progress("building the save", 0, None)
    data = build_save(options.values, options.size)
    index, path = edit_path(options.values)
    expected = sol.loads(data)
    old = expected["world"][index]["hp"]
    expected["world"][index]["hp"] = 100
    rows: list[dict[str, Any]] = []
    total, done = len(pythons) * (1 + options.repeat), 0
    with tempfile.TemporaryDirectory(prefix="amfkit-bench-saves-") as tmp:
        src = os.path.join(tmp, "big.sol")
        with open(src, "wb") as f:
            f.write(data)
        for peer in PEERS:
            python = pythons.get(peer.name)
            if python is None:
                continue
            row: dict[str, Any] = {"peer": peer.name, "values": max(1, options.values // FIELDS) * FIELDS, "save_bytes": len(data), "python": python}
            runs: list[dict[str, Any]] = []
            checked = b""
            try:
                for attempt in range(1 + options.repeat):  # the first is the check (and the warm-up)
                    progress(f"{peer.name}: {'check' if attempt == 0 else f'run {attempt}/{options.repeat}'}", done, total)
                    dst = os.path.join(tmp, f"out-{attempt}.sol")
                    figures = _child(python, peer.work, src, dst, index, tmp)
                    done += 1
                    written = Path(dst).read_bytes()
                    os.unlink(dst)
                    if attempt == 0:
                        row.update(library=figures["library"], version=figures["version"], codec=figures["codec"], child_python=figures["python"])
                        row["bytes_written"] = len(written)
                        row["bytes_differing"] = _differing(data, written)
                        problem = _check(peer, data, written, expected, old, figures["codec"], peer.key == "py3amf-cython")
                        if problem:
                            raise RuntimeError(problem)
                        row["check"] = True
                        checked = written
                    elif written != checked:
                        raise RuntimeError(f"timed run {attempt} wrote another file than the checked run")
                    runs.append(figures)
            except Exception as exc:  # noqa: BLE001 - a failed peer is reported, not timed
                row["check"] = False
                row["error"] = str(exc)[:500]
            else:
                timed = runs[1:]
                row["time"] = {
                    "wall_ms": Stats.of([r["wall_s"] for r in timed]).to_ms(),
                    "cpu_ms": Stats.of([r["cpu_s"] for r in timed]).to_ms(),
                    "repeat": len(timed),
                    "warmup": 1,
                }
                memory = [r["peak_rss_growth_mb"] for r in runs if r.get("peak_rss_growth_mb") is not None]
                peaks = [r["peak_rss_mb"] for r in runs if r.get("peak_rss_mb") is not None]
                row["peak_rss_growth_mb"] = max(memory) if memory else None
                row["peak_rss_mb"] = max(peaks) if peaks else None
                # False where the peak could not be reset before the work (not Linux): the
                # growth is then measured from the peak the imports left.
                row["peak_reset"] = all(r.get("peak_reset") for r in runs)
            rows.append(row)
    progress("done", total, total)
    report: dict[str, Any] = {
        "experiment": NAME,
        "summary": SUMMARY,
        "ok": all(row["check"] for row in rows),
        "options": options_dict(options),
        "machine": machine,
        "elapsed_s": round(time.perf_counter() - started, 3),
        "save": {"bytes": len(data), "values": max(1, options.values // FIELDS) * FIELDS, "records": max(1, options.values // FIELDS), "edit": path},
        "skipped": skipped,
        "results": rows,
    }
    _ratios(report)
    report["goals"] = _goals(report)
    return report


def _seconds(row: dict[str, Any] | None, clock: str = "wall_ms") -> float | None:
    """The row's median time in seconds, wall clock or (`clock="cpu_ms"`) CPU."""
    if not row or not row.get("check") or "time" not in row:
        return None
    return float(row["time"][clock]["median"]) / 1e3


def _row(report: dict[str, Any], name: str) -> dict[str, Any] | None:
    for row in report["results"]:
        if row["peer"] == name and row.get("check"):
            return row
    return None


def _ratios(report: dict[str, Any]) -> None:
    """Each row's speed against each Py3AMF build of the run: its time over the row's
    (above 1: the row is faster), by the wall clock (`vs_py3amf`) and by CPU time
    (`vs_py3amf_cpu`, steadier when other processes take the cores)."""
    for row in report["results"]:
        for field, clock in (("vs_py3amf", "wall_ms"), ("vs_py3amf_cpu", "cpu_ms")):
            mine = _seconds(row, clock)
            if mine is None:
                continue
            row[field] = {}
            for key, name in (("pure", PURE), ("cython", CYTHON)):
                theirs = _seconds(_row(report, name), clock)
                row[field][key] = theirs / mine if theirs and mine else None


def _goals(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's goals, judged on sol.edit against the pure-Python Py3AMF of the run."""
    ours = _row(report, GOAL_PEER)
    seconds = _seconds(ours)
    if ours is None or seconds is None:
        return []
    save = report["save"]
    where = "" if save["values"] >= VALUES and save["bytes"] >= SIZE * 0.95 else f" (at {save['bytes'] / 1e6:.1f} MB; goals set at 10 MB)"
    goals = []
    ratio = (ours.get("vs_py3amf") or {}).get("pure")
    cpu_ratio = (ours.get("vs_py3amf_cpu") or {}).get("pure")
    if ratio and cpu_ratio:
        # Met when both clocks say so: on a loaded machine the wall clock's ratio moves
        # with what else runs, the CPU time's much less.
        goals.append({
            "goal": f"sol.edit at least {GOAL_FACTOR:g}x faster than Py3AMF's pyamf.sol (pure Python, as pip installs it; wall clock and CPU time){where}",
            "value": f"{fmt_factor(ratio)} (CPU time {fmt_factor(cpu_ratio)})",
            "met": min(ratio, cpu_ratio) >= GOAL_FACTOR,
        })  # fmt: skip
    goals.append({"goal": f"sol.edit under {GOAL_SECONDS:g} s{where}", "value": f"{fmt_figure(seconds)} s", "met": seconds < GOAL_SECONDS})
    growth = ours.get("peak_rss_growth_mb")
    if growth is not None:
        factor = growth * 2**20 / save["bytes"]
        goals.append({
            "goal": f"sol.edit's peak memory growth at most {GOAL_MEMORY_FACTOR:g}x the save's size{where}",
            "value": f"{fmt_figure(growth)} MB, {factor:.2f}x",
            "met": factor <= GOAL_MEMORY_FACTOR,
        })  # fmt: skip
    return goals


# --------------------------------------------------------------------------- report


def _time_cell(row: dict[str, Any]) -> str:
    t = row["time"]["wall_ms"]
    mark = "*" if waited(row["time"]) else ""
    return f"{mark}{fmt_figure(t['median'] / 1e3)} ({fmt_figure(t['min'] / 1e3)}-{fmt_figure(t['max'] / 1e3)})"


def _vs_cell(row: dict[str, Any], key: str) -> str:
    ratio = (row.get("vs_py3amf") or {}).get(key)
    if ratio is None:
        return "-"
    if abs(ratio - 1) < 1e-9:
        return "baseline"
    return than(ratio, "faster", "slower")


def _table_rows(report: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for row in report["results"]:
        if not row.get("check"):
            rows.append([row["peer"], row.get("codec", "-"), "-", "-", "-", "-", "-", "-", row.get("bytes_differing", "-"), f"FAILED {row.get('error', '')}"])
            continue
        growth, peak = row.get("peak_rss_growth_mb"), row.get("peak_rss_mb")
        rows.append([
            row["peer"],
            row["codec"],
            _time_cell(row),
            fmt_figure(row["time"]["cpu_ms"]["median"] / 1e3),
            "-" if growth is None else fmt_figure(growth),
            "-" if peak is None else fmt_figure(peak),
            _vs_cell(row, "pure"),
            _vs_cell(row, "cython"),
            row["bytes_differing"],
            "ok",
        ])  # fmt: skip
    return rows


HEADERS = ["peer", "codec", "seconds (min-max)", "CPU s", "peak memory +MB", "peak RSS MB", "vs Py3AMF pure", "vs Py3AMF Cython", "bytes differing", "check"]


def _intro(report: dict[str, Any]) -> str:
    save, o = report["save"], report["options"]
    return (
        f"A save of {save['bytes']:,} bytes holding {save['values']:,} values ({save['records']:,} records of ten: "
        f"ints, floats, a bool, short strings, a long text), written by amfkit as Flash Player writes AMF3, is loaded, "
        f"{save['edit']} set to 100, and the save written to another file. Every run is a child process of its own "
        f"(imports not timed, the collector left on, as in a program): a checked run first, then "
        f"{'the median of ' + str(o['repeat']) + ' timed runs (min-max)' if o['repeat'] > 1 else 'one timed run'}; "
        f"peak memory: the largest rise of the process's peak resident memory above its resident memory before the work, over the runs. "
        f"amfkit's files must equal the input but for the edited byte; Py3AMF's must read back as the edited save."
    )


def format_report(report: dict[str, Any]) -> str:
    lines = [f"amfkit bench saves: {_intro(report)}", ""]
    lines += text_table(HEADERS, _table_rows(report), set(range(2, len(HEADERS) - 1)))
    for skip in report.get("skipped", []):
        lines.append(f"not run: {skip['peer']}: {skip['reason']}")
    lines += ["", "goals (sol.edit against the pure-Python Py3AMF of the run):"]
    for g in report["goals"]:
        lines.append(f"  {g['goal']}: {g['value']}: {'met' if g['met'] else 'NOT met'}")
    lines += machine_lines(report)
    return "\n".join(lines)


def _findings(report: dict[str, Any]) -> list[str]:
    found = [f"{g['goal']}: {g['value']} ({'met' if g['met'] else 'NOT met'})." for g in report.get("goals", [])]
    ours, plain, cython = _row(report, GOAL_PEER), _row(report, "amfkit sol.load/dump"), _row(report, CYTHON)
    for row in (ours, plain):
        if row and cython and row.get("vs_py3amf", {}).get("cython"):
            found.append(f"{row['peer']} is {than(row['vs_py3amf']['cython'], 'faster', 'slower')} than Py3AMF's Cython build ({fmt_figure(_seconds(row) or 0)} against {fmt_figure(_seconds(cython) or 0)} s).")
    cpu = (ours or {}).get("vs_py3amf_cpu") or {}
    if cpu.get("pure"):
        cython_cpu = f", {fmt_factor(cpu['cython'])} than its Cython build" if cpu.get("cython") else ""
        found.append(f"By CPU time (steadier when other processes take the cores), sol.edit is {fmt_factor(cpu['pure'])} faster than the pure-Python Py3AMF{cython_cpu}.")
    if ours and plain:
        found.append(f"The lossless sol.edit takes {fmt_figure(_seconds(ours) or 0)} s, sol.load/dump {fmt_figure(_seconds(plain) or 0)} s; both wrote the input back but for the edited byte.")
    pure = _row(report, PURE)
    if pure:
        found.append(f"Py3AMF's file differs from the input in {pure['bytes_differing']:,} byte(s) and reads back as the edited save.")
    found += [f"{s['peer']}: not run: {s['reason']}." for s in report.get("skipped", [])]
    found += [f"{row['peer']} FAILED: {row.get('error', '')}" for row in report["results"] if not row.get("check")]
    return found


def sections(report: dict[str, Any]) -> list[Section]:
    good = [row for row in report["results"] if row.get("check") and "time" in row]

    def group(row: dict[str, Any]) -> str:
        return "amfkit" if row["peer"].startswith("amfkit") else row["peer"]

    def seconds_bar(row: dict[str, Any]) -> Bar:
        t = row["time"]["wall_ms"]
        return Bar(row["peer"], t["median"] / 1e3, t["min"] / 1e3, t["max"] / 1e3, group(row))

    charts = [Chart("seconds to load, edit once and write back (lower is better)", "seconds", [seconds_bar(row) for row in good], log=True)]
    memory = [row for row in good if row.get("peak_rss_growth_mb") is not None]
    if memory:
        charts.append(Chart("peak memory growth (lower is better)", "MB", [Bar(row["peer"], float(row["peak_rss_growth_mb"]), group=group(row)) for row in memory]))
    save = report["save"]
    return [
        Section(
            f"Big saves: {save['bytes'] / 1e6:.1f} MB, {save['values']:,} values, one edit",
            _intro(report),
            [Table(HEADERS, _table_rows(report))],
            charts,
            findings=_findings(report),
        )
    ]


# --------------------------------------------------------------------------- command line


def parse_options(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="amfkit bench saves", description=SUMMARY)
    p.add_argument("--quick", action="store_true", help=f"{QUICK_VALUES:,} values, {QUICK_SIZE / 1e6:g} MB, one timed run per peer (a correctness run)")
    p.add_argument("--values", type=int, help=f"values in the save (default {VALUES:,})")
    p.add_argument("--size", type=int, help=f"the save's size in bytes, about (default {SIZE:,})")
    p.add_argument("--repeat", type=int, help="timed runs per peer, after the checked one (default 3; 1 with --quick)")
    p.add_argument("--peers", default=",".join(p.key for p in PEERS), help="which peers, comma-separated (default all: " + ", ".join(p.key for p in PEERS) + ")")
    p.add_argument("--py3amf-python", metavar="PYTHON", help="the interpreter that runs Py3AMF's Cython build (one where it is built; docs/py3amf.md)")
    p.add_argument("--json", dest="json_path", help="write the report as JSON")
    a = p.parse_args(argv)
    known = [peer.key for peer in PEERS]
    chosen = tuple(s.strip() for s in a.peers.split(",") if s.strip())
    unknown = [k for k in chosen if k not in known]
    if unknown or not chosen:
        p.error(f"unknown peer(s) {', '.join(unknown) or '(none given)'} (choose from: {', '.join(known)})")
    values = a.values if a.values is not None else (QUICK_VALUES if a.quick else VALUES)
    size = a.size if a.size is not None else (QUICK_SIZE if a.quick else SIZE)
    repeat = a.repeat if a.repeat is not None else (1 if a.quick else 3)
    for name, value in (("--values", values), ("--size", size), ("--repeat", repeat)):
        if value < 1:
            p.error(f"{name} must be at least 1")
    if a.py3amf_python and "py3amf-cython" not in chosen:
        p.error("--py3amf-python runs the py3amf-cython peer, which --peers leaves out")
    return Options(values=values, size=size, repeat=repeat, quick=a.quick, peers=chosen, py3amf_python=a.py3amf_python, json_path=a.json_path)


def main(argv: list[str] | None = None) -> int:
    """`amfkit bench saves [options]`: print the report; 0 if every check passed, else 1."""
    return experiment_main(argv, parse_options, run, format_report)


if __name__ == "__main__":
    sys.exit(main())
