//! Decoder limits: safe by default, configurable, checked before anything is allocated.

/// Limits applied while decoding. Lengths and counts are also always checked against
/// the bytes left in the input, whatever these say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest nesting of containers (arrays, objects, vectors, dictionaries, AVM+
    /// switches). The deepest nesting in the 73 real .sol files of flash-lso's test corpus
    /// (repository ruffle-rs/rust-flash-lso, `flash-lso/tests/sol/`) is 9.
    pub max_depth: u32,
    /// Total complex values (objects, arrays, dates, byte arrays, ...) one decode may
    /// create, references excluded.
    pub max_objects: u64,
    /// Largest single string, XML text or ByteArray, in bytes.
    pub max_size: u64,
}

impl Limits {
    /// The hard ceiling on `max_depth`: deeper recursion could exhaust a thread's stack.
    pub const DEPTH_CEILING: u32 = 4096;

    pub const DEFAULT: Limits = Limits {
        max_depth: 128,
        max_objects: 10_000_000,
        max_size: 256 * 1024 * 1024,
    };

    /// No limits beyond the input's own size and the depth ceiling.
    pub const NONE: Limits = Limits {
        max_depth: Self::DEPTH_CEILING,
        max_objects: u64::MAX,
        max_size: u64::MAX,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
