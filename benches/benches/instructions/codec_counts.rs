//! codec: base64 decode (scalar and SIMD) of 16 KiB, and CRC-32 (the fast
//! path) of 16 KiB, on the same seeded bytes as `--bench hotpath`'s
//! `codec.*` groups. Valgrind exposes the host's SIMD features except a
//! few (no SHA-NI, no AVX-512), so the SIMD paths counted are the ones the
//! crates pick under it; the counts are keyed by the host's features.

use std::hint::black_box;

use gungraun::{library_benchmark, library_benchmark_group};

/// datagen stream of the codec buffers (the one `--bench hotpath` uses).
const STREAM: u64 = 0xc0dec;
const SIXTEEN_KIB: usize = 16 * 1024;

/// A base64 decoder under count: appends to the buffer, says if it accepted.
type Decode = fn(&[u8], &mut Vec<u8>) -> bool;

fn scalar(text: &[u8], out: &mut Vec<u8>) -> bool {
    codec::base64::scalar::decode_into(text, out).is_ok()
}

fn simd(text: &[u8], out: &mut Vec<u8>) -> bool {
    codec::base64::simd::decode_into(text, out).is_ok()
}

/// The base64 text of `raw` seeded bytes, and an output buffer with room
/// for them (so the count has no allocation in it).
fn base64_input(decode: Decode, raw: usize) -> (Decode, Vec<u8>, Vec<u8>) {
    let text = codec::base64::scalar::encode(&datagen::random_bytes(STREAM, raw)).into_bytes();
    (decode, text, Vec::with_capacity(raw))
}

/// Checks the decoded bytes outside the count (the teardown).
fn check_decoded(out: Vec<u8>) {
    assert_eq!(
        out,
        datagen::random_bytes(STREAM, SIXTEEN_KIB),
        "decoded bytes differ from the input"
    );
}

#[library_benchmark]
#[bench::scalar__16KiB(args = (scalar, SIXTEEN_KIB), setup = base64_input, teardown = check_decoded)]
#[bench::simd__16KiB(args = (simd, SIXTEEN_KIB), setup = base64_input, teardown = check_decoded)]
fn base64_decode((decode, text, mut out): (Decode, Vec<u8>, Vec<u8>)) -> Vec<u8> {
    let ok = decode(black_box(&text), &mut out);
    assert!(ok, "the decoder rejects a valid text");
    out
}

fn crc_input(len: usize) -> Vec<u8> {
    datagen::random_bytes(STREAM, len)
}

fn check_crc(sum: u32) {
    let want = codec::crc32::bitwise::checksum(&datagen::random_bytes(STREAM, SIXTEEN_KIB));
    assert_eq!(
        sum, want,
        "the fast CRC-32 disagrees with the bitwise oracle"
    );
}

#[library_benchmark]
#[bench::fast__16KiB(args = (SIXTEEN_KIB), setup = crc_input, teardown = check_crc)]
fn crc32(data: Vec<u8>) -> u32 {
    codec::crc32::checksum(black_box(&data))
}

library_benchmark_group!(
    name = codec_group;
    benchmarks = base64_decode, crc32
);
