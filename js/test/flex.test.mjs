// Flex messages: the full forms (typed objects, sealed members in name order) and the
// small ones (DSK, DSA, DSC: flag bytes, then the flagged values), in a packet as a Flex
// or Royale client sends them.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AbstractMessage,
  AcknowledgeMessage,
  AsyncMessage,
  CommandMessage,
  ErrorMessage,
  Operation,
  RemotingMessage,
  amf3,
  classAliasOf,
  hex,
  newId,
  packet,
  requestBody,
  toHex,
} from "./support/codec.mjs";

const UUID = /^[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$/;

test("newId: an uppercase random version 4 UUID", () => {
  const ids = new Set(Array.from({ length: 100 }, newId));
  assert.equal(ids.size, 100);
  for (const id of ids) assert.match(id, UUID);
});

test("a RemotingMessage: defaults, and the full form's sealed members in name order", () => {
  const m = new RemotingMessage({ destination: "EchoService", operation: "echo", body: ["hi"], headers: { DSId: "nil", DSEndpoint: "my-amf" } });
  assert.match(m.messageId, UUID);
  assert.ok(Math.abs(m.timestamp - Date.now()) < 5000);
  assert.equal(m.timeToLive, 0);
  assert.equal(m.clientId, null);
  assert.equal(m.small, false);
  assert.equal(classAliasOf(m), "flex.messaging.messages.RemotingMessage");
  const bytes = amf3.encode(m);
  const names = ["body", "clientId", "destination", "headers", "messageId", "operation", "source", "timeToLive", "timestamp"];
  // 9 sealed names, not dynamic: 9 << 4 | 0b0011 = 147, the U29 81 13; a 39-byte alias.
  const header = "0a" + "8113" + "4f" + Buffer.from("flex.messaging.messages.RemotingMessage").toString("hex");
  assert.ok(toHex(bytes).startsWith(header), toHex(bytes).slice(0, 40));
  let at = header.length - 2;
  for (const n of names) {
    const text = Buffer.from(n).toString("hex");
    const found = toHex(bytes).indexOf(text, at);
    assert.ok(found > at, `${n} after the previous name`);
    at = found;
  }
  const back = amf3.decode(bytes);
  assert.ok(back instanceof RemotingMessage && back instanceof AbstractMessage);
  for (const k of ["destination", "operation", "body", "headers", "messageId", "timestamp", "timeToLive", "clientId", "source"]) {
    assert.deepEqual(back[k], m[k], k);
  }
});

test("every message class round-trips as itself; an ErrorMessage always carries every field", () => {
  const classes = [AsyncMessage, AcknowledgeMessage, ErrorMessage, RemotingMessage, CommandMessage];
  for (const C of classes) {
    const m = new C({ body: { x: 1 }, clientId: "C1", destination: "d" });
    const back = amf3.decode(amf3.encode(m));
    assert.equal(Object.getPrototypeOf(back), C.prototype, C.name);
    assert.deepEqual(back.body, { x: 1 });
  }
  const e = new ErrorMessage({ faultCode: "Server.Processing", faultString: "boom" });
  const back = amf3.decode(amf3.encode(e));
  for (const k of ErrorMessage.FIELDS) assert.ok(Object.hasOwn(back, k), k);
  assert.equal(back.faultString, "boom");
  assert.equal(back.rootCause, null);
  assert.equal(new CommandMessage().operation, Operation.CLIENT_PING);
});

// A DSK as BlazeDS writes it, by hand from the layout: flags, then the flagged values.
const DSK = hex(`
  0a 07 07 44534b
  a9 83 01
  06 05 6f6b
  0a 0b 01 09 44534964 06 07 616263 01
  05 4271f71fb04cb000
  0c 21 00112233445566778899aabbccddeeff
  0c 21 0102030405060708090a0b0c0d0e0f10
  04 07
  02
  0c 21 ffeeddccbbaa99887766554433221100
  00
`);

test("a small AcknowledgeMessage (DSK) reads as an AcknowledgeMessage, binary ids as UUID text, unknown flags skipped", () => {
  const m = amf3.decode(DSK);
  assert.ok(m instanceof AcknowledgeMessage);
  assert.equal(m.small, true);
  assert.equal(m.body, "ok");
  assert.deepEqual(m.headers, { DSId: "abc" });
  assert.equal(m.timestamp, 1234567890123);
  assert.equal(m.clientId, "00112233-4455-6677-8899-AABBCCDDEEFF");
  assert.equal(m.messageId, "01020304-0506-0708-090A-0B0C0D0E0F10");
  assert.equal(m.correlationId, "FFEEDDCC-BBAA-9988-7766-554433221100");
  assert.equal(m.destination, null);
  assert.equal(m.timeToLive, null);
  assert.ok(!Object.keys(m).includes("small"), "the form is no member");
  for (let k = 0; k < DSK.length; k++) assert.throws(() => amf3.decode(DSK.subarray(0, k)), `prefix ${k}`);
});

test("a small message is written back in its small form; the full form otherwise", () => {
  const m = amf3.decode(DSK);
  const bytes = amf3.encode(m);
  // Flags for what is there: body, clientId, headers, messageId, timestamp.
  assert.ok(toHex(bytes).startsWith("0a070744534b" + "3b"), toHex(bytes).slice(0, 20));
  const back = amf3.decode(bytes);
  assert.ok(back instanceof AcknowledgeMessage && back.small);
  for (const k of AcknowledgeMessage.FIELDS) assert.deepEqual(back[k], m[k], k);
  m.small = false;
  assert.ok(toHex(amf3.encode(m)).includes(Buffer.from("flex.messaging.messages.AcknowledgeMessage").toString("hex")));
});

test("DSA and DSC read and write their own levels; too many flag bytes fail", () => {
  const c = new CommandMessage({ operation: Operation.LOGIN, body: "dTpw", correlationId: "X" });
  c.small = true;
  const bytes = amf3.encode(c);
  assert.ok(toHex(bytes).startsWith("0a070744534" + "3"));
  const back = amf3.decode(bytes);
  assert.ok(back instanceof CommandMessage && back.small);
  assert.equal(back.operation, 8);
  assert.equal(back.correlationId, "X");
  const a = new AsyncMessage({ body: 1 });
  a.small = true;
  const ab = amf3.decode(amf3.encode(a));
  assert.ok(ab instanceof AsyncMessage && ab.small && ab.body === 1);
  // An ErrorMessage and a RemotingMessage have no small form.
  const e = new ErrorMessage();
  e.small = true;
  assert.ok(toHex(amf3.encode(e)).includes(Buffer.from("ErrorMessage").toString("hex")));
  const tooMany = hex("0a070744534b" + "80".repeat(17) + "00");
  assert.throws(() => amf3.decode(tooMany), (err) => /more than 16 flag bytes/.test(err.message) && err.path === '$["<DSK>"]');
});

test("a RemoteObject call in a packet, and the answer read back", () => {
  const call = new RemotingMessage({ destination: "EchoService", operation: "echo", body: ["hi"], headers: { DSId: "nil", DSEndpoint: "amfkit" } });
  const request = packet.encode({ version: 3, headers: [], bodies: [requestBody(call, 1)] });
  const seen = packet.decode(request);
  assert.equal(seen.bodies[0].target, "null");
  assert.equal(seen.bodies[0].response, "/1");
  assert.ok(seen.bodies[0].value[0] instanceof RemotingMessage);
  const ack = new AcknowledgeMessage({ correlationId: call.messageId, body: "hi", headers: { DSId: newId() } });
  const answer = packet.decode(packet.encode({ version: 3, headers: [], bodies: [{ target: "/1/onResult", response: "", value: ack }] }));
  const got = answer.bodies[0].value;
  assert.ok(got instanceof AcknowledgeMessage && !(got instanceof ErrorMessage));
  assert.equal(got.correlationId, call.messageId);
});
