//! One `com.atproto.sync.subscribeRepos` subscriber: the WebSocket
//! upgrade (refused past the connection limit), `FutureCursor` for a cursor
//! past the head, `#info OutdatedCursor` for one before the log's start,
//! replay from the store, cut-over to the hub
//! (`firehose.rs`), the live loop (outbox to socket, pings), a return to
//! replay when the hub's ring let go of frames before they were sent, and
//! the goodbyes: `ConsumerTooSlow` then close 1008 for one that fell
//! behind its outbox, 1001 when the server shuts down.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::request::Parts;
use http::{HeaderValue, Response, StatusCode, header};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use repo::firehose::{ErrorFrame, Frame};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};

use crate::app::App;
use crate::error::{XResult, XrpcError};
use crate::firehose::{Outbox, Replay, Shared, Slot, Step, Stopped};
use crate::params::Params;
use crate::response::Body;
use crate::stall::Stalling;

/// Events per replay page read from the store.
const REPLAY_PAGE: usize = 512;
/// Frame bytes per replay page, at most (plus one frame): a replay of
/// large commits holds this much per subscriber, not a page of them.
const REPLAY_BYTES: usize = 4 << 20;
/// Frames moved from the outbox per wake.
const BATCH: usize = 256;
/// How long a goodbye (error frame and close) may take to send.
const GOODBYE: Duration = Duration::from_secs(10);

type Ws = WebSocketStream<tokio::net::TcpStream>;
type Tx = futures_util::stream::SplitSink<Ws, Message>;

fn header_has(parts: &Parts, name: header::HeaderName, token: &str) -> bool {
    parts
        .headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().eq_ignore_ascii_case(token))
}

/// Answers the upgrade request and starts the subscriber.
pub fn upgrade(app: &Arc<App>, parts: &mut Parts) -> XResult<Response<Body>> {
    let p = Params::parse(parts.uri.query())?;
    let cursor = match p.get("cursor") {
        None | Some("") => None,
        Some(_) => Some(p.int("cursor", 0, i64::MAX, 0)?),
    };
    if !header_has(parts, header::UPGRADE, "websocket")
        || !header_has(parts, header::CONNECTION, "upgrade")
    {
        return Err(XrpcError::invalid(
            "subscribeRepos is a WebSocket endpoint: expected an upgrade",
        ));
    }
    let key = parts
        .headers
        .get(header::SEC_WEBSOCKET_KEY)
        .ok_or_else(|| XrpcError::invalid("missing Sec-WebSocket-Key"))?;
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let slot = app.hub.slot().ok_or_else(|| {
        XrpcError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "TooManySubscribers",
            format!(
                "the server takes at most {} subscribers",
                app.config.max_subscribers
            ),
        )
    })?;
    let on_upgrade = parts
        .extensions
        .remove::<OnUpgrade>()
        .ok_or_else(|| XrpcError::internal("connection cannot be upgraded"))?;
    let app2 = app.clone();
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let config = WebSocketConfig::default()
            .max_message_size(Some(64 << 10))
            .max_frame_size(Some(64 << 10));
        // The socket itself (hyper hands it back with any bytes it read
        // past the request), so its send buffer can be bounded: with the
        // kernel's autotuning, megabytes of frames would queue there
        // before the outbox bound applies to a slow subscriber.
        let Ok(parts) = upgraded.downcast::<TokioIo<Stalling>>() else {
            return;
        };
        let tcp = parts.io.into_inner().into_inner();
        if app2.config.subscriber_send_buffer > 0 {
            let _ = socket2::SockRef::from(&tcp)
                .set_send_buffer_size(app2.config.subscriber_send_buffer);
        }
        let ws = WebSocketStream::from_partially_read(
            tcp,
            parts.read_buf.to_vec(),
            Role::Server,
            Some(config),
        )
        .await;
        run(app2, ws, cursor, slot).await;
    });
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(
        header::SEC_WEBSOCKET_ACCEPT,
        HeaderValue::try_from(accept).map_err(|e| XrpcError::internal(e.to_string()))?,
    );
    Ok(r)
}

/// Sends an error frame, then a close with `code`.
async fn goodbye(tx: &mut Tx, error: &str, message: &str, code: CloseCode) {
    let frame = Frame::Error(ErrorFrame {
        error,
        message: Some(message),
    })
    .to_vec();
    let _ = tokio::time::timeout(GOODBYE, async {
        tx.send(Message::Binary(Bytes::from(frame))).await?;
        tx.send(Message::Close(Some(CloseFrame {
            code,
            reason: error.into(),
        })))
        .await
    })
    .await;
}

/// A cursor before the log's first event (`Store::first_seq`: events
/// removed outside the store) is told with `#info OutdatedCursor`, the
/// reference's frame, and the replay goes on from the first event held.
/// `false`: the subscriber is gone (or the read failed and it was told).
async fn outdated_cursor_told(app: &Arc<App>, tx: &mut Tx, cursor: i64) -> bool {
    let store = app.store.clone();
    let first = match app.reads.run(move || Ok(store.first_seq()?)).await {
        Ok(f) => f,
        Err(_) => {
            goodbye(tx, "InternalError", "replay failed", CloseCode::Error).await;
            return false;
        }
    };
    match first {
        Some(first) if cursor < first - 1 => {
            let frame = Frame::Info(repo::firehose::InfoEvent {
                name: "OutdatedCursor",
                message: Some("Requested cursor exceeded limit. Possibly missing events"),
            })
            .to_vec();
            tx.send(Message::Binary(Bytes::from(frame))).await.is_ok()
        }
        _ => true,
    }
}

async fn close(tx: &mut Tx, code: CloseCode, reason: &str) {
    let _ = tokio::time::timeout(
        GOODBYE,
        tx.send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        }))),
    )
    .await;
}

/// Detaches the outbox from the hub however the subscriber ends.
struct Attached<'a> {
    app: &'a App,
    outbox: Arc<Outbox>,
}

impl Drop for Attached<'_> {
    fn drop(&mut self) {
        self.app.hub.detach(&self.outbox);
    }
}

enum End {
    Gone,
    TooSlow,
    /// The hub's ring let go of frames before they were sent: replay
    /// from the store after this seq.
    Behind(i64),
    Closing,
}

async fn run(app: Arc<App>, ws: Ws, cursor: Option<i64>, _slot: Slot) {
    let (mut tx, mut rx) = ws.split();
    let hub = app.hub.clone();
    if let Some(c) = cursor
        && c > hub.head()
    {
        goodbye(
            &mut tx,
            "FutureCursor",
            "Cursor in the future.",
            CloseCode::Policy,
        )
        .await;
        return;
    }
    if let Some(c) = cursor
        && !outdated_cursor_told(&app, &mut tx, c).await
    {
        return;
    }
    let mut replay = Replay::new(cursor);
    let end = loop {
        let Some((outbox, backlog)) = cut_over(&app, &mut tx, &mut replay).await else {
            return;
        };
        let attached = Attached {
            app: &app,
            outbox: outbox.clone(),
        };
        let end = live(&app, &mut tx, &mut rx, &outbox, backlog, replay.last()).await;
        drop(attached);
        match end {
            // A live-only subscriber that sent nothing yet is owed what
            // followed its attach.
            End::Behind(i64::MIN) => replay = Replay::new(Some(outbox.from())),
            End::Behind(last) => replay = Replay::new(Some(last)),
            end => break end,
        }
    };
    match end {
        End::TooSlow => {
            goodbye(
                &mut tx,
                "ConsumerTooSlow",
                "Stream consumer too slow",
                CloseCode::Policy,
            )
            .await
        }
        End::Closing => close(&mut tx, CloseCode::Away, "server shutting down").await,
        End::Gone | End::Behind(_) => {}
    }
}

/// Replays store pages until the hub takes the subscriber; its outbox
/// and backlog (`None`: the subscriber is gone or was sent away).
async fn cut_over(
    app: &Arc<App>,
    tx: &mut Tx,
    replay: &mut Replay,
) -> Option<(Arc<Outbox>, Vec<Shared>)> {
    loop {
        if app.hub.is_closing() {
            close(tx, CloseCode::Away, "server shutting down").await;
            return None;
        }
        match replay.step(&app.hub) {
            Step::Live(o, b) => return Some((o, b)),
            Step::Read { after, .. } => {
                let store = app.store.clone();
                let page = app
                    .reads
                    .run(move || Ok(store.events_after_within(after, REPLAY_PAGE, REPLAY_BYTES)?))
                    .await;
                let Ok(events) = page else {
                    goodbye(tx, "InternalError", "replay failed", CloseCode::Error).await;
                    return None;
                };
                for e in replay.page(events) {
                    if tx
                        .feed(Message::Binary(Bytes::from(e.frame)))
                        .await
                        .is_err()
                    {
                        return None;
                    }
                }
                tx.flush().await.ok()?;
            }
        }
    }
}

/// How the live loop ends when its outbox stopped.
fn stopped(why: Stopped, last: i64) -> End {
    match why {
        Stopped::TooSlow => End::TooSlow,
        Stopped::Behind => End::Behind(last),
    }
}

async fn live(
    app: &App,
    tx: &mut Tx,
    rx: &mut futures_util::stream::SplitStream<Ws>,
    outbox: &Outbox,
    backlog: Vec<Shared>,
    mut last: i64,
) -> End {
    let hub = &app.hub;
    let mut ping = tokio::time::interval(app.config.ping_interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ping.tick().await;
    let mut unanswered = 0u32;
    let mut batch = backlog;
    // Registered at its first poll and kept across the loop, so a close
    // that lands between the `is_closing` check and the wait still wakes it.
    let closing = hub.closing();
    tokio::pin!(closing);
    loop {
        if hub.is_closing() {
            return End::Closing;
        }
        if batch.is_empty()
            && let Err(why) = outbox.take(&mut batch, BATCH)
        {
            return stopped(why, last);
        }
        if batch.is_empty() {
            tokio::select! {
                _ = outbox.ready.notified() => {}
                _ = outbox.stopped.notified() => continue,
                _ = &mut closing => return End::Closing,
                msg = rx.next() => match msg {
                    Some(Ok(Message::Pong(_))) => unanswered = 0,
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return End::Gone,
                    Some(Ok(_)) => {}
                },
                _ = ping.tick() => {
                    if unanswered >= 2 {
                        return End::Gone;
                    }
                    unanswered += 1;
                    if tx.send(Message::Ping(Bytes::new())).await.is_err() {
                        return End::Gone;
                    }
                }
            }
            continue;
        }
        // The whole batch (its feeds and the flush) races one wait for
        // the stop signal: one `Notified` per batch, not per frame.
        // `last` moves only once a frame is in the socket's buffer, so a
        // subscriber sent back to replay resumes after what it was sent.
        let sent = &mut last;
        let send = async {
            for f in batch.drain(..) {
                if f.seq <= *sent {
                    continue;
                }
                let seq = f.seq;
                tx.feed(Message::Binary(f.bytes)).await?;
                *sent = seq;
            }
            tx.flush().await
        };
        let mut stop = false;
        tokio::select! {
            r = send => if r.is_err() { return End::Gone },
            _ = outbox.stopped.notified() => stop = true,
            _ = &mut closing => return End::Closing,
        }
        if stop {
            // `take` says why, at the top of the loop.
            batch.clear();
            continue;
        }
        // Data is flowing: the peer is reading, which is liveness enough.
        unanswered = 0;
    }
}
