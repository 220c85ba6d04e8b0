//! Registered classes, as the decoder treats them: the input must agree with the
//! registration on whether the class is externalizable; an instance is made with
//! `cls.__new__(cls)` (no `__init__`); a member named like a dunder is refused, and one
//! the class does not declare (not static, on a class without dynamic members) is
//! dropped; members are set with the generic setattr; with an `on_mismatch` hook, the
//! first object of each class definition read is checked against the class (members it
//! does not declare, declared ones that did not come) and the hook told of any
//! difference. Their externalizable bodies are read in `external.rs`.

use amfkit_core::error::shown;
use amfkit_core::{Error, Result};
use pyo3::exceptions::PyAttributeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::object::PyObj;
use super::traits::{PyTraits, Shape};
use super::PyVisitor;
use crate::registry::{is_dunder, ClassInfo};

/// The input's traits of `class_name`, a registered class, must say externalizable
/// exactly when the class was registered so.
pub(super) fn check_externalizable(
    info: &ClassInfo,
    class_name: &str,
    externalizable: bool,
) -> Result<()> {
    if info.externalizable != externalizable {
        let says = if externalizable {
            "externalizable"
        } else {
            "not externalizable"
        };
        return Err(Error::custom(
            format!(
                "class {} is registered as {}, but the input says it is {says}",
                shown(class_name),
                if info.externalizable {
                    "externalizable"
                } else {
                    "not externalizable"
                }
            ),
            Error::UNKNOWN_OFFSET,
        ));
    }
    Ok(())
}

/// Whether a member read from the wire (sealed or dynamic) is set on an instance: a
/// dunder name is an error, a name the class does not declare is dropped (false).
#[inline]
pub(super) fn keeps_member(info: &ClassInfo, name: &str) -> Result<bool> {
    if is_dunder(name) {
        return Err(dunder(name, &info.alias));
    }
    Ok(info.accepts(name))
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

impl<'py> PyVisitor<'py> {
    /// The `on_mismatch` check of the first object of a registered class's traits (its
    /// `seen` names and the traits' sealed names against what the class declares):
    /// `on_mismatch(alias, undeclared, missing)` is called when either is not empty,
    /// once per class definition read.
    pub(super) fn check_members(
        &mut self,
        object: &PyObj<'py>,
        traits: &PyTraits<'py>,
    ) -> Result<()> {
        let (Shape::Registered(info), Some(hook)) = (&traits.shape, self.on_mismatch.clone())
        else {
            return Ok(());
        };
        let Some(sealed) = traits.check.borrow_mut().take() else {
            return Ok(());
        };
        let seen = object.seen.as_deref().unwrap_or(&[]);
        let received: Vec<&str> = sealed
            .iter()
            .map(String::as_str)
            .chain(seen.iter().map(String::as_str))
            .collect();
        let undeclared: Vec<&str> = received
            .iter()
            .copied()
            .filter(|n| !info.accepts(n))
            .collect();
        let missing: Vec<&str> = info
            .static_names
            .iter()
            .map(String::as_str)
            .filter(|n| !received.contains(n))
            .collect();
        if undeclared.is_empty() && missing.is_empty() {
            return Ok(());
        }
        let args = (
            info.alias.as_str(),
            pyo3::types::PyTuple::new(self.py, undeclared).map_err(|e| self.fail(e))?,
            pyo3::types::PyTuple::new(self.py, missing).map_err(|e| self.fail(e))?,
        );
        hook.call1(args).map(drop).map_err(|e| self.fail(e))
    }

    /// A new instance of a registered class: `cls.__new__(cls)`, no `__init__`, no import,
    /// nothing else runs.
    pub(super) fn new_instance(&mut self, info: &ClassInfo) -> Result<Bound<'py, PyAny>> {
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
        self.own(ptr)
    }

    /// Set a member on an instance of a registered class.
    #[inline]
    pub(super) fn set_instance_member(
        &mut self,
        obj: &Bound<'py, PyAny>,
        info: &ClassInfo,
        key: &Bound<'py, PyString>,
        value: Bound<'py, PyAny>,
    ) -> Result<()> {
        // Generic setattr: data descriptors (properties, slots) work, a class's own
        // __setattr__ (frozen dataclasses) is not run.
        // SAFETY: the three are live objects (`Bound`s: the GIL is held).
        let rc =
            unsafe { ffi::PyObject_GenericSetAttr(obj.as_ptr(), key.as_ptr(), value.as_ptr()) };
        if rc < 0 {
            // A member the class cannot hold (a __slots__ class, a read-only property) is
            // bad input for that class, not a Python error.
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
        Ok(())
    }
}
