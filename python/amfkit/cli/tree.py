"""The value tree `amfkit decode` prints: `amfkit.tree`, where it lives (the capture tools
print with it too); kept under this name for existing imports."""

from __future__ import annotations

from ..tree import iso_utc, iter_lines, iter_stream_lines, render, render_stream, summary, type_name

__all__ = ["render", "render_stream", "iter_lines", "iter_stream_lines", "type_name", "summary", "iso_utc"]
