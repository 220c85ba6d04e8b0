"""The memcached store's async connections (amfkit.assets.memcached): aiomcache's commands
run on connections of the store's own, at most `pool_size` per server and event loop,
each command bounded by the store's `timeout` through one watchdog per loop (a timer per
command cost more than the get), and any connection whose command failed or was
cancelled closed, never reused (aiomcache's own pool would put it back with a reply
still to come). Imported on first use; without aiomcache the store's async methods use
its thread pool."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Hashable
from typing import Any

__all__ = ["WATCH_STEPS", "Call", "Connections", "LoopConnections", "aiomcache_commands", "cancelled_by_others"]

#: A loop's watchdog looks for commands past their time every `timeout / WATCH_STEPS`
#: seconds: a command is cancelled between `timeout` and `timeout * (1 + 1 / WATCH_STEPS)`.
WATCH_STEPS = 8


# Task.cancelling() and uncancel() are new in 3.11: before, a task cannot tell who asked
# for its cancellation. (`sys.version_info` is tested in place, where mypy reads it.)
def _cancelling(task: asyncio.Task[Any]) -> int:
    if sys.version_info >= (3, 11):
        return task.cancelling()
    return 0


def cancelled_by_others(call: Call) -> bool:
    """Whether `call`'s task, cancelled by the watchdog, was asked to cancel by someone
    else too (3.11 and later: the count of requests, one taken back here; before, no)."""
    if sys.version_info >= (3, 11):
        return call.task.uncancel() > call.cancelling
    return False


class _Aiomcache:
    """What the async path takes from aiomcache: its commands, each run on a connection
    of ours (the functions that its `acquire` wraps: aiomcache's own pool would put a
    connection back after a cancelled command, its reply still to come)."""

    COMMANDS = ("get", "gets", "multi_get", "set", "add", "cas", "delete")

    def __init__(self) -> None:
        import aiomcache
        from aiomcache.exceptions import ClientException
        from aiomcache.pool import Connection

        self.client = aiomcache.Client
        self.connection = Connection
        self.commands: dict[str, Callable[..., Awaitable[Any]]] = {n: getattr(aiomcache.Client, n).__wrapped__ for n in self.COMMANDS}
        # A reply amfkit cannot read (ClientException; ValueError: a line too long or
        # not a number), a connection refused, reset or closed mid-reply.
        self.errors: tuple[type[BaseException], ...] = (ClientException, OSError, EOFError, ValueError)


_AIOMCACHE: list[_Aiomcache | None] = []


def aiomcache_commands() -> _Aiomcache | None:
    """aiomcache, imported on first use; None if it is not installed."""
    if not _AIOMCACHE:
        try:
            _AIOMCACHE.append(_Aiomcache())
        except (ImportError, AttributeError):  # not installed, or not the aiomcache we know
            _AIOMCACHE.append(None)
    return _AIOMCACHE[0]


class Connections:
    """One server's connections (`host`, `port`) on one event loop, for the async path: at
    most `size` in use at once, opened when needed, each running aiomcache's commands
    (with `client`, whose own pool stays unused); one that a command failed on, or was
    cancelled on, is closed."""

    def __init__(self, host: str, port: int, size: int, limit: int, aio: _Aiomcache) -> None:
        self.host = host
        self.port = port
        self.limit = limit
        self.new = aio.connection
        self.client = aio.client(host, port, pool_size=1)
        self.slots = asyncio.Semaphore(size)
        self.idle: list[Any] = []
        self.open: set[Any] = set()
        self.closed = False

    async def run(self, command: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> Any:
        await self.slots.acquire()
        try:
            conn = await self._connection()
            try:
                result = await command(self.client, conn, *args)
            except BaseException:
                self._drop(conn)  # mid-command: what it reads next could be this reply
                raise
            if self.closed:
                self._drop(conn)
            else:
                self.idle.append(conn)
            return result
        finally:
            self.slots.release()

    async def _connection(self) -> Any:
        while self.idle:
            conn = self.idle.pop()  # the most recently used
            if not conn.reader.at_eof() and conn.reader.exception() is None:
                return conn
            self._drop(conn)  # closed by the server (restarted, say)
        if self.closed:
            raise ConnectionAbortedError("the connections were closed")
        reader, writer = await asyncio.open_connection(self.host, self.port, limit=self.limit)
        conn = self.new(reader, writer)
        self.open.add(conn)
        if self.closed:  # closed while this one was being opened
            self._drop(conn)
            raise ConnectionAbortedError("the connections were closed")
        return conn

    def _drop(self, conn: Any) -> None:
        self.open.discard(conn)
        # At once, what it had to send with it: a hung server would keep a close waiting.
        conn.writer.transport.abort()

    async def aclose(self) -> None:
        self.closed = True
        conns = list(self.open)
        self.open.clear()
        self.idle.clear()
        for conn in conns:
            conn.writer.transport.abort()
        for conn in conns:
            with contextlib.suppress(Exception):
                await conn.writer.wait_closed()


class Call:
    """A command in flight on a loop: when its time is up, and its task."""

    __slots__ = ("deadline", "task", "cancelling", "expired")

    def __init__(self, deadline: float, task: asyncio.Task[Any]) -> None:
        self.deadline = deadline
        self.task = task
        self.cancelling = _cancelling(task)
        self.expired = False


class LoopConnections:
    """The connections of one event loop (one `Connections` per server, keyed by the
    store's server object, made when first used); the async generator that closes them when the loop shuts its async
    generators down; the commands in flight, and the watchdog that cancels those past
    their time (a timer per command would cost more than the rest of a `get`)."""

    __slots__ = ("loop", "servers", "closer", "calls", "interval", "watchdog")

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float) -> None:
        self.loop = loop
        self.servers: dict[Hashable, Connections] = {}
        self.closer: AsyncGenerator[None, None] | None = None
        self.calls: set[Call] = set()
        self.interval = timeout / WATCH_STEPS
        self.watchdog: asyncio.TimerHandle | None = None

    def watch(self, call: Call) -> None:
        self.calls.add(call)
        if self.watchdog is None:
            self.watchdog = self.loop.call_later(self.interval, self._look)

    def _look(self) -> None:
        self.watchdog = None
        now = self.loop.time()
        for call in self.calls:
            if not call.expired and call.deadline <= now:
                # The task waits inside the command (it is in `calls` only then): the
                # cancellation reaches it there, at the await it is suspended on.
                call.expired = True
                call.task.cancel()
        if self.calls:
            self.watchdog = self.loop.call_later(self.interval, self._look)

    async def aclose(self) -> None:
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None
        servers = list(self.servers.values())
        self.servers.clear()
        for connections in servers:
            await connections.aclose()
