//! Python types and interned names the codec dispatches on, resolved once by `_setup`.

use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// Borrowed-forever pointers (each holds one strong reference taken at setup).
pub struct Types {
    pub undefined: *mut ffi::PyObject,
    pub typed_object: *mut ffi::PyTypeObject,
    pub mixed_array: *mut ffi::PyTypeObject,
    pub object_vector: *mut ffi::PyTypeObject,
    pub dictionary: *mut ffi::PyTypeObject,
    pub object_key: *mut ffi::PyTypeObject,
    pub xml: *mut ffi::PyTypeObject,
    pub xml_document: *mut ffi::PyTypeObject,
    pub date: *mut ffi::PyTypeObject,
    pub array_collection: *mut ffi::PyTypeObject,
    pub object_proxy: *mut ffi::PyTypeObject,
    /// `amfkit.Opaque`: an externalizable object kept as bytes (lenient decoding).
    pub opaque: *mut ffi::PyTypeObject,
    pub table: *mut ffi::PyTypeObject,
    pub array: *mut ffi::PyTypeObject,
    /// `amfkit.FixedVector`: an array.array subclass, a Vector with the fixed flag set.
    pub fixed_vector: *mut ffi::PyTypeObject,
    pub utc: *mut ffi::PyObject,
    pub names: Names,
}

/// Interned attribute and method names.
pub struct Names {
    pub alias: *mut ffi::PyObject,
    pub sealed: *mut ffi::PyObject,
    pub dynamic: *mut ffi::PyObject,
    pub type_name: *mut ffi::PyObject,
    pub fixed: *mut ffi::PyObject,
    pub weak_keys: *mut ffi::PyObject,
    pub length: *mut ffi::PyObject,
    pub millis: *mut ffi::PyObject,
    pub tz: *mut ffi::PyObject,
    pub value: *mut ffi::PyObject,
    pub typecode: *mut ffi::PyObject,
    pub utcoffset: *mut ffi::PyObject,
    pub dict: *mut ffi::PyObject,
    pub frombytes: *mut ffi::PyObject,
    pub columns: *mut ffi::PyObject,
    pub rows: *mut ffi::PyObject,
    pub collection: *mut ffi::PyObject,
    pub data: *mut ffi::PyObject,
}

// SAFETY: The pointers are dereferenced only with the GIL held (every user holds a `Python`
// token), and the objects are never freed (each pointer owns one strong reference, never
// released), so the addresses may be shared between threads.
unsafe impl Send for Types {}
// SAFETY: as for Send: shared references only read the pointers.
unsafe impl Sync for Types {}

static TYPES: OnceLock<Types> = OnceLock::new();

#[inline]
pub fn types() -> PyResult<&'static Types> {
    TYPES
        .get()
        .ok_or_else(|| PyRuntimeError::new_err("amfkit._amfkit is used before amfkit was imported"))
}

fn type_ptr(kwargs: &Bound<'_, PyDict>, key: &str) -> PyResult<*mut ffi::PyTypeObject> {
    let obj = kwargs
        .get_item(key)?
        .ok_or_else(|| PyRuntimeError::new_err(format!("_setup needs {key}")))?;
    if !obj.is_instance_of::<pyo3::types::PyType>() {
        return Err(PyRuntimeError::new_err(format!(
            "_setup: {key} is not a type"
        )));
    }
    Ok(obj.into_ptr() as *mut ffi::PyTypeObject)
}

fn intern(py: Python<'_>, s: &str) -> *mut ffi::PyObject {
    PyString::intern(py, s).into_ptr()
}

/// Called once by `amfkit/__init__.py` with the Python-side value types.
#[pyfunction]
#[pyo3(signature = (**kwargs))]
pub fn _setup(py: Python<'_>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    if TYPES.get().is_some() {
        return Ok(());
    }
    let kw = kwargs.ok_or_else(|| PyRuntimeError::new_err("_setup needs keyword arguments"))?;
    let undefined = kw
        .get_item("undefined")?
        .ok_or_else(|| PyRuntimeError::new_err("_setup needs undefined"))?
        .into_ptr();
    let array_mod = py.import("array")?;
    let array = array_mod.getattr("array")?.into_ptr() as *mut ffi::PyTypeObject;
    let dt = py.import("datetime")?;
    let utc = dt.getattr("timezone")?.getattr("utc")?.into_ptr();
    // SAFETY: The GIL is held (`py`); this loads the datetime C API that the date
    // conversions read.
    unsafe {
        ffi::PyDateTime_IMPORT();
        if ffi::PyDateTimeAPI().is_null() {
            return Err(PyErr::fetch(py));
        }
    }
    let types = Types {
        undefined,
        typed_object: type_ptr(kw, "typed_object")?,
        mixed_array: type_ptr(kw, "mixed_array")?,
        object_vector: type_ptr(kw, "object_vector")?,
        dictionary: type_ptr(kw, "dictionary")?,
        object_key: type_ptr(kw, "object_key")?,
        xml: type_ptr(kw, "xml")?,
        xml_document: type_ptr(kw, "xml_document")?,
        date: type_ptr(kw, "date")?,
        array_collection: type_ptr(kw, "array_collection")?,
        object_proxy: type_ptr(kw, "object_proxy")?,
        opaque: type_ptr(kw, "opaque")?,
        table: type_ptr(kw, "table")?,
        array,
        fixed_vector: type_ptr(kw, "fixed_vector")?,
        utc,
        names: Names {
            alias: intern(py, "alias"),
            sealed: intern(py, "sealed"),
            dynamic: intern(py, "dynamic"),
            type_name: intern(py, "type_name"),
            fixed: intern(py, "fixed"),
            weak_keys: intern(py, "weak_keys"),
            length: intern(py, "length"),
            millis: intern(py, "millis"),
            tz: intern(py, "tz"),
            value: intern(py, "value"),
            typecode: intern(py, "typecode"),
            utcoffset: intern(py, "utcoffset"),
            dict: intern(py, "__dict__"),
            frombytes: intern(py, "frombytes"),
            columns: intern(py, "columns"),
            rows: intern(py, "rows"),
            collection: intern(py, "collection"),
            data: intern(py, "data"),
        },
    };
    let _ = TYPES.set(types);
    Ok(())
}
