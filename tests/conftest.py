"""Shared pytest set-up: the helpers' directory, repository paths, hypothesis profiles, and
the report header.

The helpers the tests share live in tests/support/ (plain modules, not a package). This
file puts that directory first on sys.path when pytest loads it, before any test module
is imported, so a test imports a helper by its bare name (`from gateway_util import
request`, `import peers`) in whatever folder it sits and whatever the import mode. The
scripts that run outside pytest and use the helpers (the hostile harness's child,
crates/fuzz/atheris_fuzz.py) put the same directory on their path themselves.

Hypothesis profiles (pick one with HYPOTHESIS_PROFILE=name):
    dev   the default: no deadline (a 2-core machine's timing is noisy)
    ci    used when CI is set: no deadline, no example database, derandomized so that a
          failure in CI reproduces locally with the same profile
    long  many more examples, for a soak run (`HYPOTHESIS_PROFILE=long make test-python`)
    pythons  fewer examples, for the oldest and newest CPython inside `make test`
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

SUPPORT = pathlib.Path(__file__).resolve().parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

from repo import FIXTURES, ROOT  # noqa: E402  (tests/support/repo.py, after the path is set)
from redis_server import redis_server  # noqa: E402,F401  (the session fixture: a real Redis server)
from memcached_server import memcached_server  # noqa: E402,F401  (the session fixture: a real memcached server)

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # hypothesis is a dev dependency; tests that need it import it
    pass
else:
    settings.register_profile("dev", deadline=None, print_blob=True)
    settings.register_profile(
        "ci",
        deadline=None,
        print_blob=True,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile("long", deadline=None, print_blob=True, max_examples=2000)
    # The other CPython versions inside `make test` (test-pythons-ends): the same tests,
    # fewer generated examples (the full run is .venv's, and `make test-pythons`).
    settings.register_profile(
        "pythons", deadline=None, print_blob=True, database=None, max_examples=15, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say which amfkit the run tests: the built extension in the source tree, or not."""
    try:
        import amfkit
    except ImportError as e:
        return [f"amfkit: does not import ({e}); run `make build`"]
    where = pathlib.Path(amfkit.__file__).resolve().parent
    ext = getattr(amfkit, "_amfkit", None)
    ext_file = getattr(ext, "__file__", "?")
    return [f"amfkit {amfkit.__version__} from {where} (extension {pathlib.Path(ext_file).name})"]


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    """The repository's root directory."""
    return ROOT


@pytest.fixture(scope="session")
def fixtures_dir() -> pathlib.Path:
    """fixtures/: the byte vectors shared by the Rust and Python tests."""
    return FIXTURES


@pytest.fixture
def python_env() -> dict[str, str]:
    """An environment for running `python -m amfkit ...` in a subprocess: the tests'
    interpreter, with the source tree's python/ first on the path."""
    env = dict(os.environ)
    src = str(ROOT / "python")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONIOENCODING", "utf-8")
    env["PYTHONWARNINGS"] = "error"
    return env


@pytest.fixture(scope="session")
def python_exe() -> str:
    return sys.executable
