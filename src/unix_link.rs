//! A link's Unix socket, split into a reading half and a writing half that waits for room
//! to write only while a write would block.
//!
//! Why not tokio's own halves: tokio registers a socket for reading and writing at once,
//! and Linux signals a Unix stream socket writable every time its peer reads from it (for
//! a pipe, only when it was full). So each frame the other end read woke this process once
//! for nothing: a context switch and an epoll round per frame, on both ends of the link,
//! in the path of every question (BENCHMARKS.md). Here the socket is registered for
//! reading only; the writing half registers a second descriptor for writing when the
//! socket is full, and drops it once a write goes through.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// Splits a connected stream. Like tokio's owned halves, the peer sees end-of-stream when
/// the writing half is dropped.
pub fn split(stream: tokio::net::UnixStream) -> io::Result<(LinkRead, LinkWrite)> {
    // Still non-blocking: tokio set that on the file description, which both halves share.
    let stream = stream.into_std()?;
    let write = LinkWrite {
        stream: stream.try_clone()?,
        room: None,
    };
    let read = LinkRead {
        fd: register(stream, Interest::READABLE)?,
    };
    Ok((read, write))
}

pub struct LinkRead {
    fd: AsyncFd<UnixStream>,
}

impl AsyncRead for LinkRead {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let room = unfilled.len();
            match guard.get_inner().read(unfilled) {
                Ok(read) => {
                    // Less than asked for: the socket is empty now, so the next read
                    // waits for more rather than trying a read that would block.
                    if read > 0 && read < room {
                        guard.clear_ready();
                    }
                    buf.advance(read);
                    return Poll::Ready(Ok(()));
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => guard.clear_ready(),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Poll::Ready(Err(err)),
            }
        }
    }
}

pub struct LinkWrite {
    stream: UnixStream,
    /// Registered for writability only while the socket is full.
    room: Option<AsyncFd<UnixStream>>,
}

impl AsyncWrite for LinkWrite {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            match (&self.stream).write(buf) {
                Ok(written) => {
                    self.room = None;
                    return Poll::Ready(Ok(written));
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                Err(err) => return Poll::Ready(Err(err)),
            }
            let room = match self.room.take() {
                Some(room) => room,
                // Registering reports the socket's state as it is now, so room made
                // since the failed write is not missed.
                None => register(self.stream.try_clone()?, Interest::WRITABLE)?,
            };
            ready!(self.room.insert(room).poll_write_ready(cx))?.clear_ready();
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Nothing is buffered here.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(shut_down(&self.stream))
    }
}

impl Drop for LinkWrite {
    fn drop(&mut self) {
        let _ = shut_down(&self.stream);
    }
}

/// Registers a socket with tokio's reactor for `interest` only.
#[allow(unsafe_code)]
fn register(stream: UnixStream, interest: Interest) -> io::Result<AsyncFd<UnixStream>> {
    // SAFETY: a std `UnixStream` owns its descriptor, which stays open and refers to the
    // same socket until the stream is dropped, and the `AsyncFd` owns the stream.
    Ok(unsafe { AsyncFd::register_with_interest(stream, interest) }?)
}

/// Ends our direction of the stream; already ended or disconnected is no error.
fn shut_down(stream: &UnixStream) -> io::Result<()> {
    match stream.shutdown(Shutdown::Write) {
        Err(err) if err.kind() == io::ErrorKind::NotConnected => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn pair() -> (LinkRead, LinkWrite, tokio::net::UnixStream) {
        let (ours, theirs) = tokio::net::UnixStream::pair().expect("socket pair");
        let (read, write) = split(ours).expect("split");
        (read, write, theirs)
    }

    #[tokio::test]
    async fn bytes_cross_both_ways_and_dropping_the_writer_ends_the_stream() {
        let (mut read, mut write, mut theirs) = pair().await;
        write.write_all(b"ask").await.expect("write");
        let mut got = [0u8; 3];
        theirs.read_exact(&mut got).await.expect("their read");
        assert_eq!(&got, b"ask");
        theirs.write_all(b"answer").await.expect("their write");
        let mut got = [0u8; 6];
        read.read_exact(&mut got).await.expect("read");
        assert_eq!(&got, b"answer");
        drop(write);
        let mut rest = Vec::new();
        theirs
            .read_to_end(&mut rest)
            .await
            .expect("their read to end");
        assert!(rest.is_empty(), "nothing after the end: {rest:?}");
    }

    #[tokio::test]
    async fn a_full_socket_makes_the_writer_wait_until_the_peer_reads() {
        let (_read, mut write, mut theirs) = pair().await;
        // Far more than a socket buffer holds, so the writer must wait for room.
        let sent: Vec<u8> = (0..4 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
        let expected = sent.clone();
        let writer = tokio::spawn(async move {
            write.write_all(&sent).await.expect("write all");
            write
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!writer.is_finished(), "4 MiB fitted in the socket buffer");
        let mut received = vec![0u8; expected.len()];
        theirs.read_exact(&mut received).await.expect("their read");
        assert!(
            received == expected,
            "bytes arrived changed or out of order"
        );
        let write = writer.await.expect("writer task");
        assert!(
            write.room.is_none(),
            "still registered for room after writing"
        );
    }

    #[tokio::test]
    async fn writing_to_a_closed_peer_is_an_error_not_a_hang() {
        let (_read, mut write, theirs) = pair().await;
        drop(theirs);
        let err = write.write_all(b"anyone?").await.expect_err("peer is gone");
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe, "{err}");
    }
}
