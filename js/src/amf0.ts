// AMF0: `encode`, `decode`, and the reusable `Encoder` and `Decoder`.
//
// `encode(value)` writes one value; `decode(bytes)` reads exactly one value and rejects
// trailing bytes unless `allowTrailing`. `encodeAll` / `decodeAll` write and read a
// stream of values sharing one reference context (the AMF0 table, and one set of AMF3
// tables for every AVM+ switch in it).

import { readAmf0 } from "./amf0-read";
import { writeAmf0 } from "./amf0-write";
import { decodeStackError, encodeStackError } from "./errors";
import type { DecodeOptions, DecodeValueOptions } from "./limits";
import { Reader } from "./reader";
import { Writer, type EncodeOptions } from "./writer";

/** Encode one value as AMF0. */
export function encode(value: unknown, options?: EncodeOptions): Uint8Array {
  const w = new Writer(options, 256);
  try {
    writeAmf0(w, value);
  } catch (e) {
    throw encodeStackError(e);
  }
  return w.result();
}

/** Decode one AMF0 value; bytes after it are an error unless `allowTrailing`. */
export function decode(data: Uint8Array | ArrayBuffer, options?: DecodeValueOptions): unknown {
  const r = new Reader(data, options);
  let value: unknown;
  try {
    value = readAmf0(r);
  } catch (e) {
    throw decodeStackError(e, r.pos);
  }
  if (options?.allowTrailing !== true) r.finish();
  return value;
}

/** Decodes with the options given once; each call is a new reference context, except
 * within `decodeAll`. */
export class Decoder {
  readonly options: DecodeOptions;

  constructor(options: DecodeOptions = {}) {
    this.options = { ...options };
  }

  decode(data: Uint8Array | ArrayBuffer, options?: { allowTrailing?: boolean }): unknown {
    return decode(data, { ...this.options, allowTrailing: options?.allowTrailing === true });
  }

  /** Every value of a stream (until the input ends), one reference context for all. */
  decodeAll(data: Uint8Array | ArrayBuffer): unknown[] {
    const r = new Reader(data, this.options);
    const values: unknown[] = [];
    try {
      while (r.pos < r.end) values.push(readAmf0(r));
    } catch (e) {
      throw decodeStackError(e, r.pos);
    }
    return values;
  }
}

/** Encodes with the options given once, reusing its buffer. */
export class Encoder {
  private readonly w: Writer;

  constructor(options: EncodeOptions = {}) {
    this.w = new Writer(options);
  }

  encode(value: unknown): Uint8Array {
    const w = this.w;
    w.clear();
    try {
      writeAmf0(w, value);
    } catch (e) {
      throw encodeStackError(e);
    }
    return w.result();
  }

  /** A stream of values sharing one reference context. */
  encodeAll(values: Iterable<unknown>): Uint8Array {
    const w = this.w;
    w.clear();
    try {
      for (const v of values) writeAmf0(w, v);
    } catch (e) {
      throw encodeStackError(e);
    }
    return w.result();
  }
}
