//! Calendar arithmetic between AMF dates (milliseconds since 1970-01-01 UTC) and civil
//! date and time fields (proleptic Gregorian, years 1 to 9999, as Python's `datetime`).

/// Milliseconds of 0001-01-01T00:00:00 and of 9999-12-31T23:59:59.999999.
pub const MIN_MILLIS: f64 = -62_135_596_800_000.0;
pub const MAX_MILLIS: f64 = 253_402_300_799_999.999;

/// Days since 1970-01-01 to (year, month, day).
pub fn civil_from_days(z: i64) -> (i32, u8, u8) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    ((y + (m <= 2) as i64) as i32, m as u8, d as u8)
}

/// (year, month, day) to days since 1970-01-01.
pub fn days_from_civil(y: i32, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y as i64 - 1 } else { y as i64 };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil fields of a date in range: (y, mo, d, h, mi, s, us).
pub fn fields(millis: f64) -> Option<(i32, u8, u8, u8, u8, u8, u32)> {
    if !(MIN_MILLIS..=MAX_MILLIS).contains(&millis) {
        return None;
    }
    // Whole milliseconds and the fraction apart: millis * 1000 would pass 2^53.
    let whole = millis.floor();
    let us = whole as i64 * 1000 + ((millis - whole) * 1000.0).round() as i64;
    let day_us = 86_400_000_000i64;
    let days = us.div_euclid(day_us);
    let rem = us.rem_euclid(day_us);
    let (y, mo, d) = civil_from_days(days);
    if !(1..=9999).contains(&y) {
        return None;
    }
    let secs = rem / 1_000_000;
    Some((
        y,
        mo,
        d,
        (secs / 3600) as u8,
        ((secs / 60) % 60) as u8,
        (secs % 60) as u8,
        (rem % 1_000_000) as u32,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11017);
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        for z in (-800_000..800_000).step_by(997) {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m as u32, d as u32), z);
        }
        assert_eq!(fields(-1.0), Some((1969, 12, 31, 23, 59, 59, 999_000)));
        assert_eq!(fields(MIN_MILLIS), Some((1, 1, 1, 0, 0, 0, 0)));
        assert_eq!(fields(f64::NAN), None);
        assert_eq!(
            fields(253_402_300_799_999.0),
            Some((9999, 12, 31, 23, 59, 59, 999_000))
        );
        assert_eq!(fields(-0.5), Some((1969, 12, 31, 23, 59, 59, 999_500)));
    }
}
