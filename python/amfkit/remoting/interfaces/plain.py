"""The short path every interface shares, for a plain AMF POST: which requests may take
it (`accepts`), the answer made now, with no task when no result must be awaited
(`answer_now`), and the plain response (`ok`, `answer`, `failure`). The answer is
`amf.handle`'s, made by the same functions."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable, Generator, Iterable
from typing import Any

from .. import amf
from .. import http as _http
from .served import Served

__all__ = ["CONTENT_TYPE", "Resumed", "accepts", "accepts_type", "answer", "answer_now", "failure", "ok"]

logger = logging.getLogger("amfkit.gateway")

_AMF_TYPES = amf.CONTENT_TYPES
#: The Content-Type header of a plain answer.
CONTENT_TYPE = ("content-type", amf.CONTENT_TYPE)
#: A first body's target as Flex messages write it: length 4, "null".
_FLEX_TARGET = b"\x00\x04null"


def accepts(gateway: Served, path: str, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """For a POST to `path` (no query string) with `headers` (lowercase names, as ASGI
    gives them) that can take the short path: its `Accept-Encoding` ("" when absent);
    None when it cannot (another path or protocol, a compressed or too large body, or
    Server-Timing on: the general core times the phases)."""
    if gateway.server_timing:
        return None
    where = gateway.path
    if where is not None:
        if path != where and path.rstrip("/") != where:
            return None
    elif gateway.assets is not None and gateway.assets.under(path):
        return None  # any path but the assets' (405 from the core)
    accept = ""
    for k, v in headers:
        if k == b"content-type":
            if _http.media_type(v.decode("latin-1")) not in _AMF_TYPES:
                return None
        elif k == b"accept-encoding":
            accept = v.decode("latin-1")
        elif k == b"content-encoding":
            return None
        elif k == b"content-length":
            if not v.isdigit() or int(v) > gateway.max_body_size:
                return None
    return accept


def accepts_type(gateway: Served, path: str, content_type: str | None) -> str | None:
    """`accepts` for an interface that checks the other headers itself: the Content-Type
    alone (None when absent)."""
    return accepts(gateway, path, [(b"content-type", content_type.encode("latin-1"))] if content_type else ())


def ok(gateway: Served, out: bytes, accept: str, extra: Iterable[tuple[str, str]] = ()) -> _http.Response:
    """The 200 response carrying a response packet, gzipped as `accept` allows; `extra`:
    more headers (CORS)."""
    out, coding = _http.compress(out, accept, gateway.gzip_threshold, gateway.gzip_level)
    return 200, [CONTENT_TYPE, *coding.text, ("content-length", str(len(out))), *extra], out


async def answer(gateway: Served, pending: Awaitable[bytes], accept: str, extra: Iterable[tuple[str, str]] = ()) -> _http.Response:
    """The response to a plain AMF request whose response packet `pending` gives."""
    try:
        out = await pending
    except Exception as e:
        return failure(e, extra)
    return ok(gateway, out, accept, extra)


def failure(error: Exception, extra: Iterable[tuple[str, str]] = ()) -> _http.Response:
    """The answer when answering a plain AMF request raised `error` (called in its
    `except` block): 400 for a malformed packet, as the core says; anything else is a
    bug (every body's failure is a fault already), logged and answered 500 as the
    general core answers one. `extra`: more headers (CORS)."""
    if isinstance(error, _http.HTTPError):
        status, headers, body = error.response()
        return status, [*headers, *extra], body
    logger.exception("unexpected error answering an AMF request")
    return _http.text_response(500, "internal server error", extra)


def answer_now(gateway: Served, body: bytes) -> bytes | Awaitable[bytes] | None:
    """The short path's answer to a plain AMF request `body` (no query string), made
    without an ASGI task: the response packet, when every call ran to its end now;
    an awaitable of it, when a result must be awaited (its rest runs in the caller's
    task); None, with nothing called, when the packet is not one of plain calls to
    synchronous methods (headers, Flex messages, an async method...: the general
    route answers it). A malformed packet raises `HTTPError` (400) before any call.

    The answer is `amf.handle`'s, made by the same functions: only the first steps
    run outside a task (synchronous methods: `asyncio.current_task()` is None there,
    and they run in a context of their own, as in a task)."""
    if not _may_be_plain(body):
        return None
    version, headers, bodies = amf._decode(body, gateway)
    if headers:
        return None
    methods = amf._plain_calls(bodies, gateway)
    if methods is None:
        return None
    for method in methods:
        if method.is_async:
            return None
    steps = amf._answer_plain(version, bodies, methods, gateway).__await__()
    context = contextvars.copy_context()
    try:
        pending = context.run(next, steps)
    except StopIteration as done:
        out: bytes = done.value
        return out
    return Resumed(steps, pending, context)


def _may_be_plain(body: bytes) -> bool:
    """Whether a packet may hold plain calls, read off its first bytes without decoding
    it: no headers (version, header count 0), and a first body whose target is not
    Flex's "null" (body count, then the target). The rest is not decoded twice (here,
    then by the app) for what the short path would not take anyway; a packet too short
    to tell is decoded, so that a malformed one is refused here."""
    if len(body) < 12:
        return True
    return body[2:4] == b"\x00\x00" and body[6:12] != _FLEX_TARGET


class Resumed:
    """The rest of an awaitable that was run by hand until it first waited: `steps` is its
    iterator (`__await__()`), `pending` what it yielded then (an asyncio future, or None
    for a bare yield). Awaited in a task, it hands `pending` to the task and goes on as
    `yield from` would, each step in `context` (None: the task's own)."""

    __slots__ = ("_steps", "_pending", "_context")

    def __init__(self, steps: Any, pending: Any, context: contextvars.Context | None = None) -> None:
        self._steps = steps
        self._pending = pending
        self._context = context

    def __await__(self) -> Generator[Any, None, Any]:
        steps, pending = self._steps, self._pending
        run: Callable[..., Any] = self._context.run if self._context is not None else _call
        while True:
            # A task resumes with None (the next step), or throws in (a cancellation:
            # the awaitable sees it where it waits).
            try:
                yield pending
            except BaseException as e:
                throw = getattr(steps, "throw", None)
                if throw is None:
                    raise
                step: Callable[..., Any] = throw
                arg: Any = e
            else:
                step, arg = next, steps
            try:
                pending = run(step, arg)
            except StopIteration as done:
                return done.value


def _call(step: Callable[[Any], Any], arg: Any) -> Any:
    return step(arg)
