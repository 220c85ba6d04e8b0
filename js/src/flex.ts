// Flex messages: what RemoteObject, Producer and Consumer send and receive, in their full
// forms (typed objects of the flex.messaging.messages.* classes, sealed members in name
// order, not dynamic, as amfkit's Python side registers them) and their small ones (DSK
// AcknowledgeMessage, DSA AsyncMessage, DSC CommandMessage: externalizable, flag bytes
// then the flagged values). Both forms decode to the same classes; a message remembers
// the form it came in (`small`) and is written back in it.
//
// Small-form layout (each level writes one or more flag bytes, 0x80 meaning another flag
// byte follows, then the values its bits announce; readers skip flagged values they do
// not know):
//   AbstractMessage, byte 0: 0x01 body, 0x02 clientId, 0x04 destination, 0x08 headers,
//     0x10 messageId, 0x20 timestamp, 0x40 timeToLive; byte 1: 0x01 clientId as 16
//     bytes, 0x02 messageId as 16 bytes.
//   AsyncMessage: 0x01 correlationId, 0x02 correlationId as 16 bytes.
//   CommandMessage: 0x01 operation.

import { addSpec, type ClassSpec, type DataInput, type DataOutput, type ExternalHooks } from "./registry";
import { Traits } from "./types";

/** CommandMessage operations. */
export const Operation = Object.freeze({
  SUBSCRIBE: 0,
  UNSUBSCRIBE: 1,
  POLL: 2,
  CLIENT_SYNC: 4,
  CLIENT_PING: 5,
  CLUSTER_REQUEST: 7,
  LOGIN: 8,
  LOGOUT: 9,
  SUBSCRIPTION_INVALIDATE: 10,
  MULTI_SUBSCRIBE: 11,
  DISCONNECT: 12,
  TRIGGER_CONNECT: 13,
});

/** A Flex message or client id: an uppercase random (version 4) UUID. */
export function newId(): string {
  const b = new Uint8Array(16);
  const c = (globalThis as { crypto?: { getRandomValues?(a: Uint8Array): Uint8Array } }).crypto;
  if (c !== undefined && typeof c.getRandomValues === "function") c.getRandomValues(b);
  else for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  return uuidText(b);
}

function uuidText(b: Uint8Array): string {
  let h = "";
  for (let i = 0; i < 16; i++) h += b[i]!.toString(16).padStart(2, "0");
  h = h.toUpperCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A 16-byte ByteArray (a small form's binary id) as UUID text; anything else as it is. */
function uuidOf(raw: unknown): unknown {
  return raw instanceof Uint8Array && raw.length === 16 ? uuidText(raw) : raw;
}

const SMALL = Symbol("amfkit.small");

type Init<T> = { [K in keyof T]?: T[K] };

export class AbstractMessage {
  static readonly FIELDS: readonly string[] = [
    "body",
    "clientId",
    "destination",
    "headers",
    "messageId",
    "timestamp",
    "timeToLive",
  ];

  body: unknown = null;
  clientId: unknown = null;
  destination: unknown = null;
  headers: Record<string, unknown> = {};
  messageId: unknown = newId();
  timestamp: unknown = Date.now();
  timeToLive: unknown = 0;

  constructor(init?: Init<AbstractMessage>) {
    if (init !== undefined) Object.assign(this, init);
  }

  /** Whether the message is written in its small form (DSK, DSA, DSC): set on one that
   * came in it. */
  get small(): boolean {
    return (this as { [SMALL]?: boolean })[SMALL] === true;
  }

  set small(value: boolean) {
    Object.defineProperty(this, SMALL, { value: value === true, enumerable: false, writable: true, configurable: true });
  }
}

export class AsyncMessage extends AbstractMessage {
  static override readonly FIELDS: readonly string[] = [...AbstractMessage.FIELDS, "correlationId"];
  correlationId: unknown = null;

  constructor(init?: Init<AsyncMessage>) {
    super();
    if (init !== undefined) Object.assign(this, init);
  }
}

/** The answer to a message; `body` is the result. */
export class AcknowledgeMessage extends AsyncMessage {
  constructor(init?: Init<AcknowledgeMessage>) {
    super();
    if (init !== undefined) Object.assign(this, init);
  }
}

/** A fault. Every field is always written: strict clients reject partial ones. */
export class ErrorMessage extends AcknowledgeMessage {
  static override readonly FIELDS: readonly string[] = [
    ...AsyncMessage.FIELDS,
    "faultCode",
    "faultString",
    "faultDetail",
    "rootCause",
    "extendedData",
  ];
  faultCode: unknown = null;
  faultString: unknown = null;
  faultDetail: unknown = null;
  rootCause: unknown = null;
  extendedData: unknown = null;

  constructor(init?: Init<ErrorMessage>) {
    super();
    if (init !== undefined) Object.assign(this, init);
  }
}

/** A RemoteObject call: `destination` (the service), `operation` (the method), `body`
 * (the arguments, an Array). */
export class RemotingMessage extends AbstractMessage {
  static override readonly FIELDS: readonly string[] = [...AbstractMessage.FIELDS, "operation", "source"];
  operation: unknown = null;
  source: unknown = null;

  constructor(init?: Init<RemotingMessage>) {
    super();
    if (init !== undefined) Object.assign(this, init);
  }
}

/** A command: ping, login, logout, subscribe, poll... (`operation`, see Operation). */
export class CommandMessage extends AsyncMessage {
  static override readonly FIELDS: readonly string[] = [...AsyncMessage.FIELDS, "operation", "messageRefType"];
  operation: unknown = Operation.CLIENT_PING;
  messageRefType: unknown = null;

  constructor(init?: Init<CommandMessage>) {
    super();
    if (init !== undefined) Object.assign(this, init);
  }
}

/** The body a Flex client sends one message in: target "null", response "/N", the
 * message in an Array of one. */
export function requestBody(message: AbstractMessage, n = 1): { target: string; response: string; value: unknown[] } {
  return { target: "null", response: `/${n}`, value: [message] };
}

// --- small forms -------------------------------------------------------------------

type Fields = Record<string, unknown>;

function readFlags(input: DataInput): number[] {
  const flags: number[] = [];
  for (;;) {
    const f = input.readUnsignedByte();
    flags.push(f);
    if ((f & 0x80) === 0) return flags;
    if (flags.length > 16) throw input.error("a small-form message with more than 16 flag bytes");
  }
}

/** Read and drop the values of flag bits this reader does not know. */
function skip(input: DataInput, flags: number, known: number): void {
  for (let bit = known; bit < 7; bit++) if (flags & (1 << bit)) input.readObject();
}

function readAbstract(m: Fields, input: DataInput): void {
  readFlags(input).forEach((f, i) => {
    let known = 0;
    if (i === 0) {
      AbstractMessage.FIELDS.forEach((name, bit) => {
        if (f & (1 << bit)) m[name] = input.readObject();
      });
      known = 7;
    } else if (i === 1) {
      if (f & 0x01) m.clientId = uuidOf(input.readObject());
      if (f & 0x02) m.messageId = uuidOf(input.readObject());
      known = 2;
    }
    skip(input, f, known);
  });
}

function readAsync(m: Fields, input: DataInput): void {
  readAbstract(m, input);
  readFlags(input).forEach((f, i) => {
    let known = 0;
    if (i === 0) {
      if (f & 0x01) m.correlationId = input.readObject();
      if (f & 0x02) m.correlationId = uuidOf(input.readObject());
      known = 2;
    }
    skip(input, f, known);
  });
}

function writeAbstract(m: Fields, output: DataOutput): void {
  const values = AbstractMessage.FIELDS.map((name) => m[name]);
  let flags = 0;
  values.forEach((v, bit) => {
    if (v != null) flags |= 1 << bit;
  });
  output.writeByte(flags);
  for (const v of values) if (v != null) output.writeObject(v);
}

function writeAsync(m: Fields, output: DataOutput): void {
  writeAbstract(m, output);
  if (m.correlationId == null) {
    output.writeByte(0);
  } else {
    output.writeByte(0x01);
    output.writeObject(m.correlationId);
  }
}

const small = {
  DSK: {
    proto: AcknowledgeMessage.prototype,
    fields: AcknowledgeMessage.FIELDS,
    read(m: Fields, input: DataInput) {
      readAsync(m, input);
      for (const f of readFlags(input)) skip(input, f, 0);
    },
    write(m: Fields, output: DataOutput) {
      writeAsync(m, output);
      output.writeByte(0);
    },
  },
  DSA: {
    proto: AsyncMessage.prototype,
    fields: AsyncMessage.FIELDS,
    read: readAsync,
    write: writeAsync,
  },
  DSC: {
    proto: CommandMessage.prototype,
    fields: CommandMessage.FIELDS,
    read(m: Fields, input: DataInput) {
      readAsync(m, input);
      readFlags(input).forEach((f, i) => {
        let known = 0;
        if (i === 0) {
          if (f & 0x01) m.operation = input.readObject();
          known = 1;
        }
        skip(input, f, known);
      });
    },
    write(m: Fields, output: DataOutput) {
      writeAsync(m, output);
      output.writeByte(0x01);
      output.writeObject(m.operation);
    },
  },
};

const PACKAGE = "flex.messaging.messages.";

function register(): void {
  const smallSpecs = new Map<object, ClassSpec>();
  for (const [alias, form] of Object.entries(small)) {
    const hooks: ExternalHooks = {
      create() {
        // Every field starts absent; then the flagged ones are read.
        const m = Object.create(form.proto) as Fields & AbstractMessage;
        for (const name of form.fields) m[name] = null;
        m.headers = {};
        m.small = true;
        return m;
      },
      read: (m, input) => form.read(m as Fields, input),
      write: (m, output) => form.write(m as Fields, output),
    };
    const spec: ClassSpec = {
      alias,
      proto: form.proto,
      traits: new Traits(alias, [], false, true),
      external: hooks,
      select: undefined,
    };
    smallSpecs.set(form.proto, spec);
    addSpec(spec, false);
  }
  // Names written out: a minifier renames classes.
  const classes = [
    [AbstractMessage, "AbstractMessage"],
    [AsyncMessage, "AsyncMessage"],
    [AcknowledgeMessage, "AcknowledgeMessage"],
    [ErrorMessage, "ErrorMessage"],
    [RemotingMessage, "RemotingMessage"],
    [CommandMessage, "CommandMessage"],
  ] as const;
  for (const [cls, name] of classes) {
    const alias = PACKAGE + name;
    const proto = cls.prototype as object;
    const smallSpec = smallSpecs.get(proto);
    const full: ClassSpec = {
      alias,
      proto,
      traits: new Traits(alias, [...cls.FIELDS].sort(), false),
      external: undefined,
      select:
        smallSpec === undefined ? undefined : (obj) => ((obj as AbstractMessage).small ? smallSpec : full),
    };
    addSpec(full);
  }
}

register();
