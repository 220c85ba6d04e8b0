//! The AMF0 writer: exact-type dispatch of the hot types, then the cold kinds; what AMF0
//! cannot carry goes through the AVM+ switch to AMF3.

use amfkit_core::{PathSegment, Result};
use pyo3::ffi;
use pyo3::prelude::*;

use super::dictwalk;
use super::obtype::{Cold, Keys};
use super::{list_or_tuple_len, PyEncoder, SOLE_OWNER};

impl<'py> PyEncoder<'py> {
    /// Write one AMF0 value; what AMF0 cannot carry goes through the AVM+ switch.
    #[inline]
    pub(crate) fn amf0(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf0_scalar(obj.as_ptr())? {
            return Ok(());
        }
        self.amf0_container(obj)
    }

    /// Write `p` if it is a str, float, int, None or bool (exact types), read in place;
    /// returns false, having written nothing, for anything else (see `amf3_scalar`: no
    /// Python code runs, so the container the caller reads keeps `p` alive).
    #[inline(always)]
    fn amf0_scalar(&mut self, p: *mut ffi::PyObject) -> Result<bool> {
        // SAFETY: `p` is a live object held by the caller or by a container it holds (the
        // GIL is held); PyFloat_AS_DOUBLE reads an exact float, and None/True are
        // compared by address only.
        unsafe {
            let tp = ffi::Py_TYPE(p);
            if tp == &raw mut ffi::PyUnicode_Type {
                let s = self.str_of(p)?;
                self.enc.amf0_string(s)?;
                return Ok(true);
            }
            if tp == &raw mut ffi::PyFloat_Type {
                self.enc.amf0_number(ffi::PyFloat_AS_DOUBLE(p));
                return Ok(true);
            }
            if tp == &raw mut ffi::PyLong_Type {
                self.amf0_int(p)?;
                return Ok(true);
            }
            if p == ffi::Py_None() {
                self.enc.amf0_null();
                return Ok(true);
            }
            if tp == &raw mut ffi::PyBool_Type {
                self.enc.amf0_bool(p == ffi::Py_True());
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Write `p`, a value borrowed from a container that is lent or owned (as
    /// `amf3_lent`).
    #[inline(always)]
    pub(super) fn amf0_lent(&mut self, p: *mut ffi::PyObject) -> Result<()> {
        if self.amf0_scalar(p)? {
            return Ok(());
        }
        let mark = self.lend(p);
        // SAFETY: as in `amf3_lent`: `p` is alive, and stays so while lent.
        let r = self.amf0_container(&*unsafe { Borrowed::from_ptr(self.py, p) });
        self.give_back(mark);
        r
    }

    /// Write a value that is not a hot scalar: a dict, a list or tuple, an instance of
    /// the registered class met last, then the cold kinds.
    #[inline]
    fn amf0_container(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held).
        let tp = unsafe { ffi::Py_TYPE(obj.as_ptr()) };
        if tp == &raw mut ffi::PyDict_Type {
            return self.amf0_dict(obj);
        }
        if tp == &raw mut ffi::PyList_Type || tp == &raw mut ffi::PyTuple_Type {
            return self.amf0_sequence(obj);
        }
        if tp as usize == self.last_class.0 {
            // SAFETY: the cached entry came from `self.reg`, which this encoder holds
            // (see `registered`).
            let info = unsafe { &*self.last_class.1 };
            if !info.externalizable {
                return self.amf0_registered(obj, info);
            }
        }
        self.amf0_cold(obj)
    }

    fn amf0_int(&mut self, p: *mut ffi::PyObject) -> Result<()> {
        let mut overflow = 0;
        // SAFETY: `p` is an int (exact or subclass, classified) the caller holds a `Bound`
        // to, with the GIL held.
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow) };
        let d = if overflow == 0 {
            // SAFETY: the GIL is held; this only reads the thread's error indicator.
            if v == -1 && unsafe { !ffi::PyErr_Occurred().is_null() } {
                return Err(self.raised());
            }
            v as f64
        } else {
            self.big_int(p)?
        };
        self.enc.amf0_number(d);
        Ok(())
    }

    /// The AMF0 counterpart of [`PyEncoder::amf3_ref`]: a reference marker (true), or
    /// the next table index taken (false; the caller writes marker and body).
    #[inline]
    pub(super) fn amf0_ref(&mut self, obj: &Bound<'py, PyAny>) -> bool {
        let p = obj.as_ptr();
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held).
        if unsafe { ffi::Py_REFCNT(p) } <= SOLE_OWNER {
            self.enc.amf0_register(None);
            return false;
        }
        if self.enc.amf0_reference(p as usize) {
            return true;
        }
        self.keep_keyed(p);
        false
    }

    fn amf0_sequence(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf0_ref(obj) {
            return Ok(());
        }
        self.enter()?;
        let p = obj.as_ptr();
        let (is_list, len) = list_or_tuple_len(p);
        self.enc.amf0_strict_array_start(len)?;
        for i in 0..len {
            // SAFETY: as in `amf3_items`: the list's size is checked again first, and
            // the item is borrowed only while no Python code runs.
            let item = unsafe {
                if is_list {
                    if ffi::PyList_GET_SIZE(p) as usize != len {
                        return Err(self.enc.error("a list changed size while being encoded"));
                    }
                    ffi::PyList_GET_ITEM(p, i as ffi::Py_ssize_t)
                } else {
                    ffi::PyTuple_GET_ITEM(p, i as ffi::Py_ssize_t)
                }
            };
            self.amf0_lent(item)
                .map_err(|e| e.within(PathSegment::Index(i)))?;
        }
        self.leave();
        Ok(())
    }

    fn amf0_dict(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        let p = obj.as_ptr();
        match Self::key_kinds(p) {
            Keys::Str => {
                if self.amf0_ref(obj) {
                    return Ok(());
                }
                self.enc.amf0_object_start();
                self.amf0_members(obj, false)
            }
            Keys::IntOrStr => self.amf0_ecma(obj),
            Keys::Other => self.amf0_switch(obj),
        }
    }

    /// Key/value members of a dict (keys rendered with `str()` when `any_key`), then
    /// the object-end marker.
    fn amf0_members(&mut self, obj: &Bound<'py, PyAny>, any_key: bool) -> Result<()> {
        self.enter()?;
        self.amf0_members_in_place(obj.as_ptr(), any_key)?;
        self.leave();
        self.enc.amf0_object_end();
        Ok(())
    }

    /// Every (key, value) of dict `d` (which the caller holds or has lent) as a member:
    /// an exact str key and a scalar value read in place, a container lent with its name
    /// (as in `amf3_member_ptr`); any other name owned after a safepoint.
    pub(super) fn amf0_members_in_place(
        &mut self,
        d: *mut ffi::PyObject,
        any_key: bool,
    ) -> Result<()> {
        let mut pos: ffi::Py_ssize_t = 0;
        // SAFETY: `d` is a dict (or subclass) the caller holds, with the GIL held; the
        // walk stops at the end or if the dict changed size. A lent key and value are
        // used in place only while no Python code runs (an exact str key's text, a
        // scalar value), pushed on the lent stack while a container is written, and
        // owned after a safepoint before anything else.
        while let Some((k, v)) = unsafe { dictwalk::next(d, &mut pos) } {
            // SAFETY: `k` was lent by the dict, alive (above); its type is read only.
            if unsafe { ffi::Py_TYPE(k) } == &raw mut ffi::PyUnicode_Type {
                let key = self.str_of(k)?;
                self.enc.amf0_utf(key)?;
                if self
                    .amf0_scalar(v)
                    .map_err(|e| e.within(PathSegment::key(key)))?
                {
                    continue;
                }
                // The name and the value are read on the dict's reference while they
                // are on the lent stack (`lent.rs`): a safepoint inside owns them, so
                // `key` (the name's text) stays valid.
                let mark = self.lend(k);
                self.lend(v);
                // SAFETY: `v` was lent by the dict and is alive (no Python code ran since).
                let r = self.amf0_container(&*unsafe { Borrowed::from_ptr(self.py, v) });
                let r = r.map_err(|e| e.within(PathSegment::key(key)));
                self.give_back(mark);
                r?;
                continue;
            }
            // A name that is not an exact str (rendered with str(), which may run Python
            // code).
            self.safepoint();
            // SAFETY: both lent by the dict and alive; owned from here.
            let (k, v) = unsafe {
                (
                    Bound::from_borrowed_ptr(self.py, k),
                    Bound::from_borrowed_ptr(self.py, v),
                )
            };
            let text;
            // SAFETY: `k` is a live object (a `Bound`: the GIL is held).
            let key = if any_key && unsafe { ffi::PyUnicode_Check(k.as_ptr()) } == 0 {
                let s = k.str().map_err(|e| self.fail(e))?;
                text = self.str_of(s.as_ptr())?.to_owned();
                text.as_str()
            } else {
                self.str_of_key(&k)?
            };
            self.amf0_member(key, &v)?;
        }
        Ok(())
    }

    /// A member; the empty name is allowed (it is followed by a value marker, never by
    /// the object-end marker 0x09, so readers can tell it from the end).
    #[inline]
    pub(super) fn amf0_member(&mut self, key: &str, value: &Bound<'py, PyAny>) -> Result<()> {
        self.enc.amf0_utf(key)?;
        self.amf0(value)
            .map_err(|e| e.within(PathSegment::key(key)))
    }

    fn amf0_ecma(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        self.safepoint();
        if self.amf0_ref(obj) {
            return Ok(());
        }
        // SAFETY: `obj` is a dict (or subclass: a MixedArray, a dict with int keys) held by
        // a `Bound`, with the GIL held.
        let len = unsafe { ffi::PyDict_Size(obj.as_ptr()) } as usize;
        let count = self.ecma_count(obj, len)?;
        self.enc.amf0_ecma_array_start(count)?;
        self.amf0_members(obj, true)
    }

    /// The count field of an ECMA array: a MixedArray's `length` as read (Flash Player
    /// writes the AS2 array's length there; when it reads the array back, entries past
    /// it still extend it), else (a new MixedArray, a dict with int keys) the number of
    /// entries.
    fn ecma_count(&mut self, obj: &Bound<'py, PyAny>, entries: usize) -> Result<usize> {
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held) and `mixed_array` a
        // type object kept alive for the process's life.
        if unsafe { ffi::PyObject_TypeCheck(obj.as_ptr(), self.t.mixed_array) } == 0 {
            return Ok(entries);
        }
        match self.attr_if_any(obj, self.t.names.length)? {
            Some(v) if !v.is_none() => v.extract().map_err(|e| self.fail(e)),
            _ => Ok(entries),
        }
    }

    /// The AVM+ switch: one AMF3 value inside AMF0.
    pub(crate) fn amf0_switch(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        self.enc.amf0_avmplus();
        self.enter()?;
        let r = self.amf3(obj);
        self.leave();
        r
    }

    #[inline(never)]
    fn amf0_cold(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        self.safepoint();
        let p = obj.as_ptr();
        match self.classify(obj) {
            Cold::Undefined => self.enc.amf0_undefined(),
            Cold::Registered(info) if info.externalizable => return self.amf0_switch(obj),
            Cold::Registered(info) => return self.amf0_registered(obj, info),
            Cold::TypedObject => return self.amf0_typed_object(obj),
            Cold::Table => return self.amf0_table(obj),
            Cold::MixedArray => return self.amf0_ecma(obj),
            // Dates and XML take a table slot (as Flash Player numbers them): the same
            // object written twice is a reference.
            Cold::Xml { .. } => {
                if self.amf0_ref(obj) {
                    return Ok(());
                }
                let s = self.str_of(p)?;
                return self.enc.amf0_xml(s);
            }
            Cold::AmfDate => {
                if self.amf0_ref(obj) {
                    return Ok(());
                }
                let (millis, tz) = self.amf_date(obj)?;
                self.enc.amf0_date(millis, tz);
            }
            Cold::DateTime => {
                if self.amf0_ref(obj) {
                    return Ok(());
                }
                let millis = self.millis(obj)?;
                self.enc.amf0_date(millis, 0);
            }
            // What AMF0 cannot carry goes through the AVM+ switch.
            Cold::Dictionary
            | Cold::ObjectVector
            | Cold::Collection { .. }
            | Cold::Opaque
            | Cold::NumberArray
            | Cold::Bytes => return self.amf0_switch(obj),
            Cold::Str => {
                let s = self.str_of(p)?;
                return self.enc.amf0_string(s);
            }
            Cold::Int => return self.amf0_int(p),
            // SAFETY: `p` is a float subclass (classified with PyFloat_Check) held by
            // `obj`, with the GIL held.
            Cold::Float => self.enc.amf0_number(unsafe { ffi::PyFloat_AsDouble(p) }),
            Cold::Dict => return self.amf0_dict(obj),
            Cold::Seq => return self.amf0_sequence(obj),
            Cold::Set => {
                let items = self.set_items(obj)?;
                return self.amf0_sequence(&items);
            }
            Cold::Unknown => {
                let replaced = self.call_default(obj)?;
                self.enter()?;
                let r = self.amf0(&replaced);
                self.leave();
                return r;
            }
        }
        Ok(())
    }

    fn amf0_typed_object(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf0_ref(obj) {
            return Ok(());
        }
        let alias = self.getattr(obj, self.t.names.alias)?;
        self.keep(&alias);
        // SAFETY: `alias` is a live object (a `Bound`: the GIL is held).
        let alias = if unsafe { ffi::PyUnicode_Check(alias.as_ptr()) } != 0 {
            self.str_of(alias.as_ptr())?
        } else {
            return Err(self.enc.error("a TypedObject alias must be a str"));
        };
        self.enc.amf0_typed_object_start(alias)?;
        self.amf0_members(obj, false)
    }
}
