//! `flash.utils.Dictionary` (AMF3 marker 0x11): an `amfkit.Dictionary`, a dict subclass
//! that keeps `weak_keys`; keys may be any value, objects and arrays included.

use amfkit_core::Result;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;

use super::PyVisitor;

impl<'py> PyVisitor<'py> {
    /// A new Dictionary, and its handle for the reference table.
    pub(super) fn begin_dictionary(
        &mut self,
        weak_keys: bool,
    ) -> Result<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
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

    /// An entry; a key Python cannot hash is wrapped in an `amfkit.ObjectKey`.
    pub(super) fn dictionary_entry(
        &mut self,
        dict: &mut Bound<'py, PyAny>,
        key: Bound<'py, PyAny>,
        value: Bound<'py, PyAny>,
    ) -> Result<()> {
        // SAFETY: `dict` is the Dictionary made by begin_dictionary (a dict subclass); the three
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
}
