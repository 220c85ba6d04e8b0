//! The byte reader shared by both AMF versions: bounds-checked, never allocates.

use crate::error::{Error, ErrorKind, Result};

/// A cursor over borrowed input. Every read checks the bytes left first.
#[derive(Debug, Clone)]
pub struct Bytes<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Where an opaque body that took the rest of the input started ([`Bytes::rest`]):
    /// a read past the end is then an [`ErrorKind::AfterOpaque`].
    opaque: Option<usize>,
}

impl<'a> Bytes<'a> {
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Bytes {
            buf,
            pos: 0,
            opaque: None,
        }
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
        if let Some(at) = self.opaque {
            return Error::new(ErrorKind::AfterOpaque { at }, self.buf.len());
        }
        Error::new(
            ErrorKind::UnexpectedEof {
                needed: needed - self.left(),
            },
            self.buf.len(),
        )
    }

    /// Take every byte left, as the opaque body of an object that ends the input
    /// (lenient reading, [`crate::lenient`]); a read after it fails with
    /// [`ErrorKind::AfterOpaque`].
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.opaque = Some(self.pos);
        self.pos = self.buf.len();
        s
    }

    /// Where the opaque body that took the rest of the input started, if one did.
    pub fn opaque_at(&self) -> Option<usize> {
        self.opaque
    }

    /// Make the input end at `end` (a remoting body of known length) and move to
    /// `start`, forgetting any opaque body; returns the whole input, for
    /// [`Bytes::unbound`]. Offsets stay those of the whole input.
    pub(crate) fn bound(&mut self, start: usize, end: usize) -> &'a [u8] {
        let whole = self.buf;
        self.buf = &whole[..end.min(whole.len())];
        self.pos = start.min(self.buf.len());
        self.opaque = None;
        whole
    }

    /// Give back the whole input after [`Bytes::bound`], at position `pos`, with the
    /// opaque marker `opaque`.
    pub(crate) fn unbound(&mut self, whole: &'a [u8], pos: usize, opaque: Option<usize>) {
        self.buf = whole;
        self.pos = pos;
        self.opaque = opaque;
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
