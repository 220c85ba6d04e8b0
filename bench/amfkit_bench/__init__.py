"""amfkit-bench: the benchmark lab behind `amfkit bench` (docs/benchmarks.md).

`EXPERIMENTS` maps each experiment's name to its module, imported on first use, so that
`--list` imports no peer library. docs/benchmarks.md, "The lab's code", gives the shape
of an experiment module; adding one is that module and a line here.
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
    "saves": "amfkit_bench.saves",
    "capture": "amfkit_bench.capture",
    "forms": "amfkit_bench.forms",
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
