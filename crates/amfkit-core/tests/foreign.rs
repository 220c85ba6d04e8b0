//! AMF that amfkit did not write (fixtures/foreign/, provenance in fixtures/README.md):
//! remoting packets Py3AMF encoded, an Amfphp fault, and the two byte strings of Ruffle
//! pull request #23772. Each reads with the `Value` model and is written back byte for
//! byte (length fields and small forms included); every strict prefix fails.

use std::path::PathBuf;

use amfkit_core::packet::read_packet;
use amfkit_core::{ExternalBody, Limits, Value, ValueVisitor};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/foreign")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn packets() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&p).unwrap();
            (name, bytes)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_foreign_packet_is_written_back_byte_for_byte() {
    let all = packets();
    assert!(all.len() >= 9, "{} packets", all.len());
    for (name, bytes) in &all {
        let p = read_packet(bytes, Limits::DEFAULT, &mut ValueVisitor)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&p.to_bytes().unwrap(), bytes, "{name}");
    }
}

#[test]
fn every_strict_prefix_of_a_foreign_packet_fails() {
    for (name, bytes) in packets() {
        for n in 0..bytes.len() {
            assert!(
                read_packet(&bytes[..n], Limits::DEFAULT, &mut ValueVisitor).is_err(),
                "{name}: the first {n} bytes read as a packet"
            );
        }
    }
}

#[test]
fn py3amf_writes_length_fields_of_zero() {
    // What WIRE-NOTES says of the PyAMF family: the field is 0, and kept on writing back.
    let bytes = read("py3amf-netconnection-amf0.bin");
    let p = read_packet(&bytes, Limits::DEFAULT, &mut ValueVisitor).unwrap();
    assert!(p.headers.iter().all(|h| h.layout.length == Some(0)));
    assert!(p.bodies.iter().all(|b| b.layout.length == Some(0)));
}

#[test]
fn py3amf_small_acknowledge_reads_by_its_levels() {
    let bytes = read("py3amf-flex-ack-small.bin");
    let p = read_packet(&bytes, Limits::DEFAULT, &mut ValueVisitor).unwrap();
    let Value::Amf3(inner) = &p.bodies[0].value else {
        panic!("{:?}", p.bodies[0].value)
    };
    let Value::Array { dense, .. } = &**inner else {
        panic!()
    };
    let Value::Object {
        traits,
        external: Some(ExternalBody::Flags(levels)),
        ..
    } = &dense[0]
    else {
        panic!("{:?}", dense[0])
    };
    assert_eq!(traits.class_name, "DSK");
    assert_eq!(levels.len(), 3);
    // body, timestamp; then clientId and messageId as 16 bytes each.
    assert_eq!(levels[0].flags, vec![0x80 | 0x01 | 0x20, 0x03]);
    assert_eq!(levels[1].values.len(), 1);
}

#[test]
fn the_two_arrays_of_ruffle_pr_23772() {
    let ruffle = read("ruffle-pr23772-ruffle.amf0");
    let flash = read("ruffle-pr23772-flash.amf0");
    let text = Value::String("G2C Online".into());
    assert_eq!(
        Value::from_amf0(&ruffle).unwrap(),
        Value::EcmaArray {
            length: 1,
            entries: vec![("0".into(), text.clone())]
        }
    );
    assert_eq!(
        Value::from_amf0(&flash).unwrap(),
        Value::Array {
            assoc: vec![],
            dense: vec![text]
        }
    );
    for bytes in [ruffle, flash] {
        assert_eq!(Value::from_amf0(&bytes).unwrap().to_amf0().unwrap(), bytes);
    }
}
