//! The mirror's objects, read in process with gitoxide: revisions, trees,
//! blobs, commits, the log, refs and a commit's changed files. One
//! [`Mirror`] owns the shared repository handle; each request takes a
//! thread-local view of it (`gix::Repository`), whose object cache lives
//! as long as the request.

use std::path::{Path, PathBuf};

use gix::ObjectId;
use gix::bstr::ByteSlice;

use crate::error::{Result, ServeError};

/// Bytes of decoded objects each request's handle may cache.
const OBJECT_CACHE: usize = 4 << 20;

/// A bare repository on disk, opened once.
pub struct Mirror {
    repo: gix::ThreadSafeRepository,
    dir: PathBuf,
}

/// A commit, decoded.
#[derive(Debug, Clone)]
pub struct CommitInfo {
    pub id: ObjectId,
    pub tree: ObjectId,
    pub parents: Vec<ObjectId>,
    pub author: String,
    pub seconds: i64,
    pub message: String,
}

impl CommitInfo {
    /// The message's first line.
    pub fn summary(&self) -> &str {
        self.message.lines().next().unwrap_or("")
    }
}

/// What a tree entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File,
    Link,
    Submodule,
}

/// One entry of a tree.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub kind: EntryKind,
    pub oid: ObjectId,
}

/// One ref and the object it names.
#[derive(Debug, Clone)]
pub struct RefInfo {
    pub name: String,
    pub target: ObjectId,
}

/// How a file changed in a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Deleted,
    Modified,
}

/// One changed file (trees themselves are not listed).
#[derive(Debug, Clone)]
pub struct FileChange {
    pub path: String,
    pub kind: ChangeKind,
    pub old: Option<ObjectId>,
    pub new: Option<ObjectId>,
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Mirror {
    /// Opens the bare repository at `dir` without reading the user's or
    /// the system's git configuration.
    pub fn open(dir: &Path) -> Result<Mirror> {
        let repo = gix::open_opts(dir, gix::open::Options::isolated()).map_err(ServeError::git)?;
        Ok(Mirror {
            repo: repo.into_sync(),
            dir: dir.to_owned(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A handle for this thread.
    pub fn local(&self) -> gix::Repository {
        let mut r = self.repo.to_thread_local();
        r.object_cache_size(Some(OBJECT_CACHE));
        r
    }
}

/// The commit `rev` names: a 40-hex id, `refs/…`, a branch or a tag
/// (branches first, as git does).
pub fn resolve(repo: &gix::Repository, rev: &str) -> Result<ObjectId> {
    let id = if rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()) {
        ObjectId::from_hex(rev.as_bytes()).map_err(ServeError::git)?
    } else {
        let candidates = if rev.starts_with("refs/") {
            vec![rev.to_owned()]
        } else {
            vec![format!("refs/heads/{rev}"), format!("refs/tags/{rev}")]
        };
        let mut found = None;
        for c in candidates {
            if let Some(mut r) = repo
                .try_find_reference(c.as_str())
                .map_err(ServeError::git)?
            {
                found = Some(r.peel_to_id().map_err(ServeError::git)?.detach());
                break;
            }
        }
        found.ok_or_else(|| ServeError::not_found(format!("revision {rev}")))?
    };
    let obj = repo
        .try_find_object(id)
        .map_err(ServeError::git)?
        .ok_or_else(|| ServeError::not_found(format!("object {id}")))?;
    let c = obj
        .peel_to_commit()
        .map_err(|_| ServeError::not_found(format!("commit {rev}")))?;
    Ok(c.id)
}

/// The branch HEAD names (short name) and its commit, if any.
pub fn default_branch(repo: &gix::Repository) -> Result<Option<(String, ObjectId)>> {
    let Some(name) = repo.head_name().map_err(ServeError::git)? else {
        return Ok(None);
    };
    let short = lossy(name.shorten());
    match resolve(repo, name.as_bstr().to_str().map_err(ServeError::git)?) {
        Ok(id) => Ok(Some((short, id))),
        Err(ServeError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A commit by id.
pub fn commit(repo: &gix::Repository, id: ObjectId) -> Result<CommitInfo> {
    let c = repo
        .find_commit(id)
        .map_err(|_| ServeError::not_found(format!("commit {id}")))?;
    let d = c.decode().map_err(ServeError::git)?;
    let author = d.author().map_err(ServeError::git)?;
    Ok(CommitInfo {
        id,
        tree: d.tree(),
        parents: d.parents().collect(),
        author: lossy(author.name.trim()),
        seconds: author.seconds(),
        message: lossy(d.message),
    })
}

/// The tree at `path` in `commit`'s tree (`""` is the root).
pub fn tree_at(repo: &gix::Repository, commit_tree: ObjectId, path: &str) -> Result<Vec<Entry>> {
    let mut tree = repo.find_tree(commit_tree).map_err(ServeError::git)?;
    if !path.is_empty() {
        let e = tree
            .lookup_entry_by_path(path)
            .map_err(ServeError::git)?
            .ok_or_else(|| ServeError::not_found(format!("directory {path}")))?;
        if !e.mode().is_tree() {
            return Err(ServeError::not_found(format!("directory {path}")));
        }
        tree = repo.find_tree(e.object_id()).map_err(ServeError::git)?;
    }
    let d = tree.decode().map_err(ServeError::git)?;
    let mut out: Vec<Entry> = d
        .entries
        .iter()
        .map(|e| Entry {
            name: lossy(e.filename),
            kind: if e.mode.is_tree() {
                EntryKind::Dir
            } else if e.mode.is_commit() {
                EntryKind::Submodule
            } else if e.mode.is_link() {
                EntryKind::Link
            } else {
                EntryKind::File
            },
            oid: e.oid.to_owned(),
        })
        .collect();
    // Directories first, then by name (git's order within each).
    out.sort_by_key(|e| e.kind != EntryKind::Dir);
    Ok(out)
}

/// The blob at `path` in the tree: its id and bytes, refused past `max`.
pub fn blob_at(
    repo: &gix::Repository,
    commit_tree: ObjectId,
    path: &str,
    max: u64,
) -> Result<(ObjectId, Vec<u8>)> {
    let tree = repo.find_tree(commit_tree).map_err(ServeError::git)?;
    let e = tree
        .lookup_entry_by_path(path)
        .map_err(ServeError::git)?
        .ok_or_else(|| ServeError::not_found(format!("file {path}")))?;
    if !e.mode().is_blob_or_symlink() {
        return Err(ServeError::not_found(format!("file {path}")));
    }
    let id = e.object_id();
    let header = repo.find_header(id).map_err(ServeError::git)?;
    if header.size() > max {
        return Err(ServeError::TooLarge {
            what: format!("file {path}"),
            size: header.size(),
            max,
        });
    }
    let b = repo.find_blob(id).map_err(ServeError::git)?;
    Ok((id, b.data.clone()))
}

/// A blob by id, refused past `max`.
pub fn blob(repo: &gix::Repository, id: ObjectId, max: u64) -> Result<Vec<u8>> {
    let header = repo.find_header(id).map_err(ServeError::git)?;
    if header.size() > max {
        return Err(ServeError::TooLarge {
            what: format!("blob {id}"),
            size: header.size(),
            max,
        });
    }
    Ok(repo.find_blob(id).map_err(ServeError::git)?.data.clone())
}

/// Up to `limit` commits from `start`, newest first (commit-time order),
/// after skipping the first `skip` of them (walked, not decoded).
pub fn log(
    repo: &gix::Repository,
    start: ObjectId,
    skip: usize,
    limit: usize,
) -> Result<Vec<CommitInfo>> {
    let walk = repo
        .rev_walk([start])
        .sorting(gix::revision::walk::Sorting::ByCommitTime(
            Default::default(),
        ))
        .all()
        .map_err(ServeError::git)?;
    let mut out = Vec::new();
    for info in walk.skip(skip).take(limit) {
        let info = info.map_err(ServeError::git)?;
        out.push(commit(repo, info.id)?);
    }
    Ok(out)
}

/// Every ref (HEAD excluded), by name.
pub fn refs(repo: &gix::Repository) -> Result<Vec<RefInfo>> {
    let platform = repo.references().map_err(ServeError::git)?;
    let mut out = Vec::new();
    for r in platform.all().map_err(ServeError::git)? {
        let mut r = r.map_err(ServeError::git)?;
        let name = lossy(r.name().as_bstr());
        let target = r.peel_to_id().map_err(ServeError::git)?.detach();
        out.push(RefInfo { name, target });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The files `commit` changed against its first parent (against the
/// empty tree for a root commit).
pub fn changes(repo: &gix::Repository, c: &CommitInfo) -> Result<Vec<FileChange>> {
    let old = match c.parents.first() {
        Some(p) => repo
            .find_object(commit(repo, *p)?.tree)
            .map_err(ServeError::git)?
            .data
            .clone(),
        None => Vec::new(),
    };
    let new = repo
        .find_object(c.tree)
        .map_err(ServeError::git)?
        .data
        .clone();
    let mut rec = gix::diff::tree::Recorder::default();
    let mut state = gix::diff::tree::State::default();
    gix::diff::tree(
        gix::objs::TreeRefIter::from_bytes(&old, repo.object_hash()),
        gix::objs::TreeRefIter::from_bytes(&new, repo.object_hash()),
        &mut state,
        &repo.objects,
        &mut rec,
    )
    .map_err(ServeError::git)?;
    use gix::diff::tree::recorder::Change;
    let mut out = Vec::new();
    for ch in rec.records {
        let (path, kind, old, new, tree) = match ch {
            Change::Addition {
                entry_mode,
                oid,
                path,
                ..
            } => (
                path,
                ChangeKind::Added,
                None,
                Some(oid),
                entry_mode.is_tree(),
            ),
            Change::Deletion {
                entry_mode,
                oid,
                path,
                ..
            } => (
                path,
                ChangeKind::Deleted,
                Some(oid),
                None,
                entry_mode.is_tree(),
            ),
            Change::Modification {
                previous_oid,
                oid,
                entry_mode,
                path,
                ..
            } => (
                path,
                ChangeKind::Modified,
                Some(previous_oid),
                Some(oid),
                entry_mode.is_tree(),
            ),
        };
        if !tree {
            out.push(FileChange {
                path: lossy(&path),
                kind,
                old,
                new,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}
