// Bundle src/index.ts into the one ES module the browser page loads:
// python/amfkit/browser/static/amfkit-codec.js (minified) and its source map.
//
//   node scripts/build.mjs             write the bundle (npm run build type-checks first)
//   node scripts/build.mjs --check     exit 1 if the committed bundle is not what the
//                                      sources build to ("run make js-build")
//   node scripts/build.mjs --out DIR   write the bundle into DIR instead, built exactly
//                                      as for its real place (the Python test compares)
//
// The output is a function of the sources and the pinned esbuild version only: the
// source map's paths are relative to the bundle's real place whatever --out says.

import { readFile, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const JS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const OUTFILE = path.resolve(JS, "../python/amfkit/browser/static/amfkit-codec.js");

/** The bundle and its map, in memory: [{ name, contents }]. */
export async function build() {
  const result = await esbuild.build({
    entryPoints: [path.join(JS, "src/index.ts")],
    absWorkingDir: JS,
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2020",
    minify: true,
    sourcemap: "linked",
    legalComments: "none",
    keepNames: true,
    charset: "utf8",
    outfile: OUTFILE,
    write: false,
    logLevel: "warning",
  });
  return result.outputFiles
    .map((f) => ({ name: path.basename(f.path), contents: f.contents }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The names of the built files that differ from those in `dir` (or are missing). */
export async function stale(dir = path.dirname(OUTFILE)) {
  const out = [];
  for (const f of await build()) {
    let old;
    try {
      old = await readFile(path.join(dir, f.name));
    } catch {
      out.push(f.name);
      continue;
    }
    if (Buffer.compare(Buffer.from(f.contents), old) !== 0) out.push(f.name);
  }
  return out;
}

async function main(argv) {
  if (argv[0] === "--check") {
    const names = await stale();
    if (names.length > 0) {
      console.error(`stale: ${names.join(", ")} differ from what js/src builds to: run make js-build`);
      process.exit(1);
    }
    return;
  }
  const dir = argv[0] === "--out" ? path.resolve(argv[1]) : path.dirname(OUTFILE);
  await mkdir(dir, { recursive: true });
  for (const f of await build()) {
    await writeFile(path.join(dir, f.name), f.contents);
    console.log(`${path.relative(process.cwd(), path.join(dir, f.name))}  ${f.contents.length} bytes`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await main(process.argv.slice(2));
}
