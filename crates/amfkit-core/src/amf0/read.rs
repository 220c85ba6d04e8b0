//! The AMF0 value reader (AMF0 specification, section 2).

use std::rc::Rc;

use super::marker as m;
use crate::amf3::read::bad_reference;
use crate::decoder::Decoder;
use crate::error::{Error, ErrorKind, PathSegment, Result};
use crate::visit::{ArrayKind, TraitsDef, Visitor, XmlKind};

/// Keys and string values up to this many bytes are made once per stream (AMF0 has no
/// string references: names and short values repeat in every object).
const KEY_CACHE_MAX_LEN: usize = 64;
const KEY_CACHE_MAX_ENTRIES: usize = 4096;

impl<'de, V: Visitor<'de>> Decoder<'de, V> {
    /// Read one AMF0 value (an AVM+ marker switches to AMF3 for that value).
    pub fn read_amf0(&mut self, v: &mut V) -> Result<V::Value> {
        let start = self.bytes.position();
        match self.bytes.u8()? {
            m::NUMBER => {
                let d = self.bytes.f64()?;
                v.amf0_number(d)
            }
            m::BOOLEAN => {
                let b = self.bytes.u8()?;
                v.boolean(b != 0)
            }
            m::STRING => {
                let len = self.bytes.u16()? as usize;
                self.amf0_string(v, len)
            }
            m::OBJECT => {
                let traits = self.amf0_class(v, "")?;
                self.amf0_object(v, traits)
            }
            m::NULL => v.null(),
            m::UNDEFINED => v.undefined(),
            m::REFERENCE => {
                let index = self.bytes.u16()? as usize;
                match self.refs0.get(index) {
                    Some(entry) => v.reference(entry),
                    None => Err(bad_reference("object", index, self.refs0.len(), start + 1)),
                }
            }
            m::ECMA_ARRAY => self.amf0_ecma_array(v),
            m::STRICT_ARRAY => self.amf0_strict_array(v),
            m::DATE => {
                let millis = self.bytes.f64()?;
                let tz = self.bytes.i16()?;
                self.count_object()?;
                let value = v.date(millis, Some(tz))?;
                self.amf0_leaf(v, value)
            }
            m::LONG_STRING => {
                let len = self.bytes.u32()? as usize;
                self.amf0_string(v, len)
            }
            m::UNSUPPORTED => v.unsupported(),
            m::XML_DOCUMENT => {
                let len = self.bytes.u32()? as u64;
                self.check_size("xml length", len)?;
                let text = self.bytes.utf8("xml length", len as usize)?;
                self.count_object()?;
                let value = v.xml(XmlKind::Document, text)?;
                self.amf0_leaf(v, value)
            }
            m::TYPED_OBJECT => {
                let name = self.read_utf()?;
                let traits = self.amf0_class(v, name)?;
                self.amf0_object(v, traits)
            }
            m::AVMPLUS => {
                self.enter()?;
                let value = self.read_amf3(v);
                self.leave();
                v.switched(value?)
            }
            m::MOVIECLIP => Err(reserved(m::MOVIECLIP, "movieclip", start)),
            m::RECORDSET => Err(reserved(m::RECORDSET, "recordset", start)),
            m::OBJECT_END => Err(Error::new(ErrorKind::ObjectEndOutsideObject, start)),
            marker => Err(Error::new(
                ErrorKind::UnknownMarker { version: 0, marker },
                start,
            )),
        }
    }

    /// Give a date or an XML document its slot in the reference table. The AMF0
    /// specification lists only objects and arrays as referenceable, but Flash Player
    /// numbers every Date and XML document too, and refers to them (a .sol file Flash
    /// wrote, stored by Ruffle's `amf0_serde_suite` test, numbers its references only
    /// that way), so amfkit reads and writes AMF0 as Flash Player does.
    #[inline]
    fn amf0_leaf(&mut self, v: &mut V, value: V::Value) -> Result<V::Value> {
        let index = self.refs0.len() as u32;
        let entry = v.handle(index, &value);
        self.refs0.push(entry);
        Ok(value)
    }

    fn amf0_string(&mut self, v: &mut V, len: usize) -> Result<V::Value> {
        self.check_size("string length", len as u64)?;
        let text = self.bytes.utf8("string length", len)?;
        // Values go through the cache while at least one in four is found there (after
        // the first 64): a stream of distinct values (ids, labels) does not pay for it.
        let (looked, found) = self.values0;
        let s = if len <= KEY_CACHE_MAX_LEN && (looked < 64 || found >= looked / 4) {
            let hit = self.keys0.get(text).cloned();
            self.values0 = (looked.saturating_add(1), found + u32::from(hit.is_some()));
            match hit {
                Some(s) => s,
                None => self.amf0_new_cached_str(v, text)?,
            }
        } else {
            v.str(text)?
        };
        v.string(&s)
    }

    /// The model's string for a short text, made once per stream: AMF0 has no string
    /// references, so member names and short values repeat object after object. The
    /// cache holds at most `KEY_CACHE_MAX_ENTRIES` texts (then new ones are made each
    /// time).
    #[inline]
    fn amf0_cached_str(&mut self, v: &mut V, text: &'de str) -> Result<V::Str> {
        if let Some(s) = self.keys0.get(text) {
            return Ok(s.clone());
        }
        self.amf0_new_cached_str(v, text)
    }

    /// A text not in the cache: the model's string, kept if there is room.
    fn amf0_new_cached_str(&mut self, v: &mut V, text: &'de str) -> Result<V::Str> {
        let s = v.str(text)?;
        if self.keys0.len() < KEY_CACHE_MAX_ENTRIES {
            self.keys0.insert(text, s.clone());
        }
        Ok(s)
    }

    /// The model's traits for an AMF0 class name ("" for anonymous objects), resolved
    /// once per name and stream.
    fn amf0_class(&mut self, v: &mut V, name: &'de str) -> Result<Rc<V::Traits>> {
        if let Some(t) = self.classes0.get(name) {
            return Ok(t.clone());
        }
        let def = TraitsDef {
            class_name: name,
            sealed: Vec::new(),
            dynamic: true,
            externalizable: false,
            lenient: None,
        };
        let traits = Rc::new(v.traits(def)?);
        self.classes0.insert(name, traits.clone());
        Ok(traits)
    }

    /// A property name: u16 length and UTF-8; `None` at the empty name followed by the
    /// object-end marker. An empty name followed by anything else is a member named ""
    /// (0x09 is never a value marker, so the two cannot be confused).
    #[inline]
    fn amf0_key(&mut self, v: &mut V) -> Result<Option<(&'de str, V::Str)>> {
        let len = self.bytes.u16()? as usize;
        if len == 0 {
            if self.bytes.peek() == Some(m::OBJECT_END) {
                self.bytes.u8()?;
                return Ok(None);
            }
            if self.bytes.is_empty() {
                return Err(self.bytes.eof(1));
            }
            return Ok(Some(("", v.str("")?)));
        }
        let text = self.bytes.utf8("key length", len)?;
        if len <= KEY_CACHE_MAX_LEN {
            return Ok(Some((text, self.amf0_cached_str(v, text)?)));
        }
        Ok(Some((text, v.str(text)?)))
    }

    fn amf0_object(&mut self, v: &mut V, traits: Rc<V::Traits>) -> Result<V::Value> {
        self.enter()?;
        self.count_object()?;
        let index = self.refs0.len() as u32;
        let (mut object, entry) = v.object_begin(&traits, index)?;
        self.refs0.push(entry);
        while let Some((text, key)) = self.amf0_key(v)? {
            let value = self
                .read_amf0(v)
                .map_err(|e| e.within(PathSegment::key(text)))?;
            v.object_dynamic(&mut object, &traits, &key, text, value)?;
        }
        self.leave();
        v.object_end(object, &traits)
    }

    fn amf0_ecma_array(&mut self, v: &mut V) -> Result<V::Value> {
        // The count is unreliable (peers write 0 with entries present): a hint only.
        let count = self.bytes.u32()? as usize;
        let hint = count.min(self.bytes.left() / 4);
        self.enter()?;
        self.count_object()?;
        let index = self.refs0.len() as u32;
        let declared = count as u32;
        let (mut array, entry) = v.array_begin(ArrayKind::Ecma { declared }, hint, index)?;
        self.refs0.push(entry);
        while let Some((text, key)) = self.amf0_key(v)? {
            let value = self
                .read_amf0(v)
                .map_err(|e| e.within(PathSegment::key(text)))?;
            v.array_assoc(&mut array, &key, text, value)?;
        }
        self.leave();
        v.array_end(array)
    }

    fn amf0_strict_array(&mut self, v: &mut V) -> Result<V::Value> {
        let count = self.bytes.u32()? as usize;
        self.bytes.check_count("array length", count as u64, 1)?;
        self.enter()?;
        self.count_object()?;
        let index = self.refs0.len() as u32;
        let (mut array, entry) = v.array_begin(ArrayKind::Dense, count, index)?;
        self.refs0.push(entry);
        for i in 0..count {
            let value = self
                .read_amf0(v)
                .map_err(|e| e.within(PathSegment::Index(i)))?;
            v.array_push(&mut array, value)?;
        }
        self.leave();
        v.array_end(array)
    }
}

#[cold]
fn reserved(marker: u8, name: &'static str, pos: usize) -> Error {
    Error::new(ErrorKind::ReservedMarker { marker, name }, pos)
}
