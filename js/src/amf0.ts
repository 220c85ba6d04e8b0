// AMF0: `encode`, `decode`, and the reusable `Encoder` and `Decoder` (codec.ts).
//
// `encode(value)` writes one value; `decode(bytes)` reads exactly one value and rejects
// trailing bytes unless `allowTrailing`. `encodeAll` / `decodeAll` write and read a
// stream of values sharing one reference context (the AMF0 table, and one set of AMF3
// tables for every AVM+ switch in it).

import { readAmf0 } from "./amf0-read";
import { writeAmf0 } from "./amf0-write";
import { decodeWith, encodeWith, VersionDecoder, VersionEncoder } from "./codec";
import type { DecodeOptions, DecodeValueOptions } from "./limits";
import type { EncodeOptions } from "./writer";

/** Encode one value as AMF0. */
export function encode(value: unknown, options?: EncodeOptions): Uint8Array {
  return encodeWith(writeAmf0, value, options);
}

/** Decode one AMF0 value; bytes after it are an error unless `allowTrailing`. */
export function decode(data: Uint8Array | ArrayBuffer, options?: DecodeValueOptions): unknown {
  return decodeWith(readAmf0, data, options);
}

/** Decodes with the options given once; each call is a new reference context, except
 * within `decodeAll`. */
export class Decoder extends VersionDecoder {
  constructor(options: DecodeOptions = {}) {
    super(readAmf0, options);
  }
}

/** Encodes with the options given once, reusing its buffer. */
export class Encoder extends VersionEncoder {
  constructor(options: EncodeOptions = {}) {
    super(writeAmf0, options);
  }
}
