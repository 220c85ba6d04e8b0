"""`amfkit serve --replay FILE...`: what the serve command needs to serve a capture's
recorded answers (docs/capture.md, "Replay"). The capture is read here once, so that a
file that cannot be read is one clear line; every worker reads it again from the
environment (`amfkit.capture.replay_app`)."""

from __future__ import annotations

import json
import os

__all__ = ["APP", "prepare"]

APP = "amfkit.capture.replay_app:app"


def prepare(files: list[str], match: str) -> str:
    """Check that the captures hold calls, put them in the environment for the workers,
    and return the app to serve."""
    from .errors import CLIError, import_amfkit

    import_amfkit()
    from .. import capture
    from ..capture.replay import ENV

    total = 0
    for path in files:
        try:
            found = capture.calls_of(capture.read(path))
        except capture.CaptureError as e:
            raise CLIError(str(e)) from None
        total += len([c for c in found.calls if c.answered])
    if not total:
        raise CLIError(f"no answered AMF call in {', '.join(files)}: nothing to replay")
    os.environ[ENV] = json.dumps({"files": [os.path.abspath(f) for f in files], "match": match})
    return APP

