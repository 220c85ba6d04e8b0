// Interop, Python to node: decode what amfkit's Python codec wrote (a JSON file of
// {name: {version, hex}}; version 0, 3 or "packet") with the TypeScript codec, and print
// {name: canonical typed JSON} (fixtures/README.md's notation; lossless decoding) for
// tests/js/test_js_codec.py to compare with the values it encoded. Flex messages show as
// {"message": alias, "small": bool, "fields": {name: notation}}.
//
//   node js/test/interop/decode.mjs values.json

import { readFileSync } from "node:fs";

import { AbstractMessage, Avmplus, amf0, amf3, classAliasOf, packet, registerClassAlias } from "../../../python/amfkit/browser/static/amfkit-codec.js";
import { NODE_ALIAS, Node } from "../../bench/graphs.mjs";
import { toCanonical } from "../support/canonical.mjs";

registerClassAlias(NODE_ALIAS, Node);

const LOSSLESS = { lossless: true };

function show(value, version) {
  if (value instanceof AbstractMessage) {
    const fields = {};
    for (const k of value.constructor.FIELDS) fields[k] = show(value[k], 3);
    return { message: classAliasOf(value), small: value.small, fields };
  }
  if (Array.isArray(value) && value.length === 1 && value[0] instanceof AbstractMessage) return [show(value[0], version)];
  return toCanonical(value, version);
}

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = {};
for (const [name, { version, hex }] of Object.entries(input)) {
  const bytes = Uint8Array.from(Buffer.from(hex, "hex"));
  try {
    if (version === "packet") {
      const p = packet.decode(bytes, LOSSLESS);
      out[name] = {
        version: p.version,
        headers: p.headers.map((h) => ({ name: h.name, mustUnderstand: h.mustUnderstand, value: show(h.value, 0) })),
        bodies: p.bodies.map((b) => ({ target: b.target, response: b.response, value: show(unwrap(b.value), p.version === 3 ? 3 : 0) })),
      };
    } else {
      out[name] = show((version === 0 ? amf0 : amf3).decode(bytes, LOSSLESS), version);
    }
  } catch (e) {
    out[name] = { error: String(e) };
  }
}
process.stdout.write(JSON.stringify(out));

/** A version 3 body's value comes after the AVM+ switch (lossless: an Avmplus). */
function unwrap(v) {
  return v instanceof Avmplus ? v.value : v;
}
