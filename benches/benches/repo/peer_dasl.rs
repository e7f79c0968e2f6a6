//! atproto-dasl (ngerakines' atproto-crates): its DRISL codec (the
//! atproto/DASL profile of DAG-CBOR) on its own `Ipld` value type, and its
//! CID helper. Rows `repo.cbor_encode/atproto-dasl/*`,
//! `repo.cbor_decode/atproto-dasl/*` (strict decode: `drisl::from_slice`)
//! and `repo.cid/atproto-dasl/*` (`compute_cid`: sha2 0.11 over the block,
//! CIDv1 dag-cbor).
//!
//! `repo.car_write/atproto-dasl.framing/*`: its `CarWriter` (the CAR writer
//! atproto-repo re-exports; atproto-repo itself has no repo export) writing
//! our export's blocks in our order from a list built in setup, with its
//! per-block CID re-hash off (`CarConfig::verify_cids`, on by default: our
//! export does not re-hash). CAR framing only, like `iroh-car.framing`: an
//! adjacent probe, bytes checked equal to ours.

use std::hint::black_box;

use atproto_dasl::car::{CarBlock, CarConfig, CarWriter};
use atproto_dasl::{Ipld, drisl};
use benches::target::Group;
use futures::executor::block_on;

use crate::peer_roles::{CborPeer, EncodeFn};

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

/// Writes `blocks` under `root` into `out` (cleared).
fn write(
    root: ipld_core::cid::Cid,
    blocks: &[CarBlock],
    out: &mut Vec<u8>,
) -> Result<usize, atproto_dasl::CarError> {
    out.clear();
    let config = CarConfig {
        verify_cids: false,
        ..CarConfig::default()
    };
    block_on(async {
        let mut w = CarWriter::with_config(out, vec![atproto_dasl::Cid::new(root)], config).await?;
        for b in blocks {
            w.write_block(b).await?;
        }
        let n = w.blocks_written();
        w.finish().await?;
        Ok(n)
    })
}

/// `repo.car_write/atproto-dasl.framing/<tier>`: checked byte-equal to
/// `ours`.
pub fn car_write(group: &mut Group<'_>, tier: &str, ours: &[u8]) {
    let slice = repo::car::CarSlice::parse(ours, true).expect("our CAR");
    let conv =
        |c: &repo::Cid| ipld_core::cid::Cid::try_from(&c.to_bytes()[..]).expect("CIDv1 converts");
    let root = conv(&slice.roots[0]);
    let blocks: Vec<CarBlock> = slice
        .blocks
        .iter()
        .map(|(c, d)| CarBlock::new(conv(c), d.to_vec()))
        .collect();
    let mut out = Vec::with_capacity(ours.len());
    write(root, &blocks, &mut out).expect("atproto-dasl writes");
    assert_eq!(out, ours, "atproto-dasl writes our export's bytes");
    group.bench("atproto-dasl.framing", tier, |b| {
        b.iter(|| write(root, black_box(&blocks), &mut out).map_or(0, |n| n))
    });
}
