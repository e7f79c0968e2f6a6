//! Space-refs and record URIs, E2 form (`packages/syntax/src/aturi.ts`):
//! a space is `at://{authorityDid}/space/{spaceType}/{skey}` and a record
//! in it `{space}/{authorDid}/{collection}/{rkey}`. (E4 may have moved to an
//! `at:space/…` form; unconfirmed, so only the E2 form is parsed.)

use repo::syntax::{validate_did, validate_nsid, validate_record_key};

use crate::error::{Result, SpaceError};

/// A parsed space-ref.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SpaceRef {
    /// The authority (owner) DID.
    pub authority: String,
    /// The space type NSID.
    pub space_type: String,
    /// The space key (a record key).
    pub skey: String,
}

impl SpaceRef {
    /// A space-ref from its parts, each checked.
    pub fn new(authority: &str, space_type: &str, skey: &str) -> Result<SpaceRef> {
        validate_did(authority)
            .map_err(|e| SpaceError::invalid("space authority", e.to_string()))?;
        validate_nsid(space_type).map_err(|e| SpaceError::invalid("space type", e.to_string()))?;
        validate_record_key(skey).map_err(|e| SpaceError::invalid("space key", e.to_string()))?;
        Ok(SpaceRef {
            authority: authority.to_owned(),
            space_type: space_type.to_owned(),
            skey: skey.to_owned(),
        })
    }

    /// Parses `at://{did}/space/{type}/{skey}`.
    pub fn parse(s: &str) -> Result<SpaceRef> {
        let bad = |r: &str| SpaceError::invalid("space", format!("{r}: {s:?}"));
        let rest = s
            .strip_prefix("at://")
            .ok_or_else(|| bad("not an at:// URI"))?;
        let mut parts = rest.split('/');
        let (Some(did), Some("space"), Some(ty), Some(skey), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(bad("not of the form at://{did}/space/{type}/{skey}"));
        };
        SpaceRef::new(did, ty, skey)
    }

    /// The normalized string form (the one the E2 commit context signs).
    pub fn to_uri(&self) -> String {
        format!(
            "at://{}/space/{}/{}",
            self.authority, self.space_type, self.skey
        )
    }

    /// A record's URI in this space.
    pub fn record_uri(&self, repo: &str, collection: &str, rkey: &str) -> String {
        format!("{}/{repo}/{collection}/{rkey}", self.to_uri())
    }
}

impl std::fmt::Display for SpaceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_uri())
    }
}

/// Checks a writer repo DID.
pub fn check_did(what: &'static str, did: &str) -> Result<()> {
    validate_did(did).map_err(|e| SpaceError::invalid(what, e.to_string()))
}

/// Checks a collection NSID and a record key (E2's rkey cap is 512, the
/// record-key syntax's own).
pub fn check_path(collection: &str, rkey: &str) -> Result<()> {
    validate_nsid(collection).map_err(|e| SpaceError::invalid("collection", e.to_string()))?;
    validate_record_key(rkey).map_err(|e| SpaceError::invalid("rkey", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let s = SpaceRef::parse("at://did:plc:abc/space/app.bsky.group/self").unwrap();
        assert_eq!(s.to_uri(), "at://did:plc:abc/space/app.bsky.group/self");
        assert_eq!(
            s.record_uri("did:plc:w", "app.x.post", "3k"),
            "at://did:plc:abc/space/app.bsky.group/self/did:plc:w/app.x.post/3k"
        );
        for bad in [
            "",
            "at://did:plc:abc/space/app.bsky.group",
            "at://did:plc:abc/spaces/app.bsky.group/self",
            "at://did:plc:abc/space/app.bsky.group/self/x",
            "at://nope/space/app.bsky.group/self",
            "at:space/did:plc:abc/app.bsky.group/self",
        ] {
            assert!(SpaceRef::parse(bad).is_err(), "{bad}");
        }
    }
}
