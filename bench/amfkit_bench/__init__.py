"""benchlab: amfkit's benchmark experiments, measured against the peers in one run.

    amfkit bench --list
    amfkit bench codec --quick
    python -m amfkit_bench.codec --size 50000 --graphs complex

The experiments reproduce published articles about AMF's speed and size;
docs/benchmarks.md names them (title, year, what they measured), and the code and the
reports call them by the short names defined there ("the PyAMF speed article").

An experiment is one module in this package with the same small shape:

- `NAME`, `ARTICLE` (the article it reproduces, when it does) and `SUMMARY` (one line
  for `--list`);
- `Options`, a dataclass of what to run, and `parse_options(argv) -> Options`;
- `run(options) -> dict`: set up the variants, check each one's output for correctness,
  then time it (`benchlab.timing`), and return a JSON-ready report whose `"ok"` says
  whether every check passed and whose `"results"` holds one row per measured case;
- `format_report(report) -> str`: the plain-text table;
- `sections(report) -> list[model.Section]`: tables, charts, the article's own figures
  and findings computed from the run, for the HTML report and docs/benchmarks.md;
- `main(argv) -> int`: the command line (0 when every check passed);
- optionally `COMPARE_KEYS` (the fields that identify a row for `compare`) and an
  `Options.progress(message, done=None, total=None)` callback for progress bars.

What the experiments share, written once: `timing` (how to measure, the machine facts),
`peers` (the peer libraries' versions, Py3AMF, class registration for a run),
`amfkit.diff` (the one graph comparison, also used by the demo and the tests), `text`
(figures, cells and tables as text) and `model` (the report's sections, ratios, JSON,
the command line). `runner` runs several experiments (`amfkit bench`), `report` renders
one self-contained HTML file, `compare` prints what got faster or slower between two
results files, and `markdown` writes docs/benchmarks.md's Results section from a
results file.

Adding an experiment is that module plus one line in `EXPERIMENTS` below. The registry
maps names to module paths, imported on first use, so `--list` (and importing amfkit)
never imports a peer library.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

__all__ = ["EXPERIMENTS", "experiment", "main", "names"]

#: Experiment name -> module implementing it (see the module docstring for its shape).
EXPERIMENTS: dict[str, str] = {
    "codec": "amfkit_bench.codec",
    "tiles": "amfkit_bench.tiles",
    "instruments": "amfkit_bench.instruments",
    "gateway": "amfkit_bench.gateway",
    "messaging": "amfkit_bench.messaging",
    "assets": "amfkit_bench.assets",
}


def names() -> list[str]:
    """The registered experiment names, in registration order."""
    return list(EXPERIMENTS)


def experiment(name: str) -> ModuleType:
    """The module of experiment `name`; `KeyError` naming the choices if it is unknown."""
    try:
        path = EXPERIMENTS[name]
    except KeyError:
        raise KeyError(f"unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}") from None
    return importlib.import_module(path)


def main(argv: list[str] | None = None) -> int:
    """`amfkit bench [EXPERIMENT ...] [options]`, `--list`, `compare A B`: see `amfkit_bench.runner`."""
    from .runner import main as run_main

    return run_main(list(sys.argv[1:] if argv is None else argv))
