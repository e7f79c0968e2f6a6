//! Equivalence of every base64 path against the scalar oracle, and the
//! strictness rules on fixed vectors.

use super::*;
use proptest::prelude::*;

type Decoder = (&'static str, fn(&[u8]) -> Result<Vec<u8>, Base64Error>);
type Encoder = (&'static str, fn(&[u8]) -> String);

/// Every decode path compiled in, by name.
#[cfg_attr(not(feature = "simd-codecs"), allow(unused_mut))]
fn decoders() -> Vec<Decoder> {
    let mut paths: Vec<Decoder> = vec![("scalar", scalar::decode), ("dispatch", decode)];
    #[cfg(feature = "simd-codecs")]
    paths.push(("simd", simd::decode));
    paths
}

/// Every encode path compiled in, by name.
#[cfg_attr(not(feature = "simd-codecs"), allow(unused_mut))]
fn encoders() -> Vec<Encoder> {
    let mut paths: Vec<Encoder> = vec![("scalar", scalar::encode), ("dispatch", encode)];
    #[cfg(feature = "simd-codecs")]
    paths.push(("simd", simd::encode));
    paths
}

#[test]
fn rfc4648_vectors() {
    let vectors: [(&[u8], &str); 7] = [
        (b"", ""),
        (b"f", "Zg=="),
        (b"fo", "Zm8="),
        (b"foo", "Zm9v"),
        (b"foob", "Zm9vYg=="),
        (b"fooba", "Zm9vYmE="),
        (b"foobar", "Zm9vYmFy"),
    ];
    for (raw, text) in vectors {
        for (name, enc) in encoders() {
            assert_eq!(enc(raw), text, "{name} encode of {raw:?}");
        }
        for (name, dec) in decoders() {
            assert_eq!(
                dec(text.as_bytes()).as_deref(),
                Ok(raw),
                "{name} decode of {text}"
            );
        }
    }
}

#[test]
fn invalid_inputs_get_the_same_error_from_every_path() {
    let cases: [(&str, Base64Error); 9] = [
        ("Zm9", Base64Error::InvalidLength { len: 3 }),
        ("Zm9vY", Base64Error::InvalidLength { len: 5 }),
        (
            "Zm9v!mFy",
            Base64Error::InvalidByte {
                offset: 4,
                byte: b'!',
            },
        ),
        (
            "Zm 9",
            Base64Error::InvalidByte {
                offset: 2,
                byte: b' ',
            },
        ),
        ("Zg==Zg==", Base64Error::InvalidPadding { offset: 2 }),
        ("Z===", Base64Error::InvalidPadding { offset: 1 }),
        ("Zm=v", Base64Error::InvalidPadding { offset: 2 }),
        ("Zh==", Base64Error::NonCanonicalTrailingBits { offset: 1 }),
        ("Zm9=", Base64Error::NonCanonicalTrailingBits { offset: 2 }),
    ];
    for (text, expected) in cases {
        for (name, dec) in decoders() {
            assert_eq!(dec(text.as_bytes()), Err(expected), "{name} on {text:?}");
        }
    }
}

#[test]
fn failed_decode_leaves_the_output_untouched() {
    let mut out = b"kept".to_vec();
    assert!(decode_into(b"Zm9vYmFy!!!!", &mut out).is_err());
    assert_eq!(out, b"kept");
    let mut out = b"kept".to_vec();
    assert!(scalar::decode_into(b"Zm9vYmFy!!!!", &mut out).is_err());
    assert_eq!(out, b"kept");
}

/// Mutations that make a valid text invalid in each of the ways the module
/// documents (or, by chance, leave it valid: then every path must agree on
/// the bytes).
#[derive(Debug, Clone)]
enum Mutation {
    SetByte { at: usize, byte: u8 },
    Truncate { by: usize },
    Append { byte: u8 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::SetByte { at, byte }),
        (
            any::<usize>(),
            prop::sample::select(b"=+/A\n\0\x80".to_vec())
        )
            .prop_map(|(at, byte)| Mutation::SetByte { at, byte }),
        (1usize..4).prop_map(|by| Mutation::Truncate { by }),
        prop::sample::select(b"=A".to_vec()).prop_map(|byte| Mutation::Append { byte }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_path_matches_the_oracle(
        data in prop::collection::vec(any::<u8>(), 0..4096),
        align in 0usize..64,
    ) {
        // Random alignment: the input starts `align` bytes into a buffer.
        let mut buffer = vec![0xa5u8; align];
        buffer.extend_from_slice(&data);
        let input = &buffer[align..];
        let expected = scalar::encode(input);
        prop_assert_eq!(expected.len(), encoded_len(input.len()));
        for (name, enc) in encoders() {
            prop_assert_eq!(&enc(input), &expected, "{} encode", name);
        }
        let mut text = vec![0x5au8; align];
        text.extend_from_slice(expected.as_bytes());
        for (name, dec) in decoders() {
            let decoded = dec(&text[align..]);
            prop_assert_eq!(decoded.as_deref(), Ok(input), "{} decode", name);
        }
    }

    #[test]
    fn every_path_rejects_alike(
        data in prop::collection::vec(any::<u8>(), 0..600),
        mutation in mutation(),
    ) {
        let mut text = scalar::encode(&data).into_bytes();
        match mutation {
            Mutation::SetByte { at, byte } if !text.is_empty() => {
                let at = at % text.len();
                text[at] = byte;
            }
            Mutation::Truncate { by } => text.truncate(text.len().saturating_sub(by)),
            Mutation::Append { byte } => text.push(byte),
            Mutation::SetByte { .. } => text.push(b'A'),
        }
        let oracle = scalar::decode(&text);
        for (name, dec) in decoders() {
            prop_assert_eq!(&dec(&text), &oracle, "{} on {:?}", name, String::from_utf8_lossy(&text));
        }
        // An accepted text re-encodes to itself: one encoding per byte string.
        if let Ok(bytes) = oracle {
            let again = scalar::encode(&bytes);
            prop_assert_eq!(again.as_bytes(), &text[..]);
        }
    }
}
