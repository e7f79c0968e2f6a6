//! Timestamps as `convert::Cell::Timestamp` holds them (microseconds since
//! 1970-01-01T00:00:00Z): from RFC 3339 text (params) and from calendar
//! fields (MySQL's binary DATETIME).

/// Days from 1970-01-01 to `y-m-d` in the proleptic Gregorian calendar.
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Microseconds since the epoch of a UTC calendar time, or `None` when a
/// field is out of range.
pub(crate) fn micros_from_fields(
    y: i64,
    mo: u32,
    d: u32,
    h: u32,
    mi: u32,
    s: u32,
    us: u32,
) -> Option<i64> {
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) {
        return None;
    }
    if h > 23 || mi > 59 || s > 60 || us > 999_999 {
        return None;
    }
    let secs = days_from_civil(y, mo, d) * 86_400 + i64::from(h * 3600 + mi * 60 + s);
    secs.checked_mul(1_000_000)?.checked_add(i64::from(us))
}

fn digits(s: &[u8], at: usize, n: usize) -> Option<u32> {
    let part = s.get(at..at + n)?;
    part.iter().try_fold(0u32, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0'))
    })
}

/// Parses RFC 3339 (`2024-05-01T12:00:00.5Z`, `...+02:00`; `t`, `z` and a
/// space separator accepted; fractions past microseconds truncated) into
/// microseconds since the epoch. `None` for anything else.
pub(crate) fn parse_rfc3339(text: &str) -> Option<i64> {
    let s = text.as_bytes();
    let y = i64::from(digits(s, 0, 4)?);
    if s.get(4) != Some(&b'-') || s.get(7) != Some(&b'-') || s.get(13) != Some(&b':') {
        return None;
    }
    if !matches!(s.get(10), Some(b'T' | b't' | b' ')) || s.get(16) != Some(&b':') {
        return None;
    }
    let (mo, d) = (digits(s, 5, 2)?, digits(s, 8, 2)?);
    let (h, mi, sec) = (digits(s, 11, 2)?, digits(s, 14, 2)?, digits(s, 17, 2)?);
    let mut i = 19;
    let mut us = 0u32;
    if s.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while s.get(i).is_some_and(u8::is_ascii_digit) {
            if i - start < 6 {
                us = us * 10 + u32::from(s[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..6 {
            us *= 10;
        }
    }
    let offset_secs = match s.get(i) {
        Some(b'Z' | b'z') if i + 1 == s.len() => 0,
        Some(&sign @ (b'+' | b'-')) if i + 6 == s.len() && s[i + 3] == b':' => {
            let (oh, om) = (digits(s, i + 1, 2)?, digits(s, i + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let off = i64::from(oh * 3600 + om * 60);
            if sign == b'+' { off } else { -off }
        }
        _ => return None,
    };
    micros_from_fields(y, mo, d, h, mi, sec, us)?.checked_sub(offset_secs * 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::{micros_from_fields, parse_rfc3339};
    use proptest::prelude::*;

    #[test]
    fn rfc3339_with_zones_and_fractions() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("1970-01-01T00:00:01.5Z"), Some(1_500_000));
        assert_eq!(parse_rfc3339("1970-01-01T02:00:00+02:00"), Some(0));
        assert_eq!(
            parse_rfc3339("2000-03-01 00:00:00.000001z"),
            Some(951_868_800_000_001)
        );
        assert_eq!(parse_rfc3339("1969-12-31T23:59:59.9999999Z"), Some(-1));
        for bad in [
            "",
            "2024-02-30T00:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+0200",
            "x024-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    proptest! {
        /// Every valid calendar time parses back to the fields' micros.
        #[test]
        fn formatted_fields_parse_back(y in 0i64..10_000, mo in 1u32..13, d in 1u32..29,
            h in 0u32..24, mi in 0u32..60, s in 0u32..60, us in 0u32..1_000_000) {
            let text = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{us:06}Z");
            prop_assert_eq!(parse_rfc3339(&text), micros_from_fields(y, mo, d, h, mi, s, us));
        }

        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,40}") {
            let _ = parse_rfc3339(&s);
        }
    }
}
