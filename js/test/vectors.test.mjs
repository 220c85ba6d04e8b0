// The shared byte vectors of fixtures/ (fixtures/README.md), through the TypeScript
// codec: every valid vector decodes to its manifest value and re-encodes to the same
// bytes where the manifest says `exact`; every strict prefix fails (the truncated
// twins); a trailing byte is refused; every must-fail vector fails naming its reason.
//
// Lossless decoding (`lossless: true`) keeps all the manifest says, so it is compared
// with the manifest as it is. Default decoding gives plain JavaScript numbers (an
// integral double and an integer look alike), so it is compared at the level where ints
// and numbers are one, and re-encodes exactly except where that is the difference
// (DEFAULT_INEXACT, checked to be precise).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";

import { DecodeError, FIXTURES, amf0, amf3, toHex } from "./support/codec.mjs";
import { plainLevel, restrictIds, toCanonical, toCanonicalStream } from "./support/canonical.mjs";

const MANIFEST = JSON.parse(readFileSync(path.join(FIXTURES, "vectors.json"), "utf8"));
const VALID = MANIFEST.filter((e) => !("error" in e));
const FAILING = MANIFEST.filter((e) => "error" in e);
const CODECS = { 0: amf0, 3: amf3 };
const LOSSLESS = { lossless: true };

/** Exact vectors that default decoding cannot give back byte for byte, and why. */
const DEFAULT_INEXACT = {
  "amf0/unsupported": "0x0D reads as undefined, written 0x06",
  "amf0/avmplus-integer": "an AMF3 int after the switch is a number, written 0x00",
  "amf0/avmplus-in-strict-array-then-reference": "the AMF3 object is written as an AMF0 object",
  "amf0/avmplus-in-object": "the AMF3 strings are written as AMF0 strings",
  "amf0/stream-avmplus-shared-tables": "the AMF3 objects are written as AMF0 objects",
  "amf3/double-integral": "1.0 reads as 1, written as the integer 1",
};

const id = (e) => e.file.replace(/\.amf$/, "");
const data = (e) => new Uint8Array(readFileSync(path.join(FIXTURES, e.file)));

function decode(e, bytes, options) {
  const codec = CODECS[e.version];
  if (e.stream) return new codec.Decoder(options).decodeAll(bytes);
  return codec.decode(bytes, options);
}

function encode(e, value) {
  const codec = CODECS[e.version];
  if (e.stream) return new codec.Encoder().encodeAll(value);
  return codec.encode(value);
}

function canonical(e, value) {
  return e.stream ? toCanonicalStream(value, e.version) : toCanonical(value, e.version);
}

function checkOffset(err, size) {
  assert.ok(err instanceof DecodeError, `not a DecodeError: ${err}`);
  assert.ok(Number.isInteger(err.offset) && err.offset >= 0 && err.offset <= size, `offset ${err.offset} outside [0, ${size}]`);
  assert.ok(err.path.startsWith("$"));
  assert.match(err.message, / at byte \d+/);
  return true;
}

test("the manifest has the vectors the README counts, and every marker", () => {
  assert.ok(VALID.length >= 136 && FAILING.length >= 37, `${VALID.length} valid, ${FAILING.length} failing`);
  for (const version of [0, 3]) {
    const markers = new Set(MANIFEST.filter((e) => e.version === version).map((e) => data(e)[0]));
    for (let m = 0; m <= 0x11; m++) assert.ok(markers.has(m), `no amf${version} vector starts with 0x${m.toString(16)}`);
  }
});

describe("valid vectors, lossless", () => {
  for (const e of VALID) {
    test(id(e), () => {
      const bytes = data(e);
      const value = decode(e, bytes, LOSSLESS);
      assert.deepStrictEqual(canonical(e, value), e.value);
      const out = encode(e, value);
      if (e.exact) {
        assert.equal(toHex(out), toHex(bytes));
      } else {
        // The manifest is precise: a vector not marked exact is not.
        assert.notEqual(toHex(out), toHex(bytes), "re-encodes byte for byte: the manifest says it cannot");
        assert.deepStrictEqual(canonical(e, decode(e, out, LOSSLESS)), e.value);
      }
    });
  }
});

describe("valid vectors, default decoding", () => {
  for (const e of VALID) {
    test(id(e), () => {
      const bytes = data(e);
      const value = decode(e, bytes);
      assert.deepStrictEqual(plainLevel(canonical(e, value)), plainLevel(e.value));
      const out = encode(e, value);
      if (e.exact && !(id(e) in DEFAULT_INEXACT)) {
        assert.equal(toHex(out), toHex(bytes));
      } else {
        if (e.exact) assert.notEqual(toHex(out), toHex(bytes), `listed in DEFAULT_INEXACT but exact`);
        assert.deepStrictEqual(plainLevel(canonical(e, decode(e, out))), plainLevel(e.value));
      }
    });
  }
});

describe("every strict prefix of a valid vector fails", () => {
  for (const e of VALID) {
    test(id(e), () => {
      const bytes = data(e);
      const codec = CODECS[e.version];
      const boundaries = new Set(e.boundaries ?? []);
      for (let k = 0; k < bytes.length; k++) {
        const prefix = bytes.subarray(0, k);
        if (e.stream && (k === 0 || boundaries.has(k))) {
          const got = new codec.Decoder(LOSSLESS).decodeAll(prefix);
          const count = [0, ...[...boundaries].sort((a, b) => a - b)].indexOf(k);
          assert.deepStrictEqual(toCanonicalStream(got, e.version), restrictIds(e.value.slice(0, count)), `prefix ${k}`);
          continue;
        }
        assert.throws(
          () => (e.stream ? new codec.Decoder().decodeAll(prefix) : codec.decode(prefix)),
          (err) => checkOffset(err, k),
          `prefix of ${k} bytes`,
        );
      }
    });
  }
});

describe("a trailing byte is refused unless allowed", () => {
  for (const e of VALID.filter((x) => !x.stream)) {
    test(id(e), () => {
      const bytes = data(e);
      const longer = new Uint8Array(bytes.length + 1);
      longer.set(bytes);
      longer[bytes.length] = 0x05;
      const codec = CODECS[e.version];
      assert.throws(() => codec.decode(longer), (err) => checkOffset(err, longer.length) && /1 trailing byte after the value/.test(err.message));
      const value = codec.decode(longer, { allowTrailing: true, lossless: true });
      assert.deepStrictEqual(toCanonical(value, e.version), e.value);
    });
  }
});

describe("must-fail vectors fail", () => {
  for (const e of FAILING) {
    test(id(e), () => {
      const bytes = data(e);
      for (const options of [undefined, LOSSLESS]) {
        assert.throws(
          () => decode(e, bytes, options),
          (err) => checkOffset(err, bytes.length) && err.message.includes(e.error),
        );
      }
    });
  }
});

test("empty input fails at byte 0; an empty stream is no values", () => {
  for (const codec of [amf0, amf3]) {
    assert.throws(() => codec.decode(new Uint8Array(0)), (err) => checkOffset(err, 0) && err.offset === 0);
    assert.deepStrictEqual(new codec.Decoder().decodeAll(new Uint8Array(0)), []);
  }
});
