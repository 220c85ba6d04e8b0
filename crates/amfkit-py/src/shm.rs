//! `ShmSegment`: amfkit-core's shared-memory segment (`shm://NAME`) as the `LogStore`
//! protocol of `amfkit.messaging.logstore`.
//!
//! The hot calls are single cheap calls: `append` first tries without waiting, holding
//! the GIL (one compare-and-swap), and releases the GIL only when the log's lock is
//! taken or the log must be made; `read` is lock-free and builds the Python objects as it
//! copies; `wait` checks the bell, then releases the GIL for its spin and sleep. Table
//! operations and open/close release the GIL throughout (they may wait for a lock).

use std::path::Path;
use std::time::Duration;

use amfkit_core::shm::{Error, Options, RecordSink, Segment};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::errors::store_err;

pub(crate) fn to_py(py: Python<'_>, e: Error) -> PyErr {
    match e {
        Error::Invalid(m) => PyValueError::new_err(m),
        Error::Store(m) => store_err(py, m),
    }
}

fn size(what: &str, v: i64) -> PyResult<u64> {
    u64::try_from(v)
        .map_err(|_| PyValueError::new_err(format!("{what} must not be negative, not {v}")))
}

/// Records into a Python list of (seq, bytes), copied straight into the bytes objects.
struct Sink<'py> {
    py: Python<'py>,
    list: Bound<'py, PyList>,
    pending: Option<(u64, Bound<'py, PyBytes>)>,
    error: Option<PyErr>,
}

impl Sink<'_> {
    fn commit(&mut self) -> PyResult<()> {
        if let Some(item) = self.pending.take() {
            self.list.append(item)?;
        }
        Ok(())
    }
}

impl RecordSink for Sink<'_> {
    fn record(&mut self, seq: u64, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let made = self.commit().and_then(|()| {
            PyBytes::new_with(self.py, len, |buf| {
                fill(buf);
                Ok(())
            })
        });
        match made {
            Ok(bytes) => {
                self.pending = Some((seq, bytes));
                true
            }
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    fn discard(&mut self) {
        self.pending = None;
    }
}

/// Named logs, a bell and a key-value table in shared memory, shared by the processes
/// of a host (`{directory}/amfkit.{name}`).
#[pyclass(module = "amfkit", name = "ShmSegment", frozen)]
pub struct ShmSegment {
    pub(crate) seg: Segment,
}

#[pymethods]
impl ShmSegment {
    #[new]
    #[pyo3(signature = (name, *, directory="/dev/shm", app="", ring_bytes=1048576, ring_records=8192, max_logs=64, kv_slots=16384, kv_value_bytes=8192))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &str,
        directory: &str,
        app: &str,
        ring_bytes: i64,
        ring_records: i64,
        max_logs: i64,
        kv_slots: i64,
        kv_value_bytes: i64,
    ) -> PyResult<Self> {
        let opts = Options {
            directory: directory.into(),
            app: app.to_owned(),
            ring_bytes: size("ring_bytes", ring_bytes)?,
            ring_records: size("ring_records", ring_records)?,
            max_logs: size("max_logs", max_logs)?,
            kv_slots: size("kv_slots", kv_slots)?,
            kv_value_bytes: size("kv_value_bytes", kv_value_bytes)?,
        };
        let seg = py
            .detach(|| Segment::open(name, &opts))
            .map_err(|e| to_py(py, e))?;
        Ok(ShmSegment { seg })
    }

    #[getter]
    fn name(&self) -> &str {
        self.seg.name()
    }

    #[getter]
    fn path(&self) -> String {
        self.seg.path().to_string_lossy().into_owned()
    }

    /// Add `record` to `log` (made on first use) and ring the bell; its sequence number.
    fn append(&self, py: Python<'_>, log: &str, record: &[u8]) -> PyResult<u64> {
        match self.seg.try_append(log, record) {
            Ok(Some(seq)) => Ok(seq),
            Ok(None) => py
                .detach(|| self.seg.append(log, record))
                .map_err(|e| to_py(py, e)),
            Err(e) => Err(to_py(py, e)),
        }
    }

    /// The sequence number of the newest record of `log` (0: none yet).
    fn head(&self, py: Python<'_>, log: &str) -> PyResult<u64> {
        self.seg.head(log).map_err(|e| to_py(py, e))
    }

    /// Up to `limit` records after `cursor`: ([(seq, record)...], next cursor, lost).
    #[pyo3(signature = (log, cursor, limit=1024))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        log: &str,
        cursor: i64,
        limit: i64,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let cursor = size("cursor", cursor)?;
        let limit = usize::try_from(size("limit", limit)?).unwrap_or(usize::MAX);
        let mut sink = Sink {
            py,
            list: PyList::empty(py),
            pending: None,
            error: None,
        };
        let result = self.seg.read(log, cursor, limit, &mut sink);
        if let Some(e) = sink.error.take() {
            return Err(e);
        }
        let (cursor, lost) = result.map_err(|e| to_py(py, e))?;
        sink.commit()?;
        (sink.list, cursor, lost).into_pyobject(py)
    }

    /// The names of the logs that exist.
    fn logs(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.seg.logs().map_err(|e| to_py(py, e))
    }

    /// The bell's count (one more at least per append; it wraps at 2**32).
    fn bell(&self, py: Python<'_>) -> PyResult<u32> {
        self.seg.bell().map_err(|e| to_py(py, e))
    }

    /// Block until the bell's count differs from `bell` or `timeout` seconds pass
    /// (spinning `spin` seconds first, then asleep); the count then. Releases the GIL.
    #[pyo3(signature = (bell, timeout, spin=5e-05))]
    fn wait(&self, py: Python<'_>, bell: u32, timeout: f64, spin: f64) -> PyResult<u32> {
        if timeout.is_nan() || spin.is_nan() {
            return Err(PyValueError::new_err(
                "timeout and spin are numbers of seconds, not NaN",
            ));
        }
        let current = self.seg.bell().map_err(|e| to_py(py, e))?;
        if current != bell {
            return Ok(current);
        }
        // Too large to represent (inf included): no limit.
        let timeout = Duration::try_from_secs_f64(timeout.max(0.0)).ok();
        let spin = Duration::from_secs_f64(spin.clamp(0.0, 1.0));
        py.detach(|| self.seg.wait(bell, timeout, spin))
            .map_err(|e| to_py(py, e))
    }

    /// The value under `key`; None when absent.
    fn get<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let value = py.detach(|| self.seg.get(key)).map_err(|e| to_py(py, e))?;
        Ok(value.map(|v| PyBytes::new(py, &v)))
    }

    /// Set `key` (`ttl` is accepted and ignored: callers keep expiry in values).
    #[pyo3(signature = (key, value, ttl=None))]
    fn put(&self, py: Python<'_>, key: &str, value: &[u8], ttl: Option<f64>) -> PyResult<()> {
        let _ = ttl;
        py.detach(|| self.seg.put(key, value))
            .map_err(|e| to_py(py, e))
    }

    /// Set `key` to `value` (None: delete it) only if it holds `expected` (None: absent);
    /// whether it did.
    #[pyo3(signature = (key, expected, value, ttl=None))]
    fn cas(
        &self,
        py: Python<'_>,
        key: &str,
        expected: Option<&[u8]>,
        value: Option<&[u8]>,
        ttl: Option<f64>,
    ) -> PyResult<bool> {
        let _ = ttl;
        py.detach(|| self.seg.cas(key, expected, value))
            .map_err(|e| to_py(py, e))
    }

    /// Remove `key`; whether it was there.
    fn delete(&self, py: Python<'_>, key: &str) -> PyResult<bool> {
        py.detach(|| self.seg.delete(key)).map_err(|e| to_py(py, e))
    }

    /// The keys starting with `prefix`, in no particular order.
    #[pyo3(signature = (prefix=""))]
    fn keys(&self, py: Python<'_>, prefix: &str) -> PyResult<Vec<String>> {
        py.detach(|| self.seg.keys(prefix))
            .map_err(|e| to_py(py, e))
    }

    /// Figures: logs, records (held), appended, kv_used, kv_slots, processes, bell,
    /// waiters, recoveries, and the layout parameters.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.seg.stats().map_err(|e| to_py(py, e))?;
        let d = PyDict::new(py);
        for (k, v) in [
            ("logs", s.logs),
            ("records", s.records),
            ("appended", s.appended),
            ("kv_used", s.kv_used),
            ("kv_slots", s.kv_slots),
            ("processes", s.processes),
            ("bell", s.bell),
            ("waiters", s.waiters),
            ("recoveries", s.recoveries),
            ("ring_bytes", s.ring_bytes),
            ("ring_records", s.ring_records),
            ("max_logs", s.max_logs),
            ("kv_value_bytes", s.kv_value_bytes),
            ("size", s.size),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Let go (the last process out removes the file). Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.seg.close()).map_err(|e| to_py(py, e))
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> PyResult<()> {
        let _ = exc;
        self.close(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "<ShmSegment {:?} at {}{}>",
            self.seg.name(),
            self.seg.path().display(),
            if self.seg.is_closed() { ", closed" } else { "" }
        )
    }

    /// Remove the segment `name` if no live process uses it; whether it did.
    #[staticmethod]
    #[pyo3(signature = (name, directory="/dev/shm"))]
    fn remove_stale(py: Python<'_>, name: &str, directory: &str) -> PyResult<bool> {
        py.detach(|| Segment::remove_stale(name, Path::new(directory)))
            .map_err(|e| to_py(py, e))
    }
}
