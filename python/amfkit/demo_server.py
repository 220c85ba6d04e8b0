"""The demo gateway: the demo services (`amfkit.demo_services`) behind an ASGI `Gateway`.

    amfkit serve --demo                       # http://127.0.0.1:8000/gateway
    amfkit serve amfkit.demo_server:app       # the same app by import string
    python -m amfkit.demo_server --port 8001  # without the CLI

- `build(db_path=None, *, debug=False, **options) -> Gateway`: a new gateway over a new
  set of demo services; `options` go to `Gateway` as they are.
- `app`: the gateway `build()` makes with the defaults, created on first access (so
  importing this module touches no file). The tile database's location comes from
  `AMFKIT_DEMO_DB` when set (a server starting several worker processes sets it once,
  before they import `app`), else from `amfkit.demo_data.default_path()`;
  `AMFKIT_DEMO_BODY_TIMEOUT` (seconds), when set, is its `body_timeout`
  (`amfkit serve --demo --body-timeout S` sets it).
"""

from __future__ import annotations

import argparse
import os
import threading
from typing import TYPE_CHECKING, Any, Optional, Sequence

from .demo_services import build_services

if TYPE_CHECKING:
    from .remoting.gateway import Gateway

__all__ = ["app", "build", "main"]


def build(db_path: Optional[str | os.PathLike[str]] = None, *, debug: bool = False, **options: Any) -> Gateway:
    """A gateway serving the demo services (the tile database is created if needed)."""
    from .remoting.gateway import Gateway

    return Gateway(build_services(db_path), debug=debug, **options)


_app: Optional[Gateway] = None
_app_lock = threading.Lock()


def __getattr__(name: str) -> Any:
    if name == "app":
        global _app
        with _app_lock:
            if _app is None:
                timeout = os.environ.get("AMFKIT_DEMO_BODY_TIMEOUT")
                _app = build(body_timeout=float(timeout)) if timeout else build()
            return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Serve the demo gateway with uvicorn (one process)."""
    parser = argparse.ArgumentParser(prog="python -m amfkit.demo_server", description=main.__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--db", default=None, help="the tile database file (created when missing)")
    parser.add_argument("--debug", action="store_true", help="include tracebacks in faults")
    args = parser.parse_args(argv)
    try:
        import uvicorn
    except ImportError:
        parser.error("uvicorn is not installed: pip install 'amfkit[server]'")
    gateway = build(args.db, debug=args.debug)
    print(f"amfkit demo gateway: http://{args.host}:{args.port}/gateway")
    uvicorn.run(gateway, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
