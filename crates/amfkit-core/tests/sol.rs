//! The .sol fixtures of `fixtures/sol/` (written by `fixtures/sol/make_sol.py`) through
//! the `Sol` model: well-formed files re-encode to their bytes, lenient ones decode, bad
//! ones fail, and a prefix of a file is either an error or the file's first members.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use amfkit_core::sol::Sol;
use amfkit_core::{Limits, Traits, Value};

fn files() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sol");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("fixtures/sol")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sol"))
        .map(|p: PathBuf| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    assert!(out.len() >= 10, "the .sol fixtures are missing");
    out
}

fn read(b: &[u8]) -> amfkit_core::Result<Sol> {
    Sol::from_bytes(b, Limits::DEFAULT)
}

#[test]
fn well_formed_files_round_trip_byte_for_byte() {
    let mut seen = 0;
    for (name, bytes) in files() {
        if name.starts_with("bad-") {
            assert!(read(&bytes).is_err(), "{name} decoded");
            continue;
        }
        let sol = read(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let again = sol.to_bytes().unwrap_or_else(|e| panic!("{name}: {e}"));
        if name.starts_with("lenient-") {
            assert_ne!(again, bytes, "{name} is not lenient");
            assert_eq!(read(&again).unwrap(), sol, "{name}");
        } else {
            assert_eq!(again, bytes, "{name}");
            seen += 1;
        }
        // The length field written is the size of the rest of the file.
        assert_eq!(&again[2..6], &((again.len() - 6) as u32).to_be_bytes());
    }
    // amf0-basic, amf0-refs, amf3-basic, amf3-refs, amf0-flash-references (whose
    // references 3, 5, 10, 15 resolve only when dates and XML take entries, as Flash
    // Player numbers them), and the encoding choices a lossless round trip keeps:
    // amf0-ecma-length, amf3-traits-choices, amf3-inline-strings, amf3-fixed-vectors,
    // amf3-flex-collections (ObjectProxy's traits with the dynamic bit, 0x0f)
    assert_eq!(seen, 10);
}

#[test]
fn a_prefix_is_an_error_or_the_first_members() {
    for (name, bytes) in files() {
        if name.starts_with("bad-") {
            continue;
        }
        let whole = read(&bytes).unwrap();
        for n in 0..bytes.len() {
            match read(&bytes[..n]) {
                Err(e) => assert!(e.offset() <= n, "{name}[..{n}]: {e}"),
                Ok(part) => {
                    // all of them only when just the last padding byte is cut off
                    assert!(
                        part.values.len() < whole.values.len() || n == bytes.len() - 1,
                        "{name}[..{n}]"
                    );
                    assert_eq!(
                        part.values[..],
                        whole.values[..part.values.len()],
                        "{name}[..{n}]"
                    );
                }
            }
        }
    }
}

#[test]
fn amf3_references_span_members() {
    let bytes = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sol/amf3-refs.sol"),
    )
    .unwrap();
    let sol = read(&bytes).unwrap();
    assert_eq!((sol.name.as_str(), sol.version), ("hero", 3));
    let names: Vec<&str> = sol.values.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["player", "leader", "goal", "name", "when"]);
    // "leader" is the object of "player"; "when" the date inside it; "goal" shares the
    // traits of player.pos.
    assert_eq!(sol.values[1].1, Value::Reference(0));
    assert_eq!(sol.values[4].1, Value::Reference(1));
    assert_eq!(sol.values[3].1, Value::String("Ada".into()));
    let Value::Object { dynamic, .. } = &sol.values[0].1 else {
        panic!()
    };
    assert_eq!(dynamic[1], ("self".to_owned(), Value::Reference(0)));
    let Value::Object { traits: pos, .. } = &dynamic[3].1 else {
        panic!()
    };
    let Value::Object {
        traits: goal,
        sealed,
        ..
    } = &sol.values[2].1
    else {
        panic!()
    };
    assert!(Arc::ptr_eq(pos, goal));
    assert_eq!(
        **goal,
        Traits {
            class_name: "com.example.Point".into(),
            sealed: vec!["x".into(), "y".into()],
            dynamic: false,
            externalizable: false
        }
    );
    assert_eq!(sealed, &[Value::Integer(3), Value::Integer(4)]);
}

#[test]
fn limits_apply_to_the_whole_file() {
    let bytes = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sol/amf0-refs.sol"),
    )
    .unwrap();
    // player, pos, scores, flags: 4 objects plus one date in the whole file.
    let at = |n| Limits {
        max_objects: n,
        ..Limits::DEFAULT
    };
    assert!(Sol::from_bytes(&bytes, at(5)).is_ok());
    let e = Sol::from_bytes(&bytes, at(4)).unwrap_err();
    assert!(
        e.to_string().contains("more than the limit of 4 objects"),
        "{e}"
    );
    let shallow = Limits {
        max_depth: 1,
        ..Limits::DEFAULT
    };
    let e = Sol::from_bytes(&bytes, shallow).unwrap_err();
    assert_eq!(e.path(), "$.player.pos", "{e}");
}

#[test]
fn a_writer_that_never_references_strings_is_written_back_its_way() {
    let find = |n: &str| files().into_iter().find(|(name, _)| name == n).unwrap().1;
    let inline = read(&find("amf3-inline-strings.sol")).unwrap();
    assert!(inline.inline_strings);
    // With the flag off, the repeats become references: valid, equal, and shorter.
    let referenced = Sol {
        inline_strings: false,
        ..inline.clone()
    };
    let shorter = referenced.to_bytes().unwrap();
    assert!(shorter.len() < find("amf3-inline-strings.sol").len());
    assert_eq!(read(&shorter).unwrap().values, inline.values);
    // Files that reference their strings (as Flash Player does) keep the default.
    for name in ["amf3-refs.sol", "amf3-basic.sol", "amf3-traits-choices.sol"] {
        assert!(!read(&find(name)).unwrap().inline_strings, "{name}");
    }
}

#[test]
fn an_object_proxy_keeps_the_dynamic_bit_of_its_externalizable_traits() {
    // Flash Player writes ObjectProxy's traits as 0x0f (externalizable, and the dynamic
    // bit of a dynamic class); the bit means nothing to a reader, and is written back.
    let find = |n: &str| files().into_iter().find(|(name, _)| name == n).unwrap().1;
    let bytes = find("amf3-flex-collections.sol");
    let sol = read(&bytes).unwrap();
    let Value::Object {
        traits, external, ..
    } = &sol.values[1].1
    else {
        panic!("list is not an object")
    };
    assert!(traits.externalizable && !traits.dynamic);
    let Some(body) = external.as_ref().and_then(|b| b.value()) else {
        panic!("no body")
    };
    let Value::Array { dense, .. } = body else {
        panic!("the body is not an array")
    };
    let Value::Object { traits: proxy, .. } = &dense[0] else {
        panic!("not an object")
    };
    assert_eq!(proxy.class_name, "flex.messaging.io.ObjectProxy");
    assert!(proxy.externalizable && proxy.dynamic);
    assert_eq!(sol.to_bytes().unwrap(), bytes);
    // Without the bit, the same proxy is written 0x07: the bit is all that changed.
    let mut plain = sol.clone();
    let Value::Object { external, .. } = &mut plain.values[1].1 else {
        panic!()
    };
    let Some(Value::Array { dense, .. }) = external.as_mut().and_then(|b| b.value_mut()) else {
        panic!()
    };
    // Both proxies share one traits entry (the second references the first's).
    let Value::Object { traits: first, .. } = &dense[0] else {
        panic!()
    };
    let cleared = Arc::new(Traits {
        dynamic: false,
        ..(**first).clone()
    });
    for item in dense.iter_mut() {
        let Value::Object { traits, .. } = item else {
            panic!()
        };
        *traits = cleared.clone();
    }
    let again = plain.to_bytes().unwrap();
    let diff: Vec<(u8, u8)> = bytes
        .iter()
        .zip(&again)
        .filter(|(a, b)| a != b)
        .map(|(a, b)| (*a, *b))
        .collect();
    assert_eq!(again.len(), bytes.len());
    assert_eq!(diff, [(0x0f, 0x07)]);
}
