//! amfkit-core: a complete AMF0/AMF3 reader and writer, with no Python in it.
//!
//! - [`Decoder`] reads values and hands them to a [`Visitor`] (one method per marker
//!   family); reference tables, limits and bounds checks live in the reader.
//! - [`Encoder`] holds the output and the reference tables; a data model walks its own
//!   values and calls the per-version writer methods (`amf0_*`, `amf3_*`).
//! - [`Value`] is a ready-made data model for Rust users and tools.
//!
//! ```
//! use amfkit_core::Value;
//! let bytes = Value::Array { assoc: vec![], dense: vec![Value::Integer(1), Value::String("x".into())] }
//!     .to_amf3()
//!     .unwrap();
//! assert_eq!(bytes, b"\x09\x05\x01\x04\x01\x06\x03x");
//! assert!(matches!(Value::from_amf3(&bytes).unwrap(), Value::Array { .. }));
//! ```

// The codec has no unsafe code; only the shared-memory module (`shm`: the mapping, atomics
// in it, futex and other system calls) allows it, with a SAFETY comment on every block.
#![deny(unsafe_code)]
#![warn(missing_debug_implementations)]

pub mod amf0;
pub mod amf3;
pub mod date;
pub mod decoder;
pub mod error;
pub mod flex;
pub mod lenient;
pub mod limits;
pub mod packet;
pub mod read;
#[cfg(target_os = "linux")]
pub mod shm;
pub mod sol;
mod strings;
pub mod value;
pub mod visit;
pub mod write;

pub use decoder::Decoder;
pub use error::{Error, ErrorKind, PathSegment, Result};
pub use lenient::{BodyAs, Lenient};
pub use limits::Limits;
pub use read::Bytes;
pub use value::{ExternalBody, FlagLevel, Traits, Value, ValueVisitor};
pub use visit::{ArrayKind, NumberVectorKind, TraitsDef, Visitor, XmlKind};
pub use write::{Encoder, Output};
