"""What `amfkit serve --server granian` runs: granian (a Rust HTTP server, hyper inside)
serving the app through RSGI, granian's own interface (`Gateway.__rsgi__`; an app
without one through ASGI), with `amfkit serve`'s limits mapped onto granian's settings.

granian has one HTTP/1 timer for a request head and for an idle kept-alive connection,
and bounds connections, not requests: `settings` says how each option maps and refuses
what granian cannot keep (a head deadline over 60 s, a head limit under 8 KiB, a
backlog under 128). docs/limits.md ("The server") says what each server enforces.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

__all__ = ["MAX_HEADER_TIMEOUT", "MIN_BACKLOG", "MIN_HEADER_SIZE", "serve", "settings"]

#: granian's bounds on its HTTP/1 settings.
MAX_HEADER_TIMEOUT = 60.0
MIN_HEADER_SIZE = 8192
MIN_BACKLOG = 128


def settings(
    *,
    workers: int,
    limit_concurrency: int,
    timeout_keep_alive: float,
    backlog: int,
    header_timeout: float,
    max_header_size: int,
    access_log: bool,
    log_level: str,
    interface: str,
) -> dict[str, Any]:
    """granian's `Server` options for amfkit serve's; ValueError for a limit granian
    cannot keep.

    - the head deadline and the keep-alive timeout are one timer in granian
      (`http1_header_read_timeout`, from the connection or the end of the last response
      to the end of the next head): the smaller of the two;
    - `--max-header-size` is the HTTP/1 read buffer (`http1_buffer_size`): a head that
      does not fit is answered 431;
    - `--limit-concurrency` is `backpressure`: the connections a worker serves at once
      (more wait in the backlog until one closes; no 503)."""
    from granian.constants import HTTPModes, Interfaces, Loops
    from granian.http import HTTP1Settings
    from granian.log import LogLevels

    if header_timeout > MAX_HEADER_TIMEOUT:
        raise ValueError(f"--header-timeout under granian is at most {MAX_HEADER_TIMEOUT:g} seconds")
    if max_header_size < MIN_HEADER_SIZE:
        raise ValueError(f"--max-header-size under granian is at least {MIN_HEADER_SIZE} bytes")
    if backlog < MIN_BACKLOG:
        raise ValueError(f"--backlog under granian is at least {MIN_BACKLOG}")
    timer = min(header_timeout, timeout_keep_alive)
    try:
        import uvloop  # noqa: F401

        loop = Loops.uvloop
    except ImportError:
        loop = Loops.asyncio
    return {
        "interface": Interfaces.RSGI if interface == "rsgi" else Interfaces.ASGI,
        "workers": workers,
        "http": HTTPModes.http1,
        "websockets": True,
        "loop": loop,
        "backlog": backlog,
        "backpressure": limit_concurrency,
        "http1_settings": HTTP1Settings(header_read_timeout=max(1, round(timer * 1000)), keep_alive=True, max_buffer_size=max_header_size),
        "log_level": LogLevels(log_level),
        "log_access": access_log,
    }


def serve(target: str, host: str, port: int, options: dict[str, Any]) -> None:
    """Serve `target` (MODULE:ATTR) with granian until it is stopped. Workers are
    started afresh (multiprocessing's spawn: nothing the parent imported is shared)."""
    from granian.server import Server

    multiprocessing.set_start_method("spawn", force=True)
    Server(target, address=host, port=port, **options).serve()
