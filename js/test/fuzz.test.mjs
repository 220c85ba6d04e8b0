// Seeded random checks, short enough for every run: mutated vectors decode or fail with
// a DecodeError (never another exception, never a hang), and random value graphs
// (shared parts and cycles included) come back as they went, in both versions.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { DecodeError, Dictionary, FIXTURES, MixedArray, TypedObject, amf0, amf3, packet } from "./support/codec.mjs";
import { toCanonical } from "./support/canonical.mjs";

/** A small seeded generator (mulberry32). */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MANIFEST = JSON.parse(readFileSync(path.join(FIXTURES, "vectors.json"), "utf8"));

test("mutated vectors decode or fail with a DecodeError", () => {
  const random = rng(4);
  const codecs = { 0: amf0, 3: amf3 };
  let failed = 0;
  let total = 0;
  for (const e of MANIFEST) {
    const data = new Uint8Array(readFileSync(path.join(FIXTURES, e.file)));
    if (data.length > 4096) continue;
    for (let i = 0; i < 40; i++) {
      const m = data.slice();
      const edits = 1 + Math.floor(random() * 3);
      for (let j = 0; j < edits && m.length > 0; j++) {
        const at = Math.floor(random() * m.length);
        m[at] = random() < 0.5 ? Math.floor(random() * 256) : m[at] ^ (1 << Math.floor(random() * 8));
      }
      for (const decode of [(b) => codecs[e.version].decode(b), (b) => new codecs[e.version].Decoder({ lossless: true }).decodeAll(b)]) {
        total++;
        try {
          decode(m);
        } catch (err) {
          assert.ok(err instanceof DecodeError, `${e.name}: ${err}`);
          assert.ok(err.offset >= 0 && err.offset <= m.length);
          failed++;
        }
      }
    }
  }
  assert.ok(failed > total / 4 && failed < total, `${failed} of ${total} failed`);
});

test("mutated packets decode or fail with a DecodeError", () => {
  const random = rng(7);
  const base = packet.encode({
    version: 3,
    headers: [{ name: "Credentials", mustUnderstand: true, value: { userid: "u", password: "p" } }],
    bodies: [{ target: "null", response: "/1", value: [{ a: [1, "x", new Date(0)], b: new TypedObject("T", { c: 1.5 }) }] }],
  });
  for (let i = 0; i < 2000; i++) {
    const m = base.slice(0, base.length - Math.floor(random() * 4));
    m[Math.floor(random() * m.length)] = Math.floor(random() * 256);
    try {
      packet.decode(m);
    } catch (err) {
      assert.ok(err instanceof DecodeError, String(err));
    }
  }
});

function randomGraph(random, version) {
  const pool = [];
  const scalar = () => {
    const pick = Math.floor(random() * 9);
    switch (pick) {
      case 0:
        return null;
      case 1:
        return random() < 0.5;
      case 2:
        return Math.floor(random() * 2 ** 30) - 2 ** 29;
      case 3:
        return (random() - 0.5) * 1e6;
      case 4:
        return ["", "a", "é日😀", "key", "x".repeat(Math.floor(random() * 300))][Math.floor(random() * 5)];
      case 5:
        return new Date(Math.floor(random() * 2e12));
      case 6:
        return Uint8Array.from({ length: Math.floor(random() * 5) }, () => Math.floor(random() * 256));
      case 7:
        return undefined;
      default:
        return pool.length > 0 ? pool[Math.floor(random() * pool.length)] : 7;
    }
  };
  const value = (depth) => {
    if (depth > 4 || random() < 0.4) return scalar();
    // In AMF0 a Dictionary goes through the AVM+ switch, into the AMF3 tables: an object
    // shared across the switch is written once on each side (two objects on the wire),
    // so AMF0 graphs keep to what AMF0 has.
    const kind = Math.floor(random() * (version === 3 ? 5 : 4));
    let c;
    const n = Math.floor(random() * 4);
    if (kind === 0) {
      c = [];
      pool.push(c);
      for (let i = 0; i < n; i++) c.push(value(depth + 1));
    } else if (kind === 1) {
      c = {};
      pool.push(c);
      for (let i = 0; i < n; i++) c[`k${Math.floor(random() * 6)}`] = value(depth + 1);
    } else if (kind === 2) {
      c = new TypedObject(["A", "B"][Math.floor(random() * 2)], {});
      pool.push(c);
      for (let i = 0; i < n; i++) c[`m${i}`] = value(depth + 1);
    } else if (kind === 3) {
      c = new MixedArray();
      pool.push(c);
      for (let i = 0; i < n; i++) c.set(`a${i}`, value(depth + 1));
      if (version === 3) for (let i = 0; i < n; i++) c.dense.push(value(depth + 1));
    } else {
      c = new Dictionary();
      pool.push(c);
      for (let i = 0; i < n; i++) c.set(random() < 0.5 ? `d${i}` : value(depth + 1), value(depth + 1));
    }
    return c;
  };
  return value(0);
}

test("random graphs round-trip in both versions", () => {
  const random = rng(2026);
  for (let i = 0; i < 300; i++) {
    for (const [version, codec] of [[0, amf0], [3, amf3]]) {
      const v = randomGraph(random, version);
      const back = codec.decode(codec.encode(v), { lossless: true });
      assert.deepStrictEqual(toCanonical(back, version), toCanonical(v, version), `graph ${i}, amf${version}`);
      // And the bytes are stable: what was read writes the same bytes again.
      assert.deepStrictEqual(codec.encode(back), codec.encode(v));
    }
  }
});
