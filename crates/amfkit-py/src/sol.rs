//! .sol files from and to Python: `decode_sol` and `encode_sol`.

use amfkit_core::sol::{read_sol, AMF0, AMF3};
use amfkit_core::PathSegment;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString, PyTuple};

use crate::buffer::with_input;
use crate::decode::PyVisitor;
use crate::encode::PyEncoder;
use crate::errors::decode_err;
use crate::lossless::{Layout, LayoutData};
use crate::options::options;
use crate::output::Encoded;

/// Decode a .sol file: `(name, amf_version, {member: value}, layout, inline_strings)`,
/// members in file order (a repeated name keeps its last value). One reference context
/// spans the members. With `lossless`, `layout` records the traits each anonymous or
/// typed AMF3 object was read with (a `Layout`, `lossless.rs`), else None;
/// `inline_strings` says the file's writer never references strings.
#[pyfunction]
#[pyo3(signature = (data, /, *, max_depth=128, max_objects=10_000_000, max_size=268_435_456, tz_aware=false, lossless=false))]
pub fn decode_sol<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    max_depth: u32,
    max_objects: u64,
    max_size: u64,
    tz_aware: bool,
    lossless: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let opts = options(max_depth, max_objects, max_size, tz_aware)?;
    with_input(data, |input| {
        let mut v = PyVisitor::new(py, opts.tz_aware)?;
        if lossless {
            v.layout = Some(LayoutData::new(input.len()));
        }
        let body = read_sol(input, opts.limits, &mut v)
            .map_err(|e| decode_err(py, e, v.pending.take()))?;
        if let Some(layout) = &mut v.layout {
            layout.strings = body.amf3_strings;
            layout.finish();
        }
        let values = PyDict::new(py);
        for (key, value) in body.values {
            values.set_item(PyString::new(py, key), value)?;
        }
        PyTuple::new(
            py,
            [
                PyString::new(py, body.name).into_any(),
                body.version.into_pyobject(py)?.into_any(),
                values.into_any(),
                match v.layout.take() {
                    Some(data) => Bound::new(py, Layout { data })?.into_any(),
                    None => py.None().into_bound(py),
                },
                PyBool::new(py, body.inline_strings).to_owned().into_any(),
            ],
        )
    })
}

/// Encode a .sol file from a mapping of str member names to values, in its order; the
/// values are AMF0 or AMF3 as `version` says and share one reference context. `layout`
/// and `inline_strings` (from a lossless `decode_sol`) write the objects it names with
/// the traits they were read with, and every string inline; `size_hint` (the size of the
/// file the values were read from) reserves the output at once. The bytes come back as
/// an `Encoded` buffer, not copied (`output.rs`).
#[pyfunction]
#[pyo3(signature = (name, version, values, /, *, default=None, max_depth=1024, layout=None, inline_strings=false, size_hint=0))]
#[allow(clippy::too_many_arguments)]
pub fn encode_sol<'py>(
    py: Python<'py>,
    name: &str,
    version: i64,
    values: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
    layout: Option<Bound<'py, Layout>>,
    inline_strings: bool,
    size_hint: usize,
) -> PyResult<Bound<'py, Encoded>> {
    let version = match version {
        0 => AMF0,
        3 => AMF3,
        _ => {
            return Err(PyValueError::new_err(format!(
                "amf_version must be 0 or 3, not {version}"
            )))
        }
    };
    let items = values.call_method0("items")?;
    let mut e = PyEncoder::new(py, default, max_depth)?;
    e.reserve_output(size_hint);
    e.set_layout(layout);
    e.enc.inline_every_string = inline_strings;
    let r = (|| -> amfkit_core::Result<()> {
        let slot = e.enc.sol_start(name, version)?;
        for item in items.try_iter().map_err(|err| e.fail(err))? {
            let item = item.map_err(|err| e.fail(err))?;
            let (key, value): (Bound<'py, PyAny>, Bound<'py, PyAny>) =
                item.extract().map_err(|err| e.fail(err))?;
            let Ok(key) = key.cast::<PyString>() else {
                let kind = key
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default();
                return Err(e
                    .enc
                    .error(format!("a .sol member name must be a str, not {kind}")));
            };
            let key = key.to_str().map_err(|err| e.fail(err))?;
            e.enc.sol_key(version, key)?;
            let r = if version == AMF3 {
                e.amf3(&value)
            } else {
                e.amf0(&value)
            };
            r.map_err(|err| err.within(PathSegment::key(key)))?;
            e.enc.sol_member_end();
            // The next member comes from Python code (`items()`): what the tables keyed
            // so far is kept from here on.
            e.safepoint();
        }
        e.enc.sol_end(slot)
    })();
    match r {
        Ok(()) => Bound::new(py, Encoded::new(e.enc.take())),
        Err(err) => Err(e.py_error(err)),
    }
}
