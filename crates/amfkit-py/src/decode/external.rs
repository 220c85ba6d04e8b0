//! Externalizable bodies: Flex's collections (ArrayCollection, ArrayList, ObjectProxy),
//! and the classes the decoder's lenient options read as one, whose body is one value;
//! registered externalizable classes, whose `__readamf__(self, input)` reads its own body
//! through a `DataInput` (Flash's `IDataInput`), valid only during that call; and opaque
//! bodies (lenient), the rest of the input kept as bytes. An externalizable class with
//! none of these was refused when its traits were read (`traits.rs`).

use std::ffi::c_void;

use amfkit_core::{Decoder as CoreDecoder, Error, ErrorKind, Result};
use pyo3::exceptions::{PyRecursionError, PyRuntimeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use super::object::PyObj;
use super::traits::{PyTraits, Shape};
use super::PyVisitor;
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
        // SAFETY: `live` is true only while `read_external` is in the `__readamf__` call
        // that received this input: the decoder and the visitor it points to are borrowed
        // by that frame and outlive the call, and the class is unsendable, so only this
        // thread (holding the GIL) gets here. The 'static lifetimes are never let out:
        // what is read is returned as owned Python objects. Caveat: a hook nested inside
        // this one (an inner __readamf__) that calls back into this outer input makes a
        // second `&mut` to the same decoder while the inner call's is suspended; the two
        // are used one after the other, never interleaved.
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

impl<'py> PyVisitor<'py> {
    /// Read an externalizable body into the object made for it: a Flex collection's one
    /// value, or a registered class's `__readamf__`.
    pub(super) fn external_body<'de>(
        &mut self,
        object: &mut PyObj<'py>,
        traits: &PyTraits<'py>,
        decoder: &mut CoreDecoder<'de, PyVisitor<'py>>,
    ) -> Result<()> {
        match &traits.shape {
            Shape::ArrayCollection => {
                let body = decoder.read_amf3(self)?;
                if !body.is_instance_of::<PyList>() {
                    return Err(Error::custom(
                        "an ArrayCollection body that is not an array",
                        decoder.position(),
                    ));
                }
                // SAFETY: `object` is the ArrayCollection made by begin_object (a list
                // subclass) and `body` was checked to be a list; both are `Bound`s (the GIL
                // is held).
                let r = unsafe { ffi::PyList_SetSlice(object.obj.as_ptr(), 0, 0, body.as_ptr()) };
                self.check(r)
            }
            Shape::ObjectProxy => {
                let body = decoder.read_amf3(self)?;
                if !body.is_instance_of::<PyDict>() {
                    return Err(Error::custom(
                        "an ObjectProxy body that is not an object",
                        decoder.position(),
                    ));
                }
                // SAFETY: `object` is the ObjectProxy made by begin_object (a dict
                // subclass) and `body` was checked to be a dict; both are `Bound`s (the GIL
                // is held).
                let r = unsafe { ffi::PyDict_Update(object.obj.as_ptr(), body.as_ptr()) };
                self.check(r)?;
                self.layout_proxy_body(&object.obj, &body);
                Ok(())
            }
            Shape::Opaque => {
                let data = decoder.read_opaque()?;
                let data = PyBytes::new(self.py, data);
                // SAFETY: the name is interned in `Types` for the process's life, and the
                // GIL is held.
                let name = unsafe { Bound::from_borrowed_ptr(self.py, self.t.names.data) };
                self.set_attr(&object.obj, &name, data.as_any())
            }
            Shape::Registered(_) => {
                let r = self.read_external(&object.obj, decoder);
                // Each level of registered externalizable objects nests Python frames
                // (__readamf__, read_object): past Python's recursion limit that is
                // input nested too deep, whatever max_depth allows.
                if r.is_err() && self.pending.is_instance_of::<PyRecursionError>(self.py) {
                    self.pending.take();
                    return Err(Error::custom(
                        "externalizable objects nested deeper than python's recursion limit",
                        decoder.position(),
                    ));
                }
                r
            }
            _ => Err(self.unknown_externalizable(traits, decoder.position())),
        }
    }

    /// The error for an externalizable class with no reader here.
    pub(super) fn unknown_externalizable(
        &mut self,
        traits: &PyTraits<'py>,
        offset: usize,
    ) -> Error {
        Error::new(
            ErrorKind::UnknownExternalizable(traits.alias.to_string().into()),
            offset,
        )
    }

    /// Read a registered externalizable body by calling `object.__readamf__(input)`.
    fn read_external<'de>(
        &mut self,
        object: &Bound<'py, PyAny>,
        decoder: &mut CoreDecoder<'de, PyVisitor<'py>>,
    ) -> Result<()> {
        let py = object.py();
        let input = DataInput {
            de: decoder as *mut CoreDecoder<'de, PyVisitor<'py>> as *mut c_void,
            vis: self as *mut PyVisitor<'py> as *mut c_void,
            live: true,
        };
        let input = Py::new(py, input).map_err(|e| self.fail(e))?;
        let r = object.call_method1("__readamf__", (input.clone_ref(py),));
        input.borrow_mut(py).live = false;
        r.map(drop).map_err(|e| self.fail(e))
    }
}
