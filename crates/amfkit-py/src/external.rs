//! `IDataInput`/`IDataOutput` for registered externalizable classes: a class's
//! `__readamf__(self, input)` and `__writeamf__(self, output)` read and write their own
//! body through these. Each is valid only during the hook call that received it.

use std::ffi::c_void;

use amfkit_core::{Decoder as CoreDecoder, Error, Result};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::decode::PyVisitor;
use crate::encode::PyEncoder;
use crate::errors::decode_err;

type De = CoreDecoder<'static, PyVisitor<'static>>;

/// The reader handed to `__readamf__` (Flash's `IDataInput`, big-endian).
#[pyclass(module = "amfkit", unsendable)]
pub struct DataInput {
    de: *mut c_void,
    vis: *mut c_void,
    live: bool,
}

impl DataInput {
    #[allow(clippy::mut_from_ref)]
    fn parts(&self) -> PyResult<(&mut De, &mut PyVisitor<'static>)> {
        if !self.live {
            return Err(PyRuntimeError::new_err(
                "a DataInput is valid only inside the __readamf__ call that received it",
            ));
        }
        // Safety: both pointers are live for the duration of the hook call (`live`).
        unsafe {
            Ok((
                &mut *(self.de as *mut De),
                &mut *(self.vis as *mut PyVisitor<'static>),
            ))
        }
    }

    fn raw<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut amfkit_core::Bytes<'static>) -> Result<T>,
    ) -> PyResult<T> {
        let (de, _) = self.parts()?;
        f(de.bytes()).map_err(|e| decode_err(py, e, None))
    }
}

#[pymethods]
impl DataInput {
    /// A `DecodeError` at the reader's position, for a `__readamf__` that finds its bytes
    /// malformed: `raise input.error("...")` (the text is cut to 1,024 characters).
    fn error(&self, py: Python<'_>, reason: &str) -> PyResult<Py<PyAny>> {
        let (de, _) = self.parts()?;
        let err = decode_err(py, Error::custom(reason, de.position()), None);
        Ok(err.into_value(py).into_any())
    }

    /// The next AMF3 value (`readObject`), sharing the reference tables of the stream.
    fn read_object(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let (de, v) = self.parts()?;
        match de.read_amf3(v) {
            Ok(x) => Ok(x.unbind()),
            Err(e) => Err(decode_err(py, e.or_offset(de.position()), v.pending.take())),
        }
    }
    fn read_boolean(&self, py: Python<'_>) -> PyResult<bool> {
        self.raw(py, |b| Ok(b.u8()? != 0))
    }
    fn read_byte(&self, py: Python<'_>) -> PyResult<i8> {
        self.raw(py, |b| Ok(b.u8()? as i8))
    }
    fn read_unsigned_byte(&self, py: Python<'_>) -> PyResult<u8> {
        self.raw(py, |b| b.u8())
    }
    fn read_short(&self, py: Python<'_>) -> PyResult<i16> {
        self.raw(py, |b| b.i16())
    }
    fn read_unsigned_short(&self, py: Python<'_>) -> PyResult<u16> {
        self.raw(py, |b| b.u16())
    }
    fn read_int(&self, py: Python<'_>) -> PyResult<i32> {
        self.raw(py, |b| b.i32())
    }
    fn read_unsigned_int(&self, py: Python<'_>) -> PyResult<u32> {
        self.raw(py, |b| b.u32())
    }
    fn read_float(&self, py: Python<'_>) -> PyResult<f32> {
        self.raw(py, |b| Ok(f32::from_bits(b.u32()?)))
    }
    fn read_double(&self, py: Python<'_>) -> PyResult<f64> {
        self.raw(py, |b| b.f64())
    }
    /// A u16-length-prefixed UTF-8 string (`readUTF`).
    fn read_utf(&self, py: Python<'_>) -> PyResult<String> {
        self.raw(py, |b| {
            let n = b.u16()? as usize;
            Ok(b.utf8("string length", n)?.to_owned())
        })
    }
    /// `length` bytes of UTF-8 (`readUTFBytes`).
    fn read_utf_bytes(&self, py: Python<'_>, length: usize) -> PyResult<String> {
        self.raw(py, |b| Ok(b.utf8("string length", length)?.to_owned()))
    }
    /// `length` raw bytes (`readBytes`).
    fn read_bytes<'py>(&self, py: Python<'py>, length: usize) -> PyResult<Bound<'py, PyBytes>> {
        let data = self.raw(py, |b| {
            b.check_count("byte count", length as u64, 1)?;
            b.take(length)
        })?;
        Ok(PyBytes::new(py, data))
    }
}

/// Read a registered externalizable body by calling `object.__readamf__(input)`.
pub fn read_external<'de, 'py>(
    v: &mut PyVisitor<'py>,
    object: &Bound<'py, PyAny>,
    decoder: &mut CoreDecoder<'de, PyVisitor<'py>>,
) -> Result<()> {
    let py = object.py();
    let input = DataInput {
        de: decoder as *mut CoreDecoder<'de, PyVisitor<'py>> as *mut c_void,
        vis: v as *mut PyVisitor<'py> as *mut c_void,
        live: true,
    };
    let input = Py::new(py, input).map_err(|e| v.fail(e))?;
    let r = object.call_method1("__readamf__", (input.clone_ref(py),));
    input.borrow_mut(py).live = false;
    r.map(drop).map_err(|e| v.fail(e))
}

/// The writer handed to `__writeamf__` (Flash's `IDataOutput`, big-endian).
#[pyclass(module = "amfkit", unsendable)]
pub struct DataOutput {
    enc: *mut c_void,
    live: bool,
}

impl DataOutput {
    #[allow(clippy::mut_from_ref)]
    fn enc(&self) -> PyResult<&mut PyEncoder<'static>> {
        if !self.live {
            return Err(PyRuntimeError::new_err(
                "a DataOutput is valid only inside the __writeamf__ call that received it",
            ));
        }
        // Safety: the encoder outlives the hook call (`live`).
        unsafe { Ok(&mut *(self.enc as *mut PyEncoder<'static>)) }
    }
}

#[pymethods]
impl DataOutput {
    /// Write an AMF3 value (`writeObject`), sharing the reference tables of the stream.
    fn write_object(&self, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        let e = self.enc()?;
        // Safety: the object outlives this call; the encoder keeps what it keys.
        let obj: &Bound<'static, PyAny> = unsafe { std::mem::transmute(obj) };
        e.amf3(obj).map_err(|err| e.py_error(err))
    }
    fn write_boolean(&self, v: bool) -> PyResult<()> {
        self.enc()?.enc.out.u8(v as u8);
        Ok(())
    }
    fn write_byte(&self, v: i64) -> PyResult<()> {
        self.enc()?.enc.out.u8(v as u8);
        Ok(())
    }
    fn write_short(&self, v: i64) -> PyResult<()> {
        self.enc()?.enc.out.u16(v as u16);
        Ok(())
    }
    fn write_int(&self, v: i64) -> PyResult<()> {
        self.enc()?.enc.out.u32(v as u32);
        Ok(())
    }
    fn write_unsigned_int(&self, v: u32) -> PyResult<()> {
        self.enc()?.enc.out.u32(v);
        Ok(())
    }
    fn write_float(&self, v: f32) -> PyResult<()> {
        self.enc()?.enc.out.u32(v.to_bits());
        Ok(())
    }
    fn write_double(&self, v: f64) -> PyResult<()> {
        self.enc()?.enc.out.f64(v);
        Ok(())
    }
    /// A u16-length-prefixed UTF-8 string (`writeUTF`).
    fn write_utf(&self, s: &str) -> PyResult<()> {
        if s.len() > 0xffff {
            return Err(PyValueError::new_err("write_utf takes at most 65535 bytes"));
        }
        let e = self.enc()?;
        e.enc.out.u16(s.len() as u16);
        e.enc.out.bytes(s.as_bytes());
        Ok(())
    }
    /// UTF-8 bytes with no length (`writeUTFBytes`).
    fn write_utf_bytes(&self, s: &str) -> PyResult<()> {
        self.enc()?.enc.out.bytes(s.as_bytes());
        Ok(())
    }
    /// Raw bytes (`writeBytes`).
    fn write_bytes(&self, b: &[u8]) -> PyResult<()> {
        self.enc()?.enc.out.bytes(b);
        Ok(())
    }
}

/// Write a registered externalizable body by calling `object.__writeamf__(output)`.
pub fn write_external<'py>(e: &mut PyEncoder<'py>, object: &Bound<'py, PyAny>) -> Result<()> {
    let py = object.py();
    let output = DataOutput {
        enc: e as *mut PyEncoder<'py> as *mut c_void,
        live: true,
    };
    let output = Py::new(py, output).map_err(|err| e.fail(err))?;
    let r = object.call_method1("__writeamf__", (output.clone_ref(py),));
    output.borrow_mut(py).live = false;
    r.map(drop).map_err(|err| e.fail(err))
}
