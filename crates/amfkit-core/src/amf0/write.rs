//! The AMF0 value writer primitives (AMF0 specification, section 2).

use super::marker as m;
use crate::error::Result;
use crate::write::Encoder;

impl Encoder {
    #[inline]
    pub fn amf0_number(&mut self, d: f64) {
        self.out.u8(m::NUMBER);
        self.out.f64(d);
    }

    #[inline]
    pub fn amf0_bool(&mut self, b: bool) {
        self.out.u8(m::BOOLEAN);
        self.out.u8(b as u8);
    }

    #[inline]
    pub fn amf0_null(&mut self) {
        self.out.u8(m::NULL);
    }

    #[inline]
    pub fn amf0_undefined(&mut self) {
        self.out.u8(m::UNDEFINED);
    }

    /// A string: marker 0x02 with a u16 length, or long string 0x0C past 65535 bytes.
    #[inline]
    pub fn amf0_string(&mut self, s: &str) -> Result<()> {
        let len = s.len();
        if len <= 0xffff {
            self.out.u8(m::STRING);
            self.out.u16(len as u16);
        } else {
            self.amf0_u32_len(m::LONG_STRING, len, "long string")?;
        }
        self.out.bytes(s.as_bytes());
        Ok(())
    }

    fn amf0_u32_len(&mut self, marker: u8, len: usize, what: &str) -> Result<()> {
        if len > u32::MAX as usize {
            return Err(self.error(format!("{what} of {len} bytes exceeds amf0's 4 GiB limit")));
        }
        self.out.u8(marker);
        self.out.u32(len as u32);
        Ok(())
    }

    /// A property name or class name: u16 length, UTF-8.
    #[inline]
    pub fn amf0_utf(&mut self, s: &str) -> Result<()> {
        if s.len() > 0xffff {
            return Err(self.error(format!(
                "a key or class name of {} bytes exceeds amf0's 65535",
                s.len()
            )));
        }
        self.out.u16(s.len() as u16);
        self.out.bytes(s.as_bytes());
        Ok(())
    }

    /// The end of an object's properties: empty name, object-end marker.
    #[inline]
    pub fn amf0_object_end(&mut self) {
        self.out.bytes(&[0x00, 0x00, m::OBJECT_END]);
    }

    /// A reference to `id` if it was written before at an index AMF0 can carry (returns
    /// true); otherwise the next table index is taken (keyed by `id` the first time) and
    /// the caller writes the value with its marker.
    #[inline]
    pub fn amf0_reference(&mut self, id: usize) -> bool {
        if let Some(&index) = self.refs0.get(&id) {
            if index <= 0xffff {
                self.out.u8(m::REFERENCE);
                self.out.u16(index as u16);
                return true;
            }
        }
        self.amf0_register(Some(id));
        false
    }

    /// Take the next AMF0 table index (every object, typed object, ECMA and strict
    /// array, date and XML document takes one, as Flash Player counts them), keyed by
    /// `id` the first time it is seen.
    #[inline]
    pub fn amf0_register(&mut self, id: Option<usize>) -> u32 {
        let index = self.next0;
        self.next0 += 1;
        if let Some(id) = id {
            self.refs0.entry(id).or_insert(index);
        }
        index
    }

    pub fn amf0_forget(&mut self, id: usize) {
        self.refs0.remove(&id);
    }

    /// Write a reference to table entry `index`.
    pub fn amf0_write_reference(&mut self, index: u32) -> Result<()> {
        if index > 0xffff {
            return Err(self.error("an amf0 reference above 65535"));
        }
        self.out.u8(m::REFERENCE);
        self.out.u16(index as u16);
        Ok(())
    }

    #[inline]
    pub fn amf0_object_start(&mut self) {
        self.out.u8(m::OBJECT);
    }

    pub fn amf0_typed_object_start(&mut self, class_name: &str) -> Result<()> {
        self.out.u8(m::TYPED_OBJECT);
        self.amf0_utf(class_name)
    }

    /// ECMA array header; entries follow as `amf0_utf(key)` + value, then `amf0_object_end`.
    pub fn amf0_ecma_array_start(&mut self, count: usize) -> Result<()> {
        self.amf0_u32_len(m::ECMA_ARRAY, count, "ecma array")
    }

    /// Strict array header; `count` values follow.
    pub fn amf0_strict_array_start(&mut self, count: usize) -> Result<()> {
        self.amf0_u32_len(m::STRICT_ARRAY, count, "strict array")
    }

    /// A date; like every referenceable value, the caller took its table index first
    /// ([`Encoder::amf0_reference`] or [`Encoder::amf0_register`]).
    #[inline]
    pub fn amf0_date(&mut self, millis: f64, tz: i16) {
        self.out.u8(m::DATE);
        self.out.f64(millis);
        self.out.i16(tz);
    }

    /// An XML document; the caller took its table index first, as for a date.
    pub fn amf0_xml(&mut self, s: &str) -> Result<()> {
        self.amf0_u32_len(m::XML_DOCUMENT, s.len(), "xml document")?;
        self.out.bytes(s.as_bytes());
        Ok(())
    }

    /// Switch to AMF3 for the next value. The AMF3 tables live as long as this
    /// encoder's reference context.
    #[inline]
    pub fn amf0_avmplus(&mut self) {
        self.out.u8(m::AVMPLUS);
    }

    #[inline]
    pub fn amf0_unsupported(&mut self) {
        self.out.u8(m::UNSUPPORTED);
    }
}
