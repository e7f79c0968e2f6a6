//! atproto-dasl (ngerakines' atproto-crates): its DRISL codec (the
//! atproto/DASL profile of DAG-CBOR) on its own `Ipld` value type, and its
//! CID helper. Rows `repo.cbor_encode/atproto-dasl/*`,
//! `repo.cbor_decode/atproto-dasl/*` (strict decode: `drisl::from_slice`)
//! and `repo.cid/atproto-dasl/*` (`compute_cid`: sha2 0.11 over the block,
//! CIDv1 dag-cbor).

use std::hint::black_box;

use atproto_dasl::{Ipld, drisl};

use crate::cbor::{CborPeer, EncodeFn};

/// The codec's rows in `repo.cbor_encode` and `repo.cbor_decode`.
pub const CBOR: CborPeer = CborPeer {
    name: "atproto-dasl",
    encoder,
    decode,
    round_trip,
};

fn encoder(bytes: &[u8]) -> EncodeFn<'static> {
    let v: Ipld = drisl::from_slice(bytes).expect("atproto-dasl decodes the record");
    Box::new(move |out: &mut Vec<u8>| drisl::to_writer(&mut *out, black_box(&v)).expect("encodes"))
}

fn decode(bytes: &[u8]) -> bool {
    drisl::from_slice::<Ipld>(bytes).is_ok()
}

fn round_trip(bytes: &[u8]) -> Vec<u8> {
    let v: Ipld = drisl::from_slice(bytes).expect("decodes");
    drisl::to_vec(&v).expect("encodes")
}

/// The CID of `block` as the peer computes it, in bytes (`repo.cid`).
pub fn cid(block: &[u8]) -> Vec<u8> {
    atproto_dasl::cid::compute_cid(block).to_bytes()
}
