//! atproto datetimes: the intersection of RFC 3339 and ISO 8601.
//!
//! `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)`, uppercase `T` and `Z`,
//! 1–20 fraction digits, `-00:00` not allowed, at most 64 characters.

use super::SyntaxError;

const W: &str = "datetime";

struct Parts {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    /// Offset east of UTC, in minutes.
    offset_minutes: i32,
    /// The offset's hour and minute fields as written.
    offset_hm: (u32, u32),
}

fn digits(b: &[u8], at: usize, n: usize) -> Result<u32, SyntaxError> {
    let mut v = 0u32;
    for i in at..at + n {
        match b.get(i) {
            Some(c) if c.is_ascii_digit() => v = v * 10 + u32::from(c - b'0'),
            _ => return Err(SyntaxError::at(W, "expected a digit", i)),
        }
    }
    Ok(v)
}

fn expect(b: &[u8], at: usize, c: u8, reason: &'static str) -> Result<(), SyntaxError> {
    if b.get(at) == Some(&c) {
        Ok(())
    } else {
        Err(SyntaxError::at(W, reason, at))
    }
}

fn parse(s: &str) -> Result<Parts, SyntaxError> {
    let b = s.as_bytes();
    if b.len() > 64 {
        return Err(SyntaxError::new(W, "longer than 64 characters"));
    }
    let year = digits(b, 0, 4)?;
    expect(b, 4, b'-', "expected '-'")?;
    let month = digits(b, 5, 2)?;
    expect(b, 7, b'-', "expected '-'")?;
    let day = digits(b, 8, 2)?;
    expect(b, 10, b'T', "expected 'T'")?;
    let hour = digits(b, 11, 2)?;
    expect(b, 13, b':', "expected ':'")?;
    let minute = digits(b, 14, 2)?;
    expect(b, 16, b':', "expected ':'")?;
    let second = digits(b, 17, 2)?;
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return Err(SyntaxError::at(W, "empty fraction", i));
        }
        if i - start > 20 {
            return Err(SyntaxError::at(
                W,
                "more than 20 fraction digits",
                start + 20,
            ));
        }
    }
    let mut offset_hm = (0, 0);
    let offset_minutes = match b.get(i) {
        Some(b'Z') => {
            i += 1;
            0
        }
        Some(&sign @ (b'+' | b'-')) => {
            let h = digits(b, i + 1, 2)?;
            expect(b, i + 3, b':', "expected ':' in offset")?;
            let m = digits(b, i + 4, 2)?;
            if sign == b'-' && h == 0 && m == 0 {
                return Err(SyntaxError::at(W, "-00:00 is not allowed", i));
            }
            i += 6;
            offset_hm = (h, m);
            let v = (h * 60 + m) as i32;
            if sign == b'-' { -v } else { v }
        }
        _ => return Err(SyntaxError::at(W, "expected 'Z' or an offset", i)),
    };
    if i != b.len() {
        return Err(SyntaxError::at(W, "unexpected characters after offset", i));
    }
    Ok(Parts {
        year,
        month,
        day,
        hour,
        minute,
        second,
        offset_minutes,
        offset_hm,
    })
}

/// Checks the datetime grammar only (values such as month 13 pass).
pub fn validate_datetime_syntax(s: &str) -> Result<(), SyntaxError> {
    parse(s).map(|_| ())
}

fn is_leap(y: u32) -> bool {
    (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400)
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Checks the grammar and that the value is a real instant at or after
/// 0000-01-01T00:00:00Z.
pub fn validate_datetime(s: &str) -> Result<(), SyntaxError> {
    let p = parse(s)?;
    if !(1..=12).contains(&p.month) {
        return Err(SyntaxError::at(W, "month out of range", 5));
    }
    if p.day == 0 || p.day > days_in_month(p.year, p.month) {
        return Err(SyntaxError::at(W, "day out of range", 8));
    }
    if p.hour > 23 {
        return Err(SyntaxError::at(W, "hour out of range", 11));
    }
    if p.minute > 59 {
        return Err(SyntaxError::at(W, "minute out of range", 14));
    }
    if p.second > 59 {
        return Err(SyntaxError::at(W, "second out of range", 17));
    }
    if p.offset_hm.0 > 23 || p.offset_hm.1 > 59 {
        return Err(SyntaxError::new(W, "offset out of range"));
    }
    // Only year 0, early on 1 January, can normalise to before year 0.
    if p.year == 0 && p.month == 1 && p.day == 1 {
        let minutes = (p.hour * 60 + p.minute) as i32 - p.offset_minutes;
        if minutes < 0 {
            return Err(SyntaxError::new(W, "normalises to before year 0"));
        }
    }
    Ok(())
}
