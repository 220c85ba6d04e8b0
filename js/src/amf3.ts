// AMF3: `encode`, `decode`, and the reusable `Encoder` and `Decoder` (codec.ts).
//
// `encode(value)` writes one value; `decode(bytes)` reads exactly one value and rejects
// trailing bytes unless `allowTrailing`. `encodeAll` / `decodeAll` write and read a
// stream of values sharing one reference context.

import { readAmf3 } from "./amf3-read";
import { writeAmf3 } from "./amf3-write";
import { decodeWith, encodeWith, VersionDecoder, VersionEncoder } from "./codec";
import type { DecodeOptions, DecodeValueOptions } from "./limits";
import type { EncodeOptions } from "./writer";

/** Encode one value as AMF3. */
export function encode(value: unknown, options?: EncodeOptions): Uint8Array {
  return encodeWith(writeAmf3, value, options);
}

/** Decode one AMF3 value; bytes after it are an error unless `allowTrailing`. */
export function decode(data: Uint8Array | ArrayBuffer, options?: DecodeValueOptions): unknown {
  return decodeWith(readAmf3, data, options);
}

/** Decodes with the options given once; each call is a new reference context, except
 * within `decodeAll`. */
export class Decoder extends VersionDecoder {
  constructor(options: DecodeOptions = {}) {
    super(readAmf3, options);
  }
}

/** Encodes with the options given once, reusing its buffer. */
export class Encoder extends VersionEncoder {
  constructor(options: EncodeOptions = {}) {
    super(writeAmf3, options);
  }
}
