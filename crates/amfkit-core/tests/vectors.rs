//! The shared byte vectors of `fixtures/` (see `fixtures/README.md`), checked through the
//! `Value` model. `tests/codec/test_vectors.py` checks the same files through the Python
//! API.
//!
//! For every valid vector: it decodes to the manifest's value (converted to the
//! canonical typed JSON); if "exact", `Value::to_amf*` gives the same bytes; every strict
//! prefix (the truncated twins) fails with an offset inside the input; a trailing byte
//! is refused. Every must-fail vector fails with the manifest's reason in its message.
//! Each test runs over the whole manifest and reports every failing vector at once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use amfkit_core::{Decoder, Limits, Value, ValueVisitor, XmlKind};
use serde_json::{json, Map, Value as J};

// ------------------------------------------------------------------------------ manifest

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn manifest() -> Vec<J> {
    let text =
        std::fs::read_to_string(fixtures().join("vectors.json")).expect("fixtures/vectors.json");
    match serde_json::from_str(&text).expect("vectors.json is JSON") {
        J::Array(entries) => entries,
        _ => panic!("vectors.json is not a list"),
    }
}

struct Entry {
    name: String,
    version: u8,
    data: Vec<u8>,
    stream: bool,
    boundaries: Vec<usize>,
    value: Option<J>,
    exact: bool,
    error: Option<String>,
}

fn entries() -> Vec<Entry> {
    manifest()
        .into_iter()
        .map(|e| {
            let file = e["file"].as_str().expect("file").to_owned();
            Entry {
                name: file.trim_end_matches(".amf").to_owned(),
                version: e["version"].as_u64().expect("version") as u8,
                data: std::fs::read(fixtures().join(&file))
                    .unwrap_or_else(|err| panic!("{file}: {err}")),
                stream: e["stream"].as_bool().unwrap_or(false),
                boundaries: e["boundaries"]
                    .as_array()
                    .map(|b| b.iter().map(|x| x.as_u64().unwrap() as usize).collect())
                    .unwrap_or_default(),
                value: e.get("value").map(normalize),
                exact: e["exact"].as_bool().unwrap_or(false),
                error: e["error"].as_str().map(str::to_owned),
            }
        })
        .collect()
}

fn valid() -> Vec<Entry> {
    entries()
        .into_iter()
        .filter(|e| e.error.is_none())
        .collect()
}

fn decode(version: u8, data: &[u8]) -> amfkit_core::Result<Value> {
    if version == 0 {
        Value::from_amf0(data)
    } else {
        Value::from_amf3(data)
    }
}

fn decode_all(version: u8, data: &[u8]) -> amfkit_core::Result<Vec<Value>> {
    if version == 0 {
        Value::all_from_amf0(data, Limits::DEFAULT)
    } else {
        Value::all_from_amf3(data, Limits::DEFAULT)
    }
}

/// Decode an entry's bytes: one value, or a stream's values.
fn decode_entry(e: &Entry, data: &[u8]) -> amfkit_core::Result<Vec<Value>> {
    if e.stream {
        decode_all(e.version, data)
    } else {
        decode(e.version, data).map(|v| vec![v])
    }
}

fn canonical_entry(e: &Entry, values: &[Value]) -> J {
    let c = canonical(values, e.version);
    if e.stream {
        J::Array(c)
    } else {
        c.into_iter().next().unwrap()
    }
}

/// Fail with every message at once.
fn report(test: &str, failures: Vec<String>) {
    if !failures.is_empty() {
        panic!(
            "{test}: {} vector(s) failed:\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    }
}

// ------------------------------------------------------------------ canonical typed JSON

/// A double as the notation writes it.
fn num(x: f64) -> J {
    let bits = x.to_bits();
    if x.is_nan() {
        return if bits == 0x7ff8_0000_0000_0000 {
            json!("NaN")
        } else {
            json!(format!("NaN:{bits:016x}"))
        };
    }
    if x.is_infinite() {
        return json!(if x > 0.0 { "Infinity" } else { "-Infinity" });
    }
    if x == 0.0 && x.is_sign_negative() {
        return json!("-0");
    }
    if x.fract() == 0.0 && x.abs() < 9.2e18 {
        return json!(x as i64);
    }
    json!(x)
}

/// The manifest as parsed: integral floats written as `1.0` become integers, as `num`
/// gives them.
fn normalize(j: &J) -> J {
    match j {
        J::Number(n) if n.is_f64() => num(n.as_f64().unwrap()),
        J::Array(a) => J::Array(a.iter().map(normalize).collect()),
        J::Object(o) => J::Object(o.iter().map(|(k, v)| (k.clone(), normalize(v))).collect()),
        other => other.clone(),
    }
}

type Slot = (u8, u32);

/// Turns decoded `Value`s into the notation. References in a `Value` are table
/// indices; the converter replays the decoder's registrations (AMF0: objects, typed
/// objects, ECMA and strict arrays, dates and XML documents, as Flash Player numbers
/// them; AMF3: every value of the object table) to resolve
/// them, then gives the containers seen more than once an "id" at their first
/// occurrence in the notation's order, and {"t": "ref"} after.
struct Canon<'v> {
    slots: HashMap<Slot, &'v Value>,
    slot_of: HashMap<*const Value, Slot>,
    counts: HashMap<Slot, usize>,
    next: [u32; 2],
    ids: HashMap<Slot, u32>,
}

fn is_container(v: &Value) -> bool {
    matches!(
        v,
        Value::Array { .. }
            | Value::EcmaArray { .. }
            | Value::Object { .. }
            | Value::ObjectVector { .. }
            | Value::IntVector { .. }
            | Value::UintVector { .. }
            | Value::DoubleVector { .. }
            | Value::Dictionary { .. }
    )
}

fn table(ctx: u8) -> usize {
    (ctx == 3) as usize
}

impl<'v> Canon<'v> {
    fn new(roots: &'v [Value], version: u8) -> Self {
        let mut c = Canon {
            slots: HashMap::new(),
            slot_of: HashMap::new(),
            counts: HashMap::new(),
            next: [0, 0],
            ids: HashMap::new(),
        };
        for r in roots {
            c.register(r, version);
        }
        c
    }

    fn add(&mut self, v: &'v Value, ctx: u8) {
        let slot = (ctx, self.next[table(ctx)]);
        self.next[table(ctx)] += 1;
        self.slots.insert(slot, v);
        self.slot_of.insert(v as *const Value, slot);
        *self.counts.entry(slot).or_default() += 1;
    }

    /// Pass 1, in wire order: the table registrations the decoder made.
    fn register(&mut self, v: &'v Value, ctx: u8) {
        match v {
            Value::Reference(i) => *self.counts.entry((ctx, *i)).or_default() += 1,
            Value::Amf3(inner) => self.register(inner, 3),
            Value::Array { assoc, dense } => {
                self.add(v, ctx);
                assoc.iter().for_each(|(_, x)| self.register(x, ctx));
                dense.iter().for_each(|x| self.register(x, ctx));
            }
            Value::EcmaArray { entries: items, .. } => {
                self.add(v, ctx);
                items.iter().for_each(|(_, x)| self.register(x, ctx));
            }
            Value::Object {
                sealed,
                dynamic,
                external,
                ..
            } => {
                self.add(v, ctx);
                sealed.iter().for_each(|x| self.register(x, ctx));
                dynamic.iter().for_each(|(_, x)| self.register(x, ctx));
                if let Some(x) = external.as_ref().and_then(|b| b.value()) {
                    self.register(x, ctx);
                }
            }
            Value::ObjectVector { items, .. } => {
                self.add(v, ctx);
                items.iter().for_each(|x| self.register(x, ctx));
            }
            Value::Dictionary { entries, .. } => {
                self.add(v, ctx);
                for (k, x) in entries {
                    self.register(k, ctx);
                    self.register(x, ctx);
                }
            }
            // Flash Player gives AMF0 dates and XML documents a table entry too.
            Value::Date { .. } | Value::Xml { .. } => self.add(v, ctx),
            Value::ByteArray(_)
            | Value::IntVector { .. }
            | Value::UintVector { .. }
            | Value::DoubleVector { .. }
                if ctx == 3 =>
            {
                self.add(v, ctx)
            }
            _ => {}
        }
    }

    /// Pass 2, in the notation's order.
    fn emit(&mut self, v: &'v Value, ctx: u8) -> J {
        let (target, slot) = match v {
            Value::Reference(i) => match self.slots.get(&(ctx, *i)) {
                Some(t) => (*t, Some((ctx, *i))),
                None => return json!({"t": "unresolved-reference", "table": ctx, "index": i}),
            },
            _ => (v, self.slot_of.get(&(v as *const Value)).copied()),
        };
        let mut id = None;
        if let Some(slot) = slot {
            if is_container(target) && self.counts[&slot] > 1 {
                if let Some(&n) = self.ids.get(&slot) {
                    return json!({"t": "ref", "id": n});
                }
                let n = self.ids.len() as u32 + 1;
                self.ids.insert(slot, n);
                id = Some(n);
            }
        }
        let mut out = self.body(target, ctx);
        if let (Some(n), J::Object(map)) = (id, &mut out) {
            map.insert("id".into(), json!(n));
        }
        out
    }

    fn pairs(&mut self, items: &'v [(String, Value)], ctx: u8) -> J {
        J::Array(
            items
                .iter()
                .map(|(k, x)| json!([k, self.emit(x, ctx)]))
                .collect(),
        )
    }

    fn body(&mut self, v: &'v Value, ctx: u8) -> J {
        match v {
            Value::Undefined | Value::Unsupported => json!({"t": "undefined"}),
            Value::Null => json!({"t": "null"}),
            Value::Bool(b) => json!({"t": "bool", "v": b}),
            Value::Integer(i) => json!({"t": "int", "v": i}),
            Value::Number(x) => json!({"t": "number", "v": num(*x)}),
            Value::String(s) => json!({"t": "string", "v": s}),
            Value::Date { millis, tz } => {
                json!({"t": "date", "ms": num(*millis), "tz": tz.unwrap_or(0)})
            }
            Value::Xml {
                kind: XmlKind::Document,
                text,
            } => json!({"t": "xmldoc", "v": text}),
            Value::Xml {
                kind: XmlKind::E4x,
                text,
            } => json!({"t": "xml", "v": text}),
            Value::ByteArray(b) => {
                json!({"t": "bytes", "hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>()})
            }
            Value::IntVector { fixed, items } => {
                json!({"t": "vector", "kind": "int", "fixed": fixed, "items": items})
            }
            Value::UintVector { fixed, items } => {
                json!({"t": "vector", "kind": "uint", "fixed": fixed, "items": items})
            }
            Value::DoubleVector { fixed, items } => {
                let items: Vec<J> = items.iter().map(|x| num(*x)).collect();
                json!({"t": "vector", "kind": "number", "fixed": fixed, "items": items})
            }
            Value::ObjectVector {
                fixed,
                type_name,
                items,
            } => {
                let items: Vec<J> = items.iter().map(|x| self.emit(x, ctx)).collect();
                json!({"t": "vector", "kind": "object", "fixed": fixed, "type": type_name, "items": items})
            }
            Value::Array { assoc, dense } => {
                let dense: Vec<J> = dense.iter().map(|x| self.emit(x, ctx)).collect();
                let assoc = self.pairs(assoc, ctx);
                json!({"t": "array", "dense": dense, "assoc": assoc})
            }
            Value::EcmaArray { entries: items, .. } => {
                json!({"t": "ecma", "items": self.pairs(items, ctx)})
            }
            Value::Object {
                traits,
                sealed,
                dynamic,
                external,
            } => {
                if let Some(body) = external.as_ref().and_then(|b| b.value()) {
                    return json!({"t": "external", "class": traits.class_name, "v": self.emit(body, ctx)});
                }
                let sealed: Vec<J> = traits
                    .sealed
                    .iter()
                    .zip(sealed)
                    .map(|(k, x)| json!([k, self.emit(x, ctx)]))
                    .collect();
                let dynamic = if traits.dynamic || !dynamic.is_empty() {
                    self.pairs(dynamic, ctx)
                } else {
                    J::Null
                };
                json!({"t": "object", "class": traits.class_name, "sealed": sealed, "dynamic": dynamic})
            }
            Value::Dictionary { weak_keys, entries } => {
                let items: Vec<J> = entries
                    .iter()
                    .map(|(k, x)| json!([self.emit(k, ctx), self.emit(x, ctx)]))
                    .collect();
                json!({"t": "dict", "weak": weak_keys, "items": items})
            }
            Value::Amf3(inner) => self.emit(inner, 3),
            Value::Reference(_) => self.emit(v, ctx),
        }
    }
}

/// The canonical form of top-level values sharing one reference context.
fn canonical(values: &[Value], version: u8) -> Vec<J> {
    let mut c = Canon::new(values, version);
    values.iter().map(|v| c.emit(v, version)).collect()
}

/// Drop the "id"s no {"t": "ref"} uses and renumber the rest in order of appearance
/// (for comparing a prefix of a stream's values).
fn restrict_ids(values: &[J]) -> J {
    fn scan(j: &J, used: &mut Vec<u64>) {
        match j {
            J::Object(o) => {
                if o.get("t") == Some(&json!("ref")) {
                    used.push(o["id"].as_u64().unwrap());
                }
                o.values().for_each(|x| scan(x, used));
            }
            J::Array(a) => a.iter().for_each(|x| scan(x, used)),
            _ => {}
        }
    }
    fn fix(j: &J, used: &[u64], new: &mut HashMap<u64, u64>) -> J {
        match j {
            J::Object(o) => {
                let is_ref = o.get("t") == Some(&json!("ref"));
                let mut out = Map::new();
                for (k, x) in o {
                    if k == "id" {
                        let old = x.as_u64().unwrap();
                        if is_ref {
                            out.insert(k.clone(), json!(new[&old]));
                        } else if used.contains(&old) {
                            let n = new.len() as u64 + 1;
                            new.insert(old, n);
                            out.insert(k.clone(), json!(n));
                        }
                    } else {
                        out.insert(k.clone(), fix(x, used, new));
                    }
                }
                J::Object(out)
            }
            J::Array(a) => J::Array(a.iter().map(|x| fix(x, used, new)).collect()),
            other => other.clone(),
        }
    }
    let mut used = Vec::new();
    values.iter().for_each(|v| scan(v, &mut used));
    let mut new = HashMap::new();
    J::Array(values.iter().map(|v| fix(v, &used, &mut new)).collect())
}

// ------------------------------------------------------------------------------- tests

#[test]
fn manifest_has_both_versions_and_must_fail_vectors() {
    let all = entries();
    for version in [0u8, 3] {
        let ok = all
            .iter()
            .filter(|e| e.version == version && e.error.is_none())
            .count();
        let bad = all
            .iter()
            .filter(|e| e.version == version && e.error.is_some())
            .count();
        assert!(
            ok >= 40 && bad >= 10,
            "amf{version}: {ok} valid, {bad} must-fail"
        );
    }
}

#[test]
fn vectors_decode_to_manifest_values() {
    let mut failures = Vec::new();
    for e in valid() {
        match decode_entry(&e, &e.data) {
            Ok(values) => {
                let got = canonical_entry(&e, &values);
                let want = e.value.clone().unwrap();
                if got != want {
                    failures.push(format!("{}: got {got}, want {want}", e.name));
                }
            }
            Err(err) => failures.push(format!("{}: {err}", e.name)),
        }
    }
    report("decode", failures);
}

#[test]
fn exact_vectors_reencode_byte_for_byte() {
    let mut failures = Vec::new();
    for e in valid() {
        let Ok(values) = decode_entry(&e, &e.data) else {
            continue;
        };
        let out = match (e.version, e.stream) {
            (0, true) => Value::all_to_amf0(&values),
            (_, true) => Value::all_to_amf3(&values),
            (0, false) => values[0].to_amf0(),
            (_, false) => values[0].to_amf3(),
        };
        let out = match out {
            Ok(out) => out,
            Err(err) => {
                failures.push(format!("{}: encode failed: {err}", e.name));
                continue;
            }
        };
        if e.exact {
            if out != e.data {
                failures.push(format!(
                    "{}: wrote {}, want {}",
                    e.name,
                    hex(&out),
                    hex(&e.data)
                ));
            }
        } else if out == e.data {
            failures.push(format!(
                "{}: re-encodes byte for byte, mark it exact",
                e.name
            ));
        } else {
            // Not byte-exact, but the same value comes back.
            match decode_entry(&e, &out) {
                Ok(again) if canonical_entry(&e, &again) == canonical_entry(&e, &values) => {}
                Ok(again) => failures.push(format!(
                    "{}: re-encoding changed the value to {}",
                    e.name,
                    canonical_entry(&e, &again)
                )),
                Err(err) => failures.push(format!(
                    "{}: re-encoded bytes {} fail: {err}",
                    e.name,
                    hex(&out)
                )),
            }
        }
    }
    report("exact", failures);
}

#[test]
fn every_strict_prefix_fails() {
    let mut failures = Vec::new();
    for e in valid() {
        let want = e.value.clone().unwrap();
        for k in 0..e.data.len() {
            let prefix = &e.data[..k];
            if e.stream && (k == 0 || e.boundaries.contains(&k)) {
                // A prefix ending on a value boundary is the shorter stream.
                let count = e.boundaries.iter().filter(|&&b| b <= k).count();
                match decode_all(e.version, prefix) {
                    Ok(values) => {
                        let got = J::Array(canonical(&values, e.version));
                        let want = restrict_ids(&want.as_array().unwrap()[..count]);
                        if got != want {
                            failures.push(format!("{} prefix {k}: got {got}, want {want}", e.name));
                        }
                    }
                    Err(err) => failures.push(format!("{} prefix {k}: {err}", e.name)),
                }
                continue;
            }
            let result = if e.stream {
                decode_all(e.version, prefix).map(|_| ())
            } else {
                decode(e.version, prefix).map(|_| ())
            };
            match result {
                Ok(()) => {
                    failures.push(format!(
                        "{} prefix {k} of {}: decoded without error",
                        e.name,
                        e.data.len()
                    ));
                    break;
                }
                Err(err) if err.offset() > k => {
                    failures.push(format!(
                        "{} prefix {k}: offset {} beyond the input",
                        e.name,
                        err.offset()
                    ));
                    break;
                }
                Err(_) => {}
            }
        }
    }
    report("prefixes", failures);
}

#[test]
fn a_trailing_byte_is_refused_unless_allowed() {
    let mut failures = Vec::new();
    for e in valid().into_iter().filter(|e| !e.stream) {
        let mut data = e.data.clone();
        data.push(0x05);
        match decode(e.version, &data) {
            Ok(_) => failures.push(format!("{}: a trailing byte was accepted", e.name)),
            Err(err) if !err.to_string().contains("trailing") || err.offset() != e.data.len() => {
                failures.push(format!("{}: {err}", e.name))
            }
            Err(_) => {}
        }
        // Read as the first value of a longer input: the same value, ending at the same place.
        let mut visitor = ValueVisitor;
        let mut de = Decoder::new(&data, Limits::DEFAULT);
        let value = if e.version == 0 {
            de.read_amf0(&mut visitor)
        } else {
            de.read_amf3(&mut visitor)
        };
        match value {
            Ok(v) if de.position() == e.data.len() => {
                let got = canonical_entry(&e, &[v]);
                if Some(&got) != e.value.as_ref() {
                    failures.push(format!("{}: with a trailing byte got {got}", e.name));
                }
            }
            Ok(_) => failures.push(format!(
                "{}: stopped at {} not {}",
                e.name,
                de.position(),
                e.data.len()
            )),
            Err(err) => failures.push(format!("{}: {err}", e.name)),
        }
    }
    report("trailing", failures);
}

#[test]
fn must_fail_vectors_fail_with_their_reason() {
    let mut failures = Vec::new();
    for e in entries().into_iter().filter(|e| e.error.is_some()) {
        let reason = e.error.as_deref().unwrap();
        match decode(e.version, &e.data) {
            Ok(v) => failures.push(format!("{}: decoded to {v:?}", e.name)),
            Err(err) => {
                let text = err.to_string();
                if !text.contains(reason) {
                    failures.push(format!("{}: {text:?} does not contain {reason:?}", e.name));
                }
                if err.offset() > e.data.len() {
                    failures.push(format!(
                        "{}: offset {} beyond the input",
                        e.name,
                        err.offset()
                    ));
                }
            }
        }
    }
    report("must-fail", failures);
}

#[test]
fn empty_input_fails_and_is_an_empty_stream() {
    for version in [0u8, 3] {
        let err = decode(version, &[]).unwrap_err();
        assert_eq!(err.offset(), 0);
        assert!(err.to_string().contains("unexpected end of input"), "{err}");
        assert!(decode_all(version, &[]).unwrap().is_empty());
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
