//! Lenient reading of bytes others wrote (`amfkit_core::lenient`): opaque bodies of
//! unknown externalizable classes (where they are sound, and the error where they are
//! not), classes read as one value, Flex's small forms, the limits on every lenient
//! path, and packets written back with the length fields they were read with.

use std::sync::Arc;

use amfkit_core::packet::{read_packet, read_packet_lenient};
use amfkit_core::{BodyAs, Encoder, ErrorKind, ExternalBody, Lenient, Limits, Value, ValueVisitor};

/// Bytes from spaced hex, with "quoted" ASCII: h(r#"06 05 "ab""#).
fn h(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, part) in text.split('"').enumerate() {
        if i % 2 == 1 {
            out.extend_from_slice(part.as_bytes());
        } else {
            for byte in part.split_whitespace() {
                out.push(u8::from_str_radix(byte, 16).unwrap());
            }
        }
    }
    out
}

fn opaque() -> Option<Arc<Lenient>> {
    Some(Arc::new(Lenient {
        opaque_unknown: true,
        ..Lenient::default()
    }))
}

/// An object of the unknown externalizable class `com.x.Ext` whose body is 5 bytes.
const EXT: &str = r#"0a 07 13 "com.x.Ext" 01 02 03 04 05"#;

#[test]
fn an_unknown_externalizable_class_is_an_error_by_default() {
    let e = Value::from_amf3(&h(EXT)).unwrap_err();
    assert_eq!(
        e.kind(),
        &ErrorKind::UnknownExternalizable("com.x.Ext".into())
    );
    let e = Value::from_amf3_with(&h(EXT), Limits::DEFAULT, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::UnknownExternalizable(_)));
}

#[test]
fn an_opaque_body_takes_the_rest_and_writes_back_byte_for_byte() {
    let bytes = h(EXT);
    let v = Value::from_amf3_with(&bytes, Limits::DEFAULT, opaque()).unwrap();
    let Value::Object {
        traits, external, ..
    } = &v
    else {
        panic!("{v:?}")
    };
    assert_eq!(traits.class_name, "com.x.Ext");
    assert!(traits.externalizable);
    assert_eq!(external, &Some(ExternalBody::Opaque(vec![1, 2, 3, 4, 5])));
    assert_eq!(v.to_amf3().unwrap(), bytes);
}

#[test]
fn an_opaque_body_as_the_last_item_of_arrays() {
    // [1, [<ext>]]: the object ends the input, inside two arrays.
    let bytes = h(&format!("09 05 01 04 01 09 03 01 {EXT}"));
    let v = Value::from_amf3_with(&bytes, Limits::DEFAULT, opaque()).unwrap();
    assert_eq!(v.to_amf3().unwrap(), bytes);
    // The same in AMF0, through the AVM+ switch of a strict array's last item.
    let bytes = h(&format!(
        "0a 00 00 00 02 00 3f f0 00 00 00 00 00 00 11 {EXT}"
    ));
    let v = Value::from_amf0_with(&bytes, Limits::DEFAULT, opaque()).unwrap();
    assert_eq!(v.to_amf0().unwrap(), bytes);
}

#[test]
fn values_after_an_opaque_body_are_an_error_that_says_why() {
    // [<ext>, 1]: the array's second item is somewhere in the opaque bytes.
    let bytes = h(&format!("09 05 01 {EXT} 04 01"));
    let e = Value::from_amf3_with(&bytes, Limits::DEFAULT, opaque()).unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::AfterOpaque { at: 15 });
    assert!(
        e.to_string()
            .contains("an opaque body is sound only where its object ends the input"),
        "{e}"
    );
    // A dynamic object's end marker after the member is in the opaque bytes too.
    let bytes = h(&format!(r#"0a 0b 01 03 "a" {EXT} 01"#));
    let e = Value::from_amf3_with(&bytes, Limits::DEFAULT, opaque()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::AfterOpaque { .. }), "{e}");
}

#[test]
fn opaque_bodies_stay_inside_the_limits() {
    let bytes = h(r#"0a 07 03 "X" 01 02 03 04 05"#);
    let tight = Limits {
        max_size: 4,
        ..Limits::DEFAULT
    };
    let e = Value::from_amf3_with(&bytes, tight, opaque()).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::SizeLimit {
                what: "opaque body",
                size: 5,
                limit: 4
            }
        ),
        "{e}"
    );
    // The object and its opaque body count as two objects.
    let one = Limits {
        max_objects: 1,
        ..Limits::DEFAULT
    };
    let e = Value::from_amf3_with(&bytes, one, opaque()).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::ObjectLimit { limit: 1 }),
        "{e}"
    );
    // Depth: the opaque object inside arrays nested past the limit.
    let deep = Limits {
        max_depth: 2,
        ..Limits::DEFAULT
    };
    let nested = h(&format!("09 03 01 09 03 01 {EXT}"));
    let e = Value::from_amf3_with(&nested, deep, opaque()).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::DepthLimit { limit: 2 }),
        "{e}"
    );
}

#[test]
fn a_class_named_as_one_value_reads_its_body_and_keeps_its_name() {
    // com.x.List writes an Array, as ArrayCollection does; com.x.Other stays refused.
    let bytes = h(r#"0a 07 15 "com.x.List" 09 05 01 04 01 06 03 "x""#);
    let lenient = Lenient {
        classes: [("com.x.List".to_owned(), BodyAs::ArrayCollection)]
            .into_iter()
            .collect(),
        ..Lenient::default()
    };
    let lenient = Some(Arc::new(lenient));
    let v = Value::from_amf3_with(&bytes, Limits::DEFAULT, lenient.clone()).unwrap();
    let Value::Object { external, .. } = &v else {
        panic!()
    };
    let body = external.as_ref().and_then(|b| b.value()).unwrap();
    assert!(matches!(body, Value::Array { dense, .. } if dense.len() == 2));
    assert_eq!(v.to_amf3().unwrap(), bytes);
    let e = Value::from_amf3_with(&h(EXT), Limits::DEFAULT, lenient).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::UnknownExternalizable(_)));
}

#[test]
fn small_form_messages_are_read_level_by_level_and_written_back() {
    // DSK: AbstractMessage flags 81 02 (body; then messageId as 16 bytes), AsyncMessage
    // flags 01 (correlationId), AcknowledgeMessage flags 00.
    let id = "00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff";
    let bytes = h(&format!(
        r#"0a 07 07 "DSK" 81 02 06 05 "hi" 0c 21 {id} 01 06 07 "abc" 00"#
    ));
    let v = Value::from_amf3(&bytes).unwrap();
    let Value::Object {
        external: Some(ExternalBody::Flags(levels)),
        ..
    } = &v
    else {
        panic!("{v:?}")
    };
    assert_eq!(levels.len(), 3);
    assert_eq!(levels[0].flags, vec![0x81, 0x02]);
    assert_eq!(levels[0].values[0], Value::String("hi".into()));
    assert!(matches!(&levels[0].values[1], Value::ByteArray(b) if b.len() == 16));
    assert_eq!(levels[1].values, vec![Value::String("abc".into())]);
    assert!(levels[2].values.is_empty());
    assert_eq!(v.to_amf3().unwrap(), bytes);
    // A level with more flag bytes than any writer writes is refused.
    let many = h(&format!(r#"0a 07 07 "DSA" {}00"#, "80 ".repeat(20)));
    let e = Value::from_amf3(&many).unwrap_err();
    assert!(e.to_string().contains("more than 16 flag bytes"), "{e}");
}

/// A version-3 packet: a body whose value is an AVM+ switch to `EXT` with its true
/// length (or `length`), then a second body holding the AMF0 string "ok".
fn packet_with_opaque(length: Option<u32>) -> Vec<u8> {
    let first = h(&format!("11 {EXT}"));
    let mut e = Encoder::new();
    e.packet_start(3, 0).unwrap();
    e.packet_bodies(2).unwrap();
    let slot = e.packet_body("null", "/1").unwrap();
    e.out.bytes(&first);
    e.packet_part_end_as(slot, length).unwrap();
    let slot = e.packet_body("null", "/2").unwrap();
    e.amf0_string("ok").unwrap();
    e.packet_part_end(slot).unwrap();
    e.take()
}

#[test]
fn an_opaque_body_ends_with_its_packet_body_when_the_length_field_is_true() {
    let bytes = packet_with_opaque(None);
    assert!(read_packet(&bytes, Limits::DEFAULT, &mut ValueVisitor).is_err());
    let p = read_packet_lenient(&bytes, Limits::DEFAULT, opaque(), &mut ValueVisitor).unwrap();
    assert_eq!(p.bodies.len(), 2);
    let Value::Amf3(inner) = &p.bodies[0].value else {
        panic!()
    };
    let Value::Object { external, .. } = &**inner else {
        panic!()
    };
    assert_eq!(external, &Some(ExternalBody::Opaque(vec![1, 2, 3, 4, 5])));
    assert_eq!(p.bodies[1].value, Value::String("ok".into()));
    assert_eq!(p.to_bytes().unwrap(), bytes);
}

#[test]
fn with_an_untrue_length_field_an_opaque_body_takes_the_next_bodies_too() {
    // Length 0 (as PyAMF writes): nothing says where the opaque body ends, so it takes
    // the rest, and the second body is missing.
    let bytes = packet_with_opaque(Some(0));
    let e = read_packet_lenient(&bytes, Limits::DEFAULT, opaque(), &mut ValueVisitor).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::AfterOpaque { .. }), "{e}");
    assert!(e.path().starts_with("$.bodies[1]"), "{e}");
}

#[test]
fn packets_are_written_back_with_the_length_fields_they_were_read_with() {
    for length in [Some(0), Some(1), Some(0xffff_ffff)] {
        let mut e = Encoder::new();
        e.packet_start(0, 1).unwrap();
        let slot = e.packet_header("Credentials", false).unwrap();
        e.amf0_string("x").unwrap();
        e.packet_part_end_as(slot, length).unwrap();
        e.packet_bodies(1).unwrap();
        let slot = e.packet_body("Echo.echo", "/1").unwrap();
        e.amf0_strict_array_start(1).unwrap();
        e.amf0_string("hi").unwrap();
        e.packet_part_end_as(slot, length).unwrap();
        let bytes = e.take();
        let p = read_packet(&bytes, Limits::DEFAULT, &mut ValueVisitor).unwrap();
        assert_eq!(p.bodies[0].layout.length, length);
        assert_eq!(p.headers[0].layout.length, length);
        assert_eq!(p.to_bytes().unwrap(), bytes);
    }
}
