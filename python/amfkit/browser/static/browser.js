// amfkit's service browser (docs/browser.md): reads the gateway's discovery document,
// lists its services and methods, and calls one from a form over AMF3, AMF0, Flex
// RemoteObject or JSON-RPC; shows the answer as a tree naming the AMF types, as JSON and
// as a hex dump, with its time, sizes and the gateway's Server-Timing, and repeats a
// call N times, C at a time, with a latency chart.
//
// Every text that comes from the gateway (names, docstrings, results, faults) goes into
// the page as a text node: nothing is parsed as HTML or run as code (a docstring's own
// markup, ``literal`` and the like, is made into elements by docstring.js).

import { byId, el, replace, svg } from "./dom.js";
import { docSummary, renderDoc } from "./docstring.js";
import { PROTOCOLS, Session, call, failed, setCodec as setCallCodec } from "./calls.js";
import { expandAll, hexDump, renderTree, setCodec as setValueCodec, toJSONValue } from "./values.js";

const gatewayPath = document.querySelector('meta[name="amfkit-gateway"]')?.getAttribute("content") || "/gateway";
const session = new Session(gatewayPath);
const state = {
  doc: null,
  services: new Map(), // name -> service
  selected: null, // {service, method}
  updateVia: null, // refreshes the "over <protocol>" text beside Send
  history: [], // the last single calls, newest first
  repeating: false,
  codecError: null,
};
const HISTORY = 12;
const PHASES = ["decode", "call", "encode", "gzip", "server", "network"];
const PHASE_LABELS = {
  decode: "decode",
  call: "call",
  encode: "encode",
  gzip: "gzip",
  server: "server, other",
  network: "network & browser",
};

// --- numbers ---------------------------------------------------------------------------

function ms(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return "–";
  if (x >= 100) return `${x.toFixed(0)} ms`;
  if (x >= 10) return `${x.toFixed(1)} ms`;
  return `${x.toFixed(2)} ms`;
}

function bytes(n) {
  if (n === null || n === undefined) return "–";
  if (n < 1024) return `${n.toLocaleString("en")} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB (${n.toLocaleString("en")} B)`;
  return `${(n / 1024 / 1024).toFixed(2)} MiB (${n.toLocaleString("en")} B)`;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1];
}

// --- parameters and their fields -------------------------------------------------------

/** What a parameter's annotation asks for: {kind: int|float|bool|str|bytes|json, nullable}. */
export function paramKind(param) {
  let t = (param.type ?? "").replace(/\s+/g, "");
  let nullable = param.default === null;
  const optional = /^Optional\[(.*)\]$/.exec(t);
  if (optional) {
    t = optional[1];
    nullable = true;
  }
  const union = /^Union\[(.*)\]$/.exec(t);
  if (union) t = union[1].split(",").join("|");
  const parts = [];
  let depth = 0;
  let cur = "";
  for (const ch of t) {
    if (ch === "[") depth++;
    if (ch === "]") depth--;
    if (ch === "|" && depth === 0) {
      parts.push(cur);
      cur = "";
    } else {
      cur += ch;
    }
  }
  parts.push(cur);
  const kinds = parts.filter((p) => {
    if (p === "None" || p === "NoneType") {
      nullable = true;
      return false;
    }
    return p !== "";
  });
  const set = new Set(kinds);
  let kind = "json";
  if (set.size === 1) {
    const only = kinds[0];
    if (["int", "float", "bool", "str", "bytes"].includes(only)) kind = only;
  } else if (set.size > 1 && [...set].every((k) => k === "str" || k === "bytes")) {
    kind = "str";
  } else if (set.size > 1 && [...set].every((k) => k === "int" || k === "float")) {
    kind = "float";
  }
  return { kind, nullable };
}

function signature(method) {
  return method.params
    .map((p) => {
      const star = p.kind === "var_positional" ? "*" : p.kind === "var_keyword" ? "**" : "";
      return "default" in p ? `${star}${p.name}=${JSON.stringify(p.default)}` : `${star}${p.name}`;
    })
    .join(", ");
}

/** Calls of `service.method(...)` written in docstrings, with their arguments when they
 * read as JSON: [{text, args|null}]. */
function examples(service, method) {
  const out = [];
  const want = `${service.name}.${method.name}(`;
  for (const doc of [method.doc ?? "", service.doc ?? ""]) {
    let at = doc.indexOf(want);
    while (at >= 0 && out.length < 8) {
      let i = at + want.length;
      let depth = 1;
      let quote = null;
      for (; i < doc.length && depth > 0; i++) {
        const ch = doc[i];
        if (quote) {
          if (ch === "\\") i++;
          else if (ch === quote) quote = null;
        } else if (ch === '"' || ch === "'") quote = ch;
        else if (ch === "(" || ch === "[" || ch === "{") depth++;
        else if (ch === ")" || ch === "]" || ch === "}") depth--;
      }
      if (depth !== 0) break;
      const text = doc.slice(at, i);
      const inner = doc.slice(at + want.length, i - 1);
      let args = null;
      try {
        const parsed = JSON.parse(`[${inner}]`);
        if (Array.isArray(parsed)) args = parsed;
      } catch {
        args = null;
      }
      if (!out.some((e) => e.text === text)) out.push({ text, args });
      at = doc.indexOf(want, i);
    }
  }
  return out;
}

function fieldText(kind, value) {
  if (value === undefined) return "";
  if (kind === "json") return JSON.stringify(value);
  if (value === null) return "";
  if ((kind === "str" || kind === "bytes") && typeof value !== "string") return JSON.stringify(value);
  return String(value);
}

function buildField(param) {
  const { kind, nullable } = paramKind(param);
  const id = `param-${param.name}`;
  const hasDefault = "default" in param;
  let input;
  if (param.kind === "var_positional") {
    input = el("textarea", { id, rows: 2, spellcheck: "false", placeholder: "JSON array of more arguments: [1, \"two\"]" });
  } else if (kind === "bool") {
    input = el("select", { id }, el("option", { value: "true" }, "true"), el("option", { value: "false" }, "false"));
    if (nullable) input.append(el("option", { value: "null" }, "null"));
    input.value = hasDefault ? String(param.default) : "false";
  } else if (kind === "int" || kind === "float") {
    input = el("input", { id, type: "number", step: kind === "int" ? "1" : "any", inputmode: kind === "int" ? "numeric" : "decimal" });
  } else if (kind === "str" || kind === "bytes") {
    input = el("input", { id, type: "text", spellcheck: "false", autocomplete: "off" });
  } else {
    input = el("textarea", {
      id,
      rows: 2,
      spellcheck: "false",
      placeholder: 'JSON: "text", 12, 1.5, true, null, [1, 2], {"a": 1}, {"__bytes__": "aGk="}, {"__alias__": "com.example.Foo", "x": 1}',
    });
  }
  if (kind !== "bool" && hasDefault) input.value = fieldText(kind, param.default);
  if (input.tagName !== "SELECT" && !input.placeholder) {
    const hint = hasDefault ? `default ${JSON.stringify(param.default)}` : nullable ? "empty: null" : kind === "bytes" ? "text, sent as UTF-8 bytes" : kind;
    input.setAttribute("placeholder", hint);
  }
  const typeText = param.type ? param.type : "any";
  const label = el(
    "label",
    { for: id },
    el("span", { class: "pname" }, param.kind === "var_positional" ? `*${param.name}` : param.name),
    el("span", { class: "ptype" }, typeText),
    hasDefault ? el("span", { class: "pdefault" }, `= ${JSON.stringify(param.default)}`) : "",
  );
  const row = el("div", { class: "param" }, label, input);
  if (param.kind === "keyword_only" || param.kind === "var_keyword") {
    input.disabled = true;
    row.append(el("span", { class: "hint" }, "keyword-only: not sent (calls pass positional arguments)"));
  }
  return { param, kind, nullable, input, row, defaultText: hasDefault ? fieldText(kind, param.default) : undefined };
}

class FieldError extends Error {
  constructor(field, message) {
    super(message);
    this.field = field;
  }
}

/** The arguments a form holds: [{json, kind}], trailing parameters left at their default
 * omitted (the gateway then applies its own default). */
function readArgs(fields) {
  const args = [];
  let keep = 0; // how many leading args must be sent
  for (const f of fields) {
    const p = f.param;
    if (p.kind === "keyword_only" || p.kind === "var_keyword") continue;
    const raw = f.input.value;
    if (p.kind === "var_positional") {
      if (raw.trim() === "") continue;
      let extra;
      try {
        extra = JSON.parse(raw);
      } catch (e) {
        throw new FieldError(f, `${p.name}: not JSON (${e.message})`);
      }
      if (!Array.isArray(extra)) throw new FieldError(f, `${p.name}: a JSON array of arguments`);
      for (const x of extra) args.push({ json: x, kind: null });
      keep = args.length;
      continue;
    }
    const hasDefault = "default" in p;
    const atDefault = hasDefault && (raw === f.defaultText || (raw === "" && f.kind !== "str" && f.kind !== "bytes"));
    let json;
    if (f.kind === "bool") {
      json = raw === "null" ? null : raw === "true";
    } else if (raw.trim() === "" && f.kind !== "str" && f.kind !== "bytes") {
      if (hasDefault) json = p.default;
      else if (f.nullable) json = null;
      else throw new FieldError(f, `${p.name}: a value is needed`);
    } else if (f.kind === "int") {
      const n = Number(raw);
      if (!Number.isInteger(n)) throw new FieldError(f, `${p.name}: an integer is needed, not ${JSON.stringify(raw)}`);
      json = n;
    } else if (f.kind === "float") {
      const n = Number(raw);
      if (Number.isNaN(n) && raw.trim().toLowerCase() !== "nan") throw new FieldError(f, `${p.name}: a number is needed, not ${JSON.stringify(raw)}`);
      json = n;
    } else if (f.kind === "str" || f.kind === "bytes") {
      json = raw === "" && f.nullable && (!hasDefault || p.default === null) ? null : raw;
    } else {
      try {
        json = JSON.parse(raw);
      } catch (e) {
        throw new FieldError(f, `${p.name}: not JSON (${e.message})`);
      }
    }
    args.push({ json, kind: f.kind === "float" || f.kind === "bytes" ? f.kind : null });
    if (!atDefault) keep = args.length;
  }
  return args.slice(0, keep);
}

// --- the services list ----------------------------------------------------------------

function renderServices() {
  const list = byId("service-list");
  const filter = byId("filter").value.trim().toLowerCase();
  const sections = [];
  let shown = 0;
  for (const service of state.doc.services) {
    const methods = service.methods.filter((m) => !filter || `${service.name}.${m.name}`.toLowerCase().includes(filter));
    if (methods.length === 0) continue;
    const items = methods.map((m) => {
      shown++;
      const key = `${service.name}.${m.name}`;
      const button = el(
        "button",
        { type: "button", class: "method", "data-method": key, title: m.doc ? docSummary(m.doc) : key },
        el("span", { class: "mname" }, m.name),
        el("span", { class: "msig" }, `(${signature(m)})`),
        m.roles && m.roles.length ? el("span", { class: "lock", title: `needs ${m.roles.join(" or ")}` }, "🔒") : "",
      );
      if (state.selected && state.selected.service === service && state.selected.method === m) button.classList.add("active");
      button.addEventListener("click", () => select(service, m));
      return el("li", {}, button);
    });
    sections.push(
      el(
        "section",
        { class: "service", "data-service": service.name },
        el("h3", { title: service.doc ? docSummary(service.doc) : service.name }, service.name),
        el("ul", {}, ...items),
      ),
    );
  }
  if (shown === 0) sections.push(el("p", { class: "empty" }, filter ? "No method matches." : "The gateway lists no services."));
  replace(list, ...sections);
  list.removeAttribute("aria-busy");
}

function select(service, method, { scroll = false } = {}) {
  state.selected = { service, method };
  history.replaceState(null, "", `#${encodeURIComponent(service.name)}.${encodeURIComponent(method.name)}`);
  for (const b of document.querySelectorAll("button.method")) {
    b.classList.toggle("active", b.dataset.method === `${service.name}.${method.name}`);
  }
  renderMethod(service, method);
  if (scroll) byId("method").scrollIntoView({ block: "start" });
}

// --- one method: the form, the answer, the repeat mode ----------------------------------

function renderMethod(service, method) {
  const panel = byId("method");
  const fields = method.params.map(buildField);
  const found = examples(service, method);
  const fill = (args) => {
    fields.forEach((f, i) => {
      if (i < args.length) {
        if (f.kind === "bool") f.input.value = String(args[i]);
        else f.input.value = fieldText(f.kind, args[i]);
      }
    });
  };
  const usable = found.filter((e) => e.args !== null && e.args.length <= fields.length);
  if (usable.length > 0) fill(usable[0].args);

  const head = el(
    "header",
    { class: "method-head" },
    el("h2", {}, el("span", { class: "svc" }, `${service.name}.`), el("span", { class: "mname" }, method.name), el("span", { class: "msig" }, `(${signature(method)})`)),
    method.returns ? el("span", { class: "returns" }, `→ ${method.returns}`) : "",
    method.roles && method.roles.length ? el("span", { class: "roles" }, `needs role ${method.roles.join(" or ")}: give credentials above`) : "",
  );
  const docs = el("div", { class: "docs" });
  if (method.doc) docs.append(el("div", { class: "doc" }, ...renderDoc(method.doc)));
  else docs.append(el("p", { class: "doc muted" }, "(no docstring)"));
  if (service.doc) {
    docs.append(el("details", { class: "service-doc" }, el("summary", {}, `About ${service.name}`), el("div", { class: "doc" }, ...renderDoc(service.doc))));
  }
  if (found.length > 0) {
    const row = el("div", { class: "examples" }, el("span", { class: "muted" }, "Examples from the docstring:"));
    for (const e of found) {
      if (e.args !== null && e.args.length <= fields.length) {
        const b = el("button", { type: "button", class: "example", title: "fill the form with this call" }, e.text);
        b.addEventListener("click", () => fill(e.args));
        row.append(b);
      } else {
        row.append(el("code", { class: "example-text", title: "not JSON: fill the form yourself" }, e.text));
      }
    }
    docs.append(row);
  }

  const error = el("p", { class: "form-error", role: "alert", hidden: true });
  const send = el("button", { type: "submit", id: "send", class: "primary" }, "Send");
  const via = el("span", { class: "via" });
  const updateVia = () => {
    via.textContent = `over ${PROTOCOLS[byId("protocol").value].label}`;
  };
  updateVia();
  state.updateVia = updateVia;
  const repeatN = el("input", { id: "repeat-n", type: "number", min: "1", max: "10000", value: "20" });
  const repeatC = el("input", { id: "repeat-c", type: "number", min: "1", max: "64", value: "4" });
  const repeatRun = el("button", { type: "button", id: "repeat-run" }, "Repeat");
  const form = el(
    "form",
    { id: "call-form", novalidate: true, autocomplete: "off" },
    fields.length ? el("div", { class: "params" }, ...fields.map((f) => f.row)) : el("p", { class: "muted" }, "No parameters."),
    error,
    el(
      "div",
      { class: "actions" },
      send,
      via,
      el(
        "span",
        { class: "repeat" },
        el("label", { for: "repeat-n" }, "Repeat mode:"),
        repeatN,
        el("label", { for: "repeat-c" }, "calls,"),
        repeatC,
        el("span", {}, "at a time"),
        repeatRun,
      ),
    ),
  );
  const outcome = el("section", { id: "outcome", "aria-live": "polite" });
  const repeatOut = el("section", { id: "repeat-outcome" });

  const args = () => {
    error.hidden = true;
    for (const f of fields) f.input.classList.remove("invalid");
    try {
      return readArgs(fields);
    } catch (e) {
      if (e instanceof FieldError) {
        e.field.input.classList.add("invalid");
        e.field.input.focus();
      }
      error.textContent = e.message;
      error.hidden = false;
      return null;
    }
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const a = args();
    if (a === null) return;
    send.disabled = true;
    outcome.classList.add("busy");
    try {
      const result = await call(session, { protocol: byId("protocol").value, service: service.name, method: method.name, args: a, credentials: credentials() });
      if (state.selected?.method !== method) return;
      renderOutcome(outcome, result);
      remember(result);
    } finally {
      send.disabled = false;
      outcome.classList.remove("busy");
    }
  });
  form.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  repeatRun.addEventListener("click", () => {
    if (state.repeating) {
      state.repeating = false;
      return;
    }
    const a = args();
    if (a === null) return;
    const n = Math.min(10000, Math.max(1, Number.parseInt(repeatN.value, 10) || 1));
    const c = Math.min(64, Math.max(1, Number.parseInt(repeatC.value, 10) || 1));
    repeatN.value = String(n);
    repeatC.value = String(c);
    runRepeat({ service, method, args: a, n, c, button: repeatRun, box: repeatOut });
  });
  replace(panel, head, docs, form, outcome, repeatOut);
  panel.hidden = false;
  byId("welcome").hidden = true;
  document.title = `${service.name}.${method.name} · amfkit service browser`;
}

function credentials() {
  const user = byId("cred-user").value;
  const password = byId("cred-password").value;
  return user ? { user, password } : null;
}

// --- an answer --------------------------------------------------------------------------

function renderOutcome(box, o) {
  const spec = PROTOCOLS[o.protocol];
  const badges = el("div", { class: "badges" });
  const badge = (label, value, cls = "") => badges.append(el("span", { class: `badge ${cls}`.trim() }, el("b", {}, label), " ", value));
  const state_ = o.error ? ["error", "error"] : o.fault ? ["fault", "fault"] : ["ok", "ok"];
  badge(spec.short, o.target, state_[1]);
  badge("HTTP", o.status ? `${o.status}` : "–", o.status === 200 ? "" : "warn");
  badge("time", ms(o.timeMs));
  badge("raw", bytes(o.responseBytes.length));
  if (o.sentGzipped) badge("gzip", `${bytes(o.wireSize)} (sent gzipped)`);
  else if (o.gzipSize !== null) badge("gzip", `${bytes(o.gzipSize)} (if gzipped; sent as is)`);
  badge("request", bytes(o.requestBytes.length));

  const parts = [badges];
  if (o.error) {
    parts.push(el("div", { class: "problem error", role: "alert" }, el("strong", {}, "Error: "), o.error));
  } else if (o.fault) {
    const f = o.fault;
    const box_ = el("div", { class: "problem fault", role: "alert" }, el("strong", {}, "Fault "), el("code", { class: "fault-code" }, f.code || "(no code)"), ": ", el("span", { class: "fault-message" }, f.message || "(no message)"));
    if (f.details) box_.append(el("pre", { class: "fault-details" }, f.details));
    parts.push(box_);
  }
  for (const note of o.notes) parts.push(el("p", { class: "note" }, note));
  parts.push(timingFigure(o));

  // Tabs: the tree, JSON, the answer's bytes, the request's.
  const panels = {};
  const tabs = el("div", { class: "tabs", role: "tablist" });
  const body = el("div", { class: "tab-body" });
  const show = (name) => {
    for (const b of tabs.children) {
      const on = b.dataset.tab === name;
      b.setAttribute("aria-selected", on ? "true" : "false");
      b.classList.toggle("on", on);
    }
    replace(body, panels[name]());
  };
  const tab = (name, label, make) => {
    let made = null;
    panels[name] = () => (made ??= make());
    const b = el("button", { type: "button", role: "tab", class: "tab", "data-tab": name }, label);
    b.addEventListener("click", () => show(name));
    tabs.append(b);
  };
  if (!o.error || o.packet || o.json) {
    tab("tree", "Tree", () => treePanel(o));
    tab("json", "JSON", () => jsonPanel(o));
  }
  tab("hex", "Hex", () => el("div", {}, el("p", { class: "muted" }, `The answer's ${o.responseBytes.length.toLocaleString("en")} bytes${o.sentGzipped ? ", after gunzip" : ""} (${o.responseType || "no content type"}).`), el("pre", { class: "hex" }, hexDump(o.responseBytes))));
  tab("request", "Request", () => requestPanel(o));
  parts.push(tabs, body);
  replace(box, ...parts);
  show(tabs.firstChild.dataset.tab);
  box.dataset.protocol = o.protocol;
  document.body.dataset.calls = String(Number(document.body.dataset.calls ?? 0) + 1);
}

function treePanel(o) {
  const wrap = el("div", { class: "tree-panel" });
  const tools = el("div", { class: "tree-tools" });
  const expand = el("button", { type: "button", class: "small" }, "Expand all");
  const collapse = el("button", { type: "button", class: "small" }, "Collapse all");
  tools.append(expand, collapse);
  const label = o.fault ? "fault" : "result";
  const tree = renderTree(o.result, o.version, label);
  expand.addEventListener("click", () => {
    if (!expandAll(tree, true)) tools.append(el("span", { class: "muted" }, " (5,000 nodes opened: open the rest by hand)"));
  });
  collapse.addEventListener("click", () => expandAll(tree, false));
  wrap.append(tools, tree);
  if (o.packet) {
    const p = o.packet;
    const details = el("details", { class: "packet" }, el("summary", {}, `Response packet: version ${p.version}, ${p.headers.length} header${p.headers.length === 1 ? "" : "s"}, ${p.bodies.length} bod${p.bodies.length === 1 ? "y" : "ies"}`));
    details.addEventListener(
      "toggle",
      () => {
        if (details.childElementCount > 1) return;
        for (const h of p.headers) details.append(renderTree(h.value, 0, `header ${JSON.stringify(h.name)}${h.mustUnderstand ? " (must understand)" : ""}`));
        for (const b of p.bodies) details.append(renderTree(b.value, 0, `body ${JSON.stringify(b.target)} (response ${JSON.stringify(b.response)})`));
      },
      { once: false },
    );
    wrap.append(details);
  }
  return wrap;
}

function jsonPanel(o) {
  let text;
  try {
    if (o.protocol === "jsonrpc" && o.json !== null) text = JSON.stringify(o.json, null, 2);
    else text = JSON.stringify(toJSONValue(o.result, o.version), null, 2) ?? "null";
  } catch (e) {
    text = `(cannot show as JSON: ${e.message})`;
  }
  const note = o.protocol === "jsonrpc" ? "The JSON-RPC answer as sent." : "The value in amfkit's JSON mapping (amfkit decode --json): __alias__, __bytes__, __date__… name what JSON has no type for.";
  return el("div", {}, el("p", { class: "muted" }, note), el("pre", { class: "json" }, text.length > 2_000_000 ? text.slice(0, 2_000_000) + "\n…" : text));
}

function requestPanel(o) {
  const headers = Object.entries(o.requestHeaders).map(([k, v]) => `${k}: ${v}`).join("\n");
  const parts = [el("p", { class: "muted" }, `POST ${session.url(o.protocol)} · ${o.requestBytes.length.toLocaleString("en")} bytes · written in ${ms(o.encodeMs)}, answer read in ${ms(o.decodeMs)}`), el("pre", { class: "headers" }, headers)];
  if (o.protocol === "jsonrpc") parts.push(el("pre", { class: "json" }, new TextDecoder().decode(o.requestBytes)));
  else parts.push(el("pre", { class: "hex" }, hexDump(o.requestBytes)));
  return el("div", {}, ...parts);
}

// --- Server-Timing: a bar per call ------------------------------------------------------

/** The phases of a call in milliseconds: [{phase, label, dur}]. */
function phases(o) {
  const st = o.serverTiming;
  const out = [];
  if (st.length === 0) {
    out.push({ phase: "network", label: "round trip (no Server-Timing)", dur: o.timeMs });
    return out;
  }
  let total = null;
  let known = 0;
  for (const m of st) {
    if (m.dur === null) continue;
    if (m.name === "total") {
      total = m.dur;
      continue;
    }
    const phase = m.name === "calls" ? "call" : PHASES.includes(m.name) ? m.name : "server";
    const label = m.desc ? `${m.name} ${m.desc}` : m.name;
    out.push({ phase, label, dur: m.dur });
    known += m.dur;
  }
  const serverTotal = total ?? known;
  if (serverTotal - known > 0.0005) out.push({ phase: "server", label: "server, other", dur: serverTotal - known });
  out.push({ phase: "network", label: "network & browser", dur: Math.max(0, o.timeMs - serverTotal) });
  return out;
}

function timingBar(o, scale, height = 18) {
  const parts = phases(o);
  const width = 1000;
  const bar = svg("svg", { class: "bar", viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", role: "img", "aria-label": parts.map((p) => `${p.label} ${ms(p.dur)}`).join(", ") });
  let x = 0;
  for (const p of parts) {
    const w = scale > 0 ? (p.dur / scale) * width : 0;
    if (w <= 0) continue;
    bar.append(svg("rect", { x: x.toFixed(2), y: 0, width: Math.max(w, 1.5).toFixed(2), height, class: `ph-${p.phase}` }, svg("title", {}, `${p.label}: ${ms(p.dur)}`)));
    x += w;
  }
  return bar;
}

function timingFigure(o) {
  const parts = phases(o);
  const legend = el("ul", { class: "legend" });
  for (const p of parts) legend.append(el("li", {}, el("span", { class: `swatch ph-${p.phase}` }), `${p.label} ${ms(p.dur)}`));
  const fig = el("figure", { class: "timing" }, timingBar(o, Math.max(o.timeMs, 0.001)), legend);
  if (o.serverTiming.length === 0 && !o.error) {
    fig.append(el("figcaption", { class: "muted" }, "The gateway sent no Server-Timing header: Gateway(server_timing=True) or debug=True turns it on."));
  }
  return fig;
}

function remember(o) {
  state.history.unshift(o);
  state.history.length = Math.min(state.history.length, HISTORY);
  renderProfile();
}

function renderProfile() {
  const box = byId("profile");
  if (state.history.length === 0) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  const scale = Math.max(...state.history.map((o) => o.timeMs), 0.001);
  const rows = state.history.map((o) => {
    const server = o.serverTiming.find((m) => m.name === "total");
    return el(
      "li",
      { class: failed(o) ? "failed" : "" },
      el("span", { class: "who" }, `${PROTOCOLS[o.protocol].short} ${o.target}`),
      el("span", { class: "when" }, `${ms(o.timeMs)}${server && server.dur !== null ? ` (server ${ms(server.dur)})` : ""}`),
      timingBar(o, scale, 12),
    );
  });
  const legend = el("ul", { class: "legend" });
  for (const phase of PHASES) legend.append(el("li", {}, el("span", { class: `swatch ph-${phase}` }), PHASE_LABELS[phase]));
  replace(box, el("h2", {}, "Profile: the last calls"), legend, el("ol", { class: "calls" }, ...rows));
}

// --- repeat mode ------------------------------------------------------------------------

async function runRepeat({ service, method, args, n, c, button, box }) {
  state.repeating = true;
  button.textContent = "Stop";
  button.classList.add("running");
  const protocol = byId("protocol").value;
  const creds = credentials();
  const times = new Array(n);
  const server = [];
  let faults = 0;
  let errors = 0;
  let next = 0;
  let done = 0;
  let firstProblem = null;
  const progress = el("p", { class: "muted progress" }, `0 / ${n}`);
  replace(box, el("h3", {}, `Repeat: ${service.name}.${method.name} ${n} times, ${c} at a time, over ${PROTOCOLS[protocol].short}`), progress);
  const started = performance.now();
  const worker = async () => {
    while (state.repeating && next < n) {
      const i = next++;
      const o = await call(session, { protocol, service: service.name, method: method.name, args, credentials: creds, measure: false });
      times[i] = o.timeMs;
      const total = o.serverTiming.find((m) => m.name === "total");
      if (total && total.dur !== null) server.push(total.dur);
      if (o.error) errors++;
      else if (o.fault) faults++;
      if (firstProblem === null && failed(o)) firstProblem = o.error ?? `fault ${o.fault.code}: ${o.fault.message}`;
      done++;
      if (done % 10 === 0 || done === n) progress.textContent = `${done} / ${n}`;
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(c, n) }, worker));
  } finally {
    try {
      performance.clearResourceTimings();
    } catch {
      /* not supported */
    }
    state.repeating = false;
    button.textContent = "Repeat";
    button.classList.remove("running");
  }
  const wall = performance.now() - started;
  const measured = times.filter((t) => t !== undefined);
  const sorted = [...measured].sort((a, b) => a - b);
  const median = percentile(sorted, 0.5);
  const p99 = percentile(sorted, 0.99);
  const mean = sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1);
  const serverSorted = server.sort((a, b) => a - b);
  const stats = el(
    "dl",
    { class: "stats" },
    ...stat("calls", `${measured.length}${measured.length < n ? ` of ${n} (stopped)` : ""}`),
    ...stat("failed", `${faults} fault${faults === 1 ? "" : "s"}, ${errors} error${errors === 1 ? "" : "s"}`, faults + errors > 0 ? "bad" : ""),
    ...stat("wall time", `${ms(wall)} (${((measured.length / wall) * 1000).toFixed(0)} calls/s)`),
    ...stat("min", ms(sorted[0])),
    ...stat("median", ms(median), "median"),
    ...stat("mean", ms(mean)),
    ...stat("p99", ms(p99), "p99"),
    ...stat("max", ms(sorted[sorted.length - 1])),
    // The gateway's own time (Server-Timing "total"), when it reports it.
    ...(serverSorted.length ? stat("server median", ms(percentile(serverSorted, 0.5)), "median") : []),
    ...(serverSorted.length ? stat("server p99", ms(percentile(serverSorted, 0.99)), "p99") : []),
  );
  const parts = [el("h3", {}, `Repeat: ${service.name}.${method.name} ${n} times, ${c} at a time, over ${PROTOCOLS[protocol].short}`), stats, latencyChart(measured, median, p99)];
  if (firstProblem) parts.push(el("div", { class: "problem fault", role: "alert" }, el("strong", {}, "First failure: "), firstProblem));
  replace(box, ...parts);
  document.body.dataset.repeats = String(Number(document.body.dataset.repeats ?? 0) + 1);
}

function stat(name, value, cls = "") {
  return [el("div", {}, el("dt", {}, name), el("dd", { class: cls, "data-stat": name }, value))];
}

/** Each call's time in the order they were made, with the median and the p99 marked. */
function latencyChart(times, median, p99) {
  const W = 640;
  const H = 150;
  const left = 58;
  const right = 8;
  const top = 10;
  const bottom = 22;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  const max = Math.max(...times, 0.001) * 1.05;
  const y = (v) => top + plotH - (v / max) * plotH;
  const chart = svg("svg", { class: "latency", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `latency of ${times.length} calls: median ${ms(median)}, p99 ${ms(p99)}` });
  chart.append(svg("rect", { x: left, y: top, width: plotW, height: plotH, class: "plot" }));
  for (const f of [0, 0.5, 1]) {
    const v = (max / 1.05) * f;
    chart.append(svg("line", { x1: left - 4, x2: left, y1: y(v), y2: y(v), class: "axis" }));
    chart.append(svg("text", { x: left - 6, y: y(v) + 4, class: "tick", "text-anchor": "end" }, ms(v)));
  }
  const step = plotW / Math.max(times.length, 1);
  const w = Math.max(step * 0.8, 0.6);
  times.forEach((t, i) => {
    chart.append(svg("rect", { x: (left + i * step).toFixed(2), y: y(t).toFixed(2), width: w.toFixed(2), height: Math.max(top + plotH - y(t), 0.5).toFixed(2), class: "call" }, svg("title", {}, `call ${i + 1}: ${ms(t)}`)));
  });
  // The marks, labelled on a white ground: the median's at the left, the p99's at the right.
  for (const [v, cls, label, atLeft] of [
    [median, "median", `median ${ms(median)}`, true],
    [p99, "p99", `p99 ${ms(p99)}`, false],
  ]) {
    if (!Number.isFinite(v)) continue;
    chart.append(svg("line", { x1: left, x2: left + plotW, y1: y(v), y2: y(v), class: `mark ${cls}` }));
    const labelY = Math.max(y(v) - 4, top + 11);
    const text = svg("text", { x: atLeft ? left + 6 : left + plotW - 6, y: labelY, class: `mark-label ${cls}`, "text-anchor": atLeft ? "start" : "end" }, label);
    const width = label.length * 6.4 + 8;
    chart.append(svg("rect", { x: atLeft ? left + 2 : left + plotW - 2 - width, y: labelY - 11, width, height: 14, rx: 3, class: "label-ground" }), text);
  }
  chart.append(svg("text", { x: left, y: H - 6, class: "tick" }, "call 1"));
  chart.append(svg("text", { x: left + plotW, y: H - 6, class: "tick", "text-anchor": "end" }, `call ${times.length}`));
  return el("figure", { class: "chart" }, chart, el("figcaption", { class: "muted" }, "Each call's time (request sent to answer read), in the order the calls were made."));
}

// --- start ------------------------------------------------------------------------------

function showFatal(message) {
  const list = byId("service-list");
  replace(list, el("div", { class: "problem error", role: "alert" }, message));
  list.removeAttribute("aria-busy");
}

function selectFromHash() {
  const hash = decodeURIComponent(location.hash.slice(1));
  const dot = hash.lastIndexOf(".");
  if (dot < 0) return false;
  const service = state.services.get(hash.slice(0, dot));
  const method = service?.methods.find((m) => m.name === hash.slice(dot + 1));
  if (!method) return false;
  select(service, method);
  return true;
}

function renderWelcome() {
  const doc = state.doc;
  const methods = doc.services.reduce((n, s) => n + s.methods.length, 0);
  const facts = [`${doc.services.length} service${doc.services.length === 1 ? "" : "s"}, ${methods} method${methods === 1 ? "" : "s"}`];
  if (doc.messaging && Array.isArray(doc.messaging.destinations)) facts.push(`messaging destinations: ${doc.messaging.destinations.map((d) => d.name).join(", ")}`);
  if (doc.assets && doc.assets.path) facts.push(`assets under ${doc.assets.path}/`);
  byId("gateway-facts").textContent = facts.join(" · ");
}

async function start() {
  const saved = localStorage.getItem("amfkit-browser-protocol");
  if (saved && saved in PROTOCOLS) byId("protocol").value = saved;
  byId("gateway-url").textContent = new URL(gatewayPath, location.href).href;
  byId("filter").addEventListener("input", () => state.doc && renderServices());
  byId("settings").addEventListener("submit", (event) => event.preventDefault()); // Enter in a field: nothing to send
  byId("protocol").addEventListener("change", () => {
    localStorage.setItem("amfkit-browser-protocol", byId("protocol").value);
    state.updateVia?.();
  });
  window.addEventListener("hashchange", () => state.doc && selectFromHash());

  const codec = import("./amfkit-codec.js").then(
    (amf) => {
      setCallCodec(amf);
      setValueCodec(amf);
    },
    (e) => {
      state.codecError = e;
      for (const o of byId("protocol").options) if (PROTOCOLS[o.value].amf) o.disabled = true;
      byId("protocol").value = "jsonrpc";
      byId("codec-note").textContent = `The AMF codec (amfkit-codec.js) did not load, so only JSON-RPC works: ${e.message}`;
      byId("codec-note").hidden = false;
    },
  );
  let response;
  try {
    response = await fetch(gatewayPath, { headers: { accept: "application/json" }, cache: "no-cache" });
  } catch (e) {
    showFatal(`Could not reach the gateway at ${gatewayPath}: ${e.message}`);
    return;
  }
  if (!response.ok) {
    showFatal(`GET ${gatewayPath} answered ${response.status} ${response.statusText}: this page needs the gateway's discovery document.`);
    return;
  }
  try {
    state.doc = await response.json();
  } catch (e) {
    showFatal(`GET ${gatewayPath} did not answer JSON: ${e.message}`);
    return;
  }
  if (!state.doc || !Array.isArray(state.doc.services)) {
    showFatal(`GET ${gatewayPath} answered JSON without a "services" list.`);
    return;
  }
  for (const s of state.doc.services) state.services.set(s.name, s);
  await codec;
  renderWelcome();
  renderServices();
  if (!selectFromHash()) byId("welcome").hidden = false;
  document.body.dataset.ready = "true";
}

start().catch((e) => showFatal(`The page failed to start: ${e && e.message ? e.message : e}`));
