// The decoders' limits: safe by default, configurable, checked before anything is
// allocated. They are the Rust core's and the Python API's (docs/limits.md): every
// length or count prefix is also checked against the bytes left, whatever these say.

/** Options of every decode (`amf0.decode`, `amf3.decode`, the Decoders, `packet.decode`). */
export interface DecodeOptions {
  /** Deepest nesting of containers (arrays, objects, vectors, dictionaries, AVM+
   * switches). Default 128, at most DEPTH_CEILING (1024). */
  maxDepth?: number;
  /** Complex values (objects, arrays, dates, byte arrays, XML...) one decode may create,
   * references excluded. Default 10,000,000. */
  maxObjects?: number;
  /** Largest single string, XML text or ByteArray, in bytes. Default 256 MiB. */
  maxSize?: number;
  /** Keep what plain JavaScript values cannot say, so that the value encodes back to the
   * same bytes: an integral AMF3 double in the integer range decodes as `Double`, a value
   * read after an AMF0 AVM+ switch as `Avmplus`, the AMF0 `unsupported` marker as
   * `UNSUPPORTED`. Default false. */
  lossless?: boolean;
}

/** Options of a single-value decode. */
export interface DecodeValueOptions extends DecodeOptions {
  /** Bytes after the one value are an error unless allowed. Default false. */
  allowTrailing?: boolean;
}

export interface Limits {
  readonly maxDepth: number;
  readonly maxObjects: number;
  readonly maxSize: number;
}

/** The hard ceiling on `maxDepth`, decoding and encoding: deeper recursion could exhaust
 * the stack. The Rust core allows 4096; a JavaScript engine's stack is smaller (Node's
 * default stack holds about 1,850 to 2,900 levels, depending on the container), so the
 * ceiling here is 1024, and a stack that runs out anyway is a DecodeError or an
 * EncodeError, never a RangeError. */
export const DEPTH_CEILING = 1024;

export const DEFAULT_LIMITS: Limits = Object.freeze({
  maxDepth: 128,
  maxObjects: 10_000_000,
  maxSize: 256 * 1024 * 1024,
});

/** The encoders' nesting limit: deeper data is an EncodeError, never a stack overflow.
 * Cycles are references, not recursion. */
export const DEFAULT_ENCODE_MAX_DEPTH = 1024;

function count(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !(value >= 0) || Math.floor(value) !== value) {
    throw new RangeError(`${name} must be a non-negative integer, not ${String(value)}`);
  }
  return value;
}

/** The limits an options object asks for, checked. */
export function resolveLimits(options: DecodeOptions | undefined): Limits {
  if (options === undefined) return DEFAULT_LIMITS;
  return {
    maxDepth: Math.min(count("maxDepth", options.maxDepth, DEFAULT_LIMITS.maxDepth), DEPTH_CEILING),
    maxObjects: count("maxObjects", options.maxObjects, DEFAULT_LIMITS.maxObjects),
    maxSize: count("maxSize", options.maxSize, DEFAULT_LIMITS.maxSize),
  };
}

export function resolveEncodeDepth(maxDepth: number | undefined): number {
  return Math.min(count("maxDepth", maxDepth, DEFAULT_ENCODE_MAX_DEPTH), DEPTH_CEILING);
}
