"""The work `amfkit bench saves` times, one piece per child process: a save is loaded, one
value set, and the save written to another file, by amfkit or by Py3AMF's `pyamf.sol`;
the time, the CPU time and the peak memory are printed as one line of JSON.

`saves.py` runs this file's text as `python -c TEXT WORK SRC DST INDEX`, so that any
interpreter can run it (one where Py3AMF's Cython extension is built, too): it imports the
standard library and the library it measures, nothing of the lab's. Its memory helpers
(`reset_peak`, `peak_rss_mb`, `status_mb`) serve the lab's other child processes too
(`capture_work`, `forms_work`).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable, TypeVar


T = TypeVar("T")

def amfkit_edit(src: str, dst: str, index: int) -> None:
    """`amfkit.sol.edit`: the lossless read, which keeps how every value was written."""
    from amfkit import sol

    save = sol.edit(src)
    save[f"world[{index}].hp"] = 100
    save.dump(dst)


def amfkit_load_dump(src: str, dst: str, index: int) -> None:
    """`amfkit.sol.load` and `sol.dump`: the ordinary read into Python values."""
    from amfkit import sol

    shared = sol.load(src)
    shared["world"][index]["hp"] = 100
    sol.dump(shared, dst)


def py3amf(src: str, dst: str, index: int) -> None:
    """Py3AMF's `pyamf.sol.load` and `pyamf.sol.save`, AMF3 as the save was written."""
    import importlib
    import warnings

    pyamf_sol = importlib.import_module("pyamf.sol")  # a peer: untyped, imported by name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        shared = pyamf_sol.load(src)
        shared["world"][index]["hp"] = 100
        pyamf_sol.save(shared, dst, encoding=3)


#: Work name -> the function timed. "py3amf-pure" is `py3amf` with Py3AMF's Cython
#: extension hidden, so that it runs in pure Python wherever the extension is built.
WORK: dict[str, Callable[[str, str, int], None]] = {
    "amfkit-edit": amfkit_edit,
    "amfkit-load-dump": amfkit_load_dump,
    "py3amf-pure": py3amf,
    "py3amf": py3amf,
}


def _library(work: str) -> dict[str, Any]:
    """Import what the work imports (so that importing is not timed); say which library
    and codec run it."""
    if work.startswith("amfkit"):
        import amfkit
        import amfkit.sol
        import amfkit.soledit  # noqa: F401

        return {"library": "amfkit", "version": getattr(amfkit, "__version__", None), "codec": "amfkit"}
    import importlib
    from importlib import metadata

    pyamf = importlib.import_module("pyamf")
    importlib.import_module("pyamf.sol")

    try:
        version: str | None = metadata.version("py3amf")
    except metadata.PackageNotFoundError:
        version = None
    # The module Py3AMF's decoders and encoders take for AMF3: cpyamf.amf3 when the
    # Cython extension is used, pyamf.amf3 in pure Python.
    return {"library": "py3amf", "version": version, "codec": pyamf._get_amf_module(3).__name__}


def status_mb(field: str) -> float | None:
    """A size from /proc/self/status (Linux), in MiB; None elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 2**10  # kB
    except OSError:
        pass
    return None


def reset_peak() -> bool:
    """Reset this process's peak resident memory to its current (Linux 4.0 and later):
    the peak read after the work is then the work's, not the imports'."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return status_mb("VmHWM") is not None


def peak_rss_mb() -> float | None:
    """The process's peak resident memory: VmHWM where /proc has it, else getrusage's."""
    peak = status_mb("VmHWM")
    if peak is not None:
        return peak
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    peak_units = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak_units / 2**20 if sys.platform == "darwin" else peak_units / 2**10  # bytes there, KiB elsewhere


def timed(work: Callable[[], T]) -> tuple[T, dict[str, Any]]:
    """Call `work` once: what it returns, and its wall and CPU seconds, the peak resident
    memory during it and how far that peak rose above the resident memory before it (the
    imports' own peak left out where the peak can be reset)."""
    reset = reset_peak()
    before = status_mb("VmRSS") if reset else peak_rss_mb()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = work()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    peak = peak_rss_mb()
    return result, {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": peak,
        "peak_rss_growth_mb": None if peak is None or before is None else peak - before,
        "peak_reset": reset,
    }


def measure(work: str, src: str, dst: str, index: int) -> dict[str, Any]:
    """Run `work` once in this process: its wall and CPU seconds, this process's peak
    resident memory during it, and how much above the resident memory before it that
    peak was (the imports' own peak left out where the peak can be reset)."""
    if work == "py3amf-pure":
        sys.modules["cpyamf"] = None  # type: ignore[assignment]  # import cpyamf fails: Py3AMF falls back to pure Python
    facts = _library(work)
    _, figures = timed(lambda: WORK[work](src, dst, index))
    return {**facts, **figures, "python": sys.version.split()[0]}


def main(argv: list[str]) -> int:
    work, src, dst, index = argv
    if work not in WORK:
        print(f"unknown work {work!r}; choose from {', '.join(WORK)}", file=sys.stderr)
        return 2
    print(json.dumps(measure(work, src, dst, int(index))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
