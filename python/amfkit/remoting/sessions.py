"""Per-client sessions: an async store interface and an in-memory store (docs/gateway.md).

    >>> import asyncio
    >>> from amfkit.remoting.sessions import MemorySessionStore
    >>> store = MemorySessionStore(ttl=60)
    >>> sid, session = asyncio.run(store.create())
    >>> session["cart"] = [1, 2]
    >>> asyncio.run(store.save(sid, session))
    >>> asyncio.run(store.get(sid))["cart"]
    [1, 2]
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from typing import Any, Callable, Iterable, Protocol

__all__ = ["MemorySessionStore", "PRINCIPAL_KEY", "Session", "SessionStore", "new_session_id", "open_session_store"]

#: The session key holding the authenticated principal as `[name, [roles...]]`.
PRINCIPAL_KEY = "amfkit.principal"


def new_session_id() -> str:
    """A new session id: 128 random bits written as an uppercase UUID (the form Flex
    clients expect for a `DSId`)."""
    return str(uuid.uuid4()).upper()


class Session(dict[str, Any]):
    """A session's data. `modified` turns true when a top-level key is set or removed;
    a change inside a nested value is not seen, so assign the value again to keep it."""

    __slots__ = ("modified",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.modified = False

    def __setitem__(self, key: Any, value: Any) -> None:
        self.modified = True
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self.modified = True
        super().__delitem__(key)

    def clear(self) -> None:
        self.modified = True
        super().clear()

    def pop(self, *args: Any) -> Any:
        self.modified = True
        return super().pop(*args)

    def popitem(self) -> Any:
        self.modified = True
        return super().popitem()

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self.modified = True
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.modified = True
        super().update(*args, **kwargs)

    def __ior__(self, other: Any) -> Session:  # type: ignore[misc,override]
        self.update(other)
        return self


class SessionStore(Protocol):
    """What the gateway needs from a session store."""

    async def get(self, session_id: str) -> Session | None:
        """The live session, or None when unknown or expired."""

    async def create(self, session_id: str | None = None) -> tuple[str, Session]:
        """A new empty session under `session_id` (a new random id when None)."""

    async def save(self, session_id: str, session: Session) -> None:
        """Keep the session's current data (and refresh its expiry)."""

    async def delete(self, session_id: str) -> None:
        """Forget the session (no error when unknown)."""


class MemorySessionStore:
    """Sessions in a dict, for one process. Each expires `ttl` seconds after its last
    use; when `max_sessions` are held, creating one more drops the least recently used.
    Safe to share between threads (the WSGI adapter may call from several)."""

    def __init__(self, *, ttl: float = 1800.0, max_sessions: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.ttl = float(ttl)
        self.max_sessions = int(max_sessions)
        self._clock = clock
        self._lock = threading.Lock()
        # id -> (expires at, session); oldest use first.
        self._items: OrderedDict[str, tuple[float, Session]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def ids(self) -> Iterable[str]:
        """The ids currently held (expired ones may still be listed until next touched)."""
        with self._lock:
            return list(self._items)

    async def get(self, session_id: str) -> Session | None:
        if not isinstance(session_id, str):  # no session has any other kind of id
            return None
        now = self._clock()
        with self._lock:
            item = self._items.get(session_id)
            if item is None:
                return None
            expires, session = item
            if expires <= now:
                del self._items[session_id]
                return None
            self._items[session_id] = (now + self.ttl, session)
            self._items.move_to_end(session_id)
            session.modified = False
            return session

    async def create(self, session_id: str | None = None) -> tuple[str, Session]:
        now = self._clock()
        sid = session_id or new_session_id()
        session = Session()
        with self._lock:
            self._purge(now)
            while len(self._items) >= self.max_sessions:
                self._items.popitem(last=False)
            self._items[sid] = (now + self.ttl, session)
        return sid, session

    async def save(self, session_id: str, session: Session) -> None:
        now = self._clock()
        with self._lock:
            if session_id not in self._items and len(self._items) >= self.max_sessions:
                self._items.popitem(last=False)
            self._items[session_id] = (now + self.ttl, session)
            self._items.move_to_end(session_id)
        session.modified = False

    async def delete(self, session_id: str) -> None:
        if not isinstance(session_id, str):
            return
        with self._lock:
            self._items.pop(session_id, None)

    def _purge(self, now: float, budget: int = 32) -> None:
        """Drop up to `budget` expired sessions from the old end (called under the lock,
        so creating a session costs O(1) amortised)."""
        items = self._items
        while items and budget:
            sid, (expires, _) = next(iter(items.items()))
            if expires > now:
                return
            del items[sid]
            budget -= 1


def open_session_store(store: SessionStore | str | None) -> SessionStore:
    """The session store a gateway's `session_store` names: a store as it is; None or
    `"memory://"` a new `MemorySessionStore` (this process only); `"sqlite:///PATH"` a
    `SQLiteSessionStore` (every process of this host sharing the file); `"shm://NAME"`
    and `"redis://HOST:PORT/DB"` a `SharedSessionStore` (every worker of the host, every
    host)."""
    if store is None or store == "memory://":
        return MemorySessionStore()
    if isinstance(store, str):
        if store.startswith("sqlite://"):
            from .sqlite_sessions import SQLiteSessionStore

            return SQLiteSessionStore.from_url(store)
        if store.startswith(("shm://", "redis://")):
            from .shared_sessions import SharedSessionStore

            return SharedSessionStore.from_url(store)
        from .._text import shown

        raise ValueError(f"unsupported session store {shown(store)} (amfkit has: memory://, sqlite:///PATH, shm://NAME, redis://HOST:PORT/DB)")
    return store
