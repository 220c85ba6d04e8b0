//! The encoding entry points: `amf0_encode`/`amf3_encode`, the reusable
//! `Amf0Encoder`/`Amf3Encoder`, and the pool of core encoders they keep between calls.

use std::sync::Mutex;

use amfkit_core::{Encoder as CoreEncoder, PathSegment, Result};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::PyEncoder;
use crate::options::{check_depth, Version};

fn write<'py>(e: &mut PyEncoder<'py>, obj: &Bound<'py, PyAny>, version: Version) -> Result<()> {
    match version {
        Version::Amf0 => e.amf0(obj),
        Version::Amf3 => e.amf3(obj),
    }
}

/// What a reusable encoder keeps between calls: its core encoder (output buffer,
/// tables), cleared but with its capacity, so that a steady stream of
/// similar calls allocates nothing. One that grew past `KEEP_LIMIT` is dropped.
pub struct KeptEncoder {
    kept: Mutex<Option<CoreEncoder>>,
    limit: usize,
}

impl Default for KeptEncoder {
    fn default() -> Self {
        KeptEncoder::new(64 << 20)
    }
}

/// What the module-level `encode` functions keep: less, since nobody asked for it.
static MODULE_KEPT: KeptEncoder = KeptEncoder::new(4 << 20);

impl KeptEncoder {
    pub(crate) const fn new(limit: usize) -> Self {
        KeptEncoder {
            kept: Mutex::new(None),
            limit,
        }
    }
    pub(crate) fn take(&self) -> Option<CoreEncoder> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
    pub(crate) fn put(&self, mut enc: CoreEncoder) {
        if enc.out.buf.capacity() > self.limit {
            return;
        }
        enc.reset();
        enc.out.buf.clear();
        *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(enc);
    }
}

fn encoder<'py>(
    py: Python<'py>,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
    kept: Option<&KeptEncoder>,
) -> PyResult<PyEncoder<'py>> {
    let mut e = PyEncoder::new(py, default, max_depth)?;
    if let Some(kept) = kept.and_then(KeptEncoder::take) {
        e.enc = kept;
    }
    Ok(e)
}

fn finish<'py>(
    py: Python<'py>,
    mut e: PyEncoder<'py>,
    kept: Option<&KeptEncoder>,
) -> Bound<'py, PyBytes> {
    let bytes = PyBytes::new(py, &e.enc.out.buf);
    if let Some(h) = kept {
        h.put(std::mem::take(&mut e.enc));
    }
    bytes
}

pub fn encode_one<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    version: Version,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
    kept: Option<&KeptEncoder>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut e = encoder(py, default, max_depth, kept)?;
    match write(&mut e, obj, version) {
        Ok(()) => Ok(finish(py, e, kept)),
        Err(err) => Err(e.py_error(err)),
    }
}

/// Write with `kept`'s encoder: `f` writes (through the core encoder and the Python
/// encoder's `amf3`, one reference context), then `done` gets the bytes; no bytes object
/// is made (the shared broker's publish appends them to a log).
pub(crate) fn with_amf3<'py, R>(
    py: Python<'py>,
    kept: &KeptEncoder,
    f: impl FnOnce(&mut PyEncoder<'py>) -> Result<()>,
    done: impl FnOnce(&[u8]) -> PyResult<R>,
) -> PyResult<R> {
    let core = kept.take().unwrap_or_default();
    let mut e = PyEncoder::with_core(py, core, 1024)?;
    match f(&mut e) {
        Ok(()) => {
            let r = done(&e.enc.out.buf);
            kept.put(std::mem::take(&mut e.enc));
            r
        }
        Err(err) => Err(e.py_error(err)),
    }
}

pub fn encode_all<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
    version: Version,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
    kept: Option<&KeptEncoder>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut e = encoder(py, default, max_depth, kept)?;
    for (i, item) in values.try_iter()?.enumerate() {
        let item = item?;
        if let Err(err) = write(&mut e, &item, version) {
            return Err(e.py_error(err.within(PathSegment::Index(i))));
        }
        // The next item comes from Python code (an iterator), and this one may be freed
        // with it: what the tables keyed so far is kept from here on.
        e.safepoint();
    }
    Ok(finish(py, e, kept))
}

macro_rules! encoder_class {
    ($name:ident, $pyname:literal, $version:expr) => {
        /// A reusable encoder: options are resolved once.
        #[pyclass(module = "amfkit", name = $pyname, frozen)]
        pub struct $name {
            default: Option<Py<PyAny>>,
            max_depth: u32,
            kept: KeptEncoder,
        }

        #[pymethods]
        impl $name {
            #[new]
            #[pyo3(signature = (*, default=None, max_depth=1024))]
            fn new(default: Option<Py<PyAny>>, max_depth: u32) -> PyResult<Self> {
                check_depth(max_depth)?;
                Ok($name {
                    default,
                    max_depth,
                    kept: KeptEncoder::default(),
                })
            }

            /// Encode one value.
            #[pyo3(signature = (obj, /))]
            fn encode<'py>(
                &self,
                py: Python<'py>,
                obj: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyBytes>> {
                encode_one(
                    py,
                    obj,
                    $version,
                    self.default.as_ref().map(|d| d.bind(py).clone()),
                    self.max_depth,
                    Some(&self.kept),
                )
            }

            /// Encode every value of an iterable as one stream (one reference context).
            #[pyo3(signature = (values, /))]
            fn encode_all<'py>(
                &self,
                py: Python<'py>,
                values: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyBytes>> {
                encode_all(
                    py,
                    values,
                    $version,
                    self.default.as_ref().map(|d| d.bind(py).clone()),
                    self.max_depth,
                    Some(&self.kept),
                )
            }

            #[getter]
            fn max_depth(&self) -> u32 {
                self.max_depth
            }
        }
    };
}

encoder_class!(Amf0Encoder, "Amf0Encoder", Version::Amf0);
encoder_class!(Amf3Encoder, "Amf3Encoder", Version::Amf3);

/// Encode one value as AMF0.
#[pyfunction]
#[pyo3(signature = (obj, /, *, default=None, max_depth=1024))]
pub fn amf0_encode<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    check_depth(max_depth)?;
    encode_one(
        py,
        obj,
        Version::Amf0,
        default,
        max_depth,
        Some(&MODULE_KEPT),
    )
}

/// Encode one value as AMF3.
#[pyfunction]
#[pyo3(signature = (obj, /, *, default=None, max_depth=1024))]
pub fn amf3_encode<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    check_depth(max_depth)?;
    encode_one(
        py,
        obj,
        Version::Amf3,
        default,
        max_depth,
        Some(&MODULE_KEPT),
    )
}
