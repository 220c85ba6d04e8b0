//! The AMF3 writer: exact-type dispatch of the hot types, then the cold kinds.

use amfkit_core::amf3::marker as m3;
use amfkit_core::{PathSegment, Result};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::dictwalk;
use super::obtype::{Cold, Keys};
use super::{
    list_or_tuple_len, utf8, PyEncoder, ANONYMOUS_TRAITS, FIRST_SYNTHETIC_TRAITS, SOLE_OWNER,
};

/// Slots of the direct-mapped cache of str object identities.
const STR_CACHE: usize = 512;

/// Str objects remembered by identity at most (and kept alive) per encode.
const STR_IDS: usize = 4096;

/// A str held by more than this many references is remembered by identity (one held by
/// its container alone, or by a container and a caller's `Bound`, cannot be met again).
const SHARED_STR: ffi::Py_ssize_t = 2;

/// A member name for an error path.
#[cold]
fn key_text(key: &Bound<'_, PyAny>) -> PathSegment {
    // SAFETY: `key` is a live str (a `Bound`: the GIL is held; its callers checked the
    // type), and the text is copied into the path at once.
    PathSegment::key(unsafe { utf8(key.as_ptr()) }.unwrap_or("?"))
}

impl<'py> PyEncoder<'py> {
    /// Write one AMF3 value.
    #[inline]
    pub(crate) fn amf3(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf3_scalar(obj.as_ptr())? {
            return Ok(());
        }
        self.amf3_container(obj)
    }

    /// Write `p` if it is a str, int, float, None or bool (exact types), read in place;
    /// returns false, having written nothing, for anything else.
    ///
    /// No new reference is taken: nothing here runs Python code, so the container the
    /// caller is reading keeps `p` alive. (Containers are owned before they are walked,
    /// since a hook inside them may run Python code.)
    #[inline(always)]
    fn amf3_scalar(&mut self, p: *mut ffi::PyObject) -> Result<bool> {
        // SAFETY: `p` is a live object held by the caller or by a container it holds (the
        // GIL is held); PyFloat_AS_DOUBLE reads an exact float, and None/True are
        // compared by address only.
        unsafe {
            let tp = ffi::Py_TYPE(p);
            if tp == &raw mut ffi::PyUnicode_Type {
                self.enc.out.u8(m3::STRING);
                self.amf3_str_ptr(p)?;
                return Ok(true);
            }
            if tp == &raw mut ffi::PyLong_Type {
                self.amf3_int(p)?;
                return Ok(true);
            }
            if tp == &raw mut ffi::PyFloat_Type {
                self.enc.amf3_double(ffi::PyFloat_AS_DOUBLE(p));
                return Ok(true);
            }
            if p == ffi::Py_None() {
                self.enc.amf3_null();
                return Ok(true);
            }
            if tp == &raw mut ffi::PyBool_Type {
                self.enc.amf3_bool(p == ffi::Py_True());
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Write `p`, a value borrowed from a container that is lent or owned (an item, a
    /// member): a scalar in place; anything else lent while it is written (`lent.rs`).
    #[inline(always)]
    pub(super) fn amf3_lent(&mut self, p: *mut ffi::PyObject) -> Result<()> {
        if self.amf3_scalar(p)? {
            return Ok(());
        }
        let mark = self.lend(p);
        // SAFETY: `p` is alive: its container is on the lent stack or owned, and no Python
        // code ran since it was read (the caller's contract); it stays alive while lent.
        let r = self.amf3_container(&*unsafe { Borrowed::from_ptr(self.py, p) });
        self.give_back(mark);
        r
    }

    /// Write a value that is not a hot scalar: a dict, a list or tuple, an instance of
    /// the registered class met last, then the cold kinds.
    #[inline]
    fn amf3_container(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held).
        let tp = unsafe { ffi::Py_TYPE(obj.as_ptr()) };
        if tp == &raw mut ffi::PyDict_Type {
            return self.amf3_dict(obj);
        }
        if tp == &raw mut ffi::PyList_Type || tp == &raw mut ffi::PyTuple_Type {
            return self.amf3_sequence(obj);
        }
        if tp as usize == self.last_class.0 {
            // SAFETY: the cached entry came from `self.reg`, which this encoder holds
            // (see `registered`).
            let info = unsafe { &*self.last_class.1 };
            return self.amf3_registered(obj, info);
        }
        self.amf3_cold(obj)
    }

    /// A str object through the string table, by identity first, then by contents.
    ///
    /// `p` is a live exact str (or subclass) the caller holds, directly or through a
    /// container; it is only kept (a new reference) when it takes a table entry.
    #[inline]
    fn amf3_str_ptr(&mut self, p: *mut ffi::PyObject) -> Result<()> {
        let id = p as usize;
        let slot = (id >> 4) % STR_CACHE;
        if let Some(&cached) = self.str_cache.get(slot) {
            if cached.0 == id {
                self.enc.amf3_str_reference(cached.1);
                return Ok(());
            }
        }
        self.amf3_str_ptr_slow(p, id, slot)
    }

    #[inline(never)]
    fn amf3_str_ptr_slow(&mut self, p: *mut ffi::PyObject, id: usize, slot: usize) -> Result<()> {
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
        let s = self.str_of(p)?;
        if let Some(index) = self.enc.amf3_str_indexed(s)? {
            // A str held only by its container (and, when the caller made one, by the
            // caller's `Bound`) cannot be met again by identity (equal text is still
            // found by the contents table). Every other one is cached and kept alive,
            // so its address stays its own, up to `STR_IDS` of them: past that (a graph
            // of many distinct strings), the contents table alone finds repeats.
            // SAFETY: `p` is a live object (the caller's contract; the GIL is held).
            if unsafe { ffi::Py_REFCNT(p) } > SHARED_STR && self.str_ids.len() < STR_IDS {
                self.str_ids.insert(id, index);
                if let Some(entry) = self.str_cache.get_mut(slot) {
                    *entry = (id, index);
                }
                // SAFETY: as above; the new reference is owned by `keep`.
                let obj = unsafe { Bound::from_borrowed_ptr(self.py, p) };
                self.keep(&obj);
            }
        }
        Ok(())
    }

    #[inline]
    fn amf3_int(&mut self, p: *mut ffi::PyObject) -> Result<()> {
        let mut overflow = 0;
        // SAFETY: `p` is an int (exact or subclass, classified) the caller holds a `Bound`
        // to, with the GIL held.
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow) };
        if overflow == 0 {
            // SAFETY: the GIL is held; this only reads the thread's error indicator.
            if v == -1 && unsafe { !ffi::PyErr_Occurred().is_null() } {
                return Err(self.raised());
            }
            self.enc.amf3_int(v);
            return Ok(());
        }
        let d = self.big_int(p)?;
        self.enc.amf3_double(d);
        Ok(())
    }

    /// Write `marker`, then a reference if `obj` was written before (returns true), or
    /// take the next object-table index for it (returns false; the caller writes the
    /// body).
    ///
    /// An object whose reference count is at most [`SOLE_OWNER`] is held only by the
    /// container that lent it, so it cannot be met again in this graph (a cycle or a
    /// shared value needs a second reference): it takes its index without a hash-table
    /// entry and without being kept alive.
    #[inline]
    pub(super) fn amf3_ref(&mut self, marker: u8, obj: &Bound<'py, PyAny>) -> bool {
        let p = obj.as_ptr();
        // SAFETY: `obj` is a live object (a `Bound`: the GIL is held).
        if unsafe { ffi::Py_REFCNT(p) } <= SOLE_OWNER {
            self.enc.out.u8(marker);
            self.enc.amf3_register(None);
            return false;
        }
        if self.enc.amf3_reference(marker, p as usize) {
            return true;
        }
        self.keep_keyed(p);
        false
    }

    fn amf3_sequence(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf3_ref(m3::ARRAY, obj) {
            return Ok(());
        }
        self.amf3_sequence_body(obj)
    }

    /// Dense array body: length, empty associative part, items.
    pub(super) fn amf3_sequence_body(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        self.enter()?;
        let p = obj.as_ptr();
        let (is_list, len) = list_or_tuple_len(p);
        self.enc.amf3_array_header(len)?;
        self.enc.amf3_str("")?;
        self.amf3_items(p, is_list, len)?;
        self.leave();
        Ok(())
    }

    /// The `len` items of a list or tuple, each as AMF3 (scalars read in place, the rest
    /// lent while written).
    #[inline]
    fn amf3_items(&mut self, p: *mut ffi::PyObject, is_list: bool, len: usize) -> Result<()> {
        for i in 0..len {
            // SAFETY: `p` is the list or tuple the caller holds, of `len` items: a list's
            // size is checked again first (a hook inside an earlier item may have changed
            // it), a tuple cannot change. The item is borrowed: a scalar is written in
            // place, anything else is lent while it is written (`amf3_lent`).
            let item = unsafe {
                if is_list {
                    if ffi::PyList_GET_SIZE(p) as usize != len {
                        return Err(self.enc.error("a list changed size while being encoded"));
                    }
                    ffi::PyList_GET_ITEM(p, i as ffi::Py_ssize_t)
                } else {
                    ffi::PyTuple_GET_ITEM(p, i as ffi::Py_ssize_t)
                }
            };
            self.amf3_lent(item)
                .map_err(|e| e.within(PathSegment::Index(i)))?;
        }
        Ok(())
    }

    fn amf3_dict(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        let p = obj.as_ptr();
        if !matches!(Self::key_kinds(p), Keys::Str) {
            return self.amf3_dictionary(obj, false);
        }
        if self.amf3_ref(m3::OBJECT, obj) {
            return Ok(());
        }
        if self.layout.is_some() && self.amf3_laid_out(obj, false)? {
            return Ok(());
        }
        if !self.enc.amf3_traits_reference(ANONYMOUS_TRAITS) {
            self.enc
                .amf3_traits_inline::<&str>(Some(ANONYMOUS_TRAITS), "", &[], true, false)?;
        }
        self.amf3_members(obj)
    }

    /// Dynamic members from a dict with str keys, then the empty string that ends them.
    pub(super) fn amf3_members(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        self.enter()?;
        self.amf3_members_in_place(obj.as_ptr())?;
        self.leave();
        self.enc.amf3_str("")
    }

    /// Every (key, value) of dict `d` (which the caller holds) as a member, read in
    /// place (see `amf3_member_ptr`).
    #[inline]
    pub(super) fn amf3_members_in_place(&mut self, d: *mut ffi::PyObject) -> Result<()> {
        let mut pos: ffi::Py_ssize_t = 0;
        // SAFETY: `d` is a dict (or subclass) the caller holds, with the GIL held; the
        // walk stops at the end or if the dict changed size (a hook may change it while
        // one of its values is written); what it lends is used as `amf3_member_ptr` says.
        while let Some((k, v)) = unsafe { dictwalk::next(d, &mut pos) } {
            self.amf3_member_ptr(k, v)?;
        }
        Ok(())
    }

    /// A member lent by a dict: a str name through the identity cache, a scalar value
    /// read in place; a value that is a container is lent, with its name, while it is
    /// written (a hook inside it may change the dict that lent them: see `lent.rs`).
    #[inline(always)]
    fn amf3_member_ptr(&mut self, k: *mut ffi::PyObject, v: *mut ffi::PyObject) -> Result<()> {
        // SAFETY: `k` and `v` were lent by a dict the caller holds, and nothing runs
        // Python code before they are on the lent stack, owned or done with; the length
        // is read from an exact str.
        unsafe {
            if ffi::Py_TYPE(k) != &raw mut ffi::PyUnicode_Type || ffi::PyUnicode_GET_LENGTH(k) == 0
            {
                let key = Bound::from_borrowed_ptr(self.py, k);
                let value = Bound::from_borrowed_ptr(self.py, v);
                return self.amf3_member_obj(&key, &value);
            }
        }
        self.amf3_str_ptr(k)?;
        let py = self.py;
        // SAFETY: as above: `k` is alive while no Python code has run.
        let named =
            |e: amfkit_core::Error| e.within(key_text(unsafe { &Bound::from_borrowed_ptr(py, k) }));
        if self.amf3_scalar(v).map_err(named)? {
            return Ok(());
        }
        // The name and the value are read on the dict's reference while they are on the
        // lent stack (`lent.rs`): a safepoint inside owns them.
        let mark = self.lend(k);
        self.lend(v);
        // SAFETY: as above: `v` is alive, and stays so while lent.
        let r = self
            .amf3_container(&*unsafe { Borrowed::from_ptr(self.py, v) })
            .map_err(named);
        self.give_back(mark);
        r
    }

    /// A member whose name is a str object (through the identity cache).
    #[inline]
    pub(super) fn amf3_member_obj(
        &mut self,
        key: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> Result<()> {
        let kp = key.as_ptr();
        // SAFETY: `key` is a live object (a `Bound`: the GIL is held).
        if unsafe { ffi::PyUnicode_Check(kp) } == 0 {
            let _ = self.str_of_key(key)?;
        }
        // SAFETY: `key` is a live str: str_of_key returned an error above for anything
        // else.
        if unsafe { ffi::PyUnicode_GET_LENGTH(kp) } == 0 {
            return Err(self
                .enc
                .error("an empty member name cannot be written in amf3"));
        }
        self.amf3_str_ptr(kp)?;
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
        self.safepoint();
        if self.amf3_ref(m3::DICTIONARY, obj) {
            return Ok(());
        }
        self.enter()?;
        let items = self.dict_items(obj.as_ptr());
        self.enc.amf3_dictionary_header(items.len(), weak_keys)?;
        for (i, (k, v)) in items.iter().enumerate() {
            // SAFETY: `k` is a live object (a `Bound`: the GIL is held).
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

    /// Everything but the hot types.
    #[inline(never)]
    fn amf3_cold(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        self.safepoint();
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
            Cold::Opaque => return self.amf3_opaque(obj),
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
                // CPython has one `bytes` object per value of 0 or 1 bytes: identity
                // cannot tell two such ByteArrays apart, so they are never references.
                // SAFETY: `obj` is a live object (a `Bound`: the GIL is held).
                let shared_by_cpython =
                    unsafe { ffi::PyBytes_CheckExact(p) != 0 && ffi::PyBytes_Size(p) < 2 };
                if shared_by_cpython {
                    self.enc.out.u8(m3::BYTE_ARRAY);
                    self.enc.amf3_register(None);
                    let bytes = self.buffer(obj)?;
                    self.enc.amf3_bytes_body(&bytes)?;
                } else if !self.amf3_ref(m3::BYTE_ARRAY, obj) {
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
            // SAFETY: `p` is a float subclass (classified with PyFloat_Check) held by
            // `obj`, with the GIL held.
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
        // A FixedVector is a Vector whose fixed flag is set; a plain array.array is not.
        let fixed = obj.get_type().as_ptr() as *mut ffi::PyTypeObject == self.t.fixed_vector;
        self.enc.amf3_vector_header(raw.len() / size, fixed)?;
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
        // SAFETY: `name` is a live object (a `Bound`: the GIL is held).
        let name_str = if unsafe { ffi::PyUnicode_Check(name.as_ptr()) } != 0 {
            self.str_of(name.as_ptr())?
        } else {
            ""
        };
        self.enter()?;
        let p = obj.as_ptr();
        // SAFETY: `obj` is exactly an `amfkit.ObjectVector`, a list subclass, held by a
        // `Bound` (the GIL is held).
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
            // SAFETY: the GIL is held; the new reference is owned at once.
            let key = unsafe { ffi::PyLong_FromSize_t(dense_len) };
            let key = self.own(key)?;
            // SAFETY: `obj` is exactly an `amfkit.MixedArray`, a dict subclass, and `key`
            // an int, both held by a `Bound` (the GIL is held).
            let present = unsafe { ffi::PyDict_Contains(obj.as_ptr(), key.as_ptr()) };
            if present < 0 {
                return Err(self.raised());
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
            // SAFETY: `k` is a live object (a `Bound`: the GIL is held), read as an int
            // only once it is one.
            if unsafe { ffi::PyLong_CheckExact(kp) } != 0 {
                // SAFETY: `kp` is an exact int, held by `k`.
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

    /// Traits for a shape given by objects (a TypedObject's alias and sealed tuple, a
    /// Table's alias and columns): by their identity first, then by their contents, so
    /// that equal shapes share one traits entry.
    pub(super) fn amf3_shaped_traits(
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

    fn amf3_typed_object(&mut self, obj: &Bound<'py, PyAny>) -> Result<()> {
        if self.amf3_ref(m3::OBJECT, obj) {
            return Ok(());
        }
        if self.layout.is_some() && self.amf3_laid_out(obj, true)? {
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
        // SAFETY: `alias` is a live object (a `Bound`: the GIL is held).
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
            // SAFETY: `d` is exactly an `amfkit.TypedObject`, a dict subclass held by
            // `obj`, and `key` a str held by a `Bound` (the GIL is held).
            let v = unsafe { ffi::PyDict_GetItemWithError(d, key.as_ptr()) };
            let v = if v.is_null() {
                // SAFETY: the GIL is held; this only reads the thread's error indicator.
                if unsafe { !ffi::PyErr_Occurred().is_null() } {
                    return Err(self.raised());
                }
                // SAFETY: `undefined` is held by `Types` for the process's life, and the
                // GIL is held.
                unsafe { Bound::from_borrowed_ptr(self.py, self.t.undefined) }
            } else {
                // SAFETY: `v` is a non-null borrowed reference from the dict, made a new
                // reference at once.
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
}
