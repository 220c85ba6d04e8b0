//! The one place where Rust errors become Python exceptions.
//!
//! `AMFError(Exception)`, `DecodeError(AMFError, ValueError)` with `.offset`, `.path` and
//! `.reason`, and `EncodeError(AMFError, TypeError)` with `.path` and `.reason`.
//! `StoreError(Exception)`: the shared store (`ShmSegment`) refused an operation.

use std::ffi::CString;

use amfkit_core::Error;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

static AMF_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DECODE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static ENCODE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static STORE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn new_exception(
    py: Python<'_>,
    name: &str,
    doc: &str,
    bases: &Bound<'_, PyTuple>,
) -> PyResult<Py<PyType>> {
    let name = CString::new(name).unwrap();
    let doc = CString::new(doc).unwrap();
    // SAFETY: The GIL is held (`py`); `name`, `doc` and `bases` outlive the call, and a
    // non-null result is a new reference to the exception class, a type object.
    unsafe {
        let ptr = ffi::PyErr_NewExceptionWithDoc(
            name.as_ptr(),
            doc.as_ptr(),
            bases.as_ptr(),
            std::ptr::null_mut(),
        );
        if ptr.is_null() {
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, ptr)
            .cast_into_unchecked::<PyType>()
            .unbind())
    }
}

pub fn amf_error(py: Python<'_>) -> &Py<PyType> {
    AMF_ERROR.get_or_init(py, || {
        let bases = PyTuple::new(py, [py.get_type::<pyo3::exceptions::PyException>()]).unwrap();
        new_exception(
            py,
            "amfkit.AMFError",
            "Base class of amfkit's errors.",
            &bases,
        )
        .unwrap()
    })
}

pub fn decode_error(py: Python<'_>) -> &Py<PyType> {
    DECODE_ERROR.get_or_init(py, || {
        let bases = PyTuple::new(
            py,
            [amf_error(py).bind(py).clone(), py.get_type::<pyo3::exceptions::PyValueError>()],
        )
        .unwrap();
        new_exception(
            py,
            "amfkit.DecodeError",
            "Input that is not valid AMF, or exceeds a limit. `.offset` is the byte offset, `.path` the path to the value being read.",
            &bases,
        )
        .unwrap()
    })
}

pub fn encode_error(py: Python<'_>) -> &Py<PyType> {
    ENCODE_ERROR.get_or_init(py, || {
        let bases = PyTuple::new(
            py,
            [
                amf_error(py).bind(py).clone(),
                py.get_type::<pyo3::exceptions::PyTypeError>(),
            ],
        )
        .unwrap();
        new_exception(
            py,
            "amfkit.EncodeError",
            "A value that cannot be written as AMF. `.path` names it, as `$.items[3].owner`.",
            &bases,
        )
        .unwrap()
    })
}

pub fn store_error(py: Python<'_>) -> &Py<PyType> {
    STORE_ERROR.get_or_init(py, || {
        let bases = PyTuple::new(py, [py.get_type::<pyo3::exceptions::PyException>()]).unwrap();
        new_exception(
            py,
            "amfkit.StoreError",
            "The shared store refused an operation or cannot be reached; the message says why (corrupted shared memory, a name used by another application, a full table...).",
            &bases,
        )
        .unwrap()
    })
}

/// A StoreError with `message`.
pub fn store_err(py: Python<'_>, message: String) -> PyErr {
    PyErr::from_type(store_error(py).bind(py).clone(), message)
}

fn build(py: Python<'_>, ty: &Py<PyType>, err: &Error, offset: Option<usize>) -> PyErr {
    let ty = ty.bind(py);
    // Decode errors say where in the input; encode errors name the value's path.
    let message = match offset {
        Some(_) => err.to_string(),
        None => format!("{} ({})", err.reason(), err.path()),
    };
    match ty.call1((message,)) {
        Ok(exc) => {
            let _ = exc.setattr("reason", err.reason());
            let _ = exc.setattr("path", err.path());
            let _ = exc.setattr("offset", offset);
            PyErr::from_value(exc)
        }
        Err(e) => e,
    }
}

/// A decode error, or the Python exception a hook raised (`pending`).
pub fn decode_err(py: Python<'_>, err: Error, pending: Option<PyErr>) -> PyErr {
    if let Some(e) = pending {
        return e;
    }
    build(py, decode_error(py), &err, Some(err.offset()))
}

/// An encode error, or the Python exception a hook raised (`pending`).
pub fn encode_err(py: Python<'_>, err: Error, pending: Option<PyErr>) -> PyErr {
    if let Some(e) = pending {
        return e;
    }
    build(py, encode_error(py), &err, None)
}

/// A Python exception raised while the core reader or writer runs (by a hook, a
/// property, the C API). The core carries only its own [`Error`] up the stack: the
/// exception waits here, and is what the caller sees instead of that error.
#[derive(Default)]
pub struct Pending(Option<PyErr>);

impl Pending {
    /// Keep `err`; the returned placeholder error carries it up to the caller.
    #[inline]
    pub fn record(&mut self, err: PyErr, offset: usize) -> Error {
        self.0 = Some(err);
        Error::custom("python error", offset)
    }

    /// The exception kept, if any (the caller raises it).
    #[inline]
    pub fn take(&mut self) -> Option<PyErr> {
        self.0.take()
    }

    /// Whether the exception kept is an instance of `T`.
    pub fn is_instance_of<T: pyo3::PyTypeInfo>(&self, py: Python<'_>) -> bool {
        matches!(&self.0, Some(e) if e.is_instance_of::<T>(py))
    }
}
