//! Decode → encode → decode is stable. Every input is tried as an AMF0 stream, an AMF3
//! stream and a .sol file (`Sol::from_bytes`, `Sol::to_bytes`); whatever decodes is
//! encoded, and
//! - the encoding must succeed (a decoded tree is always writable),
//! - it must decode again to the same tree (floats compared by bits, so NaN payloads
//!   count), and
//! - encoding that second tree must give the same bytes as the first encoding.
//!
//! The first encoding may differ from the input: the writer normalizes what the wire
//! allows several ways (non-minimal U29 integers, long strings that fit a short one,
//! repeated inline strings and traits that it writes as references, the marker byte of
//! a reference, ECMA array counts, typed objects with an empty class name, the ignored
//! count bits of externalizable traits (their dynamic bit is kept), a .sol file's
//! length field and its missing last padding byte).
#![no_main]

use amfkit_core::sol::Sol;
use amfkit_core::{Limits, Value};
use amfkit_fuzz::{same, same_all};
use libfuzzer_sys::fuzz_target;

fn stable(
    what: &str,
    data: &[u8],
    decode: fn(&[u8], Limits) -> amfkit_core::Result<Vec<Value>>,
    encode: fn(&[Value]) -> amfkit_core::Result<Vec<u8>>,
) {
    let Ok(first) = decode(data, Limits::default()) else {
        return;
    };
    let bytes = encode(&first)
        .unwrap_or_else(|e| panic!("{what}: a decoded stream does not encode: {e}\n{first:?}"));
    let second = decode(&bytes, Limits::default())
        .unwrap_or_else(|e| panic!("{what}: an encoded stream does not decode: {e}\n{first:?}"));
    assert!(
        same_all(&first, &second),
        "{what}: decode(encode(v)) != v\nfirst:  {first:?}\nsecond: {second:?}"
    );
    let again = encode(&second).expect("encoding the second decode");
    assert_eq!(bytes, again, "{what}: a second encoding gives other bytes");
}

fn sol_stable(data: &[u8]) {
    let Ok(first) = Sol::from_bytes(data, Limits::default()) else {
        return;
    };
    let bytes = first
        .to_bytes()
        .unwrap_or_else(|e| panic!("sol: a decoded file does not encode: {e}\n{first:?}"));
    let second = Sol::from_bytes(&bytes, Limits::default())
        .unwrap_or_else(|e| panic!("sol: an encoded file does not decode: {e}\n{first:?}"));
    assert!(
        first.name == second.name
            && first.version == second.version
            && first.values.len() == second.values.len()
            && first
                .values
                .iter()
                .zip(&second.values)
                .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb)),
        "sol: decode(encode(v)) != v\nfirst:  {first:?}\nsecond: {second:?}"
    );
    let again = second.to_bytes().expect("encoding the second decode");
    assert_eq!(bytes, again, "sol: a second encoding gives other bytes");
}

fuzz_target!(|data: &[u8]| {
    stable("amf0", data, Value::all_from_amf0, Value::all_to_amf0);
    stable("amf3", data, Value::all_from_amf3, Value::all_to_amf3);
    sol_stable(data);
});
