//! The agent's side of a link's first exchange (DESIGN.md §3): `hello`, then the host's
//! `welcome`. Read here for the two callers that must know the host before they go on: a
//! forwarded socket, which is adopted only once a gateway has answered (agent/forward.rs),
//! and the doctor, which only asks (blocking, with the socket's own timeouts). A local host's
//! link sends `hello` first in its queue and takes the `welcome` in its loop like any later
//! one (`agent/pool.rs`): its questions need not wait for it.

use std::fmt;
use std::io::{self, Read, Write};

use tokio::io::{AsyncRead, AsyncWrite};

use crate::wire::frame::{self, FrameError, MAX_INBOUND};
use crate::wire::protocol::{self, HostToAgent, Welcome};

/// A host answers `hello` with `welcome` before anything else; a few frames of something
/// else are let pass (a later protocol may add one), more are not a host of ours.
const FRAMES_BEFORE_WELCOME: usize = 4;

/// Why no `welcome` came.
#[derive(Debug)]
pub enum NoWelcome {
    /// The other end closed the connection before its welcome.
    Closed,
    /// Reading or writing failed; with a read timeout set, a silent host shows here as
    /// `WouldBlock` or `TimedOut`.
    Io(io::Error),
    /// It answered `hello` with an error.
    Refused(String),
    /// It said something that is not our protocol.
    Garbled(String),
    /// It said other things, never `welcome`.
    Elsewhere,
}

impl NoWelcome {
    /// Whether the host was merely silent (a read timed out).
    pub fn is_silent(&self) -> bool {
        matches!(self, NoWelcome::Io(err) if matches!(err.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut))
    }

    fn from_write(err: io::Error) -> NoWelcome {
        match err.kind() {
            io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => NoWelcome::Closed,
            _ => NoWelcome::Io(err),
        }
    }

    fn from_read(err: FrameError) -> NoWelcome {
        match err {
            FrameError::Truncated { .. } => NoWelcome::Closed,
            FrameError::Io(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset
                ) =>
            {
                NoWelcome::Closed
            }
            FrameError::Io(err) => NoWelcome::Io(err),
            other => NoWelcome::Garbled(format!("a bad frame: {other}")),
        }
    }
}

impl fmt::Display for NoWelcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoWelcome::Closed => f.write_str("closed the connection without answering hello"),
            NoWelcome::Io(err) => write!(f, "the link failed: {err}"),
            NoWelcome::Refused(message) => write!(f, "answered hello with an error: {message}"),
            NoWelcome::Garbled(what) => write!(f, "answered with {what}"),
            NoWelcome::Elsewhere => f.write_str("did not answer hello with welcome"),
        }
    }
}

/// What one frame read while waiting means: the welcome, the end of the wait, or neither.
fn judge(frame: Option<Vec<u8>>) -> Option<Result<Welcome, NoWelcome>> {
    let Some(frame) = frame else {
        return Some(Err(NoWelcome::Closed));
    };
    match protocol::decode::<HostToAgent>(&frame) {
        Ok(HostToAgent::Welcome(welcome)) => Some(Ok(welcome)),
        Ok(HostToAgent::Error { message, .. }) => Some(Err(NoWelcome::Refused(message))),
        Ok(_) => None,
        Err(err) => Some(Err(NoWelcome::Garbled(format!("a bad message: {err}")))),
    }
}

/// Says `hello` (an encoded [`protocol::AgentToHost::Hello`]) and reads until the
/// `welcome`, taking no byte past it from the stream.
pub async fn welcome(
    stream: &mut (impl AsyncRead + AsyncWrite + Unpin),
    hello: &[u8],
) -> Result<Welcome, NoWelcome> {
    frame::write_frame(stream, hello)
        .await
        .map_err(NoWelcome::from_write)?;
    for _ in 0..FRAMES_BEFORE_WELCOME {
        let frame = frame::read_frame(stream, MAX_INBOUND)
            .await
            .map_err(NoWelcome::from_read)?;
        if let Some(end) = judge(frame) {
            return end;
        }
    }
    Err(NoWelcome::Elsewhere)
}

/// [`welcome`] on a blocking stream (the doctor's, with its own timeouts).
pub fn welcome_sync(stream: &mut (impl Read + Write), hello: &[u8]) -> Result<Welcome, NoWelcome> {
    frame::write_frame_sync(stream, hello).map_err(NoWelcome::from_write)?;
    for _ in 0..FRAMES_BEFORE_WELCOME {
        let frame = frame::read_frame_sync(stream, MAX_INBOUND).map_err(NoWelcome::from_read)?;
        if let Some(end) = judge(frame) {
            return end;
        }
    }
    Err(NoWelcome::Elsewhere)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(json: &str) -> Vec<u8> {
        let mut f = (json.len() as u32).to_ne_bytes().to_vec();
        f.extend_from_slice(json.as_bytes());
        f
    }

    const WELCOME: &str =
        r#"{"type":"welcome","protocol":1,"host":{"version":"0.1.0","pid":42},"panel_open":true}"#;

    #[tokio::test]
    async fn the_welcome_is_read_exactly_and_what_follows_stays_in_the_stream() {
        let (mut ours, mut theirs) = tokio::io::duplex(4096);
        let mut sent = framed(r#"{"type":"shown","id":"x"}"#);
        sent.extend(framed(WELCOME));
        sent.extend(framed(r#"{"type":"shown","id":"after"}"#));
        tokio::io::AsyncWriteExt::write_all(&mut theirs, &sent)
            .await
            .unwrap();
        let welcome = welcome(&mut ours, br#"{"type":"hello"}"#).await.unwrap();
        assert_eq!(
            (welcome.host.version.as_str(), welcome.host.pid),
            ("0.1.0", Some(42))
        );
        assert!(welcome.panel_open);
        let next = frame::read_frame(&mut ours, MAX_INBOUND)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(next, br#"{"type":"shown","id":"after"}"#);
        let hello = frame::read_frame(&mut theirs, MAX_INBOUND)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(hello, br#"{"type":"hello"}"#);
    }

    #[test]
    fn an_error_a_close_and_a_stranger_each_say_why() {
        /// Reads what the host said; what is written to it goes nowhere.
        struct Host(io::Cursor<Vec<u8>>);
        impl Read for Host {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.0.read(buf)
            }
        }
        impl Write for Host {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let answer =
            |input: Vec<u8>| welcome_sync(&mut Host(io::Cursor::new(input)), b"{}").unwrap_err();
        assert!(matches!(answer(Vec::new()), NoWelcome::Closed));
        let refused = answer(framed(
            r#"{"type":"error","message":"protocol 9 is not spoken here"}"#,
        ));
        assert_eq!(
            refused.to_string(),
            "answered hello with an error: protocol 9 is not spoken here"
        );
        assert!(matches!(
            answer(framed("HTTP/1.1 400")),
            NoWelcome::Garbled(_)
        ));
        let chatter: Vec<u8> = (0..5)
            .flat_map(|_| framed(r#"{"type":"shown","id":"x"}"#))
            .collect();
        assert!(matches!(answer(chatter), NoWelcome::Elsewhere));
    }
}
