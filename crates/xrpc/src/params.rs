//! Query strings: `application/x-www-form-urlencoded` decoding and the
//! typed getters handlers use, each checking its lexicon format (DID,
//! handle, NSID, record key, CID, TID, integer range, boolean) and failing
//! with 400 `InvalidRequest` that names the parameter.

use std::borrow::Cow;

use repo::Cid;
use repo::syntax::{
    validate_did, validate_handle, validate_nsid, validate_record_key, validate_tid,
};

use crate::error::{XResult, XrpcError};

/// A decoded query string (in order; repeated names kept).
pub struct Params<'q> {
    pairs: Vec<(Cow<'q, str>, Cow<'q, str>)>,
}

/// Decodes `%XX` and `+`; `None` for a bad escape or bytes that are not UTF-8.
fn decode(s: &str) -> Option<Cow<'_, str>> {
    if !s.bytes().any(|b| b == b'%' || b == b'+') {
        return Some(Cow::Borrowed(s));
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                let hi = b.get(i + 1).copied().and_then(hex)?;
                let lo = b.get(i + 2).copied().and_then(hex)?;
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok().map(Cow::Owned)
}

/// What a query parameter may be.
pub enum Id<'a> {
    /// A DID.
    Did(&'a str),
    /// A handle (lower-cased when looked up).
    Handle(&'a str),
}

impl<'q> Params<'q> {
    /// Parses a query string (without the `?`).
    pub fn parse(query: Option<&'q str>) -> XResult<Self> {
        let mut pairs = Vec::new();
        if let Some(q) = query {
            for part in q.split('&').filter(|p| !p.is_empty()) {
                let (k, v) = part.split_once('=').unwrap_or((part, ""));
                match (decode(k), decode(v)) {
                    (Some(k), Some(v)) => pairs.push((k, v)),
                    _ => {
                        return Err(XrpcError::invalid(
                            "query string: bad percent-encoding or not UTF-8",
                        ));
                    }
                }
            }
        }
        Ok(Params { pairs })
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_ref())
    }

    /// Every value of `name`, in order (an array parameter).
    pub fn all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.pairs
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_ref())
    }

    /// A required parameter.
    pub fn required(&self, name: &str) -> XResult<&str> {
        match self.get(name) {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(XrpcError::invalid(format!(
                "Error: Params must have the property \"{name}\""
            ))),
        }
    }

    /// A required DID.
    pub fn did(&self, name: &str) -> XResult<&str> {
        let v = self.required(name)?;
        validate_did(v).map_err(|e| XrpcError::invalid(format!("{name}: {e}")))?;
        Ok(v)
    }

    /// A required at-identifier (DID or handle).
    pub fn at_identifier(&self, name: &str) -> XResult<Id<'_>> {
        let v = self.required(name)?;
        at_identifier(name, v)
    }

    /// A required handle.
    pub fn handle(&self, name: &str) -> XResult<&str> {
        let v = self.required(name)?;
        validate_handle(v).map_err(|e| XrpcError::invalid(format!("{name}: {e}")))?;
        Ok(v)
    }

    /// A required NSID.
    pub fn nsid(&self, name: &str) -> XResult<&str> {
        let v = self.required(name)?;
        validate_nsid(v).map_err(|e| XrpcError::invalid(format!("{name}: {e}")))?;
        Ok(v)
    }

    /// A required record key.
    pub fn rkey(&self, name: &str) -> XResult<&str> {
        let v = self.required(name)?;
        validate_record_key(v).map_err(|e| XrpcError::invalid(format!("{name}: {e}")))?;
        Ok(v)
    }

    /// An optional record key (a listRecords cursor).
    pub fn opt_rkey(&self, name: &str) -> XResult<Option<&str>> {
        match self.get(name) {
            None | Some("") => Ok(None),
            Some(v) => {
                validate_record_key(v).map_err(|e| XrpcError::invalid(format!("{name}: {e}")))?;
                Ok(Some(v))
            }
        }
    }

    /// An optional TID (`since`).
    pub fn opt_tid(&self, name: &str) -> XResult<Option<&str>> {
        match self.get(name) {
            None | Some("") => Ok(None),
            Some(v) => {
                validate_tid(v).map_err(|e| XrpcError::invalid(format!("{name}: {e}")))?;
                Ok(Some(v))
            }
        }
    }

    /// A required CID.
    pub fn cid(&self, name: &str) -> XResult<Cid> {
        let v = self.required(name)?;
        parse_cid(name, v)
    }

    /// An optional CID.
    pub fn opt_cid(&self, name: &str) -> XResult<Option<Cid>> {
        match self.get(name) {
            None | Some("") => Ok(None),
            Some(v) => parse_cid(name, v).map(Some),
        }
    }

    /// An optional integer in `min..=max` (`default` when absent).
    pub fn int(&self, name: &str, min: i64, max: i64, default: i64) -> XResult<i64> {
        match self.get(name) {
            None | Some("") => Ok(default),
            Some(v) => match v.parse::<i64>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(XrpcError::invalid(format!(
                    "{name} must be an integer in {min}..={max}"
                ))),
            },
        }
    }

    /// An optional boolean (`true` / `false`).
    pub fn bool(&self, name: &str) -> XResult<bool> {
        match self.get(name) {
            None | Some("") | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(_) => Err(XrpcError::invalid(format!("{name} must be a boolean"))),
        }
    }
}

/// A DID or handle, checked.
pub fn at_identifier<'a>(name: &str, v: &'a str) -> XResult<Id<'a>> {
    if v.starts_with("did:") {
        validate_did(v).map_err(|e| XrpcError::invalid(format!("{name}: {e}")))?;
        Ok(Id::Did(v))
    } else {
        validate_handle(v).map_err(|e| XrpcError::invalid(format!("{name}: {e}")))?;
        Ok(Id::Handle(v))
    }
}

/// A CID string, checked.
pub fn parse_cid(name: &str, v: &str) -> XResult<Cid> {
    Cid::parse_str(v).map_err(|e| XrpcError::invalid(format!("{name}: invalid CID: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_escapes_and_rejects_bad_ones() {
        let p = Params::parse(Some("a=b%20c&d=e+f&g")).unwrap();
        assert_eq!(p.get("a"), Some("b c"));
        assert_eq!(p.get("d"), Some("e f"));
        assert_eq!(p.get("g"), Some(""));
        assert!(Params::parse(Some("a=%zz")).is_err());
        assert!(Params::parse(Some("a=%ff")).is_err());
        assert!(Params::parse(Some("a=%4")).is_err());
    }

    #[test]
    fn typed_getters_check_formats() {
        let p = Params::parse(Some(
            "did=did:plc:abc&bad=nope&n=7&col=app.bsky.feed.post&rk=..",
        ))
        .unwrap();
        assert!(p.did("did").is_ok());
        assert!(p.did("bad").is_err());
        assert!(p.did("missing").is_err());
        assert_eq!(p.int("n", 1, 10, 5).unwrap(), 7);
        assert!(p.int("n", 1, 5, 5).is_err());
        assert!(p.nsid("col").is_ok());
        assert!(p.rkey("rk").is_err());
        assert!(p.opt_cid("bad").is_err());
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(q in ".{0,64}") {
            if let Ok(p) = Params::parse(Some(&q)) {
                let _ = p.int("a", 0, 10, 1);
                let _ = p.opt_cid("a");
                let _ = p.at_identifier("a");
            }
        }
    }
}
