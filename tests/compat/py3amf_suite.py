"""Run Py3AMF's own test suite against amfkit's PyAMF door, and say how many pass.

Py3AMF's source distribution is fetched at run time (`pip download --no-binary :all:
--no-deps py3amf==VERSION`, into a temporary directory); nothing of it is kept in this
repository. Its suite is the one its `pyamf.tests.get_suite()` runs (the modules of
`DEFAULT_TEST_MODULES`, less `EXCLUDED_TEST_PREFIXES`), run twice in separate
processes:

- `reference`: against Py3AMF itself (its pure-Python modules, from the sdist), to know
  how many tests each module holds and that the suite runs here;
- `door`: `import pyamf` gives `amfkit.compat.pyamf` (`amfkit.compat.pyamf.install()`),
  and `pyamf.tests` is the sdist's. A module that cannot be imported through the door
  (it tests a part of PyAMF the door does not have: `pyamf.codec`, `pyamf.adapters`,
  the WSGI gateway, ...) counts as not applicable, with the tests the reference found
  in it.

    python tests/compat/py3amf_suite.py [--version 0.9.1] [--json report.json]

Prints one line per module and a total; exits 0 when both runs completed (the counts
are the result, not a verdict; tests/compat/test_py3amf_suite.py holds the floor).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.machinery
import json
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]


def fetch_sdist(version: str, where: pathlib.Path) -> pathlib.Path:
    """Download and unpack Py3AMF's source distribution; its top directory."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps",
         f"py3amf=={version}", "-d", str(where)],
        check=True,
        timeout=600,
    )
    (archive,) = where.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
        for m in members:
            target = (where / m.name).resolve()
            if not str(target).startswith(str(where.resolve())):
                raise RuntimeError(f"unsafe path in the archive: {m.name}")
        tar.extractall(where, members=members)
    (top,) = [p for p in where.iterdir() if p.is_dir()]
    return top


class _SdistTests(importlib.abc.MetaPathFinder):
    """`pyamf.tests...` (and `pyamf.adapters.tests...`) from the sdist, whatever `pyamf` is."""

    def __init__(self, sdist: pathlib.Path) -> None:
        self.sdist = sdist

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not (fullname == "pyamf.tests" or fullname.startswith("pyamf.tests.")):
            return None
        parts = fullname.split(".")
        where = self.sdist.joinpath(*parts[:-1])
        return importlib.machinery.PathFinder.find_spec(fullname, [str(where)])


def _block_cpyamf() -> None:
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
            if fullname == "cpyamf" or fullname.startswith("cpyamf."):
                raise ModuleNotFoundError(f"{fullname} is not used here (the pure-Python modules are)")
            return None

    sys.meta_path.insert(0, Block())


def run_suite(sdist: pathlib.Path, mode: str) -> dict[str, Any]:
    """Run the suite in this process; per module: tests, passed, failed, errors, skipped,
    or `import_error`."""
    _block_cpyamf()
    if mode == "reference":
        sys.path.insert(0, str(sdist))
    else:
        import amfkit.compat.pyamf

        amfkit.compat.pyamf.install()
        sys.meta_path.insert(0, _SdistTests(sdist))
    import pyamf.tests as suite_package  # the sdist's, in both modes

    loader = unittest.TestLoader()
    modules: dict[str, Any] = {}
    for name in suite_package.DEFAULT_TEST_MODULES:
        try:
            module = importlib.import_module(name)
        except Exception as e:  # the module does not import: the door lacks what it tests
            modules[name] = {"import_error": f"{type(e).__name__}: {e}"}
            continue
        tests = suite_package._filter_suite(loader.loadTestsFromModule(module))
        result = unittest.TestResult()
        started = time.perf_counter()
        tests.run(result)
        modules[name] = {
            "tests": result.testsRun,
            "passed": result.testsRun - len(result.failures) - len(result.errors) - len(result.skipped)
            - len(result.unexpectedSuccesses),
            "failed": len(result.failures) + len(result.unexpectedSuccesses),
            "errors": len(result.errors),
            "skipped": len(result.skipped),
            "seconds": round(time.perf_counter() - started, 3),
            "not_passing": sorted(t.id() for t, _ in result.failures + result.errors),
        }
    return {"mode": mode, "python": sys.version.split()[0], "modules": modules}


def summarize(reference: dict[str, Any], door: dict[str, Any]) -> dict[str, Any]:
    total = passed = failed = errors = skipped = not_applicable = 0
    lines = []
    for name, ref in reference["modules"].items():
        ref_tests = ref.get("tests", 0)
        total += ref_tests
        got = door["modules"].get(name, {"import_error": "not run"})
        if "import_error" in got:
            not_applicable += ref_tests
            lines.append(f"  {name}: {ref_tests} tests, not applicable ({got['import_error'][:90]})")
            continue
        passed += got["passed"]
        failed += got["failed"]
        errors += got["errors"]
        skipped += got["skipped"]
        lines.append(
            f"  {name}: {got['passed']}/{got['tests']} pass through the door "
            f"({got['failed']} fail, {got['errors']} errors, {got['skipped']} skipped; Py3AMF itself: "
            f"{ref.get('passed', 0)}/{ref_tests})"
        )
    reference_passed = sum(m.get("passed", 0) for m in reference["modules"].values())
    return {
        "tests": total,
        "reference_passed": reference_passed,
        "passed": passed,
        "failed": failed,
        "errors": errors,
        "skipped": skipped,
        "not_applicable": not_applicable,
        "lines": lines,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="run Py3AMF's own tests against amfkit's PyAMF door")
    parser.add_argument("--version", default="0.9.1", help="the py3amf release whose sdist to fetch")
    parser.add_argument("--sdist", type=pathlib.Path, help="an unpacked sdist to use instead of fetching one")
    parser.add_argument("--json", type=pathlib.Path, help="write the report here")
    parser.add_argument("--run", choices=("reference", "door"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:  # one run, in a child process: print its JSON
        print(json.dumps(run_suite(args.sdist, args.run)))
        return 0
    with tempfile.TemporaryDirectory(prefix="py3amf-sdist-") as tmp:
        sdist = args.sdist or fetch_sdist(args.version, pathlib.Path(tmp))
        runs = {}
        for mode in ("reference", "door"):
            r = subprocess.run(
                [sys.executable, __file__, "--run", mode, "--sdist", str(sdist)],
                capture_output=True,
                text=True,
                timeout=1200,
                cwd=tempfile.gettempdir(),
            )
            if r.returncode != 0:
                print(r.stdout[-3000:], r.stderr[-3000:], file=sys.stderr)
                print(f"error: the {mode} run did not complete", file=sys.stderr)
                return 1
            runs[mode] = json.loads(r.stdout.strip().splitlines()[-1])
    report = summarize(runs["reference"], runs["door"])
    report["version"] = args.version
    report["runs"] = runs
    print(f"Py3AMF {args.version}'s own test suite against amfkit.compat.pyamf (CPython {runs['door']['python']}):")
    print("\n".join(report["lines"]))
    applicable = report["tests"] - report["not_applicable"]
    print(
        f"total: {report['passed']} of {report['tests']} tests pass through the door ({report['passed']} of the "
        f"{applicable} in modules the door can import; {report['not_applicable']} test parts of PyAMF it does not "
        f"have); Py3AMF itself passes {report['reference_passed']}"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
