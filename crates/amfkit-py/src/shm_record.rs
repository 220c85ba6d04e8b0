//! The shared broker's message record, made without Python code.
//!
//! A record (`amfkit.messaging.shared.encode_message`) is one AMF3 array: destination,
//! body, headers, subtopics, message id, timestamp (ms since 1970), time to live (ms) and
//! correlation id. [`shm_publish`] makes a feed's record (a destination and a body: a new
//! id, now, no headers) and appends it to the destination's log; `shm_message.rs` reads
//! records back.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Once;
use std::time::{SystemTime, UNIX_EPOCH};

use amfkit_core::Encoder as CoreEncoder;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::encode::api::{with_amf3, KeptEncoder};
use crate::encode::PyEncoder;
use crate::errors::store_err;
use crate::shm::{to_py, ShmSegment};

// --- message ids ------------------------------------------------------------------------

/// Random bytes read from the OS 16 KiB at a time (1,024 ids), per thread, as
/// `amfkit.remoting.messages.new_id` does; a forked child reads its own.
struct Ids {
    generation: u64,
    buf: [u8; 16384],
    taken: usize,
}

/// One more in every forked child: a thread's bytes from before the fork are not reused.
static GENERATION: AtomicU64 = AtomicU64::new(1);
static AT_FORK: Once = Once::new();

extern "C" fn forked_child() {
    GENERATION.fetch_add(1, Relaxed);
}

thread_local! {
    static IDS: RefCell<Ids> = const { RefCell::new(Ids { generation: 0, buf: [0; 16384], taken: 16384 }) };
}

fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the destination is the unfilled tail of `buf`, valid for its length.
        let n = unsafe { libc::getrandom(buf[done..].as_mut_ptr().cast(), buf.len() - done, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
            continue;
        }
        done += n as usize;
    }
    Ok(())
}

/// A Flex message id: an uppercase random (version 4) UUID, as `new_id` makes them.
pub fn new_id() -> std::io::Result<[u8; 36]> {
    AT_FORK.call_once(|| {
        // SAFETY: registers a child handler that only increments an atomic
        // (async-signal-safe); no prepare or parent handler.
        unsafe {
            libc::pthread_atfork(None, None, Some(forked_child));
        }
    });
    let mut b = [0u8; 16];
    IDS.with(|ids| {
        let mut ids = ids.borrow_mut();
        let generation = GENERATION.load(Relaxed);
        if ids.taken + 16 > ids.buf.len() || ids.generation != generation {
            fill_random(&mut ids.buf)?;
            ids.taken = 0;
            ids.generation = generation;
        }
        let at = ids.taken;
        b.copy_from_slice(&ids.buf[at..at + 16]);
        ids.taken += 16;
        Ok::<(), std::io::Error>(())
    })?;
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut h = [0u8; 32];
    for (i, byte) in b.iter().enumerate() {
        h[2 * i] = HEX[usize::from(byte >> 4)];
        h[2 * i + 1] = HEX[usize::from(byte & 15)];
    }
    let mut id = [b'-'; 36];
    id[..8].copy_from_slice(&h[..8]);
    id[9..13].copy_from_slice(&h[8..12]);
    id[14] = b'4';
    id[15..18].copy_from_slice(&h[13..16]);
    id[19] = b"89AB"[usize::from(b[8] & 3)];
    id[20..23].copy_from_slice(&h[17..20]);
    id[24..].copy_from_slice(&h[20..]);
    Ok(id)
}

/// The wall clock in milliseconds since 1970 (a Flex message's timestamp).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

// --- publishing -------------------------------------------------------------------------

static PUBLISH_KEPT: KeptEncoder = KeptEncoder::new(4 << 20);

/// Append a feed's message (`destination`, `body`; a new id, now, no headers, subtopic or
/// time to live) to the log `prefix + destination` of `segment`, as
/// `SharedBroker.publish("prices", body)` does; its sequence number.
#[pyfunction]
pub fn shm_publish<'py>(
    py: Python<'py>,
    segment: &Bound<'py, ShmSegment>,
    prefix: &str,
    destination: &Bound<'py, PyString>,
    body: &Bound<'py, PyAny>,
) -> PyResult<u64> {
    let name = destination.to_str()?;
    if name.is_empty() {
        return Err(PyTypeError::new_err("a destination is a non-empty string"));
    }
    let id = new_id().map_err(|e| store_err(py, format!("cannot read random bytes: {e}")))?;
    // SAFETY: `new_id` writes ASCII only.
    let id = unsafe { std::str::from_utf8_unchecked(&id) };
    let mut log = String::with_capacity(prefix.len() + name.len());
    log.push_str(prefix);
    log.push_str(name);
    let seg = &segment.get().seg;
    let append = |bytes: &[u8]| match seg.try_append(&log, bytes) {
        Ok(Some(seq)) => Ok(seq),
        Ok(None) => py
            .detach(|| seg.append(&log, bytes))
            .map_err(|e| to_py(py, e)),
        Err(e) => Err(to_py(py, e)),
    };
    // The record's bytes as `amf3.encode([destination, body, {}, [], id, now, 0, None])`
    // writes them: the envelope by the core writer; a str, int, float, bool or None body
    // too (exact types, as the Python encoder writes them), any other through the Python
    // encoder, in the same reference context (the body may refer to the destination's
    // string; the headers' traits to the body's).
    let mut core = PUBLISH_KEPT.take().unwrap_or_default();
    let head = |core: &mut CoreEncoder| {
        core.out.bytes(&[ARRAY, 8 << 1 | 1, EMPTY]);
        core.amf3_register(None);
        core.amf3_string(name)
    };
    let tail = |core: &mut CoreEncoder| {
        core.out.bytes(&[ARRAY, 1, EMPTY]); // no subtopics
        core.amf3_register(None);
        core.amf3_string(id)?;
        core.amf3_int(now_ms());
        core.amf3_int(0);
        core.amf3_null();
        Ok(())
    };
    let fast = head(&mut core).is_ok() && scalar(&mut core, body);
    if fast {
        // No traits written yet: the headers' empty dict has its traits inline.
        core.out.bytes(&[OBJECT, DYNAMIC_ANONYMOUS, EMPTY, EMPTY]);
        core.amf3_register(None);
        if tail(&mut core).is_ok() {
            let r = append(&core.out.buf);
            PUBLISH_KEPT.put(core);
            return r;
        }
    }
    PUBLISH_KEPT.put(core);
    let write = |e: &mut PyEncoder<'py>| {
        head(&mut e.enc)?;
        e.amf3(body)?;
        e.amf3(&PyDict::new(py))?; // no headers: an empty dict
        tail(&mut e.enc)
    };
    with_amf3(py, &PUBLISH_KEPT, write, append)
}

/// Write `body` if it is a str, a 64-bit int, a float, a bool or None (exact types) as
/// the Python encoder writes it; false, having written nothing, for anything else.
fn scalar(core: &mut CoreEncoder, body: &Bound<'_, PyAny>) -> bool {
    let p = body.as_ptr();
    // SAFETY: `p` is live (a Bound: the GIL is held); the type checks read its type only,
    // and each value is read as the type it was found to be.
    unsafe {
        let tp = ffi::Py_TYPE(p);
        if tp == &raw mut ffi::PyUnicode_Type {
            let mut size: ffi::Py_ssize_t = 0;
            let data = ffi::PyUnicode_AsUTF8AndSize(p, &mut size);
            if data.is_null() {
                ffi::PyErr_Clear(); // a lone surrogate: the Python encoder says so
                return false;
            }
            let text = std::slice::from_raw_parts(data.cast::<u8>(), size as usize);
            return core
                .amf3_string(std::str::from_utf8_unchecked(text))
                .is_ok();
        }
        if tp == &raw mut ffi::PyLong_Type {
            let mut overflow = 0;
            let v = ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow);
            if overflow != 0 || (v == -1 && !ffi::PyErr_Occurred().is_null()) {
                ffi::PyErr_Clear();
                return false;
            }
            core.amf3_int(v);
            return true;
        }
        if tp == &raw mut ffi::PyFloat_Type {
            core.amf3_double(ffi::PyFloat_AS_DOUBLE(p));
            return true;
        }
        if p == ffi::Py_None() {
            core.amf3_null();
            return true;
        }
        if tp == &raw mut ffi::PyBool_Type {
            core.amf3_bool(p == ffi::Py_True());
            return true;
        }
    }
    false
}

/// AMF3 markers and headers of the envelope: an array, an object; a dynamic anonymous
/// object's inline traits (no sealed members); the empty string (the end of an
/// associative part, or of a dynamic object's members).
const ARRAY: u8 = 0x09;
const OBJECT: u8 = 0x0a;
const DYNAMIC_ANONYMOUS: u8 = 0x0b;
const EMPTY: u8 = 0x01;
