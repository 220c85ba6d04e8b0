"""The repository's directories, for the tests and the tools that use these helpers."""

from __future__ import annotations

import pathlib

#: The repository's root directory (this file is tests/support/repo.py).
ROOT = pathlib.Path(__file__).resolve().parents[2]
#: fixtures/: the byte vectors shared by the Rust and Python tests.
FIXTURES = ROOT / "fixtures"
