//! A dict's entries in insertion order, one at a time, as `PyDict_Next` gives them; an
//! instance's `__dict__` when it already exists.
//!
//! On CPython 3.11, 3.12 and 3.13 (the version the extension is built for; not
//! free-threaded, not a debug build: the `amfkit_dict_layout` cfg of `build.rs`) the walk
//! reads the dict's tables in place, as `PyDict_Next` does inside: no call per entry, and
//! no read of the key's cached hash. Everywhere else (3.9, 3.10, newer versions, other
//! builds) it is `PyDict_Next` itself. Both re-read the dict's tables at every step, so a
//! dict that a hook changes between two steps is walked as `PyDict_Next` would walk it: a
//! changed size ends the walk, the index never reads past the live tables.
//!
//! The three versions share the keys object and the entries; they differ in two places,
//! each a function below with the version's layout (from CPython's
//! `Include/internal/pycore_dict.h` and `pycore_object.h` of that version):
//! - where a split table keeps its insertion order (`split_entry`): in the bytes before
//!   the values on 3.11 and 3.12, after `values[capacity]` on 3.13;
//! - what the managed-dict slot of an instance holds (`existing_instance_dict`): the dict
//!   or null on 3.11 and 3.13, the dict or the tagged values pointer on 3.12.

use pyo3::ffi;

/// How this build walks a dict: "in place" (the version's layout) or "PyDict_Next";
/// `amfkit._amfkit.DICT_WALK`, which the tests check against the interpreter.
pub(crate) const WALK: &str = imp::WALK;

/// The next (key, value) of `d` from position `pos` (which is advanced), borrowed from
/// the dict; None at the end.
///
/// # Safety
///
/// `d` is a live dict (or subclass) and the GIL is held; the key and value are valid
/// until Python code next runs.
#[inline(always)]
pub(super) unsafe fn next(
    d: *mut ffi::PyObject,
    pos: &mut ffi::Py_ssize_t,
) -> Option<(*mut ffi::PyObject, *mut ffi::PyObject)> {
    // SAFETY: the caller's contract.
    unsafe { imp::next(d, pos) }
}

/// True when every key of `d` is known to be an exact str without looking at the keys
/// (a table of str keys only, on 3.11-3.13); false when that is unknown (then walk them).
///
/// # Safety
///
/// `d` is a live dict (or subclass) and the GIL is held.
#[inline(always)]
pub(super) unsafe fn str_keys_only(d: *mut ffi::PyObject) -> bool {
    // SAFETY: the caller's contract.
    unsafe { imp::str_keys_only(d) }
}

/// The `__dict__` of instance `obj` when it already exists, borrowed from the instance
/// (on 3.11-3.13: a managed dict or a dict at `tp_dictoffset`); null when there is none yet
/// or when this is not known without asking Python (which may have to make one).
///
/// # Safety
///
/// `obj` is a live object and the GIL is held.
#[inline(always)]
pub(super) unsafe fn existing_instance_dict(obj: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: the caller's contract.
    unsafe { imp::existing_instance_dict(obj) }
}

#[cfg(amfkit_dict_layout)]
mod imp {
    use pyo3::ffi;

    pub(super) const WALK: &str = "in place";

    /// The fixed head of `PyDictKeysObject` (the same on 3.11, 3.12 and 3.13 without
    /// free threading); `dk_indices` follow it (`1 << dk_log2_index_bytes` bytes), then
    /// the entries. A mirror of the C struct: some fields are there for their place only.
    #[allow(dead_code)]
    #[repr(C)]
    struct KeysHead {
        dk_refcnt: ffi::Py_ssize_t,
        dk_log2_size: u8,
        dk_log2_index_bytes: u8,
        dk_kind: u8,
        dk_version: u32,
        dk_usable: ffi::Py_ssize_t,
        dk_nentries: ffi::Py_ssize_t,
    }

    /// `DICT_KEYS_GENERAL`: entries carry their hash; every other kind has str keys and
    /// entries of (key, value).
    const GENERAL: u8 = 0;

    #[allow(dead_code)]
    #[repr(C)]
    struct GeneralEntry {
        me_hash: ffi::Py_hash_t,
        me_key: *mut ffi::PyObject,
        me_value: *mut ffi::PyObject,
    }

    #[repr(C)]
    struct StrEntry {
        me_key: *mut ffi::PyObject,
        me_value: *mut ffi::PyObject,
    }

    /// The managed-dict slot of an object whose type has `Py_TPFLAGS_MANAGED_DICT`: three
    /// words before the object's header (`MANAGED_DICT_OFFSET`) on 3.11, 3.12 and 3.13.
    const MANAGED_DICT_WORDS: usize = 3;

    #[inline(always)]
    pub(super) unsafe fn existing_instance_dict(obj: *mut ffi::PyObject) -> *mut ffi::PyObject {
        // SAFETY: `obj` is a live object (the caller's contract). An object of a type
        // with a managed dict has the managed-dict slot before its header; any other type
        // with a positive `tp_dictoffset` keeps its dict pointer (or null) at that offset.
        unsafe {
            let tp = ffi::Py_TYPE(obj);
            if (*tp).tp_flags & ffi::Py_TPFLAGS_MANAGED_DICT != 0 {
                let slot = *obj.cast::<*mut ffi::PyObject>().sub(MANAGED_DICT_WORDS);
                return managed_dict(slot);
            }
            let offset = (*tp).tp_dictoffset;
            if offset > 0 {
                return *obj.cast::<u8>().offset(offset).cast::<*mut ffi::PyObject>();
            }
            std::ptr::null_mut()
        }
    }

    /// The dict a managed-dict slot holds, or null. On 3.11
    /// (`_PyObject_ManagedDictPointer`) and 3.13 (`PyManagedDictPointer`) the slot holds
    /// the dict, null until it is made (the values live elsewhere until then); on 3.12
    /// (`PyDictOrValues`) it holds the dict, or the values pointer minus one (its low bit
    /// set) while the values live without a dict.
    #[inline(always)]
    fn managed_dict(slot: *mut ffi::PyObject) -> *mut ffi::PyObject {
        if cfg!(all(Py_3_12, not(Py_3_13))) && (slot as usize) & 1 != 0 {
            return std::ptr::null_mut();
        }
        slot
    }

    /// The `i`-th entry in insertion order of a split table (`i < ma_used`): the index of
    /// its key entry and the value. 3.11 and 3.12: `ma_values` points at the values; the
    /// order is kept in the bytes before them, entry `i` at byte `-3 - i`
    /// (`_PyDictValues_AddToInsertionOrder`).
    ///
    /// # Safety
    ///
    /// `mp` is a live split-table dict and `i` is within `0..ma_used`.
    #[cfg(not(Py_3_13))]
    #[inline(always)]
    unsafe fn split_entry(
        mp: *mut ffi::PyDictObject,
        i: ffi::Py_ssize_t,
    ) -> (usize, *mut ffi::PyObject) {
        // SAFETY: the caller's contract; the order bytes hold `ma_used` indices.
        unsafe {
            let values = (*mp).ma_values.cast::<*mut ffi::PyObject>();
            let index = *values.cast::<i8>().offset(-3 - i) as usize;
            (index, *values.add(index))
        }
    }

    /// 3.13's `PyDictValues`: four bytes (capacity, size, embedded, valid), then the
    /// values (pointer-aligned), then the insertion order: entry `i` at byte `i` after
    /// `values[capacity]` (`get_insertion_order_array`).
    #[cfg(Py_3_13)]
    #[allow(dead_code)]
    #[repr(C)]
    struct Values313 {
        capacity: u8,
        size: u8,
        embedded: u8,
        valid: u8,
        values: [*mut ffi::PyObject; 0],
    }

    #[cfg(Py_3_13)]
    #[inline(always)]
    unsafe fn split_entry(
        mp: *mut ffi::PyDictObject,
        i: ffi::Py_ssize_t,
    ) -> (usize, *mut ffi::PyObject) {
        // SAFETY: the caller's contract; the order array holds `size >= ma_used` indices
        // after the `capacity` values.
        unsafe {
            let head = (*mp).ma_values.cast::<Values313>();
            let values = std::ptr::addr_of_mut!((*head).values).cast::<*mut ffi::PyObject>();
            let order = values.add(usize::from((*head).capacity)).cast::<u8>();
            let index = usize::from(*order.offset(i));
            (index, *values.add(index))
        }
    }

    #[inline(always)]
    pub(super) unsafe fn str_keys_only(d: *mut ffi::PyObject) -> bool {
        // SAFETY: `d` is a live dict (the caller's contract), laid out as on 3.11-3.13. A
        // split table and a table of the str kind hold exact str keys only (CPython turns
        // the table general before it takes any other key).
        unsafe {
            let mp = d.cast::<ffi::PyDictObject>();
            !(*mp).ma_values.is_null() || (*(*mp).ma_keys.cast::<KeysHead>()).dk_kind != GENERAL
        }
    }

    #[inline(always)]
    pub(super) unsafe fn next(
        d: *mut ffi::PyObject,
        pos: &mut ffi::Py_ssize_t,
    ) -> Option<(*mut ffi::PyObject, *mut ffi::PyObject)> {
        // SAFETY: `d` is a live dict (the caller's contract), so its header is a
        // `PyDictObject` and its keys object, entries and (for a split table) values are
        // laid out as CPython lays them out in the version this module is built for
        // (3.11, 3.12 or 3.13: the `amfkit_dict_layout` cfg). Every index is checked
        // against the live sizes before it is read, as `_PyDict_Next` checks it.
        unsafe {
            let mp = d.cast::<ffi::PyDictObject>();
            let i = *pos;
            if i < 0 {
                return None;
            }
            let keys = (*mp).ma_keys.cast::<KeysHead>();
            let entries = keys
                .add(1)
                .cast::<u8>()
                .add(1usize << (*keys).dk_log2_index_bytes);
            if !(*mp).ma_values.is_null() {
                // A split table: the values in their own array, in key-entry order, and
                // the insertion order beside them.
                if i >= (*mp).ma_used {
                    return None;
                }
                let (index, value) = split_entry(mp, i);
                let key = (*entries.cast::<StrEntry>().add(index)).me_key;
                *pos = i + 1;
                return Some((key, value));
            }
            let n = (*keys).dk_nentries;
            let mut i = i;
            if (*keys).dk_kind == GENERAL {
                let e = entries.cast::<GeneralEntry>();
                while i < n {
                    let entry = &*e.offset(i);
                    i += 1;
                    if !entry.me_value.is_null() {
                        *pos = i;
                        return Some((entry.me_key, entry.me_value));
                    }
                }
            } else {
                let e = entries.cast::<StrEntry>();
                while i < n {
                    let entry = &*e.offset(i);
                    i += 1;
                    if !entry.me_value.is_null() {
                        *pos = i;
                        return Some((entry.me_key, entry.me_value));
                    }
                }
            }
            *pos = i;
            None
        }
    }
}

#[cfg(not(amfkit_dict_layout))]
mod imp {
    use pyo3::ffi;

    pub(super) const WALK: &str = "PyDict_Next";

    #[inline(always)]
    pub(super) unsafe fn existing_instance_dict(_obj: *mut ffi::PyObject) -> *mut ffi::PyObject {
        std::ptr::null_mut()
    }

    #[inline(always)]
    pub(super) unsafe fn str_keys_only(_d: *mut ffi::PyObject) -> bool {
        false
    }

    #[inline(always)]
    pub(super) unsafe fn next(
        d: *mut ffi::PyObject,
        pos: &mut ffi::Py_ssize_t,
    ) -> Option<(*mut ffi::PyObject, *mut ffi::PyObject)> {
        let mut k = std::ptr::null_mut();
        let mut v = std::ptr::null_mut();
        // SAFETY: the caller's contract: `d` is a live dict and the GIL is held.
        (unsafe { ffi::PyDict_Next(d, pos, &mut k, &mut v) } != 0).then_some((k, v))
    }
}
