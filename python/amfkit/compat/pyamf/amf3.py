"""`pyamf.amf3`: AMF3's `Encoder` and `Decoder`, on amfkit's codec (see `_codec`), and
`ByteArray` (written as an AMF3 ByteArray; one read back is `bytes`)."""

from __future__ import annotations

from ._codec import Decoder, Encoder
from ._types import ByteArray

__all__ = ["ByteArray", "Decoder", "Encoder"]
