// The remoting packet: version, headers, bodies; real lengths written, lengths ignored
// on read; each header and body its own reference context; AMF3 bodies in version 3.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Avmplus, DecodeError, EncodeError, amf0, hex, packet, toHex } from "./support/codec.mjs";

// A version 0 packet written by hand: no headers, one body Echo.echo /1 ["hi"].
const ECHO = hex(`
  0000                          version 0
  0000                          no headers
  0001                          one body
  0009 4563686f2e6563686f       target "Echo.echo"
  0002 2f31                     response "/1"
  0000000a                      length 10
  0a00000001 02 0002 6869       strict array ["hi"]
`.replace(/ [a-zA-Z"].*$/gm, ""));

test("a hand-written packet decodes, and encodes back to the same bytes", () => {
  const p = packet.decode(ECHO);
  assert.deepEqual(p, { version: 0, headers: [], bodies: [{ target: "Echo.echo", response: "/1", value: ["hi"] }] });
  assert.equal(toHex(packet.encode(p)), toHex(ECHO));
});

test("headers: name, must-understand, AMF0 value; real lengths", () => {
  const p = {
    version: 3,
    headers: [
      { name: "Credentials", mustUnderstand: true, value: { userid: "u", password: "p" } },
      { name: "DSId", value: "nil" },
    ],
    bodies: [{ target: "null", response: "/1", value: [1, 2.5] }],
  };
  const bytes = packet.encode(p);
  const back = packet.decode(bytes);
  assert.equal(back.version, 3);
  assert.deepEqual(back.headers, [
    { name: "Credentials", mustUnderstand: true, value: { userid: "u", password: "p" } },
    { name: "DSId", mustUnderstand: false, value: "nil" },
  ]);
  assert.deepEqual(back.bodies[0].value, [1, 2.5]);
  // Header value: AMF0 object; its length field holds its real length.
  const head = toHex(bytes);
  assert.ok(head.startsWith("00030002" + "000b43726564656e7469616c73" + "01" + "0000001e" + "03"), head);
  // Body value in a version 3 packet: the AVM+ switch, then AMF3.
  assert.ok(head.endsWith("0001" + "00046e756c6c" + "00022f31" + "0000000f" + "11" + "0905010401" + "054004000000000000"), head);
});

test("version 0 bodies are AMF0; version 1 is read and written like 0", () => {
  for (const version of [0, 1]) {
    const bytes = packet.encode({ version, headers: [], bodies: [{ target: "S.m", response: "/2", value: [1] }] });
    assert.ok(toHex(bytes).endsWith("0a00000001003ff0000000000000"));
    assert.equal(packet.decode(bytes).version, version);
  }
});

test("length fields are not trusted on read", () => {
  for (const lie of ["ffffffff", "00000000", "00000001"]) {
    const bytes = hex(toHex(ECHO).replace("0000000a", lie));
    assert.deepEqual(packet.decode(bytes).bodies[0].value, ["hi"]);
  }
});

test("Flex's form (an AMF0 array of one AMF3 value) and Royale's (the switch, then an AMF3 array) both read", () => {
  const flex = hex("0003 0000 0001 00046e756c6c 00022f31 ffffffff 0a00000001 11 0603" + "78");
  assert.deepEqual(packet.decode(flex).bodies[0].value, ["x"]);
  const royale = hex("0003 0000 0001 00046e756c6c 00022f31 00000001 11 09030106" + "0378");
  assert.deepEqual(packet.decode(royale).bodies[0].value, ["x"]);
  const lossless = packet.decode(flex, { lossless: true }).bodies[0].value;
  assert.ok(lossless[0] instanceof Avmplus);
});

test("each header and body is its own reference context", () => {
  const o = { a: 1 };
  const bytes = packet.encode({ version: 0, headers: [{ name: "h", value: o }], bodies: [{ target: "a", response: "/1", value: [o, o] }, { target: "b", response: "/2", value: o }] });
  const p = packet.decode(bytes);
  assert.notEqual(p.headers[0].value, p.bodies[0].value[0]);
  assert.equal(p.bodies[0].value[0], p.bodies[0].value[1]);
  assert.deepEqual(p.bodies[1].value, { a: 1 });
  // A reference to an index only an earlier body defined fails, naming the body.
  const bad = hex("0000 0000 0002 000161 00022f31 00000004 03000009 000162 00022f32 00000003 070000");
  assert.throws(() => packet.decode(bad), (e) => e instanceof DecodeError && e.path === "$.bodies[1]" && /object reference 0 is out of range/.test(e.message));
});

test("unknown versions, truncation and trailing bytes fail", () => {
  assert.throws(() => packet.decode(hex("0002 0000 0000")), (e) => e.message === "unknown amf packet version 2, at byte 0");
  assert.throws(() => packet.decode(hex("0009 0000 0000")), (e) => e.message === "unknown amf packet version 9, at byte 0");
  for (let k = 0; k < ECHO.length; k++) {
    assert.throws(() => packet.decode(ECHO.subarray(0, k)), (e) => e instanceof DecodeError && e.offset <= k, `prefix ${k}`);
  }
  const longer = new Uint8Array(ECHO.length + 1);
  longer.set(ECHO);
  assert.throws(() => packet.decode(longer), /1 trailing byte after the value/);
  assert.throws(() => packet.encode({ version: 2, headers: [], bodies: [] }), EncodeError);
});

test("an unencodable value names its body", () => {
  assert.throws(
    () => packet.encode({ version: 3, headers: [], bodies: [{ target: "a", response: "/1", value: 1 }, { target: "b", response: "/2", value: [() => 1] }] }),
    (e) => e instanceof EncodeError && e.path === "$.bodies[1][0]",
  );
});

test("AMF0 values of a packet are the codec's own: Dates counted as Flash Player counts them", () => {
  const d = new Date(0);
  const o = {};
  const bytes = packet.encode({ version: 0, headers: [], bodies: [{ target: "t", response: "/1", value: [d, o, o] }] });
  assert.ok(toHex(bytes).endsWith("0b00000000000000000000" + "03000009" + "070002"));
  assert.ok(toHex(bytes).endsWith("00000017" + toHex(amf0.encode([d, o, o]))));
});
