//! One link between an agent and a host (DESIGN.md §1–§2): a Unix stream split into
//! tokio's own halves and framed with [`FrameCodec`] on both sides. One loop serves both
//! ends — frames in go to the end's [`Policy`], queued frames go out — and each end says
//! what happens at the edges. A Windows named pipe would plug in here.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};

use crate::wire::frame::{FrameCodec, FrameError, MAX_INBOUND};

pub mod handshake;

/// What one end of a link does with what the other end sends.
pub trait Policy: Send {
    /// A frame from the peer. `false` ends the link from our side.
    fn frame(&mut self, frame: Bytes) -> impl Future<Output = bool> + Send;

    /// The peer broke the framing (DESIGN.md §2: this link closes). Returns a last frame
    /// to tell the peer why, if any.
    fn bad_frame(&mut self, err: &FrameError) -> Option<Bytes>;

    /// `len` bytes of a queued frame were written.
    fn written(&mut self, _len: usize) {}

    /// When our queue ends: how long to keep reading after ending our side, so that the
    /// peer reads what we wrote last before the socket closes (closing a Unix socket with
    /// unread input resets it). `None` closes at once.
    fn linger(&self) -> Option<Duration>;
}

/// Which side ended the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The peer closed, broke the framing, or stopped taking our frames.
    ByPeer,
    /// Our queue ended, or the policy stopped it.
    ByUs,
}

/// Runs the link until one side ends it.
pub async fn run(
    stream: UnixStream,
    queue: mpsc::UnboundedReceiver<Bytes>,
    policy: &mut impl Policy,
) -> Ended {
    let (read, write) = stream.into_split();
    run_halves(read, write, queue, policy).await
}

/// As [`run`], on the two halves of a stream (one wrapped to watch what comes in, say).
pub async fn run_halves(
    read: impl AsyncRead + Unpin + Send,
    write: impl AsyncWrite + Unpin + Send,
    mut queue: mpsc::UnboundedReceiver<Bytes>,
    policy: &mut impl Policy,
) -> Ended {
    let mut frames = FramedRead::new(read, FrameCodec::new(MAX_INBOUND));
    let mut sink = FramedWrite::new(write, FrameCodec::new(MAX_INBOUND));
    loop {
        tokio::select! {
            frame = frames.next() => match frame {
                Some(Ok(bytes)) => {
                    if !policy.frame(bytes).await {
                        return Ended::ByUs;
                    }
                }
                Some(Err(err)) => {
                    if let Some(why) = policy.bad_frame(&err) {
                        let _ = sink.send(why).await;
                    }
                    return Ended::ByPeer;
                }
                None => return Ended::ByPeer,
            },
            out = queue.recv() => match out {
                Some(bytes) => {
                    let len = bytes.len();
                    if let Err(err) = sink.send(bytes).await {
                        tracing::debug!("link write failed: {err}");
                        return Ended::ByPeer;
                    }
                    policy.written(len);
                }
                None => {
                    if let Some(linger) = policy.linger() {
                        let _ = sink.get_mut().shutdown().await;
                        let drain = async { while let Some(Ok(_)) = frames.next().await {} };
                        let _ = tokio::time::timeout(linger, drain).await;
                    }
                    return Ended::ByUs;
                }
            },
        }
    }
}
