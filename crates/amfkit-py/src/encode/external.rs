//! Externalizable objects: Flex's collections (ArrayCollection, ObjectProxy, and the
//! classes a lenient read took for one, named by their `alias`), whose body is one
//! value; `amfkit.Opaque`, whose body is its bytes as they were read; and registered
//! externalizable classes, whose `__writeamf__(self, output)` writes its own body
//! through a `DataOutput` valid only during that call.

use std::ffi::c_void;

use amfkit_core::amf3::marker as m3;
use amfkit_core::flex::{ARRAY_COLLECTION, OBJECT_PROXY};
use amfkit_core::Result;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use super::{PyEncoder, ANONYMOUS_TRAITS, ARRAY_COLLECTION_TRAITS, OBJECT_PROXY_TRAITS};

impl<'py> PyEncoder<'py> {
    /// ArrayCollection / ObjectProxy: the externalizable class around an Array / object.
    pub(super) fn amf3_collection(
        &mut self,
        obj: &Bound<'py, PyAny>,
        is_array: bool,
    ) -> Result<()> {
        if self.amf3_ref(m3::OBJECT, obj) {
            return Ok(());
        }
        // A lossless read's collection keeps its traits (`layout.rs`).
        let laid = if self.layout.is_some() {
            self.collection_layout(obj, is_array)?
        } else {
            None
        };
        // A collection of another class (a lenient read's `externalizable`) keeps its
        // name in `alias`; Flex's own have None.
        let own = obj
            .getattr(pyo3::intern!(self.py, "alias"))
            .ok()
            .filter(|a| !a.is_none());
        let own_alias = match &own {
            Some(a) => Some(self.str_of_key(a)?),
            None => None,
        };
        let (key, alias, dynamic) = match (&laid, own_alias) {
            (Some(l), _) => (Some(l.key), l.alias.as_str(), l.dynamic),
            (None, Some(alias)) => (None, alias, false),
            (None, None) if is_array => (Some(ARRAY_COLLECTION_TRAITS), ARRAY_COLLECTION, false),
            (None, None) => (Some(OBJECT_PROXY_TRAITS), OBJECT_PROXY, false),
        };
        if !key.is_some_and(|k| self.enc.amf3_traits_reference(k)) {
            self.enc.amf3_traits_external(key, alias, dynamic)?;
        }
        // The body is a separate object on the wire, with its own table entry.
        if is_array {
            self.enc.out.u8(m3::ARRAY);
            self.enc.amf3_register(None);
            self.amf3_sequence_body(obj)
        } else {
            self.enc.out.u8(m3::OBJECT);
            self.enc.amf3_register(None);
            if let Some(body) = laid.and_then(|l| l.body) {
                if self.amf3_proxy_body(obj, body)? {
                    return Ok(());
                }
            }
            if !self.enc.amf3_traits_reference(ANONYMOUS_TRAITS) {
                self.enc.amf3_traits_inline::<&str>(
                    Some(ANONYMOUS_TRAITS),
                    "",
                    &[],
                    true,
                    false,
                )?;
            }
            self.amf3_members(obj)
        }
    }
}

impl<'py> PyEncoder<'py> {
    /// `amfkit.Opaque`: the externalizable traits it was read with (class name, dynamic
    /// bit), then its bytes as they are.
    pub(super) fn amf3_opaque(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf3_ref(m3::OBJECT, obj) {
            return Ok(());
        }
        let alias = self.getattr(obj, self.t.names.alias)?;
        let alias = self.str_of_key(&alias)?;
        let dynamic = self
            .getattr(obj, self.t.names.dynamic)?
            .is_truthy()
            .map_err(|e| self.fail(e))?;
        let data = self.getattr(obj, self.t.names.data)?;
        let data = self.buffer(&data)?;
        self.enc.amf3_traits_external(None, alias, dynamic)?;
        self.enc.out.bytes(&data);
        Ok(())
    }
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
        // SAFETY: `live` is true only while `write_external` is in the `__writeamf__` call
        // that received this output: the encoder it points to is borrowed by that frame
        // and outlives the call, and the class is unsendable, so only this thread (holding
        // the GIL) gets here. As with DataInput, a nested hook calling back into an outer
        // output uses the same encoder one call after the other, never interleaved.
        unsafe { Ok(&mut *(self.enc as *mut PyEncoder<'static>)) }
    }
}

#[pymethods]
impl DataOutput {
    /// Write an AMF3 value (`writeObject`), sharing the reference tables of the stream.
    fn write_object(&self, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        let e = self.enc()?;
        // SAFETY: only the lifetime changes: `obj` lives through this call, and the
        // encoder (whose 'py is in fact this call's GIL scope, see `enc`) keeps a strong
        // reference to anything it keys by address, so nothing borrowed outlives its object.
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

impl<'py> PyEncoder<'py> {
    /// Write a registered externalizable body by calling `object.__writeamf__(output)`.
    pub(super) fn write_external(&mut self, object: &Bound<'py, PyAny>) -> Result<()> {
        let py = object.py();
        let output = DataOutput {
            enc: self as *mut PyEncoder<'py> as *mut c_void,
            live: true,
        };
        let output = Py::new(py, output).map_err(|err| self.fail(err))?;
        let r = object.call_method1("__writeamf__", (output.clone_ref(py),));
        output.borrow_mut(py).live = false;
        r.map(drop).map_err(|err| self.fail(err))
    }
}
