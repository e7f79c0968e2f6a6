//! Request paths: the [`Route`] a URL path names, with every segment
//! percent-decoded and checked before anything reads the mirror. Hostile
//! input (`..`, absolute paths, NUL and control bytes, invalid UTF-8,
//! over-long or over-deep paths, malformed revisions) is a [`PathError`],
//! which answers 400.
//!
//! | path | page |
//! |---|---|
//! | `/` | the repository: default branch's tree and README |
//! | `/tree/<rev>[/<path>]` | a directory |
//! | `/blob/<rev>/<path>` | a file, highlighted |
//! | `/commit/<oid>` | a commit and its diff |
//! | `/commit/<oid>/diff/<path>` | one file of a commit's diff |
//! | `/log/<rev>[/<page>]` | the history from `rev`, a page at a time |
//! | `/refs` | branches and tags |
//! | `/card.png`, `/card/<rev>/<path>` | social cards (PNG) |
//! | `/style.css` | the stylesheet |
//!
//! `<rev>` is one segment: a ref name with its `/` escaped as `%2F`, or a
//! full 40-hex object id. `<page>` is a decimal from 2 to [`MAX_LOG_PAGE`]
//! (page 1 is `/log/<rev>` itself); anything else is a 400.

use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};

use crate::error::PathError;

/// Longest request path accepted (bytes, before decoding).
pub const MAX_PATH: usize = 1024;
/// Most segments in a path.
pub const MAX_SEGMENTS: usize = 64;
/// Longest revision (git's own ref names stay far below this).
pub const MAX_REV: usize = 255;
/// Highest log page: each page walks past the commits of those before
/// it, so the depth one request can ask for is bounded.
pub const MAX_LOG_PAGE: usize = 200;

/// A page or asset, parsed from a request path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Route {
    Repo,
    Tree {
        rev: String,
        path: String,
    },
    File {
        rev: String,
        path: String,
    },
    Commit {
        oid: String,
    },
    CommitFile {
        oid: String,
        path: String,
    },
    /// `page` counts from 1.
    Log {
        rev: String,
        page: usize,
    },
    Refs,
    RepoCard,
    FileCard {
        rev: String,
        path: String,
    },
    Style,
}

/// Characters escaped in a path segment of the links we write.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'\'')
    .add(b'\\');

/// One segment escaped for a link (`/` included, so a ref name with
/// slashes stays one segment).
pub fn encode_segment(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

/// A repository path escaped segment by segment (its `/` kept).
pub fn encode_path(p: &str) -> String {
    p.split('/')
        .map(encode_segment)
        .collect::<Vec<_>>()
        .join("/")
}

fn decode(seg: &str) -> Result<String, PathError> {
    // A `%` not followed by two hex digits is refused rather than kept
    // literally: the link it came from was not one we wrote.
    let b = seg.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'%'
            && !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
        {
            return Err(PathError::BadEscape);
        }
    }
    let s = percent_decode_str(seg)
        .decode_utf8()
        .map_err(|_| PathError::NotUtf8)?
        .into_owned();
    if s.chars().any(|c| c.is_control()) {
        return Err(PathError::ControlByte);
    }
    Ok(s)
}

/// A repository path segment: decoded, not `.`/`..`/empty, no separator.
fn file_segment(seg: &str) -> Result<String, PathError> {
    let s = decode(seg)?;
    if s.is_empty() || s == "." || s == ".." {
        return Err(PathError::DotSegment(s));
    }
    if s.contains('/') || s.contains('\\') {
        return Err(PathError::Separator);
    }
    Ok(s)
}

/// A revision: a 40-hex object id or a plausible ref name (git's
/// check-ref-format rules that matter here).
fn revision(seg: &str) -> Result<String, PathError> {
    let s = decode(seg)?;
    let bad = s.is_empty()
        || s.len() > MAX_REV
        || s.starts_with('/')
        || s.starts_with('-')
        || s.ends_with('/')
        || s.ends_with('.')
        || s.ends_with(".lock")
        || s.contains("..")
        || s.contains("//")
        || s.contains("@{")
        || s.chars()
            .any(|c| matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\'));
    if bad {
        return Err(PathError::BadRevision(s));
    }
    Ok(s)
}

/// A full lower-case 40-hex object id.
fn object_id(seg: &str) -> Result<String, PathError> {
    let o = decode(seg)?;
    if o.len() != 40 || !o.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(PathError::BadRevision(o));
    }
    Ok(o)
}

/// A log page number: plain decimal digits, 2..=[`MAX_LOG_PAGE`] (page 1
/// has no number, so each page has one address).
fn log_page(seg: &str) -> Result<usize, PathError> {
    let s = decode(seg)?;
    let n = if s.len() <= 4 && !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse::<usize>().ok()
    } else {
        None
    };
    match n {
        Some(n) if (2..=MAX_LOG_PAGE).contains(&n) && !s.starts_with('0') => Ok(n),
        _ => Err(PathError::BadPage {
            page: s,
            max: MAX_LOG_PAGE,
        }),
    }
}

/// A path inside the repository, from the remaining segments.
fn repo_path(segs: &[&str]) -> Result<String, PathError> {
    let parts = segs
        .iter()
        .map(|s| file_segment(s))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(parts.join("/"))
}

impl Route {
    /// Parses a request path (without its query).
    pub fn parse(path: &str) -> Result<Route, PathError> {
        if path.len() > MAX_PATH {
            return Err(PathError::TooLong {
                len: path.len(),
                max: MAX_PATH,
            });
        }
        let Some(rest) = path.strip_prefix('/') else {
            return Err(PathError::NoRoute);
        };
        // One trailing slash is a directory's link; more is not ours.
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let segs: Vec<&str> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split('/').collect()
        };
        if segs.len() > MAX_SEGMENTS {
            return Err(PathError::TooDeep {
                count: segs.len(),
                max: MAX_SEGMENTS,
            });
        }
        match segs.as_slice() {
            [] => Ok(Route::Repo),
            ["refs"] => Ok(Route::Refs),
            ["style.css"] => Ok(Route::Style),
            ["card.png"] => Ok(Route::RepoCard),
            ["log", rev] => Ok(Route::Log {
                rev: revision(rev)?,
                page: 1,
            }),
            ["log", rev, page] => Ok(Route::Log {
                rev: revision(rev)?,
                page: log_page(page)?,
            }),
            ["commit", oid] => Ok(Route::Commit {
                oid: object_id(oid)?,
            }),
            ["commit", oid, "diff", p @ ..] if !p.is_empty() => Ok(Route::CommitFile {
                oid: object_id(oid)?,
                path: repo_path(p)?,
            }),
            ["tree", rev, p @ ..] => Ok(Route::Tree {
                rev: revision(rev)?,
                path: repo_path(p)?,
            }),
            ["blob", rev, p @ ..] if !p.is_empty() => Ok(Route::File {
                rev: revision(rev)?,
                path: repo_path(p)?,
            }),
            ["card", rev, p @ ..] if !p.is_empty() => Ok(Route::FileCard {
                rev: revision(rev)?,
                path: repo_path(p)?,
            }),
            _ => {
                // Still check the segments, so a hostile path is a 400
                // whichever route it aimed at.
                for s in &segs {
                    file_segment(s)?;
                }
                Err(PathError::NoRoute)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages() {
        assert_eq!(Route::parse("/"), Ok(Route::Repo));
        assert_eq!(
            Route::parse("/tree/main/src/"),
            Ok(Route::Tree {
                rev: "main".into(),
                path: "src".into()
            })
        );
        assert_eq!(
            Route::parse("/blob/feature%2Fx/a%20b.rs"),
            Ok(Route::File {
                rev: "feature/x".into(),
                path: "a b.rs".into()
            })
        );
        assert_eq!(
            Route::parse("/log/feature%2Fx/200"),
            Ok(Route::Log {
                rev: "feature/x".into(),
                page: 200
            })
        );
        let oid = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            Route::parse(&format!("/commit/{oid}/diff/src/a%20b.rs")),
            Ok(Route::CommitFile {
                oid: oid.into(),
                path: "src/a b.rs".into()
            })
        );
        assert_eq!(
            Route::parse("/tree/main"),
            Ok(Route::Tree {
                rev: "main".into(),
                path: String::new()
            })
        );
    }

    #[test]
    fn hostile() {
        use PathError::*;
        assert!(matches!(
            Route::parse("/blob/main/../etc/passwd"),
            Err(DotSegment(_))
        ));
        assert!(matches!(
            Route::parse("/blob/main/%2e%2e/x"),
            Err(DotSegment(_))
        ));
        assert!(matches!(
            Route::parse("/blob/main/a//b"),
            Err(DotSegment(_))
        ));
        assert_eq!(Route::parse("/blob/main/%2Fetc%2Fpasswd"), Err(Separator));
        assert_eq!(Route::parse("/blob/main/a%00b"), Err(ControlByte));
        assert_eq!(Route::parse("/blob/main/%ff%fe"), Err(NotUtf8));
        assert_eq!(Route::parse("/blob/main/%zz"), Err(BadEscape));
        assert_eq!(Route::parse("/blob/main/%4"), Err(BadEscape));
        assert!(matches!(
            Route::parse("/log/..%2F..%2Fx"),
            Err(BadRevision(_))
        ));
        assert!(matches!(Route::parse("/log/-n"), Err(BadRevision(_))));
        assert!(matches!(Route::parse("/commit/HEAD"), Err(BadRevision(_))));
        assert!(matches!(
            Route::parse(&format!("/blob/main/{}", "a".repeat(2000))),
            Err(TooLong { .. })
        ));
        assert!(matches!(
            Route::parse(&format!("/tree/main{}", "/a".repeat(70))),
            Err(TooDeep { .. })
        ));
        for p in [
            "/log/main/0",
            "/log/main/1",
            "/log/main/02",
            "/log/main/201",
            "/log/main/x",
            "/log/main/-2",
            "/log/main/99999999999999999999",
        ] {
            assert!(matches!(Route::parse(p), Err(BadPage { .. })), "{p}");
        }
        assert!(matches!(
            Route::parse("/commit/abc/diff/a.rs"),
            Err(BadRevision(_))
        ));
        assert!(matches!(
            Route::parse(&format!("/commit/{}/diff/../x", "a".repeat(40))),
            Err(DotSegment(_))
        ));
        assert_eq!(Route::parse("/nope/../x"), Err(DotSegment("..".into())));
        assert_eq!(Route::parse("/nope"), Err(NoRoute));
        assert_eq!(Route::parse("relative"), Err(NoRoute));
    }

    proptest::proptest! {
        /// Whatever the input, a parsed route never carries a dot segment,
        /// a control byte or an absolute path.
        #[test]
        fn parsed_paths_are_clean(s in "/[a-z%./0-9A-F\\x00-\\x1f]{0,40}") {
            if let Ok(r) = Route::parse(&s) {
                let path = match r {
                    Route::Tree { path, .. } | Route::File { path, .. } | Route::FileCard { path, .. }
                    | Route::CommitFile { path, .. } => path,
                    _ => String::new(),
                };
                proptest::prop_assert!(!path.starts_with('/'));
                proptest::prop_assert!(!path.split('/').any(|p| p == ".." || p == "."));
                proptest::prop_assert!(!path.chars().any(char::is_control));
            }
        }

        #[test]
        fn encoded_segments_round_trip(s in "[^\\x00-\\x1f]{1,20}") {
            proptest::prop_assume!(s != "." && s != ".." && !s.contains('\\') && !s.contains('/') && !s.chars().any(char::is_control));
            let p = format!("/blob/main/{}", encode_segment(&s));
            proptest::prop_assert_eq!(Route::parse(&p), Ok(Route::File { rev: "main".into(), path: s }));
        }
    }
}
