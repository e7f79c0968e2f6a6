//! The narrow facade `--bench store` uses: the PRAGMA list and the
//! index-only write unit (Tranquil's metastore unit of work), and one
//! commit's planning over an in-memory account (`--bench instructions`).

pub use crate::plan_detached::{DetachedRepo, PlannedCommit};
pub use crate::schema::{WRITER_PRAGMAS, pragmas};

use rusqlite::params;

use crate::{Result, Store};

impl Store {
    #[doc(hidden)]
    /// Index-only write: record index upsert + block-ownership row + event
    /// append in one group-committed job, no CBOR, MST or signing.
    pub fn bench_index_only_write(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
        cid: repo::Cid,
    ) -> Result<i64> {
        let (did, collection, rkey) = (did.to_owned(), collection.to_owned(), rkey.to_owned());
        self.submit(move |w| {
            w.touch(&did);
            let c = cid.to_bytes();
            // The row goes where a node holding this key would.
            let pos = crate::node_pos::path_position(collection.as_bytes(), rkey.as_bytes());
            w.conn
                .prepare_cached(
                    "INSERT INTO records (did, collection, rkey, cid, repo_rev) VALUES (?1, ?2, ?3, ?4, 'x') \
                     ON CONFLICT (did, collection, rkey) DO UPDATE SET cid = excluded.cid",
                )?
                .execute(params![did, collection, rkey, &c[..]])?;
            w.conn
                .prepare_cached(
                    "INSERT OR IGNORE INTO repo_blocks (did, pos, cid, repo_rev, bytes) VALUES (?1, ?2, ?3, 'x', x'')",
                )?
                .execute(params![did, pos, &c[..]])?;
            let seq = w.next_seq;
            w.conn
                .prepare_cached("INSERT INTO seq_events (seq, did, kind, payload) VALUES (?1, ?2, '#index', ?3)")?
                .execute(params![seq, did, &c[..]])?;
            w.next_seq += 1;
            Ok(seq)
        })
    }
}

impl Store {
    #[doc(hidden)]
    /// `current_cid` bypassing the writer-coherent cache: the SQLite index
    /// lookup alone (the adjacent probe `store.current_cid/ours.uncached`).
    pub fn bench_current_cid_uncached(
        &self,
        did: &str,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<repo::Cid>> {
        repo::syntax::validate_did(did)?;
        repo::syntax::validate_nsid(collection)?;
        repo::syntax::validate_record_key(rkey)?;
        self.current_cid_from_index(did, collection, rkey)
    }
}

/// Builds the startup "history" fixture in a fresh database at `path`
/// (schema applied): `commits` commit rows (one account per 10 commits,
/// seq 1..), `blocks` repo blocks of `block_bytes` seeded bytes with a
/// rev, `events` events with `event_bytes` payloads, and `unversioned`
/// further blocks with `repo_rev` NULL (backfilled on the next open).
pub fn build_history_fixture(
    path: &std::path::Path,
    commits: usize,
    blocks: usize,
    block_bytes: usize,
    events: usize,
    event_bytes: usize,
    unversioned: usize,
) -> Result<()> {
    let (conn, _, ()) = crate::schema::startup(path, false, |_| Ok(()))?;
    conn.execute_batch("BEGIN")?;
    let accounts = commits.div_ceil(10).max(1);
    let fake = |i: u64, tag: u8| {
        let mut d = [0u8; 32];
        d[..8].copy_from_slice(&i.to_le_bytes());
        d[8] = tag;
        repo::Cid::new(repo::Codec::DagCbor, d).to_bytes()
    };
    let did = |a: usize| format!("did:plc:hist{a:020}");
    let rev = |i: usize| format!("3l{:011}", i);
    {
        let mut st = conn.prepare(
            "INSERT INTO repo_root (did, commit_cid, rev, data_cid, signing_key) VALUES (?1, ?2, ?3, ?4, NULL)",
        )?;
        for a in 0..accounts {
            st.execute(params![
                did(a),
                &fake(a as u64, 1)[..],
                rev(commits),
                &fake(a as u64, 2)[..]
            ])?;
        }
        let mut st =
            conn.prepare("INSERT INTO commits (did, rev, cid, seq) VALUES (?1, ?2, ?3, ?4)")?;
        for i in 0..commits {
            st.execute(params![
                did(i % accounts),
                rev(i),
                &fake(i as u64, 3)[..],
                i as i64 + 1
            ])?;
        }
        let payload = vec![0x5au8; block_bytes.max(event_bytes)];
        let mut st = conn.prepare(
            "INSERT INTO repo_blocks (did, pos, cid, repo_rev, bytes) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for i in 0..blocks {
            st.execute(params![
                did(i % accounts),
                i as i64,
                &fake(i as u64, 4)[..],
                rev(i % commits.max(1)),
                &payload[..block_bytes]
            ])?;
        }
        for i in 0..unversioned {
            st.execute(params![
                HISTORY_UNVERSIONED_DID,
                i as i64,
                &fake(i as u64, 5)[..],
                None::<String>,
                &payload[..block_bytes.min(512)]
            ])?;
        }
        conn.execute(
            "INSERT INTO repo_root (did, commit_cid, rev, data_cid, signing_key) VALUES (?1, ?2, ?3, ?4, NULL)",
            params![HISTORY_UNVERSIONED_DID, &fake(0, 6)[..], rev(commits), &fake(0, 7)[..]],
        )?;
        let mut st = conn.prepare(
            "INSERT INTO seq_events (seq, did, kind, payload) VALUES (?1, ?2, '#commit', ?3)",
        )?;
        for i in 0..events {
            st.execute(params![
                i as i64 + 1,
                did(i % accounts),
                &payload[..event_bytes]
            ])?;
        }
    }
    conn.execute_batch("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);")?;
    Ok(())
}

/// The account that owns the history fixture's unversioned blocks.
pub const HISTORY_UNVERSIONED_DID: &str = "did:plc:histunversioned000000";

/// Returns the history fixture's unversioned blocks to their state before
/// any backfill (`repo_rev` NULL, no `rev_backfill` row), so the next open
/// backfills them again. Returns how many blocks are unversioned.
pub fn reset_unversioned(path: &std::path::Path) -> Result<usize> {
    let conn = crate::schema::open_writer(path, false)?;
    conn.execute(
        "DELETE FROM rev_backfill WHERE did = ?1",
        [HISTORY_UNVERSIONED_DID],
    )?;
    conn.execute(
        "UPDATE repo_blocks SET repo_rev = NULL WHERE did = ?1 AND repo_rev IS NOT NULL",
        [HISTORY_UNVERSIONED_DID],
    )?;
    let n: i64 = conn.query_row(
        "SELECT COUNT(*) FROM repo_blocks WHERE did = ?1 AND repo_rev IS NULL",
        [HISTORY_UNVERSIONED_DID],
        |r| r.get(0),
    )?;
    Ok(usize::try_from(n).unwrap_or(0))
}
