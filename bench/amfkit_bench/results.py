"""The results file of `amfkit bench --json`: every experiment's report, the machine facts
and versions, how each experiment ran; built here, read back by `compare`, `markdown` and
`report` (docs/benchmarks.md, "The lab's code")."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

from .timing import machine_facts

__all__ = ["RESULTS_FORMAT", "build_results", "load_results", "normalize"]

#: Bumped when the results file changes shape incompatibly. 2: the articles' own figures
#: are under "article_figures" (and the tiles' computed rows under "ready.article"), no
#: longer "seed"; `normalize` reads files of format 1 as format 2.
RESULTS_FORMAT = 2


def build_results(
    reports: dict[str, dict[str, Any]],
    runs: dict[str, dict[str, Any]] | None = None,
    *,
    machine: dict[str, Any] | None = None,
    command: str | None = None,
    elapsed: float | None = None,
) -> dict[str, Any]:
    """The results file's content: the format and version stamp, the machine facts, every
    experiment's report as its `run()` returned it, and how each was run."""
    machine = dict(machine or machine_facts())
    versions = dict(machine.get("versions") or {})
    for report in reports.values():  # the experiments know their peers' versions
        for name, version in ((report.get("machine") or {}).get("versions") or {}).items():
            if version and name not in versions:
                versions[name] = version
    amfkit_version = _amfkit_version()
    versions.setdefault("amfkit", amfkit_version)
    machine["versions"] = versions
    return {
        "format": "amfkit-bench-results",
        "format_version": RESULTS_FORMAT,
        "amfkit_version": amfkit_version,
        "git_commit": _git_commit(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": command,
        "ok": all(bool(report.get("ok")) for report in reports.values()),
        "elapsed_s": round(elapsed, 3) if elapsed is not None else None,
        "machine": machine,
        "runs": runs or {},
        "experiments": reports,
    }


def _amfkit_version() -> str | None:
    try:
        import amfkit

        return str(amfkit.__version__)
    except Exception:  # noqa: BLE001 - a stamp, never a reason to fail
        return None


def _git_commit() -> str | None:
    """The checkout's commit when amfkit runs from one (a stamp for comparing runs)."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


def normalize(data: Any) -> dict[str, Any]:
    """A results dict from a results file, or from one experiment's own `--json` output
    (`python -m amfkit_bench.codec --json x.json`), which is wrapped as a run of one."""
    if isinstance(data, dict) and isinstance(data.get("experiments"), dict):
        for report in data["experiments"].values():
            _upgrade(report)
        if data.get("format_version") == 1:
            data["format_version"] = RESULTS_FORMAT
        return data
    if isinstance(data, dict) and isinstance(data.get("experiment"), str):
        name = data["experiment"]
        _upgrade(data)
        return {
            "format": "amfkit-bench-results",
            "format_version": RESULTS_FORMAT,
            "amfkit_version": ((data.get("machine") or {}).get("versions") or {}).get("amfkit"),
            "git_commit": None,
            "created": (data.get("machine") or {}).get("time"),
            "command": None,
            "ok": bool(data.get("ok")),
            "elapsed_s": data.get("elapsed_s"),
            "machine": data.get("machine") or {},
            "runs": {},
            "experiments": {name: data},
        }
    raise ValueError("not amfkit bench results (neither a results file nor one experiment's report)")


def _upgrade(report: Any) -> None:
    """An experiment's report of format 1 in the names of format 2, in place."""
    if not isinstance(report, dict):
        return
    if "seed" in report and "article_figures" not in report:
        report["article_figures"] = report.pop("seed")
    ready = report.get("ready")
    if isinstance(ready, dict):
        for old, new in (("seed", "article"), ("seed_model", "article_model")):
            if old in ready and new not in ready:
                ready[new] = ready.pop(old)


def load_results(path: str) -> dict[str, Any]:
    """Read a results file (or one experiment's JSON report) as a results dict."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    try:
        return normalize(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
