//! The push batch's vocabulary: the `push` lines git sends, the options it
//! set before them, and the outcome reported back per ref. A leaf: the
//! batched path (`mod.rs`), the atomic one (`atomic.rs`), the gateway's
//! client and the helper all take these types from here.

use std::collections::BTreeMap;

use crate::error::{KnotError, RateLimit, Result};

/// Ref writes in flight at once: memory and connections stay bounded
/// whatever the number of refs a push moves.
pub const REF_WRITES_IN_FLIGHT: usize = 8;

/// One `push [+]<src>:<dst>` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushCmd {
    /// `+`.
    pub force: bool,
    /// The local source; `None` deletes `dst`.
    pub src: Option<String>,
    /// The remote ref.
    pub dst: String,
}

impl PushCmd {
    /// Parses the argument of a `push` line.
    pub fn parse(arg: &str) -> Result<PushCmd> {
        let (force, rest) = match arg.strip_prefix('+') {
            Some(r) => (true, r),
            None => (false, arg),
        };
        let (src, dst) = rest
            .rsplit_once(':')
            .ok_or_else(|| KnotError::Protocol(format!("push {arg:?}: no ':'")))?;
        if !dst.starts_with("refs/") {
            return Err(KnotError::Protocol(format!(
                "push {arg:?}: destination is not a full ref name"
            )));
        }
        Ok(PushCmd {
            force,
            src: (!src.is_empty()).then(|| src.to_owned()),
            dst: dst.to_owned(),
        })
    }
}

/// Options git set before the batch.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--atomic`.
    pub atomic: bool,
    /// `--force-with-lease`: the expected remote value per ref (`None`: must not exist).
    pub cas: BTreeMap<String, Option<String>>,
    /// Progress on stderr.
    pub progress: bool,
    /// Uploads in flight.
    pub concurrency: usize,
}

/// What happened to each ref, in the order of the batch.
#[derive(Debug, Default)]
pub struct PushOutcome {
    /// `(dst, Ok)` or `(dst, Err(reason in git's words))`.
    pub statuses: Vec<(String, std::result::Result<(), String>)>,
    /// Set when a rate limit stopped the push.
    pub rate_limited: Option<RateLimit>,
    /// The write points the push was announced to cost.
    pub points: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_lines() {
        assert_eq!(
            PushCmd::parse("+refs/heads/a:refs/heads/b").unwrap(),
            PushCmd {
                force: true,
                src: Some("refs/heads/a".into()),
                dst: "refs/heads/b".into()
            }
        );
        assert_eq!(PushCmd::parse(":refs/heads/b").unwrap().src, None);
        assert!(PushCmd::parse("refs/heads/a").is_err());
        assert!(PushCmd::parse("a:b").is_err());
    }
}
