"""The demo gateway (`amfkit serve --demo`, `make run`): the demo services behind a `Gateway`.

`build(db_path=None, *, debug=False, feed=False, assets=None, **options)` makes a new one
(`options` go to `Gateway`), with the demo's messaging destinations `prices` and `chat`
(`amfkit.demo.live`) and its asset store (`amfkit.demo.assets`: the file storage article's images
and uploads, at GET /assets/NAME; `assets` is a store or a folder, by default
`amfkit.demo.assets.default_path(db_path=db_path)`); `feed` starts the live price feed. `app` is the one `amfkit serve
--demo` serves (`amfkit.demo.app:app`), built on first access, feed running: its database
is at `AMFKIT_DEMO_DB` when set, else at `data.default_path()`, its asset folder at
`AMFKIT_DEMO_ASSETS` when set (`amfkit serve --demo` sets it), and
`AMFKIT_DEMO_BODY_TIMEOUT` (seconds), when set, is its `body_timeout`;
`AMFKIT_DEMO_SHARED` (a `shm://` or `redis://` URL, set by `amfkit serve --demo
--workers N`), when set, holds its messaging and sessions. `python -m
amfkit.demo.app --port 8001` serves it without the CLI.
"""

from __future__ import annotations

import argparse
import os
import threading
from typing import TYPE_CHECKING, Any, Optional, Sequence

from .services import build_services

if TYPE_CHECKING:
    from ..assets import AssetStore
    from ..remoting.gateway import Gateway

__all__ = ["app", "build", "main"]


def build(
    db_path: Optional[str | os.PathLike[str]] = None,
    *,
    debug: bool = False,
    feed: bool = False,
    assets: AssetStore | str | os.PathLike[str] | None = None,
    **options: Any,
) -> Gateway:
    """A gateway serving the demo services (the tile database is created if needed), the
    demo's messaging destinations and its asset store (a folder, seeded with the file
    storage article's images if needed); `feed` starts the live price feed (a daemon thread,
    `gateway.price_feed`, stopped by `gateway.price_feed.stop()`)."""
    from ..remoting.gateway import Gateway
    from . import assets as demo_assets
    from .live import PriceFeed, demo_messaging

    shared = os.environ.get("AMFKIT_DEMO_SHARED")
    if shared:  # several workers: messaging and sessions in the store they share
        options.setdefault("session_store", shared)
    options.setdefault("messaging", demo_messaging(broker=shared) if shared else demo_messaging())
    # The service browser at / (docs/browser.md): on unless AMFKIT_DEMO_BROWSER=0 (the
    # benchmarks measure the gateway as served in production: no page, no Server-Timing).
    options.setdefault("browser", os.environ.get("AMFKIT_DEMO_BROWSER", "1") != "0")
    store = demo_assets.open_store(assets if assets is not None else demo_assets.default_path(db_path=db_path))
    gateway = Gateway(build_services(db_path, assets=store), debug=debug, assets=store, **options)
    if feed and gateway.messaging is not None:
        gateway.price_feed = PriceFeed(gateway.messaging).start()  # type: ignore[attr-defined]
    return gateway


_app: Optional[Gateway] = None
_app_lock = threading.Lock()


def __getattr__(name: str) -> Any:
    if name == "app":
        global _app
        with _app_lock:
            if _app is None:
                timeout = os.environ.get("AMFKIT_DEMO_BODY_TIMEOUT")
                _app = build(body_timeout=float(timeout), feed=True) if timeout else build(feed=True)
            return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Serve the demo gateway with uvicorn (one process)."""
    parser = argparse.ArgumentParser(prog="python -m amfkit.demo.app", description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--db", default=None, help="the tile database file (created when missing)")
    parser.add_argument("--assets", default=None, metavar="DIR", help="the asset folder (default: demo-assets-PORT beside the database)")
    parser.add_argument("--debug", action="store_true", help="include tracebacks in faults")
    args = parser.parse_args(argv)
    try:
        import uvicorn
    except ImportError:
        parser.error("uvicorn is not installed: pip install 'amfkit[server]'")
    from .assets import default_path as assets_path

    gateway = build(args.db, debug=args.debug, feed=True, assets=args.assets or assets_path(args.port, args.db))
    print(f"amfkit demo gateway: http://{args.host}:{args.port}/gateway (the service browser: http://{args.host}:{args.port}/)")
    uvicorn.run(gateway, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
