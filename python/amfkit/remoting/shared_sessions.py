"""Sessions shared by every worker of a host (`shm://NAME`) or of every host
(`redis://HOST:PORT/DB`): `Gateway(services, session_store="shm://myapp")`.

Each session is one key of the shared store (`s:ID`) holding one AMF3 value: its expiry
(wall-clock seconds, the same for every process) and its data (what a service may keep:
dicts, lists, dates, typed objects). A log-in through one worker holds on every other.
docs/gateway.md, "Sessions".
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from .. import AMFError, amf3
from ..messaging.logstore import LogStore, StoreError
from .sessions import Session, new_session_id

__all__ = ["SharedSessionStore"]

KEY = "s:"


class SharedSessionStore:
    """Sessions in a `LogStore`. Each expires `ttl` seconds after its last use (its
    expiry is written again once a tenth of `ttl` has passed, not on every request).
    A session's data is bounded by the store's value size (`kv_value_bytes` in shared
    memory, 8 KiB by default; 1 MiB in Redis): a larger one is refused at save."""

    def __init__(self, store: LogStore, *, ttl: float = 1800.0, remote: bool = False, owned: bool = False, clock: Callable[[], float] = time.time) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.store = store
        self.ttl = float(ttl)
        self.remote = remote
        self._owned = owned
        self._clock = clock
        self._creates = 0

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SharedSessionStore:
        from ..messaging.shared import open_store, release_store

        store = open_store(url)
        try:
            return cls(store, remote=url.lower().startswith("redis"), owned=True, **options)
        except BaseException:
            release_store(store)
            raise

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        # Redis answers over the network: not on the event loop. Shared memory answers
        # in microseconds: in place.
        return await asyncio.to_thread(fn, *args) if self.remote else fn(*args)

    async def get(self, session_id: str) -> Session | None:
        if not isinstance(session_id, str):
            return None
        data = await self._call(self._get, session_id)
        if data is None:
            return None
        session = Session(data)
        session.modified = False
        return session

    def _get(self, session_id: str) -> dict[str, Any] | None:
        key = KEY + session_id
        raw = self.store.get(key)
        if raw is None:
            return None
        try:
            expires, data = amf3.decode(raw)
            expires = float(expires)
        except (AMFError, TypeError, ValueError):  # damaged: the session is gone, not the request
            self.store.cas(key, raw, None)
            return None
        now = self._clock()
        if expires <= now:
            self.store.cas(key, raw, None)
            return None
        if expires - now < self.ttl * 0.9:  # sliding expiry, written now and then
            self.store.cas(key, raw, amf3.encode([now + self.ttl, data]), self.ttl)
        return data if isinstance(data, dict) else {}

    async def create(self, session_id: str | None = None) -> tuple[str, Session]:
        sid = session_id or new_session_id()
        await self._call(self._write, sid, {}, True)
        return sid, Session()

    async def save(self, session_id: str, session: Session) -> None:
        await self._call(self._write, session_id, dict(session), False)
        session.modified = False

    def _write(self, session_id: str, data: dict[str, Any], new: bool) -> None:
        if new and not self.remote:  # Redis expires its keys itself: nothing to prune
            self._creates += 1
            if self._creates % 64 == 1:
                self._prune()
        blob = amf3.encode([self._clock() + self.ttl, data])
        try:
            self.store.put(KEY + session_id, blob, self.ttl)
        except StoreError as e:
            raise ValueError(f"the session could not be kept: {e}") from None

    def _prune(self) -> None:
        """Remove expired sessions from shared memory (every 64 creations of this
        process)."""
        now = self._clock()
        for key in self.store.keys(KEY):
            raw = self.store.get(key)
            if raw is None:
                continue
            try:
                expires = float(amf3.decode(raw)[0])
            except (AMFError, TypeError, ValueError, IndexError):
                expires = 0.0
            if expires <= now:
                self.store.cas(key, raw, None)

    async def delete(self, session_id: str) -> None:
        if isinstance(session_id, str):
            await self._call(self.store.delete, KEY + session_id)

    def close(self) -> None:
        """Let go of the shared store (when this store opened it from a URL)."""
        if self._owned:
            from ..messaging.shared import release_store

            self._owned = False
            release_store(self.store)
