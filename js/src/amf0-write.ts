// The AMF0 value writer (AMF 0 specification, section 2). What AMF0 has no type for
// (ByteArray, Vectors, Dictionary, Flex's externalizable wrappers, externalizable
// classes) is written after the AVM+ switch (0x11) as AMF3, in the AMF3 tables of the
// same context.
//
// Reference indexes are taken as Flash Player takes them: by every anonymous object,
// typed object, ECMA array and strict array (AMF0 2.9), and by every Date and XML
// document too (Flash Player numbers them, and a peer reading Flash Player's data must
// count them). An index above 65535 cannot be referenced: the value is written again.

import { EncodeError, within } from "./errors";
import { writeAmf3 } from "./amf3-write";
import { specForProto, type ClassSpec } from "./registry";
import {
  AmfDate,
  Avmplus,
  Dictionary,
  Double,
  MixedArray,
  TRAITS,
  TypedObject,
  UNSUPPORTED,
  Xml,
  XmlDocument,
  type Traits,
} from "./types";
import { unencodable, type Writer } from "./writer";

/** Write one AMF0 value. */
export function writeAmf0(w: Writer, v: unknown): void {
  switch (typeof v) {
    case "number":
      writeNumber(w, v);
      return;
    case "string":
      writeString(w, v);
      return;
    case "boolean":
      w.ensure(2);
      w.buf[w.pos++] = 0x01;
      w.buf[w.pos++] = v ? 1 : 0;
      return;
    case "undefined":
      w.u8(0x06);
      return;
    case "object":
      if (v === null) w.u8(0x05);
      else writeObject(w, v);
      return;
    case "bigint":
      writeNumber(w, Number(v));
      return;
    default:
      unencodable(w, v, writeAmf0);
  }
}

function writeNumber(w: Writer, n: number): void {
  w.ensure(9);
  w.buf[w.pos++] = 0x00;
  w.view.setFloat64(w.pos, n);
  w.pos += 8;
}

/** A string: 0x02 with a u16 length, or a long string 0x0C past 65535 bytes. */
function writeString(w: Writer, s: string): void {
  const cached = w.cachedText(s);
  if (cached !== undefined) {
    w.ensure(3);
    w.buf[w.pos++] = 0x02;
    w.buf[w.pos++] = cached.length >>> 8;
    w.buf[w.pos++] = cached.length;
    w.copy(cached);
    return;
  }
  const len = w.measure(s);
  w.ensure(5 + len);
  if (len <= 0xffff) {
    w.buf[w.pos++] = 0x02;
    w.buf[w.pos++] = len >>> 8;
    w.buf[w.pos++] = len;
  } else {
    w.u8(0x0c);
    w.u32(len);
  }
  w.text(s, len);
}

/** A reference if `obj` was written before at an index AMF0 can carry (returns true);
 * otherwise the next index is taken (for `obj`, the first time) and false returned. */
function reference(w: Writer, obj: object): boolean {
  const index = w.refs0.get(obj);
  if (index !== undefined && index <= 0xffff) {
    w.ensure(3);
    w.buf[w.pos++] = 0x07;
    w.buf[w.pos++] = index >>> 8;
    w.buf[w.pos++] = index;
    return true;
  }
  if (index === undefined) w.refs0.set(obj, w.next0);
  w.next0++;
  return false;
}

/** Switch to AMF3 for one value. */
function avmplus(w: Writer, v: unknown): void {
  w.u8(0x11);
  writeAmf3(w, v);
}

function writeObject(w: Writer, v: object): void {
  const proto = Object.getPrototypeOf(v) as object | null;
  if (proto === Object.prototype || proto === null) {
    if (reference(w, v)) return;
    w.u8(0x03);
    w.enter();
    writeMembers(w, v as Record<string, unknown>, null);
    w.depth--;
    return;
  }
  if (proto === Array.prototype) {
    writeStrictArray(w, v as unknown[]);
    return;
  }
  const spec = specForProto(proto);
  if (spec !== undefined) {
    writeRegistered(w, v, spec.select !== undefined ? spec.select(v) : spec);
    return;
  }
  if (v instanceof TypedObject) {
    writeTyped(w, v as unknown as Record<string, unknown>, v[TRAITS]);
    return;
  }
  if (v instanceof Date || v instanceof AmfDate) {
    if (reference(w, v)) return;
    w.ensure(11);
    w.buf[w.pos++] = 0x0b;
    if (v instanceof Date) {
      w.f64(v.getTime());
      w.i16(0);
    } else {
      w.f64(v.ms);
      w.i16(v.tz);
    }
    return;
  }
  if (v instanceof Double) {
    writeNumber(w, v.value);
    return;
  }
  if (v instanceof Avmplus) {
    avmplus(w, v.value);
    return;
  }
  if (v instanceof Xml || v instanceof XmlDocument) {
    if (reference(w, v)) return;
    const len = w.measure(v.text);
    w.u8(0x0f);
    w.u32(len);
    w.text(v.text, len);
    return;
  }
  if (v instanceof MixedArray) {
    writeEcmaArray(w, v);
    return;
  }
  if (v instanceof Map) {
    // An ECMA array if every key is a string or a number, else an AMF3 Dictionary (always
    // for a Dictionary, whose keys are values in their own right).
    if (!(v instanceof Dictionary) && stringKeys(v)) writeEcmaArray(w, v);
    else avmplus(w, v);
    return;
  }
  if (v === UNSUPPORTED) {
    w.u8(0x0d);
    return;
  }
  if (Array.isArray(v) && v.constructor === Array) {
    writeStrictArray(w, v);
    return;
  }
  // ByteArray, the Vectors, Flex's wrappers, anything else AMF3 knows (or refuses).
  avmplus(w, v);
}

function stringKeys(m: Map<unknown, unknown>): boolean {
  for (const k of m.keys()) if (typeof k !== "string" && typeof k !== "number") return false;
  return true;
}

function writeStrictArray(w: Writer, a: unknown[]): void {
  if (reference(w, a)) return;
  w.u8(0x0a);
  w.u32(a.length);
  w.enter();
  let i = 0;
  try {
    for (const n = a.length; i < n; i++) writeAmf0(w, a[i]);
  } catch (e) {
    throw within(e, i);
  }
  w.depth--;
}

/** Members: (u16 name, value)* then the empty name and the object-end marker. With
 * `t`, the sealed members first, then (if dynamic) the others. */
function writeMembers(w: Writer, o: Record<string, unknown>, t: Traits | null): void {
  if (t !== null) {
    const sealed = t.sealed;
    for (let i = 0; i < sealed.length; i++) member(w, sealed[i]!, o[sealed[i]!]);
    if (!t.dynamic) {
      end(w);
      return;
    }
  }
  const skip = t !== null && t.sealed.length > 0 ? t.names : null;
  const keys = Object.keys(o);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (skip === null || !skip.has(k)) member(w, k, o[k]);
  }
  end(w);
}

function member(w: Writer, k: string, v: unknown): void {
  w.utf(k);
  try {
    writeAmf0(w, v);
  } catch (e) {
    throw within(e, k);
  }
}

function end(w: Writer): void {
  w.ensure(3);
  w.buf[w.pos++] = 0x00;
  w.buf[w.pos++] = 0x00;
  w.buf[w.pos++] = 0x09;
}

function writeTyped(w: Writer, o: Record<string, unknown>, t: Traits): void {
  if (reference(w, o)) return;
  if (t.alias === "") {
    // An anonymous object with sealed members (read from AMF3): AMF0 has only members.
    w.u8(0x03);
  } else {
    w.u8(0x10);
    w.utf(t.alias);
  }
  w.enter();
  writeMembers(w, o, t);
  w.depth--;
}

function writeRegistered(w: Writer, o: object, spec: ClassSpec): void {
  if (spec.external !== undefined) {
    // An externalizable body is AMF3 only.
    avmplus(w, o);
    return;
  }
  writeTyped(w, o as Record<string, unknown>, spec.traits);
}

/** An ECMA array: the count (a MixedArray's `length` as read, else the number of
 * entries), the dense items under "0", "1"..., the entries, the object-end marker. */
function writeEcmaArray(w: Writer, m: Map<unknown, unknown>): void {
  if (reference(w, m)) return;
  const dense = m instanceof MixedArray ? m.dense : [];
  const declared = m instanceof MixedArray ? m.length : undefined;
  const count = declared ?? dense.length + m.size;
  if (!(count >= 0 && count <= 0xffffffff)) throw new EncodeError(`an ECMA array count of ${count} exceeds amf0's 4 GiB limit`);
  w.u8(0x08);
  w.u32(count);
  w.enter();
  for (let i = 0; i < dense.length; i++) member(w, String(i), dense[i]);
  for (const [k, v] of m) member(w, String(k), v);
  end(w);
  w.depth--;
}
