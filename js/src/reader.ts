// The decoder's state, shared by both AMF versions: a bounds-checked cursor over the
// input (every read checks the bytes left first, and every declared length or count is
// checked against them before anything is allocated), the limits, and the reference
// tables of both versions. The value readers live in amf0-read.ts and amf3-read.ts.

import { DecodeError, lengthExceeds, shown, sizeLimit, unexpectedEnd } from "./errors";
import { resolveLimits, type DecodeOptions } from "./limits";
import { specForAlias, type ClassSpec, type ExternalHooks } from "./registry";
import { ARRAY_COLLECTION, ARRAY_LIST, OBJECT_PROXY, Traits, typedPrototype } from "./types";
import { decodeUtf8 } from "./utf8";

/** Texts up to this many bytes are cached, at most this many per decode. */
const CACHED_TEXT_MAX = 64;
const CACHED_TEXTS = 4096;

/** How objects of one class (one traits entry, or one AMF0 class name) are built. */
export const ANON = 0;
export const TYPED = 1;
export const REGISTERED = 2;
export const EXTERNAL = 3;
export const COLLECTION = 4;
export const LIST = 5;
export const PROXY = 6;

export interface ClassInfo {
  readonly kind: number;
  readonly alias: string;
  readonly sealed: readonly string[];
  readonly dynamic: boolean;
  /** The prototype of a TYPED or REGISTERED object. */
  readonly proto: object | null;
  /** REGISTERED and EXTERNAL: the registered class. */
  readonly spec: ClassSpec | undefined;
  readonly external: ExternalHooks | undefined;
  /** REGISTERED with dynamic false: the names it declares (others are ignored). */
  readonly accept: Set<string> | null;
}

const ANON_INFO: ClassInfo = {
  kind: ANON,
  alias: "",
  sealed: [],
  dynamic: true,
  proto: null,
  spec: undefined,
  external: undefined,
  accept: null,
};

export class Reader {
  readonly buf: Uint8Array;
  readonly view: DataView;
  readonly end: number;
  pos = 0;

  readonly maxDepth: number;
  readonly maxObjects: number;
  readonly maxSize: number;
  readonly lossless: boolean;
  depth = 0;
  objects = 0;

  /** AMF0: the complex values in the order their markers were read. */
  refs0: unknown[] = [];
  /** AMF0: the classes met in this context, by name. */
  classes0 = new Map<string, ClassInfo>();
  /** AMF3: the string, object and traits tables. */
  strings: string[] = [];
  refs3: unknown[] = [];
  traits3: ClassInfo[] = [];
  /** AMF0 repeats member names (and often values) in full in every object: short texts
   * already decoded, by a hash of their bytes, so that a repeat costs no new string. */
  private texts = new Map<number, { bytes: Uint8Array; text: string }>();

  constructor(data: Uint8Array | ArrayBuffer, options: DecodeOptions | undefined) {
    const buf = toBytes(data);
    this.buf = buf;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.end = buf.length;
    const limits = resolveLimits(options);
    this.maxDepth = limits.maxDepth;
    this.maxObjects = limits.maxObjects;
    this.maxSize = limits.maxSize;
    this.lossless = options?.lossless === true;
  }

  /** Start a new reference context (both versions' tables). */
  reset(): void {
    this.refs0 = [];
    this.classes0 = new Map();
    this.strings = [];
    this.refs3 = [];
    this.traits3 = [];
  }

  eof(needed: number): DecodeError {
    return unexpectedEnd(needed - (this.end - this.pos), this.end);
  }

  u8(): number {
    if (this.pos >= this.end) throw this.eof(1);
    return this.buf[this.pos++]!;
  }

  u16(): number {
    if (this.end - this.pos < 2) throw this.eof(2);
    const p = this.pos;
    this.pos = p + 2;
    return (this.buf[p]! << 8) | this.buf[p + 1]!;
  }

  i16(): number {
    if (this.end - this.pos < 2) throw this.eof(2);
    const v = this.view.getInt16(this.pos);
    this.pos += 2;
    return v;
  }

  u32(): number {
    if (this.end - this.pos < 4) throw this.eof(4);
    const v = this.view.getUint32(this.pos);
    this.pos += 4;
    return v;
  }

  i32(): number {
    if (this.end - this.pos < 4) throw this.eof(4);
    const v = this.view.getInt32(this.pos);
    this.pos += 4;
    return v;
  }

  f32(): number {
    if (this.end - this.pos < 4) throw this.eof(4);
    const v = this.view.getFloat32(this.pos);
    this.pos += 4;
    return v;
  }

  f64(): number {
    if (this.end - this.pos < 8) throw this.eof(8);
    const v = this.view.getFloat64(this.pos);
    this.pos += 8;
    return v;
  }

  /** AMF3's variable-length unsigned 29-bit integer: 1 to 4 bytes, 7 bits in each of the
   * first three (high bit: more follows), all 8 bits of a fourth. */
  u29(): number {
    const buf = this.buf;
    let p = this.pos;
    if (p >= this.end) throw this.eof(1);
    let b = buf[p++]!;
    if (b < 0x80) {
      this.pos = p;
      return b;
    }
    let v = (b & 0x7f) << 7;
    if (p >= this.end) throw this.eof(1);
    b = buf[p++]!;
    if (b < 0x80) {
      this.pos = p;
      return v | b;
    }
    v = (v | (b & 0x7f)) << 7;
    if (p >= this.end) throw this.eof(1);
    b = buf[p++]!;
    if (b < 0x80) {
      this.pos = p;
      return v | b;
    }
    v = (v | (b & 0x7f)) << 8;
    if (p >= this.end) throw this.eof(1);
    b = buf[p++]!;
    this.pos = p;
    return v | b;
  }

  /** Check that a declared count of items, each at least `minItem` bytes, fits in what is
   * left, before anything is allocated for it. */
  checkCount(what: string, count: number, minItem: number): void {
    const left = this.end - this.pos;
    if (count * minItem > left) throw lengthExceeds(what, count, left, this.pos);
  }

  /** Check a declared size against maxSize and the bytes left. */
  checkSize(what: string, len: number): void {
    if (len > this.maxSize) throw sizeLimit(what, len, this.maxSize, this.pos);
    this.checkCount(what, len, 1);
  }

  /** Take `len` bytes as UTF-8 text. */
  utf8(what: string, len: number): string {
    this.checkCount(what, len, 1);
    const start = this.pos;
    const s = decodeUtf8(this.buf, start, start + len);
    if (typeof s === "number") throw new DecodeError("invalid utf-8 in string", s);
    this.pos = start + len;
    return s;
  }

  /** Take `len` bytes as UTF-8 text, through the cache of short texts (AMF0). */
  cachedUtf8(what: string, len: number): string {
    if (len > CACHED_TEXT_MAX || len === 0) return this.utf8(what, len);
    this.checkCount(what, len, 1);
    const buf = this.buf;
    const start = this.pos;
    const end = start + len;
    let h = len;
    for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i]!, 16777619);
    const entry = this.texts.get(h);
    if (entry !== undefined && entry.bytes.length === len) {
      const b = entry.bytes;
      let i = 0;
      while (i < len && b[i] === buf[start + i]) i++;
      if (i === len) {
        this.pos = end;
        return entry.text;
      }
    }
    const text = this.utf8(what, len);
    if (this.texts.size < CACHED_TEXTS || entry !== undefined) this.texts.set(h, { bytes: buf.slice(start, end), text });
    return text;
  }

  /** An AMF0 / IDataInput readUTF string: u16 length, then UTF-8. */
  readUtf(): string {
    const len = this.u16();
    return this.utf8("string length", len);
  }

  /** Take `len` raw bytes (a view into the input). */
  take(len: number): Uint8Array {
    if (len > this.end - this.pos) throw this.eof(len);
    const p = this.pos;
    this.pos = p + len;
    return this.buf.subarray(p, p + len);
  }

  enter(): void {
    if (this.depth >= this.maxDepth) {
      throw new DecodeError(`nesting deeper than the limit of ${this.maxDepth}`, this.pos);
    }
    this.depth++;
  }

  countObject(): void {
    if (++this.objects > this.maxObjects) {
      throw new DecodeError(`more than the limit of ${this.maxObjects} objects`, this.pos);
    }
  }

  /** Fail if any input is left. */
  finish(): void {
    const left = this.end - this.pos;
    if (left > 0) {
      throw new DecodeError(`${left} trailing byte${left === 1 ? "" : "s"} after the value`, this.pos);
    }
  }

  /** How objects of a class are built: resolved once per traits entry. */
  classInfo(alias: string, sealed: readonly string[], dynamic: boolean, externalizable: boolean): ClassInfo {
    if (externalizable) {
      const kind =
        alias === ARRAY_COLLECTION ? COLLECTION : alias === ARRAY_LIST ? LIST : alias === OBJECT_PROXY ? PROXY : -1;
      if (kind >= 0) return { ...ANON_INFO, kind, alias, dynamic: false };
      const spec = specForAlias(alias);
      if (spec === undefined || spec.external === undefined) {
        throw new DecodeError(
          `externalizable class ${shown(alias)} is not registered, its body cannot be read`,
          this.pos,
        );
      }
      return { ...ANON_INFO, kind: EXTERNAL, alias, dynamic: false, spec, external: spec.external };
    }
    const spec = specForAlias(alias);
    if (spec !== undefined) {
      return {
        kind: REGISTERED,
        alias,
        sealed,
        dynamic,
        proto: spec.proto,
        spec,
        external: spec.external,
        accept: spec.traits.dynamic ? null : spec.traits.names,
      };
    }
    if (alias === "" && sealed.length === 0 && dynamic) return ANON_INFO;
    return {
      kind: TYPED,
      alias,
      sealed,
      dynamic,
      proto: typedPrototype(new Traits(alias, sealed, dynamic)),
      spec: undefined,
      external: undefined,
      accept: null,
    };
  }
}

/** The bytes of a Uint8Array (a Node Buffer too) or an ArrayBuffer. */
export function toBytes(data: Uint8Array | ArrayBuffer): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) {
    const v = data as ArrayBufferView;
    return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  }
  throw new TypeError("AMF input must be a Uint8Array or an ArrayBuffer");
}
