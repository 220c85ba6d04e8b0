//! A shared broker's message record read into the `Message` users get, without Python
//! code: through the same decoder and limits as `amf3.decode`, after the checks a
//! subscription makes (expiry, subtopic, selector). The record's layout is in
//! `shm_record.rs`, which makes them.

use amfkit_core::{Decoder as CoreDecoder, Limits};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};
use std::ptr;

use crate::decode::PyVisitor;
use crate::errors::{decode_err, store_err};
use crate::shm_record::now_ms;

/// A subscription's subtopic: a pattern's tokens (`*` one token, a trailing `*` one or
/// more), or none (the subscription takes messages without a subtopic only).
pub struct Pattern {
    text: String,
    wildcard: bool,
}

impl Pattern {
    pub fn new(text: &str) -> Pattern {
        Pattern {
            text: text.to_owned(),
            wildcard: text.split('.').any(|t| t == "*"),
        }
    }

    /// Whether a message sent to `subtopic` matches (`subtopic.subtopic_matches`).
    pub fn matches(&self, subtopic: &str) -> bool {
        if !self.wildcard {
            return self.text == subtopic;
        }
        let want: Vec<&str> = self.text.split('.').collect();
        let have: Vec<&str> = subtopic.split('.').collect();
        let (n, m) = (want.len(), have.len());
        if m != n && (m < n || want[n - 1] != "*") {
            return false;
        }
        want.iter().zip(&have).all(|(w, h)| w == h || *w == "*")
    }
}

/// What a subscription lets through: its subtopic, and its selector's `matches(headers)`
/// (None: no selector, and nothing is called).
pub struct Filter {
    pub subtopic: Option<Pattern>,
    pub selector: Option<Py<PyAny>>,
}

const FIELDS: [&str; 8] = [
    "destination",
    "body",
    "headers",
    "subtopics",
    "message_id",
    "timestamp",
    "time_to_live",
    "correlation_id",
];

/// Builds `Message` objects (the frozen dataclass of `amfkit.messaging.broker`) from
/// records: made as `object.__new__(Message)` and its fields set as the dataclass's
/// `__init__` sets them (`object.__setattr__`), without running Python code.
pub struct MessageReader {
    cls: Py<PyType>,
    names: [Py<PyString>; 8],
    limits: Limits,
}

fn not_a_message(py: Python<'_>, why: impl std::fmt::Display) -> PyErr {
    store_err(py, format!("a log record is not a message: {why}"))
}

/// `int(obj)`: itself for an int, else Python's conversion (a float's whole part).
fn int_of<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `obj` is live (a Bound); PyLong_CheckExact only reads its type.
    if unsafe { ffi::PyLong_CheckExact(obj.as_ptr()) } != 0 {
        return Ok(obj.clone());
    }
    // SAFETY: as above; the result is a new reference or null with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(obj.py(), ffi::PyNumber_Long(obj.as_ptr())) }
}

impl MessageReader {
    pub fn new(cls: &Bound<'_, PyType>) -> MessageReader {
        let py = cls.py();
        MessageReader {
            cls: cls.clone().unbind(),
            names: FIELDS.map(|n| PyString::intern(py, n).unbind()),
            limits: Limits::DEFAULT,
        }
    }

    /// The message of `record` if the subscription takes it (None: filtered out, or
    /// expired: `now` is the clock, read once the first message with a time to live
    /// asks); StoreError for a record that is not a message.
    pub fn read<'py>(
        &self,
        py: Python<'py>,
        record: &[u8],
        filter: &Filter,
        now: &mut Option<i64>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut v = PyVisitor::new(py, false)?;
        let mut de = CoreDecoder::new(record, self.limits);
        let value = de.read_amf3(&mut v).and_then(|x| de.finish().map(|()| x));
        let value = match value {
            Ok(value) => value,
            Err(e) => {
                let err = decode_err(py, e.or_offset(de.position()), v.pending.take());
                return Err(not_a_message(py, err.value(py)));
            }
        };
        let fields = match value.cast::<PyList>() {
            Ok(list) if list.len() == 8 => list,
            _ => return Err(not_a_message(py, "not an array of 8 fields")),
        };
        let get = |i: usize| fields.get_item(i);
        let headers = get(2)?;
        let headers = if headers.is_instance_of::<PyDict>() {
            headers
        } else {
            PyDict::new(py).into_any()
        };
        let subtopics = get(3)?;
        let subtopics: Bound<'py, PyTuple> = match subtopics.cast::<PyList>() {
            Ok(list) => list.to_tuple(),
            Err(_) => match subtopics.cast_into::<PyTuple>() {
                Ok(tuple) => tuple,
                Err(_) => return Err(not_a_message(py, "its subtopics are not an array")),
            },
        };
        let timestamp = int_of(&get(5)?).map_err(|e| not_a_message(py, e.value(py)))?;
        let ttl = int_of(&get(6)?).map_err(|e| not_a_message(py, e.value(py)))?;
        if expired(&timestamp, &ttl, now)? {
            return Ok(None);
        }
        match &filter.subtopic {
            None if !subtopics.is_empty() => return Ok(None),
            Some(pattern) => {
                let hit = subtopics.iter().any(|s| match s.cast::<PyString>() {
                    Ok(s) => s.to_str().is_ok_and(|s| pattern.matches(s)),
                    Err(_) => false,
                });
                if !hit {
                    return Ok(None);
                }
            }
            None => {}
        }
        if let Some(selector) = &filter.selector {
            if !selector.bind(py).call1((&headers,))?.is_truthy()? {
                return Ok(None);
            }
        }
        let values = [
            get(0)?,
            get(1)?,
            headers,
            subtopics.into_any(),
            get(4)?,
            timestamp,
            ttl,
            get(7)?,
        ];
        self.build(py, &values).map(Some)
    }

    fn build<'py>(
        &self,
        py: Python<'py>,
        values: &[Bound<'py, PyAny>; 8],
    ) -> PyResult<Bound<'py, PyAny>> {
        let cls = self.cls.bind(py);
        let empty = PyTuple::empty(py);
        // SAFETY: `object.__new__(cls)` through object's own tp_new (what the dataclass's
        // instances are made with: it has no __new__ of its own), with an empty argument
        // tuple; the result is a new reference or null with an exception set.
        let obj = unsafe {
            let new = (*ptr::addr_of!(ffi::PyBaseObject_Type))
                .tp_new
                .expect("object has tp_new");
            Bound::from_owned_ptr_or_err(
                py,
                new(cls.as_type_ptr(), empty.as_ptr(), ptr::null_mut()),
            )?
        };
        for (name, value) in self.names.iter().zip(values) {
            // SAFETY: live objects (the GIL is held); object.__setattr__, which a frozen
            // dataclass's __init__ calls, bypassing the class's own __setattr__.
            let rc = unsafe {
                ffi::PyObject_GenericSetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr())
            };
            if rc < 0 {
                return Err(PyErr::fetch(py));
            }
        }
        Ok(obj)
    }
}

/// `Message.expired(now)`: a time to live that has passed.
fn expired(
    timestamp: &Bound<'_, PyAny>,
    ttl: &Bound<'_, PyAny>,
    now: &mut Option<i64>,
) -> PyResult<bool> {
    if let (Ok(ts), Ok(ttl)) = (timestamp.extract::<i64>(), ttl.extract::<i64>()) {
        if ttl <= 0 {
            return Ok(false);
        }
        let now = *now.get_or_insert_with(now_ms);
        return Ok((i128::from(ts) + i128::from(ttl)) < i128::from(now));
    }
    // Beyond 64 bits (a hostile record): Python's integers.
    Ok(ttl.gt(0)? && timestamp.add(ttl)?.lt(*now.get_or_insert_with(now_ms))?)
}
