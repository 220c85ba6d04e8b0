//! What a value is, for the writers of both versions: the kinds the cold paths tell
//! apart (the hot exact types are dispatched before, in `amf3`/`amf0`), and the kinds of
//! a dict's keys.

use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;

use super::dictwalk;
use super::PyEncoder;
use crate::registry::ClassInfo;

/// The kinds of value the cold paths tell apart (the hot exact types are handled
/// before); both AMF versions classify with `PyEncoder::classify`.
pub(super) enum Cold {
    Undefined,
    Registered(&'static ClassInfo),
    TypedObject,
    Table,
    Xml { e4x: bool },
    MixedArray,
    Dictionary,
    ObjectVector,
    Collection { array: bool },
    Opaque,
    AmfDate,
    DateTime,
    Bytes,
    NumberArray,
    Str,
    Int,
    Float,
    Dict,
    Seq,
    Set,
    Unknown,
}

/// What the keys of a dict are: all str (an object), ints and strs (an ECMA array in
/// AMF0, a Dictionary in AMF3), or anything else (a Dictionary).
pub(super) enum Keys {
    Str,
    IntOrStr,
    Other,
}

impl<'py> PyEncoder<'py> {
    /// The registry entry of a type, if registered (the last one found is cached: a
    /// graph usually holds many objects of one class in a row). The reference lives as
    /// long as the registry snapshot this encoder holds.
    #[inline]
    fn registered(&mut self, tp: *mut ffi::PyTypeObject) -> Option<&'static ClassInfo> {
        if tp as usize == self.last_class.0 {
            // Safety: see below; the cached pointer came from the same snapshot.
            return Some(unsafe { &*self.last_class.1 });
        }
        let info = self.reg.by_type.get(&(tp as usize))?;
        let ptr = Arc::as_ptr(info);
        self.last_class = (tp as usize, ptr);
        // Safety: `self.reg` (an Arc) keeps the entry alive for this encoder's life,
        // and an encoder never outlives the call that made it.
        Some(unsafe { &*ptr })
    }

    /// What a value that is not one of the hot exact types is, for either version.
    pub(super) fn classify(&mut self, obj: &Bound<'py, PyAny>) -> Cold {
        let p = obj.as_ptr();
        let t = self.t;
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held).
        let tp = unsafe { ffi::Py_TYPE(p) };
        if p == t.undefined {
            return Cold::Undefined;
        }
        if let Some(info) = self.registered(tp) {
            return Cold::Registered(info);
        }
        let kind = match tp {
            _ if tp == t.typed_object => Cold::TypedObject,
            _ if tp == t.table => Cold::Table,
            _ if tp == t.xml => Cold::Xml { e4x: true },
            _ if tp == t.xml_document => Cold::Xml { e4x: false },
            _ if tp == t.mixed_array => Cold::MixedArray,
            _ if tp == t.dictionary => Cold::Dictionary,
            _ if tp == t.object_vector => Cold::ObjectVector,
            _ if tp == t.array_collection => Cold::Collection { array: true },
            _ if tp == t.object_proxy => Cold::Collection { array: false },
            _ if tp == t.opaque => Cold::Opaque,
            _ if tp == t.date => Cold::AmfDate,
            _ if tp == t.array || tp == t.fixed_vector => Cold::NumberArray,
            _ => Cold::Unknown,
        };
        if !matches!(kind, Cold::Unknown) {
            return kind;
        }
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held); the datetime checks
        // use the C API loaded by `_setup`.
        unsafe {
            if ffi::PyDateTime_Check(p) != 0 || ffi::PyDate_Check(p) != 0 {
                Cold::DateTime
            } else if tp == &raw mut ffi::PyMemoryView_Type
                || ffi::PyBytes_Check(p) != 0
                || ffi::PyByteArray_Check(p) != 0
            {
                Cold::Bytes
            // Subclasses: of amfkit's own types first (a subclass of `amfkit.MixedArray`
            // is a MixedArray), then of the plain types.
            } else if ffi::PyUnicode_Check(p) != 0 {
                if ffi::PyType_IsSubtype(tp, t.xml) != 0 {
                    Cold::Xml { e4x: true }
                } else if ffi::PyType_IsSubtype(tp, t.xml_document) != 0 {
                    Cold::Xml { e4x: false }
                } else {
                    Cold::Str
                }
            } else if ffi::PyLong_Check(p) != 0 {
                Cold::Int
            } else if ffi::PyFloat_Check(p) != 0 {
                Cold::Float
            } else if ffi::PyDict_Check(p) != 0 {
                if ffi::PyType_IsSubtype(tp, t.typed_object) != 0 {
                    Cold::TypedObject
                } else if ffi::PyType_IsSubtype(tp, t.mixed_array) != 0 {
                    Cold::MixedArray
                } else if ffi::PyType_IsSubtype(tp, t.dictionary) != 0 {
                    Cold::Dictionary
                } else if ffi::PyType_IsSubtype(tp, t.object_proxy) != 0 {
                    Cold::Collection { array: false }
                } else {
                    Cold::Dict
                }
            } else if ffi::PyList_Check(p) != 0 || ffi::PyTuple_Check(p) != 0 {
                if ffi::PyType_IsSubtype(tp, t.array_collection) != 0 {
                    Cold::Collection { array: true }
                } else if ffi::PyType_IsSubtype(tp, t.object_vector) != 0 {
                    Cold::ObjectVector
                } else {
                    Cold::Seq
                }
            } else if ffi::PyAnySet_Check(p) != 0 {
                Cold::Set
            } else {
                Cold::Unknown
            }
        }
    }

    pub(super) fn key_kinds(p: *mut ffi::PyObject) -> Keys {
        let mut pos: ffi::Py_ssize_t = 0;
        let mut kind = Keys::Str;
        // SAFETY: `p` is a dict (or subclass) the caller holds a `Bound` to, with the GIL
        // held; the borrowed keys are only type-checked, and nothing in the loop runs
        // Python code that could change the dict.
        unsafe {
            if dictwalk::str_keys_only(p) {
                return Keys::Str;
            }
            while let Some((k, _)) = dictwalk::next(p, &mut pos) {
                if ffi::PyUnicode_Check(k) != 0 {
                    continue;
                }
                if ffi::PyLong_Check(k) != 0 && ffi::PyBool_Check(k) == 0 {
                    kind = Keys::IntOrStr;
                    continue;
                }
                return Keys::Other;
            }
        }
        kind
    }
}
