// The AMF0 value reader (AMF 0 specification, section 2). An AVM+ marker (0x11)
// switches to AMF3 for one value; every switch within one context shares one set of
// AMF3 tables.

import { DecodeError, badReference, hex2, within } from "./errors";
import { readAmf3 } from "./amf3-read";
import { ANON, REGISTERED, type ClassInfo, type Reader } from "./reader";
import { Avmplus, MixedArray, UNSUPPORTED, XmlDocument, dateValue, setMember } from "./types";

/** Read one AMF0 value. */
export function readAmf0(r: Reader): unknown {
  const start = r.pos;
  if (start >= r.end) throw r.eof(1);
  const marker = r.buf[start]!;
  r.pos = start + 1;
  switch (marker) {
    case 0x00:
      return r.f64();
    case 0x01:
      return r.u8() !== 0;
    case 0x02: {
      const len = r.u16();
      return readText(r, "string length", len);
    }
    case 0x03:
      return readObject(r, "");
    case 0x05:
      return null;
    case 0x06:
      return undefined;
    case 0x07: {
      const index = r.u16();
      const refs = r.refs0;
      if (index >= refs.length) throw badReference("object", index, refs.length, start + 1);
      return refs[index];
    }
    case 0x08:
      return readEcmaArray(r);
    case 0x0a:
      return readStrictArray(r);
    case 0x0b: {
      // Flash Player gives every Date (and XML document) a reference index, although the
      // specification's list of complex objects (2.9) does not name them.
      const ms = r.f64();
      const tz = r.i16();
      r.countObject();
      const value = dateValue(ms, tz);
      r.refs0.push(value);
      return value;
    }
    case 0x0c: {
      const len = r.u32();
      return readText(r, "string length", len);
    }
    case 0x0d:
      return r.lossless ? UNSUPPORTED : undefined;
    case 0x0f: {
      const len = r.u32();
      const text = readText(r, "xml length", len);
      r.countObject();
      const value = new XmlDocument(text);
      r.refs0.push(value);
      return value;
    }
    case 0x10:
      return readObject(r, r.cachedUtf8("string length", r.u16()));
    case 0x11: {
      r.enter();
      const value = readAmf3(r);
      r.depth--;
      return r.lossless ? new Avmplus(value) : value;
    }
    case 0x04:
      throw new DecodeError("reserved amf0 marker 0x04 (movieclip) is not supported", start);
    case 0x0e:
      throw new DecodeError("reserved amf0 marker 0x0e (recordset) is not supported", start);
    case 0x09:
      throw new DecodeError("object-end marker 0x09 outside an object", start);
    default:
      throw new DecodeError(`unknown amf0 marker 0x${hex2(marker)}`, start);
  }
}

function readText(r: Reader, what: string, len: number): string {
  r.checkSize(what, len);
  return r.cachedUtf8(what, len);
}

/** A member name: u16 length and UTF-8; null at the empty name followed by the
 * object-end marker. An empty name followed by anything else is a member named "" (0x09
 * is never a value marker, so the two cannot be confused). */
function readKey(r: Reader): string | null {
  const len = r.u16();
  if (len === 0) {
    if (r.pos < r.end) {
      if (r.buf[r.pos] === 0x09) {
        r.pos++;
        return null;
      }
      return "";
    }
    throw r.eof(1);
  }
  return r.cachedUtf8("key length", len);
}

/** How objects of an AMF0 class name ("" for anonymous objects) are built, resolved once
 * per name and context. */
function classOf(r: Reader, alias: string): ClassInfo {
  let info = r.classes0.get(alias);
  if (info === undefined) {
    info = r.classInfo(alias, [], true, false);
    r.classes0.set(alias, info);
  }
  return info;
}

function readObject(r: Reader, alias: string): unknown {
  const info = classOf(r, alias);
  r.enter();
  r.countObject();
  let obj: Record<string, unknown>;
  if (info.kind === ANON) obj = {};
  else if (info.kind === REGISTERED && info.external !== undefined) obj = info.external.create() as Record<string, unknown>;
  else obj = Object.create(info.proto) as Record<string, unknown>;
  r.refs0.push(obj);
  const accept = info.accept;
  let key = readKey(r);
  while (key !== null) {
    let v: unknown;
    try {
      v = readAmf0(r);
    } catch (e) {
      throw within(e, key);
    }
    if (accept === null || accept.has(key)) {
      if (key === "__proto__") setMember(obj, key, v);
      else obj[key] = v;
    }
    key = readKey(r);
  }
  r.depth--;
  return obj;
}

function readEcmaArray(r: Reader): unknown {
  // The count is unreliable (peers write 0 with entries present): a hint, kept as read.
  const count = r.u32();
  r.enter();
  r.countObject();
  const value = new MixedArray(null, [], count);
  r.refs0.push(value);
  let key = readKey(r);
  while (key !== null) {
    let v: unknown;
    try {
      v = readAmf0(r);
    } catch (e) {
      throw within(e, key);
    }
    value.set(key, v);
    key = readKey(r);
  }
  r.depth--;
  return value;
}

function readStrictArray(r: Reader): unknown {
  const count = r.u32();
  r.checkCount("array length", count, 1);
  r.enter();
  r.countObject();
  const items: unknown[] = [];
  r.refs0.push(items);
  let i = 0;
  try {
    for (; i < count; i++) items.push(readAmf0(r));
  } catch (e) {
    throw within(e, i);
  }
  r.depth--;
  return items;
}
