//! Arrays: dense arrays (a `list`), AMF3 arrays with an associative part and AMF0 ECMA
//! arrays (an `amfkit.MixedArray`), `Vector.<Object>` (an `amfkit.ObjectVector`), built
//! item by item; numeric vectors (an `array.array`), built in one go.

use amfkit_core::{ArrayKind, Error, NumberVectorKind, Result};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::PyVisitor;

/// An array under construction: a list filled slot by slot (appended to past its
/// length), a MixedArray keyed by position and name, or an ObjectVector.
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

impl<'py> PyArr<'py> {
    /// The finished array.
    #[inline]
    pub(super) fn into_obj(self) -> Bound<'py, PyAny> {
        match self {
            PyArr::List { obj, .. } | PyArr::Mixed { obj, .. } | PyArr::Vector { obj } => obj,
        }
    }
}

impl<'py> PyVisitor<'py> {
    /// A numeric vector: an `array.array` (an `amfkit.FixedVector` when fixed) of the
    /// items, turned from big-endian to native order.
    pub(super) fn make_number_vector(
        &mut self,
        kind: NumberVectorKind,
        fixed: bool,
        raw: &[u8],
    ) -> Result<Bound<'py, PyAny>> {
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

    /// An array under construction, and its handle for the reference table.
    pub(super) fn begin_array(
        &mut self,
        kind: ArrayKind<'_>,
        len: usize,
    ) -> Result<(PyArr<'py>, Bound<'py, PyAny>)> {
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
    pub(super) fn push_item(
        &mut self,
        array: &mut PyArr<'py>,
        value: Bound<'py, PyAny>,
    ) -> Result<()> {
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

    /// An associative entry (a mixed or ECMA array); a canonical integer key is an int.
    pub(super) fn assoc_item(
        &mut self,
        array: &mut PyArr<'py>,
        key: &Bound<'py, PyString>,
        text: &str,
        value: Bound<'py, PyAny>,
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
}
