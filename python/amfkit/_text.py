"""Bounded text of input values, for errors, faults, HTTP bodies and log lines.

A name, a destination or an operation comes from the client and can be megabytes long
(AMF3 string references make a long text cheap to repeat). Every text amfkit builds from
input goes through `shown` (one value) or `clip` (a whole message), so no error, fault,
HTTP body or log line carries more than a small fixed amount of input. The Rust core
bounds its own error texts the same way (`amfkit_core::error`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["MAX_SHOWN", "MAX_MESSAGE", "shown", "shown_url", "clip", "error_text"]

#: Characters of one input text shown in a message (names, targets, operations).
MAX_SHOWN = 64
#: Characters of a whole message built by amfkit (a fault text, a 4xx body).
MAX_MESSAGE = 1024

_ELLIPSIS = "…"


def shown(value: Any, limit: int = MAX_SHOWN) -> str:
    """`value` for a message, at most about `limit` characters plus a short note: a str
    is quoted (repr) and cut; a bool, int, float or None is its repr; bytes say their
    length; anything else is named by its type only (its repr could be any size)."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}{_ELLIPSIS} ({len(value)} characters)"
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    if isinstance(value, int):
        if -(10**18) < value < 10**18:
            return repr(value)
        return f"<int of {value.bit_length()} bits>"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{type(value).__name__} of {len(value)} bytes>"
    return f"<{type(value).__name__}>"


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text` cut to `limit` characters, with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}{_ELLIPSIS} ({len(text) - limit} more characters)"


def error_text(error: BaseException, limit: int = MAX_MESSAGE) -> str:
    """An exception's text, clipped; its type's name when it has none or cannot give one
    (an exception's text can be the repr of any value, and `str()` can raise)."""
    try:
        text = str(error) or type(error).__name__
    except Exception:
        text = type(error).__name__
    return clip(text, limit)


def shown_url(url: str) -> str:
    """A server's or store's URL for messages and `repr`: scheme, host, port and path;
    never a user, a password or a query string. A URL without user information is shown
    as written (`sqlite:////abs/path.db`)."""
    bare = url.split("#", 1)[0].split("?", 1)[0]
    scheme, sep, rest = bare.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return bare
    try:
        parts = urlsplit(bare)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port is not None else ""
        return urlunsplit((parts.scheme, host + port, parts.path, "", ""))
    except ValueError:
        return scheme + "://?"
