//! A lock in shared memory: a u32 holding the owner's pid (0: free), a count of
//! sleepers and a generation count (one more per acquisition), 16 bytes in all.
//!
//! Uncontended, acquiring is one compare-and-swap and releasing one more plus a load:
//! no system call. Contended: a short spin, then futex sleeps of a few milliseconds. An
//! owner that died (kill(2) says ESRCH, /proc says zombie, or its start time is not the
//! one the process table holds for that pid: a reused pid) is replaced by a
//! compare-and-swap; a live owner that holds the lock for 2 s without releasing it is
//! reported (stuck, or garbage that happens to be a live pid), never waited on forever.

use std::hint;
use std::sync::atomic::{AtomicU32, Ordering::*};
use std::time::{Duration, Instant};

use super::futex;
use super::layout::LOCK_BYTES;
use super::map::Map;
use super::process;

// The three words below (owner, waiters, generation) fit in a lock's place.
const _: () = assert!(3 * 4 <= LOCK_BYTES);

const SPINS: u32 = 100;
/// A lock held this long is unusual: check whether its owner is alive.
const CHECK_EVERY: Duration = Duration::from_millis(1);
const NAP: Duration = Duration::from_millis(2);
/// A lock held this long by a live owner without a release is stuck.
pub(crate) const STUCK: Duration = Duration::from_secs(2);

pub(crate) struct Lock<'a> {
    owner: &'a AtomicU32,
    waiters: &'a AtomicU32,
    generation: &'a AtomicU32,
}

/// How a lock was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taken {
    Clean,
    /// From a dead owner (its pid): what it protects may be half-written.
    Recovered(u32),
}

impl<'a> Lock<'a> {
    #[inline]
    pub fn at(map: &'a Map, off: usize) -> Lock<'a> {
        Lock {
            owner: map.u32(off),
            waiters: map.u32(off + 4),
            generation: map.u32(off + 8),
        }
    }

    #[inline]
    pub fn try_acquire(&self, me: u32) -> bool {
        if self.owner.compare_exchange(0, me, Acquire, Relaxed).is_ok() {
            self.generation
                .store(self.generation.load(Relaxed).wrapping_add(1), Relaxed);
            return true;
        }
        false
    }

    /// Take the lock. `start_of(pid)` is the start time the process table holds for a
    /// pid (None: not registered); Err(pid) when a live owner has it stuck.
    pub fn acquire(&self, me: u32, start_of: &dyn Fn(u32) -> Option<u64>) -> Result<Taken, u32> {
        if self.try_acquire(me) {
            return Ok(Taken::Clean);
        }
        for _ in 0..SPINS {
            hint::spin_loop();
            if self.owner.load(Relaxed) == 0 && self.try_acquire(me) {
                return Ok(Taken::Clean);
            }
        }
        let mut seen = (u32::MAX, u32::MAX);
        let mut since = Instant::now();
        let mut checked = since;
        loop {
            let v = self.owner.load(Relaxed);
            if v == 0 {
                if self.try_acquire(me) {
                    return Ok(Taken::Clean);
                }
                continue;
            }
            let g = self.generation.load(Relaxed);
            let now = Instant::now();
            if (v, g) != seen {
                seen = (v, g);
                since = now;
                checked = now;
            }
            let garbage = v > process::PID_MAX;
            if garbage || now.duration_since(checked) >= CHECK_EVERY {
                checked = now;
                if !process::alive(v, start_of(v).unwrap_or(0)) {
                    if self.owner.compare_exchange(v, me, Acquire, Relaxed).is_ok() {
                        self.generation.store(g.wrapping_add(1), Relaxed);
                        return Ok(Taken::Recovered(v));
                    }
                    continue;
                }
            }
            if now.duration_since(since) >= STUCK {
                return Err(v);
            }
            self.waiters.fetch_add(1, SeqCst);
            if self.owner.load(SeqCst) == v {
                futex::wait(self.owner, v, Some(NAP));
            }
            self.waiters.fetch_sub(1, SeqCst);
        }
    }

    #[inline]
    pub fn release(&self, me: u32) {
        // A failed exchange: someone took the lock over (it thought us dead): leave it.
        let _ = self.owner.compare_exchange(me, 0, SeqCst, Relaxed);
        if self.waiters.load(SeqCst) != 0 {
            futex::wake(self.owner, 1);
        }
    }

    /// The owner's pid (0: free).
    pub fn owner(&self) -> u32 {
        self.owner.load(Relaxed)
    }
}
