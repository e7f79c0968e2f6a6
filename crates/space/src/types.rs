//! The values the API takes and returns.

use repo::Cid;

use crate::lthash::LtHash;

/// Largest record (DRISL bytes) a write takes: E4's `MAX_RECORD_SIZE`.
pub const MAX_RECORD_BYTES: usize = 1 << 20;
/// Most writes in one batch (the public repo's applyWrites cap).
pub const MAX_WRITES: usize = 200;
/// Largest `limit` of listRecords and listRepoOps (their lexicons' cap).
pub const MAX_LIMIT: u32 = 1000;

/// Who may read and write a space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    /// E2 `simplespace#memberListPolicy` / E4 memberspace: the authority and
    /// the members, each with read and/or write access.
    MemberList,
    /// E4 personalspace: the authority alone.
    Personal,
    /// E2 `simplespace#publicPolicy`: anyone reads; members write.
    Public,
}

impl Policy {
    /// The stored name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Policy::MemberList => "memberList",
            Policy::Personal => "personal",
            Policy::Public => "public",
        }
    }

    /// The policy from its stored or lexicon name (`managingAppPolicy` is
    /// refused: this host runs no managing app).
    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "memberList" | "memberListPolicy" | "memberspace" => Some(Policy::MemberList),
            "personal" | "personalspace" => Some(Policy::Personal),
            "public" | "publicPolicy" => Some(Policy::Public),
            _ => None,
        }
    }
}

/// A space row.
#[derive(Clone, Debug)]
pub struct SpaceInfo {
    /// Row id.
    pub id: i64,
    /// Authority DID.
    pub authority: String,
    /// Policy.
    pub policy: Policy,
}

/// What a caller wants to do in a space ([`crate::SpaceStore::authorize`]).
#[derive(Clone, Copy, Debug)]
pub enum Need<'a> {
    /// Read records (any writer repo).
    Read,
    /// Write into `repo` (only the repo's own DID may).
    Write {
        /// The writer repo.
        repo: &'a str,
    },
    /// Manage the space (members, delete): the authority only.
    Admin,
}

/// One write of a batch. Values are DRISL (DAG-CBOR) maps.
#[derive(Clone, Debug)]
pub enum Write {
    /// Creates; fails with `RecordAlreadyExists` if the record exists. No
    /// rkey: a fresh TID.
    Create {
        /// Collection NSID.
        collection: String,
        /// Record key.
        rkey: Option<String>,
        /// DRISL bytes.
        value: Vec<u8>,
    },
    /// Creates or replaces (putRecord).
    Update {
        /// Collection NSID.
        collection: String,
        /// Record key.
        rkey: String,
        /// DRISL bytes.
        value: Vec<u8>,
    },
    /// Deletes; a missing record is no op (deleteRecord is idempotent).
    Delete {
        /// Collection NSID.
        collection: String,
        /// Record key.
        rkey: String,
    },
}

/// One write's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteResult {
    /// The record's collection.
    pub collection: String,
    /// The record's key (the generated one for a keyless create).
    pub rkey: String,
    /// The new CID; `None` for a delete.
    pub cid: Option<Cid>,
}

/// A batch's outcome.
#[derive(Clone, Debug)]
pub struct BatchResult {
    /// The repo's rev after the batch (unchanged when no write had effect).
    pub rev: String,
    /// One per write, in order.
    pub results: Vec<WriteResult>,
}

/// A writer repo's state: its LtHash and rev.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoState {
    /// The set hash.
    pub hash: LtHash,
    /// The latest batch's rev.
    pub rev: String,
}

/// listRecords input.
#[derive(Clone, Debug, Default)]
pub struct ListParams {
    /// Only this collection.
    pub collection: Option<String>,
    /// 1..=1000 (default 50).
    pub limit: Option<u32>,
    /// The last record URI of the previous page.
    pub cursor: Option<String>,
    /// Ascending instead of E2's default descending order.
    pub reverse: bool,
    /// CIDs only.
    pub exclude_values: bool,
}

/// A listed record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedRecord {
    /// Collection NSID.
    pub collection: String,
    /// Record key.
    pub rkey: String,
    /// CID.
    pub cid: Cid,
    /// DRISL bytes, unless `exclude_values`.
    pub value: Option<Vec<u8>>,
}

/// A listRecords page.
#[derive(Clone, Debug)]
pub struct ListPage {
    /// The records.
    pub records: Vec<ListedRecord>,
    /// The last record's URI when the page is full.
    pub cursor: Option<String>,
}

/// listRepoOps input.
#[derive(Clone, Debug, Default)]
pub struct OpsParams {
    /// Only ops of batches after this rev.
    pub since: Option<String>,
    /// 1..=1000 (default 100).
    pub limit: Option<u32>,
    /// `"{rev}/{idx}"` of the previous page's last op.
    pub cursor: Option<String>,
    /// Omit values.
    pub exclude_values: bool,
}

/// An op of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpEntry {
    /// The batch's rev (ops sharing it are one batch).
    pub rev: String,
    /// Position in the batch.
    pub idx: u32,
    /// Collection NSID.
    pub collection: String,
    /// Record key.
    pub rkey: String,
    /// New CID; `None` for a delete.
    pub cid: Option<Cid>,
    /// Previous CID; `None` for a create.
    pub prev: Option<Cid>,
    /// The value, only while `cid` is still the record's current CID.
    pub value: Option<Vec<u8>>,
}

/// A listRepoOps page.
#[derive(Clone, Debug)]
pub struct OpsPage {
    /// The ops.
    pub ops: Vec<OpEntry>,
    /// `"{rev}/{idx}"` of the last op, on a full page.
    pub cursor: Option<String>,
    /// The repo's state read in the same snapshot as the ops, on the last
    /// (short) page only: what the response's commit is built from.
    pub state: Option<RepoState>,
}
