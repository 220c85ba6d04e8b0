//! The exact document of AMF bytes: the core's `Value` tree (which keeps every choice a
//! writer made that a reader can see) as JSON-ready Python data, and back. What `amfkit
//! decode --json` prints for a remoting packet, what `amfkit encode` writes back to the
//! same bytes, and what `amfkit diff` compares. The format is in docs/cli.md ("The exact
//! JSON of packets").
//!
//! - `mod.rs` (here): the entry points `wire_read` and `wire_write`, and the JSON paths
//!   both directions build for `__ref__`;
//! - `to_doc.rs`: a `Value` to its document;
//! - `from_doc.rs`: a document to its `Value`.

mod from_doc;
mod to_doc;

use amfkit_core::packet::{read_packet_lenient, Body, Header, Packet};
use amfkit_core::{Decoder, PathSegment, Value, ValueVisitor};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::buffer::with_input;
use crate::errors::decode_err;
use crate::lenient::leniency;
use crate::options::options;

/// The keys that mark a tagged value in a document (a member with one of these names
/// is written in the `__members__` form).
pub(crate) const RESERVED: &[&str] = &[
    "__ref__",
    "__undefined__",
    "__unsupported__",
    "__float__",
    "__date__",
    "__xml__",
    "__xmldocument__",
    "__bytes__",
    "__vector__",
    "__array__",
    "__ecma__",
    "__dictionary__",
    "__amf3__",
    "__alias__",
    "__sealed__",
    "__dynamic__",
    "__traits__",
    "__members__",
    "__external__",
    "__small__",
    "__flags__",
    "__opaque__",
    "__packet__",
];

/// Append the JSON path step of member `key` to `path`: `.key` for a name that is an
/// identifier, else `["key"]` (the key as a JSON string), as `amfkit.cli.jsonio` does.
pub(crate) fn push_key(path: &mut String, key: &str) {
    let mut chars = key.chars();
    let ident = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        path.push('.');
        path.push_str(key);
        return;
    }
    path.push_str("[\"");
    for c in key.chars() {
        match c {
            '"' => path.push_str("\\\""),
            '\\' => path.push_str("\\\\"),
            '\n' => path.push_str("\\n"),
            '\r' => path.push_str("\\r"),
            '\t' => path.push_str("\\t"),
            '\u{08}' => path.push_str("\\b"),
            '\u{0c}' => path.push_str("\\f"),
            c if (c as u32) < 0x20 => path.push_str(&format!("\\u{:04x}", c as u32)),
            c => path.push(c),
        }
    }
    path.push_str("\"]");
}

/// Append the JSON path step of item `i` to `path`.
pub(crate) fn push_index(path: &mut String, i: usize) {
    path.push('[');
    path.push_str(&i.to_string());
    path.push(']');
}

/// Read AMF bytes as their exact document. `form` is `"packet"`, `"amf0"` or `"amf3"`;
/// with `stream`, a value form reads every value of the bytes (one reference context)
/// and gives their list. A malformed input raises `amfkit.DecodeError`.
#[pyfunction]
#[pyo3(signature = (data, form, /, *, stream=false, max_depth=128, max_objects=10_000_000, max_size=268_435_456, unknown_externalizable="error", externalizable=None))]
#[allow(clippy::too_many_arguments)]
pub fn wire_read<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    form: &str,
    stream: bool,
    max_depth: u32,
    max_objects: u64,
    max_size: u64,
    unknown_externalizable: &str,
    externalizable: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let opts = options(max_depth, max_objects, max_size, false)?;
    let lenient = leniency(unknown_externalizable, externalizable, None)?;
    let version = match form {
        "packet" => None,
        "amf0" => Some(false),
        "amf3" => Some(true),
        other => {
            return Err(PyValueError::new_err(format!(
                "form must be \"packet\", \"amf0\" or \"amf3\", not {other:?}"
            )))
        }
    };
    with_input(data, |input| {
        let Some(amf3) = version else {
            let p =
                read_packet_lenient(input, opts.limits, lenient.core.clone(), &mut ValueVisitor)
                    .map_err(|e| decode_err(py, e, None))?;
            return to_doc::packet(py, &p);
        };
        let mut de = Decoder::new(input, opts.limits).with_lenient(lenient.core.clone());
        let read = |de: &mut Decoder<'_, ValueVisitor>| {
            if amf3 {
                de.read_amf3(&mut ValueVisitor)
            } else {
                de.read_amf0(&mut ValueVisitor)
            }
        };
        let values = if stream {
            let mut out = Vec::new();
            while !de.is_empty() {
                let i = out.len();
                let v = read(&mut de).map_err(|e| {
                    decode_err(
                        py,
                        e.within(PathSegment::Index(i)).or_offset(de.position()),
                        None,
                    )
                })?;
                out.push(v);
            }
            out
        } else {
            let v = read(&mut de)
                .and_then(|v| de.finish().map(|()| v))
                .map_err(|e| decode_err(py, e.or_offset(de.position()), None))?;
            vec![v]
        };
        to_doc::values(py, &values, amf3, stream)
    })
}

/// Write a document back to AMF bytes: `form` as for `wire_read` (a packet document
/// says it is one: `{"__packet__": version, ...}`). A document that describes no AMF
/// raises ValueError naming its JSON path.
#[pyfunction]
#[pyo3(signature = (doc, form, /, *, stream=false))]
pub fn wire_write<'py>(
    py: Python<'py>,
    doc: &Bound<'py, PyAny>,
    form: &str,
    stream: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = match form {
        "packet" => {
            let mut parts = from_doc::packet(doc)?;
            let headers = parts
                .headers
                .iter_mut()
                .map(|(name, must_understand, value, layout)| Header {
                    name: name.as_str(),
                    must_understand: *must_understand,
                    value: std::mem::replace(value, Value::Null),
                    layout: *layout,
                })
                .collect();
            let bodies = parts
                .bodies
                .iter_mut()
                .map(|(target, response, value, layout)| Body {
                    target: target.as_str(),
                    response: response.as_str(),
                    value: std::mem::replace(value, Value::Null),
                    layout: *layout,
                })
                .collect();
            let p = Packet {
                version: parts.version,
                headers,
                bodies,
            };
            p.to_bytes()
                .map_err(|e| PyValueError::new_err(e.to_string()))?
        }
        "amf0" | "amf3" => {
            let amf3 = form == "amf3";
            let values = if stream {
                let list = doc.cast::<PyList>().map_err(|_| {
                    PyValueError::new_err("a stream's document is a list of values, at $")
                })?;
                from_doc::values(list.iter().collect(), amf3, true)?
            } else {
                from_doc::values(vec![doc.clone()], amf3, false)?
            };
            let r = if amf3 {
                Value::all_to_amf3(&values)
            } else {
                Value::all_to_amf0(&values)
            };
            r.map_err(|e| PyValueError::new_err(e.to_string()))?
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "form must be \"packet\", \"amf0\" or \"amf3\", not {other:?}"
            )))
        }
    };
    Ok(PyBytes::new(py, &bytes))
}
