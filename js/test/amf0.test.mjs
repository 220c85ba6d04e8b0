// AMF0 through the public API: references counted as Flash Player counts them (Dates
// and XML documents too), ECMA and strict arrays, long strings, the AVM+ switch to
// AMF3 and its shared tables, reserved markers refused.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  AmfDate,
  Avmplus,
  DecodeError,
  Dictionary,
  Double,
  EncodeError,
  IntVector,
  MixedArray,
  ObjectProxy,
  TypedObject,
  UNSUPPORTED,
  Xml,
  XmlDocument,
  amf0,
  amf3,
  classAliasOf,
  hex,
  registerClassAlias,
  toHex,
  unregisterClassAlias,
} from "./support/codec.mjs";

const enc = (v) => toHex(amf0.encode(v));
const round = (v, o) => amf0.decode(amf0.encode(v), o);

describe("scalars", () => {
  test("every number is a double; booleans; null and undefined", () => {
    assert.equal(enc(5), "004014000000000000");
    assert.equal(enc(-0), "008000000000000000");
    assert.equal(enc(2 ** 53), "004340000000000000");
    assert.equal(enc(new Double(1)), "003ff0000000000000");
    assert.equal(enc(3n), enc(3));
    assert.equal(enc(true), "0101");
    assert.equal(amf0.decode(hex("0107")), true);
    assert.equal(enc(null), "05");
    assert.equal(enc(undefined), "06");
  });

  test("strings: u16 length, or a long string past 65535 bytes", () => {
    assert.equal(enc("héllo"), "020006" + "68c3a96c6c6f");
    const s = "a".repeat(65535);
    assert.equal(enc(s).slice(0, 6), "02ffff");
    const long = "é".repeat(32768); // 65536 bytes
    assert.equal(enc(long).slice(0, 10), "0c00010000");
    assert.equal(round(long), long);
    assert.equal(amf0.decode(hex("0c0000000568656c6c6f")), "hello");
  });

  test("unsupported (0x0D) reads as undefined, or UNSUPPORTED in lossless decoding", () => {
    assert.equal(amf0.decode(hex("0d")), undefined);
    assert.equal(amf0.decode(hex("0d"), { lossless: true }), UNSUPPORTED);
    assert.equal(enc(UNSUPPORTED), "0d");
    assert.equal(toHex(amf3.encode(UNSUPPORTED)), "00");
  });

  test("reserved and unknown markers are refused", () => {
    for (const [bytes, message] of [
      ["04", "reserved amf0 marker 0x04 (movieclip) is not supported, at byte 0"],
      ["0e", "reserved amf0 marker 0x0e (recordset) is not supported, at byte 0"],
      ["09", "object-end marker 0x09 outside an object, at byte 0"],
      ["12", "unknown amf0 marker 0x12, at byte 0"],
      ["0a00000001ff", "unknown amf0 marker 0xff, at byte 5 ($[0])"],
    ]) {
      assert.throws(() => amf0.decode(hex(bytes)), (e) => e instanceof DecodeError && e.message === message);
    }
  });
});

describe("objects and arrays", () => {
  test("objects keep their members' order; an empty name is a member", () => {
    assert.equal(enc({ b: 1, a: null }), "030001620" + "03ff0000000000000" + "00016105" + "000009");
    assert.deepEqual(Object.keys(round({ z: 1, a: 2, m: 3 })), ["z", "a", "m"]);
    assert.equal(enc({ "": 1 }), "030000003ff0000000000000000009");
    assert.deepEqual(round({ "": 1 }), { "": 1 });
  });

  test("typed objects: 0x10 and the alias; registered classes too", () => {
    const t = new TypedObject("Point", { x: 1, y: 2 });
    assert.equal(enc(t), "100005506f696e74" + "0001780" + "03ff0000000000000" + "000179004000000000000000" + "000009");
    const back = round(t);
    assert.ok(back instanceof TypedObject && classAliasOf(back) === "Point");
    class P {}
    registerClassAlias("p.P", P, { sealed: ["x"] });
    try {
      const p = Object.assign(new P(), { y: 2, x: 1 });
      assert.equal(enc(p), "100003702e50" + "0001780" + "03ff0000000000000" + "000179004000000000000000" + "000009", "sealed first");
      assert.ok(round(p) instanceof P);
    } finally {
      unregisterClassAlias(P);
    }
  });

  test("strict arrays; a MixedArray or a Map of string keys is an ECMA array", () => {
    assert.equal(enc([1, "a"]), "0a00000002" + "003ff0000000000000" + "02000161");
    const m = new MixedArray([["len", 2]], ["a"]);
    assert.equal(enc(m), "0800000002" + "0001300200016" + "1" + "00036c656e004000000000000000" + "000009");
    assert.equal(enc(new Map([["k", 1]])), "0800000001" + "00016b003ff0000000000000" + "000009");
    assert.equal(enc(new Map([[1, "x"]])), "0800000001" + "000131020001" + "78" + "000009");
  });

  test("an ECMA array's count is a hint: read whatever it says, kept, written back", () => {
    const v = amf0.decode(hex("0800000005" + "00016105" + "000009"));
    assert.ok(v instanceof MixedArray);
    assert.equal(v.length, 5);
    assert.deepEqual([...v], [["a", null]]);
    assert.equal(enc(v), "0800000005" + "00016105" + "000009");
    const keys = amf0.decode(hex("0800000000" + "0001310200016" + "2" + "000130020001" + "61" + "000009"));
    assert.deepEqual([...keys.keys()], ["1", "0"], "wire order, not index order");
  });

  test("what AMF0 has no type for goes through the AVM+ switch", () => {
    assert.equal(enc(Uint8Array.of(1, 2, 3)), "110c07010203");
    assert.equal(enc(IntVector.from([1, -1])), "110d050000000001ffffffff");
    assert.equal(enc(new Dictionary([[{}, 1]])), "1111030" + "00a0b01010401");
    assert.equal(enc(new Map([[{}, 1]])), "111103000a0b01010401");
    assert.equal(enc(new ObjectProxy({ a: 1 })), "110a073b666c65782e6d6573736167696e672e696f2e4f626a65637450726f78790a0b010361040101");
  });

  test("every switch within one value shares one set of AMF3 tables", () => {
    const b = Uint8Array.of(7);
    assert.equal(enc([b, b, "x"]), "0a00000003" + "110c0307" + "110c00" + "02000178");
    assert.equal(enc({ a: new Avmplus("abc"), b: new Avmplus("abc") }), "03" + "0001611106076162" + "63" + "0001621106" + "00" + "000009");
  });
});

describe("references (AMF0 2.9, counted as Flash Player counts them)", () => {
  test("objects, typed objects, ECMA and strict arrays take an index at their marker", () => {
    const o = { a: null };
    assert.equal(enc([o, o]), "0a00000002" + "03000161050000" + "09" + "070001");
    const self = {};
    self.self = self;
    assert.equal(enc(self), "03" + "000473656c66" + "070000" + "000009");
    const back = round(self);
    assert.equal(back.self, back);
  });

  test("Dates and XML documents take an index too, and can be referred to", () => {
    const d = new Date(0);
    const o = { a: null };
    // [date, o, o]: the date is index 1, so o is index 2.
    assert.equal(enc([d, o, o]), "0a00000003" + "0b00000000000000000000" + "03000161050000" + "09" + "070002");
    assert.equal(enc([d, d]), "0a00000002" + "0b00000000000000000000" + "070001");
    const x = new XmlDocument("<a/>");
    assert.equal(enc([x, {}, x]), "0a00000003" + "0f000000043c612f3e" + "03000009" + "070001");
    assert.equal(enc(new Xml("<a/>")), "0f000000043c612f3e", "E4X XML is an XML document in AMF0");
    const v = amf0.decode(hex("0a00000002" + "0b3ff00000000000000000" + "070001"));
    assert.equal(v[0], v[1]);
  });

  test("values after the switch go into the AMF3 tables, not the AMF0 one", () => {
    const bytes = hex("0a00000002" + "110a0b0101" + "070000");
    const v = amf0.decode(bytes);
    assert.equal(v[1], v);
    assert.deepEqual(v[0], {});
    const lossless = amf0.decode(bytes, { lossless: true });
    assert.ok(lossless[0] instanceof Avmplus);
    assert.equal(toHex(amf0.encode(lossless)), toHex(bytes));
  });

  test("an index above 65535 cannot be referenced: the value is written again", () => {
    const many = Array.from({ length: 70000 }, () => ({}));
    const late = { late: true };
    const bytes = amf0.encode([...many, late, late]);
    const back = amf0.decode(bytes);
    assert.equal(back.length, 70002);
    assert.notEqual(back[70000], back[70001], "two copies");
    assert.deepEqual(back[70001], { late: true });
    const early = amf0.decode(amf0.encode([many[0], ...many.slice(1, 10), many[0]]));
    assert.equal(early[0], early[10]);
  });

  test("a reference out of range fails", () => {
    assert.throws(() => amf0.decode(hex("070000")), (e) => e.message === "object reference 0 is out of range (the table has 0), at byte 1");
    assert.throws(() => amf0.decode(hex("0a00000001070001")), /object reference 1 is out of range \(the table has 1\)/);
  });
});

describe("dates", () => {
  test("a Date; a non-zero time-zone is kept as read (AmfDate), never applied", () => {
    assert.equal(enc(new Date(1234567890123)), "0b4271f71fb04cb0000000");
    const zoned = amf0.decode(hex("0b4271f71fb04cb000fe20"));
    assert.ok(zoned instanceof AmfDate);
    assert.equal(zoned.ms, 1234567890123);
    assert.equal(zoned.tz, -480);
    assert.equal(zoned.toDate().toISOString(), "2009-02-13T23:31:30.123Z");
    assert.equal(enc(zoned), "0b4271f71fb04cb000fe20");
    assert.ok(Number.isNaN(amf0.decode(hex("0b7ff80000000000000000")).getTime()));
  });
});

describe("streams", () => {
  test("the AMF0 table and the AMF3 tables persist across the values of a stream", () => {
    const o = { a: null };
    const enc0 = new amf0.Encoder();
    const bytes = enc0.encodeAll([o, o, Uint8Array.of(1), "s"]);
    assert.equal(toHex(bytes), "03000161050000" + "09" + "070000" + "110c0301" + "02000173");
    const [x, y] = new amf0.Decoder().decodeAll(bytes);
    assert.equal(x, y);
    assert.throws(() => new amf0.Decoder().decode(bytes), (e) => e.message === "11 trailing bytes after the value, at byte 8");
  });
});

describe("errors", () => {
  test("keys and class names over 65535 bytes cannot be written", () => {
    assert.throws(() => amf0.encode({ ["k".repeat(65536)]: 1 }), (e) => e instanceof EncodeError && /65535/.test(e.message));
    assert.throws(() => amf0.encode(new TypedObject("c".repeat(65536), {})), EncodeError);
  });

  test("paths through objects and arrays", () => {
    assert.throws(
      () => amf0.decode(hex("03" + "0001610a00000002" + "0500" + "0001")),
      (e) => e.message === "unexpected end of input, 6 more bytes expected, at byte 13 ($.a[1])",
    );
  });
});

test("an anonymous object with sealed members (from AMF3) is a plain AMF0 object", () => {
  const v = amf3.decode(hex("0a130103610401"));
  assert.equal(enc(v), "03" + "000161003ff0000000000000" + "000009");
});
