//! A dict's entries in insertion order, one at a time, as `PyDict_Next` gives them; an
//! instance's `__dict__` when it already exists.
//!
//! On CPython 3.11 (the version the extension is built for, not free-threaded, not a
//! debug build: the `amfkit_cpython_311` cfg of `build.rs`) the walk reads the dict's tables in place, as `PyDict_Next` does inside:
//! no call per entry, and no read of the key's cached hash. Everywhere else it is
//! `PyDict_Next` itself. Both re-read the dict's tables at every step, so a dict that a
//! hook changes between two steps is walked as `PyDict_Next` would walk it: a changed
//! size ends the walk, the index never reads past the live tables.

use pyo3::ffi;

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
/// (a table of str keys only, on 3.11); false when that is unknown (then walk them).
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
/// (on 3.11: a managed dict or a dict at `tp_dictoffset`); null when there is none yet
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

#[cfg(amfkit_cpython_311)]
mod imp {
    use pyo3::ffi;

    /// The fixed head of CPython 3.11's `PyDictKeysObject`; `dk_indices` follow it
    /// (`1 << dk_log2_index_bytes` bytes), then the entries. A mirror of the C struct:
    /// some fields are there for their place only.
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

    #[inline(always)]
    pub(super) unsafe fn existing_instance_dict(obj: *mut ffi::PyObject) -> *mut ffi::PyObject {
        // SAFETY: `obj` is a live object (the caller's contract). On 3.11 an object of a
        // type with a managed dict keeps the dict pointer three words before its header
        // (null until the dict is made; the values live inline until then); any other
        // type with a positive `tp_dictoffset` keeps it at that offset.
        unsafe {
            let tp = ffi::Py_TYPE(obj);
            if (*tp).tp_flags & ffi::Py_TPFLAGS_MANAGED_DICT != 0 {
                return *obj.cast::<*mut ffi::PyObject>().sub(3);
            }
            let offset = (*tp).tp_dictoffset;
            if offset > 0 {
                return *obj.cast::<u8>().offset(offset).cast::<*mut ffi::PyObject>();
            }
            std::ptr::null_mut()
        }
    }

    #[inline(always)]
    pub(super) unsafe fn str_keys_only(d: *mut ffi::PyObject) -> bool {
        // SAFETY: `d` is a live dict (the caller's contract), laid out as on 3.11. A split
        // table and a table of the str kind hold exact str keys only (CPython turns the
        // table general before it takes any other key).
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
        // laid out as CPython 3.11 lays them out (this module is built for 3.11 only).
        // Every index is checked against the live sizes before it is read, as
        // `_PyDict_Next` checks it.
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
            let values = (*mp).ma_values.cast::<*mut ffi::PyObject>();
            if !values.is_null() {
                // A split table: the values in their own array, in key-entry order; the
                // insertion order is kept in the bytes before it ([-3 - i]).
                if i >= (*mp).ma_used {
                    return None;
                }
                let index = *values.cast::<i8>().offset(-3 - i) as usize;
                let key = (*entries.cast::<StrEntry>().add(index)).me_key;
                *pos = i + 1;
                return Some((key, *values.add(index)));
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

#[cfg(not(amfkit_cpython_311))]
mod imp {
    use pyo3::ffi;

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
