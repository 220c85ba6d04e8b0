//! An exact document (docs/cli.md, "The exact JSON of packets") to its `Value`: tagged
//! values to what they name, plain JSON to what the default writing writes. A
//! `{"__ref__": path}` names a value met before it in the same reference context, found
//! by its JSON path; the walk numbers the table entries as the writer will (pre-order,
//! per table). A document that describes no AMF is a ValueError naming its JSON path.

use std::sync::Arc;

use amfkit_core::date::days_from_civil;
use amfkit_core::flex::{small_form_field, small_form_levels};
use amfkit_core::packet::PartLayout;
use amfkit_core::value::{ExternalBody, FlagLevel};
use amfkit_core::{Limits, Traits, Value, XmlKind};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use rustc_hash::FxHashMap;

use super::to_doc::canonical_flags;
use super::{push_index, push_key};

/// A packet read from its document: `(name, must_understand, value, layout)` per header
/// and `(target, response, value, layout)` per body.
pub struct PacketDoc {
    pub version: u16,
    pub headers: Vec<(String, bool, Value, PartLayout)>,
    pub bodies: Vec<(String, String, Value, PartLayout)>,
}

/// `{"__packet__": version, "headers": [...], "bodies": [...]}` to its parts.
pub fn packet(doc: &Bound<'_, PyAny>) -> PyResult<PacketDoc> {
    let d = doc
        .cast::<PyDict>()
        .map_err(|_| err("a packet's document is an object with \"__packet__\"", "$"))?;
    let version: u16 = match d.get_item("__packet__")? {
        Some(v) => v.extract().map_err(|_| {
            err(
                "__packet__ is the packet's version, 0, 1 or 3",
                "$.__packet__",
            )
        })?,
        None => {
            return Err(err(
                "a packet's document has \"__packet__\" (its version)",
                "$",
            ))
        }
    };
    if !matches!(version, 0 | 1 | 3) {
        return Err(err(
            "__packet__ is the packet's version, 0, 1 or 3",
            "$.__packet__",
        ));
    }
    check_keys(d, &["__packet__", "headers", "bodies"], "$")?;
    let mut out = PacketDoc {
        version,
        headers: Vec::new(),
        bodies: Vec::new(),
    };
    for (i, part) in list_at(d, "headers")?.iter().enumerate() {
        let path = format!("$.headers[{i}]");
        let p = part.cast::<PyDict>().map_err(|_| {
            err(
                "a header is an object with name, must_understand and value",
                &path,
            )
        })?;
        check_keys(
            p,
            &[
                "name",
                "must_understand",
                "value",
                "length",
                "inline_strings",
            ],
            &path,
        )?;
        let name = text_at(p, "name", &path)?;
        let must_understand = match p.get_item("must_understand")? {
            Some(b) => b
                .cast::<PyBool>()
                .map_err(|_| {
                    err(
                        "must_understand is true or false",
                        &format!("{path}.must_understand"),
                    )
                })?
                .is_true(),
            None => false,
        };
        let (value, layout) = part_value(p, &path)?;
        out.headers.push((name, must_understand, value, layout));
    }
    for (i, part) in list_at(d, "bodies")?.iter().enumerate() {
        let path = format!("$.bodies[{i}]");
        let p = part
            .cast::<PyDict>()
            .map_err(|_| err("a body is an object with target, response and value", &path))?;
        check_keys(
            p,
            &["target", "response", "value", "length", "inline_strings"],
            &path,
        )?;
        let target = text_at(p, "target", &path)?;
        let response = text_at(p, "response", &path)?;
        let (value, layout) = part_value(p, &path)?;
        out.bodies.push((target, response, value, layout));
    }
    Ok(out)
}

/// The documents of a stream's values (`stream`, one reference context) or of one
/// value, to their values.
pub fn values(docs: Vec<Bound<'_, PyAny>>, amf3: bool, stream: bool) -> PyResult<Vec<Value>> {
    let mut w = Walk::new(String::from("$"));
    let mut out = Vec::with_capacity(docs.len());
    for (i, doc) in docs.iter().enumerate() {
        let len = w.path.len();
        if stream {
            push_index(&mut w.path, i);
        }
        out.push(w.value(doc, amf3)?);
        w.path.truncate(len);
    }
    Ok(out)
}

fn part_value(p: &Bound<'_, PyDict>, path: &str) -> PyResult<(Value, PartLayout)> {
    let Some(doc) = p.get_item("value")? else {
        return Err(err("a part has a value", path));
    };
    let mut w = Walk::new(format!("{path}.value"));
    let value = w.value(&doc, false)?;
    let length = match p.get_item("length")? {
        Some(n) if !n.is_none() => Some(n.extract::<u32>().map_err(|_| {
            err(
                "length is the length field as written, 0 to 4294967295",
                &format!("{path}.length"),
            )
        })?),
        _ => None,
    };
    let inline_strings = match p.get_item("inline_strings")? {
        Some(b) => b.is_truthy()?,
        None => false,
    };
    Ok((
        value,
        PartLayout {
            length,
            inline_strings,
            ..PartLayout::default()
        },
    ))
}

fn err(message: &str, path: &str) -> PyErr {
    PyValueError::new_err(format!("{message}, at {path}"))
}

fn check_keys(d: &Bound<'_, PyDict>, allowed: &[&str], path: &str) -> PyResult<()> {
    for k in d.keys() {
        let ok = k
            .cast::<PyString>()
            .ok()
            .and_then(|s| s.to_str().ok().map(|s| allowed.contains(&s)))
            .unwrap_or(false);
        if !ok {
            return Err(err(
                &format!(
                    "unexpected key {} (expected {})",
                    k.repr()?,
                    allowed.join(", ")
                ),
                path,
            ));
        }
    }
    Ok(())
}

fn list_at<'py>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Bound<'py, PyList>> {
    match d.get_item(key)? {
        None => Ok(PyList::empty(d.py())),
        Some(v) => v
            .cast_into::<PyList>()
            .map_err(|_| err(&format!("{key} is a list"), &format!("$.{key}"))),
    }
}

fn text_at(d: &Bound<'_, PyDict>, key: &str, path: &str) -> PyResult<String> {
    match d.get_item(key)? {
        Some(v) => v
            .cast::<PyString>()
            .map_err(|_| err(&format!("{key} is a string"), &format!("{path}.{key}")))?
            .to_str()
            .map(str::to_owned),
        None => Err(err(&format!("a part has a {key}"), path)),
    }
}

/// Which traits definition an object of this content shares: the latest written.
type TraitsKey = (String, Vec<String>, bool, bool);

struct Walk {
    path: String,
    depth: u32,
    /// The JSON path of each registered value, to its table and index.
    refs: FxHashMap<String, (bool, u32)>,
    next0: u32,
    next3: u32,
    traits: FxHashMap<TraitsKey, Arc<Traits>>,
}

impl Walk {
    fn new(path: String) -> Self {
        Walk {
            path,
            depth: 0,
            refs: FxHashMap::default(),
            next0: 0,
            next3: 0,
            traits: FxHashMap::default(),
        }
    }

    fn fail(&self, message: impl AsRef<str>) -> PyErr {
        err(message.as_ref(), &self.path)
    }

    /// Give the value at the current path its entry in the table of its context.
    fn register(&mut self, amf3: bool) {
        let next = if amf3 {
            &mut self.next3
        } else {
            &mut self.next0
        };
        let index = *next;
        *next += 1;
        self.refs.insert(self.path.clone(), (amf3, index));
    }

    fn at_key(&mut self, key: &str, node: &Bound<'_, PyAny>, amf3: bool) -> PyResult<Value> {
        let len = self.path.len();
        push_key(&mut self.path, key);
        let r = self.value(node, amf3);
        self.path.truncate(len);
        r
    }

    fn at_index(&mut self, i: usize, node: &Bound<'_, PyAny>, amf3: bool) -> PyResult<Value> {
        let len = self.path.len();
        push_index(&mut self.path, i);
        let r = self.value(node, amf3);
        self.path.truncate(len);
        r
    }

    fn value(&mut self, node: &Bound<'_, PyAny>, amf3: bool) -> PyResult<Value> {
        if self.depth >= Limits::DEPTH_CEILING {
            return Err(self.fail(format!("nesting deeper than {}", Limits::DEPTH_CEILING)));
        }
        self.depth += 1;
        let r = self.value_inner(node, amf3);
        self.depth -= 1;
        r
    }

    fn value_inner(&mut self, node: &Bound<'_, PyAny>, amf3: bool) -> PyResult<Value> {
        if node.is_none() {
            return Ok(Value::Null);
        }
        if let Ok(b) = node.cast::<PyBool>() {
            return Ok(Value::Bool(b.is_true()));
        }
        if node.is_instance_of::<PyInt>() {
            return self.int(node, amf3);
        }
        if let Ok(f) = node.cast::<PyFloat>() {
            return Ok(Value::Number(f.value()));
        }
        if let Ok(s) = node.cast::<PyString>() {
            return Ok(Value::String(s.to_str()?.to_owned()));
        }
        if let Ok(list) = node.cast::<PyList>() {
            self.register(amf3);
            let dense = self.items(list, amf3)?;
            return Ok(Value::Array {
                assoc: vec![],
                dense,
            });
        }
        let Ok(d) = node.cast::<PyDict>() else {
            return Err(self.fail(format!("{} is no JSON value", node.get_type().name()?)));
        };
        self.tagged(d, amf3)
    }

    fn int(&mut self, node: &Bound<'_, PyAny>, amf3: bool) -> PyResult<Value> {
        if amf3 {
            if let Ok(i) = node.extract::<i32>() {
                if (-(1 << 28)..(1 << 28)).contains(&i) {
                    return Ok(Value::Integer(i));
                }
            }
        }
        match node.extract::<f64>() {
            Ok(d) => Ok(Value::Number(d)),
            Err(_) => Err(self.fail("an integer too large for a double")),
        }
    }

    fn items(&mut self, list: &Bound<'_, PyList>, amf3: bool) -> PyResult<Vec<Value>> {
        let mut out = Vec::with_capacity(list.len());
        for (i, x) in list.iter().enumerate() {
            out.push(self.at_index(i, &x, amf3)?);
        }
        Ok(out)
    }

    /// A JSON object: a tagged value, or an object.
    fn tagged(&mut self, d: &Bound<'_, PyDict>, amf3: bool) -> PyResult<Value> {
        let has = |k: &str| d.contains(k).unwrap_or(false);
        let get = |k: &str| d.get_item(k).ok().flatten();
        if has("__ref__") {
            self.closed(d, &["__ref__"])?;
            let target: String = get("__ref__")
                .and_then(|t| t.extract().ok())
                .ok_or_else(|| self.fail("__ref__ is the JSON path of a value met before"))?;
            return match self.refs.get(&target) {
                Some(&(table, index)) if table == amf3 => Ok(Value::Reference(index)),
                Some(_) => Err(self.fail(format!(
                    "__ref__ {target:?} names a value of the other AMF version's table"
                ))),
                None => Err(self.fail(format!(
                    "__ref__ {target:?} names no value met before it in this reference context"
                ))),
            };
        }
        if has("__undefined__") {
            self.closed(d, &["__undefined__"])?;
            return Ok(Value::Undefined);
        }
        if has("__unsupported__") {
            self.closed(d, &["__unsupported__"])?;
            return Ok(Value::Unsupported);
        }
        if has("__float__") {
            self.closed(d, &["__float__", "bits"])?;
            return Ok(Value::Number(self.special_float(d)?));
        }
        if has("__amf3__") {
            self.closed(d, &["__amf3__"])?;
            let inner = get("__amf3__").unwrap();
            let len = self.path.len();
            self.path.push_str(".__amf3__");
            let v = self.value(&inner, true);
            self.path.truncate(len);
            return if amf3 {
                Err(self
                    .fail("__amf3__ switches from AMF0 to AMF3, and this value is AMF3 already"))
            } else {
                Ok(Value::Amf3(Box::new(v?)))
            };
        }
        if has("__ecma__") {
            if amf3 {
                return Err(self.fail("__ecma__ is an AMF0 ECMA array, not an AMF3 value"));
            }
            self.closed(d, &["__ecma__", "length"])?;
            self.register(false);
            let len = self.path.len();
            self.path.push_str(".__ecma__");
            let entries = self.members(&get("__ecma__").unwrap(), false);
            self.path.truncate(len);
            let entries = entries?;
            let length = match get("length") {
                Some(n) => n.extract::<u32>().map_err(|_| {
                    self.fail("length is the ECMA array's count field, 0 to 4294967295")
                })?,
                None => entries.len() as u32,
            };
            return Ok(Value::EcmaArray { length, entries });
        }
        // Everything below exists in AMF3 only: in AMF0 it goes through the AVM+ switch.
        let amf3_only = [
            "__xml__",
            "__bytes__",
            "__vector__",
            "__array__",
            "__dictionary__",
        ]
        .iter()
        .any(|k| has(k))
            || (has("__alias__")
                && ["__external__", "__small__", "__opaque__"]
                    .iter()
                    .any(|k| has(k)));
        if amf3_only && !amf3 {
            return Ok(Value::Amf3(Box::new(self.tagged(d, true)?)));
        }
        if has("__date__") {
            self.closed(d, &["__date__", "tz"])?;
            self.register(amf3);
            let millis = self.date(&get("__date__").unwrap())?;
            let tz = match get("tz") {
                Some(t) => t
                    .extract::<i16>()
                    .map_err(|_| self.fail("tz is the AMF0 time-zone field, in minutes"))?,
                None => 0,
            };
            return Ok(Value::Date {
                millis,
                tz: (!amf3).then_some(tz),
            });
        }
        for (tag, kind) in [
            ("__xml__", XmlKind::E4x),
            ("__xmldocument__", XmlKind::Document),
        ] {
            if has(tag) {
                self.closed(d, &[tag])?;
                self.register(amf3);
                let text: String = get(tag)
                    .and_then(|t| t.extract().ok())
                    .ok_or_else(|| self.fail(format!("{tag} is the XML text")))?;
                return Ok(Value::Xml { kind, text });
            }
        }
        if has("__bytes__") {
            self.closed(d, &["__bytes__"])?;
            self.register(amf3);
            return Ok(Value::ByteArray(
                self.base64(&get("__bytes__").unwrap(), "__bytes__")?,
            ));
        }
        if has("__vector__") {
            self.closed(d, &["__vector__", "items", "fixed", "type"])?;
            self.register(amf3);
            return self.vector(d);
        }
        if has("__array__") {
            self.closed(d, &["__array__", "assoc"])?;
            self.register(amf3);
            // The associative part is written first: its values are numbered first.
            let len = self.path.len();
            self.path.push_str(".assoc");
            let assoc = match get("assoc") {
                Some(a) => self.members(&a, amf3),
                None => Ok(vec![]),
            };
            self.path.truncate(len);
            let assoc = assoc?;
            self.path.push_str(".__array__");
            let dense = match get("__array__").unwrap().cast::<PyList>() {
                Ok(list) => self.items(list, amf3),
                Err(_) => Err(self.fail("__array__ is the list of the dense items")),
            };
            self.path.truncate(len);
            return Ok(Value::Array {
                assoc,
                dense: dense?,
            });
        }
        if has("__dictionary__") {
            self.closed(d, &["__dictionary__", "weak_keys"])?;
            self.register(amf3);
            return self.dictionary(d);
        }
        self.object(d, amf3)
    }

    /// The members of a JSON object, or of a list of `[name, value]` pairs.
    fn members(&mut self, node: &Bound<'_, PyAny>, amf3: bool) -> PyResult<Vec<(String, Value)>> {
        if let Ok(d) = node.cast::<PyDict>() {
            let mut out = Vec::with_capacity(d.len());
            for (k, x) in d.iter() {
                let k: String = k.extract()?;
                let v = self.at_key(&k, &x, amf3)?;
                out.push((k, v));
            }
            return Ok(out);
        }
        let Ok(list) = node.cast::<PyList>() else {
            return Err(self.fail("members are an object, or a list of [name, value] pairs"));
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, pair) in list.iter().enumerate() {
            let len = self.path.len();
            push_index(&mut self.path, i);
            let r = (|| -> PyResult<(String, Value)> {
                let pair = pair
                    .cast::<PyList>()
                    .ok()
                    .filter(|p| p.len() == 2)
                    .ok_or_else(|| self.fail("a member is a [name, value] pair"))?;
                let k: String = pair
                    .get_item(0)?
                    .extract()
                    .map_err(|_| self.fail("a member's name is a string"))?;
                let v = self.at_index(1, &pair.get_item(1)?, amf3)?;
                Ok((k, v))
            })();
            self.path.truncate(len);
            out.push(r?);
        }
        Ok(out)
    }

    fn object(&mut self, d: &Bound<'_, PyDict>, amf3: bool) -> PyResult<Value> {
        const OWN: &[&str] = &[
            "__alias__",
            "__sealed__",
            "__dynamic__",
            "__traits__",
            "__members__",
            "__external__",
            "__small__",
            "__flags__",
            "__opaque__",
        ];
        let get = |k: &str| d.get_item(k).ok().flatten();
        let alias: String = match get("__alias__") {
            Some(a) => a
                .extract()
                .map_err(|_| self.fail("__alias__ is the class name"))?,
            None => String::new(),
        };
        let typed = get("__alias__").is_some();
        for k in d.keys() {
            if let Ok(k) = k.extract::<String>() {
                let reserved = k.starts_with("__") && k.ends_with("__") && k.len() > 4;
                if reserved && !OWN.contains(&k.as_str()) {
                    return Err(self.fail(format!("unexpected key {k:?} in an object")));
                }
                if !typed && OWN.contains(&k.as_str()) && k != "__members__" {
                    return Err(self.fail(format!("{k} belongs to an object with __alias__")));
                }
            }
        }
        let external = ["__external__", "__small__", "__opaque__"]
            .iter()
            .filter(|k| get(k).is_some())
            .count();
        if external > 1 {
            return Err(self.fail("an object has one of __external__, __small__ and __opaque__"));
        }
        let dynamic = match get("__dynamic__") {
            Some(b) => b
                .cast::<PyBool>()
                .map_err(|_| self.fail("__dynamic__ is true or false"))?
                .is_true(),
            None => external == 0,
        };
        let sealed_names: Vec<String> = match get("__sealed__") {
            Some(s) => s
                .extract()
                .map_err(|_| self.fail("__sealed__ is the list of the sealed member names"))?,
            None => vec![],
        };
        let inline = match get("__traits__") {
            None => false,
            Some(t) if t.extract::<String>().ok().as_deref() == Some("inline") => true,
            Some(_) => return Err(self.fail("__traits__ is \"inline\" (traits written again)")),
        };
        let key = (alias.clone(), sealed_names.clone(), dynamic, external == 1);
        let traits = match self.traits.get(&key) {
            Some(t) if !inline => t.clone(),
            _ => {
                let t = Arc::new(Traits {
                    class_name: alias.clone(),
                    sealed: sealed_names.clone(),
                    dynamic,
                    externalizable: external == 1,
                });
                self.traits.insert(key, t.clone());
                t
            }
        };
        self.register(amf3);
        if external == 1 {
            let members = d
                .keys()
                .iter()
                .filter_map(|k| k.extract::<String>().ok())
                .filter(|k| !OWN.contains(&k.as_str()))
                .collect::<Vec<_>>();
            if !members.is_empty() || !sealed_names.is_empty() || get("__members__").is_some() {
                return Err(self.fail("an externalizable object has no members, only its body"));
            }
            let len = self.path.len();
            let body = if let Some(x) = get("__external__") {
                self.path.push_str(".__external__");
                self.value(&x, true)
                    .map(|v| ExternalBody::Value(Box::new(v)))
            } else if let Some(x) = get("__small__") {
                self.path.push_str(".__small__");
                self.small(&alias, &x, get("__flags__").as_ref())
                    .map(ExternalBody::Flags)
            } else {
                self.base64(&get("__opaque__").unwrap(), "__opaque__")
                    .map(ExternalBody::Opaque)
            };
            self.path.truncate(len);
            return Ok(Value::Object {
                traits,
                sealed: vec![],
                dynamic: vec![],
                external: Some(body?),
            });
        }
        if get("__flags__").is_some() {
            return Err(self.fail("__flags__ belongs to a small-form message (__small__)"));
        }
        let members = match get("__members__") {
            Some(m) => {
                let len = self.path.len();
                self.path.push_str(".__members__");
                let r = self.members(&m, amf3);
                self.path.truncate(len);
                r?
            }
            None => {
                let mut out = Vec::new();
                for (k, x) in d.iter() {
                    let k: String = k.extract()?;
                    if OWN.contains(&k.as_str()) {
                        continue;
                    }
                    let v = self.at_key(&k, &x, amf3)?;
                    out.push((k, v));
                }
                out
            }
        };
        // The sealed members in their order, then the rest as dynamic ones.
        let mut sealed = Vec::with_capacity(sealed_names.len());
        let mut rest = members;
        for name in &sealed_names {
            let Some(at) = rest.iter().position(|(k, _)| k == name) else {
                return Err(self.fail(format!("sealed member {name:?} is missing")));
            };
            sealed.push(rest.remove(at).1);
        }
        if !dynamic && !rest.is_empty() && amf3 {
            return Err(self.fail(format!(
                "member {:?} is not sealed, and the traits are not dynamic",
                rest[0].0
            )));
        }
        Ok(Value::Object {
            traits,
            sealed,
            dynamic: rest,
            external: None,
        })
    }

    /// `__small__`: one dict per class level of the message, its values by member name
    /// (Flex's, or `flag{byte}.{bit}`); the flag bytes those names give, or `__flags__`.
    fn small(
        &mut self,
        alias: &str,
        node: &Bound<'_, PyAny>,
        flags: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<FlagLevel>> {
        let Some(level_names) = small_form_levels(alias) else {
            return Err(self.fail(format!(
                "{alias:?} is not a small-form message (DSK, DSA, DSC)"
            )));
        };
        let levels = node
            .cast::<PyList>()
            .map_err(|_| self.fail("__small__ is a list of one object per class level"))?;
        if levels.len() != level_names.len() {
            return Err(self.fail(format!(
                "{alias} has {} class levels, not {}",
                level_names.len(),
                levels.len()
            )));
        }
        let given: Option<Vec<Vec<u8>>> = match flags {
            Some(f) => Some(
                f.extract()
                    .map_err(|_| self.fail("__flags__ is a list of flag bytes per level"))?,
            ),
            None => None,
        };
        let mut out = Vec::with_capacity(levels.len());
        for (i, (level, level_name)) in levels.iter().zip(level_names).enumerate() {
            let len = self.path.len();
            push_index(&mut self.path, i);
            let r = self.small_level(&level, level_name, given.as_ref().and_then(|g| g.get(i)));
            self.path.truncate(len);
            out.push(r?);
        }
        Ok(out)
    }

    fn small_level(
        &mut self,
        level: &Bound<'_, PyAny>,
        level_name: &str,
        given: Option<&Vec<u8>>,
    ) -> PyResult<FlagLevel> {
        let d = level
            .cast::<PyDict>()
            .map_err(|_| self.fail("a class level is an object of its members"))?;
        let mut fields: Vec<((usize, u32), String, Bound<'_, PyAny>)> = Vec::new();
        for (k, x) in d.iter() {
            let name: String = k.extract()?;
            let Some(at) = field_bit(level_name, &name) else {
                return Err(self.fail(format!(
                    "{name:?} is no member of a {level_name}'s small form"
                )));
            };
            fields.push((at, name, x));
        }
        fields.sort_by_key(|f| f.0);
        let mut bits = vec![0u8];
        for ((byte, bit), _, _) in &fields {
            if bits.len() <= *byte {
                bits.resize(byte + 1, 0);
            }
            bits[*byte] |= 1 << bit;
        }
        let flags = match given {
            Some(g) => {
                if canonical_flags(g) != canonical_flags(&bits) {
                    return Err(self.fail("__flags__ do not announce the members given"));
                }
                g.clone()
            }
            None => canonical_flags(&bits),
        };
        let mut values = Vec::with_capacity(fields.len());
        for (_, name, x) in &fields {
            values.push(self.at_key(name, x, true)?);
        }
        Ok(FlagLevel { flags, values })
    }

    fn vector(&mut self, d: &Bound<'_, PyDict>) -> PyResult<Value> {
        let get = |k: &str| d.get_item(k).ok().flatten();
        let kind: String = get("__vector__")
            .and_then(|k| k.extract().ok())
            .ok_or_else(|| {
                self.fail("__vector__ is \"int\", \"uint\", \"number\" or \"object\"")
            })?;
        let fixed = match get("fixed") {
            Some(f) => f.is_truthy()?,
            None => false,
        };
        let items = get("items").unwrap_or_else(|| PyList::empty(d.py()).into_any());
        let items = items
            .cast::<PyList>()
            .map_err(|_| self.fail("a vector's items are a list"))?;
        let len = self.path.len();
        self.path.push_str(".items");
        let r = (|| -> PyResult<Value> {
            Ok(match kind.as_str() {
                "int" => Value::IntVector {
                    fixed,
                    items: items
                        .extract()
                        .map_err(|_| self.fail("Vector.<int> holds 32-bit integers"))?,
                },
                "uint" => Value::UintVector {
                    fixed,
                    items: items
                        .extract()
                        .map_err(|_| self.fail("Vector.<uint> holds 32-bit unsigned integers"))?,
                },
                "number" => {
                    let mut out = Vec::with_capacity(items.len());
                    for (i, x) in items.iter().enumerate() {
                        let l2 = self.path.len();
                        push_index(&mut self.path, i);
                        let r = match x.cast::<PyDict>() {
                            Ok(t) => self.special_float(t),
                            Err(_) => x
                                .extract::<f64>()
                                .map_err(|_| self.fail("Vector.<Number> holds numbers")),
                        };
                        self.path.truncate(l2);
                        out.push(r?);
                    }
                    Value::DoubleVector { fixed, items: out }
                }
                "object" => {
                    let type_name = match get("type") {
                        Some(t) => t
                            .extract()
                            .map_err(|_| self.fail("type is the vector's element type name"))?,
                        None => String::new(),
                    };
                    Value::ObjectVector {
                        fixed,
                        type_name,
                        items: self.items(items, true)?,
                    }
                }
                other => {
                    return Err(self.fail(format!(
                        "__vector__ is \"int\", \"uint\", \"number\" or \"object\", not {other:?}"
                    )))
                }
            })
        })();
        self.path.truncate(len);
        r
    }

    fn dictionary(&mut self, d: &Bound<'_, PyDict>) -> PyResult<Value> {
        let get = |k: &str| d.get_item(k).ok().flatten();
        let weak_keys = match get("weak_keys") {
            Some(w) => w.is_truthy()?,
            None => false,
        };
        let len = self.path.len();
        self.path.push_str(".__dictionary__");
        let r = (|| -> PyResult<Vec<(Value, Value)>> {
            let list = get("__dictionary__")
                .and_then(|l| l.cast_into::<PyList>().ok())
                .ok_or_else(|| self.fail("__dictionary__ is a list of [key, value] pairs"))?;
            let mut out = Vec::with_capacity(list.len());
            for (i, pair) in list.iter().enumerate() {
                let l2 = self.path.len();
                push_index(&mut self.path, i);
                let r = (|| -> PyResult<(Value, Value)> {
                    let pair = pair
                        .cast::<PyList>()
                        .ok()
                        .filter(|p| p.len() == 2)
                        .ok_or_else(|| self.fail("an entry is a [key, value] pair"))?;
                    let k = self.at_index(0, &pair.get_item(0)?, true)?;
                    let v = self.at_index(1, &pair.get_item(1)?, true)?;
                    Ok((k, v))
                })();
                self.path.truncate(l2);
                out.push(r?);
            }
            Ok(out)
        })();
        self.path.truncate(len);
        Ok(Value::Dictionary {
            weak_keys,
            entries: r?,
        })
    }

    /// `{"__float__": "NaN" | "Infinity" | "-Infinity"}`, a NaN with its `bits`.
    fn special_float(&self, d: &Bound<'_, PyDict>) -> PyResult<f64> {
        let text: String = d
            .get_item("__float__")?
            .and_then(|t| t.extract().ok())
            .ok_or_else(|| self.fail("__float__ is \"NaN\", \"Infinity\" or \"-Infinity\""))?;
        let x = match text.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            _ => return Err(self.fail("__float__ is \"NaN\", \"Infinity\" or \"-Infinity\"")),
        };
        match d.get_item("bits")? {
            None => Ok(x),
            Some(b) => {
                let b: String = b
                    .extract()
                    .map_err(|_| self.fail("bits are 16 hex digits"))?;
                let bits = u64::from_str_radix(&b, 16)
                    .ok()
                    .filter(|_| b.len() == 16)
                    .map(f64::from_bits)
                    .filter(|f| f.is_nan())
                    .ok_or_else(|| self.fail("bits are the 16 hex digits of a NaN"))?;
                Ok(bits)
            }
        }
    }

    /// `__date__`: ISO 8601 in UTC (`2024-05-17T12:30:00Z`, `.250Z`, `+00:00`), or the
    /// milliseconds, or "NaN" / "Infinity" / "-Infinity".
    fn date(&self, node: &Bound<'_, PyAny>) -> PyResult<f64> {
        if let Ok(f) = node.extract::<f64>() {
            if !node.is_instance_of::<PyBool>() {
                return Ok(f);
            }
        }
        let text: String = node
            .extract()
            .map_err(|_| self.fail("__date__ is an ISO 8601 date in UTC or milliseconds"))?;
        match text.as_str() {
            "NaN" => return Ok(f64::NAN),
            "Infinity" => return Ok(f64::INFINITY),
            "-Infinity" => return Ok(f64::NEG_INFINITY),
            _ => {}
        }
        parse_iso(&text)
            .ok_or_else(|| self.fail(format!("__date__ {text:?} is not an ISO 8601 date in UTC")))
    }

    fn base64(&self, node: &Bound<'_, PyAny>, tag: &str) -> PyResult<Vec<u8>> {
        let text: String = node
            .extract()
            .map_err(|_| self.fail(format!("{tag} is a base64 string")))?;
        let py = node.py();
        // validate=True: the strict alphabet on every supported CPython (binascii's
        // a2b_base64 takes strict_mode from 3.11 only).
        let kwargs = PyDict::new(py);
        kwargs.set_item("validate", true)?;
        let b = py
            .import("base64")?
            .call_method("b64decode", (text,), Some(&kwargs))
            .map_err(|_| self.fail(format!("{tag} is not valid base64")))?;
        b.extract()
    }

    /// A tagged value's keys must be `allowed` ones.
    fn closed(&self, d: &Bound<'_, PyDict>, allowed: &[&str]) -> PyResult<()> {
        check_keys(d, allowed, &self.path)
    }
}

/// Where a small-form member sits: (flag byte, bit), from Flex's name or
/// `flag{byte}.{bit}`.
fn field_bit(level: &str, name: &str) -> Option<(usize, u32)> {
    for byte in 0..amfkit_core::flex::MAX_FLAG_BYTES {
        for bit in 0..7 {
            if small_form_field(level, byte, bit) == Some(name) {
                return Some((byte, bit));
            }
        }
    }
    let rest = name.strip_prefix("flag")?;
    let (byte, bit) = rest.split_once('.')?;
    let (byte, bit): (usize, u32) = (byte.parse().ok()?, bit.parse().ok()?);
    (byte < amfkit_core::flex::MAX_FLAG_BYTES
        && bit < 7
        && small_form_field(level, byte, bit).is_none())
    .then_some((byte, bit))
}

/// `YYYY-MM-DDTHH:MM:SS[.f{1,6}](Z|+00:00)` to milliseconds.
fn parse_iso(text: &str) -> Option<f64> {
    let body = text
        .strip_suffix('Z')
        .or_else(|| text.strip_suffix('z'))
        .or_else(|| text.strip_suffix("+00:00"))?;
    let (date, time) = body.split_once('T')?;
    let mut d = date.split('-');
    let (y, mo, day): (i32, u32, u32) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    if d.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&day) {
        return None;
    }
    let (hms, frac) = match time.split_once('.') {
        Some((a, b)) => (a, b),
        None => (time, ""),
    };
    let mut t = hms.split(':');
    let (h, mi, s): (u32, u32, u32) = (
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
    );
    if t.next().is_some()
        || h > 23
        || mi > 59
        || s > 59
        || frac.len() > 6
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let micros: u32 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<6}").parse().ok()?
    };
    let days = days_from_civil(y, mo, day);
    let secs = days * 86_400 + (h * 3600 + mi * 60 + s) as i64;
    Some(secs as f64 * 1000.0 + micros as f64 / 1000.0)
}
