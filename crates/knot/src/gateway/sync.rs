//! Bringing the scratch repository up to a ref record: the packs it lists
//! whose tips the scratch repository lacks, oldest first, each part
//! checked against its CID and the whole against the record's sha-256
//! before index-pack keeps it. A gateway opening a queue, or meeting a
//! commit of a writer outside it, reads through here.

use bytes::BytesMut;
use sha2::{Digest, Sha256};

use super::scratch::Scratch;
use crate::error::{KnotError, Result};
use crate::records::RefRecord;
use crate::remote::Remote;

/// Largest pack the gateway mirrors in one piece (it holds a pack in
/// memory while it checks it).
pub const MAX_MIRROR_PACK: u64 = 256 << 20;

/// Fetches what `rec`'s target needs; returns the packs indexed.
pub async fn mirror(remote: &Remote, scratch: &Scratch, rec: &RefRecord) -> Result<usize> {
    if scratch.has_commit(&rec.target).await? {
        return Ok(0);
    }
    let mut n = 0;
    let mut seen = std::collections::HashSet::new();
    // Oldest first: the order they were pushed in.
    for e in rec.packs.iter().rev() {
        if !seen.insert(e.pack.clone()) || scratch.has_commit(&e.tip).await? {
            continue;
        }
        let p = remote.read_pack(&e.pack).await?;
        if p.repo != remote.repo {
            return Err(KnotError::Record {
                what: "pack".into(),
                why: format!("pack {} belongs to repository {}", p.sha256, p.repo),
            });
        }
        if p.size > MAX_MIRROR_PACK {
            return Err(KnotError::TooLarge {
                op: format!("mirror pack {}", p.sha256),
                limit: MAX_MIRROR_PACK as usize,
            });
        }
        let mut buf = BytesMut::with_capacity(p.size as usize);
        let mut whole = Sha256::new();
        for part in &p.parts {
            let b = remote
                .pds
                .get_blob(&remote.did, &part.cid, part.size)
                .await?;
            whole.update(&b);
            buf.extend_from_slice(&b);
        }
        let digest = data_encoding::HEXLOWER.encode(&whole.finalize());
        if digest != p.sha256 {
            return Err(KnotError::HashMismatch {
                what: format!("pack {}", p.sha256),
                expected: p.sha256.clone(),
                got: digest,
            });
        }
        scratch.index_pack(&buf.freeze()).await?;
        n += 1;
    }
    if !scratch.has_commit(&rec.target).await? {
        return Err(KnotError::Record {
            what: "ref".into(),
            why: format!("the packs of {} do not hold it", rec.target),
        });
    }
    Ok(n)
}
