//! One remote repository on one PDS: the identity it resolves to, the
//! session ([`Auth`]), the warm state, and the record calls the push and
//! fetch paths are made of. It owns the state file: every change of a
//! cached record goes through it.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::client::Xrpc;
use crate::error::{KnotError, Result};
use crate::identity;
use crate::names::{pack_rkey, ref_prefix};
use crate::records::{PACK_NSID, PackRecord, REF_NSID, REPO_NSID, RefRecord, RepoRecord};
use crate::session::{self, Credentials};
use crate::state::{self, CachedRef, CachedRepo, State, Tokens};
use crate::url::RemoteUrl;

/// Deadline of one request (a 4 MiB part on a slow link included).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// The session of one process: cached tokens, refreshed when stale,
/// created at most once.
pub struct Auth {
    pds: Xrpc,
    identifier: String,
    /// Given by the caller; else [`Credentials::find`] when first needed.
    creds: Option<Credentials>,
    tokens: Mutex<Option<Tokens>>,
}

fn is_auth_error(e: &KnotError) -> bool {
    matches!(e, KnotError::Xrpc { status, error, .. }
        if *status == 401 || error == "ExpiredToken" || error == "InvalidToken")
}

impl Auth {
    /// A session of `identifier` on `pds`, starting from `tokens` if any;
    /// `creds` when the caller has them (else found when first needed).
    pub fn new(
        pds: Xrpc,
        identifier: String,
        creds: Option<Credentials>,
        tokens: Option<Tokens>,
    ) -> Auth {
        Auth {
            pds,
            identifier,
            creds,
            tokens: Mutex::new(tokens),
        }
    }

    fn credentials(&self) -> Result<Credentials> {
        match &self.creds {
            Some(c) => Ok(c.clone()),
            None => Credentials::find(&self.identifier),
        }
    }

    /// A usable access token: the cached one, refreshed when it expires
    /// within a minute, else a new session.
    pub async fn token(&self) -> Result<String> {
        let mut g = self.tokens.lock().await;
        if let Some(t) = g.as_ref() {
            if !session::stale(t) {
                return Ok(t.access.clone());
            }
            if let Ok(n) = session::refresh(&self.pds, t).await {
                let a = n.access.clone();
                *g = Some(n);
                return Ok(a);
            }
        }
        let n = session::create(&self.pds, &self.credentials()?).await?;
        let a = n.access.clone();
        *g = Some(n);
        Ok(a)
    }

    /// After the server refused `failed`: a refreshed (or new) session,
    /// unless another task already replaced it.
    pub async fn renew(&self, failed: &str) -> Result<String> {
        let mut g = self.tokens.lock().await;
        if let Some(t) = g.as_ref() {
            if t.access != failed {
                return Ok(t.access.clone());
            }
            if let Ok(n) = session::refresh(&self.pds, t).await {
                let a = n.access.clone();
                *g = Some(n);
                return Ok(a);
            }
        }
        let n = session::create(&self.pds, &self.credentials()?).await?;
        let a = n.access.clone();
        *g = Some(n);
        Ok(a)
    }

    /// Runs `f` with a token; once more with a renewed one if the server
    /// called the first expired or invalid.
    pub async fn with<T, F, Fut>(&self, f: F) -> Result<T>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let t = self.token().await?;
        match f(t.clone()).await {
            Err(e) if is_auth_error(&e) => {
                let t2 = self.renew(&t).await?;
                f(t2).await
            }
            r => r,
        }
    }

    async fn snapshot(&self) -> Option<Tokens> {
        self.tokens.lock().await.clone()
    }
}

/// The `swapRecord` of a put.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swap {
    /// No guard.
    Any,
    /// The record must not exist.
    Absent,
    /// The record must be at this CID.
    At(String),
}

/// An opened remote.
pub struct Remote {
    /// The URL git gave.
    pub url: String,
    /// The PDS.
    pub pds: Xrpc,
    /// The account.
    pub did: String,
    /// The repository's name.
    pub repo: String,
    /// The session.
    pub auth: Arc<Auth>,
    /// The warm state.
    pub state: State,
    state_path: Option<PathBuf>,
}

fn uri_rkey(v: &Value) -> Option<&str> {
    v["uri"].as_str()?.rsplit('/').next()
}

impl Remote {
    /// Opens `url` with state kept under `git_dir` (if any): resolves the
    /// account unless the warm state already knows it.
    pub async fn open(url: &str, git_dir: Option<&Path>) -> Result<Remote> {
        Remote::open_with(url, git_dir, None).await
    }

    /// [`Remote::open`] with the credentials given rather than looked up.
    pub async fn open_with(
        url: &str,
        git_dir: Option<&Path>,
        creds: Option<Credentials>,
    ) -> Result<Remote> {
        let parsed = RemoteUrl::parse(url)?;
        let state_path = git_dir.map(|g| state::path_for(g, url));
        let mut st = State::load(state_path.as_deref(), url);
        let (did, pds) = match (&st.did, &st.pds) {
            (Some(d), Some(p)) => (d.clone(), p.clone()),
            _ => {
                let any = Xrpc::new(
                    parsed.pds.as_deref().unwrap_or("http://localhost"),
                    REQUEST_TIMEOUT,
                );
                let (did, pds) = match &parsed.pds {
                    Some(p) => {
                        let did = if parsed.account.starts_with("did:") {
                            parsed.account.clone()
                        } else {
                            let v = any
                                .query(
                                    "com.atproto.identity.resolveHandle",
                                    &[("handle", &parsed.account)],
                                    None,
                                )
                                .await
                                .map_err(|e| KnotError::Resolve {
                                    what: parsed.account.clone(),
                                    why: e.to_string(),
                                })?;
                            v["did"]
                                .as_str()
                                .filter(|d| d.starts_with("did:"))
                                .ok_or_else(|| KnotError::Resolve {
                                    what: parsed.account.clone(),
                                    why: "no did in the answer".into(),
                                })?
                                .to_owned()
                        };
                        (did, p.clone())
                    }
                    None => {
                        let did = if parsed.account.starts_with("did:") {
                            parsed.account.clone()
                        } else {
                            identity::resolve_handle(&any, &parsed.account).await?
                        };
                        let doc = identity::did_doc(&any, &did).await?;
                        let pds = identity::pds_of(&did, &doc)?;
                        (did, pds)
                    }
                };
                st.did = Some(did.clone());
                st.pds = Some(pds.clone());
                (did, pds)
            }
        };
        let xrpc = Xrpc::new(&pds, REQUEST_TIMEOUT);
        xrpc.set_write_allowance(st.write_allowance);
        // Dialled while git and the helper run their local work.
        xrpc.preconnect();
        let auth = Arc::new(Auth::new(
            xrpc.clone(),
            parsed.account.clone(),
            creds,
            st.tokens.clone(),
        ));
        Ok(Remote {
            url: url.to_owned(),
            pds: xrpc,
            did,
            repo: parsed.repo,
            auth,
            state: st,
            state_path,
        })
    }

    /// Writes the warm state (tokens included).
    pub async fn save(&mut self) -> Result<()> {
        self.state.tokens = self.auth.snapshot().await;
        self.state.write_allowance = self.pds.write_allowance();
        self.state.save(self.state_path.as_deref())
    }

    /// Every ref record of the repository (paged `listRecords` from the
    /// repository's key prefix, ascending); refreshes the cache.
    pub async fn read_refs(&mut self) -> Result<BTreeMap<String, CachedRef>> {
        let out = self.list_refs().await?;
        self.state.refs = Some(out.clone());
        self.state.refs_read_at = Some(state::unix_now());
        Ok(out)
    }

    /// The refs as of now, given `latest`, the account's latest commit
    /// asked *before* this call: the cached listing when it was taken at
    /// that same commit (no request: nothing was written since), else a
    /// new listing, recorded as taken at `latest`. A write between asking
    /// and listing leaves the recorded commit older than the listing, so
    /// the next call lists again: a moved ref is never missed. `None`
    /// (the server did not say) always lists.
    pub async fn refs_at(&mut self, latest: Option<String>) -> Result<BTreeMap<String, CachedRef>> {
        if let (Some(l), Some(seen), Some(refs)) =
            (&latest, &self.state.refs_commit, &self.state.refs)
            && l == seen
        {
            // Checked now: as good as a listing for the push's TTL.
            let refs = refs.clone();
            self.state.refs_read_at = Some(state::unix_now());
            return Ok(refs);
        }
        let out = self.read_refs().await?;
        self.state.refs_commit = latest;
        Ok(out)
    }

    /// [`Remote::latest_commit`], `None` when the server would not answer
    /// it (the caller then lists, as it did before asking).
    pub async fn latest_commit_or_none(&self) -> Option<String> {
        self.latest_commit().await.ok()
    }

    /// Every ref record of the repository, read now (the cache is left
    /// as it is: [`Remote::read_refs`] refreshes it).
    pub async fn list_refs(&self) -> Result<BTreeMap<String, CachedRef>> {
        const OP: &str = "com.atproto.repo.listRecords";
        let prefix = ref_prefix(&self.repo);
        let mut cursor = prefix.clone();
        let mut out = BTreeMap::new();
        for page in 0.. {
            // 100,000 refs at most: a server that pages forever is refused.
            if page == 1000 {
                return Err(KnotError::bad(OP, "more than 1000 pages of refs"));
            }
            let v = self
                .pds
                .query(
                    OP,
                    &[
                        ("repo", &self.did),
                        ("collection", REF_NSID),
                        ("limit", "100"),
                        ("reverse", "true"),
                        ("cursor", &cursor),
                    ],
                    None,
                )
                .await?;
            let recs = v["records"]
                .as_array()
                .ok_or_else(|| KnotError::bad(OP, "no records array"))?;
            let mut last = None;
            let mut past = false;
            for r in recs {
                let rkey = uri_rkey(r).ok_or_else(|| KnotError::bad(OP, "record without uri"))?;
                if rkey <= cursor.as_str() {
                    return Err(KnotError::bad(OP, "records out of order"));
                }
                if !rkey.starts_with(&prefix) {
                    past = true;
                    break;
                }
                last = Some(rkey.to_owned());
                let cid = r["cid"]
                    .as_str()
                    .ok_or_else(|| KnotError::bad(OP, "record without cid"))?
                    .to_owned();
                let rec = RefRecord::from_value(r["value"].clone())?;
                if rec.repo != self.repo || crate::names::ref_rkey(&self.repo, &rec.name) != rkey {
                    return Err(KnotError::Record {
                        what: "ref".into(),
                        why: format!("record {rkey} names {}:{}", rec.repo, rec.name),
                    });
                }
                out.insert(rec.name.clone(), CachedRef { cid, record: rec });
            }
            match (past, last, v["cursor"].as_str()) {
                (false, Some(l), Some(_)) if recs.len() == 100 => cursor = l,
                _ => break,
            }
        }
        Ok(out)
    }

    /// A record, `None` when it does not exist.
    pub async fn get_record(
        &self,
        collection: &str,
        rkey: &str,
    ) -> Result<Option<(String, Value)>> {
        const OP: &str = "com.atproto.repo.getRecord";
        match self
            .pds
            .query(
                OP,
                &[
                    ("repo", &self.did),
                    ("collection", collection),
                    ("rkey", rkey),
                ],
                None,
            )
            .await
        {
            Ok(mut v) => {
                let cid = v["cid"]
                    .as_str()
                    .ok_or_else(|| KnotError::bad(OP, "no cid"))?
                    .to_owned();
                Ok(Some((cid, v["value"].take())))
            }
            Err(e) if e.xrpc_name() == Some("RecordNotFound") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The repository record; refreshes the cache.
    pub async fn read_repo(&mut self) -> Result<CachedRepo> {
        let r = self.repo_record().await?;
        self.state.repo = Some(r.clone());
        Ok(r)
    }

    /// The repository record, read now (the cache is left as it is).
    pub async fn repo_record(&self) -> Result<CachedRepo> {
        Ok(match self.get_record(REPO_NSID, &self.repo).await? {
            Some((_, v)) => CachedRepo {
                head: Some(RepoRecord::from_value(v)?.head),
            },
            None => CachedRepo { head: None },
        })
    }

    /// One ref record, read now.
    pub async fn read_ref(&self, name: &str) -> Result<Option<CachedRef>> {
        let rkey = crate::names::ref_rkey(&self.repo, name);
        match self.get_record(REF_NSID, &rkey).await? {
            Some((cid, v)) => {
                let record = RefRecord::from_value(v)?;
                if record.name != name || record.repo != self.repo {
                    return Err(KnotError::Record {
                        what: "ref".into(),
                        why: format!("record {rkey} names {}", record.name),
                    });
                }
                Ok(Some(CachedRef { cid, record }))
            }
            None => Ok(None),
        }
    }

    /// A pack record.
    pub async fn read_pack(&self, id: &str) -> Result<PackRecord> {
        let (_, v) = self
            .get_record(PACK_NSID, &pack_rkey(&self.repo, id))
            .await?
            .ok_or_else(|| KnotError::Record {
                what: "pack".into(),
                why: format!("pack {id} is missing from the PDS"),
            })?;
        let p = PackRecord::from_value(v)?;
        if p.sha256 != id {
            return Err(KnotError::Record {
                what: "pack".into(),
                why: format!("record {id} describes pack {}", p.sha256),
            });
        }
        Ok(p)
    }

    /// `putRecord` under `swap`; returns the new record's CID.
    pub async fn put_record(
        &self,
        collection: &str,
        rkey: &str,
        value: &Value,
        swap: &Swap,
    ) -> Result<String> {
        Ok(self
            .put_record_commit(collection, rkey, value, swap)
            .await?
            .0)
    }

    /// `putRecord` under `swap`; returns the new record's CID and the
    /// commit's (when the server names it).
    pub async fn put_record_commit(
        &self,
        collection: &str,
        rkey: &str,
        value: &Value,
        swap: &Swap,
    ) -> Result<(String, Option<String>)> {
        const OP: &str = "com.atproto.repo.putRecord";
        let mut body =
            json!({"repo": self.did, "collection": collection, "rkey": rkey, "record": value});
        match swap {
            Swap::Any => {}
            Swap::Absent => body["swapRecord"] = Value::Null,
            Swap::At(c) => body["swapRecord"] = c.as_str().into(),
        }
        let v = self
            .auth
            .with(|t| {
                let body = &body;
                async move { self.pds.procedure(OP, body, Some(&t)).await }
            })
            .await?;
        let cid = v["cid"]
            .as_str()
            .ok_or_else(|| KnotError::bad(OP, "no cid"))?
            .to_owned();
        Ok((cid, commit_of(&v)))
    }

    /// `deleteRecord` guarded by `swap` (a CID).
    pub async fn delete_record(
        &self,
        collection: &str,
        rkey: &str,
        swap: Option<&str>,
    ) -> Result<()> {
        const OP: &str = "com.atproto.repo.deleteRecord";
        let mut body = json!({"repo": self.did, "collection": collection, "rkey": rkey});
        if let Some(c) = swap {
            body["swapRecord"] = c.into();
        }
        self.auth
            .with(|t| {
                let body = &body;
                async move { self.pds.procedure(OP, body, Some(&t)).await }
            })
            .await?;
        Ok(())
    }

    /// `applyWrites` guarded by `swapCommit`; returns each write's new CID
    /// (`None` for deletes).
    pub async fn apply_writes(
        &self,
        writes: Vec<Value>,
        swap_commit: &str,
    ) -> Result<Vec<Option<String>>> {
        Ok(self.apply_writes_commit(writes, swap_commit).await?.0)
    }

    /// [`Remote::apply_writes`], with the new commit's CID (when the
    /// server names it).
    pub async fn apply_writes_commit(
        &self,
        writes: Vec<Value>,
        swap_commit: &str,
    ) -> Result<(Vec<Option<String>>, Option<String>)> {
        const OP: &str = "com.atproto.repo.applyWrites";
        let n = writes.len();
        let body = json!({"repo": self.did, "writes": writes, "swapCommit": swap_commit});
        let v = self
            .auth
            .with(|t| {
                let body = &body;
                async move { self.pds.procedure(OP, body, Some(&t)).await }
            })
            .await?;
        let results = v["results"]
            .as_array()
            .ok_or_else(|| KnotError::bad(OP, "no results"))?;
        if results.len() != n {
            return Err(KnotError::bad(OP, "results do not match the writes"));
        }
        let cids = results
            .iter()
            .map(|r| r["cid"].as_str().map(str::to_owned))
            .collect();
        Ok((cids, commit_of(&v)))
    }

    /// The CID of the account's latest commit.
    pub async fn latest_commit(&self) -> Result<String> {
        const OP: &str = "com.atproto.sync.getLatestCommit";
        let v = self.pds.query(OP, &[("did", &self.did)], None).await?;
        Ok(v["cid"]
            .as_str()
            .ok_or_else(|| KnotError::bad(OP, "no cid"))?
            .to_owned())
    }
}

/// The `commit.cid` of a write's answer (optional in the lexicons).
fn commit_of(v: &Value) -> Option<String> {
    v["commit"]["cid"]
        .as_str()
        .filter(|c| c.len() <= 200)
        .map(str::to_owned)
}

/// What an `InvalidSwap` message says the record was, as the reference PDS
/// (and atpds) words it: "Record was at <cid>" is `Some(Some(cid))`,
/// "Record was at null" (no record) is `Some(None)`; any other wording is
/// `None` (the caller reads the record instead).
pub fn swap_from_message(message: &str) -> Option<Option<String>> {
    let rest = message.split("Record was at ").nth(1)?;
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    if word == "null" {
        return Some(None);
    }
    (word.len() > 8).then_some(Some(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cid_in_invalid_swap_message() {
        assert_eq!(
            swap_from_message("Record was at bafyreiabcdefghij"),
            Some(Some("bafyreiabcdefghij".into()))
        );
        assert_eq!(swap_from_message("Record was at null"), Some(None));
        assert_eq!(swap_from_message("Record was at nu"), None);
        assert_eq!(swap_from_message("invalid swap on x"), None);
        assert_eq!(swap_from_message("Commit was at bafyreiabcdefghij"), None);
    }
}
