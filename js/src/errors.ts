// Errors: a reason, where it happened (the byte offset when decoding) and the path to
// the value, rendered as the Rust core and the Python API render them:
//
//   string length 268435455 exceeds the 10 bytes left, at byte 41 ($.body[0])
//
// An error's text is bounded whatever the input: a name from the input keeps at most
// MAX_SHOWN characters, a reason at most MAX_MESSAGE, and a path at most MAX_PATH_SHOWN
// segments (the outermost and innermost halves, with the number left out between them).
// AMF3 string references make a long name cheap to repeat at every level, so an
// unbounded path could grow with the square of the input's size.

/** Characters of one input text (a member name, a class alias) kept in an error. */
export const MAX_SHOWN = 64;
/** Characters of a reason kept in an error. */
export const MAX_MESSAGE = 1024;
/** Path segments kept: the outermost and the innermost half. */
export const MAX_PATH_SHOWN = 16;

/** `text` cut to `limit` characters (code points), with `…` where it was cut. */
export function clip(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    if (count === limit) return text.slice(0, i) + "…";
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    count++;
  }
  return text;
}

/** An input text for a message: quoted and cut to MAX_SHOWN characters. */
export function shown(text: string): string {
  return JSON.stringify(clip(text, MAX_SHOWN));
}

/** One step of the path: an index, a member name, or a named part (`.bodies[1]`). */
export type PathSegment = number | string | { readonly name: string; readonly index: number };

const IDENTIFIER = /^[\p{Alphabetic}_$][\p{Alphabetic}\p{N}_$]*$/u;

function renderSegment(seg: PathSegment): string {
  if (typeof seg === "number") return `[${seg}]`;
  if (typeof seg === "string") return IDENTIFIER.test(seg) ? `.${seg}` : `[${JSON.stringify(seg)}]`;
  return `.${seg.name}[${seg.index}]`;
}

/** The base of every error the codec raises. */
export class AMFError extends Error {
  /** The reason alone, without offset or path. */
  readonly reason: string;
  /** Innermost segment first, at most MAX_PATH_SHOWN (innermost half, outermost half). */
  private segments: PathSegment[] = [];
  /** Segments left out between the two halves. */
  private elided = 0;

  constructor(reason: string) {
    const r = clip(reason, MAX_MESSAGE);
    super(r);
    this.reason = r;
    this.name = "AMFError";
  }

  /** The path to the failing value: `$.items[3].owner`; a long one as `$.a.b[…120 levels…].y.z`. */
  get path(): string {
    let out = "$";
    const segs = this.segments;
    const inner = Math.min(segs.length, MAX_PATH_SHOWN / 2);
    for (let i = segs.length - 1; i >= 0; i--) {
      if (i + 1 === inner && this.elided > 0) out += `[…${this.elided} levels…]`;
      out += renderSegment(segs[i]!);
    }
    return out;
  }

  /** Prepend a path segment (called by containers as the error passes through them). */
  within(segment: PathSegment): this {
    if (typeof segment === "string") segment = clip(segment, MAX_SHOWN);
    if (this.segments.length === MAX_PATH_SHOWN) {
      this.segments.splice(MAX_PATH_SHOWN / 2, 1);
      this.elided++;
    }
    this.segments.push(segment);
    this.message = this.render();
    return this;
  }

  protected render(): string {
    return this.reason;
  }

  protected hasPath(): boolean {
    return this.segments.length > 0;
  }
}

/** Input that is not valid AMF, or that breaks a limit. `offset` is the byte where it
 * was found; `path` the value being read. */
export class DecodeError extends AMFError {
  readonly offset: number;

  constructor(reason: string, offset: number) {
    super(reason);
    this.name = "DecodeError";
    this.offset = offset;
    this.message = this.render();
  }

  protected override render(): string {
    const where = `${this.reason}, at byte ${this.offset}`;
    return this.hasPath() ? `${where} (${this.path})` : where;
  }
}

/** A value the encoder cannot write; `path` names it: `($.items[3].owner)`. */
export class EncodeError extends AMFError {
  readonly offset = null;

  constructor(reason: string) {
    super(reason);
    this.name = "EncodeError";
    this.message = this.render();
  }

  protected override render(): string {
    return `${this.reason} (${this.path})`;
  }
}

/** Add a path segment to an error passing through a container (any other exception,
 * one a class's own hook threw, passes unchanged). */
export function within(e: unknown, segment: PathSegment): unknown {
  if (e instanceof AMFError) e.within(segment);
  return e;
}

/** Whether `e` is the engine's own stack overflow (V8 and JavaScriptCore: a RangeError,
 * SpiderMonkey: an InternalError "too much recursion"). */
export function isStackOverflow(e: unknown): boolean {
  if (!(e instanceof Error) || e instanceof AMFError) return false;
  return (e.name === "RangeError" && /call stack/i.test(e.message)) || (e.name === "InternalError" && /recursion/i.test(e.message));
}

/** A stack overflow as the codec's own error; anything else unchanged. */
export function decodeStackError(e: unknown, offset: number): unknown {
  return isStackOverflow(e) ? new DecodeError("nesting too deep for the JavaScript stack", offset) : e;
}

export function encodeStackError(e: unknown): unknown {
  return isStackOverflow(e) ? new EncodeError("nesting too deep for the JavaScript stack") : e;
}

// The reasons, worded as the Rust core words them (its `ErrorKind`).

function plural(n: number): string {
  return n === 1 ? "" : "s";
}

export function unexpectedEnd(needed: number, offset: number): DecodeError {
  return new DecodeError(`unexpected end of input, ${needed} more byte${plural(needed)} expected`, offset);
}

export function lengthExceeds(what: string, declared: number, left: number, offset: number): DecodeError {
  return new DecodeError(`${what} ${declared} exceeds the ${left} byte${plural(left)} left`, offset);
}

export function sizeLimit(what: string, size: number, limit: number, offset: number): DecodeError {
  return new DecodeError(`${what} of ${size} bytes exceeds the limit of ${limit}`, offset);
}

export function badReference(table: string, index: number, len: number, offset: number): DecodeError {
  return new DecodeError(`${table} reference ${index} is out of range (the table has ${len})`, offset);
}

export function hex2(n: number): string {
  return n.toString(16).padStart(2, "0");
}
