"""The value readings of `amfkit decode`: `amfkit.framing`, where they live (`amfkit.payload`
tries them); kept under this name for existing imports."""

from __future__ import annotations

from ..framing import Decoded, DetectError, attempts_for, decode_auto

__all__ = ["Decoded", "DetectError", "decode_auto", "attempts_for"]
