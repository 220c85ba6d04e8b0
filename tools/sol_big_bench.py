#!/usr/bin/env python3
"""Big saves: a .sol file of about 10 MB and 200,000 values is loaded, takes one edit and
is written back to another file, by amfkit and by Py3AMF's `pyamf.sol` in the same run,
each in a child process of its own (time and peak memory).

    .venv/bin/python tools/sol_big_bench.py                 # 200,000 values, 10 MB
    .venv/bin/python tools/sol_big_bench.py --quick         # 20,000 values, 1 MB
    .venv/bin/python tools/sol_big_bench.py --json out/sol-big.json
    .venv/bin/python tools/sol_big_bench.py --py3amf-python /tmp/py3amf-cy-venv/bin/python

`--py3amf-python` runs Py3AMF under another interpreter, such as a virtual environment
where Py3AMF's Cython extension is built (docs/py3amf.md, "Cython extension"); the
figures say which codec Py3AMF used.

amfkit is measured twice: `amfkit.sol.edit` (a lossless read, which keeps how every
object was written) and `sol.load`/`sol.dump` (the ordinary read). amfkit's writes are
checked byte for byte: only the edited value's bytes differ from the input. The save is
written once by amfkit's encoder, as Flash Player writes AMF3 (strings and traits
referenced). `run()` returns the figures as a dict, for `amfkit bench` to take later;
`build_save()` makes the file (tests/saves/test_sol_big.py uses both in a quick form).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from typing import Any

VALUES = 200_000
SIZE = 10_000_000
FIELDS = 10  # values per record
EDIT_RECORD = 12_345  # the record edited (its "hp"), when there are that many


def build_save(values: int = VALUES, size: int = SIZE, *, seed: int = 28) -> bytes:
    """An AMF3 save of `values` values (records of ten: ints, floats, a bool, short
    strings, a long text) filling about `size` bytes, written by amfkit's encoder."""
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
        })
    return sol.dumps(sol.SOL("bigsave", {"version": 3, "world": world}))


def edit_path(values: int) -> tuple[int, str]:
    records = max(1, values // FIELDS)
    index = EDIT_RECORD if records > EDIT_RECORD else records // 2
    return index, f"world[{index}].hp"


# -- the measured work, one per child process ----------------------------------------


def _amfkit_lossless(src: str, dst: str, index: int) -> None:
    from amfkit import sol

    save = sol.edit(src)
    save[f"world[{index}].hp"] = 100
    save.dump(dst)


def _amfkit_plain(src: str, dst: str, index: int) -> None:
    from amfkit import sol

    shared = sol.load(src)
    shared["world"][index]["hp"] = 100
    sol.dump(shared, dst)


def _py3amf(src: str, dst: str, index: int) -> None:
    import warnings

    import pyamf.sol

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        shared = pyamf.sol.load(src)
        shared["world"][index]["hp"] = 100
        pyamf.sol.save(shared, dst, encoding=3)


WORK = {"amfkit sol.edit (lossless)": _amfkit_lossless, "amfkit sol.load/dump": _amfkit_plain, "Py3AMF pyamf.sol": _py3amf}


def _child(name: str, src: str, dst: str, index: int) -> dict[str, Any]:
    """Run one piece of work in this process: wall time and peak RSS growth."""
    import resource

    # Import what the work imports first, so that its cost is not timed.
    if name.startswith("amfkit"):
        import amfkit.sol  # noqa: F401
        import amfkit.soledit  # noqa: F401
    else:
        import pyamf.sol  # noqa: F401
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    WORK[name](src, dst, index)
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out: dict[str, Any] = {"seconds": seconds, "peak_rss_growth_mb": (peak - base) / 1024}
    if not name.startswith("amfkit"):
        out["py3amf_cython"] = _py3amf_ext()
    return out


def measure(name: str, src: str, dst: str, index: int, python: str | None = None) -> dict[str, Any]:
    """`name`'s work in a fresh child process (a clean heap, a peak of its own), run by
    `python` (default: this interpreter)."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = (
        f"import json, sys; sys.path.insert(0, {here!r}); import sol_big_bench as b; "
        f"print(json.dumps(b._child({name!r}, {src!r}, {dst!r}, {index})))"
    )
    r = subprocess.run([python or sys.executable, "-c", code], capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise RuntimeError(f"{name} failed: {r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _py3amf_ext() -> bool:
    try:
        import cpyamf.amf3  # noqa: F401
    except ImportError:
        return False
    return True


def run(
    values: int = VALUES, size: int = SIZE, *, repeat: int = 3, peers: bool = True, py3amf_python: str | None = None
) -> dict[str, Any]:
    """Build the save, then measure each piece of work `repeat` times (the best time and
    the largest peak kept); check amfkit's outputs byte for byte. Py3AMF runs under
    `py3amf_python` when given."""
    data = build_save(values, size)
    index, path = edit_path(values)
    out: dict[str, Any] = {
        "values": max(1, values // FIELDS) * FIELDS,
        "bytes": len(data),
        "edit": path,
        "results": {},
    }
    with tempfile.TemporaryDirectory(prefix="amfkit-sol-big-") as tmp:
        src = os.path.join(tmp, "big.sol")
        with open(src, "wb") as f:
            f.write(data)
        for name in WORK:
            if name.startswith("Py3AMF") and not peers:
                continue
            dst = os.path.join(tmp, "out.sol")
            python = py3amf_python if name.startswith("Py3AMF") else None
            runs = [measure(name, src, dst, index, python) for _ in range(repeat)]
            with open(dst, "rb") as f:
                written = f.read()
            diff = sum(1 for a, b in zip(data, written) if a != b) + abs(len(data) - len(written))
            out["results"][name] = {
                "seconds": min(r["seconds"] for r in runs),
                "peak_rss_growth_mb": max(r["peak_rss_growth_mb"] for r in runs),
                "bytes_written": len(written),
                "bytes_differing": diff,
            }
            if "py3amf_cython" in runs[0]:
                out["py3amf_cython"] = runs[0]["py3amf_cython"]
    py3 = out["results"].get("Py3AMF pyamf.sol")
    if py3:
        for name, r in out["results"].items():
            r["x_faster_than_py3amf"] = py3["seconds"] / r["seconds"]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="20,000 values, 1 MB, one run each")
    p.add_argument("--values", type=int, default=None)
    p.add_argument("--size", type=int, default=None)
    p.add_argument("--repeat", type=int, default=None)
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    p.add_argument("--py3amf-python", metavar="PYTHON", help="the interpreter that runs Py3AMF (one with its Cython extension, say)")
    args = p.parse_args(argv)
    values = args.values or (20_000 if args.quick else VALUES)
    size = args.size or (1_000_000 if args.quick else SIZE)
    repeat = args.repeat or (1 if args.quick else 3)
    result = run(values, size, repeat=repeat, py3amf_python=args.py3amf_python)
    print(f"save: {result['bytes']:,} bytes, {result['values']:,} values; edit {result['edit']}; "
          f"Py3AMF's Cython extension: {'yes' if result.get('py3amf_cython') else 'no (pure Python)'}")
    print(f"{'':30} {'seconds':>9} {'peak RSS +MB':>13} {'x Py3AMF':>9} {'bytes differing':>16}")
    for name, r in result["results"].items():
        print(f"{name:30} {r['seconds']:9.3f} {r['peak_rss_growth_mb']:13.1f} {r.get('x_faster_than_py3amf', 0):9.1f} {r['bytes_differing']:16,}")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
