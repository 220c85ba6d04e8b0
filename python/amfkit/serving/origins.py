"""What `amfkit serve --cors ORIGIN --crossdomain DOMAIN ...` serves (`origins:app`): the
app MODULE:ATTR the command was given, imported in each worker, with the gateway's `cors`
and `crossdomain` set from the command line (they replace what the app itself set).

The command passes its target and options to the workers through the environment
(`APP_ENV`, `ORIGINS_ENV`), as it passes its other limits: uvicorn and granian start
their workers afresh and import the app by name. docs/cli.md ("serve") describes the
options; docs/gateway.md ("Clients on other origins") what they do.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
from typing import Any

__all__ = ["APP_ENV", "ORIGINS_ENV", "configure", "load", "settings_text"]

#: The app to serve, as MODULE:ATTR.
APP_ENV = "AMFKIT_SERVE_APP"
#: The origin options, as JSON: {"cors": [...] or null, "credentials": bool, "crossdomain": [...] or null}.
ORIGINS_ENV = "AMFKIT_SERVE_ORIGINS"


def settings_text(cors: list[str] | None, credentials: bool, crossdomain: list[str] | None) -> str:
    """The value of `ORIGINS_ENV` for these options."""
    return json.dumps({"cors": cors, "credentials": credentials, "crossdomain": crossdomain})


def load(target: str) -> Any:
    """The object MODULE:ATTR names (ATTR may be dotted)."""
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def configure(app: Any, settings: dict[str, Any]) -> Any:
    """Set the origin options `settings` (as `settings_text` writes them) on the gateway
    `app`; returns it. ValueError for an option a gateway refuses, TypeError for an app
    that is not a gateway."""
    from ..remoting import cors as _cors, crossdomain as _crossdomain

    if not hasattr(app, "cors") or not hasattr(app, "crossdomain"):
        raise TypeError(f"--cors and --crossdomain need an amfkit Gateway, not {type(app).__name__}")
    if settings.get("cors") is not None:
        origins = settings["cors"]
        app.cors = _cors.CORSPolicy("*" if origins == ["*"] else origins, credentials=bool(settings.get("credentials")))
    elif settings.get("credentials"):
        raise ValueError("--cors-credentials needs --cors (the origins allowed)")
    if settings.get("crossdomain") is not None:
        app.crossdomain = _crossdomain.CrossDomainPolicy(settings["crossdomain"])
    return app


_app: Any = None
_lock = threading.Lock()


def __getattr__(name: str) -> Any:
    if name == "app":
        global _app
        with _lock:
            if _app is None:
                _app = configure(load(os.environ[APP_ENV]), json.loads(os.environ.get(ORIGINS_ENV) or "{}"))
            return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
