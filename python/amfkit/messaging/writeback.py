"""Cursors written behind the deliveries of a worker's push channels on `redis://`
(docs/messaging.md, "One read per log per worker").

A stream or a WebSocket attached to a client in this worker hands each drained batch
out at once; the client's record (its consumers' cursors) goes to Redis right after, in
the same pipeline as every other client's drained at that moment. Per client, `WriteBack`
keeps the record as Redis holds it (`base`) and as this worker moved it since (`local`):
one write at a time, the drains meanwhile building on `local` and folded into the next.

A write that fails (another process changed the record: a subscribe, a resume, a touch)
or whose answer is lost (Redis away) is repaired: the worker reads the record once Redis
answers (a write found applied, by its token, counts as done), moves on Redis's record
the cursors it moved since `base` (a cursor another process moved meanwhile, a resume or
another worker's drain, stays as that one left it) and writes that. Nothing is lost: what
was handed out was handed out, and its cursors reach Redis once it is back. If the worker
dies first, they were not written: the client is delivered those messages again (amfkit's
client, which resumes from the last position it received, takes none twice).

Bounded: one record per client with a push channel in this worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any, Callable

from .. import AMFError, amf3
from .logstore import StoreError

if TYPE_CHECKING:
    from .redis_feed import Feed

__all__ = ["RESUMED", "WriteBack", "merged"]

log = logging.getLogger("amfkit.messaging")

#: The tokens of its last writes a client record keeps (`amfkit.messaging.shared.TOKENS`).
TOKENS = 16
#: The first character of a resume's token (a write putting cursors where the client says
#: it got to: `SharedBroker.resume_now`, a subscribe naming a position).
RESUMED = "r"
#: Seconds between attempts to read a record back while Redis is away.
FIRST_BACKOFF = 0.05
MAX_BACKOFF = 1.0

_Record = dict[str, Any]


def merged(current: _Record, base: _Record, local: _Record) -> _Record:
    """Redis's record `current` with the cursors this worker moved from `base` to `local`
    (messages it handed out). A consumer whose cursor another process moved since `base`
    keeps that one; consumers added or removed by another process stay so. After a resume
    since `base` (its token among `current`'s), every cursor stays as Redis has it: the
    client said where it got to (a cursor it put back where `base` had it looks
    unmoved), and what this worker handed out may not have reached it."""
    out: dict[str, Any] = {}
    mine, was = local["n"], base["n"]
    resumed = _resumed_since(current, base)
    for consumer_id, entry in current["n"].items():
        moved, before = mine.get(consumer_id), was.get(consumer_id)
        if not resumed and moved is not None and before is not None and entry[0] == moved[0] == before[0] and int(entry[1]) == int(before[1]):
            entry = [entry[0], moved[1], entry[2], entry[3]]
        out[consumer_id] = entry
    return {"t": max(float(current.get("t", 0)), float(local.get("t", 0))), "n": out, "w": current.get("w")}


def _resumed_since(current: _Record, base: _Record) -> bool:
    """Whether a resume wrote `current` after `base` (a resume's token in `current` that
    `base` does not have)."""
    seen = base.get("w")
    seen = set(seen) if isinstance(seen, list) else set()
    tokens = current.get("w")
    return isinstance(tokens, list) and any(isinstance(t, str) and t.startswith(RESUMED) and t not in seen for t in tokens)


def _decoded(raw: bytes) -> _Record | None:
    try:
        record = amf3.decode(raw)
    except AMFError:
        return None
    return record if isinstance(record, dict) and isinstance(record.get("n"), dict) else None


class _Client:
    __slots__ = ("base_raw", "base", "local", "dirty", "unsure", "task", "waiters")

    def __init__(self, base_raw: bytes, base: _Record, local: _Record) -> None:
        self.base_raw = base_raw
        self.base = base
        self.local = local
        self.dirty = True
        #: The token and record of a write sent by someone else (a poll's drain) whose
        #: answer was lost: whether Redis applied it is found out first.
        self.unsure: tuple[str, _Record] | None = None
        self.task: asyncio.Task[None] | None = None
        self.waiters: list[asyncio.Future[None]] = []


class WriteBack:
    """The client records one worker writes behind its deliveries (see the module's
    docstring). `key(client_id)` is the record's key, `ttl_ms` its expiry in Redis;
    `written(client_id, raw, record)` is told each record Redis took (the worker's cache),
    `gone(client_id)` that a client's record is no longer there."""

    def __init__(
        self,
        feed: Feed,
        *,
        key: Callable[[str], str],
        ttl_ms: Callable[[], int],
        clock: Callable[[], float],
        written: Callable[[str, bytes, _Record], None],
        gone: Callable[[str], None],
    ) -> None:
        self.feed = feed
        self._key = key
        self._ttl_ms = ttl_ms
        self._clock = clock
        self._written = written
        self._gone = gone
        self._clients: dict[str, _Client] = {}

    def __len__(self) -> int:
        return len(self._clients)

    def local(self, client_id: str) -> _Record | None:
        """The record of a client with cursors not yet written (None: nothing pending)."""
        state = self._clients.get(client_id)
        return None if state is None else state.local

    def advance(self, client_id: str, base_raw: bytes, base: _Record, local: _Record) -> None:
        """A drain moved the client's cursors from `base` (as Redis holds it, `base_raw`;
        ignored when a write of the client is pending) to `local`: write it behind."""
        state = self._clients.get(client_id)
        if state is None:
            state = self._clients[client_id] = _Client(base_raw, base, local)
        else:
            state.local = local
            state.dirty = True
        if state.task is None:
            state.task = self.feed.loop.create_task(self._write(client_id, state), name=f"amfkit-writeback-{client_id}")

    def unsure(self, client_id: str, base_raw: bytes, base: _Record, local: _Record, token: str) -> None:
        """A write of the client's record from `base` to `local` (carrying `token`) went
        to Redis and its answer was lost (a poll's drain, which hands its batch out once
        this is settled): find out once Redis answers whether it was applied, and write
        it if not (without a time limit: nothing it moved is lost)."""
        state = self._clients.get(client_id)
        if state is not None:  # pending here already: what was handed out is in `local`
            return
        state = self._clients[client_id] = _Client(base_raw, base, local)
        state.dirty, state.unsure = False, (token, local)
        state.task = self.feed.loop.create_task(self._write(client_id, state), name=f"amfkit-writeback-{client_id}")

    def resumed(self, client_id: str) -> None:
        """A resume of the client was written: the drains here no longer build on what
        this worker moved (the write under way, if any, finds the resume's token and
        leaves Redis's cursors as they are)."""
        self._clients.pop(client_id, None)

    def withdraw(self, client_id: str) -> None:
        """The poll whose write `unsure` took went away (cancelled) before it handed its
        batch out: unless that write is settled already, the cursors go back to where
        `base` had them, whether Redis applied it or not (its batch comes again)."""
        state = self._clients.get(client_id)
        if state is not None and state.unsure is not None:
            state.local = state.base

    async def settled(self, client_id: str, timeout: float) -> None:
        """Wait up to `timeout` seconds until the client's record is written."""
        state = self._clients.get(client_id)
        if state is None:
            return
        future = self.feed.loop.create_future()
        state.waiters.append(future)
        timer = self.feed.loop.call_later(timeout, _resolve, future)
        try:
            await future
        finally:
            timer.cancel()

    async def close(self, timeout: float) -> None:
        """Let the pending writes finish (at most `timeout` seconds), then stop them."""
        tasks = [state.task for state in self._clients.values() if state.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _write(self, client_id: str, state: _Client) -> None:
        try:
            await self._writes(client_id, state)
        except StoreError as e:  # the feed closed under it (the worker stops)
            log.debug("client %s: cursors not written: %s", client_id, e)
        finally:
            # No await since the last look at `dirty`: nothing is left to write.
            if self._clients.get(client_id) is state:
                del self._clients[client_id]
            state.task = None
            for future in state.waiters:
                _resolve(future)
            state.waiters.clear()

    async def _writes(self, client_id: str, state: _Client) -> None:
        feed, key = self.feed, self._key(client_id)
        if state.unsure is not None and not await self._reconcile(client_id, state, *state.unsure):
            return
        while state.dirty:
            state.dirty = False
            token = os.urandom(4).hex()
            tokens = state.base.get("w")
            target = {"t": self._clock(), "n": state.local["n"], "w": [token, *(tokens[: TOKENS - 1] if isinstance(tokens, list) else ())]}
            value = amf3.encode(target)
            ok: bool | None
            try:
                ok = await feed.cas(key, state.base_raw, value, self._ttl_ms())
            except StoreError:  # not sent, or its answer lost: Redis tells below
                ok = None
            if ok:
                state.base_raw, state.base = value, target
                continue
            if not await self._reconcile(client_id, state, token if ok is None else None, target):
                return
        self._written(client_id, state.base_raw, state.base)

    async def _reconcile(self, client_id: str, state: _Client, token: str | None, sent: _Record) -> bool:
        """After a write of `sent` that failed (`token` None) or whose answer was lost:
        look at the record in Redis once it answers. A write found applied (its token
        there) is done: what this worker moved since goes onto Redis's record; else what
        it moved since `base` does. Either is written next when it moves a cursor.
        False when the client has no record any more (nothing to write)."""
        current = await self._read(self._key(client_id))
        record = _decoded(current) if current is not None else None
        if current is None or record is None:  # disconnected, expired (or damaged)
            self._gone(client_id)
            state.dirty = False
            return False
        applied = token is not None and isinstance(record.get("w"), list) and token in record["w"]
        state.local = merged(record, sent if applied else state.base, state.local)
        state.base_raw, state.base = current, record
        state.unsure = None
        state.dirty = any(int(entry[1]) != int(record["n"][c][1]) for c, entry in state.local["n"].items())
        return True

    async def _read(self, key: str) -> bytes | None:
        """The record in Redis, once Redis answers (retried while it is away)."""
        backoff = FIRST_BACKOFF
        while True:
            try:
                return await self.feed.get(key)
            except StoreError:
                if self.feed.closed:
                    raise
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)


def _resolve(future: asyncio.Future[None]) -> None:
    with contextlib.suppress(asyncio.InvalidStateError):
        if not future.done():
            future.set_result(None)
