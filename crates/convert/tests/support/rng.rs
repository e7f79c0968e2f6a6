//! A small deterministic generator (xorshift64*) for the convert crate's
//! fuzz-style tests, so failures reproduce. Shared by `tests/fuzz.rs` and
//! the scanner's unit tests (`src/dispatch/scan_tests.rs`).

/// xorshift64* over a non-zero seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}
