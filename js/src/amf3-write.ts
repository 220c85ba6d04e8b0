// The AMF3 value writer (AMF 3 specification, section 3). Objects are written once and
// referenced after (by identity), strings once and referenced after (by value; the
// empty string is never referenced), traits once and referenced after (by shape: alias,
// sealed names, dynamic and externalizable flags).

import { EncodeError, within } from "./errors";
import { LITTLE_ENDIAN } from "./amf3-read";
import { specForProto, type ClassSpec, type DataOutput } from "./registry";
import {
  ANONYMOUS,
  ARRAY_COLLECTION,
  ARRAY_LIST,
  AmfDate,
  ArrayCollection,
  ArrayList,
  Avmplus,
  Double,
  MixedArray,
  OBJECT_PROXY,
  ObjectProxy,
  ObjectVector,
  TRAITS,
  Traits,
  TypedObject,
  UNSUPPORTED,
  Xml,
  XmlDocument,
} from "./types";
import { MAX_LEN, unencodable, type Writer } from "./writer";

const INT_MIN = -0x10000000;
const INT_MAX = 0x0fffffff;
/** Most sealed members traits can declare (the count has 25 bits of the U29). */
const MAX_SEALED = (1 << 25) - 1;
/** Traits indexes a reference can carry (the index has 27 bits of the U29). */
const MAX_TRAITS = 1 << 27;

const COLLECTION_TRAITS = new Traits(ARRAY_COLLECTION, [], false, true);
const LIST_TRAITS = new Traits(ARRAY_LIST, [], false, true);
const PROXY_TRAITS = new Traits(OBJECT_PROXY, [], false, true);

/** Write one AMF3 value. */
export function writeAmf3(w: Writer, v: unknown): void {
  switch (typeof v) {
    case "string":
      w.u8(0x06);
      writeString(w, v);
      return;
    case "number":
      writeNumber(w, v);
      return;
    case "boolean":
      w.u8(v ? 0x03 : 0x02);
      return;
    case "undefined":
      w.u8(0x00);
      return;
    case "object":
      if (v === null) w.u8(0x01);
      else writeObject(w, v);
      return;
    case "bigint":
      if (v >= BigInt(INT_MIN) && v <= BigInt(INT_MAX)) writeNumber(w, Number(v));
      else writeDouble(w, Number(v));
      return;
    default:
      unencodable(w, v, writeAmf3);
  }
}

/** An integer in -2^28 .. 2^28-1 (not -0) as the 29-bit integer type, anything else as
 * a double (as Flash Player does). */
function writeNumber(w: Writer, n: number): void {
  if (n >= INT_MIN && n <= INT_MAX && Math.floor(n) === n && (n !== 0 || 1 / n > 0)) {
    w.u8(0x04);
    w.u29(n & 0x1fffffff);
  } else {
    writeDouble(w, n);
  }
}

function writeDouble(w: Writer, n: number): void {
  w.ensure(9);
  w.buf[w.pos++] = 0x05;
  w.view.setFloat64(w.pos, n);
  w.pos += 8;
}

/** A string without marker (a value, key, class or member name) through the table. */
export function writeString(w: Writer, s: string): void {
  if (s === "") {
    w.u8(0x01);
    return;
  }
  const strings = w.strings;
  const index = strings.get(s);
  if (index !== undefined) {
    w.u29(index << 1);
    return;
  }
  const len = w.measure(s);
  if (len > MAX_LEN) throw new EncodeError(`string of ${len} exceeds amf3's limit of ${MAX_LEN}`);
  const next = strings.size;
  if (next < MAX_LEN) strings.set(s, next);
  w.ensure(4 + len);
  w.u29((len << 1) | 1);
  w.text(s, len);
}

/** Write `marker`, then a reference if `obj` was written before (returns true), or take
 * the next object index for it (returns false: the caller writes the body). */
function reference(w: Writer, marker: number, obj: object): boolean {
  w.u8(marker);
  const index = w.refs3.get(obj);
  if (index !== undefined) {
    w.u29(index << 1);
    return true;
  }
  if (w.next3 < MAX_LEN) w.refs3.set(obj, w.next3);
  w.next3++;
  return false;
}

/** A length header (len << 1 | 1). */
function length(w: Writer, len: number, what: string): void {
  if (len > MAX_LEN) throw new EncodeError(`${what} of ${len} exceeds amf3's limit of ${MAX_LEN}`);
  w.u29((len << 1) | 1);
}

/** Traits: a reference to the same traits written before, or inline. */
function writeTraits(w: Writer, t: Traits): void {
  const key = t.key;
  const index = w.traits3.get(key);
  if (index !== undefined) {
    w.u29((index << 2) | 1);
    return;
  }
  const sealed = t.sealed;
  if (t.externalizable) {
    w.u29(0x07);
  } else {
    if (sealed.length > MAX_SEALED) throw new EncodeError(`${sealed.length} sealed members exceed amf3's limit`);
    w.u29((sealed.length << 4) | (t.dynamic ? 0x08 : 0) | 0x03);
  }
  writeString(w, t.alias);
  if (!t.externalizable) for (let i = 0; i < sealed.length; i++) writeString(w, sealed[i]!);
  if (w.nextTraits < MAX_TRAITS) w.traits3.set(key, w.nextTraits);
  w.nextTraits++;
}

function writeObject(w: Writer, v: object): void {
  const proto = Object.getPrototypeOf(v) as object | null;
  if (proto === Object.prototype || proto === null) {
    writeAnonymous(w, v as Record<string, unknown>);
    return;
  }
  if (proto === Array.prototype) {
    writeArray(w, v as unknown[]);
    return;
  }
  const spec = specForProto(proto);
  if (spec !== undefined) {
    writeRegistered(w, v, spec.select !== undefined ? spec.select(v) : spec);
    return;
  }
  if (v instanceof TypedObject) {
    if (reference(w, 0x0a, v)) return;
    writeTraits(w, v[TRAITS]);
    w.enter();
    writeMembers(w, v as unknown as Record<string, unknown>, v[TRAITS]);
    w.depth--;
    return;
  }
  if (v instanceof Date) {
    if (reference(w, 0x08, v)) return;
    w.u8(0x01);
    w.f64(v.getTime());
    return;
  }
  if (v instanceof AmfDate) {
    if (reference(w, 0x08, v)) return;
    w.u8(0x01);
    w.f64(v.ms);
    return;
  }
  if (v instanceof Double) {
    writeDouble(w, v.value);
    return;
  }
  if (v instanceof Avmplus) {
    writeAmf3(w, v.value);
    return;
  }
  if (ArrayBuffer.isView(v)) {
    writeView(w, v);
    return;
  }
  if (v instanceof ArrayBuffer) {
    if (reference(w, 0x0c, v)) return;
    length(w, v.byteLength, "bytearray");
    w.bytes(new Uint8Array(v));
    return;
  }
  if (Array.isArray(v)) {
    if (v instanceof ArrayCollection || v instanceof ArrayList) {
      writeCollection(w, v, v instanceof ArrayCollection ? COLLECTION_TRAITS : LIST_TRAITS);
    } else if (v instanceof ObjectVector) {
      writeObjectVector(w, v);
    } else {
      writeArray(w, v);
    }
    return;
  }
  if (v instanceof MixedArray) {
    writeMixedArray(w, v);
    return;
  }
  if (v instanceof Map) {
    writeDictionary(w, v, (v as { weakKeys?: unknown }).weakKeys === true);
    return;
  }
  if (v instanceof Xml || v instanceof XmlDocument) {
    if (reference(w, v instanceof Xml ? 0x0b : 0x07, v)) return;
    const len = w.measure(v.text);
    length(w, len, "xml");
    w.text(v.text, len);
    return;
  }
  if (v instanceof ObjectProxy) {
    if (reference(w, 0x0a, v)) return;
    writeTraits(w, PROXY_TRAITS);
    w.enter();
    // The body: the wrapped object, an anonymous object of the proxy's members.
    w.u8(0x0a);
    w.next3++;
    writeTraits(w, ANONYMOUS);
    writeDynamic(w, v as Record<string, unknown>, null);
    w.depth--;
    return;
  }
  if (v === UNSUPPORTED) {
    w.u8(0x00);
    return;
  }
  unencodable(w, v, writeAmf3);
}

function writeAnonymous(w: Writer, o: Record<string, unknown>): void {
  if (reference(w, 0x0a, o)) return;
  writeTraits(w, ANONYMOUS);
  w.enter();
  writeDynamic(w, o, null);
  w.depth--;
}

/** Dynamic members (own enumerable string keys, those in `skip` excepted), then the
 * empty string that ends them. */
function writeDynamic(w: Writer, o: Record<string, unknown>, skip: Set<string> | null): void {
  const keys = Object.keys(o);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (skip !== null && skip.has(k)) continue;
    if (k === "") throw new EncodeError("an empty member name cannot be written in amf3");
    writeString(w, k);
    try {
      writeAmf3(w, o[k]);
    } catch (e) {
      throw within(e, k);
    }
  }
  w.u8(0x01);
}

/** The members of an object with traits `t`: sealed in order, then dynamic ones. A
 * sealed member the object does not have is written as undefined. */
function writeMembers(w: Writer, o: Record<string, unknown>, t: Traits): void {
  const sealed = t.sealed;
  for (let i = 0; i < sealed.length; i++) {
    const k = sealed[i]!;
    try {
      writeAmf3(w, o[k]);
    } catch (e) {
      throw within(e, k);
    }
  }
  if (t.dynamic) writeDynamic(w, o, sealed.length > 0 ? t.names : null);
}

function writeRegistered(w: Writer, o: object, spec: ClassSpec): void {
  if (reference(w, 0x0a, o)) return;
  writeTraits(w, spec.traits);
  w.enter();
  if (spec.external !== undefined) {
    try {
      spec.external.write(o, new Output(w));
    } catch (e) {
      throw within(e, `<${spec.alias}>`);
    }
  } else {
    writeMembers(w, o as Record<string, unknown>, spec.traits);
  }
  w.depth--;
}

function writeItems(w: Writer, items: ArrayLike<unknown>): void {
  let i = 0;
  try {
    for (const n = items.length; i < n; i++) writeAmf3(w, items[i]);
  } catch (e) {
    throw within(e, i);
  }
}

function writeArray(w: Writer, a: unknown[]): void {
  if (reference(w, 0x09, a)) return;
  length(w, a.length, "array length");
  w.u8(0x01);
  w.enter();
  writeItems(w, a);
  w.depth--;
}

function writeMixedArray(w: Writer, m: MixedArray): void {
  if (reference(w, 0x09, m)) return;
  const dense = m.dense;
  length(w, dense.length, "array length");
  w.enter();
  for (const [key, value] of m) {
    const k = String(key);
    if (k === "") throw new EncodeError("an empty member name cannot be written in amf3");
    writeString(w, k);
    try {
      writeAmf3(w, value);
    } catch (e) {
      throw within(e, k);
    }
  }
  w.u8(0x01);
  writeItems(w, dense);
  w.depth--;
}

/** An ArrayCollection or ArrayList: externalizable traits, then its items as an Array. */
function writeCollection(w: Writer, items: unknown[], traits: Traits): void {
  if (reference(w, 0x0a, items)) return;
  writeTraits(w, traits);
  w.enter();
  w.u8(0x09);
  w.next3++;
  length(w, items.length, "array length");
  w.u8(0x01);
  writeItems(w, items);
  w.depth--;
}

function writeObjectVector(w: Writer, v: ObjectVector): void {
  if (reference(w, 0x10, v)) return;
  length(w, v.length, "vector length");
  w.u8(v.fixed ? 1 : 0);
  writeString(w, typeof v.typeName === "string" ? v.typeName : "*");
  w.enter();
  writeItems(w, v);
  w.depth--;
}

function writeDictionary(w: Writer, d: Map<unknown, unknown>, weakKeys: boolean): void {
  if (reference(w, 0x11, d)) return;
  length(w, d.size, "dictionary length");
  w.u8(weakKeys ? 1 : 0);
  w.enter();
  let i = 0;
  try {
    for (const [k, v] of d) {
      writeAmf3(w, k);
      writeAmf3(w, v);
      i++;
    }
  } catch (e) {
    throw within(e, i);
  }
  w.depth--;
}

/** A typed array: Uint8Array (a ByteArray), Int32Array, Uint32Array, Float64Array (the
 * numeric Vectors); other views cannot be written. */
function writeView(w: Writer, v: ArrayBufferView): void {
  if (v instanceof Uint8Array) {
    if (reference(w, 0x0c, v)) return;
    length(w, v.length, "bytearray");
    w.bytes(v);
    return;
  }
  const fixed = (v as { fixed?: unknown }).fixed === true;
  if (v instanceof Int32Array || v instanceof Uint32Array) {
    if (reference(w, v instanceof Int32Array ? 0x0d : 0x0e, v)) return;
    length(w, v.length, "vector length");
    w.u8(fixed ? 1 : 0);
    w.ensure(v.length * 4);
    const view = w.view;
    let p = w.pos;
    if (v instanceof Int32Array) for (let i = 0; i < v.length; i++, p += 4) view.setInt32(p, v[i]!);
    else for (let i = 0; i < v.length; i++, p += 4) view.setUint32(p, v[i]!);
    w.pos = p;
    return;
  }
  if (v instanceof Float64Array) {
    if (reference(w, 0x0f, v)) return;
    length(w, v.length, "vector length");
    w.u8(fixed ? 1 : 0);
    // Copied bit for bit (a NaN's payload survives), big-endian.
    const raw = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    w.ensure(raw.length);
    const buf = w.buf;
    const p = w.pos;
    if (LITTLE_ENDIAN) {
      for (let i = 0; i < raw.length; i += 8) for (let j = 0; j < 8; j++) buf[p + i + j] = raw[i + 7 - j]!;
    } else {
      buf.set(raw, p);
    }
    w.pos = p + raw.length;
    return;
  }
  unencodable(w, v, writeAmf3);
}

/** The IDataOutput handed to a registered externalizable class. */
class Output implements DataOutput {
  private readonly w: Writer;
  constructor(w: Writer) {
    this.w = w;
  }
  writeObject(value: unknown): void {
    writeAmf3(this.w, value);
  }
  writeBoolean(value: boolean): void {
    this.w.u8(value ? 1 : 0);
  }
  writeByte(value: number): void {
    this.w.u8(value & 0xff);
  }
  writeShort(value: number): void {
    this.w.u16(value & 0xffff);
  }
  writeInt(value: number): void {
    this.w.i32(value | 0);
  }
  writeUnsignedInt(value: number): void {
    this.w.u32(value >>> 0);
  }
  writeFloat(value: number): void {
    this.w.f32(value);
  }
  writeDouble(value: number): void {
    this.w.f64(value);
  }
  writeUTF(value: string): void {
    this.w.utf(value);
  }
  writeUTFBytes(value: string): void {
    this.w.text(value, this.w.measure(value));
  }
  writeBytes(value: Uint8Array): void {
    this.w.bytes(value);
  }
}
