//! The one owner of civil dates and RFC 3339 UTC text, both ways: days
//! since 1970-01-01 to `(year, month, day)` and back, calendar fields to
//! Unix microseconds, RFC 3339 text to microseconds (the gateway's
//! parameters, the firehose bench's event times), and microseconds or
//! milliseconds to text (the dataset generators, the record store's
//! commit times, the SQL cell conversions). Proleptic Gregorian calendar,
//! no leap seconds (a `:60` second is read as the next minute's first).

/// `(year, month, day)` of `days` since 1970-01-01, for any `i64` day
/// count whose year fits `i64` (the days-to-civil algorithm over 400-year
/// eras).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as u32, day as u32)
}

/// Days from 1970-01-01 to `year-month-day` (the inverse of
/// [`civil_from_days`]; `month` in 1..=12 and `day` in the month, which
/// [`micros_from_fields`] checks for its callers).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days in `month` of `year`.
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// Microseconds since the epoch of a UTC calendar time, or `None` when a
/// field is out of range or the result does not fit an `i64`.
pub fn micros_from_fields(
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    micros: u32,
) -> Option<i64> {
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 || micros > 999_999 {
        return None;
    }
    let secs = days_from_civil(year, month, day)
        .checked_mul(86_400)?
        .checked_add(i64::from(hour * 3600 + minute * 60 + second))?;
    secs.checked_mul(1_000_000)?.checked_add(i64::from(micros))
}

fn digits(s: &[u8], at: usize, n: usize) -> Option<u32> {
    let part = s.get(at..at.checked_add(n)?)?;
    part.iter().try_fold(0u32, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + u32::from(b - b'0'))
    })
}

/// Parses RFC 3339 (`2024-05-01T12:00:00.5Z`, `…+02:00`; `t`, `z` and a
/// space separator accepted; fractions past microseconds truncated) into
/// microseconds since the epoch. `None` for anything else: the caller's
/// error names the text.
pub fn parse_rfc3339_micros(text: &str) -> Option<i64> {
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

/// Unix milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60,
        ms.rem_euclid(1000)
    )
}

/// The first microsecond [`write_rfc3339_micros`] writes (0000-01-01).
pub const MIN_TEXT_MICROS: i64 = -62_167_219_200_000_000;
/// The last microsecond [`write_rfc3339_micros`] writes (9999-12-31).
pub const MAX_TEXT_MICROS: i64 = 253_402_300_799_999_999;

/// Writes Unix `micros` as `YYYY-MM-DDTHH:MM:SS.ffffffZ` into `out`
/// without allocating (the SQL cell conversions' hot path). `false`, and
/// `out` untouched, outside [`MIN_TEXT_MICROS`]..=[`MAX_TEXT_MICROS`]
/// (a four-digit year).
#[inline]
pub fn write_rfc3339_micros(micros: i64, out: &mut [u8; 27]) -> bool {
    if !(MIN_TEXT_MICROS..=MAX_TEXT_MICROS).contains(&micros) {
        return false;
    }
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let sod = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let mut put = |at: usize, width: usize, mut v: i64| {
        for i in (0..width).rev() {
            out[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, i64::from(month));
    put(8, 2, i64::from(day));
    put(11, 2, sod / 3600);
    put(14, 2, sod % 3600 / 60);
    put(17, 2, sod % 60);
    put(20, 6, frac);
    out[4] = b'-';
    out[7] = b'-';
    out[10] = b'T';
    out[13] = b':';
    out[16] = b':';
    out[19] = b'.';
    out[26] = b'Z';
    true
}

#[cfg(test)]
#[path = "datetime_tests.rs"]
mod tests;
