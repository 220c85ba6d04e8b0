//! Decoding: a `Visitor` that builds Python objects straight from the reader.
//!
//! - `mod.rs` (here): the visitor, its object shapes and the Python objects it makes;
//! - `external.rs`: `DataInput` and the bodies of registered externalizable classes;
//! - `layout.rs`: what a lossless read records beyond the objects' own traits (an
//!   ObjectProxy's body);
//! - `api.rs`: the entry points (`amf0_decode`, `Amf3Decoder`, ...).

pub mod api;
pub mod external;
mod layout;

use std::os::raw::c_int;
use std::sync::Arc;

use amfkit_core::{
    ArrayKind, Decoder as CoreDecoder, Error, ErrorKind, NumberVectorKind, Result, TraitsDef,
    Visitor, XmlKind,
};
use pyo3::exceptions::{PyAttributeError, PyRecursionError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::errors::Pending;
use crate::registry::{is_dunder, snapshot, ClassInfo, Registry};
use crate::types::{types, Types};
use amfkit_core::date as dates;
use amfkit_core::error::shown;
use amfkit_core::flex::{ARRAY_COLLECTION, ARRAY_LIST, OBJECT_PROXY};

pub struct PyVisitor<'py> {
    py: Python<'py>,
    t: &'static Types,
    reg: Arc<Registry>,
    tz_aware: bool,
    pub pending: Pending,
    /// Lossless decoding (`amfkit.sol.loads(..., lossless=True)`): each anonymous or
    /// typed AMF3 object by `id()`, with the traits it was read with (one token per
    /// traits definition, shared by the objects that referenced it), so that a writer
    /// can write the same traits the same way. None otherwise.
    pub layout: Option<Bound<'py, PyDict>>,
}

/// How objects of one traits entry are built.
pub enum Shape {
    Anonymous,
    Typed,
    Registered(Arc<ClassInfo>),
    ArrayCollection,
    ObjectProxy,
}

pub struct PyTraits<'py> {
    shape: Shape,
    alias: Bound<'py, PyString>,
    /// Per sealed slot: the name to set, or None to drop the member.
    keys: Vec<Option<Bound<'py, PyString>>>,
    sealed: Option<Bound<'py, PyTuple>>,
    dynamic: bool,
    /// In lossless decoding, for anonymous and typed objects: `(alias, sealed names,
    /// dynamic)`, one tuple per traits definition read.
    token: Option<Bound<'py, PyAny>>,
    /// An object of these traits had more than `SETATTR_MEMBERS` dynamic members: the
    /// next ones take their instance dict from the first (see `PyObj::members`).
    many_members: std::cell::Cell<bool>,
}

/// An object being read: the object, and where its dynamic members go when that is not
/// the object itself.
pub struct PyObj<'py> {
    obj: Bound<'py, PyAny>,
    /// Whether `obj` is an instance of a registered class whose members are plain
    /// (`ClassInfo::plain_members`).
    plain: bool,
    /// Dynamic members set so far.
    dynamic: u32,
    /// For a plain instance with many dynamic members: its `__dict__`, which they go into
    /// directly (a setattr looks each name up through the class first, which costs more
    /// than taking the dict when there are many). Taken past the first
    /// `SETATTR_MEMBERS`, or at the first when an earlier object of the traits had more.
    members: Option<Bound<'py, PyAny>>,
}

/// Dynamic members set through setattr before a plain instance's dict is taken.
const SETATTR_MEMBERS: u32 = 3;

pub enum PyArr<'py> {
    List {
        obj: Bound<'py, PyAny>,
        len: usize,
        i: usize,
    },
    Mixed {
        obj: Bound<'py, PyAny>,
        next: usize,
    },
    Vector {
        obj: Bound<'py, PyAny>,
    },
}

impl<'py> PyVisitor<'py> {
    pub fn new(py: Python<'py>, tz_aware: bool) -> PyResult<Self> {
        Ok(PyVisitor {
            py,
            t: types()?,
            reg: snapshot(),
            tz_aware,
            pending: Pending::default(),
            layout: None,
        })
    }

    /// Record a Python exception (raised by a hook or the C API): it is what the caller
    /// sees, carried up by the returned error.
    #[cold]
    #[inline(never)]
    pub fn fail(&mut self, err: PyErr) -> Error {
        self.pending.record(err, Error::UNKNOWN_OFFSET)
    }

    /// [`PyVisitor::fail`] with the exception a C API call just set, out of line (the hot
    /// callers stay small).
    #[cold]
    #[inline(never)]
    fn raised(&mut self) -> Error {
        self.fail(PyErr::fetch(self.py))
    }

    #[inline]
    fn own(&mut self, ptr: *mut ffi::PyObject) -> Result<Bound<'py, PyAny>> {
        if ptr.is_null() {
            Err(self.raised())
        } else {
            // SAFETY: `ptr` is a non-null new reference returned by the C API, and the GIL
            // is held (`self.py`).
            Ok(unsafe { Bound::from_owned_ptr(self.py, ptr) })
        }
    }

    #[inline]
    fn check(&mut self, rc: c_int) -> Result<()> {
        if rc < 0 {
            Err(self.raised())
        } else {
            Ok(())
        }
    }

    fn call_type(
        &mut self,
        tp: *mut ffi::PyTypeObject,
        args: &[*mut ffi::PyObject],
    ) -> Result<Bound<'py, PyAny>> {
        // SAFETY: `tp` is one of the types held by `Types` for the process's life and
        // `args` are pointers of objects the caller holds a `Bound` to (the GIL is held).
        // The argument tuple is checked for null, takes a new reference to each argument
        // (PyTuple_SET_ITEM steals one), and is released after the call.
        let ptr = unsafe {
            match args {
                [] => ffi::PyObject_CallNoArgs(tp as *mut ffi::PyObject),
                [a] => ffi::PyObject_CallOneArg(tp as *mut ffi::PyObject, *a),
                _ => {
                    let tuple = ffi::PyTuple_New(args.len() as ffi::Py_ssize_t);
                    if tuple.is_null() {
                        return Err(self.raised());
                    }
                    for (i, a) in args.iter().enumerate() {
                        ffi::Py_INCREF(*a);
                        ffi::PyTuple_SET_ITEM(tuple, i as ffi::Py_ssize_t, *a);
                    }
                    let r =
                        ffi::PyObject_Call(tp as *mut ffi::PyObject, tuple, std::ptr::null_mut());
                    ffi::Py_DECREF(tuple);
                    r
                }
            }
        };
        self.own(ptr)
    }

    fn set_attr(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> Result<()> {
        // SAFETY: the three are live objects (`Bound`s: the GIL is held).
        let rc = unsafe { ffi::PyObject_SetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr()) };
        self.check(rc)
    }

    fn str_obj(&mut self, s: &str) -> Result<Bound<'py, PyAny>> {
        // SAFETY: `s` is valid UTF-8 of `s.len()` bytes; the GIL is held (`self.py`); the
        // new reference is owned at once by `own`, which checks it for null.
        let ptr = unsafe {
            ffi::PyUnicode_FromStringAndSize(s.as_ptr().cast(), s.len() as ffi::Py_ssize_t)
        };
        self.own(ptr)
    }

    /// Set a member on an object under construction.
    #[inline]
    fn set_member(
        &mut self,
        object: &PyObj<'py>,
        traits: &PyTraits<'py>,
        key: &Bound<'py, PyString>,
        value: Bound<'py, PyAny>,
    ) -> Result<()> {
        let obj = &object.obj;
        // SAFETY: the three are live objects (`Bound`s: the GIL is held), and `obj` was
        // made for these traits: an instance of the registered class, or a dict (an
        // anonymous object, or a TypedObject or ObjectProxy, dict subclasses), which is
        // what PyDict_SetItem needs.
        let rc = unsafe {
            match traits.shape {
                // Generic setattr: data descriptors (properties, slots) work, a class's
                // own __setattr__ (frozen dataclasses) is not run.
                Shape::Registered(_) => {
                    ffi::PyObject_GenericSetAttr(obj.as_ptr(), key.as_ptr(), value.as_ptr())
                }
                _ => ffi::PyDict_SetItem(obj.as_ptr(), key.as_ptr(), value.as_ptr()),
            }
        };
        if rc < 0 {
            if let Shape::Registered(info) = &traits.shape {
                // A member the class cannot hold (a __slots__ class, a read-only
                // property) is bad input for that class, not a Python error.
                let err = PyErr::fetch(self.py);
                if err.is_instance_of::<PyAttributeError>(self.py) {
                    return Err(Error::custom(
                        format!(
                            "member {} cannot be set on registered class {}",
                            shown(&key.to_string_lossy()),
                            shown(&info.alias)
                        ),
                        Error::UNKNOWN_OFFSET,
                    ));
                }
                return Err(self.fail(err));
            }
        }
        self.check(rc)
    }

    fn key_int(&mut self, key: &Bound<'py, PyString>, text: &str) -> Result<Bound<'py, PyAny>> {
        // Canonical decimal integers become ints (the keys of an array's dense part).
        {
            let b = text.strip_prefix('-').unwrap_or(text).as_bytes();
            let canonical = !b.is_empty()
                && b.len() <= 18
                && b.iter().all(u8::is_ascii_digit)
                && (b[0] != b'0' || (b.len() == 1 && !text.starts_with('-')));
            if canonical {
                let n: i64 = text.parse().unwrap_or(0);
                // SAFETY: the GIL is held (`self.py`); the new reference is owned at once
                // by `own`, which checks it for null.
                let ptr = unsafe { ffi::PyLong_FromLongLong(n) };
                return self.own(ptr);
            }
        }
        Ok(key.clone().into_any())
    }

    /// The datetime (or `amfkit.Date` when out of range, NaN, or AMF0 tz is set).
    fn make_date(&mut self, millis: f64, tz: i16) -> Result<Bound<'py, PyAny>> {
        if tz == 0 {
            if let Some((y, mo, d, h, mi, s, us)) = dates::fields(millis) {
                let tzinfo = if self.tz_aware {
                    self.t.utc
                } else {
                    // SAFETY: None is a static singleton, and the GIL is held.
                    unsafe { ffi::Py_None() }
                };
                // SAFETY: the datetime C API was loaded by `_setup` (the GIL is held); the
                // fields come from `dates::fields`, within datetime's ranges, and `tzinfo`
                // is timezone.utc (held by `Types`) or None. The new reference is owned at
                // once by `own`.
                let ptr = unsafe {
                    let api = ffi::PyDateTimeAPI();
                    ((*api).DateTime_FromDateAndTime)(
                        y,
                        mo as c_int,
                        d as c_int,
                        h as c_int,
                        mi as c_int,
                        s as c_int,
                        us as c_int,
                        tzinfo,
                        (*api).DateTimeType,
                    )
                };
                return self.own(ptr);
            }
        }
        // SAFETY: the GIL is held (`self.py`); the new reference is owned at once by `own`,
        // which checks it for null.
        let m = unsafe { ffi::PyFloat_FromDouble(millis) };
        let m = self.own(m)?;
        // SAFETY: the GIL is held (`self.py`); the new reference is owned at once by `own`,
        // which checks it for null.
        let z = unsafe { ffi::PyLong_FromLong(tz as _) };
        let z = self.own(z)?;
        self.call_type(self.t.date, &[m.as_ptr(), z.as_ptr()])
    }
}

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
    fn date(&mut self, millis: f64, tz: Option<i16>) -> Result<Self::Value> {
        self.make_date(millis, tz.unwrap_or(0))
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
    fn number_vector(
        &mut self,
        kind: NumberVectorKind,
        fixed: bool,
        raw: &'de [u8],
    ) -> Result<Self::Value> {
        let mut native = Vec::with_capacity(raw.len());
        let code = match kind {
            NumberVectorKind::Int | NumberVectorKind::Uint => {
                for c in raw.chunks_exact(4) {
                    native.extend_from_slice(
                        &u32::from_be_bytes(c.try_into().unwrap()).to_ne_bytes(),
                    );
                }
                if kind == NumberVectorKind::Int {
                    "i"
                } else {
                    "I"
                }
            }
            NumberVectorKind::Double => {
                for c in raw.chunks_exact(8) {
                    native.extend_from_slice(
                        &u64::from_be_bytes(c.try_into().unwrap()).to_ne_bytes(),
                    );
                }
                "d"
            }
        };
        let code = self.str_obj(code)?;
        // A fixed Vector decodes as an amfkit.FixedVector (an array.array subclass).
        let ty = if fixed {
            self.t.fixed_vector
        } else {
            self.t.array
        };
        let arr = self.call_type(ty, &[code.as_ptr()])?;
        let data = PyBytes::new(self.py, &native);
        // SAFETY: `arr` and `data` are live objects (`Bound`s: the GIL is held), and the
        // method name is interned in `Types` for the process's life.
        let r = unsafe {
            ffi::PyObject_CallMethodOneArg(arr.as_ptr(), self.t.names.frombytes, data.as_ptr())
        };
        self.own(r)?;
        Ok(arr)
    }

    fn array_begin(
        &mut self,
        kind: ArrayKind<'de>,
        len: usize,
        _index: u32,
    ) -> Result<(Self::Array, Self::Value)> {
        let arr = match kind {
            ArrayKind::Dense => {
                // SAFETY: the GIL is held (`self.py`); the new reference is owned at once
                // by `own`, which checks it for null.
                let list = unsafe { ffi::PyList_New(len as ffi::Py_ssize_t) };
                let list = self.own(list)?;
                // SAFETY: `list` is the new list of `len` empty slots made above, not yet
                // seen by any Python code: each slot takes a new reference to None
                // (PyList_SET_ITEM steals it).
                unsafe {
                    let none = ffi::Py_None();
                    for i in 0..len {
                        ffi::Py_INCREF(none);
                        ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, none);
                    }
                }
                PyArr::List {
                    obj: list,
                    len,
                    i: 0,
                }
            }
            ArrayKind::Mixed => {
                let obj = self.call_type(self.t.mixed_array, &[])?;
                PyArr::Mixed { obj, next: 0 }
            }
            ArrayKind::Ecma { declared } => {
                // The count field is kept as the array's `length` (what Flash Player sees).
                let obj = self.call_type(self.t.mixed_array, &[])?;
                // SAFETY: the GIL is held; the new reference is owned at once by `own`,
                // which checks it for null.
                let length = self.own(unsafe { ffi::PyLong_FromUnsignedLong(declared.into()) })?;
                // SAFETY: the GIL is held; `obj` is the new MixedArray and `length` an int,
                // both held by `Bound`s; the attribute name is an interned str.
                let r = unsafe {
                    ffi::PyObject_SetAttr(obj.as_ptr(), self.t.names.length, length.as_ptr())
                };
                if r != 0 {
                    return Err(self.raised());
                }
                PyArr::Mixed { obj, next: 0 }
            }
            ArrayKind::ObjectVector { fixed, type_name } => {
                // SAFETY: the GIL is held (`self.py`); the new reference is owned at once
                // by `own`, which checks it for null.
                let items = unsafe { ffi::PyTuple_New(0) };
                let items = self.own(items)?;
                let name = self.str_obj(type_name)?;
                // SAFETY: True and False are static singletons, and the GIL is held.
                let fixed = unsafe {
                    Bound::from_borrowed_ptr(
                        self.py,
                        if fixed {
                            ffi::Py_True()
                        } else {
                            ffi::Py_False()
                        },
                    )
                };
                let obj = self.call_type(
                    self.t.object_vector,
                    &[items.as_ptr(), name.as_ptr(), fixed.as_ptr()],
                )?;
                PyArr::Vector { obj }
            }
        };
        let handle = match &arr {
            PyArr::List { obj, .. } | PyArr::Mixed { obj, .. } | PyArr::Vector { obj } => {
                obj.clone()
            }
        };
        Ok((arr, handle))
    }

    #[inline]
    fn array_push(&mut self, array: &mut Self::Array, value: Self::Value) -> Result<()> {
        match array {
            PyArr::List { obj, len, i } if *i < *len => {
                let p = obj.as_ptr();
                // SAFETY: `p` is the list this visitor made, held by `obj` (the GIL is held).
                if unsafe { ffi::PyList_GET_SIZE(p) } as usize != *len {
                    // A hook was handed this list (a back-reference read by __readamf__)
                    // and resized it: its slots are no longer the ones made for the items.
                    // SAFETY: as above; `value` is a live object.
                    let rc = unsafe { ffi::PyList_Append(p, value.as_ptr()) };
                    return self.check(rc);
                }
                // SAFETY: the list still has the `len` slots it was made with, each holding
                // a reference (None until set), and `*i < len`: the new item takes slot
                // `*i` (its reference moves into the list), then the old one is released.
                unsafe {
                    let slot = (*(p as *mut ffi::PyListObject)).ob_item.add(*i);
                    let old = *slot;
                    *slot = value.into_ptr();
                    ffi::Py_DECREF(old);
                }
                *i += 1;
                Ok(())
            }
            PyArr::List { obj, .. } | PyArr::Vector { obj } => {
                // SAFETY: `obj` is a list (this visitor's own, or an ObjectVector, a list
                // subclass) and `value` a live object, both `Bound`s (the GIL is held).
                let rc = unsafe { ffi::PyList_Append(obj.as_ptr(), value.as_ptr()) };
                self.check(rc)
            }
            PyArr::Mixed { obj, next } => {
                // SAFETY: the GIL is held (`self.py`); the new reference is owned at once
                // by `own`, which checks it for null.
                let key = unsafe { ffi::PyLong_FromSize_t(*next) };
                let key = self.own(key)?;
                *next += 1;
                // SAFETY: `obj` is a MixedArray (a dict subclass); the three are `Bound`s
                // (the GIL is held).
                let rc = unsafe { ffi::PyDict_SetItem(obj.as_ptr(), key.as_ptr(), value.as_ptr()) };
                self.check(rc)
            }
        }
    }

    fn array_assoc(
        &mut self,
        array: &mut Self::Array,
        key: &Self::Str,
        text: &'de str,
        value: Self::Value,
    ) -> Result<()> {
        let key = self.key_int(key, text)?;
        match array {
            PyArr::Mixed { obj, .. } => {
                // SAFETY: `obj` is a MixedArray (a dict subclass); the three are `Bound`s
                // (the GIL is held).
                let rc = unsafe { ffi::PyDict_SetItem(obj.as_ptr(), key.as_ptr(), value.as_ptr()) };
                self.check(rc)
            }
            _ => Err(Error::custom(
                "associative entry in a dense array",
                Error::UNKNOWN_OFFSET,
            )),
        }
    }

    fn array_end(&mut self, array: Self::Array) -> Result<Self::Value> {
        Ok(match array {
            PyArr::List { obj, .. } | PyArr::Mixed { obj, .. } | PyArr::Vector { obj } => obj,
        })
    }

    fn traits(&mut self, def: TraitsDef<'de, Self::Str>) -> Result<Self::Traits> {
        let alias_obj = self.str_obj(def.class_name)?;
        // SAFETY: `str_obj` made `alias_obj` with PyUnicode_FromStringAndSize: it is a str.
        let alias = unsafe { alias_obj.cast_into_unchecked::<PyString>() };
        // An anonymous object is a dict, written back with dynamic members; a sealed
        // member named "" has no dynamic spelling (the empty name ends the list), so such
        // an object stays a TypedObject with its traits, which writes the same bytes.
        let shape = if def.class_name.is_empty()
            && !def.sealed.iter().any(|n| matches!(n.is_empty(), Ok(true)))
        {
            Shape::Anonymous
        } else if let Some(info) = self.reg.by_alias.get(def.class_name) {
            if info.externalizable != def.externalizable {
                let says = if def.externalizable {
                    "externalizable"
                } else {
                    "not externalizable"
                };
                return Err(Error::custom(
                    format!(
                        "class {} is registered as {}, but the input says it is {says}",
                        shown(def.class_name),
                        if info.externalizable {
                            "externalizable"
                        } else {
                            "not externalizable"
                        }
                    ),
                    Error::UNKNOWN_OFFSET,
                ));
            }
            Shape::Registered(info.clone())
        } else if def.externalizable {
            match def.class_name {
                ARRAY_COLLECTION | ARRAY_LIST => Shape::ArrayCollection,
                OBJECT_PROXY => Shape::ObjectProxy,
                other => {
                    return Err(Error::new(
                        ErrorKind::UnknownExternalizable(other.into()),
                        Error::UNKNOWN_OFFSET,
                    ))
                }
            }
        } else {
            Shape::Typed
        };
        let mut keys = Vec::with_capacity(def.sealed.len());
        for name in &def.sealed {
            let keep = match &shape {
                Shape::Registered(info) => {
                    let text = name.to_str().unwrap_or("");
                    if is_dunder(text) {
                        return Err(dunder(text, &info.alias));
                    }
                    info.accepts(text)
                }
                _ => true,
            };
            keys.push(if keep { Some(name.clone()) } else { None });
        }
        let sealed = match shape {
            Shape::Typed => Some(PyTuple::new(self.py, &def.sealed).map_err(|e| self.fail(e))?),
            _ => None,
        };
        let token = match (self.layout.is_some(), &shape) {
            (
                true,
                Shape::Anonymous | Shape::Typed | Shape::ArrayCollection | Shape::ObjectProxy,
            ) => {
                let names = match &sealed {
                    Some(t) => t.clone(),
                    None => PyTuple::new(self.py, &def.sealed).map_err(|e| self.fail(e))?,
                };
                let token = (alias.clone(), names, def.dynamic);
                Some(
                    token
                        .into_pyobject(self.py)
                        .map_err(|e| self.fail(e))?
                        .into_any(),
                )
            }
            _ => None,
        };
        Ok(PyTraits {
            shape,
            alias,
            keys,
            sealed,
            dynamic: def.dynamic,
            token,
            many_members: std::cell::Cell::new(false),
        })
    }

    fn object_begin(
        &mut self,
        traits: &Self::Traits,
        _index: u32,
    ) -> Result<(Self::Object, Self::Value)> {
        let obj = match &traits.shape {
            Shape::Anonymous => {
                // SAFETY: the GIL is held (`self.py`); the new reference is owned at once
                // by `own`, which checks it for null.
                let d = unsafe { ffi::PyDict_New() };
                self.own(d)?
            }
            Shape::Typed => {
                // `TypedObject.__new__` (dict's), then its three slots set here: what its
                // __init__ does for an empty TypedObject, without a Python call per
                // object (members are set next).
                let tp = self.t.typed_object;
                // SAFETY: `tp` is amfkit's TypedObject type, held by `Types` for the
                // process's life, and a dict subclass whose tp_new is dict's (inherited);
                // it is called with the empty tuple (PyTuple_New(0) returns the shared
                // one, released after the call). The new reference is owned at once by
                // `own`, which checks it for null.
                let obj = self.own(unsafe {
                    match (*tp).tp_new {
                        Some(new) => {
                            let args = ffi::PyTuple_New(0);
                            let r = new(tp, args, std::ptr::null_mut());
                            ffi::Py_DECREF(args);
                            r
                        }
                        None => std::ptr::null_mut(),
                    }
                })?;
                // SAFETY: the name is interned in `Types` for the process's life, and the
                // GIL is held.
                let an = unsafe { Bound::from_borrowed_ptr(self.py, self.t.names.alias) };
                self.set_attr(&obj, &an, traits.alias.as_any())?;
                let sealed = traits
                    .sealed
                    .as_ref()
                    .map(|s| s.clone().into_any())
                    .unwrap();
                // SAFETY: True and False are static singletons, and the GIL is held.
                let dynamic = unsafe {
                    Bound::from_borrowed_ptr(
                        self.py,
                        if traits.dynamic {
                            ffi::Py_True()
                        } else {
                            ffi::Py_False()
                        },
                    )
                };
                let n = &self.t.names;
                // SAFETY: the names are interned in `Types` for the process's life, and the
                // GIL is held.
                let (sn, dn) = unsafe {
                    (
                        Bound::from_borrowed_ptr(self.py, n.sealed),
                        Bound::from_borrowed_ptr(self.py, n.dynamic),
                    )
                };
                self.set_attr(&obj, &sn, &sealed)?;
                self.set_attr(&obj, &dn, &dynamic)?;
                obj
            }
            Shape::Registered(info) => {
                // cls.__new__(cls): no __init__, no import, nothing else runs.
                let tp = info.cls.as_ptr() as *mut ffi::PyTypeObject;
                // SAFETY: `tp` is the registered class, a type object kept alive by the
                // registry snapshot this visitor holds (the GIL is held). Its tp_new is
                // called as `cls.__new__(cls)` would be, with the empty tuple
                // (PyTuple_New(0) returns the shared one), released after the call; without
                // a tp_new a TypeError is set and null returned, as the C API does.
                let ptr = unsafe {
                    match (*tp).tp_new {
                        Some(new) => {
                            let args = ffi::PyTuple_New(0);
                            let r = new(tp, args, std::ptr::null_mut());
                            ffi::Py_DECREF(args);
                            r
                        }
                        None => {
                            ffi::PyErr_SetString(
                                ffi::PyExc_TypeError,
                                c"registered class cannot be instantiated".as_ptr(),
                            );
                            std::ptr::null_mut()
                        }
                    }
                };
                self.own(ptr)?
            }
            Shape::ArrayCollection => self.call_type(self.t.array_collection, &[])?,
            Shape::ObjectProxy => self.call_type(self.t.object_proxy, &[])?,
        };
        if let (Some(layout), Some(token)) = (self.layout.clone(), &traits.token) {
            let id = obj.as_ptr() as usize;
            if let Err(e) = layout.set_item(id, (&obj, token)) {
                return Err(self.fail(e));
            }
        }
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held).
        let plain = matches!(&traits.shape, Shape::Registered(info) if info.plain_members(unsafe { ffi::Py_TYPE(obj.as_ptr()) }));
        Ok((
            PyObj {
                obj: obj.clone(),
                plain,
                dynamic: 0,
                members: None,
            },
            obj,
        ))
    }

    #[inline]
    fn object_sealed(
        &mut self,
        object: &mut Self::Object,
        traits: &Self::Traits,
        slot: usize,
        value: Self::Value,
    ) -> Result<()> {
        match traits.keys.get(slot) {
            Some(Some(key)) => self.set_member(object, traits, key, value),
            _ => Ok(()),
        }
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
        if let Shape::Registered(info) = &traits.shape {
            if is_dunder(text) {
                return Err(dunder(text, &info.alias));
            }
            if !info.accepts(text) {
                return Ok(());
            }
        }
        if object.plain {
            object.dynamic += 1;
            if object.members.is_none()
                && (traits.many_members.get() || object.dynamic > SETATTR_MEMBERS)
            {
                traits.many_members.set(true);
                // SAFETY: `obj` is an instance of a class with Python's own `__dict__`
                // (the GIL is held); the new reference is owned at once by `own`, which
                // checks it for null.
                let d = unsafe {
                    ffi::PyObject_GenericGetDict(object.obj.as_ptr(), std::ptr::null_mut())
                };
                object.members = Some(self.own(d)?);
            }
            if let Some(members) = &object.members {
                // SAFETY: the three are live objects (`Bound`s: the GIL is held) and
                // `members` is the instance's dict, a dict.
                let rc =
                    unsafe { ffi::PyDict_SetItem(members.as_ptr(), key.as_ptr(), value.as_ptr()) };
                return self.check(rc);
            }
        }
        self.set_member(object, traits, key, value)
    }

    fn object_external(
        &mut self,
        object: &mut Self::Object,
        traits: &Self::Traits,
        decoder: &mut CoreDecoder<'de, Self>,
    ) -> Result<()> {
        match &traits.shape {
            Shape::ArrayCollection => {
                let body = decoder.read_amf3(self)?;
                if !body.is_instance_of::<PyList>() {
                    return Err(Error::custom(
                        "an ArrayCollection body that is not an array",
                        decoder.position(),
                    ));
                }
                // SAFETY: `object` is the ArrayCollection made by object_begin (a list
                // subclass) and `body` was checked to be a list; both are `Bound`s (the GIL
                // is held).
                let r = unsafe { ffi::PyList_SetSlice(object.obj.as_ptr(), 0, 0, body.as_ptr()) };
                self.check(r)
            }
            Shape::ObjectProxy => {
                let body = decoder.read_amf3(self)?;
                if !body.is_instance_of::<PyDict>() {
                    return Err(Error::custom(
                        "an ObjectProxy body that is not an object",
                        decoder.position(),
                    ));
                }
                // SAFETY: `object` is the ObjectProxy made by object_begin (a dict
                // subclass) and `body` was checked to be a dict; both are `Bound`s (the GIL
                // is held).
                let r = unsafe { ffi::PyDict_Update(object.obj.as_ptr(), body.as_ptr()) };
                self.check(r)?;
                self.layout_proxy_body(&object.obj, &body)
            }
            Shape::Registered(_) => {
                let r = self.read_external(&object.obj, decoder);
                // Each level of registered externalizable objects nests Python frames
                // (__readamf__, read_object): past Python's recursion limit that is
                // input nested too deep, whatever max_depth allows.
                if r.is_err() && self.pending.is_instance_of::<PyRecursionError>(self.py) {
                    self.pending.take();
                    return Err(Error::custom(
                        "externalizable objects nested deeper than python's recursion limit",
                        decoder.position(),
                    ));
                }
                r
            }
            _ => Err(self.unknown_external(traits, decoder.position())),
        }
    }

    fn unknown_external(&mut self, traits: &Self::Traits, offset: usize) -> Error {
        Error::new(
            ErrorKind::UnknownExternalizable(traits.alias.to_string().into()),
            offset,
        )
    }

    #[inline]
    fn object_end(&mut self, object: Self::Object, _traits: &Self::Traits) -> Result<Self::Value> {
        Ok(object.obj)
    }

    fn dict_begin(
        &mut self,
        _len: usize,
        weak_keys: bool,
        _index: u32,
    ) -> Result<(Self::Dict, Self::Value)> {
        let obj = self.call_type(self.t.dictionary, &[])?;
        // SAFETY: True and False are static singletons, and the GIL is held.
        let weak = unsafe {
            Bound::from_borrowed_ptr(
                self.py,
                if weak_keys {
                    ffi::Py_True()
                } else {
                    ffi::Py_False()
                },
            )
        };
        // SAFETY: the name is interned in `Types` for the process's life, and the GIL is
        // held.
        let name = unsafe { Bound::from_borrowed_ptr(self.py, self.t.names.weak_keys) };
        self.set_attr(&obj, &name, &weak)?;
        Ok((obj.clone(), obj))
    }

    fn dict_entry(
        &mut self,
        dict: &mut Self::Dict,
        key: Self::Value,
        value: Self::Value,
    ) -> Result<()> {
        // SAFETY: `dict` is the Dictionary made by dict_begin (a dict subclass); the three
        // are `Bound`s (the GIL is held).
        let rc = unsafe { ffi::PyDict_SetItem(dict.as_ptr(), key.as_ptr(), value.as_ptr()) };
        if rc == 0 {
            return Ok(());
        }
        // An unhashable key (an object or array) is wrapped, compared by identity.
        let err = PyErr::fetch(self.py);
        if !err.is_instance_of::<PyTypeError>(self.py) {
            return Err(self.fail(err));
        }
        let wrapped = self.call_type(self.t.object_key, &[key.as_ptr()])?;
        // SAFETY: as above.
        let rc = unsafe { ffi::PyDict_SetItem(dict.as_ptr(), wrapped.as_ptr(), value.as_ptr()) };
        self.check(rc)
    }

    fn dict_end(&mut self, dict: Self::Dict) -> Result<Self::Value> {
        Ok(dict)
    }
}

#[cold]
fn dunder(name: &str, alias: &str) -> Error {
    Error::custom(
        format!(
            "member {} is not allowed on registered class {}",
            shown(name),
            shown(alias)
        ),
        Error::UNKNOWN_OFFSET,
    )
}
