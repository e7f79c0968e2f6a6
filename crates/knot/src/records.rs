//! The three record types of the lexicons in `lexicons/` (their byte-level
//! rules are in the crate docs): what a record holds, how it is written as
//! atproto JSON, and how one read back is checked before it is trusted.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{KnotError, Result};
use crate::names::{check_oid, raw_cid_digest};

/// NSID of the repository record.
pub const REPO_NSID: &str = "dev.atbench.knot.repo";
/// NSID of a ref record.
pub const REF_NSID: &str = "dev.atbench.knot.ref";
/// NSID of a pack record.
pub const PACK_NSID: &str = "dev.atbench.knot.pack";
/// The blob MIME type of a pack part.
pub const PART_MIME: &str = "application/x-git-packed-objects";
/// Largest part this client writes (4 MiB: under every PDS's 5 MiB default).
pub const PART_SIZE: usize = 4 << 20;
/// Largest part it accepts from a record (the reference PDS's blob limit).
pub const MAX_PART: u64 = 5 << 20;
/// Most pack entries a ref record may list.
pub const MAX_REF_PACKS: usize = 20_000;
/// Most parts of one pack (a 64 GiB pack at 4 MiB).
pub const MAX_PARTS: usize = 16_384;

fn bad(what: &str, why: impl Into<String>) -> KnotError {
    KnotError::Record {
        what: what.to_owned(),
        why: why.into(),
    }
}

fn check_sha256_hex(what: &str, s: &str) -> Result<()> {
    if s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(bad(
            what,
            format!("{s:?} is not a sha-256 in lower-case hex"),
        ))
    }
}

/// `dev.atbench.knot.repo`: one per repository, key `<repo>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoRecord {
    /// The repository's name (its record key).
    pub name: String,
    /// The ref HEAD points to (`refs/heads/main`).
    pub head: String,
    /// `sha1` (the only format this helper writes).
    pub object_format: String,
}

impl RepoRecord {
    /// The record's JSON value.
    pub fn to_value(&self, created_at: &str) -> Value {
        json!({"$type": REPO_NSID, "name": self.name, "head": self.head,
               "objectFormat": self.object_format, "createdAt": created_at})
    }

    /// Checks a record read back.
    pub fn from_value(v: Value) -> Result<RepoRecord> {
        let r: RepoRecord = serde_json::from_value(v).map_err(|e| bad("repo", e.to_string()))?;
        if !r.head.starts_with("refs/") || r.head.len() > 4096 {
            return Err(bad("repo", format!("head {:?} is not a ref", r.head)));
        }
        if r.object_format != "sha1" {
            return Err(bad(
                "repo",
                format!(
                    "object format {:?} (this helper speaks sha1)",
                    r.object_format
                ),
            ));
        }
        Ok(r)
    }
}

/// One pack a ref's history needs, with the commit (or tag) it was pushed
/// for: a clone that holds `tip` holds every object of the pack `tip` needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackEntry {
    /// The pack's sha-256 (hex): its record key is `<repo>:<pack>`.
    pub pack: String,
    /// The object the pack was pushed to reach.
    pub tip: String,
}

/// `dev.atbench.knot.ref`: one per ref, key from `names::ref_rkey`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefRecord {
    /// The repository.
    pub repo: String,
    /// The full ref name (`refs/heads/main`).
    #[serde(rename = "ref")]
    pub name: String,
    /// The object id the ref points to.
    pub target: String,
    /// The target this record replaced (absent on the first write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// Packs that together hold every object reachable from `target`,
    /// newest first.
    pub packs: Vec<PackEntry>,
}

impl RefRecord {
    /// The record's JSON value.
    pub fn to_value(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("$type".into(), REF_NSID.into());
        }
        v
    }

    /// Checks a record read back.
    pub fn from_value(v: Value) -> Result<RefRecord> {
        let r: RefRecord = serde_json::from_value(v).map_err(|e| bad("ref", e.to_string()))?;
        if !r.name.starts_with("refs/") || r.name.len() > 4096 || r.name.contains(['\n', '\0', ' '])
        {
            return Err(bad("ref", format!("{:?} is not a ref name", r.name)));
        }
        check_oid("ref", &r.target)?;
        if let Some(p) = &r.previous {
            check_oid("ref", p)?;
        }
        if r.packs.len() > MAX_REF_PACKS {
            return Err(bad(
                "ref",
                format!("{} packs (at most {MAX_REF_PACKS})", r.packs.len()),
            ));
        }
        for e in &r.packs {
            check_sha256_hex("ref", &e.pack)?;
            check_oid("ref", &e.tip)?;
        }
        Ok(r)
    }
}

/// One part of a pack: a blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The blob's CID (raw codec, sha-256).
    pub cid: String,
    /// Its length.
    pub size: u64,
}

/// `dev.atbench.knot.pack`: one per pushed pack, key `<repo>:<sha256>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackRecord {
    /// The repository.
    pub repo: String,
    /// sha-256 of the whole pack (hex).
    pub sha256: String,
    /// Length of the whole pack.
    pub size: u64,
    /// Objects in the pack (its header's count).
    pub objects: u64,
    /// The parts, in order: their concatenation is the pack.
    pub parts: Vec<Part>,
    /// Objects the pack's history builds on and does not hold (the remote
    /// tips it was computed against).
    pub prerequisites: Vec<String>,
    /// The objects it was pushed to reach.
    pub tips: Vec<String>,
}

#[derive(Deserialize)]
struct BlobLink {
    #[serde(rename = "$link")]
    link: String,
}

#[derive(Deserialize)]
struct BlobJson {
    #[serde(rename = "ref")]
    r: BlobLink,
    size: u64,
}

#[derive(Deserialize)]
struct PackJson {
    repo: String,
    sha256: String,
    size: u64,
    objects: u64,
    parts: Vec<BlobJson>,
    prerequisites: Vec<String>,
    tips: Vec<String>,
}

impl PackRecord {
    /// The record's JSON value.
    pub fn to_value(&self, created_at: &str) -> Value {
        let parts: Vec<Value> = self
            .parts
            .iter()
            .map(|p| {
                json!({"$type": "blob", "ref": {"$link": p.cid}, "mimeType": PART_MIME, "size": p.size})
            })
            .collect();
        json!({"$type": PACK_NSID, "repo": self.repo, "sha256": self.sha256, "size": self.size,
               "objects": self.objects, "parts": parts, "prerequisites": self.prerequisites,
               "tips": self.tips, "createdAt": created_at})
    }

    /// Checks a record read back: hex fields, raw-blob CIDs, part sizes
    /// that are each at most 5 MiB and add up to `size`.
    pub fn from_value(v: Value) -> Result<PackRecord> {
        let p: PackJson = serde_json::from_value(v).map_err(|e| bad("pack", e.to_string()))?;
        check_sha256_hex("pack", &p.sha256)?;
        if p.parts.len() > MAX_PARTS {
            return Err(bad(
                "pack",
                format!("{} parts (at most {MAX_PARTS})", p.parts.len()),
            ));
        }
        let mut total: u64 = 0;
        let mut parts = Vec::with_capacity(p.parts.len());
        for b in p.parts {
            if raw_cid_digest(&b.r.link).is_none() {
                return Err(bad(
                    "pack",
                    format!("part {:?} is not a raw sha-256 CID", b.r.link),
                ));
            }
            if b.size == 0 || b.size > MAX_PART {
                return Err(bad(
                    "pack",
                    format!("part of {} bytes (1 to {MAX_PART})", b.size),
                ));
            }
            total = total.saturating_add(b.size);
            parts.push(Part {
                cid: b.r.link,
                size: b.size,
            });
        }
        if total != p.size {
            return Err(bad(
                "pack",
                format!("parts add up to {total} bytes, record says {}", p.size),
            ));
        }
        for o in p.prerequisites.iter().chain(&p.tips) {
            check_oid("pack", o)?;
        }
        Ok(PackRecord {
            repo: p.repo,
            sha256: p.sha256,
            size: p.size,
            objects: p.objects,
            parts,
            prerequisites: p.prerequisites,
            tips: p.tips,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::raw_cid;
    use proptest::prelude::*;

    fn oid(c: char) -> String {
        std::iter::repeat_n(c, 40).collect()
    }

    #[test]
    fn records_round_trip() {
        let r = RefRecord {
            repo: "r".into(),
            name: "refs/heads/main".into(),
            target: oid('a'),
            previous: None,
            packs: vec![PackEntry {
                pack: "0".repeat(64),
                tip: oid('a'),
            }],
        };
        assert_eq!(RefRecord::from_value(r.to_value()).unwrap(), r);
        let p = PackRecord {
            repo: "r".into(),
            sha256: "1".repeat(64),
            size: 7,
            objects: 1,
            parts: vec![Part {
                cid: raw_cid(b"x"),
                size: 7,
            }],
            prerequisites: vec![],
            tips: vec![oid('b')],
        };
        let v = p.to_value("2026-01-01T00:00:00Z");
        assert_eq!(PackRecord::from_value(v.clone()).unwrap(), p);
        let mut wrong = v;
        wrong["size"] = 8.into();
        assert!(PackRecord::from_value(wrong).is_err());
        let repo = RepoRecord {
            name: "r".into(),
            head: "refs/heads/main".into(),
            object_format: "sha1".into(),
        };
        assert_eq!(RepoRecord::from_value(repo.to_value("t")).unwrap(), repo);
    }

    proptest! {
        #[test]
        fn hostile_values_are_refused_without_panics(s in ".{0,300}") {
            if let Ok(v) = serde_json::from_str::<Value>(&s) {
                let _ = RefRecord::from_value(v.clone());
                let _ = PackRecord::from_value(v.clone());
                let _ = RepoRecord::from_value(v);
            }
        }
    }
}

#[cfg(test)]
mod lexicon_tests {
    use super::*;

    /// The lexicon files name the NSIDs and the required fields this
    /// module writes.
    #[test]
    fn lexicons_match_the_records() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/lexicons");
        for (nsid, sample) in [
            (
                REPO_NSID,
                RepoRecord {
                    name: "r".into(),
                    head: "refs/heads/main".into(),
                    object_format: "sha1".into(),
                }
                .to_value("t"),
            ),
            (
                REF_NSID,
                RefRecord {
                    repo: "r".into(),
                    name: "refs/heads/x".into(),
                    target: "a".repeat(40),
                    previous: None,
                    packs: vec![],
                }
                .to_value(),
            ),
            (
                PACK_NSID,
                PackRecord {
                    repo: "r".into(),
                    sha256: "0".repeat(64),
                    size: 1,
                    objects: 1,
                    parts: vec![],
                    prerequisites: vec![],
                    tips: vec![],
                }
                .to_value("t"),
            ),
        ] {
            let text = std::fs::read_to_string(format!("{dir}/{nsid}.json")).unwrap();
            let lex: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(lex["id"], nsid);
            assert_eq!(sample["$type"], nsid);
            for req in lex["defs"]["main"]["record"]["required"]
                .as_array()
                .unwrap()
            {
                let k = req.as_str().unwrap();
                assert!(
                    sample.get(k).is_some(),
                    "{nsid}: {k} is required but not written"
                );
            }
            for k in sample.as_object().unwrap().keys().filter(|k| *k != "$type") {
                assert!(
                    lex["defs"]["main"]["record"]["properties"].get(k).is_some(),
                    "{nsid}: {k} is written but not in the lexicon"
                );
            }
        }
    }
}
