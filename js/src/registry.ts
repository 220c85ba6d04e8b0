// The class-alias registry: which JavaScript class an AMF class alias decodes to, and how
// an instance of a registered class is written. Only registered classes are ever
// instantiated by a decoder (with Object.create on the class's prototype: the constructor
// is never called, as Flash Player does not call it either); any other alias decodes to
// a TypedObject.

import { TRAITS, Traits } from "./types";

/** Flash's IDataInput, handed to an externalizable class's `readExternal`: big-endian. */
export interface DataInput {
  /** The next AMF3 value, sharing the reference tables of the stream. */
  readObject(): unknown;
  readBoolean(): boolean;
  readByte(): number;
  readUnsignedByte(): number;
  readShort(): number;
  readUnsignedShort(): number;
  readInt(): number;
  readUnsignedInt(): number;
  readFloat(): number;
  readDouble(): number;
  /** A u16-length-prefixed UTF-8 string. */
  readUTF(): string;
  readUTFBytes(length: number): string;
  readBytes(length: number): Uint8Array;
  /** A DecodeError at the reader's position, for a body found malformed: `throw input.error("...")`. */
  error(reason: string): Error;
}

/** Flash's IDataOutput, handed to an externalizable class's `writeExternal`. */
export interface DataOutput {
  /** An AMF3 value, sharing the reference tables of the stream. */
  writeObject(value: unknown): void;
  writeBoolean(value: boolean): void;
  writeByte(value: number): void;
  writeShort(value: number): void;
  writeInt(value: number): void;
  writeUnsignedInt(value: number): void;
  writeFloat(value: number): void;
  writeDouble(value: number): void;
  writeUTF(value: string): void;
  writeUTFBytes(value: string): void;
  writeBytes(value: Uint8Array): void;
}

/** How an externalizable class makes an empty instance and reads and writes its body. */
export interface ExternalHooks {
  create(): object;
  read(obj: object, input: DataInput): void;
  write(obj: object, output: DataOutput): void;
}

/** A registered class. */
export interface ClassSpec {
  readonly alias: string;
  /** The prototype its instances have (the class's). */
  readonly proto: object;
  readonly traits: Traits;
  readonly external: ExternalHooks | undefined;
  /** The spec to write an instance with, when it is not this one (a Flex message that
   * came in its small form is written in it). */
  readonly select: ((obj: object) => ClassSpec) | undefined;
}

export interface ClassOptions {
  /** Names written as sealed members, in this order, before any dynamic ones. */
  sealed?: readonly string[];
  /** Whether members beyond the sealed ones are written (and read). Default true; with
   * false, members a peer sends that the class does not declare are ignored on decode. */
  dynamic?: boolean;
  /** The class writes and reads its own body: its prototype has `writeExternal(output)`
   * and `readExternal(input)`. */
  externalizable?: boolean;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Constructor = abstract new (...args: any[]) => object;

const byAlias = new Map<string, ClassSpec>();
const byProto = new Map<object, ClassSpec>();

/**
 * Register `ctor` under the AMF class alias `alias`: its instances are written as typed
 * objects of that alias, and objects of that alias decode as instances of it (built with
 * Object.create(ctor.prototype), members set afterwards; the constructor is not called).
 *
 * - With only a class and an alias, an instance's own enumerable properties are written
 *   as dynamic members.
 * - `sealed`: names written as sealed members, in this order, before any dynamic ones.
 * - `dynamic: false`: only the sealed members are written.
 * - `externalizable: true`: the class reads and writes its own body (AMF3 only).
 */
export function registerClassAlias(alias: string, ctor: Constructor, options: ClassOptions = {}): void {
  if (typeof alias !== "string" || alias === "") throw new TypeError("a class alias must be a non-empty string");
  if (typeof ctor !== "function" || typeof ctor.prototype !== "object" || ctor.prototype === null) {
    throw new TypeError("registerClassAlias() expects a class");
  }
  const sealed = options.sealed ?? [];
  for (const name of sealed) {
    if (typeof name !== "string" || name === "") throw new TypeError("sealed member names must be non-empty strings");
  }
  if (new Set(sealed).size !== sealed.length) throw new TypeError("sealed member names must be unique");
  const proto = ctor.prototype as object;
  let external: ExternalHooks | undefined;
  if (options.externalizable) {
    const p = proto as { readExternal?: unknown; writeExternal?: unknown };
    if (typeof p.readExternal !== "function" || typeof p.writeExternal !== "function") {
      throw new TypeError(`externalizable class ${ctor.name} needs readExternal and writeExternal methods`);
    }
    external = {
      create: () => Object.create(proto) as object,
      read: (obj, input) => (obj as { readExternal(i: DataInput): void }).readExternal(input),
      write: (obj, output) => (obj as { writeExternal(o: DataOutput): void }).writeExternal(output),
    };
  }
  const traits = new Traits(alias, sealed, options.dynamic ?? true, external !== undefined);
  addSpec({ alias, proto, traits, external, select: undefined });
}

/** Register a spec (the Flex messages' small forms come through here). */
export function addSpec(spec: ClassSpec, writeWith = true): void {
  const old = byAlias.get(spec.alias);
  if (old !== undefined && byProto.get(old.proto) === old) byProto.delete(old.proto);
  byAlias.set(spec.alias, spec);
  if (writeWith) {
    const previous = byProto.get(spec.proto);
    if (previous !== undefined && byAlias.get(previous.alias) === previous) byAlias.delete(previous.alias);
    byProto.set(spec.proto, spec);
  }
}

/** Remove a class (or an alias) from the registry; an unknown one throws a RangeError. */
export function unregisterClassAlias(target: string | Constructor): void {
  if (typeof target === "string") {
    const spec = byAlias.get(target);
    if (spec === undefined) throw new RangeError(`no class is registered under the alias ${JSON.stringify(target)}`);
    byAlias.delete(target);
    if (byProto.get(spec.proto) === spec) byProto.delete(spec.proto);
    return;
  }
  const spec = byProto.get(target.prototype as object);
  if (spec === undefined) throw new RangeError(`the class ${target.name} is not registered`);
  byProto.delete(spec.proto);
  if (byAlias.get(spec.alias) === spec) byAlias.delete(spec.alias);
}

/** A snapshot of the registry: alias -> class. */
export function registeredClasses(): Map<string, Function> {
  const out = new Map<string, Function>();
  for (const [alias, spec] of byAlias) {
    out.set(alias, (spec.proto as { constructor: Function }).constructor);
  }
  return out;
}

/** The spec an alias decodes with, if registered. */
export function specForAlias(alias: string): ClassSpec | undefined {
  return byAlias.get(alias);
}

/** The spec an object with this prototype is written with, if its class is registered
 * (the exact class: a subclass must be registered itself). */
export function specForProto(proto: object | null): ClassSpec | undefined {
  return proto === null ? undefined : byProto.get(proto);
}

/** The class alias an object is written with: its registered class's, a TypedObject's,
 * or undefined for anything else. */
export function classAliasOf(obj: object): string | undefined {
  const spec = byProto.get(Object.getPrototypeOf(obj) as object);
  if (spec !== undefined) return spec.alias;
  const traits = (obj as { [TRAITS]?: unknown })[TRAITS];
  return traits instanceof Traits ? traits.alias : undefined;
}
