//! Lossless .sol writing: an anonymous or typed AMF3 object that a lossless read
//! recorded is written with the traits it was read with, the same way (inline where the
//! file wrote them inline, as a reference where it referenced them), sealed members
//! included, as long as the object still fits them.

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
        let Ok((alias, sealed, dynamic)) =
            token.extract::<(Bound<'py, PyString>, Bound<'py, PyTuple>, bool)>()
        else {
            return Ok(false);
        };
        let Ok(dict) = obj.cast::<PyDict>() else {
            return Ok(false);
        };
        if !recorded.is(obj) || (!dynamic && dict.len() != sealed.len()) {
            return Ok(false);
        }
        let mut names = Vec::with_capacity(sealed.len());
        for name in sealed.iter() {
            match name.extract::<String>() {
                Ok(n) if dict.contains(&name).unwrap_or(false) => names.push(n),
                _ => return Ok(false),
            }
        }
        let alias_text = alias.to_str().map_err(|e| self.fail(e))?.to_owned();
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
        } else if !alias_text.is_empty() {
            return Ok(false);
        }
        let key = token.as_ptr() as usize;
        if !self.enc.amf3_traits_reference(key) {
            self.enc
                .amf3_traits_inline(Some(key), &alias_text, &names, dynamic, false)?;
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
            for (k, v) in dict.iter() {
                if sealed.contains(&k).map_err(|e| self.fail(e))? {
                    continue;
                }
                self.amf3_member_obj(&k, &v)?;
            }
            self.enc.amf3_str("")?;
        }
        self.leave();
        Ok(true)
    }
}
