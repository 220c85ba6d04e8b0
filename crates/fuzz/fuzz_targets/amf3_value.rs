//! Every AMF3 decoder entry point of the `Value` model, on any bytes: a stream of values
//! (one reference context), exactly one value, and the stream again under tight limits.
//! Each must return `Ok` or a well-formed `Err`, never panic, hang or exhaust memory.
#![no_main]

use amfkit_core::{Limits, Value};
use amfkit_fuzz::{checked, TIGHT};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    checked(Value::all_from_amf3(data, Limits::default()), data.len());
    checked(Value::from_amf3(data), data.len());
    checked(Value::all_from_amf3(data, TIGHT), data.len());
});
