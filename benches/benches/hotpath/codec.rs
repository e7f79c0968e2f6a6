//! `codec.base64_encode`, `codec.base64_decode`, `codec.crc32`: one buffer
//! per iteration at 64 B, 1 KiB, 16 KiB and 256 KiB; our paths (`scalar`,
//! `simd`; `bitwise`, `table`, `fast`) beside the crates they build on called
//! directly (`base64-simd`, `crc32fast`) and the `base64` / `crc` crates.
//! Throughput is the raw (decoded) size in both directions.
//!
//! Every base64 implementation appends into a buffer that is cleared and
//! reused across iterations, so each does the same work: the transform, no
//! allocation. Results are checked against the scalar oracle before timing.

use std::hint::black_box;

use base64::Engine as _;
use benches::registry::size_tier;
use benches::target::BenchTarget;
use criterion::Throughput;

const SIZES: [usize; 4] = [64, 1024, 16 * 1024, 256 * 1024];
/// datagen stream of the codec buffers.
const STREAM: u64 = 0xc0dec;

const B64_CRATE: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

type Encode = fn(&[u8], &mut Vec<u8>);
type Decode = fn(&[u8], &mut Vec<u8>) -> bool;
type Checksum = fn(&[u8]) -> u32;

const ENCODERS: [(&str, Encode); 4] = [
    ("scalar", codec::base64::scalar::encode_into),
    ("simd", codec::base64::simd::encode_into),
    ("base64-simd", |input, out| {
        base64_simd::STANDARD.encode_append(input, out)
    }),
    ("base64-crate", |input, out| {
        // `encode_string` appends to a String; borrow the Vec as one.
        let mut text = String::from_utf8(std::mem::take(out)).unwrap_or_default();
        B64_CRATE.encode_string(input, &mut text);
        *out = text.into_bytes();
    }),
];

const DECODERS: [(&str, Decode); 4] = [
    ("scalar", |text, out| {
        codec::base64::scalar::decode_into(text, out).is_ok()
    }),
    ("simd", |text, out| {
        codec::base64::simd::decode_into(text, out).is_ok()
    }),
    ("base64-simd", |text, out| {
        base64_simd::STANDARD.decode_append(text, out).is_ok()
    }),
    ("base64-crate", |text, out| {
        B64_CRATE.decode_vec(text, out).is_ok()
    }),
];

const CHECKSUMS: [(&str, Checksum); 5] = [
    ("bitwise", codec::crc32::bitwise::checksum),
    ("table", codec::crc32::table::checksum),
    // Our public entry point, which dispatches to the fast path.
    ("fast", codec::crc32::checksum),
    ("crc32fast", crc32fast::hash),
    ("crc-crate", |data| {
        crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(data)
    }),
];

/// Registers the three codec groups.
pub fn run(target: &mut BenchTarget) {
    benches::sidecar::context(
        "codec",
        serde_json::json!({
            "codec_backends": {
                "base64": codec::base64::backend(),
                "crc32": codec::crc32::backend(),
                "sha256": codec::sha256::backend(),
            }
        }),
    );
    let inputs: Vec<Vec<u8>> = SIZES
        .iter()
        .map(|&n| datagen::random_bytes(STREAM, n))
        .collect();
    base64_encode(target, &inputs);
    base64_decode(target, &inputs);
    crc32(target, &inputs);
}

fn base64_encode(target: &mut BenchTarget, inputs: &[Vec<u8>]) {
    let mut group = target.group("codec.base64_encode");
    for input in inputs {
        let expected = codec::base64::scalar::encode(input).into_bytes();
        group.throughput(Throughput::Bytes(input.len() as u64));
        for (name, encode) in ENCODERS {
            let mut out = Vec::with_capacity(expected.len());
            encode(input, &mut out);
            assert_eq!(out, expected, "{name} encodes differently from the oracle");
            group.bench(name, &size_tier(input.len()), |b| {
                b.iter(|| {
                    out.clear();
                    encode(black_box(input), &mut out);
                    debug_assert_eq!(out.len(), expected.len());
                })
            });
            assert_eq!(out, expected, "{name} drifted while timed");
        }
    }
    group.finish();
}

fn base64_decode(target: &mut BenchTarget, inputs: &[Vec<u8>]) {
    let mut group = target.group("codec.base64_decode");
    for input in inputs {
        let text = codec::base64::scalar::encode(input).into_bytes();
        group.throughput(Throughput::Bytes(input.len() as u64));
        for (name, decode) in DECODERS {
            let mut out = Vec::with_capacity(input.len());
            assert!(decode(&text, &mut out), "{name} rejects a valid text");
            assert_eq!(&out, input, "{name} decodes differently from the oracle");
            group.bench(name, &size_tier(input.len()), |b| {
                b.iter(|| {
                    out.clear();
                    let ok = decode(black_box(&text), &mut out);
                    debug_assert!(ok);
                })
            });
            assert_eq!(&out, input, "{name} drifted while timed");
        }
    }
    group.finish();
}

fn crc32(target: &mut BenchTarget, inputs: &[Vec<u8>]) {
    let mut group = target.group("codec.crc32");
    for input in inputs {
        let expected = codec::crc32::bitwise::checksum(input);
        group.throughput(Throughput::Bytes(input.len() as u64));
        for (name, checksum) in CHECKSUMS {
            assert_eq!(
                checksum(input),
                expected,
                "{name} disagrees with the oracle"
            );
            group.bench(name, &size_tier(input.len()), |b| {
                b.iter(|| checksum(black_box(input)))
            });
        }
    }
    group.finish();
}
