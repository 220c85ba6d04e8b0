"""The `LogStore` in Redis (`redis://HOST:PORT/DB`): what every host shares.

Under the store's key prefix (`amfkit:` unless told):

- a log is a stream `log:NAME` whose entries have the ids `SEQ-0` (SEQ its sequence
  number) and one field holding the record, kept to its newest `log_records` entries
  (exactly, so a reader's lost count is exact); its counter is `seq:NAME`;
- the bell is the counter `bell`, also published on the channel of that name at every
  ring, so a waiting process blocks on a subscription instead of polling;
- the key-value table is `kv:KEY` (with Redis's own expiry when given a ttl).

Appending and compare-and-set are Lua scripts (one atomic step each); reading is one
transaction (the counter and the entries, seen at one instant). redis-py is imported on
first use: `pip install 'amfkit[redis]'`.
"""

from __future__ import annotations

import contextlib
import math
import operator
import threading
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .._text import error_text, shown, shown_url
from .logstore import StoreError

if TYPE_CHECKING:
    from .redis_feed import Feed

__all__ = ["RedisStore"]

#: The largest record or value (bytes) the store takes: one log entry or key is one
#: Redis reply, which a reader holds whole.
MAX_RECORD = 1 << 20
#: The longest log name or key (bytes, UTF-8).
MAX_NAME = 1024
#: Seconds a waiter pauses at most between attempts to reach Redis when it went away.
MAX_BACKOFF = 1.0

# KEYS: counter, stream, bell. ARGV: record, the log's size, the bell's channel.
# The id comes from the counter; a stream that already has a later id (its counter was
# deleted by hand, say) moves the counter past that id rather than refusing every append.
# Nothing is written before XADD succeeds, so a refused append changes nothing.
_APPEND = """
local seq = tonumber(redis.call('GET', KEYS[1]) or '0') + 1
local ok = redis.pcall('XADD', KEYS[2], 'MAXLEN', ARGV[2], string.format('%d-0', seq), 'r', ARGV[1])
if type(ok) == 'table' and ok.err then
  if redis.call('EXISTS', KEYS[2]) == 0 then return ok end
  local info = redis.call('XINFO', 'STREAM', KEYS[2])
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then
      local last = tonumber(string.match(info[i + 1], '^(%d+)'))
      if last and last >= seq then seq = last + 1 end
    end
  end
  redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], string.format('%d-0', seq), 'r', ARGV[1])
end
redis.call('SET', KEYS[1], seq)
local bell = redis.call('INCR', KEYS[3])
redis.call('PUBLISH', ARGV[3], bell)
return seq
"""

# KEYS: the key. ARGV: whether a value is expected ('1'/'0'), the expected value,
# whether to set ('1') or delete ('0'), the new value, its ttl in ms ('0': none).
_CAS = """
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if current == false or current ~= ARGV[2] then return 0 end
elseif current ~= false then
  return 0
end
if ARGV[3] == '1' then
  if ARGV[5] ~= '0' then
    redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
  else
    redis.call('SET', KEYS[1], ARGV[4])
  end
elseif current ~= false then
  redis.call('DEL', KEYS[1])
end
return 1
"""

_GLOB = frozenset("*?[]\\")


def _glob_escape(text: str) -> str:
    """`text` matched literally by a Redis glob (SCAN MATCH)."""
    return "".join("\\" + c if c in _GLOB else c for c in text)


def _ttl_ms(ttl: float | None) -> int:
    """A ttl in whole milliseconds, at least 1 (0 or less: gone at once); 0 for none."""
    if ttl is None:
        return 0
    if ttl != ttl:  # NaN
        raise ValueError("ttl is NaN")
    if ttl == math.inf:
        return 0
    return max(1, min(math.ceil(ttl * 1000), 2**62)) if ttl > 0 else 1


class RedisStore:
    """A `LogStore` in a Redis server. Thread-safe: its commands share one connection
    pool; `wait` keeps one subscription (one connection) per store, read by one waiting
    thread at a time while the others wait for it to say the bell rang."""

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "amfkit:",
        log_records: int = 8192,
        socket_timeout: float = 5.0,
    ) -> None:
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            raise ImportError("redis:// needs redis-py: pip install 'amfkit[redis]'") from None
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")
        if isinstance(log_records, bool) or not isinstance(log_records, int) or log_records < 1:
            raise ValueError(f"log_records must be a positive int, not {shown(log_records)}")
        if not socket_timeout > 0:
            raise ValueError(f"socket_timeout must be positive, not {shown(socket_timeout)}")
        self.url = shown_url(url)
        self._raw_url = url
        self.socket_timeout = float(socket_timeout)
        self.prefix = prefix
        self.log_records = log_records
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._wait_errors: tuple[type[BaseException], ...] = (*self._errors, StoreError)
        try:
            # No retries: a command that failed may have been carried out (an append
            # sent twice would be two records); a stale pooled connection is replaced
            # by the pool itself. Every failure reaches the caller as a StoreError.
            self._pool: Any = redis.ConnectionPool.from_url(
                url,
                socket_timeout=socket_timeout,
                socket_connect_timeout=socket_timeout,
                # A waiter's subscription is idle for long: let TCP find a dead peer.
                socket_keepalive=True,
                retry=Retry(NoBackoff(), 0),
                decode_responses=False,
            )
        except ValueError as e:
            raise ValueError(f"bad redis URL {shown(self.url)}: {error_text(e)}") from None
        try:
            # Options the URL's query gives redis-py go to each connection: an unknown
            # one would only fail at the first command, so try them now.
            self._pool.connection_class(**self._pool.connection_kwargs)
        except TypeError as e:
            raise ValueError(f"bad redis URL {shown(self.url)}: {error_text(e)}") from None
        self._redis: Any = redis.Redis(connection_pool=self._pool)
        self._append_script: Any = self._redis.register_script(_APPEND)
        self._cas_script: Any = self._redis.register_script(_CAS)
        self._bell_key = prefix + "bell"
        self._bell_channel = self._bell_key.encode("utf-8", "surrogatepass")
        self._wake_channel = f"{self._bell_key}:{uuid.uuid4().hex}"
        self._closed = False
        self._stop = threading.Event()
        # The bell's waiters: one leads (reads the subscription), the others wait on
        # `_cond` for `_rings` to change.
        self._cond = threading.Condition()
        self._leader = False
        self._rings = 0
        self._pubsub: Any = None
        # No connection yet: the first command makes one. A worker opening the store
        # while Redis is away starts (a supervisor restarting a dead worker needs it to),
        # and its every call that needs Redis raises StoreError until Redis is back.

    @classmethod
    def from_url(cls, url: str) -> RedisStore:
        """A store for `redis://[USER:PASSWORD@]HOST:PORT/DB[?prefix=P&log_records=N]`
        (`rediss://` for TLS, `unix://PATH?db=N` for a socket); other query options go
        to redis-py."""
        parts = urlsplit(url)
        options: dict[str, Any] = {}
        rest: list[tuple[str, str]] = []
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key == "prefix":
                options["prefix"] = value
            elif key in ("log_records", "socket_timeout"):
                try:
                    options[key] = int(value) if key == "log_records" else float(value)
                except ValueError:
                    raise ValueError(f"redis:// option {key} must be a number, not {shown(value)}") from None
            else:
                rest.append((key, value))
        return cls(urlunsplit(parts._replace(query=urlencode(rest))), **options)

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, prefix={self.prefix!r})"

    def feed(self, on_records: Callable[[str, list[tuple[int, bytes]], int], None], on_state: Callable[[bool], None]) -> Feed:
        """An asynchronous reader and writer of this store for the running event loop
        (`amfkit.messaging.redis_feed`): what a shared broker's deliveries use there."""
        from .redis_feed import Feed

        if self._closed:
            raise StoreError(f"redis {self.url}: the store is closed")
        return Feed(
            self._raw_url,
            prefix=self.prefix,
            shown_url=self.url,
            scripts={"append": _APPEND, "cas": _CAS},
            log_records=self.log_records,
            socket_timeout=self.socket_timeout,
            on_records=on_records,
            on_state=on_state,
        )

    # --- plumbing --------------------------------------------------------------------

    @contextlib.contextmanager
    def _calling(self, what: str) -> Iterator[None]:
        """Redis's and the network's failures, as StoreError naming the server."""
        if self._closed:
            raise StoreError(f"redis {self.url}: {what}: the store is closed")
        try:
            yield
        except self._errors as e:
            raise StoreError(f"redis {self.url}: {what} failed: {error_text(e)}") from e

    def _name(self, kind: str, name: str) -> str:
        if not isinstance(name, str):
            raise TypeError(f"a {kind} name must be a str, not {type(name).__name__}")
        if len(name) > MAX_NAME or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME:
            raise ValueError(f"a {kind} name longer than {MAX_NAME} bytes: {shown(name)}")
        return name

    def _sized(self, what: str, data: bytes) -> bytes:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"a {what} must be bytes, not {type(data).__name__}")
        data = bytes(data)
        if len(data) > MAX_RECORD:
            raise StoreError(f"redis {self.url}: a {what} of {len(data)} bytes (the store takes {MAX_RECORD} at most)")
        return data

    def _int(self, raw: Any, what: str) -> int:
        if raw is None:
            return 0
        try:
            return int(raw)
        except ValueError:
            raise StoreError(f"redis {self.url}: {what} holds {shown(bytes(raw))}, not a number") from None

    def _scan(self, pattern: str) -> set[bytes]:
        return set(self._redis.scan_iter(match=pattern.encode("utf-8", "surrogatepass"), count=1000))

    def _names(self, found: set[bytes], cut: int) -> list[str]:
        return [key[cut:].decode("utf-8", "replace") for key in found]

    # --- logs ------------------------------------------------------------------------

    def append(self, log: str, record: bytes) -> int:
        name = self._name("log", log)
        record = self._sized("record", record)
        with self._calling(f"append to log {shown(name)}"):
            seq = self._append_script(
                keys=[self.prefix + "seq:" + name, self.prefix + "log:" + name, self._bell_key],
                args=[record, self.log_records, self._bell_key],
            )
        return int(seq)

    def head(self, log: str) -> int:
        name = self._name("log", log)
        with self._calling(f"head of log {shown(name)}"):
            raw = self._redis.get(self.prefix + "seq:" + name)
        return self._int(raw, f"the counter of log {shown(name)}")

    def read(self, log: str, cursor: int, limit: int = 1024) -> tuple[list[tuple[int, bytes]], int, int]:
        name = self._name("log", log)
        cursor, limit = operator.index(cursor), operator.index(limit)
        if cursor < 0:
            raise ValueError(f"a cursor is 0 or more, not {shown(cursor)}")
        if limit < 0:
            raise ValueError(f"limit must be 0 or more, not {shown(limit)}")
        with self._calling(f"read log {shown(name)}"):
            with self._redis.pipeline(transaction=True) as pipe:
                pipe.get(self.prefix + "seq:" + name)
                pipe.xrange(self.prefix + "log:" + name, min=f"{cursor + 1}-0", max="+", count=max(limit, 1))
                raw_head, entries = pipe.execute()
        head = self._int(raw_head, f"the counter of log {shown(name)}")
        if not entries:
            if head > cursor:
                # Everything after the cursor is gone (the stream itself was lost).
                return [], head, head - cursor
            # Caught up; or a cursor past the head (Redis lost its data): go on from
            # the head, so the records appended from now on are read.
            return [], min(cursor, head), 0
        items: list[tuple[int, bytes]] = []
        try:
            for entry_id, fields in entries:
                items.append((int(entry_id.split(b"-", 1)[0]), fields[b"r"]))
        except (KeyError, ValueError, TypeError, AttributeError):
            raise StoreError(f"redis {self.url}: log {shown(name)} holds an entry amfkit did not write") from None
        lost = max(0, items[0][0] - cursor - 1)
        if limit == 0:
            # No records, but past what is lost: the next read starts at the oldest held.
            return [], cursor + lost, lost
        return items, items[-1][0], lost

    def logs(self) -> list[str]:
        base = self.prefix + "seq:"
        with self._calling("list the logs"):
            found = self._scan(_glob_escape(base) + "*")
        return self._names(found, len(base.encode("utf-8", "surrogatepass")))

    # --- the bell --------------------------------------------------------------------

    def bell(self) -> int:
        with self._calling("read the bell"):
            raw = self._redis.get(self._bell_key)
        return self._int(raw, "the bell")

    def wait(self, bell: int, timeout: float) -> int:
        if self._closed:
            # Not a return at once: a caller's loop would spin.
            raise StoreError(f"redis {self.url}: wait on the bell: the store is closed")
        deadline = time.monotonic() + max(0.0, timeout)
        backoff = 0.05
        while not self._closed:
            with self._cond:
                rings = self._rings
            try:
                count = self._int(self._redis.get(self._bell_key), "the bell")
                if count != bell:
                    return count
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return bell
                with self._cond:
                    if self._rings != rings:
                        continue  # a ring since the look: look again
                    if self._leader:
                        self._cond.wait(remaining)
                        continue
                    self._leader = True
                try:
                    count = self._listen(bell, deadline)
                finally:
                    self._step_down()
                if count != bell:
                    return count
                backoff = 0.05
            except self._wait_errors:
                # Redis away (restarting, say): start over on a new connection after a
                # pause, until the deadline; the caller sees an unchanged count.
                with self._cond:
                    if not self._leader:
                        self._drop_pubsub()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return bell
                self._stop.wait(min(backoff, remaining))
                backoff = min(backoff * 2, MAX_BACKOFF)
        return bell

    def _step_down(self) -> None:
        """The leading waiter leaves: another one leads; a closed store lets go of the
        subscription (only the leader touches it while it leads)."""
        with self._cond:
            self._leader = False
            self._cond.notify_all()
            closed = self._closed
        if closed:
            with self._cond:
                self._drop_pubsub()
            with contextlib.suppress(Exception):
                self._pool.disconnect(inuse_connections=False)

    def _listen(self, bell: int, deadline: float) -> int:
        """As the leading waiter: block on the bell's channel until it says the count
        moved past `bell`, or until `deadline`; the count it said (`bell`: none)."""
        pubsub = self._pubsub
        if pubsub is None:
            pubsub = self._redis.pubsub()
            try:
                # The bell's channel, and this store's own, on which `close` wakes it.
                pubsub.subscribe(self._bell_key, self._wake_channel)
                confirmed = self._confirmed(pubsub, deadline)
            except BaseException:
                pubsub.close()
                raise
            if not confirmed:
                pubsub.close()
                return bell
            self._pubsub = pubsub
        else:
            # Rings from while nobody listened: the look at the count below covers them.
            for _ in range(100_000):
                if pubsub.get_message(timeout=0) is None:
                    break
        # A ring after this look comes as a message (the subscription is confirmed).
        count = self._int(self._redis.get(self._bell_key), "the bell")
        if count != bell:
            self._rang()
            return count
        while not self._closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return bell
            message = pubsub.get_message(timeout=remaining)
            if message is None or message.get("type") != "message" or message.get("channel") != self._bell_channel:
                continue
            self._rang()
            try:
                count = int(message["data"])
            except (KeyError, TypeError, ValueError):
                count = self._int(self._redis.get(self._bell_key), "the bell")
            if count != bell:
                return count
        return bell

    def _confirmed(self, pubsub: Any, deadline: float) -> bool:
        """Whether Redis confirmed the subscription to the bell's channel before
        `deadline`: only from then on is every ring sure to come as a message."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            message = pubsub.get_message(timeout=remaining)
            if message is not None and message.get("type") == "subscribe" and message.get("channel") == self._bell_channel:
                return True

    def _rang(self) -> None:
        with self._cond:
            self._rings += 1
            self._cond.notify_all()

    def _drop_pubsub(self) -> None:
        """Close the subscription (with `_cond` held, and no waiter leading)."""
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            with contextlib.suppress(Exception):
                pubsub.close()

    # --- key-value -------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        name = self._name("key", key)
        with self._calling(f"get key {shown(name)}"):
            raw = self._redis.get(self.prefix + "kv:" + name)
        return None if raw is None else bytes(raw)

    def put(self, key: str, value: bytes, ttl: float | None = None) -> None:
        name = self._name("key", key)
        value = self._sized("value", value)
        ms = _ttl_ms(ttl)
        with self._calling(f"put key {shown(name)}"):
            self._redis.set(self.prefix + "kv:" + name, value, px=ms or None)

    def cas(self, key: str, expected: bytes | None, value: bytes | None, ttl: float | None = None) -> bool:
        name = self._name("key", key)
        if expected is not None:
            expected = self._sized("value", expected)
        if value is not None:
            value = self._sized("value", value)
        ms = _ttl_ms(ttl)
        with self._calling(f"compare-and-set key {shown(name)}"):
            done = self._cas_script(
                keys=[self.prefix + "kv:" + name],
                args=[
                    "0" if expected is None else "1",
                    b"" if expected is None else expected,
                    "0" if value is None else "1",
                    b"" if value is None else value,
                    str(ms),
                ],
            )
        return bool(done)

    def delete(self, key: str) -> bool:
        name = self._name("key", key)
        with self._calling(f"delete key {shown(name)}"):
            return bool(self._redis.delete(self.prefix + "kv:" + name))

    def keys(self, prefix: str = "") -> list[str]:
        if not isinstance(prefix, str):
            raise TypeError(f"a key prefix must be a str, not {type(prefix).__name__}")
        base = self.prefix + "kv:"
        with self._calling(f"list the keys starting with {shown(prefix)}"):
            found = self._scan(_glob_escape(base + prefix) + "*")
        return self._names(found, len(base.encode("utf-8", "surrogatepass")))

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._stop.set()
            self._cond.notify_all()
            leading = self._leader
            if not leading:
                self._drop_pubsub()
        if leading:
            # The leading waiter is blocked on its subscription: a message on this
            # store's own channel wakes it, and it lets go of the subscription itself
            # (closing a connection under a thread that reads it is not safe).
            with contextlib.suppress(Exception):
                self._redis.publish(self._wake_channel, b"")
        # Connections in use by a command of another thread go when they are dropped.
        with contextlib.suppress(Exception):
            self._pool.disconnect(inuse_connections=False)
