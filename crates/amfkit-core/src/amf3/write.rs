//! The AMF3 value writer primitives (AMF3 specification, section 3).
//!
//! A data model walks its values and calls these; reference bookkeeping (objects,
//! strings, traits) is done here so that every model writes the same bytes.

use super::marker as m;
use super::{INT_MAX, INT_MIN, MAX_LEN};
use crate::error::Result;
use crate::write::Encoder;

impl Encoder {
    #[inline]
    pub fn amf3_undefined(&mut self) {
        self.out.u8(m::UNDEFINED);
    }

    #[inline]
    pub fn amf3_null(&mut self) {
        self.out.u8(m::NULL);
    }

    #[inline]
    pub fn amf3_bool(&mut self, b: bool) {
        self.out.u8(if b { m::TRUE } else { m::FALSE });
    }

    /// An integer: the 29-bit integer type when it fits, else a double (as Flash does).
    #[inline]
    pub fn amf3_int(&mut self, i: i64) {
        if (INT_MIN..=INT_MAX).contains(&i) {
            self.out.u8(m::INTEGER);
            self.out.u29((i as u32) & 0x1fff_ffff);
        } else {
            self.amf3_double(i as f64);
        }
    }

    #[inline]
    pub fn amf3_double(&mut self, d: f64) {
        self.out.u8(m::DOUBLE);
        self.out.f64(d);
    }

    /// A string value: marker, then the string through the string table.
    #[inline]
    pub fn amf3_string(&mut self, s: &str) -> Result<()> {
        self.out.u8(m::STRING);
        self.amf3_str(s)
    }

    /// A string without marker (keys, names, values) through the string table; the
    /// empty string is never a reference.
    #[inline]
    pub fn amf3_str(&mut self, s: &str) -> Result<()> {
        self.amf3_str_indexed(s).map(drop)
    }

    /// Like [`Encoder::amf3_str`], and return the string-table index of `s` (None for
    /// the empty string, which is never in the table, and for every string when
    /// [`Encoder::inline_every_string`] is set), so that a model can remember
    /// it by the string's identity and write [`Encoder::amf3_str_reference`] next time.
    #[inline]
    pub fn amf3_str_indexed(&mut self, s: &str) -> Result<Option<u32>> {
        if s.is_empty() {
            self.out.u8(0x01);
            return Ok(None);
        }
        if self.inline_every_string {
            self.amf3_len(s.len(), "string")?;
            self.out.bytes(s.as_bytes());
            return Ok(None);
        }
        if s.len() > MAX_LEN {
            // Refused before the table takes it.
            return self.amf3_len(s.len(), "string").map(|_| None);
        }
        let bytes = s.as_bytes();
        let h = crate::strings::hash(bytes);
        if let Some(index) = self.strings.find(&self.out.buf, bytes, h) {
            self.out.u29(index << 1);
            return Ok(Some(index));
        }
        self.amf3_len(s.len(), "string")?;
        let start = self.out.len();
        self.out.bytes(bytes);
        // The table's entry points at the bytes just written (`strings.rs`).
        let index = self.strings.add(h, start, bytes.len());
        Ok(((index as usize) < MAX_LEN).then_some(index))
    }

    /// A reference to string-table entry `index` (from [`Encoder::amf3_str_indexed`]).
    #[inline]
    pub fn amf3_str_reference(&mut self, index: u32) {
        self.out.u29(index << 1);
    }

    /// An inline U29 length header (`len << 1 | 1`), refusing lengths AMF3 cannot carry.
    #[inline]
    pub fn amf3_len(&mut self, len: usize, what: &str) -> Result<()> {
        if len > MAX_LEN {
            return Err(self.error(format!("{what} of {len} exceeds amf3's limit of {MAX_LEN}")));
        }
        self.out.u29(((len as u32) << 1) | 1);
        Ok(())
    }

    /// Write `marker`, then a reference if `id` was written before (returns true), or
    /// register `id` as the next object and return false: the caller writes the body.
    #[inline]
    pub fn amf3_reference(&mut self, marker: u8, id: usize) -> bool {
        self.out.u8(marker);
        let next = self.next3;
        match self.refs3.entry(id) {
            std::collections::hash_map::Entry::Occupied(e) => {
                let index = *e.get();
                self.out.u29(index << 1);
                true
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                if (next as usize) < MAX_LEN {
                    e.insert(next);
                }
                self.next3 += 1;
                false
            }
        }
    }

    /// Take the next object-table index, keyed by `id` when given.
    #[inline]
    pub fn amf3_register(&mut self, id: Option<usize>) -> u32 {
        let index = self.next3;
        self.next3 += 1;
        if let Some(id) = id {
            if (index as usize) < MAX_LEN {
                self.refs3.insert(id, index);
            }
        }
        index
    }

    /// Forget `id` (a model that discards a temporary must do this before its address
    /// can be reused).
    pub fn amf3_forget(&mut self, id: usize) {
        self.refs3.remove(&id);
    }

    /// Write `marker` and a reference to object-table entry `index`.
    pub fn amf3_write_reference(&mut self, marker: u8, index: u32) {
        self.out.u8(marker);
        self.out.u29(index << 1);
    }

    /// Date body (after `amf3_reference(DATE, ..)` returned false).
    #[inline]
    pub fn amf3_date_body(&mut self, millis: f64) {
        self.out.u8(0x01);
        self.out.f64(millis);
    }

    /// ByteArray body.
    #[inline]
    pub fn amf3_bytes_body(&mut self, b: &[u8]) -> Result<()> {
        self.amf3_len(b.len(), "bytearray")?;
        self.out.bytes(b);
        Ok(())
    }

    /// XML or XMLDocument body (XML text is not in the string table).
    pub fn amf3_xml_body(&mut self, s: &str) -> Result<()> {
        self.amf3_bytes_body(s.as_bytes())
    }

    /// Array header: dense length; then associative entries as `amf3_str(key)` + value,
    /// then `amf3_str("")`, then the dense values.
    #[inline]
    pub fn amf3_array_header(&mut self, dense_len: usize) -> Result<()> {
        self.amf3_len(dense_len, "array length")
    }

    /// If the traits keyed by `key` were written before, write a traits reference and
    /// return true.
    #[inline]
    pub fn amf3_traits_reference(&mut self, key: usize) -> bool {
        if key == self.last_traits.0 && key != 0 {
            self.out.u29((self.last_traits.1 << 2) | 1);
            return true;
        }
        match self.traits3.get(&key) {
            Some(&index) => {
                self.last_traits = (key, index);
                self.out.u29((index << 2) | 1);
                true
            }
            None => false,
        }
    }

    /// Inline traits: flags and sealed count, class name, sealed member names.
    pub fn amf3_traits_inline<S: AsRef<str>>(
        &mut self,
        key: Option<usize>,
        class_name: &str,
        sealed: &[S],
        dynamic: bool,
        externalizable: bool,
    ) -> Result<()> {
        const MAX_SEALED: usize = (1 << 25) - 1;
        if sealed.len() > MAX_SEALED {
            return Err(self.error(format!(
                "{} sealed members exceed amf3's limit",
                sealed.len()
            )));
        }
        // U29O-traits-ext as amfkit writes it: 0b0111, no sealed members and no dynamic
        // bit, whatever `dynamic` says (`amf3_traits_external` writes a bit that was read).
        let header = if externalizable {
            0b0111
        } else {
            ((sealed.len() as u32) << 4) | ((dynamic as u32) << 3) | 0b0011
        };
        self.out.u29(header);
        self.amf3_str(class_name)?;
        if !externalizable {
            for name in sealed {
                self.amf3_str(name.as_ref())?;
            }
        }
        let index = self.next_traits;
        self.next_traits += 1;
        if let Some(key) = key {
            self.traits3.insert(key, index);
        }
        Ok(())
    }

    /// Inline traits of an externalizable class with the header's dynamic bit as given
    /// (`0b1111` when set, `0b0111` otherwise): the bit means nothing to a reader, but
    /// Flash Player sets it for a dynamic class (Flex's `ObjectProxy`), and a lossless
    /// writer writes back what it read ([`crate::TraitsDef::dynamic`]).
    pub fn amf3_traits_external(
        &mut self,
        key: Option<usize>,
        class_name: &str,
        dynamic: bool,
    ) -> Result<()> {
        self.out.u29(0b0111 | ((dynamic as u32) << 3));
        self.amf3_str(class_name)?;
        let index = self.next_traits;
        self.next_traits += 1;
        if let Some(key) = key {
            self.traits3.insert(key, index);
        }
        Ok(())
    }

    /// Vector header (after `amf3_reference(VECTOR_*, ..)`): length and fixed flag; an
    /// object vector then writes its type name with `amf3_str`.
    #[inline]
    pub fn amf3_vector_header(&mut self, len: usize, fixed: bool) -> Result<()> {
        self.amf3_len(len, "vector length")?;
        self.out.u8(fixed as u8);
        Ok(())
    }

    /// Dictionary header: entry count and weak-keys flag; then key, value pairs.
    #[inline]
    pub fn amf3_dictionary_header(&mut self, len: usize, weak_keys: bool) -> Result<()> {
        self.amf3_len(len, "dictionary length")?;
        self.out.u8(weak_keys as u8);
        Ok(())
    }
}
