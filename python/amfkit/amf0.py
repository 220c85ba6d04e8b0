"""AMF0: `encode`, `decode`, and the reusable `Encoder` and `Decoder`.

`encode(obj)` writes one value; `decode(data)` reads exactly one value and rejects
trailing bytes unless `allow_trailing=True`. An `Encoder` or `Decoder` resolves its
options once and is the fast path for many calls; `encode_all`/`decode_all` write and
read a stream of values sharing one reference context (a .sol body, an RTMP command).
The options (`max_depth`, `max_objects`, `max_size`, `tz_aware`; `default`) and their
defaults are in the README: "Errors and limits", the mapping table, "Classes".
"""

from __future__ import annotations

from ._amfkit import Amf0Decoder as Decoder, Amf0Encoder as Encoder, amf0_decode as decode, amf0_encode as encode

__all__ = ["Decoder", "Encoder", "decode", "encode"]
