"""HAR 1.2 files (a browser's network tab, mitmproxy's `savehar`, Fiddler, Charles) as
`Exchange`s.

A body is stored either as base64 (`"encoding": "base64"`) or as text. Text is turned
back into bytes the ways writers make it: Latin-1 (mitmproxy writes binary bodies so,
losslessly), or UTF-8, where a writer that replaced undecodable bytes (U+FFFD) has lost
them: such a body is kept, and its exchange notes that it is lossy. Which reading is
right is for the AMF decoder to say (`bodies`), not here.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json
from typing import Any

from .._text import shown
from .exchange import DEFAULT_MAX_BODY_SIZE, CaptureError, Exchange, decoded_body

__all__ = ["read_har", "text_candidates", "LOSSY"]

#: The note of a body stored as text with characters replaced (U+FFFD).
LOSSY = "lossy"


def read_har(data: bytes, *, name: str = "capture.har", max_body_size: int = DEFAULT_MAX_BODY_SIZE) -> list[Exchange]:
    """The exchanges of a HAR file's `log.entries`, in their order."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise CaptureError(f"not a HAR file: its JSON does not parse ({e})") from None
    log = doc.get("log") if isinstance(doc, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise CaptureError("not a HAR file: no log.entries list")
    out: list[Exchange] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        out.append(_exchange(entry, len(out), f"{name}#{i}", max_body_size))
    return out


def _exchange(entry: dict[str, Any], index: int, source: str, limit: int) -> Exchange:
    request = _obj(entry.get("request"))
    response = _obj(entry.get("response"))
    ex = Exchange(
        index,
        str(request.get("method") or "GET"),
        str(request.get("url") or ""),
        time=_time(entry.get("startedDateTime")),
        request_headers=_headers(request.get("headers")),
        response_headers=_headers(response.get("headers")),
        source=source,
    )
    status = response.get("status")
    if isinstance(status, int) and not isinstance(status, bool) and status > 0:
        ex.status = status
    post = _obj(request.get("postData"))
    if "text" in post:
        ex.request_body = _body(post, ex, "request body", ex.header("content-encoding"), limit)
    content = _obj(response.get("content"))
    if "text" in content:
        if content.get("encoding") != "base64" and isinstance(content.get("text"), str):
            ex.candidates["response"] = text_candidates(content["text"])[1:]
        # HAR stores the response content decoded (its `size` is the decoded size).
        ex.response_body = _body(content, ex, "response body", None, limit)
    return ex


def _body(holder: dict[str, Any], ex: Exchange, what: str, coding: str | None, limit: int) -> bytes | None:
    text = holder.get("text")
    if not isinstance(text, str):
        ex.notes.append(f"{what}: text is {shown(text)}, not a string")
        return None
    if holder.get("encoding") == "base64":
        try:
            raw = base64.b64decode(text, validate=False)
        except (binascii.Error, ValueError) as e:
            ex.notes.append(f"{what}: bad base64 ({e})")
            return None
    else:
        raw = text_candidates(text)[0]
        if "\ufffd" in text:
            ex.notes.append(f"{what} {LOSSY} (stored as text with replaced bytes)")
    if coding and not _compressed(raw):
        coding = None  # writers store the body decoded, and keep the request's header
    if coding is None and what == "request body":
        ex.candidates["request"] = text_candidates(text)[1:] if holder.get("encoding") != "base64" else []
    return decoded_body(raw, coding, limit, what, ex.notes)


def _compressed(raw: bytes) -> bool:
    """Whether `raw` starts as gzip or zlib data does."""
    return raw[:2] == b"\x1f\x8b" or (len(raw) > 1 and raw[0] & 0x0F == 8 and (raw[0] << 8 | raw[1]) % 31 == 0)


def text_candidates(text: str) -> list[bytes]:
    """The byte strings a body stored as text may have been: Latin-1 (each character one
    byte, when all are below 256) first, then UTF-8 (lone surrogates as the bytes they
    escape)."""
    out = []
    if all(ord(c) < 256 for c in text):
        out.append(text.encode("latin-1"))
    utf8 = text.encode("utf-8", "surrogateescape") if _escapable(text) else text.encode("utf-8", "replace")
    if not out or utf8 != out[0]:
        out.append(utf8)
    return out


def _escapable(text: str) -> bool:
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _headers(value: Any) -> list[tuple[str, str]]:
    out = []
    for h in value if isinstance(value, list) else ():
        if isinstance(h, dict) and isinstance(h.get("name"), str):
            out.append((h["name"], str(h.get("value", ""))))
    return out


def _time(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        t = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t.timestamp()
