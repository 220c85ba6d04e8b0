// The AMF3 value reader (AMF 3 specification, section 3).

import { DecodeError, badReference, hex2, within } from "./errors";
import {
  ANON,
  COLLECTION,
  EXTERNAL,
  LIST,
  PROXY,
  REGISTERED,
  TYPED,
  type ClassInfo,
  type Reader,
} from "./reader";
import { specForProto, type DataInput } from "./registry";
import {
  ArrayCollection,
  ArrayList,
  Dictionary,
  Double,
  IntVector,
  MixedArray,
  NumberVector,
  ObjectProxy,
  ObjectVector,
  TypedObject,
  UintVector,
  Xml,
  XmlDocument,
  dateValue,
  setMember,
} from "./types";

const INT_MIN = -0x10000000;
const INT_MAX = 0x0fffffff;

/** Whether the platform stores typed-array items little-endian (AMF is big-endian). */
export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Read one AMF3 value. */
export function readAmf3(r: Reader): unknown {
  const start = r.pos;
  if (start >= r.end) throw r.eof(1);
  const marker = r.buf[start]!;
  r.pos = start + 1;
  switch (marker) {
    case 0x00:
      return undefined;
    case 0x01:
      return null;
    case 0x02:
      return false;
    case 0x03:
      return true;
    case 0x04:
      return (r.u29() << 3) >> 3;
    case 0x05: {
      const d = r.f64();
      if (r.lossless && d >= INT_MIN && d <= INT_MAX && Math.floor(d) === d && !Object.is(d, -0)) {
        return new Double(d);
      }
      return d;
    }
    case 0x06:
      return readString(r);
    case 0x07:
      return readXml(r, false);
    case 0x08:
      return readDate(r);
    case 0x09:
      return readArray(r);
    case 0x0a:
      return readObject(r);
    case 0x0b:
      return readXml(r, true);
    case 0x0c:
      return readByteArray(r);
    case 0x0d:
    case 0x0e:
    case 0x0f:
      return readNumberVector(r, marker);
    case 0x10:
      return readObjectVector(r);
    case 0x11:
      return readDictionary(r);
    default:
      throw new DecodeError(`unknown amf3 marker 0x${hex2(marker)}`, start);
  }
}

/** A string (value, key, class or member name) through the string table; the empty
 * string never enters it. */
export function readString(r: Reader): string {
  const pos = r.pos;
  const h = r.u29();
  if ((h & 1) === 0) {
    const index = h >>> 1;
    const strings = r.strings;
    if (index >= strings.length) throw badReference("string", index, strings.length, pos);
    return strings[index]!;
  }
  const len = h >>> 1;
  if (len === 0) return "";
  if (len > r.maxSize) r.checkSize("string length", len);
  const s = r.utf8("string length", len);
  r.strings.push(s);
  return s;
}

/** A key of an associative part or of dynamic members; null at the empty string that
 * ends the list (however its length is written). */
function readKey(r: Reader): string | null {
  if (r.pos < r.end && r.buf[r.pos] === 0x01) {
    r.pos++;
    return null;
  }
  const s = readString(r);
  return s === "" ? null : s;
}

function reference(r: Reader, h: number, pos: number): unknown {
  const index = h >>> 1;
  const refs = r.refs3;
  if (index >= refs.length) throw badReference("object", index, refs.length, pos);
  return refs[index];
}

function readDate(r: Reader): unknown {
  const pos = r.pos;
  const h = r.u29();
  if ((h & 1) === 0) return reference(r, h, pos);
  const ms = r.f64();
  r.countObject();
  const value = dateValue(ms, 0);
  r.refs3.push(value);
  return value;
}

function readXml(r: Reader, e4x: boolean): unknown {
  const pos = r.pos;
  const h = r.u29();
  if ((h & 1) === 0) return reference(r, h, pos);
  const len = h >>> 1;
  r.checkSize("xml length", len);
  const text = r.utf8("xml length", len);
  r.countObject();
  const value = e4x ? new Xml(text) : new XmlDocument(text);
  r.refs3.push(value);
  return value;
}

function readByteArray(r: Reader): unknown {
  const pos = r.pos;
  const h = r.u29();
  if ((h & 1) === 0) return reference(r, h, pos);
  const len = h >>> 1;
  r.checkSize("bytearray length", len);
  const value = r.take(len).slice();
  r.countObject();
  r.refs3.push(value);
  return value;
}

function readNumberVector(r: Reader, marker: number): unknown {
  const pos = r.pos;
  const h = r.u29();
  if ((h & 1) === 0) return reference(r, h, pos);
  const len = h >>> 1;
  const fixed = r.u8() !== 0;
  const size = marker === 0x0f ? 8 : 4;
  r.checkCount("vector length", len, size);
  const raw = r.take(len * size);
  r.countObject();
  let value: IntVector | UintVector | NumberVector;
  if (marker === 0x0f) {
    const v = new NumberVector(len);
    const out = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    if (LITTLE_ENDIAN) {
      for (let i = 0; i < raw.length; i += 8) {
        for (let j = 0; j < 8; j++) out[i + j] = raw[i + 7 - j]!;
      }
    } else {
      out.set(raw);
    }
    value = v;
  } else {
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    if (marker === 0x0d) {
      const v = new IntVector(len);
      for (let i = 0; i < len; i++) v[i] = view.getInt32(i * 4);
      value = v;
    } else {
      const v = new UintVector(len);
      for (let i = 0; i < len; i++) v[i] = view.getUint32(i * 4);
      value = v;
    }
  }
  value.fixed = fixed;
  r.refs3.push(value);
  return value;
}

function readArray(r: Reader): unknown {
  const pos = r.pos;
  const h = r.u29();
  if ((h & 1) === 0) return reference(r, h, pos);
  const dense = h >>> 1;
  r.checkCount("array length", dense, 1);
  r.enter();
  r.countObject();
  let key = readKey(r);
  let items: unknown[];
  let value: unknown[] | MixedArray;
  if (key !== null) {
    const mixed = new MixedArray();
    r.refs3.push(mixed);
    while (key !== null) {
      let v: unknown;
      try {
        v = readAmf3(r);
      } catch (e) {
        throw within(e, key);
      }
      mixed.set(key, v);
      key = readKey(r);
    }
    items = mixed.dense;
    value = mixed;
  } else {
    items = [];
    r.refs3.push(items);
    value = items;
  }
  readItems(r, items, dense);
  r.depth--;
  return value;
}

/** `len` values pushed onto `items` (an Array's dense part, a Vector.<Object>). */
function readItems(r: Reader, items: unknown[], len: number): void {
  let i = 0;
  try {
    for (; i < len; i++) items.push(readAmf3(r));
  } catch (e) {
    throw within(e, i);
  }
}

function readTraits(r: Reader, h: number): ClassInfo {
  const externalizable = (h & 4) !== 0;
  const dynamic = !externalizable && (h & 8) !== 0;
  const count = externalizable ? 0 : h >>> 4;
  const alias = readString(r);
  r.checkCount("sealed member count", count, 1);
  const sealed: string[] = [];
  for (let i = 0; i < count; i++) sealed.push(readString(r));
  const info = r.classInfo(alias, sealed, dynamic, externalizable);
  r.traits3.push(info);
  return info;
}

function readObject(r: Reader): unknown {
  const pos = r.pos;
  const h = r.u29();
  if ((h & 1) === 0) return reference(r, h, pos);
  let info: ClassInfo;
  if ((h & 2) === 0) {
    const index = h >>> 2;
    const traits = r.traits3;
    if (index >= traits.length) throw badReference("traits", index, traits.length, pos);
    info = traits[index]!;
  } else {
    info = readTraits(r, h);
  }
  r.enter();
  r.countObject();
  let value: unknown;
  switch (info.kind) {
    case ANON: {
      const obj: Record<string, unknown> = {};
      r.refs3.push(obj);
      readDynamic(r, obj, null);
      value = obj;
      break;
    }
    case TYPED: {
      const obj = Object.create(info.proto) as Record<string, unknown>;
      r.refs3.push(obj);
      readSealed(r, obj, info.sealed, null);
      if (info.dynamic) readDynamic(r, obj, null);
      value = obj;
      break;
    }
    case REGISTERED: {
      const obj = (info.external !== undefined ? info.external.create() : Object.create(info.proto)) as Record<
        string,
        unknown
      >;
      r.refs3.push(obj);
      readSealed(r, obj, info.sealed, info.accept);
      if (info.dynamic) readDynamic(r, obj, info.accept);
      value = obj;
      break;
    }
    case COLLECTION:
    case LIST: {
      const obj = info.kind === COLLECTION ? new ArrayCollection() : new ArrayList();
      r.refs3.push(obj);
      const body = externalBody(r, info.alias);
      if (!Array.isArray(body)) {
        throw new DecodeError(`an ${info.kind === COLLECTION ? "ArrayCollection" : "ArrayList"} body that is not an array`, r.pos);
      }
      for (let i = 0, n = body.length; i < n; i++) obj.push(body[i]);
      value = obj;
      break;
    }
    case PROXY: {
      const obj = new ObjectProxy();
      r.refs3.push(obj);
      const body = externalBody(r, info.alias);
      if (!isObjectBody(body)) throw new DecodeError("an ObjectProxy body that is not an object", r.pos);
      for (const k of Object.keys(body)) setMember(obj, k, (body as Record<string, unknown>)[k]);
      value = obj;
      break;
    }
    case EXTERNAL: {
      const hooks = info.external!;
      const obj = hooks.create();
      r.refs3.push(obj);
      try {
        hooks.read(obj, new Input(r));
      } catch (e) {
        throw within(e, `<${info.alias}>`);
      }
      value = obj;
      break;
    }
  }
  r.depth--;
  return value;
}

function externalBody(r: Reader, alias: string): unknown {
  try {
    return readAmf3(r);
  } catch (e) {
    throw within(e, `<${alias}>`);
  }
}

/** An object an ObjectProxy can wrap: anonymous, typed or of a registered class. */
function isObjectBody(body: unknown): body is object {
  if (typeof body !== "object" || body === null) return false;
  const proto = Object.getPrototypeOf(body) as object | null;
  return proto === Object.prototype || proto === null || body instanceof TypedObject || specForProto(proto) !== undefined;
}

function readSealed(r: Reader, obj: Record<string, unknown>, names: readonly string[], accept: Set<string> | null): void {
  let i = 0;
  try {
    for (; i < names.length; i++) {
      const name = names[i]!;
      const v = readAmf3(r);
      if (accept === null || accept.has(name)) setMember(obj, name, v);
    }
  } catch (e) {
    throw within(e, names[i]!);
  }
}

function readDynamic(r: Reader, obj: Record<string, unknown>, accept: Set<string> | null): void {
  let key = readKey(r);
  while (key !== null) {
    let v: unknown;
    try {
      v = readAmf3(r);
    } catch (e) {
      throw within(e, key);
    }
    if (accept === null || accept.has(key)) {
      if (key === "__proto__") setMember(obj, key, v);
      else obj[key] = v;
    }
    key = readKey(r);
  }
}

function readObjectVector(r: Reader): unknown {
  const pos = r.pos;
  const h = r.u29();
  if ((h & 1) === 0) return reference(r, h, pos);
  const len = h >>> 1;
  const fixed = r.u8() !== 0;
  const typeName = readString(r);
  r.checkCount("vector length", len, 1);
  r.enter();
  r.countObject();
  const value = new ObjectVector([], typeName, fixed);
  r.refs3.push(value);
  readItems(r, value, len);
  r.depth--;
  return value;
}

function readDictionary(r: Reader): unknown {
  const pos = r.pos;
  const h = r.u29();
  if ((h & 1) === 0) return reference(r, h, pos);
  const len = h >>> 1;
  const weakKeys = r.u8() !== 0;
  r.checkCount("dictionary length", len, 2);
  r.enter();
  r.countObject();
  const value = new Dictionary(null, weakKeys);
  r.refs3.push(value);
  let i = 0;
  try {
    for (; i < len; i++) {
      const k = readAmf3(r);
      value.set(k, readAmf3(r));
    }
  } catch (e) {
    throw within(e, i);
  }
  r.depth--;
  return value;
}

/** The IDataInput handed to a registered externalizable class. */
class Input implements DataInput {
  private readonly r: Reader;
  constructor(r: Reader) {
    this.r = r;
  }
  readObject(): unknown {
    return readAmf3(this.r);
  }
  readBoolean(): boolean {
    return this.r.u8() !== 0;
  }
  readByte(): number {
    return (this.r.u8() << 24) >> 24;
  }
  readUnsignedByte(): number {
    return this.r.u8();
  }
  readShort(): number {
    return this.r.i16();
  }
  readUnsignedShort(): number {
    return this.r.u16();
  }
  readInt(): number {
    return this.r.i32();
  }
  readUnsignedInt(): number {
    return this.r.u32();
  }
  readFloat(): number {
    return this.r.f32();
  }
  readDouble(): number {
    return this.r.f64();
  }
  readUTF(): string {
    return this.r.readUtf();
  }
  readUTFBytes(length: number): string {
    return this.r.utf8("string length", length);
  }
  readBytes(length: number): Uint8Array {
    this.r.checkCount("byte count", length, 1);
    return this.r.take(length).slice();
  }
  error(reason: string): Error {
    return new DecodeError(reason, this.r.pos);
  }
}
