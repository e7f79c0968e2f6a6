//! The account's budget: token buckets in front of the PDS's limits, so a
//! flood of pushes waits here instead of tripping 429s there.
//!
//! The PDS counts fixed windows that start at a key's first charge
//! (`docs/design/knot.md`: write points 5,000 an hour and 35,000 a day per
//! account, create 3, update 2, delete 1; uploadBlob 1,000 a day; every
//! request 3,000 per 5 minutes). A bucket of burst `b` refilled at `r`
//! spends at most `b + r·W` in any span of `W`, so each limit `L` per `W`
//! gets `b = L/2` and `r = L/(2W)`: no window the PDS could draw, fixed or
//! sliding, sees more than `L`, whatever the phase. The price is half the
//! sustained rate, which a gateway that lands a whole queue per flush can
//! afford.

use std::str::FromStr;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

/// One limit: `points` per `window`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// Points per window.
    pub points: u32,
    /// The window.
    pub window: Duration,
}

/// A limit that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("limit {0:?}: expected <points>/<seconds>, both positive integers")]
pub struct BadLimit(String);

impl FromStr for Limit {
    type Err = BadLimit;

    /// `<points>/<seconds>`, as `5000/3600`.
    fn from_str(s: &str) -> Result<Limit, BadLimit> {
        let bad = || BadLimit(s.chars().take(100).collect());
        let (p, w) = s.split_once('/').ok_or_else(bad)?;
        let points: u32 = p.trim().parse().map_err(|_| bad())?;
        let secs: u64 = w.trim().parse().map_err(|_| bad())?;
        if points == 0 || secs == 0 || secs > 366 * 86_400 {
            return Err(bad());
        }
        Ok(Limit {
            points,
            window: Duration::from_secs(secs),
        })
    }
}

#[derive(Debug)]
struct Bucket {
    cap: f64,
    per_sec: f64,
    level: f64,
    at: Instant,
}

impl Bucket {
    fn new(l: Limit, now: Instant) -> Bucket {
        let cap = f64::from(l.points) / 2.0;
        Bucket {
            cap,
            per_sec: cap / l.window.as_secs_f64(),
            level: cap,
            at: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.level = (self.level + dt * self.per_sec).min(self.cap);
        self.at = now;
    }

    /// How long until `cost` is available (`None`: never, the cost is
    /// above the burst).
    fn wait_for(&self, cost: f64) -> Option<Duration> {
        if cost > self.cap {
            return None;
        }
        let short = (cost - self.level).max(0.0);
        Some(Duration::from_secs_f64(short / self.per_sec))
    }
}

/// The buckets of one kind of charge (write points, uploads, requests).
#[derive(Debug)]
pub struct Budget {
    kinds: Mutex<Vec<(Kind, Bucket)>>,
}

/// What a charge spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Record-write points.
    Points,
    /// uploadBlob calls.
    Uploads,
    /// XRPC requests.
    Requests,
}

/// A charge no bucket can ever hold.
#[derive(Debug, thiserror::Error)]
#[error("a flush costs {cost} {kind:?}, above the burst of the limit {points}/{secs}s")]
pub struct TooCostly {
    /// The kind.
    pub kind: Kind,
    /// What was asked.
    pub cost: u32,
    /// The limit's points.
    pub points: u32,
    /// Its window.
    pub secs: u64,
}

impl Budget {
    /// Buckets for `limits` (any number per kind; each must allow a charge).
    pub fn new(limits: &[(Kind, Limit)]) -> Budget {
        let now = Instant::now();
        Budget {
            kinds: Mutex::new(
                limits
                    .iter()
                    .map(|(k, l)| (*k, Bucket::new(*l, now)))
                    .collect(),
            ),
        }
    }

    /// Takes `costs` from every bucket of their kinds at once, waiting
    /// until all of them hold enough. Returns the time waited.
    pub async fn take(&self, costs: &[(Kind, u32)]) -> Result<Duration, TooCostly> {
        let start = Instant::now();
        // One charge at a time: the lock is held across the wait, so
        // charges are served in order and none starves.
        let mut g = self.kinds.lock().await;
        loop {
            let now = Instant::now();
            let mut wait = Duration::ZERO;
            for (k, b) in g.iter_mut() {
                b.refill(now);
                for (ck, c) in costs {
                    if ck == k {
                        let w = b.wait_for(f64::from(*c)).ok_or(TooCostly {
                            kind: *k,
                            cost: *c,
                            points: (b.cap * 2.0) as u32,
                            secs: ((b.cap / b.per_sec) * 2.0).round() as u64,
                        })?;
                        wait = wait.max(w);
                    }
                }
            }
            if wait.is_zero() {
                for (k, b) in g.iter_mut() {
                    for (ck, c) in costs {
                        if ck == k {
                            b.level -= f64::from(*c);
                        }
                    }
                }
                return Ok(start.elapsed());
            }
            // A hair more: the refill must cover the cost when we wake.
            tokio::time::sleep(wait + Duration::from_millis(1)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse() {
        let l: Limit = "5000/3600".parse().unwrap();
        assert_eq!(l.points, 5000);
        assert_eq!(l.window, Duration::from_secs(3600));
        for bad in ["", "5000", "0/10", "10/0", "x/1", "1/x", "-1/5"] {
            assert!(bad.parse::<Limit>().is_err(), "{bad}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn no_window_sees_more_than_the_limit() {
        let limit = Limit {
            points: 40,
            window: Duration::from_secs(10),
        };
        let b = Budget::new(&[(Kind::Points, limit)]);
        let t0 = Instant::now();
        let mut spent: Vec<(Duration, u32)> = Vec::new();
        for _ in 0..60 {
            b.take(&[(Kind::Points, 5)]).await.unwrap();
            spent.push((t0.elapsed(), 5));
        }
        // Every window of 10 s, starting at any charge, holds at most 40.
        for (i, (start, _)) in spent.iter().enumerate() {
            let sum: u32 = spent[i..]
                .iter()
                .take_while(|(t, _)| *t < *start + limit.window)
                .map(|(_, c)| c)
                .sum();
            assert!(sum <= 40, "window from {start:?} spent {sum}");
        }
        // And the flood waited rather than failing: 60 charges of 5 at
        // 2 points a second after a burst of 20.
        assert!(t0.elapsed() >= Duration::from_secs(140));
        assert!(
            b.take(&[(Kind::Points, 21)]).await.is_err(),
            "above the burst"
        );
    }
}
