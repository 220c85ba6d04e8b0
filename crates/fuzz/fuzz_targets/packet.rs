//! The remoting packet reader (`packet::read_packet`) building `Value`s, on any bytes,
//! under the default and tight limits: `Ok` or a well-formed `Err`, never a panic.
//! A packet that reads is also written back (each header and body value in its own
//! reference context, real lengths) and must read again to the same packet; written
//! with the layout it was read with (`Packet::to_bytes`: its length fields and string
//! habits), it must read again to the same packet and write the same bytes again.
#![no_main]

use amfkit_core::packet::{read_packet, Packet, PartLayout};
use amfkit_core::{Encoder, Limits, Value, ValueVisitor};
use amfkit_fuzz::{checked, same, TIGHT};
use libfuzzer_sys::fuzz_target;

/// The length field of a part as written in its packet.
fn declared(layout: &PartLayout) -> u32 {
    layout.length.unwrap_or((layout.end - layout.start) as u32)
}

fn write(p: &Packet<'_, Value>) -> Vec<u8> {
    let mut e = Encoder::new();
    e.packet_start(p.version, p.headers.len()).unwrap();
    for h in &p.headers {
        let slot = e.packet_header(h.name, h.must_understand).unwrap();
        e.out.bytes(&h.value.to_amf0().unwrap());
        e.packet_part_end(slot).unwrap();
    }
    e.packet_bodies(p.bodies.len()).unwrap();
    for b in &p.bodies {
        let slot = e.packet_body(b.target, b.response).unwrap();
        e.out.bytes(&b.value.to_amf0().unwrap());
        e.packet_part_end(slot).unwrap();
    }
    e.take()
}

fuzz_target!(|data: &[u8]| {
    if let Some(p) = checked(
        read_packet(data, Limits::default(), &mut ValueVisitor),
        data.len(),
    ) {
        assert!(p.version <= 3);
        let bytes = write(&p);
        let q = read_packet(&bytes, Limits::default(), &mut ValueVisitor)
            .unwrap_or_else(|e| panic!("a written packet does not read back: {e}"));
        assert_eq!(p.version, q.version);
        assert_eq!(p.headers.len(), q.headers.len());
        assert_eq!(p.bodies.len(), q.bodies.len());
        for (a, b) in p.headers.iter().zip(&q.headers) {
            assert!(a.name == b.name && a.must_understand == b.must_understand);
            assert!(
                same(&a.value, &b.value),
                "header value changed: {a:?} -> {b:?}"
            );
        }
        for (a, b) in p.bodies.iter().zip(&q.bodies) {
            assert!(a.target == b.target && a.response == b.response);
            assert!(
                same(&a.value, &b.value),
                "body value changed: {a:?} -> {b:?}"
            );
        }
        assert_eq!(write(&q), bytes, "a second write gives other bytes");
        let exact = p.to_bytes().unwrap();
        let r = read_packet(&exact, Limits::default(), &mut ValueVisitor)
            .unwrap_or_else(|e| panic!("a packet written with its layout does not read back: {e}"));
        assert_eq!(p.headers.len(), r.headers.len());
        assert_eq!(p.bodies.len(), r.bodies.len());
        for (a, b) in p.bodies.iter().zip(&r.bodies) {
            assert!(
                same(&a.value, &b.value),
                "body value changed: {a:?} -> {b:?}"
            );
            // A length field kept (Some) is written again as read; a real one (None) is
            // the real length of what is written. A value read from non-minimal U29s is
            // written back shorter, so a kept field may now match the bytes (None on the
            // second read) and a real one names the shorter length.
            match a.layout.length {
                Some(n) => assert_eq!(declared(&b.layout), n),
                None => assert_eq!(b.layout.length, None),
            }
        }
        assert_eq!(
            r.to_bytes().unwrap(),
            exact,
            "a second layout write gives other bytes"
        );
    }
    checked(read_packet(data, TIGHT, &mut ValueVisitor), data.len());
});
