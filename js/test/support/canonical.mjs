// Convert decoded values of the TypeScript codec to the canonical typed JSON of
// fixtures/README.md ("The value notation"), to compare them with the manifest
// fixtures/vectors.json. The JavaScript counterpart of tests/support/canonical.py.
//
// Containers (arrays, objects, MixedArrays, Maps, Vectors, Flex's wrappers) that occur
// more than once in the graph, by identity, get "id" on their first occurrence and
// {"t": "ref"} after, in the notation's order (array: dense then assoc; object: sealed
// then dynamic; dict: key then value).
//
// A plain number shows as {"t": "int"} in AMF3 context when the AMF3 writer would write
// it as an integer, else as {"t": "number"}; in AMF0 context always as a number. Values
// that came through an AMF0 AVM+ switch (`Avmplus`, in lossless decoding) are shown in
// AMF3 context. `plainLevel` compares where the model cannot tell (default decoding).

import {
  AmfDate,
  ArrayCollection,
  ArrayList,
  Avmplus,
  Dictionary,
  Double,
  MixedArray,
  ObjectProxy,
  ObjectVector,
  TRAITS,
  TypedObject,
  UNSUPPORTED,
  Xml,
  XmlDocument,
  classAliasOf,
} from "./codec.mjs";

const COLLECTION = "flex.messaging.io.ArrayCollection";
const LIST = "flex.messaging.io.ArrayList";
const PROXY = "flex.messaging.io.ObjectProxy";

/** A double as the notation writes it. */
export function number(x) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  return numberBits(view, 0);
}

function numberBits(view, at) {
  const x = view.getFloat64(at);
  if (Number.isNaN(x)) {
    let bits = "";
    for (let i = 0; i < 8; i++) bits += view.getUint8(at + i).toString(16).padStart(2, "0");
    return bits === "7ff8000000000000" ? "NaN" : `NaN:${bits}`;
  }
  if (x === Infinity) return "Infinity";
  if (x === -Infinity) return "-Infinity";
  if (Object.is(x, -0)) return "-0";
  return x;
}

function isIntLike(x) {
  return Number.isInteger(x) && x >= -(2 ** 28) && x < 2 ** 28 && !Object.is(x, -0);
}

function isContainer(v) {
  return (
    typeof v === "object" &&
    v !== null &&
    !(v instanceof Date) &&
    !(v instanceof AmfDate) &&
    !(v instanceof Xml) &&
    !(v instanceof XmlDocument) &&
    !(v instanceof Uint8Array) &&
    !(v instanceof Double) &&
    !(v instanceof Avmplus) &&
    v !== UNSUPPORTED
  );
}

/** The traits an object is shown with: [alias, sealed names, dynamic]. */
function traitsOf(v, version) {
  if (v instanceof TypedObject) {
    const t = v[TRAITS];
    return version === 0 ? [t.alias, [], true] : [t.alias, [...t.sealed], t.dynamic];
  }
  const alias = classAliasOf(v);
  if (alias !== undefined) {
    // A registered class: its registration says the shape (the flex messages: sealed).
    const spec = registeredTraits.get(alias);
    if (spec !== undefined) return version === 0 ? [alias, [], true] : spec;
    return [alias, [], true];
  }
  return ["", [], true];
}

/** Registered classes' shapes, for the tests that use them: alias -> [alias, sealed, dynamic]. */
export const registeredTraits = new Map();

function children(v) {
  if (v instanceof Avmplus) return [v.value];
  if (Array.isArray(v)) return v;
  if (ArrayBuffer.isView(v)) return [];
  if (v instanceof MixedArray) return [...v.dense, ...v.values()];
  if (v instanceof Map) return [...v].flat();
  return Object.keys(v).map((k) => v[k]);
}

class Converter {
  constructor(version, roots) {
    this.version = version;
    this.counts = new Map();
    this.ids = new Map();
    for (const r of roots) this.count(r);
  }

  count(v) {
    if (v instanceof Avmplus) return this.count(v.value);
    if (!isContainer(v)) return;
    const n = (this.counts.get(v) ?? 0) + 1;
    this.counts.set(v, n);
    if (n === 1) for (const c of children(v)) this.count(c);
  }

  head(t, v) {
    const out = { t };
    if ((this.counts.get(v) ?? 0) > 1) out.id = this.ids.get(v);
    return out;
  }

  conv(v, version = this.version) {
    if (isContainer(v) && (this.counts.get(v) ?? 0) > 1) {
      if (this.ids.has(v)) return { t: "ref", id: this.ids.get(v) };
      this.ids.set(v, this.ids.size + 1);
    }
    if (v === null) return { t: "null" };
    if (v === undefined || v === UNSUPPORTED) return { t: "undefined" };
    if (typeof v === "boolean") return { t: "bool", v };
    if (typeof v === "number") {
      if (version === 3 && isIntLike(v)) return { t: "int", v };
      return { t: "number", v: number(v) };
    }
    if (typeof v === "string") return { t: "string", v };
    if (v instanceof Double) return { t: "number", v: number(v.value) };
    if (v instanceof Avmplus) return this.conv(v.value, 3);
    if (v instanceof XmlDocument) return { t: "xmldoc", v: v.text };
    if (v instanceof Xml) return { t: "xml", v: v.text };
    if (v instanceof Date) return { t: "date", ms: number(v.getTime()), tz: 0 };
    if (v instanceof AmfDate) return { t: "date", ms: number(v.ms), tz: v.tz };
    if (v instanceof Uint8Array) return { t: "bytes", hex: Buffer.from(v).toString("hex") };
    if (v instanceof ArrayCollection || v instanceof ArrayList) {
      const out = this.head("external", v);
      out.class = v instanceof ArrayCollection ? COLLECTION : LIST;
      out.v = { t: "array", dense: v.map((x) => this.conv(x, version)), assoc: [] };
      return out;
    }
    if (v instanceof ObjectProxy) {
      const out = this.head("external", v);
      out.class = PROXY;
      out.v = { t: "object", class: "", sealed: [], dynamic: Object.keys(v).map((k) => [k, this.conv(v[k], version)]) };
      return out;
    }
    if (v instanceof ObjectVector) {
      const out = this.head("vector", v);
      Object.assign(out, { kind: "object", fixed: v.fixed, type: v.typeName });
      out.items = v.map((x) => this.conv(x, version));
      return out;
    }
    if (v instanceof Int32Array || v instanceof Uint32Array || v instanceof Float64Array) {
      const out = this.head("vector", v);
      out.kind = v instanceof Int32Array ? "int" : v instanceof Uint32Array ? "uint" : "number";
      out.fixed = v.fixed === true;
      if (v instanceof Float64Array) {
        // Each item's bits in the platform's order, copied big-endian for numberBits.
        out.items = [];
        const be = new DataView(new ArrayBuffer(8));
        const little = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
        for (let i = 0; i < v.length; i++) {
          const raw = new Uint8Array(v.buffer, v.byteOffset + i * 8, 8);
          for (let j = 0; j < 8; j++) be.setUint8(j, little ? raw[7 - j] : raw[j]);
          out.items.push(numberBits(be, 0));
        }
      } else {
        out.items = [...v];
      }
      return out;
    }
    if (Array.isArray(v)) {
      const out = this.head("array", v);
      out.dense = v.map((x) => this.conv(x, version));
      out.assoc = [];
      return out;
    }
    if (v instanceof MixedArray) {
      if (version === 0) {
        const out = this.head("ecma", v);
        out.items = [...v.dense.map((x, i) => [String(i), this.conv(x, version)]), ...[...v].map(([k, x]) => [k, this.conv(x, version)])];
        return out;
      }
      const out = this.head("array", v);
      out.dense = v.dense.map((x) => this.conv(x, version));
      out.assoc = [...v].map(([k, x]) => [k, this.conv(x, version)]);
      return out;
    }
    if (v instanceof Map) {
      const out = this.head("dict", v);
      out.weak = v instanceof Dictionary ? v.weakKeys : false;
      out.items = [...v].map(([k, x]) => [this.conv(k, version), this.conv(x, version)]);
      return out;
    }
    if (typeof v === "object") {
      const out = this.head("object", v);
      const [alias, sealed, dynamic] = traitsOf(v, version);
      out.class = alias;
      out.sealed = sealed.map((k) => [k, this.conv(v[k], version)]);
      const names = new Set(sealed);
      const rest = Object.keys(v)
        .filter((k) => !names.has(k))
        .map((k) => [k, this.conv(v[k], version)]);
      out.dynamic = dynamic || rest.length > 0 ? rest : null;
      return out;
    }
    throw new Error(`no canonical form for ${typeof v}`);
  }
}

export function toCanonical(value, version) {
  return new Converter(version, [value]).conv(value);
}

export function toCanonicalStream(values, version) {
  const c = new Converter(version, values);
  return values.map((v) => c.conv(v));
}

/** The notation where ints and numbers are not told apart (plain JavaScript numbers). */
export function plainLevel(tree) {
  if (Array.isArray(tree)) return tree.map(plainLevel);
  if (tree !== null && typeof tree === "object") {
    if (tree.t === "int") return { t: "number", v: tree.v };
    const out = {};
    for (const [k, v] of Object.entries(tree)) out[k] = plainLevel(v);
    return out;
  }
  return tree;
}

/** Drop "id"s no {"t": "ref"} uses and renumber the rest in order of first appearance
 * (for a prefix of a stream's values). */
export function restrictIds(values) {
  const used = new Set();
  const scan = (n) => {
    if (Array.isArray(n)) n.forEach(scan);
    else if (n !== null && typeof n === "object") {
      if (n.t === "ref") used.add(n.id);
      Object.values(n).forEach(scan);
    }
  };
  scan(values);
  const renum = new Map();
  const fix = (n) => {
    if (Array.isArray(n)) return n.map(fix);
    if (n !== null && typeof n === "object") {
      const out = {};
      for (const [k, x] of Object.entries(n)) {
        if (k === "id" && n.t !== "ref") {
          if (used.has(x)) {
            renum.set(x, renum.size + 1);
            out.id = renum.get(x);
          }
          continue;
        }
        out[k] = fix(x);
      }
      if (n.t === "ref") out.id = renum.get(n.id);
      return out;
    }
    return n;
  };
  return fix(values);
}
