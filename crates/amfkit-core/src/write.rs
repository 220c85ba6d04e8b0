//! The byte writer shared by both AMF versions.

/// An output buffer with big-endian primitives and AMF3's variable-length integers.
#[derive(Debug, Default, Clone)]
pub struct Output {
    pub buf: Vec<u8>,
}

impl Output {
    pub fn with_capacity(n: usize) -> Self {
        Output {
            buf: Vec::with_capacity(n),
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    #[inline]
    pub fn u8(&mut self, b: u8) {
        self.buf.push(b);
    }

    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    #[inline]
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_be_bytes());
    }

    #[inline]
    pub fn i16(&mut self, v: i16) {
        self.bytes(&v.to_be_bytes());
    }

    #[inline]
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_be_bytes());
    }

    #[inline]
    pub fn f64(&mut self, v: f64) {
        self.bytes(&v.to_be_bytes());
    }

    /// AMF3 variable-length unsigned 29-bit integer; `v` must be below 2^29.
    #[inline(always)]
    pub fn u29(&mut self, v: u32) {
        debug_assert!(v < (1 << 29));
        if v < 0x80 {
            self.buf.push(v as u8);
        } else {
            self.u29_long(v);
        }
    }

    #[inline(never)]
    fn u29_long(&mut self, v: u32) {
        if v < 0x4000 {
            self.bytes(&[((v >> 7) | 0x80) as u8, (v & 0x7f) as u8]);
        } else if v < 0x20_0000 {
            self.bytes(&[
                ((v >> 14) | 0x80) as u8,
                ((v >> 7) | 0x80) as u8,
                (v & 0x7f) as u8,
            ]);
        } else {
            self.bytes(&[
                ((v >> 22) | 0x80) as u8,
                ((v >> 15) | 0x80) as u8,
                ((v >> 8) | 0x80) as u8,
                v as u8,
            ]);
        }
    }

    pub fn into_vec(self) -> Vec<u8> {
        self.buf
    }
}

// ---------------------------------------------------------------------------------------
// The encoder: output buffer plus the reference tables of both AMF versions. The value
// writers per version live in `amf0::write` and `amf3::write`; a data model drives them.

use crate::error::{Error, ErrorKind};
use rustc_hash::FxHashMap;

/// Writes AMF0 and AMF3 values into one buffer, with one reference context.
///
/// Identity keys (`id: usize`) name a value for the reference tables: a model passes
/// something unique per shared value (the Python bindings pass object addresses and
/// keep every keyed object alive until the encoder is done).
#[derive(Debug, Default)]
pub struct Encoder {
    /// What was written. Append-only within a reference context: the AMF3 string table
    /// points into it (`strings.rs`), and only length slots are patched in place.
    pub out: Output,
    pub(crate) refs0: FxHashMap<usize, u32>,
    pub(crate) next0: u32,
    pub(crate) strings: crate::strings::StringTable,
    /// Write every AMF3 string inline, never as a reference (the habit of some writers,
    /// kept by a lossless round trip; see [`Decoder::amf3_inline_strings`]). Off by
    /// default: Flash Player references every repeated non-empty string.
    ///
    /// [`Decoder::amf3_inline_strings`]: crate::Decoder::amf3_inline_strings
    pub inline_every_string: bool,
    pub(crate) refs3: FxHashMap<usize, u32>,
    pub(crate) next3: u32,
    pub(crate) traits3: FxHashMap<usize, u32>,
    pub(crate) next_traits: u32,
    /// The last traits key looked up and its index (objects of one class come in runs).
    pub(crate) last_traits: (usize, u32),
}

impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        Encoder {
            out: Output::with_capacity(n),
            ..Self::default()
        }
    }

    /// Make room in the reference tables for about `objects` AMF3 objects and `strings`
    /// strings (what a lossless read of the same values met), so that they do not grow
    /// and rehash one doubling at a time.
    pub fn reserve_amf3(&mut self, objects: usize, strings: usize) {
        self.refs3.reserve(objects);
        self.strings.reserve(strings);
    }

    /// Start a new reference context, keeping what was written.
    pub fn reset(&mut self) {
        self.refs0.clear();
        self.next0 = 0;
        self.strings.clear();
        self.refs3.clear();
        self.next3 = 0;
        self.traits3.clear();
        self.next_traits = 0;
        self.last_traits = (0, 0);
    }

    /// Take the written bytes, leaving the encoder empty and reset.
    pub fn take(&mut self) -> Vec<u8> {
        self.reset();
        std::mem::take(&mut self.out.buf)
    }

    pub fn len(&self) -> usize {
        self.out.len()
    }

    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    #[cold]
    pub fn error(&self, message: impl Into<Box<str>>) -> Error {
        Error::new(ErrorKind::Unencodable(message.into()), self.out.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::Bytes;

    #[test]
    fn u29_round_trip() {
        for v in [
            0u32,
            1,
            127,
            128,
            16383,
            16384,
            2097151,
            2097152,
            0x0fff_ffff,
            0x1fff_ffff,
        ] {
            let mut o = Output::default();
            o.u29(v);
            let mut r = Bytes::new(&o.buf);
            assert_eq!(r.u29().unwrap(), v);
            assert!(r.is_empty());
        }
    }
}
