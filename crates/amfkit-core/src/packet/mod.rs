//! The AMF remoting packet (the body of an HTTP POST to a gateway): version, headers
//! (name, must-understand, value) and bodies (target, response, value), each value an
//! AMF0 value that may switch to AMF3.
//!
//! Header and body length fields are unreliable in the wild (BlazeDS and Royale write
//! 1, PyAMF 0, the specification -1, Amfphp the real length): the reader does not trust
//! them (it keeps one that is not the real length, so that a packet can be written back
//! as it was), and the writer writes the real length unless told otherwise. There is one
//! use for them: with lenient reading, an opaque body ([`crate::lenient`]) inside a part
//! whose length field is true ends where the part ends. Each header and each body is its
//! own reference context. What was read also says where each value lies in the input, so
//! that a tool can write back one part and leave the others' bytes alone.

use core::ops::Range;
use std::sync::Arc;

use crate::decoder::Decoder;
use crate::error::{Error, ErrorKind, PathSegment, Result};
use crate::lenient::Lenient;
use crate::limits::Limits;
use crate::value::{Value, ValueWriter};
use crate::visit::Visitor;
use crate::write::Encoder;

/// Most headers or bodies one packet may declare (a count is also checked against the
/// bytes left: each takes at least 8 bytes).
pub const MAX_PARTS: usize = 65_535;

/// How one header or body was written, beyond its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartLayout {
    /// The length field as written, when it is not the value's real length (peers write
    /// 0, 1 or 0xFFFFFFFF); None when it is. A writer writes the real length for None.
    pub length: Option<u32>,
    /// The AMF3 strings of this part came from a writer that never references a string
    /// ([`Decoder::amf3_inline_strings`]); a writer copies the habit.
    pub inline_strings: bool,
    /// Where the value's bytes lie in the input: `start..end` ([`PartLayout::span`]; 0..0
    /// for a part made, not read).
    pub start: usize,
    pub end: usize,
}

impl PartLayout {
    /// Where the value's bytes lie in the input.
    pub fn span(&self) -> Range<usize> {
        self.start..self.end
    }
}

/// One packet header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header<'de, T> {
    pub name: &'de str,
    pub must_understand: bool,
    pub value: T,
    pub layout: PartLayout,
}

/// One packet body (a call, or the answer to one).
#[derive(Debug, Clone, PartialEq)]
pub struct Body<'de, T> {
    pub target: &'de str,
    pub response: &'de str,
    pub value: T,
    pub layout: PartLayout,
}

/// A whole packet.
#[derive(Debug, Clone, PartialEq)]
pub struct Packet<'de, T> {
    /// 0 (AS2), 3 (Flash Player 9 and later), 1 (FMS; treated as 0 by callers).
    pub version: u16,
    pub headers: Vec<Header<'de, T>>,
    pub bodies: Vec<Body<'de, T>>,
}

/// Read a packet, building values with `visitor`.
pub fn read_packet<'de, V: Visitor<'de>>(
    input: &'de [u8],
    limits: Limits,
    visitor: &mut V,
) -> Result<Packet<'de, V::Value>> {
    read_packet_lenient(input, limits, None, visitor)
}

/// Read a packet with lenient options ([`crate::lenient`]; None is strict).
pub fn read_packet_lenient<'de, V: Visitor<'de>>(
    input: &'de [u8],
    limits: Limits,
    lenient: Option<Arc<Lenient>>,
    visitor: &mut V,
) -> Result<Packet<'de, V::Value>> {
    let mut de = Decoder::new(input, limits).with_lenient(lenient);
    let version = de.bytes().u16()?;
    // 0, 1 and 3 are the versions clients send; 2 was never assigned.
    if !matches!(version, 0 | 1 | 3) {
        return Err(Error::new(ErrorKind::UnknownPacketVersion { version }, 0));
    }
    let header_count = de.bytes().u16()? as usize;
    de.bytes()
        .check_count("header count", header_count as u64, 8)?;
    let mut headers = Vec::with_capacity(header_count);
    for i in 0..header_count {
        let h = read_header(&mut de, visitor)
            .map_err(|e| e.within(PathSegment::Named("headers", i)))?;
        headers.push(h);
    }
    let body_count = de.bytes().u16()? as usize;
    de.bytes().check_count("body count", body_count as u64, 9)?;
    let mut bodies = Vec::with_capacity(body_count);
    for i in 0..body_count {
        let b =
            read_body(&mut de, visitor).map_err(|e| e.within(PathSegment::Named("bodies", i)))?;
        bodies.push(b);
    }
    de.finish()?;
    Ok(Packet {
        version,
        headers,
        bodies,
    })
}

fn read_header<'de, V: Visitor<'de>>(
    de: &mut Decoder<'de, V>,
    v: &mut V,
) -> Result<Header<'de, V::Value>> {
    let name = de.read_utf()?;
    let must_understand = de.bytes().u8()? != 0;
    let length = de.bytes().u32()?;
    let (value, layout) = read_part_value(de, v, length)?;
    Ok(Header {
        name,
        must_understand,
        value,
        layout,
    })
}

fn read_body<'de, V: Visitor<'de>>(
    de: &mut Decoder<'de, V>,
    v: &mut V,
) -> Result<Body<'de, V::Value>> {
    let target = de.read_utf()?;
    let response = de.read_utf()?;
    let length = de.bytes().u32()?;
    let (value, layout) = read_part_value(de, v, length)?;
    Ok(Body {
        target,
        response,
        value,
        layout,
    })
}

/// The AMF0 value of a header or body, in a reference context of its own, whose length
/// field said `length`. The field is trusted in one case only: an opaque body (lenient
/// reading) took the rest of the input from inside the part, and the part read again
/// with its input ending where the field says reads whole; otherwise the first reading
/// stands.
fn read_part_value<'de, V: Visitor<'de>>(
    de: &mut Decoder<'de, V>,
    v: &mut V,
    length: u32,
) -> Result<(V::Value, PartLayout)> {
    let start = de.position();
    de.reset();
    let mut value = de.read_amf0(v).map_err(|e| e.or_offset(de.position()))?;
    let end = start.saturating_add(length as usize);
    if let Some(at) = de.opaque_at() {
        if at < end && end < de.bytes().input().len() {
            let after = de.position();
            let whole = de.bytes().bound(start, end);
            de.reset();
            match de.read_amf0(v) {
                Ok(again) if de.is_empty() => {
                    value = again;
                    de.bytes().unbound(whole, end, None);
                }
                _ => de.bytes().unbound(whole, after, Some(at)),
            }
        }
    }
    let real = de.position() - start;
    let layout = PartLayout {
        length: (real != length as usize).then_some(length),
        inline_strings: de.amf3_inline_strings(),
        start,
        end: de.position(),
    };
    Ok((value, layout))
}

impl<'de> Packet<'de, Value> {
    /// Write the packet with the layout each part was read with: its length field (the
    /// real length where the layout has none) and its string habit. A packet read with
    /// [`ValueVisitor`](crate::ValueVisitor) is written back byte for byte.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut e = Encoder::new();
        e.packet_start(self.version, self.headers.len())?;
        for (i, h) in self.headers.iter().enumerate() {
            let slot = e.packet_header(h.name, h.must_understand)?;
            write_part(&mut e, &h.value, h.layout)
                .map_err(|err| err.within(PathSegment::Named("headers", i)))?;
            e.packet_part_end_as(slot, h.layout.length)?;
        }
        e.packet_bodies(self.bodies.len())?;
        for (i, b) in self.bodies.iter().enumerate() {
            let slot = e.packet_body(b.target, b.response)?;
            write_part(&mut e, &b.value, b.layout)
                .map_err(|err| err.within(PathSegment::Named("bodies", i)))?;
            e.packet_part_end_as(slot, b.layout.length)?;
        }
        e.inline_every_string = false;
        Ok(e.take())
    }
}

fn write_part(e: &mut Encoder, value: &Value, layout: PartLayout) -> Result<()> {
    e.inline_every_string = layout.inline_strings;
    ValueWriter::default().amf0(e, value, 0)
}

impl Encoder {
    /// Start a packet: version and header count.
    pub fn packet_start(&mut self, version: u16, header_count: usize) -> Result<()> {
        if header_count > MAX_PARTS {
            return Err(self.error(format!(
                "{header_count} headers exceed a packet's {MAX_PARTS}"
            )));
        }
        self.out.u16(version);
        self.out.u16(header_count as u16);
        Ok(())
    }

    /// Start a header; write its value next (in a fresh reference context), then call
    /// [`Encoder::packet_part_end`] with the returned position.
    pub fn packet_header(&mut self, name: &str, must_understand: bool) -> Result<usize> {
        self.amf0_utf(name)?;
        self.out.u8(must_understand as u8);
        Ok(self.length_slot())
    }

    /// Between the headers and the bodies: the body count.
    pub fn packet_bodies(&mut self, body_count: usize) -> Result<()> {
        if body_count > MAX_PARTS {
            return Err(self.error(format!("{body_count} bodies exceed a packet's {MAX_PARTS}")));
        }
        self.out.u16(body_count as u16);
        Ok(())
    }

    /// Start a body; write its value next, then call [`Encoder::packet_part_end`].
    pub fn packet_body(&mut self, target: &str, response: &str) -> Result<usize> {
        self.amf0_utf(target)?;
        self.amf0_utf(response)?;
        Ok(self.length_slot())
    }

    fn length_slot(&mut self) -> usize {
        let at = self.out.len();
        self.out.u32(0);
        self.reset();
        at
    }

    /// Write the real length of the value that ends here into its slot.
    pub fn packet_part_end(&mut self, slot: usize) -> Result<()> {
        self.packet_part_end_as(slot, None)
    }

    /// Write `length` into the slot of the value that ends here, or its real length for
    /// None (a packet written back as a peer wrote it keeps that peer's length field).
    pub fn packet_part_end_as(&mut self, slot: usize, length: Option<u32>) -> Result<()> {
        let len = self.out.len() - slot - 4;
        let len = u32::try_from(len).map_err(|_| self.error("a packet value over 4 GiB"))?;
        let len = length.unwrap_or(len);
        self.out.buf[slot..slot + 4].copy_from_slice(&len.to_be_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Value, ValueVisitor};

    fn sample() -> Vec<u8> {
        let mut e = Encoder::new();
        e.packet_start(3, 1).unwrap();
        let s = e.packet_header("Credentials", true).unwrap();
        e.amf0_null();
        e.packet_part_end(s).unwrap();
        e.packet_bodies(2).unwrap();
        let s = e.packet_body("Echo.echo", "/1").unwrap();
        e.amf0_strict_array_start(1).unwrap();
        e.amf0_string("hi").unwrap();
        e.packet_part_end(s).unwrap();
        let s = e.packet_body("null", "/2").unwrap();
        e.amf0_avmplus();
        e.amf3_int(5);
        e.packet_part_end(s).unwrap();
        e.take()
    }

    #[test]
    fn round_trip_with_real_lengths() {
        let bytes = sample();
        let p = read_packet(&bytes, Limits::DEFAULT, &mut ValueVisitor).unwrap();
        assert_eq!(p.version, 3);
        assert_eq!(p.headers[0].name, "Credentials");
        assert!(p.headers[0].must_understand);
        assert_eq!(p.bodies[0].target, "Echo.echo");
        assert_eq!(p.bodies[1].response, "/2");
        assert_eq!(p.bodies[1].value, Value::Amf3(Box::new(Value::Integer(5))));
        // the first body's length field holds the real length (strict array of "hi")
        let at = bytes.windows(4).position(|w| w == b"/1\x00\x00").unwrap() + 2;
        assert_eq!(&bytes[at..at + 4], &[0, 0, 0, 10]);
    }

    #[test]
    fn lying_lengths_are_ignored() {
        let mut bytes = sample();
        for pat in [&b"/1"[..], &b"/2"[..]] {
            let at = bytes.windows(2).position(|w| w == pat).unwrap() + 2;
            bytes[at..at + 4].copy_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        }
        let p = read_packet(&bytes, Limits::DEFAULT, &mut ValueVisitor).unwrap();
        assert_eq!(p.bodies[0].layout.length, Some(u32::MAX));
        assert_eq!(p.bodies[1].layout.length, Some(u32::MAX));
    }

    #[test]
    fn spans_and_length_fields_are_kept() {
        let bytes = sample();
        let p = read_packet(&bytes, Limits::DEFAULT, &mut ValueVisitor).unwrap();
        // the null header value, the strict array of "hi", the AVM+ switch and 5
        assert_eq!(&bytes[p.headers[0].layout.span()], &[0x05]);
        assert_eq!(p.headers[0].layout.length, None); // the real length, 1
        let first = p.bodies[0].layout.span();
        assert_eq!(
            &bytes[first.clone()],
            &[0x0a, 0, 0, 0, 1, 0x02, 0, 2, b'h', b'i']
        );
        assert_eq!(p.bodies[0].layout.length, None); // the real length
        assert_eq!(&bytes[p.bodies[1].layout.span()], &[0x11, 0x04, 0x05]);
        assert_eq!(p.bodies[1].layout.end, bytes.len());
    }

    #[test]
    fn every_prefix_fails_and_counts_are_checked() {
        let bytes = sample();
        for n in 0..bytes.len() {
            assert!(
                read_packet(&bytes[..n], Limits::DEFAULT, &mut ValueVisitor).is_err(),
                "prefix {n}"
            );
        }
        let e = read_packet(&[0, 3, 0xff, 0xff], Limits::DEFAULT, &mut ValueVisitor).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::LengthExceedsInput { .. }));
        let e = read_packet(&[0, 9, 0, 0, 0, 0], Limits::DEFAULT, &mut ValueVisitor).unwrap_err();
        assert_eq!(e.reason(), "unknown amf packet version 9");
        let e = read_packet(&[0, 2, 0, 0, 0, 0], Limits::DEFAULT, &mut ValueVisitor).unwrap_err();
        assert_eq!(e.reason(), "unknown amf packet version 2");
    }

    #[test]
    fn each_body_is_its_own_reference_context() {
        // Body 2 holds an AMF0 reference to index 0, which only body 1 defined.
        let mut e = Encoder::new();
        e.packet_start(0, 0).unwrap();
        e.packet_bodies(2).unwrap();
        let s = e.packet_body("a", "/1").unwrap();
        e.amf0_object_start();
        e.amf0_object_end();
        e.packet_part_end(s).unwrap();
        let s = e.packet_body("b", "/2").unwrap();
        e.amf0_write_reference(0).unwrap();
        e.packet_part_end(s).unwrap();
        let bytes = e.take();
        let err = read_packet(&bytes, Limits::DEFAULT, &mut ValueVisitor).unwrap_err();
        assert!(err.path().starts_with("$.bodies[1]"), "{err}");
    }
}
