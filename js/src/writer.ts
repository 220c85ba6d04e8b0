// The encoder's state, shared by both AMF versions: a growable output buffer, the
// nesting limit, and the reference tables of both versions (objects by identity, AMF3
// strings by value, AMF3 traits by their shape). The value writers live in
// amf0-write.ts and amf3-write.ts.

import { EncodeError } from "./errors";
import { resolveEncodeDepth } from "./limits";
import { encodeUtf8, utf8Length } from "./utf8";

/** Texts up to this many characters are cached, at most this many per encoder. */
const CACHED_TEXT_MAX = 64;
const CACHED_TEXTS = 4096;

/** The largest length, count or table index an AMF3 U29 header carries (2^28 - 1). */
export const MAX_LEN = 0x0fffffff;

/** Options of every encode (`amf0.encode`, `amf3.encode`, the Encoders, `packet.encode`). */
export interface EncodeOptions {
  /** Deepest nesting written; deeper data is an EncodeError, never a stack overflow
   * (cycles are references, not recursion). Default 1024. */
  maxDepth?: number;
  /** Called with a value the encoder cannot write (a function, a symbol, an instance of
   * a class that is not registered...); what it returns is written instead. */
  default?: (value: unknown) => unknown;
}

export class Writer {
  buf: Uint8Array;
  view: DataView;
  pos = 0;

  readonly maxDepth: number;
  readonly fallback: ((value: unknown) => unknown) | undefined;
  depth = 0;

  /** AMF0: object -> reference index; the next index. */
  refs0 = new Map<object, number>();
  next0 = 0;
  /** AMF3: string -> index, object -> index, traits key -> index, and the next indexes. */
  strings = new Map<string, number>();
  refs3 = new Map<object, number>();
  next3 = 0;
  traits3 = new Map<string, number>();
  nextTraits = 0;
  /** AMF0 writes member names (and often values) in full every time: the UTF-8 of short
   * texts already written, so that a repeat is a copy. */
  private texts = new Map<string, Uint8Array>();

  constructor(options: EncodeOptions | undefined, initialSize = 1024) {
    this.buf = new Uint8Array(initialSize);
    this.view = new DataView(this.buf.buffer);
    this.maxDepth = resolveEncodeDepth(options?.maxDepth);
    const fallback = options?.default;
    if (fallback !== undefined && typeof fallback !== "function") throw new TypeError("default must be a function");
    this.fallback = fallback;
  }

  /** Start a new reference context (both versions' tables). */
  reset(): void {
    if (this.next0 > 0) {
      this.refs0.clear();
      this.next0 = 0;
    }
    if (this.strings.size > 0) this.strings.clear();
    if (this.next3 > 0) {
      this.refs3.clear();
      this.next3 = 0;
    }
    if (this.nextTraits > 0) {
      this.traits3.clear();
      this.nextTraits = 0;
    }
  }

  /** Forget the output (the tables too): ready for the next encode. */
  clear(): void {
    this.pos = 0;
    this.depth = 0;
    this.reset();
  }

  /** A copy of what was written. */
  result(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }

  ensure(n: number): void {
    if (this.pos + n > this.buf.length) this.grow(n);
  }

  private grow(n: number): void {
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const buf = new Uint8Array(size);
    buf.set(this.buf.subarray(0, this.pos));
    this.buf = buf;
    this.view = new DataView(buf.buffer);
  }

  u8(v: number): void {
    if (this.pos >= this.buf.length) this.grow(1);
    this.buf[this.pos++] = v;
  }

  u16(v: number): void {
    this.ensure(2);
    this.buf[this.pos++] = v >>> 8;
    this.buf[this.pos++] = v;
  }

  i16(v: number): void {
    this.ensure(2);
    this.view.setInt16(this.pos, v);
    this.pos += 2;
  }

  u32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, v);
    this.pos += 4;
  }

  i32(v: number): void {
    this.ensure(4);
    this.view.setInt32(this.pos, v);
    this.pos += 4;
  }

  f32(v: number): void {
    this.ensure(4);
    this.view.setFloat32(this.pos, v);
    this.pos += 4;
  }

  f64(v: number): void {
    this.ensure(8);
    this.view.setFloat64(this.pos, v);
    this.pos += 8;
  }

  /** AMF3's U29 (0 .. 2^29-1), in the shortest form. */
  u29(v: number): void {
    this.ensure(4);
    const buf = this.buf;
    if (v < 0x80) {
      buf[this.pos++] = v;
    } else if (v < 0x4000) {
      buf[this.pos++] = (v >>> 7) | 0x80;
      buf[this.pos++] = v & 0x7f;
    } else if (v < 0x200000) {
      buf[this.pos++] = (v >>> 14) | 0x80;
      buf[this.pos++] = ((v >>> 7) & 0x7f) | 0x80;
      buf[this.pos++] = v & 0x7f;
    } else {
      buf[this.pos++] = (v >>> 22) | 0x80;
      buf[this.pos++] = ((v >>> 15) & 0x7f) | 0x80;
      buf[this.pos++] = ((v >>> 8) & 0x7f) | 0x80;
      buf[this.pos++] = v & 0xff;
    }
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** The UTF-8 length of `s`; a lone surrogate is an EncodeError. */
  measure(s: string): number {
    const len = utf8Length(s);
    if (len < 0) {
      throw new EncodeError(`a string with a lone surrogate at index ${-1 - len} cannot be written as UTF-8`);
    }
    return len;
  }

  /** Write the UTF-8 bytes of `s`, measured by `measure`. */
  text(s: string, byteLength: number): void {
    this.ensure(byteLength);
    this.pos = encodeUtf8(s, this.buf, this.pos, byteLength);
  }

  /** The UTF-8 of a short text, from the cache (undefined for a long one). */
  cachedText(s: string): Uint8Array | undefined {
    if (s.length > CACHED_TEXT_MAX) return undefined;
    let bytes = this.texts.get(s);
    if (bytes === undefined) {
      const len = this.measure(s);
      bytes = new Uint8Array(len);
      encodeUtf8(s, bytes, 0, len);
      if (this.texts.size < CACHED_TEXTS) this.texts.set(s, bytes);
    }
    return bytes;
  }

  /** Copy short bytes (a loop beats `set` for a few bytes). */
  copy(b: Uint8Array): void {
    const n = b.length;
    this.ensure(n);
    const buf = this.buf;
    let p = this.pos;
    if (n < 32) for (let i = 0; i < n; i++) buf[p++] = b[i]!;
    else {
      buf.set(b, p);
      p += n;
    }
    this.pos = p;
  }

  /** An AMF0 / IDataOutput writeUTF string: u16 length, then UTF-8. */
  utf(s: string): void {
    const cached = this.cachedText(s);
    if (cached !== undefined) {
      this.ensure(2);
      this.buf[this.pos++] = cached.length >>> 8;
      this.buf[this.pos++] = cached.length;
      this.copy(cached);
      return;
    }
    const len = this.measure(s);
    if (len > 0xffff) throw new EncodeError(`a key or class name of ${len} bytes exceeds amf0's 65535`);
    this.ensure(2 + len);
    this.buf[this.pos++] = len >>> 8;
    this.buf[this.pos++] = len;
    this.pos = encodeUtf8(s, this.buf, this.pos, len);
  }

  enter(): void {
    if (++this.depth > this.maxDepth) throw new EncodeError(`nesting deeper than ${this.maxDepth}`);
  }
}

/** The name of a value's type, for messages. */
export function describe(value: unknown): string {
  if (typeof value === "function") return "a function";
  if (typeof value === "symbol") return "a symbol";
  if (typeof value === "object" && value !== null) {
    const proto = Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null;
    const name = proto?.constructor?.name;
    return `an object of class ${typeof name === "string" && name !== "" ? name : "(anonymous)"}`;
  }
  return `a ${typeof value}`;
}

/** A value neither encoder can write: write what `default` returns for it, or fail. A
 * `default` that keeps returning what cannot be written ends at the nesting limit. */
export function unencodable(w: Writer, value: unknown, write: (w: Writer, v: unknown) => void): void {
  if (w.fallback !== undefined) {
    const replacement = w.fallback(value);
    w.enter();
    write(w, replacement);
    w.depth--;
    return;
  }
  throw new EncodeError(
    `cannot encode ${describe(value)}` +
      (typeof value === "object" ? ": register its class with registerClassAlias, or pass a default" : ""),
  );
}
