//! The read pool: a fixed set of threads (one per core by default) that
//! run the store's short reads (getRecord, listRecords, the sync reads),
//! so they stay off the async threads without paying for tokio's blocking
//! pool on every request.
//!
//! Why not `spawn_blocking` for reads: its pool grows to one thread per
//! concurrent call and wakes an idle thread for every job, so at 50
//! connections each few-microsecond read costs a futex wake and a context
//! switch on each side, more than the read itself
//! (`xrpc.route/get_record/c50`). Here a job is queued under a mutex and a
//! thread is woken only when one is idle; under load the threads are busy
//! and drain the queue back to back. Overlapping commits (see
//! `App::commit_slot`) stay on the blocking pool:
//! they wait for the store's group commit, and a fixed pool that small
//! would serialize them and defeat the batching.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

use crate::error::{XResult, XrpcError};

type Job = Box<dyn FnOnce() + Send>;

struct State {
    jobs: VecDeque<Job>,
    idle: usize,
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    cv: Condvar,
}

/// The pool; dropping it lets the threads finish the queue and exit.
pub struct Pool {
    shared: Arc<Shared>,
}

impl Pool {
    /// `threads` workers (at least one).
    pub fn new(threads: usize) -> std::io::Result<Pool> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                idle: 0,
                closed: false,
            }),
            cv: Condvar::new(),
        });
        for i in 0..threads.max(1) {
            let s = shared.clone();
            std::thread::Builder::new()
                .name(format!("atpds-read-{i}"))
                .spawn(move || work(&s))?;
        }
        Ok(Pool { shared })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on a pool thread and awaits its result.
    pub async fn run<T, F>(&self, f: F) -> XResult<T>
    where
        T: Send + 'static,
        F: FnOnce() -> XResult<T> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
        });
        let wake = {
            let mut st = self.lock();
            st.jobs.push_back(job);
            st.idle > 0
        };
        if wake {
            self.shared.cv.notify_one();
        }
        match rx.await {
            Ok(r) => r,
            Err(_) => Err(XrpcError::internal("read worker failed")),
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.lock().closed = true;
        self.shared.cv.notify_all();
    }
}

fn work(s: &Shared) {
    loop {
        let job = {
            let mut st = s.state.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(j) = st.jobs.pop_front() {
                    break j;
                }
                if st.closed {
                    return;
                }
                st.idle += 1;
                st = s.cv.wait(st).unwrap_or_else(|p| p.into_inner());
                st.idle -= 1;
            }
        };
        // A job that panics drops its sender: the caller gets an error,
        // the thread goes on.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_and_survives_a_panic() {
        let p = Pool::new(2).unwrap();
        let results =
            futures_util::future::join_all((0..100).map(|i| p.run(move || Ok(i * 2)))).await;
        assert_eq!(
            results.into_iter().map(|r| r.unwrap()).sum::<i32>(),
            (0..100).map(|i| i * 2).sum::<i32>()
        );
        let e = p.run::<(), _>(|| panic!("boom")).await;
        assert!(e.is_err());
        assert_eq!(p.run(|| Ok(7)).await.unwrap(), 7);
    }
}
