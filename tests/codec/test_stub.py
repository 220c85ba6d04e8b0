"""The type stub of the compiled module matches the binary (mypy.stubtest), and the
package type-checks."""

from __future__ import annotations

import subprocess
import sys


def test_stub_matches_the_compiled_module(repo_root):
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "amfkit._amfkit"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_package_type_checks(repo_root):
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=repo_root, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
