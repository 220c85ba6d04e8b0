//! Inputs found by the fuzz targets in crates/fuzz, each named after what it does. Each
//! failed before its fix; the bytes are the minimized crash input.

use amfkit_core::{Limits, Value};

/// `09 03 80 01 03 01 01`: an AMF3 array whose associative part ends with the empty
/// string written as a non-minimal U29 (`80 01`). It was read as a member named "",
/// which the writer cannot write (the empty name is the terminator), so decode →
/// encode failed; Flash Player reads any empty name as the end of the list.
#[test]
fn amf3_non_minimal_empty_key_ends_the_associative_part() {
    let input = b"\x09\x03\x80\x01\x03\x01\x01";
    let values = Value::all_from_amf3(input, Limits::DEFAULT).unwrap();
    assert_eq!(
        values,
        vec![
            Value::Array {
                assoc: vec![],
                dense: vec![Value::Bool(true)],
            },
            Value::Null,
            Value::Null,
        ]
    );
    let bytes = Value::all_to_amf3(&values).unwrap();
    assert_eq!(bytes, b"\x09\x03\x01\x03\x01\x01");
    assert_eq!(
        Value::all_from_amf3(&bytes, Limits::DEFAULT).unwrap(),
        values
    );
}

/// The same terminator in the dynamic members of an anonymous object:
/// `0a 0b 01 | 80 01`: traits inline, dynamic, no class name, then the empty name as
/// `80 01` ends the object.
#[test]
fn amf3_non_minimal_empty_key_ends_dynamic_members() {
    let value = Value::from_amf3(b"\x0a\x0b\x01\x80\x01").unwrap();
    match &value {
        Value::Object { dynamic, .. } => assert!(dynamic.is_empty()),
        other => panic!("{other:?}"),
    }
    assert_eq!(value.to_amf3().unwrap(), b"\x0a\x0b\x01\x01");
}
