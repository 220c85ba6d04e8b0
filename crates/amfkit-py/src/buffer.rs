//! The bytes of any Python buffer (bytearray, memoryview, array.array, mmap...), copied
//! in C order whatever its layout: a strided or sliced memoryview reads as
//! `memoryview.tobytes()` does.

use pyo3::ffi;
use pyo3::prelude::*;

/// A copy of `obj`'s buffer; the object's own error (a `TypeError` for objects that are
/// not buffers) when it has none.
pub fn copy_buffer(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
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
            let r = ffi::PyBuffer_ToContiguous(out.as_mut_ptr().cast(), &view, view.len, b'C' as _);
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
