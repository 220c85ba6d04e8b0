"""The value paths of `amfkit sol --get/--set/--delete`: `amfkit.valuepath`, where they
live (`amfkit.sol.edit` uses them too); kept under this name for existing imports."""

from __future__ import annotations

from ..valuepath import CODECS, Codec, PathError, Step, delete, get, locate, parse, parse_assignment, set_value, text

__all__ = ["CODECS", "Codec", "PathError", "Step", "delete", "get", "locate", "parse", "parse_assignment", "set_value", "text"]
