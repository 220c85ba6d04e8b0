//! `ShmSubscriber`: a subscription of one process to one destination of a shared-memory
//! broker (`shm://`), in Rust: its cursor in the destination's log, a wait on that log
//! (spinning on its head, then asleep on the segment's bell), and each record read,
//! filtered and decoded into a `Message` without Python code (a selector, when there is
//! one, is the only Python called). `amfkit.messaging.shm_subscriber` adds the Python
//! half of the `Subscriber` interface (`areceive`, iteration).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Mutex, TryLockError};
use std::time::{Duration, Instant};

use amfkit_core::shm::{LogSlot, RecordSink, Segment, Woken};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};

use crate::shm::{to_py, ShmSegment};
use crate::shm_message::{Filter, MessageReader, Pattern};

/// One record, copied into a buffer kept between reads.
pub struct OneRecord<'a> {
    pub buf: &'a mut Vec<u8>,
    pub len: Option<usize>,
}

impl RecordSink for OneRecord<'_> {
    fn record(&mut self, _seq: u64, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        fill(&mut self.buf[..len]);
        self.len = Some(len);
        true
    }

    fn discard(&mut self) {
        self.len = None;
    }
}

/// What one receiver at a time uses.
struct Reading {
    slot: Option<LogSlot>,
    buf: Vec<u8>,
}

/// Seconds a waiting `receive` sleeps at most before it looks again (a closed segment).
const NAP: Duration = Duration::from_secs(1);

/// The messages of one destination's log for this process, oldest first, from the
/// newest at the time it is made. Use from one thread at a time.
#[pyclass(module = "amfkit", name = "ShmSubscriber", subclass, frozen)]
pub struct ShmSubscriber {
    segment: Py<ShmSegment>,
    log: String,
    destination: Py<PyString>,
    reader: MessageReader,
    filter: Filter,
    spin: Duration,
    cursor: AtomicU64,
    dropped: AtomicU64,
    closed: AtomicBool,
    reading: Mutex<Reading>,
}

impl ShmSubscriber {
    fn seg<'a>(&'a self, py: Python<'a>) -> &'a Segment {
        &self.segment.bind(py).get().seg
    }

    /// The next message already in the log, if any: records read one at a time from
    /// the cursor (which passes each, whatever becomes of it), the lost counted.
    fn next<'py>(&self, py: Python<'py>, r: &mut Reading) -> PyResult<Option<Bound<'py, PyAny>>> {
        let seg = self.seg(py);
        let mut now = None;
        loop {
            let slot = match r.slot {
                Some(slot) => slot,
                None => match seg.find(&self.log).map_err(|e| to_py(py, e))? {
                    Some(slot) => *r.slot.insert(slot),
                    None => return Ok(None),
                },
            };
            let cursor = self.cursor.load(Relaxed);
            let mut sink = OneRecord {
                buf: &mut r.buf,
                len: None,
            };
            let (next, lost) = seg
                .read_at(slot, &self.log, cursor, 1, &mut sink)
                .map_err(|e| to_py(py, e))?;
            let len = sink.len;
            self.cursor.store(next, Release);
            if lost > 0 {
                self.dropped.fetch_add(lost, Relaxed);
            }
            let Some(len) = len else {
                return Ok(None);
            };
            if let Some(message) = self
                .reader
                .read(py, &r.buf[..len], &self.filter, &mut now)?
            {
                return Ok(Some(message));
            }
        }
    }

    /// Wait (without the GIL) until the log has a record after `cursor`, this
    /// subscriber is closed, or `left` passes (None: no limit).
    fn wait_log(
        &self,
        py: Python<'_>,
        slot: &mut Option<LogSlot>,
        left: Option<Duration>,
    ) -> PyResult<Woken> {
        let seg = self.seg(py);
        let cursor = self.cursor.load(Acquire);
        let closed = &self.closed;
        let stop = || closed.load(Relaxed);
        py.detach(|| seg.wait_log(&self.log, slot, cursor, &stop, left, self.spin))
            .map_err(|e| to_py(py, e))
    }
}

fn seconds(what: &str, t: f64) -> PyResult<Option<Duration>> {
    if t.is_nan() {
        return Err(PyValueError::new_err(format!(
            "{what} is a number of seconds, not NaN"
        )));
    }
    // Too large to represent (inf included): no limit.
    Ok(Duration::try_from_secs_f64(t.max(0.0)).ok())
}

#[pymethods]
impl ShmSubscriber {
    /// A subscription to `destination` through the log `log` of `segment`: messages with
    /// a subtopic matching `subtopic` (None: messages without one) for which `selector`
    /// (a callable of the headers; None: every message) is true, made as instances of
    /// `message_type`. Waits spin `spin` seconds before they sleep.
    #[new]
    #[pyo3(signature = (segment, log, destination, message_type, subtopic=None, selector=None, spin=5e-05))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        segment: Py<ShmSegment>,
        log: String,
        destination: Py<PyString>,
        message_type: &Bound<'_, PyType>,
        subtopic: Option<&str>,
        selector: Option<Py<PyAny>>,
        spin: f64,
    ) -> PyResult<Self> {
        let spin = seconds("spin", spin)?
            .unwrap_or(Duration::ZERO)
            .min(Duration::from_secs(1));
        let (cursor, slot) = {
            let seg = &segment.bind(py).get().seg;
            let slot = seg.find(&log).map_err(|e| to_py(py, e))?;
            let head = match slot {
                Some(s) => seg.head_at(s).map_err(|e| to_py(py, e))?,
                None => 0,
            };
            (head, slot)
        };
        Ok(ShmSubscriber {
            segment,
            log,
            destination,
            reader: MessageReader::new(message_type),
            filter: Filter {
                subtopic: subtopic.map(Pattern::new),
                selector,
            },
            spin,
            cursor: AtomicU64::new(cursor),
            dropped: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            reading: Mutex::new(Reading {
                slot,
                buf: Vec::new(),
            }),
        })
    }

    /// The next message, waiting up to `timeout` seconds (None: until one comes); None
    /// when none came, or once closed. Releases the GIL while it waits.
    #[pyo3(signature = (timeout=None))]
    fn receive<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.closed.load(Relaxed) {
            return Ok(None);
        }
        let mut r = match self.reading.try_lock() {
            Ok(r) => r,
            // A panic while reading left nothing half-done that matters (a cursor, a buffer).
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(PyRuntimeError::new_err(
                    "this Subscriber is receiving in another thread (use one from one thread at a time)",
                ))
            }
        };
        if let Some(message) = self.next(py, &mut r)? {
            return Ok(Some(message));
        }
        let deadline = match timeout {
            None => None,
            Some(t) => match seconds("timeout", t)? {
                Some(d) => Instant::now().checked_add(d),
                None => None,
            },
        };
        loop {
            let left = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    Some(left.min(NAP))
                }
                None => Some(NAP),
            };
            let woken = self.wait_log(py, &mut r.slot, left)?;
            if self.closed.load(Relaxed) {
                return Ok(None);
            }
            if woken == Woken::Interrupted {
                py.check_signals()?;
            }
            if let Some(message) = self.next(py, &mut r)? {
                return Ok(Some(message));
            }
        }
    }

    /// Wait up to `timeout` seconds for the log to hold a record this subscriber has not
    /// read (not necessarily one it takes); whether it does. Releases the GIL (for an
    /// event loop's thread: `areceive`).
    fn wait(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let left = seconds("timeout", timeout)?;
        let mut slot = None;
        let woken = self.wait_log(py, &mut slot, left)?;
        Ok(woken == Woken::Ready && !self.closed.load(Relaxed))
    }

    /// Stop receiving: a `receive` waiting in another thread returns None. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if !self.closed.swap(true, Relaxed) {
            // A closed segment has no sleepers left to wake.
            let _ = self.seg(py).nudge();
        }
        Ok(())
    }

    #[getter]
    fn destination(&self, py: Python<'_>) -> Py<PyString> {
        self.destination.clone_ref(py)
    }

    /// Messages lost by falling behind (the log wrapped past them).
    #[getter]
    fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }

    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Relaxed)
    }

    /// The sequence number of the last record read in the log.
    #[getter]
    fn cursor(&self) -> u64 {
        self.cursor.load(Relaxed)
    }
}
