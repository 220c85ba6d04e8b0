"""The app `amfkit serve --replay` runs in each worker: a replay gateway over the
captures named by the environment (`amfkit.cli.replay`)."""

from __future__ import annotations

from ..cli.replay import settings
from ..remoting.gateway import Gateway

_settings = settings()
app = Gateway.from_capture(*_settings["files"], match=_settings["match"])
