//! Encoding: Python objects written straight into the output buffer.
//!
//! Exact-type dispatch, hot types first; everything else goes through a separate cold
//! function. Every object keyed in a reference table is kept alive until the encoder is
//! done, so an address can never be reused by a temporary within one encode.

use std::sync::Arc;

use amfkit_core::amf3::marker as m3;
use amfkit_core::{Encoder as CoreEncoder, Error, PathSegment, Result};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use rustc_hash::FxHashMap;
use std::sync::Mutex;

use crate::errors::{encode_err, Pending};
use crate::options::{check_depth, Version};
use crate::registry::{snapshot, ClassInfo, Registry};
use crate::types::{types, Types};
use amfkit_core::date as dates;
use amfkit_core::flex::{ARRAY_COLLECTION, OBJECT_PROXY};

/// Traits-table keys that are not type addresses (those are aligned, never this small).
const ANONYMOUS_TRAITS: usize = 1;
const ARRAY_COLLECTION_TRAITS: usize = 2;
const OBJECT_PROXY_TRAITS: usize = 3;
const FIRST_SYNTHETIC_TRAITS: usize = 5;

/// References to an object held by its one container plus the encoder's own.
const SOLE_OWNER: ffi::Py_ssize_t = 2;

pub struct PyEncoder<'py> {
    py: Python<'py>,
    t: &'static Types,
    reg: Arc<Registry>,
    pub enc: CoreEncoder,
    default: Option<Bound<'py, PyAny>>,
    keep: Vec<Bound<'py, PyAny>>,
    depth: u32,
    max_depth: u32,
    pending: Pending,
    /// Traits keys of TypedObjects: by the identity of (alias, sealed) first, then by
    /// their contents, so equal shapes share one traits entry as Flash writes them.
    typed_traits: FxHashMap<(usize, usize, bool), usize>,
    typed_shapes: FxHashMap<(String, Vec<String>, bool), usize>,
    /// String-table indexes by str object identity (checked before hashing contents),
    /// with a direct-mapped cache in front (member names repeat object after object).
    str_ids: FxHashMap<usize, u32>,
    /// Empty until the first string misses it (a small encode never pays for it).
    str_cache: Vec<(usize, u32)>,
    last_class: (usize, *const ClassInfo),
}

const STR_CACHE: usize = 512;

/// The UTF-8 of a str object, valid while the object lives.
///
/// # Safety
/// `p` is a live `str` object (or subclass) and the GIL is held; the result must not
/// outlive the object.
#[inline]
unsafe fn utf8<'a>(p: *mut ffi::PyObject) -> Option<&'a str> {
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

/// A member name for an error path.
#[cold]
fn key_text(key: &Bound<'_, PyAny>) -> PathSegment {
    PathSegment::key(unsafe { utf8(key.as_ptr()) }.unwrap_or("?"))
}

/// The kinds of value the cold paths tell apart (the hot exact types are handled
/// before); both AMF versions classify with `PyEncoder::classify`.
enum Cold {
    Undefined,
    Registered(&'static ClassInfo),
    TypedObject,
    Table,
    Xml { e4x: bool },
    MixedArray,
    Dictionary,
    ObjectVector,
    Collection { array: bool },
    AmfDate,
    DateTime,
    Bytes,
    NumberArray,
    Str,
    Int,
    Float,
    Dict,
    Seq,
    Set,
    Unknown,
}

enum Keys {
    Str,
    IntOrStr,
    Other,
}

impl<'py> PyEncoder<'py> {
    pub fn new(
        py: Python<'py>,
        default: Option<Bound<'py, PyAny>>,
        max_depth: u32,
    ) -> PyResult<Self> {
        Ok(PyEncoder {
            py,
            t: types()?,
            reg: snapshot(),
            enc: CoreEncoder::with_capacity(256),
            default,
            keep: Vec::new(),
            depth: 0,
            max_depth,
            pending: Pending::default(),
            typed_traits: FxHashMap::default(),
            typed_shapes: FxHashMap::default(),
            str_ids: FxHashMap::default(),
            str_cache: Vec::new(),
            last_class: (0, std::ptr::null()),
        })
    }

    /// Forget every reference (a new packet header or body): the core tables were
    /// reset, and the caches keyed on them must go too.
    pub fn new_context(&mut self) {
        self.str_ids.clear();
        self.str_cache.clear();
        self.typed_traits.clear();
        self.typed_shapes.clear();
    }

    pub fn py_error(&mut self, e: Error) -> PyErr {
        encode_err(self.py, e, self.pending.take())
    }

    /// Record a Python exception (raised by a hook, a property, the C API): it is what
    /// the caller sees, carried up by the returned error.
    #[cold]
    #[inline(never)]
    pub fn fail(&mut self, err: PyErr) -> Error {
        self.pending.record(err, self.enc.len())
    }

    #[inline]
    fn own(&mut self, ptr: *mut ffi::PyObject) -> Result<Bound<'py, PyAny>> {
        if ptr.is_null() {
            Err(self.fail(PyErr::fetch(self.py)))
        } else {
            Ok(unsafe { Bound::from_owned_ptr(self.py, ptr) })
        }
    }

    #[inline]
    fn enter(&mut self) -> Result<()> {
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
    fn leave(&mut self) {
        self.depth -= 1;
    }

    #[inline]
    fn str_of(&mut self, p: *mut ffi::PyObject) -> Result<&'py str> {
        match unsafe { utf8(p) } {
            Some(s) => Ok(s),
            None => Err(self
                .enc
                .error("a str that is not valid unicode (lone surrogates)")),
        }
    }

    fn type_name(&self, obj: &Bound<'py, PyAny>) -> String {
        obj.get_type()
            .qualname()
            .map(|q| q.to_string())
            .unwrap_or_else(|_| "?".into())
    }

    // --- AMF3 -----------------------------------------------------------------------

    /// Write one AMF3 value.
    #[inline]
    pub fn amf3(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        let p = obj.as_ptr();
        unsafe {
            let tp = ffi::Py_TYPE(p);
            if tp == &raw mut ffi::PyUnicode_Type {
                self.enc.out.u8(m3::STRING);
                return self.amf3_str_obj(obj);
            }
            if tp == &raw mut ffi::PyLong_Type {
                return self.amf3_int(p);
            }
            if tp == &raw mut ffi::PyFloat_Type {
                self.enc.amf3_double(ffi::PyFloat_AS_DOUBLE(p));
                return Ok(());
            }
            if tp == &raw mut ffi::PyDict_Type {
                return self.amf3_dict(obj);
            }
            if tp == &raw mut ffi::PyList_Type || tp == &raw mut ffi::PyTuple_Type {
                return self.amf3_sequence(obj);
            }
            if p == ffi::Py_None() {
                self.enc.amf3_null();
                return Ok(());
            }
            if tp == &raw mut ffi::PyBool_Type {
                self.enc.amf3_bool(p == ffi::Py_True());
                return Ok(());
            }
        }
        self.amf3_cold(obj)
    }

    /// A str object through the string table, by identity first, then by contents.
    #[inline]
    fn amf3_str_obj(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        let id = obj.as_ptr() as usize;
        let slot = (id >> 4) % STR_CACHE;
        if let Some(&cached) = self.str_cache.get(slot) {
            if cached.0 == id {
                self.enc.amf3_str_reference(cached.1);
                return Ok(());
            }
        }
        self.amf3_str_obj_slow(obj, id, slot)
    }

    #[inline(never)]
    fn amf3_str_obj_slow(&mut self, obj: &Bound<'py, PyAny>, id: usize, slot: usize) -> Result<()> {
        if self.str_cache.is_empty() && self.str_ids.len() >= 8 {
            self.str_cache = vec![(0, 0); STR_CACHE];
        }
        if let Some(&index) = self.str_ids.get(&id) {
            if let Some(entry) = self.str_cache.get_mut(slot) {
                *entry = (id, index);
            }
            self.enc.amf3_str_reference(index);
            return Ok(());
        }
        let s = self.str_of(obj.as_ptr())?;
        if let Some(index) = self.enc.amf3_str_indexed(s)? {
            // A str held only by its container cannot be met again by identity (equal
            // text is still found by the contents table). Every other one is cached
            // and kept alive, so its address stays its own.
            if unsafe { ffi::Py_REFCNT(obj.as_ptr()) } > SOLE_OWNER {
                self.str_ids.insert(id, index);
                if let Some(entry) = self.str_cache.get_mut(slot) {
                    *entry = (id, index);
                }
                self.keep(obj);
            }
        }
        Ok(())
    }

    #[inline]
    fn amf3_int(&mut self, p: *mut ffi::PyObject) -> Result<()> {
        let mut overflow = 0;
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow) };
        if overflow == 0 {
            if v == -1 && unsafe { !ffi::PyErr_Occurred().is_null() } {
                return Err(self.fail(PyErr::fetch(self.py)));
            }
            self.enc.amf3_int(v);
            return Ok(());
        }
        let d = self.big_int(p)?;
        self.enc.amf3_double(d);
        Ok(())
    }

    #[cold]
    fn big_int(&mut self, p: *mut ffi::PyObject) -> Result<f64> {
        let d = unsafe { ffi::PyLong_AsDouble(p) };
        if d == -1.0 && unsafe { !ffi::PyErr_Occurred().is_null() } {
            unsafe { ffi::PyErr_Clear() };
            return Err(self.enc.error("an int too large for a double"));
        }
        Ok(d)
    }

    /// Write `marker`, then a reference if `obj` was written before (returns true), or
    /// take the next object-table index for it (returns false; the caller writes the
    /// body).
    ///
    /// An object whose reference count is at most [`SOLE_OWNER`] is held only by its
    /// container and by this call, so it cannot be met again in this graph (a cycle
    /// or a shared value needs a second reference): it takes its index without a
    /// hash-table entry and without being kept alive.
    #[inline]
    fn amf3_ref(&mut self, marker: u8, obj: &Bound<'py, PyAny>) -> bool {
        let p = obj.as_ptr();
        if unsafe { ffi::Py_REFCNT(p) } <= SOLE_OWNER {
            self.enc.out.u8(marker);
            self.enc.amf3_register(None);
            return false;
        }
        if self.enc.amf3_reference(marker, p as usize) {
            return true;
        }
        self.keep(obj);
        false
    }

    /// The AMF0 counterpart of [`PyEncoder::amf3_ref`]: a reference marker (true), or
    /// the next table index taken (false; the caller writes marker and body).
    #[inline]
    fn amf0_ref(&mut self, obj: &Bound<'py, PyAny>) -> bool {
        let p = obj.as_ptr();
        if unsafe { ffi::Py_REFCNT(p) } <= SOLE_OWNER {
            self.enc.amf0_register(None);
            return false;
        }
        if self.enc.amf0_reference(p as usize) {
            return true;
        }
        self.keep(obj);
        false
    }

    /// Keep `obj` alive for the rest of the encode (its address is a table key).
    #[inline]
    fn keep(&mut self, obj: &Bound<'py, PyAny>) {
        self.keep.push(obj.clone());
    }

    fn amf3_sequence(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf3_ref(m3::ARRAY, obj) {
            return Ok(());
        }
        self.amf3_sequence_body(obj)
    }

    /// Dense array body: length, empty associative part, items.
    fn amf3_sequence_body(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        self.enter()?;
        let p = obj.as_ptr();
        let (is_list, len) = list_or_tuple_len(p);
        self.enc.amf3_array_header(len)?;
        self.enc.amf3_str("")?;
        self.amf3_items(p, is_list, len)?;
        self.leave();
        Ok(())
    }

    /// The `len` items of a list or tuple, each as AMF3.
    #[inline]
    fn amf3_items(&mut self, p: *mut ffi::PyObject, is_list: bool, len: usize) -> Result<()> {
        for i in 0..len {
            let item = self.item(p, is_list, i, len)?;
            self.amf3(&item)
                .map_err(|e| e.within(PathSegment::Index(i)))?;
        }
        Ok(())
    }

    /// Item `i` of a list or tuple, owned (a hook may change the list meanwhile).
    #[inline]
    fn item(
        &mut self,
        p: *mut ffi::PyObject,
        is_list: bool,
        i: usize,
        len: usize,
    ) -> Result<Bound<'py, PyAny>> {
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
    fn dict_items(&mut self, p: *mut ffi::PyObject) -> Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let mut out = Vec::with_capacity(unsafe { ffi::PyDict_Size(p) } as usize);
        let mut pos: ffi::Py_ssize_t = 0;
        while let Some(kv) = self.dict_next(p, &mut pos) {
            out.push(kv);
        }
        out
    }

    /// The next (key, value) of a dict, owned (a hook may change the dict meanwhile).
    #[inline]
    fn dict_next(
        &self,
        p: *mut ffi::PyObject,
        pos: &mut ffi::Py_ssize_t,
    ) -> Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let mut k = std::ptr::null_mut();
        let mut v = std::ptr::null_mut();
        unsafe {
            if ffi::PyDict_Next(p, pos, &mut k, &mut v) == 0 {
                return None;
            }
            Some((
                Bound::from_borrowed_ptr(self.py, k),
                Bound::from_borrowed_ptr(self.py, v),
            ))
        }
    }

    fn key_kinds(p: *mut ffi::PyObject) -> Keys {
        let mut pos: ffi::Py_ssize_t = 0;
        let mut k = std::ptr::null_mut();
        let mut v = std::ptr::null_mut();
        let mut kind = Keys::Str;
        unsafe {
            while ffi::PyDict_Next(p, &mut pos, &mut k, &mut v) != 0 {
                if ffi::PyUnicode_Check(k) != 0 {
                    continue;
                }
                if ffi::PyLong_Check(k) != 0 && ffi::PyBool_Check(k) == 0 {
                    kind = Keys::IntOrStr;
                    continue;
                }
                return Keys::Other;
            }
        }
        kind
    }

    fn amf3_dict(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        let p = obj.as_ptr();
        if !matches!(Self::key_kinds(p), Keys::Str) {
            return self.amf3_dictionary(obj, false);
        }
        if self.amf3_ref(m3::OBJECT, obj) {
            return Ok(());
        }
        if !self.enc.amf3_traits_reference(ANONYMOUS_TRAITS) {
            self.enc
                .amf3_traits_inline::<&str>(Some(ANONYMOUS_TRAITS), "", &[], true, false)?;
        }
        self.amf3_members(obj)
    }

    /// Dynamic members from a dict with str keys, then the empty string that ends them.
    fn amf3_members(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        self.enter()?;
        let p = obj.as_ptr();
        let mut pos = 0;
        while let Some((k, v)) = self.dict_next(p, &mut pos) {
            self.amf3_member_obj(&k, &v)?;
        }
        self.leave();
        self.enc.amf3_str("")
    }

    /// A member whose name is a str object (through the identity cache).
    #[inline]
    fn amf3_member_obj(
        &mut self,
        key: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> Result<()> {
        let kp = key.as_ptr();
        if unsafe { ffi::PyUnicode_Check(kp) } == 0 {
            let _ = self.str_of_key(key)?;
        }
        if unsafe { ffi::PyUnicode_GET_LENGTH(kp) } == 0 {
            return Err(self
                .enc
                .error("an empty member name cannot be written in amf3"));
        }
        self.amf3_str_obj(key)?;
        self.amf3(value).map_err(|e| e.within(key_text(key)))
    }

    #[inline]
    fn amf3_member(&mut self, key: &str, value: &Bound<'py, PyAny>) -> Result<()> {
        if key.is_empty() {
            return Err(self
                .enc
                .error("an empty member name cannot be written in amf3"));
        }
        self.enc.amf3_str(key)?;
        self.amf3(value)
            .map_err(|e| e.within(PathSegment::key(key)))
    }

    /// An AMF3 Dictionary (any key type); `ObjectKey` wrappers are unwrapped.
    fn amf3_dictionary(&mut self, obj: &Bound<'py, PyAny>, weak_keys: bool) -> Result<()> {
        if self.amf3_ref(m3::DICTIONARY, obj) {
            return Ok(());
        }
        self.enter()?;
        let items = self.dict_items(obj.as_ptr());
        self.enc.amf3_dictionary_header(items.len(), weak_keys)?;
        for (i, (k, v)) in items.iter().enumerate() {
            let key = if unsafe { ffi::Py_TYPE(k.as_ptr()) } == self.t.object_key {
                self.getattr(k, self.t.names.value)?
            } else {
                k.clone()
            };
            self.amf3(&key)
                .map_err(|e| e.within(PathSegment::Index(i)))?;
            self.amf3(v).map_err(|e| e.within(PathSegment::Index(i)))?;
        }
        self.leave();
        Ok(())
    }

    fn getattr(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: *mut ffi::PyObject,
    ) -> Result<Bound<'py, PyAny>> {
        let r = unsafe { ffi::PyObject_GetAttr(obj.as_ptr(), name) };
        self.own(r)
    }

    /// The registry entry of a type, if registered (the last one found is cached: a
    /// graph usually holds many objects of one class in a row). The reference lives as
    /// long as the registry snapshot this encoder holds.
    #[inline]
    fn registered(&mut self, tp: *mut ffi::PyTypeObject) -> Option<&'static ClassInfo> {
        if tp as usize == self.last_class.0 {
            // Safety: see below; the cached pointer came from the same snapshot.
            return Some(unsafe { &*self.last_class.1 });
        }
        let info = self.reg.by_type.get(&(tp as usize))?;
        let ptr = Arc::as_ptr(info);
        self.last_class = (tp as usize, ptr);
        // Safety: `self.reg` (an Arc) keeps the entry alive for this encoder's life,
        // and an encoder never outlives the call that made it.
        Some(unsafe { &*ptr })
    }

    /// What a value that is not one of the hot exact types is, for either version.
    fn classify(&mut self, obj: &Bound<'py, PyAny>) -> Cold {
        let p = obj.as_ptr();
        let t = self.t;
        let tp = unsafe { ffi::Py_TYPE(p) };
        if p == t.undefined {
            return Cold::Undefined;
        }
        if let Some(info) = self.registered(tp) {
            return Cold::Registered(info);
        }
        let kind = match tp {
            _ if tp == t.typed_object => Cold::TypedObject,
            _ if tp == t.table => Cold::Table,
            _ if tp == t.xml => Cold::Xml { e4x: true },
            _ if tp == t.xml_document => Cold::Xml { e4x: false },
            _ if tp == t.mixed_array => Cold::MixedArray,
            _ if tp == t.dictionary => Cold::Dictionary,
            _ if tp == t.object_vector => Cold::ObjectVector,
            _ if tp == t.array_collection => Cold::Collection { array: true },
            _ if tp == t.object_proxy => Cold::Collection { array: false },
            _ if tp == t.date => Cold::AmfDate,
            _ if tp == t.array => Cold::NumberArray,
            _ => Cold::Unknown,
        };
        if !matches!(kind, Cold::Unknown) {
            return kind;
        }
        unsafe {
            if ffi::PyDateTime_Check(p) != 0 || ffi::PyDate_Check(p) != 0 {
                Cold::DateTime
            } else if tp == &raw mut ffi::PyMemoryView_Type
                || ffi::PyBytes_Check(p) != 0
                || ffi::PyByteArray_Check(p) != 0
            {
                Cold::Bytes
            // Subclasses of the plain types.
            } else if ffi::PyUnicode_Check(p) != 0 {
                Cold::Str
            } else if ffi::PyLong_Check(p) != 0 {
                Cold::Int
            } else if ffi::PyFloat_Check(p) != 0 {
                Cold::Float
            } else if ffi::PyDict_Check(p) != 0 {
                Cold::Dict
            } else if ffi::PyList_Check(p) != 0 || ffi::PyTuple_Check(p) != 0 {
                Cold::Seq
            } else if ffi::PyAnySet_Check(p) != 0 {
                Cold::Set
            } else {
                Cold::Unknown
            }
        }
    }

    /// A set's items as a tuple (kept alive: it may take a table entry).
    fn set_items(&mut self, obj: &Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>> {
        let items = self.own(unsafe { ffi::PySequence_Tuple(obj.as_ptr()) })?;
        self.keep(&items);
        Ok(items)
    }

    /// An `amfkit.Date`'s milliseconds and AMF0 time-zone field.
    fn amf_date(&mut self, obj: &Bound<'py, PyAny>) -> Result<(f64, i16)> {
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

    /// Everything but the hot types.
    #[inline(never)]
    fn amf3_cold(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        let p = obj.as_ptr();
        match self.classify(obj) {
            Cold::Undefined => self.enc.amf3_undefined(),
            Cold::Registered(info) => return self.amf3_registered(obj, info),
            Cold::TypedObject => return self.amf3_typed_object(obj),
            Cold::Table => return self.amf3_table(obj),
            Cold::Xml { e4x } => {
                if !self.amf3_ref(if e4x { m3::XML } else { m3::XML_DOCUMENT }, obj) {
                    let s = self.str_of(p)?;
                    self.enc.amf3_xml_body(s)?;
                }
            }
            Cold::MixedArray => return self.amf3_mixed(obj),
            Cold::Dictionary => {
                let weak = self
                    .getattr(obj, self.t.names.weak_keys)?
                    .is_truthy()
                    .map_err(|e| self.fail(e))?;
                return self.amf3_dictionary(obj, weak);
            }
            Cold::ObjectVector => return self.amf3_object_vector(obj),
            Cold::Collection { array } => return self.amf3_collection(obj, array),
            Cold::AmfDate => {
                if !self.amf3_ref(m3::DATE, obj) {
                    let (millis, _) = self.amf_date(obj)?;
                    self.enc.amf3_date_body(millis);
                }
            }
            Cold::DateTime => {
                if !self.amf3_ref(m3::DATE, obj) {
                    let millis = self.millis(obj)?;
                    self.enc.amf3_date_body(millis);
                }
            }
            Cold::Bytes => {
                if !self.amf3_ref(m3::BYTE_ARRAY, obj) {
                    let bytes = self.buffer(obj)?;
                    self.enc.amf3_bytes_body(&bytes)?;
                }
            }
            Cold::NumberArray => return self.amf3_number_vector(obj),
            Cold::Str => {
                let s = self.str_of(p)?;
                return self.enc.amf3_string(s);
            }
            Cold::Int => return self.amf3_int(p),
            Cold::Float => self.enc.amf3_double(unsafe { ffi::PyFloat_AsDouble(p) }),
            Cold::Dict => return self.amf3_dict(obj),
            Cold::Seq => return self.amf3_sequence(obj),
            Cold::Set => {
                let items = self.set_items(obj)?;
                return self.amf3_sequence(&items);
            }
            Cold::Unknown => {
                let replaced = self.call_default(obj)?;
                self.enter()?;
                let r = self.amf3(&replaced);
                self.leave();
                return r;
            }
        }
        Ok(())
    }

    /// The `default` hook's replacement for an object of an unknown type.
    fn call_default(&mut self, obj: &Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>> {
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

    fn buffer(&mut self, obj: &Bound<'py, PyAny>) -> Result<Vec<u8>> {
        unsafe {
            let p = obj.as_ptr();
            if ffi::PyBytes_Check(p) != 0 {
                return Ok(obj.cast_unchecked::<PyBytes>().as_bytes().to_vec());
            }
        }
        crate::buffer::copy_buffer(obj).map_err(|e| self.fail(e))
    }

    /// Milliseconds since the epoch of a datetime (naive = UTC) or a date (midnight UTC).
    fn millis(&mut self, obj: &Bound<'py, PyAny>) -> Result<f64> {
        let p = obj.as_ptr();
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

    /// An `array.array` as Vector.<int> (signed codes), Vector.<uint> (unsigned codes) or
    /// Vector.<Number> ('f', 'd'); integer items must fit 32 bits.
    fn amf3_number_vector(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        let code: String = self
            .getattr(obj, self.t.names.typecode)?
            .extract()
            .map_err(|e| self.fail(e))?;
        let marker = match code.as_str() {
            "b" | "h" | "i" | "l" | "q" => m3::VECTOR_INT,
            "B" | "H" | "I" | "L" | "Q" => m3::VECTOR_UINT,
            "f" | "d" => m3::VECTOR_DOUBLE,
            other => {
                return Err(self.enc.error(format!(
                    "an array.array of typecode {other:?} has no amf3 vector"
                )))
            }
        };
        if self.amf3_ref(marker, obj) {
            return Ok(());
        }
        let raw = self.buffer(obj)?;
        let size = match obj.getattr("itemsize").and_then(|s| s.extract::<usize>()) {
            Ok(n) if n > 0 => n,
            Ok(_) => return Err(self.enc.error("an array.array with item size 0")),
            Err(e) => return Err(self.fail(e)),
        };
        self.enc.amf3_vector_header(raw.len() / size, false)?;
        let signed = code.bytes().all(|c| c.is_ascii_lowercase());
        for chunk in raw.chunks_exact(size) {
            if marker == m3::VECTOR_DOUBLE {
                let d = match size {
                    4 => f32::from_ne_bytes(chunk.try_into().unwrap()) as f64,
                    _ => f64::from_ne_bytes(chunk.try_into().unwrap()),
                };
                self.enc.out.f64(d);
                continue;
            }
            let v: i128 = match (signed, size) {
                (true, 1) => i8::from_ne_bytes(chunk.try_into().unwrap()) as i128,
                (true, 2) => i16::from_ne_bytes(chunk.try_into().unwrap()) as i128,
                (true, 4) => i32::from_ne_bytes(chunk.try_into().unwrap()) as i128,
                (true, _) => i64::from_ne_bytes(chunk.try_into().unwrap()) as i128,
                (false, 1) => chunk[0] as i128,
                (false, 2) => u16::from_ne_bytes(chunk.try_into().unwrap()) as i128,
                (false, 4) => u32::from_ne_bytes(chunk.try_into().unwrap()) as i128,
                (false, _) => u64::from_ne_bytes(chunk.try_into().unwrap()) as i128,
            };
            let fits = if signed {
                i32::try_from(v).is_ok()
            } else {
                u32::try_from(v).is_ok()
            };
            if !fits {
                return Err(self
                    .enc
                    .error(format!("{v} does not fit a 32-bit vector item")));
            }
            self.enc.out.u32(v as u32);
        }
        Ok(())
    }

    fn amf3_object_vector(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf3_ref(m3::VECTOR_OBJECT, obj) {
            return Ok(());
        }
        let fixed = self
            .getattr(obj, self.t.names.fixed)?
            .is_truthy()
            .map_err(|e| self.fail(e))?;
        let name = self.getattr(obj, self.t.names.type_name)?;
        let name_str = if unsafe { ffi::PyUnicode_Check(name.as_ptr()) } != 0 {
            self.str_of(name.as_ptr())?
        } else {
            ""
        };
        self.enter()?;
        let p = obj.as_ptr();
        let len = unsafe { ffi::PyList_GET_SIZE(p) } as usize;
        self.enc.amf3_vector_header(len, fixed)?;
        self.enc.amf3_str(name_str)?;
        self.amf3_items(p, true, len)?;
        self.leave();
        Ok(())
    }

    /// A MixedArray: int keys 0..n-1 are the dense part, the rest the associative part.
    fn amf3_mixed(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf3_ref(m3::ARRAY, obj) {
            return Ok(());
        }
        self.enter()?;
        let items = self.dict_items(obj.as_ptr());
        let mut dense_len = 0usize;
        loop {
            let key = unsafe { ffi::PyLong_FromSize_t(dense_len) };
            let key = self.own(key)?;
            let present = unsafe { ffi::PyDict_Contains(obj.as_ptr(), key.as_ptr()) };
            if present < 0 {
                return Err(self.fail(PyErr::fetch(self.py)));
            }
            if present == 0 {
                break;
            }
            dense_len += 1;
        }
        self.enc.amf3_array_header(dense_len)?;
        let mut dense: Vec<Option<Bound<'py, PyAny>>> = vec![None; dense_len];
        for (k, v) in &items {
            let kp = k.as_ptr();
            if unsafe { ffi::PyLong_CheckExact(kp) } != 0 {
                let i = unsafe { ffi::PyLong_AsLongLong(kp) };
                if i >= 0 && (i as usize) < dense_len {
                    dense[i as usize] = Some(v.clone());
                    continue;
                }
            }
            let text = k.str().map_err(|e| self.fail(e))?;
            let key = self.str_of(text.as_ptr())?.to_owned();
            self.amf3_member(&key, v)?;
        }
        self.enc.amf3_str("")?;
        for (i, v) in dense.into_iter().enumerate() {
            let v = v.expect("dense keys were counted");
            self.amf3(&v).map_err(|e| e.within(PathSegment::Index(i)))?;
        }
        self.leave();
        Ok(())
    }

    /// ArrayCollection / ObjectProxy: the externalizable class around an Array / object.
    fn amf3_collection(&mut self, obj: &Bound<'py, PyAny>, is_array: bool) -> Result<()> {
        if self.amf3_ref(m3::OBJECT, obj) {
            return Ok(());
        }
        let (key, alias) = if is_array {
            (ARRAY_COLLECTION_TRAITS, ARRAY_COLLECTION)
        } else {
            (OBJECT_PROXY_TRAITS, OBJECT_PROXY)
        };
        if !self.enc.amf3_traits_reference(key) {
            self.enc
                .amf3_traits_inline::<&str>(Some(key), alias, &[], false, true)?;
        }
        // The body is a separate object on the wire, with its own table entry.
        if is_array {
            self.enc.out.u8(m3::ARRAY);
            self.enc.amf3_register(None);
            self.amf3_sequence_body(obj)
        } else {
            self.enc.out.u8(m3::OBJECT);
            self.enc.amf3_register(None);
            if !self.enc.amf3_traits_reference(ANONYMOUS_TRAITS) {
                self.enc.amf3_traits_inline::<&str>(
                    Some(ANONYMOUS_TRAITS),
                    "",
                    &[],
                    true,
                    false,
                )?;
            }
            self.amf3_members(obj)
        }
    }

    /// Traits for a shape given by objects (a TypedObject's alias and sealed tuple, a
    /// Table's alias and columns): by their identity first, then by their contents, so
    /// that equal shapes share one traits entry.
    fn amf3_shaped_traits(
        &mut self,
        alias: &Bound<'py, PyAny>,
        sealed: &Bound<'py, PyAny>,
        alias_str: &str,
        names: &[String],
        dynamic: bool,
    ) -> Result<()> {
        let ident = (alias.as_ptr() as usize, sealed.as_ptr() as usize, dynamic);
        let key = match self.typed_traits.get(&ident) {
            Some(&key) => key,
            None => {
                let next = FIRST_SYNTHETIC_TRAITS + self.typed_shapes.len();
                let shape = (alias_str.to_owned(), names.to_vec(), dynamic);
                let key = *self.typed_shapes.entry(shape).or_insert(next);
                self.typed_traits.insert(ident, key);
                key
            }
        };
        if !self.enc.amf3_traits_reference(key) {
            self.enc
                .amf3_traits_inline(Some(key), alias_str, names, dynamic, false)?;
        }
        Ok(())
    }

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
    fn amf3_table(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
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
    fn amf0_table(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
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

    fn amf3_typed_object(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf3_ref(m3::OBJECT, obj) {
            return Ok(());
        }
        let alias = self.getattr(obj, self.t.names.alias)?;
        let sealed = self.getattr(obj, self.t.names.sealed)?;
        let dynamic = self
            .getattr(obj, self.t.names.dynamic)?
            .is_truthy()
            .map_err(|e| self.fail(e))?;
        self.keep(&alias);
        self.keep(&sealed);
        let alias_str = if unsafe { ffi::PyUnicode_Check(alias.as_ptr()) } != 0 {
            self.str_of(alias.as_ptr())?
        } else {
            return Err(self.enc.error("a TypedObject alias must be a str"));
        };
        let names: Vec<String> = sealed.extract().map_err(|e| self.fail(e))?;
        self.amf3_shaped_traits(&alias, &sealed, alias_str, &names, dynamic)?;
        self.enter()?;
        let d = obj.as_ptr();
        for name in &names {
            let key = PyString::new(self.py, name);
            let v = unsafe { ffi::PyDict_GetItemWithError(d, key.as_ptr()) };
            let v = if v.is_null() {
                if unsafe { !ffi::PyErr_Occurred().is_null() } {
                    return Err(self.fail(PyErr::fetch(self.py)));
                }
                unsafe { Bound::from_borrowed_ptr(self.py, self.t.undefined) }
            } else {
                unsafe { Bound::from_borrowed_ptr(self.py, v) }
            };
            self.amf3(&v)
                .map_err(|e| e.within(PathSegment::key(name.as_str())))?;
        }
        if dynamic {
            for (k, v) in self.dict_items(d) {
                let key = self.str_of_key(&k)?;
                if names.iter().any(|n| n == key) {
                    continue;
                }
                self.amf3_member(key, &v)?;
            }
            self.enc.amf3_str("")?;
        }
        self.leave();
        Ok(())
    }

    fn str_of_key(&mut self, k: &Bound<'py, PyAny>) -> Result<&'py str> {
        if unsafe { ffi::PyUnicode_Check(k.as_ptr()) } == 0 {
            let name = self.type_name(k);
            return Err(self
                .enc
                .error(format!("a member name must be a str, not {name}")));
        }
        self.str_of(k.as_ptr())
    }

    /// An attribute, or None when the object does not have it (AttributeError). Any
    /// other exception (a property that raises) passes through unchanged.
    #[inline]
    fn attr_if_any(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: *mut ffi::PyObject,
    ) -> Result<Option<Bound<'py, PyAny>>> {
        let v = unsafe { ffi::PyObject_GetAttr(obj.as_ptr(), name) };
        if !v.is_null() {
            return Ok(Some(unsafe { Bound::from_owned_ptr(self.py, v) }));
        }
        if unsafe { ffi::PyErr_ExceptionMatches(ffi::PyExc_AttributeError) } != 0 {
            unsafe { ffi::PyErr_Clear() };
            return Ok(None);
        }
        Err(self.fail(PyErr::fetch(self.py)))
    }

    /// An instance's `__dict__` when it has one that is a dict.
    #[inline]
    fn instance_dict(&mut self, obj: &Bound<'py, PyAny>) -> Result<Option<Bound<'py, PyAny>>> {
        let d = self.attr_if_any(obj, self.t.names.dict)?;
        Ok(d.filter(|d| unsafe { ffi::PyDict_Check(d.as_ptr()) } != 0))
    }

    /// The dynamic members of a registered instance: its `__dict__` then its slots,
    /// without the static and excluded names.
    fn instance_members(
        &mut self,
        obj: &Bound<'py, PyAny>,
        info: &ClassInfo,
    ) -> Result<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
        let mut out = Vec::new();
        if let Some(d) = self.instance_dict(obj)? {
            let filter = !info.static_set.is_empty() || !info.exclude.is_empty();
            for (k, v) in self.dict_items(d.as_ptr()) {
                if filter {
                    let key = self.str_of_key(&k)?;
                    if info.static_set.contains(key) || info.exclude.contains(key) {
                        continue;
                    }
                }
                out.push((k, v));
            }
        }
        for slot in &info.slots {
            let name = slot.bind(self.py);
            let text = name.to_str().unwrap_or("");
            if info.static_set.contains(text) || info.exclude.contains(text) {
                continue;
            }
            if let Some(v) = self.attr_if_any(obj, name.as_ptr())? {
                out.push((name.clone().into_any(), v));
            }
        }
        Ok(out)
    }

    /// A static member's value (undefined when the instance does not have it).
    fn static_value(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: &Py<PyString>,
    ) -> Result<Bound<'py, PyAny>> {
        Ok(self
            .attr_if_any(obj, name.as_ptr())?
            .unwrap_or_else(|| unsafe { Bound::from_borrowed_ptr(self.py, self.t.undefined) }))
    }

    fn amf3_registered(&mut self, obj: &Bound<'py, PyAny>, info: &ClassInfo) -> Result<()> {
        if self.amf3_ref(m3::OBJECT, obj) {
            return Ok(());
        }
        let key = info.cls.as_ptr() as usize;
        if !self.enc.amf3_traits_reference(key) {
            self.enc.amf3_traits_inline(
                Some(key),
                &info.alias,
                &info.static_names,
                info.dynamic,
                info.externalizable,
            )?;
        }
        self.enter()?;
        if info.externalizable {
            crate::external::write_external(self, obj)?;
            self.leave();
            return Ok(());
        }
        for (name, name_py) in info.static_names.iter().zip(&info.static_py) {
            let v = self.static_value(obj, name_py)?;
            self.amf3(&v)
                .map_err(|e| e.within(PathSegment::key(name.as_str())))?;
        }
        if info.dynamic {
            if info.static_set.is_empty() && info.exclude.is_empty() && info.slots.is_empty() {
                // The common case: every attribute in `__dict__`, written in place.
                if let Some(d) = self.instance_dict(obj)? {
                    let mut pos = 0;
                    while let Some((k, v)) = self.dict_next(d.as_ptr(), &mut pos) {
                        self.amf3_member_obj(&k, &v)?;
                    }
                }
            } else {
                for (k, v) in self.instance_members(obj, info)? {
                    self.amf3_member_obj(&k, &v)?;
                }
            }
            self.enc.amf3_str("")?;
        }
        self.leave();
        Ok(())
    }

    // --- AMF0 -----------------------------------------------------------------------

    /// Write one AMF0 value; what AMF0 cannot carry goes through the AVM+ switch.
    #[inline]
    pub fn amf0(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        let p = obj.as_ptr();
        unsafe {
            let tp = ffi::Py_TYPE(p);
            if tp == &raw mut ffi::PyUnicode_Type {
                let s = self.str_of(p)?;
                return self.enc.amf0_string(s);
            }
            if tp == &raw mut ffi::PyFloat_Type {
                self.enc.amf0_number(ffi::PyFloat_AS_DOUBLE(p));
                return Ok(());
            }
            if tp == &raw mut ffi::PyLong_Type {
                return self.amf0_int(p);
            }
            if tp == &raw mut ffi::PyDict_Type {
                return self.amf0_dict(obj);
            }
            if tp == &raw mut ffi::PyList_Type || tp == &raw mut ffi::PyTuple_Type {
                return self.amf0_sequence(obj);
            }
            if p == ffi::Py_None() {
                self.enc.amf0_null();
                return Ok(());
            }
            if tp == &raw mut ffi::PyBool_Type {
                self.enc.amf0_bool(p == ffi::Py_True());
                return Ok(());
            }
        }
        self.amf0_cold(obj)
    }

    fn amf0_int(&mut self, p: *mut ffi::PyObject) -> Result<()> {
        let mut overflow = 0;
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow) };
        let d = if overflow == 0 {
            if v == -1 && unsafe { !ffi::PyErr_Occurred().is_null() } {
                return Err(self.fail(PyErr::fetch(self.py)));
            }
            v as f64
        } else {
            self.big_int(p)?
        };
        self.enc.amf0_number(d);
        Ok(())
    }

    fn amf0_sequence(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf0_ref(obj) {
            return Ok(());
        }
        self.enter()?;
        let p = obj.as_ptr();
        let (is_list, len) = list_or_tuple_len(p);
        self.enc.amf0_strict_array_start(len)?;
        for i in 0..len {
            let item = self.item(p, is_list, i, len)?;
            self.amf0(&item)
                .map_err(|e| e.within(PathSegment::Index(i)))?;
        }
        self.leave();
        Ok(())
    }

    fn amf0_dict(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        let p = obj.as_ptr();
        match Self::key_kinds(p) {
            Keys::Str => {
                if self.amf0_ref(obj) {
                    return Ok(());
                }
                self.enc.amf0_object_start();
                self.amf0_members(obj, false)
            }
            Keys::IntOrStr => self.amf0_ecma(obj),
            Keys::Other => self.amf0_switch(obj),
        }
    }

    /// Key/value members of a dict (keys rendered with `str()` when `any_key`), then
    /// the object-end marker.
    fn amf0_members(&mut self, obj: &Bound<'py, PyAny>, any_key: bool) -> Result<()> {
        self.enter()?;
        for (k, v) in self.dict_items(obj.as_ptr()) {
            let text;
            let key = if any_key && unsafe { ffi::PyUnicode_Check(k.as_ptr()) } == 0 {
                let s = k.str().map_err(|e| self.fail(e))?;
                text = self.str_of(s.as_ptr())?.to_owned();
                text.as_str()
            } else {
                self.str_of_key(&k)?
            };
            self.amf0_member(key, &v)?;
        }
        self.leave();
        self.enc.amf0_object_end();
        Ok(())
    }

    /// A member; the empty name is allowed (it is followed by a value marker, never by
    /// the object-end marker 0x09, so readers can tell it from the end).
    #[inline]
    fn amf0_member(&mut self, key: &str, value: &Bound<'py, PyAny>) -> Result<()> {
        self.enc.amf0_utf(key)?;
        self.amf0(value)
            .map_err(|e| e.within(PathSegment::key(key)))
    }

    fn amf0_ecma(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf0_ref(obj) {
            return Ok(());
        }
        let len = unsafe { ffi::PyDict_Size(obj.as_ptr()) } as usize;
        self.enc.amf0_ecma_array_start(len)?;
        self.amf0_members(obj, true)
    }

    /// The AVM+ switch: one AMF3 value inside AMF0.
    pub fn amf0_switch(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        self.enc.amf0_avmplus();
        self.enter()?;
        let r = self.amf3(obj);
        self.leave();
        r
    }

    #[inline(never)]
    fn amf0_cold(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        let p = obj.as_ptr();
        match self.classify(obj) {
            Cold::Undefined => self.enc.amf0_undefined(),
            Cold::Registered(info) if info.externalizable => return self.amf0_switch(obj),
            Cold::Registered(info) => return self.amf0_registered(obj, info),
            Cold::TypedObject => return self.amf0_typed_object(obj),
            Cold::Table => return self.amf0_table(obj),
            Cold::MixedArray => return self.amf0_ecma(obj),
            Cold::Xml { .. } => {
                let s = self.str_of(p)?;
                return self.enc.amf0_xml(s);
            }
            Cold::AmfDate => {
                let (millis, tz) = self.amf_date(obj)?;
                self.enc.amf0_date(millis, tz);
            }
            Cold::DateTime => {
                let millis = self.millis(obj)?;
                self.enc.amf0_date(millis, 0);
            }
            // What AMF0 cannot carry goes through the AVM+ switch.
            Cold::Dictionary
            | Cold::ObjectVector
            | Cold::Collection { .. }
            | Cold::NumberArray
            | Cold::Bytes => return self.amf0_switch(obj),
            Cold::Str => {
                let s = self.str_of(p)?;
                return self.enc.amf0_string(s);
            }
            Cold::Int => return self.amf0_int(p),
            Cold::Float => self.enc.amf0_number(unsafe { ffi::PyFloat_AsDouble(p) }),
            Cold::Dict => return self.amf0_dict(obj),
            Cold::Seq => return self.amf0_sequence(obj),
            Cold::Set => {
                let items = self.set_items(obj)?;
                return self.amf0_sequence(&items);
            }
            Cold::Unknown => {
                let replaced = self.call_default(obj)?;
                self.enter()?;
                let r = self.amf0(&replaced);
                self.leave();
                return r;
            }
        }
        Ok(())
    }

    fn amf0_typed_object(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf0_ref(obj) {
            return Ok(());
        }
        let alias = self.getattr(obj, self.t.names.alias)?;
        self.keep(&alias);
        let alias = if unsafe { ffi::PyUnicode_Check(alias.as_ptr()) } != 0 {
            self.str_of(alias.as_ptr())?
        } else {
            return Err(self.enc.error("a TypedObject alias must be a str"));
        };
        self.enc.amf0_typed_object_start(alias)?;
        self.amf0_members(obj, false)
    }

    fn amf0_registered(&mut self, obj: &Bound<'py, PyAny>, info: &ClassInfo) -> Result<()> {
        if self.amf0_ref(obj) {
            return Ok(());
        }
        self.enc.amf0_typed_object_start(&info.alias)?;
        self.enter()?;
        for (name, name_py) in info.static_names.iter().zip(&info.static_py) {
            let v = self.static_value(obj, name_py)?;
            self.amf0_member(name, &v)?;
        }
        if info.dynamic {
            for (k, v) in self.instance_members(obj, info)? {
                let key = self.str_of_key(&k)?;
                self.amf0_member(key, &v)?;
            }
        }
        self.leave();
        self.enc.amf0_object_end();
        Ok(())
    }
}

fn write<'py>(e: &mut PyEncoder<'py>, obj: &Bound<'py, PyAny>, version: Version) -> Result<()> {
    match version {
        Version::Amf0 => e.amf0(obj),
        Version::Amf3 => e.amf3(obj),
    }
}

/// What a reusable encoder keeps between calls: its core encoder (output buffer,
/// string arena, tables), cleared but with its capacity, so that a steady stream of
/// similar calls allocates nothing. One that grew past `KEEP_LIMIT` is dropped.
pub struct KeptEncoder {
    kept: Mutex<Option<CoreEncoder>>,
    limit: usize,
}

impl Default for KeptEncoder {
    fn default() -> Self {
        KeptEncoder::new(64 << 20)
    }
}

/// What the module-level `encode` functions keep: less, since nobody asked for it.
static MODULE_KEPT: KeptEncoder = KeptEncoder::new(4 << 20);

impl KeptEncoder {
    const fn new(limit: usize) -> Self {
        KeptEncoder {
            kept: Mutex::new(None),
            limit,
        }
    }
    fn take(&self) -> Option<CoreEncoder> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
    fn put(&self, mut enc: CoreEncoder) {
        if enc.out.buf.capacity() > self.limit {
            return;
        }
        enc.reset();
        enc.out.buf.clear();
        *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(enc);
    }
}

fn encoder<'py>(
    py: Python<'py>,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
    kept: Option<&KeptEncoder>,
) -> PyResult<PyEncoder<'py>> {
    let mut e = PyEncoder::new(py, default, max_depth)?;
    if let Some(kept) = kept.and_then(KeptEncoder::take) {
        e.enc = kept;
    }
    Ok(e)
}

fn finish<'py>(
    py: Python<'py>,
    mut e: PyEncoder<'py>,
    kept: Option<&KeptEncoder>,
) -> Bound<'py, PyBytes> {
    let bytes = PyBytes::new(py, &e.enc.out.buf);
    if let Some(h) = kept {
        h.put(std::mem::take(&mut e.enc));
    }
    bytes
}

pub fn encode_one<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    version: Version,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
    kept: Option<&KeptEncoder>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut e = encoder(py, default, max_depth, kept)?;
    match write(&mut e, obj, version) {
        Ok(()) => Ok(finish(py, e, kept)),
        Err(err) => Err(e.py_error(err)),
    }
}

pub fn encode_all<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
    version: Version,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
    kept: Option<&KeptEncoder>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut e = encoder(py, default, max_depth, kept)?;
    for (i, item) in values.try_iter()?.enumerate() {
        let item = item?;
        if let Err(err) = write(&mut e, &item, version) {
            return Err(e.py_error(err.within(PathSegment::Index(i))));
        }
    }
    Ok(finish(py, e, kept))
}

macro_rules! encoder_class {
    ($name:ident, $pyname:literal, $version:expr) => {
        /// A reusable encoder: options are resolved once.
        #[pyclass(module = "amfkit", name = $pyname, frozen)]
        pub struct $name {
            default: Option<Py<PyAny>>,
            max_depth: u32,
            kept: KeptEncoder,
        }

        #[pymethods]
        impl $name {
            #[new]
            #[pyo3(signature = (*, default=None, max_depth=1024))]
            fn new(default: Option<Py<PyAny>>, max_depth: u32) -> PyResult<Self> {
                check_depth(max_depth)?;
                Ok($name {
                    default,
                    max_depth,
                    kept: KeptEncoder::default(),
                })
            }

            /// Encode one value.
            #[pyo3(signature = (obj, /))]
            fn encode<'py>(
                &self,
                py: Python<'py>,
                obj: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyBytes>> {
                encode_one(
                    py,
                    obj,
                    $version,
                    self.default.as_ref().map(|d| d.bind(py).clone()),
                    self.max_depth,
                    Some(&self.kept),
                )
            }

            /// Encode every value of an iterable as one stream (one reference context).
            #[pyo3(signature = (values, /))]
            fn encode_all<'py>(
                &self,
                py: Python<'py>,
                values: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyBytes>> {
                encode_all(
                    py,
                    values,
                    $version,
                    self.default.as_ref().map(|d| d.bind(py).clone()),
                    self.max_depth,
                    Some(&self.kept),
                )
            }

            #[getter]
            fn max_depth(&self) -> u32 {
                self.max_depth
            }
        }
    };
}

encoder_class!(Amf0Encoder, "Amf0Encoder", Version::Amf0);
encoder_class!(Amf3Encoder, "Amf3Encoder", Version::Amf3);

/// Encode one value as AMF0.
#[pyfunction]
#[pyo3(signature = (obj, /, *, default=None, max_depth=1024))]
pub fn amf0_encode<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    check_depth(max_depth)?;
    encode_one(
        py,
        obj,
        Version::Amf0,
        default,
        max_depth,
        Some(&MODULE_KEPT),
    )
}

/// Encode one value as AMF3.
#[pyfunction]
#[pyo3(signature = (obj, /, *, default=None, max_depth=1024))]
pub fn amf3_encode<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
    max_depth: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    check_depth(max_depth)?;
    encode_one(
        py,
        obj,
        Version::Amf3,
        default,
        max_depth,
        Some(&MODULE_KEPT),
    )
}

/// Whether `p` (a list or a tuple) is a list, and its length.
#[inline]
fn list_or_tuple_len(p: *mut ffi::PyObject) -> (bool, usize) {
    unsafe {
        if ffi::PyList_Check(p) != 0 {
            (true, ffi::PyList_GET_SIZE(p) as usize)
        } else {
            (false, ffi::PyTuple_GET_SIZE(p) as usize)
        }
    }
}
