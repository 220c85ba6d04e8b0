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

/// Found by the packet target (make fuzz-smoke): a version-3 packet whose one body's
/// length field says 14 while its value takes 15 bytes, because the dynamic members of
/// its AMF3 object end with the empty name spelled `80 01`. The field is kept
/// (`layout.length == Some(14)`) and written again as read; the value is written back
/// in 14 bytes, so the packet written with its layout has a field that now matches its
/// value. The target expected the `Some` itself to survive; what survives is the field.
#[test]
fn packet_kept_length_field_survives_a_value_written_shorter() {
    use amfkit_core::packet::read_packet;
    use amfkit_core::ValueVisitor;

    let input: &[u8] = b"\x00\x03\x00\x00\x00\x01\x00\x04null\x00\x02/1\x00\x00\x00\x0e\
        \x11\x0a\x0b\x01\x03a\x04\x01\x03b\x06\x03x\x80\x01";
    let read = read_packet(input, Limits::DEFAULT, &mut ValueVisitor).unwrap();
    let layout = read.bodies[0].layout;
    assert_eq!(layout.length, Some(14));
    assert_eq!(layout.end - layout.start, 15);
    let written = read.to_bytes().unwrap();
    assert_eq!(&written[16..20], &[0, 0, 0, 14], "the length field as read");
    assert_eq!(
        written.len(),
        input.len() - 1,
        "the value's end marker written minimal"
    );
    let again = read_packet(&written, Limits::DEFAULT, &mut ValueVisitor).unwrap();
    assert_eq!(again.bodies[0].value, read.bodies[0].value);
    assert_eq!(
        again.bodies[0].layout.length, None,
        "the field matches the value now"
    );
    assert_eq!(again.to_bytes().unwrap(), written);
}
