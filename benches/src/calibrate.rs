//! The calibration kernels: small fixed workloads that run with every bench
//! target and move only when the machine does. Each spans one thing the
//! other rows depend on, and each is its own id:
//!
//! - `calibrate.cpu/fixed/1MiB`: integer ALU, a multiply-xor dependency
//!   chain over 1 MiB (the original kernel; its id is kept for history);
//! - `calibrate.memory_latency/walk/256MiB`: a dependent pointer chase over
//!   one random cycle through 256 MiB, larger than the last-level cache of
//!   the machines we run on, so each hop is a cache (and TLB) miss;
//! - `calibrate.copy/stream/64MiB`: a streaming copy of 64 MiB (memory
//!   bandwidth);
//! - `calibrate.sha256/sha2/1MiB`: SHA-256 through `sha2` (SHA-NI where the
//!   CPU has it), the hashing the repo and store rows lean on;
//! - `calibrate.fsync/file/4KiB`: one 4 KiB `pwrite` at offset 0 of a
//!   scratch file and its `fdatasync` (the durable write the store and
//!   segment rows wait on: I/O and fsync);
//! - `calibrate.loopback/tcp/64B`: one 64-byte round trip over a
//!   kept-alive loopback TCP connection to an echo thread (the socket path
//!   and wake-up the server and live rows pay: network and processes);
//! - `calibrate.threads/handoff/1k`: 1000 hand-offs of a token between two
//!   threads over channels (the wake-up and scheduling cost the callers-N
//!   rows pay: threads).
//!
//! Each is the control of one kind of work (`[kinds]` in `units.toml`):
//! the paired re-measurement takes the floor of an id from the controls of
//! its own kind, so a CPU-bound row is not held to the noise of fsync.
//!
//! This module holds the kernels and their data; `BenchTarget::finish`
//! opens the `calibrate.*` groups and runs them.
//!
//! `scripts/bench_snapshot.py` records their medians in the machine
//! fingerprint (a baseline must be within 10 % on every shared kernel) and
//! divides "Δ vs calibration" by the kernel a group names in `units.toml`.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::config::Preset;

/// Size of the buffer the integer loop mixes and SHA-256 hashes.
pub const LEN: usize = 1 << 20;
/// Bytes of the pointer-chase table (u32 slots).
pub const WALK_BYTES: usize = 256 << 20;
/// Dependent loads per iteration of the walk.
pub const HOPS: usize = 1 << 14;
/// Bytes copied per iteration of the streaming copy.
pub const COPY_BYTES: usize = 64 << 20;

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A fixed buffer: a xorshift stream from a constant seed.
pub fn input() -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..LEN).map(|_| xorshift(&mut state) as u8).collect()
}

/// The loop: multiply-xor mixing of every 8-byte word, a dependency chain
/// the compiler cannot vectorise away.
pub fn mix(data: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for word in data.chunks_exact(8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0100_0000_01b3);
        h ^= h >> 29;
    }
    h
}

/// One random cycle through every slot (Sattolo's shuffle): following
/// `next[i]` from any slot visits all slots before it returns.
pub fn walk_table(slots: usize) -> Vec<u32> {
    let mut next: Vec<u32> = (0..slots as u32).collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in (1..slots).rev() {
        let j = (xorshift(&mut state) % i as u64) as usize;
        next.swap(i, j);
    }
    next
}

/// `hops` dependent loads from `start`; returns where the walk ends.
pub fn walk(next: &[u32], start: u32, hops: usize) -> u32 {
    let mut at = start;
    for _ in 0..hops {
        at = next[at as usize];
    }
    at
}

/// The walk table, built once per process (it takes a moment at 256 MiB).
pub fn table() -> &'static [u32] {
    static TABLE: OnceLock<Vec<u32>> = OnceLock::new();
    TABLE.get_or_init(|| walk_table(WALK_BYTES / 4))
}

/// The streaming copy's source: [`input`] repeated to [`COPY_BYTES`].
pub fn copy_source(data: &[u8]) -> Vec<u8> {
    data.iter().copied().cycle().take(COPY_BYTES).collect()
}

/// SHA-256 of `data` through `sha2`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// SHA-256 of `data` fed in 4 KiB pieces (the check of [`sha256`]).
pub fn sha256_in_pieces(data: &[u8]) -> [u8; 32] {
    let mut pieces = Sha256::new();
    for chunk in data.chunks(4096) {
        pieces.update(chunk);
    }
    pieces.finalize().into()
}

/// Bytes written and synced per iteration of the fsync kernel.
pub const FSYNC_BYTES: usize = 4096;
/// Bytes of one loopback round trip.
pub const ECHO_BYTES: usize = 64;
/// Hand-offs per iteration of the threads kernel.
pub const HANDOFFS: usize = 1000;

/// One 4 KiB write at offset 0 of `file` and its `fdatasync`.
///
/// # Errors
/// The I/O error of the write or the sync.
pub fn write_and_sync(file: &File, block: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(block, 0)?;
    file.sync_data()
}

/// A loopback TCP connection to a thread that echoes every 64-byte
/// message; the thread ends when the connection closes.
pub struct Echo {
    stream: TcpStream,
    thread: Option<JoinHandle<()>>,
}

impl Echo {
    /// Binds 127.0.0.1:0, connects, and starts the echo thread.
    ///
    /// # Errors
    /// The I/O error of the bind, connect or accept.
    pub fn start() -> std::io::Result<Echo> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let stream = TcpStream::connect(listener.local_addr()?)?;
        stream.set_nodelay(true)?;
        let (mut peer, _) = listener.accept()?;
        peer.set_nodelay(true)?;
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; ECHO_BYTES];
            while peer.read_exact(&mut buf).is_ok() {
                if peer.write_all(&buf).is_err() {
                    break;
                }
            }
        });
        Ok(Echo {
            stream,
            thread: Some(thread),
        })
    }

    /// One round trip of `message`; the echoed bytes land in `reply`.
    ///
    /// # Errors
    /// The I/O error of the write or the read.
    pub fn round_trip(
        &mut self,
        message: &[u8; ECHO_BYTES],
        reply: &mut [u8; ECHO_BYTES],
    ) -> std::io::Result<()> {
        self.stream.write_all(message)?;
        self.stream.read_exact(reply)
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A thread that sends back every token it is handed, plus one.
pub struct Handoff {
    to: Option<mpsc::SyncSender<u64>>,
    from: mpsc::Receiver<u64>,
    thread: Option<JoinHandle<()>>,
}

impl Handoff {
    /// Starts the partner thread.
    pub fn start() -> Handoff {
        let (to, inbox) = mpsc::sync_channel::<u64>(0);
        let (outbox, from) = mpsc::sync_channel::<u64>(0);
        let thread = std::thread::spawn(move || {
            while let Ok(token) = inbox.recv() {
                if outbox.send(token + 1).is_err() {
                    break;
                }
            }
        });
        Handoff {
            to: Some(to),
            from,
            thread: Some(thread),
        }
    }

    /// `rounds` hand-offs there and back from `token`; returns the token
    /// the partner sent last (`token + rounds`), or None when it is gone.
    pub fn rounds(&self, token: u64, rounds: usize) -> Option<u64> {
        let to = self.to.as_ref()?;
        let mut at = token;
        for _ in 0..rounds {
            to.send(at).ok()?;
            at = self.from.recv().ok()?;
        }
        Some(at)
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        self.to.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Warm-up and measurement times of the memory, copy and sha kernels
/// under `preset` (shorter than the rows': the kernels together must stay
/// a small part of a target's run).
pub fn times(preset: Preset) -> (Duration, Duration) {
    match preset {
        Preset::Full => (Duration::from_millis(500), Duration::from_millis(2000)),
        Preset::Quick => (Duration::from_millis(100), Duration::from_millis(400)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_is_one_cycle_through_every_slot() {
        let next = walk_table(1000);
        assert_eq!(walk(&next, 0, 1000), 0);
        assert!((1..1000).all(|hops| walk(&next, 0, hops) != 0));
    }

    #[test]
    fn the_echo_and_the_handoff_answer() {
        let mut echo = Echo::start().expect("loopback");
        let message = [7u8; ECHO_BYTES];
        let mut reply = [0u8; ECHO_BYTES];
        echo.round_trip(&message, &mut reply).expect("round trip");
        assert_eq!(reply, message);
        assert_eq!(Handoff::start().rounds(5, 10), Some(15));
    }

    #[test]
    fn the_fsync_kernel_writes_its_block() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.path().join("sync"))
            .expect("open");
        write_and_sync(&file, &[3u8; FSYNC_BYTES]).expect("write");
        assert_eq!(
            std::fs::read(dir.path().join("sync")).expect("read"),
            vec![3u8; FSYNC_BYTES]
        );
    }

    #[test]
    fn the_mix_is_fixed() {
        assert_eq!(mix(&input()), mix(&input()));
    }
}
