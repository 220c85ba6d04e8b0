// Strict UTF-8 both ways. AMF strings are plain UTF-8: overlong forms, encoded surrogates
// (CESU-8) and Java's modified-UTF-8 NUL (C0 80) are refused on read, and a string with a
// lone surrogate (which UTF-8 cannot carry) is refused on write.

const fatalDecoder: TextDecoder | undefined =
  typeof TextDecoder === "function" ? new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }) : undefined;

/** Strings up to this many bytes are decoded by hand (a TextDecoder call costs more). */
const SHORT = 48;

/**
 * Decode buf[start, end) as UTF-8: the text, or the offset of the first byte of the
 * first invalid sequence (a number).
 */
export function decodeUtf8(buf: Uint8Array, start: number, end: number): string | number {
  if (end - start <= SHORT) {
    // Concatenating one character at a time is what engines do fastest for short text.
    let out = "";
    let i = start;
    while (i < end) {
      const c = buf[i]!;
      if (c < 0x80) {
        out += String.fromCharCode(c);
        i++;
        continue;
      }
      const cp = codePoint(buf, i, end);
      if (cp < 0) return i;
      if (cp >= 0x10000) {
        out += String.fromCharCode(0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
        i += 4;
      } else {
        out += String.fromCharCode(cp);
        i += cp < 0x800 ? 2 : 3;
      }
    }
    return out;
  }
  if (fatalDecoder !== undefined) {
    try {
      return fatalDecoder.decode(buf.subarray(start, end));
    } catch {
      return invalidAt(buf, start, end);
    }
  }
  return decodeLong(buf, start, end);
}

/** The code point of the sequence at buf[i] (a lead byte >= 0x80), or -1 if invalid. */
function codePoint(buf: Uint8Array, i: number, end: number): number {
  const c = buf[i]!;
  if (c < 0xc2) return -1; // a continuation byte, or an overlong 2-byte lead
  if (c < 0xe0) {
    if (i + 1 >= end) return -1;
    const c1 = buf[i + 1]!;
    if ((c1 & 0xc0) !== 0x80) return -1;
    return ((c & 0x1f) << 6) | (c1 & 0x3f);
  }
  if (c < 0xf0) {
    if (i + 2 >= end) return -1;
    const c1 = buf[i + 1]!;
    const c2 = buf[i + 2]!;
    if ((c1 & 0xc0) !== 0x80 || (c2 & 0xc0) !== 0x80) return -1;
    if (c === 0xe0 && c1 < 0xa0) return -1; // overlong
    if (c === 0xed && c1 >= 0xa0) return -1; // a surrogate
    return ((c & 0x0f) << 12) | ((c1 & 0x3f) << 6) | (c2 & 0x3f);
  }
  if (c < 0xf5) {
    if (i + 3 >= end) return -1;
    const c1 = buf[i + 1]!;
    const c2 = buf[i + 2]!;
    const c3 = buf[i + 3]!;
    if ((c1 & 0xc0) !== 0x80 || (c2 & 0xc0) !== 0x80 || (c3 & 0xc0) !== 0x80) return -1;
    if (c === 0xf0 && c1 < 0x90) return -1; // overlong
    if (c === 0xf4 && c1 >= 0x90) return -1; // above U+10FFFF
    return ((c & 0x07) << 18) | ((c1 & 0x3f) << 12) | ((c2 & 0x3f) << 6) | (c3 & 0x3f);
  }
  return -1;
}

/** The offset of the first invalid sequence in buf[start, end), or -1 if there is none. */
export function invalidAt(buf: Uint8Array, start: number, end: number): number {
  let i = start;
  while (i < end) {
    const c = buf[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    const cp = codePoint(buf, i, end);
    if (cp < 0) return i;
    i += cp >= 0x10000 ? 4 : cp >= 0x800 ? 3 : 2;
  }
  return -1;
}

/** A long string without TextDecoder (old engines): decoded by hand in chunks. */
function decodeLong(buf: Uint8Array, start: number, end: number): string | number {
  const chunk = new Uint16Array(4098);
  let out = "";
  let k = 0;
  let i = start;
  while (i < end) {
    if (k >= 4096) {
      out += String.fromCharCode.apply(null, chunk.subarray(0, k) as unknown as number[]);
      k = 0;
    }
    const c = buf[i]!;
    if (c < 0x80) {
      chunk[k++] = c;
      i++;
      continue;
    }
    const cp = codePoint(buf, i, end);
    if (cp < 0) return i;
    if (cp >= 0x10000) {
      chunk[k++] = 0xd800 + ((cp - 0x10000) >> 10);
      chunk[k++] = 0xdc00 + ((cp - 0x10000) & 0x3ff);
      i += 4;
    } else {
      chunk[k++] = cp;
      i += cp < 0x800 ? 2 : 3;
    }
  }
  return out + String.fromCharCode.apply(null, chunk.subarray(0, k) as unknown as number[]);
}

/**
 * The UTF-8 length of `s`, or -1 - i if the character at i is a lone surrogate.
 */
export function utf8Length(s: string): number {
  const n = s.length;
  let len = n;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) {
      len += 1;
    } else if (c < 0xd800 || c > 0xdfff) {
      len += 2;
    } else if (c <= 0xdbff && i + 1 < n) {
      const d = s.charCodeAt(i + 1);
      if (d < 0xdc00 || d > 0xdfff) return -1 - i;
      len += 2; // 2 UTF-16 units, 4 bytes
      i++;
    } else {
      return -1 - i;
    }
  }
  return len;
}

const encoder: TextEncoder | undefined = typeof TextEncoder === "function" ? new TextEncoder() : undefined;

/** Write `s` (already measured by utf8Length: well-formed) into buf at pos; returns the
 * position after it. */
export function encodeUtf8(s: string, buf: Uint8Array, pos: number, byteLength: number): number {
  const n = s.length;
  if (byteLength === n) {
    for (let i = 0; i < n; i++) buf[pos++] = s.charCodeAt(i);
    return pos;
  }
  if (n > 64 && encoder !== undefined) {
    const r = encoder.encodeInto(s, buf.subarray(pos, pos + byteLength));
    return pos + r.written;
  }
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      buf[pos++] = c;
    } else if (c < 0x800) {
      buf[pos++] = 0xc0 | (c >> 6);
      buf[pos++] = 0x80 | (c & 0x3f);
    } else if (c < 0xd800 || c > 0xdfff) {
      buf[pos++] = 0xe0 | (c >> 12);
      buf[pos++] = 0x80 | ((c >> 6) & 0x3f);
      buf[pos++] = 0x80 | (c & 0x3f);
    } else {
      c = 0x10000 + ((c - 0xd800) << 10) + (s.charCodeAt(++i) - 0xdc00);
      buf[pos++] = 0xf0 | (c >> 18);
      buf[pos++] = 0x80 | ((c >> 12) & 0x3f);
      buf[pos++] = 0x80 | ((c >> 6) & 0x3f);
      buf[pos++] = 0x80 | (c & 0x3f);
    }
  }
  return pos;
}
