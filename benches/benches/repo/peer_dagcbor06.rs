//! serde_ipld_dagcbor 0.6 (the release atrium-repo, iroh-car, rsky-repo
//! and jacquard-repo still build on) beside the workspace's 0.7: the same
//! `Ipld` value type (ipld-core 0.4), the previous codec. Rows
//! `repo.cbor_encode/serde_ipld_dagcbor-0.6/*` and
//! `repo.cbor_decode/serde_ipld_dagcbor-0.6/*`.

use std::hint::black_box;

use ipld_core::ipld::Ipld;
use serde_ipld_dagcbor_06 as dagcbor;

use crate::peer_roles::{CborPeer, EncodeFn};

/// The codec's rows in `repo.cbor_encode` and `repo.cbor_decode`.
pub const CBOR: CborPeer = CborPeer {
    name: "serde_ipld_dagcbor-0.6",
    encoder,
    decode,
    round_trip,
};

fn encoder(bytes: &[u8]) -> EncodeFn<'static> {
    let v: Ipld = dagcbor::from_slice(bytes).expect("serde_ipld_dagcbor 0.6 decodes the record");
    Box::new(move |out: &mut Vec<u8>| {
        dagcbor::to_writer(&mut *out, black_box(&v)).expect("encodes")
    })
}

fn decode(bytes: &[u8]) -> bool {
    dagcbor::from_slice::<Ipld>(bytes).is_ok()
}

fn round_trip(bytes: &[u8]) -> Vec<u8> {
    let v: Ipld = dagcbor::from_slice(bytes).expect("decodes");
    dagcbor::to_vec(&v).expect("encodes")
}
