"""Check what `make wheels` made: each wheel's platform tag against auditwheel, then each
wheel installed into a fresh virtual environment of its own CPython with no cargo or
rustc on PATH, running tests/install/smoke.py there (the codec, a gateway call, the CLI,
the PyAMF door); and the sdist built and installed from source. Prints the install times
(the wheel alone, `--no-deps`, against the source build) and the wheel sizes.

    python tests/install/check_wheels.py DIST [--only-python 3.11] [--no-sdist]

Exits 1 on the first check that fails.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "pythons"))

from interpreters import find  # noqa: E402  (tests/pythons/interpreters.py)

WHEEL = re.compile(r"^amfkit-[^-]+-cp(\d)(\d+)-cp\d+-(?P<platform>.+)\.whl$")


def run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if r.returncode != 0:
        raise SystemExit(f"check_wheels: {' '.join(map(str, cmd))} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def no_rust_path(venv: pathlib.Path) -> str:
    """PATH for the install: the venv and the system's directories, without cargo/rustc."""
    dirs = [str(venv / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]
    path = os.pathsep.join(dirs)
    for tool in ("cargo", "rustc"):
        found = shutil.which(tool, path=path)
        if found:
            raise SystemExit(f"check_wheels: {tool} is on the clean PATH ({found}): the check would not prove anything")
    return path


def audit(wheel: pathlib.Path) -> str:
    """auditwheel's verdict on a wheel: its platform tag must be one auditwheel allows."""
    platform = WHEEL.match(wheel.name).group("platform")  # type: ignore[union-attr]
    out = run([sys.executable, "-m", "auditwheel", "show", str(wheel)], timeout=300).stdout
    consistent = re.search(r'consistent with the following platform tag:\s*"([^"]+)"', " ".join(out.split()))
    if not consistent:
        raise SystemExit(f"check_wheels: auditwheel does not say which tag {wheel.name} is consistent with:\n{out}")
    allowed = consistent.group(1)
    tags = platform.split(".")
    ok = allowed in tags or any(_glibc(t) >= _glibc(allowed) for t in tags if t.startswith("manylinux_"))
    if not ok:
        raise SystemExit(f"check_wheels: {wheel.name} claims {platform}, auditwheel allows {allowed} at best")
    return allowed


def _glibc(tag: str) -> tuple[int, int]:
    m = re.match(r"manylinux_(\d+)_(\d+)_", tag)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def install_and_smoke(wheel: pathlib.Path, python: str, work: pathlib.Path) -> float:
    """Install `wheel` into a fresh venv of `python` without Rust on PATH; run the smoke
    suite; the seconds `pip install --no-deps` of the wheel took."""
    venv = work / "venv"
    run([python, "-m", "venv", str(venv)], timeout=300)
    env = {**os.environ, "PATH": no_rust_path(venv), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    vpy = str(venv / "bin" / "python")
    t0 = time.perf_counter()
    run([vpy, "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], env=env, timeout=600)
    seconds = time.perf_counter() - t0
    run([vpy, "-m", "pip", "install", "--quiet", f"{wheel}[server,client]"], env=env, timeout=900)
    smoke = run([vpy, str(HERE / "smoke.py"), str(ROOT / "fixtures")], env=env, cwd=str(work), timeout=900)
    print(smoke.stdout.rstrip())
    return seconds


def source_build(sdist: pathlib.Path, work: pathlib.Path) -> float:
    """Install the sdist into a fresh venv of this Python (a source build: cargo needed);
    import it; the seconds `pip install --no-deps` took."""
    venv = work / "venv"
    run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    vpy = str(venv / "bin" / "python")
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    t0 = time.perf_counter()
    run([vpy, "-m", "pip", "install", "--quiet", "--no-deps", str(sdist)], env=env, timeout=3600)
    seconds = time.perf_counter() - t0
    out = run(
        [vpy, "-c", "import amfkit; from amfkit import amf3; print(amf3.decode(amf3.encode({'a': [1]})), amfkit.__file__)"],
        env=env,
        cwd=str(work),
        timeout=120,
    )
    if "{'a': [1]}" not in out.stdout or "site-packages" not in out.stdout:
        raise SystemExit(f"check_wheels: the source build does not work: {out.stdout}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", type=pathlib.Path)
    parser.add_argument("--only-python", help="check the wheel of this CPython version only (3.X)")
    parser.add_argument("--no-audit", action="store_true", help="skip auditwheel (a wheel of `maturin build` without --zig)")
    parser.add_argument("--no-sdist", action="store_true", help="skip the source build")
    args = parser.parse_args(argv)
    wheels = sorted(args.dist.glob("amfkit-*.whl"))
    if args.only_python:
        wheels = [w for w in wheels if (m := WHEEL.match(w.name)) and f"{m.group(1)}.{m.group(2)}" == args.only_python]
    if not wheels:
        raise SystemExit(f"check_wheels: no amfkit wheel in {args.dist}")
    rows = []
    for wheel in wheels:
        m = WHEEL.match(wheel.name)
        if not m:
            raise SystemExit(f"check_wheels: {wheel.name} is not a CPython wheel of amfkit")
        version = f"{m.group(1)}.{m.group(2)}"
        python = find(version)
        if python is None:
            raise SystemExit(f"check_wheels: no CPython {version} here to install {wheel.name} into")
        allowed = "not audited" if args.no_audit else audit(wheel)
        print(f"== {wheel.name} ({wheel.stat().st_size / 1e6:.2f} MB; auditwheel: {allowed})")
        with tempfile.TemporaryDirectory(prefix=f"amfkit-wheel-{version}-") as tmp:
            seconds = install_and_smoke(wheel, python, pathlib.Path(tmp))
        rows.append((wheel.name, wheel.stat().st_size, seconds))
    if not args.no_sdist:
        (sdist,) = sorted(args.dist.glob("amfkit-*.tar.gz"))
        print(f"== {sdist.name} ({sdist.stat().st_size / 1e6:.2f} MB): a source build")
        with tempfile.TemporaryDirectory(prefix="amfkit-sdist-") as tmp:
            seconds = source_build(sdist, pathlib.Path(tmp))
        rows.append((sdist.name, sdist.stat().st_size, seconds))
    print("\nfile                                                       size       pip install --no-deps")
    for name, size, seconds in rows:
        print(f"{name:58} {size / 1e6:6.2f} MB  {seconds:7.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
