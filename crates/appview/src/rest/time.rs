//! Times on the wire: integer microseconds since the Unix epoch (the
//! model's) to and from RFC 3339 as Prefect writes them
//! (`2026-12-05T09:29:58.899981Z`: UTC, six fraction digits). Parsing
//! takes what Prefect's filters are sent in practice: a date, `T` or a
//! space, a time with an optional fraction (up to nine digits, truncated
//! to microseconds), and `Z`, an `±HH:MM` offset or none (UTC).

use codec::datetime;

// The calendar is `codec::datetime`'s, the workspace's one owner of dates;
// these adapt its types to this module's i64 fields.

/// Days since 1970-01-01 of a proleptic Gregorian date (month and day
/// already checked by the caller).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    datetime::days_from_civil(y, m as u32, d as u32)
}

/// The date of a day since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let (y, m, d) = datetime::civil_from_days(z);
    (y, i64::from(m), i64::from(d))
}

/// Writes `us` as RFC 3339 UTC with six fraction digits. Years 0-9999
/// (every time the REST server renders in practice) go through
/// `codec::datetime`'s allocation-free digit writer, which a run's seven
/// times per row of a list page (`appview.rest_*`) notice; other years
/// through `fmt` (`write_fmt`, the same text: a test holds them equal).
pub fn write(out: &mut String, us: i64) {
    let mut b = [0u8; 27];
    if !datetime::write_rfc3339_micros(us, &mut b) {
        return write_fmt(out, us);
    }
    // The buffer is ASCII throughout.
    out.push_str(std::str::from_utf8(&b).unwrap_or_default());
}

/// [`write`] through `fmt`, for any year.
fn write_fmt(out: &mut String, us: i64) {
    use std::fmt::Write as _;
    let secs = us.div_euclid(1_000_000);
    let frac = us.rem_euclid(1_000_000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:06}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    );
}

/// `us` as RFC 3339 text.
pub fn format(us: i64) -> String {
    let mut s = String::with_capacity(27);
    write(&mut s, us);
    s
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let part = b.get(at..at + n)?;
    part.iter().try_fold(0i64, |v, c| {
        c.is_ascii_digit().then(|| v * 10 + i64::from(c - b'0'))
    })
}

/// Parses an RFC 3339 date-time (see the module doc) into µs; `None` when
/// it is not one (or out of the i64 range).
pub fn parse(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let (y, mo, d) = (digits(b, 0, 4)?, digits(b, 5, 2)?, digits(b, 8, 2)?);
    if b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || !matches!(b.get(10), Some(b'T' | b't' | b' '))
    {
        return None;
    }
    let (h, mi, se) = (digits(b, 11, 2)?, digits(b, 14, 2)?, digits(b, 17, 2)?);
    if b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return None;
    }
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 59
    {
        return None;
    }
    let mut at = 19;
    let mut frac = 0i64;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            if at - start < 6 {
                frac = frac * 10 + i64::from(b[at] - b'0');
            }
            at += 1;
        }
        let n = at - start;
        if n == 0 || n > 9 {
            return None;
        }
        for _ in n..6 {
            frac *= 10;
        }
    }
    let offset = match b.get(at..)? {
        [] | [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), rest @ ..] if rest.len() == 5 && rest[2] == b':' => {
            let (oh, om) = (digits(rest, 0, 2)?, digits(rest, 3, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'-' { -o } else { o }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se - offset;
    secs.checked_mul(1_000_000)?.checked_add(frac)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    i64::from(datetime::days_in_month(y, m as u32))
}

/// Now, in µs since the epoch.
pub fn now_us() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn prefect_spellings_parse() {
        assert_eq!(parse("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(format(1_796_463_398_899_981), "2026-12-05T09:36:38.899981Z");
        assert_eq!(
            parse("2026-12-05T09:36:38.899981Z"),
            Some(1_796_463_398_899_981)
        );
        assert_eq!(
            parse("2026-12-05T10:36:38.899981+01:00"),
            Some(1_796_463_398_899_981)
        );
        assert_eq!(
            parse("2026-12-05 09:36:38.8999819"),
            Some(1_796_463_398_899_981)
        );
        assert_eq!(parse("2026-12-05T09:36:38"), Some(1_796_463_398_000_000));
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-12-05",
            "2026-12-05T09:36:38.Z",
            "2026-12-05T09:36:38+1:00",
            "x026-12-05T09:36:38Z",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(us in -62_135_596_800_000_000i64..253_402_300_799_999_999) {
            prop_assert_eq!(parse(&format(us)), Some(us));
        }

        #[test]
        fn the_digit_writer_writes_what_fmt_writes(
            us in prop_oneof![any::<i64>(), -62_167_219_200_000_000i64..253_402_300_800_000_000]
        ) {
            let (mut fast, mut slow) = (String::new(), String::new());
            write(&mut fast, us);
            write_fmt(&mut slow, us);
            prop_assert_eq!(fast, slow);
        }

        #[test]
        fn any_text_parses_or_refuses_without_panicking(s in "\\PC{0,40}") {
            let _ = parse(&s);
        }
    }
}
