// Interop, node to Python: encode a set of values with the TypeScript codec and print
// {name: {version, hex}} as JSON; tests/js/test_js_codec.py decodes each with amfkit's
// Python codec and checks it against the value it expects.
//
//   node js/test/interop/encode.mjs > values.json

import {
  AcknowledgeMessage,
  ArrayCollection,
  Dictionary,
  Double,
  IntVector,
  MixedArray,
  NumberVector,
  ObjectProxy,
  ObjectVector,
  RemotingMessage,
  TypedObject,
  UintVector,
  Xml,
  XmlDocument,
  amf0,
  amf3,
  packet,
  registerClassAlias,
  requestBody,
} from "../../../python/amfkit/browser/static/amfkit-codec.js";
import { NODE_ALIAS, Node, buildComplex } from "../../bench/graphs.mjs";

registerClassAlias(NODE_ALIAS, Node);

const hex = (b) => Buffer.from(b).toString("hex");

function shared() {
  const child = { name: "child" };
  const cycle = { name: "cycle" };
  cycle.self = cycle;
  const list = ["x"];
  list.push(list);
  return { a: child, b: child, cycle, list };
}

function message() {
  return new RemotingMessage({
    destination: "EchoService",
    operation: "echo",
    body: ["hi", 1, 2.5],
    headers: { DSId: "nil", DSEndpoint: "amfkit-amf" },
    messageId: "6D5A8C36-0B3B-4C5E-9C59-2B3A9E3C3F10",
    timestamp: 1234567890123,
    clientId: null,
  });
}

const values = {
  strings: ["", "héllo wörld", "日本語", "😀 emoji", "é".repeat(40000)],
  ints: [0, 1, -1, 2 ** 28 - 1, -(2 ** 28), 2 ** 28, -(2 ** 28) - 1, 2 ** 31, 2 ** 53],
  doubles: [1.5, -0, 0.1, 1e300, NaN, Infinity, -Infinity, 5e-324, new Double(1)],
  dates: [new Date(0), new Date(1234567890123), new Date(-2208988800000)],
  arrays: [[1, [2, [3]]], [], [null, undefined, true, false]],
  objects: { a: 1, b: { c: "d" }, "key with space": null, ü: true },
  typed: [
    new TypedObject("org.example.Point", { x: 1, y: 2.5 }),
    new TypedObject("org.example.Sealed", { id: 7, tag: "t" }, { sealed: ["id"], dynamic: true }),
  ],
  bytes: Uint8Array.of(0, 1, 255),
  shared: shared(),
  mixed: new MixedArray([["k", 1]], ["x"]),
  dictionary: new Dictionary([[1, "one"], ["s", 2]], true),
  vectors: [IntVector.from([1, -1]), UintVector.from([2 ** 32 - 1]), NumberVector.from([1.5, -0]), new ObjectVector(["a"], "String", true)],
  xml: [new Xml("<a/>"), new XmlDocument("<b>t</b>")],
  flex: [new ArrayCollection([1, 2]), new ObjectProxy({ a: 1 })],
  message: message(),
};

const out = {};
for (const [name, value] of Object.entries(values)) {
  out[`amf3/${name}`] = { version: 3, hex: hex(amf3.encode(value)) };
  if (name !== "vectors" && name !== "message") out[`amf0/${name}`] = { version: 0, hex: hex(amf0.encode(value)) };
}
const ack = new AcknowledgeMessage({ body: "ok", correlationId: "C", clientId: "K", messageId: "M", timestamp: 1, headers: {} });
ack.small = true;
out["amf3/small-ack"] = { version: 3, hex: hex(amf3.encode(ack)) };
out["packet/v3"] = {
  version: "packet",
  hex: hex(
    packet.encode({
      version: 3,
      headers: [{ name: "Credentials", mustUnderstand: true, value: { userid: "ada", password: "s3cret" } }],
      bodies: [{ target: "EchoService.echo", response: "/1", value: ["hi", 1] }, requestBody(message(), 2)],
    }),
  ),
};
out["packet/v0"] = {
  version: "packet",
  hex: hex(packet.encode({ version: 0, headers: [], bodies: [{ target: "EchoService.echo", response: "/1", value: [new Date(0), { a: 1 }] }] })),
};
const [complex] = buildComplex(50);
out["amf3/complex-50"] = { version: 3, hex: hex(amf3.encode(complex)) };
out["amf0/complex-50"] = { version: 0, hex: hex(amf0.encode(complex)) };

process.stdout.write(JSON.stringify(out));
