//! A connection's socket with a write deadline: a write that makes no
//! progress for [`ServerConfig::write_stall`](crate::ServerConfig::write_stall)
//! fails with `TimedOut`, so hyper drops the connection and whatever
//! response it was sending (a client that stops reading holds the
//! server's buffers for that long at most). Reads pass through: the
//! request head has hyper's own timeout, a body its deadline
//! (`request.rs`). An upgraded connection (the firehose) takes the socket
//! back out ([`Stalling::into_inner`]): its subscriber has its own
//! bounds.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// See the module doc.
pub struct Stalling {
    io: TcpStream,
    limit: Duration,
    /// Running while a write waits for the socket.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl Stalling {
    /// `io` whose writes may wait at most `limit` for the socket.
    pub fn new(io: TcpStream, limit: Duration) -> Self {
        Stalling {
            io,
            limit,
            stalled: None,
        }
    }

    /// The socket.
    pub fn into_inner(self) -> TcpStream {
        self.io
    }

    /// Ends a write's wait: `Ready` passes through (and resets the
    /// deadline), `Pending` arms it and fails once it passed.
    fn check<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match r {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let limit = self.limit;
                let sleep = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("the client read nothing for {limit:?}"),
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl AsyncRead for Stalling {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stalling {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.check(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.check(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        self.check(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
