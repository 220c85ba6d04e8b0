// What AMF0 and AMF3 share around their reader and writer: one value in or out, and the
// reusable `Decoder` and `Encoder` (amf0.ts and amf3.ts bind them to their version).

import { decodeStackError, encodeStackError } from "./errors";
import type { DecodeOptions, DecodeValueOptions } from "./limits";
import { Reader } from "./reader";
import { Writer, type EncodeOptions } from "./writer";

export type ReadValue = (r: Reader) => unknown;
export type WriteValue = (w: Writer, value: unknown) => void;

/** Encode one value with `write`. */
export function encodeWith(write: WriteValue, value: unknown, options?: EncodeOptions): Uint8Array {
  const w = new Writer(options, 256);
  try {
    write(w, value);
  } catch (e) {
    throw encodeStackError(e);
  }
  return w.result();
}

/** Decode one value with `read`; bytes after it are an error unless `allowTrailing`. */
export function decodeWith(read: ReadValue, data: Uint8Array | ArrayBuffer, options?: DecodeValueOptions): unknown {
  const r = new Reader(data, options);
  let value: unknown;
  try {
    value = read(r);
  } catch (e) {
    throw decodeStackError(e, r.pos);
  }
  if (options?.allowTrailing !== true) r.finish();
  return value;
}

/** Decodes with the options given once; each call is a new reference context, except
 * within `decodeAll`. */
export class VersionDecoder {
  readonly options: DecodeOptions;
  private readonly read: ReadValue;

  constructor(read: ReadValue, options: DecodeOptions = {}) {
    this.read = read;
    this.options = { ...options };
  }

  decode(data: Uint8Array | ArrayBuffer, options?: { allowTrailing?: boolean }): unknown {
    return decodeWith(this.read, data, { ...this.options, allowTrailing: options?.allowTrailing === true });
  }

  /** Every value of a stream (until the input ends), one reference context for all. */
  decodeAll(data: Uint8Array | ArrayBuffer): unknown[] {
    const r = new Reader(data, this.options);
    const values: unknown[] = [];
    try {
      while (r.pos < r.end) values.push(this.read(r));
    } catch (e) {
      throw decodeStackError(e, r.pos);
    }
    return values;
  }
}

/** Encodes with the options given once, reusing its buffer. */
export class VersionEncoder {
  private readonly w: Writer;
  private readonly write: WriteValue;

  constructor(write: WriteValue, options: EncodeOptions = {}) {
    this.write = write;
    this.w = new Writer(options);
  }

  encode(value: unknown): Uint8Array {
    const w = this.w;
    w.clear();
    try {
      this.write(w, value);
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
      for (const v of values) this.write(w, v);
    } catch (e) {
      throw encodeStackError(e);
    }
    return w.result();
  }
}
