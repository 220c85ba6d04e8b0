//! Local shared object files (`.sol`, "Flash cookies"): a header naming the object and
//! its AMF version, then its members as (name, value, padding byte) until the end.
//!
//! ```text
//! 00 bf            magic
//! u32              length of the rest of the file (file size - 6)
//! "TCSO"           signature
//! 00 04 00 00 00 00
//! u16 + UTF-8      the object's name
//! u32              AMF version: 0 or 3
//! members          name, value, 0x00, until the end of the file
//! ```
//!
//! With AMF0 a member name is a u16-length UTF-8 string and the value an AMF0 value;
//! with AMF3 the name is an AMF3 string (it takes part in the string table) and the value
//! an AMF3 value. The reference tables (objects, strings, traits) span the whole body.
//!
//! What the reader accepts, and what it refuses:
//! - The length field is not trusted (writers disagree on what it counts): it is read
//!   and ignored, and the members run to the end of the input. The writer always writes
//!   the real length.
//! - The six bytes after the signature are read and ignored; the writer writes
//!   `00 04 00 00 00 00`.
//! - A missing padding byte after the last member (the input ends right after its value)
//!   is accepted; a padding byte that is not 0x00 is an error.
//! - Anything after the last member that is not a whole member (trailing garbage) is an
//!   error at its offset, as is a wrong magic or signature, or a version other than 0 and
//!   3.
//! - A member name that repeats is kept as it is (the [`Sol`] model is a list); models
//!   that map names to values keep the last value.

use crate::decoder::Decoder;
use crate::error::{Error, ErrorKind, PathSegment, Result};
use crate::limits::Limits;
use crate::value::{Value, ValueVisitor, ValueWriter};
use crate::visit::Visitor;
use crate::write::Encoder;

/// The first two bytes of every .sol file.
pub const MAGIC: [u8; 2] = [0x00, 0xbf];
/// The signature after the length field.
pub const SIGNATURE: [u8; 4] = *b"TCSO";
/// The six bytes after the signature, as every writer writes them.
pub const SIGNATURE_TAIL: [u8; 6] = [0x00, 0x04, 0x00, 0x00, 0x00, 0x00];
/// The AMF version field's values.
pub const AMF0: u8 = 0;
pub const AMF3: u8 = 3;

/// A .sol file as read by [`read_sol`]: borrowed names, values built by a visitor.
#[derive(Debug, Clone, PartialEq)]
pub struct SolBody<'de, T> {
    pub name: &'de str,
    /// 0 or 3.
    pub version: u8,
    /// The members in file order.
    pub values: Vec<(&'de str, T)>,
    /// The AMF3 body came from a writer that never references strings
    /// ([`Decoder::amf3_inline_strings`]); a lossless writer sets
    /// [`Encoder::inline_every_string`] to write it back the same.
    pub inline_strings: bool,
    /// How many entries the AMF3 string table reached ([`Decoder::amf3_strings`]): a
    /// writer of the same values can size its own table at once.
    pub amf3_strings: usize,
}

/// Read a .sol file, building values with `visitor`.
pub fn read_sol<'de, V: Visitor<'de>>(
    input: &'de [u8],
    limits: Limits,
    visitor: &mut V,
) -> Result<SolBody<'de, V::Value>> {
    let mut de = Decoder::new(input, limits);
    let (name, version) = read_header(&mut de)?;
    let mut values = Vec::new();
    while !de.is_empty() {
        values.push(read_member(&mut de, visitor, version)?);
    }
    Ok(SolBody {
        name,
        version,
        values,
        inline_strings: de.amf3_inline_strings(),
        amf3_strings: de.amf3_strings(),
    })
}

fn read_header<'de, V: Visitor<'de>>(de: &mut Decoder<'de, V>) -> Result<(&'de str, u8)> {
    let magic = de.bytes().take(2)?;
    if magic != MAGIC {
        return Err(Error::new(
            ErrorKind::SolMagic {
                found: [magic[0], magic[1]],
            },
            0,
        ));
    }
    let _unreliable_length = de.bytes().u32()?;
    let at = de.position();
    let signature = de.bytes().take(4)?;
    if signature != SIGNATURE {
        return Err(Error::new(
            ErrorKind::SolSignature {
                found: [signature[0], signature[1], signature[2], signature[3]],
            },
            at,
        ));
    }
    let _ignored = de.bytes().take(SIGNATURE_TAIL.len())?;
    let name = de.read_utf()?;
    let at = de.position();
    let version = de.bytes().u32()?;
    if version != AMF0 as u32 && version != AMF3 as u32 {
        return Err(Error::new(ErrorKind::UnknownSolVersion { version }, at));
    }
    Ok((name, version as u8))
}

fn read_member<'de, V: Visitor<'de>>(
    de: &mut Decoder<'de, V>,
    v: &mut V,
    version: u8,
) -> Result<(&'de str, V::Value)> {
    let key = if version == AMF3 {
        de.amf3_text()?
    } else {
        de.read_utf()?
    };
    let value = if version == AMF3 {
        de.read_amf3(v)
    } else {
        de.read_amf0(v)
    };
    let value = value.map_err(|e| e.or_offset(de.position()).within(PathSegment::key(key)))?;
    let at = de.position();
    match de.bytes().peek() {
        // The last member's padding byte may be missing.
        None => {}
        Some(0) => {
            de.bytes().u8()?;
        }
        Some(b) => {
            return Err(
                Error::new(ErrorKind::SolPadding { byte: b }, at).within(PathSegment::key(key))
            )
        }
    }
    Ok((key, value))
}

impl Encoder {
    /// Start a .sol file: the header, with a length slot that [`Encoder::sol_end`] fills.
    /// Then for each member: [`Encoder::sol_key`], its value (AMF0 or AMF3 as
    /// `version` says, all in this encoder's one reference context), and
    /// [`Encoder::sol_member_end`].
    pub fn sol_start(&mut self, name: &str, version: u8) -> Result<usize> {
        if version != AMF0 && version != AMF3 {
            return Err(self.error(format!(
                "a .sol file's amf version must be 0 or 3, not {version}"
            )));
        }
        if name.len() > 0xffff {
            return Err(self.error(format!(
                "a .sol name of {} bytes exceeds the format's 65535",
                name.len()
            )));
        }
        self.out.bytes(&MAGIC);
        let slot = self.out.len();
        self.out.u32(0);
        self.out.bytes(&SIGNATURE);
        self.out.bytes(&SIGNATURE_TAIL);
        self.amf0_utf(name)?;
        self.out.u32(version as u32);
        Ok(slot)
    }

    /// A member's name: u16-length UTF-8 for AMF0, an AMF3 string (through the string
    /// table) for AMF3.
    pub fn sol_key(&mut self, version: u8, key: &str) -> Result<()> {
        if version == AMF3 {
            self.amf3_str(key)
        } else {
            self.amf0_utf(key)
        }
    }

    /// The padding byte after a member's value.
    pub fn sol_member_end(&mut self) {
        self.out.u8(0);
    }

    /// Write the real length of the rest of the file into the header's slot.
    pub fn sol_end(&mut self, slot: usize) -> Result<()> {
        let len = self.out.len() - slot - 4;
        let len = u32::try_from(len).map_err(|_| self.error("a .sol file over 4 GiB"))?;
        self.out.buf[slot..slot + 4].copy_from_slice(&len.to_be_bytes());
        Ok(())
    }
}

/// A .sol file as a [`Value`] list: the model for Rust users, tools and fuzzing.
#[derive(Debug, Clone, PartialEq)]
pub struct Sol {
    /// The shared object's name.
    pub name: String,
    /// The AMF version of the body: 0 or 3.
    pub version: u8,
    /// The members in file order; a [`Value::Reference`] may point into an earlier one.
    pub values: Vec<(String, Value)>,
    /// Write every AMF3 string inline (the file read had no string reference and
    /// repeated a string): see [`SolBody::inline_strings`]. False for Flash Player's
    /// files and for new ones.
    pub inline_strings: bool,
}

impl Sol {
    /// Read a .sol file (see the module documentation for what is accepted).
    pub fn from_bytes(input: &[u8], limits: Limits) -> Result<Sol> {
        let body = read_sol(input, limits, &mut ValueVisitor)?;
        Ok(Sol {
            name: body.name.to_owned(),
            version: body.version,
            values: body
                .values
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            inline_strings: body.inline_strings,
        })
    }

    /// Write the file: magic, real length, signature, name, version, then each member
    /// with its padding byte; references index the one table of the whole body.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut enc = Encoder::new();
        enc.inline_every_string = self.inline_strings;
        let mut w = ValueWriter::default();
        let slot = enc.sol_start(&self.name, self.version)?;
        for (key, value) in &self.values {
            enc.sol_key(self.version, key)?;
            let r = if self.version == AMF3 {
                w.amf3(&mut enc, value, 0)
            } else {
                w.amf0(&mut enc, value, 0)
            };
            r.map_err(|e| e.within(PathSegment::key(key.as_str())))?;
            enc.sol_member_end();
        }
        enc.sol_end(slot)?;
        Ok(enc.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn header(name: &str, version: u8) -> Vec<u8> {
        let mut b = vec![0x00, 0xbf, 0, 0, 0, 0];
        b.extend_from_slice(b"TCSO\x00\x04\x00\x00\x00\x00");
        b.extend_from_slice(&(name.len() as u16).to_be_bytes());
        b.extend_from_slice(name.as_bytes());
        b.extend_from_slice(&[0, 0, 0, version]);
        b
    }

    fn with_length(mut b: Vec<u8>) -> Vec<u8> {
        let len = (b.len() - 6) as u32;
        b[2..6].copy_from_slice(&len.to_be_bytes());
        b
    }

    fn read(b: &[u8]) -> Result<Sol> {
        Sol::from_bytes(b, Limits::DEFAULT)
    }

    #[test]
    fn amf0_members_and_the_length_written() {
        let mut b = header("game", 0);
        b.extend_from_slice(b"\x00\x05score\x00\x40\x45\x00\x00\x00\x00\x00\x00\x00");
        b.extend_from_slice(b"\x00\x04name\x02\x00\x03Ada\x00");
        let b = with_length(b);
        let sol = read(&b).unwrap();
        assert_eq!(sol.name, "game");
        assert_eq!(sol.version, 0);
        assert_eq!(
            sol.values,
            vec![
                ("score".to_owned(), Value::Number(42.0)),
                ("name".to_owned(), Value::String("Ada".into())),
            ]
        );
        assert_eq!(sol.to_bytes().unwrap(), b);
    }

    #[test]
    fn amf3_keys_and_values_share_one_string_table() {
        // key "a" (string 0), value "a" as a string reference, key "b" (string 1), value
        // a reference to string 1.
        let mut b = header("s", 3);
        b.extend_from_slice(b"\x03a\x06\x00\x00\x03b\x06\x02\x00");
        let b = with_length(b);
        let sol = read(&b).unwrap();
        assert_eq!(
            sol.values,
            vec![
                ("a".to_owned(), Value::String("a".into())),
                ("b".to_owned(), Value::String("b".into())),
            ]
        );
        assert_eq!(sol.to_bytes().unwrap(), b);
    }

    #[test]
    fn object_references_span_members() {
        let shared = Value::Object {
            traits: crate::value::Traits::anonymous(),
            sealed: vec![],
            dynamic: vec![("x".into(), Value::Integer(1))],
            external: None,
        };
        for version in [AMF0, AMF3] {
            let sol = Sol {
                name: "refs".into(),
                version,
                values: vec![
                    ("first".into(), shared.clone()),
                    ("second".into(), Value::Reference(0)),
                ],
                inline_strings: false,
            };
            let bytes = sol.to_bytes().unwrap();
            let back = read(&bytes).unwrap();
            assert_eq!(back.values[1].1, Value::Reference(0), "version {version}");
            assert_eq!(back.to_bytes().unwrap(), bytes);
            // The second member on its own: its reference has nothing to point at (the
            // AMF3 writer refuses it; the AMF0 writer writes it and the reader refuses it).
            let alone = Sol {
                values: vec![("second".into(), Value::Reference(0))],
                ..sol.clone()
            };
            match alone.to_bytes() {
                Err(_) => assert_eq!(version, AMF3),
                Ok(b) => assert!(read(&b).is_err()),
            }
        }
        // A reference read before anything was registered is out of range.
        let mut b = header("r", 0);
        b.extend_from_slice(b"\x00\x01k\x07\x00\x00\x00");
        let e = read(&b).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::BadReference { .. }), "{e}");
        assert_eq!(e.path(), "$.k");
    }

    #[test]
    fn the_length_field_is_ignored_and_the_last_padding_may_be_missing() {
        let mut b = header("x", 0);
        b.extend_from_slice(b"\x00\x01k\x05");
        // length 0 (as written above) and no padding byte after the last value
        let sol = read(&b).unwrap();
        assert_eq!(sol.values, vec![("k".to_owned(), Value::Null)]);
        b[2..6].copy_from_slice(&[0xff; 4]);
        assert!(read(&b).is_ok());
        // written back with its padding and the real length
        let out = sol.to_bytes().unwrap();
        assert_eq!(out.last(), Some(&0));
        assert_eq!(&out[2..6], &((out.len() - 6) as u32).to_be_bytes());
    }

    #[test]
    fn malformed_files_fail_with_an_offset() {
        let mut good = header("x", 3);
        good.extend_from_slice(b"\x03k\x04\x05\x00");
        let cases: Vec<(Vec<u8>, usize, &str)> = vec![
            (b"\xbf\x00".to_vec(), 0, "expected the magic 00 bf"),
            (
                {
                    let mut b = good.clone();
                    b[6..10].copy_from_slice(b"TCSX");
                    b
                },
                6,
                "expected the signature",
            ),
            (
                {
                    let mut b = header("x", 1);
                    b.extend_from_slice(b"\x03k\x01\x00");
                    b
                },
                19,
                "unknown .sol amf version 1",
            ),
            (
                {
                    let mut b = good.clone();
                    *b.last_mut().unwrap() = 7;
                    b
                },
                good.len() - 1,
                "padding byte 0x07",
            ),
            (
                {
                    let mut b = good.clone();
                    b.push(0xff);
                    b
                },
                good.len(),
                "unexpected end of input",
            ),
        ];
        for (bytes, offset, message) in cases {
            let e = read(&bytes).unwrap_err();
            assert!(e.to_string().contains(message), "{e}");
            if !message.starts_with("unexpected end") {
                assert_eq!(e.offset(), offset, "{e}");
            }
        }
    }

    #[test]
    fn every_prefix_of_the_header_fails() {
        let b = header("name", 0);
        for n in 0..b.len() {
            assert!(read(&b[..n]).is_err(), "prefix {n}");
        }
        assert!(read(&b).unwrap().values.is_empty());
    }

    #[test]
    fn lying_name_length_allocates_nothing() {
        let mut b = header("", 0);
        b[16..18].copy_from_slice(&[0xff, 0xff]);
        let e = read(&b).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::LengthExceedsInput { .. }),
            "{e}"
        );
    }

    #[test]
    fn the_writer_refuses_what_the_format_cannot_hold() {
        let bad = Sol {
            name: "x".into(),
            version: 2,
            values: vec![],
            inline_strings: false,
        };
        assert!(bad.to_bytes().is_err());
        let long = Sol {
            name: "n".repeat(70_000),
            version: 0,
            values: vec![],
            inline_strings: false,
        };
        assert!(long.to_bytes().is_err());
    }
}
