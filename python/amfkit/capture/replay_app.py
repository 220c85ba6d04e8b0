"""The app `amfkit serve --replay` runs in each worker: a replay gateway over the
captures named by the environment (`amfkit.capture.replay.settings`, set by
`amfkit.cli.replay`)."""

from __future__ import annotations

from ..remoting.gateway import Gateway
from .replay import settings

_settings = settings()
app = Gateway.from_capture(*_settings["files"], match=_settings["match"])
