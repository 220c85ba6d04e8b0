"""The JSON of `amfkit decode --json` and `amfkit encode`: `amfkit.jsonio`, where it lives
(the mitmproxy view's JSON form uses it too); kept under this name for existing imports."""

from __future__ import annotations

from ..jsonio import JSONInputError, child_path, dumps, from_json, iter_json, loads

__all__ = ["dumps", "iter_json", "loads", "from_json", "JSONInputError", "child_path"]
