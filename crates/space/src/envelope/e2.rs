//! E2: the two-root CARv1 and the per-response signed commit
//! (`packages/space/src/sync/provider.ts serializeRepo` at the August
//! alpha).
//!
//! Layout: header `roots = [commitCid, indexCid]`; block 1 the signed
//! commit's DRISL; block 2 the index, a DRISL map `"{collection}/{rkey}"`
//! → record CID link; then one block per record in the index's canonical
//! key order (shortest key first, then bytewise). No blobs. All records are
//! collected first, because the index precedes them (as the reference
//! does). `exclude_values` writes the two root blocks only. A record whose
//! bytes equal another's is written once per record (the reference writes
//! a block per index entry).

use std::io::Write;
use std::sync::Arc;

use repo::Cid;
use repo::car::CarWriter;
use repo::cbor::Encoder;

use super::{Authed, Envelope, Era, RequestAuth};
use crate::commit::{SignedCommit, Signer};
use crate::error::Result;
use crate::store::SpaceStore;
use crate::types::RepoState;
use crate::uri::SpaceRef;

/// The E2 envelope: signs with `signer`.
#[derive(Clone)]
pub struct E2 {
    signer: Arc<dyn Signer>,
}

impl E2 {
    /// An envelope signing through `signer`.
    pub fn new(signer: Arc<dyn Signer>) -> E2 {
        E2 { signer }
    }
}

/// The canonical DRISL key order: shorter first, then bytewise.
fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// The index block for `(path, cid)` pairs already in canonical order.
pub(crate) fn index_block(entries: &[(String, Cid, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + entries.len() * 80);
    let mut e = Encoder::new(&mut out);
    e.map(entries.len());
    for (path, cid, _) in entries {
        e.text(path);
        e.link(cid);
    }
    out
}

impl Envelope for E2 {
    fn era(&self) -> Era {
        Era::E2
    }

    fn repo_content_type(&self) -> &'static str {
        "application/vnd.ipld.car"
    }

    fn commit(
        &self,
        space: &SpaceRef,
        repo: &str,
        state: &RepoState,
        _req: &RequestAuth,
    ) -> Result<Authed> {
        let c = SignedCommit::build(&space.to_uri(), repo, state, &*self.signer)?;
        Ok(Authed {
            commit: c.to_value(),
            headers: Vec::new(),
        })
    }

    fn record(&self, _uri: &str, _cid: &Cid, _req: &RequestAuth) -> Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }

    fn get_repo(
        &self,
        store: &SpaceStore,
        space: &SpaceRef,
        repo: &str,
        exclude_values: bool,
        _req: &RequestAuth,
        out: &mut dyn Write,
    ) -> Result<Authed> {
        let mut state = None;
        let mut entries: Vec<(String, Cid, Vec<u8>)> = Vec::new();
        store.export(
            space,
            repo,
            !exclude_values,
            &mut |s| {
                state = Some(s.clone());
                Ok(())
            },
            &mut |path, cid, value| {
                entries.push((
                    path.to_owned(),
                    cid,
                    value.map(<[u8]>::to_vec).unwrap_or_default(),
                ));
                Ok(())
            },
        )?;
        let Some(state) = state else {
            return Err(crate::SpaceError::Corrupt(
                "export reported no state".into(),
            ));
        };
        // Rows come in bytewise order; the index wants length first.
        entries.sort_by(|a, b| key_order(&a.0, &b.0));
        let commit = SignedCommit::build(&space.to_uri(), repo, &state, &*self.signer)?;
        let commit_bytes = commit.to_cbor();
        let commit_cid = Cid::for_dag_cbor(&commit_bytes);
        let index = index_block(&entries);
        let index_cid = Cid::for_dag_cbor(&index);
        let mut car = CarWriter::new(out, &[commit_cid, index_cid])?;
        car.write_block(&commit_cid, &commit_bytes)?;
        car.write_block(&index_cid, &index)?;
        if !exclude_values {
            for (_, cid, value) in &entries {
                car.write_block(cid, value)?;
            }
        }
        car.finish()?;
        Ok(Authed {
            commit: commit.to_value(),
            headers: Vec::new(),
        })
    }
}
