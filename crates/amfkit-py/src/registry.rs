//! The class-alias registry, shared by every encoder and decoder.
//!
//! Readers take a snapshot (`Arc<Registry>`) once per call; `register_class` builds a new
//! snapshot (copy on write), so the hot paths never lock.

use std::sync::{Arc, RwLock};

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyType};
use rustc_hash::{FxHashMap, FxHashSet};

/// What the codec knows of one registered class.
pub struct ClassInfo {
    pub cls: Py<PyType>,
    pub alias: String,
    /// Sealed members, in wire order.
    pub static_names: Vec<String>,
    pub static_py: Vec<Py<PyString>>,
    pub static_set: FxHashSet<String>,
    pub dynamic: bool,
    pub exclude: FxHashSet<String>,
    pub externalizable: bool,
    /// `__slots__` names (base classes first), read when an instance has no `__dict__`
    /// entry for them.
    pub slots: Vec<Py<PyString>>,
}

impl ClassInfo {
    /// Whether a member name read from the wire may be set on an instance.
    pub fn accepts(&self, name: &str) -> bool {
        self.dynamic || self.static_set.contains(name)
    }
}

#[derive(Default)]
pub struct Registry {
    pub by_type: FxHashMap<usize, Arc<ClassInfo>>,
    pub by_alias: FxHashMap<String, Arc<ClassInfo>>,
}

static REGISTRY: RwLock<Option<Arc<Registry>>> = RwLock::new(None);

/// The current registry.
pub fn snapshot() -> Arc<Registry> {
    let guard = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    match &*guard {
        Some(r) => r.clone(),
        None => Arc::new(Registry::default()),
    }
}

fn update(f: impl FnOnce(&mut Registry) -> PyResult<()>) -> PyResult<()> {
    let mut guard = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    let current = guard.clone().unwrap_or_default();
    let mut next = Registry {
        by_type: current.by_type.clone(),
        by_alias: current.by_alias.clone(),
    };
    f(&mut next)?;
    *guard = Some(Arc::new(next));
    Ok(())
}

/// Dunder names (`__class__`, `__init__`, ...) are never members of a registered class.
pub fn is_dunder(name: &str) -> bool {
    name.len() > 4 && name.starts_with("__") && name.ends_with("__")
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn _register_class(
    cls: &Bound<'_, PyType>,
    alias: &str,
    static_names: Vec<String>,
    dynamic: bool,
    exclude: Vec<String>,
    externalizable: bool,
    slots: Vec<String>,
) -> PyResult<()> {
    let py = cls.py();
    for name in static_names.iter().chain(&exclude) {
        if is_dunder(name) {
            return Err(PyValueError::new_err(format!(
                "{name:?} cannot be an amf member name"
            )));
        }
    }
    if alias.len() > 0xffff {
        return Err(PyValueError::new_err(
            "a class alias must be shorter than 65536 bytes",
        ));
    }
    let info = Arc::new(ClassInfo {
        cls: cls.clone().unbind(),
        alias: alias.to_owned(),
        static_py: static_names
            .iter()
            .map(|n| PyString::intern(py, n).unbind())
            .collect(),
        static_set: static_names.iter().cloned().collect(),
        static_names,
        dynamic,
        exclude: exclude.into_iter().collect(),
        externalizable,
        slots: slots
            .iter()
            .map(|n| PyString::intern(py, n).unbind())
            .collect(),
    });
    let key = cls.as_ptr() as usize;
    update(|r| {
        if let Some(other) = r.by_alias.get(alias) {
            if other.cls.as_ptr() as usize != key {
                return Err(PyValueError::new_err(format!(
                    "alias {alias:?} is already registered to {}; unregister it first",
                    other
                        .cls
                        .bind(py)
                        .qualname()
                        .map(|q| q.to_string())
                        .unwrap_or_default()
                )));
            }
        }
        if let Some(old) = r.by_type.remove(&key) {
            r.by_alias.remove(&old.alias);
        }
        r.by_type.insert(key, info.clone());
        r.by_alias.insert(info.alias.clone(), info);
        Ok(())
    })
}

#[pyfunction]
pub fn _unregister_class(target: &Bound<'_, PyAny>) -> PyResult<()> {
    update(|r| {
        let info = if let Ok(alias) = target.extract::<String>() {
            r.by_alias.get(&alias).cloned()
        } else {
            r.by_type.get(&(target.as_ptr() as usize)).cloned()
        };
        let Some(info) = info else {
            return Err(PyKeyError::new_err(format!("{target} is not registered")));
        };
        r.by_alias.remove(&info.alias);
        r.by_type.remove(&(info.cls.as_ptr() as usize));
        Ok(())
    })
}

#[pyfunction]
pub fn _registered_classes<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (alias, info) in &snapshot().by_alias {
        out.set_item(alias, info.cls.bind(py))?;
    }
    Ok(out)
}
