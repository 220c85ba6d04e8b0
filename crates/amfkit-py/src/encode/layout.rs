//! Lossless .sol writing: an anonymous or typed AMF3 object that a lossless read
//! recorded (`lossless.rs`) is written with the traits it was read with, the same way
//! (inline where the file wrote them inline, as a reference where it referenced them),
//! sealed members included, as long as the object still fits them; a Flex collection with
//! the externalizable traits it was read with (their class name and dynamic bit).

use amfkit_core::flex::{ARRAY_COLLECTION, ARRAY_LIST, OBJECT_PROXY};
use amfkit_core::{PathSegment, Result};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};

use super::PyEncoder;
use crate::lossless::{Layout, TraitsRecord};

impl<'py> PyEncoder<'py> {
    /// Write with the encoding choices of a lossless read: the objects it recorded with
    /// their traits, the output reserved at once for about the size that was read, and
    /// the reference tables for what it met.
    pub(crate) fn set_layout(&mut self, layout: Option<Bound<'py, Layout>>) {
        if let Some(l) = layout.as_ref().and_then(|l| l.try_borrow().ok()) {
            self.reserve_output(l.data.input_len);
            self.enc.reserve_amf3(l.data.objects(), l.data.strings);
        }
        self.layout = layout;
    }

    /// Reserve the output for about `size` bytes (a little more, for an edit that grows
    /// the values read from that many), when the allocator grants it; a hint only.
    pub(crate) fn reserve_output(&mut self, size: usize) {
        let _ = self.enc.out.buf.try_reserve(size + size / 64 + 64);
    }

    /// Write `obj` (a dict or a TypedObject, its object reference already taken) with
    /// its recorded traits; false (nothing written) when it has none or no longer fits
    /// them: a sealed member missing, a member a sealed class cannot hold, or a
    /// TypedObject whose alias, sealed names or dynamic flag changed.
    pub(super) fn amf3_laid_out(&mut self, obj: &Bound<'py, PyAny>, typed: bool) -> Result<bool> {
        let Some(layout) = self.layout.clone() else {
            return Ok(false);
        };
        let Ok(layout) = layout.try_borrow() else {
            return Ok(false);
        };
        let Some(entry) = layout.data.entry(obj) else {
            return Ok(false);
        };
        self.amf3_with_traits(obj, layout.data.traits(entry.traits), typed)
    }

    /// Write the traits and members of `obj` (a dict or a TypedObject, its object
    /// reference already taken) as `traits` says; false (nothing written) when it no
    /// longer fits them (see `amf3_laid_out`).
    fn amf3_with_traits(
        &mut self,
        obj: &Bound<'py, PyAny>,
        traits: &TraitsRecord,
        typed: bool,
    ) -> Result<bool> {
        let Ok(dict) = obj.cast::<PyDict>() else {
            return Ok(false);
        };
        let names = &traits.names;
        if !traits.dynamic && dict.len() != names.len() {
            return Ok(false);
        }
        let sealed = traits.sealed.bind(self.py);
        if !names.is_empty() || typed {
            // Looking members up by name, and reading a TypedObject's attributes, may run
            // Python code (a str subclass's __eq__, a property).
            self.safepoint();
        }
        for name in sealed.iter() {
            if !dict.contains(&name).unwrap_or(false) {
                return Ok(false);
            }
        }
        if typed {
            let same = |attr: &str, want: &Bound<'py, PyAny>| {
                obj.getattr(attr).and_then(|v| v.eq(want)).unwrap_or(false)
            };
            let want_dynamic = PyBool::new(self.py, traits.dynamic).to_owned().into_any();
            if !same("alias", traits.alias.bind(self.py).as_any())
                || !same("sealed", sealed.as_any())
                || !same("dynamic", &want_dynamic)
            {
                return Ok(false);
            }
        } else if !traits.alias_text.is_empty() {
            return Ok(false);
        }
        let key = traits.key();
        if !self.enc.amf3_traits_reference(key) {
            self.enc.amf3_traits_inline(
                Some(key),
                &traits.alias_text,
                names,
                traits.dynamic,
                false,
            )?;
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
        if traits.dynamic {
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
    /// ObjectProxy the traits of its body (`decode/layout.rs`). None when the collection
    /// was not read losslessly.
    pub(super) fn collection_layout(
        &mut self,
        obj: &Bound<'py, PyAny>,
        is_array: bool,
    ) -> Result<Option<CollectionLayout>> {
        let Some(layout) = self.layout.clone() else {
            return Ok(None);
        };
        let Ok(layout) = layout.try_borrow() else {
            return Ok(None);
        };
        let Some(entry) = layout.data.entry(obj) else {
            return Ok(None);
        };
        let traits = layout.data.traits(entry.traits);
        let alias = traits.alias_text.as_str();
        let known = if is_array {
            alias == ARRAY_COLLECTION || alias == ARRAY_LIST
        } else {
            alias == OBJECT_PROXY
        };
        if !known {
            return Ok(None);
        }
        Ok(Some(CollectionLayout {
            key: traits.key(),
            alias: alias.to_owned(),
            dynamic: traits.dynamic,
            body: entry.body(),
        }))
    }

    /// An ObjectProxy's body written with the traits (`body`, from its
    /// `CollectionLayout`) it was read with; false (nothing written) when the proxy's
    /// members no longer fit them.
    pub(super) fn amf3_proxy_body(&mut self, obj: &Bound<'py, PyAny>, body: u32) -> Result<bool> {
        let Some(layout) = self.layout.clone() else {
            return Ok(false);
        };
        let Ok(layout) = layout.try_borrow() else {
            return Ok(false);
        };
        self.amf3_with_traits(obj, layout.data.traits(body), false)
    }
}

/// How a Flex collection was read (`PyEncoder::collection_layout`).
pub(super) struct CollectionLayout {
    pub key: usize,
    pub alias: String,
    pub dynamic: bool,
    pub body: Option<u32>,
}
