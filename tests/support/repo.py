"""The repository's directories, for the tests and the tools that use these helpers, and
`tomllib` to read its TOML files (the `tomli` package before CPython 3.11)."""

from __future__ import annotations

import pathlib
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, from PyPI (a dev dependency on 3.10)
    import tomli as tomllib

__all__ = ["FIXTURES", "ROOT", "tomllib"]

#: The repository's root directory (this file is tests/support/repo.py).
ROOT = pathlib.Path(__file__).resolve().parents[2]
#: fixtures/: the byte vectors shared by the Rust and Python tests.
FIXTURES = ROOT / "fixtures"
