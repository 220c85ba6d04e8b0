//! AMF values inside a save's members (a ByteArray holding what `writeObject` wrote),
//! read and written losslessly: `decode_values` and `encode_values`, the counterparts of
//! `decode_sol`/`encode_sol` for bytes that are not a whole .sol file.

use amfkit_core::{Decoder as CoreDecoder, PathSegment};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyList, PyTuple};

use crate::buffer::with_input;
use crate::decode::PyVisitor;
use crate::encode::PyEncoder;
use crate::errors::decode_err;
use crate::lossless::{Layout, LayoutData};
use crate::options::{options, Version};

fn version_of(version: i64) -> PyResult<Version> {
    match version {
        0 => Ok(Version::Amf0),
        3 => Ok(Version::Amf3),
        _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "amf version must be 0 or 3, not {version}"
        ))),
    }
}

/// Decode AMF bytes losslessly: `(value, layout, inline_strings, stream)`. One value
/// that uses every byte; else, with `allow_stream`, every value of the bytes read as a
/// stream (one reference context), as a list, and `stream` is True. `layout` and
/// `inline_strings` are what `decode_sol(..., lossless=True)` gives.
#[pyfunction]
#[pyo3(signature = (data, version, /, *, allow_stream=true, max_depth=128, max_objects=10_000_000, max_size=268_435_456, tz_aware=false))]
#[allow(clippy::too_many_arguments)]
pub fn decode_values<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    version: i64,
    allow_stream: bool,
    max_depth: u32,
    max_objects: u64,
    max_size: u64,
    tz_aware: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let version = version_of(version)?;
    let opts = options(max_depth, max_objects, max_size, tz_aware)?;
    with_input(data, |input| {
        let read = |stream: bool| -> PyResult<(Bound<'py, PyAny>, LayoutData, bool)> {
            let mut v = PyVisitor::new(py, opts.tz_aware)?;
            v.layout = Some(LayoutData::new(input.len()));
            let mut de = CoreDecoder::new(input, opts.limits);
            let r = if stream {
                let out = PyList::empty(py);
                let mut i = 0;
                while !de.is_empty() {
                    let value = match version {
                        Version::Amf0 => de.read_amf0(&mut v),
                        Version::Amf3 => de.read_amf3(&mut v),
                    };
                    match value {
                        Ok(value) => out.append(value)?,
                        Err(e) => {
                            let e = e.within(PathSegment::Index(i)).or_offset(de.position());
                            return Err(decode_err(py, e, v.pending.take()));
                        }
                    }
                    i += 1;
                }
                Ok(out.into_any())
            } else {
                let value = match version {
                    Version::Amf0 => de.read_amf0(&mut v),
                    Version::Amf3 => de.read_amf3(&mut v),
                };
                value
                    .and_then(|value| de.finish().map(|()| value))
                    .map_err(|e| decode_err(py, e.or_offset(de.position()), v.pending.take()))
            }?;
            let mut layout = v.layout.take().unwrap_or_default();
            layout.strings = de.amf3_strings();
            layout.finish();
            Ok((r, layout, de.amf3_inline_strings()))
        };
        let (value, layout, inline, stream) = match read(false) {
            Ok((value, layout, inline)) => (value, layout, inline, false),
            Err(one) => {
                if !allow_stream {
                    return Err(one);
                }
                // One value and bytes after it: the bytes may be several values.
                match read(true) {
                    Ok((value, layout, inline)) => (value, layout, inline, true),
                    Err(_) => return Err(one),
                }
            }
        };
        PyTuple::new(
            py,
            [
                value,
                Bound::new(py, Layout { data: layout })?.into_any(),
                PyBool::new(py, inline).to_owned().into_any(),
                PyBool::new(py, stream).to_owned().into_any(),
            ],
        )
    })
}

/// Encode what `decode_values` read (edited or not) with the encoding choices it
/// recorded: one value, or with `stream` each item of a list, sharing one reference
/// context. `switch` (AMF0 only): each value is written as the AVM+ switch (0x11) and
/// an AMF3 value, as remoting bodies carry AMF3 (the reader goes through the switch
/// by itself).
#[pyfunction]
#[pyo3(signature = (value, version, /, *, stream=false, layout=None, inline_strings=false, max_depth=1024, switch=false))]
#[allow(clippy::too_many_arguments)]
pub fn encode_values<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    version: i64,
    stream: bool,
    layout: Option<Bound<'py, Layout>>,
    inline_strings: bool,
    max_depth: u32,
    switch: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let version = version_of(version)?;
    let mut e = PyEncoder::new(py, None, max_depth)?;
    e.set_layout(layout);
    e.enc.inline_every_string = inline_strings;
    let write = |e: &mut PyEncoder<'py>, item: &Bound<'py, PyAny>| match version {
        Version::Amf0 if switch => e.amf0_switch(item),
        Version::Amf0 => e.amf0(item),
        Version::Amf3 => e.amf3(item),
    };
    let r = if stream {
        (|| -> amfkit_core::Result<()> {
            let items = value.try_iter().map_err(|err| e.fail(err))?;
            for (i, item) in items.enumerate() {
                let item = item.map_err(|err| e.fail(err))?;
                write(&mut e, &item).map_err(|err| err.within(PathSegment::Index(i)))?;
                // The next item comes from Python code (an iterator): what the tables
                // keyed so far is kept from here on.
                e.safepoint();
            }
            Ok(())
        })()
    } else {
        write(&mut e, value)
    };
    match r {
        Ok(()) => Ok(PyBytes::new(py, &e.enc.out.buf)),
        Err(err) => Err(e.py_error(err)),
    }
}
