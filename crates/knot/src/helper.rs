//! The gitremote-helpers protocol on stdin/stdout: `capabilities`,
//! `option`, `list`, `list for-push`, `fetch` and `push` batches. stdout
//! is the wire; everything for the user goes to stderr, in git's words.
//!
//! `list for-push` answers from the warm state when there is one (the ref
//! writes that follow are compare-and-swaps on the cached CIDs, so a
//! stale answer costs a retry, never a lost update). Otherwise, and for
//! every `list`, the helper asks the account's latest commit
//! (`sync.getLatestCommit`, one request) and lists the refs only when it
//! is not the commit asked before the cached listing
//! (`Remote::refs_at`): a no-op fetch is one request whatever the ref
//! count, and any write in the account, another writer's included, makes
//! the next one list. The repository record (HEAD) is read, beside the
//! commit, when it is not cached.
//!
//! `HEAD` is handled as git's own transports handle it: `list` names it
//! (as `upload-pack` advertises it), `list for-push` does not (as
//! `receive-pack` does not), so `git push --mirror` never asks to delete
//! it. The remote HEAD is the repository record's `head`, set by the first
//! push. A push line whose destination is not a full ref name (`HEAD`, or
//! anything outside `refs/`) is refused for that ref alone, in git's
//! per-ref `error` shape, rather than failing the batch.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use crate::error::{KnotError, Result};
use crate::fetch;
use crate::push::{PushCmd, PushOptions, push};
use crate::remote::Remote;

/// Parts downloaded or uploaded at once.
pub const CONCURRENCY: usize = 4;

/// How a helper run ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    /// Everything asked was done (or refused per ref, as git reports).
    Done,
    /// A rate limit stopped a push: exit non-zero.
    RateLimited,
}

#[derive(Default)]
struct Opts {
    progress: bool,
    verbosity: u32,
    push: PushOptions,
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    v.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(v)
        .replace("\\\\", "\\")
}

fn set_option(o: &mut Opts, name: &str, value: &str) -> &'static str {
    let b = value == "true";
    match name {
        "progress" => o.progress = b,
        "verbosity" => o.verbosity = value.parse().unwrap_or(1),
        "dry-run" => o.push.dry_run = b,
        "atomic" => o.push.atomic = b,
        "cloning" | "check-connectivity" | "followtags" => {}
        "cas" => {
            let v = unquote(value);
            let Some((r, oid)) = v.rsplit_once(':') else {
                return "error cas without ':'";
            };
            let expected =
                (!oid.is_empty() && !oid.bytes().all(|c| c == b'0')).then(|| oid.to_owned());
            o.push.cas.insert(r.to_owned(), expected);
        }
        _ => return "unsupported",
    }
    "ok"
}

type Refused = (String, std::result::Result<(), String>);

/// A `push` line's command, or its per-ref refusal when the destination
/// is not a full ref name; `Err` only for a line git would never send.
fn push_line(rest: &str) -> Result<std::result::Result<PushCmd, Refused>> {
    match PushCmd::parse(rest) {
        Ok(c) => Ok(Ok(c)),
        Err(e) => match rest.rsplit_once(':') {
            Some((_, dst)) if !dst.is_empty() && !dst.contains(char::is_whitespace) => Ok(Err((
                dst.to_owned(),
                Err("not a full ref name (knot keeps refs/* only)".into()),
            ))),
            _ => Err(e),
        },
    }
}

/// Runs the protocol for `url` until git closes stdin.
pub fn run(url: &str, input: impl BufRead, output: &mut impl Write) -> Result<Exit> {
    crate::trace::start();
    crate::trace::mark("helper started", None);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| KnotError::io("runtime", e))?;
    let git_dir = std::env::var_os("GIT_DIR").map(PathBuf::from);
    let mut remote: Option<Remote> = None;
    let mut opts = Opts {
        verbosity: 1,
        ..Opts::default()
    };
    opts.push.concurrency = CONCURRENCY;
    let mut exit = Exit::Done;
    let mut lines = input.lines();
    let w = |output: &mut dyn Write, s: &str| -> Result<()> {
        output
            .write_all(s.as_bytes())
            .and_then(|()| output.flush())
            .map_err(|e| KnotError::io("stdout", e))
    };
    macro_rules! remote {
        () => {{
            if remote.is_none() {
                remote = Some(crate::trace::timed(
                    || "remote opened (state loaded)".into(),
                    || rt.block_on(Remote::open(url, git_dir.as_deref())),
                )?);
            }
            remote
                .as_mut()
                .ok_or_else(|| KnotError::Protocol("no remote".into()))?
        }};
    }
    while let Some(line) = lines.next() {
        let line = line.map_err(|e| KnotError::io("stdin", e))?;
        crate::trace::mark(&format!("git asks {line:?}"), None);
        if line.is_empty() {
            break;
        }
        if line == "capabilities" {
            w(output, "fetch\npush\noption\n\n")?;
        } else if let Some(rest) = line.strip_prefix("option ") {
            let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
            let answer = set_option(&mut opts, name, value);
            opts.push.progress = opts.progress && opts.verbosity > 0;
            w(output, &format!("{answer}\n"))?;
        } else if line == "list" || line == "list for-push" {
            let for_push = line == "list for-push";
            let r = remote!();
            let text = rt.block_on(async {
                let cached = r.state.fresh_refs().filter(|_| for_push).cloned();
                let known = r
                    .state
                    .repo
                    .clone()
                    .filter(|h| h.head.is_some() || for_push);
                // The account's commit, and the repository record when it
                // is not cached, in one round trip before any listing.
                let ro: &Remote = r;
                let (latest, head) = tokio::join!(
                    async {
                        match cached {
                            Some(_) => None,
                            None => ro.latest_commit_or_none().await,
                        }
                    },
                    async {
                        match known {
                            Some(h) => Ok(h),
                            None => ro.repo_record().await,
                        }
                    }
                );
                let head = head?;
                r.state.repo = Some(head.clone());
                let refs = match cached {
                    Some(c) => c,
                    None => r.refs_at(latest).await?,
                };
                r.save().await?;
                let mut s = String::new();
                for (name, c) in &refs {
                    s.push_str(&format!("{} {name}\n", c.record.target));
                }
                // receive-pack advertises no HEAD: a mirror push would
                // otherwise delete it.
                if let Some(h) = head.head.filter(|h| !for_push && refs.contains_key(h)) {
                    s.push_str(&format!("@{h} HEAD\n"));
                }
                s.push('\n');
                Ok::<_, KnotError>(s)
            })?;
            w(output, &text)?;
        } else if line.starts_with("fetch ") {
            let mut wants = Vec::new();
            let mut l = Some(line);
            while let Some(cur) = l.filter(|s| !s.is_empty()) {
                let rest = cur
                    .strip_prefix("fetch ")
                    .ok_or_else(|| KnotError::Protocol(format!("{cur:?} inside a fetch batch")))?;
                let (oid, name) = rest
                    .split_once(' ')
                    .ok_or_else(|| KnotError::Protocol(format!("{cur:?}")))?;
                wants.push((oid.to_owned(), name.to_owned()));
                l = lines
                    .next()
                    .transpose()
                    .map_err(|e| KnotError::io("stdin", e))?;
            }
            let progress = opts.progress && opts.verbosity > 0;
            let r = remote!();
            rt.block_on(async {
                fetch::fetch(r, &wants, CONCURRENCY, progress).await?;
                r.save().await
            })?;
            w(output, "\n")?;
        } else if line.starts_with("push ") {
            let mut cmds = Vec::new();
            let mut refused: Vec<Refused> = Vec::new();
            let mut l = Some(line);
            while let Some(cur) = l.filter(|s| !s.is_empty()) {
                let rest = cur
                    .strip_prefix("push ")
                    .ok_or_else(|| KnotError::Protocol(format!("{cur:?} inside a push batch")))?;
                match push_line(rest)? {
                    Ok(c) => cmds.push(c),
                    Err(r) => refused.push(r),
                }
                l = lines
                    .next()
                    .transpose()
                    .map_err(|e| KnotError::io("stdin", e))?;
            }
            let popts = opts.push.clone();
            let r = remote!();
            let mut outcome = rt.block_on(async {
                if cmds.is_empty() {
                    return Ok(crate::push::PushOutcome::default());
                }
                let o = match crate::gateway::client::configured() {
                    Some(gw) if crate::gateway::client::eligible(&cmds, &popts) => {
                        crate::gateway::client::push(r, &gw, cmds, &popts).await
                    }
                    _ => push(r, cmds, &popts).await,
                };
                // The state is kept even when the push failed half-way:
                // what landed is cached.
                let saved = r.save().await;
                let o = o?;
                saved.map(|()| o)
            })?;
            outcome.statuses.extend(refused);
            let mut s = String::new();
            for (dst, st) in &outcome.statuses {
                match st {
                    Ok(()) => s.push_str(&format!("ok {dst}\n")),
                    Err(why) => s.push_str(&format!("error {dst} {why}\n")),
                }
            }
            s.push('\n');
            if let Some(l) = &outcome.rate_limited {
                let pushed: Vec<&str> = outcome
                    .statuses
                    .iter()
                    .filter(|(_, s)| s.is_ok())
                    .map(|(d, _)| d.as_str())
                    .collect();
                let not: Vec<&str> = outcome
                    .statuses
                    .iter()
                    .filter(|(_, s)| s.is_err())
                    .map(|(d, _)| d.as_str())
                    .collect();
                eprintln!(
                    "knot: the PDS rate-limited this push ({}).\nknot: pushed: {}\nknot: not pushed: {}\nknot: push again {}",
                    l.message,
                    crate::push::ref_list(&pushed),
                    crate::push::ref_list(&not),
                    l.when()
                );
                exit = Exit::RateLimited;
            }
            w(output, &s)?;
            crate::trace::mark("push answered", None);
        } else {
            return Err(KnotError::Protocol(format!("unknown command {line:?}")));
        }
    }
    Ok(exit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options() {
        let mut o = Opts::default();
        assert_eq!(set_option(&mut o, "dry-run", "true"), "ok");
        assert!(o.push.dry_run);
        assert_eq!(
            set_option(
                &mut o,
                "cas",
                "\"refs/heads/main:0000000000000000000000000000000000000000\""
            ),
            "ok"
        );
        assert_eq!(o.push.cas.get("refs/heads/main"), Some(&None));
        assert_eq!(
            set_option(&mut o, "cas", &format!("refs/heads/x:{}", "a".repeat(40))),
            "ok"
        );
        assert_eq!(o.push.cas.get("refs/heads/x"), Some(&Some("a".repeat(40))));
        assert_eq!(set_option(&mut o, "depth", "1"), "unsupported");
    }

    #[test]
    fn push_lines_outside_refs_are_refused_per_ref() {
        assert!(push_line("+refs/heads/a:refs/heads/a").unwrap().is_ok());
        let (dst, why) = push_line(":HEAD").unwrap().unwrap_err();
        assert_eq!(dst, "HEAD");
        assert!(why.unwrap_err().contains("full ref name"));
        assert!(push_line("refs/heads/a").is_err());
    }

    #[test]
    fn capabilities_without_a_server() {
        let mut out = Vec::new();
        let r = run(
            "at+http://127.0.0.1:1/did:plc:x/r",
            "capabilities\noption progress false\n\n".as_bytes(),
            &mut out,
        )
        .unwrap();
        assert_eq!(r, Exit::Done);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "fetch\npush\noption\n\nok\n"
        );
    }
}
