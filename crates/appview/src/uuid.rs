//! [`Uuid`]: the ids of flows, runs and states, parsed from and printed as
//! the lowercase hyphenated form (which is also their record key). The
//! numeric order of the value is the order of that text, so "id
//! descending" means the same thing in the index and in SQL.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::error::AppviewError;

/// Maps and sets keyed by [`Uuid`] (the index's runs, flows, states and
/// runs per flow). Hashed with foldhash seeded per process rather than
/// std's SipHash-1-3: a point read hashes two ids, and SipHash was the
/// largest part of `appview.point_lookup/index`. Ids come from commits
/// anyone can write, so the hash stays seeded (not the id's own bits).
pub(crate) type UuidMap<V> = HashMap<Uuid, V, foldhash::fast::RandomState>;
/// See [`UuidMap`].
pub(crate) type UuidSet = HashSet<Uuid, foldhash::fast::RandomState>;

/// A UUID as a 128-bit big-endian number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Uuid(pub u128);

impl Uuid {
    /// Parses `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (hex digits in lower
    /// case; upper case is refused so that one id has one spelling and one
    /// record key).
    pub fn parse(s: &str) -> Result<Uuid, AppviewError> {
        let bad = || AppviewError::BadUuid(s.chars().take(64).collect());
        let b = s.as_bytes();
        if b.len() != 36 {
            return Err(bad());
        }
        let mut v: u128 = 0;
        for (i, &c) in b.iter().enumerate() {
            if matches!(i, 8 | 13 | 18 | 23) {
                if c != b'-' {
                    return Err(bad());
                }
                continue;
            }
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                _ => return Err(bad()),
            };
            v = (v << 4) | u128::from(d);
        }
        Ok(Uuid(v))
    }
}

impl Uuid {
    /// Writes the text form into `out` and returns it (no allocation).
    pub fn write_to(self, out: &mut [u8; 36]) -> &str {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        // Where each byte's two digits go (the dashes between): fixed, so
        // the loop unrolls without a branch or a bounds check; a list page
        // writes several ids per row (`appview.rest_*`).
        const AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
        for at in [8, 13, 18, 23] {
            out[at] = b'-';
        }
        for (b, at) in self.0.to_be_bytes().into_iter().zip(AT) {
            out[at] = HEX[usize::from(b >> 4)];
            out[at + 1] = HEX[usize::from(b & 15)];
        }
        // Every byte written above is ASCII, so this never fails.
        std::str::from_utf8(out).unwrap_or_default()
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.write_to(&mut [0u8; 36]))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn known_values() {
        let s = "0f3a9e2c-1b4d-4e5f-8a6b-7c8d9e0f1a2b";
        let u = Uuid::parse(s).unwrap();
        assert_eq!(u.to_string(), s);
        assert_eq!(u.0 >> 120, 0x0f);
        for bad in [
            "",
            "0f3a9e2c-1b4d-4e5f-8a6b-7c8d9e0f1a2",
            "0f3a9e2c-1b4d-4e5f-8a6b-7c8d9e0f1a2bb",
            "0F3A9E2C-1B4D-4E5F-8A6B-7C8D9E0F1A2B",
            "0f3a9e2c11b4d-4e5f-8a6b-7c8d9e0f1a2b",
            "0f3a9e2c-1b4d-4e5f-8a6b-7c8d9e0f1a2g",
        ] {
            assert!(
                matches!(Uuid::parse(bad), Err(AppviewError::BadUuid(_))),
                "{bad}"
            );
        }
    }

    proptest! {
        #[test]
        fn display_parse_round_trip_and_order(a: u128, b: u128) {
            let (sa, sb) = (Uuid(a).to_string(), Uuid(b).to_string());
            prop_assert_eq!(Uuid::parse(&sa).unwrap(), Uuid(a));
            prop_assert_eq!(a.cmp(&b), sa.cmp(&sb));
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            if let Ok(u) = Uuid::parse(&s) {
                prop_assert_eq!(u.to_string(), s);
            }
        }

        #[test]
        fn parse_near_misses(s in "[0-9a-fA-F-]{36}") {
            if let Ok(u) = Uuid::parse(&s) {
                prop_assert_eq!(u.to_string(), s);
            }
        }
    }
}
