// The AMFBench "complex" graph of the PyAMF speed article, as
// bench/amfkit_bench/graphs.py builds it (build_complex): `n` typed Node objects,
// each with a null, a small array, a small object, a shared string, an int, a float, a
// non-ASCII string, a sub-object and a second reference to that same sub-object.

/** A dynamic typed object (alias org.amfkit.bench.Node): members are own properties. */
export class Node {
  constructor(members) {
    Object.assign(this, members);
  }
}

export const NODE_ALIAS = "org.amfkit.bench.Node";

/** The one string every complex node refers to. */
export const SHARED_STRING = "a string every node shares";

/** A non-ASCII string (2- and 3-byte UTF-8 sequences) for every node. */
export const NON_ASCII = "ünïcødé ✓ Ωμέγα 東京";

/** `[amfGraph, jsonGraph]`: the typed graph with its shared sub-objects, and the same
 * data as plain objects with every shared object copied apart (what JSON can say). */
export function buildComplex(n) {
  const nodes = [];
  for (let i = 0; i < n; i++) {
    const child = new Node({ number: i });
    nodes.push(
      new Node({
        nothing: null,
        tags: ["alpha", "beta"],
        attrs: { kind: "leaf" },
        shared: SHARED_STRING,
        number: i,
        ratio: i + 0.5,
        text: NON_ASCII,
        child,
        again: child,
      }),
    );
  }
  return [nodes, toPlain(nodes)];
}

/** A deep copy with typed objects turned into plain objects and shared ones copied apart. */
export function toPlain(value) {
  if (Array.isArray(value)) return value.map(toPlain);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const k of Object.keys(value)) out[k] = toPlain(value[k]);
    return out;
  }
  return value;
}
