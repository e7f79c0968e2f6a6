//! CAR: the streaming reader (every block checked against its CID) and the
//! in-memory slice parser, then the walk a repository import makes: the
//! root's commit decoded, the MST from its `data` checked and listed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use repo::car::{CarReader, CarSlice};
use repo::commit::CommitRef;
use repo::mst::{MemoryBlockStore, Mst};

fuzz_target!(|data: &[u8]| {
    if let Ok(slice) = CarSlice::parse(data, true) {
        for (cid, _) in &slice.blocks {
            assert!(slice.get(cid).is_some(), "a parsed block cannot be found");
        }
    }
    let Ok(reader) = CarReader::new(data) else {
        return;
    };
    let mut reader = reader.verify(true);
    let roots = reader.roots().to_vec();
    let mut blocks = MemoryBlockStore::new();
    loop {
        match reader.next_block() {
            Ok(Some((cid, bytes))) => blocks.put(cid, bytes),
            Ok(None) => break,
            Err(_) => return,
        }
    }
    let Some(commit) = roots
        .first()
        .and_then(|root| blocks.get(root))
        .and_then(|bytes| CommitRef::decode(bytes).ok())
    else {
        return;
    };
    let mut mst = Mst::load(&blocks, commit.data);
    if mst.check_structure().is_ok() {
        let nodes = mst.node_cids();
        let entries = mst.entries();
        assert!(
            nodes.is_ok() && entries.is_ok(),
            "a checked tree fails to list"
        );
    }
});
