//! The native host: the browser starts it, it speaks native messaging on stdio with the
//! extension and listens on `<runtime>/hosts/<pid>.sock` for any number of agents.
//!
//! ```text
//!  agent ─┐ socket task ─► events ─┐
//!  agent ─┘ (one per link)          ├─► Relay (host/relay.rs) ─► effects ─► per-agent writers
//!  stdin ─► extension frames ───────┘                              └─► stdout writer
//! ```
//!
//! One task owns the `Relay`; every link has its own reader and writer tasks, so a slow or
//! misbehaving agent can only stall or close its own link. The host ends when stdin closes
//! (the browser closed the port) or on SIGTERM (Firefox), removing its socket either way.

pub mod gateway;
pub mod relay;

use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::codec::{FramedRead, FramedWrite};

use crate::host::relay::{AgentId, Effect, Relay, undelivered};
use crate::wire::frame::{FrameCodec, FrameError, MAX_INBOUND, MAX_TO_BROWSER};
use crate::wire::keep::{Lookup, Store};
use crate::wire::link;
use crate::wire::protocol::{self, HostInfo, HostToAgent, HostToExtension, WithdrawReason};
use crate::wire::runtime;

/// Events from agent links waiting for the host's loop; a link that fills it waits (it
/// only holds up its own reads).
const EVENT_QUEUE: usize = 1024;

/// How long an agent may leave frames unread before the host gives up on it, unless
/// `HIM_AGENT_STALL_MS` says otherwise. Judged by time without progress, not by queue
/// length: a busy agent draining a burst of answers is slow, not stuck. Closing a stuck
/// agent's link withdraws its questions and spares everyone else; the agent, if it ever
/// reads again, finds the link closed, reconnects and asks its open questions again.
pub const AGENT_STALL: Duration = Duration::from_secs(10);

/// How many times per stall time the host looks for agents that stopped reading. Without
/// the check, a stuck agent would be noticed only when the next frame came for it, and its
/// questions would stay in the panel meanwhile; with it, an agent is cut off at most a
/// quarter of the stall time late.
const STALL_CHECKS_PER_STALL: u32 = 4;

/// What may wait for one agent however fast it reads: a backstop, far above what replies
/// about its own questions and the odd `welcome` add up to.
const AGENT_QUEUE_BYTES: u64 = 256 * 1024 * 1024;

/// How often the host looks in the answer store for what became of its kept questions
/// (answered in another browser, collected by their agent, expired).
const KEPT_SWEEP: Duration = Duration::from_secs(1);
/// Kept answers are looked for in the store once every this many sweeps.
const ANSWER_SWEEPS: u64 = 30;

/// `sun_path` holds 104 bytes on macOS and 108 on Linux, the terminating NUL included.
const SOCKET_PATH_MAX: usize = if cfg!(target_os = "macos") { 104 } else { 108 };

#[derive(Debug)]
pub enum HostError {
    Runtime(runtime::RuntimeError),
    Bind { path: PathBuf, err: io::Error },
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Runtime(err) => err.fmt(f),
            HostError::Bind { path, err } if path.as_os_str().len() >= SOCKET_PATH_MAX => write!(
                f,
                "cannot listen on {}: {err}; a socket path may be at most {} bytes, so set \
                 HIM_RUNTIME_DIR to a shorter private directory (for the browser and for \
                 every him serve)",
                path.display(),
                SOCKET_PATH_MAX - 1
            ),
            HostError::Bind { path, err } => {
                write!(f, "cannot listen on {}: {err}", path.display())
            }
        }
    }
}

impl std::error::Error for HostError {}

enum Event {
    AgentFrame(AgentId, Bytes),
    AgentClosed(AgentId),
}

/// Removes the socket file when the host stops, however it stops.
struct SocketGuard(PathBuf);

impl Drop for SocketGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Binds this host's socket in a private runtime directory.
pub fn bind(runtime_dir: &Path, pid: u32) -> Result<(UnixListener, PathBuf), HostError> {
    runtime::ensure_private_dir(runtime_dir).map_err(HostError::Runtime)?;
    let hosts = runtime::hosts_dir(runtime_dir);
    runtime::ensure_private_dir(&hosts).map_err(HostError::Runtime)?;
    // A file under our own pid is left over from an earlier process that had this pid.
    bind_over(runtime::socket_path(runtime_dir, pid))
}

/// Binds a socket at `path`, private to this user, in place of any file there: for a path
/// only this process may hold (its own pid's, or one taken under a lock), where a file left
/// there is stale. The host, the gateway and the Matrix bridge each bind this way.
pub fn bind_over(path: PathBuf) -> Result<(UnixListener, PathBuf), HostError> {
    let _ = std::fs::remove_file(&path);
    let bind_err = |err| HostError::Bind {
        path: path.clone(),
        err,
    };
    let listener = UnixListener::bind(&path).map_err(bind_err)?;
    runtime::make_socket_private(&path).map_err(bind_err)?;
    Ok((listener, path))
}

/// The host's queue towards one agent, how its writer is getting on, and the link's task
/// (aborted when the agent is cut off, which closes the socket even mid-write).
struct AgentLink {
    queue: mpsc::UnboundedSender<Bytes>,
    progress: Arc<WriteProgress>,
    task: tokio::task::AbortHandle,
    /// Answers queued for the agent and not yet written, each with where it ends among the
    /// bytes queued on the link. For an agent that gives no verdicts the extension has
    /// already told the person "Answer sent", so one the link ends before writing must go
    /// back to it as undelivered (the relay does that for an agent that judges aloud).
    answers: VecDeque<(u64, String)>,
}

impl AgentLink {
    /// Forgets the answers the writer has written past.
    fn forget_written_answers(&mut self) {
        while let Some(&(end, _)) = self.answers.front()
            && self.progress.written_past(end)
        {
            self.answers.pop_front();
        }
    }
}

/// Shared by the host loop (which queues) and the link's writer (which drains). Frames
/// are never empty, so bytes waiting means frames waiting.
struct WriteProgress {
    started: Instant,
    /// Bytes queued, and bytes written, since the link opened.
    queued_bytes: AtomicU64,
    written_bytes: AtomicU64,
    /// Milliseconds after `started` when the writer last finished a frame, or when the
    /// queue was last empty.
    last_ms: AtomicU64,
}

impl WriteProgress {
    fn new() -> WriteProgress {
        WriteProgress {
            started: Instant::now(),
            queued_bytes: AtomicU64::new(0),
            written_bytes: AtomicU64::new(0),
            last_ms: AtomicU64::new(0),
        }
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Counts a frame of `len` bytes as queued; returns where it ends among all the bytes
    /// queued on the link.
    fn queued(&self, len: usize) -> u64 {
        let before = self.queued_bytes.fetch_add(len as u64, Ordering::Relaxed);
        if before == self.written_bytes.load(Ordering::Relaxed) {
            // The clock starts when there is something to write.
            self.last_ms.store(self.now_ms(), Ordering::Relaxed);
        }
        before + len as u64
    }

    fn written(&self, len: usize) {
        self.written_bytes.fetch_add(len as u64, Ordering::Relaxed);
        self.last_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    fn written_past(&self, end: u64) -> bool {
        self.written_bytes.load(Ordering::Relaxed) >= end
    }

    /// Why the agent should be cut off before `len` more bytes are queued, if it should:
    /// frames have waited and none has been written for longer than `stall`, or too much
    /// waits already.
    fn stuck(&self, stall: Duration, len: usize) -> Option<String> {
        let idle_ms = self
            .now_ms()
            .saturating_sub(self.last_ms.load(Ordering::Relaxed));
        // Only the host loop queues, and it counts a frame before the writer can see it, so
        // the writer never passes what was queued.
        let waiting =
            self.queued_bytes.load(Ordering::Relaxed) - self.written_bytes.load(Ordering::Relaxed);
        if waiting > 0 && idle_ms > stall.as_millis() as u64 {
            Some(format!("it has read nothing for {idle_ms} ms"))
        } else if waiting + len as u64 > AGENT_QUEUE_BYTES {
            Some(format!("{waiting} bytes already wait for it"))
        } else {
            None
        }
    }
}

/// Runs the host until the extension goes away. `stdin`/`stdout` are the browser's pipe;
/// an agent that reads nothing for `agent_stall` while frames wait for it is cut off.
pub async fn run<R, W>(
    runtime_dir: &Path,
    stdin: R,
    stdout: W,
    agent_stall: Duration,
) -> Result<(), HostError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let pid = std::process::id();
    let info = HostInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        pid: Some(pid),
        machine: None,
        kind: None,
    };
    // Without a state folder questions are not kept: agents hear that when they keep one.
    let store = Store::locate().ok();
    run_on(
        || bind(runtime_dir, pid),
        info,
        stdin,
        stdout,
        agent_stall,
        store,
    )
    .await
}

/// The host on the socket `bind` gives, calling itself `info`; the gateway runs the same
/// host on its stable socket, with its bridge to the local hosts as the "extension".
pub async fn run_on<R, W>(
    bind: impl FnOnce() -> Result<(UnixListener, PathBuf), HostError>,
    info: HostInfo,
    stdin: R,
    stdout: W,
    agent_stall: Duration,
    store: Option<Store>,
) -> Result<(), HostError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut relay = Relay::new(info);
    if store.is_some() {
        relay.keep_questions();
    }

    let (to_extension, extension_queue) = mpsc::unbounded_channel::<Bytes>();
    let writer = tokio::spawn(write_to_extension(stdout, extension_queue));
    let _ = to_extension.send(protocol::encode(&relay.hello()));

    let (listener, path) = match bind() {
        Ok(bound) => bound,
        Err(err) => {
            // Tell the panel why, so the person sees the fix rather than only the
            // browser's "Native host has exited."
            let why = HostToExtension::Error {
                id: None,
                message: format!("him host: {err}"),
            };
            let _ = to_extension.send(protocol::encode(&why));
            drop(to_extension);
            let _ = writer.await;
            return Err(err);
        }
    };
    let _guard = SocketGuard(path.clone());
    tracing::info!(socket = %path.display(), "host listening");

    let mut from_extension = FramedRead::new(stdin, FrameCodec::new(MAX_INBOUND));
    let (events_tx, mut events) = mpsc::channel::<Event>(EVENT_QUEUE);
    let mut agents = Agents {
        links: HashMap::new(),
        stall: agent_stall,
        store: store.clone(),
    };
    let mut next_agent: AgentId = 0;
    let mut terminate = terminate_signal();
    let mut stall_check =
        tokio::time::interval((agent_stall / STALL_CHECKS_PER_STALL).max(Duration::from_millis(1)));
    stall_check.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut kept_sweep = tokio::time::interval(KEPT_SWEEP);
    let mut sweeps: u64 = 0;
    kept_sweep.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // The questions kept before this host started (by an earlier one, or another browser's).
    let mut offered = match &store {
        Some(store) => relay.offer_kept(store.list(crate::platform::clock::unix_ms())),
        None => Vec::new(),
    };

    loop {
        let effects = if !offered.is_empty() {
            std::mem::take(&mut offered)
        } else {
            tokio::select! {
                frame = from_extension.next() => match frame {
                    Some(Ok(bytes)) => relay.extension_frame(&bytes),
                    Some(Err(err)) => {
                        tracing::warn!("extension link closed: {err}");
                        break;
                    }
                    None => break,
                },
                accepted = listener.accept() => {
                    match accepted {
                        Ok((stream, _)) if peer_is_us(&stream) => {
                            next_agent += 1;
                            let (queue, rx) = mpsc::unbounded_channel();
                            let progress = Arc::new(WriteProgress::new());
                            let outgoing = Outgoing { queue: rx, progress: progress.clone() };
                            let task = tokio::spawn(serve_agent(next_agent, stream, outgoing, events_tx.clone()));
                            let link = AgentLink { queue, progress, task: task.abort_handle(), answers: VecDeque::new() };
                            agents.links.insert(next_agent, link);
                            relay.agent_connected(next_agent);
                        }
                        Ok(_) => tracing::warn!("refused a connection from another user"),
                        Err(err) => tracing::warn!("accept failed: {err}"),
                    }
                    Vec::new()
                }
                Some(event) = events.recv() => match event {
                    // Frames still in flight from a link the host already cut off must not
                    // bring that agent back.
                    Event::AgentFrame(agent, bytes) if agents.links.contains_key(&agent) => {
                        relay.agent_frame(agent, &bytes)
                    }
                    Event::AgentFrame(..) => Vec::new(),
                    Event::AgentClosed(agent) => {
                        agents.end(&mut relay, agent, "it closed its link to the host first")
                    }
                },
                _ = stall_check.tick() => agents.cut_off_stalled(&mut relay),
                _ = kept_sweep.tick(), if store.is_some() => match &store {
                    Some(store) => {
                    sweeps += 1;
                    sweep_kept(&mut relay, store, sweeps)
                }
                    None => Vec::new(),
                },
                _ = &mut terminate => break,
            }
        };
        let mut effects = VecDeque::from(effects);
        while let Some(effect) = effects.pop_front() {
            match effect {
                Effect::ToExtension(message) => {
                    let _ = to_extension.send(protocol::encode(&message));
                }
                Effect::AskToExtension(frame) => {
                    let _ = to_extension.send(frame);
                }
                Effect::ToAgent(agent, message) => {
                    effects.extend(agents.deliver(&mut relay, agent, message));
                }
                Effect::SaveKept(answer) => {
                    let saved = match &store {
                        Some(store) => store
                            .answer(&answer, crate::platform::clock::unix_ms())
                            .map_err(|err| err.to_string()),
                        None => Err("this host keeps no answers".into()),
                    };
                    if let Err(why) = &saved {
                        tracing::warn!(id = %answer.id, "a late answer was not kept: {why}");
                    }
                    effects.extend(relay.kept_saved(answer, saved));
                }
            }
        }
    }
    tracing::info!(pending = relay.pending(), "extension gone; host exits");
    Ok(())
}

/// What became of the kept questions in the store: one answered in another browser, or
/// collected, or expired, leaves this panel too. The answers this host kept are let go once
/// collected, looked at every [`ANSWER_SWEEPS`]th time only: they are only memory.
fn sweep_kept(relay: &mut Relay, store: &Store, round: u64) -> Vec<Effect> {
    let now = crate::platform::clock::unix_ms();
    let mut effects = Vec::new();
    for (id, until_ms) in relay.kept_cards() {
        let (reason, by) = match store.lookup(&id, now) {
            Lookup::Open(_) if until_ms > now => continue,
            // Who answered, when it was on the phone (the Matrix bridge writes it).
            Lookup::Answered(record) => (
                WithdrawReason::Answered,
                record.answer.and_then(|a| a.answered_by),
            ),
            Lookup::Unknown => (WithdrawReason::Answered, None),
            Lookup::Open(_) | Lookup::Expired => (WithdrawReason::Timeout, None),
        };
        effects.extend(relay.kept_gone(&id, reason, by));
    }
    if round.is_multiple_of(ANSWER_SWEEPS) {
        for id in relay.kept_answer_ids() {
            if matches!(store.lookup(&id, now), Lookup::Unknown | Lookup::Expired) {
                effects.extend(relay.kept_gone(&id, WithdrawReason::Answered, None));
            }
        }
    }
    effects
}

/// The host's open agent links. An agent that has read nothing for `stall` while frames
/// waited is cut off (its questions withdrawn) rather than allowed to hold up the host.
struct Agents {
    links: HashMap<AgentId, AgentLink>,
    stall: Duration,
    /// The answer store: a question it holds open outlives its agent's link.
    store: Option<Store>,
}

impl Agents {
    /// Queues a message for one agent, or cuts the agent off if it is stuck; returns what
    /// the extension must hear then.
    fn deliver(&mut self, relay: &mut Relay, agent: AgentId, message: HostToAgent) -> Vec<Effect> {
        let Some(link) = self.links.get_mut(&agent) else {
            return Vec::new();
        };
        let answer = match &message {
            HostToAgent::Answer(answer) => Some(answer.id.clone()),
            _ => None,
        };
        let frame = protocol::encode(&message);
        let why = match link.progress.stuck(self.stall, frame.len()) {
            None => {
                // Counted before it is sent, so the writer cannot count it written first.
                let end = link.progress.queued(frame.len());
                if link.queue.send(frame).is_ok() {
                    link.forget_written_answers();
                    link.answers.extend(answer.map(|id| (end, id)));
                    return Vec::new();
                }
                "its link was closing".to_owned()
            }
            Some(stuck) => cut_off_because(agent, &stuck),
        };
        // One the agent was to judge, the relay reports with the rest of its questions.
        let mut effects: Vec<Effect> = answer
            .filter(|id| !relay.judging(id))
            .map(|id| undelivered(id, &why))
            .into_iter()
            .collect();
        effects.extend(self.end(relay, agent, &why));
        effects
    }

    /// Cuts off every agent that is stuck now, without waiting for a frame to come for it.
    fn cut_off_stalled(&mut self, relay: &mut Relay) -> Vec<Effect> {
        let mut stuck: Vec<(AgentId, String)> = self
            .links
            .iter()
            .filter_map(|(&agent, link)| Some((agent, link.progress.stuck(self.stall, 0)?)))
            .collect();
        stuck.sort_unstable();
        let mut effects = Vec::new();
        for (agent, stuck) in stuck {
            effects.extend(self.end(relay, agent, &cut_off_because(agent, &stuck)));
        }
        effects
    }

    /// The agent's link ended, or the host ends it now: each answer that was not written
    /// to it goes back to the extension as undelivered, and its questions are withdrawn.
    fn end(&mut self, relay: &mut Relay, agent: AgentId, why: &str) -> Vec<Effect> {
        let mut effects = Vec::new();
        if let Some(mut link) = self.links.remove(&agent) {
            link.task.abort();
            link.forget_written_answers();
            effects.extend(
                link.answers
                    .into_iter()
                    .filter(|(_, id)| !relay.judging(id))
                    .map(|(_, id)| undelivered(id, why)),
            );
        }
        let store = self.store.as_ref();
        let open_until = |id: &str| match store?.lookup(id, crate::platform::clock::unix_ms()) {
            Lookup::Open(record) => Some(record.until_ms),
            _ => None,
        };
        effects.extend(relay.agent_closed(agent, why, &open_until));
        effects
    }
}

/// Logs that `agent` is being cut off for being `stuck`, and says so for the person.
fn cut_off_because(agent: AgentId, stuck: &str) -> String {
    tracing::warn!(agent, "agent is not reading ({stuck}); closing its link");
    format!("it stopped reading ({stuck}), so the host closed its link")
}

fn peer_is_us(stream: &UnixStream) -> bool {
    stream
        .peer_cred()
        .is_ok_and(|cred| cred.uid() == runtime::current_uid())
}

async fn write_to_extension<W: AsyncWrite + Unpin>(
    stdout: W,
    mut queue: mpsc::UnboundedReceiver<Bytes>,
) {
    let mut sink = FramedWrite::new(stdout, FrameCodec::new(MAX_TO_BROWSER));
    while let Some(frame) = queue.recv().await {
        match sink.send(frame).await {
            Ok(()) => {}
            // The relay keeps oversize questions out; anything else that is too big is
            // dropped here rather than letting the browser kill the port.
            Err(err @ FrameError::TooLong { .. }) => {
                tracing::error!("not sent to the browser: {err}")
            }
            Err(err) => {
                tracing::warn!("browser pipe closed: {err}");
                return;
            }
        }
    }
}

/// What the host queued for one agent.
struct Outgoing {
    queue: mpsc::UnboundedReceiver<Bytes>,
    progress: Arc<WriteProgress>,
}

/// The host's end of one agent link: frames become events; a bad frame is answered with
/// the reason before the link closes (only this link pays for it).
struct AgentEnd<'a> {
    agent: AgentId,
    events: &'a mpsc::Sender<Event>,
    progress: Arc<WriteProgress>,
}

impl link::Policy for AgentEnd<'_> {
    async fn frame(&mut self, frame: Bytes) -> bool {
        self.events
            .send(Event::AgentFrame(self.agent, frame))
            .await
            .is_ok()
    }

    fn bad_frame(&mut self, err: &FrameError) -> Option<Bytes> {
        tracing::warn!(agent = self.agent, "agent link closed: {err}");
        // Said before closing, so the agent's log explains it.
        Some(protocol::encode(&HostToAgent::Error {
            id: None,
            message: err.to_string(),
        }))
    }

    fn written(&mut self, len: usize) {
        self.progress.written(len);
    }

    fn linger(&self) -> Option<Duration> {
        // The host dropped the queue because it cut the agent off or is going away.
        None
    }
}

/// One agent link. Ends on EOF, on a frame error, when the host drops the queue, or when
/// the host aborts it (the agent stopped reading); only an end the agent caused is
/// reported, not one of the host's own.
async fn serve_agent(
    agent: AgentId,
    stream: UnixStream,
    outgoing: Outgoing,
    events: mpsc::Sender<Event>,
) {
    let mut end = AgentEnd {
        agent,
        events: &events,
        progress: outgoing.progress,
    };
    if link::run(stream, outgoing.queue, &mut end).await == link::Ended::ByPeer {
        let _ = events.send(Event::AgentClosed(agent)).await;
    }
}

/// Resolves on SIGTERM or SIGINT (Firefox sends SIGTERM before SIGKILL), so the socket
/// file is removed on the way out.
fn terminate_signal() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => Box::pin(async move {
            tokio::select! {
                _ = term.recv() => {},
                _ = int.recv() => {},
            }
        }),
        _ => Box::pin(std::future::pending()),
    }
}
