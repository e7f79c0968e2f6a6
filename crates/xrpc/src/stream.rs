//! Response bodies produced on demand: each chunk is made by one job on
//! the read pool (its own short store read, or a read of a spool file) and
//! handed to the connection through a channel that holds a few chunks at
//! most. The producer waits on the channel, as a parked task, while the
//! client does not read: a stalled client holds no thread, no read
//! transaction (the WAL keeps checkpointing between chunks) and no more
//! than the chunks in flight.
//!
//! What a chunk is belongs to the route: a part of a getRepo export, a
//! run of listRecords records (`routes/repo.rs`), a slice of a blob
//! (`routes/blob.rs`).

use std::io::Read;
use std::sync::Arc;

use bytes::Bytes;
use store::Store;
use tokio::sync::mpsc;

use crate::app::App;
use crate::error::{XResult, XrpcError};
use crate::response::Body;

/// The size of a chunk read from a spool file, and the byte target of
/// the chunks the routes produce.
pub const CHUNK: usize = 64 << 10;

/// Chunks in flight between a producer and the connection.
const AHEAD: usize = 2;

/// A body of `first` (when given) followed by the chunks `step` produces,
/// each on the read pool: `step(store, state)` answers the next chunk and
/// the state after it, or `None` at the end. An error ends the body with
/// an error, so the client sees a truncated response, never one that
/// looks whole. A client that goes away (or is dropped at the write
/// deadline) stops the producer at its next chunk.
pub fn produced<S, F>(app: &Arc<App>, first: Option<Bytes>, state: S, step: F) -> Body
where
    S: Send + 'static,
    F: Fn(&Store, S) -> XResult<Option<(Bytes, S)>> + Send + Sync + 'static,
{
    let (tx, rx) = mpsc::channel(AHEAD);
    let app = app.clone();
    let step = Arc::new(step);
    tokio::spawn(async move {
        if let Some(first) = first
            && tx.send(Ok(first)).await.is_err()
        {
            return;
        }
        let mut state = Some(state);
        while let Some(s) = state.take() {
            let step = step.clone();
            match app.read(move |store| step(store, s)).await {
                Ok(None) => break,
                Ok(Some((chunk, next))) => {
                    if tx.send(Ok(chunk)).await.is_err() {
                        break;
                    }
                    state = Some(next);
                }
                Err(e) => {
                    let _ = tx.send(Err(std::io::Error::other(e.message))).await;
                }
            }
        }
    });
    Body::Stream(rx)
}

/// Reads until `buf` is full or the file ends; the bytes read.
fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A spool file (an unlinked temporary file, positioned at its start)
/// streamed in [`CHUNK`]s; `what` names the response in errors.
pub fn spooled(app: &Arc<App>, file: std::fs::File, what: &'static str) -> Body {
    produced(app, None, file, move |_, mut f| {
        let mut buf = vec![0u8; CHUNK];
        let n = read_full(&mut f, &mut buf)
            .map_err(|e| XrpcError::internal(format!("{what} spool: {e}")))?;
        if n == 0 {
            return Ok(None);
        }
        buf.truncate(n);
        Ok(Some((Bytes::from(buf), f)))
    })
}
