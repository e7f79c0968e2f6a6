//! Startup fixtures the public API cannot build (feature
//! `bench-internals`, re-exported by `bench_internals`): a commit history
//! in the shape `store.startup/ours/history-10k` names, with blocks that
//! predate revisions (`repo_rev` NULL), which only an old schema wrote.

use rusqlite::params;

use crate::Result;

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
