//! The seam between the wire code and a data model.
//!
//! The readers in `amf0` and `amf3` parse bytes and call one method per marker family;
//! a [`Visitor`] builds whatever it wants from them (the [`Value`](crate::Value) tree,
//! or Python objects in the bindings crate). References, string tables, trait tables,
//! limits and bounds checks all live in the reader, so a data model never deals with
//! them: it sees finished strings, resolved traits and already-built shared values.
//!
//! The one method that is handed the [`Decoder`] is [`Visitor::object_external`]; the
//! decoder in turn is generic over the visitor, so this module and `decoder.rs` name
//! each other (one contract from its two sides: see `decoder.rs`).

use crate::decoder::Decoder;
use crate::error::Result;
use crate::lenient::BodyAs;

/// The two kinds of XML text AMF carries, both kept as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum XmlKind {
    /// AS2 `XMLDocument`: AMF0 marker 0x0F, AMF3 marker 0x07.
    Document,
    /// E4X `XML`: AMF3 marker 0x0B.
    E4x,
}

/// The element type of a numeric AS3 Vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NumberVectorKind {
    /// `Vector.<int>`, marker 0x0D, 4-byte signed items.
    Int,
    /// `Vector.<uint>`, marker 0x0E, 4-byte unsigned items.
    Uint,
    /// `Vector.<Number>`, marker 0x0F, 8-byte IEEE 754 items.
    Double,
}

impl NumberVectorKind {
    pub fn item_size(self) -> usize {
        match self {
            NumberVectorKind::Int | NumberVectorKind::Uint => 4,
            NumberVectorKind::Double => 8,
        }
    }
}

/// What kind of ordered container is being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayKind<'de> {
    /// AMF0 strict array, or AMF3 Array with no associative part.
    Dense,
    /// AMF3 Array with an associative part (the dense part follows it).
    Mixed,
    /// AMF0 ECMA array: string keys only. `declared` is its count field as written:
    /// Flash Player writes the AS2 array's `length` there (a holey array of length 15
    /// with two entries says 15), other writers the number of entries, or 0.
    Ecma { declared: u32 },
    /// AMF3 `Vector.<Object>` with its element type name.
    ObjectVector { fixed: bool, type_name: &'de str },
}

/// A class definition as read from the wire (AMF3 traits, or an AMF0 object header).
#[derive(Debug, Clone)]
pub struct TraitsDef<'de, S> {
    /// The class alias; empty for anonymous objects.
    pub class_name: &'de str,
    /// Sealed member names in wire order, already turned into the model's strings.
    pub sealed: Vec<S>,
    /// Whether dynamic members follow the sealed ones. For an externalizable class, the
    /// header's dynamic bit as written: no members follow either way (AMF3 spec 3.12:
    /// the bits above U29O-traits-ext's `0b0111` "are not significant"), but Flash Player
    /// sets it for a dynamic class such as Flex's `ObjectProxy` (`0x0f`), and a lossless
    /// writer keeps it ([`crate::Encoder::amf3_traits_external`]).
    pub dynamic: bool,
    /// Whether the body is written by the class itself (`IExternalizable`).
    pub externalizable: bool,
    /// For an externalizable class: how the decoder's lenient options read its body if
    /// the model does not know the class ([`crate::lenient`]); None: an error.
    pub lenient: Option<BodyAs>,
}

/// A data model built by the readers. `'de` is the lifetime of the input bytes.
///
/// Containers are built in three steps so that cycles work: `*_begin` returns the
/// container under construction and the *handle* the reader stores in its reference
/// table (read before the container's members, which may refer back to it), then the
/// members are added, then `*_end` returns the finished value.
pub trait Visitor<'de>: Sized {
    /// A finished value.
    type Value: Clone;
    /// A string as the model holds it (cached by the reader per AMF3 string table entry).
    type Str: Clone;
    /// A class definition resolved once per traits entry (class lookup, member names).
    type Traits;
    /// An array, ECMA array, mixed array or object vector under construction.
    type Array;
    /// An object under construction.
    type Object;
    /// A Dictionary under construction.
    type Dict;

    fn undefined(&mut self) -> Result<Self::Value>;
    fn null(&mut self) -> Result<Self::Value>;
    fn boolean(&mut self, v: bool) -> Result<Self::Value>;
    /// AMF3 integer (29-bit signed).
    fn integer(&mut self, v: i32) -> Result<Self::Value>;
    fn number(&mut self, v: f64) -> Result<Self::Value>;
    /// An AMF0 number (AMF0's only numeric type). By default the same as `number`.
    fn amf0_number(&mut self, v: f64) -> Result<Self::Value> {
        self.number(v)
    }
    /// Turn text into the model's string (for values, keys and member names).
    fn str(&mut self, s: &'de str) -> Result<Self::Str>;
    /// A string value.
    fn string(&mut self, s: &Self::Str) -> Result<Self::Value>;
    /// A date: milliseconds since the epoch (UTC); `tz` is AMF0's time-zone field.
    fn date(&mut self, millis: f64, tz: Option<i16>) -> Result<Self::Value>;
    fn xml(&mut self, kind: XmlKind, text: &'de str) -> Result<Self::Value>;
    fn byte_array(&mut self, bytes: &'de [u8]) -> Result<Self::Value>;
    /// A numeric vector; `raw` holds the big-endian items as on the wire.
    fn number_vector(
        &mut self,
        kind: NumberVectorKind,
        fixed: bool,
        raw: &'de [u8],
    ) -> Result<Self::Value>;
    /// An AMF3 value read after AMF0's AVM+ switch. By default it is the value itself.
    fn switched(&mut self, value: Self::Value) -> Result<Self::Value> {
        Ok(value)
    }
    /// AMF0's `unsupported` marker (0x0D). By default it reads as undefined.
    fn unsupported(&mut self) -> Result<Self::Value> {
        self.undefined()
    }

    /// The reference-table entry for a value just read at `index` of its table (AMF0 or
    /// AMF3). A later reference to `index` yields [`Visitor::reference`] of this entry.
    fn handle(&mut self, index: u32, value: &Self::Value) -> Self::Value {
        let _ = index;
        value.clone()
    }
    /// A value read through a reference to an earlier entry.
    fn reference(&mut self, entry: &Self::Value) -> Result<Self::Value> {
        Ok(entry.clone())
    }

    fn array_begin(
        &mut self,
        kind: ArrayKind<'de>,
        len_hint: usize,
        index: u32,
    ) -> Result<(Self::Array, Self::Value)>;
    fn array_push(&mut self, array: &mut Self::Array, value: Self::Value) -> Result<()>;
    /// An associative entry; `text` is the key as read (the same string as `key`).
    fn array_assoc(
        &mut self,
        array: &mut Self::Array,
        key: &Self::Str,
        text: &'de str,
        value: Self::Value,
    ) -> Result<()>;
    fn array_end(&mut self, array: Self::Array) -> Result<Self::Value>;

    /// Resolve a class definition; called once per AMF3 traits entry, and once per
    /// class name in an AMF0 stream.
    fn traits(&mut self, def: TraitsDef<'de, Self::Str>) -> Result<Self::Traits>;
    fn object_begin(
        &mut self,
        traits: &Self::Traits,
        index: u32,
    ) -> Result<(Self::Object, Self::Value)>;
    /// The sealed member at `slot` (its name is `traits`' sealed name at that slot).
    fn object_sealed(
        &mut self,
        object: &mut Self::Object,
        traits: &Self::Traits,
        slot: usize,
        value: Self::Value,
    ) -> Result<()>;
    /// A dynamic member; `text` is its name as read (the same string as `key`).
    fn object_dynamic(
        &mut self,
        object: &mut Self::Object,
        traits: &Self::Traits,
        key: &Self::Str,
        text: &'de str,
        value: Self::Value,
    ) -> Result<()>;
    /// Read an externalizable body with the decoder (`IDataInput`-style calls). The
    /// default refuses: the body's format is known only to the class.
    fn object_external(
        &mut self,
        object: &mut Self::Object,
        traits: &Self::Traits,
        decoder: &mut Decoder<'de, Self>,
    ) -> Result<()> {
        let _ = (object, decoder);
        Err(self.unknown_external(traits, 0))
    }
    /// The error for an externalizable class this model cannot read.
    fn unknown_external(&mut self, traits: &Self::Traits, offset: usize) -> crate::Error;
    fn object_end(&mut self, object: Self::Object, traits: &Self::Traits) -> Result<Self::Value>;

    fn dict_begin(
        &mut self,
        len_hint: usize,
        weak_keys: bool,
        index: u32,
    ) -> Result<(Self::Dict, Self::Value)>;
    fn dict_entry(
        &mut self,
        dict: &mut Self::Dict,
        key: Self::Value,
        value: Self::Value,
    ) -> Result<()>;
    fn dict_end(&mut self, dict: Self::Dict) -> Result<Self::Value>;
}
