//! Replaying a writer's commits onto a queue's tip with git's own merge
//! machinery, in the scratch repository (no worktree): each commit of
//! `tip ^exclude`, oldest first, is `git merge-tree --write-tree
//! --merge-base=<its parent> <current> <commit>`; a clean result becomes
//! a commit with the original's author, committer and message on top of
//! the current one (`git hash-object -t commit`). A commit whose result
//! changes nothing is dropped, as `git rebase` drops a commit already
//! upstream. A conflict, a merge commit or a root commit refuses the whole
//! push (`fetch first`: the writer rebases it itself).

use super::scratch::Scratch;
use crate::error::{KnotError, Result};

/// Most commits one push may bring to a replay.
pub const MAX_REPLAY: usize = 1000;

/// What a replay came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replay {
    /// Applied cleanly: the new tip, commits written and dropped.
    Applied {
        tip: String,
        replayed: usize,
        dropped: usize,
    },
    /// Not applied, and why (for the gateway's log; the writer hears
    /// `fetch first`).
    Refused(String),
}

/// The commit object `raw` moved onto `tree` and `parent`: every header
/// but `tree`, `parent` and signatures (which the new commit would break)
/// kept in order, then the message byte for byte.
pub fn rewrite(raw: &[u8], tree: &str, parent: &str) -> Vec<u8> {
    let split = raw.windows(2).position(|w| w == b"\n\n");
    let (head, msg) = match split {
        Some(i) => (&raw[..i], &raw[i + 2..]),
        None => (raw, &b""[..]),
    };
    let head = String::from_utf8_lossy(head);
    let mut out = format!("tree {tree}\nparent {parent}\n");
    let mut skipping = false;
    for line in head.lines() {
        if line.starts_with(' ') {
            // A continuation of the header before it.
            if !skipping {
                out.push_str(line);
                out.push('\n');
            }
            continue;
        }
        let key = line.split(' ').next().unwrap_or("");
        skipping = matches!(
            key,
            "tree" | "parent" | "gpgsig" | "gpgsig-sha256" | "mergetag"
        );
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push('\n');
    let mut out = out.into_bytes();
    out.extend_from_slice(msg);
    out
}

fn oid_ok(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Replays `tip ^exclude` onto `onto`.
pub async fn replay(s: &Scratch, onto: &str, exclude: &str, tip: &str) -> Result<Replay> {
    let not = format!("^{exclude}");
    let list = s
        .ok(&[
            "rev-list",
            "--reverse",
            "--topo-order",
            "--parents",
            tip,
            &not,
        ])
        .await?;
    let mut commits: Vec<(String, String)> = Vec::new();
    for line in list.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if !f.iter().all(|o| oid_ok(o)) {
            return Err(KnotError::Git {
                cmd: "rev-list".into(),
                why: format!("unexpected line {line:?}"),
            });
        }
        match f.as_slice() {
            [c, p] => commits.push(((*c).to_owned(), (*p).to_owned())),
            [_] => return Ok(Replay::Refused("a root commit".into())),
            _ => return Ok(Replay::Refused("a merge commit".into())),
        }
        if commits.len() > MAX_REPLAY {
            return Ok(Replay::Refused(format!(
                "more than {MAX_REPLAY} commits to replay"
            )));
        }
    }
    let mut cur = onto.to_owned();
    let mut cur_tree = s.ok(&["rev-parse", &format!("{cur}^{{tree}}")]).await?;
    let (mut replayed, mut dropped) = (0, 0);
    for (c, p) in &commits {
        let base = format!("--merge-base={p}");
        let o = s
            .git(&["merge-tree", "--write-tree", &base, &cur, c], None)
            .await?;
        match o.code {
            Some(0) => {}
            Some(1) => return Ok(Replay::Refused(format!("{c} conflicts"))),
            _ => {
                return Err(KnotError::Git {
                    cmd: "merge-tree".into(),
                    why: o.stderr.trim().to_owned(),
                });
            }
        }
        let tree = o.stdout.lines().next().unwrap_or("").trim().to_owned();
        if !oid_ok(&tree) {
            return Err(KnotError::Git {
                cmd: "merge-tree".into(),
                why: format!("no tree in {:?}", o.stdout),
            });
        }
        if tree == cur_tree {
            dropped += 1;
            continue;
        }
        let raw = s.git(&["cat-file", "commit", c], None).await?;
        if raw.code != Some(0) {
            return Err(KnotError::Git {
                cmd: "cat-file".into(),
                why: raw.stderr.trim().to_owned(),
            });
        }
        let text = rewrite(&raw.raw, &tree, &cur);
        let o = s
            .git(
                &["hash-object", "-t", "commit", "-w", "--stdin"],
                Some(&text),
            )
            .await?;
        let new = o.stdout.trim().to_owned();
        if o.code != Some(0) || !oid_ok(&new) {
            return Err(KnotError::Git {
                cmd: "hash-object".into(),
                why: o.stderr.trim().to_owned(),
            });
        }
        cur = new;
        cur_tree = tree;
        replayed += 1;
    }
    Ok(Replay::Applied {
        tip: cur,
        replayed,
        dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rewrite_keeps_identity_and_drops_signatures() {
        let raw = "tree aaaa\nparent bbbb\nauthor A <a@x> 1 +0000\ncommitter C <c@x> 2 +0000\ngpgsig -----BEGIN-----\n sig line\n -----END-----\n\nsubject\n\nbody\n";
        let r = rewrite(raw.as_bytes(), "tttt", "pppp");
        assert_eq!(
            String::from_utf8(r).unwrap(),
            "tree tttt\nparent pppp\nauthor A <a@x> 1 +0000\ncommitter C <c@x> 2 +0000\n\nsubject\n\nbody\n"
        );
    }

    proptest! {
        #[test]
        fn rewrite_never_panics_and_starts_with_tree(s in proptest::collection::vec(any::<u8>(), 0..400)) {
            let r = rewrite(&s, "t", "p");
            prop_assert!(r.starts_with(b"tree t\nparent p\n"));
        }
    }
}
