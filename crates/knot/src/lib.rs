//! Git hosted in an atproto PDS (`docs/design/knot.md`): the `git-remote-at`
//! remote helper keeps a repository's refs as records and its packs as
//! blob parts in the account's own PDS. A branch update is one
//! compare-and-swap (`putRecord` with `swapRecord`); packs stream from
//! `git pack-objects` into 4 MiB parts and back into `git index-pack`, so
//! the helper's memory does not grow with the pack.
//!
//! # Use
//!
//! ```text
//! export ATPROTO_IDENTIFIER=alice.example.com ATPROTO_PASSWORD=app-password
//! git push at://alice.example.com/myrepo main
//! git clone at://alice.example.com/myrepo
//! ```
//!
//! URL forms (`url.rs`): `at://<handle-or-did>/<repo>` (the account is
//! resolved to its PDS, `identity.rs`) and
//! `at::at+http://<host:port>/<handle-or-did>/<repo>` naming the PDS
//! directly (`at+https://` likewise; the `at::` prefix makes git run
//! `git-remote-at` for a scheme it would otherwise look up as
//! `git-remote-at+http`). Credentials: [`Credentials`]. Warm state: `state.rs`.
//!
//! # Records (lexicons in `lexicons/`)
//!
//! Three NSIDs, all in the account's repository, all keyed by the git
//! repository's name `<repo>` (`A-Za-z0-9._-`, 1-100 characters, not
//! starting with `.`):
//!
//! | NSID | key | holds |
//! |---|---|---|
//! | `dev.atbench.knot.repo` | `<repo>` | `name`, `head` (the ref HEAD points to), `objectFormat` (`sha1`), `createdAt` |
//! | `dev.atbench.knot.ref` | `<repo>:<encoded ref>` | `repo`, `ref` (full name), `target` (object id, 40 hex), `previous` (the target it replaced; absent on create), `packs`: `[{pack, tip}]` newest first |
//! | `dev.atbench.knot.pack` | `<repo>:<sha-256 of the pack, hex>` | `repo`, `sha256`, `size`, `objects`, `parts` (blob refs, in order), `prerequisites`, `tips`, `createdAt` |
//!
//! Byte-level rules:
//! - **Ref key**: `<repo>:` then the ref name byte by byte: `A-Za-z0-9._-`
//!   as is, `/` as `:`, any other byte as `~XX` (upper-case hex). git
//!   forbids `:` and `~` in ref names, so the encoding is one-to-one. When
//!   the key would pass 512 characters it is `<repo>:~~<sha-256 of the
//!   ref name, lower-case hex>`. Keys are never decoded (the record holds
//!   the name); all keys of one repository share the prefix `<repo>:`, so
//!   one ascending `listRecords` from that cursor reads them
//!   ([`names`]).
//! - **Pack**: the bytes `git pack-objects --revs --stdout
//!   --delta-base-offset` wrote (version 2, self-contained: no thin
//!   deltas), split into parts of exactly 4 MiB (4,194,304 bytes) but the
//!   last; each part is a blob (`application/x-git-packed-objects`, CIDv1
//!   raw codec sha-256). `size` is the sum of the parts' sizes, `sha256`
//!   the sha-256 of their concatenation, `objects` the count in the pack
//!   header. `tips`: the objects it was pushed to reach; `prerequisites`:
//!   the remote tips it was computed against (its objects' history is in
//!   the packs those tips' refs list).
//! - **Ref packs**: `{pack, tip}` entries, newest first; together they
//!   hold every object reachable from `target`. A clone holding `tip`
//!   holds every object of `pack` that `tip` needs, which is how a fetch
//!   picks the packs it lacks without reading any pack record it does not
//!   download (a pack pushed for several refs has one entry per tip). Lists
//!   grow by one entry per push; `knot compact` ([`compact`]) folds them
//!   into one pack (one entry per ref: `{new pack, target}`).
//!
//! # Writes and their order
//!
//! Parts, then the pack record (`putRecord`), then the ref record
//! (`putRecord` with `swapRecord`: the cached record's CID, or null for a
//! new ref). A helper killed at any point leaves every ref at a complete
//! pack set: unreferenced parts stay temporary blobs, and a pack record no
//! ref names is harmless. `--atomic` writes the pack record and every ref
//! in one `applyWrites` under `swapCommit`. A warm push of one ref whose
//! record this helper wrote last, while the account's commit is still the
//! one that write made (kept in the warm state), also writes the pack
//! record and the ref in one `applyWrites` under that `swapCommit` (the
//! commit guards the ref's record as `swapRecord` would); any other write
//! in between fails the swap and the push takes the path above. A push of
//! more than 8 refs reads the account's commit, then lists the refs, and
//! writes them in `applyWrites` of up to 200 under that `swapCommit`
//! (checked against the listing; a moved commit reads both again and
//! rebuilds the batch); fewer refs go one `putRecord` each, at most 8 in
//! flight. Write points (the reference
//! PDS's: create 3, update 2, delete 1; `putRecord` 2 even when it
//! creates) are announced on stderr before the first write.
//!
//! # Modules
//!
//! Public: what the binaries, knot-serve, the tests and the benches take
//! ([`compact`], [`gateway`], [`helper`], [`names`], [`records`], and
//! `proxy` with the `test-support` feature), and at the root [`Remote`],
//! [`Xrpc`], [`Credentials`], [`fetch()`], [`FetchStats`] and
//! [`KnotError`]. The rest is the crate's own.
//!
//! | module | owns |
//! |---|---|
//! | `url` | remote URL forms |
//! | [`names`] | repository names, ref keys, pack keys, raw CIDs |
//! | [`records`] | the three record types: writing and checking |
//! | `client` | the HTTP/XRPC client ([`Xrpc`]): kept-alive connections, bounded bodies, errors |
//! | `preconnect` | the PDS connection dialled ahead of the first request |
//! | `dns` | the `_atproto.<handle>` TXT query (UDP, bounded parser) |
//! | `identity` | handle → DID → DID document → PDS |
//! | `session` | credentials ([`Credentials`]), createSession / refreshSession |
//! | `state` | the warm state on disk |
//! | `remote` | one opened remote ([`Remote`]): identity, session, the record calls |
//! | `git` | the local repository through git subprocesses |
//! | `upload` | pack-objects streamed into uploaded parts |
//! | `push` | the push batch: checks, points, CAS, leases |
//! | `push::atomic` | `--atomic`: one `applyWrites` under `swapCommit` |
//! | `land` | the pack list a ref write names, rebuilt from what was read last |
//! | `fetch` | the packs a fetch lacks, streamed into index-pack ([`fetch()`]) |
//! | [`compact`] | `knot compact`: packs folded into one within a budget, resumable (its command line is the `knot` binary's) |
//! | [`helper`] | the gitremote-helpers protocol |
//! | [`gateway`] | `knot gateway`: per-branch queues landed as one push each |
//! | `trace` | phase timings on stderr (`KNOT_TRACE=1`) |
//! | `proxy` | the latency proxy that counts requests and round trips (feature `test-support`: tests and `--bench knot`) |
//! | `error` | [`KnotError`] |

mod client;
pub mod compact;
mod dns;
mod error;
mod fetch;
pub mod gateway;
mod git;
pub mod helper;
mod identity;
mod land;
pub mod names;
mod preconnect;
#[cfg(feature = "test-support")]
pub mod proxy;
mod push;
pub mod records;
mod remote;
mod session;
mod state;
mod trace;
mod upload;
mod url;

pub use client::Xrpc;
#[cfg(feature = "test-support")]
pub use dns::answer as dns_answer;
pub use error::{KnotError, RateLimit, Result};
pub use fetch::{FetchStats, fetch};
pub use remote::Remote;
pub use session::Credentials;

/// Now as an RFC 3339 UTC timestamp (the `createdAt` of our records).
pub fn now_iso() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let s = error::utc(secs);
    // "YYYY-MM-DD HH:MM:SS UTC" -> "YYYY-MM-DDTHH:MM:SS.000Z"
    format!("{}T{}.000Z", &s[..10], &s[11..19])
}
