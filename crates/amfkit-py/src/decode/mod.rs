//! Decoding: a `Visitor` that builds Python objects straight from the reader.
//!
//! - `mod.rs` (here): the [`PyVisitor`] and the C API helpers every file uses;
//! - `visitor.rs`: the one `impl Visitor for PyVisitor`: the scalars, and which file
//!   builds each other marker family;
//! - `date.rs`: dates (a datetime, or `amfkit.Date`);
//! - `array.rs`: arrays, ECMA and mixed arrays, vectors;
//! - `traits.rs`: a traits entry resolved once: the `Shape` of its objects (anonymous,
//!   typed, registered, a Flex collection, an opaque body, or an unknown externalizable
//!   refused) and the member names to set;
//! - `object.rs`: an object's construction and its sealed and dynamic members;
//! - `registered.rs`: the rules of registered classes (instantiation, which members they
//!   take, how a member is set, the `on_mismatch` report);
//! - `external.rs`: externalizable bodies: Flex collections, opaque bodies, `DataInput`
//!   and `__readamf__`;
//! - `dictionary.rs`: `flash.utils.Dictionary`;
//! - `layout.rs`: what a lossless read records beyond the objects' own traits (an
//!   ObjectProxy's body);
//! - `api.rs`: the entry points (`amf0_decode`, `Amf3Decoder`, ...).
//!
//! `visitor.rs` is the `impl Visitor`; each other file but `api.rs` is an `impl
//! PyVisitor` block. The imports go one way, with no cycle: this module imports none of
//! its children; `visitor.rs` takes the types of `array.rs`, `traits.rs` and `object.rs`;
//! `object.rs` and `external.rs` take those of `traits.rs` (and `external.rs` the object
//! of `object.rs`); `traits.rs` and `object.rs` ask `registered.rs`, which imports no
//! sibling.

pub mod api;
mod array;
mod date;
mod dictionary;
pub mod external;
mod layout;
mod object;
mod registered;
mod traits;
mod visitor;

use std::os::raw::c_int;
use std::sync::Arc;

use crate::errors::Pending;
use crate::lossless::LayoutData;
use crate::registry::{snapshot, Registry};
use crate::types::{types, Types};
use amfkit_core::{Error, Result};
use pyo3::ffi;
use pyo3::prelude::*;

/// Builds Python objects from the reader: one per decode call (or packet, or .sol file),
/// holding the registry snapshot and the options of that call.
pub struct PyVisitor<'py> {
    py: Python<'py>,
    t: &'static Types,
    reg: Arc<Registry>,
    tz_aware: bool,
    pub pending: Pending,
    /// Lossless decoding (`amfkit.sol.loads(..., lossless=True)`): each anonymous or
    /// typed AMF3 object, with the traits it was read with (one record per traits
    /// definition, shared by the objects that referenced it), so that a writer can write
    /// the same traits the same way (`lossless.rs`). None otherwise.
    pub layout: Option<LayoutData>,
    /// The decoder's `on_mismatch` hook (`registered.rs`): told once per class
    /// definition read when a registered class's members on the wire are not the ones
    /// it declares.
    pub on_mismatch: Option<Bound<'py, PyAny>>,
}

impl<'py> PyVisitor<'py> {
    pub fn new(py: Python<'py>, tz_aware: bool) -> PyResult<Self> {
        Ok(PyVisitor {
            py,
            t: types()?,
            reg: snapshot(),
            tz_aware,
            pending: Pending::default(),
            layout: None,
            on_mismatch: None,
        })
    }

    /// The same visitor with the decoder's lenient options that concern the model
    /// (`on_mismatch`; the rest is the core reader's).
    pub fn with_leniency(mut self, lenient: &crate::lenient::Leniency) -> Self {
        self.on_mismatch = lenient
            .on_mismatch
            .as_ref()
            .map(|f| f.bind(self.py).clone());
        self
    }

    /// Record a Python exception (raised by a hook or the C API): it is what the caller
    /// sees, carried up by the returned error.
    #[cold]
    #[inline(never)]
    pub fn fail(&mut self, err: PyErr) -> Error {
        self.pending.record(err, Error::UNKNOWN_OFFSET)
    }

    /// [`PyVisitor::fail`] with the exception a C API call just set, out of line (the hot
    /// callers stay small).
    #[cold]
    #[inline(never)]
    fn raised(&mut self) -> Error {
        self.fail(PyErr::fetch(self.py))
    }

    #[inline]
    fn own(&mut self, ptr: *mut ffi::PyObject) -> Result<Bound<'py, PyAny>> {
        if ptr.is_null() {
            Err(self.raised())
        } else {
            // SAFETY: `ptr` is a non-null new reference returned by the C API, and the GIL
            // is held (`self.py`).
            Ok(unsafe { Bound::from_owned_ptr(self.py, ptr) })
        }
    }

    #[inline]
    fn check(&mut self, rc: c_int) -> Result<()> {
        if rc < 0 {
            Err(self.raised())
        } else {
            Ok(())
        }
    }

    fn call_type(
        &mut self,
        tp: *mut ffi::PyTypeObject,
        args: &[*mut ffi::PyObject],
    ) -> Result<Bound<'py, PyAny>> {
        // SAFETY: `tp` is one of the types held by `Types` for the process's life and
        // `args` are pointers of objects the caller holds a `Bound` to (the GIL is held).
        // The argument tuple is checked for null, takes a new reference to each argument
        // (PyTuple_SET_ITEM steals one), and is released after the call.
        let ptr = unsafe {
            match args {
                [] => ffi::PyObject_CallNoArgs(tp as *mut ffi::PyObject),
                [a] => ffi::PyObject_CallOneArg(tp as *mut ffi::PyObject, *a),
                _ => {
                    let tuple = ffi::PyTuple_New(args.len() as ffi::Py_ssize_t);
                    if tuple.is_null() {
                        return Err(self.raised());
                    }
                    for (i, a) in args.iter().enumerate() {
                        ffi::Py_INCREF(*a);
                        ffi::PyTuple_SET_ITEM(tuple, i as ffi::Py_ssize_t, *a);
                    }
                    let r =
                        ffi::PyObject_Call(tp as *mut ffi::PyObject, tuple, std::ptr::null_mut());
                    ffi::Py_DECREF(tuple);
                    r
                }
            }
        };
        self.own(ptr)
    }

    fn set_attr(
        &mut self,
        obj: &Bound<'py, PyAny>,
        name: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> Result<()> {
        // SAFETY: the three are live objects (`Bound`s: the GIL is held).
        let rc = unsafe { ffi::PyObject_SetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr()) };
        self.check(rc)
    }

    /// A str of `s`. ASCII text (the reader validated it as UTF-8) is copied into a new
    /// compact str as it is, without CPython decoding it again.
    fn str_obj(&mut self, s: &str) -> Result<Bound<'py, PyAny>> {
        let len = s.len() as ffi::Py_ssize_t;
        let ptr = if is_ascii(s.as_bytes()) {
            // SAFETY: the GIL is held (`self.py`); PyUnicode_New(len, 127) makes a compact
            // ASCII str with room for `len` one-byte characters (and writes its closing
            // NUL), into which the `len` ASCII bytes of `s` are copied before anything can
            // see it; a null result (an exception set) is checked by `own`.
            unsafe {
                let o = ffi::PyUnicode_New(len, 127);
                if !o.is_null() {
                    std::ptr::copy_nonoverlapping(
                        s.as_ptr(),
                        ffi::PyUnicode_DATA(o).cast::<u8>(),
                        s.len(),
                    );
                }
                o
            }
        } else {
            // SAFETY: `s` is valid UTF-8 of `s.len()` bytes; the GIL is held (`self.py`);
            // the new reference is owned at once by `own`, which checks it for null.
            unsafe { ffi::PyUnicode_FromStringAndSize(s.as_ptr().cast(), len) }
        };
        self.own(ptr)
    }
}

/// Whether `b` is ASCII: its bytes ORed 16 at a time (which the compiler makes vector
/// instructions) and the result checked once, about twice as fast as
/// `<[u8]>::is_ascii` on the long texts of a big save (tests/codec/test_amf3.py checks
/// every position).
#[inline]
fn is_ascii(b: &[u8]) -> bool {
    let mut acc = [0u8; 16];
    let mut chunks = b.chunks_exact(16);
    for chunk in &mut chunks {
        for (a, x) in acc.iter_mut().zip(chunk) {
            *a |= x;
        }
    }
    let tail = chunks.remainder().iter().fold(0, |a, &x| a | x);
    acc.iter().fold(tail, |a, &x| a | x) < 0x80
}
