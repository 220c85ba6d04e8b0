// The JavaScript side of the AMF data model: small classes for what plain JavaScript
// values cannot carry. The mapping (README.md, "Mapping") in short:
//
//   null, undefined, boolean, string    as themselves
//   number                              AMF0 number; AMF3 integer when it is an integer
//                                       in -2^28 .. 2^28-1 (and not -0), else double
//   Double(x)                           always a double (an integral double read in
//                                       lossless mode)
//   Date                                date; AmfDate where a Date cannot hold the value
//   Uint8Array (ArrayBuffer)            ByteArray
//   Array, plain object                 strict array / Array; object / anonymous Object
//   TypedObject, registered classes     typed object / Object with traits
//   MixedArray                          ECMA array / Array with an associative part
//   Map, Dictionary                     ECMA array or Dictionary
//   IntVector, UintVector, NumberVector Vector.<int>, Vector.<uint>, Vector.<Number>
//   (any Int32Array, Uint32Array, Float64Array encodes as the same)
//   ObjectVector                        Vector.<Object>
//   Xml, XmlDocument                    XML (0x0B), XMLDocument (0x07 / AMF0 0x0F)
//   ArrayCollection, ArrayList,         Flex's externalizable one-value wrappers
//   ObjectProxy

/** The symbol under which a TypedObject keeps its traits (not enumerable: never a member). */
export const TRAITS: unique symbol = Symbol("amfkit.traits");

/** A class definition: alias ("" for anonymous), sealed member names in wire order,
 * whether dynamic members follow, whether the class writes its own body. */
export class Traits {
  readonly alias: string;
  readonly sealed: readonly string[];
  readonly dynamic: boolean;
  readonly externalizable: boolean;
  private _key: string | undefined;
  private _names: Set<string> | undefined;

  constructor(alias: string, sealed: readonly string[] = [], dynamic = true, externalizable = false) {
    this.alias = alias;
    this.sealed = Object.freeze(sealed.slice());
    this.dynamic = externalizable ? false : dynamic;
    this.externalizable = externalizable;
  }

  /** A text equal for equal traits (the encoder's traits table key). */
  get key(): string {
    if (this._key === undefined) {
      const flag = this.externalizable ? "e" : this.dynamic ? "d" : "s";
      this._key = this.sealed.length === 0 ? flag + this.alias : flag + [this.alias, ...this.sealed].join("\u0000");
    }
    return this._key;
  }

  /** The sealed names as a set. */
  get names(): Set<string> {
    if (this._names === undefined) this._names = new Set(this.sealed);
    return this._names;
  }
}

/** The traits of a plain anonymous object: no alias, no sealed members, dynamic. */
export const ANONYMOUS = new Traits("");

/** Set an own member, even one named `__proto__` (which an assignment would take as the
 * object's prototype). */
export function setMember(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

/**
 * An object of a class alias that is not registered (registerClassAlias): its own
 * enumerable properties are the members; the alias and the traits' shape are kept under
 * the TRAITS symbol, so that it encodes back to the same bytes.
 *
 *     new TypedObject("org.example.Point", { x: 1, y: 2 })
 *     new TypedObject("Point", { x: 1, y: 2 }, { sealed: ["x", "y"], dynamic: false })
 */
export class TypedObject {
  declare readonly [TRAITS]: Traits;
  [member: string]: unknown;

  constructor(
    alias: string,
    members?: Record<string, unknown>,
    options?: { sealed?: readonly string[]; dynamic?: boolean },
  ) {
    Object.defineProperty(this, TRAITS, {
      value: new Traits(alias, options?.sealed ?? [], options?.dynamic ?? true),
      enumerable: false,
      writable: true,
      configurable: true,
    });
    if (members !== undefined) {
      for (const k of Object.keys(members)) setMember(this, k, members[k]);
    }
  }

  /** The traits of a TypedObject. */
  static traitsOf(obj: TypedObject): Traits {
    return obj[TRAITS];
  }
}

/** A prototype for decoded TypedObjects sharing one traits entry: the traits live on the
 * prototype, so a decoded object costs no extra property. */
export function typedPrototype(traits: Traits): object {
  return Object.create(TypedObject.prototype, {
    [TRAITS]: { value: traits, enumerable: false, writable: false, configurable: true },
  }) as object;
}

/**
 * An associative array: an AMF0 ECMA array, or an AMF3 Array with an associative part.
 * A Map of the string keys (wire order kept: a plain object would put "0", "1"... first)
 * plus `dense`, the AMF3 Array's dense items. `length` is an AMF0 ECMA array's count field
 * as read (Flash Player writes the AS2 array's length there), written back as it is;
 * undefined (a new array): the number of entries.
 */
export class MixedArray extends Map<string, unknown> {
  dense: unknown[];
  length: number | undefined;

  constructor(entries?: Iterable<readonly [string, unknown]> | null, dense: unknown[] = [], length?: number) {
    super(entries ?? undefined);
    this.dense = dense;
    this.length = length;
  }
}

/** An AS3 flash.utils.Dictionary (AMF3 0x11): keys may be any value (objects by
 * identity). `weakKeys` is the wire flag, kept for the round trip. A plain Map encodes as
 * a Dictionary too. */
export class Dictionary extends Map<unknown, unknown> {
  weakKeys: boolean;

  constructor(entries?: Iterable<readonly [unknown, unknown]> | null, weakKeys = false) {
    super(entries ?? undefined);
    this.weakKeys = weakKeys;
  }
}

/** An AS3 Vector.<Object> (AMF3 0x10) with its element type name ("*" for any). */
export class ObjectVector extends Array<unknown> {
  typeName: string;
  fixed: boolean;

  static override get [Symbol.species](): ArrayConstructor {
    return Array;
  }

  constructor(items: Iterable<unknown> = [], typeName = "*", fixed = false) {
    super();
    for (const x of items) this.push(x);
    this.typeName = typeName;
    this.fixed = fixed;
  }
}

/** An AS3 Vector.<int> (AMF3 0x0D): an Int32Array with the fixed flag. Any Int32Array
 * encodes as a Vector.<int> (not fixed). */
export class IntVector extends Int32Array {
  fixed = false;
}

/** An AS3 Vector.<uint> (AMF3 0x0E): a Uint32Array with the fixed flag. */
export class UintVector extends Uint32Array {
  fixed = false;
}

/** An AS3 Vector.<Number> (AMF3 0x0F): a Float64Array with the fixed flag. Its items are
 * copied bit for bit both ways (NaN payloads and -0 survive). */
export class NumberVector extends Float64Array {
  fixed = false;
}

/** Flex's flex.messaging.io.ArrayCollection: an externalizable wrapper of one Array; it
 * is an Array of the items. */
export class ArrayCollection extends Array<unknown> {
  static override get [Symbol.species](): ArrayConstructor {
    return Array;
  }

  constructor(items: Iterable<unknown> = []) {
    super();
    for (const x of items) this.push(x);
  }
}

/** BlazeDS's flex.messaging.io.ArrayList: the same body as ArrayCollection. */
export class ArrayList extends Array<unknown> {
  static override get [Symbol.species](): ArrayConstructor {
    return Array;
  }

  constructor(items: Iterable<unknown> = []) {
    super();
    for (const x of items) this.push(x);
  }
}

/** Flex's flex.messaging.io.ObjectProxy: an externalizable wrapper of one object; its own
 * enumerable properties are the wrapped object's members. */
export class ObjectProxy {
  [member: string]: unknown;

  constructor(members?: Record<string, unknown>) {
    if (members !== undefined) {
      for (const k of Object.keys(members)) setMember(this, k, members[k]);
    }
  }
}

/** An E4X XML value (AMF3 0x0B), kept as text and never parsed. In AMF0 it is written as
 * an XML document (0x0F). */
export class Xml {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

/** An XMLDocument (AMF0 0x0F, AMF3 0x07), kept as text and never parsed. */
export class XmlDocument {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

/** The largest time a Date holds: 8.64e15 ms either side of the epoch. */
const MAX_DATE_MS = 8.64e15;

/**
 * An AMF date a JavaScript Date cannot hold: milliseconds with a fraction (a Date keeps
 * whole milliseconds), beyond ±8.64e15, -0, or an AMF0 date whose time-zone field is not
 * 0. `ms` is milliseconds since 1970-01-01 UTC; `tz` the AMF0 time-zone field (minutes),
 * kept as read, never applied.
 */
export class AmfDate {
  readonly ms: number;
  readonly tz: number;
  constructor(ms: number, tz = 0) {
    this.ms = ms;
    this.tz = tz;
  }
  /** A Date of the same time (rounded towards zero to a millisecond; beyond ±8.64e15: invalid). */
  toDate(): Date {
    return new Date(this.ms);
  }
}

/** The value a date decodes to: a Date when it holds the time exactly, else an AmfDate. */
export function dateValue(ms: number, tz: number): Date | AmfDate {
  if (tz === 0 && ((Number.isInteger(ms) && Math.abs(ms) <= MAX_DATE_MS && !Object.is(ms, -0)) || ms !== ms)) {
    return new Date(ms);
  }
  return new AmfDate(ms, tz);
}

/** A number written as an AMF3 double even when it is an integer in the integer range
 * (what lossless decoding gives for an integral double). */
export class Double {
  readonly value: number;
  constructor(value: number) {
    this.value = value;
  }
  valueOf(): number {
    return this.value;
  }
}

/** A value that came after an AMF0 AVM+ switch (0x11), in lossless decoding: the AMF0
 * encoder writes it after the switch again. */
export class Avmplus {
  readonly value: unknown;
  constructor(value: unknown) {
    this.value = value;
  }
}

/** The AMF0 `unsupported` marker (0x0D) in lossless decoding (undefined otherwise). */
export class Unsupported {
  private constructor() {}
  /** The one instance. */
  static readonly instance: Unsupported = new Unsupported();
}

export const UNSUPPORTED: Unsupported = Unsupported.instance;

/** The externalizable class aliases of Flex's one-value wrappers. */
export const ARRAY_COLLECTION = "flex.messaging.io.ArrayCollection";
export const ARRAY_LIST = "flex.messaging.io.ArrayList";
export const OBJECT_PROXY = "flex.messaging.io.ObjectProxy";
