"""The packet printer of `amfkit decode`: `amfkit.decodetext`, where it lives (the capture
tools and the mitmproxy view print with it too); kept under this name for existing imports."""

from __future__ import annotations

from ..decodetext import OPERATIONS, flex_summary, iter_packet_lines, message_in

__all__ = ["OPERATIONS", "flex_summary", "iter_packet_lines", "message_in"]
