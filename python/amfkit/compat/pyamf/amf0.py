"""`pyamf.amf0`: AMF0's `Encoder` and `Decoder`, on amfkit's codec (see `_codec`)."""

from __future__ import annotations

from ._codec import Amf0Decoder as Decoder
from ._codec import Amf0Encoder as Encoder

__all__ = ["Decoder", "Encoder"]
