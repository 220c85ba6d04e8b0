"""The asset store on every backend: `store` is a fresh, empty store of each kind (its own
folder, file, table or key prefix), against the real servers the session fixtures start."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amfkit.assets import AssetStore
from pg import postgres  # noqa: F401  (the session fixture: a real PostgreSQL server)

#: Every backend, and a cache in front of a durable one (both caches, both SQL stores).
BACKENDS = ["file", "sqlite", "postgresql", "memcached", "redis", "postgresql+memcached", "sqlite+redis"]


def backend_url(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """The URL and options of a fresh store of `kind` (no cache)."""
    tag = secrets.token_hex(4)
    if kind == "file":
        return f"file://{tmp_path}/assets", {}
    if kind == "sqlite":
        return f"sqlite:///{tmp_path}/assets.db", {}
    if kind == "postgresql":
        pg = request.getfixturevalue("postgres")
        return f"postgresql://{pg.user}@{pg.host}:{pg.port}/{pg.dbname}", {"table": f"assets_{tag}"}
    if kind == "memcached":
        return request.getfixturevalue("memcached_server").url, {"prefix": f"t{tag}:"}
    if kind == "redis":
        return request.getfixturevalue("redis_server").url, {"prefix": f"t{tag}:"}
    raise ValueError(kind)


def open_backend(kind: str, request: pytest.FixtureRequest, tmp_path: Path, **extra: Any) -> AssetStore:
    durable, _, cache = kind.partition("+")
    url, options = backend_url(durable, request, tmp_path)
    if not cache:
        return AssetStore.open(url, **options, **extra)
    cache_url, cache_options = backend_url(cache, request, tmp_path)
    front = AssetStore.open(cache_url, **cache_options)
    return AssetStore.open(url, cache=front, **options, **extra)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AssetStore]:
    s = open_backend(request.param, request, tmp_path)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """`make_store(kind, **options)`: a fresh store of `kind`, closed after the test."""
    made: list[AssetStore] = []

    def make(kind: str, **options: Any) -> AssetStore:
        s = open_backend(kind, request, tmp_path, **options)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()
