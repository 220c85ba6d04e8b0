"""AMF0: `encode`, `decode`, and the reusable `Encoder` and `Decoder`.

`encode(obj)` writes one value; `decode(data)` reads exactly one value and rejects
trailing bytes unless `allow_trailing=True`. An `Encoder` or `Decoder` resolves its
options once and is the fast path for many calls; `encode_all`/`decode_all` write and
read a stream of values sharing one reference context (a .sol body, an RTMP command).

Decoder options (safe defaults; see the README for the table):
    max_depth=128, max_objects=10_000_000, max_size=256 MiB (one string/ByteArray),
    tz_aware=False (datetimes are naive UTC; True gives aware UTC datetimes).
Encoder options:
    default=None (a callable turning an unknown object into an encodable one).
"""

from __future__ import annotations

from ._amfkit import Amf0Decoder as Decoder, Amf0Encoder as Encoder, amf0_decode as decode, amf0_encode as encode

__all__ = ["Decoder", "Encoder", "decode", "encode"]
