//! Pins the generated values: a sha-256 of the first 100 lines of every kind
//! (each line plus `\n`, as in the files) and of one `random_bytes` buffer.
//! If one of these fails, the data changed: either undo the change or, if it
//! is deliberate, bump `GENERATOR_VERSION` and update the digests here.

use datagen::hotpath::{Kind, lines};
use sha2::{Digest, Sha256};

fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn head_digest(kind: Kind) -> String {
    let mut text = String::new();
    for line in lines(kind, 100) {
        text.push_str(&line);
        text.push('\n');
    }
    digest(text.as_bytes())
}

#[test]
fn first_100_lines_of_every_kind_are_pinned() {
    let expected = [
        (
            Kind::Records,
            "c8cae60185882b1a69ef5e3dd9d9ad0ae94f77fcd75382c74f4f5cefbff7823b",
        ),
        (
            Kind::ObjectDispatch,
            "93e3ce5d7bd08be8681a2d57a342cfa1a4356d5eba32e4348a3d5128f5ff4a8a",
        ),
        (
            Kind::Blobs,
            "d1df8c76e6434426bf7d4f694a61f34f70be843edc1d59c3fdb4e0c7bc5d49ec",
        ),
        (
            Kind::SqlDispatch,
            "915be2caaacaed8d90a0eb6f266d84e99ef5a0a04c419f1fa6e6191c90fa6255",
        ),
        (
            Kind::RestDispatch,
            "6dbddaf71af18fe226684c22a7e0a73d21a0bb2318ab1583f788ce1f1de1d6c9",
        ),
    ];
    let got: Vec<(Kind, String)> = expected
        .iter()
        .map(|(k, _)| (*k, head_digest(*k)))
        .collect();
    for ((kind, want), (_, have)) in expected.iter().zip(&got) {
        assert_eq!(
            have, want,
            "first 100 lines of {kind:?} changed (all digests: {got:?})"
        );
    }
}

#[test]
fn random_bytes_are_pinned() {
    assert_eq!(
        digest(&datagen::random_bytes(0, 4096)),
        "f01b29afe4559b9107842a8ac8aee28233ba971f66b001e73fa6aed19489be64"
    );
    assert_eq!(
        digest(&datagen::random_bytes(1, 4096)),
        "486df2e82a404c9d1bb5979e2891bb66a875f57bc7f384d7de7635679a785c0b"
    );
}

#[test]
fn seed_and_version_are_what_the_docs_say() {
    assert_eq!(datagen::SEED, 20260602);
    assert_eq!(datagen::GENERATOR_VERSION, 1);
}
