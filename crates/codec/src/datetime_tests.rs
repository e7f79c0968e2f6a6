use proptest::prelude::*;

use super::*;

fn text(micros: i64) -> String {
    let mut out = [0u8; 27];
    assert!(write_rfc3339_micros(micros, &mut out), "{micros}");
    String::from_utf8(out.to_vec()).unwrap()
}

#[test]
fn known_dates() {
    // (days since the epoch, civil date): the epoch, the day before it,
    // leap days of a 400-year and a 4-year leap year, the day after a
    // 100-year non-leap February, and both ends of four-digit years.
    let vectors = [
        (0, (1970, 1, 1)),
        (-1, (1969, 12, 31)),
        (11_016, (2000, 2, 29)),
        (19_782, (2024, 2, 29)),
        (-25_508, (1900, 3, 1)),
        (-719_528, (0, 1, 1)),
        (2_932_896, (9999, 12, 31)),
    ];
    for (days, (y, m, d)) in vectors {
        assert_eq!(civil_from_days(days), (y, m, d), "{days}");
        assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
    }
    assert_eq!(days_in_month(1900, 2), 28);
    assert_eq!(days_in_month(2000, 2), 29);
    assert_eq!(days_in_month(2023, 2), 28);
}

#[test]
fn known_texts() {
    assert_eq!(rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(rfc3339_millis(951_782_400_123), "2000-02-29T00:00:00.123Z");
    assert_eq!(rfc3339_millis(-1), "1969-12-31T23:59:59.999Z");
    assert_eq!(
        rfc3339_millis(1_717_200_000_123),
        "2024-06-01T00:00:00.123Z"
    );
    assert_eq!(text(0), "1970-01-01T00:00:00.000000Z");
    assert_eq!(text(951_782_400_123_456), "2000-02-29T00:00:00.123456Z");
    assert_eq!(text(-1), "1969-12-31T23:59:59.999999Z");
    assert_eq!(text(MIN_TEXT_MICROS), "0000-01-01T00:00:00.000000Z");
    assert_eq!(text(MAX_TEXT_MICROS), "9999-12-31T23:59:59.999999Z");
    let mut out = [b'x'; 27];
    assert!(!write_rfc3339_micros(MIN_TEXT_MICROS - 1, &mut out));
    assert!(!write_rfc3339_micros(MAX_TEXT_MICROS + 1, &mut out));
    assert_eq!(out, [b'x'; 27], "a refused value leaves the buffer alone");
}

#[test]
fn rfc3339_with_zones_and_fractions() {
    assert_eq!(parse_rfc3339_micros("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        parse_rfc3339_micros("1970-01-01T00:00:01.5Z"),
        Some(1_500_000)
    );
    assert_eq!(parse_rfc3339_micros("1970-01-01T02:00:00+02:00"), Some(0));
    assert_eq!(
        parse_rfc3339_micros("2000-03-01 00:00:00.000001z"),
        Some(951_868_800_000_001)
    );
    assert_eq!(
        parse_rfc3339_micros("1969-12-31T23:59:59.9999999Z"),
        Some(-1)
    );
    assert_eq!(
        parse_rfc3339_micros("2024-06-01T00:00:00.123Z"),
        Some(1_717_200_000_123_000)
    );
    for bad in [
        "",
        "2024-02-30T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2024-01-01T00:00:00",
        "2024-01-01T24:00:00Z",
        "2024-01-01T00:00:00.Z",
        "2024-01-01T00:00:00+0200",
        "2024-01-01T00:00:00+24:00",
        "x024-01-01T00:00:00Z",
        "2024-01-01T00:00:00Zjunk",
    ] {
        assert_eq!(parse_rfc3339_micros(bad), None, "{bad}");
    }
}

proptest! {
    /// Days to a civil date and back is the identity over ±10^7 years.
    #[test]
    fn days_round_trip(days in -3_652_425_000i64..3_652_425_000) {
        let (y, m, d) = civil_from_days(days);
        prop_assert!((1..=12).contains(&m));
        prop_assert!(d >= 1 && d <= days_in_month(y, m));
        prop_assert_eq!(days_from_civil(y, m, d), days);
    }

    /// A civil date to days and back is the identity, and consecutive
    /// dates are consecutive days.
    #[test]
    fn civil_round_trip(y in -100_000i64..100_000, m in 1u32..13, d in 1u32..32) {
        prop_assume!(d <= days_in_month(y, m));
        let days = days_from_civil(y, m, d);
        prop_assert_eq!(civil_from_days(days), (y, m, d));
        let (ny, nm, nd) = civil_from_days(days + 1);
        let next = if d < days_in_month(y, m) {
            (y, m, d + 1)
        } else if m < 12 {
            (y, m + 1, 1)
        } else {
            (y + 1, 1, 1)
        };
        prop_assert_eq!((ny, nm, nd), next);
    }

    /// Every four-digit-year microsecond written as text parses back to
    /// itself, and the millisecond text parses back to its millisecond.
    #[test]
    fn text_round_trip(micros in MIN_TEXT_MICROS..=MAX_TEXT_MICROS) {
        prop_assert_eq!(parse_rfc3339_micros(&text(micros)), Some(micros));
        let ms = micros.div_euclid(1000);
        prop_assert_eq!(parse_rfc3339_micros(&rfc3339_millis(ms)), Some(ms * 1000));
    }

    /// Every valid calendar time parses back to the fields' micros, in
    /// any offset.
    #[test]
    fn formatted_fields_parse_back(y in 0i64..10_000, mo in 1u32..13, d in 1u32..29,
        h in 0u32..24, mi in 0u32..60, s in 0u32..60, us in 0u32..1_000_000,
        off in -(23 * 60 + 59)..=(23i64 * 60 + 59)) {
        let at = micros_from_fields(y, mo, d, h, mi, s, us).unwrap();
        let text = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{us:06}Z");
        prop_assert_eq!(parse_rfc3339_micros(&text), Some(at));
        let sign = if off < 0 { '-' } else { '+' };
        let zoned = format!(
            "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{us:06}{sign}{:02}:{:02}",
            off.abs() / 60,
            off.abs() % 60
        );
        prop_assert_eq!(parse_rfc3339_micros(&zoned), Some(at - off * 60_000_000));
    }

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,40}") {
        let _ = parse_rfc3339_micros(&s);
    }
}
