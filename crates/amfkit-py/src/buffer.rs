//! The input of the decoders, and the bytes of any Python buffer (bytearray, memoryview,
//! array.array, mmap...), copied in C order whatever its layout: a strided or sliced
//! memoryview reads as `memoryview.tobytes()` does.

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// Borrow the input: bytes directly; any other buffer is copied first, in C order (so a
/// hook cannot change it under the reader, and a strided memoryview reads as its bytes).
pub fn with_input<R>(data: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> PyResult<R>) -> PyResult<R> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return f(b.as_bytes());
    }
    if data.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("decode expects bytes, not str"));
    }
    // SAFETY: `data` is a live object (a `Bound`: the GIL is held).
    if unsafe { ffi::PyObject_CheckBuffer(data.as_ptr()) } == 0 {
        return Err(PyTypeError::new_err(format!(
            "decode expects bytes or a buffer, not {}",
            data.get_type().name()?
        )));
    }
    let copy = copy_buffer(data)?;
    f(&copy)
}

/// A copy of `obj`'s buffer; the object's own error (a `TypeError` for objects that are
/// not buffers) when it has none.
pub fn copy_buffer(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    // SAFETY: The GIL is held (`obj` is a `Bound`). `view` is filled by PyObject_GetBuffer
    // and released once, after the last read of it; while it is held, `view.buf` has
    // `view.len` bytes. `out` has room for `len` bytes: the contiguous path copies exactly
    // that many, and PyBuffer_ToContiguous writes exactly `view.len` bytes before
    // `set_len`.
    unsafe {
        let mut view: ffi::Py_buffer = std::mem::zeroed();
        if ffi::PyObject_GetBuffer(obj.as_ptr(), &mut view, ffi::PyBUF_FULL_RO) != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        let len = view.len as usize;
        let mut out = Vec::with_capacity(len);
        let r = if ffi::PyBuffer_IsContiguous(&view, b'C' as _) != 0 {
            out.extend_from_slice(std::slice::from_raw_parts(view.buf as *const u8, len));
            0
        } else {
            // A `*mut` view: the function takes `*mut Py_buffer` before CPython 3.11 and
            // `*const Py_buffer` from 3.11 on, and a `*mut` pointer coerces to either.
            let r = ffi::PyBuffer_ToContiguous(
                out.as_mut_ptr().cast(),
                &raw mut view,
                view.len,
                b'C' as _,
            );
            if r == 0 {
                out.set_len(len);
            }
            r
        };
        ffi::PyBuffer_Release(&mut view);
        if r != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        Ok(out)
    }
}
