//! A commit's diff: the changed files from gix's tree diff
//! ([`crate::mirror::changes`]), each file's lines from `similar`'s
//! Myers diff, as unified hunks with three lines of context. Bounded:
//! files past [`MAX_DIFF_BLOB`] or holding a NUL byte are named but not
//! diffed, and a commit's diff stops after [`MAX_DIFF_LINES`] lines; a
//! file cut by that limit has its own page ([`file_diff`]), bounded at
//! [`MAX_FILE_DIFF_LINES`].

use similar::{ChangeTag, TextDiff};

use crate::error::Result;
use crate::mirror::{self, CommitInfo, FileChange};

/// Largest blob whose lines are diffed.
pub const MAX_DIFF_BLOB: u64 = 1 << 20;
/// Most diff lines shown for one commit.
pub const MAX_DIFF_LINES: usize = 5000;
/// Most diff lines on one file's own diff page. Past it the page is cut
/// and links the file's two versions instead.
pub const MAX_FILE_DIFF_LINES: usize = 100_000;

/// What is shown for one file.
#[derive(Debug, Clone)]
pub enum Body {
    /// Unified hunks: a header line, then `(tag, line)` pairs; `cut`
    /// when the line limit stopped this file short.
    Hunks {
        hunks: Vec<(String, Vec<(ChangeTag, String)>)>,
        cut: bool,
    },
    Binary,
    TooLarge,
    /// The commit's line budget ran out before this file.
    Elided,
}

/// One file of a commit's diff.
#[derive(Debug, Clone)]
pub struct FileDiff {
    pub change: FileChange,
    pub body: Body,
}

fn text_of(repo: &gix::Repository, id: Option<gix::ObjectId>) -> Result<Option<Option<String>>> {
    // Outer None: too large; inner None: binary.
    let Some(id) = id else {
        return Ok(Some(Some(String::new())));
    };
    match mirror::blob(repo, id, MAX_DIFF_BLOB) {
        Ok(b) if b.contains(&0) => Ok(Some(None)),
        Ok(b) => Ok(Some(Some(String::from_utf8_lossy(&b).into_owned()))),
        Err(crate::error::ServeError::TooLarge { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The diff of `c` against its first parent, at most [`MAX_DIFF_LINES`]
/// lines in all: the file that meets the limit is cut, those after it
/// are [`Body::Elided`].
pub fn commit_diff(repo: &gix::Repository, c: &CommitInfo) -> Result<Vec<FileDiff>> {
    let mut budget = MAX_DIFF_LINES;
    let mut out = Vec::new();
    for change in mirror::changes(repo, c)? {
        if budget == 0 {
            out.push(FileDiff {
                change,
                body: Body::Elided,
            });
            continue;
        }
        let body = file_body(repo, &change, &mut budget)?;
        out.push(FileDiff { change, body });
    }
    Ok(out)
}

/// One file of `c`'s diff (the per-file page), at most
/// [`MAX_FILE_DIFF_LINES`] lines; `None` when `c` did not change `path`.
pub fn file_diff(repo: &gix::Repository, c: &CommitInfo, path: &str) -> Result<Option<FileDiff>> {
    let Some(change) = mirror::changes(repo, c)?
        .into_iter()
        .find(|ch| ch.path == path)
    else {
        return Ok(None);
    };
    let mut budget = MAX_FILE_DIFF_LINES;
    let body = file_body(repo, &change, &mut budget)?;
    Ok(Some(FileDiff { change, body }))
}

/// One file's hunks, taking its lines from `budget`.
fn file_body(repo: &gix::Repository, change: &FileChange, budget: &mut usize) -> Result<Body> {
    Ok(
        match (text_of(repo, change.old)?, text_of(repo, change.new)?) {
            (None, _) | (_, None) => Body::TooLarge,
            (Some(None), _) | (_, Some(None)) => Body::Binary,
            (Some(Some(a)), Some(Some(b))) => {
                let d = TextDiff::from_lines(&a, &b);
                let mut hunks = Vec::new();
                let mut cut = false;
                'groups: for group in d.grouped_ops(3) {
                    let (Some(first), Some(last)) = (group.first(), group.last()) else {
                        continue;
                    };
                    let (o, n) = (first.old_range().start, first.new_range().start);
                    let header = format!(
                        "@@ -{},{} +{},{} @@",
                        o + 1,
                        last.old_range().end - o,
                        n + 1,
                        last.new_range().end - n
                    );
                    let mut lines = Vec::new();
                    for op in &group {
                        for ch in d.iter_changes(op) {
                            if *budget == 0 {
                                hunks.push((header, lines));
                                cut = true;
                                break 'groups;
                            }
                            *budget -= 1;
                            lines.push((ch.tag(), ch.value().trim_end_matches('\n').to_owned()));
                        }
                    }
                    hunks.push((header, lines));
                }
                Body::Hunks { hunks, cut }
            }
        },
    )
}
