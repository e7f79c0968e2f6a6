//! iroh-car (n0's CAR v1 reader and writer, async over tokio's I/O traits,
//! driven here by `futures::executor::block_on`: no runtime, no I/O waits).
//!
//! It is CAR framing only: the reader does not check block hashes against
//! their CIDs and neither side walks an MST. Its rows are adjacent probes
//! (`iroh-car.framing`): `repo.car_write` writes the export's blocks, in
//! our export's order, from a list built in setup (no commit decode, no
//! MST walk, no block-store lookups); `repo.car_read` reads every block
//! into a map (no hash check, no MST walk). The written bytes are checked
//! equal to our export and the read blocks equal to its blocks.

use std::collections::HashMap;
use std::hint::black_box;

use benches::target::Group;
use futures::executor::block_on;
use iroh_car::{CarHeader, CarReader, CarWriter};

type IrohCid = ipld_core::cid::Cid;

/// The implementation name in ids.
pub const NAME: &str = "iroh-car.framing";

/// Writes `blocks` under `root` into `out` (cleared).
fn write(root: IrohCid, blocks: &[(IrohCid, &[u8])], out: &mut Vec<u8>) -> usize {
    out.clear();
    let mut w = CarWriter::new(CarHeader::new_v1(vec![root]), out);
    for (cid, data) in blocks {
        block_on(w.write(*cid, data)).expect("write");
    }
    block_on(w.finish()).expect("finish");
    blocks.len()
}

/// Reads every block of `car` into a map; the block count.
fn read(car: &[u8]) -> usize {
    let Ok(mut r) = block_on(CarReader::new(car)) else {
        return 0;
    };
    let mut map = HashMap::new();
    while let Ok(Some((cid, data))) = block_on(r.next_block()) {
        map.insert(cid, data);
    }
    map.len()
}

fn blocks_of(ours: &[u8]) -> (IrohCid, Vec<(IrohCid, &[u8])>) {
    let slice = repo::car::CarSlice::parse(ours, true).expect("our CAR");
    let conv = |c: &repo::Cid| IrohCid::try_from(&c.to_bytes()[..]).expect("CIDv1 converts");
    (
        conv(&slice.roots[0]),
        slice.blocks.iter().map(|(c, d)| (conv(c), *d)).collect(),
    )
}

/// `repo.car_write/iroh-car.framing/<tier>`: checked byte-equal to `ours`.
pub fn car_write(group: &mut Group<'_>, tier: &str, ours: &[u8]) {
    let (root, blocks) = blocks_of(ours);
    let mut out = Vec::with_capacity(ours.len());
    write(root, &blocks, &mut out);
    assert_eq!(out, ours, "iroh-car writes our export's bytes");
    group.bench(NAME, tier, |b| {
        b.iter(|| write(root, black_box(&blocks), &mut out))
    });
}

/// `repo.car_read/iroh-car.framing/<tier>`: checked to read every block of
/// `ours` (the same count; the CIDs themselves checked by the map).
pub fn car_read(group: &mut Group<'_>, tier: &str, ours: &[u8]) {
    let (_, blocks) = blocks_of(ours);
    let mut r = block_on(CarReader::new(ours)).expect("iroh-car reads our header");
    let mut n = 0;
    while let Some((cid, data)) = block_on(r.next_block()).expect("block") {
        assert_eq!((cid, data.as_slice()), blocks[n], "iroh-car block {n}");
        n += 1;
    }
    assert_eq!(n, blocks.len());
    assert_eq!(read(ours), blocks.len());
    group.bench(NAME, tier, |b| b.iter(|| read(black_box(ours))));
}
