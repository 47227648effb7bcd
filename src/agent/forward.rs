//! Sockets that SSH forwarded from another machine's gateway (DESIGN.md §10), as the agent
//! side judges them. The pid-named rule of local hosts does not apply: such a socket is
//! bound by sshd, and a pid in its name would mean nothing here. What tells one apart:
//!
//! - connecting is refused: nothing listens, the SSH connection that bound it is gone, so
//!   the file is removed (sshd never removes it, and with Debian's default
//!   `StreamLocalBindUnlink no` it would make the next connection's bind fail);
//! - connecting works but the link closes before a `welcome`: the SSH connection is up but
//!   its far end refused (no gateway runs on the other machine now); kept, tried again;
//! - a `welcome` comes back: a live gateway.
//!
//! A live socket still at the name SSH binds (`<machine>.sock`, from `him remote`) is moved
//! to a name of its own (`<machine>@<hex>.sock`): sshd's listener keeps working under the new
//! name, and the next SSH connection finds the bind name free.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::sync::{Notify, mpsc};

use super::pool::HostStatus;
use crate::wire::link::handshake;
use crate::wire::protocol::{self, AgentToHost};
use crate::wire::runtime;

/// How often `him serve` tidies the forwarded folder, questions or not.
pub const TIDY_INTERVAL: Duration = Duration::from_secs(2);

/// How long a forwarded link may say nothing before the agent sends `ping`, and how long it
/// then has to answer (and a new one to answer `hello`), unless `HIM_KEEPALIVE_MS` says
/// otherwise. A network lost without a goodbye (a laptop asleep, Wi-Fi gone) sends no FIN:
/// sshd there keeps accepting and forwarding into a TCP connection that goes nowhere, and
/// the laptop's ssh gives up only after a minute. So an agent notices a dead route itself,
/// 5 to 10 s after the last word from it, and its questions move on after the reconnect
/// grace as when a browser closes. A live gateway answers in well under a millisecond
/// through the forward; a new channel through `ssh -N` takes ~44 ms to its first byte
/// (FACTS.md).
pub const KEEPALIVE: Duration = Duration::from_secs(5);

/// Keep-alive periods shorter than this would be traffic for nothing.
const KEEPALIVE_MIN: Duration = Duration::from_millis(50);

/// `HIM_KEEPALIVE_MS`, read by the same rule as every `HIM_*_MS`; a bad value is reported
/// and the default used, since no agent should refuse to start over it.
pub fn keepalive() -> Duration {
    let default = KEEPALIVE.as_millis() as u64;
    let lookup = |name: &str| std::env::var(name).ok();
    let ms = crate::config::millis(lookup, "HIM_KEEPALIVE_MS", default).unwrap_or_else(|err| {
        tracing::warn!("{err}; using {default} ms");
        default
    });
    Duration::from_millis(ms).clamp(KEEPALIVE_MIN, crate::config::MAX_WAIT)
}

/// Until the route of a forwarded link is gone: after `every` without a byte from the far
/// end ([`Heard`]), a `ping` goes out on `outgoing`, and `every` more without a byte is the
/// end — plus the time the bytes still on their way ([`InFlight`]) may take, since the far
/// end reads the `ping` only after them. An older host or gateway answers `ping` with an
/// `error`, which counts all the same. Pends for ever once the link's queue is gone (the
/// pool is closing it).
pub(super) async fn watch_route(
    heard: &Notify,
    outgoing: &mpsc::WeakUnboundedSender<Bytes>,
    every: Duration,
    in_flight: &InFlight,
) {
    let ping = protocol::encode(&AgentToHost::Ping);
    loop {
        if tokio::time::timeout(every, heard.notified()).await.is_ok() {
            continue;
        }
        let sent = outgoing
            .upgrade()
            .is_some_and(|queue| queue.send(ping.clone()).is_ok());
        if !sent {
            return std::future::pending().await;
        }
        let answer_within = every + in_flight.remaining();
        if tokio::time::timeout(answer_within, heard.notified())
            .await
            .is_err()
        {
            return;
        }
    }
}

/// The slowest route a forwarded link is given time for: a large question (up to 1 MiB)
/// written just before a `ping` reaches the far end, and the `ping` after it, only as fast as
/// the route carries them — 32 s for 1 MiB over a weak tether or hotel Wi-Fi — and a live
/// route must not be given up meanwhile.
const SLOWEST_ROUTE_BYTES_PER_SEC: f64 = 32.0 * 1024.0;

/// How many bytes written to a forwarded link may still be on their way over the slowest
/// route ([`SLOWEST_ROUTE_BYTES_PER_SEC`]): each write adds its bytes, and they drain at that
/// rate. Written by [`Said`], read by [`watch_route`].
#[derive(Debug, Default)]
pub(super) struct InFlight(std::sync::Mutex<(f64, Option<tokio::time::Instant>)>);

impl InFlight {
    fn add(&self, bytes: usize) {
        let now = tokio::time::Instant::now();
        let mut state = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        state.0 = Self::left(*state, now) + bytes as f64;
        state.1 = Some(now);
    }

    /// How long what may still be on its way takes over the slowest route.
    pub(super) fn remaining(&self) -> Duration {
        let state = *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let left = Self::left(state, tokio::time::Instant::now());
        Duration::from_secs_f64(left / SLOWEST_ROUTE_BYTES_PER_SEC)
    }

    fn left((bytes, since): (f64, Option<tokio::time::Instant>), now: tokio::time::Instant) -> f64 {
        let drained = since.map_or(0.0, |at| {
            now.duration_since(at).as_secs_f64() * SLOWEST_ROUTE_BYTES_PER_SEC
        });
        (bytes - drained).max(0.0)
    }
}

/// The write half of a forwarded link, telling `in_flight` of every byte written.
pub(super) struct Said<W> {
    inner: W,
    in_flight: Arc<InFlight>,
}

impl<W> Said<W> {
    pub(super) fn new(inner: W, in_flight: Arc<InFlight>) -> Said<W> {
        Said { inner, in_flight }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Said<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(written)) = polled {
            self.in_flight.add(written);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The read half of a forwarded link, telling `heard` of every byte that comes in: part of
/// a large frame still on its way over a slow route is word from the far end too.
pub(super) struct Heard<R> {
    inner: R,
    heard: Arc<Notify>,
}

impl<R> Heard<R> {
    pub(super) fn new(inner: R, heard: Arc<Notify>) -> Heard<R> {
        Heard { inner, heard }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Heard<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.heard.notify_one();
        }
        polled
    }
}

/// Why [`reach`] found no gateway behind a forwarded socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unreached {
    /// Refused, closed before a welcome, or not ours: the next scan judges it afresh.
    Gone,
    /// Connected, but nothing came back in time: the SSH connection is up and its far end
    /// silent (a laptop asleep, a network gone while sshd listens on). Waiting for it again
    /// would hold up every question, so it is tried again only aside.
    Quiet,
}

/// Connects to a forwarded socket and says `hello`; on a `welcome` within `handshake`, the
/// link (under the socket's name of its own) and what the gateway said.
pub(super) async fn reach(
    path: &Path,
    hello: &[u8],
    handshake_within: Duration,
) -> Result<(PathBuf, UnixStream, HostStatus), Unreached> {
    let mut stream = match connect_settled(path).await {
        Ok(stream) => stream,
        Err(err) => {
            forget_if_refused(path, &err);
            return Err(Unreached::Gone);
        }
    };
    // sshd's session process of this user binds and serves it (FACTS.md).
    if !stream
        .peer_cred()
        .is_ok_and(|cred| cred.uid() == runtime::current_uid())
    {
        tracing::warn!(socket = %path.display(), "a forwarded socket of another user; not used");
        return Err(Unreached::Gone);
    }
    let welcome = handshake::welcome(&mut stream, hello);
    let welcome = match tokio::time::timeout(handshake_within, welcome).await {
        Ok(Ok(welcome)) => welcome,
        Ok(Err(why)) => {
            tracing::debug!(socket = %path.display(), "forwarded socket is up but its far end is not: {why}");
            return Err(Unreached::Gone);
        }
        Err(_) => {
            tracing::debug!(socket = %path.display(), "no welcome through the forwarded socket in time");
            return Err(Unreached::Quiet);
        }
    };
    let path = own_name(path);
    let mut status = HostStatus {
        socket: path.clone(),
        forwarded: true,
        ..HostStatus::default()
    };
    status.welcomed_by(welcome);
    Ok((path, stream, status))
}

/// What [`tidy`] did with a forwarded socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tidied {
    /// Live (moved off the bind name if it was there), or not judged.
    Kept,
    /// Refused: its connection is gone, and the file with it.
    Removed,
}

/// Tries a forwarded socket: removes it when it refuses, gives it a name of its own when it
/// is live.
pub(super) async fn tidy(path: &Path) -> Tidied {
    match connect_settled(path).await {
        Ok(_) => {
            own_name(path);
            Tidied::Kept
        }
        Err(err) => {
            forget_if_refused(path, &err);
            let refused = err.kind() == io::ErrorKind::ConnectionRefused;
            if refused && is_bind_name(path) && !path.exists() {
                Tidied::Removed
            } else {
                Tidied::Kept
            }
        }
    }
}

/// Connects to a forwarded socket. sshd binds, then listens: at the bind name a new
/// connection's socket refuses for that instant, so a refusal there is asked again a
/// moment later before it counts (a socket under a name of its own was live when moved).
async fn connect_settled(path: &Path) -> io::Result<UnixStream> {
    match UnixStream::connect(path).await {
        Err(err) if err.kind() == io::ErrorKind::ConnectionRefused && is_bind_name(path) => {
            tokio::time::sleep(BIND_TO_LISTEN).await;
            UnixStream::connect(path).await
        }
        connected => connected,
    }
}

/// Longer than sshd takes from `bind` to `listen` on a forwarded socket (two system calls).
const BIND_TO_LISTEN: Duration = Duration::from_millis(20);

fn forget_if_refused(path: &Path, err: &io::Error) {
    if err.kind() == io::ErrorKind::ConnectionRefused {
        tracing::debug!(socket = %path.display(), "removing a forwarded socket whose SSH connection is gone");
        let _ = std::fs::remove_file(path);
    } else {
        tracing::debug!(socket = %path.display(), "cannot use forwarded socket: {err}");
    }
}

/// Whether `path` is the name SSH binds (`him remote` writes it without an `@`). The
/// gateway's own `gateway.sock`, seen through a container's bind mount, is not: moving it
/// would move the gateway's socket on the machine itself.
pub fn is_bind_name(path: &Path) -> bool {
    path.file_stem()
        .and_then(|stem| stem.to_str())
        .is_some_and(|stem| !stem.contains('@') && stem != "gateway")
}

/// Moves a live socket off the name SSH binds; returns where it is now.
fn own_name(path: &Path) -> PathBuf {
    if !is_bind_name(path) {
        return path.to_owned();
    }
    let (Some(stem), Ok(id)) = (
        path.file_stem().and_then(|s| s.to_str()),
        crate::platform::random::question_id(),
    ) else {
        return path.to_owned();
    };
    let renamed = path.with_file_name(format!("{stem}@{}.sock", &id[..12]));
    match std::fs::rename(path, &renamed) {
        Ok(()) => renamed,
        // Another agent moved it first; the next scan finds it under its new name.
        Err(_) => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_route_that_answers_no_ping_is_gone_after_twice_the_period() {
        let (queue, mut sent) = mpsc::unbounded_channel();
        let heard = Notify::new();
        let every = Duration::from_secs(5);
        let start = tokio::time::Instant::now();
        // Word now and then keeps it: no ping while it comes.
        let weak = queue.downgrade();
        let nothing = InFlight::default();
        let watching = watch_route(&heard, &weak, every, &nothing);
        tokio::pin!(watching);
        for _ in 0..3 {
            tokio::select! {
                () = &mut watching => panic!("gone while it spoke"),
                () = tokio::time::sleep(Duration::from_secs(4)) => heard.notify_one(),
            }
        }
        assert!(sent.try_recv().is_err(), "no ping while the far end spoke");
        // Then silence: a ping after 5 s, the end 5 s later.
        let quiet_from = tokio::time::Instant::now();
        watching.await;
        assert_eq!(quiet_from.elapsed(), 2 * every);
        assert_eq!(&sent.try_recv().expect("a ping")[..], br#"{"type":"ping"}"#);
        assert!(start.elapsed() >= Duration::from_secs(22));
    }

    #[tokio::test(start_paused = true)]
    async fn a_route_that_answers_its_ping_stays() {
        let (queue, mut sent) = mpsc::unbounded_channel::<Bytes>();
        let heard = Arc::new(Notify::new());
        let every = Duration::from_secs(5);
        let answering = heard.clone();
        // The far end answers each ping 1 ms later.
        tokio::spawn(async move {
            while sent.recv().await.is_some() {
                tokio::time::sleep(Duration::from_millis(1)).await;
                answering.notify_one();
            }
        });
        let weak = queue.downgrade();
        let watched = tokio::time::timeout(
            Duration::from_secs(60),
            watch_route(&heard, &weak, every, &InFlight::default()),
        )
        .await;
        assert!(watched.is_err(), "a route that answers is never given up");
    }

    #[tokio::test(start_paused = true)]
    async fn a_large_question_on_its_way_gives_the_ping_time_to_come_back_behind_it() {
        let (queue, mut sent) = mpsc::unbounded_channel();
        let heard = Notify::new();
        let every = Duration::from_secs(5);
        let in_flight = InFlight::default();
        // A 1 MiB question written just now: the far end reads the ping only after it.
        in_flight.add(1024 * 1024);
        let quiet_from = tokio::time::Instant::now();
        let weak = queue.downgrade();
        watch_route(&heard, &weak, every, &in_flight).await;
        assert_eq!(&sent.try_recv().expect("a ping")[..], br#"{"type":"ping"}"#);
        // The ping after 5 s; by then 5 s of the 32 s the megabyte takes at the slowest rate
        // have passed, so the answer may take 27 s more, and the period.
        let waited = quiet_from.elapsed();
        assert!(
            waited >= Duration::from_secs(36) && waited <= Duration::from_secs(38),
            "{waited:?}"
        );
        // Nothing written since: the bytes drained, and the next wait is the period alone.
        assert_eq!(in_flight.remaining(), Duration::ZERO);
    }

    #[test]
    fn only_the_name_ssh_binds_is_moved() {
        assert!(is_bind_name(Path::new("/f/laptop.sock")));
        assert!(is_bind_name(Path::new("/f/laptop.home.sock")));
        assert!(!is_bind_name(Path::new("/f/laptop@0a1b2c3d4e5f.sock")));
        assert!(!is_bind_name(Path::new("/f/gateway.sock")));
    }

    #[tokio::test]
    async fn a_refused_forwarded_socket_is_removed_and_a_live_one_renamed() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join("gone.sock");
        drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
        assert_eq!(tidy(&stale).await, Tidied::Removed);
        assert!(!stale.exists(), "a socket nobody listens on is removed");

        let live = dir.path().join("laptop.sock");
        let _listener = tokio::net::UnixListener::bind(&live).unwrap();
        assert_eq!(tidy(&live).await, Tidied::Kept);
        assert!(!live.exists(), "the bind name is free again");
        let moved = runtime::list_forwarded_sockets(dir.path());
        assert_eq!(moved.len(), 1, "{moved:?}");
        assert!(!is_bind_name(&moved[0]));
        assert!(
            UnixStream::connect(&moved[0]).await.is_ok(),
            "still live under its new name"
        );
    }
}
