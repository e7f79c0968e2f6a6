//! Every statement the crate runs, in one place, so a test can hold each
//! one's `EXPLAIN QUERY PLAN` to "no full scan, no temp B-tree"
//! ([`STATEMENTS`], `tests/query_plans.rs`).

pub const SPACE_BY_URI: &str = "SELECT id, authority, policy, deleted_at FROM space WHERE uri = ?1";
pub const SPACE_INSERT: &str = "INSERT INTO space (uri, authority, type, skey, policy, managing_app, app_access, created_at) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
pub const SPACE_MARK_DELETED: &str = "UPDATE space SET deleted_at = ?2 WHERE id = ?1";
pub const SPACES_OF: &str = "SELECT uri FROM space WHERE authority = ?1 AND uri > ?2 AND deleted_at IS NULL ORDER BY uri LIMIT ?3";
pub const MEMBER_GET: &str =
    "SELECT can_read, can_write FROM space_member WHERE space_id = ?1 AND did = ?2";
pub const MEMBER_UPSERT: &str = "INSERT INTO space_member (space_id, did, can_read, can_write) VALUES (?1, ?2, ?3, ?4) \
     ON CONFLICT (space_id, did) DO UPDATE SET can_read = excluded.can_read, can_write = excluded.can_write";
pub const MEMBER_DELETE: &str = "DELETE FROM space_member WHERE space_id = ?1 AND did = ?2";
pub const MEMBERS: &str = "SELECT did, can_read, can_write FROM space_member WHERE space_id = ?1 AND did > ?2 ORDER BY did LIMIT ?3";
pub const REPO_GET: &str =
    "SELECT id, set_hash, rev FROM space_repo WHERE space_id = ?1 AND did = ?2";
pub const REPO_INSERT: &str =
    "INSERT INTO space_repo (space_id, did, set_hash, rev) VALUES (?1, ?2, ?3, ?4)";
pub const REPO_UPDATE: &str = "UPDATE space_repo SET set_hash = ?2, rev = ?3 WHERE id = ?1";
pub const RECORD_GET: &str = "SELECT cid, value FROM space_record WHERE repo = ?1 AND path = ?2";
pub const RECORD_CID: &str = "SELECT cid FROM space_record WHERE repo = ?1 AND path = ?2";
pub const RECORD_UPSERT: &str = "INSERT INTO space_record (repo, path, cid, rev, value) VALUES (?1, ?2, ?3, ?4, ?5) \
     ON CONFLICT (repo, path) DO UPDATE SET cid = excluded.cid, rev = excluded.rev, value = excluded.value";
pub const RECORD_DELETE: &str = "DELETE FROM space_record WHERE repo = ?1 AND path = ?2";
/// listRecords, E2's default order (URI descending); `?2 < path < ?3`.
pub const LIST_DESC: &str = "SELECT path, cid, value FROM space_record WHERE repo = ?1 AND path > ?2 AND path < ?3 \
     ORDER BY path DESC LIMIT ?4";
pub const LIST_ASC: &str = "SELECT path, cid, value FROM space_record WHERE repo = ?1 AND path > ?2 AND path < ?3 \
     ORDER BY path ASC LIMIT ?4";
pub const LIST_DESC_NOVALUE: &str = "SELECT path, cid FROM space_record WHERE repo = ?1 AND path > ?2 AND path < ?3 \
     ORDER BY path DESC LIMIT ?4";
pub const LIST_ASC_NOVALUE: &str = "SELECT path, cid FROM space_record WHERE repo = ?1 AND path > ?2 AND path < ?3 \
     ORDER BY path ASC LIMIT ?4";
/// getRepo: every record of a writer repo in path order.
pub const ALL_RECORDS: &str =
    "SELECT path, cid, value FROM space_record WHERE repo = ?1 ORDER BY path";
pub const ALL_RECORD_CIDS: &str =
    "SELECT path, cid FROM space_record WHERE repo = ?1 ORDER BY path";
pub const OPLOG_INSERT: &str = "INSERT INTO space_oplog (repo, rev, idx, action, path, cid, prev) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
/// listRepoOps: ops after `(?2, ?3)` in `(rev, idx)` order; the value
/// only while it is still the record's current one.
pub const OPS_AFTER: &str = "SELECT o.rev, o.idx, o.action, o.path, o.cid, o.prev, r.value FROM space_oplog o \
     LEFT JOIN space_record r ON r.repo = o.repo AND r.path = o.path AND r.cid = o.cid \
     WHERE o.repo = ?1 AND (o.rev, o.idx) > (?2, ?3) ORDER BY o.rev, o.idx LIMIT ?4";
pub const OPS_AFTER_NOVALUE: &str = "SELECT rev, idx, action, path, cid, prev FROM space_oplog \
     WHERE repo = ?1 AND (rev, idx) > (?2, ?3) ORDER BY rev, idx LIMIT ?4";
pub const BLOB_REF_INSERT: &str =
    "INSERT OR IGNORE INTO space_blob_ref (space_id, blob, repo, path) VALUES (?1, ?2, ?3, ?4)";
pub const BLOB_REF_DELETE: &str = "DELETE FROM space_blob_ref WHERE repo = ?1 AND path = ?2";
pub const BLOB_REF_IN_SPACE: &str =
    "SELECT 1 FROM space_blob_ref WHERE space_id = ?1 AND blob = ?2 LIMIT 1";

/// Every statement, by name.
pub const STATEMENTS: &[(&str, &str)] = &[
    ("space_by_uri", SPACE_BY_URI),
    ("space_insert", SPACE_INSERT),
    ("space_mark_deleted", SPACE_MARK_DELETED),
    ("spaces_of", SPACES_OF),
    ("member_get", MEMBER_GET),
    ("member_upsert", MEMBER_UPSERT),
    ("member_delete", MEMBER_DELETE),
    ("members", MEMBERS),
    ("repo_get", REPO_GET),
    ("repo_insert", REPO_INSERT),
    ("repo_update", REPO_UPDATE),
    ("record_get", RECORD_GET),
    ("record_cid", RECORD_CID),
    ("record_upsert", RECORD_UPSERT),
    ("record_delete", RECORD_DELETE),
    ("list_desc", LIST_DESC),
    ("list_asc", LIST_ASC),
    ("list_desc_novalue", LIST_DESC_NOVALUE),
    ("list_asc_novalue", LIST_ASC_NOVALUE),
    ("all_records", ALL_RECORDS),
    ("all_record_cids", ALL_RECORD_CIDS),
    ("oplog_insert", OPLOG_INSERT),
    ("ops_after", OPS_AFTER),
    ("ops_after_novalue", OPS_AFTER_NOVALUE),
    ("blob_ref_insert", BLOB_REF_INSERT),
    ("blob_ref_delete", BLOB_REF_DELETE),
    ("blob_ref_in_space", BLOB_REF_IN_SPACE),
];
