//! Helpers shared by the fuzz targets: the checks every decoder result must pass, and a
//! structural comparison of [`Value`] trees.

use amfkit_core::{Error, ExternalBody, Limits, Value};

/// Limits small enough that random input reaches every limit check.
pub const TIGHT: Limits = Limits {
    max_depth: 6,
    max_objects: 40,
    max_size: 48,
};

/// What every decode error must satisfy: it renders, and its offset lies inside the
/// input (or at its end), since it is shown to users and exposed as `DecodeError.offset`.
pub fn check_error(e: &Error, input_len: usize) {
    let text = e.to_string();
    assert!(!text.is_empty());
    let _ = e.path();
    assert!(
        e.offset() <= input_len,
        "error offset {} beyond the {input_len}-byte input: {text}",
        e.offset()
    );
}

/// Like `Result::ok`, after [`check_error`] on an error.
pub fn checked<T>(r: amfkit_core::Result<T>, input_len: usize) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            check_error(&e, input_len);
            None
        }
    }
}

fn same_f64(a: f64, b: f64) -> bool {
    // Bit equality: NaN payloads and the sign of zero are carried through unchanged.
    a.to_bits() == b.to_bits()
}

fn same_members(a: &[(String, Value)], b: &[(String, Value)]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
}

fn same_list(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
}

/// Structural equality of two trees, floats compared by their bits (so NaN equals the
/// same NaN). Shared values are [`Value::Reference`] indices, so trees have no cycles and
/// plain recursion ends (decoded depth is bounded by the limits).
pub fn same(a: &Value, b: &Value) -> bool {
    use Value as V;
    match (a, b) {
        (V::Number(x), V::Number(y)) => same_f64(*x, *y),
        (V::Date { millis: x, tz: tx }, V::Date { millis: y, tz: ty }) => {
            same_f64(*x, *y) && tx == ty
        }
        (
            V::DoubleVector {
                fixed: fx,
                items: x,
            },
            V::DoubleVector {
                fixed: fy,
                items: y,
            },
        ) => fx == fy && x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_f64(*p, *q)),
        (
            V::ObjectVector {
                fixed: fx,
                type_name: nx,
                items: x,
            },
            V::ObjectVector {
                fixed: fy,
                type_name: ny,
                items: y,
            },
        ) => fx == fy && nx == ny && same_list(x, y),
        (
            V::Array {
                assoc: ax,
                dense: dx,
            },
            V::Array {
                assoc: ay,
                dense: dy,
            },
        ) => same_members(ax, ay) && same_list(dx, dy),
        (
            V::EcmaArray {
                length: lx,
                entries: x,
            },
            V::EcmaArray {
                length: ly,
                entries: y,
            },
        ) => lx == ly && same_members(x, y),
        (
            V::Object {
                traits: tx,
                sealed: sx,
                dynamic: dx,
                external: ex,
            },
            V::Object {
                traits: ty,
                sealed: sy,
                dynamic: dy,
                external: ey,
            },
        ) => {
            tx == ty
                && same_list(sx, sy)
                && same_members(dx, dy)
                && match (ex, ey) {
                    (None, None) => true,
                    (Some(ExternalBody::Value(x)), Some(ExternalBody::Value(y))) => same(x, y),
                    (Some(ExternalBody::Flags(x)), Some(ExternalBody::Flags(y))) => {
                        x.len() == y.len()
                            && x.iter()
                                .zip(y)
                                .all(|(a, b)| a.flags == b.flags && same_list(&a.values, &b.values))
                    }
                    (Some(ExternalBody::Opaque(x)), Some(ExternalBody::Opaque(y))) => x == y,
                    _ => false,
                }
        }
        (
            V::Dictionary {
                weak_keys: wx,
                entries: x,
            },
            V::Dictionary {
                weak_keys: wy,
                entries: y,
            },
        ) => {
            wx == wy
                && x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| same(kx, ky) && same(vx, vy))
        }
        (V::Amf3(x), V::Amf3(y)) => same(x, y),
        // The remaining variants hold no floats and no nested values.
        _ => a == b,
    }
}

/// [`same`] over two lists.
pub fn same_all(a: &[Value], b: &[Value]) -> bool {
    same_list(a, b)
}
