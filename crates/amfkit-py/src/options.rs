//! What the entry points take besides the data: the AMF version of top-level values,
//! the decoder options and the limits' defaults, checked once per call or per codec.

use amfkit_core::Limits;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Which AMF version top-level values are read or written as.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Amf0,
    Amf3,
}

/// Decoder options, resolved once.
#[derive(Clone, Copy)]
pub struct Options {
    pub limits: Limits,
    pub tz_aware: bool,
}

// The Python signatures spell the default limits out (so that they show in help()); they
// must stay the core's defaults, which the module also exports as DEFAULT_MAX_DEPTH,
// DEFAULT_MAX_OBJECTS and DEFAULT_MAX_SIZE (tests/codec/test_limits.py compares the two).
const _: () = assert!(
    Limits::DEFAULT.max_depth == 128
        && Limits::DEFAULT.max_objects == 10_000_000
        && Limits::DEFAULT.max_size == 268_435_456
);

/// `max_depth` (of a decoder or an encoder) within 1 and the core's ceiling.
pub fn check_depth(max_depth: u32) -> PyResult<()> {
    if max_depth == 0 || max_depth > Limits::DEPTH_CEILING {
        return Err(PyValueError::new_err(format!(
            "max_depth must be between 1 and {}",
            Limits::DEPTH_CEILING
        )));
    }
    Ok(())
}

/// The decoder options of one call or one `Decoder`.
pub fn options(
    max_depth: u32,
    max_objects: u64,
    max_size: u64,
    tz_aware: bool,
) -> PyResult<Options> {
    check_depth(max_depth)?;
    Ok(Options {
        limits: Limits {
            max_depth,
            max_objects,
            max_size,
        },
        tz_aware,
    })
}
