//! `knot-serve`: a read-only web server over a git mirror that it keeps up
//! to date from knot's ref records (`docs/design/knot.md`, issue 39 item 3).
//!
//! Pages are drawn from the mirror's objects in process (gitoxide), never
//! through a `git` subprocess: the repository (default branch's tree and
//! README), a directory, a file with syntax highlighting, a commit with
//! its diff, the log and the refs; plus a PNG social card per repository
//! and per file, drawn once and served from memory after that.
//!
//! ```text
//! knot-serve --mirror /srv/myrepo.git --remote at+http://pds:2583/alice.test/myrepo --listen 127.0.0.1:8080
//! ```
//!
//! # Modules
//!
//! | module | owns |
//! |---|---|
//! | `paths` | request paths: routes, decoding, hostile-input checks |
//! | `mirror` | reading objects with gix |
//! | `diff` | a commit's file and line diff |
//! | `highlight` | syntect highlighting |
//! | `markdown` | README rendering (no raw HTML) |
//! | `html` | escaping and the pages' markup |
//! | `card` | social cards (PNG) |
//! | `cache` | byte-bounded LRU caches |
//! | `app` | route → reply, and the caches |
//! | [`server`] | the HTTP/1.1 server and its bounds |
//! | [`sync`] | the no-op check and the fetch into the mirror |
//! | `error` | [`ServeError`], [`PathError`] |

mod app;
mod cache;
mod card;
mod diff;
mod error;
mod highlight;
mod html;
mod markdown;
mod mirror;
mod paths;
pub mod server;
pub mod sync;

pub use app::{App, Limits, Reply};
pub use error::{PathError, Result, ServeError};
pub use paths::Route;
