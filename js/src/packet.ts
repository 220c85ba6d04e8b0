// The AMF remoting packet: what a Flash, Flex, AIR or Royale client POSTs to a gateway,
// and what the gateway answers. Version (u16), headers (name, must-understand flag,
// value), bodies (target, response, value); each value is an AMF0 value that may switch
// to AMF3, and each header and body is its own reference context.
//
// Header and body length fields are unreliable in the wild (BlazeDS and Royale write 1,
// PyAMF 0, the specification -1, Amfphp the real length): the reader ignores them, the
// writer always writes the real length. Body values are AMF0 in a version 0 (or 1)
// packet and go through the AVM+ switch to AMF3 in a version 3 packet, as Flash Player
// 9+, Flex and Royale read them; header values are AMF0.

import { readAmf0 } from "./amf0-read";
import { writeAmf0 } from "./amf0-write";
import { writeAmf3 } from "./amf3-write";
import { DecodeError, EncodeError, decodeStackError, encodeStackError, within } from "./errors";
import type { DecodeOptions } from "./limits";
import { Reader } from "./reader";
import { Writer, type EncodeOptions } from "./writer";

export interface Header {
  name: string;
  /** Whether a receiver that does not understand the header must refuse the packet. */
  mustUnderstand?: boolean;
  value?: unknown;
}

export interface Body {
  /** The call ("Service.method", "null" for Flex) or the answer ("/1/onResult", "/1/onStatus"). */
  target: string;
  /** Where the answer goes ("/1"; "null" or "" in an answer). */
  response: string;
  value?: unknown;
}

export interface Packet {
  /** 0 (AS2), 3 (Flash Player 9 and later), 1 (FMS; treated as 0). */
  version: number;
  headers: Header[];
  bodies: Body[];
}

/** A decoded header: every field present. */
export interface DecodedHeader extends Header {
  mustUnderstand: boolean;
  value: unknown;
}

export interface DecodedBody extends Body {
  value: unknown;
}

export interface DecodedPacket extends Packet {
  headers: DecodedHeader[];
  bodies: DecodedBody[];
}

/** Most headers or bodies one packet may hold (the counts are u16). */
export const MAX_PARTS = 65535;

/** Decode a packet; a malformed one throws a DecodeError (its path such as
 * `$.bodies[1][0]`). */
export function decode(data: Uint8Array | ArrayBuffer, options?: DecodeOptions): DecodedPacket {
  const r = new Reader(data, options);
  try {
    return readPacket(r);
  } catch (e) {
    throw decodeStackError(e, r.pos);
  }
}

function readPacket(r: Reader): DecodedPacket {
  const version = r.u16();
  if (version !== 0 && version !== 1 && version !== 3) {
    throw new DecodeError(`unknown amf packet version ${version}`, 0);
  }
  const headerCount = r.u16();
  r.checkCount("header count", headerCount, 8);
  const headers: DecodedHeader[] = [];
  for (let i = 0; i < headerCount; i++) {
    try {
      const name = r.readUtf();
      const mustUnderstand = r.u8() !== 0;
      r.u32(); // the unreliable length
      r.reset();
      headers.push({ name, mustUnderstand, value: readAmf0(r) });
    } catch (e) {
      throw within(e, { name: "headers", index: i });
    }
  }
  const bodyCount = r.u16();
  r.checkCount("body count", bodyCount, 9);
  const bodies: DecodedBody[] = [];
  for (let i = 0; i < bodyCount; i++) {
    try {
      const target = r.readUtf();
      const response = r.readUtf();
      r.u32();
      r.reset();
      bodies.push({ target, response, value: readAmf0(r) });
    } catch (e) {
      throw within(e, { name: "bodies", index: i });
    }
  }
  r.finish();
  return { version, headers, bodies };
}

/** Encode a packet with real length fields. */
export function encode(packet: Packet, options?: EncodeOptions): Uint8Array {
  try {
    return writePacket(packet, options);
  } catch (e) {
    throw encodeStackError(e);
  }
}

function writePacket(packet: Packet, options: EncodeOptions | undefined): Uint8Array {
  const { version } = packet;
  if (version !== 0 && version !== 1 && version !== 3) {
    throw new EncodeError(`unknown amf packet version ${String(version)} (0, 1 or 3)`);
  }
  const headers = packet.headers ?? [];
  const bodies = packet.bodies ?? [];
  if (headers.length > MAX_PARTS) throw new EncodeError(`${headers.length} headers exceed a packet's ${MAX_PARTS}`);
  if (bodies.length > MAX_PARTS) throw new EncodeError(`${bodies.length} bodies exceed a packet's ${MAX_PARTS}`);
  const w = new Writer(options);
  w.u16(version);
  w.u16(headers.length);
  headers.forEach((h, i) => {
    try {
      w.utf(h.name);
      w.u8(h.mustUnderstand ? 1 : 0);
      const slot = lengthSlot(w);
      writeAmf0(w, h.value);
      lengthEnd(w, slot);
    } catch (e) {
      throw within(e, { name: "headers", index: i });
    }
  });
  w.u16(bodies.length);
  bodies.forEach((b, i) => {
    try {
      w.utf(b.target);
      w.utf(b.response);
      const slot = lengthSlot(w);
      if (version === 3) {
        w.u8(0x11);
        writeAmf3(w, b.value);
      } else {
        writeAmf0(w, b.value);
      }
      lengthEnd(w, slot);
    } catch (e) {
      throw within(e, { name: "bodies", index: i });
    }
  });
  return w.result();
}

function lengthSlot(w: Writer): number {
  const at = w.pos;
  w.u32(0);
  w.reset();
  return at;
}

function lengthEnd(w: Writer, slot: number): void {
  const len = w.pos - slot - 4;
  if (len > 0xffffffff) throw new EncodeError("a packet value over 4 GiB");
  w.view.setUint32(slot, len);
}
