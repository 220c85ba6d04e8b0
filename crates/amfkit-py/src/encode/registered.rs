//! Instances of registered classes: static members in wire order, then dynamic ones
//! (`__dict__`, then `__slots__`), without the excluded names.

use amfkit_core::amf3::marker as m3;
use amfkit_core::{PathSegment, Result};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::{dictwalk, PyEncoder};
use crate::registry::{is_dunder, ClassInfo};

impl<'py> PyEncoder<'py> {
    /// An attribute, or None when the object does not have it (AttributeError). Any
    /// other exception (a property that raises) passes through unchanged.
    #[inline]
    pub(super) fn attr_if_any(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: *mut ffi::PyObject,
    ) -> Result<Option<Bound<'py, PyAny>>> {
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held) and `name` a str its
        // caller holds (an interned name of `Types` or of the class registry).
        let v = unsafe { ffi::PyObject_GetAttr(obj.as_ptr(), name) };
        if !v.is_null() {
            // SAFETY: `v` is a non-null new reference from PyObject_GetAttr.
            return Ok(Some(unsafe { Bound::from_owned_ptr(self.py, v) }));
        }
        // SAFETY: the GIL is held and PyObject_GetAttr failed, so an exception is set; this
        // reads and clears it.
        if unsafe { ffi::PyErr_ExceptionMatches(ffi::PyExc_AttributeError) } != 0 {
            // SAFETY: as above.
            unsafe { ffi::PyErr_Clear() };
            return Ok(None);
        }
        Err(self.raised())
    }

    /// An instance's `__dict__` when it has one that is a dict.
    ///
    /// For a class whose `__dict__` is the one Python gives every instance, looked up
    /// generically (`ClassInfo::plain_dict`: found at registration, and the class
    /// unchanged since), the dict is taken directly (`PyObject_GenericGetDict`), without
    /// a lookup of `__dict__` through the class.
    #[inline]
    fn instance_dict(
        &mut self,
        obj: &Bound<'py, PyAny>,
        info: &ClassInfo,
    ) -> Result<Option<Bound<'py, PyAny>>> {
        let p = obj.as_ptr();
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held).
        let generic = info.plain_dict(unsafe { ffi::Py_TYPE(p) });
        let d = if generic {
            // SAFETY: as above; the instance dict exists (`plain_dict`), and the new
            // reference (or the error) is taken at once.
            let d = unsafe { ffi::PyObject_GenericGetDict(p, std::ptr::null_mut()) };
            Some(self.own(d)?)
        } else {
            self.attr_if_any(obj, self.t.names.dict)?
        };
        // SAFETY: `d` is a live object (a `Bound`: the GIL is held).
        Ok(d.filter(|d| unsafe { ffi::PyDict_Check(d.as_ptr()) } != 0))
    }

    /// The dynamic members of a registered instance: its `__dict__` then its slots,
    /// without the static and excluded names.
    fn instance_members(
        &mut self,
        obj: &Bound<'py, PyAny>,
        info: &ClassInfo,
    ) -> Result<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
        let mut out = Vec::new();
        if let Some(d) = self.instance_dict(obj, info)? {
            let filter = !info.static_set.is_empty() || !info.exclude.is_empty();
            for (k, v) in self.dict_items(d.as_ptr()) {
                if filter {
                    let key = self.str_of_key(&k)?;
                    if info.static_set.contains(key) || info.exclude.contains(key) {
                        continue;
                    }
                }
                out.push((k, v));
            }
        }
        for slot in &info.slots {
            let name = slot.bind(self.py);
            let text = name.to_str().unwrap_or("");
            if info.static_set.contains(text) || info.exclude.contains(text) {
                continue;
            }
            if let Some(v) = self.attr_if_any(obj, name.as_ptr())? {
                out.push((name.clone().into_any(), v));
            }
        }
        Ok(out)
    }

    /// The `__dict__` of an instance of a class whose `__dict__` is Python's own
    /// (`ClassInfo::plain_dict`), borrowed when it already exists and is a dict; null
    /// otherwise (then the caller takes the general path, after a safepoint: a property,
    /// or making the dict, may run Python code).
    #[inline]
    fn existing_dict(&self, obj: &Bound<'py, PyAny>, info: &ClassInfo) -> *mut ffi::PyObject {
        let p = obj.as_ptr();
        // SAFETY: `obj` is a live object (lent or owned by the caller; the GIL is held).
        unsafe {
            if !info.plain_dict(ffi::Py_TYPE(p)) {
                return std::ptr::null_mut();
            }
            let d = dictwalk::existing_instance_dict(p);
            if d.is_null() || ffi::PyDict_CheckExact(d) == 0 {
                return std::ptr::null_mut();
            }
            d
        }
    }

    /// The instance dict, lent by the instance while its members are written (on the hot
    /// walk: `lent.rs`), and the mark to give back; or null, after a safepoint (the
    /// general path may run Python code).
    #[inline]
    fn lend_instance_dict(
        &mut self,
        obj: &Bound<'py, PyAny>,
        info: &ClassInfo,
    ) -> (*mut ffi::PyObject, usize) {
        let d = self.existing_dict(obj, info);
        if d.is_null() {
            self.safepoint();
            (d, self.lent.len())
        } else {
            (d, self.lend(d))
        }
    }

    /// A static member's value as the instance dict `d` (lent, or null) holds it, when
    /// reading it there is what `getattr` would do (`ClassInfo::plain_members`: no data
    /// descriptor can come first, and the name is not a dunder, which may have one) and
    /// no Python code runs to find it (a table of str keys only); borrowed from `d`, or
    /// null (then ask `getattr`, after a safepoint).
    #[inline]
    fn static_in_dict(
        &self,
        obj: &Bound<'py, PyAny>,
        info: &ClassInfo,
        d: *mut ffi::PyObject,
        (text, name): (&str, &Py<PyString>),
    ) -> *mut ffi::PyObject {
        if d.is_null() || is_dunder(text) {
            return std::ptr::null_mut();
        }
        // SAFETY: `obj` is live and `d` its dict, lent (the GIL is held). A lookup of an
        // exact str in a table of str keys compares strs only (no `__eq__` of Python's).
        unsafe {
            if !info.plain_members(ffi::Py_TYPE(obj.as_ptr())) || !dictwalk::str_keys_only(d) {
                return std::ptr::null_mut();
            }
            let v = ffi::PyDict_GetItemWithError(d, name.as_ptr());
            if v.is_null() {
                ffi::PyErr_Clear();
            }
            v
        }
    }

    /// Whether the dynamic members are exactly the instance dict's entries.
    #[inline]
    fn dict_is_members(info: &ClassInfo) -> bool {
        info.static_set.is_empty() && info.exclude.is_empty() && info.slots.is_empty()
    }

    /// A static member's value (undefined when the instance does not have it).
    fn static_value(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: &Py<PyString>,
    ) -> Result<Bound<'py, PyAny>> {
        let value = self.attr_if_any(obj, name.as_ptr())?;
        // SAFETY: `undefined` is held by `Types` for the process's life, and the GIL is held.
        Ok(value.unwrap_or_else(|| unsafe { Bound::from_borrowed_ptr(self.py, self.t.undefined) }))
    }

    pub(super) fn amf3_registered(
        &mut self,
        obj: &Bound<'py, PyAny>,
        info: &ClassInfo,
    ) -> Result<()> {
        if self.amf3_ref(m3::OBJECT, obj) {
            return Ok(());
        }
        let key = info.cls.as_ptr() as usize;
        if !self.enc.amf3_traits_reference(key) {
            self.enc.amf3_traits_inline(
                Some(key),
                &info.alias,
                &info.static_names,
                info.dynamic,
                info.externalizable,
            )?;
        }
        self.enter()?;
        if info.externalizable {
            self.safepoint();
            self.write_external(obj)?;
            self.leave();
            return Ok(());
        }
        let (d, mark) = self.lend_instance_dict(obj, info);
        let r = self.amf3_registered_members(obj, info, d);
        self.give_back(mark);
        r?;
        self.leave();
        Ok(())
    }

    /// Static members in wire order, then the dynamic ones and the end marker; `d` is the
    /// lent instance dict, or null.
    fn amf3_registered_members(
        &mut self,
        obj: &Bound<'py, PyAny>,
        info: &ClassInfo,
        d: *mut ffi::PyObject,
    ) -> Result<()> {
        for (name, name_py) in info.static_names.iter().zip(&info.static_py) {
            let v = self.static_in_dict(obj, info, d, (name, name_py));
            let r = if v.is_null() {
                self.safepoint();
                let v = self.static_value(obj, name_py)?;
                self.amf3(&v)
            } else {
                self.amf3_lent(v)
            };
            r.map_err(|e| e.within(PathSegment::key(name.as_str())))?;
        }
        if !info.dynamic {
            return Ok(());
        }
        if !d.is_null() && Self::dict_is_members(info) {
            // The common case: every attribute in `__dict__`, written in place.
            self.amf3_members_in_place(d)?;
        } else {
            self.safepoint();
            if Self::dict_is_members(info) {
                if let Some(d) = self.instance_dict(obj, info)? {
                    self.amf3_members_in_place(d.as_ptr())?;
                }
            } else {
                for (k, v) in self.instance_members(obj, info)? {
                    self.amf3_member_obj(&k, &v)?;
                }
            }
        }
        self.enc.amf3_str("")
    }

    pub(super) fn amf0_registered(
        &mut self,
        obj: &Bound<'py, PyAny>,
        info: &ClassInfo,
    ) -> Result<()> {
        if self.amf0_ref(obj) {
            return Ok(());
        }
        self.enc.amf0_typed_object_start(&info.alias)?;
        self.enter()?;
        let (d, mark) = self.lend_instance_dict(obj, info);
        let r = self.amf0_registered_members(obj, info, d);
        self.give_back(mark);
        r?;
        self.leave();
        self.enc.amf0_object_end();
        Ok(())
    }

    fn amf0_registered_members(
        &mut self,
        obj: &Bound<'py, PyAny>,
        info: &ClassInfo,
        d: *mut ffi::PyObject,
    ) -> Result<()> {
        for (name, name_py) in info.static_names.iter().zip(&info.static_py) {
            let v = self.static_in_dict(obj, info, d, (name, name_py));
            if v.is_null() {
                self.safepoint();
                let v = self.static_value(obj, name_py)?;
                self.amf0_member(name, &v)?;
            } else {
                self.enc.amf0_utf(name)?;
                self.amf0_lent(v)
                    .map_err(|e| e.within(PathSegment::key(name.as_str())))?;
            }
        }
        if !info.dynamic {
            return Ok(());
        }
        if !d.is_null() && Self::dict_is_members(info) {
            return self.amf0_members_in_place(d, false);
        }
        self.safepoint();
        if Self::dict_is_members(info) {
            if let Some(d) = self.instance_dict(obj, info)? {
                self.amf0_members_in_place(d.as_ptr(), false)?;
            }
        } else {
            for (k, v) in self.instance_members(obj, info)? {
                let key = self.str_of_key(&k)?;
                self.amf0_member(key, &v)?;
            }
        }
        Ok(())
    }
}
