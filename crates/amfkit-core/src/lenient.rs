//! Lenient reading of what other programs wrote: options of the [`Decoder`], off by
//! default, so that a gateway never guesses at what a client meant.
//!
//! An externalizable class writes its own body, whose format only the class knows. A
//! data model reads the classes it knows (Flex's collections and small messages, and in
//! the Python bindings every registered class); for any other one the reader refuses the
//! input ([`crate::ErrorKind::UnknownExternalizable`]) unless [`Lenient`] says how to
//! read it:
//!
//! - [`BodyAs::ArrayCollection`] or [`BodyAs::ObjectProxy`]: the class is known to write
//!   one AMF3 value as its body (an Array, or an object), as Flex's collections do;
//! - [`BodyAs::Opaque`] ([`Lenient::unknown_externalizable`] for every class not named):
//!   the rest of the input becomes the object's body, kept as bytes
//!   ([`Decoder::read_opaque`]). Nothing tells where such a body ends, so this is sound
//!   only where the object ends its input: the whole value, the last item of the arrays
//!   around it, the last value of a stream, or a remoting body whose length field is
//!   true. When the values around it need more bytes, the error says so
//!   ([`crate::ErrorKind::AfterOpaque`]).
//!
//! Every lenient path stays inside the decoder's limits: an opaque body is a byte array
//! for `max_size` and one object for `max_objects`; a one-value body is read as any
//! value is, depth included.
//!
//! [`Decoder`]: crate::Decoder
//! [`Decoder::read_opaque`]: crate::Decoder::read_opaque

use rustc_hash::FxHashMap;

/// How the body of an externalizable class no data model knows is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyAs {
    /// One AMF3 value, an Array (as Flex's `ArrayCollection` writes).
    ArrayCollection,
    /// One AMF3 value, an object (as Flex's `ObjectProxy` writes).
    ObjectProxy,
    /// The rest of the input, kept as bytes.
    Opaque,
}

impl BodyAs {
    /// The option's name in the Python API and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BodyAs::ArrayCollection => "arraycollection",
            BodyAs::ObjectProxy => "objectproxy",
            BodyAs::Opaque => "opaque",
        }
    }

    /// The variant named `name` (`"arraycollection"`, `"objectproxy"`, `"opaque"`).
    pub fn from_name(name: &str) -> Option<BodyAs> {
        match name {
            "arraycollection" => Some(BodyAs::ArrayCollection),
            "objectproxy" => Some(BodyAs::ObjectProxy),
            "opaque" => Some(BodyAs::Opaque),
            _ => None,
        }
    }
}

/// The lenient options of one decoder. The default is strict: an unknown externalizable
/// class is an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lenient {
    /// Keep the body of every externalizable class no model knows (and `classes` does
    /// not name) as opaque bytes, instead of refusing the input.
    pub opaque_unknown: bool,
    /// Classes whose bodies are read a given way.
    pub classes: FxHashMap<String, BodyAs>,
}

impl Lenient {
    /// Strict reading: no leniency at all.
    pub fn strict() -> Lenient {
        Lenient::default()
    }

    /// Whether these options change nothing.
    pub fn is_strict(&self) -> bool {
        !self.opaque_unknown && self.classes.is_empty()
    }

    /// How to read the body of the externalizable class `class_name` when no model
    /// knows it: what `classes` says, else opaque if `opaque_unknown`, else None (an
    /// error).
    pub fn body_as(&self, class_name: &str) -> Option<BodyAs> {
        match self.classes.get(class_name) {
            Some(&how) => Some(how),
            None if self.opaque_unknown => Some(BodyAs::Opaque),
            None => None,
        }
    }

    /// The `unknown_externalizable` option: `"error"` (the default) or `"opaque"`.
    pub fn unknown_externalizable(&self) -> &'static str {
        if self.opaque_unknown {
            "opaque"
        } else {
            "error"
        }
    }
}
