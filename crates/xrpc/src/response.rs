//! What a handler answers with: the response [`Body`] (one buffer, or a
//! stream of chunks) and the JSON answers every handler shares (`json`,
//! `ok`, `end_page`, `error`, `push_cid`). A leaf: the listener (`net.rs`)
//! serves these bodies, the routes and the firehose's upgrade build them.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use hyper::body::{Frame, SizeHint};
use tokio::sync::mpsc;

use crate::admission::Slot;
use crate::error::XrpcError;

/// A response body: one buffer, or a stream of chunks (`stream.rs`).
pub enum Body {
    /// A whole body (taken on the first poll).
    Full(Option<Bytes>),
    /// Chunks from a producer (`stream.rs`).
    Stream(mpsc::Receiver<Result<Bytes, std::io::Error>>),
    /// A heavy response's body with its admission slot (`admission.rs`):
    /// every chunk carries a share of it, so the slot is freed once the
    /// body and every chunk it gave the connection (sent, or dropped with
    /// the connection) are gone, not when the connection took the last
    /// chunk into its buffer.
    Admitted(Box<Body>, Arc<Slot>),
}

impl Body {
    /// An empty body.
    pub fn empty() -> Self {
        Body::Full(None)
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|c| c.map(|r| r.map(Frame::data))),
            Body::Admitted(b, slot) => Pin::new(b.as_mut()).poll_frame(cx).map(|f| {
                f.map(|r| {
                    r.map(|f| {
                        f.map_data(|d| {
                            slot.hold(d.len());
                            Bytes::from_owner(Held {
                                data: d,
                                slot: slot.clone(),
                            })
                        })
                    })
                })
            }),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Admitted(b, _) => b.is_end_stream(),
            b => matches!(b, Body::Full(None)),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Stream(_) => SizeHint::default(),
            Body::Admitted(b, _) => b.size_hint(),
        }
    }
}

/// A chunk of a heavy response with its share of the slot; its bytes are
/// counted as held ([`Slot::hold`]) until it is freed.
struct Held {
    data: Bytes,
    slot: Arc<Slot>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.slot.release(self.data.len());
    }
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

const JSON: HeaderValue = HeaderValue::from_static("application/json; charset=utf-8");

/// A JSON answer.
pub fn json(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Body::Full(Some(body.into())));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, JSON);
    r
}

/// A 200 JSON answer streamed from `body`.
pub fn ok_stream(body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    r.headers_mut().insert(header::CONTENT_TYPE, JSON);
    r
}

/// A 200 JSON answer.
pub fn ok(body: impl Into<Bytes>) -> Response<Body> {
    json(StatusCode::OK, body)
}

/// Ends a page of a list answer whose items array is open in `s`: `]`,
/// then `,"cursor":<the last item's key, as JSON>` when the page is full
/// (another may follow), then `}`; answered 200.
pub fn end_page<T>(
    mut s: String,
    page: &[T],
    limit: usize,
    key: impl FnOnce(&T, &mut String),
) -> Response<Body> {
    s.push(']');
    if let (true, Some(last)) = (page.len() == limit, page.last()) {
        s.push_str(",\"cursor\":");
        key(last, &mut s);
    }
    s.push('}');
    ok(s)
}

/// A CID as a JSON string.
pub fn push_cid(cid: &::repo::Cid, s: &mut String) {
    s.push('"');
    cid.push_str(s);
    s.push('"');
}

/// An error answer.
pub fn error(e: &XrpcError) -> Response<Body> {
    json(e.status, e.body())
}
