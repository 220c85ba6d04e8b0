//! Remoting packets from and to Python: `decode_packet` and `encode_packet`, and
//! `decode_packet_layout`, which also says where each value lies in the input.

use amfkit_core::packet::read_packet_lenient;
use amfkit_core::Limits;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::buffer::with_input;
use crate::decode::PyVisitor;
use crate::encode::PyEncoder;
use crate::errors::decode_err;
use crate::lenient::leniency;
use crate::options::options;

/// Decode a remoting packet: `(version, [(name, must_understand, value)], [(target,
/// response, value)])`. Length fields are not trusted (an opaque body, with lenient
/// options, ends with its part when the part's length field is true); each header and
/// body is its own reference context.
#[pyfunction]
#[pyo3(signature = (data, /, *, max_depth=128, max_objects=10_000_000, max_size=268_435_456, tz_aware=false, unknown_externalizable="error", externalizable=None, on_mismatch=None))]
#[allow(clippy::too_many_arguments)]
pub fn decode_packet<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    max_depth: u32,
    max_objects: u64,
    max_size: u64,
    tz_aware: bool,
    unknown_externalizable: &str,
    externalizable: Option<&Bound<'py, PyAny>>,
    on_mismatch: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let opts = options(max_depth, max_objects, max_size, tz_aware)?;
    let lenient = leniency(unknown_externalizable, externalizable, on_mismatch)?;
    with_input(data, |input| {
        let mut v = PyVisitor::new(py, opts.tz_aware)?.with_leniency(&lenient);
        let limits: Limits = opts.limits;
        let p = read_packet_lenient(input, limits, lenient.core.clone(), &mut v)
            .map_err(|e| decode_err(py, e, v.pending.take()))?;
        let headers = PyList::empty(py);
        for h in p.headers {
            headers.append((PyString::new(py, h.name), h.must_understand, h.value))?;
        }
        let bodies = PyList::empty(py);
        for b in p.bodies {
            bodies.append((
                PyString::new(py, b.target),
                PyString::new(py, b.response),
                b.value,
            ))?;
        }
        PyTuple::new(
            py,
            [
                p.version.into_pyobject(py)?.into_any(),
                headers.into_any(),
                bodies.into_any(),
            ],
        )
    })
}

/// Decode a remoting packet and say where each part's value lies: `(version,
/// [(name, must_understand, value, length, start, end)], [(target, response, value,
/// length, start, end)])`, `length` the part's length field as written, `data[start:end]`
/// the value's bytes. What a tool needs to write one part back and keep the others'
/// bytes.
#[pyfunction]
#[pyo3(signature = (data, /, *, max_depth=128, max_objects=10_000_000, max_size=268_435_456, tz_aware=false))]
pub fn decode_packet_layout<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    max_depth: u32,
    max_objects: u64,
    max_size: u64,
    tz_aware: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let opts = options(max_depth, max_objects, max_size, tz_aware)?;
    with_input(data, |input| {
        let mut v = PyVisitor::new(py, opts.tz_aware)?;
        let p = read_packet_lenient(input, opts.limits, None, &mut v)
            .map_err(|e| decode_err(py, e, v.pending.take()))?;
        let headers = PyList::empty(py);
        for h in p.headers {
            let name = PyString::new(py, h.name);
            headers.append((
                name,
                h.must_understand,
                h.value,
                h.layout
                    .length
                    .unwrap_or((h.layout.end - h.layout.start) as u32),
                h.layout.start,
                h.layout.end,
            ))?;
        }
        let bodies = PyList::empty(py);
        for b in p.bodies {
            let (target, response) = (PyString::new(py, b.target), PyString::new(py, b.response));
            bodies.append((
                target,
                response,
                b.value,
                b.layout
                    .length
                    .unwrap_or((b.layout.end - b.layout.start) as u32),
                b.layout.start,
                b.layout.end,
            ))?;
        }
        PyTuple::new(
            py,
            [
                p.version.into_pyobject(py)?.into_any(),
                headers.into_any(),
                bodies.into_any(),
            ],
        )
    })
}

/// A header (name, must-understand, value) or body (target, response, value).
type Part<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>);

fn parts<'py>(seq: &Bound<'py, PyAny>, what: &str) -> PyResult<Vec<Part<'py>>> {
    let mut out = Vec::new();
    for item in seq.try_iter()? {
        let item = item?;
        let t = item
            .cast::<PyTuple>()
            .map_err(|_| PyTypeError::new_err(format!("each {what} must be a 3-tuple")))?;
        if t.len() != 3 {
            return Err(PyTypeError::new_err(format!(
                "each {what} must be a 3-tuple"
            )));
        }
        out.push((t.get_item(0)?, t.get_item(1)?, t.get_item(2)?));
    }
    Ok(out)
}

/// Encode a remoting packet. Header values are AMF0 (peers read nothing else there);
/// body values are AMF0 for version 0 and go through the AVM+ switch to AMF3 for
/// version 3, as Flash Player and Flex expect. Lengths are the real lengths.
#[pyfunction]
#[pyo3(signature = (version, headers, bodies, /, *, default=None, max_depth=1024))]
pub fn encode_packet<'py>(
    py: Python<'py>,
    version: u16,
    headers: &Bound<'py, PyAny>,
    bodies: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    let headers = parts(headers, "header")?;
    let bodies = parts(bodies, "body")?;
    let mut e = PyEncoder::new(py, default, max_depth)?;
    let r = (|| -> amfkit_core::Result<()> {
        e.enc.packet_start(version, headers.len())?;
        for (i, (name, mu, value)) in headers.iter().enumerate() {
            let name: String = name.extract().map_err(|err| e.fail(err))?;
            let mu = mu.is_truthy().map_err(|err| e.fail(err))?;
            let slot = e.enc.packet_header(&name, mu)?;
            e.new_context();
            e.amf0(value)
                .map_err(|err| err.within(amfkit_core::PathSegment::Named("headers", i)))?;
            e.enc.packet_part_end(slot)?;
        }
        e.enc.packet_bodies(bodies.len())?;
        for (i, (target, response, value)) in bodies.iter().enumerate() {
            let target: String = target.extract().map_err(|err| e.fail(err))?;
            let response: String = response.extract().map_err(|err| e.fail(err))?;
            let slot = e.enc.packet_body(&target, &response)?;
            e.new_context();
            let r = if version == 3 {
                e.amf0_switch(value)
            } else {
                e.amf0(value)
            };
            r.map_err(|err| err.within(amfkit_core::PathSegment::Named("bodies", i)))?;
            e.enc.packet_part_end(slot)?;
        }
        Ok(())
    })();
    match r {
        Ok(()) => Ok(PyBytes::new(py, &e.enc.out.buf)),
        Err(err) => Err(e.py_error(err)),
    }
}
