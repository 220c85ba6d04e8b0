"""The CPython interpreters of the versions amfkit supports, as found on this machine.

The supported versions are the `Programming Language :: Python :: 3.X` classifiers of
pyproject.toml (one list, the one PyPI shows). Each is looked for as `python3.X` on PATH
and then under pyenv's root (`$PYENV_ROOT/versions/3.X.*`, newest patch release first); a
candidate counts only when it runs and reports that version (a pyenv shim for a version
that is not selected does not).

    python tests/pythons/interpreters.py              # every supported version: "3.10 /path/to/python3.10"
    python tests/pythons/interpreters.py --ends       # the oldest and the newest only
    python tests/pythons/interpreters.py 3.10 3.12    # these only
    python tests/pythons/interpreters.py --found      # those found; the missing ones named, no failure
    python tests/pythons/interpreters.py --supported  # the supported versions, one a line (none looked for)

Exits 1, naming what is missing and how to get it, when a version asked for is not found.
Runs on any Python 3.9+ without amfkit (the Makefile calls it before anything is built).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLASSIFIER = re.compile(r'"Programming Language :: Python :: (3\.\d+)"')


def supported_versions(pyproject: pathlib.Path = ROOT / "pyproject.toml") -> list[str]:
    """The `3.X` classifiers of pyproject.toml, oldest first."""
    found = CLASSIFIER.findall(pyproject.read_text(encoding="utf-8"))
    if not found:
        raise SystemExit(f"error: no 'Programming Language :: Python :: 3.X' classifier in {pyproject}")
    return sorted(set(found), key=lambda v: tuple(int(p) for p in v.split(".")))


def _reports(python: str, version: str) -> bool:
    try:
        r = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and r.stdout.strip() == version


def _patch_key(path: pathlib.Path) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.]", path.name))


def find(version: str) -> str | None:
    """An interpreter of CPython `version` ("3.X"), or None."""
    candidates: list[str] = []
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(on_path)
    pyenv_root = pathlib.Path(os.environ.get("PYENV_ROOT") or pathlib.Path.home() / ".pyenv")
    versions = pyenv_root / "versions"
    if versions.is_dir():
        releases = [p for p in versions.glob(f"{version}.*") if re.fullmatch(rf"{re.escape(version)}\.\d+", p.name)]
        for release in sorted(releases, key=_patch_key, reverse=True):
            candidates.append(str(release / "bin" / f"python{version}"))
    for python in candidates:
        if _reports(python, version):
            return python
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="find the supported CPython interpreters")
    parser.add_argument("versions", nargs="*", help="versions to find (default: every supported one)")
    parser.add_argument("--ends", action="store_true", help="the oldest and the newest supported version only")
    parser.add_argument("--found", action="store_true", help="the versions found; name the missing ones, but do not fail")
    parser.add_argument("--supported", action="store_true", help="print the supported versions (no interpreter looked for)")
    args = parser.parse_args(argv)
    supported = supported_versions()
    if args.supported:
        print(*supported, sep="\n")
        return 0
    wanted = args.versions or supported
    if args.ends:
        wanted = [supported[0], supported[-1]]
    unknown = [v for v in wanted if v not in supported]
    if unknown:
        print(f"error: {' '.join(unknown)} not supported (pyproject.toml lists {' '.join(supported)})", file=sys.stderr)
        return 1
    missing = []
    for version in wanted:
        python = find(version)
        if python is None:
            missing.append(version)
        else:
            print(version, python)
    if missing and args.found:
        print(f"note: no CPython {', '.join(missing)} found here: no wheel for {'it' if len(missing) == 1 else 'them'}", file=sys.stderr)
        return 0
    if missing:
        print(
            f"error: no CPython {', '.join(missing)} found (as python3.X on PATH or under pyenv): install "
            f"{'it' if len(missing) == 1 else 'them'} (pyenv install {' '.join(missing)}; or your distribution's "
            "packages), or name the versions to test: make test-pythons PYTHONS='3.11 3.12'",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
