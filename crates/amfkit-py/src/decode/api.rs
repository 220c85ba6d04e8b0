//! The decoding entry points: `amf0_decode`/`amf3_decode` and the reusable
//! `Amf0Decoder`/`Amf3Decoder`, with the limits and the lenient options
//! (`crate::lenient`).

use amfkit_core::{Decoder as CoreDecoder, PathSegment, Result};
use pyo3::prelude::*;
use pyo3::types::PyList;

use super::PyVisitor;
use crate::buffer::with_input;
use crate::errors::decode_err;
use crate::lenient::{leniency, Leniency};
use crate::options::{options, Options, Version};

fn read<'de, 'py>(
    de: &mut CoreDecoder<'de, PyVisitor<'py>>,
    v: &mut PyVisitor<'py>,
    version: Version,
) -> Result<Bound<'py, PyAny>> {
    match version {
        Version::Amf0 => de.read_amf0(v),
        Version::Amf3 => de.read_amf3(v),
    }
}

/// Decode exactly one value (or one value and ignore the rest).
pub fn decode_one<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    version: Version,
    opts: Options,
    lenient: &Leniency,
    allow_trailing: bool,
) -> PyResult<Bound<'py, PyAny>> {
    with_input(data, |input| {
        let mut v = PyVisitor::new(py, opts.tz_aware)?.with_leniency(lenient);
        let mut de = CoreDecoder::new(input, opts.limits).with_lenient(lenient.core.clone());
        let r = read(&mut de, &mut v, version).and_then(|value| {
            if !allow_trailing {
                de.finish()?;
            }
            Ok(value)
        });
        r.map_err(|e| decode_err(py, e.or_offset(de.position()), v.pending.take()))
    })
}

/// Decode every value of a stream, sharing one reference context.
pub fn decode_all<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    version: Version,
    opts: Options,
    lenient: &Leniency,
) -> PyResult<Bound<'py, PyList>> {
    with_input(data, |input| {
        let mut v = PyVisitor::new(py, opts.tz_aware)?.with_leniency(lenient);
        let mut de = CoreDecoder::new(input, opts.limits).with_lenient(lenient.core.clone());
        let out = PyList::empty(py);
        while !de.is_empty() {
            let i = out.len();
            match read(&mut de, &mut v, version) {
                Ok(value) => out.append(value)?,
                Err(e) => {
                    let e = e.within(PathSegment::Index(i)).or_offset(de.position());
                    return Err(decode_err(py, e, v.pending.take()));
                }
            }
        }
        Ok(out)
    })
}

macro_rules! decoder_class {
    ($name:ident, $pyname:literal, $version:expr) => {
        /// A reusable decoder: options are resolved once.
        #[pyclass(module = "amfkit", name = $pyname, frozen)]
        pub struct $name {
            opts: Options,
            lenient: Leniency,
        }

        #[pymethods]
        impl $name {
            #[new]
            #[pyo3(signature = (*, max_depth=128, max_objects=10_000_000, max_size=268_435_456, tz_aware=false, unknown_externalizable="error", externalizable=None, on_mismatch=None))]
            #[allow(clippy::too_many_arguments)]
            fn new(
                max_depth: u32,
                max_objects: u64,
                max_size: u64,
                tz_aware: bool,
                unknown_externalizable: &str,
                externalizable: Option<&Bound<'_, PyAny>>,
                on_mismatch: Option<Bound<'_, PyAny>>,
            ) -> PyResult<Self> {
                Ok($name {
                    opts: options(max_depth, max_objects, max_size, tz_aware)?,
                    lenient: leniency(unknown_externalizable, externalizable, on_mismatch)?,
                })
            }

            /// Decode exactly one value; trailing bytes are an error unless `allow_trailing`.
            #[pyo3(signature = (data, /, *, allow_trailing=false))]
            fn decode<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>, allow_trailing: bool) -> PyResult<Bound<'py, PyAny>> {
                decode_one(py, data, $version, self.opts, &self.lenient, allow_trailing)
            }

            /// Decode every value of a stream (one reference context, as in a .sol body).
            #[pyo3(signature = (data, /))]
            fn decode_all<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
                decode_all(py, data, $version, self.opts, &self.lenient)
            }

            #[getter]
            fn unknown_externalizable(&self) -> &'static str {
                self.lenient.unknown_externalizable()
            }
            #[getter]
            fn externalizable<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
                self.lenient.externalizable(py)
            }
            #[getter]
            fn on_mismatch(&self, py: Python<'_>) -> Option<Py<PyAny>> {
                self.lenient.on_mismatch.as_ref().map(|f| f.clone_ref(py))
            }

            #[getter]
            fn max_depth(&self) -> u32 {
                self.opts.limits.max_depth
            }
            #[getter]
            fn max_objects(&self) -> u64 {
                self.opts.limits.max_objects
            }
            #[getter]
            fn max_size(&self) -> u64 {
                self.opts.limits.max_size
            }
            #[getter]
            fn tz_aware(&self) -> bool {
                self.opts.tz_aware
            }
        }
    };
}

decoder_class!(Amf0Decoder, "Amf0Decoder", Version::Amf0);
decoder_class!(Amf3Decoder, "Amf3Decoder", Version::Amf3);

/// Decode one AMF0 value.
#[pyfunction]
#[pyo3(signature = (data, /, *, allow_trailing=false, max_depth=128, max_objects=10_000_000, max_size=268_435_456, tz_aware=false, unknown_externalizable="error", externalizable=None, on_mismatch=None))]
#[allow(clippy::too_many_arguments)]
pub fn amf0_decode<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    allow_trailing: bool,
    max_depth: u32,
    max_objects: u64,
    max_size: u64,
    tz_aware: bool,
    unknown_externalizable: &str,
    externalizable: Option<&Bound<'py, PyAny>>,
    on_mismatch: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    decode_one(
        py,
        data,
        Version::Amf0,
        options(max_depth, max_objects, max_size, tz_aware)?,
        &leniency(unknown_externalizable, externalizable, on_mismatch)?,
        allow_trailing,
    )
}

/// Decode one AMF3 value.
#[pyfunction]
#[pyo3(signature = (data, /, *, allow_trailing=false, max_depth=128, max_objects=10_000_000, max_size=268_435_456, tz_aware=false, unknown_externalizable="error", externalizable=None, on_mismatch=None))]
#[allow(clippy::too_many_arguments)]
pub fn amf3_decode<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    allow_trailing: bool,
    max_depth: u32,
    max_objects: u64,
    max_size: u64,
    tz_aware: bool,
    unknown_externalizable: &str,
    externalizable: Option<&Bound<'py, PyAny>>,
    on_mismatch: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    decode_one(
        py,
        data,
        Version::Amf3,
        options(max_depth, max_objects, max_size, tz_aware)?,
        &leniency(unknown_externalizable, externalizable, on_mismatch)?,
        allow_trailing,
    )
}
