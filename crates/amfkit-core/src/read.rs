//! The byte reader shared by both AMF versions: bounds-checked, never allocates.

use crate::error::{Error, ErrorKind, Result};

/// A cursor over borrowed input. Every read checks the bytes left first.
#[derive(Debug, Clone)]
pub struct Bytes<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Bytes { buf, pos: 0 }
    }

    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    pub fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn input(&self) -> &'a [u8] {
        self.buf
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn eof(&self, needed: usize) -> Error {
        Error::new(
            ErrorKind::UnexpectedEof {
                needed: needed - self.left(),
            },
            self.buf.len(),
        )
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u8> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.eof(1)),
        }
    }

    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.left() {
            return Err(self.eof(n));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let s = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(s);
        Ok(out)
    }

    #[inline]
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    #[inline]
    pub fn i16(&mut self) -> Result<i16> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    #[inline]
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    #[inline]
    pub fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    #[inline]
    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_be_bytes(self.array()?))
    }

    /// AMF3 variable-length unsigned 29-bit integer (1 to 4 bytes).
    #[inline]
    pub fn u29(&mut self) -> Result<u32> {
        let b = self.u8()?;
        if b < 0x80 {
            return Ok(b as u32);
        }
        self.u29_slow(b)
    }

    #[inline(never)]
    fn u29_slow(&mut self, first: u8) -> Result<u32> {
        let mut v = (first & 0x7f) as u32;
        for i in 1..4 {
            let b = self.u8()?;
            if i == 3 {
                return Ok((v << 8) | b as u32);
            }
            v = (v << 7) | (b & 0x7f) as u32;
            if b < 0x80 {
                return Ok(v);
            }
        }
        unreachable!()
    }

    /// Check that a declared count of items, each at least `min_item` bytes, fits in
    /// what is left, before anything is allocated for it.
    #[inline]
    pub fn check_count(&self, what: &'static str, count: u64, min_item: u64) -> Result<()> {
        if count.saturating_mul(min_item) > self.left() as u64 {
            return Err(Error::new(
                ErrorKind::LengthExceedsInput {
                    what,
                    declared: count,
                    left: self.left(),
                },
                self.pos,
            ));
        }
        Ok(())
    }

    /// Take `len` bytes as UTF-8 text.
    #[inline]
    pub fn utf8(&mut self, what: &'static str, len: usize) -> Result<&'a str> {
        self.check_count(what, len as u64, 1)?;
        let start = self.pos;
        let s = self.take(len)?;
        std::str::from_utf8(s)
            .map_err(|e| Error::new(ErrorKind::InvalidUtf8, start + e.valid_up_to()))
    }
}

// ---------------------------------------------------------------------------------------
// The decoder: input cursor, limits, and the reference tables of both AMF versions.
// The per-version value readers live in `amf0::read` and `amf3::read`.

use crate::limits::Limits;
use crate::visit::Visitor;
use rustc_hash::FxHashMap;
use std::fmt;
use std::rc::Rc;

/// An AMF3 traits table entry: what the reader needs, plus the model's resolved traits.
pub(crate) struct TraitsEntry<'de, T> {
    pub(crate) names: Vec<&'de str>,
    pub(crate) dynamic: bool,
    pub(crate) externalizable: bool,
    pub(crate) model: T,
}

/// Reads AMF0 and AMF3 values from one input, with one reference context.
///
/// The reference tables persist across the top-level values read with one decoder (a
/// .sol body or an RTMP command is one context); [`Decoder::reset`] starts a new one (a
/// remoting packet resets for each header and body).
pub struct Decoder<'de, V: Visitor<'de>> {
    pub(crate) bytes: Bytes<'de>,
    pub(crate) limits: Limits,
    pub(crate) depth: u32,
    pub(crate) objects: u64,
    pub(crate) refs0: Vec<V::Value>,
    pub(crate) classes0: FxHashMap<&'de str, Rc<V::Traits>>,
    pub(crate) keys0: FxHashMap<&'de str, V::Str>,
    /// Short AMF0 string values looked up in `keys0`, and how many were found there
    /// (values stop going through it when few repeat).
    pub(crate) values0: (u32, u32),
    pub(crate) strings: Vec<(&'de str, Option<V::Str>)>,
    /// How many AMF3 string references were read (see [`Decoder::amf3_inline_strings`]).
    pub(crate) string_references: u32,
    pub(crate) refs3: Vec<V::Value>,
    pub(crate) traits3: Vec<Rc<TraitsEntry<'de, V::Traits>>>,
}

impl<'de, V: Visitor<'de>> fmt::Debug for Decoder<'de, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decoder")
            .field("position", &self.bytes.position())
            .field("left", &self.bytes.left())
            .field("limits", &self.limits)
            .field("depth", &self.depth)
            .field("objects", &self.objects)
            .finish_non_exhaustive()
    }
}

impl<'de, V: Visitor<'de>> Decoder<'de, V> {
    pub fn new(input: &'de [u8], limits: Limits) -> Self {
        let mut limits = limits;
        limits.max_depth = limits.max_depth.min(Limits::DEPTH_CEILING);
        Decoder {
            bytes: Bytes::new(input),
            limits,
            depth: 0,
            objects: 0,
            refs0: Vec::new(),
            classes0: FxHashMap::default(),
            keys0: FxHashMap::default(),
            values0: (0, 0),
            strings: Vec::new(),
            string_references: 0,
            refs3: Vec::new(),
            traits3: Vec::new(),
        }
    }

    /// Start a new reference context (both AMF0 and AMF3 tables).
    pub fn reset(&mut self) {
        self.refs0.clear();
        self.classes0.clear();
        self.strings.clear();
        self.string_references = 0;
        self.refs3.clear();
        self.traits3.clear();
    }

    /// Whether the AMF3 strings read in this context came from a writer that never
    /// references a string: one that wrote some string inline twice and no string
    /// reference at all. Flash Player references every repeated non-empty string; a
    /// lossless writer copies the other habit with [`Encoder::inline_every_string`].
    ///
    /// [`Encoder::inline_every_string`]: crate::Encoder::inline_every_string
    pub fn amf3_inline_strings(&self) -> bool {
        if self.string_references > 0 {
            return false;
        }
        let mut seen = rustc_hash::FxHashSet::default();
        self.strings.iter().any(|(text, _)| !seen.insert(*text))
    }

    /// Byte offset of the next read.
    pub fn position(&self) -> usize {
        self.bytes.position()
    }

    /// Whether all input has been read.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The raw cursor, for externalizable bodies and packet framing.
    pub fn bytes(&mut self) -> &mut Bytes<'de> {
        &mut self.bytes
    }

    /// Fail if any input is left.
    pub fn finish(&self) -> Result<()> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::TrailingBytes {
                    count: self.bytes.left(),
                },
                self.bytes.position(),
            ))
        }
    }

    /// An AMF0/IDataInput `readUTF` string: u16 length, then UTF-8.
    pub fn read_utf(&mut self) -> Result<&'de str> {
        let len = self.bytes.u16()? as usize;
        self.bytes.utf8("string length", len)
    }

    #[inline]
    pub(crate) fn enter(&mut self) -> Result<()> {
        if self.depth >= self.limits.max_depth {
            return Err(Error::new(
                ErrorKind::DepthLimit {
                    limit: self.limits.max_depth,
                },
                self.bytes.position(),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    #[inline]
    pub(crate) fn leave(&mut self) {
        self.depth -= 1;
    }

    #[inline]
    pub(crate) fn count_object(&mut self) -> Result<()> {
        self.objects += 1;
        if self.objects > self.limits.max_objects {
            return Err(Error::new(
                ErrorKind::ObjectLimit {
                    limit: self.limits.max_objects,
                },
                self.bytes.position(),
            ));
        }
        Ok(())
    }

    /// Check a declared size of `what` against `max_size` and the bytes left.
    #[inline]
    pub(crate) fn check_size(&self, what: &'static str, len: u64) -> Result<()> {
        if len > self.limits.max_size {
            return Err(Error::new(
                ErrorKind::SizeLimit {
                    what,
                    size: len,
                    limit: self.limits.max_size,
                },
                self.bytes.position(),
            ));
        }
        self.bytes.check_count(what, len, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u29_encodings() {
        let cases: &[(&[u8], u32)] = &[
            (&[0x00], 0),
            (&[0x7f], 127),
            (&[0x81, 0x00], 128),
            (&[0xff, 0x7f], 16383),
            (&[0x81, 0x80, 0x00], 16384),
            (&[0xff, 0xff, 0x7f], 2097151),
            (&[0x80, 0xc0, 0x80, 0x00], 2097152),
            (&[0xff, 0xff, 0xff, 0xff], 0x1fff_ffff),
        ];
        for (bytes, want) in cases {
            let mut r = Bytes::new(bytes);
            assert_eq!(r.u29().unwrap(), *want, "{bytes:x?}");
            assert!(r.is_empty());
        }
    }

    #[test]
    fn truncated_u29_fails() {
        assert!(Bytes::new(&[0x81]).u29().is_err());
        assert!(Bytes::new(&[0xff, 0xff, 0xff]).u29().is_err());
    }

    #[test]
    fn counts_are_checked_before_allocation() {
        let r = Bytes::new(&[1, 2, 3]);
        let e = r.check_count("array length", 1 << 40, 1).unwrap_err();
        assert_eq!(
            e.reason(),
            "array length 1099511627776 exceeds the 3 bytes left"
        );
    }
}
