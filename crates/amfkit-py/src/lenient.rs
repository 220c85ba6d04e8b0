//! The lenient options of the decoders (`unknown_externalizable`, `externalizable`,
//! `on_mismatch`), checked once per call or per `Decoder`: what the core's
//! `amfkit_core::lenient` reads, and the hook told of registered classes whose members
//! differ from what they declare.

use std::sync::Arc;

use amfkit_core::{BodyAs, Lenient};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// The lenient options of one call or one `Decoder`.
#[derive(Default)]
pub struct Leniency {
    /// For the core reader; None is strict.
    pub core: Option<Arc<Lenient>>,
    /// Called as `on_mismatch(alias, undeclared, missing)` for a registered class whose
    /// members on the wire differ from the ones it declares.
    pub on_mismatch: Option<Py<PyAny>>,
}

impl Leniency {
    /// `unknown_externalizable`, as given.
    pub fn unknown_externalizable(&self) -> &'static str {
        self.core
            .as_deref()
            .map_or("error", Lenient::unknown_externalizable)
    }

    /// `externalizable`, as a new dict of class name to how its body is read.
    pub fn externalizable<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        if let Some(l) = &self.core {
            let mut names: Vec<_> = l.classes.iter().collect();
            names.sort_by(|a, b| a.0.cmp(b.0));
            for (name, how) in names {
                d.set_item(name, how.name())?;
            }
        }
        Ok(d)
    }
}

/// Check the lenient options of a decoder:
///
/// - `unknown_externalizable`: `"error"` (the default) or `"opaque"`: the body of an
///   externalizable class no one registered is kept as an `amfkit.Opaque`;
/// - `externalizable`: a dict of class name to `"arraycollection"`, `"objectproxy"` or
///   `"opaque"`, for classes known to write one Array, one object, or to be kept opaque;
/// - `on_mismatch`: a callable, or None.
pub fn leniency(
    unknown_externalizable: &str,
    externalizable: Option<&Bound<'_, PyAny>>,
    on_mismatch: Option<Bound<'_, PyAny>>,
) -> PyResult<Leniency> {
    let opaque_unknown = match unknown_externalizable {
        "error" => false,
        "opaque" => true,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown_externalizable must be \"error\" or \"opaque\", not {other:?}"
            )))
        }
    };
    let mut lenient = Lenient {
        opaque_unknown,
        ..Lenient::default()
    };
    if let Some(classes) = externalizable.filter(|c| !c.is_none()) {
        let classes = classes.cast::<PyDict>().map_err(|_| {
            PyTypeError::new_err(
                "externalizable must be a dict of class name to \"arraycollection\", \
                 \"objectproxy\" or \"opaque\"",
            )
        })?;
        for (name, how) in classes.iter() {
            let name = name
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err("externalizable: class names are strings"))?
                .to_str()?
                .to_owned();
            let how_text: String = how.extract().map_err(|_| {
                PyTypeError::new_err(format!("externalizable[{name:?}] must be a string"))
            })?;
            let Some(how) = BodyAs::from_name(&how_text) else {
                return Err(PyValueError::new_err(format!(
                    "externalizable[{name:?}] must be \"arraycollection\", \"objectproxy\" or \
                     \"opaque\", not {how_text:?}"
                )));
            };
            lenient.classes.insert(name, how);
        }
    }
    let on_mismatch = match on_mismatch.filter(|f| !f.is_none()) {
        Some(f) if !f.is_callable() => {
            return Err(PyTypeError::new_err("on_mismatch must be callable or None"))
        }
        f => f.map(Bound::unbind),
    };
    Ok(Leniency {
        core: (!lenient.is_strict()).then(|| Arc::new(lenient)),
        on_mismatch,
    })
}
