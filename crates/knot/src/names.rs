//! Names: repository names, the ref-name-to-record-key encoding, pack
//! record keys, and raw-blob CIDs (the lexicon doc in `lib.rs` states the
//! same rules).
//!
//! Record keys allow `A-Za-z0-9._:~-`, 1 to 512 characters. A ref record's
//! key is `<repo>:<encoded ref name>`:
//! - bytes `A-Za-z0-9._-` stay as they are;
//! - `/` becomes `:`;
//! - every other byte becomes `~XX` (two upper-case hex digits).
//!
//! git forbids `:` and `~` in ref names (`git check-ref-format`), so the
//! encoding is one-to-one. A name whose key would pass 512 characters is
//! keyed `<repo>:~~<sha-256 of the name, hex>` instead (`~~` cannot start
//! an escape). The record always holds the full name, so a key is never
//! decoded: it only has to be unique and computable.

use sha2::{Digest, Sha256};

use crate::error::{KnotError, Result};

/// Longest repository name.
pub const MAX_REPO_NAME: usize = 100;
/// Longest record key.
pub const MAX_RKEY: usize = 512;

/// Checks a repository name: 1-100 characters of `A-Za-z0-9._-`, not
/// starting with `.` (so never `.` or `..`).
pub fn check_repo_name(name: &str) -> std::result::Result<(), String> {
    if name.is_empty() || name.len() > MAX_REPO_NAME {
        return Err(format!(
            "repository names are 1 to {MAX_REPO_NAME} characters"
        ));
    }
    if name.starts_with('.') {
        return Err("repository names do not start with '.'".into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "{c:?} is not allowed in a repository name (A-Za-z0-9._-)"
        ));
    }
    Ok(())
}

fn keeps(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
}

/// The record key of ref `name` in repository `repo`.
pub fn ref_rkey(repo: &str, name: &str) -> String {
    let mut s = String::with_capacity(repo.len() + 1 + name.len());
    s.push_str(repo);
    s.push(':');
    for &b in name.as_bytes() {
        if keeps(b) {
            s.push(b as char);
        } else if b == b'/' {
            s.push(':');
        } else {
            s.push('~');
            s.push_str(&format!("{b:02X}"));
        }
    }
    if s.len() > MAX_RKEY {
        let digest = Sha256::digest(name.as_bytes());
        return format!("{repo}:~~{}", data_encoding::HEXLOWER.encode(&digest));
    }
    s
}

/// The prefix every ref key of `repo` starts with (the `listRecords`
/// cursor that starts a scan of them).
pub fn ref_prefix(repo: &str) -> String {
    format!("{repo}:")
}

/// The record key of the pack with sha-256 `sha256_hex` in `repo`.
pub fn pack_rkey(repo: &str, sha256_hex: &str) -> String {
    format!("{repo}:{sha256_hex}")
}

/// The CIDv1 (raw codec, sha-256) of a blob, base32 multibase: what
/// `uploadBlob` answers for these bytes.
pub fn raw_cid(bytes: &[u8]) -> String {
    raw_cid_of_digest(&Sha256::digest(bytes).into())
}

/// [`raw_cid`] from the sha-256 already computed.
pub fn raw_cid_of_digest(digest: &[u8; 32]) -> String {
    let mut b = Vec::with_capacity(36);
    b.extend_from_slice(&[0x01, 0x55, 0x12, 0x20]);
    b.extend_from_slice(digest);
    let mut s = String::with_capacity(60);
    s.push('b');
    s.push_str(&data_encoding::BASE32_NOPAD.encode(&b).to_ascii_lowercase());
    s
}

/// The sha-256 a raw CID names (`None` for any other CID).
pub fn raw_cid_digest(cid: &str) -> Option<[u8; 32]> {
    let body = cid.strip_prefix('b')?;
    if body.len() > 64 {
        return None;
    }
    let bytes = data_encoding::BASE32_NOPAD
        .decode(body.to_ascii_uppercase().as_bytes())
        .ok()?;
    let rest = bytes.strip_prefix(&[0x01, 0x55, 0x12, 0x20])?;
    rest.try_into().ok()
}

/// Checks a git object id (40 lower-case hex digits: sha1 repositories).
pub fn check_oid(what: &str, oid: &str) -> Result<()> {
    if oid.len() == 40 && oid.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(KnotError::Record {
            what: what.to_owned(),
            why: format!("{oid:?} is not a 40-digit object id"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rkey_ok(k: &str) -> bool {
        !k.is_empty()
            && k.len() <= MAX_RKEY
            && k != "."
            && k != ".."
            && k.bytes().all(|b| keeps(b) || b == b':' || b == b'~')
    }

    #[test]
    fn ref_keys() {
        assert_eq!(ref_rkey("r", "refs/heads/main"), "r:refs:heads:main");
        assert_eq!(ref_rkey("r", "refs/tags/v1.0+x"), "r:refs:tags:v1.0~2Bx");
        assert_eq!(ref_rkey("r", "refs/heads/ü"), "r:refs:heads:~C3~BC");
        let long = format!("refs/heads/{}", "é".repeat(200));
        let k = ref_rkey("r", &long);
        assert!(k.starts_with("r:~~") && k.len() == 4 + 64, "{k}");
    }

    #[test]
    fn cid_round_trip() {
        let cid = raw_cid(b"hello");
        assert!(cid.starts_with("bafkrei"), "{cid}");
        assert_eq!(raw_cid_digest(&cid), Some(Sha256::digest(b"hello").into()));
        assert_eq!(raw_cid_digest("bafyfoo"), None);
        assert_eq!(raw_cid_digest(""), None);
    }

    #[test]
    fn repo_names() {
        assert!(check_repo_name("atbench").is_ok());
        assert!(check_repo_name("a.b-c_d").is_ok());
        for bad in ["", ".", "..", ".x", "a/b", "a:b", "a b"] {
            assert!(check_repo_name(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn keys_are_valid_and_distinct(a in "[ -~\\u{80}-\\u{10ffff}]{1,300}", b in "[ -~]{1,300}") {
            // Names git would refuse (':' and '~') are still encoded to valid keys.
            let (ka, kb) = (ref_rkey("repo", &a), ref_rkey("repo", &b));
            prop_assert!(rkey_ok(&ka), "{}", ka);
            prop_assert!(rkey_ok(&kb), "{}", kb);
            let legal = |s: &str| !s.contains(':') && !s.contains('~');
            if a != b && legal(&a) && legal(&b) {
                prop_assert_ne!(ka, kb);
            }
        }

        #[test]
        fn cid_digest_never_panics(s in ".{0,80}") {
            let _ = raw_cid_digest(&s);
        }
    }
}
