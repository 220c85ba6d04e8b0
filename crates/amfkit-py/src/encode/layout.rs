//! Lossless .sol writing: an anonymous or typed AMF3 object that a lossless read
//! recorded is written with the traits it was read with, the same way (inline where the
//! file wrote them inline, as a reference where it referenced them), sealed members
//! included, as long as the object still fits them; a Flex collection with the
//! externalizable traits it was read with (their class name and dynamic bit).

use amfkit_core::flex::{ARRAY_COLLECTION, ARRAY_LIST, OBJECT_PROXY};
use amfkit_core::{PathSegment, Result};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString, PyTuple};

use super::PyEncoder;

impl<'py> PyEncoder<'py> {
    /// Write `obj` (a dict or a TypedObject, its object reference already taken) with
    /// its recorded traits; false (nothing written) when it has none or no longer fits
    /// them: a sealed member missing, a member a sealed class cannot hold, or a
    /// TypedObject whose alias, sealed names or dynamic flag changed.
    pub(super) fn amf3_laid_out(&mut self, obj: &Bound<'py, PyAny>, typed: bool) -> Result<bool> {
        let Some(layout) = self.layout.clone() else {
            return Ok(false);
        };
        let entry = layout
            .get_item(obj.as_ptr() as usize)
            .map_err(|e| self.fail(e))?;
        let Some(entry) = entry else {
            return Ok(false);
        };
        let Ok((recorded, token)) = entry.extract::<(Bound<'py, PyAny>, Bound<'py, PyTuple>)>()
        else {
            return Ok(false);
        };
        if !recorded.is(obj) {
            return Ok(false);
        }
        self.amf3_with_token(obj, &token, typed)
    }

    /// Write the traits and members of `obj` (a dict or a TypedObject, its object
    /// reference already taken) as the traits `token` says; false (nothing written) when
    /// it no longer fits them (see `amf3_laid_out`).
    fn amf3_with_token(
        &mut self,
        obj: &Bound<'py, PyAny>,
        token: &Bound<'py, PyTuple>,
        typed: bool,
    ) -> Result<bool> {
        let Ok((alias, sealed, dynamic)) =
            token.extract::<(Bound<'py, PyString>, Bound<'py, PyTuple>, bool)>()
        else {
            return Ok(false);
        };
        let Ok(dict) = obj.cast::<PyDict>() else {
            return Ok(false);
        };
        if !dynamic && dict.len() != sealed.len() {
            return Ok(false);
        }
        let mut names = Vec::with_capacity(sealed.len());
        for name in sealed.iter() {
            match name.extract::<String>() {
                Ok(n) if dict.contains(&name).unwrap_or(false) => names.push(n),
                _ => return Ok(false),
            }
        }
        if typed {
            let same = |attr: &str, want: &Bound<'py, PyAny>| {
                obj.getattr(attr).and_then(|v| v.eq(want)).unwrap_or(false)
            };
            let want_dynamic = PyBool::new(self.py, dynamic).to_owned().into_any();
            if !same("alias", alias.as_any())
                || !same("sealed", sealed.as_any())
                || !same("dynamic", &want_dynamic)
            {
                return Ok(false);
            }
        } else if alias.len().map_err(|e| self.fail(e))? != 0 {
            return Ok(false);
        }
        let key = token.as_ptr() as usize;
        if !self.enc.amf3_traits_reference(key) {
            let alias_text = alias.to_str().map_err(|e| self.fail(e))?;
            self.enc
                .amf3_traits_inline(Some(key), alias_text, &names, dynamic, false)?;
        }
        self.enter()?;
        for (name, key) in names.iter().zip(sealed.iter()) {
            let value = dict.get_item(&key).map_err(|e| self.fail(e))?;
            let Some(value) = value else {
                return Err(self
                    .enc
                    .error(format!("sealed member {name:?} vanished while writing")));
            };
            self.amf3(&value)
                .map_err(|e| e.within(PathSegment::key(name.as_str())))?;
        }
        if dynamic {
            if names.is_empty() {
                // Every member is dynamic: the plain dicts' walk (`amf3_members`).
                self.amf3_members_in_place(dict.as_ptr())?;
            } else {
                for (k, v) in dict.iter() {
                    if sealed.contains(&k).map_err(|e| self.fail(e))? {
                        continue;
                    }
                    self.amf3_member_obj(&k, &v)?;
                }
            }
            self.enc.amf3_str("")?;
        }
        self.leave();
        Ok(true)
    }

    /// A Flex collection (ArrayCollection, ObjectProxy) that a lossless read recorded:
    /// the key of the traits it was read with (the same traits entry is written inline
    /// once, then referenced, as in the file), their class name (an ArrayCollection read
    /// from a `flex.messaging.io.ArrayList` keeps that name) and dynamic bit, and for an
    /// ObjectProxy the traits token of its body (`decode/layout.rs`). None when the
    /// collection was not read losslessly.
    pub(super) fn collection_layout(
        &mut self,
        obj: &Bound<'py, PyAny>,
        is_array: bool,
    ) -> Result<Option<CollectionLayout<'py>>> {
        let Some(layout) = self.layout.clone() else {
            return Ok(None);
        };
        let entry = layout
            .get_item(obj.as_ptr() as usize)
            .map_err(|e| self.fail(e))?;
        let Some(Ok(entry)) = entry.map(|e| e.cast_into::<PyTuple>()) else {
            return Ok(None);
        };
        let (Ok(recorded), Ok(token)) = (entry.get_item(0), entry.get_item(1)) else {
            return Ok(None);
        };
        if !recorded.is(obj) {
            return Ok(None);
        }
        let Ok((alias, _, dynamic)) = token.extract::<(String, Bound<'py, PyTuple>, bool)>() else {
            return Ok(None);
        };
        let known = if is_array {
            alias == ARRAY_COLLECTION || alias == ARRAY_LIST
        } else {
            alias == OBJECT_PROXY
        };
        if !known {
            return Ok(None);
        }
        let body = entry
            .get_item(2)
            .ok()
            .and_then(|b| b.cast_into::<PyTuple>().ok());
        Ok(Some(CollectionLayout {
            key: token.as_ptr() as usize,
            alias,
            dynamic,
            body,
        }))
    }

    /// An ObjectProxy's body written with the traits token it was read with; false
    /// (nothing written) when the proxy's members no longer fit them.
    pub(super) fn amf3_proxy_body(
        &mut self,
        obj: &Bound<'py, PyAny>,
        body: &Bound<'py, PyTuple>,
    ) -> Result<bool> {
        self.amf3_with_token(obj, body, false)
    }
}

/// How a Flex collection was read (`PyEncoder::collection_layout`).
pub(super) struct CollectionLayout<'py> {
    pub key: usize,
    pub alias: String,
    pub dynamic: bool,
    pub body: Option<Bound<'py, PyTuple>>,
}
