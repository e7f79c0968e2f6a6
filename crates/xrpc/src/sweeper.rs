//! The store's sweep on a timer: every
//! [`ServerConfig::sweep_interval`](crate::ServerConfig::sweep_interval)
//! the server runs [`store::Store::sweep`] with
//! [`ServerConfig::sweep`](crate::ServerConfig::sweep) on the blocking
//! pool: uploads no record named within their grace are deleted (getBlob
//! then answers `BlobNotFound`), and events past the log's retention are
//! pruned (a subscribeRepos cursor before the new horizon is told
//! `#info OutdatedCursor`). Blobs whose last reference a commit dropped
//! are freed by that commit, not here. A failed pass is logged and the
//! next one tries again; the task ends when the server stops.

use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::watch;

use crate::app::App;

/// Runs the sweep every interval until `stop` turns true.
pub(crate) async fn run(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    if app.store.is_read_only() {
        return;
    }
    let mut tick = tokio::time::interval(app.config.sweep_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate: a pass at startup.
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        // A pass stopped by its bound (a backlog of old events or
        // uploads) is followed by another at once; each is one writer
        // job, so commits run between them.
        loop {
            let store = app.store.clone();
            let rules = app.config.sweep.clone();
            let pass =
                tokio::task::spawn_blocking(move || store.sweep(SystemTime::now(), &rules)).await;
            match pass {
                Ok(Ok(swept)) if swept.more && !*stop.borrow() => continue,
                Ok(Ok(_)) => {}
                Ok(Err(e)) => eprintln!("atpds: sweep failed: {e}"),
                Err(e) => eprintln!("atpds: sweep failed: {e}"),
            }
            break;
        }
    }
}
