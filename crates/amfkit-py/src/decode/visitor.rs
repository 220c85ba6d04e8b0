//! The one `impl Visitor for PyVisitor`: each marker family of the reader, and what it
//! becomes. The scalars are made here; every other family is built by the file named at
//! its method (`date.rs`, `array.rs`, `traits.rs`, `object.rs`, `external.rs`,
//! `dictionary.rs`). The methods the reader calls per value or per member are
//! `#[inline]`, and so are the ones that hand over to another file.

use amfkit_core::{
    ArrayKind, Decoder as CoreDecoder, Error, NumberVectorKind, Result, TraitsDef, Visitor, XmlKind,
};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::array::PyArr;
use super::object::PyObj;
use super::traits::PyTraits;
use super::PyVisitor;

impl<'de, 'py> Visitor<'de> for PyVisitor<'py> {
    type Value = Bound<'py, PyAny>;
    type Str = Bound<'py, PyString>;
    type Traits = PyTraits<'py>;
    type Array = PyArr<'py>;
    type Object = PyObj<'py>;
    type Dict = Bound<'py, PyAny>;

    #[inline]
    fn undefined(&mut self) -> Result<Self::Value> {
        // SAFETY: `undefined` is held by `Types` for the process's life, and the GIL is
        // held.
        Ok(unsafe { Bound::from_borrowed_ptr(self.py, self.t.undefined) })
    }
    #[inline]
    fn null(&mut self) -> Result<Self::Value> {
        Ok(self.py.None().into_bound(self.py))
    }
    #[inline]
    fn boolean(&mut self, v: bool) -> Result<Self::Value> {
        // SAFETY: True and False are static singletons, and the GIL is held.
        Ok(unsafe {
            Bound::from_borrowed_ptr(self.py, if v { ffi::Py_True() } else { ffi::Py_False() })
        })
    }
    #[inline]
    fn integer(&mut self, v: i32) -> Result<Self::Value> {
        // SAFETY: the GIL is held (`self.py`); the new reference is owned at once by `own`,
        // which checks it for null.
        let ptr = unsafe { ffi::PyLong_FromLong(v as _) };
        self.own(ptr)
    }
    #[inline]
    fn number(&mut self, v: f64) -> Result<Self::Value> {
        // SAFETY: the GIL is held (`self.py`); the new reference is owned at once by `own`,
        // which checks it for null.
        let ptr = unsafe { ffi::PyFloat_FromDouble(v) };
        self.own(ptr)
    }
    /// AMF0 has only doubles: integral ones (not -0, within 2^53) read as ints.
    #[inline]
    fn amf0_number(&mut self, v: f64) -> Result<Self::Value> {
        const EXACT: f64 = 9_007_199_254_740_992.0;
        if v.fract() == 0.0 && v.abs() <= EXACT && !(v == 0.0 && v.is_sign_negative()) {
            // SAFETY: the GIL is held (`self.py`); the new reference is owned at once by
            // `own`, which checks it for null.
            let ptr = unsafe { ffi::PyLong_FromLongLong(v as i64) };
            return self.own(ptr);
        }
        self.number(v)
    }
    #[inline]
    fn str(&mut self, s: &'de str) -> Result<Self::Str> {
        let o = self.str_obj(s)?;
        // SAFETY: `str_obj` made `o` with PyUnicode_FromStringAndSize: it is a str.
        Ok(unsafe { o.cast_into_unchecked::<PyString>() })
    }
    #[inline]
    fn string(&mut self, s: &Self::Str) -> Result<Self::Value> {
        Ok(s.clone().into_any())
    }
    fn xml(&mut self, kind: XmlKind, text: &'de str) -> Result<Self::Value> {
        let s = self.str_obj(text)?;
        let tp = match kind {
            XmlKind::Document => self.t.xml_document,
            XmlKind::E4x => self.t.xml,
        };
        self.call_type(tp, &[s.as_ptr()])
    }
    fn byte_array(&mut self, bytes: &'de [u8]) -> Result<Self::Value> {
        Ok(PyBytes::new(self.py, bytes).into_any())
    }

    // date.rs
    #[inline]
    fn date(&mut self, millis: f64, tz: Option<i16>) -> Result<Self::Value> {
        self.make_date(millis, tz.unwrap_or(0))
    }

    // array.rs
    #[inline]
    fn number_vector(
        &mut self,
        kind: NumberVectorKind,
        fixed: bool,
        raw: &'de [u8],
    ) -> Result<Self::Value> {
        self.make_number_vector(kind, fixed, raw)
    }
    #[inline]
    fn array_begin(
        &mut self,
        kind: ArrayKind<'de>,
        len: usize,
        _index: u32,
    ) -> Result<(Self::Array, Self::Value)> {
        self.begin_array(kind, len)
    }
    #[inline]
    fn array_push(&mut self, array: &mut Self::Array, value: Self::Value) -> Result<()> {
        self.push_item(array, value)
    }
    #[inline]
    fn array_assoc(
        &mut self,
        array: &mut Self::Array,
        key: &Self::Str,
        text: &'de str,
        value: Self::Value,
    ) -> Result<()> {
        self.assoc_item(array, key, text, value)
    }
    #[inline]
    fn array_end(&mut self, array: Self::Array) -> Result<Self::Value> {
        Ok(array.into_obj())
    }

    // traits.rs
    #[inline]
    fn traits(&mut self, def: TraitsDef<'de, Self::Str>) -> Result<Self::Traits> {
        self.resolve_traits(def)
    }

    // object.rs
    #[inline]
    fn object_begin(
        &mut self,
        traits: &Self::Traits,
        _index: u32,
    ) -> Result<(Self::Object, Self::Value)> {
        self.begin_object(traits)
    }
    #[inline]
    fn object_sealed(
        &mut self,
        object: &mut Self::Object,
        traits: &Self::Traits,
        slot: usize,
        value: Self::Value,
    ) -> Result<()> {
        self.sealed_member(object, traits, slot, value)
    }
    #[inline]
    fn object_dynamic(
        &mut self,
        object: &mut Self::Object,
        traits: &Self::Traits,
        key: &Self::Str,
        text: &'de str,
        value: Self::Value,
    ) -> Result<()> {
        self.dynamic_member(object, traits, key, text, value)
    }
    #[inline]
    fn object_end(&mut self, object: Self::Object, traits: &Self::Traits) -> Result<Self::Value> {
        if object.seen.is_some() {
            self.check_members(&object, traits)?;
        }
        Ok(object.obj)
    }

    // external.rs
    #[inline]
    fn object_external(
        &mut self,
        object: &mut Self::Object,
        traits: &Self::Traits,
        decoder: &mut CoreDecoder<'de, Self>,
    ) -> Result<()> {
        self.external_body(object, traits, decoder)
    }
    #[inline]
    fn unknown_external(&mut self, traits: &Self::Traits, offset: usize) -> Error {
        self.unknown_externalizable(traits, offset)
    }

    // dictionary.rs
    #[inline]
    fn dict_begin(
        &mut self,
        _len: usize,
        weak_keys: bool,
        _index: u32,
    ) -> Result<(Self::Dict, Self::Value)> {
        self.begin_dictionary(weak_keys)
    }
    #[inline]
    fn dict_entry(
        &mut self,
        dict: &mut Self::Dict,
        key: Self::Value,
        value: Self::Value,
    ) -> Result<()> {
        self.dictionary_entry(dict, key, value)
    }
    #[inline]
    fn dict_end(&mut self, dict: Self::Dict) -> Result<Self::Value> {
        Ok(dict)
    }
}
