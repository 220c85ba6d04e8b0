//! A traits entry, resolved once per class definition read: the [`Shape`] of its
//! objects and, per sealed slot, the name to set. This is where a class name meets the
//! registry: a registered class (its rules in `registered.rs`), one of Flex's
//! collections, an externalizable class nobody registered (refused here, before its body
//! is read, unless the decoder's lenient options say how to read it: as a collection, or
//! kept opaque), a `TypedObject`, or an anonymous object (a dict).

use std::sync::Arc;

use amfkit_core::flex::{ARRAY_COLLECTION, ARRAY_LIST, OBJECT_PROXY};
use amfkit_core::{BodyAs, Error, ErrorKind, Result, TraitsDef};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use super::registered::{check_externalizable, keeps_member};
use super::PyVisitor;
use crate::lossless::TraitsRecord;
use crate::registry::ClassInfo;

/// How objects of one traits entry are built.
pub enum Shape {
    Anonymous,
    Typed,
    Registered(Arc<ClassInfo>),
    ArrayCollection,
    ObjectProxy,
    /// An externalizable class nobody registered, its body kept as bytes (lenient).
    Opaque,
}

/// A traits entry as the visitor holds it (the reader keeps one per entry of its traits
/// table, and one per class name in AMF0).
pub struct PyTraits<'py> {
    pub(super) shape: Shape,
    pub(super) alias: Bound<'py, PyString>,
    /// Per sealed slot: the name to set, or None to drop the member.
    pub(super) keys: Vec<Option<Bound<'py, PyString>>>,
    pub(super) sealed: Option<Bound<'py, PyTuple>>,
    pub(super) dynamic: bool,
    /// In lossless decoding, for anonymous and typed objects and Flex collections: the
    /// index of this definition's record in the layout (`lossless.rs`), one per traits
    /// definition read.
    pub(super) token: Option<u32>,
    /// An object of these traits had more than `SETATTR_MEMBERS` dynamic members: the
    /// next ones take their instance dict from the first (see `PyObj::members`).
    pub(super) many_members: std::cell::Cell<bool>,
    /// A collection read from a class that is not Flex's (lenient `externalizable`): the
    /// object keeps the class name in its `alias`.
    pub(super) custom_alias: bool,
    /// For a registered class, when the decoder has an `on_mismatch` hook: the sealed
    /// names as read, until the first object of these traits was checked against the
    /// class (`registered.rs`); None otherwise.
    pub(super) check: std::cell::RefCell<Option<Vec<String>>>,
}

impl<'py> PyVisitor<'py> {
    /// Resolve a class definition read from the wire.
    pub(super) fn resolve_traits(
        &mut self,
        def: TraitsDef<'_, Bound<'py, PyString>>,
    ) -> Result<PyTraits<'py>> {
        let alias_obj = self.str_obj(def.class_name)?;
        // SAFETY: `str_obj` made `alias_obj` with PyUnicode_FromStringAndSize: it is a str.
        let alias = unsafe { alias_obj.cast_into_unchecked::<PyString>() };
        // An anonymous object is a dict, written back with dynamic members; a sealed
        // member named "" has no dynamic spelling (the empty name ends the list), so such
        // an object stays a TypedObject with its traits, which writes the same bytes.
        let shape = if def.class_name.is_empty()
            && !def.sealed.iter().any(|n| matches!(n.is_empty(), Ok(true)))
        {
            Shape::Anonymous
        } else if let Some(info) = self.reg.by_alias.get(def.class_name) {
            check_externalizable(info, def.class_name, def.externalizable)?;
            Shape::Registered(info.clone())
        } else if def.externalizable {
            match (def.class_name, def.lenient) {
                (ARRAY_COLLECTION | ARRAY_LIST, _) => Shape::ArrayCollection,
                (OBJECT_PROXY, _) => Shape::ObjectProxy,
                (_, Some(BodyAs::ArrayCollection)) => Shape::ArrayCollection,
                (_, Some(BodyAs::ObjectProxy)) => Shape::ObjectProxy,
                (_, Some(BodyAs::Opaque)) => Shape::Opaque,
                (other, None) => {
                    return Err(Error::new(
                        ErrorKind::UnknownExternalizable(other.into()),
                        Error::UNKNOWN_OFFSET,
                    ))
                }
            }
        } else {
            Shape::Typed
        };
        let mut keys = Vec::with_capacity(def.sealed.len());
        for name in &def.sealed {
            let keep = match &shape {
                Shape::Registered(info) => keeps_member(info, name.to_str().unwrap_or(""))?,
                _ => true,
            };
            keys.push(if keep { Some(name.clone()) } else { None });
        }
        let sealed = match shape {
            Shape::Typed => Some(PyTuple::new(self.py, &def.sealed).map_err(|e| self.fail(e))?),
            _ => None,
        };
        let custom_alias = matches!(shape, Shape::ArrayCollection | Shape::ObjectProxy)
            && !matches!(def.class_name, ARRAY_COLLECTION | ARRAY_LIST | OBJECT_PROXY);
        let check = match (&shape, &self.on_mismatch) {
            (Shape::Registered(info), Some(_)) if !info.externalizable => Some(
                def.sealed
                    .iter()
                    .map(|n| n.to_string_lossy().into_owned())
                    .collect(),
            ),
            _ => None,
        };
        let token = match (self.layout.is_some(), &shape) {
            (
                true,
                Shape::Anonymous | Shape::Typed | Shape::ArrayCollection | Shape::ObjectProxy,
            ) => {
                let names = match &sealed {
                    Some(t) => t.clone(),
                    None => PyTuple::new(self.py, &def.sealed).map_err(|e| self.fail(e))?,
                };
                let texts = def
                    .sealed
                    .iter()
                    .map(|n| n.to_str().map(str::to_owned))
                    .collect::<PyResult<Vec<String>>>()
                    .map_err(|e| self.fail(e))?;
                let record = TraitsRecord {
                    alias: alias.clone().unbind(),
                    alias_text: def.class_name.to_owned(),
                    sealed: names.unbind(),
                    names: texts,
                    dynamic: def.dynamic,
                };
                self.layout.as_mut().map(|layout| layout.add_traits(record))
            }
            _ => None,
        };
        Ok(PyTraits {
            shape,
            alias,
            keys,
            sealed,
            dynamic: def.dynamic,
            token,
            many_members: std::cell::Cell::new(false),
            custom_alias,
            check: std::cell::RefCell::new(check),
        })
    }
}
