//! Admission of heavy responses: the routes whose answer may be large or
//! take a store scan (getRepo, getBlob, listBlobs, listRecords,
//! sync.getRecord) run only while a slot is free, per client address and
//! in total. This module owns the counts; a [`Slot`] is shared by the
//! response body and every chunk it hands the connection
//! (`Body::Admitted`), so a client that stops reading keeps its slot
//! until the write deadline drops its connection.
//!
//! Past the per-address cap the answer is 429 `RateLimitExceeded`, past
//! the total 503 `NotEnoughResources`, both with `Retry-After`, before the
//! handler runs: a refused request costs the server no store work.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use http::StatusCode;

use crate::error::XrpcError;

/// The seconds a refused client is told to wait.
pub const RETRY_AFTER_SECS: u64 = 1;

/// Whether `method` (the XRPC method name) is a heavy response.
pub fn is_heavy(method: &str) -> bool {
    matches!(
        method,
        "com.atproto.sync.getRepo"
            | "com.atproto.sync.getBlob"
            | "com.atproto.sync.listBlobs"
            | "com.atproto.sync.getRecord"
            | "com.atproto.sync.getBlocks"
            | "com.atproto.repo.listRecords"
            | "com.atproto.space.getRepo"
            | "com.atproto.space.getBlob"
    )
}

#[derive(Default)]
struct Counts {
    total: usize,
    by_addr: HashMap<IpAddr, usize>,
}

/// The heavy responses in flight.
pub struct Admission {
    per_addr: usize,
    total: usize,
    counts: Mutex<Counts>,
    /// Bytes of the chunks their bodies handed to connections and that
    /// are not freed yet ([`Slot::hold`]).
    held: AtomicUsize,
}

/// One heavy response in flight; its drop frees the slot.
pub struct Slot {
    owner: Arc<Admission>,
    addr: IpAddr,
}

impl Admission {
    /// At most `per_addr` heavy responses per client address and `total`
    /// in all (each at least one).
    pub fn new(per_addr: usize, total: usize) -> Arc<Admission> {
        Arc::new(Admission {
            per_addr: per_addr.max(1),
            total: total.max(1),
            counts: Mutex::new(Counts::default()),
            held: AtomicUsize::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot for one heavy response from `addr`, or the refusal.
    pub fn admit(self: &Arc<Self>, addr: IpAddr) -> Result<Slot, XrpcError> {
        let mut c = self.lock();
        let mine = c.by_addr.get(&addr).copied().unwrap_or(0);
        if mine >= self.per_addr {
            return Err(XrpcError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "RateLimitExceeded",
                format!(
                    "{} large responses already in flight for this address",
                    self.per_addr
                ),
            ));
        }
        if c.total >= self.total {
            return Err(XrpcError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "NotEnoughResources",
                format!("{} large responses already in flight", self.total),
            ));
        }
        c.total += 1;
        *c.by_addr.entry(addr).or_insert(0) += 1;
        Ok(Slot {
            owner: self.clone(),
            addr,
        })
    }

    /// Bytes the heavy responses' chunks hold now ([`Slot::hold`]).
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Heavy responses in flight (all addresses).
    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.lock().total
    }
}

impl Slot {
    /// Counts `n` bytes a chunk of this response holds, until
    /// [`Slot::release`].
    pub fn hold(&self, n: usize) {
        self.owner.held.fetch_add(n, Ordering::Relaxed);
    }

    /// Uncounts what [`Slot::hold`] counted.
    pub fn release(&self, n: usize) {
        self.owner.held.fetch_sub(n, Ordering::Relaxed);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.owner.lock();
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.by_addr.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                c.by_addr.remove(&self.addr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_per_address_then_in_total_and_frees_on_drop() {
        let a = Admission::new(2, 3);
        let x: IpAddr = [10, 0, 0, 1].into();
        let y: IpAddr = [10, 0, 0, 2].into();
        let s1 = a.admit(x).unwrap();
        let _s2 = a.admit(x).unwrap();
        assert_eq!(a.admit(x).err().unwrap().status, 429);
        let _s3 = a.admit(y).unwrap();
        assert_eq!(a.admit(y).err().unwrap().status, 503);
        drop(s1);
        assert_eq!(a.in_flight(), 2);
        a.admit(x).unwrap();
        assert_eq!(a.in_flight(), 2);
    }
}
