//! The decoder: the input cursor, the limits, and the reference tables of both AMF
//! versions (one reference context). The per-version value readers are `impl Decoder`
//! blocks in `amf0::read` and `amf3::read`.
//!
//! This module and `visit.rs` name each other, and that stays: they are one contract
//! seen from its two sides. The decoder is generic over the [`Visitor`] (its reference
//! tables hold the model's values, strings and traits), and the visitor's one
//! externalizable hook, [`Visitor::object_external`], is handed the decoder (a class's
//! body format is known only to the class, so the model reads it with the decoder's
//! calls). Breaking the cycle would mean hiding the decoder behind a trait object or a
//! second trait on that hook; the two files stay apart so that the seam a data model
//! implements (`visit.rs`) reads on its own, without the reader's state.

use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::error::{Error, ErrorKind, Result};
use crate::lenient::{BodyAs, Lenient};
use crate::limits::Limits;
use crate::read::Bytes;
use crate::visit::Visitor;

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
    /// Lenient reading ([`crate::lenient`]); None is strict.
    pub(crate) lenient: Option<Arc<Lenient>>,
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
            lenient: None,
        }
    }

    /// Read what others wrote leniently ([`crate::lenient`]); None (the default) is
    /// strict.
    pub fn with_lenient(mut self, lenient: Option<Arc<Lenient>>) -> Self {
        self.lenient = lenient.filter(|l| !l.is_strict());
        self
    }

    /// The lenient options, if any.
    pub fn lenient(&self) -> Option<&Lenient> {
        self.lenient.as_deref()
    }

    /// How the lenient options read the body of an externalizable class that no model
    /// knows (None: they do not; the model refuses it).
    pub(crate) fn body_as(&self, class_name: &str) -> Option<BodyAs> {
        self.lenient.as_ref().and_then(|l| l.body_as(class_name))
    }

    /// The body of an externalizable object read as opaque bytes: everything left of
    /// the input, which must then end with this object (a later read fails with
    /// [`ErrorKind::AfterOpaque`]). It counts as one object and as a byte array of its
    /// size against the limits.
    pub fn read_opaque(&mut self) -> Result<&'de [u8]> {
        self.check_size("opaque body", self.bytes.left() as u64)?;
        self.count_object()?;
        Ok(self.bytes.rest())
    }

    /// Where an opaque body that took the rest of the input started, if one did.
    pub fn opaque_at(&self) -> Option<usize> {
        self.bytes.opaque_at()
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

    /// How many entries the AMF3 string table holds in this context.
    pub fn amf3_strings(&self) -> usize {
        self.strings.len()
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
