"""A worker's one asynchronous way to Redis for the shared broker (`redis://`): a blocking
XREAD on the logs it follows, and its other commands pipelined (docs/messaging.md, "How it
works").

- `Feed` reads every followed log from where it got to, in one `XREAD BLOCK` on one
  connection, and hands the records to its owner (`on_records`), which wakes the clients
  waiting in this process; the newest records of each log stay in a `LogCache`, so that
  those clients' drains read them here, not from Redis.
- `cas`, `append`, `get`, `put`, `read` and `head` queue their commands: whatever was
  queued while the loop was busy goes to Redis in one pipeline (one round trip), one
  pipeline at a time, so appends keep their order.
- A write whose answer never came (the connection broke after it was sent) raises
  `Uncertain`: Redis may have applied it. Its caller finds out (a client record carries
  the tokens of its last writes).
- Nothing here blocks the event loop. Redis going away is said once in the log; reading
  goes on from where it was once it is back (`on_state`).

A Feed belongs to one event loop and is used on that loop's thread only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import uuid
from collections import deque
from typing import Any, Awaitable, Callable, Optional, TypeVar

from .._text import error_text
from .logstore import StoreError

__all__ = ["CACHE", "Feed", "LogCache", "Uncertain"]

log = logging.getLogger("amfkit.messaging")

_T = TypeVar("_T")

#: Records one XREAD takes per log.
READ_COUNT = 1024
#: Milliseconds one XREAD blocks (the reader's latency to see a newly followed log when
#: the wake-up is lost, and to notice closing).
BLOCK_MS = 1000
#: Commands in one pipeline at most.
MAX_PIPELINE = 1024
#: Records kept per followed log (decoded messages).
CACHE = 4096
#: Seconds between attempts to reach Redis while it is away.
FIRST_BACKOFF = 0.05
MAX_BACKOFF = 1.0


class Uncertain(StoreError):
    """A write was sent to Redis and its answer never came: it may have been applied."""


class LogCache:
    """The newest records of one log as read by the feed: consecutive sequence numbers
    `first`, `first + 1`, ... (decoded messages, or whatever its owner keeps)."""

    __slots__ = ("first", "items")

    def __init__(self, first: int) -> None:
        self.first = first
        self.items: list[Any] = []

    @property
    def last(self) -> int:
        """The sequence number of the newest record held (first - 1: none)."""
        return self.first + len(self.items) - 1

    def add(self, seq: int, item: Any) -> None:
        if seq != self.first + len(self.items):  # a gap (records lost) or a new log
            self.first = seq
            self.items = []
        self.items.append(item)
        if len(self.items) > 2 * CACHE:
            cut = len(self.items) - CACHE
            del self.items[:cut]
            self.first += cut

    def after(self, cursor: int, limit: int) -> Optional[list[tuple[int, Any]]]:
        """Up to `limit` records after `cursor`, each with its sequence number; None when
        the cache does not hold the record after `cursor` (older: read Redis)."""
        start = cursor + 1 - self.first
        if start < 0:
            return None
        first = self.first + start
        return [(first + i, item) for i, item in enumerate(self.items[start : start + limit])]


class _Op:
    """Queued commands and what to make of their replies."""

    __slots__ = ("commands", "parse", "write", "future")

    def __init__(self, commands: list[tuple[Any, ...]], parse: Callable[[list[Any]], Any], write: bool, future: asyncio.Future[Any]) -> None:
        self.commands = commands
        self.parse = parse
        self.write = write
        self.future = future


async def _redis(call: Awaitable[_T]) -> _T:
    """Await a redis-py call in a task of its own: a cancellation of the awaiting task
    (closing, or its event loop ending) is raised here, whatever redis-py makes of the
    cancellation it then gets (it may turn one that comes as a read times out into its
    own TimeoutError, which would read as Redis being away). On every Python from 3.9:
    no `Task.cancelling()`, which only 3.11 has."""
    inner = asyncio.ensure_future(call)
    try:
        return await asyncio.shield(inner)
    except asyncio.CancelledError:
        inner.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait((inner,), timeout=1.0)  # let it finish (its connection released)
        raise


def _int(raw: Any) -> int:
    return 0 if raw is None else int(raw)


class Feed:
    """One worker's reader and writer on Redis (see the module's docstring).

    `on_records(log, items, lost)` gets each followed log's new records (`items`:
    (sequence number, bytes), oldest first) and how many were lost before them (the log
    dropped them before they were read); `on_state(up)` is told when Redis went away
    (False) and came back (True)."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str,
        shown_url: str,
        scripts: dict[str, str],
        log_records: int,
        socket_timeout: float,
        on_records: Callable[[str, list[tuple[int, bytes]], int], None],
        on_state: Callable[[bool], None],
    ) -> None:
        import redis
        import redis.asyncio as aredis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.loop = asyncio.get_running_loop()
        self.url = shown_url
        self.prefix = prefix
        self.log_records = log_records
        self._errors: tuple[type[BaseException], ...] = (redis.ConnectionError, redis.TimeoutError, OSError)
        self._redis_errors: tuple[type[BaseException], ...] = (redis.RedisError,)
        self._noscript = redis.exceptions.NoScriptError
        # No retries: a command that failed may have been carried out (an append sent
        # twice would be two records).
        self.client: Any = aredis.Redis.from_url(
            url,
            socket_timeout=max(socket_timeout, BLOCK_MS / 1000 + 1.0),
            socket_connect_timeout=socket_timeout,
            socket_keepalive=True,
            retry=Retry(NoBackoff(), 0),
            decode_responses=False,
        )
        self._scripts = {name: (text, hashlib.sha1(text.encode()).hexdigest()) for name, text in scripts.items()}
        self._on_records = on_records
        self._on_state = on_state
        #: log name -> the sequence number of the newest record read (the XREAD cursor)
        self.cursors: dict[str, int] = {}
        self.caches: dict[str, LogCache] = {}
        self._log_prefix = (prefix + "log:").encode("utf-8", "surrogatepass")
        self._wake_key = f"{prefix}wake:{uuid.uuid4().hex}"
        self._wake_id = b"0-0"
        self._reading = False  # an XREAD is under way (a new log needs a wake-up)
        self._queue: deque[_Op] = deque()
        self._flushing = False
        self.down = False
        self.closed = False
        self._task = self.loop.create_task(self._run(), name="amfkit-redis-feed")

    # --- following logs --------------------------------------------------------------

    def follows(self, name: str) -> bool:
        return name in self.cursors

    def follow(self, name: str, cursor: int) -> None:
        """Read `name` from after `cursor` on (no change when it is followed already)."""
        if name in self.cursors or self.closed:
            return
        self.cursors[name] = cursor
        self.caches[name] = LogCache(cursor + 1)
        if self._reading:
            # The XREAD under way does not read this log: end it (a record on this
            # feed's own stream, gone by itself after a minute).
            self._fire([("XADD", self._wake_key, "MAXLEN", "1", "*", "w", "1"), ("PEXPIRE", self._wake_key, "60000")], write=True)

    async def _run(self) -> None:
        try:
            await self._read_loop()
        finally:
            # Closed, or its event loop ends (asyncio.run cancels what is left): the
            # connections go with it.
            self.closed = True
            self._fail_queued()
            with contextlib.suppress(Exception):
                await self.client.aclose()

    def _fail_queued(self) -> None:
        for op in self._queue:
            if not op.future.done():
                op.future.set_exception(StoreError(f"redis {self.url}: the store is closed"))
        self._queue.clear()

    async def _read_loop(self) -> None:
        backoff = FIRST_BACKOFF
        while not self.closed:
            streams: dict[Any, Any] = {self.prefix + "log:" + name: f"{cursor}-0" for name, cursor in self.cursors.items()}
            streams[self._wake_key] = self._wake_id
            self._reading = True
            try:
                if self.down:
                    await self._heads_after_outage()
                reply = await _redis(self.client.xread(streams, count=READ_COUNT, block=BLOCK_MS))
                if reply:
                    reply = await self._read_more(streams, reply)
            except asyncio.CancelledError:
                raise
            except (*self._errors, *self._redis_errors) as e:
                self._reading = False
                self._outage(e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
                continue
            finally:
                self._reading = False
            backoff = FIRST_BACKOFF
            if self.down:
                self.down = False
                log.warning("redis %s: reachable again, delivering from where each client was", self.url)
                self._on_state(True)
            for key, entries in reply or ():
                self._got(key, entries)

    async def _read_more(self, streams: dict[Any, Any], reply: list[Any]) -> list[Any]:
        """Redis answers a blocked XREAD at the first append to one of its logs, with that
        record alone; the appends sent with it (a publisher's burst, in one pipeline) are
        there by then: read them too (no block), so that they wake the clients together
        (one answer of a parked poll for the burst, not one for its first record and
        another, after the clients' next round, for the rest)."""
        got: dict[Any, list[Any]] = {}
        after = dict(streams)
        for key, entries in reply:
            got[key] = list(entries)
            if entries:
                after[key.decode("utf-8", "surrogatepass") if isinstance(key, bytes) else key] = entries[-1][0]
        more = await _redis(self.client.xread(after, count=READ_COUNT))
        for key, entries in more or ():
            got.setdefault(key, []).extend(entries)
        return list(got.items())

    def _got(self, key: bytes, entries: list[Any]) -> None:
        if key == self._wake_key.encode("utf-8", "surrogatepass"):
            if entries:
                self._wake_id = entries[-1][0]
            return
        if not key.startswith(self._log_prefix) or not entries:
            return
        name = key[len(self._log_prefix) :].decode("utf-8", "surrogatepass")
        cursor = self.cursors.get(name)
        if cursor is None:
            return
        items: list[tuple[int, bytes]] = []
        for entry_id, fields in entries:
            try:
                items.append((int(entry_id.split(b"-", 1)[0]), fields[b"r"]))
            except (KeyError, ValueError, TypeError, AttributeError):
                log.warning("redis %s: log %s holds an entry amfkit did not write: skipped", self.url, name)
        if not items:
            return
        lost = max(0, items[0][0] - cursor - 1)
        self.cursors[name] = items[-1][0]
        self._on_records(name, items, lost)

    async def _heads_after_outage(self) -> None:
        """Back from an outage: a log whose counter is behind this feed's cursor was lost
        by Redis (restarted without its data): read it again from its head."""
        names = list(self.cursors)
        if not names:
            return
        heads = await _redis(self.client.mget([self.prefix + "seq:" + n for n in names]))
        for name, raw in zip(names, heads):
            head = _int(raw)
            if name in self.cursors and head < self.cursors[name]:
                log.warning("redis %s: log %s went back from %d to %d records (Redis lost them)", self.url, name, self.cursors[name], head)
                self.cursors[name] = head
                self.caches[name] = LogCache(head + 1)

    def _outage(self, error: BaseException) -> None:
        if not self.down and not self.closed:
            self.down = True
            log.warning("redis %s unreachable (%s): streams and polls wait, deliveries resume when it is back", self.url, error_text(error))
            self._on_state(False)

    # --- commands, pipelined ---------------------------------------------------------

    def _submit(self, commands: list[tuple[Any, ...]], parse: Callable[[list[Any]], Any], write: bool) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = self.loop.create_future()
        if self.closed:
            future.set_exception(StoreError(f"redis {self.url}: the store is closed"))
            return future
        self._queue.append(_Op(commands, parse, write, future))
        if not self._flushing:
            self._flushing = True
            # A task's first step comes after every callback ready now: the commands of
            # every client woken by the same records go in one pipeline.
            self.loop.create_task(self._flush())
        return future

    def _fire(self, commands: list[tuple[Any, ...]], *, write: bool, what: str = "") -> None:
        """Queue commands nobody waits for; a failure is logged (`what` says what failed)."""
        future = self._submit(commands, lambda r: None, write)
        future.add_done_callback(lambda f: self._fired(f, what))

    def _fired(self, future: asyncio.Future[Any], what: str) -> None:
        if future.cancelled():
            return
        e = future.exception()
        if e is not None and what and not self.down:
            log.warning("redis %s: %s failed: %s", self.url, what, e)

    async def _flush(self) -> None:
        queue = self._queue
        try:
            while queue:
                batch: list[_Op] = []
                count = 0
                while queue and count < MAX_PIPELINE:
                    op = queue.popleft()
                    batch.append(op)
                    count += len(op.commands)
                await self._send(batch)
        except asyncio.CancelledError:  # the loop ends
            self.closed = True
            self._fail_queued()
            raise
        finally:
            self._flushing = False

    async def _send(self, batch: list[_Op], again: bool = False) -> None:
        pipe = self.client.pipeline(transaction=False)
        for op in batch:
            for command in op.commands:
                pipe.execute_command(*command)
        try:
            replies = await _redis(pipe.execute(raise_on_error=False))
        except asyncio.CancelledError:
            for op in batch:
                if not op.future.done():
                    op.future.set_exception(StoreError(f"redis {self.url}: the store is closed"))
            raise
        except (*self._errors, *self._redis_errors) as e:
            self._outage(e)
            for op in batch:
                kind = Uncertain if op.write else StoreError
                if not op.future.done():
                    op.future.set_exception(kind(f"redis {self.url}: {error_text(e)}"))
            return
        retry: list[_Op] = []
        at = 0
        for op in batch:
            got = replies[at : at + len(op.commands)]
            at += len(op.commands)
            if op.future.done():
                continue
            if not again and any(isinstance(r, self._noscript) for r in got):
                retry.append(op)
                continue
            failed = next((r for r in got if isinstance(r, BaseException)), None)
            if failed is not None:
                op.future.set_exception(StoreError(f"redis {self.url}: {error_text(failed)}"))
                continue
            try:
                op.future.set_result(op.parse(got))
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                op.future.set_exception(StoreError(f"redis {self.url}: an answer amfkit cannot read: {e}"))
        if retry:
            # Redis restarted and forgot the scripts: load them, send those again.
            try:
                for text, _ in self._scripts.values():
                    await _redis(self.client.script_load(text))
            except (*self._errors, *self._redis_errors) as e:
                self._outage(e)
                for op in retry:
                    op.future.set_exception((Uncertain if op.write else StoreError)(f"redis {self.url}: {error_text(e)}"))
                return
            await self._send(retry, again=True)

    def _script(self, name: str, keys: list[Any], args: list[Any]) -> tuple[Any, ...]:
        return ("EVALSHA", self._scripts[name][1], len(keys), *keys, *args)

    # --- what the broker calls -------------------------------------------------------

    def get(self, key: str) -> asyncio.Future[Optional[bytes]]:
        return self._submit([("GET", self.prefix + "kv:" + key)], lambda r: None if r[0] is None else bytes(r[0]), False)

    def put_nowait(self, key: str, value: bytes, ttl_ms: int) -> None:
        """Set a key (with an expiry in ms; 0: none) without waiting for the answer."""
        command: tuple[Any, ...] = ("SET", self.prefix + "kv:" + key, value) + (("PX", ttl_ms) if ttl_ms else ())
        self._fire([command], write=True, what=f"setting {key}")

    def cas(self, key: str, expected: Optional[bytes], value: Optional[bytes], ttl_ms: int) -> asyncio.Future[bool]:
        """Compare-and-set, as `RedisStore.cas`; `Uncertain` when the answer was lost."""
        args = ["0" if expected is None else "1", b"" if expected is None else expected, "0" if value is None else "1", b"" if value is None else value, str(ttl_ms)]
        return self._submit([self._script("cas", [self.prefix + "kv:" + key], args)], lambda r: bool(r[0]), True)

    def append(self, name: str, record: bytes) -> asyncio.Future[int]:
        """Append to a log (its sequence number); `Uncertain` when the answer was lost."""
        keys = [self.prefix + "seq:" + name, self.prefix + "log:" + name, self.prefix + "bell"]
        return self._submit([self._script("append", keys, [record, self.log_records, self.prefix + "bell"])], lambda r: int(r[0]), True)

    def append_nowait(self, name: str, record: bytes, what: str) -> None:
        keys = [self.prefix + "seq:" + name, self.prefix + "log:" + name, self.prefix + "bell"]
        self._fire([self._script("append", keys, [record, self.log_records, self.prefix + "bell"])], write=True, what=what)

    def head(self, name: str) -> asyncio.Future[int]:
        return self._submit([("GET", self.prefix + "seq:" + name)], lambda r: _int(r[0]), False)

    def read(self, name: str, cursor: int, limit: int) -> asyncio.Future[tuple[list[tuple[int, bytes]], int, int]]:
        """`RedisStore.read` in one round trip: the counter, then the entries (read after
        it, so an entry the counter counts is among them unless the log dropped it)."""
        commands = [("GET", self.prefix + "seq:" + name), ("XRANGE", self.prefix + "log:" + name, f"{cursor + 1}-0", "+", "COUNT", max(limit, 1))]
        return self._submit(commands, lambda r: _read_reply(r, cursor, limit), False)

    async def close(self) -> None:
        self.closed = True
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


def _read_reply(replies: list[Any], cursor: int, limit: int) -> tuple[list[tuple[int, bytes]], int, int]:
    head = _int(replies[0])
    entries = replies[1] or []
    if not entries:
        if head > cursor:
            return [], head, head - cursor
        return [], min(cursor, head), 0
    items = [(int(entry_id.split(b"-", 1)[0]), fields[b"r"]) for entry_id, fields in entries]
    lost = max(0, items[0][0] - cursor - 1)
    if limit == 0:
        return [], cursor + lost, lost
    return items, items[-1][0], lost
