// The limits against hostile input (docs/limits.md): nesting, objects, sizes, and
// length prefixes checked against the bytes left before anything is allocated.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  DEFAULT_ENCODE_MAX_DEPTH,
  DEFAULT_LIMITS,
  DEPTH_CEILING,
  DecodeError,
  EncodeError,
  amf0,
  amf3,
  hex,
  packet,
} from "./support/codec.mjs";

/** `n` nested AMF3 arrays of one item around `inner`. */
function nested3(n, inner = [0x01]) {
  const out = new Uint8Array(3 * n + inner.length);
  for (let i = 0; i < n; i++) out.set([0x09, 0x03, 0x01], 3 * i);
  out.set(inner, 3 * n);
  return out;
}

function nested0(n) {
  const out = new Uint8Array(5 * n + 1);
  for (let i = 0; i < n; i++) out.set([0x0a, 0, 0, 0, 1], 5 * i);
  out[5 * n] = 0x05;
  return out;
}

const isDecodeError = (text) => (e) => e instanceof DecodeError && e.message.includes(text);

test("the defaults are the Rust core's and the Python API's", () => {
  assert.deepEqual({ ...DEFAULT_LIMITS }, { maxDepth: 128, maxObjects: 10_000_000, maxSize: 256 * 1024 * 1024 });
  assert.equal(DEFAULT_ENCODE_MAX_DEPTH, 1024);
  assert.equal(DEPTH_CEILING, 1024);
  assert.throws(() => amf3.decode(hex("01"), { maxDepth: -1 }), RangeError);
  assert.throws(() => amf3.decode(hex("01"), { maxObjects: 1.5 }), RangeError);
});

describe("maxDepth", () => {
  test("128 nested containers read, 129 do not", () => {
    assert.ok(amf3.decode(nested3(127, [0x09, 0x01, 0x01])));
    assert.throws(() => amf3.decode(nested3(128, [0x09, 0x01, 0x01])), isDecodeError("nesting deeper than the limit of 128, at byte 386"));
    assert.ok(amf0.decode(nested0(128)));
    assert.throws(() => amf0.decode(nested0(129)), isDecodeError("nesting deeper than the limit of 128"));
  });

  test("objects, vectors, dictionaries and the AVM+ switch count", () => {
    const objects = (n) => {
      const parts = [];
      for (let i = 0; i < n; i++) parts.push(i === 0 ? [0x0a, 0x0b, 0x01, 0x03, 0x61] : [0x0a, 0x01, 0x00]);
      return Uint8Array.from([...parts.flat(), 0x01, ...new Array(n).fill(0x01)]);
    };
    assert.ok(amf3.decode(objects(4), { maxDepth: 4 }));
    assert.throws(() => amf3.decode(objects(5), { maxDepth: 4 }), isDecodeError("nesting deeper than the limit of 4"));
    assert.ok(amf3.decode(hex("10030001" + "10030001" + "01"), { maxDepth: 2 }));
    assert.throws(() => amf3.decode(hex("10030001" + "10030001" + "01"), { maxDepth: 1 }), isDecodeError("nesting deeper"));
    assert.throws(() => amf3.decode(hex("110300" + "0401" + "11030004010401"), { maxDepth: 1 }), isDecodeError("nesting deeper"));
    assert.throws(() => amf0.decode(hex("0a00000001" + "11" + "0903010401"), { maxDepth: 2 }), isDecodeError("nesting deeper"));
    assert.ok(amf0.decode(hex("0a00000001" + "11" + "0903010401"), { maxDepth: 3 }));
  });

  test("the ceiling is 1024, and a deeper input fails without exhausting the stack", () => {
    assert.ok(amf3.decode(nested3(1024, [0x01]), { maxDepth: 5000 }));
    assert.throws(() => amf3.decode(nested3(1025, [0x01]), { maxDepth: 5000 }), isDecodeError("limit of 1024"));
    assert.throws(() => amf3.decode(nested3(100_000)), isDecodeError("limit of 128"));
    assert.throws(() => amf0.decode(nested0(100_000), { maxDepth: 1024 }), isDecodeError("limit of 1024"));
  });

  test("a stack that runs out anyway is a DecodeError or an EncodeError, not a RangeError", () => {
    // Call the codec with less and less stack left: somewhere it runs out inside the
    // codec, which must say so in its own error. (A RangeError can only come from the
    // test's own frames, when not even the call is left.)
    const deep = (n, f) => (n === 0 ? f() : deep(n - 1, f));
    const input = nested3(1000);
    const value = amf3.decode(input, { maxDepth: 1024 });
    const seen = { decode: 0, encode: 0 };
    for (let n = 0; n < 15000; n += 60) {
      for (const [what, call] of [
        ["decode", () => amf3.decode(input, { maxDepth: 1024 })],
        ["encode", () => amf3.encode(value)],
      ]) {
        try {
          deep(n, call);
        } catch (e) {
          if (e instanceof RangeError) continue;
          const Type = what === "decode" ? DecodeError : EncodeError;
          assert.ok(e instanceof Type && /^nesting too deep for the JavaScript stack/.test(e.message), String(e));
          seen[what]++;
        }
      }
    }
    assert.ok(seen.decode > 0 && seen.encode > 0, `the stack never ran out inside the codec: ${JSON.stringify(seen)}`);
  });

  test("encoding: deeper than maxDepth is an EncodeError naming the path; cycles are fine", () => {
    let v = [];
    for (let i = 0; i < 1024; i++) v = [v];
    assert.throws(() => amf3.encode(v), (e) => e instanceof EncodeError && e.message.startsWith("nesting deeper than 1024 ($[0][0]"));
    assert.throws(() => amf0.encode(v), EncodeError);
    assert.throws(() => amf3.encode([[[1]]], { maxDepth: 2 }), (e) => e.message === "nesting deeper than 2 ($[0][0])");
    const o = {};
    o.o = o;
    assert.equal(amf3.encode(o).length, 8);
  });
});

describe("maxObjects", () => {
  test("complex values count, references do not", () => {
    const ten = amf3.encode(Array.from({ length: 9 }, () => ({})));
    assert.ok(amf3.decode(ten, { maxObjects: 10 }));
    assert.throws(() => amf3.decode(ten, { maxObjects: 9 }), isDecodeError("more than the limit of 9 objects"));
    const shared = {};
    const refs = amf3.encode(Array.from({ length: 1000 }, () => shared));
    assert.equal(amf3.decode(refs, { maxObjects: 2 }).length, 1000);
    const dates = amf0.encode([new Date(0), new Date(1), Uint8Array.of(1)]);
    assert.throws(() => amf0.decode(dates, { maxObjects: 3 }), isDecodeError("more than the limit of 3 objects"));
  });
});

describe("maxSize", () => {
  test("one string, XML text or ByteArray", () => {
    const s = "x".repeat(100);
    assert.equal(amf3.decode(amf3.encode(s), { maxSize: 100 }), s);
    assert.throws(() => amf3.decode(amf3.encode(s), { maxSize: 99 }), isDecodeError("string length of 100 bytes exceeds the limit of 99"));
    assert.throws(() => amf3.decode(amf3.encode(new Uint8Array(100)), { maxSize: 99 }), isDecodeError("bytearray length of 100 bytes exceeds the limit of 99"));
    assert.throws(() => amf0.decode(amf0.encode(s), { maxSize: 99 }), isDecodeError("string length of 100 bytes exceeds"));
    assert.throws(() => amf0.decode(hex("0f00000064"), { maxSize: 99 }), isDecodeError("xml length of 100 bytes exceeds the limit of 99"));
  });
});

describe("length and count prefixes", () => {
  // Each declares far more than the input holds; each must fail before allocating.
  const lying = {
    "amf3 string 2^28-1": [amf3, "06ffffffff"],
    "amf3 ByteArray 2^28-1": [amf3, "0cffffffff"],
    "amf3 XML 2^28-1": [amf3, "0bffffffff"],
    "amf3 array count 2^28-1": [amf3, "09ffffffff01"],
    "amf3 sealed count 2^25-1": [amf3, "0afffffff301"],
    "amf3 Vector.<int> 2^28-1": [amf3, "0dffffffff00"],
    "amf3 Vector.<Number> 2^28-1": [amf3, "0fffffffff00"],
    "amf3 Vector.<Object> 2^28-1": [amf3, "10ffffffff000100"],
    "amf3 Dictionary 2^28-1": [amf3, "11ffffffff00"],
    "amf0 long string 2^32-1": [amf0, "0cffffffff41"],
    "amf0 XML document 2^32-1": [amf0, "0fffffffff41"],
    "amf0 strict array 2^32-1": [amf0, "0affffffff05"],
    "amf0 key 65535": [amf0, "03ffff41"],
    "packet header count 65535": [packet, "0003ffff"],
    "packet body count 65535": [packet, "00030000ffff"],
  };
  for (const [name, [codec, bytes]] of Object.entries(lying)) {
    test(name, () => {
      assert.throws(() => codec.decode(hex(bytes)), isDecodeError("exceeds"));
    });
  }

  test("lying prefixes cost neither memory nor time", () => {
    // Time is judged against the same number of inputs that fail at once (truncated
    // after their marker), decoded in the same run: a ratio, so a busy machine slows
    // both alike. A prefix that were looped over or allocated would cost thousands of
    // times more than that.
    const inputs = Object.values(lying).map(([codec, bytes]) => [codec, hex(bytes)]);
    const truncated = Object.values(lying).map(([codec, bytes]) => [codec, hex(bytes.slice(0, 2))]);
    const decodeAll = (list) => {
      const start = performance.now();
      for (let i = 0; i < 2000; i++) {
        for (const [codec, bytes] of list) {
          try {
            codec.decode(bytes);
          } catch {
            /* expected */
          }
        }
      }
      return performance.now() - start;
    };
    decodeAll(truncated); // warm up both paths' code
    globalThis.gc?.();
    const before = process.memoryUsage();
    const elapsed = decodeAll(inputs);
    const after = process.memoryUsage();
    const baseline = decodeAll(truncated);
    assert.ok(after.arrayBuffers - before.arrayBuffers < 16 * 1024 * 1024, `${after.arrayBuffers - before.arrayBuffers} bytes of buffers`);
    assert.ok(after.rss - before.rss < 64 * 1024 * 1024, `rss grew by ${after.rss - before.rss}`);
    assert.ok(elapsed < 20 * Math.max(baseline, 5), `${elapsed} ms for 30,000 lying inputs, ${baseline} ms for as many truncated ones`);
  });

  test("an ECMA array's count is only a hint: a huge one allocates nothing", () => {
    const v = amf0.decode(hex("08ffffffff000009"));
    assert.equal(v.size, 0);
    assert.equal(v.length, 0xffffffff);
  });
});
