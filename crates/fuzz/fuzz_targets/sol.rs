//! The .sol reader (`sol::Sol::from_bytes`) on any bytes, under the default and tight
//! limits: `Ok` or a well-formed `Err`, never a panic.
#![no_main]

use amfkit_core::sol::Sol;
use amfkit_core::Limits;
use amfkit_fuzz::{checked, TIGHT};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(sol) = checked(Sol::from_bytes(data, Limits::default()), data.len()) {
        assert!(sol.version == 0 || sol.version == 3);
    }
    checked(Sol::from_bytes(data, TIGHT), data.len());
});
