//! Errors: a small kind, the byte offset where it happened, and the path to the value.
//!
//! The text is rendered only when shown. Messages are lowercase fragments naming what
//! was expected and what was found, ending with where:
//! `string length 268435455 exceeds the 10 bytes left, at byte 41 ($.body[0])`.

use std::fmt;

/// What went wrong.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input ended while `needed` more bytes were expected.
    UnexpectedEof { needed: usize },
    /// A declared length or count is larger than the input left could hold.
    LengthExceedsInput {
        what: &'static str,
        declared: u64,
        left: usize,
    },
    /// A marker that no AMF version defines.
    UnknownMarker { version: u8, marker: u8 },
    /// A marker the specification reserves but no peer writes (AMF0 movieclip, recordset).
    ReservedMarker { marker: u8, name: &'static str },
    /// A reference to an entry its table does not (yet) have.
    BadReference {
        table: &'static str,
        index: u32,
        len: usize,
    },
    /// Nesting deeper than the limit.
    DepthLimit { limit: u32 },
    /// More complex values than the limit.
    ObjectLimit { limit: u64 },
    /// A string, XML or ByteArray larger than the limit.
    SizeLimit {
        what: &'static str,
        size: u64,
        limit: u64,
    },
    /// Bytes that are not UTF-8 where text is required.
    InvalidUtf8,
    /// Input left over after a single value.
    TrailingBytes { count: usize },
    /// A value the encoder cannot write (kind of value and why).
    Unencodable(Box<str>),
    /// An externalizable class whose body this reader cannot read.
    UnknownExternalizable(Box<str>),
    /// Anything else a data model reports (its own message).
    Custom(Box<str>),
}

/// One step of the path from the top-level value to the failing one.
#[derive(Debug, Clone, PartialEq)]
pub enum PathSegment {
    Index(usize),
    Key(Box<str>),
    /// A top-level value of a stream, or a part of a packet (`headers[0]`, `bodies[1]`).
    Named(&'static str, usize),
}

/// An AMF read or write error.
#[derive(Clone, PartialEq)]
pub struct Error(Box<Inner>);

#[derive(Clone, PartialEq)]
struct Inner {
    kind: ErrorKind,
    offset: usize,
    /// Innermost segment first (pushed while the error travels up the stack).
    path: Vec<PathSegment>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    #[cold]
    pub fn new(kind: ErrorKind, offset: usize) -> Self {
        Error(Box::new(Inner {
            kind,
            offset,
            path: Vec::new(),
        }))
    }

    #[cold]
    pub fn custom(message: impl Into<Box<str>>, offset: usize) -> Self {
        Self::new(ErrorKind::Custom(message.into()), offset)
    }

    /// The offset a data model uses when it cannot know where the reader is; the
    /// reader's caller replaces it with [`Error::or_offset`].
    pub const UNKNOWN_OFFSET: usize = usize::MAX;

    /// Set the offset if it is [`Error::UNKNOWN_OFFSET`].
    pub fn or_offset(mut self, offset: usize) -> Self {
        if self.0.offset == Self::UNKNOWN_OFFSET {
            self.0.offset = offset;
        }
        self
    }

    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// Byte offset in the input (decoding) or in the output (encoding).
    pub fn offset(&self) -> usize {
        self.0.offset
    }

    /// Prepend a path segment (called by containers as the error passes through them).
    #[cold]
    pub fn within(mut self, segment: PathSegment) -> Self {
        self.0.path.push(segment);
        self
    }

    /// The path as `$.items[3].owner`.
    pub fn path(&self) -> String {
        let mut out = String::from("$");
        for seg in self.0.path.iter().rev() {
            match seg {
                PathSegment::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
                PathSegment::Key(k) => {
                    if is_identifier(k) {
                        out.push('.');
                        out.push_str(k);
                    } else {
                        out.push('[');
                        out.push_str(&format!("{:?}", &**k));
                        out.push(']');
                    }
                }
                PathSegment::Named(name, i) => {
                    out.push('.');
                    out.push_str(name);
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }

    /// The reason alone, without offset or path.
    pub fn reason(&self) -> String {
        use ErrorKind::*;
        match &self.0.kind {
            UnexpectedEof { needed } => {
                format!(
                    "unexpected end of input, {needed} more byte{} expected",
                    plural(*needed)
                )
            }
            LengthExceedsInput {
                what,
                declared,
                left,
            } => {
                format!(
                    "{what} {declared} exceeds the {left} byte{} left",
                    plural(*left)
                )
            }
            UnknownMarker { version, marker } => {
                format!("unknown amf{version} marker 0x{marker:02x}")
            }
            ReservedMarker { marker, name } => {
                format!("reserved amf0 marker 0x{marker:02x} ({name}) is not supported")
            }
            BadReference { table, index, len } => {
                format!("{table} reference {index} is out of range (the table has {len})")
            }
            DepthLimit { limit } => format!("nesting deeper than the limit of {limit}"),
            ObjectLimit { limit } => format!("more than the limit of {limit} objects"),
            SizeLimit { what, size, limit } => {
                format!("{what} of {size} bytes exceeds the limit of {limit}")
            }
            InvalidUtf8 => "invalid utf-8 in string".to_owned(),
            TrailingBytes { count } => {
                format!("{count} trailing byte{} after the value", plural(*count))
            }
            Unencodable(m) | Custom(m) => m.to_string(),
            UnknownExternalizable(name) => {
                format!("externalizable class {name:?} is not registered, its body cannot be read")
            }
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, at byte {}", self.reason(), self.0.offset)?;
        if !self.0.path.is_empty() {
            write!(f, " ({})", self.path())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({:?}, {self})", self.0.kind)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_reason_offset_and_path() {
        let e = Error::new(
            ErrorKind::LengthExceedsInput {
                what: "string length",
                declared: 268435455,
                left: 10,
            },
            41,
        )
        .within(PathSegment::Index(0))
        .within(PathSegment::Key("body".into()));
        assert_eq!(
            e.to_string(),
            "string length 268435455 exceeds the 10 bytes left, at byte 41 ($.body[0])"
        );
    }

    #[test]
    fn odd_keys_are_quoted() {
        let e = Error::custom("x", 0).within(PathSegment::Key("a b".into()));
        assert_eq!(e.path(), "$[\"a b\"]");
    }
}
