//! AT-URIs in their strict form: `at://AUTHORITY[/COLLECTION[/RKEY]]`.

use super::SyntaxError;
use super::ident::{validate_at_identifier, validate_nsid, validate_record_key};

const W: &str = "AT-URI";

/// A parsed AT-URI, borrowing from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtUri<'a> {
    /// DID or handle.
    pub authority: &'a str,
    /// Collection NSID, if present.
    pub collection: Option<&'a str>,
    /// Record key, if present.
    pub rkey: Option<&'a str>,
}

impl<'a> AtUri<'a> {
    /// Parses and validates.
    pub fn parse(s: &'a str) -> Result<Self, SyntaxError> {
        if s.len() > 8 * 1024 {
            return Err(SyntaxError::new(W, "longer than 8 KiB"));
        }
        let rest = s
            .strip_prefix("at://")
            .ok_or(SyntaxError::new(W, "must start with \"at://\""))?;
        let base = 5;
        let (authority, path) = match rest.find('/') {
            Some(p) => (&rest[..p], Some(&rest[p + 1..])),
            None => (rest, None),
        };
        validate_at_identifier(authority).map_err(|e| e.offset(base))?;
        let Some(path) = path else {
            return Ok(AtUri {
                authority,
                collection: None,
                rkey: None,
            });
        };
        let path_start = base + authority.len() + 1;
        let (collection, rkey) = match path.find('/') {
            Some(p) => (&path[..p], Some(&path[p + 1..])),
            None => (path, None),
        };
        validate_nsid(collection).map_err(|e| e.offset(path_start))?;
        if let Some(rkey) = rkey {
            validate_record_key(rkey).map_err(|e| e.offset(path_start + collection.len() + 1))?;
        }
        Ok(AtUri {
            authority,
            collection: Some(collection),
            rkey,
        })
    }
}

/// Checks AT-URI syntax (strict form, no query or fragment).
pub fn validate_at_uri(s: &str) -> Result<(), SyntaxError> {
    AtUri::parse(s).map(|_| ())
}
