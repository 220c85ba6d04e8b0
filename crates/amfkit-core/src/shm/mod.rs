//! Shared memory behind `shm://NAME`: named logs, a bell and a key-value table that every
//! process of a host maps from one file (`{directory}/amfkit.{name}`, `MAP_SHARED`).
//!
//! - [`Segment`] opens (or creates) a segment by name, and is the whole API: logs
//!   ([`Segment::append`], [`Segment::read`]), the bell ([`Segment::bell`],
//!   [`Segment::wait`]) and the table ([`Segment::get`], [`Segment::put`],
//!   [`Segment::cas`]...). Every method takes `&self`: a segment is shared by threads.
//! - The memory is trusted by nobody: every length and position read from it is checked
//!   before use, and garbage is an [`Error::Store`], never an out-of-bounds access.
//!
//! The layout (see `layout.rs`; the mapping itself is `map.rs`): a 4 KiB header (magic
//! `AMFKSHM1`, layout version, the layout parameters, the app tag, the bell, three locks'
//! worth of counters, a process table), a directory of logs, one ring per log (control
//! words, an index of `ring_records` positions, `ring_bytes` of records), then the
//! key-value table.
//!
//! This is the only module of amfkit-core with `unsafe` code (the mapping, atomics in
//! it, futex and other system calls); the codec has none.

#![allow(unsafe_code)]

use std::fmt;

mod futex;
mod hash;
mod kv;
mod layout;
mod lock;
mod map;
mod process;
mod ring;
mod segment;

pub use hash::hash64;
pub use ring::RecordSink;
pub use segment::{DebugRegions, LogSlot, Options, Segment, Stats, Woken};

/// What a segment operation failed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A bad argument: a name, a size, a key or log name too long (Python: ValueError).
    Invalid(String),
    /// The shared state refused: too large, full, corrupted, closed, another app's
    /// (Python: `amfkit.StoreError`).
    Store(String),
}

impl Error {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            Error::Invalid(m) | Error::Store(m) => m,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

/// A segment operation's result.
pub type Result<T> = std::result::Result<T, Error>;
