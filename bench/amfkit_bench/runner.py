"""`amfkit bench [EXPERIMENT ...] [options]`: runs several experiments in one go with
progress bars, prints their text reports and a summary, and writes the results file and
the HTML report (docs/benchmarks.md, "Running the benchmarks").
"""

from __future__ import annotations

import shlex
import sys
import time
import traceback
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Protocol

from . import EXPERIMENTS
from .model import write_json
from .results import build_results
from .timing import machine_facts

__all__ = ["Plan", "UsageError", "main", "plan", "run_plans", "summary"]

FINDINGS_IN_SUMMARY = 6

USAGE = """usage: amfkit bench [EXPERIMENT ...] [--quick] [experiment options]
                    [--json PATH] [--report PATH] [--NAME-args "ARGS"] [--quiet]
       amfkit bench --list
       amfkit bench compare A.json B.json [--threshold 0.1]"""


class UsageError(Exception):
    """A bad command line (exit status 2)."""


class LoadError(Exception):
    """An experiment module could not be imported (exit status 1)."""


@dataclass
class Plan:
    """One experiment to run: its module, the arguments it gets, and its parsed options."""

    name: str
    module: ModuleType
    argv: list[str]
    options: Any = None

    @property
    def legacy(self) -> bool:
        """A module with only `main(argv)`: it is run through its own command line."""
        return not (hasattr(self.module, "run") and hasattr(self.module, "parse_options"))


# --------------------------------------------------------------------------- command line


@dataclass
class Arguments:
    names: list[str]
    common: list[str]
    extra: dict[str, list[str]] = field(default_factory=dict)
    json_path: str | None = None
    report_path: str | None = None
    quiet: bool = False


def parse_arguments(argv: list[str]) -> Arguments:
    """Split the command line into experiment names, the runner's options and the rest."""
    names: list[str] = []
    index = 0
    while index < len(argv) and not argv[index].startswith("-"):
        name = argv[index]
        if name not in EXPERIMENTS:
            raise UsageError(f"unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}")
        if name not in names:
            names.append(name)
        index += 1
    args = Arguments(names=names or list(EXPERIMENTS), common=[])
    rest = argv[index:]
    index = 0

    def value(option: str, inline: str | None) -> str:
        nonlocal index
        if inline is not None:
            return inline
        if index + 1 >= len(rest):
            raise UsageError(f"{option} needs a value")
        index += 1
        return rest[index]

    while index < len(rest):
        arg = rest[index]
        option, _, inline_value = arg.partition("=")
        inline = inline_value if "=" in arg else None
        if option == "--json":
            args.json_path = value(option, inline)
        elif option == "--report":
            args.report_path = value(option, inline)
        elif arg in ("--quiet", "--no-progress"):
            args.quiet = True
        elif option.startswith("--") and option.endswith("-args") and option[2:-5] in EXPERIMENTS:
            name = option[2:-5]
            if name not in args.names:
                raise UsageError(f"{option} given, but {name} is not among the experiments run ({', '.join(args.names)})")
            args.extra.setdefault(name, []).extend(shlex.split(value(option, inline)))
        else:
            args.common.append(arg)
        index += 1
    return args


def load(name: str) -> ModuleType:
    """Import experiment `name`'s module; `LoadError` with a hint when it cannot be."""
    import importlib

    path = EXPERIMENTS[name]
    try:
        return importlib.import_module(path)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or ""
        hint = ""
        if missing and not missing.startswith("amfkit"):
            hint = " (the lab needs its peers: pip install amfkit-bench, or `make venv` in a checkout)"
        raise LoadError(f"cannot load {path}: {exc}{hint}") from None


def plan(names: list[str], common: list[str], extra: dict[str, list[str]] | None = None) -> list[Plan]:
    """Load each experiment and parse its options (`UsageError` naming the experiment that
    refused an argument)."""
    plans = []
    for name in names:
        module = load(name)
        argv = list(common) + list((extra or {}).get(name, []))
        item = Plan(name, module, argv)
        if not item.legacy:
            try:
                item.options = module.parse_options(argv)
            except SystemExit as exc:  # argparse has printed why
                if exc.code in (0, None):
                    raise
                raise UsageError(
                    f"{name} refused {shlex.join(argv) or 'its arguments'}; "
                    f"give one experiment's options with --{name}-args \"...\" "
                    f"(`amfkit bench {name} --help` lists them)"
                ) from None
        plans.append(item)
    return plans


# --------------------------------------------------------------------------- progress


class Progress(Protocol):
    def start(self, name: str) -> None: ...
    def step(self, name: str, message: str, done: int | None, total: int | None) -> None: ...
    def finish(self, name: str, ok: bool, elapsed: float) -> None: ...


class _Silent:
    def start(self, name: str) -> None:
        pass

    def step(self, name: str, message: str, done: int | None, total: int | None) -> None:
        pass

    def finish(self, name: str, ok: bool, elapsed: float) -> None:
        pass


class _Lines:
    """One line per experiment start and end on standard error (not a terminal)."""

    def start(self, name: str) -> None:
        print(f"bench: {name} ...", file=sys.stderr, flush=True)

    def step(self, name: str, message: str, done: int | None, total: int | None) -> None:
        pass

    def finish(self, name: str, ok: bool, elapsed: float) -> None:
        print(f"bench: {name} {'ok' if ok else 'FAILED'} in {elapsed:.1f} s", file=sys.stderr, flush=True)


class _Bars:
    """rich progress bars on standard error: one row per experiment, showing its current variant."""

    def __init__(self, names: list[str]) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(finished_text="[green]✓"),
            TextColumn("[bold]{task.fields[name]:<12}"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[step]}", markup=False),
            console=Console(stderr=True),
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.tasks = {name: self.progress.add_task(name, name=name, step="waiting", total=None, start=False) for name in names}
        self.done = {name: 0 for name in names}

    def __enter__(self) -> "_Bars":
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def start(self, name: str) -> None:
        self.progress.start_task(self.tasks[name])
        self.progress.update(self.tasks[name], step="starting")

    def step(self, name: str, message: str, done: int | None, total: int | None) -> None:
        self.done[name] = done if done is not None else self.done[name] + 1
        self.progress.update(self.tasks[name], completed=self.done[name], total=total, step=message[:70])

    def finish(self, name: str, ok: bool, elapsed: float) -> None:
        steps = max(self.done[name], 1)
        self.progress.update(
            self.tasks[name], completed=steps, total=steps, step=f"{'ok' if ok else 'FAILED'} in {elapsed:.1f} s"
        )
        self.progress.stop_task(self.tasks[name])


# --------------------------------------------------------------------------- running


def _progress_callback(progress: Progress, name: str) -> Callable[..., None]:
    def report(message: str, done: int | None = None, total: int | None = None) -> None:
        progress.step(name, str(message), done, total)

    return report


def run_plans(plans: list[Plan], progress: Progress | None = None, *, command: str | None = None) -> dict[str, Any]:
    """Run every plan in turn; return the results dict (see `build_results`)."""
    progress = progress or _Silent()
    machine = machine_facts()  # the load average before anything ran
    reports: dict[str, dict[str, Any]] = {}
    runs: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for item in plans:
        progress.start(item.name)
        t0 = time.perf_counter()
        if item.legacy:
            report = _run_legacy(item)
        else:
            if hasattr(item.options, "progress"):
                item.options.progress = _progress_callback(progress, item.name)
            try:
                report = item.module.run(item.options)
            except Exception as exc:  # noqa: BLE001 - one experiment's failure is a result
                traceback.print_exc(file=sys.stderr)
                report = {"experiment": item.name, "ok": False, "error": f"{type(exc).__name__}: {exc}", "results": []}
            finally:
                if hasattr(item.options, "progress"):
                    item.options.progress = None
        elapsed = time.perf_counter() - t0
        runs[item.name] = {"argv": item.argv, "elapsed_s": round(elapsed, 3), "ok": bool(report.get("ok"))}
        reports[item.name] = report
        progress.finish(item.name, bool(report.get("ok")), elapsed)
    return build_results(reports, runs, machine=machine, command=command, elapsed=time.perf_counter() - started)


def _run_legacy(item: Plan) -> dict[str, Any]:
    code = _legacy_status(item)
    return {"experiment": item.name, "ok": code == 0, "exit_status": code, "results": []}


# --------------------------------------------------------------------------- text output


def findings(name: str, report: dict[str, Any], limit: int = FINDINGS_IN_SUMMARY) -> tuple[list[str], int]:
    """The experiment's key findings (`report.key_findings`) and how many it has in all."""
    from .report import experiment_sections, key_findings

    sections = experiment_sections(name, report)
    total = len({f for section in sections for f in section.findings})
    return key_findings(sections, limit), total


def summary(results: dict[str, Any], *, limit: int = FINDINGS_IN_SUMMARY) -> str:
    """A few lines: each experiment's status and time, and its first findings."""
    experiments = results["experiments"]
    runs = results.get("runs") or {}
    total = results.get("elapsed_s")
    state = "every check passed" if results.get("ok") else "some experiments FAILED"
    took = f", {total:.1f} s" if isinstance(total, (int, float)) else ""
    lines = [f"summary: {len(experiments)} experiment(s), {state}{took}"]
    width = max((len(name) for name in experiments), default=0)
    for name, report in experiments.items():
        elapsed = (runs.get(name) or {}).get("elapsed_s", report.get("elapsed_s"))
        took = f"{elapsed:7.1f} s" if isinstance(elapsed, (int, float)) else ""
        lines.append(f"  {name:<{width}}  {'ok' if report.get('ok') else 'FAILED':6}  {took}")
        if report.get("error"):
            lines.append(f"      error: {report['error']}")
        items, count = findings(name, report, limit)
        for item in items:
            lines.append(f"      - {item}")
        if count > len(items):
            lines.append(f"      ({count - len(items)} more findings: see the HTML report, --report PATH)")
    return "\n".join(lines)


def _text_report(item: Plan, report: dict[str, Any]) -> str:
    if report.get("error"):
        return f"{item.name}: FAILED: {report['error']}"
    if item.legacy:
        return ""
    from .report import text_report

    return text_report(item.name, report)


def _list(indent: str = "") -> None:
    for name in EXPERIMENTS:
        try:
            summary_line = getattr(load(name), "SUMMARY", "")
        except LoadError as exc:
            summary_line = f"({exc})"
        print(f"{indent}{name:12}  {summary_line}")


HELP = """
Runs the experiments (all of them when none is named) one after another in this process,
with a progress bar per experiment, then prints each one's text report and a summary of
the findings. Exit status 0 when every experiment ran and passed its correctness checks.

options:
  --quick             a short correctness run (each experiment's own --quick)
  --json PATH         write the results: every experiment's figures, the machine facts and
                      versions (read by `amfkit bench compare` and the docs generator)
  --report PATH       write the HTML report: one self-contained file, tables and charts
  --NAME-args "ARGS"  options for experiment NAME only: --codec-args "--size 50000"
  --quiet             no progress display
  any other option goes to every experiment named (`amfkit bench NAME --help`)
"""


def _help() -> None:
    print(USAGE)
    print(HELP)
    print("experiments:")
    _list(indent="  ")


def main(argv: list[str] | None = None) -> int:
    """`amfkit bench ...`: see the module docstring. Returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["compare"]:
        from .compare import main as compare_main

        return compare_main(args[1:])
    if args[:1] in (["--list"], ["-l"]):
        _list()
        return 0
    try:
        parsed = parse_arguments(args)
        if any(arg in ("-h", "--help") for arg in parsed.common):
            if len(parsed.names) == 1 and len(args) > 0 and not args[0].startswith("-"):
                plan(parsed.names, ["--help"])  # the experiment's argparse prints its help
            _help()
            return 0
        plans = plan(parsed.names, parsed.common, parsed.extra)
    except UsageError as exc:
        print(f"amfkit bench: {exc}", file=sys.stderr)
        print(USAGE, file=sys.stderr)
        return 2
    except LoadError as exc:
        print(f"amfkit bench: {exc}", file=sys.stderr)
        return 1
    except SystemExit as exc:  # an experiment's --help
        return exc.code if isinstance(exc.code, int) else 0
    if len(plans) == 1 and plans[0].legacy:
        return _legacy_status(plans[0])

    command = "amfkit bench " + shlex.join(args) if args else "amfkit bench"
    interactive = not parsed.quiet and sys.stderr.isatty()
    if interactive:
        with _Bars([p.name for p in plans]) as bars:
            results = run_plans(plans, bars, command=command)
    else:
        results = run_plans(plans, _Silent() if parsed.quiet else _Lines(), command=command)

    if parsed.json_path:  # first: a long run's figures must survive whatever follows
        write_json(results, parsed.json_path)
    for item in plans:
        text = _text_report(item, results["experiments"][item.name])
        if text:
            print(text)
            print()
    print(summary(results))
    if parsed.json_path:
        print(f"results: {parsed.json_path}")
    if parsed.report_path:
        from .report import write_html

        write_html(results, parsed.report_path)
        print(f"report: {parsed.report_path}")
    return 0 if results["ok"] else 1


def _legacy_status(item: Plan) -> int:
    try:
        status = item.module.main(list(item.argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    sys.exit(main())
