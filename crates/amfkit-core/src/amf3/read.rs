//! The AMF3 value reader (AMF3 specification, section 3).

use std::rc::Rc;

use super::marker as m;
use crate::decoder::{Decoder, TraitsEntry};
use crate::error::{clip, Error, ErrorKind, PathSegment, Result, MAX_SHOWN};
use crate::visit::{ArrayKind, NumberVectorKind, TraitsDef, Visitor, XmlKind};

/// A U29 header of a referenceable value: either a reference or an inline length.
enum Header<T> {
    Reference(T),
    Inline(usize),
}

impl<'de, V: Visitor<'de>> Decoder<'de, V> {
    /// Read one AMF3 value.
    pub fn read_amf3(&mut self, v: &mut V) -> Result<V::Value> {
        let start = self.bytes.position();
        match self.bytes.u8()? {
            m::UNDEFINED => v.undefined(),
            m::NULL => v.null(),
            m::FALSE => v.boolean(false),
            m::TRUE => v.boolean(true),
            m::INTEGER => {
                let u = self.bytes.u29()?;
                v.integer(((u << 3) as i32) >> 3)
            }
            m::DOUBLE => {
                let d = self.bytes.f64()?;
                v.number(d)
            }
            m::STRING => {
                let s = self.amf3_str(v)?;
                v.string(&s)
            }
            m::OBJECT => self.amf3_object(v),
            m::ARRAY => self.amf3_array(v),
            m::DATE => self.amf3_date(v),
            m::XML_DOCUMENT => self.amf3_xml(v, XmlKind::Document),
            m::XML => self.amf3_xml(v, XmlKind::E4x),
            m::BYTE_ARRAY => self.amf3_byte_array(v),
            m::VECTOR_INT => self.amf3_number_vector(v, NumberVectorKind::Int),
            m::VECTOR_UINT => self.amf3_number_vector(v, NumberVectorKind::Uint),
            m::VECTOR_DOUBLE => self.amf3_number_vector(v, NumberVectorKind::Double),
            m::VECTOR_OBJECT => self.amf3_object_vector(v),
            m::DICTIONARY => self.amf3_dictionary(v),
            marker => Err(Error::new(
                ErrorKind::UnknownMarker { version: 3, marker },
                start,
            )),
        }
    }

    /// A string (value, key or name) through the string table, as the model's string.
    #[inline]
    pub(crate) fn amf3_str(&mut self, v: &mut V) -> Result<V::Str> {
        Ok(self.amf3_str_text(v)?.1)
    }

    /// A string through the string table, as text and as the model's string.
    #[inline]
    pub(crate) fn amf3_str_text(&mut self, v: &mut V) -> Result<(&'de str, V::Str)> {
        let pos = self.bytes.position();
        let h = self.bytes.u29()?;
        if h & 1 == 0 {
            let index = (h >> 1) as usize;
            self.string_references += 1;
            let len = self.strings.len();
            let Some(entry) = self.strings.get_mut(index) else {
                return Err(bad_reference("string", index, len, pos));
            };
            if let Some(s) = &entry.1 {
                return Ok((entry.0, s.clone()));
            }
            let text = entry.0;
            let s = v.str(text)?;
            entry.1 = Some(s.clone());
            return Ok((text, s));
        }
        let len = (h >> 1) as usize;
        if len == 0 {
            return Ok(("", v.str("")?));
        }
        self.check_size("string length", len as u64)?;
        let text = self.bytes.utf8("string length", len)?;
        let s = v.str(text)?;
        self.strings.push((text, Some(s.clone())));
        Ok((text, s))
    }

    /// A string through the string table, as text (class names, vector type names).
    pub(crate) fn amf3_text(&mut self) -> Result<&'de str> {
        let pos = self.bytes.position();
        let h = self.bytes.u29()?;
        if h & 1 == 0 {
            let index = (h >> 1) as usize;
            self.string_references += 1;
            return match self.strings.get(index) {
                Some(entry) => Ok(entry.0),
                None => Err(bad_reference("string", index, self.strings.len(), pos)),
            };
        }
        let len = (h >> 1) as usize;
        if len == 0 {
            return Ok("");
        }
        self.check_size("string length", len as u64)?;
        let text = self.bytes.utf8("string length", len)?;
        self.strings.push((text, None));
        Ok(text)
    }

    /// A key of an associative part or of dynamic members; `None` at the empty string
    /// that ends the list.
    #[inline]
    fn amf3_key(&mut self, v: &mut V) -> Result<Option<(&'de str, V::Str)>> {
        if self.bytes.peek() == Some(0x01) {
            self.bytes.u8()?;
            return Ok(None);
        }
        let (text, s) = self.amf3_str_text(v)?;
        // An empty name ends the list however its length is written: a non-minimal
        // U29 such as 0x80 0x01 is still the empty string, never a member named "".
        if text.is_empty() {
            return Ok(None);
        }
        Ok(Some((text, s)))
    }

    #[inline]
    fn amf3_header(&mut self, v: &mut V) -> Result<Header<V::Value>> {
        let pos = self.bytes.position();
        let h = self.bytes.u29()?;
        if h & 1 == 1 {
            return Ok(Header::Inline((h >> 1) as usize));
        }
        let index = (h >> 1) as usize;
        match self.refs3.get(index) {
            Some(entry) => Ok(Header::Reference(v.reference(entry)?)),
            None => Err(bad_reference("object", index, self.refs3.len(), pos)),
        }
    }

    /// Register a leaf value (date, XML, ByteArray, numeric vector) in the object table.
    #[inline]
    fn amf3_leaf(&mut self, v: &mut V, value: V::Value) -> Result<V::Value> {
        let index = self.refs3.len() as u32;
        let entry = v.handle(index, &value);
        self.refs3.push(entry);
        Ok(value)
    }

    fn amf3_date(&mut self, v: &mut V) -> Result<V::Value> {
        match self.amf3_header(v)? {
            Header::Reference(r) => Ok(r),
            Header::Inline(_) => {
                let millis = self.bytes.f64()?;
                self.count_object()?;
                let value = v.date(millis, None)?;
                self.amf3_leaf(v, value)
            }
        }
    }

    fn amf3_xml(&mut self, v: &mut V, kind: XmlKind) -> Result<V::Value> {
        match self.amf3_header(v)? {
            Header::Reference(r) => Ok(r),
            Header::Inline(len) => {
                self.check_size("xml length", len as u64)?;
                let text = self.bytes.utf8("xml length", len)?;
                self.count_object()?;
                let value = v.xml(kind, text)?;
                self.amf3_leaf(v, value)
            }
        }
    }

    fn amf3_byte_array(&mut self, v: &mut V) -> Result<V::Value> {
        match self.amf3_header(v)? {
            Header::Reference(r) => Ok(r),
            Header::Inline(len) => {
                self.check_size("bytearray length", len as u64)?;
                let bytes = self.bytes.take(len)?;
                self.count_object()?;
                let value = v.byte_array(bytes)?;
                self.amf3_leaf(v, value)
            }
        }
    }

    fn amf3_number_vector(&mut self, v: &mut V, kind: NumberVectorKind) -> Result<V::Value> {
        match self.amf3_header(v)? {
            Header::Reference(r) => Ok(r),
            Header::Inline(len) => {
                let fixed = self.bytes.u8()? != 0;
                self.bytes
                    .check_count("vector length", len as u64, kind.item_size() as u64)?;
                let raw = self.bytes.take(len * kind.item_size())?;
                self.count_object()?;
                let value = v.number_vector(kind, fixed, raw)?;
                self.amf3_leaf(v, value)
            }
        }
    }

    fn amf3_array(&mut self, v: &mut V) -> Result<V::Value> {
        let dense = match self.amf3_header(v)? {
            Header::Reference(r) => return Ok(r),
            Header::Inline(len) => len,
        };
        self.bytes.check_count("array length", dense as u64, 1)?;
        self.enter()?;
        self.count_object()?;
        let mut key = self.amf3_key(v)?;
        let kind = if key.is_some() {
            ArrayKind::Mixed
        } else {
            ArrayKind::Dense
        };
        let index = self.refs3.len() as u32;
        let (mut array, entry) = v.array_begin(kind, dense, index)?;
        self.refs3.push(entry);
        while let Some((text, k)) = key {
            let value = self
                .read_amf3(v)
                .map_err(|e| e.within(PathSegment::key(text)))?;
            v.array_assoc(&mut array, &k, text, value)?;
            key = self.amf3_key(v)?;
        }
        self.amf3_items(v, &mut array, dense)?;
        self.leave();
        v.array_end(array)
    }

    /// `len` values pushed onto `array` (an array's dense part, a Vector.<Object>).
    #[inline]
    fn amf3_items(&mut self, v: &mut V, array: &mut V::Array, len: usize) -> Result<()> {
        for i in 0..len {
            let value = self
                .read_amf3(v)
                .map_err(|e| e.within(PathSegment::Index(i)))?;
            v.array_push(array, value)?;
        }
        Ok(())
    }

    fn amf3_object(&mut self, v: &mut V) -> Result<V::Value> {
        let pos = self.bytes.position();
        let h = self.bytes.u29()?;
        if h & 1 == 0 {
            let index = (h >> 1) as usize;
            return match self.refs3.get(index) {
                Some(entry) => v.reference(entry),
                None => Err(bad_reference("object", index, self.refs3.len(), pos)),
            };
        }
        let traits = if h & 2 == 0 {
            let index = (h >> 2) as usize;
            match self.traits3.get(index) {
                Some(t) => t.clone(),
                None => return Err(bad_reference("traits", index, self.traits3.len(), pos)),
            }
        } else {
            self.amf3_traits(v, h)?
        };
        self.enter()?;
        self.count_object()?;
        let index = self.refs3.len() as u32;
        let (mut object, entry) = v.object_begin(&traits.model, index)?;
        self.refs3.push(entry);
        if traits.externalizable {
            let class_name = traits.names.first().copied().unwrap_or("");
            v.object_external(&mut object, &traits.model, self)
                .map_err(|e| {
                    e.within(PathSegment::key(&format!(
                        "<{}>",
                        clip(class_name, MAX_SHOWN)
                    )))
                })?;
        } else {
            for (slot, name) in traits.names.iter().enumerate().skip(1) {
                let value = self
                    .read_amf3(v)
                    .map_err(|e| e.within(PathSegment::key(name)))?;
                v.object_sealed(&mut object, &traits.model, slot - 1, value)?;
            }
            if traits.dynamic {
                while let Some((text, k)) = self.amf3_key(v)? {
                    let value = self
                        .read_amf3(v)
                        .map_err(|e| e.within(PathSegment::key(text)))?;
                    v.object_dynamic(&mut object, &traits.model, &k, text, value)?;
                }
            }
        }
        self.leave();
        v.object_end(object, &traits.model)
    }

    /// Inline traits: class name, then the sealed member names; registered before the
    /// object body is read.
    fn amf3_traits(&mut self, v: &mut V, h: u32) -> Result<Rc<TraitsEntry<'de, V::Traits>>> {
        let externalizable = h & 4 != 0;
        // An externalizable class's header keeps its dynamic bit as written (no members
        // follow either way): Flash Player sets it for a dynamic class (`TraitsDef`).
        let dynamic = h & 8 != 0;
        let count = if externalizable { 0 } else { (h >> 4) as usize };
        let class_name = self.amf3_text()?;
        self.bytes
            .check_count("sealed member count", count as u64, 1)?;
        // names[0] is the class name; names[1..] the sealed members.
        let mut names = Vec::with_capacity(count + 1);
        names.push(class_name);
        let mut sealed = Vec::with_capacity(count);
        for _ in 0..count {
            let (text, s) = self.amf3_str_text(v)?;
            names.push(text);
            sealed.push(s);
        }
        let lenient = if externalizable {
            self.body_as(class_name)
        } else {
            None
        };
        let model = v.traits(TraitsDef {
            class_name,
            sealed,
            dynamic,
            externalizable,
            lenient,
        })?;
        let entry = Rc::new(TraitsEntry {
            names,
            dynamic,
            externalizable,
            model,
        });
        self.traits3.push(entry.clone());
        Ok(entry)
    }

    fn amf3_object_vector(&mut self, v: &mut V) -> Result<V::Value> {
        let len = match self.amf3_header(v)? {
            Header::Reference(r) => return Ok(r),
            Header::Inline(len) => len,
        };
        let fixed = self.bytes.u8()? != 0;
        let type_name = self.amf3_text()?;
        self.bytes.check_count("vector length", len as u64, 1)?;
        self.enter()?;
        self.count_object()?;
        let index = self.refs3.len() as u32;
        let (mut array, entry) =
            v.array_begin(ArrayKind::ObjectVector { fixed, type_name }, len, index)?;
        self.refs3.push(entry);
        self.amf3_items(v, &mut array, len)?;
        self.leave();
        v.array_end(array)
    }

    fn amf3_dictionary(&mut self, v: &mut V) -> Result<V::Value> {
        let len = match self.amf3_header(v)? {
            Header::Reference(r) => return Ok(r),
            Header::Inline(len) => len,
        };
        let weak_keys = self.bytes.u8()? != 0;
        self.bytes.check_count("dictionary length", len as u64, 2)?;
        self.enter()?;
        self.count_object()?;
        let index = self.refs3.len() as u32;
        let (mut dict, entry) = v.dict_begin(len, weak_keys, index)?;
        self.refs3.push(entry);
        for i in 0..len {
            let key = self
                .read_amf3(v)
                .map_err(|e| e.within(PathSegment::Index(i)))?;
            let value = self
                .read_amf3(v)
                .map_err(|e| e.within(PathSegment::Index(i)))?;
            v.dict_entry(&mut dict, key, value)?;
        }
        self.leave();
        v.dict_end(dict)
    }
}

#[cold]
pub(crate) fn bad_reference(table: &'static str, index: usize, len: usize, pos: usize) -> Error {
    Error::new(
        ErrorKind::BadReference {
            table,
            index: index as u32,
            len,
        },
        pos,
    )
}
