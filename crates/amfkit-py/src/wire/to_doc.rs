//! A `Value` (a packet of them, or a stream) to its exact document: JSON-ready Python
//! data in which every value the default writing would write otherwise is tagged
//! (docs/cli.md, "The exact JSON of packets"). References become `{"__ref__": path}`,
//! the JSON path of the entry they refer to, which the walk records as the reader
//! numbered them: in pre-order, per table (AMF0's, AMF3's) and per reference context.

use std::sync::Arc;

use amfkit_core::date;
use amfkit_core::flex::{small_form_field, small_form_levels};
use amfkit_core::packet::{Packet, PartLayout};
use amfkit_core::value::{ExternalBody, FlagLevel};
use amfkit_core::{Traits, Value, XmlKind};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString};
use rustc_hash::{FxHashMap, FxHashSet};

use super::{push_index, push_key, RESERVED};

/// The document of a packet: `{"__packet__": version, "headers": [...], "bodies": [...]}`.
pub fn packet<'py>(py: Python<'py>, p: &Packet<'_, Value>) -> PyResult<Bound<'py, PyAny>> {
    let doc = PyDict::new(py);
    doc.set_item("__packet__", p.version)?;
    let headers = PyList::empty(py);
    for (i, h) in p.headers.iter().enumerate() {
        let mut w = Walk::new(py, format!("$.headers[{i}].value"));
        let d = PyDict::new(py);
        d.set_item("name", h.name)?;
        d.set_item("must_understand", h.must_understand)?;
        d.set_item("value", w.value(&h.value, false)?)?;
        layout(&d, h.layout)?;
        headers.append(d)?;
    }
    doc.set_item("headers", headers)?;
    let bodies = PyList::empty(py);
    for (i, b) in p.bodies.iter().enumerate() {
        let mut w = Walk::new(py, format!("$.bodies[{i}].value"));
        let d = PyDict::new(py);
        d.set_item("target", b.target)?;
        d.set_item("response", b.response)?;
        d.set_item("value", w.value(&b.value, false)?)?;
        layout(&d, b.layout)?;
        bodies.append(d)?;
    }
    doc.set_item("bodies", bodies)?;
    Ok(doc.into_any())
}

/// A part's layout, where it is not the default: the length field as written when it
/// is not the real length, and a writer's habit of never referencing strings.
fn layout(d: &Bound<'_, PyDict>, layout: PartLayout) -> PyResult<()> {
    if let Some(n) = layout.length {
        d.set_item("length", n)?;
    }
    if layout.inline_strings {
        d.set_item("inline_strings", true)?;
    }
    Ok(())
}

/// The document of one value (`stream` false), or the list of a stream's values (one
/// reference context).
pub fn values<'py>(
    py: Python<'py>,
    values: &[Value],
    amf3: bool,
    stream: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let mut w = Walk::new(py, String::from("$"));
    if !stream {
        return w.value(&values[0], amf3);
    }
    let out = PyList::empty(py);
    for (i, v) in values.iter().enumerate() {
        let len = w.path.len();
        push_index(&mut w.path, i);
        out.append(w.value(v, amf3)?)?;
        w.path.truncate(len);
    }
    Ok(out.into_any())
}

/// The content of a traits definition, to tell a definition written inline again from a
/// reference to an earlier one.
type TraitsKey = (String, Vec<String>, bool, bool);

struct Walk<'py> {
    py: Python<'py>,
    /// The JSON path of the node being written.
    path: String,
    /// The JSON path of each entry of the AMF0 and AMF3 reference tables.
    refs0: Vec<String>,
    refs3: Vec<String>,
    /// Traits definitions met (by address) and their contents.
    traits_seen: FxHashSet<usize>,
    traits_content: FxHashMap<TraitsKey, usize>,
    binascii: Option<Bound<'py, PyAny>>,
}

impl<'py> Walk<'py> {
    fn new(py: Python<'py>, path: String) -> Self {
        Walk {
            py,
            path,
            refs0: Vec::new(),
            refs3: Vec::new(),
            traits_seen: FxHashSet::default(),
            traits_content: FxHashMap::default(),
            binascii: None,
        }
    }

    fn register(&mut self, amf3: bool) {
        let path = self.path.clone();
        if amf3 {
            self.refs3.push(path);
        } else {
            self.refs0.push(path);
        }
    }

    fn tagged(&self, tag: &str, value: impl IntoPyObject<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(self.py);
        d.set_item(tag, value)?;
        Ok(d)
    }

    /// `value` below the current path, at member `key` / item `i` / under tag `tag`.
    fn at_key(&mut self, key: &str, v: &Value, amf3: bool) -> PyResult<Bound<'py, PyAny>> {
        let len = self.path.len();
        push_key(&mut self.path, key);
        let r = self.value(v, amf3);
        self.path.truncate(len);
        r
    }

    fn at_index(&mut self, i: usize, v: &Value, amf3: bool) -> PyResult<Bound<'py, PyAny>> {
        let len = self.path.len();
        push_index(&mut self.path, i);
        let r = self.value(v, amf3);
        self.path.truncate(len);
        r
    }

    fn value(&mut self, v: &Value, amf3: bool) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        Ok(match v {
            Value::Undefined => self.tagged("__undefined__", true)?.into_any(),
            Value::Unsupported => self.tagged("__unsupported__", true)?.into_any(),
            Value::Null => py.None().into_bound(py),
            Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
            Value::Integer(i) => i.into_pyobject(py)?.into_any(),
            Value::Number(d) => self.number(*d, !amf3)?,
            Value::String(s) => PyString::new(py, s).into_any(),
            Value::Date { millis, tz } => {
                self.register(amf3);
                let d = self.tagged("__date__", self.date(*millis)?)?;
                if let Some(tz) = tz.filter(|tz| *tz != 0) {
                    d.set_item("tz", tz)?;
                }
                d.into_any()
            }
            Value::Xml { kind, text } => {
                self.register(amf3);
                let tag = match kind {
                    XmlKind::E4x => "__xml__",
                    XmlKind::Document => "__xmldocument__",
                };
                self.tagged(tag, text.as_str())?.into_any()
            }
            Value::ByteArray(b) => {
                self.register(amf3);
                let text = self.base64(b)?;
                self.tagged("__bytes__", text)?.into_any()
            }
            Value::IntVector { fixed, items } => {
                self.register(amf3);
                self.vector("int", *fixed, PyList::new(py, items)?.into_any())?
            }
            Value::UintVector { fixed, items } => {
                self.register(amf3);
                self.vector("uint", *fixed, PyList::new(py, items)?.into_any())?
            }
            Value::DoubleVector { fixed, items } => {
                self.register(amf3);
                let list = PyList::empty(py);
                for d in items {
                    list.append(self.number(*d, false)?)?;
                }
                self.vector("number", *fixed, list.into_any())?
            }
            Value::ObjectVector {
                fixed,
                type_name,
                items,
            } => {
                self.register(amf3);
                let len = self.path.len();
                self.path.push_str(".items");
                let list = self.items(items, true);
                self.path.truncate(len);
                let d = self.vector("object", *fixed, list?.into_any())?;
                d.cast::<PyDict>()?.set_item("type", type_name.as_str())?;
                d
            }
            Value::Array { assoc, dense } if assoc.is_empty() => {
                self.register(amf3);
                self.items(dense, amf3)?.into_any()
            }
            Value::Array { assoc, dense } => {
                self.register(amf3);
                // The associative part comes first on the wire: its values are
                // numbered before the dense items'.
                let d = PyDict::new(py);
                let len = self.path.len();
                self.path.push_str(".assoc");
                let members = self.members(assoc, amf3);
                self.path.truncate(len);
                let members = members?;
                self.path.push_str(".__array__");
                let items = self.items(dense, amf3);
                self.path.truncate(len);
                d.set_item("__array__", items?)?;
                d.set_item("assoc", members)?;
                d.into_any()
            }
            Value::EcmaArray { length, entries } => {
                self.register(amf3);
                let len = self.path.len();
                self.path.push_str(".__ecma__");
                let members = self.members(entries, amf3);
                self.path.truncate(len);
                let d = self.tagged("__ecma__", members?)?;
                if *length as usize != entries.len() {
                    d.set_item("length", *length)?;
                }
                d.into_any()
            }
            Value::Object {
                traits,
                sealed,
                dynamic,
                external,
            } => {
                self.register(amf3);
                self.object(traits, sealed, dynamic, external.as_ref(), amf3)?
            }
            Value::Dictionary { weak_keys, entries } => {
                self.register(amf3);
                let list = PyList::empty(py);
                let len = self.path.len();
                self.path.push_str(".__dictionary__");
                for (i, (k, x)) in entries.iter().enumerate() {
                    let l2 = self.path.len();
                    push_index(&mut self.path, i);
                    let pair = (|| -> PyResult<Bound<'py, PyList>> {
                        let key = self.at_index(0, k, true)?;
                        let value = self.at_index(1, x, true)?;
                        PyList::new(py, [key, value])
                    })();
                    self.path.truncate(l2);
                    list.append(pair?)?;
                }
                self.path.truncate(len);
                let d = self.tagged("__dictionary__", list)?;
                if *weak_keys {
                    d.set_item("weak_keys", true)?;
                }
                d.into_any()
            }
            Value::Reference(i) => {
                let table = if amf3 { &self.refs3 } else { &self.refs0 };
                let Some(path) = table.get(*i as usize) else {
                    return Err(PyValueError::new_err(format!(
                        "reference {i} to no entry of the table, at {}",
                        self.path
                    )));
                };
                self.tagged("__ref__", path.as_str())?.into_any()
            }
            Value::Amf3(inner) => {
                let len = self.path.len();
                self.path.push_str(".__amf3__");
                let r = self.value(inner, true);
                self.path.truncate(len);
                self.tagged("__amf3__", r?)?.into_any()
            }
        })
    }

    fn items(&mut self, items: &[Value], amf3: bool) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(self.py);
        for (i, x) in items.iter().enumerate() {
            list.append(self.at_index(i, x, amf3)?)?;
        }
        Ok(list)
    }

    /// Members as a dict, or as a list of `[name, value]` pairs when a name repeats or
    /// is a reserved key (the path then steps through the pairs).
    fn members(&mut self, members: &[(String, Value)], amf3: bool) -> PyResult<Bound<'py, PyAny>> {
        if plain_names(members.iter().map(|(k, _)| k.as_str())) {
            let d = PyDict::new(self.py);
            for (k, x) in members {
                d.set_item(k.as_str(), self.at_key(k, x, amf3)?)?;
            }
            return Ok(d.into_any());
        }
        self.pairs(members.iter().map(|(k, v)| (k.as_str(), v)), amf3)
    }

    fn pairs<'a>(
        &mut self,
        members: impl Iterator<Item = (&'a str, &'a Value)>,
        amf3: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let list = PyList::empty(self.py);
        for (i, (k, x)) in members.enumerate() {
            let len = self.path.len();
            push_index(&mut self.path, i);
            let v = self.at_index(1, x, amf3);
            self.path.truncate(len);
            list.append(PyList::new(
                self.py,
                [PyString::new(self.py, k).into_any(), v?],
            )?)?;
        }
        Ok(list.into_any())
    }

    fn object(
        &mut self,
        traits: &Arc<Traits>,
        sealed: &[Value],
        dynamic: &[(String, Value)],
        external: Option<&ExternalBody>,
        amf3: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let plain = traits.class_name.is_empty()
            && traits.sealed.is_empty()
            && (traits.dynamic || !amf3)
            && !traits.externalizable;
        let inline_again = amf3 && self.inline_again(traits);
        if plain && !inline_again {
            if plain_names(dynamic.iter().map(|(k, _)| k.as_str())) {
                let d = PyDict::new(py);
                for (k, x) in dynamic {
                    d.set_item(k.as_str(), self.at_key(k, x, amf3)?)?;
                }
                return Ok(d.into_any());
            }
            let len = self.path.len();
            self.path.push_str(".__members__");
            let pairs = self.pairs(dynamic.iter().map(|(k, v)| (k.as_str(), v)), amf3);
            self.path.truncate(len);
            return Ok(self.tagged("__members__", pairs?)?.into_any());
        }
        let d = PyDict::new(py);
        d.set_item("__alias__", traits.class_name.as_str())?;
        if inline_again {
            d.set_item("__traits__", "inline")?;
        }
        if let Some(body) = external {
            if traits.dynamic {
                d.set_item("__dynamic__", true)?;
            }
            let len = self.path.len();
            let r = match body {
                ExternalBody::Value(v) => {
                    self.path.push_str(".__external__");
                    self.value(v, true)
                        .and_then(|x| d.set_item("__external__", x))
                }
                ExternalBody::Flags(levels) => {
                    self.path.push_str(".__small__");
                    self.small(&traits.class_name, levels, &d)
                }
                ExternalBody::Opaque(bytes) => {
                    self.base64(bytes).and_then(|t| d.set_item("__opaque__", t))
                }
            };
            self.path.truncate(len);
            r?;
            return Ok(d.into_any());
        }
        if !traits.sealed.is_empty() {
            d.set_item("__sealed__", PyList::new(py, &traits.sealed)?)?;
        }
        if amf3 && !traits.dynamic {
            d.set_item("__dynamic__", false)?;
        }
        let names = traits
            .sealed
            .iter()
            .map(String::as_str)
            .chain(dynamic.iter().map(|(k, _)| k.as_str()));
        if plain_names(names) {
            for (name, x) in traits.sealed.iter().zip(sealed) {
                d.set_item(name.as_str(), self.at_key(name, x, amf3)?)?;
            }
            for (k, x) in dynamic {
                d.set_item(k.as_str(), self.at_key(k, x, amf3)?)?;
            }
        } else {
            let members = traits
                .sealed
                .iter()
                .map(String::as_str)
                .zip(sealed)
                .chain(dynamic.iter().map(|(k, v)| (k.as_str(), v)));
            let len = self.path.len();
            self.path.push_str(".__members__");
            let pairs = self.pairs(members, amf3);
            self.path.truncate(len);
            d.set_item("__members__", pairs?)?;
        }
        Ok(d.into_any())
    }

    /// Whether `traits` is a definition written inline although one with the same
    /// content came before it in this context (a writer that does not reference traits).
    fn inline_again(&mut self, traits: &Arc<Traits>) -> bool {
        let addr = Arc::as_ptr(traits) as usize;
        if !self.traits_seen.insert(addr) {
            return false;
        }
        let key = (
            traits.class_name.clone(),
            traits.sealed.clone(),
            traits.dynamic,
            traits.externalizable,
        );
        self.traits_content.insert(key, addr).is_some()
    }

    /// A small-form message's levels: `__small__` (one dict per class level, its values
    /// by member name) and, when the flag bytes are not the ones the names give,
    /// `__flags__`.
    fn small(
        &mut self,
        class_name: &str,
        levels: &[FlagLevel],
        d: &Bound<'py, PyDict>,
    ) -> PyResult<()> {
        let names = small_form_levels(class_name).unwrap_or(&[]);
        let out = PyList::empty(self.py);
        let mut canonical = true;
        for (i, level) in levels.iter().enumerate() {
            let level_name = names.get(i).copied().unwrap_or("");
            let ld = PyDict::new(self.py);
            let len = self.path.len();
            push_index(&mut self.path, i);
            let mut values = level.values.iter();
            for (byte, f) in level.flags.iter().enumerate() {
                for bit in 0..7 {
                    if f & (1 << bit) == 0 {
                        continue;
                    }
                    let name = field_name(level_name, byte, bit);
                    let Some(x) = values.next() else {
                        self.path.truncate(len);
                        return Err(PyValueError::new_err(
                            "small-form flags and values disagree",
                        ));
                    };
                    let v = self.at_key(&name, x, true);
                    ld.set_item(name, v.inspect_err(|_| self.path.truncate(len))?)?;
                }
            }
            self.path.truncate(len);
            canonical &= level.flags == canonical_flags(&level.flags);
            out.append(ld)?;
        }
        d.set_item("__small__", out)?;
        if !canonical {
            let flags = PyList::empty(self.py);
            for level in levels {
                flags.append(PyList::new(self.py, &level.flags)?)?;
            }
            d.set_item("__flags__", flags)?;
        }
        Ok(())
    }

    fn vector(
        &self,
        kind: &str,
        fixed: bool,
        items: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let d = self.tagged("__vector__", kind)?;
        d.set_item("items", items)?;
        if fixed {
            d.set_item("fixed", true)?;
        }
        Ok(d.into_any())
    }

    /// A number: an AMF0 number that is a whole number within 2^53 as an int (AMF0 has
    /// one number type, so nothing is lost); a double as a float; NaN and the infinities
    /// tagged, a NaN other than the usual one with its bits.
    fn number(&self, d: f64, amf0: bool) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        if d.is_nan() {
            let t = self.tagged("__float__", "NaN")?;
            if d.to_bits() != f64::NAN.to_bits() {
                t.set_item("bits", format!("{:016x}", d.to_bits()))?;
            }
            return Ok(t.into_any());
        }
        if d.is_infinite() {
            let text = if d > 0.0 { "Infinity" } else { "-Infinity" };
            return Ok(self.tagged("__float__", text)?.into_any());
        }
        if amf0
            && d.fract() == 0.0
            && d.abs() <= 9_007_199_254_740_992.0
            && !(d == 0.0 && d.is_sign_negative())
        {
            return Ok((d as i64).into_pyobject(py)?.into_any());
        }
        Ok(PyFloat::new(py, d).into_any())
    }

    /// A date as `amfkit.cli.jsonio` writes one: ISO 8601 in UTC for whole milliseconds
    /// in years 1 to 9999, else the milliseconds (or "NaN", "Infinity", "-Infinity").
    fn date(&self, millis: f64) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        if millis.is_nan() {
            return Ok(PyString::new(py, "NaN").into_any());
        }
        if millis.is_infinite() {
            let text = if millis > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            };
            return Ok(PyString::new(py, text).into_any());
        }
        if millis.fract() == 0.0 && !(millis == 0.0 && millis.is_sign_negative()) {
            if let Some((y, mo, d, h, mi, s, us)) = date::fields(millis) {
                let ms = us / 1000;
                let text = if ms == 0 {
                    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
                } else {
                    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
                };
                return Ok(PyString::new(py, &text).into_any());
            }
        }
        self.number(millis, false)
    }

    fn base64(&mut self, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        if self.binascii.is_none() {
            self.binascii = Some(self.py.import("binascii")?.into_any());
        }
        let m = self.binascii.as_ref().unwrap();
        let kwargs = PyDict::new(self.py);
        kwargs.set_item("newline", false)?;
        let b = m.call_method(
            "b2a_base64",
            (pyo3::types::PyBytes::new(self.py, bytes),),
            Some(&kwargs),
        )?;
        b.call_method1("decode", ("ascii",))
    }
}

/// Whether `names` can be the keys of a JSON object: none repeats and none is reserved.
fn plain_names<'a>(names: impl Iterator<Item = &'a str>) -> bool {
    let mut seen = FxHashSet::default();
    for n in names {
        if RESERVED.contains(&n) || !seen.insert(n) {
            return false;
        }
    }
    true
}

/// A small-form member's name in a document: Flex's name for the bit, else
/// `flag{byte}.{bit}`.
pub(super) fn field_name(level: &str, byte: usize, bit: u32) -> String {
    match small_form_field(level, byte, bit) {
        Some(name) => name.to_owned(),
        None => format!("flag{byte}.{bit}"),
    }
}

/// The flag bytes a writer writes for the bits of `flags`: no trailing byte without a
/// bit, and 0x80 on every byte but the last.
pub(super) fn canonical_flags(flags: &[u8]) -> Vec<u8> {
    let mut bits: Vec<u8> = flags.iter().map(|f| f & 0x7f).collect();
    if bits.is_empty() {
        bits.push(0);
    }
    while bits.len() > 1 && *bits.last().unwrap() == 0 {
        bits.pop();
    }
    let n = bits.len();
    for b in bits.iter_mut().take(n - 1) {
        *b |= 0x80;
    }
    bits
}
