// The bundle the page loads (python/amfkit/browser/static/amfkit-codec.js) is what the
// sources build to, and stands alone: one ES module, no imports.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { stale } from "../scripts/build.mjs";
import { BUNDLE } from "./support/codec.mjs";

test("the committed bundle is not stale (else: run make js-build)", async () => {
  const names = await stale();
  assert.deepEqual(names, [], `${names.join(", ")} differ from what js/src builds to: run make js-build`);
});

test("the bundle is one ES module with no imports, and a linked source map", () => {
  const text = readFileSync(BUNDLE, "utf8");
  assert.doesNotMatch(text, /\bimport\s*[{*("'\w]/);
  assert.doesNotMatch(text, /\brequire\(/);
  assert.match(text, /export\{[^}]*\bamf3\b/);
  assert.ok(text.trimEnd().endsWith("//# sourceMappingURL=amfkit-codec.js.map"));
  const map = JSON.parse(readFileSync(BUNDLE + ".map", "utf8"));
  assert.ok(map.sources.some((s) => s.endsWith("js/src/amf3-read.ts")));
  assert.ok(text.length < 64 * 1024, `${text.length} bytes`);
});
