//! CRC-32 (IEEE 802.3): reflected polynomial 0xEDB88320, initial value and
//! final xor all ones. Check value: `"123456789"` -> `0xCBF43926`; `""` -> 0.
//!
//! [`bitwise`] is the plain eight-shifts-per-byte loop (the published
//! baseline's oracle); [`table`] is the classic 256-entry byte-at-a-time
//! table; [`fast`] is `crc32fast` (PCLMULQDQ folding where the CPU has it).
//! [`checksum`] and [`Crc32`] use the fastest one compiled in.

const POLY: u32 = 0xedb8_8320;

/// The bitwise oracle: one shift and conditional xor per bit.
pub mod bitwise {
    use super::POLY;

    /// Continues a running (un-finalised) CRC state over `data`.
    pub fn update(mut state: u32, data: &[u8]) -> u32 {
        for &byte in data {
            state ^= u32::from(byte);
            for _ in 0..8 {
                let mask = (state & 1).wrapping_neg();
                state = (state >> 1) ^ (POLY & mask);
            }
        }
        state
    }

    /// CRC-32 of `data`.
    pub fn checksum(data: &[u8]) -> u32 {
        !update(!0, data)
    }
}

/// The table-driven oracle: one lookup per byte.
pub mod table {
    use super::POLY;

    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut crc = i as u32;
            let mut bit = 0;
            while bit < 8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ POLY
                } else {
                    crc >> 1
                };
                bit += 1;
            }
            table[i] = crc;
            i += 1;
        }
        table
    };

    /// Continues a running (un-finalised) CRC state over `data`.
    pub fn update(mut state: u32, data: &[u8]) -> u32 {
        for &byte in data {
            state = TABLE[((state ^ u32::from(byte)) & 0xff) as usize] ^ (state >> 8);
        }
        state
    }

    /// CRC-32 of `data`.
    pub fn checksum(data: &[u8]) -> u32 {
        !update(!0, data)
    }
}

/// The fast path: `crc32fast`.
#[cfg(feature = "simd-checksum")]
pub mod fast {
    /// CRC-32 of `data`.
    #[inline]
    pub fn checksum(data: &[u8]) -> u32 {
        crc32fast::hash(data)
    }
}

/// CRC-32 of `data` through the fastest path compiled in.
#[inline]
pub fn checksum(data: &[u8]) -> u32 {
    #[cfg(feature = "simd-checksum")]
    return fast::checksum(data);
    #[cfg(not(feature = "simd-checksum"))]
    return table::checksum(data);
}

/// Which CRC-32 path [`checksum`] uses in this build.
pub const fn backend() -> &'static str {
    if cfg!(feature = "simd-checksum") {
        "crc32fast"
    } else {
        "table"
    }
}

/// An incremental CRC-32 over data that arrives in pieces (chunked uploads).
#[derive(Clone, Default)]
pub struct Crc32 {
    #[cfg(feature = "simd-checksum")]
    inner: crc32fast::Hasher,
    #[cfg(not(feature = "simd-checksum"))]
    state: Option<u32>,
}

impl Crc32 {
    /// A hasher over nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next piece.
    pub fn update(&mut self, data: &[u8]) {
        #[cfg(feature = "simd-checksum")]
        self.inner.update(data);
        #[cfg(not(feature = "simd-checksum"))]
        {
            self.state = Some(table::update(self.state.unwrap_or(!0), data));
        }
    }

    /// The CRC-32 of everything fed so far.
    pub fn finish(&self) -> u32 {
        #[cfg(feature = "simd-checksum")]
        return self.inner.clone().finalize();
        #[cfg(not(feature = "simd-checksum"))]
        return !self.state.unwrap_or(!0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Path = (&'static str, fn(&[u8]) -> u32);

    #[cfg_attr(not(feature = "simd-checksum"), allow(unused_mut))]
    fn paths() -> Vec<Path> {
        let mut paths: Vec<Path> = vec![
            ("bitwise", bitwise::checksum),
            ("table", table::checksum),
            ("dispatch", checksum),
        ];
        #[cfg(feature = "simd-checksum")]
        paths.push(("fast", fast::checksum));
        paths
    }

    #[test]
    fn check_values() {
        for (name, f) in paths() {
            assert_eq!(f(b"123456789"), 0xcbf4_3926, "{name}");
            assert_eq!(f(b""), 0, "{name}");
            assert_eq!(
                f(b"The quick brown fox jumps over the lazy dog"),
                0x414f_a339,
                "{name}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn every_path_matches_the_oracle(
            data in prop::collection::vec(any::<u8>(), 0..4096),
            align in 0usize..64,
            split in any::<usize>(),
        ) {
            let mut buffer = vec![0x3cu8; align];
            buffer.extend_from_slice(&data);
            let input = &buffer[align..];
            let expected = bitwise::checksum(input);
            for (name, f) in paths() {
                prop_assert_eq!(f(input), expected, "{}", name);
            }
            let split = if input.is_empty() { 0 } else { split % input.len() };
            let mut hasher = Crc32::new();
            hasher.update(&input[..split]);
            hasher.update(&input[split..]);
            prop_assert_eq!(hasher.finish(), expected);
        }
    }
}
