//! Remote URLs:
//! - `at://<handle-or-did>/<repo>`: the account is resolved to its PDS
//!   (`identity.rs`);
//! - `at+http://<host>[:port]/<handle-or-did>/<repo>` and `at+https://…`:
//!   the PDS named directly (tests, local servers).
//!
//! git hands the helper the URL without the `at::` transport prefix when the
//! user wrote `at::…`; both forms are accepted.

use crate::error::{KnotError, Result};
use crate::names::check_repo_name;

/// A parsed remote URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteUrl {
    /// `http://host:port` when the PDS is named, else `None` (resolve).
    pub pds: Option<String>,
    /// The account: a handle or a DID.
    pub account: String,
    /// The repository's name inside the account.
    pub repo: String,
}

impl RemoteUrl {
    /// Parses `url`.
    pub fn parse(url: &str) -> Result<RemoteUrl> {
        let err = |why: &str| KnotError::Url {
            url: url.to_owned(),
            why: why.to_owned(),
        };
        let u = url.strip_prefix("at::").unwrap_or(url);
        let (pds, rest) = if let Some(r) = u.strip_prefix("at://") {
            (None, r)
        } else if let Some(r) = u.strip_prefix("at+http://") {
            let (host, rest) = r
                .split_once('/')
                .ok_or_else(|| err("no account after the host"))?;
            (Some(format!("http://{host}")), rest)
        } else if let Some(r) = u.strip_prefix("at+https://") {
            let (host, rest) = r
                .split_once('/')
                .ok_or_else(|| err("no account after the host"))?;
            (Some(format!("https://{host}")), rest)
        } else {
            return Err(err(
                "expected at://<handle-or-did>/<repo> or at+http://<host>/<handle-or-did>/<repo>",
            ));
        };
        if let Some(p) = &pds {
            let host = &p[p.find("//").map_or(0, |i| i + 2)..];
            if host.is_empty() || host.contains(['@', '?', '#', ' ']) {
                return Err(err("bad host"));
            }
        }
        let rest = rest.trim_end_matches('/');
        let rest = rest.strip_suffix(".git").unwrap_or(rest);
        let (account, repo) = rest
            .split_once('/')
            .ok_or_else(|| err("expected <handle-or-did>/<repo>"))?;
        check_account(account).map_err(|w| err(&w))?;
        check_repo_name(repo).map_err(|w| err(&w))?;
        Ok(RemoteUrl {
            pds,
            account: account.to_owned(),
            repo: repo.to_owned(),
        })
    }
}

/// A DID (`did:<method>:<id>`) or a handle (dotted domain name).
pub fn check_account(a: &str) -> std::result::Result<(), String> {
    if a.len() > 2048 {
        return Err("account too long".into());
    }
    if let Some(rest) = a.strip_prefix("did:") {
        let ok = rest.split_once(':').is_some_and(|(m, id)| {
            !m.is_empty()
                && m.bytes().all(|b| b.is_ascii_lowercase())
                && !id.is_empty()
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-_:%".contains(&b))
        });
        return if ok {
            Ok(())
        } else {
            Err(format!("{a:?} is not a DID"))
        };
    }
    let labels: Vec<&str> = a.split('.').collect();
    let ok = labels.len() >= 2
        && a.len() <= 253
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if ok {
        Ok(())
    } else {
        Err(format!("{a:?} is neither a DID nor a handle"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn forms() {
        let u = RemoteUrl::parse("at://alice.example.com/atbench").unwrap();
        assert_eq!(
            (u.pds, u.account.as_str(), u.repo.as_str()),
            (None, "alice.example.com", "atbench")
        );
        let u = RemoteUrl::parse("at+http://127.0.0.1:2583/did:plc:abc/r.git").unwrap();
        assert_eq!(u.pds.as_deref(), Some("http://127.0.0.1:2583"));
        assert_eq!((u.account.as_str(), u.repo.as_str()), ("did:plc:abc", "r"));
        assert!(RemoteUrl::parse("at::at://did:web:x.y/r").is_ok());
        for bad in [
            "https://x/y",
            "at://alice/r",
            "at://did:plc:x",
            "at://did:plc:x/a/b",
            "at+http:///did:plc:x/r",
            "at://did:plc:x/..",
            "",
        ] {
            assert!(RemoteUrl::parse(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in ".{0,200}") {
            let _ = RemoteUrl::parse(&s);
        }
    }
}
