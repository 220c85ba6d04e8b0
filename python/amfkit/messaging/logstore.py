"""The store a shared broker and a shared session store stand on: named logs, a bell,
and a small key-value table, in shared memory (`shm://`, amfkit's Rust core) or in
Redis (`redis://`). docs/messaging.md, "Across workers and hosts".

A log is a bounded, append-only sequence of records (bytes). Every record gets the next
sequence number of its log, starting at 1; a cursor is the sequence number of the last
record a reader has seen (0: none), so `head(log)` is the cursor past the newest record.
When a log is full its oldest records go; a reader whose cursor is older learns how many
it lost. Appending rings the store's bell (a counter every process can wait on).

Every method is synchronous and thread-safe; `wait` blocks (and releases the GIL), so an
event loop calls it from a thread of its own.
"""

from __future__ import annotations

from typing import Protocol

# The shared store refused an operation or cannot be reached; its message says why
# (corrupted shared memory, a name taken by another application, a full table, Redis
# down...). Defined in the Rust core, which raises it for shared memory.
from .._amfkit import StoreError

__all__ = ["LogStore", "StoreError"]


class LogStore(Protocol):
    """Logs, a bell and a key-value table shared by processes."""

    # --- logs ------------------------------------------------------------------------

    def append(self, log: str, record: bytes) -> int:
        """Add `record` to `log` (made on first use) and ring the bell; its sequence
        number. StoreError when the record is larger than a log may hold."""

    def head(self, log: str) -> int:
        """The sequence number of the newest record of `log` (0: none yet)."""

    def read(self, log: str, cursor: int, limit: int = 1024) -> tuple[list[tuple[int, bytes]], int, int]:
        """Up to `limit` records after `cursor`, oldest first, each with its sequence
        number; then the cursor to read from next time, and how many records after
        `cursor` the log no longer holds (overwritten: the reader fell behind)."""

    def logs(self) -> list[str]:
        """The names of the logs that exist."""

    # --- the bell --------------------------------------------------------------------

    def bell(self) -> int:
        """The bell's count (it grows by one at least per append; it may wrap)."""

    def wait(self, bell: int, timeout: float) -> int:
        """Block until the bell's count differs from `bell`, or `timeout` seconds pass;
        the count then. Uses no CPU while it waits (after, at most, a few microseconds of
        spinning)."""

    # --- key-value -------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        """The value under `key`; None when absent (or expired)."""

    def put(self, key: str, value: bytes, ttl: float | None = None) -> None:
        """Set `key` (a store may drop it `ttl` seconds later; callers that need an
        expiry also keep it in the value). StoreError when the value is too large or the
        table is full."""

    def cas(self, key: str, expected: bytes | None, value: bytes | None, ttl: float | None = None) -> bool:
        """Set `key` to `value` (None: delete it) only if it holds `expected` (None:
        absent); whether it did. Atomic across processes."""

    def delete(self, key: str) -> bool:
        """Remove `key`; whether it was there."""

    def keys(self, prefix: str = "") -> list[str]:
        """The keys starting with `prefix`, in no particular order."""

    def close(self) -> None:
        """Let go of the store (the last process out of a shared-memory segment removes
        it). Idempotent."""
