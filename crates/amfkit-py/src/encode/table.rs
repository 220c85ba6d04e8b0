//! `amfkit.Table` (rows of one class, as a RecordSet-like array of sealed objects), in
//! AMF3 (one traits entry for every row) and in AMF0.

use amfkit_core::amf3::marker as m3;
use amfkit_core::flex::ARRAY_COLLECTION;
use amfkit_core::{PathSegment, Result};
use pyo3::ffi;
use pyo3::prelude::*;

use super::{PyEncoder, ARRAY_COLLECTION_TRAITS};

impl<'py> PyEncoder<'py> {
    /// The alias, columns (as a tuple object and as text) and rows of a Table.
    #[allow(clippy::type_complexity)]
    fn table_parts(
        &mut self,
        obj: &Bound<'py, PyAny>,
    ) -> Result<(
        Bound<'py, PyAny>,
        &'py str,
        Bound<'py, PyAny>,
        Vec<String>,
        Bound<'py, PyAny>,
    )> {
        let alias = self.getattr(obj, self.t.names.alias)?;
        let columns = self.getattr(obj, self.t.names.columns)?;
        let rows = self.getattr(obj, self.t.names.rows)?;
        self.keep(&alias);
        self.keep(&columns);
        self.keep(&rows);
        // SAFETY: `alias` is a live object (a `Bound`: the GIL is held).
        if unsafe { ffi::PyUnicode_Check(alias.as_ptr()) } == 0 {
            return Err(self.enc.error("a Table alias must be a str"));
        }
        let alias_str = self.str_of(alias.as_ptr())?;
        let names: Vec<String> = columns.extract().map_err(|e| self.fail(e))?;
        Ok((alias, alias_str, columns, names, rows))
    }

    /// Row `i` of a Table as a sequence of exactly `width` values.
    fn table_row(
        &mut self,
        rows: &Bound<'py, PyAny>,
        i: usize,
        width: usize,
    ) -> Result<Bound<'py, PyAny>> {
        let row = rows.get_item(i).map_err(|e| self.fail(e))?;
        let p = row.as_ptr();
        // SAFETY: `row` is a live object (a `Bound`: the GIL is held), and each size is
        // read only after its type check.
        let len = unsafe {
            if ffi::PyTuple_Check(p) != 0 {
                ffi::PyTuple_GET_SIZE(p)
            } else if ffi::PyList_Check(p) != 0 {
                ffi::PyList_GET_SIZE(p)
            } else {
                return Err(self.enc.error("a Table row must be a tuple or a list"));
            }
        } as usize;
        if len != width {
            return Err(self
                .enc
                .error(format!("a Table row of {len} values for {width} columns")));
        }
        Ok(row)
    }

    /// A Table: an Array (or ArrayCollection) of sealed typed objects, one traits entry.
    pub(super) fn amf3_table(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        let collection = self
            .getattr(obj, self.t.names.collection)?
            .is_truthy()
            .map_err(|e| self.fail(e))?;
        let marker = if collection { m3::OBJECT } else { m3::ARRAY };
        if self.amf3_ref(marker, obj) {
            return Ok(());
        }
        if collection {
            if !self.enc.amf3_traits_reference(ARRAY_COLLECTION_TRAITS) {
                self.enc.amf3_traits_inline::<&str>(
                    Some(ARRAY_COLLECTION_TRAITS),
                    ARRAY_COLLECTION,
                    &[],
                    false,
                    true,
                )?;
            }
            self.enc.out.u8(m3::ARRAY);
            self.enc.amf3_register(None);
        }
        let (alias, alias_str, columns, names, rows) = self.table_parts(obj)?;
        let count = rows.len().map_err(|e| self.fail(e))?;
        self.enter()?;
        self.enc.amf3_array_header(count)?;
        self.enc.amf3_str("")?;
        for i in 0..count {
            let row = self.table_row(&rows, i, names.len())?;
            self.enc.out.u8(m3::OBJECT);
            self.enc.amf3_register(None);
            self.amf3_shaped_traits(&alias, &columns, alias_str, &names, false)?;
            // SAFETY: `row` is a live object (a `Bound`: the GIL is held).
            let is_tuple = unsafe { ffi::PyTuple_Check(row.as_ptr()) } != 0;
            for (j, name) in names.iter().enumerate() {
                let v = self.item(row.as_ptr(), !is_tuple, j, names.len())?;
                self.amf3(&v).map_err(|e| {
                    e.within(PathSegment::key(name.as_str()))
                        .within(PathSegment::Index(i))
                })?;
            }
        }
        self.leave();
        Ok(())
    }

    /// A Table in AMF0: a strict array of typed objects (anonymous when the alias is "").
    pub(super) fn amf0_table(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self
            .getattr(obj, self.t.names.collection)?
            .is_truthy()
            .map_err(|e| self.fail(e))?
        {
            return self.amf0_switch(obj);
        }
        if self.amf0_ref(obj) {
            return Ok(());
        }
        let (_, alias_str, _, names, rows) = self.table_parts(obj)?;
        let count = rows.len().map_err(|e| self.fail(e))?;
        self.enter()?;
        self.enc.amf0_strict_array_start(count)?;
        for i in 0..count {
            let row = self.table_row(&rows, i, names.len())?;
            self.enc.amf0_register(None);
            if alias_str.is_empty() {
                self.enc.amf0_object_start();
            } else {
                self.enc.amf0_typed_object_start(alias_str)?;
            }
            // SAFETY: `row` is a live object (a `Bound`: the GIL is held).
            let is_tuple = unsafe { ffi::PyTuple_Check(row.as_ptr()) } != 0;
            for (j, name) in names.iter().enumerate() {
                let v = self.item(row.as_ptr(), !is_tuple, j, names.len())?;
                self.amf0_member(name, &v)
                    .map_err(|e| e.within(PathSegment::Index(i)))?;
            }
            self.enc.amf0_object_end();
        }
        self.leave();
        Ok(())
    }
}
