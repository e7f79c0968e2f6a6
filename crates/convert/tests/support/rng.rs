//! A small deterministic generator (xorshift64*) for the convert crate's
//! fuzz-style tests, so failures reproduce, and the random and mutated
//! inputs they draw with it. Shared by `tests/fuzz.rs` and the scanner's
//! unit tests (`src/dispatch/scan_tests.rs`).

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

    /// One byte of `from` (not empty).
    pub fn pick(&mut self, from: &[u8]) -> u8 {
        from[self.below(from.len())]
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// `len` bytes drawn from `from`: mostly-JSON noise when `from` holds
    /// the bytes that matter to a parser.
    pub fn noise(&mut self, len: usize, from: &[u8]) -> Vec<u8> {
        (0..len).map(|_| self.pick(from)).collect()
    }

    /// `line` after 1 to `max_edits` random edits, each a byte overwritten
    /// (with one of `special` or a random one), a byte of `special`
    /// inserted, a byte removed, or the text cut. With `near`, three edits
    /// in four fall within the first `near` bytes.
    pub fn mutate(
        &mut self,
        line: &str,
        special: &[u8],
        max_edits: usize,
        near: Option<usize>,
    ) -> Vec<u8> {
        let mut bytes = line.as_bytes().to_vec();
        for _ in 0..1 + self.below(max_edits) {
            if bytes.is_empty() {
                break;
            }
            let span = match near {
                Some(n) if self.below(4) != 0 => bytes.len().min(n),
                _ => bytes.len(),
            };
            let at = self.below(span);
            match self.below(5) {
                0 => bytes[at] = self.pick(special),
                1 => bytes.truncate(at),
                2 => bytes.insert(at, self.pick(special)),
                3 => {
                    bytes.remove(at);
                }
                _ => bytes[at] = self.next() as u8,
            }
        }
        bytes
    }
}
