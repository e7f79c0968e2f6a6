//! One queue per (repository, branch): the ref as last landed, the
//! pushes being landed (`in_flight`) and those waiting behind them, each a
//! link of one chain from the landed tip. A push joins when it
//! fast-forwards the chain's end; otherwise its own commits are replayed
//! onto the end (`rebase.rs`) or it is refused in git's words. This module
//! owns the chain; `flush.rs` lands it.

use std::sync::Arc;

use tokio::sync::{Mutex, Notify, oneshot};

use super::rebase::{Replay, replay};
use super::scratch::Scratch;
use super::sync::mirror;
use crate::error::Result;
use crate::remote::Remote;
use crate::state::CachedRef;

/// What a writer hears back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Its commits are on the PDS; `tip` is the commit its work landed as
    /// (its own when it fast-forwarded, the replayed one when rebased).
    Landed { tip: String, rebased: bool },
    /// Refused, in git's words (`fetch first`).
    Refused(String),
    /// The gateway could not land it (its error, for the writer's stderr).
    Failed(String),
}

/// One push in a queue.
#[derive(Debug)]
pub struct Entry {
    /// The chain link it builds on (`None`: it creates the branch).
    pub base: Option<String>,
    /// The commit it lands as.
    pub tip: String,
    /// Whether `tip` is a replay of what was pushed.
    pub rebased: bool,
    /// The bytes of the pack the writer sent (upload budget).
    pub bytes: u64,
    /// Where the reply goes.
    pub reply: oneshot::Sender<Reply>,
}

impl Entry {
    /// Sends the reply (a writer that hung up is not an error).
    pub fn answer(self, r: Reply) {
        let _ = self.reply.send(r);
    }
}

/// The chain, under the queue's lock.
#[derive(Debug, Default)]
pub struct Chain {
    /// The ref record as last read or written (`None`: no such ref).
    pub landed: Option<CachedRef>,
    /// Whether the repository record exists.
    pub repo_exists: bool,
    /// Being landed by the flush in progress.
    pub in_flight: Vec<Entry>,
    /// Behind them.
    pub waiting: Vec<Entry>,
}

impl Chain {
    /// The end of the chain: what a new push must fast-forward.
    pub fn end(&self) -> Option<&str> {
        self.waiting
            .last()
            .or(self.in_flight.last())
            .map(|e| e.tip.as_str())
            .or(self.landed.as_ref().map(|l| l.record.target.as_str()))
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.in_flight.len() + self.waiting.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A queue.
pub struct Queue {
    /// The repository on the PDS.
    pub remote: Arc<Remote>,
    /// The branch (`refs/heads/…`).
    pub branch: String,
    /// The chain.
    pub chain: Mutex<Chain>,
    /// Rung when a push joins.
    pub wake: Notify,
}

/// Why a push did not join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The queue holds its bound.
    Full(usize),
    /// In git's words.
    Git(String),
}

/// Where `new` would join `end`: as is, replayed, or not at all.
pub enum Join {
    /// `new` fast-forwards `end`.
    Forward,
    /// Replayed onto `end`.
    Replayed(String),
    /// Refused (why, for the log).
    Refused(String),
}

/// Decides how `new` joins a chain ending at `end`.
pub async fn place(s: &Scratch, end: &str, new: &str) -> Result<Join> {
    if s.is_ancestor(end, new).await? {
        return Ok(Join::Forward);
    }
    Ok(match replay(s, end, end, new).await? {
        Replay::Applied { tip, .. } => Join::Replayed(tip),
        Replay::Refused(why) => Join::Refused(why),
    })
}

impl Queue {
    /// Adds the push of `new` (its objects already in `s`) to the chain;
    /// the receiver hears when it landed.
    pub async fn submit(
        &self,
        s: &Scratch,
        new: &str,
        bytes: u64,
        max_len: usize,
    ) -> Result<std::result::Result<oneshot::Receiver<Reply>, Refusal>> {
        let mut c = self.chain.lock().await;
        if c.len() >= max_len {
            return Ok(Err(Refusal::Full(max_len)));
        }
        let end = c.end().map(str::to_owned);
        if !s.complete(new, end.as_deref()).await? {
            // Built on a commit the gateway has not seen: another writer
            // landed it outside the gateway. Mirror the branch as the PDS
            // has it now, and look again.
            if let Some(r) = self.remote.read_ref(&self.branch).await? {
                mirror(&self.remote, s, &r.record).await?;
            }
            if !s.complete(new, end.as_deref()).await? {
                return Ok(Err(Refusal::Git("fetch first".into())));
            }
        }
        let (tx, rx) = oneshot::channel();
        let (base, tip, rebased) = match end {
            None => (None, new.to_owned(), false),
            Some(end) if end == new && c.is_empty() => {
                let _ = tx.send(Reply::Landed {
                    tip: new.to_owned(),
                    rebased: false,
                });
                return Ok(Ok(rx));
            }
            Some(end) => match place(s, &end, new).await? {
                Join::Forward => (Some(end), new.to_owned(), false),
                Join::Replayed(tip) => (Some(end), tip, true),
                Join::Refused(why) => {
                    eprintln!(
                        "knot gateway: {} {}: {new} refused ({why})",
                        self.remote.repo, self.branch
                    );
                    return Ok(Err(Refusal::Git("fetch first".into())));
                }
            },
        };
        c.waiting.push(Entry {
            base,
            tip,
            rebased,
            bytes,
            reply: tx,
        });
        drop(c);
        self.wake.notify_one();
        Ok(Ok(rx))
    }
}

/// After the ref moved under the gateway (a writer outside it): every
/// queued link replayed onto `to`, in order; links that no longer apply
/// hear `fetch first`. Returns how many were refused.
pub async fn replan(s: &Scratch, c: &mut Chain, to: Option<CachedRef>) -> Result<usize> {
    let links: Vec<Entry> = c.in_flight.drain(..).chain(c.waiting.drain(..)).collect();
    c.landed = to;
    let mut end = c.landed.as_ref().map(|l| l.record.target.clone());
    let mut refused = 0;
    for mut e in links {
        let Some(cur) = end.clone() else {
            // The branch is gone: the first link creates it again.
            e.base = None;
            end = Some(e.tip.clone());
            c.waiting.push(e);
            continue;
        };
        if s.is_ancestor(&cur, &e.tip).await? {
            e.base = Some(cur);
        } else {
            let exclude = e.base.clone().unwrap_or_else(|| cur.clone());
            match replay(s, &cur, &exclude, &e.tip).await? {
                Replay::Applied { tip, .. } => {
                    e.tip = tip;
                    e.rebased = true;
                    e.base = Some(cur);
                }
                Replay::Refused(_) => {
                    refused += 1;
                    e.answer(Reply::Refused("fetch first".into()));
                    continue;
                }
            }
        }
        end = Some(e.tip.clone());
        c.waiting.push(e);
    }
    Ok(refused)
}
