//! `#sync` verification: frames built with this crate's encoder and keys
//! verify, and every way to break one is rejected with the right error.

use std::collections::HashMap;

use repo::Cid;
use repo::car::{CarErrorKind, write_car_vec};
use repo::commit::{CommitError, UnsignedCommit};
use repo::crypto::{Algorithm, Keypair, PublicKey};
use repo::firehose::{Frame, SyncCommit, SyncEvent, VerifyError, verify_sync};
use repo::syntax::Tid;

const DID: &str = "did:plc:ewvi7nxzyoun6zhxrhs64oiz";
const TIME: &str = "2024-06-01T12:00:00.000Z";

fn key(alg: Algorithm, seed: u8) -> Keypair {
    Keypair::from_bytes(alg, &[seed; 32]).unwrap()
}

fn rev(n: u64) -> Tid {
    Tid::from_parts(1_700_000_000_000_000 + n, 5)
}

/// A signed commit block: (cid, bytes, mst root).
fn commit_block(did: &str, rev: Tid, signer: &Keypair) -> (Cid, Vec<u8>, Cid) {
    let data = Cid::for_dag_cbor(b"some mst root");
    let (cid, bytes) = UnsignedCommit::new(did, data, rev).sign(signer).to_block();
    (cid, bytes, data)
}

/// An encoded `#sync` frame.
fn sync_frame(did: &str, rev: &str, car: &[u8]) -> Vec<u8> {
    Frame::Sync(SyncEvent {
        seq: 42,
        did,
        blocks: car,
        rev,
        time: TIME,
    })
    .to_vec()
}

fn keys_for(did: &str, k: &Keypair) -> HashMap<String, PublicKey> {
    HashMap::from([(did.to_owned(), k.public_key())])
}

/// Decodes `frame` (which must be a `#sync`) and verifies it.
fn check<'a>(
    frame: &'a [u8],
    keys: &HashMap<String, PublicKey>,
) -> Result<SyncCommit<'a>, VerifyError> {
    match Frame::decode(frame) {
        Ok(Frame::Sync(ev)) => verify_sync(&ev, keys),
        other => panic!("not a #sync frame: {other:?}"),
    }
}

#[test]
fn signed_sync_frames_verify_with_both_curves() {
    for alg in [Algorithm::K256, Algorithm::P256] {
        let k = key(alg, 7);
        let r = rev(1);
        let (cid, bytes, data) = commit_block(DID, r, &k);
        let car = write_car_vec(&[cid], [(&cid, &bytes[..])]);
        let rev_s = r.to_string();
        let frame = sync_frame(DID, &rev_s, &car);
        let got = check(&frame, &keys_for(DID, &k)).unwrap();
        assert_eq!(
            got,
            SyncCommit {
                commit: cid,
                rev: &rev_s,
                data
            }
        );
    }
}

#[test]
fn extra_blocks_are_allowed_but_hash_checked() {
    let k = key(Algorithm::K256, 8);
    let r = rev(2);
    let (cid, bytes, _) = commit_block(DID, r, &k);
    let extra = b"\xa1\x61a\x01".to_vec();
    let extra_cid = Cid::for_dag_cbor(&extra);
    let rev_s = r.to_string();
    let car = write_car_vec(&[cid], [(&extra_cid, &extra[..]), (&cid, &bytes[..])]);
    let frame = sync_frame(DID, &rev_s, &car);
    assert_eq!(check(&frame, &keys_for(DID, &k)).unwrap().commit, cid);

    // The extra block no longer matching its CID fails the whole event.
    let wrong = Cid::for_dag_cbor(b"something else");
    let car = write_car_vec(&[cid], [(&wrong, &extra[..]), (&cid, &bytes[..])]);
    let frame = sync_frame(DID, &rev_s, &car);
    match check(&frame, &keys_for(DID, &k)) {
        Err(VerifyError::Car(e)) => {
            assert!(matches!(e.kind, CarErrorKind::HashMismatch(c) if c == wrong))
        }
        other => panic!("expected a hash mismatch, got {other:?}"),
    }
}

#[test]
fn wrong_or_missing_key_is_rejected() {
    let k = key(Algorithm::K256, 9);
    let r = rev(3);
    let (cid, bytes, _) = commit_block(DID, r, &k);
    let car = write_car_vec(&[cid], [(&cid, &bytes[..])]);
    let rev_s = r.to_string();
    let frame = sync_frame(DID, &rev_s, &car);
    for other in [key(Algorithm::K256, 10), key(Algorithm::P256, 9)] {
        assert!(matches!(
            check(&frame, &keys_for(DID, &other)),
            Err(VerifyError::Commit(CommitError::Signature(_)))
        ));
    }
    assert!(matches!(
        check(&frame, &keys_for("did:plc:someoneelse", &k)),
        Err(VerifyError::NoKey(d)) if d == DID
    ));
}

#[test]
fn did_and_rev_must_match_the_commit() {
    let k = key(Algorithm::K256, 11);
    let r = rev(4);
    let (cid, bytes, _) = commit_block(DID, r, &k);
    let car = write_car_vec(&[cid], [(&cid, &bytes[..])]);
    let rev_s = r.to_string();

    let other_did = "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa";
    let frame = sync_frame(other_did, &rev_s, &car);
    // Even with the signer's key filed under the event's DID.
    assert!(matches!(
        check(&frame, &keys_for(other_did, &k)),
        Err(VerifyError::RepoMismatch { commit, repo }) if commit == DID && repo == other_did
    ));

    let later = rev(5).to_string();
    let frame = sync_frame(DID, &later, &car);
    assert!(matches!(
        check(&frame, &keys_for(DID, &k)),
        Err(VerifyError::RevMismatch { commit, event }) if commit == rev_s && event == later
    ));

    // Bad syntax in the event itself.
    let frame = sync_frame("not-a-did", &rev_s, &car);
    assert!(matches!(
        check(&frame, &keys_for("not-a-did", &k)),
        Err(VerifyError::Syntax(_))
    ));
    let frame = sync_frame(DID, "notatid", &car);
    assert!(matches!(
        check(&frame, &keys_for(DID, &k)),
        Err(VerifyError::Syntax(_))
    ));
}

#[test]
fn bad_cars_are_rejected() {
    let k = key(Algorithm::K256, 12);
    let r = rev(6);
    let rev_s = r.to_string();
    let keys = keys_for(DID, &k);
    let (cid, bytes, _) = commit_block(DID, r, &k);

    // No roots.
    let car = write_car_vec(&[], [(&cid, &bytes[..])]);
    let frame = sync_frame(DID, &rev_s, &car);
    assert!(matches!(
        check(&frame, &keys),
        Err(VerifyError::Car(e)) if matches!(e.kind, CarErrorKind::HeaderShape(_))
    ));

    // The root's block is absent.
    let car = write_car_vec(&[cid], []);
    let frame = sync_frame(DID, &rev_s, &car);
    assert!(matches!(check(&frame, &keys), Err(VerifyError::MissingCommit(c)) if c == cid));

    // The root is some other block, not a commit.
    let other = b"\xa1\x61a\x01".to_vec();
    let other_cid = Cid::for_dag_cbor(&other);
    let car = write_car_vec(&[other_cid], [(&other_cid, &other[..]), (&cid, &bytes[..])]);
    let frame = sync_frame(DID, &rev_s, &car);
    assert!(matches!(check(&frame, &keys), Err(VerifyError::Commit(_))));

    // Truncated, and not a CAR at all.
    let car = write_car_vec(&[cid], [(&cid, &bytes[..])]);
    for bad in [&car[..car.len() - 1], &b"\x05hello"[..], &[][..]] {
        let frame = sync_frame(DID, &rev_s, bad);
        assert!(
            matches!(check(&frame, &keys), Err(VerifyError::Car(_))),
            "{bad:?}"
        );
    }

    // Every single-bit flip inside the CAR is rejected (roots, lengths,
    // CIDs, commit bytes, signature), and nothing panics.
    for i in 0..car.len() {
        for bit in [0x01u8, 0x80] {
            let mut m = car.clone();
            m[i] ^= bit;
            let frame = sync_frame(DID, &rev_s, &m);
            assert!(
                check(&frame, &keys).is_err(),
                "byte {i} ^ {bit:#x} verified"
            );
        }
    }
}

#[test]
fn sync_frames_round_trip_and_verify() {
    // The decoded event re-encodes to the same bytes and verifies.
    let k = key(Algorithm::P256, 13);
    let r = rev(7);
    let (cid, bytes, _) = commit_block(DID, r, &k);
    let car = write_car_vec(&[cid], [(&cid, &bytes[..])]);
    let rev_s = r.to_string();
    let frame = sync_frame(DID, &rev_s, &car);
    let Ok(Frame::Sync(ev)) = Frame::decode(&frame) else {
        panic!("decodes as #sync");
    };
    assert_eq!(ev.seq, 42);
    assert_eq!(ev.time, TIME);
    assert_eq!(Frame::Sync(ev.clone()).to_vec(), frame);
    assert!(verify_sync(&ev, &keys_for(DID, &k)).is_ok());
}
