//! The compaction's state on disk (`<dir>/compact.json`): the plan being
//! carried out (the refs and targets it folds, the new pack's file, sha-256
//! and the parts already uploaded, whether the pack record is written) and
//! the old packs retired from every ref with the time they were retired.
//! Written whole to a temporary file and renamed after every step, so a
//! run stopped anywhere (budget, crash, SIGKILL) resumes from the last
//! finished step without uploading a part twice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{KnotError, Result};

/// A part already uploaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DonePart {
    /// The blob's CID.
    pub cid: String,
    /// Its length.
    pub size: u64,
}

/// The plan being carried out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanState {
    /// The refs folded, by name: their target when planned.
    pub refs: BTreeMap<String, String>,
    /// The packs the refs named (folded into the new one).
    pub folded: Vec<String>,
    /// The new pack's file name under the state directory.
    pub file: String,
    /// Its sha-256 (hex).
    pub sha256: String,
    /// Its size.
    pub size: u64,
    /// Its object count.
    pub objects: u64,
    /// One slot per 4 MiB part: `Some` once uploaded.
    pub parts: Vec<Option<DonePart>>,
    /// Whether the pack record is written.
    pub pack_written: bool,
}

/// A pack no ref named after a compaction: deleted once the grace period
/// has passed and no ref names it then either.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retired {
    /// The pack's sha-256.
    pub pack: String,
    /// When it was retired (unix seconds).
    pub at: u64,
}

/// Everything kept between runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CompactState {
    /// The remote URL this state belongs to.
    pub url: String,
    /// The plan in progress.
    pub plan: Option<PlanState>,
    /// Old packs waiting for deletion.
    pub retired: Vec<Retired>,
}

/// Largest state file read back (a plan of 16,384 parts with their CIDs
/// and 20,000 folded packs fits).
const STATE_LIMIT: u64 = 16 << 20;

impl CompactState {
    /// The file under `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join("compact.json")
    }

    /// Reads the state of `url` under `dir` (a fresh one when absent);
    /// a state of another URL is an error, not silently replaced.
    pub fn load(dir: &Path, url: &str) -> Result<CompactState> {
        let p = Self::path(dir);
        let Ok(meta) = std::fs::metadata(&p) else {
            return Ok(CompactState {
                url: url.to_owned(),
                ..CompactState::default()
            });
        };
        if meta.len() > STATE_LIMIT {
            return Err(KnotError::Protocol(format!(
                "{}: larger than {STATE_LIMIT} bytes",
                p.display()
            )));
        }
        let text = std::fs::read(&p).map_err(|e| KnotError::io("compaction state", e))?;
        let st: CompactState = serde_json::from_slice(&text)
            .map_err(|e| KnotError::Protocol(format!("{}: {e}", p.display())))?;
        if st.url != url {
            return Err(KnotError::Protocol(format!(
                "{} holds the compaction of {}, not {url}: use another --dir",
                p.display(),
                st.url
            )));
        }
        Ok(st)
    }

    /// Writes the state (temporary file, then rename).
    pub fn save(&self, dir: &Path) -> Result<()> {
        let p = Self::path(dir);
        let tmp = p.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| KnotError::Protocol(format!("compaction state: {e}")))?;
        std::fs::write(&tmp, text).map_err(|e| KnotError::io("compaction state", e))?;
        std::fs::rename(&tmp, &p).map_err(|e| KnotError::io("compaction state", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_wrong_url() {
        let d = tempfile::tempdir().unwrap();
        let mut st = CompactState::load(d.path(), "at://a/r").unwrap();
        assert!(st.plan.is_none());
        st.retired.push(Retired {
            pack: "ab".into(),
            at: 7,
        });
        st.save(d.path()).unwrap();
        let back = CompactState::load(d.path(), "at://a/r").unwrap();
        assert_eq!(back.retired, st.retired);
        assert!(CompactState::load(d.path(), "at://b/r").is_err());
        std::fs::write(CompactState::path(d.path()), b"{not json").unwrap();
        assert!(CompactState::load(d.path(), "at://a/r").is_err());
    }
}
