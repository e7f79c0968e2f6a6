//! The pages' HTML: escaping, the shared layout, and one function per
//! page kind. Everything that came from the repository (names, paths,
//! messages, contents) goes through [`escape_into`]; links are built from
//! percent-encoded segments ([`crate::paths`]).

use std::fmt::Write;

use similar::ChangeTag;

use crate::diff::{Body, FileDiff, MAX_FILE_DIFF_LINES};
use crate::mirror::{ChangeKind, CommitInfo, Entry, EntryKind, RefInfo};
use crate::paths::{MAX_LOG_PAGE, encode_path, encode_segment};

/// Appends `s` with `& < > " '` escaped.
pub fn escape_into(out: &mut String, s: &str) {
    let mut last = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&s[last..i]);
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(&s[last..]);
}

/// `s`, escaped.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    escape_into(&mut o, s);
    o
}

/// What every page shares: the repository's name and the card to name in
/// its meta tags.
pub struct Frame<'a> {
    pub repo: &'a str,
    pub title: &'a str,
    /// Absolute path of this page's social card.
    pub card: &'a str,
}

/// Wraps `body` in the layout.
pub fn page(f: &Frame<'_>, body: &str) -> String {
    let mut o = String::with_capacity(body.len() + 1024);
    o.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    o.push_str(
        "<link rel=\"icon\" href=\"data:,\"><link rel=\"stylesheet\" href=\"/style.css\"><title>",
    );
    escape_into(&mut o, f.title);
    o.push_str(" · ");
    escape_into(&mut o, f.repo);
    o.push_str("</title><meta property=\"og:title\" content=\"");
    escape_into(&mut o, f.title);
    o.push_str("\"><meta property=\"og:image\" content=\"");
    escape_into(&mut o, f.card);
    o.push_str("\"><meta name=\"twitter:card\" content=\"summary_large_image\"></head><body><header><a class=\"repo\" href=\"/\">");
    escape_into(&mut o, f.repo);
    o.push_str("</a> <nav><a href=\"/refs\">refs</a></nav></header><main>");
    o.push_str(body);
    o.push_str("</main></body></html>\n");
    o
}

fn short(id: &gix::ObjectId) -> String {
    id.to_hex_with_len(10).to_string()
}

/// `YYYY-MM-DD` of a unix time (UTC).
pub fn date(secs: i64) -> String {
    let (y, m, d) = codec::datetime::civil_from_days(secs.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// A breadcrumb of `path` at `rev`, each directory a link.
fn crumbs(o: &mut String, rev: &str, path: &str) {
    let r = encode_segment(rev);
    let _ = write!(o, "<p class=\"crumbs\"><a href=\"/tree/{r}\">");
    escape_into(o, rev);
    o.push_str("</a>");
    let mut acc = String::new();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        if !acc.is_empty() {
            acc.push('/');
        }
        acc.push_str(seg);
        let _ = write!(o, " / <a href=\"/tree/{r}/{}\">", encode_path(&acc));
        escape_into(o, seg);
        o.push_str("</a>");
    }
    o.push_str("</p>");
}

/// The listing of a tree at `rev`/`path`.
pub fn tree_listing(o: &mut String, rev: &str, path: &str, entries: &[Entry]) {
    let r = encode_segment(rev);
    o.push_str("<table class=\"tree\">");
    for e in entries {
        let full = if path.is_empty() {
            e.name.clone()
        } else {
            format!("{path}/{}", e.name)
        };
        let (kind, href) = match e.kind {
            EntryKind::Dir => ("dir", format!("/tree/{r}/{}", encode_path(&full))),
            EntryKind::Submodule => ("submodule", String::new()),
            EntryKind::File | EntryKind::Link => {
                ("file", format!("/blob/{r}/{}", encode_path(&full)))
            }
        };
        let _ = write!(o, "<tr class=\"{kind}\"><td>");
        if href.is_empty() {
            escape_into(o, &e.name);
        } else {
            let _ = write!(o, "<a href=\"{href}\">");
            escape_into(o, &e.name);
            if e.kind == EntryKind::Dir {
                o.push('/');
            }
            o.push_str("</a>");
        }
        o.push_str("</td></tr>");
    }
    o.push_str("</table>");
}

fn commit_line(o: &mut String, c: &CommitInfo) {
    let id = c.id.to_string();
    let _ = write!(
        o,
        "<li><a class=\"oid\" href=\"/commit/{id}\">{}</a> ",
        short(&c.id)
    );
    escape_into(o, c.summary());
    o.push_str(" <span class=\"meta\">");
    escape_into(o, &c.author);
    let _ = write!(o, ", {}</span></li>", date(c.seconds));
}

/// The repository page: its default branch's tree and its README.
pub fn repo_page(
    f: &Frame<'_>,
    branch: &str,
    head: &CommitInfo,
    entries: &[Entry],
    readme: Option<&str>,
) -> String {
    let mut o = String::new();
    o.push_str("<h1>");
    escape_into(&mut o, f.repo);
    o.push_str("</h1><p class=\"branch\">branch <b>");
    escape_into(&mut o, branch);
    let _ = write!(
        o,
        "</b> · <a href=\"/log/{}\">log</a></p><ul class=\"log\">",
        encode_segment(branch)
    );
    commit_line(&mut o, head);
    o.push_str("</ul>");
    tree_listing(&mut o, branch, "", entries);
    if let Some(r) = readme {
        o.push_str("<article class=\"readme\">");
        o.push_str(r);
        o.push_str("</article>");
    }
    page(f, &o)
}

/// An empty repository (no default branch yet).
pub fn empty_page(f: &Frame<'_>) -> String {
    page(f, "<p>This repository has no commits yet.</p>")
}

/// A directory page.
pub fn tree_page(f: &Frame<'_>, rev: &str, path: &str, entries: &[Entry]) -> String {
    let mut o = String::new();
    crumbs(&mut o, rev, path);
    tree_listing(&mut o, rev, path, entries);
    page(f, &o)
}

/// A file page: `code` is already HTML (highlighted and escaped).
pub fn file_page(
    f: &Frame<'_>,
    rev: &str,
    path: &str,
    commit: &CommitInfo,
    lines: usize,
    code: &str,
) -> String {
    let mut o = String::with_capacity(code.len() + lines * 8 + 512);
    crumbs(&mut o, rev, path);
    let _ = write!(
        o,
        "<p class=\"meta\">at <a class=\"oid\" href=\"/commit/{}\">{}</a> ",
        commit.id,
        short(&commit.id)
    );
    escape_into(&mut o, commit.summary());
    o.push_str("</p>");
    o.push_str("<table class=\"code\"><tr><td class=\"n\"><pre>");
    for i in 1..=lines {
        let _ = writeln!(o, "{i}");
    }
    o.push_str("</pre></td><td><pre class=\"hl\">");
    o.push_str(code);
    o.push_str("</pre></td></tr></table>");
    page(f, &o)
}

/// A file that is not shown as text.
pub fn binary_page(f: &Frame<'_>, rev: &str, path: &str, size: usize) -> String {
    let mut o = String::new();
    crumbs(&mut o, rev, path);
    let _ = write!(o, "<p>Binary file, {size} bytes.</p>");
    page(f, &o)
}

/// A commit and its diff.
pub fn commit_page(f: &Frame<'_>, c: &CommitInfo, files: &[FileDiff]) -> String {
    let mut o = String::new();
    o.push_str("<h2>");
    escape_into(&mut o, c.summary());
    let _ = write!(o, "</h2><p class=\"meta\">commit <code>{}</code> by ", c.id);
    escape_into(&mut o, &c.author);
    let _ = write!(o, " on {}", date(c.seconds));
    for p in &c.parents {
        let _ = write!(o, " · parent <a href=\"/commit/{p}\">{}</a>", short(p));
    }
    let _ = write!(
        o,
        " · <a href=\"/tree/{}\">browse</a></p><pre class=\"msg\">",
        c.id
    );
    escape_into(&mut o, c.message.trim_end());
    o.push_str("</pre>");
    for fd in files {
        file_diff(&mut o, fd, &c.id.to_string(), false);
    }
    page(f, &o)
}

/// One file of a commit's diff, on its own page.
pub fn file_diff_page(f: &Frame<'_>, c: &CommitInfo, fd: &FileDiff) -> String {
    let mut o = String::from("<h2>");
    escape_into(&mut o, c.summary());
    let _ = write!(
        o,
        "</h2><p class=\"meta\">one file of commit <a href=\"/commit/{}\">{}</a></p>",
        c.id,
        short(&c.id)
    );
    file_diff(&mut o, fd, &c.id.to_string(), true);
    page(f, &o)
}

/// Appends one file's section of a commit's diff; file links point at
/// `rev`. On the commit page (`own_page` false) a file the line limit cut
/// or left out links to its own diff page; on that page a cut says so.
fn file_diff(o: &mut String, d: &FileDiff, rev: &str, own_page: bool) {
    let (word, href_rev) = match d.change.kind {
        ChangeKind::Added => ("added", Some(rev)),
        ChangeKind::Deleted => ("deleted", None),
        ChangeKind::Modified => ("modified", Some(rev)),
    };
    o.push_str("<section class=\"diff\"><h3>");
    match href_rev {
        Some(r) => {
            let _ = write!(
                o,
                "<a href=\"/blob/{}/{}\">",
                encode_segment(r),
                encode_path(&d.change.path)
            );
            escape_into(o, &d.change.path);
            o.push_str("</a>");
        }
        None => escape_into(o, &d.change.path),
    }
    let _ = write!(o, " <span class=\"meta\">{word}</span></h3>");
    let own = format!(
        "/commit/{}/diff/{}",
        encode_segment(rev),
        encode_path(&d.change.path)
    );
    match &d.body {
        Body::Binary => o.push_str("<p class=\"meta\">binary</p>"),
        Body::TooLarge => o.push_str("<p class=\"meta\">too large to diff</p>"),
        Body::Elided => {
            let _ = write!(
                o,
                "<p class=\"meta\">diff not shown (line limit): <a class=\"full-diff\" href=\"{own}\">this file's diff</a></p>"
            );
        }
        Body::Hunks { hunks: h, cut } => {
            o.push_str("<pre>");
            for (header, lines) in h {
                o.push_str("<span class=\"hunk\">");
                escape_into(o, header);
                o.push_str("</span>");
                for (tag, line) in lines {
                    let (class, sign) = match tag {
                        ChangeTag::Insert => ("add", '+'),
                        ChangeTag::Delete => ("del", '-'),
                        ChangeTag::Equal => ("", ' '),
                    };
                    if class.is_empty() {
                        o.push(sign);
                        escape_into(o, line);
                        o.push('\n');
                    } else {
                        let _ = write!(o, "<span class=\"{class}\">{sign}");
                        escape_into(o, line);
                        o.push_str("</span>");
                    }
                }
            }
            o.push_str("</pre>");
            match (cut, own_page) {
                (false, _) => {}
                (true, false) => {
                    let _ = write!(
                        o,
                        "<p class=\"meta\">diff cut (line limit): <a class=\"full-diff\" href=\"{own}\">the rest of this file's diff</a></p>"
                    );
                }
                (true, true) => {
                    let _ = write!(
                        o,
                        "<p class=\"meta\">diff cut at {} lines; the file itself is whole on its page (linked above)</p>",
                        MAX_FILE_DIFF_LINES
                    );
                }
            }
        }
    }
    o.push_str("</section>");
}

/// The log from `rev`.
/// One page (from 1) of the log from `rev`; `more` when older commits
/// exist, which links the next page (up to [`MAX_LOG_PAGE`]).
pub fn log_page(
    f: &Frame<'_>,
    rev: &str,
    commits: &[CommitInfo],
    page_no: usize,
    more: bool,
) -> String {
    let mut o = String::from("<h2>Log of ");
    escape_into(&mut o, rev);
    o.push_str("</h2><ul class=\"log\">");
    for c in commits {
        commit_line(&mut o, c);
    }
    o.push_str("</ul>");
    let r = encode_segment(rev);
    o.push_str("<p class=\"meta\">");
    if page_no == 2 {
        let _ = write!(o, "<a rel=\"prev\" href=\"/log/{r}\">newer</a> ");
    } else if page_no > 2 {
        let _ = write!(
            o,
            "<a rel=\"prev\" href=\"/log/{r}/{}\">newer</a> ",
            page_no - 1
        );
    }
    if more && page_no < MAX_LOG_PAGE {
        let _ = write!(
            o,
            "<a rel=\"next\" href=\"/log/{r}/{}\">older</a>",
            page_no + 1
        );
    } else if more {
        o.push_str("(older commits not shown: the log pages stop here)");
    }
    o.push_str("</p>");
    page(f, &o)
}

/// Branches and tags.
pub fn refs_page(f: &Frame<'_>, refs: &[RefInfo]) -> String {
    let mut o = String::from("<h2>Refs</h2><table class=\"refs\">");
    for r in refs {
        let shortname = r
            .name
            .strip_prefix("refs/heads/")
            .or_else(|| r.name.strip_prefix("refs/tags/"))
            .unwrap_or(&r.name);
        let _ = write!(
            o,
            "<tr><td><a href=\"/tree/{}\">",
            encode_segment(shortname)
        );
        escape_into(&mut o, &r.name);
        let _ = write!(
            o,
            "</a></td><td><a class=\"oid\" href=\"/commit/{}\">{}</a></td><td><a href=\"/log/{}\">log</a></td></tr>",
            r.target,
            short(&r.target),
            encode_segment(shortname)
        );
    }
    o.push_str("</table>");
    page(f, &o)
}

/// The page stylesheet (the highlight classes are appended by the app).
pub const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1f2328;background:#fff}\
header{padding:10px 20px;background:#24292f}header a{color:#fff;text-decoration:none;margin-right:16px}\
header .repo{font-weight:bold}header nav{display:inline}main{padding:12px 20px;max-width:1100px}\
table.tree,table.refs{border-collapse:collapse;width:100%}table.tree td,table.refs td{padding:4px 8px;border-bottom:1px solid #d0d7de}\
tr.dir a{font-weight:600}table.code{border-collapse:collapse;font:13px/1.4 ui-monospace,monospace}\
td.n pre{color:#8c959f;text-align:right;margin:0;padding-right:10px;user-select:none}pre.hl{margin:0}\
.meta{color:#59636e}.oid{font-family:ui-monospace,monospace}ul.log{list-style:none;padding:0}ul.log li{padding:3px 0}\
pre.msg{background:#f6f8fa;padding:8px}.diff{margin:12px 0;border:1px solid #d0d7de}.diff h3{margin:0;padding:6px 10px;background:#f6f8fa;font-size:14px}\
.diff pre{margin:0;font:13px/1.4 ui-monospace,monospace;overflow-x:auto}.diff .add{background:#dafbe1;display:block}.diff .del{background:#ffebe9;display:block}\
.diff .hunk{color:#59636e;background:#ddf4ff;display:block}article.readme{border-top:1px solid #d0d7de;margin-top:16px}\n";
