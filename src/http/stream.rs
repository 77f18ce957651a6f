//! A response body written after the handler returned, piece by piece (an MCP event stream that
//! waits for the user, say). The handler keeps the sending half; the server writes what arrives
//! and ends the body when the sender is dropped.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// The receiving half, carried by the response until the server takes it.
#[derive(Clone)]
pub struct Streamed(Arc<Mutex<Option<mpsc::Receiver<Bytes>>>>);

impl std::fmt::Debug for Streamed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Streamed")
    }
}

impl PartialEq for Streamed {
    fn eq(&self, other: &Streamed) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Streamed {}

impl Streamed {
    /// A body and its writer; `capacity` pieces may wait unwritten.
    pub fn channel(capacity: usize) -> (mpsc::Sender<Bytes>, Streamed) {
        let (tx, rx) = mpsc::channel(capacity);
        (tx, Streamed(Arc::new(Mutex::new(Some(rx)))))
    }

    /// The body, once (a clone of the response finds it taken).
    pub fn take(&self) -> Option<ChannelBody> {
        self.0.lock().ok()?.take().map(ChannelBody)
    }
}

/// The body hyper writes: whatever the writer sends, until it is dropped.
pub struct ChannelBody(mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|piece| piece.map(|b| Ok(Frame::data(b))))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
