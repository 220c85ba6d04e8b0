// The service browser's values: AMF type names and the collapsible tree (as `amfkit
// decode` prints them: python/amfkit/cli/tree.py), the JSON mapping of `amfkit decode
// --json` / `amfkit encode` (docs/cli.md, "JSON") both ways, and the hex dump.
//
// Nothing here turns text into markup or code: every text goes into the page as a text
// node (textContent), every element is made with createElement.

import { el } from "./dom.js";

/** The AMF codec module (amfkit-codec.js), once loaded; null in JSON-only mode. */
let C = null;

export function setCodec(codec) {
  C = codec;
}

const INT_MIN = -(2 ** 28);
const INT_MAX = 2 ** 28 - 1;
const MAX_STRING = 120;
const MAX_BYTES = 32;
const MAX_VECTOR = 16;
/** Nodes visited looking for shared containers: past it, no `#n` tags (the tree is lazy,
 * so a cycle still cannot run away). */
const MAX_SCAN = 2_000_000;
/** Rows opened without asking: the root, and small containers near it. */
const AUTO_OPEN_ROWS = 400;

const ARRAY_COLLECTION = "flex.messaging.io.ArrayCollection";
const ARRAY_LIST = "flex.messaging.io.ArrayList";
const OBJECT_PROXY = "flex.messaging.io.ObjectProxy";

export function isAmfInt(n) {
  return Number.isInteger(n) && n >= INT_MIN && n <= INT_MAX && !Object.is(n, -0);
}

function numberText(n) {
  if (Number.isNaN(n)) return "nan";
  if (n === Infinity) return "inf";
  if (n === -Infinity) return "-inf";
  if (Object.is(n, -0)) return "-0.0";
  return String(n);
}

/** A string as Python's repr writes it (what `amfkit decode` shows). */
export function pyRepr(s) {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (ch === "\\") out += "\\\\";
    else if (ch === quote) out += "\\" + quote;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
    else if (c >= 0xd800 && c <= 0xdfff) out += "\\u" + c.toString(16);
    else out += ch;
  }
  return out + quote;
}

function clipString(s) {
  if (s.length > MAX_STRING) return `${pyRepr(s.slice(0, MAX_STRING))}… (${s.length} chars)`;
  return pyRepr(s);
}

function utf8Length(s) {
  return new TextEncoder().encode(s).length;
}

function keyLabel(k) {
  if (typeof k === "string") {
    if (k && /^[^\s:'"[\]\u0000-\u001f\u007f]+$/u.test(k)) return k;
    return pyRepr(k);
  }
  if (typeof k === "number" && Number.isInteger(k)) return `[${k}]`;
  return scalarKey(k);
}

function scalarKey(k) {
  if (typeof k === "string") return pyRepr(k);
  if (typeof k === "number") return numberText(k);
  return String(k);
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

function hex(bytes, limit) {
  let out = "";
  const n = Math.min(bytes.length, limit);
  for (let i = 0; i < n; i++) out += bytes[i].toString(16).padStart(2, "0");
  return out;
}

function isoUtc(d) {
  const t = d.getTime();
  if (Number.isNaN(t)) return "nan";
  return d.toISOString().replace(".000Z", "Z");
}

/** Unwrap what lossless decoding wraps: an Avmplus value is AMF3 from there down. */
function unwrap(value, version) {
  while (C !== null && value instanceof C.Avmplus) {
    value = value.value;
    version = 3;
  }
  return [value, version];
}

function isVector(v) {
  return v instanceof Int32Array || v instanceof Uint32Array || v instanceof Float64Array;
}

function vectorName(v) {
  if (v instanceof Int32Array) return "Vector.<int>";
  if (v instanceof Uint32Array) return "Vector.<uint>";
  return "Vector.<Number>";
}

function isMixedArray(v) {
  return C !== null && v instanceof C.MixedArray;
}

function isDictionary(v) {
  return v instanceof Map && !isMixedArray(v);
}

function wrapperAlias(v) {
  if (C === null) return undefined;
  if (v instanceof C.ArrayCollection) return ARRAY_COLLECTION;
  if (v instanceof C.ArrayList) return ARRAY_LIST;
  if (v instanceof C.ObjectProxy) return OBJECT_PROXY;
  return undefined;
}

function aliasOf(v) {
  if (C === null) return undefined;
  const w = wrapperAlias(v);
  if (w !== undefined) return w;
  return C.classAliasOf(v);
}

function traitsOf(v) {
  if (C === null) return undefined;
  const t = v[C.TRAITS];
  return t instanceof C.Traits ? t : undefined;
}

/** Whether a value is something AMF can reference, with (or holding) other values. */
export function isContainer(v) {
  if (v === null || typeof v !== "object") return false;
  if (v instanceof Date || v instanceof Uint8Array) return false;
  if (C !== null) {
    if (v instanceof C.AmfDate || v instanceof C.Double || v instanceof C.Unsupported) return false;
    if (v instanceof C.Xml || v instanceof C.XmlDocument) return false;
  }
  return true;
}

function amf3Only(name, version) {
  return version === 0 ? `${name} (AMF3)` : name;
}

/** The AMF type a decoded value was (`version` 0 or 3), or its JSON type ("json"). */
export function typeName(value, version) {
  [value, version] = unwrap(value, version);
  if (version === "json") {
    if (value === null) return "null";
    if (Array.isArray(value)) return "array";
    return typeof value === "object" ? "object" : typeof value;
  }
  const v0 = version === 0;
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (C !== null && value instanceof C.Unsupported) return "unsupported";
  if (typeof value === "boolean") return "boolean";
  if (C !== null && value instanceof C.Double) return v0 ? "number" : "double";
  if (typeof value === "number") return v0 ? "number" : isAmfInt(value) ? "integer" : "double";
  if (typeof value === "string") return v0 && value.length > 16383 && utf8Length(value) > 65535 ? "long string" : "string";
  if (C !== null && value instanceof C.XmlDocument) return v0 ? "XML document" : "XMLDocument";
  if (C !== null && value instanceof C.Xml) return v0 ? "XML document" : "XML";
  if (value instanceof Date || (C !== null && value instanceof C.AmfDate)) return "date";
  if (value instanceof Uint8Array) return amf3Only("ByteArray", v0);
  if (isVector(value)) return amf3Only(vectorName(value), v0);
  if (C !== null && value instanceof C.ObjectVector) return amf3Only("Vector.<Object>", v0);
  if (isMixedArray(value)) return v0 ? "ECMA array" : "array";
  if (isDictionary(value)) return amf3Only("Dictionary", v0);
  if (aliasOf(value) !== undefined) return v0 ? "typed object" : "object";
  if (Array.isArray(value)) return v0 ? "strict array" : "array";
  if (typeof value === "object") return "object";
  return typeof value;
}

/** The line of a value in the tree, after its label: type name and value, or size. */
export function describe(value, version) {
  [value, version] = unwrap(value, version);
  const name = typeName(value, version);
  if (version === "json") {
    if (value === null) return name;
    if (typeof value === "string") return `${name} ${clipString(value)}`;
    if (typeof value !== "object") return `${name} ${String(value)}`;
    if (Array.isArray(value)) return `${name} [${value.length}]`;
    return `${name} (${plural(Object.keys(value).length, "member", "members")})`;
  }
  if (value === null || value === undefined) return name;
  if (C !== null && value instanceof C.Unsupported) return name;
  if (typeof value === "boolean") return `${name} ${value}`;
  if (C !== null && value instanceof C.Double) return `${name} ${numberText(value.value)}`;
  if (typeof value === "number") return `${name} ${numberText(value)}`;
  if (typeof value === "string") return `${name} ${clipString(value)}`;
  if (C !== null && (value instanceof C.Xml || value instanceof C.XmlDocument)) return `${name} ${clipString(value.text)}`;
  if (value instanceof Date) return `${name} ${isoUtc(value)}`;
  if (C !== null && value instanceof C.AmfDate) {
    const ms = value.ms;
    const text = Number.isFinite(ms) ? `${ms} ms since 1970` : numberText(ms);
    return `${name} ${text}` + (value.tz ? `, tz ${value.tz > 0 ? "+" : ""}${value.tz} min` : "");
  }
  if (value instanceof Uint8Array) {
    const more = value.length > MAX_BYTES ? "…" : "";
    return `${name} [${value.length}] ${hex(value, MAX_BYTES)}${more}`.trimEnd();
  }
  if (isVector(value)) {
    const items = Array.from(value.subarray(0, MAX_VECTOR), (x) => numberText(x));
    const more = value.length > MAX_VECTOR ? ", …" : "";
    return `${name} [${value.length}] [${items.join(", ")}${more}]` + (value.fixed ? ", fixed" : "");
  }
  if (C !== null && value instanceof C.ObjectVector) {
    return `${name} [${value.length}] of ${pyRepr(value.typeName || "*")}` + (value.fixed ? ", fixed" : "");
  }
  if (isMixedArray(value)) {
    if (version === 0) return `${name} [${value.size}]`;
    return `${name} [${value.dense.length} dense, ${value.size} associative]`;
  }
  if (isDictionary(value)) {
    const weak = value.weakKeys ? ", weak keys" : "";
    return `${name} (${plural(value.size, "entry", "entries")}${weak})`;
  }
  const alias = aliasOf(value);
  if (alias !== undefined) {
    if (Array.isArray(value)) return `${name} ${pyRepr(alias)} [${value.length}]`;
    const n = Object.keys(value).length;
    const traits = traitsOf(value);
    let shape = "";
    if (traits !== undefined && !traits.externalizable && (traits.sealed.length > 0 || !traits.dynamic)) {
      shape = `, ${traits.sealed.length} sealed` + (traits.dynamic ? "" : ", not dynamic");
    }
    return `${name} ${pyRepr(alias)} (${plural(n, "member", "members")}${shape})`;
  }
  if (Array.isArray(value)) return `${name} [${value.length}]`;
  return `${name} (${plural(Object.keys(value).length, "member", "members")})`;
}

/** A Dictionary entry whose key is itself a container: a node of two. */
class Entry {
  constructor(key, value) {
    this.key = key;
    this.value = value;
  }
}

/** The children of a value as [label, child, version]; label null for an entry node,
 * "k =>" for a Dictionary key. */
export function children(value, version) {
  [value, version] = unwrap(value, version);
  if (value instanceof Entry) {
    return [
      ["key", value.key, version],
      ["value", value.value, version],
    ];
  }
  if (!isContainer(value) || isVector(value)) return [];
  if (Array.isArray(value)) return value.map((x, i) => [`[${i}]`, x, version]);
  if (isMixedArray(value)) {
    const out = value.dense.map((x, i) => [`[${i}]`, x, version]);
    for (const [k, x] of value) out.push([keyLabel(k), x, version]);
    return out;
  }
  if (isDictionary(value)) {
    const out = [];
    for (const [k, x] of value) {
      if (isContainer(k)) out.push([null, new Entry(k, x), version]);
      else out.push([`${scalarKey(k)} =>`, x, version]);
    }
    return out;
  }
  return Object.keys(value).map((k) => [keyLabel(k), value[k], version]);
}

function count(value, version) {
  [value, version] = unwrap(value, version);
  if (Array.isArray(value)) return value.length;
  if (value instanceof Map) return value.size + (isMixedArray(value) ? value.dense.length : 0);
  if (isContainer(value) && !isVector(value)) return Object.keys(value).length;
  return 0;
}

/** The containers reached more than once from `root`, in the tree's order: a map from
 * each to its tag number and the path of its first occurrence. */
function sharedContainers(root, version) {
  const seen = new Map(); // container -> path of its first occurrence
  const order = [];
  const shared = new Set();
  const stack = [["$", root, version]];
  let visits = 0;
  while (stack.length > 0) {
    if (++visits > MAX_SCAN) return new Map();
    const [path, raw, ver] = stack.pop();
    const [v, vv] = unwrap(raw, ver);
    if (!isContainer(v)) continue;
    if (v instanceof Entry) {
      const kids = children(v, vv);
      for (let i = kids.length - 1; i >= 0; i--) stack.push([`${path}/${kids[i][0]}`, kids[i][1], kids[i][2]]);
      continue;
    }
    if (seen.has(v)) {
      shared.add(v);
      continue;
    }
    seen.set(v, path);
    order.push(v);
    const kids = children(v, vv);
    for (let i = kids.length - 1; i >= 0; i--) {
      const label = kids[i][0] ?? `{${i}}`;
      stack.push([`${path}/${label}`, kids[i][1], kids[i][2]]);
    }
  }
  const tags = new Map();
  for (const v of order) if (shared.has(v)) tags.set(v, { tag: tags.size + 1, path: seen.get(v) });
  return tags;
}

/**
 * A collapsible tree of `value` (`version` 0, 3 or "json"): nested <details> whose
 * children are built when first opened. `label` names the root.
 */
export function renderTree(value, version, label = null) {
  const tags = sharedContainers(value, version);
  const budget = { rows: 0 };
  const root = el("div", { class: "tree", role: "tree" });
  root.append(node(label, value, version, "$", 0, tags, budget, true));
  return root;
}

function lineText(label, value, version, path, tags) {
  const prefix = label === null ? "" : label.endsWith(" =>") ? `${label} ` : `${label}: `;
  const [v] = unwrap(value, version);
  if (v instanceof Entry) return [prefix, "entry (an object key)", "", false];
  const t = isContainer(v) ? tags.get(v) : undefined;
  if (t !== undefined && t.path !== path) return [prefix, `<ref #${t.tag}>`, "", true];
  return [prefix, describe(value, version), t !== undefined ? ` #${t.tag}` : "", false];
}

function node(label, value, version, path, depth, tags, budget, open) {
  budget.rows++;
  const [prefix, text, tag, isRef] = lineText(label, value, version, path, tags);
  const kids = isRef ? 0 : count(value, version);
  const typeEnd = text.indexOf(" ");
  const typeText = typeEnd < 0 ? text : text.slice(0, typeEnd);
  const rest = typeEnd < 0 ? "" : text.slice(typeEnd);
  const line = [
    el("span", { class: "k" }, prefix),
    el("span", { class: isRef ? "ref" : "t" }, isRef ? text : typeText),
    isRef ? "" : el("span", { class: "v" }, rest),
    tag ? el("span", { class: "tag" }, tag) : "",
  ];
  if (kids === 0) return el("div", { class: "leaf", role: "treeitem" }, ...line);
  const details = el("details", { class: "node", role: "treeitem" });
  const summary = el("summary", {}, ...line);
  details.append(summary);
  let built = false;
  const build = () => {
    if (built) return;
    built = true;
    const box = el("div", { class: "kids", role: "group" });
    const list = children(value, version);
    list.forEach(([k, child, ver], i) => {
      const childPath = `${path}/${k ?? `{${i}}`}`;
      // Open small containers near the root, and the first child of each opened one,
      // until the budget of rows is spent: the shape shows without a click.
      const small = list.length <= 30 || i === 0;
      const openChild = depth < 4 && small && budget.rows + count(child, ver) < AUTO_OPEN_ROWS;
      box.append(node(k, child, ver, childPath, depth + 1, tags, budget, openChild));
    });
    details.append(box);
  };
  builders.set(details, build);
  details.addEventListener("toggle", () => {
    if (details.open) build();
  });
  if (open) {
    build();
    details.open = true;
  }
  return details;
}

/** How each node of a tree builds its children (the toggle event comes later, so
 * `expandAll` builds them itself). */
const builders = new WeakMap();

/** Open (or close) every node of a tree, opening at most `limit` of them. */
export function expandAll(tree, open, limit = 5000) {
  if (!open) {
    for (const d of tree.querySelectorAll("details.node[open]")) d.open = false;
    return true;
  }
  let opened = 0;
  for (;;) {
    const closed = [...tree.querySelectorAll("details.node:not([open])")];
    if (closed.length === 0) return true;
    for (const d of closed) {
      if (opened++ >= limit) return false;
      builders.get(d)?.();
      d.open = true;
    }
  }
}

// --- JSON (docs/cli.md, "JSON") ------------------------------------------------------

export function base64Of(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

export function bytesOfBase64(text) {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function childPath(path, key) {
  if (typeof key === "number") return `${path}[${key}]`;
  if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)) return `${path}.${key}`;
  return `${path}[${JSON.stringify(key)}]`;
}

function put(obj, key, value) {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A decoded AMF value as JSON-able data, in the mapping `amfkit decode --json` prints. */
export function toJSONValue(value, version) {
  const seen = new Map();
  const walk = (raw, ver, path) => {
    const [v, vv] = unwrap(raw, ver);
    if (v === null || v === undefined) return null;
    if (C !== null && v instanceof C.Unsupported) return null;
    if (C !== null && v instanceof C.Double) return walk(v.value, vv, path);
    if (typeof v === "number") return Number.isFinite(v) ? v : { __float__: Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity" };
    if (typeof v !== "object") return v;
    if (v instanceof Uint8Array) return { __bytes__: base64Of(v) };
    if (v instanceof Date) return { __date__: Number.isNaN(v.getTime()) ? "NaN" : isoUtc(v) };
    if (C !== null && v instanceof C.AmfDate) {
      const out = { __date__: Number.isFinite(v.ms) ? v.ms : Number.isNaN(v.ms) ? "NaN" : v.ms > 0 ? "Infinity" : "-Infinity" };
      if (v.tz) out.tz = v.tz;
      return out;
    }
    if (C !== null && v instanceof C.XmlDocument) return { __xmldocument__: v.text };
    if (C !== null && v instanceof C.Xml) return { __xml__: v.text };
    if (isVector(v)) return Array.from(v, (x) => (Number.isFinite(x) ? x : { __float__: String(x) }));
    if (seen.has(v)) return { __ref__: seen.get(v) };
    seen.set(v, path);
    if (isDictionary(v)) {
      const pairs = [];
      let i = 0;
      for (const [k, x] of v) {
        const p = childPath(childPath(path, "__dictionary__"), i++);
        pairs.push([walk(k, vv, childPath(p, 0)), walk(x, vv, childPath(p, 1))]);
      }
      const out = { __dictionary__: pairs };
      if (v.weakKeys) out.weak_keys = true;
      return out;
    }
    // Arrays, vectors of objects, ArrayCollection and ArrayList: lists, as `amfkit
    // decode` reads them.
    if (Array.isArray(v)) return v.map((x, i) => walk(x, vv, childPath(path, i)));
    const out = Object.create(null);
    const alias = aliasOf(v);
    if (alias !== undefined && alias !== OBJECT_PROXY) {
      put(out, "__alias__", alias);
      const traits = traitsOf(v);
      if (traits !== undefined && !traits.externalizable) {
        if (traits.sealed.length > 0) put(out, "__sealed__", [...traits.sealed]);
        if (!traits.dynamic) put(out, "__dynamic__", false);
      }
    }
    if (isMixedArray(v)) {
      v.dense.forEach((x, i) => put(out, String(i), walk(x, vv, childPath(path, String(i)))));
      for (const [k, x] of v) put(out, k, walk(x, vv, childPath(path, k)));
      return out;
    }
    for (const k of Object.keys(v)) put(out, k, walk(v[k], vv, childPath(path, k)));
    return out;
  };
  return walk(value, version, "$");
}

export class JSONInputError extends Error {}

const TAGS = {
  __bytes__: ["__bytes__"],
  __date__: ["__date__", "tz"],
  __float__: ["__float__"],
  __xml__: ["__xml__"],
  __xmldocument__: ["__xmldocument__"],
  __ref__: ["__ref__"],
  __dictionary__: ["__dictionary__", "weak_keys"],
};
const FLOATS = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity };

/** Parsed JSON (the `amfkit encode` mapping) as the AMF value the codec writes:
 * `__bytes__` a ByteArray, `__alias__` a typed object, `__date__` a date, and so on.
 * `floats`: numbers are written as doubles (a `float` parameter). */
export function fromJSONValue(data, { floats = false } = {}) {
  const made = new Map(); // path -> container
  const fail = (path, why) => new JSONInputError(`${why}, at ${path}`);
  const walk = (v, path) => {
    if (v === null || typeof v === "boolean" || typeof v === "string") return v;
    if (typeof v === "number") return floats && C !== null && Number.isInteger(v) ? new C.Double(v) : v;
    if (Array.isArray(v)) {
      const out = [];
      made.set(path, out);
      v.forEach((x, i) => out.push(walk(x, childPath(path, i))));
      return out;
    }
    const keys = Object.keys(v);
    const tag = keys.find((k) => k in TAGS);
    if (tag !== undefined && !("__alias__" in v) && keys.every((k) => TAGS[tag].includes(k))) {
      const arg = v[tag];
      switch (tag) {
        case "__ref__": {
          const target = made.get(arg);
          if (target === undefined) throw fail(path, `__ref__ ${JSON.stringify(arg)} names no container that comes before it`);
          return target;
        }
        case "__bytes__":
          if (typeof arg !== "string") throw fail(path, "__bytes__ must be a base64 string");
          try {
            return bytesOfBase64(arg);
          } catch {
            throw fail(path, "__bytes__ is not valid base64");
          }
        case "__float__":
          if (!(arg in FLOATS)) throw fail(path, '__float__ must be "NaN", "Infinity" or "-Infinity"');
          return C !== null ? new C.Double(FLOATS[arg]) : FLOATS[arg];
        case "__xml__":
        case "__xmldocument__":
          if (typeof arg !== "string") throw fail(path, `${tag} must be a string`);
          return tag === "__xml__" ? new C.Xml(arg) : new C.XmlDocument(arg);
        case "__date__": {
          const tz = v.tz ?? 0;
          if (typeof arg === "number" || arg in FLOATS) {
            const ms = typeof arg === "number" ? arg : FLOATS[arg];
            return tz || !Number.isInteger(ms) ? new C.AmfDate(ms, tz) : new Date(ms);
          }
          const d = new Date(arg);
          if (typeof arg !== "string" || Number.isNaN(d.getTime())) throw fail(path, `__date__ ${JSON.stringify(arg)} is not an ISO 8601 date`);
          return d;
        }
        case "__dictionary__": {
          if (!Array.isArray(arg) || !arg.every((p) => Array.isArray(p) && p.length === 2)) {
            throw fail(path, "__dictionary__ must be a list of [key, value] pairs");
          }
          const out = new C.Dictionary([], v.weak_keys === true);
          made.set(path, out);
          const base = childPath(path, "__dictionary__");
          arg.forEach(([k, x], i) => {
            const p = childPath(base, i);
            out.set(walk(k, childPath(p, 0)), walk(x, childPath(p, 1)));
          });
          return out;
        }
      }
    }
    if ("__alias__" in v) {
      const alias = v.__alias__;
      if (typeof alias !== "string") throw fail(path, "__alias__ must be a string");
      const sealed = v.__sealed__ ?? [];
      if (!Array.isArray(sealed) || !sealed.every((s) => typeof s === "string")) throw fail(path, "__sealed__ must be a list of member names");
      const out = new C.TypedObject(alias, undefined, { sealed, dynamic: v.__dynamic__ !== false });
      made.set(path, out);
      for (const k of keys) {
        if (k === "__alias__" || k === "__sealed__" || k === "__dynamic__") continue;
        put(out, k, walk(v[k], childPath(path, k)));
      }
      return out;
    }
    const out = {};
    made.set(path, out);
    for (const k of keys) put(out, k, walk(v[k], childPath(path, k)));
    return out;
  };
  return walk(data, "$");
}

// --- hex dump ----------------------------------------------------------------------------

/** Lines of a hex dump: offset, 16 bytes in two groups of 8, and their ASCII. */
export function hexDump(bytes, maxLines = 4096) {
  const lines = [];
  const n = Math.min(bytes.length, maxLines * 16);
  for (let off = 0; off < n; off += 16) {
    const row = bytes.subarray(off, Math.min(off + 16, bytes.length));
    let h = "";
    let a = "";
    for (let i = 0; i < 16; i++) {
      if (i === 8) h += " ";
      if (i < row.length) {
        h += row[i].toString(16).padStart(2, "0") + " ";
        a += row[i] >= 0x20 && row[i] < 0x7f ? String.fromCharCode(row[i]) : ".";
      } else {
        h += "   ";
      }
    }
    lines.push(`${off.toString(16).padStart(8, "0")}  ${h} |${a}|`);
  }
  if (bytes.length > n) lines.push(`… ${(bytes.length - n).toLocaleString("en")} more bytes`);
  return lines.join("\n");
}
