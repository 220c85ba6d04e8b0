"""Pages on a second origin, for the tests of real browser clients on other origins
(tests/browser/test_origins.py, test_ruffle.py): `Site` serves a page's files, recording
what was asked of it, and `launch()` gives Debian's Chromium, driven by Playwright, for a
`with` block.

`playwright install` is not used: the browser is Debian's `chromium` (`make system-deps`
installs it), or `AMFKIT_CHROMIUM`. Without it, or without the playwright package, the
tests fail, naming what to run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from chromium import chromium_path, launch

__all__ = ["Site", "chromium_path", "launch"]

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".wasm": "application/wasm",
    ".swf": "application/x-shockwave-flash",
    ".map": "application/json",
}


class Site:
    """An ASGI app serving a page's files: `pages` maps a path to bytes (or to a function
    of nothing returning bytes, made when asked), `folders` a path prefix to a directory.
    `asked` lists every (method, path) requested, in order."""

    def __init__(self, pages: dict[str, bytes | Callable[[], bytes]], folders: dict[str, Path] | None = None) -> None:
        self.pages = pages
        self.folders = folders or {}
        self.asked: list[tuple[str, str]] = []

    def _find(self, path: str) -> bytes | None:
        page = self.pages.get(path)
        if page is not None:
            return page() if callable(page) else page
        for prefix, folder in self.folders.items():
            if path.startswith(prefix):
                target = (folder / path[len(prefix) :]).resolve()
                if folder.resolve() in target.parents and target.is_file():
                    return target.read_bytes()
        return None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        self.asked.append((scope["method"], path))
        body = self._find(path)
        if body is None:
            await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"not found\n"})
            return
        ctype = _TYPES.get(Path(path).suffix or ".html", "application/octet-stream")
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", ctype.encode()), (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": body})
