"""Waiting with a timeout without `asyncio.wait_for`: on Python 3.11 and older, wait_for
swallows a cancellation of the caller that arrives as the awaited thing completes (the
caller then never learns it was cancelled, and a shutdown can hang)."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["wait_event", "within"]


async def within(future: asyncio.Future[Any], timeout: float | None) -> bool:
    """Wait up to `timeout` seconds (None: no limit) for `future`; True when it is done.
    The future is left as it is (still pending on a timeout)."""
    done, _ = await asyncio.wait((future,), timeout=timeout)
    return bool(done)


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait up to `timeout` seconds for `event` to be set; True when it is."""
    if event.is_set():
        return True
    task = asyncio.ensure_future(event.wait())
    try:
        return await within(task, timeout)
    finally:
        task.cancel()
