// Calling a gateway method from the page: AMF3 or AMF0 NetConnection calls, a Flex
// RemoteObject call (a RemotingMessage in a version-3 packet, target "null"), or JSON-RPC
// 2.0; and reading the answer: the result or the fault, the bytes, sizes and the
// gateway's Server-Timing.

import { base64Of, fromJSONValue } from "./values.js";

/** The AMF codec module, once loaded (null: JSON-RPC only). */
let C = null;

export function setCodec(codec) {
  C = codec;
}

export const PROTOCOLS = Object.freeze({
  amf3: { label: "AMF3 (NetConnection)", short: "AMF3", amf: true, version: 3 },
  amf0: { label: "AMF0 (NetConnection)", short: "AMF0", amf: true, version: 0 },
  flex: { label: "Flex RemoteObject (AMF3)", short: "Flex", amf: true, version: 3 },
  jsonrpc: { label: "JSON-RPC 2.0", short: "JSON-RPC", amf: false, version: "json" },
});

/** What the page keeps between calls: the Flex client id the gateway gave (DSId), and a
 * NetConnection session the gateway appended to its URL (AppendToGatewayUrl). */
export class Session {
  constructor(gatewayPath) {
    this.gatewayPath = gatewayPath;
    this.dsid = null;
    this.clientId = null;
    this.urlSuffix = "";
    this.counter = 0;
  }

  url(protocol) {
    return protocol === "amf0" || protocol === "amf3" ? this.gatewayPath + this.urlSuffix : this.gatewayPath;
  }
}

function utf8(text) {
  return new TextEncoder().encode(text);
}

/** `user:password` in base64 over its UTF-8 bytes (HTTP Basic, a Flex login). */
function basicToken(user, password) {
  return base64Of(utf8(`${user}:${password}`));
}

/** An argument read from the form ({json, kind}) as the value the AMF codec writes. */
function amfArgument(arg) {
  if (arg.kind === "bytes" && typeof arg.json === "string") return utf8(arg.json);
  return fromJSONValue(arg.json, { floats: arg.kind === "float" });
}

/** The bytes of a gzip stream of `bytes`, computed here (CompressionStream), or null. */
export async function gzipSize(bytes) {
  if (typeof CompressionStream !== "function") return null;
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
  const out = await new Response(stream).arrayBuffer();
  return out.byteLength;
}

/** The metrics of a Server-Timing header value: [{name, desc, dur}]. */
export function parseServerTiming(text) {
  const out = [];
  if (!text) return out;
  const split = (s, sep) => {
    const parts = [];
    let cur = "";
    let quoted = false;
    for (let i = 0; i < s.length; i++) {
      const ch = s[i];
      if (quoted && ch === "\\" && i + 1 < s.length) {
        cur += ch + s[++i];
      } else if (ch === '"') {
        quoted = !quoted;
        cur += ch;
      } else if (ch === sep && !quoted) {
        parts.push(cur);
        cur = "";
      } else {
        cur += ch;
      }
    }
    parts.push(cur);
    return parts;
  };
  const unquote = (v) => {
    v = v.trim();
    if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) return v.slice(1, -1).replace(/\\(.)/g, "$1");
    return v;
  };
  for (const entry of split(text, ",")) {
    const [head, ...params] = split(entry, ";");
    const name = head.trim();
    if (!name) continue;
    const metric = { name, desc: "", dur: null };
    for (const p of params) {
      const eq = p.indexOf("=");
      const key = (eq < 0 ? p : p.slice(0, eq)).trim().toLowerCase();
      const value = eq < 0 ? "" : unquote(p.slice(eq + 1));
      if (key === "dur") {
        const d = Number.parseFloat(value);
        if (Number.isFinite(d)) metric.dur = d;
      } else if (key === "desc") {
        metric.desc = value;
      }
    }
    out.push(metric);
  }
  return out;
}

function clip(text, n = 2000) {
  text = String(text);
  return text.length > n ? text.slice(0, n) + `… (${text.length} chars)` : text;
}

function member(obj, name) {
  if (obj === null || typeof obj !== "object") return undefined;
  if (obj instanceof Map) return obj.get(name);
  return Object.prototype.hasOwnProperty.call(obj, name) ? obj[name] : undefined;
}

function unwrap(value) {
  while (C !== null && value instanceof C.Avmplus) value = value.value;
  return value;
}

function text(v) {
  v = unwrap(v);
  if (v === null || v === undefined) return "";
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

/**
 * Call `service.method` with `args` ([{json, kind}] from the form) over `protocol`.
 * `credentials` {user, password} or null. `measure`: also the gzipped size and the
 * Resource Timing entry (single calls; the repeat mode skips them).
 *
 * Never throws: the outcome says what happened ({ok, result, fault, error, ...}).
 */
export async function call(session, { protocol, service, method, args, credentials = null, measure = true }) {
  const spec = PROTOCOLS[protocol];
  const target = `${service}.${method}`;
  const out = {
    protocol,
    target,
    ok: false,
    result: undefined,
    version: spec.version,
    fault: null,
    error: null,
    notes: [],
    status: 0,
    statusText: "",
    timeMs: 0,
    encodeMs: 0,
    decodeMs: 0,
    requestBytes: new Uint8Array(0),
    requestHeaders: {},
    responseBytes: new Uint8Array(0),
    responseType: "",
    wireSize: null,
    sentGzipped: false,
    gzipSize: null,
    serverTiming: [],
    packet: null,
    json: null,
    when: new Date(),
  };
  const headers = {};
  let body;
  let bodyIndex = 1;
  const started = performance.now();
  try {
    if (protocol === "jsonrpc") {
      const id = ++session.counter;
      body = utf8(JSON.stringify({ jsonrpc: "2.0", method: target, params: args.map((a) => a.json), id }));
      headers["content-type"] = "application/json";
      if (credentials) headers.authorization = `Basic ${basicToken(credentials.user, credentials.password)}`;
    } else {
      if (C === null) throw new Error("the AMF codec (amfkit-codec.js) did not load: only JSON-RPC works");
      const values = args.map(amfArgument);
      const packet = { version: spec.version, headers: [], bodies: [] };
      if (protocol === "flex") {
        const msgHeaders = () => ({ DSId: session.dsid ?? "nil", DSEndpoint: "amfkit-browser" });
        if (credentials) {
          const login = new C.CommandMessage({
            operation: C.Operation.LOGIN,
            body: basicToken(credentials.user, credentials.password),
            destination: "",
            clientId: session.clientId,
            headers: msgHeaders(),
          });
          packet.bodies.push(C.requestBody(login, ++session.counter));
        }
        const message = new C.RemotingMessage({
          destination: service,
          operation: method,
          body: values,
          clientId: session.clientId,
          headers: msgHeaders(),
        });
        bodyIndex = ++session.counter;
        packet.bodies.push(C.requestBody(message, bodyIndex));
      } else {
        if (credentials) {
          packet.headers.push({ name: "Credentials", mustUnderstand: false, value: { userid: credentials.user, password: credentials.password } });
        }
        bodyIndex = ++session.counter;
        packet.bodies.push({ target, response: `/${bodyIndex}`, value: values });
      }
      body = C.packet.encode(packet);
      headers["content-type"] = "application/x-amf";
    }
  } catch (e) {
    out.error = `the request could not be written: ${clip(e && e.message ? e.message : e, 1024)}`;
    return out;
  }
  out.encodeMs = performance.now() - started;
  out.requestBytes = body;
  out.requestHeaders = { ...headers };
  if (out.requestHeaders.authorization) out.requestHeaders.authorization = "Basic …";
  const url = session.url(protocol);
  const t0 = performance.now();
  let response;
  try {
    // No cookies: the gateway keeps sessions in the URL and the DSId. And with "omit", a
    // refused HTTP Basic login (401) comes back to the page instead of opening the
    // browser's own login prompt.
    response = await fetch(url, { method: "POST", headers, body, cache: "no-store", credentials: "omit", redirect: "error" });
    out.responseBytes = new Uint8Array(await response.arrayBuffer());
  } catch (e) {
    out.timeMs = performance.now() - t0;
    out.error = `the request failed: ${clip(e && e.message ? e.message : e, 1024)}`;
    return out;
  }
  out.timeMs = performance.now() - t0;
  out.status = response.status;
  out.statusText = response.statusText;
  out.responseType = response.headers.get("content-type") ?? "";
  out.serverTiming = parseServerTiming(response.headers.get("server-timing"));
  out.sentGzipped = /gzip/i.test(response.headers.get("content-encoding") ?? "");
  const length = Number.parseInt(response.headers.get("content-length") ?? "", 10);
  out.wireSize = out.sentGzipped ? (Number.isFinite(length) ? length : null) : out.responseBytes.length;
  if (measure) {
    const entry = resourceEntry(url);
    if (entry !== null) {
      if (out.serverTiming.length === 0 && entry.serverTiming && entry.serverTiming.length > 0) {
        out.serverTiming = entry.serverTiming.map((m) => ({ name: m.name, desc: m.description, dur: m.duration }));
      }
      if (out.sentGzipped && out.wireSize === null && entry.encodedBodySize > 0) out.wireSize = entry.encodedBodySize;
    }
    out.gzipSize = out.sentGzipped ? out.wireSize : await gzipSize(out.responseBytes).catch(() => null);
  }
  const t2 = performance.now();
  try {
    read(out, session, protocol, bodyIndex);
  } finally {
    out.decodeMs = performance.now() - t2;
  }
  return out;
}

function resourceEntry(url) {
  try {
    const absolute = new URL(url, location.href).href;
    const entries = performance.getEntriesByName(absolute, "resource");
    const entry = entries.length > 0 ? entries[entries.length - 1] : null;
    performance.clearResourceTimings();
    return entry;
  } catch {
    return null;
  }
}

function read(out, session, protocol, bodyIndex) {
  const bytes = out.responseBytes;
  const textBody = () => clip(new TextDecoder().decode(bytes.subarray(0, 4096)).trim(), 1024);
  if (out.status !== 200) {
    if (out.status === 204) {
      out.ok = true;
      out.result = null;
      out.notes.push("204 No Content: the gateway sent no answer");
      return;
    }
    out.error = `HTTP ${out.status}${out.statusText ? " " + out.statusText : ""}: ${textBody() || "(no body)"}`;
    return;
  }
  if (protocol === "jsonrpc") {
    let doc;
    try {
      doc = JSON.parse(new TextDecoder().decode(bytes));
    } catch (e) {
      out.error = `the answer is not JSON (${out.responseType || "no content type"}): ${textBody()}`;
      return;
    }
    out.json = doc;
    const answer = Array.isArray(doc) ? doc[0] : doc;
    if (answer && typeof answer === "object" && answer.error !== undefined && answer.error !== null) {
      const err = answer.error;
      const data = err && typeof err === "object" ? err.data : undefined;
      out.fault = {
        code: `${err.code ?? ""}${data && typeof data === "object" && data.code ? ` (${data.code})` : ""}`,
        message: String(err.message ?? ""),
        details: data === undefined || data === null ? "" : typeof data === "string" ? data : JSON.stringify(data, null, 2),
        value: err,
      };
      out.result = err;
      return;
    }
    out.ok = true;
    out.result = answer && typeof answer === "object" ? answer.result : answer;
    return;
  }
  let packet;
  try {
    packet = C.packet.decode(bytes, { lossless: true });
  } catch (e) {
    out.error = `the answer is not an AMF packet (${out.responseType || "no content type"}): ${clip(e && e.message ? e.message : e, 1024)}`;
    return;
  }
  out.packet = packet;
  for (const h of packet.headers) {
    const value = unwrap(h.value);
    if (h.name === "AppendToGatewayUrl" && typeof value === "string" && /^\?[A-Za-z0-9_=&.%-]{1,256}$/.test(value)) {
      session.urlSuffix = value;
      out.notes.push(`the gateway started a session: later NetConnection calls go to ${session.gatewayPath}${value}`);
    } else if (h.name === "RequestPersistentHeader") {
      out.notes.push(`the gateway asked for a persistent header: ${text(member(value, "name"))}`);
    }
  }
  const prefix = `/${bodyIndex}/`;
  const answer = packet.bodies.find((b) => b.target.startsWith(prefix));
  if (answer === undefined) {
    out.error = `the answer holds no body for ${prefix}onResult or ${prefix}onStatus (${packet.bodies.length} bodies)`;
    return;
  }
  const isStatus = answer.target.endsWith("/onStatus");
  if (protocol === "flex") {
    for (const b of packet.bodies) {
      if (b === answer) continue;
      const m = unwrap(b.value);
      if (m instanceof C.ErrorMessage) out.notes.push(`login refused: ${text(m.faultCode)} ${text(m.faultString)}`);
      else if (m instanceof C.AcknowledgeMessage) out.notes.push("login accepted");
    }
    const message = unwrap(answer.value);
    if (message instanceof C.AcknowledgeMessage) {
      const dsid = member(message.headers, "DSId");
      if (typeof dsid === "string" && dsid) session.dsid = dsid;
      if (typeof message.clientId === "string" && message.clientId) session.clientId = message.clientId;
    }
    if (message instanceof C.ErrorMessage) {
      out.fault = {
        code: text(message.faultCode),
        message: text(message.faultString),
        details: [text(message.faultDetail), message.rootCause != null ? `rootCause: ${text(message.rootCause)}` : ""].filter(Boolean).join("\n"),
        value: message,
      };
      out.result = message;
      return;
    }
    if (!(message instanceof C.AcknowledgeMessage) || isStatus) {
      out.fault = { code: "(not a Flex answer)", message: `${answer.target}: ${typeof message}`, details: "", value: message };
      out.result = message;
      return;
    }
    out.ok = true;
    out.message = message;
    out.result = message.body;
    return;
  }
  // A body value is AMF0; in a version-3 packet it switches to AMF3 (lossless decoding
  // keeps the switch as an Avmplus wrapper, which the tree follows).
  out.version = 0;
  const value = answer.value;
  if (isStatus) {
    const status = unwrap(value);
    out.fault = {
      code: text(member(status, "code")),
      message: text(member(status, "description")),
      details: [text(member(status, "details")), text(member(status, "type")) ? `type: ${text(member(status, "type"))}` : ""].filter(Boolean).join("\n"),
      value: status,
    };
    out.result = value;
    return;
  }
  out.ok = true;
  out.result = value;
}

/** Whether an outcome failed (a fault or an error). */
export function failed(outcome) {
  return outcome.error !== null || outcome.fault !== null;
}
