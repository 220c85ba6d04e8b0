//! Errors: a small kind, the byte offset where it happened, and the path to the value.
//!
//! The text is rendered only when shown. Messages are lowercase fragments naming what
//! was expected and what was found, ending with where:
//! `string length 268435455 exceeds the 10 bytes left, at byte 41 ($.body[0])`.
//!
//! An error's text is bounded whatever the input: a name from the input (a member name,
//! a class alias) keeps at most [`MAX_SHOWN`] characters, a message at most
//! [`MAX_MESSAGE`], and a path at most [`MAX_PATH_SHOWN`] segments (the outermost and
//! innermost halves, with the number left out between them). AMF3 string references
//! make a long name cheap to repeat at every level, so an unbounded path could grow to
//! the square of the input's size.

use std::borrow::Cow;
use std::fmt;

/// Characters of one input text (a member name, a class alias) kept in an error.
pub const MAX_SHOWN: usize = 64;
/// Characters of a message kept in an error (a data model's own text).
pub const MAX_MESSAGE: usize = 1024;
/// Path segments kept: the outermost and the innermost half.
pub const MAX_PATH_SHOWN: usize = 16;

/// `text` cut to `limit` characters, with `…` where it was cut.
pub fn clip(text: &str, limit: usize) -> Cow<'_, str> {
    match text.char_indices().nth(limit) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!("{}…", &text[..cut])),
    }
}

/// An input text for a message: quoted and cut to [`MAX_SHOWN`] characters.
pub fn shown(text: &str) -> String {
    format!("{:?}", clip(text, MAX_SHOWN))
}

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
    /// The AMF0 object-end marker (0x09) where a value is expected.
    ObjectEndOutsideObject,
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
    /// A remoting packet version other than 0, 1 and 3.
    UnknownPacketVersion { version: u16 },
    /// A .sol file that does not start with the magic `00 bf`.
    SolMagic { found: [u8; 2] },
    /// A .sol file without the signature "TCSO" after its length field.
    SolSignature { found: [u8; 4] },
    /// A .sol AMF version other than 0 and 3.
    UnknownSolVersion { version: u32 },
    /// A .sol padding byte after a member that is not 0x00.
    SolPadding { byte: u8 },
    /// A value the encoder cannot write (kind of value and why).
    Unencodable(Box<str>),
    /// An externalizable class whose body this reader cannot read.
    UnknownExternalizable(Box<str>),
    /// The values around an opaque externalizable body (lenient reading, which took the
    /// rest of the input from byte `at`) need more bytes: the body did not end the input.
    AfterOpaque { at: usize },
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

impl PathSegment {
    /// A member name from the input, cut to [`MAX_SHOWN`] characters.
    pub fn key(name: &str) -> Self {
        PathSegment::Key(clip(name, MAX_SHOWN).into())
    }
}

/// An AMF read or write error.
#[derive(Clone, PartialEq)]
pub struct Error(Box<Inner>);

#[derive(Clone, PartialEq)]
struct Inner {
    kind: ErrorKind,
    offset: usize,
    /// Innermost segment first (pushed while the error travels up the stack): at most
    /// [`MAX_PATH_SHOWN`], the innermost half then the outermost half.
    path: Vec<PathSegment>,
    /// Segments left out between the two halves.
    elided: usize,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    #[cold]
    pub fn new(kind: ErrorKind, offset: usize) -> Self {
        use ErrorKind::*;
        let kind = match kind {
            Unencodable(m) => Unencodable(clipped(m, MAX_MESSAGE)),
            Custom(m) => Custom(clipped(m, MAX_MESSAGE)),
            UnknownExternalizable(name) => UnknownExternalizable(clipped(name, MAX_SHOWN)),
            kind => kind,
        };
        Error(Box::new(Inner {
            kind,
            offset,
            path: Vec::new(),
            elided: 0,
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
    /// Past [`MAX_PATH_SHOWN`] segments, the oldest of the outer half is left out.
    #[cold]
    pub fn within(mut self, segment: PathSegment) -> Self {
        let segment = match segment {
            PathSegment::Key(k) => PathSegment::Key(clipped(k, MAX_SHOWN)),
            other => other,
        };
        let path = &mut self.0.path;
        if path.len() == MAX_PATH_SHOWN {
            path.remove(MAX_PATH_SHOWN / 2);
            self.0.elided += 1;
        }
        path.push(segment);
        self
    }

    /// The path as `$.items[3].owner`; a long one as `$.a.b[…120 levels…].y.z`.
    pub fn path(&self) -> String {
        let mut out = String::from("$");
        let inner = self.0.path.len().min(MAX_PATH_SHOWN / 2);
        for (i, seg) in self.0.path.iter().enumerate().rev() {
            if i + 1 == inner && self.0.elided > 0 {
                out.push_str(&format!("[…{} levels…]", self.0.elided));
            }
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
            ObjectEndOutsideObject => "object-end marker 0x09 outside an object".to_owned(),
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
            UnknownPacketVersion { version } => format!("unknown amf packet version {version}"),
            SolMagic { found: [a, b] } => {
                format!("not a .sol file: expected the magic 00 bf, found {a:02x} {b:02x}")
            }
            SolSignature { found } => format!(
                "not a .sol file: expected the signature \"TCSO\", found {}",
                found.escape_ascii()
            ),
            UnknownSolVersion { version } => {
                format!("unknown .sol amf version {version} (expected 0 or 3)")
            }
            SolPadding { byte } => format!("padding byte 0x{byte:02x} after a member is not 0x00"),
            Unencodable(m) | Custom(m) => m.to_string(),
            UnknownExternalizable(name) => {
                format!("externalizable class {name:?} is not registered, its body cannot be read")
            }
            AfterOpaque { at } => format!(
                "the values around the opaque externalizable body read from byte {at} to the \
                 end of the input need more bytes: an opaque body is sound only where its \
                 object ends the input"
            ),
        }
    }
}

/// A boxed text cut to `limit` characters (no copy when it fits).
fn clipped(text: Box<str>, limit: usize) -> Box<str> {
    match clip(&text, limit) {
        Cow::Borrowed(_) => text,
        Cow::Owned(cut) => cut.into(),
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
        .within(PathSegment::key("body"));
        assert_eq!(
            e.to_string(),
            "string length 268435455 exceeds the 10 bytes left, at byte 41 ($.body[0])"
        );
    }

    #[test]
    fn odd_keys_are_quoted() {
        let e = Error::custom("x", 0).within(PathSegment::key("a b"));
        assert_eq!(e.path(), "$[\"a b\"]");
    }

    #[test]
    fn long_names_and_messages_are_clipped() {
        let long = "n".repeat(100_000);
        let e = Error::custom(long.clone(), 0).within(PathSegment::key(&long));
        assert_eq!(e.reason().chars().count(), MAX_MESSAGE + 1);
        assert_eq!(e.path(), format!("$[\"{}…\"]", "n".repeat(MAX_SHOWN)));
        let e = Error::new(ErrorKind::UnknownExternalizable(long.into()), 0);
        assert!(e.to_string().len() < 200, "{e}");
    }

    #[test]
    fn deep_paths_keep_both_ends() {
        let mut e = Error::custom("x", 0);
        for i in 0..100 {
            e = e.within(PathSegment::Index(i));
        }
        assert_eq!(
            e.path(),
            "$[99][98][97][96][95][94][93][92][…84 levels…][7][6][5][4][3][2][1][0]"
        );
        let mut short = Error::custom("x", 0);
        for i in 0..MAX_PATH_SHOWN {
            short = short.within(PathSegment::Index(i));
        }
        assert!(!short.path().contains('…'));
    }

    #[test]
    fn wire_errors_render_as_before() {
        let text = |kind| Error::new(kind, 3).to_string();
        assert_eq!(
            text(ErrorKind::ObjectEndOutsideObject),
            "object-end marker 0x09 outside an object, at byte 3"
        );
        assert_eq!(
            text(ErrorKind::UnknownPacketVersion { version: 2 }),
            "unknown amf packet version 2, at byte 3"
        );
        assert_eq!(
            text(ErrorKind::SolMagic {
                found: [0xbf, 0x00]
            }),
            "not a .sol file: expected the magic 00 bf, found bf 00, at byte 3"
        );
        assert_eq!(
            text(ErrorKind::SolSignature {
                found: *b"TC\x00\""
            }),
            "not a .sol file: expected the signature \"TCSO\", found TC\\x00\\\", at byte 3"
        );
        assert_eq!(
            text(ErrorKind::UnknownSolVersion { version: 768 }),
            "unknown .sol amf version 768 (expected 0 or 3), at byte 3"
        );
        assert_eq!(
            text(ErrorKind::SolPadding { byte: 1 }),
            "padding byte 0x01 after a member is not 0x00, at byte 3"
        );
    }

    #[test]
    fn clip_counts_characters_not_bytes() {
        assert_eq!(clip("ééé", 2), "éé…");
        assert_eq!(clip("ééé", 3), "ééé");
    }
}
