//! The raw segment's ping-pong, for the handoff benchmark (`amfkit bench messaging --only
//! handoff`, the "shm segment" row): one record back and forth between two processes
//! through two logs, appended, waited for and read in Rust with no Python per message.
//! What it takes is the floor under the shm broker's round trip: the broker's own work
//! (the message record, the `Message`, the Python calls) is what the broker adds to it.

use std::time::{Duration, Instant};

use amfkit_core::shm::{LogSlot, Segment, Woken};
use pyo3::exceptions::{PyTimeoutError, PyValueError};
use pyo3::prelude::*;

use crate::shm::{to_py, ShmSegment};
use crate::shm_subscriber::OneRecord;

/// The default spin of a wait (`ShmSegment.wait`'s).
const SPIN: Duration = Duration::from_micros(50);

enum Failed {
    Store(amfkit_core::shm::Error),
    Timeout,
    Differs(u64),
}

/// The next record of `log` after `*cursor` into `buf` (its length), waiting up to
/// `timeout`.
fn next(
    seg: &Segment,
    log: &str,
    slot: &mut Option<LogSlot>,
    cursor: &mut u64,
    buf: &mut Vec<u8>,
    timeout: Duration,
) -> Result<usize, Failed> {
    let deadline = Instant::now() + timeout;
    let never = || false;
    loop {
        if let Some(s) = *slot {
            let mut sink = OneRecord { buf, len: None };
            let (c, _) = seg
                .read_at(s, log, *cursor, 1, &mut sink)
                .map_err(Failed::Store)?;
            let len = sink.len;
            *cursor = c;
            if let Some(len) = len {
                return Ok(len);
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Failed::Timeout);
        }
        match seg
            .wait_log(log, slot, *cursor, &never, Some(left), SPIN)
            .map_err(Failed::Store)?
        {
            Woken::Ready | Woken::Interrupted => {}
            Woken::TimedOut => return Err(Failed::Timeout),
        }
    }
}

fn raise(py: Python<'_>, f: Failed, timeout: f64) -> PyErr {
    match f {
        Failed::Store(e) => to_py(py, e),
        Failed::Timeout => PyTimeoutError::new_err(format!("no record within {timeout} s")),
        Failed::Differs(i) => PyValueError::new_err(format!(
            "round trip {i}: the record that came back differs from the one sent"
        )),
    }
}

/// A's side: `n` round trips of `record` (appended to `out`, the next record of `into`
/// after `cursor` awaited and compared with it); each round trip's nanoseconds, and the
/// cursor after the last. Without the GIL.
#[pyfunction]
#[pyo3(signature = (segment, out, into, cursor, record, n, timeout=10.0))]
#[allow(clippy::too_many_arguments)]
pub fn shm_ping(
    py: Python<'_>,
    segment: &Bound<'_, ShmSegment>,
    out: &str,
    into: &str,
    cursor: u64,
    record: Vec<u8>,
    n: usize,
    timeout: f64,
) -> PyResult<(Vec<u64>, u64)> {
    let seg = &segment.get().seg;
    let wait = Duration::try_from_secs_f64(timeout.max(0.0)).unwrap_or(Duration::from_secs(10));
    py.detach(|| {
        let mut cursor = cursor;
        let mut slot = seg.find(into).map_err(Failed::Store)?;
        let mut buf = Vec::with_capacity(record.len());
        let mut times = Vec::with_capacity(n);
        for i in 0..n {
            let t0 = Instant::now();
            seg.append(out, &record).map_err(Failed::Store)?;
            let len = next(seg, into, &mut slot, &mut cursor, &mut buf, wait)?;
            times.push(t0.elapsed().as_nanos() as u64);
            if buf[..len] != record[..] {
                return Err(Failed::Differs(i as u64));
            }
        }
        Ok((times, cursor))
    })
    .map_err(|f| raise(py, f, timeout))
}

/// B's side: every record of `into` after `cursor` appended to `out` as it comes, until
/// one equal to `stop` (not echoed); how many were echoed. Without the GIL.
#[pyfunction]
#[pyo3(signature = (segment, into, out, cursor, stop, timeout=10.0))]
pub fn shm_echo(
    py: Python<'_>,
    segment: &Bound<'_, ShmSegment>,
    into: &str,
    out: &str,
    cursor: u64,
    stop: Vec<u8>,
    timeout: f64,
) -> PyResult<u64> {
    let seg = &segment.get().seg;
    let wait = Duration::try_from_secs_f64(timeout.max(0.0)).unwrap_or(Duration::from_secs(10));
    py.detach(|| {
        let mut cursor = cursor;
        let mut slot = seg.find(into).map_err(Failed::Store)?;
        let mut buf = Vec::new();
        let mut count = 0;
        loop {
            let len = next(seg, into, &mut slot, &mut cursor, &mut buf, wait)?;
            if buf[..len] == stop[..] {
                return Ok(count);
            }
            seg.append(out, &buf[..len]).map_err(Failed::Store)?;
            count += 1;
        }
    })
    .map_err(|f| raise(py, f, timeout))
}
