//! The real .sol files of `fixtures/sol/samples/` (written by Flash Player and other
//! tools; provenance in fixtures/README.md) through the `Sol` model: every file but the
//! corrupt `2.sol` reads and writes back byte for byte; `2.sol` is refused.

use std::path::Path;

use amfkit_core::sol::Sol;
use amfkit_core::{Limits, Value};

fn samples() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sol/samples");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("fixtures/sol/samples")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sol"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    assert_eq!(out.len(), 35, "the sample files are missing");
    out
}

#[test]
fn every_sample_round_trips_byte_for_byte_and_the_corrupt_one_is_refused() {
    let mut written_back = 0;
    for (name, bytes) in samples() {
        let read = Sol::from_bytes(&bytes, Limits::DEFAULT);
        if name == "2.sol" {
            let err = read.expect_err("2.sol is corrupt");
            assert!(
                err.to_string().contains("sealed member count 19 exceeds"),
                "{err}"
            );
            continue;
        }
        let sol = read.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            sol.version,
            if name.starts_with("AS2") { 0 } else { 3 },
            "{name}"
        );
        assert!(!sol.values.is_empty(), "{name}");
        let again = sol.to_bytes().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(again, bytes, "{name}");
        written_back += 1;
    }
    assert_eq!(written_back, 34);
}

#[test]
fn the_ecma_count_flash_player_wrote_is_kept() {
    let (_, bytes) = samples()
        .into_iter()
        .find(|(n, _)| n == "AS2-ECMAArray-Demo.sol")
        .unwrap();
    let sol = Sol::from_bytes(&bytes, Limits::DEFAULT).unwrap();
    let counts: Vec<(u32, usize)> = sol
        .values
        .iter()
        .filter_map(|(_, v)| match v {
            Value::EcmaArray { length, entries } => Some((*length, entries.len())),
            _ => None,
        })
        .collect();
    assert!(!counts.is_empty());
    // An AS2 array stored as an ECMA array whose length is not its entry count.
    assert!(
        counts.iter().any(|(len, n)| *len as usize != *n),
        "{counts:?}"
    );
}
