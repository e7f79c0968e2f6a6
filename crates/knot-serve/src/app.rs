//! [`App`]: one repository's pages and cards, from a request path to a
//! [`Reply`]. It owns the caches: highlighted files (by blob id), rendered
//! READMEs (by blob id) and cards (by what they show), each a byte-bounded
//! LRU. Keys are object ids, so a sync that moves a branch never serves a
//! stale entry: the pages that follow a branch resolve it anew.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use gix::ObjectId;

use crate::cache::{ByteLru, CacheStats};
use crate::card::{CardFont, CardText, FILE_LINES};
use crate::diff;
use crate::error::{PathError, Result, ServeError};
use crate::highlight::Highlighter;
use crate::html::{self, Frame};
use crate::markdown;
use crate::mirror::{self, Mirror};
use crate::paths::{Route, encode_path, encode_segment};

/// Sizes and limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Bytes of highlighted HTML kept.
    pub highlight_bytes: usize,
    /// Bytes of PNG cards kept.
    pub card_bytes: usize,
    /// Bytes of rendered READMEs kept.
    pub readme_bytes: usize,
    /// Largest file shown.
    pub max_file: u64,
    /// Largest file highlighted (bigger ones are shown escaped).
    pub max_highlight: usize,
    /// Commits on a log page.
    pub log_page: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            highlight_bytes: 64 << 20,
            card_bytes: 32 << 20,
            readme_bytes: 8 << 20,
            max_file: 8 << 20,
            max_highlight: 512 << 10,
            log_page: 50,
        }
    }
}

/// A response body and its type.
#[derive(Debug, Clone)]
pub struct Reply {
    pub content_type: &'static str,
    pub body: Bytes,
}

impl Reply {
    fn html(s: String) -> Reply {
        Reply {
            content_type: "text/html; charset=utf-8",
            body: Bytes::from(s),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum CardKey {
    Repo(ObjectId),
    File(ObjectId, String),
}

/// One repository's web view.
pub struct App {
    name: String,
    mirror: Mirror,
    limits: Limits,
    highlighter: Highlighter,
    font: CardFont,
    style: Bytes,
    highlighted: ByteLru<ObjectId, Arc<str>>,
    readmes: ByteLru<ObjectId, Arc<str>>,
    cards: ByteLru<CardKey, Bytes>,
}

impl App {
    /// Opens the mirror at `dir` and loads the syntaxes and the font.
    pub fn open(name: &str, dir: &Path, limits: Limits) -> Result<App> {
        let highlighter = Highlighter::new();
        let style = Bytes::from(format!("{}{}", html::STYLE, highlighter.css()));
        Ok(App {
            name: name.to_owned(),
            mirror: Mirror::open(dir)?,
            highlighted: ByteLru::new(limits.highlight_bytes),
            readmes: ByteLru::new(limits.readme_bytes),
            cards: ByteLru::new(limits.card_bytes),
            limits,
            highlighter,
            font: CardFont::new()?,
            style,
        })
    }

    pub fn mirror(&self) -> &Mirror {
        &self.mirror
    }

    /// Opens the mirror anew (pack indexes and refs not yet read) and
    /// drops every cached render: the `cold` bench rows. The syntax set
    /// and the font stay loaded (process start-up, not a page's cost).
    pub fn reopen(&mut self) -> Result<()> {
        self.mirror = Mirror::open(self.mirror.dir())?;
        self.clear_caches();
        Ok(())
    }

    /// Drops every cached render.
    pub fn clear_caches(&self) {
        self.highlighted.clear();
        self.readmes.clear();
        self.cards.clear();
    }

    /// (highlighted, readmes, cards).
    pub fn cache_stats(&self) -> (CacheStats, CacheStats, CacheStats) {
        (
            self.highlighted.stats(),
            self.readmes.stats(),
            self.cards.stats(),
        )
    }

    /// The reply for a request path (query excluded).
    pub fn handle(&self, path: &str) -> Result<Reply> {
        let route = Route::parse(path)?;
        self.render(&route)
    }

    fn frame_card(route: &Route) -> String {
        match route {
            Route::File { rev, path } => {
                format!("/card/{}/{}", encode_segment(rev), encode_path(path))
            }
            _ => "/card.png".to_owned(),
        }
    }

    /// The reply for a parsed route.
    pub fn render(&self, route: &Route) -> Result<Reply> {
        let repo = self.mirror.local();
        let card = Self::frame_card(route);
        let frame = |title: &'static str| Frame {
            repo: &self.name,
            title,
            card: &card,
        };
        match route {
            Route::Style => Ok(Reply {
                content_type: "text/css; charset=utf-8",
                body: self.style.clone(),
            }),
            Route::Repo => {
                let Some((branch, head)) = mirror::default_branch(&repo)? else {
                    return Ok(Reply::html(html::empty_page(&frame("repository"))));
                };
                let c = mirror::commit(&repo, head)?;
                let entries = mirror::tree_at(&repo, c.tree, "")?;
                let readme = match entries.iter().find(|e| {
                    e.kind == mirror::EntryKind::File
                        && e.name.to_ascii_lowercase().starts_with("readme")
                }) {
                    Some(e) => Some(self.readme(&repo, e.oid, &e.name)?),
                    None => None,
                };
                Ok(Reply::html(html::repo_page(
                    &frame("repository"),
                    &branch,
                    &c,
                    &entries,
                    readme.as_deref(),
                )))
            }
            Route::Tree { rev, path } => {
                let c = mirror::commit(&repo, mirror::resolve(&repo, rev)?)?;
                let entries = mirror::tree_at(&repo, c.tree, path)?;
                Ok(Reply::html(html::tree_page(
                    &frame("tree"),
                    rev,
                    path,
                    &entries,
                )))
            }
            Route::File { rev, path } => {
                let c = mirror::commit(&repo, mirror::resolve(&repo, rev)?)?;
                let (id, bytes) = mirror::blob_at(&repo, c.tree, path, self.limits.max_file)?;
                if bytes.contains(&0) {
                    return Ok(Reply::html(html::binary_page(
                        &frame("file"),
                        rev,
                        path,
                        bytes.len(),
                    )));
                }
                let text = String::from_utf8_lossy(&bytes);
                let lines = text.lines().count().max(1);
                let code = self.highlighted(id, path, &text);
                Ok(Reply::html(html::file_page(
                    &frame("file"),
                    rev,
                    path,
                    &c,
                    lines,
                    &code,
                )))
            }
            Route::Commit { oid } => {
                let id = ObjectId::from_hex(oid.as_bytes())
                    .map_err(|_| PathError::BadRevision(oid.clone()))?;
                let c = mirror::commit(&repo, id)?;
                let files = diff::commit_diff(&repo, &c)?;
                Ok(Reply::html(html::commit_page(&frame("commit"), &c, &files)))
            }
            Route::CommitFile { oid, path } => {
                let id = ObjectId::from_hex(oid.as_bytes())
                    .map_err(|_| PathError::BadRevision(oid.clone()))?;
                let c = mirror::commit(&repo, id)?;
                let fd = diff::file_diff(&repo, &c, path)?
                    .ok_or_else(|| ServeError::not_found(format!("{path} in commit {oid}")))?;
                Ok(Reply::html(html::file_diff_page(&frame("diff"), &c, &fd)))
            }
            Route::Log { rev, page } => {
                let start = mirror::resolve(&repo, rev)?;
                let per = self.limits.log_page.max(1);
                let skip = (page - 1).saturating_mul(per);
                let mut commits = mirror::log(&repo, start, skip, per + 1)?;
                if commits.is_empty() && *page > 1 {
                    return Err(ServeError::not_found(format!("log page {page} of {rev}")));
                }
                let more = commits.len() > per;
                commits.truncate(per);
                Ok(Reply::html(html::log_page(
                    &frame("log"),
                    rev,
                    &commits,
                    *page,
                    more,
                )))
            }
            Route::Refs => {
                let refs = mirror::refs(&repo)?;
                Ok(Reply::html(html::refs_page(&frame("refs"), &refs)))
            }
            Route::RepoCard => {
                let (branch, head) = mirror::default_branch(&repo)?
                    .ok_or_else(|| ServeError::not_found("default branch"))?;
                let key = CardKey::Repo(head);
                self.card(key, || {
                    let c = mirror::commit(&repo, head)?;
                    Ok(CardText {
                        repo: self.name.clone(),
                        subtitle: branch.clone(),
                        commit: format!("{} {}", c.id.to_hex_with_len(10), c.summary()),
                        lines: Vec::new(),
                    })
                })
            }
            Route::FileCard { rev, path } => {
                let head = mirror::resolve(&repo, rev)?;
                let key = CardKey::File(head, path.clone());
                self.card(key, || {
                    let c = mirror::commit(&repo, head)?;
                    let (_, bytes) = mirror::blob_at(&repo, c.tree, path, self.limits.max_file)?;
                    let lines = if bytes.contains(&0) {
                        vec![format!("(binary, {} bytes)", bytes.len())]
                    } else {
                        String::from_utf8_lossy(&bytes)
                            .lines()
                            .take(FILE_LINES)
                            .map(str::to_owned)
                            .collect()
                    };
                    Ok(CardText {
                        repo: self.name.clone(),
                        subtitle: format!("{rev} · {path}"),
                        commit: format!("{} {}", c.id.to_hex_with_len(10), c.summary()),
                        lines,
                    })
                })
            }
        }
    }

    fn card(&self, key: CardKey, text: impl FnOnce() -> Result<CardText>) -> Result<Reply> {
        let body = match self.cards.get(&key) {
            Some(b) => b,
            None => {
                let b = self.font.draw(&text()?)?;
                self.cards.insert(key, b.clone());
                b
            }
        };
        Ok(Reply {
            content_type: "image/png",
            body,
        })
    }

    fn highlighted(&self, id: ObjectId, path: &str, text: &str) -> Arc<str> {
        if let Some(h) = self.highlighted.get(&id) {
            return h;
        }
        let h: Arc<str> = if text.len() > self.limits.max_highlight {
            html::escape(text).into()
        } else {
            self.highlighter.to_html(path, text).into()
        };
        self.highlighted.insert(id, h.clone());
        h
    }

    fn readme(&self, repo: &gix::Repository, id: ObjectId, name: &str) -> Result<Arc<str>> {
        if let Some(r) = self.readmes.get(&id) {
            return Ok(r);
        }
        let bytes = mirror::blob(repo, id, self.limits.max_file)?;
        let text = String::from_utf8_lossy(&bytes);
        let lower = name.to_ascii_lowercase();
        let r: Arc<str> = if lower.ends_with(".md") || lower.ends_with(".markdown") {
            markdown::render(&text).into()
        } else {
            format!("<pre>{}</pre>", html::escape(&text)).into()
        };
        self.readmes.insert(id, r.clone());
        Ok(r)
    }
}
