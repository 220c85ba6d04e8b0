//! An encoder's output handed to Python without a copy: [`Encoded`], a read-only buffer
//! over the bytes written. A big save is written to its file from the encoder's own
//! buffer (`file.write(encoded)`), not first copied into a `bytes` of the same size;
//! `bytes(encoded)` makes that copy when a caller wants one.

use std::ffi::c_int;

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

/// Bytes an encoder wrote: a read-only buffer (`memoryview(e)`, `bytes(e)`,
/// `file.write(e)`), and `len(e)`.
#[pyclass(module = "amfkit._amfkit", name = "Encoded", frozen)]
pub struct Encoded {
    buf: Vec<u8>,
}

impl Encoded {
    pub fn new(buf: Vec<u8>) -> Self {
        Encoded { buf }
    }
}

#[pymethods]
impl Encoded {
    fn __len__(&self) -> usize {
        self.buf.len()
    }

    fn __repr__(&self) -> String {
        format!("<Encoded: {} bytes>", self.buf.len())
    }

    /// # Safety
    /// Called by Python's buffer protocol with a view to fill (or null).
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("no view to fill"));
        }
        let buf = &slf.get().buf;
        // SAFETY: `view` is a non-null view the caller owns; PyBuffer_FillInfo fills it
        // read-only (refusing PyBUF_WRITABLE) over `buf`, which lives as long as the
        // object, which the view holds a new reference to (`view.obj`); the object is
        // frozen, so `buf` never changes or moves while a view exists.
        let r = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                buf.as_ptr() as *mut std::ffi::c_void,
                buf.len() as ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if r != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    /// # Safety
    /// Called by Python's buffer protocol; nothing to release (the view's reference to
    /// the object is released by Python).
    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}
}
