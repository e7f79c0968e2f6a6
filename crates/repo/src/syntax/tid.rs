//! TIDs: 64-bit timestamp identifiers written as 13 base32-sortable
//! characters (`234567abcdefghijklmnopqrstuvwxyz`), and a monotonic
//! generator.
//!
//! Layout: top bit 0, 53 bits of microseconds since the Unix epoch, 10 bits
//! of clock id. The first character therefore carries only 4 bits and must
//! be one of `234567abcdefghij`.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::SyntaxError;

const ALPHABET: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";
const WHAT: &str = "TID";

/// Maps an ASCII byte to its base32-sortable value, or 0xff.
const DECODE: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 32 {
        t[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    t
};

/// A parsed TID.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tid(u64);

impl Tid {
    /// Builds a TID from a microsecond timestamp (low 53 bits kept) and a
    /// clock id (low 10 bits kept).
    pub fn from_parts(timestamp_micros: u64, clock_id: u16) -> Tid {
        Tid(((timestamp_micros & ((1 << 53) - 1)) << 10) | u64::from(clock_id & 0x3ff))
    }

    /// The raw 64-bit value.
    pub fn as_u64(&self) -> u64 {
        self.0
    }

    /// Microseconds since the Unix epoch.
    pub fn timestamp_micros(&self) -> u64 {
        (self.0 >> 10) & ((1 << 53) - 1)
    }

    /// The 10-bit clock id.
    pub fn clock_id(&self) -> u16 {
        (self.0 & 0x3ff) as u16
    }

    /// The 13-character form.
    pub fn encode(&self) -> [u8; 13] {
        let mut out = [0u8; 13];
        for (i, slot) in out.iter_mut().enumerate() {
            let shift = 60 - 5 * i as i32;
            let v = if shift >= 0 {
                (self.0 >> shift) & 0x1f
            } else {
                (self.0 << -shift) & 0x1f
            };
            *slot = ALPHABET[v as usize];
        }
        out
    }

    /// Parses and validates the 13-character form.
    pub fn parse(s: &str) -> Result<Tid, SyntaxError> {
        let b = s.as_bytes();
        if b.len() != 13 {
            return Err(SyntaxError::new(WHAT, "must be 13 characters"));
        }
        let mut v: u64 = 0;
        for (i, &c) in b.iter().enumerate() {
            let d = DECODE[c as usize];
            if d == 0xff {
                return Err(SyntaxError::at(WHAT, "not base32-sortable", i));
            }
            if i == 0 && d > 15 {
                return Err(SyntaxError::at(
                    WHAT,
                    "first character sets the high bit",
                    0,
                ));
            }
            v = (v << 5) | u64::from(d);
        }
        Ok(Tid(v))
    }
}

impl fmt::Display for Tid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.encode();
        f.write_str(std::str::from_utf8(&b).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Tid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tid({self})")
    }
}

impl FromStr for Tid {
    type Err = SyntaxError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tid::parse(s)
    }
}

/// Checks TID syntax.
pub fn validate_tid(s: &str) -> Result<(), SyntaxError> {
    Tid::parse(s).map(|_| ())
}

/// Hands out strictly increasing TIDs for one clock id, even when the wall
/// clock stalls or steps back (the timestamp then advances by 1 µs per TID).
/// Thread-safe.
#[derive(Debug)]
pub struct TidGenerator {
    clock_id: u16,
    last_micros: AtomicU64,
}

impl TidGenerator {
    /// A generator for `clock_id` (low 10 bits used).
    pub fn new(clock_id: u16) -> Self {
        TidGenerator {
            clock_id: clock_id & 0x3ff,
            last_micros: AtomicU64::new(0),
        }
    }

    /// The clock id.
    pub fn clock_id(&self) -> u16 {
        self.clock_id
    }

    /// The next TID, greater than every TID this generator returned before.
    pub fn next_tid(&self) -> Tid {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        self.next_at(now)
    }

    /// Like [`next_tid`](Self::next_tid) but also strictly after `prev` (for
    /// example the repo's current rev after a restart).
    pub fn next_after(&self, prev: Tid) -> Tid {
        self.last_micros
            .fetch_max(prev.timestamp_micros(), Ordering::AcqRel);
        self.next_tid()
    }

    fn next_at(&self, now: u64) -> Tid {
        let mut last = self.last_micros.load(Ordering::Acquire);
        loop {
            let ts = now.max(last + 1);
            match self.last_micros.compare_exchange_weak(
                last,
                ts,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Tid::from_parts(ts, self.clock_id),
                Err(actual) => last = actual,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for s in [
            "3jzfcijpj2z2a",
            "7777777777777",
            "3zzzzzzzzzzzz",
            "2222222222222",
        ] {
            let t: Tid = s.parse().unwrap();
            assert_eq!(t.to_string(), s);
        }
        let t = Tid::from_parts(1_700_000_000_000_000, 513);
        assert_eq!(t.timestamp_micros(), 1_700_000_000_000_000);
        assert_eq!(t.clock_id(), 513);
        assert_eq!(Tid::parse(&t.to_string()).unwrap(), t);
    }

    #[test]
    fn monotonic() {
        let g = TidGenerator::new(7);
        let a = g.next_at(100);
        let b = g.next_at(100);
        let c = g.next_at(50);
        assert!(a < b && b < c);
        assert!(a.to_string() < b.to_string() && b.to_string() < c.to_string());
        let far = Tid::from_parts(u64::from(u32::MAX) * 1000, 0);
        assert!(g.next_after(far) > far);
    }
}
