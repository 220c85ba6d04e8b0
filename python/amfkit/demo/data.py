"""The demo's SQLite database: the Amfphp tiles article's tile table, made on first use.

Set 1 holds the article's 1000 tiles and set 2 holds 24, the same on every machine, so
sizes on the wire compare between runs and with the article's figures.
`ensure_database(path=None)` returns the file's path, building or rebuilding it when it
does not hold the expected data; without a path, `default_path()` says where it goes.
docs/gateway.md (The demo gateway) has the table and where the file is kept.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "SCHEMA_VERSION",
    "SETS",
    "connect",
    "create_database",
    "default_path",
    "ensure_database",
    "tiles",
]

#: Bumped whenever the table or its data change; part of the default file name too.
SCHEMA_VERSION = 1

#: set_id -> number of tiles.
SETS: dict[int, int] = {1: 1000, 2: 24}

_FILE_NAME = f"demo-tiles-v{SCHEMA_VERSION}.sqlite3"

SCHEMA = """
CREATE TABLE tiles (
    set_id      INTEGER NOT NULL DEFAULT 0,
    slot_number INTEGER NOT NULL DEFAULT 0,
    x           INTEGER DEFAULT 0,
    y           INTEGER DEFAULT 0,
    move_number INTEGER NOT NULL DEFAULT 0,
    color       TEXT    NOT NULL DEFAULT '',
    rotation    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (set_id, slot_number)
) WITHOUT ROWID
"""

# The mosaic: tiles sit anywhere on a 640x480 board, turned by a quarter turn (0..3), in
# any 24-bit colour (written "rrggbb", the article's char(6)). With these choices the
# article's comma-separated string of set 1 is 20,464 bytes, 10,269 gzipped (-6); the
# article measured 20,581 and 10,420, so sizes here compare with its figures.
_WIDTH, _HEIGHT = 640, 480


class _SplitMix64:
    """A tiny fixed PRNG, so the data never depends on the `random` module's version."""

    def __init__(self, seed: int) -> None:
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n


def tiles(set_id: int, count: int) -> Iterator[tuple[int, int, int, int, int, str, int]]:
    """The rows of one set: (set_id, slot_number, x, y, move_number, color, rotation)."""
    rng = _SplitMix64(0xA4F0 + set_id)
    move = 0
    for slot in range(count):
        move += 1 + rng.below(7)
        yield (
            set_id,
            slot,
            rng.below(_WIDTH),
            rng.below(_HEIGHT),
            move,
            f"{rng.below(1 << 24):06x}",
            rng.below(4),
        )


def default_path() -> Path:
    """Where the demo database lives when no path is given (docs/gateway.md, The demo gateway)."""
    env = os.environ.get("AMFKIT_DEMO_DB")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = Path(cache) / "amfkit"
    if _writable_dir(directory):
        return directory / _FILE_NAME
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"amfkit-{uid}" / _FILE_NAME


def _writable_dir(directory: Path) -> bool:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(directory, os.W_OK | os.X_OK)


def ensure_database(path: str | os.PathLike[str] | None = None) -> Path:
    """Return the demo database's path, creating (or rebuilding) it when needed."""
    target = Path(path).expanduser() if path is not None else default_path()
    if not _is_valid(target):
        create_database(target)
    return target.resolve()


def create_database(path: str | os.PathLike[str]) -> Path:
    """Write a fresh demo database at `path` (atomically replacing any file there)."""
    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        db = sqlite3.connect(tmp)
        try:
            db.execute(SCHEMA)
            for set_id, count in SETS.items():
                db.executemany("INSERT INTO tiles VALUES (?, ?, ?, ?, ?, ?, ?)", tiles(set_id, count))
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.commit()
        finally:
            db.close()
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def _is_valid(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                return False
            counts = dict(db.execute("SELECT set_id, count(*) FROM tiles GROUP BY set_id").fetchall())
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return counts == SETS


def connect(path: str | os.PathLike[str], *, check_same_thread: bool = True) -> sqlite3.Connection:
    """A read-only connection to the demo database at `path`."""
    return sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, check_same_thread=check_same_thread)
