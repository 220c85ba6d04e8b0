// The codec under test: the built bundle the page loads (js/scripts/build.mjs writes it;
// test/bundle.test.mjs checks that it is what the sources build to).

import path from "node:path";
import { fileURLToPath } from "node:url";

export const JS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const ROOT = path.resolve(JS, "..");
export const FIXTURES = path.join(ROOT, "fixtures");
export const BUNDLE = path.join(ROOT, "python/amfkit/browser/static/amfkit-codec.js");

export * from "../../../python/amfkit/browser/static/amfkit-codec.js";

/** Bytes from hex (whitespace ignored) and back. */
export const hex = (text) => Uint8Array.from(Buffer.from(text.replace(/\s+/g, ""), "hex"));
export const toHex = (bytes) => Buffer.from(bytes).toString("hex");
