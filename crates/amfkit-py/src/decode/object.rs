//! Objects: each one made for its traits' `Shape` (a dict, a `TypedObject`, an instance
//! of a registered class, a Flex collection), then its sealed and dynamic members set.
//! Which members a registered class takes, and how, is `registered.rs`'s; an
//! externalizable body is read in `external.rs`.

use amfkit_core::Result;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyString};

use super::registered::keeps_member;
use super::traits::{PyTraits, Shape};
use super::PyVisitor;

/// An object being read: the object, and where its dynamic members go when that is not
/// the object itself.
pub struct PyObj<'py> {
    pub(super) obj: Bound<'py, PyAny>,
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
    /// The dynamic member names read, for the first object of a registered class's traits
    /// when the decoder has an `on_mismatch` hook (`PyTraits::check`); None otherwise.
    pub(super) seen: Option<Vec<String>>,
}

/// Dynamic members set through setattr before a plain instance's dict is taken.
const SETATTR_MEMBERS: u32 = 3;

impl<'py> PyVisitor<'py> {
    /// A new object for these traits, and its handle for the reference table; in lossless
    /// decoding, the traits it was read with are recorded for it.
    pub(super) fn begin_object(
        &mut self,
        traits: &PyTraits<'py>,
    ) -> Result<(PyObj<'py>, Bound<'py, PyAny>)> {
        let obj = match &traits.shape {
            Shape::Anonymous => {
                // SAFETY: the GIL is held (`self.py`); the new reference is owned at once
                // by `own`, which checks it for null.
                let d = unsafe { ffi::PyDict_New() };
                self.own(d)?
            }
            Shape::Typed => self.new_typed_object(traits)?,
            Shape::Registered(info) => self.new_instance(info)?,
            Shape::ArrayCollection => self.call_type(self.t.array_collection, &[])?,
            Shape::ObjectProxy => self.call_type(self.t.object_proxy, &[])?,
            Shape::Opaque => self.new_opaque(traits)?,
        };
        if traits.custom_alias {
            // SAFETY: the name is interned in `Types` for the process's life, and the GIL
            // is held.
            let an = unsafe { Bound::from_borrowed_ptr(self.py, self.t.names.alias) };
            self.set_attr(&obj, &an, traits.alias.as_any())?;
        }
        if let (Some(layout), Some(token)) = (&mut self.layout, traits.token) {
            layout.record(&obj, token);
        }
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held).
        let plain = matches!(&traits.shape, Shape::Registered(info) if info.plain_members(unsafe { ffi::Py_TYPE(obj.as_ptr()) }));
        let seen = traits.check.borrow().is_some().then(Vec::new);
        Ok((
            PyObj {
                obj: obj.clone(),
                plain,
                dynamic: 0,
                members: None,
                seen,
            },
            obj,
        ))
    }

    /// An `amfkit.Opaque` for these traits, its `data` empty until the body is read
    /// (`external.rs`).
    fn new_opaque(&mut self, traits: &PyTraits<'py>) -> Result<Bound<'py, PyAny>> {
        let empty = PyBytes::new(self.py, b"");
        let dynamic = PyBool::new(self.py, traits.dynamic).to_owned();
        self.call_type(
            self.t.opaque,
            &[traits.alias.as_ptr(), empty.as_ptr(), dynamic.as_ptr()],
        )
    }

    /// A `TypedObject`: the object of a class that is neither registered nor
    /// externalizable (it keeps its alias and traits).
    fn new_typed_object(&mut self, traits: &PyTraits<'py>) -> Result<Bound<'py, PyAny>> {
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
        Ok(obj)
    }

    /// The sealed member at `slot` (dropped when its traits say so).
    #[inline]
    pub(super) fn sealed_member(
        &mut self,
        object: &mut PyObj<'py>,
        traits: &PyTraits<'py>,
        slot: usize,
        value: Bound<'py, PyAny>,
    ) -> Result<()> {
        match traits.keys.get(slot) {
            Some(Some(key)) => self.set_member(object, traits, key, value),
            _ => Ok(()),
        }
    }

    /// A dynamic member named `text` (the same string as `key`).
    #[inline]
    pub(super) fn dynamic_member(
        &mut self,
        object: &mut PyObj<'py>,
        traits: &PyTraits<'py>,
        key: &Bound<'py, PyString>,
        text: &str,
        value: Bound<'py, PyAny>,
    ) -> Result<()> {
        if let Shape::Registered(info) = &traits.shape {
            if let Some(seen) = &mut object.seen {
                seen.push(text.to_owned());
            }
            if !keeps_member(info, text)? {
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
        match &traits.shape {
            Shape::Registered(info) => self.set_instance_member(obj, info, key, value),
            _ => {
                // SAFETY: the three are live objects (`Bound`s: the GIL is held), and `obj`
                // was made for these traits: a dict (an anonymous object, or a TypedObject
                // or ObjectProxy, dict subclasses), which is what PyDict_SetItem needs.
                let rc = unsafe { ffi::PyDict_SetItem(obj.as_ptr(), key.as_ptr(), value.as_ptr()) };
                self.check(rc)
            }
        }
    }
}
