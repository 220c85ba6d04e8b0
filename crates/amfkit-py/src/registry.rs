//! The class-alias registry, shared by every encoder and decoder.
//!
//! Readers take a snapshot (`Arc<Registry>`) once per call; `register_class` builds a new
//! snapshot (copy on write), so the hot paths never lock.

use std::sync::{Arc, RwLock};

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyString, PyType};
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
    /// Instances have the `__dict__` Python gives them (the first `__dict__` on the
    /// class's MRO is the interpreter's own descriptor) and the class looks attributes up
    /// generically: the encoder may then take an instance's dict directly.
    plain_dict: bool,
    /// `plain_dict`, and no class on the MRO has a data descriptor (a property, a slot)
    /// but the dunder ones: setting an attribute is storing it in the instance dict, so
    /// the decoder may store members there directly.
    plain_members: bool,
    /// The class's version tag when the two were found (see [`version_tag`]).
    version_tag: u32,
}

impl ClassInfo {
    /// [`ClassInfo::plain_dict`] for an instance of type `tp`, if the class is unchanged
    /// since it was registered.
    #[inline]
    pub fn plain_dict(&self, tp: *mut ffi::PyTypeObject) -> bool {
        // SAFETY: `tp` is the live type of an instance the caller holds (the GIL is held).
        self.plain_dict
            && self.version_tag != 0
            && unsafe { (*tp).tp_version_tag } == self.version_tag
    }

    /// [`ClassInfo::plain_members`] for an instance of type `tp`, if the class is
    /// unchanged since it was registered.
    #[inline]
    pub fn plain_members(&self, tp: *mut ffi::PyTypeObject) -> bool {
        self.plain_members && self.plain_dict(tp)
    }

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

/// Whether a type's attribute lookup slot is the generic one (compared by address: the
/// interpreter's function has one address, which every extension links to).
#[inline]
fn generic_getattr(slot: Option<ffi::getattrofunc>) -> bool {
    slot.map(|f| f as usize) == Some(ffi::PyObject_GenericGetAttr as ffi::getattrofunc as usize)
}

/// How instances of a class keep their attributes, as far as the codec's short cuts
/// care: see [`ClassInfo::plain_dict`] and [`ClassInfo::plain_members`].
fn class_shape(cls: &Bound<'_, PyType>) -> (bool, bool) {
    let tp = cls.as_ptr() as *mut ffi::PyTypeObject;
    // SAFETY: `cls` is a live type object (a `Bound`: the GIL is held); its lookup slot
    // is compared by address only.
    if !generic_getattr(unsafe { (*tp).tp_getattro }) {
        return (false, false);
    }
    let Ok(mro) = cls.mro().try_iter() else {
        return (false, false);
    };
    let getset = (&raw mut ffi::PyGetSetDescr_Type) as *mut ffi::PyObject;
    let mut dict_found = None;
    let mut data_descriptors = false;
    for base in mro.flatten() {
        let Ok(own) = base
            .getattr("__dict__")
            .and_then(|d| d.cast_into::<PyMapping>().map_err(Into::into))
        else {
            return (false, false);
        };
        let Ok(items) = own.items() else {
            return (false, false);
        };
        for item in items.iter() {
            let Ok((name, value)) = item.extract::<(String, Bound<'_, PyAny>)>() else {
                continue;
            };
            let value_type = value.get_type();
            if name == "__dict__" && dict_found.is_none() {
                dict_found = Some(value_type.as_ptr() == getset);
            }
            // SAFETY: `value_type` is a live type object (a `Bound`: the GIL is held).
            let sets = unsafe {
                (*(value_type.as_ptr() as *mut ffi::PyTypeObject))
                    .tp_descr_set
                    .is_some()
            };
            if sets && !is_dunder(&name) {
                data_descriptors = true;
            }
        }
    }
    let plain_dict = dict_found == Some(true);
    (plain_dict, plain_dict && !data_descriptors)
}

/// The type's version tag: CPython changes it whenever the class or a base is modified
/// (and clears it until the next lookup), so an unchanged tag means an unchanged class.
/// 0 when the class has none.
fn version_tag(cls: &Bound<'_, PyType>) -> u32 {
    // A lookup through the class itself gives it a tag if it has none.
    let _ = cls.getattr("__init__");
    let tp = cls.as_ptr() as *mut ffi::PyTypeObject;
    // SAFETY: `cls` is a live type object (a `Bound`: the GIL is held).
    unsafe { (*tp).tp_version_tag }
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
    let (plain_dict, plain_members) = class_shape(cls);
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
        plain_dict,
        // An externalizable class reads its own body (`__readamf__` sets attributes).
        plain_members: plain_members && !externalizable,
        version_tag: version_tag(cls),
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
