// The browser-side speed of the codec, measured in Node: encode and decode the AMFBench
// "complex" graph (bench/amfkit_bench/graphs.py, 10,000 nodes by default) as AMF3
// and AMF0, against JSON.stringify / JSON.parse of the same data (the plain copy: JSON
// has no classes and no references). Every variant's output is checked before it is
// timed; each figure is the median of the timed runs (with the fastest).
//
//   node bench/bench.mjs [--n 10000] [--runs 25] [--json out.json]

import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

import { amf0, amf3, registerClassAlias } from "../../python/amfkit/browser/static/amfkit-codec.js";
import { NODE_ALIAS, Node, SHARED_STRING, buildComplex } from "./graphs.mjs";

function args(argv) {
  const out = { n: 10_000, runs: 25, json: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--n") out.n = Number(argv[++i]);
    else if (a === "--runs") out.runs = Number(argv[++i]);
    else if (a === "--json") out.json = argv[++i];
    else throw new Error(`unknown argument ${a}: node bench/bench.mjs [--n N] [--runs R] [--json PATH]`);
  }
  return out;
}

function time(fn, runs) {
  for (let i = 0; i < Math.max(3, runs / 5); i++) fn(); // warm up (and let the JIT settle)
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)], min: ms[0], runs };
}

function checkAmf(graph, back, n) {
  if (!Array.isArray(back) || back.length !== n) throw new Error("wrong length");
  for (let i = 0; i < n; i += Math.max(1, Math.floor(n / 97))) {
    const a = back[i];
    if (!(a instanceof Node)) throw new Error(`node ${i} is not a Node`);
    if (a.child !== a.again) throw new Error(`node ${i}: child and again are not one object`);
    if (a.number !== i || a.ratio !== i + 0.5 || a.child.number !== i) throw new Error(`node ${i}: numbers`);
    if (a.shared !== SHARED_STRING || a.text !== graph[i].text || a.nothing !== null) throw new Error(`node ${i}: strings`);
    if (a.tags.join() !== "alpha,beta" || a.attrs.kind !== "leaf") throw new Error(`node ${i}: containers`);
  }
}

function main() {
  const { n, runs, json } = args(process.argv.slice(2));
  registerClassAlias(NODE_ALIAS, Node);
  const [graph, plain] = buildComplex(n);
  const enc3 = new amf3.Encoder();
  const enc0 = new amf0.Encoder();
  const bytes3 = enc3.encode(graph);
  const bytes0 = enc0.encode(graph);
  const text = JSON.stringify(plain);
  const utf8 = new TextEncoder().encode(text);
  checkAmf(graph, amf3.decode(bytes3), n);
  checkAmf(graph, amf0.decode(bytes0), n);
  const parsed = JSON.parse(text);
  if (parsed.length !== n || parsed[n - 1].child.number !== n - 1) throw new Error("JSON round trip");

  const decoder = new TextDecoder();
  const rows = [
    ["AMF3", bytes3.length, time(() => enc3.encode(graph), runs), time(() => amf3.decode(bytes3), runs)],
    ["AMF0", bytes0.length, time(() => enc0.encode(graph), runs), time(() => amf0.decode(bytes0), runs)],
    ["JSON", utf8.length, time(() => JSON.stringify(plain), runs), time(() => JSON.parse(text), runs)],
    [
      "JSON + UTF-8",
      utf8.length,
      time(() => new TextEncoder().encode(JSON.stringify(plain)), runs),
      time(() => JSON.parse(decoder.decode(utf8)), runs),
    ],
  ];
  const json0 = rows[2];
  const fmt = (x) => x.toFixed(2).padStart(8);
  const ratio = (a, b) => (a / b).toFixed(2).padStart(6);
  console.log(`complex-${n} (the AMFBench "complex" graph), median of ${runs} runs; node ${process.version}`);
  console.log("format          bytes   encode ms  x JSON   decode ms  x JSON");
  for (const [name, size, e, d] of rows) {
    console.log(
      `${name.padEnd(13)} ${String(size).padStart(8)}  ${fmt(e.median)}  ${ratio(e.median, json0[2].median)}  ${fmt(d.median)}  ${ratio(d.median, json0[3].median)}`,
    );
  }
  if (json !== undefined) {
    const results = {
      graph: `complex-${n}`,
      source: "bench/amfkit_bench/graphs.py build_complex, built in JS by js/bench/graphs.mjs",
      node: process.version,
      runs,
      rows: rows.map(([name, size, e, d]) => ({
        format: name,
        bytes: size,
        encode_ms: e.median,
        encode_min_ms: e.min,
        decode_ms: d.median,
        decode_min_ms: d.min,
        encode_vs_json: e.median / json0[2].median,
        decode_vs_json: d.median / json0[3].median,
      })),
    };
    writeFileSync(json, JSON.stringify(results, null, 2) + "\n");
    console.log(`figures written to ${json}`);
  }
}

main();
