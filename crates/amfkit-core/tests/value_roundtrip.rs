//! Round trips through the `Value` model: decode(encode(v)) == v, byte-exact re-encoding
//! of hand-written inputs, references and cycles, limits.

use amfkit_core::{ErrorKind, Limits, Traits, Value, XmlKind};
use std::sync::Arc;

fn obj(class: &str, sealed: &[(&str, Value)], dynamic: &[(&str, Value)]) -> Value {
    Value::Object {
        traits: Arc::new(Traits {
            class_name: class.into(),
            sealed: sealed.iter().map(|(k, _)| k.to_string()).collect(),
            dynamic: !dynamic.is_empty() || class.is_empty(),
            externalizable: false,
        }),
        sealed: sealed.iter().map(|(_, v)| v.clone()).collect(),
        dynamic: dynamic
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        external: None,
    }
}

#[test]
fn amf3_scalars_round_trip() {
    for v in [
        Value::Undefined,
        Value::Null,
        Value::Bool(true),
        Value::Bool(false),
        Value::Integer(0),
        Value::Integer(-1),
        Value::Integer((1 << 28) - 1),
        Value::Integer(-(1 << 28)),
        Value::Number(1.5),
        Value::String(String::new()),
        Value::String("héllo".into()),
        Value::Date {
            millis: -1234.0,
            tz: None,
        },
        Value::Xml {
            kind: XmlKind::E4x,
            text: "<a/>".into(),
        },
        Value::Xml {
            kind: XmlKind::Document,
            text: "<a>".into(),
        },
        Value::ByteArray(vec![0, 1, 2, 255]),
        Value::IntVector {
            fixed: true,
            items: vec![-1, 0, i32::MAX],
        },
        Value::UintVector {
            fixed: false,
            items: vec![u32::MAX, 0],
        },
        Value::DoubleVector {
            fixed: false,
            items: vec![-0.0, 1e300],
        },
    ] {
        let bytes = v.to_amf3().unwrap();
        assert_eq!(Value::from_amf3(&bytes).unwrap(), v, "{bytes:02x?}");
    }
}

#[test]
fn nan_payload_survives_bit_for_bit() {
    let nan = f64::from_bits(0x7ff8_0000_dead_beef);
    let v = Value::DoubleVector {
        fixed: false,
        items: vec![nan, -0.0],
    };
    let bytes = v.to_amf3().unwrap();
    match Value::from_amf3(&bytes).unwrap() {
        Value::DoubleVector { items, .. } => {
            assert_eq!(items[0].to_bits(), nan.to_bits());
            assert_eq!(items[1].to_bits(), (-0.0f64).to_bits());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn amf3_strings_and_traits_are_referenced() {
    let traits = Arc::new(Traits {
        class_name: "Node".into(),
        sealed: vec!["id".into(), "name".into()],
        dynamic: false,
        externalizable: false,
    });
    let node = |i: i32| Value::Object {
        traits: traits.clone(),
        sealed: vec![Value::Integer(i), Value::String("n".into())],
        dynamic: vec![],
        external: None,
    };
    let v = Value::Array {
        assoc: vec![],
        dense: vec![node(1), node(2)],
    };
    let bytes = v.to_amf3().unwrap();
    // The second object: marker, traits reference 0 (0b01), id 2, "n" as string ref 3.
    assert!(
        bytes.ends_with(&[0x0a, 0x01, 0x04, 0x02, 0x06, 0x06]),
        "{bytes:02x?}"
    );
    let back = Value::from_amf3(&bytes).unwrap();
    assert_eq!(back, v);
    assert_eq!(back.to_amf3().unwrap(), bytes);
}

#[test]
fn amf3_cycle_round_trips_byte_exact() {
    // [ <self> ] : array of one element referring to itself (object reference 0).
    let bytes = [0x09, 0x03, 0x01, 0x09, 0x00];
    let v = Value::from_amf3(&bytes).unwrap();
    assert_eq!(
        v,
        Value::Array {
            assoc: vec![],
            dense: vec![Value::Reference(0)]
        }
    );
    assert_eq!(v.to_amf3().unwrap(), bytes);
}

#[test]
fn amf0_object_reference_and_avmplus() {
    let inner = obj("", &[], &[("a", Value::Number(1.0))]);
    let v = Value::Array {
        assoc: vec![],
        dense: vec![
            inner,
            Value::Reference(1),
            Value::Amf3(Box::new(Value::Integer(7))),
        ],
    };
    let bytes = v.to_amf0().unwrap();
    assert_eq!(Value::from_amf0(&bytes).unwrap(), v);
}

#[test]
fn amf0_dates_and_xml_take_table_slots_as_flash_player_numbers_them() {
    // strict array [date, xml, object, reference 3]: the array is entry 0, the date 1,
    // the XML document 2 and the object 3 (the AMF0 specification lists only objects
    // and arrays as referenceable; Flash Player counts dates and XML too).
    let mut b = vec![0x0a, 0, 0, 0, 4];
    b.push(0x0b);
    b.extend_from_slice(&0f64.to_be_bytes());
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(&[0x0f, 0, 0, 0, 3, b'<', b'a', b'>']);
    b.extend_from_slice(&[0x03, 0, 1, b'a', 0x05, 0, 0, 0x09]);
    b.extend_from_slice(&[0x07, 0, 3]);
    let v = Value::from_amf0(&b).unwrap();
    match &v {
        Value::Array { dense, .. } => {
            assert!(matches!(dense[0], Value::Date { .. }));
            assert!(matches!(dense[1], Value::Xml { .. }));
            assert_eq!(dense[3], Value::Reference(3));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(v.to_amf0().unwrap(), b);
    // one past the table (four entries: the array, the date, the XML, the object)
    let last = b.len() - 1;
    b[last] = 4;
    let e = Value::from_amf0(&b).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("object reference 4 is out of range (the table has 4)"),
        "{e}"
    );
}

#[test]
fn depth_limit_at_and_past_the_limit() {
    let nest = |n: usize| {
        let mut b = Vec::new();
        for _ in 0..n {
            b.extend_from_slice(&[0x09, 0x03, 0x01]);
        }
        b.push(0x01);
        b
    };
    let limits = Limits {
        max_depth: 10,
        ..Limits::DEFAULT
    };
    assert!(Value::all_from_amf3(&nest(10), limits).is_ok());
    let err = Value::all_from_amf3(&nest(11), limits).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::DepthLimit { limit: 10 });
    // 100,000 deep with default limits: a clean error, no stack overflow.
    let err = Value::from_amf3(&nest(100_000)).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::DepthLimit { .. }));
}

#[test]
fn huge_declared_lengths_fail_before_allocating() {
    for bytes in [
        &[0x06, 0xff, 0xff, 0xff, 0xff][..],       // string
        &[0x09, 0xff, 0xff, 0xff, 0xff, 0x01][..], // array
        &[0x0c, 0xff, 0xff, 0xff, 0xff][..],       // bytearray
        &[0x0d, 0xff, 0xff, 0xff, 0xff, 0x00][..], // vector<int>
        &[0x11, 0xff, 0xff, 0xff, 0xff, 0x00][..], // dictionary
    ] {
        let err = Value::from_amf3(bytes).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::LengthExceedsInput { .. } | ErrorKind::SizeLimit { .. }
            ),
            "{bytes:02x?}: {err}"
        );
    }
}

#[test]
fn bad_references_are_errors() {
    assert!(matches!(
        Value::from_amf3(&[0x0a, 0x02]).unwrap_err().kind(),
        ErrorKind::BadReference {
            table: "object",
            index: 1,
            len: 0
        }
    ));
    assert!(matches!(
        Value::from_amf3(&[0x06, 0x00]).unwrap_err().kind(),
        ErrorKind::BadReference {
            table: "string",
            ..
        }
    ));
    assert!(matches!(
        Value::from_amf3(&[0x0a, 0x01]).unwrap_err().kind(),
        ErrorKind::BadReference {
            table: "traits",
            ..
        }
    ));
    assert!(Value::from_amf0(&[0x07, 0x00, 0x00]).is_err());
}

#[test]
fn error_carries_offset_and_path() {
    // {a: [1, <bad marker>]}
    let bytes = [
        0x0a, 0x0b, 0x01, 0x03, b'a', 0x09, 0x05, 0x01, 0x04, 0x01, 0x20,
    ];
    let err = Value::from_amf3(&bytes).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown amf3 marker 0x20, at byte 10 ($.a[1])"
    );
}

#[test]
fn every_prefix_of_a_graph_fails() {
    let v = Value::Array {
        assoc: vec![("k".into(), Value::String("v".into()))],
        dense: vec![
            obj("T", &[("x", Value::Number(2.0))], &[("y", Value::Null)]),
            Value::Dictionary {
                weak_keys: true,
                entries: vec![(Value::Integer(1), Value::Bool(true))],
            },
            Value::ObjectVector {
                fixed: false,
                type_name: "T".into(),
                items: vec![Value::Reference(1)],
            },
        ],
    };
    let bytes = v.to_amf3().unwrap();
    assert_eq!(Value::from_amf3(&bytes).unwrap(), v);
    for n in 0..bytes.len() {
        assert!(Value::from_amf3(&bytes[..n]).is_err(), "prefix {n} decoded");
    }
    let mut long = bytes.clone();
    long.push(0x01);
    assert!(matches!(
        Value::from_amf3(&long).unwrap_err().kind(),
        ErrorKind::TrailingBytes { count: 1 }
    ));
}
