//! A `Value` tree: the data model for Rust users and tools (`inspect`, fixtures).
//!
//! It sits beside the fast path, not underneath it: the Python bindings never build it.
//! Shared values are explicit: the first occurrence holds the value, later ones are
//! [`Value::Reference`] to its table index, so a decoded tree re-encodes byte for byte
//! (string and traits references are re-derived by the writer).

use std::sync::Arc;

use crate::amf3::marker as m3;
use crate::decoder::Decoder;
use crate::error::{Error, PathSegment, Result};
use crate::lenient::{BodyAs, Lenient};
use crate::limits::Limits;
use crate::visit::{ArrayKind, NumberVectorKind, TraitsDef, Visitor, XmlKind};
use crate::write::Encoder;

/// A class definition: alias, sealed member names, dynamic and externalizable flags.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Traits {
    pub class_name: String,
    pub sealed: Vec<String>,
    pub dynamic: bool,
    pub externalizable: bool,
}

impl Traits {
    /// The traits of an anonymous object: no class name, dynamic.
    pub fn anonymous() -> Arc<Traits> {
        Arc::new(Traits {
            dynamic: true,
            ..Traits::default()
        })
    }
}

/// Externalizable classes whose body is one AMF3 value (Flex's collection wrappers).
pub use crate::flex::ONE_VALUE_EXTERNALS;

/// The body of an externalizable object, as this model reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum ExternalBody {
    /// One AMF3 value: Flex's collection wrappers ([`ONE_VALUE_EXTERNALS`]), and the
    /// classes the decoder's lenient options read so ([`crate::lenient::BodyAs`]).
    Value(Box<Value>),
    /// A Flex small-form message (`DSK`, `DSA`, `DSC`): one [`FlagLevel`] per class
    /// level ([`crate::flex::small_form_levels`]).
    Flags(Vec<FlagLevel>),
    /// The bytes of a body no model reads, kept as they are: everything from the end of
    /// the traits to the end of the input (lenient reading, [`crate::lenient`]).
    Opaque(Vec<u8>),
}

impl ExternalBody {
    /// The one value of a [`ExternalBody::Value`] body.
    pub fn value(&self) -> Option<&Value> {
        match self {
            ExternalBody::Value(v) => Some(v),
            _ => None,
        }
    }

    /// The one value of a [`ExternalBody::Value`] body, to change it.
    pub fn value_mut(&mut self) -> Option<&mut Value> {
        match self {
            ExternalBody::Value(v) => Some(v),
            _ => None,
        }
    }
}

/// One class level of a small-form message: its flag bytes as written, and the values
/// their bits 0 to 6 announce, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagLevel {
    pub flags: Vec<u8>,
    pub values: Vec<Value>,
}

/// Any AMF0 or AMF3 value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Undefined,
    Null,
    Bool(bool),
    /// AMF3 29-bit integer.
    Integer(i32),
    /// AMF0 number, AMF3 double.
    Number(f64),
    String(String),
    /// Milliseconds since the epoch, UTC; `tz` is AMF0's time-zone field (None in AMF3).
    Date {
        millis: f64,
        tz: Option<i16>,
    },
    Xml {
        kind: XmlKind,
        text: String,
    },
    ByteArray(Vec<u8>),
    IntVector {
        fixed: bool,
        items: Vec<i32>,
    },
    UintVector {
        fixed: bool,
        items: Vec<u32>,
    },
    DoubleVector {
        fixed: bool,
        items: Vec<f64>,
    },
    ObjectVector {
        fixed: bool,
        type_name: String,
        items: Vec<Value>,
    },
    /// AMF0 strict array, or AMF3 Array (associative part first on the wire).
    Array {
        assoc: Vec<(String, Value)>,
        dense: Vec<Value>,
    },
    /// AMF0 ECMA array: `length` is the count written before the entries (Flash
    /// Player writes the ActionScript array's length there, not the number of entries:
    /// a holey array of length 15 with two entries says 15).
    EcmaArray {
        length: u32,
        entries: Vec<(String, Value)>,
    },
    /// An object: anonymous (empty class name) or typed. An externalizable object keeps
    /// its body in `external`.
    Object {
        traits: Arc<Traits>,
        sealed: Vec<Value>,
        dynamic: Vec<(String, Value)>,
        external: Option<ExternalBody>,
    },
    Dictionary {
        weak_keys: bool,
        entries: Vec<(Value, Value)>,
    },
    /// A later occurrence of the complex value at this index of the current table.
    Reference(u32),
    /// AMF0's `unsupported` marker.
    Unsupported,
    /// An AMF3 value inside an AMF0 stream (the AVM+ switch).
    Amf3(Box<Value>),
}

impl Value {
    /// Decode exactly one AMF0 value with default limits.
    pub fn from_amf0(input: &[u8]) -> Result<Value> {
        decode_one(input, Limits::DEFAULT, |d, v| d.read_amf0(v))
    }

    /// Decode exactly one AMF3 value with default limits.
    pub fn from_amf3(input: &[u8]) -> Result<Value> {
        decode_one(input, Limits::DEFAULT, |d, v| d.read_amf3(v))
    }

    /// Decode exactly one AMF0 value with these limits and lenient options
    /// ([`crate::lenient`]; None is strict).
    pub fn from_amf0_with(
        input: &[u8],
        limits: Limits,
        lenient: Option<Arc<Lenient>>,
    ) -> Result<Value> {
        decode_one_with(input, limits, lenient, |d, v| d.read_amf0(v))
    }

    /// Decode exactly one AMF3 value with these limits and lenient options
    /// ([`crate::lenient`]; None is strict).
    pub fn from_amf3_with(
        input: &[u8],
        limits: Limits,
        lenient: Option<Arc<Lenient>>,
    ) -> Result<Value> {
        decode_one_with(input, limits, lenient, |d, v| d.read_amf3(v))
    }

    /// Decode a stream of AMF0 values sharing one reference context.
    pub fn all_from_amf0(input: &[u8], limits: Limits) -> Result<Vec<Value>> {
        let mut visitor = ValueVisitor;
        let mut de = Decoder::new(input, limits);
        let mut out = Vec::new();
        while !de.is_empty() {
            let i = out.len();
            out.push(
                de.read_amf0(&mut visitor)
                    .map_err(|e| e.within(PathSegment::Index(i)))?,
            );
        }
        Ok(out)
    }

    /// Decode a stream of AMF3 values sharing one reference context.
    pub fn all_from_amf3(input: &[u8], limits: Limits) -> Result<Vec<Value>> {
        let mut visitor = ValueVisitor;
        let mut de = Decoder::new(input, limits);
        let mut out = Vec::new();
        while !de.is_empty() {
            let i = out.len();
            out.push(
                de.read_amf3(&mut visitor)
                    .map_err(|e| e.within(PathSegment::Index(i)))?,
            );
        }
        Ok(out)
    }

    /// Encode as one AMF0 value.
    pub fn to_amf0(&self) -> Result<Vec<u8>> {
        let mut w = ValueWriter::default();
        let mut enc = Encoder::new();
        w.amf0(&mut enc, self, 0)?;
        Ok(enc.take())
    }

    /// Encode as one AMF3 value.
    pub fn to_amf3(&self) -> Result<Vec<u8>> {
        let mut w = ValueWriter::default();
        let mut enc = Encoder::new();
        w.amf3(&mut enc, self, 0)?;
        Ok(enc.take())
    }

    /// Encode a stream of AMF0 values sharing one reference context.
    pub fn all_to_amf0(values: &[Value]) -> Result<Vec<u8>> {
        let mut w = ValueWriter::default();
        let mut enc = Encoder::new();
        for v in values {
            w.amf0(&mut enc, v, 0)?;
        }
        Ok(enc.take())
    }

    /// Encode a stream of AMF3 values sharing one reference context.
    pub fn all_to_amf3(values: &[Value]) -> Result<Vec<u8>> {
        let mut w = ValueWriter::default();
        let mut enc = Encoder::new();
        for v in values {
            w.amf3(&mut enc, v, 0)?;
        }
        Ok(enc.take())
    }

    /// The AMF type's name, for tools.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Undefined => "undefined",
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Integer(_) => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Date { .. } => "date",
            Value::Xml {
                kind: XmlKind::Document,
                ..
            } => "xmldocument",
            Value::Xml {
                kind: XmlKind::E4x, ..
            } => "xml",
            Value::ByteArray(_) => "bytearray",
            Value::IntVector { .. } => "vector<int>",
            Value::UintVector { .. } => "vector<uint>",
            Value::DoubleVector { .. } => "vector<number>",
            Value::ObjectVector { .. } => "vector<object>",
            Value::Array { .. } => "array",
            Value::EcmaArray { .. } => "ecma-array",
            Value::Object { .. } => "object",
            Value::Dictionary { .. } => "dictionary",
            Value::Reference(_) => "reference",
            Value::Unsupported => "unsupported",
            Value::Amf3(_) => "avmplus",
        }
    }
}

fn decode_one<'de>(
    input: &'de [u8],
    limits: Limits,
    read: impl FnOnce(&mut Decoder<'de, ValueVisitor>, &mut ValueVisitor) -> Result<Value>,
) -> Result<Value> {
    decode_one_with(input, limits, None, read)
}

fn decode_one_with<'de>(
    input: &'de [u8],
    limits: Limits,
    lenient: Option<Arc<Lenient>>,
    read: impl FnOnce(&mut Decoder<'de, ValueVisitor>, &mut ValueVisitor) -> Result<Value>,
) -> Result<Value> {
    let mut visitor = ValueVisitor;
    let mut de = Decoder::new(input, limits).with_lenient(lenient);
    let value = read(&mut de, &mut visitor).map_err(|e| e.or_offset(de.position()))?;
    de.finish()?;
    Ok(value)
}

/// Builds [`Value`]s.
#[derive(Debug, Default, Clone, Copy)]
pub struct ValueVisitor;

#[derive(Debug)]
pub struct ArrayBuilder {
    kind: BuilderKind,
    assoc: Vec<(String, Value)>,
    dense: Vec<Value>,
}

#[derive(Debug)]
enum BuilderKind {
    Array,
    Ecma { length: u32 },
    Vector { fixed: bool, type_name: String },
}

#[derive(Debug)]
pub struct ObjectBuilder {
    sealed: Vec<Value>,
    dynamic: Vec<(String, Value)>,
    external: Option<ExternalBody>,
}

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;
    type Str = Arc<str>;
    type Traits = Arc<Traits>;
    type Array = ArrayBuilder;
    type Object = ObjectBuilder;
    type Dict = (bool, Vec<(Value, Value)>);

    fn undefined(&mut self) -> Result<Value> {
        Ok(Value::Undefined)
    }
    fn null(&mut self) -> Result<Value> {
        Ok(Value::Null)
    }
    fn boolean(&mut self, v: bool) -> Result<Value> {
        Ok(Value::Bool(v))
    }
    fn integer(&mut self, v: i32) -> Result<Value> {
        Ok(Value::Integer(v))
    }
    fn number(&mut self, v: f64) -> Result<Value> {
        Ok(Value::Number(v))
    }
    fn str(&mut self, s: &'de str) -> Result<Arc<str>> {
        Ok(Arc::from(s))
    }
    fn string(&mut self, s: &Arc<str>) -> Result<Value> {
        Ok(Value::String(s.to_string()))
    }
    fn date(&mut self, millis: f64, tz: Option<i16>) -> Result<Value> {
        Ok(Value::Date { millis, tz })
    }
    fn xml(&mut self, kind: XmlKind, text: &'de str) -> Result<Value> {
        Ok(Value::Xml {
            kind,
            text: text.to_owned(),
        })
    }
    fn byte_array(&mut self, bytes: &'de [u8]) -> Result<Value> {
        Ok(Value::ByteArray(bytes.to_vec()))
    }
    fn number_vector(
        &mut self,
        kind: NumberVectorKind,
        fixed: bool,
        raw: &'de [u8],
    ) -> Result<Value> {
        Ok(match kind {
            NumberVectorKind::Int => Value::IntVector {
                fixed,
                items: raw
                    .chunks_exact(4)
                    .map(|c| i32::from_be_bytes(c.try_into().unwrap()))
                    .collect(),
            },
            NumberVectorKind::Uint => Value::UintVector {
                fixed,
                items: raw
                    .chunks_exact(4)
                    .map(|c| u32::from_be_bytes(c.try_into().unwrap()))
                    .collect(),
            },
            NumberVectorKind::Double => Value::DoubleVector {
                fixed,
                items: raw
                    .chunks_exact(8)
                    .map(|c| f64::from_be_bytes(c.try_into().unwrap()))
                    .collect(),
            },
        })
    }
    fn switched(&mut self, value: Value) -> Result<Value> {
        Ok(Value::Amf3(Box::new(value)))
    }
    fn unsupported(&mut self) -> Result<Value> {
        Ok(Value::Unsupported)
    }
    fn handle(&mut self, index: u32, _value: &Value) -> Value {
        Value::Reference(index)
    }

    fn array_begin(
        &mut self,
        kind: ArrayKind<'de>,
        len: usize,
        index: u32,
    ) -> Result<(ArrayBuilder, Value)> {
        let kind = match kind {
            ArrayKind::Dense | ArrayKind::Mixed => BuilderKind::Array,
            ArrayKind::Ecma { declared } => BuilderKind::Ecma { length: declared },
            ArrayKind::ObjectVector { fixed, type_name } => BuilderKind::Vector {
                fixed,
                type_name: type_name.to_owned(),
            },
        };
        let b = ArrayBuilder {
            kind,
            assoc: Vec::new(),
            dense: Vec::with_capacity(len.min(4096)),
        };
        Ok((b, Value::Reference(index)))
    }
    fn array_push(&mut self, array: &mut ArrayBuilder, value: Value) -> Result<()> {
        array.dense.push(value);
        Ok(())
    }
    fn array_assoc(
        &mut self,
        array: &mut ArrayBuilder,
        _key: &Arc<str>,
        text: &'de str,
        value: Value,
    ) -> Result<()> {
        array.assoc.push((text.to_owned(), value));
        Ok(())
    }
    fn array_end(&mut self, array: ArrayBuilder) -> Result<Value> {
        Ok(match array.kind {
            BuilderKind::Array => Value::Array {
                assoc: array.assoc,
                dense: array.dense,
            },
            BuilderKind::Ecma { length } => Value::EcmaArray {
                length,
                entries: array.assoc,
            },
            BuilderKind::Vector { fixed, type_name } => Value::ObjectVector {
                fixed,
                type_name,
                items: array.dense,
            },
        })
    }

    fn traits(&mut self, def: TraitsDef<'de, Arc<str>>) -> Result<Arc<Traits>> {
        Ok(Arc::new(Traits {
            class_name: def.class_name.to_owned(),
            sealed: def.sealed.iter().map(|s| s.to_string()).collect(),
            dynamic: def.dynamic,
            externalizable: def.externalizable,
        }))
    }
    fn object_begin(&mut self, traits: &Arc<Traits>, index: u32) -> Result<(ObjectBuilder, Value)> {
        let b = ObjectBuilder {
            sealed: Vec::with_capacity(traits.sealed.len()),
            dynamic: Vec::new(),
            external: None,
        };
        Ok((b, Value::Reference(index)))
    }
    fn object_sealed(
        &mut self,
        o: &mut ObjectBuilder,
        _t: &Arc<Traits>,
        _slot: usize,
        value: Value,
    ) -> Result<()> {
        o.sealed.push(value);
        Ok(())
    }
    fn object_dynamic(
        &mut self,
        o: &mut ObjectBuilder,
        _t: &Arc<Traits>,
        _key: &Arc<str>,
        text: &'de str,
        value: Value,
    ) -> Result<()> {
        o.dynamic.push((text.to_owned(), value));
        Ok(())
    }
    fn object_external(
        &mut self,
        o: &mut ObjectBuilder,
        traits: &Arc<Traits>,
        decoder: &mut Decoder<'de, Self>,
    ) -> Result<()> {
        let name = traits.class_name.as_str();
        if ONE_VALUE_EXTERNALS.contains(&name) {
            o.external = Some(ExternalBody::Value(Box::new(decoder.read_amf3(self)?)));
            return Ok(());
        }
        if let Some(levels) = crate::flex::small_form_levels(name) {
            let mut out = Vec::with_capacity(levels.len());
            for _ in levels {
                let flags = decoder.read_small_flags()?;
                let n = crate::flex::flagged_values(&flags);
                let mut values = Vec::with_capacity(n);
                for _ in 0..n {
                    values.push(decoder.read_amf3(self)?);
                }
                out.push(FlagLevel { flags, values });
            }
            o.external = Some(ExternalBody::Flags(out));
            return Ok(());
        }
        match decoder.body_as(name) {
            Some(BodyAs::Opaque) => {
                o.external = Some(ExternalBody::Opaque(decoder.read_opaque()?.to_vec()));
                Ok(())
            }
            Some(BodyAs::ArrayCollection | BodyAs::ObjectProxy) => {
                o.external = Some(ExternalBody::Value(Box::new(decoder.read_amf3(self)?)));
                Ok(())
            }
            None => {
                let offset = decoder.position();
                Err(self.unknown_external(traits, offset))
            }
        }
    }
    fn unknown_external(&mut self, traits: &Arc<Traits>, offset: usize) -> Error {
        Error::new(
            crate::ErrorKind::UnknownExternalizable(traits.class_name.as_str().into()),
            offset,
        )
    }
    fn object_end(&mut self, o: ObjectBuilder, traits: &Arc<Traits>) -> Result<Value> {
        Ok(Value::Object {
            traits: traits.clone(),
            sealed: o.sealed,
            dynamic: o.dynamic,
            external: o.external,
        })
    }

    fn dict_begin(
        &mut self,
        len: usize,
        weak_keys: bool,
        index: u32,
    ) -> Result<(Self::Dict, Value)> {
        Ok((
            (weak_keys, Vec::with_capacity(len.min(4096))),
            Value::Reference(index),
        ))
    }
    fn dict_entry(&mut self, dict: &mut Self::Dict, key: Value, value: Value) -> Result<()> {
        dict.1.push((key, value));
        Ok(())
    }
    fn dict_end(&mut self, dict: Self::Dict) -> Result<Value> {
        Ok(Value::Dictionary {
            weak_keys: dict.0,
            entries: dict.1,
        })
    }
}

/// Walks a [`Value`] and drives an [`Encoder`]. Remembers the marker of each AMF3 table
/// entry so that a [`Value::Reference`] is written with the marker of what it refers to.
#[derive(Default)]
pub(crate) struct ValueWriter {
    markers3: Vec<u8>,
}

const MAX_WRITE_DEPTH: u32 = Limits::DEPTH_CEILING;

impl ValueWriter {
    fn depth_check(enc: &Encoder, depth: u32) -> Result<()> {
        if depth > MAX_WRITE_DEPTH {
            return Err(enc.error(format!("nesting deeper than {MAX_WRITE_DEPTH}")));
        }
        Ok(())
    }

    pub(crate) fn amf0(&mut self, enc: &mut Encoder, value: &Value, depth: u32) -> Result<()> {
        Self::depth_check(enc, depth)?;
        match value {
            Value::Undefined => enc.amf0_undefined(),
            Value::Null => enc.amf0_null(),
            Value::Bool(b) => enc.amf0_bool(*b),
            Value::Integer(i) => enc.amf0_number(*i as f64),
            Value::Number(d) => enc.amf0_number(*d),
            Value::String(s) => enc.amf0_string(s)?,
            Value::Date { millis, tz } => {
                enc.amf0_register(None);
                enc.amf0_date(*millis, tz.unwrap_or(0));
            }
            Value::Xml { text, .. } => {
                enc.amf0_register(None);
                enc.amf0_xml(text)?;
            }
            Value::Unsupported => enc.amf0_unsupported(),
            Value::Reference(index) => enc.amf0_write_reference(*index)?,
            Value::Amf3(inner) => {
                enc.amf0_avmplus();
                self.amf3(enc, inner, depth + 1)?;
            }
            Value::Array { assoc, dense } if assoc.is_empty() => {
                enc.amf0_register(None);
                enc.amf0_strict_array_start(dense.len())?;
                for (i, item) in dense.iter().enumerate() {
                    self.amf0(enc, item, depth + 1)
                        .map_err(|e| e.within(PathSegment::Index(i)))?;
                }
            }
            Value::EcmaArray { length, entries } => {
                enc.amf0_register(None);
                enc.amf0_ecma_array_start(*length as usize)?;
                self.amf0_members(enc, entries, depth)?;
            }
            Value::Object {
                traits,
                sealed,
                dynamic,
                external: None,
            } if !traits.externalizable => {
                enc.amf0_register(None);
                if traits.class_name.is_empty() {
                    enc.amf0_object_start();
                } else {
                    enc.amf0_typed_object_start(&traits.class_name)?;
                }
                for (name, item) in traits.sealed.iter().zip(sealed) {
                    enc.amf0_utf(name)?;
                    self.amf0(enc, item, depth + 1)
                        .map_err(|e| e.within(PathSegment::key(name.as_str())))?;
                }
                self.amf0_members(enc, dynamic, depth)?;
            }
            // Everything AMF0 cannot carry goes through the AVM+ switch.
            other => {
                enc.amf0_avmplus();
                self.amf3(enc, other, depth + 1)?;
            }
        }
        Ok(())
    }

    fn amf0_members(
        &mut self,
        enc: &mut Encoder,
        members: &[(String, Value)],
        depth: u32,
    ) -> Result<()> {
        for (key, item) in members {
            enc.amf0_utf(key)?;
            self.amf0(enc, item, depth + 1)
                .map_err(|e| e.within(PathSegment::key(key.as_str())))?;
        }
        enc.amf0_object_end();
        Ok(())
    }

    fn register3(&mut self, enc: &mut Encoder, marker: u8) {
        enc.out.u8(marker);
        enc.amf3_register(None);
        self.markers3.push(marker);
    }

    pub(crate) fn amf3(&mut self, enc: &mut Encoder, value: &Value, depth: u32) -> Result<()> {
        Self::depth_check(enc, depth)?;
        match value {
            Value::Undefined | Value::Unsupported => enc.amf3_undefined(),
            Value::Null => enc.amf3_null(),
            Value::Bool(b) => enc.amf3_bool(*b),
            Value::Integer(i) => enc.amf3_int(*i as i64),
            Value::Number(d) => enc.amf3_double(*d),
            Value::String(s) => enc.amf3_string(s)?,
            Value::Amf3(inner) => self.amf3(enc, inner, depth)?,
            Value::Reference(index) => match self.markers3.get(*index as usize) {
                Some(&marker) => enc.amf3_write_reference(marker, *index),
                None => {
                    return Err(enc.error(format!("reference {index} to an object not written yet")))
                }
            },
            Value::Date { millis, .. } => {
                self.register3(enc, m3::DATE);
                enc.amf3_date_body(*millis);
            }
            Value::Xml { kind, text } => {
                let marker = match kind {
                    XmlKind::Document => m3::XML_DOCUMENT,
                    XmlKind::E4x => m3::XML,
                };
                self.register3(enc, marker);
                enc.amf3_xml_body(text)?;
            }
            Value::ByteArray(b) => {
                self.register3(enc, m3::BYTE_ARRAY);
                enc.amf3_bytes_body(b)?;
            }
            Value::IntVector { fixed, items } => {
                self.register3(enc, m3::VECTOR_INT);
                enc.amf3_vector_header(items.len(), *fixed)?;
                items.iter().for_each(|i| enc.out.bytes(&i.to_be_bytes()));
            }
            Value::UintVector { fixed, items } => {
                self.register3(enc, m3::VECTOR_UINT);
                enc.amf3_vector_header(items.len(), *fixed)?;
                items.iter().for_each(|i| enc.out.u32(*i));
            }
            Value::DoubleVector { fixed, items } => {
                self.register3(enc, m3::VECTOR_DOUBLE);
                enc.amf3_vector_header(items.len(), *fixed)?;
                items.iter().for_each(|d| enc.out.f64(*d));
            }
            Value::ObjectVector {
                fixed,
                type_name,
                items,
            } => {
                self.register3(enc, m3::VECTOR_OBJECT);
                enc.amf3_vector_header(items.len(), *fixed)?;
                enc.amf3_str(type_name)?;
                self.amf3_items(enc, items, depth)?;
            }
            Value::Array { assoc, dense } => {
                self.register3(enc, m3::ARRAY);
                enc.amf3_array_header(dense.len())?;
                self.amf3_members(enc, assoc, depth)?;
                self.amf3_items(enc, dense, depth)?;
            }
            Value::EcmaArray { entries, .. } => {
                self.register3(enc, m3::ARRAY);
                enc.amf3_array_header(0)?;
                self.amf3_members(enc, entries, depth)?;
            }
            Value::Object {
                traits,
                sealed,
                dynamic,
                external,
            } => {
                self.register3(enc, m3::OBJECT);
                let key = Arc::as_ptr(traits) as usize;
                if !enc.amf3_traits_reference(key) {
                    if traits.externalizable {
                        enc.amf3_traits_external(Some(key), &traits.class_name, traits.dynamic)?;
                    } else {
                        enc.amf3_traits_inline(
                            Some(key),
                            &traits.class_name,
                            &traits.sealed,
                            traits.dynamic,
                            false,
                        )?;
                    }
                }
                if traits.externalizable {
                    match external {
                        Some(ExternalBody::Value(body)) => self.amf3(enc, body, depth + 1)?,
                        Some(ExternalBody::Flags(levels)) => {
                            for level in levels {
                                if crate::flex::flagged_values(&level.flags) != level.values.len() {
                                    return Err(enc.error(format!(
                                        "small-form flags {:02x?} announce {} values, not the {} given",
                                        level.flags,
                                        crate::flex::flagged_values(&level.flags),
                                        level.values.len()
                                    )));
                                }
                                enc.out.bytes(&level.flags);
                                self.amf3_items(enc, &level.values, depth)?;
                            }
                        }
                        Some(ExternalBody::Opaque(bytes)) => enc.out.bytes(bytes),
                        None => {
                            return Err(enc.error(format!(
                                "externalizable {:?} has no body to write",
                                traits.class_name
                            )))
                        }
                    }
                } else {
                    for (name, item) in traits.sealed.iter().zip(sealed) {
                        self.amf3(enc, item, depth + 1)
                            .map_err(|e| e.within(PathSegment::key(name.as_str())))?;
                    }
                    if traits.dynamic {
                        self.amf3_members(enc, dynamic, depth)?;
                    }
                }
            }
            Value::Dictionary { weak_keys, entries } => {
                self.register3(enc, m3::DICTIONARY);
                enc.amf3_dictionary_header(entries.len(), *weak_keys)?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    self.amf3(enc, k, depth + 1)
                        .map_err(|e| e.within(PathSegment::Index(i)))?;
                    self.amf3(enc, v, depth + 1)
                        .map_err(|e| e.within(PathSegment::Index(i)))?;
                }
            }
        }
        Ok(())
    }

    fn amf3_items(&mut self, enc: &mut Encoder, items: &[Value], depth: u32) -> Result<()> {
        for (i, item) in items.iter().enumerate() {
            self.amf3(enc, item, depth + 1)
                .map_err(|e| e.within(PathSegment::Index(i)))?;
        }
        Ok(())
    }

    /// Key/value members, then the empty string that ends them.
    fn amf3_members(
        &mut self,
        enc: &mut Encoder,
        members: &[(String, Value)],
        depth: u32,
    ) -> Result<()> {
        for (key, item) in members {
            if key.is_empty() {
                return Err(enc.error("an empty member name cannot be written in amf3"));
            }
            enc.amf3_str(key)?;
            self.amf3(enc, item, depth + 1)
                .map_err(|e| e.within(PathSegment::key(key.as_str())))?;
        }
        enc.amf3_str("")
    }
}
