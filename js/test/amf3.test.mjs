// AMF3 through the public API: the integer policy and U29, the three reference tables,
// typed objects and the class registry, every value type both ways, errors and paths.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  AmfDate,
  ArrayCollection,
  ArrayList,
  DecodeError,
  Dictionary,
  Double,
  EncodeError,
  IntVector,
  MixedArray,
  NumberVector,
  ObjectProxy,
  ObjectVector,
  TRAITS,
  TypedObject,
  UintVector,
  Xml,
  XmlDocument,
  amf3,
  classAliasOf,
  hex,
  registerClassAlias,
  registeredClasses,
  toHex,
  unregisterClassAlias,
} from "./support/codec.mjs";

const enc = (v, o) => toHex(amf3.encode(v, o));
const round = (v, o) => amf3.decode(amf3.encode(v), o);

describe("numbers", () => {
  test("integers in -2^28 .. 2^28-1 are the 29-bit integer type, in the shortest U29", () => {
    const cases = [
      [0, "0400"],
      [127, "047f"],
      [128, "048100"],
      [16383, "04ff7f"],
      [16384, "04818000"],
      [2097151, "04ffff7f"],
      [2097152, "0480c08000"],
      [2 ** 28 - 1, "04bfffffff"],
      [-1, "04ffffffff"],
      [-(2 ** 28), "04c0808000"],
      [-(2 ** 28) + 1, "04c0808001"],
      [2 ** 27, "04a0808000"],
    ];
    for (const [n, want] of cases) {
      assert.equal(enc(n), want, String(n));
      assert.equal(amf3.decode(hex(want)), n);
    }
  });

  test("everything else is a double: outside the range, fractions, -0, NaN, infinities", () => {
    assert.equal(enc(2 ** 28), "0541b0000000000000");
    assert.equal(enc(-(2 ** 28) - 1), "05c1b0000001000000");
    assert.equal(enc(2 ** 31), "0541e0000000000000");
    assert.equal(enc(1.5), "053ff8000000000000");
    assert.equal(enc(-0), "058000000000000000");
    assert.equal(enc(NaN), "057ff8000000000000");
    assert.equal(enc(Infinity), "057ff0000000000000");
    assert.ok(Object.is(round(-0), -0));
    assert.ok(Number.isNaN(round(NaN)));
  });

  test("Double forces a double; lossless decoding gives one back for an integral double", () => {
    assert.equal(enc(new Double(1)), "053ff0000000000000");
    assert.equal(amf3.decode(hex("053ff0000000000000")), 1);
    const d = amf3.decode(hex("053ff0000000000000"), { lossless: true });
    assert.ok(d instanceof Double && d.value === 1 && +d === 1);
    // Only where a plain number would be written back as an integer.
    assert.equal(amf3.decode(hex("053ff8000000000000"), { lossless: true }), 1.5);
    assert.equal(amf3.decode(hex("0541b0000000000000"), { lossless: true }), 2 ** 28);
  });

  test("bigint: an integer in range, else a double", () => {
    assert.equal(enc(5n), "0405");
    assert.equal(enc(2n ** 40n), enc(2 ** 40));
  });

  test("an overlong U29 reads, the writer writes the shortest form", () => {
    assert.equal(amf3.decode(hex("048001")), 1);
    assert.equal(amf3.decode(hex("0480808001")), 1);
  });
});

describe("strings", () => {
  test("UTF-8, the length counts bytes; repeated strings are references", () => {
    const s = "é日😀";
    assert.equal(enc(s), "0613c3a9e697a5f09f9880");
    assert.equal(enc([s, s]), "0905010613c3a9e697a5f09f98800600");
    assert.deepEqual(round(["a", "a", "b", "a"]), ["a", "a", "b", "a"]);
  });

  test("the empty string is never referenced and takes no index", () => {
    assert.equal(enc(["", "x", "", "x"]), "09090106010603780601" + "0600");
  });

  test("member names, class names and keys share the string table with values", () => {
    assert.equal(enc({ a: "a" }), "0a0b01036106000" + "1");
    assert.equal(enc(new TypedObject("P", { P: "P" })), "0a0b0350" + "00" + "0600" + "01");
  });

  test("long strings, non-BMP, a byte-order mark kept", () => {
    const long = "ü".repeat(40000) + "x";
    assert.equal(round(long), long);
    assert.equal(round("\ufeffa"), "\ufeffa");
    assert.equal(amf3.decode(hex("0607efbbbf")), "\ufeff");
  });

  test("a lone surrogate cannot be written", () => {
    assert.throws(() => amf3.encode("a\ud800b"), (e) => e instanceof EncodeError && /lone surrogate at index 1/.test(e.message));
    assert.throws(() => amf3.encode({ k: "\udc00" }), (e) => e instanceof EncodeError && /\(\$\.k\)$/.test(e.message));
  });

  test("invalid UTF-8 fails at the offending byte", () => {
    for (const [bytes, offset] of [
      ["0605c328", 2],
      ["0605c080", 2],
      ["0607eda080", 2],
      ["06076162ff", 4],
      ["0609f4908080", 2],
    ]) {
      assert.throws(() => amf3.decode(hex(bytes)), (e) => e instanceof DecodeError && e.message === `invalid utf-8 in string, at byte ${offset}`);
    }
    // Long strings go another way; the offset is still exact.
    const long = new Uint8Array(3 + 100);
    long.set([0x06, 0x81, 0x49]);
    long.fill(0x61, 3);
    long[90] = 0xff;
    assert.throws(() => amf3.decode(long), (e) => e.offset === 90);
  });
});

describe("objects, typed objects, traits", () => {
  test("anonymous objects share one traits entry", () => {
    assert.equal(enc([{ a: 1 }, { a: 2 }]), "0905010a0b0103610401010a0100040201");
  });

  test("TypedObject keeps its alias and traits' shape and writes back the same bytes", () => {
    const bytes = hex("0905010a230b506f696e7403780379040104020a0104030404");
    const v = amf3.decode(bytes);
    assert.ok(v[0] instanceof TypedObject);
    assert.deepEqual({ ...v[0] }, { x: 1, y: 2 });
    assert.equal(classAliasOf(v[0]), "Point");
    assert.deepEqual(v[0][TRAITS].sealed, ["x", "y"]);
    assert.equal(v[0][TRAITS].dynamic, false);
    assert.equal(Object.keys(v[0]).length, 2, "the traits are no member");
    assert.equal(toHex(amf3.encode(v)), toHex(bytes));
  });

  test("a new TypedObject: dynamic by default, or sealed", () => {
    assert.equal(enc(new TypedObject("P", { a: 1 })), "0a0b03500361040101");
    assert.equal(enc(new TypedObject("P", { a: 1, b: 2 }, { sealed: ["a"] })), "0a1b035003610401036204020" + "1");
    assert.equal(enc(new TypedObject("P", { a: 1 }, { sealed: ["a"], dynamic: false })), "0a1303500361" + "0401");
    // A sealed member the object lacks is undefined.
    assert.equal(enc(new TypedObject("P", {}, { sealed: ["a"], dynamic: false })), "0a130350036100");
  });

  test("typed objects of one alias and shape share traits; another shape does not", () => {
    const a = new TypedObject("P", { x: 1 });
    const b = new TypedObject("P", { x: 2 });
    const c = new TypedObject("P", { x: 3 }, { sealed: ["x"], dynamic: false });
    // c: inline traits (not dynamic, one sealed name), the alias and name by reference.
    assert.equal(enc([a, b, c]), "0907010a0b035003780401010a01020402010a1300020403");
  });

  test("registered classes: decoded as instances (constructor not called), written with their traits", () => {
    let constructed = 0;
    class Point {
      constructor(x, y) {
        constructed++;
        this.x = x;
        this.y = y;
      }
      norm() {
        return Math.hypot(this.x, this.y);
      }
    }
    registerClassAlias("org.example.Point", Point, { sealed: ["x", "y"], dynamic: false });
    try {
      assert.equal(registeredClasses().get("org.example.Point"), Point);
      const p = new Point(3, 4);
      p.extra = "not written: not dynamic";
      const bytes = amf3.encode([p, new Point(1, 2)]);
      assert.equal(toHex(bytes), "0905010a23236f72672e6578616d706c652e506f696e740378037904030404" + "0a0104010402");
      constructed = 0;
      const [q, r] = amf3.decode(bytes);
      assert.equal(constructed, 0);
      assert.ok(q instanceof Point && r instanceof Point);
      assert.equal(q.norm(), 5);
      assert.equal(classAliasOf(q), "org.example.Point");
      // Members a peer sends that a non-dynamic class does not declare are ignored.
      const other = amf3.decode(hex("0a33236f72672e6578616d706c652e506f696e74037803790373040104020403"));
      assert.deepEqual({ ...other }, { x: 1, y: 2 });
    } finally {
      unregisterClassAlias(Point);
    }
    assert.ok(amf3.decode(amf3.encode(new TypedObject("org.example.Point", { x: 1 }))) instanceof TypedObject);
    assert.throws(() => unregisterClassAlias("org.example.Point"), RangeError);
  });

  test("a dynamic registered class writes its own members; unregistered class instances are refused", () => {
    class Node {}
    registerClassAlias("org.amfkit.bench.Node", Node);
    try {
      const n = Object.assign(new Node(), { a: 1, b: [2] });
      const back = round(n);
      assert.ok(back instanceof Node);
      assert.deepEqual({ ...back }, { a: 1, b: [2] });
    } finally {
      unregisterClassAlias("org.amfkit.bench.Node");
    }
    class Lock {}
    assert.throws(() => amf3.encode({ owner: [new Lock()] }), (e) => e instanceof EncodeError && e.message === "cannot encode an object of class Lock: register its class with registerClassAlias, or pass a default ($.owner[0])");
    assert.equal(enc({ f: new Lock() }, { default: () => "lock" }), enc({ f: "lock" }));
    assert.throws(() => amf3.encode(() => 1), (e) => e instanceof EncodeError && /cannot encode a function/.test(e.message));
    assert.throws(() => amf3.encode(Symbol("s")), EncodeError);
    // A default that keeps returning what cannot be written ends at the nesting limit.
    assert.throws(() => amf3.encode(() => 1, { default: () => () => 2 }), /nesting deeper than 1024/);
  });

  test("an empty member name cannot be written in AMF3", () => {
    assert.throws(() => amf3.encode({ "": 1 }), (e) => e instanceof EncodeError && /empty member name/.test(e.message));
  });

  test("__proto__ is a member like any other, never the prototype", () => {
    const bytes = hex("0a0b01135f5f70726f746f5f5f0a0111706f6c6c75746564030101");
    const v = amf3.decode(bytes);
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
    assert.ok(Object.hasOwn(v, "__proto__"));
    assert.equal({}.polluted, undefined);
    assert.equal(toHex(amf3.encode(v)), toHex(bytes));
  });

  test("anonymous objects with sealed members keep them", () => {
    const bytes = hex("0a130103610401");
    const v = amf3.decode(bytes);
    assert.ok(v instanceof TypedObject);
    assert.equal(classAliasOf(v), "");
    assert.equal(toHex(amf3.encode(v)), "0a130103610401");
  });

  test("an externalizable class nobody registered cannot be read", () => {
    assert.throws(() => amf3.decode(hex("0a0707466f6f0401")), (e) => e.message === 'externalizable class "Foo" is not registered, its body cannot be read, at byte 6');
  });

  test("a registered externalizable class reads and writes its own body", () => {
    class Temperature {
      readExternal(input) {
        this.celsius = input.readDouble();
        this.where = input.readUTF();
        this.tags = input.readObject();
      }
      writeExternal(output) {
        output.writeDouble(this.celsius);
        output.writeUTF(this.where);
        output.writeObject(this.tags);
      }
    }
    registerClassAlias("t.Temperature", Temperature, { externalizable: true });
    try {
      const t = Object.assign(new Temperature(), { celsius: 21.5, where: "Zürich", tags: ["a", "a"] });
      const bytes = amf3.encode([t, t]);
      assert.equal(toHex(bytes), "0905010a071b742e54656d706572617475726540358000000000000007" + "5ac3bc72696368" + "0905010603610602" + "0a02");
      const [a, b] = amf3.decode(bytes);
      assert.ok(a instanceof Temperature && a === b);
      assert.deepEqual({ ...a }, { celsius: 21.5, where: "Zürich", tags: ["a", "a"] });
      // A body that ends early fails inside it.
      assert.throws(() => amf3.decode(bytes.subarray(0, 30)), (e) => e instanceof DecodeError && e.path === "$[0][\"<t.Temperature>\"]");
    } finally {
      unregisterClassAlias(Temperature);
    }
    class Half {}
    assert.throws(() => registerClassAlias("h", Half, { externalizable: true }), TypeError);
  });
});

describe("references and cycles", () => {
  test("an object reached twice is written once and decodes as one object", () => {
    const shared = { a: 1 };
    const v = round([shared, shared, { shared }]);
    assert.equal(v[0], v[1]);
    assert.equal(v[2].shared, v[0]);
    assert.equal(enc([shared, shared]), "0905010a0b01036104010" + "10a02");
  });

  test("cycles through objects, arrays, dictionaries, vectors and typed objects", () => {
    const o = { name: "o" };
    o.self = o;
    const a = [];
    a.push(a, o);
    const d = new Dictionary();
    d.set("me", d);
    d.set(o, a);
    const t = new TypedObject("T", {});
    t.t = t;
    const ov = new ObjectVector([], "*");
    ov.push(ov);
    const v = round({ o, a, d, t, ov });
    assert.equal(v.o.self, v.o);
    assert.equal(v.a[0], v.a);
    assert.equal(v.a[1], v.o);
    assert.equal(v.d.get("me"), v.d);
    assert.equal(v.d.get(v.o), v.a, "an object key is the same decoded object");
    assert.equal(v.t.t, v.t);
    assert.equal(v.ov[0], v.ov);
  });

  test("dates, byte arrays and XML are in the object table", () => {
    const date = new Date(1234567890123);
    const bytes = Uint8Array.of(1, 2, 3);
    const x = new Xml("<a/>");
    const v = round([date, date, bytes, bytes, x, x]);
    assert.equal(v[0], v[1]);
    assert.equal(v[2], v[3]);
    assert.equal(v[4], v[5]);
    assert.equal(enc([date, date]), "09050108014271f71fb04cb000" + "0802");
    // Two equal arrays that are not the same object stay two.
    assert.equal(enc([Uint8Array.of(65), Uint8Array.of(65)]), "0905010c03410c0341");
  });
});

describe("value types", () => {
  test("dates: a Date when it holds the time exactly, else an AmfDate", () => {
    assert.equal(round(new Date(-1)).getTime(), -1);
    assert.ok(Number.isNaN(round(new Date(NaN)).getTime()));
    const frac = amf3.decode(hex("08013fe0000000000000"));
    assert.ok(frac instanceof AmfDate && frac.ms === 0.5 && frac.tz === 0);
    assert.equal(enc(frac), "08013fe0000000000000");
    assert.equal(round(new Date(8.64e15)).getTime(), 8.64e15);
    const beyond = amf3.decode(hex("0801433eb208c2dc0001"));
    assert.ok(beyond instanceof AmfDate);
    assert.ok(amf3.decode(hex("08018000000000000000")) instanceof AmfDate, "-0 ms");
  });

  test("ByteArray: Uint8Array (a copy, never a view of the input), ArrayBuffer", () => {
    const input = hex("0c0701020" + "3");
    const b = amf3.decode(input);
    assert.ok(b instanceof Uint8Array);
    assert.deepEqual([...b], [1, 2, 3]);
    input[2] = 9;
    assert.equal(b[0], 1);
    assert.equal(enc(Uint8Array.of(1, 2, 3).buffer), "0c07010203");
    assert.equal(enc(Buffer.from([1])), "0c0301");
  });

  test("XML and XMLDocument are kept as text", () => {
    const x = amf3.decode(hex("0b11" + Buffer.from("not <xml").toString("hex")));
    assert.ok(x instanceof Xml && x.text === "not <xml" && String(x) === "not <xml");
    assert.equal(enc(new XmlDocument("<a/>")), "07093c612f3e");
  });

  test("MixedArray: the associative part first on the wire, in order, then the dense items", () => {
    const m = new MixedArray([["k", true], ["1", "one"], ["0", "zero"]], ["x"]);
    assert.equal(enc(m), "0903036b03033106076f6e65033006097a65726f01060378");
    const back = round(m);
    assert.ok(back instanceof MixedArray);
    assert.deepEqual([...back.keys()], ["k", "1", "0"]);
    assert.deepEqual(back.dense, ["x"]);
    // An Array without an associative part is a plain Array.
    assert.ok(Array.isArray(amf3.decode(hex("0903010401"))));
  });

  test("Vectors: int, uint, Number bit for bit, Object with its type name; the fixed flag kept", () => {
    const iv = IntVector.from([1, -1, -(2 ** 31), 2 ** 31 - 1]);
    iv.fixed = true;
    assert.equal(enc(iv), "0d0901" + "00000001ffffffff800000007fffffff");
    const back = round(iv);
    assert.ok(back instanceof IntVector && back.fixed === true);
    assert.deepEqual([...back], [...iv]);
    assert.equal(enc(Int32Array.of(5)), "0d030000000005", "any Int32Array, not fixed");
    assert.equal(enc(Uint32Array.of(2 ** 32 - 1)), "0e0300ffffffff");
    assert.ok(round(Uint32Array.of(7)) instanceof UintVector);
    const nv = hex("0f0700" + "7ff800000000abcd" + "7ff0000000000001" + "8000000000000000");
    const n = amf3.decode(nv);
    assert.ok(n instanceof NumberVector);
    assert.equal(toHex(amf3.encode(n)), toHex(nv), "NaN payloads and -0 survive");
    const ov = new ObjectVector(["a", "b"], "String", true);
    assert.equal(enc(ov), "1005010d537472696e67" + "0603610603" + "62");
    const ovb = round(ov);
    assert.ok(ovb instanceof ObjectVector && ovb.typeName === "String" && ovb.fixed);
    assert.ok(!(ovb.map((x) => x) instanceof ObjectVector), "map() gives a plain Array");
    assert.throws(() => amf3.encode(Float32Array.of(1)), (e) => e instanceof EncodeError && /Float32Array/.test(e.message));
  });

  test("Dictionary and Map: keys of any type, the weak flag kept", () => {
    const key = { k: 1 };
    const d = new Dictionary([[1, "x"], [-1, "y"], [key, [key]]], true);
    const back = round(d);
    assert.ok(back instanceof Dictionary && back.weakKeys === true);
    const [k1, k2, k3] = back.keys();
    assert.deepEqual([k1, k2], [1, -1]);
    assert.equal(back.get(k3)[0], k3);
    assert.equal(enc(new Map([["a", 1]])), "1103000603610401");
  });

  test("Flex's wrappers: ArrayCollection, ArrayList, ObjectProxy", () => {
    const ac = new ArrayCollection([1, 2]);
    assert.equal(enc(ac), "0a0743666c65782e6d6573736167696e672e696f2e4172726179436f6c6c656374696f6e0905010401040" + "2");
    const back = round(ac);
    assert.ok(back instanceof ArrayCollection && Array.isArray(back));
    assert.deepEqual([...back], [1, 2]);
    assert.ok(round(new ArrayList(["x"])) instanceof ArrayList);
    const op = round(new ObjectProxy({ a: 1 }));
    assert.ok(op instanceof ObjectProxy);
    assert.deepEqual({ ...op }, { a: 1 });
    // A wrapper whose body is not what it wraps is refused.
    assert.throws(() => amf3.decode(hex("0a0743666c65782e6d6573736167696e672e696f2e4172726179436f6c6c656374696f6e0401")), /ArrayCollection body that is not an array/);
    assert.throws(() => amf3.decode(hex("0a073b666c65782e6d6573736167696e672e696f2e4f626a65637450726f78790903010401")), /ObjectProxy body that is not an object/);
  });

  test("undefined, null, booleans; array holes are undefined", () => {
    assert.equal(enc([undefined, null, false, true]), "0909010001" + "0203");
    // eslint-disable-next-line no-sparse-arrays
    assert.deepEqual(round([1, , 3]), [1, undefined, 3]);
    assert.deepEqual(round({ u: undefined }), { u: undefined });
  });
});

describe("errors", () => {
  test("a DecodeError names the reason, the byte and the path", () => {
    assert.throws(
      () => amf3.decode(hex("0a0b010361" + "0905010401" + "20")),
      (e) => e instanceof DecodeError && e.message === "unknown amf3 marker 0x20, at byte 10 ($.a[1])" && e.offset === 10 && e.path === "$.a[1]" && e.reason === "unknown amf3 marker 0x20",
    );
    assert.throws(() => amf3.decode(hex("0a0b0107612062" + "12")), (e) => e.path === '$["a b"]');
    assert.throws(() => amf3.decode(hex("0603")), (e) => e.message === "string length 1 exceeds the 0 bytes left, at byte 2");
    assert.throws(() => amf3.decode(hex("040105")), (e) => e.message === "1 trailing byte after the value, at byte 2");
  });

  test("an error's text is bounded: long names cut, deep paths elided", () => {
    const name = "n".repeat(1000);
    const bytes = Uint8Array.from([0x0a, 0x0b, 0x01, 0x8f, 0x51, ...Buffer.from(name), 0x12]);
    assert.throws(() => amf3.decode(bytes), (e) => e.path === `$["${"n".repeat(64)}…"]` && e.message.length < 200);
    const deep = new Uint8Array(3 * 100 + 1);
    for (let i = 0; i < 100; i++) deep.set([0x09, 0x03, 0x01], i * 3);
    deep[300] = 0x12;
    assert.throws(() => amf3.decode(deep), (e) => e.path === "$[0][0][0][0][0][0][0][0][…84 levels…][0][0][0][0][0][0][0][0]");
  });

  test("every error is an AMFError; a DecodeError is no EncodeError", async () => {
    const { AMFError } = await import("./support/codec.mjs");
    try {
      amf3.decode(hex("12"));
      assert.fail();
    } catch (e) {
      assert.ok(e instanceof AMFError && e instanceof DecodeError && !(e instanceof EncodeError) && e instanceof Error);
      assert.equal(e.name, "DecodeError");
    }
  });
});

describe("streams", () => {
  test("encodeAll / decodeAll share one context; decode starts a new one each call", () => {
    const shared = { a: 1 };
    const enc3 = new amf3.Encoder();
    const bytes = enc3.encodeAll([shared, shared, "a"]);
    assert.equal(toHex(bytes), "0a0b010361040101" + "0a00" + "0600");
    const [x, y, s] = new amf3.Decoder().decodeAll(bytes);
    assert.equal(x, y);
    assert.equal(s, "a");
    assert.equal(toHex(enc3.encode(shared)), "0a0b0103610401" + "01", "a new context");
    const dec = new amf3.Decoder({ maxDepth: 3 });
    assert.throws(() => dec.decode(hex("0a00")), /out of range/);
    assert.equal(dec.decode(hex("0401ff"), { allowTrailing: true }), 1);
  });
});
