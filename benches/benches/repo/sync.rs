//! `repo.commit_sign`, `repo.commit_verify`, `repo.car_write`,
//! `repo.car_read`, `repo.frame_decode`, `repo.frame_verify`.
//!
//! Frames are the corpus's 148 real `#commit` frames, one per iteration in
//! capture order (so a result is the mean over the corpus). `frame_verify`
//! also runs two adjacent probes that split the work: `ours.nosig` (every
//! check except the ECDSA verification) and `k256-only` (that ECDSA
//! verification alone, on the same frames' digests and keys), so the share
//! of non-signature work reads straight off one run; a third probe,
//! `car-only`, is the first step of `ours.nosig` alone (the frame's CAR
//! slice split and every block's hash checked), the floor of that share. `ours` and
//! `ours.nosig` verify on one reused `repo::firehose::CommitVerifier` (its
//! scratch space kept from frame to frame, as a firehose consumer runs it;
//! `verify_commit` is the same checks on a fresh verifier per call).
//!
//! secp256k1 has two verification backends in `repo::crypto`
//! ([`K256Backend`]): `k256` / `k256-only` run the default (libsecp256k1
//! when the crate's default `libsecp256k1` feature is on, as here), and
//! `commit_verify/k256.rustcrypto`, `commit_verify/k256.libsecp256k1` and
//! `frame_verify/k256-only.rustcrypto` name one backend each, so the
//! speed-up and the non-ECDSA share against either backend read off one
//! run.
//!
//! `commit_sign` likewise: `k256` signs on the default backend and
//! `k256.rustcrypto` / `k256.libsecp256k1` name one each (every backend
//! produces the same bytes, checked in setup).
//!
//! Where `ours.nosig` goes (perf on `profile_hot verify`): a corpus frame
//! carries 10.3 CAR blocks, 4.6 KB, 8.4 of them MST nodes; every block is
//! hashed once for the CID check (two blocks at a time, interleaved
//! SHA-NI) and the edited nodes of the inverted tree are hashed again,
//! resumed from the SHA-256 state their stored originals reached before
//! the first changed byte (a third fewer blocks). SHA-256 is still the
//! largest part of it, then decoding the edited nodes; both changes
//! lowered `ours.nosig` (`profile_hot`, runs alternating with the previous
//! build). The spec's "< 10 % besides ECDSA" needs `ours.nosig` under a
//! tenth of `k256-only`; `car-only` (the frame's block hashes alone) is
//! the floor under `ours.nosig`, and where it is already past that tenth
//! the target cannot be reached before any decoding.
//!
//! Keys: each author's key is parsed from its DID document once, in setup
//! (`Corpus::load`), as a firehose consumer caches one parsed key per DID;
//! no iteration re-decodes a `did:key` point. Instruction-level profiles of
//! the `ours.nosig` work (and of `mst_add`) come from
//! `crates/repo/examples/profile_hot.rs` under callgrind (see its docs).

use std::hint::black_box;

use benches::registry::count_tier;
use benches::target::BenchTarget;
use criterion::Throughput;
use repo::Cid;
use repo::car::{CarReader, CarSlice};
use repo::commit::CommitRef;
use repo::crypto::{Algorithm, K256Backend, Keypair, PublicKey};
use repo::firehose::{CommitVerifier, Frame, verify_commit};
use repo::mst::{MemoryBlockStore, Mst};

use benches::corpus::Corpus;

/// Registers the six groups.
pub fn run(target: &mut BenchTarget, corpus: &Corpus) {
    commits(target);
    car(target, &corpus.records[0].1);
    frames(target, corpus);
}

use benches::inputs::{export_car as export, like_repo as build_repo, unsigned_commit as unsigned};

fn commits(target: &mut BenchTarget) {
    let keys = [("k256", Algorithm::K256), ("p256", Algorithm::P256)].map(|(name, alg)| {
        let secret = benches::inputs::commit_secret();
        (
            name,
            Keypair::from_bytes(alg, &secret).expect("valid secret"),
        )
    });

    let mut group = target.group("repo.commit_sign");
    group.throughput(Throughput::Elements(1));
    for (name, key) in &keys {
        let block = unsigned().sign(key).to_bytes();
        CommitRef::decode(&block)
            .expect("decodes")
            .verify(&key.public_key())
            .expect("verifies");
        group.bench(name, "", |b| {
            b.iter(|| black_box(unsigned()).sign(key).to_bytes())
        });
        // The Rust peers sign the same commit with the same secret: the
        // same bytes (RFC 6979), so our verify accepts theirs.
        for peer in crate::peers::commit_signers() {
            peer(&mut group, key.algorithm(), name, &block);
        }
        if key.algorithm() != Algorithm::K256 {
            continue;
        }
        // `k256` signs on the default backend; each backend by name beside
        // it (all produce the same bytes).
        for &backend in K256Backend::ALL {
            let signed = unsigned().sign_with(key, backend);
            assert_eq!(
                signed.to_bytes(),
                block,
                "{} signs differently",
                backend.name()
            );
            CommitRef::decode(&signed.to_bytes())
                .expect("decodes")
                .verify(&key.public_key())
                .expect("verifies");
            group.bench(&format!("{name}.{}", backend.name()), "", |b| {
                b.iter(|| black_box(unsigned()).sign_with(key, backend).to_bytes())
            });
        }
    }
    group.finish();

    let mut group = target.group("repo.commit_verify");
    group.throughput(Throughput::Elements(1));
    for (name, key) in &keys {
        let block = unsigned().sign(key).to_bytes();
        let public = key.public_key();
        group.bench(name, "", |b| {
            b.iter(|| {
                CommitRef::decode(black_box(&block))
                    .and_then(|c| c.verify(&public))
                    .is_ok()
            })
        });
        // The Rust peers verify our block (and reject it with a flipped
        // signature bit) against the same public key.
        for peer in crate::peers::commit_verifiers() {
            peer(
                &mut group,
                key.algorithm(),
                name,
                &block,
                &public.to_compressed(),
            );
        }
        // The floor under every row of this algorithm: the ECDSA verify
        // alone on the commit's digest (the library call ours and the
        // RustCrypto peers all end in; no decode, no hashing).
        let c = CommitRef::decode(&block).expect("decodes");
        let (digest, sig) = (c.signing_digest(), c.sig.to_vec());
        public.verify_digest(&digest, &sig).expect("verifies");
        group.bench(&format!("{name}-only"), "", |b| {
            b.iter(|| public.verify_digest(black_box(&digest), &sig).is_ok())
        });
        if key.algorithm() != Algorithm::K256 {
            continue;
        }
        // `k256` runs the default backend; each backend by name beside it.
        for &backend in K256Backend::ALL {
            let c = CommitRef::decode(&block).expect("decodes");
            public
                .verify_digest_with(backend, &c.signing_digest(), c.sig)
                .expect("verifies");
            group.bench(&format!("{name}.{}", backend.name()), "", |b| {
                b.iter(|| {
                    CommitRef::decode(black_box(&block)).is_ok_and(|c| {
                        public
                            .verify_digest_with(backend, &c.signing_digest(), c.sig)
                            .is_ok()
                    })
                })
            });
        }
    }
    group.finish();
}

/// The whole import: stream-read with hash checks into a block store, then
/// walk the MST to list every record.
fn import(car: &[u8]) -> usize {
    let reader = CarReader::new(car).expect("header").verify(true);
    let root = reader.roots()[0];
    let mut store = MemoryBlockStore::new();
    for block in reader {
        let (cid, data) = block.expect("block");
        store.put(cid, data);
    }
    let data = CommitRef::decode(store.get(&root).expect("commit"))
        .expect("commit")
        .data;
    let mut mst = Mst::load(&store, data);
    mst.leaves().expect("walk").filter(Result::is_ok).count()
}

fn car(target: &mut BenchTarget, like: &[u8]) {
    let repos: Vec<(usize, MemoryBlockStore, Cid)> = [1_000usize, 10_000]
        .into_iter()
        .map(|n| {
            let (store, commit) = build_repo(n, like);
            (n, store, commit)
        })
        .collect();
    let mut group = target.group("repo.car_write");
    let mut cars = Vec::new();
    for (n, store, commit) in &repos {
        let mut out = Vec::new();
        assert_eq!(export(store, *commit, &mut out), *n);
        assert_eq!(
            CarSlice::parse(&out, true).expect("valid CAR").blocks.len(),
            store.len()
        );
        group.throughput(Throughput::Elements(*n as u64));
        group.bench("ours", &count_tier(*n), |b| {
            b.iter(|| {
                out.clear();
                export(store, *commit, &mut out)
            })
        });
        crate::peer_iroh_car::car_write(&mut group, &count_tier(*n), &out);
        crate::peer_dasl::car_write(&mut group, &count_tier(*n), &out);
        for peer in crate::peers::car_writers() {
            peer(&mut group, &count_tier(*n), store, *commit, &out);
        }
        cars.push((*n, out));
    }
    group.finish();

    let mut group = target.group("repo.car_read");
    for (n, car) in &cars {
        assert_eq!(import(car), *n);
        group.throughput(Throughput::Elements(*n as u64));
        group.bench("ours.verify", &count_tier(*n), |b| {
            b.iter(|| import(black_box(car)))
        });
        for peer in crate::peers::car_readers() {
            peer(&mut group, &count_tier(*n), car, *n);
        }
        crate::peer_iroh_car::car_read(&mut group, &count_tier(*n), car);
    }
    group.finish();
}

fn frames(target: &mut BenchTarget, corpus: &Corpus) {
    let frames = &corpus.commit_frames;
    let keys = &corpus.keys;
    // Everything verifies before timing; collect the ECDSA inputs.
    let mut ecdsa: Vec<(PublicKey, [u8; 32], Vec<u8>)> = Vec::new();
    // Each frame's CAR slice, for the `car-only` probe.
    let mut slices: Vec<(Vec<u8>, usize)> = Vec::new();
    for f in frames {
        let Ok(Frame::Commit(c)) = Frame::decode(f) else {
            panic!("corpus commit frame does not decode");
        };
        verify_commit(&c, keys).expect("corpus frame verifies");
        let digest =
            repo::bench_internals::verify_commit_without_signature(&c).expect("checks pass");
        let car = CarSlice::parse(c.blocks, true).expect("CAR");
        let commit = CommitRef::decode(car.get(&c.commit).expect("commit")).expect("commit");
        let key = keys[c.repo].clone();
        assert_eq!(
            key.algorithm(),
            Algorithm::K256,
            "corpus keys are secp256k1"
        );
        ecdsa.push((key, digest, commit.sig.to_vec()));
        slices.push((c.blocks.to_vec(), car.blocks.len()));
    }

    let mut group = target.group("repo.frame_decode");
    group.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    group.bench("ours", "commit", |b| {
        b.iter(|| {
            let f = &frames[i % frames.len()];
            i += 1;
            matches!(Frame::decode(black_box(f)), Ok(Frame::Commit(_)))
        })
    });
    for peer in crate::peers::frame_decoders() {
        peer(&mut group, frames);
    }
    group.finish();

    let mut group = target.group("repo.frame_verify");
    group.throughput(Throughput::Elements(1));
    // One verifier per stream, reused frame after frame (as a firehose
    // consumer runs it); `verify_commit` is the same checks on a fresh one.
    let mut verifier = CommitVerifier::new();
    group.bench("ours", "commit", |b| {
        b.iter(|| {
            let f = &frames[i % frames.len()];
            i += 1;
            match Frame::decode(black_box(f)) {
                Ok(Frame::Commit(c)) => verifier.verify(&c, keys).is_ok(),
                _ => false,
            }
        })
    });
    group.bench("ours.nosig", "commit", |b| {
        b.iter(|| {
            let f = &frames[i % frames.len()];
            i += 1;
            match Frame::decode(black_box(f)) {
                Ok(Frame::Commit(c)) => {
                    repo::bench_internals::verify_commit_without_signature_with(&mut verifier, &c)
                        .is_ok()
                }
                _ => false,
            }
        })
    });
    group.bench("k256-only", "commit", |b| {
        b.iter(|| {
            let (key, digest, sig) = &ecdsa[i % ecdsa.len()];
            i += 1;
            key.verify_digest(black_box(digest), sig).is_ok()
        })
    });
    // The hash floor of `ours.nosig`: the frame's CAR slice split and every
    // block's hash checked once, as the verifier's first step does (its
    // re-hash of the inverted tree's edited nodes and all decoding are
    // not in it).
    group.bench("car-only", "commit", |b| {
        b.iter(|| {
            let (blocks, _) = &slices[i % slices.len()];
            i += 1;
            CarSlice::parse(black_box(blocks), true).map_or(0, |car| car.blocks.len())
        })
    });
    for (blocks, n) in &slices {
        let car = CarSlice::parse(blocks, true).expect("corpus CAR slice verifies");
        assert_eq!(car.blocks.len(), *n, "car-only: block count");
    }
    for peer in crate::peers::frame_verifiers() {
        peer(&mut group, frames, keys);
    }
    if K256Backend::DEFAULT != K256Backend::RustCrypto {
        group.bench("k256-only.rustcrypto", "commit", |b| {
            b.iter(|| {
                let (key, digest, sig) = &ecdsa[i % ecdsa.len()];
                i += 1;
                key.verify_digest_with(K256Backend::RustCrypto, black_box(digest), sig)
                    .is_ok()
            })
        });
    }
    group.finish();
}
