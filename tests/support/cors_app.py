"""A gateway for the tests of other origins (CORS, crossdomain.xml, the WebSocket's Origin):
services, messaging (long-polls, HTTP streams, WebSocket) and a file asset store, so that
every kind of answer the gateway gives can be asked for.

`build(assets_dir, **options)` makes one in the test's process; `amfkit serve
cors_app:gateway` (with this folder as the current directory and `AMFKIT_TEST_ASSETS` set)
serves one built the same way, the CLI adding the origin options.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from amfkit.messaging import Messaging
from amfkit.remoting import Fault, Gateway

__all__ = ["ASSET", "ASSET_BYTES", "Game", "build"]

#: One small asset the store holds (the fast path serves it under amfkit's protocol).
ASSET = "art/tile.png"
ASSET_BYTES = b"\x89PNG\r\n\x1a\n" + bytes(range(200))


class Game:
    def echo(self, value: Any) -> Any:
        return value

    def fail(self, message: str) -> None:
        raise Fault(message, code="Game.Over")

    def names(self, names: list[str]) -> list[str]:
        return names

    async def later(self, value: Any) -> Any:
        return value


def build(assets_dir: str | os.PathLike[str], **options: Any) -> Gateway:
    from amfkit.assets import AssetStore

    store = AssetStore.open(f"file://{Path(assets_dir).resolve()}")
    if ASSET not in set(store):
        store.put(ASSET, ASSET_BYTES, content_type="image/png")
    options.setdefault("max_body_size", 64 * 1024)
    return Gateway({"Game": Game}, messaging=Messaging(["chat"], poll_wait=0.2), assets=store, **options)


_gateway: Gateway | None = None


def __getattr__(name: str) -> Any:
    if name == "gateway":
        global _gateway
        if _gateway is None:
            _gateway = build(os.environ["AMFKIT_TEST_ASSETS"])
        return _gateway
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
