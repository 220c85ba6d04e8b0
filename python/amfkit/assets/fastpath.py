"""The file system fast path: GET and HEAD of small assets of a file system store, answered
by `amfkit serve`'s HTTP protocol (amfkit.serving) as soon as a request's headers are
parsed, without an ASGI task, from an in-process cache of the files' bytes and their
response heads.

Measured on the file storage article's images (docs/benchmarks.md, `amfkit bench
assets`): the ASGI route reads each file in a worker thread and answers at about half of
nginx's requests/s; this path answers at nginx's pace. It serves a file from the cache once a
`stat` of its path shows the same inode, device, size and modification time (a put
always makes a new inode), else it reads the file again through the store's safe walk
from the root (no symbolic links followed), so a changed file is never served stale and
nothing outside the root is ever served. Like nginx without thread pools, it does that
stat (and, on a miss, the read of a file of at most `MAX_CACHED` bytes) on the event
loop: page-cache work of microseconds. Anything else (a larger file, a name that is not
there or not valid, another method) falls through to the gateway's ASGI route, which
answers the same way. `Gateway(..., assets_fast_path=False)` turns it off.
"""

from __future__ import annotations

import os
from http import HTTPStatus
from typing import Optional

from .filesystem import FileStore
from .http import CONDITIONAL_HEADERS, AssetRequestError, name_from_path, plan
from .store import Asset, AssetError

__all__ = ["FileRoute", "MAX_CACHED", "MAX_CACHE_BYTES"]

#: The largest file the fast path serves (and caches).
MAX_CACHED = 256 * 1024
#: The most bytes the cache holds (per worker process); past it the oldest entries go.
MAX_CACHE_BYTES = 32 * 1024 * 1024

_HEADERS_USED = frozenset(h.encode("latin-1") for h in CONDITIONAL_HEADERS)


class _Entry:
    __slots__ = ("key", "path", "asset", "data", "head200")

    def __init__(self, key: tuple[int, int, int, int], path: bytes, asset: Asset, data: bytes, head200: bytes) -> None:
        self.key = key
        self.path = path
        self.asset = asset
        self.data = data
        self.head200 = head200


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'OK')}"]
    lines += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


_REASONS = {s.value: s.phrase for s in HTTPStatus}


class FileRoute:
    """Answers `GET`/`HEAD {prefix}/<name>` for a `FileStore` (see the module docstring)."""

    def __init__(self, store: FileStore, prefix: str, cache_control: Optional[str]) -> None:
        self.store = store
        self.prefix = (prefix.rstrip("/") + "/").encode("latin-1")
        self.cache_control = cache_control
        self._root = store.root.encode() + b"/"
        self._cache: dict[bytes, _Entry] = {}  # by the request path after the prefix
        self._cached_bytes = 0

    def answer(self, method: bytes, url: bytes, headers: list[tuple[bytes, bytes]]) -> Optional[tuple[bytes, bytes]]:
        """(response head without its blank line, body) for a request this path serves;
        None to let the gateway's general route answer it."""
        if not url.startswith(self.prefix) or (method != b"GET" and method != b"HEAD"):
            return None
        raw = url[len(self.prefix) :]
        if b"?" in raw or b"#" in raw:
            raw = raw.split(b"?", 1)[0].split(b"#", 1)[0]
        entry = self._entry(raw)
        if entry is None:
            return None
        conditional = None
        for k, v in headers:
            if k in _HEADERS_USED:
                if conditional is None:
                    conditional = {}
                conditional[k.decode("latin-1")] = v.decode("latin-1")
        if conditional is None:
            return entry.head200, (entry.data if method == b"GET" else b"")
        p = plan(method.decode("ascii"), conditional, entry.asset, self.cache_control)
        body = entry.data[p.offset : p.offset + p.length] if p.length else b""
        return _head(p.status, p.headers), body

    def _entry(self, raw: bytes) -> Optional[_Entry]:
        entry = self._cache.get(raw)
        if entry is not None:
            try:
                st = os.stat(entry.path)
            except OSError:
                self._drop(raw)
                return None
            if (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns) == entry.key:
                return entry
            self._drop(raw)
        try:
            name = name_from_path(raw.decode("latin-1"))
        except AssetRequestError:
            return None
        return self._load(raw, name)

    def _load(self, raw: bytes, name: str) -> Optional[_Entry]:
        try:
            fd, st = self.store._open_fd(name)
        except AssetError:  # absent (404 from the general route) or unreadable
            return None
        try:
            if st.st_size > MAX_CACHED:
                return None
            data = os.pread(fd, st.st_size, 0)
            if len(data) != st.st_size:
                return None  # changing under us: the general route reads it
            asset = self.store._asset(name, fd, st, data)
        finally:
            os.close(fd)
        p = plan("GET", {}, asset, self.cache_control)
        key = (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)
        entry = _Entry(key, self._root + name.encode(), asset, data, _head(p.status, p.headers))
        while self._cached_bytes + len(data) > MAX_CACHE_BYTES and self._cache:
            self._drop(next(iter(self._cache)))
        self._cache[raw] = entry
        self._cached_bytes += len(data)
        return entry

    def _drop(self, raw: bytes) -> None:
        entry = self._cache.pop(raw, None)
        if entry is not None:
            self._cached_bytes -= len(entry.data)
