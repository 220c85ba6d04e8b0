//! Encoding: Python objects written straight into the output buffer.
//!
//! Exact-type dispatch, hot types first; everything else goes through a separate cold
//! function. Containers are walked on their holder's reference, and owned only once
//! Python code may run (`lent.rs`). From then on every object keyed in a reference table
//! is kept alive until the encoder is done, so an address can never be reused by a
//! temporary within one encode.
//!
//! - `mod.rs` (here): the [`PyEncoder`] and the helpers both versions use;
//! - `obtype.rs`: what a value is (the cold classification, dict key kinds);
//! - `dictwalk.rs`: a dict's entries in order (read in place on CPython 3.11-3.13);
//! - `lent.rs`: containers walked on a borrowed reference, owned at safepoints;
//! - `amf3.rs`, `amf0.rs`: the writers of each version;
//! - `table.rs`: `amfkit.Table` in either version;
//! - `registered.rs`: instances of registered classes;
//! - `external.rs`: Flex collections, `DataOutput` and `__writeamf__` bodies;
//! - `api.rs`: the entry points (`amf3_encode`, `Amf3Encoder`, ...) and the encoder pool.
//!
//! Each file is an `impl PyEncoder` block. The imports go one way: `api` and the writers
//! (`amf3`, `amf0`, `table`, `registered`, `external`) take the encoder and its helpers
//! from this module, the dispatch kinds from `obtype`, and the crate's shared modules
//! (`options`, `errors`, `types`, `registry`, `buffer`); this module imports none of its
//! children but the dict walk, and no writer imports another (they call each other's
//! methods, as the values nest).

mod amf0;
mod amf3;
pub mod api;
mod dictwalk;
pub mod external;
mod layout;
mod lent;
mod obtype;
mod registered;
mod table;

pub(crate) use dictwalk::WALK as DICT_WALK;

use std::sync::Arc;

use amfkit_core::{Encoder as CoreEncoder, Error, Result};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rustc_hash::FxHashMap;

use crate::errors::{encode_err, Pending};
use crate::lossless::Layout;
use crate::registry::{snapshot, ClassInfo, Registry};
use crate::types::{types, Types};
use amfkit_core::date as dates;

/// Traits-table keys that are not type addresses (those are aligned, never this small).
pub(super) const ANONYMOUS_TRAITS: usize = 1;
pub(super) const ARRAY_COLLECTION_TRAITS: usize = 2;
pub(super) const OBJECT_PROXY_TRAITS: usize = 3;
pub(super) const FIRST_SYNTHETIC_TRAITS: usize = 5;

/// The reference count of an object held only by the one container it was lent by
/// (the hot walk takes no reference of its own; see `lent.rs`). An object the encoder
/// does own counts one more, so it is never taken for a sole one.
pub(super) const SOLE_OWNER: ffi::Py_ssize_t = 1;

/// Writes Python objects into a core encoder: one per encode call (or packet, or .sol
/// file), so its caches and kept objects live exactly as long as its reference tables.
pub struct PyEncoder<'py> {
    pub(super) py: Python<'py>,
    pub(super) t: &'static Types,
    pub(super) reg: Arc<Registry>,
    pub(crate) enc: CoreEncoder,
    default: Option<Bound<'py, PyAny>>,
    keep: Vec<Bound<'py, PyAny>>,
    /// Objects the walk reads on a borrowed reference (`lent.rs`); those below
    /// `lent_owned` were given a reference at a safepoint.
    lent: Vec<*mut ffi::PyObject>,
    lent_owned: usize,
    /// Objects keyed in a reference table before any Python code ran, not yet kept
    /// (`lent.rs`: the first safepoint keeps them, and every later one is kept at once).
    unkept: Vec<*mut ffi::PyObject>,
    /// Python code may have run: every object keyed from here on is kept at once.
    python_ran: bool,
    depth: u32,
    max_depth: u32,
    pending: Pending,
    /// Traits keys of TypedObjects: by the identity of (alias, sealed) first, then by
    /// their contents, so equal shapes share one traits entry as Flash writes them.
    pub(super) typed_traits: FxHashMap<(usize, usize, bool), usize>,
    pub(super) typed_shapes: FxHashMap<(String, Vec<String>, bool), usize>,
    /// String-table indexes by str object identity (checked before hashing contents),
    /// with a direct-mapped cache in front (member names repeat object after object).
    pub(super) str_ids: FxHashMap<usize, u32>,
    /// Empty until the first string misses it (a small encode never pays for it).
    pub(super) str_cache: Vec<(usize, u32)>,
    pub(super) last_class: (usize, *const ClassInfo),
    /// From a lossless read: the traits each anonymous or typed object was read with
    /// (`lossless.rs`, `encode/layout.rs`).
    layout: Option<Bound<'py, Layout>>,
}

/// The UTF-8 of a str object, valid while the object lives.
///
/// # Safety
/// `p` is a live `str` object (or subclass) and the GIL is held; the result must not
/// outlive the object.
#[inline]
pub(super) unsafe fn utf8<'a>(p: *mut ffi::PyObject) -> Option<&'a str> {
    // SAFETY: the caller's contract; CPython keeps the UTF-8 buffer it returns (cached
    // on the object) valid and well-formed for the object's life.
    unsafe {
        let mut size: ffi::Py_ssize_t = 0;
        let data = ffi::PyUnicode_AsUTF8AndSize(p, &mut size);
        if data.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(std::str::from_utf8_unchecked(std::slice::from_raw_parts(
            data as *const u8,
            size as usize,
        )))
    }
}

impl<'py> PyEncoder<'py> {
    pub(crate) fn new(
        py: Python<'py>,
        default: Option<Bound<'py, PyAny>>,
        max_depth: u32,
    ) -> PyResult<Self> {
        Self::with(py, CoreEncoder::with_capacity(256), default, max_depth)
    }

    /// An encoder writing into `core` (one kept from an earlier call), without a default.
    pub(crate) fn with_core(py: Python<'py>, core: CoreEncoder, max_depth: u32) -> PyResult<Self> {
        Self::with(py, core, None, max_depth)
    }

    fn with(
        py: Python<'py>,
        core: CoreEncoder,
        default: Option<Bound<'py, PyAny>>,
        max_depth: u32,
    ) -> PyResult<Self> {
        Ok(PyEncoder {
            py,
            t: types()?,
            reg: snapshot(),
            enc: core,
            default,
            keep: Vec::new(),
            lent: Vec::new(),
            lent_owned: 0,
            unkept: Vec::new(),
            python_ran: false,
            depth: 0,
            max_depth,
            pending: Pending::default(),
            typed_traits: FxHashMap::default(),
            typed_shapes: FxHashMap::default(),
            str_ids: FxHashMap::default(),
            str_cache: Vec::new(),
            last_class: (0, std::ptr::null()),
            layout: None,
        })
    }

    /// Forget every reference (a new packet header or body): the core tables were
    /// reset, and the caches keyed on them must go too.
    pub(crate) fn new_context(&mut self) {
        // The tables that keyed them are gone: their addresses no longer matter.
        self.unkept.clear();
        self.str_ids.clear();
        self.str_cache.clear();
        self.typed_traits.clear();
        self.typed_shapes.clear();
    }

    pub(crate) fn py_error(&mut self, e: Error) -> PyErr {
        encode_err(self.py, e, self.pending.take())
    }

    /// Record a Python exception (raised by a hook, a property, the C API): it is what
    /// the caller sees, carried up by the returned error.
    #[cold]
    #[inline(never)]
    pub(crate) fn fail(&mut self, err: PyErr) -> Error {
        self.pending.record(err, self.enc.len())
    }

    /// [`PyEncoder::fail`] with the exception a C API call just set, out of line: the hot
    /// callers (`own`, the int writers) keep PyErr::fetch out of their bodies.
    #[cold]
    #[inline(never)]
    pub(super) fn raised(&mut self) -> Error {
        self.fail(PyErr::fetch(self.py))
    }

    #[inline]
    pub(super) fn own(&mut self, ptr: *mut ffi::PyObject) -> Result<Bound<'py, PyAny>> {
        if ptr.is_null() {
            Err(self.raised())
        } else {
            // SAFETY: `ptr` is a non-null new reference returned by the C API, and the GIL
            // is held (`self.py`).
            Ok(unsafe { Bound::from_owned_ptr(self.py, ptr) })
        }
    }

    #[inline]
    pub(super) fn enter(&mut self) -> Result<()> {
        if self.depth >= self.max_depth {
            return Err(self.enc.error(format!(
                "nesting deeper than the limit of {}",
                self.max_depth
            )));
        }
        self.depth += 1;
        Ok(())
    }

    #[inline]
    pub(super) fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Keep `obj` alive for the rest of the encode.
    #[inline]
    pub(super) fn keep(&mut self, obj: &Bound<'py, PyAny>) {
        self.keep.push(obj.clone());
    }

    /// Keep `p` alive for the rest of the encode, as far as it needs to be: its address
    /// is a reference-table key, and must not be taken by another object while the table
    /// lives. Until Python code first runs, nothing can free an object of the graph
    /// (every one is held by its container, and no container has changed), so `p` is
    /// only noted; the first safepoint keeps every noted one (`lent.rs`).
    #[inline]
    pub(super) fn keep_keyed(&mut self, p: *mut ffi::PyObject) {
        if self.python_ran {
            // SAFETY: `p` is a live object (the caller's), and the GIL is held.
            self.keep
                .push(unsafe { Bound::from_borrowed_ptr(self.py, p) });
        } else {
            self.unkept.push(p);
        }
    }

    #[inline]
    pub(super) fn str_of(&mut self, p: *mut ffi::PyObject) -> Result<&'py str> {
        // SAFETY: callers pass the pointer of a live str (exact or subclass, checked) they
        // hold a `Bound` to, and the `&'py str` is used while the encoder (which keeps what
        // it keys) is alive.
        match unsafe { utf8(p) } {
            Some(s) => Ok(s),
            None => Err(self
                .enc
                .error("a str that is not valid unicode (lone surrogates)")),
        }
    }

    pub(super) fn str_of_key(&mut self, k: &Bound<'py, PyAny>) -> Result<&'py str> {
        // SAFETY: `k` is a live object (a `Bound`: the GIL is held).
        if unsafe { ffi::PyUnicode_Check(k.as_ptr()) } == 0 {
            let name = self.type_name(k);
            return Err(self
                .enc
                .error(format!("a member name must be a str, not {name}")));
        }
        self.str_of(k.as_ptr())
    }

    fn type_name(&self, obj: &Bound<'py, PyAny>) -> String {
        obj.get_type()
            .qualname()
            .map(|q| q.to_string())
            .unwrap_or_else(|_| "?".into())
    }

    pub(super) fn getattr(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: *mut ffi::PyObject,
    ) -> Result<Bound<'py, PyAny>> {
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held) and `name` an
        // interned str held by `Types` for the process's life.
        let r = unsafe { ffi::PyObject_GetAttr(obj.as_ptr(), name) };
        self.own(r)
    }

    /// Item `i` of a list or tuple, owned (a hook may change the list meanwhile).
    #[inline]
    pub(super) fn item(
        &mut self,
        p: *mut ffi::PyObject,
        is_list: bool,
        i: usize,
        len: usize,
    ) -> Result<Bound<'py, PyAny>> {
        // SAFETY: `p` is the list or tuple the caller holds a `Bound` to (checked with
        // list_or_tuple_len or PyTuple_Check), and `i < len`, its length: the list's size
        // is checked again first (a hook may have changed it), a tuple cannot change. The
        // item is borrowed and turned into a new reference at once.
        unsafe {
            if is_list {
                if ffi::PyList_GET_SIZE(p) as usize != len {
                    return Err(self.enc.error("a list changed size while being encoded"));
                }
                Ok(Bound::from_borrowed_ptr(
                    self.py,
                    ffi::PyList_GET_ITEM(p, i as ffi::Py_ssize_t),
                ))
            } else {
                Ok(Bound::from_borrowed_ptr(
                    self.py,
                    ffi::PyTuple_GET_ITEM(p, i as ffi::Py_ssize_t),
                ))
            }
        }
    }

    /// The owned (key, value) pairs of a dict.
    pub(super) fn dict_items(
        &mut self,
        p: *mut ffi::PyObject,
    ) -> Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        // SAFETY: `p` is a dict (or subclass) the caller holds a `Bound` to, with the GIL
        // held.
        let mut out = Vec::with_capacity(unsafe { ffi::PyDict_Size(p) } as usize);
        let mut pos: ffi::Py_ssize_t = 0;
        while let Some(kv) = self.dict_next(p, &mut pos) {
            out.push(kv);
        }
        out
    }

    /// The next (key, value) of a dict, owned (a hook may change the dict meanwhile).
    #[inline]
    pub(super) fn dict_next(
        &self,
        p: *mut ffi::PyObject,
        pos: &mut ffi::Py_ssize_t,
    ) -> Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        // SAFETY: `p` is a dict (or subclass) the caller holds a `Bound` to, with the GIL
        // held; the walk stops at the end or if the dict changed size, and its borrowed
        // key and value become new references at once.
        unsafe {
            let (k, v) = dictwalk::next(p, pos)?;
            Some((
                Bound::from_borrowed_ptr(self.py, k),
                Bound::from_borrowed_ptr(self.py, v),
            ))
        }
    }

    #[cold]
    pub(super) fn big_int(&mut self, p: *mut ffi::PyObject) -> Result<f64> {
        // SAFETY: `p` is an int (or subclass) the caller holds a `Bound` to, with the GIL
        // held.
        let d = unsafe { ffi::PyLong_AsDouble(p) };
        // SAFETY: the GIL is held; this only reads and clears the thread's error indicator.
        if d == -1.0 && unsafe { !ffi::PyErr_Occurred().is_null() } {
            // SAFETY: as above.
            unsafe { ffi::PyErr_Clear() };
            return Err(self.enc.error("an int too large for a double"));
        }
        Ok(d)
    }

    /// A set's items as a tuple (kept alive: it may take a table entry).
    pub(super) fn set_items(&mut self, obj: &Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>> {
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held).
        let items = self.own(unsafe { ffi::PySequence_Tuple(obj.as_ptr()) })?;
        self.keep(&items);
        Ok(items)
    }

    /// An `amfkit.Date`'s milliseconds and AMF0 time-zone field.
    pub(super) fn amf_date(&mut self, obj: &Bound<'py, PyAny>) -> Result<(f64, i16)> {
        let names = &self.t.names;
        let (millis, tz) = (names.millis, names.tz);
        let millis = self
            .getattr(obj, millis)?
            .extract::<f64>()
            .map_err(|e| self.fail(e))?;
        let tz = self
            .getattr(obj, tz)?
            .extract::<i16>()
            .map_err(|e| self.fail(e))?;
        Ok((millis, tz))
    }

    /// Milliseconds since the epoch of a datetime (naive = UTC) or a date (midnight UTC).
    pub(super) fn millis(&mut self, obj: &Bound<'py, PyAny>) -> Result<f64> {
        let p = obj.as_ptr();
        // SAFETY: `obj` is a live `datetime.date` or `datetime.datetime` (classified with
        // PyDate_Check/PyDateTime_Check), the GIL is held and the datetime C API was loaded
        // by `_setup`; the time fields are read only for a datetime, and the offset only
        // when utcoffset() returned a timedelta (an aware datetime's utcoffset() returns
        // one or None).
        unsafe {
            let y = ffi::PyDateTime_GET_YEAR(p);
            let m = ffi::PyDateTime_GET_MONTH(p) as u32;
            let d = ffi::PyDateTime_GET_DAY(p) as u32;
            let days = dates::days_from_civil(y, m, d) as f64;
            if ffi::PyDateTime_Check(p) == 0 {
                return Ok(days * 86_400_000.0);
            }
            let secs = ffi::PyDateTime_DATE_GET_HOUR(p) as f64 * 3600.0
                + ffi::PyDateTime_DATE_GET_MINUTE(p) as f64 * 60.0
                + ffi::PyDateTime_DATE_GET_SECOND(p) as f64;
            let us = ffi::PyDateTime_DATE_GET_MICROSECOND(p) as f64;
            let mut millis = days * 86_400_000.0 + secs * 1000.0 + us / 1000.0;
            let offset = self.own(ffi::PyObject_CallMethodNoArgs(p, self.t.names.utcoffset))?;
            if !offset.is_none() {
                let o = offset.as_ptr();
                let off = ffi::PyDateTime_DELTA_GET_DAYS(o) as f64 * 86_400_000.0
                    + ffi::PyDateTime_DELTA_GET_SECONDS(o) as f64 * 1000.0
                    + ffi::PyDateTime_DELTA_GET_MICROSECONDS(o) as f64 / 1000.0;
                millis -= off;
            }
            Ok(millis)
        }
    }

    pub(super) fn buffer(&mut self, obj: &Bound<'py, PyAny>) -> Result<Vec<u8>> {
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held), cast to bytes only
        // after PyBytes_Check.
        unsafe {
            let p = obj.as_ptr();
            if ffi::PyBytes_Check(p) != 0 {
                return Ok(obj.cast_unchecked::<PyBytes>().as_bytes().to_vec());
            }
        }
        crate::buffer::copy_buffer(obj).map_err(|e| self.fail(e))
    }

    /// The `default` hook's replacement for an object of an unknown type.
    pub(super) fn call_default(&mut self, obj: &Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>> {
        let Some(default) = self.default.clone() else {
            let name = self.type_name(obj);
            return Err(self.enc.error(format!(
                "cannot encode an object of type {name}: register it with amfkit.register_class or pass default="
            )));
        };
        let r = default.call1((obj,)).map_err(|e| self.fail(e))?;
        self.keep(&r);
        Ok(r)
    }
}

impl Drop for PyEncoder<'_> {
    /// Drop what safepoints owned on the lent stack (an error may leave entries there).
    fn drop(&mut self) {
        self.give_back(0);
    }
}

/// Whether `p` (a list or a tuple) is a list, and its length.
#[inline]
pub(super) fn list_or_tuple_len(p: *mut ffi::PyObject) -> (bool, usize) {
    // SAFETY: callers pass the pointer of a list or tuple (exact or subclass, checked) they
    // hold a `Bound` to, with the GIL held.
    unsafe {
        if ffi::PyList_Check(p) != 0 {
            (true, ffi::PyList_GET_SIZE(p) as usize)
        } else {
            (false, ffi::PyTuple_GET_SIZE(p) as usize)
        }
    }
}
