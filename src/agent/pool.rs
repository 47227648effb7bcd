//! The agent side of the local bridge: finds every live host, keeps one link to each, and
//! sends every open question to all of them — including hosts that appear later, which is
//! how a browser started (or a host restarted) mid-question still gets it, under the same
//! id.
//!
//! ```text
//!   Question ──open──► Pool ──ask──► link to host A ─┐
//!       ▲                     └─ask──► link to host B ─┤ (rescanned while questions wait)
//!       └──────── events (shown, answer, refused) ─────┘
//! ```
//!
//! The pool decides nothing about answers: the first one goes to the question's owner
//! (`agent/ask.rs`, waiting in `agent/wait.rs`), which judges it. A refused answer goes back to
//! the host that sent it ([`Question::refuse`]) and the question stays open; closing it
//! tells the answering host it was accepted and withdraws it everywhere else.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::net::UnixStream;
use tokio::sync::{mpsc, watch};
use tokio_util::task::TaskTracker;

use crate::wire::frame::FrameError;
use crate::wire::link;
use crate::wire::protocol::{
    self, AgentInfo, AgentToHost, Answer, AskFrame, ExtensionInfo, HostToAgent, PROTOCOL, Refusal,
    Welcome, WithdrawReason,
};
use crate::wire::runtime;

use super::forward;
use super::presence::{self, MatrixRoute};

/// How often the runtime directory is rescanned while a question waits. Connecting to a
/// local socket is cheap; a person will not notice a quarter of a second.
pub const RESCAN_INTERVAL: Duration = Duration::from_millis(250);

/// How long a closing link waits for the host to acknowledge the end of its frames.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How long a process that exits waits for its host links to write their last frames
/// ([`Pool::close`]); a host reads them in microseconds, so this bounds only a stuck one.
pub const EXIT_WAIT: Duration = Duration::from_secs(1);

/// What a host said about one question. The answer is boxed: every question's channel
/// allocates room for one event up front.
#[derive(Debug, Clone, PartialEq)]
pub enum HostEvent {
    Shown { host: PathBuf },
    Answer { host: PathBuf, answer: Box<Answer> },
    Refused { host: PathBuf, message: String },
}

/// Who is asking, as told to every host in `hello`.
#[derive(Debug, Clone)]
pub struct Identity {
    pub agent: AgentInfo,
    pub project: Option<String>,
}

impl Identity {
    /// The working directory's name labels the question with its project (unless the
    /// question names its own, `crate::agent::asker`).
    pub fn with_cwd_project(agent: AgentInfo) -> Identity {
        let project = std::env::current_dir()
            .ok()
            .and_then(|dir| crate::agent::asker::project_of_dir(&dir));
        Identity { agent, project }
    }

    /// This identity for one question that names its own project, if it does.
    pub fn for_project(&self, project: Option<&str>) -> Identity {
        Identity {
            agent: self.agent.clone(),
            project: project.map(str::to_owned).or_else(|| self.project.clone()),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostStatus {
    pub socket: PathBuf,
    /// Reached through a socket SSH forwarded from another machine's gateway.
    pub forwarded: bool,
    /// From `welcome`: the host's pid, and the machine a gateway reaches the browsers of.
    pub host_pid: Option<u32>,
    pub machine: Option<String>,
    pub extension: Option<ExtensionInfo>,
    pub panel_open: bool,
    /// From `welcome`: `None` from a host that takes no verdicts; `Some(true)` when its
    /// extension lets the person correct a refused answer.
    pub verdicts: Option<bool>,
    /// The Matrix bridge (found at `runtime::matrix_socket`): a channel beside the browsers,
    /// never counted as one.
    pub matrix: bool,
}

impl HostStatus {
    /// Takes in what a host's `welcome` says; the rest (socket, route) stays.
    pub(crate) fn welcomed_by(&mut self, welcome: Welcome) {
        self.host_pid = welcome.host.pid;
        self.machine = welcome.host.machine;
        self.extension = welcome.extension;
        self.panel_open = welcome.panel_open;
        self.verdicts = welcome.verdicts;
    }
}

struct Link {
    outgoing: mpsc::UnboundedSender<Bytes>,
    status: HostStatus,
    /// Whether the host has answered our `hello`: until then `status` is blank, not what
    /// the host would say (no extension, panel closed).
    welcomed: bool,
}

/// A question's events: a handful in its life. `futures`' channel allocates per message;
/// tokio's allocates a block of 32 `HostEvent`s up front (5.7 KiB, a third of what a
/// pending call held: BENCHMARKS.md).
type EventSender = futures::channel::mpsc::UnboundedSender<HostEvent>;
type EventReceiver = futures::channel::mpsc::UnboundedReceiver<HostEvent>;

struct Entry {
    ask_frame: Bytes,
    events: EventSender,
    /// How to keep it should its call end unanswered; `None` for what is never kept.
    keep: Option<KeepPlan>,
    /// A host said the extension shows it. Only a question a browser has (shown, or sent to
    /// a host that is linked still) is kept: one no browser had goes back to the chat.
    shown: bool,
    /// When it was opened here, for the away time of [`MatrixRoute::Away`].
    opened_at: tokio::time::Instant,
    /// Sent to the Matrix bridge: only then does the bridge hear of it again (withdrawn).
    to_matrix: bool,
}

/// How a question is kept for its agent when its call ends without an answer (issue 24,
/// `wire/keep.rs`): the agent writes it to the answer store, then every host keeps its card.
#[derive(Debug, Clone)]
pub struct KeepPlan {
    /// The answer store, or why there is none.
    pub store: Result<crate::wire::keep::Store, String>,
    /// The ask tool, so a late answer comes back in its result's shape.
    pub tool: String,
    /// `HIM_KEEP_MS`.
    pub keep: Duration,
    /// Asked again from the store (`get_answer`, or the same call again): it is kept again
    /// however this wait ends unanswered, shown or not, and leaves the store once answered.
    pub from_store: bool,
    /// A cancelled call keeps its question too: a client's own time limit cancels the call,
    /// and the person may still answer. Not a task ended by `tasks/cancel`: there the agent
    /// said it no longer wants the answer, and the question is withdrawn everywhere.
    pub if_cancelled: bool,
    /// Its call returned `pending` (`agent/pending.rs`): it is in the store since then, and what
    /// waits on it writes the person's answer there, so being answered does not remove it.
    pub pending: bool,
}

/// Whether the question of `entry` would be kept were its call to end unanswered now, with
/// these links (as [`Question::close`] decides): it has a plan with a store, and it came
/// from the store (kept whatever happens), or a browser's own host has it.
fn would_keep(entry: &Entry, links: &HashMap<PathBuf, Link>) -> bool {
    entry
        .keep
        .as_ref()
        .is_some_and(|plan| plan.store.is_ok() && (plan.from_store || a_host_keeps(links.values())))
}

/// Whether one of these links reaches a browser's own host, which keeps a card for a late
/// answer: a gateway (this agent is on another machine) or a socket forwarded from one
/// withdraws it, so a question kept only there would have nowhere to be answered.
fn a_host_keeps<'a>(links: impl IntoIterator<Item = &'a Link>) -> bool {
    links
        .into_iter()
        .any(|link| link.status.machine.is_none() && !link.status.forwarded)
}

/// What became of a question kept at the end of its call.
#[derive(Debug, Clone, PartialEq)]
pub enum Kept {
    /// Kept until then (Unix ms); the person's answer waits in the store.
    Until(u64),
    /// It could not be kept, for this reason.
    Failed(String),
}

/// Writes question `id` (its `ask_frame`) to the store as `plan` says, kept for
/// `HIM_KEEP_MS` from `from_ms` (Unix ms); `waited_on`: this process still waits on it
/// (its call returned `pending`), which the record names as its owner.
fn keep_in_store(
    identity: &Identity,
    id: &str,
    ask_frame: &[u8],
    plan: &KeepPlan,
    from_ms: u64,
    waited_on: bool,
) -> Kept {
    let store = match &plan.store {
        Ok(store) => store,
        Err(why) => return Kept::Failed(why.clone()),
    };
    let Ok(AgentToHost::Ask(ask)) = protocol::decode::<AgentToHost>(ask_frame) else {
        return Kept::Failed("the question could not be read back".into());
    };
    let now = crate::platform::clock::unix_ms();
    // A question left open after its call returned `pending` is open to its own deadline:
    // kept from then, however its wait ends (the session going away included).
    let from_ms = if plan.pending {
        from_ms.max(ask.asked_at_ms.saturating_add(ask.timeout_ms))
    } else {
        from_ms
    };
    let record = crate::wire::keep::Record {
        id: id.to_owned(),
        tool: plan.tool.clone(),
        form: ask.form,
        agent: identity.agent.clone(),
        // The question's own project, else its agent's: as the card named it.
        project: ask.project.or_else(|| identity.project.clone()),
        asked_at_ms: ask.asked_at_ms,
        kept_at_ms: now,
        until_ms: from_ms
            .max(now)
            .saturating_add(plan.keep.as_millis() as u64),
        answer: None,
        owner: waited_on.then(crate::wire::keep::Owner::this_process),
    };
    match store.keep(&record, now) {
        Ok(until) => Kept::Until(until),
        Err(err) => {
            tracing::warn!(id, "a question was not kept: {err}");
            Kept::Failed(err.to_string())
        }
    }
}

/// The withdrawal every host gets for `id`: `keep` when it was kept; `by_matrix`, the
/// answerer, when the Matrix bridge's answer ended it.
fn withdraw_frame(
    id: &str,
    reason: WithdrawReason,
    kept: Option<&Kept>,
    by_matrix: Option<Option<&str>>,
) -> Bytes {
    let until = match kept {
        Some(Kept::Until(until)) => Some(*until),
        _ => None,
    };
    protocol::encode(&AgentToHost::Withdraw {
        id: id.to_owned(),
        reason,
        keep: until.is_some(),
        keep_until_ms: until,
        answered_via: by_matrix.map(|_| protocol::MATRIX_KIND.to_owned()),
        answered_by: by_matrix.flatten().map(str::to_owned),
    })
}

impl State {
    /// Linked hosts that reach browsers (not the Matrix bridge).
    fn browsers(&self) -> usize {
        self.links.values().filter(|l| !l.status.matrix).count()
    }

    /// Sends every open question that is due there now (`presence::due`) to the Matrix
    /// bridges linked; called whenever what it depends on changes.
    fn route_to_matrix(&mut self) {
        let State {
            links,
            questions,
            matrix_route,
            all_lost_at,
            open_panel_lost_at,
            restart_grace,
            ..
        } = self;
        if !links.values().any(|l| l.status.matrix) {
            return;
        }
        let browsers: Vec<presence::Browser> = links
            .values()
            .filter(|l| !l.status.matrix)
            .map(|l| presence::Browser {
                welcomed: l.welcomed,
                panel_open: l.status.panel_open,
            })
            .collect();
        let desk = presence::Desk {
            browsers: &browsers,
            restarting: [*all_lost_at, *open_panel_lost_at]
                .into_iter()
                .flatten()
                .any(|at| at.elapsed() < *restart_grace),
        };
        for (id, entry) in questions.iter_mut() {
            if entry.to_matrix || !presence::due(*matrix_route, &desk, entry.opened_at.elapsed()) {
                continue;
            }
            tracing::info!(id, "the question goes to the Matrix room too");
            entry.to_matrix = true;
            for link in links.values().filter(|l| l.status.matrix) {
                let _ = link.outgoing.send(entry.ask_frame.clone());
            }
        }
    }

    /// Whether `link` has, or had, question `entry`: the Matrix bridge only once routed there.
    fn link_has(link: &Link, entry: &Entry) -> bool {
        !link.status.matrix || entry.to_matrix
    }
}

#[derive(Default)]
struct State {
    links: HashMap<PathBuf, Link>,
    questions: HashMap<String, Entry>,
    scanner: bool,
    /// Forwarded sockets that lead to a gateway already linked another way (a second SSH
    /// connection): not tried again until a link ends.
    spare_routes: std::collections::HashSet<PathBuf>,
    /// Forwarded sockets that connected but gave no welcome in time: scans that a question
    /// waits for do not wait for them again, and try them aside.
    quiet_routes: std::collections::HashSet<PathBuf>,
    /// Forwarded sockets being tried now.
    route_tries: std::collections::HashSet<PathBuf>,
    /// Set by `shutdown`: no new links, so an ended session's pool frees its sockets.
    closed: bool,
    /// When the last link to a host ended, while no other was left.
    all_lost_at: Option<tokio::time::Instant>,
    /// When a link to a browser's host whose side panel was open ended.
    open_panel_lost_at: Option<tokio::time::Instant>,
    /// When questions go to the Matrix bridge.
    matrix_route: MatrixRoute,
    /// How long a browser whose last host ended may take to start a new one (a service worker
    /// restarting) before the phone is rung as if no browser were there.
    restart_grace: Duration,
}

struct Shared {
    /// The runtime directories searched for hosts (DESIGN.md §1), where hosts listen first.
    runtime_dirs: Vec<PathBuf>,
    /// Where SSH forwards other machines' gateways (`Located::forwarded`), if searched.
    forwarded: Option<PathBuf>,
    /// Where a Matrix bridge listens, one per runtime directory (none for a gateway).
    matrix_sockets: Vec<PathBuf>,
    /// Kept for channels that show who asks themselves (the loopback form).
    identity: Identity,
    hello: Bytes,
    /// The hello for a forwarded link: it names this machine, for the panel's label.
    hello_forwarded: Bytes,
    /// How long a forwarded link may say nothing before it is asked whether it is there,
    /// and then how long it has to answer ([`forward::watch_route`]).
    keepalive: Duration,
    state: Mutex<State>,
    link_count: watch::Sender<usize>,
    /// Told of every `welcome` and every link that ends, for [`Pool::welcomed`].
    welcomes: watch::Sender<()>,
    /// One scan at a time. A question opened while another scan is still connecting must
    /// wait for it: otherwise it finds no link yet and concludes no browser is there.
    scanning: tokio::sync::Mutex<()>,
    /// The link tasks, so that a process about to exit can let them write what it queued
    /// last (an `accepted`, a withdrawal) before its runtime goes.
    link_tasks: TaskTracker,
}

impl Shared {
    /// When no host is linked now but one was until `grace` ago: the moment the last one
    /// went.
    fn hosts_lost_within(&self, grace: Duration) -> Option<tokio::time::Instant> {
        let state = self.state();
        state
            .all_lost_at
            .filter(|at| state.browsers() == 0 && at.elapsed() < grace)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock would be a bug elsewhere; the table itself is
        // still consistent (every update is a single insert or remove), so keep going.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts the browsers' hosts only: the Matrix bridge is a channel beside them.
    fn publish_link_count(&self, state: &State) {
        self.link_count.send_replace(state.browsers());
    }

    fn is_matrix(&self, socket: &Path) -> bool {
        self.matrix_sockets.iter().any(|s| s == socket)
    }
}

/// Links to every host, shared by all questions of one agent session.
#[derive(Clone)]
pub struct Pool {
    shared: Arc<Shared>,
}

impl Pool {
    /// A pool of the hosts in `runtime_dirs` only (and their Matrix bridges).
    pub fn new(runtime_dirs: Vec<PathBuf>, identity: Identity) -> Pool {
        let matrix = runtime_dirs
            .iter()
            .map(|d| runtime::matrix_socket(d))
            .collect();
        Pool::build(runtime_dirs, None, matrix, identity, None)
    }

    /// A pool of every host §1 finds for this process: the runtime directories, and the
    /// gateways of other machines that SSH forwarded here.
    pub fn for_runtime(located: &runtime::Located, identity: Identity) -> Pool {
        let search = located.search();
        let matrix = search.iter().map(|d| runtime::matrix_socket(d)).collect();
        Pool::build(search, located.forwarded.clone(), matrix, identity, None)
    }

    /// The pool with `route` deciding when a question goes to the Matrix bridge (`HIM_MATRIX`,
    /// `HIM_AWAY_MS`), and a browser whose last host ended less than `restart_grace` ago
    /// (`HIM_RECONNECT_GRACE_MS`) waited for as a browser still there;
    /// `MatrixRoute::default()` and no grace until set.
    pub fn with_matrix_route(self, route: MatrixRoute, restart_grace: Duration) -> Pool {
        {
            let mut state = self.shared.state();
            state.matrix_route = route;
            state.restart_grace = restart_grace;
        }
        self
    }

    /// Starts this user's Matrix bridge when Matrix is set up, this agent uses it, and none
    /// answers (`agent::matrix::ensure_running`), so the question about to be opened reaches it.
    pub async fn ensure_matrix(&self) {
        if self.matrix_route() == MatrixRoute::Never {
            return;
        }
        if let Some(dir) = self.shared.runtime_dirs.first()
            && !dir.as_os_str().is_empty()
        {
            crate::agent::matrix::ensure_running(dir).await;
        }
    }

    /// When questions go to the Matrix bridge.
    pub fn matrix_route(&self) -> MatrixRoute {
        self.shared.state().matrix_route
    }

    /// A gateway's pool: the local hosts only (never a forwarded socket, which could lead
    /// back), saying in `hello` that its agent runs on `machine`.
    pub fn for_gateway(
        runtime_dirs: Vec<PathBuf>,
        identity: Identity,
        machine: Option<String>,
    ) -> Pool {
        Pool::build(runtime_dirs, None, Vec::new(), identity, machine)
    }

    fn build(
        runtime_dirs: Vec<PathBuf>,
        forwarded: Option<PathBuf>,
        matrix_sockets: Vec<PathBuf>,
        identity: Identity,
        machine: Option<String>,
    ) -> Pool {
        let hello_naming = |machine: Option<String>| {
            protocol::encode(&AgentToHost::Hello {
                protocol: PROTOCOL,
                agent: identity.agent.clone(),
                project: identity.project.clone(),
                pid: std::process::id(),
                verdicts: true,
                machine,
            })
        };
        let hello = hello_naming(machine);
        let hello_forwarded = hello_naming(runtime::hostname());
        Pool {
            shared: Arc::new(Shared {
                runtime_dirs,
                forwarded,
                matrix_sockets,
                identity,
                hello,
                hello_forwarded,
                keepalive: forward::keepalive(),
                state: Mutex::new(State::default()),
                link_count: watch::channel(0).0,
                welcomes: watch::channel(()).0,
                scanning: tokio::sync::Mutex::new(()),
                link_tasks: TaskTracker::new(),
            }),
        }
    }

    /// Who asks, as every host is told.
    pub fn identity(&self) -> &Identity {
        &self.shared.identity
    }

    /// Connects to any host not yet linked. Returns how many browsers' hosts are linked
    /// now (the Matrix bridge is not one).
    pub async fn scan(&self) -> usize {
        scan(&self.shared).await;
        self.shared.state().browsers()
    }

    /// The Matrix bridge, when one is linked: what it told us about itself.
    pub fn matrix(&self) -> Option<HostStatus> {
        let state = self.shared.state();
        let link = state.links.values().find(|l| l.status.matrix)?;
        Some(link.status.clone())
    }

    /// Whether `host` (as a [`HostEvent`] names it) is the Matrix bridge.
    pub fn is_matrix(&self, host: &Path) -> bool {
        self.shared.is_matrix(host)
    }

    /// Waits, up to `within`, until every linked host has answered our `hello`, so that
    /// [`Pool::hosts`] tells what each host said rather than the blank of a link just made
    /// (issue 22.14: a session's first `human_input_status` said no extension and the
    /// panel closed). A host answers `hello` at once; the bound is for one that is stuck.
    pub async fn welcomed(&self, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        // Subscribed before looking, so a welcome that comes in between is not missed.
        let mut changes = self.shared.welcomes.subscribe();
        while !self.shared.state().links.values().all(|link| link.welcomed) {
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return,
            }
        }
    }

    /// What each linked browser's host has told us about itself.
    pub fn hosts(&self) -> Vec<HostStatus> {
        let mut hosts: Vec<HostStatus> = self
            .shared
            .state()
            .links
            .values()
            .filter(|l| !l.status.matrix)
            .map(|l| l.status.clone())
            .collect();
        hosts.sort_by(|a, b| a.socket.cmp(&b.socket));
        hosts
    }

    /// Sends a question to every host (now and later) until the returned handle closes.
    pub async fn open(&self, ask: AskFrame) -> Question {
        scan(&self.shared).await;
        let (events_tx, events) = futures::channel::mpsc::unbounded();
        let AskFrame {
            id,
            bytes: ask_frame,
        } = ask;
        // Counted and subscribed under the lock that sends, so a host that dies right
        // after it got the question still shows up as a change of the count.
        let (sent_to, link_count) = {
            let mut state = self.shared.state();
            let sent_to = state.browsers();
            for link in state.links.values().filter(|l| !l.status.matrix) {
                let _ = link.outgoing.send(ask_frame.clone());
            }
            state.questions.insert(
                id.clone(),
                Entry {
                    ask_frame,
                    events: events_tx,
                    keep: None,
                    shown: false,
                    opened_at: tokio::time::Instant::now(),
                    to_matrix: false,
                },
            );
            state.route_to_matrix();
            if let MatrixRoute::Away(after) = state.matrix_route {
                route_to_matrix_again(&self.shared, after);
            }
            if !state.scanner {
                state.scanner = true;
                tokio::spawn(rescan_while_waiting(self.shared.clone()));
            }
            (sent_to, self.shared.link_count.subscribe())
        };
        Question {
            id,
            sent_to,
            events,
            link_count,
            shared: self.shared.clone(),
            closed: false,
            pool_gone: false,
            answered_by: None,
            kept: None,
        }
    }

    /// When no host is linked now but one was until `grace` ago: the moment the last one
    /// went. A service worker that restarts kills its host and starts a new one a moment
    /// later, so a question asked in between waits for it as one asked before would.
    pub fn hosts_lost_within(&self, grace: Duration) -> Option<tokio::time::Instant> {
        self.shared.hosts_lost_within(grace)
    }

    /// Writes open question `id` to the answer store now, if it would be kept were its call
    /// to end unanswered now (see [`Question::close`]), for a call that returns `pending`
    /// while the question stays open (`agent/pending.rs`): kept until `HIM_KEEP_MS` after
    /// `deadline_ms`, its own deadline. From then on it is a question from the store: kept
    /// however its wait ends unanswered, and its answer written into the same record by what
    /// waits on it. Nothing goes to the hosts: the card stays as it is. `None` when it would
    /// not be kept (no plan or store, or no browser's own host has it).
    pub fn keep_pending(&self, id: &str, deadline_ms: u64) -> Option<Kept> {
        let mut state = self.shared.state();
        let State {
            questions, links, ..
        } = &mut *state;
        let entry = questions
            .get_mut(id)
            .filter(|entry| would_keep(entry, links))?;
        let plan = entry.keep.as_mut()?;
        let kept = keep_in_store(
            &self.shared.identity,
            id,
            &entry.ask_frame,
            plan,
            deadline_ms,
            true,
        );
        if matches!(kept, Kept::Until(_)) {
            plan.from_store = true;
            plan.pending = true;
        }
        Some(kept)
    }

    /// Withdraws every open question (the agent is going away).
    ///
    /// The links close too, once their queued withdrawals are written: each link task ends
    /// when its queue's sender is dropped here. Without this, every ended HTTP session
    /// would keep a socket and two tasks per host for as long as the host runs.
    pub fn shutdown(&self) {
        // One hold of the lock, the store written under it: a call that closes its question
        // meanwhile must find it gone, and send nothing before these withdrawals.
        let mut state = self.shared.state();
        let linked = !state.links.is_empty();
        let host_keeps = a_host_keeps(state.links.values());
        let entries: Vec<(String, Entry)> = state.questions.drain().collect();
        for (id, entry) in entries {
            // The client went away without its answers: those a browser has stay answerable.
            let kept = entry
                .keep
                .as_ref()
                .filter(|plan| plan.from_store || host_keeps && (entry.shown || linked))
                .map(|plan| {
                    let now = crate::platform::clock::unix_ms();
                    keep_in_store(
                        &self.shared.identity,
                        &id,
                        &entry.ask_frame,
                        plan,
                        now,
                        false,
                    )
                });
            let frame = withdraw_frame(&id, WithdrawReason::Shutdown, kept.as_ref(), None);
            for link in state.links.values().filter(|l| State::link_has(l, &entry)) {
                let _ = link.outgoing.send(frame.clone());
            }
        }
        state.closed = true;
        state.links.clear();
        self.shared.publish_link_count(&state);
    }

    /// As [`Pool::shutdown`], then waits up to `within` for every link to have written
    /// what was queued on it and closed, for a process that exits next (`him ask`, a hook,
    /// `him serve` at the end of its session). Without the wait the runtime would go with
    /// the last frames unwritten: the host would see the link close before the `accepted`
    /// of the answer it relayed, and tell the person their answer was not delivered.
    pub async fn close(&self, within: Duration) {
        self.shutdown();
        self.shared.link_tasks.close();
        if tokio::time::timeout(within, self.shared.link_tasks.wait())
            .await
            .is_err()
        {
            tracing::debug!("host links still open at exit");
        }
    }
}

/// What [`Question::next_signal`] saw.
#[derive(Debug, Clone, PartialEq)]
pub enum Signal {
    /// `None` when the pool can no longer deliver events.
    Event(Option<HostEvent>),
    Hosts(usize),
}

/// One open question. Dropping it withdraws the question from every host. Its waits
/// (`wait_alone`, `wait_beside`) and `close_as` are in `agent/wait.rs`.
pub struct Question {
    id: String,
    sent_to: usize,
    events: EventReceiver,
    link_count: watch::Receiver<usize>,
    shared: Arc<Shared>,
    closed: bool,
    pool_gone: bool,
    /// Who answered, as the Matrix bridge said (`Answer::answered_by`).
    answered_by: Option<String>,
    kept: Option<Kept>,
}

impl Question {
    /// Who answered, when the Matrix bridge relayed the answer that ended the wait.
    pub fn answered_by(&self) -> Option<&str> {
        self.answered_by.as_deref()
    }

    pub fn set_answered_by(&mut self, who: Option<String>) {
        self.answered_by = who;
    }

    /// Keep this question as `plan` says should its call end unanswered (timed out or
    /// cancelled) once a person saw it.
    pub fn keep_if_unanswered(&self, plan: KeepPlan) {
        if let Some(entry) = self.shared.state().questions.get_mut(&self.id) {
            entry.keep = Some(plan);
        }
    }

    /// Whether, and until when, the question was kept when it closed.
    pub fn kept(&self) -> Option<&Kept> {
        self.kept.as_ref()
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether `host` is the Matrix bridge rather than a browser's host.
    pub fn is_matrix(&self, host: &Path) -> bool {
        self.shared.is_matrix(host)
    }

    /// How many browsers' hosts the question was sent to when it was opened.
    pub fn sent_to(&self) -> usize {
        self.sent_to
    }

    /// Browsers' hosts linked right now.
    pub fn hosts(&self) -> usize {
        *self.link_count.borrow()
    }

    /// As [`Pool::hosts_lost_within`].
    pub fn hosts_lost_within(&self, grace: Duration) -> Option<tokio::time::Instant> {
        self.shared.hosts_lost_within(grace)
    }

    /// The next thing that happens to this question: a host said something about it, or the
    /// number of linked hosts changed.
    pub async fn next_signal(&mut self) -> Signal {
        tokio::select! {
            // Cancel-safe: `next` takes nothing from the channel until it returns.
            event = futures::StreamExt::next(&mut self.events) => Signal::Event(event),
            changed = self.link_count.changed(), if !self.pool_gone => {
                if changed.is_err() {
                    self.pool_gone = true;
                }
                Signal::Hosts(*self.link_count.borrow_and_update())
            }
        }
    }

    /// Whether `host` takes verdicts, and whether its extension can correct a refused
    /// answer (see [`HostStatus::verdicts`]); `None` for a host no longer linked.
    pub fn verdicts(&self, host: &Path) -> Option<bool> {
        self.shared.state().links.get(host)?.status.verdicts
    }

    /// Tells `host`, whose answer did not fit, why; the question stays open there for the
    /// person to correct the answer, and everywhere else as it was.
    pub fn refuse(&self, host: &Path, field: Option<String>, message: String) {
        let frame = protocol::encode(&AgentToHost::Refused(Refusal {
            id: self.id.clone(),
            field,
            message,
        }));
        if let Some(link) = self.shared.state().links.get(host) {
            let _ = link.outgoing.send(frame);
        }
    }

    /// Ends the question and withdraws it from every host but `answered_by`, whose answer
    /// ended it: that host is told the answer was accepted (one that takes no verdicts
    /// already forgot the question when it relayed the answer).
    ///
    /// Closed unanswered (`timeout`, `cancelled`), a question with a keep plan that a person
    /// saw is kept (see [`Question::kept`]); answered, one asked again from the store leaves it.
    pub fn close(&mut self, reason: WithdrawReason, answered_by: Option<&Path>) {
        self.close_keeping(reason, answered_by, true);
    }

    /// As [`Question::close`], never keeping it: it was not in front of the person.
    pub fn close_unkept(&mut self, reason: WithdrawReason) {
        self.close_keeping(reason, None, false);
    }

    fn close_keeping(
        &mut self,
        reason: WithdrawReason,
        answered_by: Option<&Path>,
        may_keep: bool,
    ) {
        if self.closed {
            return;
        }
        self.closed = true;
        // One hold of the lock, as in `Pool::shutdown`: the store is written under it.
        let mut state = self.shared.state();
        let entry = state.questions.remove(&self.id);
        let linked = !state.links.is_empty();
        let host_keeps = a_host_keeps(state.links.values());
        if let Some(Entry {
            keep: Some(plan),
            shown,
            ask_frame,
            ..
        }) = &entry
        {
            let unanswered = reason == WithdrawReason::Timeout
                || (reason == WithdrawReason::Cancelled && plan.if_cancelled);
            if may_keep && unanswered && (plan.from_store || host_keeps && (*shown || linked)) {
                self.kept = Some(keep_in_store(
                    &self.shared.identity,
                    &self.id,
                    ask_frame,
                    plan,
                    crate::platform::clock::unix_ms(),
                    false,
                ));
            } else if plan.from_store
                && !plan.pending
                && (reason == WithdrawReason::Answered
                    || reason == WithdrawReason::Cancelled && !plan.if_cancelled)
                && let Ok(store) = &plan.store
            {
                // Answered, or a task cancelled by its agent: the question is over.
                store.remove(&self.id);
            }
        }
        // Answered on the phone: the panels' cards say so, and by whom.
        let by_matrix = answered_by
            .filter(|host| self.shared.is_matrix(host))
            .map(|_| self.answered_by.as_deref());
        let frame = withdraw_frame(&self.id, reason, self.kept.as_ref(), by_matrix);
        let had = |link: &Link| entry.as_ref().is_none_or(|e| State::link_has(link, e));
        for (path, link) in state.links.iter().filter(|(_, l)| had(l)) {
            if Some(path.as_path()) != answered_by {
                let _ = link.outgoing.send(frame.clone());
            } else if link.status.verdicts.is_some() {
                let accepted = AgentToHost::Accepted {
                    id: self.id.clone(),
                };
                let _ = link.outgoing.send(protocol::encode(&accepted));
            }
        }
    }
}

impl Drop for Question {
    fn drop(&mut self) {
        // Dropped without a word (the question went back to the chat): nothing is kept.
        self.close_keeping(WithdrawReason::Cancelled, None, false);
    }
}

/// Looks at which questions are due on the Matrix bridge once more after `after` (the away
/// time, or the grace of a restarting browser), unless the pool is gone by then.
fn route_to_matrix_again(shared: &Arc<Shared>, after: Duration) {
    let shared = Arc::downgrade(shared);
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        if let Some(shared) = shared.upgrade() {
            shared.state().route_to_matrix();
        }
    });
}

async fn rescan_while_waiting(shared: Arc<Shared>) {
    loop {
        tokio::time::sleep(RESCAN_INTERVAL).await;
        {
            let mut state = shared.state();
            if state.questions.is_empty() {
                state.scanner = false;
                return;
            }
        }
        scan(&shared).await;
    }
}

async fn scan(shared: &Arc<Shared>) {
    let _turn = shared.scanning.lock().await;
    let (candidates, forwarded, bridges): (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>) = {
        let state = shared.state();
        if state.closed {
            return;
        }
        let candidates = shared
            .runtime_dirs
            .iter()
            .flat_map(|dir| runtime::list_host_sockets(dir))
            .filter(|p| !state.links.contains_key(p))
            .collect();
        let matrix_used = state.matrix_route != MatrixRoute::Never;
        let bridges: Vec<PathBuf> = shared
            .matrix_sockets
            .iter()
            .filter(|p| matrix_used && !state.links.contains_key(*p) && p.exists())
            .cloned()
            .collect();
        let forwarded = shared
            .forwarded
            .iter()
            .flat_map(|dir| runtime::list_forwarded_sockets(dir))
            .filter(|p| !state.links.contains_key(p) && !state.spare_routes.contains(p))
            .collect();
        (candidates, forwarded, bridges)
    };
    // Only a private directory is trusted with connections and clean-up (DESIGN.md §1):
    // in one that others can write, a "stale socket" could be anyone's file. Checked only
    // when there is something new, so a wait with no new host costs nothing extra.
    let candidates = candidates.into_iter().filter(|path| {
        path.parent()
            .and_then(Path::parent)
            .is_some_and(runtime_dir_is_private)
    });
    for path in candidates {
        let result = connect(&path).await;
        let mut state = shared.state();
        match result {
            Ok(stream) => attach(shared, &mut state, path, stream),
            Err(err) if err.kind() == io::ErrorKind::ConnectionRefused => {
                // Nobody listens: a host that died without cleaning up; unless its process
                // is alive, when it is still between bind and listen.
                if !runtime::socket_owner_alive(&path) {
                    tracing::debug!(socket = %path.display(), "removing stale host socket");
                    let _ = std::fs::remove_file(&path);
                }
            }
            Err(err) => tracing::debug!(socket = %path.display(), "cannot use host socket: {err}"),
        }
    }
    // The Matrix bridge's socket is never removed here: only the bridge that holds its
    // folder's lock binds or removes it.
    for path in bridges {
        if !path.parent().is_some_and(bridge_dir_is_private) {
            continue;
        }
        match connect(&path).await {
            Ok(stream) => {
                let mut state = shared.state();
                let status = HostStatus {
                    socket: path,
                    matrix: true,
                    ..HostStatus::default()
                };
                link_queue(
                    shared,
                    &mut state,
                    status,
                    stream,
                    Some(shared.hello.clone()),
                );
            }
            Err(err) => tracing::debug!(socket = %path.display(), "no Matrix bridge there: {err}"),
        }
    }
    // Forwarded gateways after the local hosts, each tried in a task of its own. The scan
    // (which a new question waits for) waits for them only up to FIRST_LOOK: a live
    // gateway answers well within it, while a silent far end (a laptop asleep, a network
    // gone while sshd listens on) would hold up every question for the whole handshake.
    // A try that outlives it goes on aside and links the gateway if it answers; one that
    // ends silent marks the route quiet, tried again only aside.
    // Every forwarded socket is in the one folder: judged once, when there is any.
    let trusted = forwarded.is_empty()
        || shared
            .forwarded
            .as_deref()
            .is_some_and(forwarded_dir_is_private);
    let forwarded = if trusted { forwarded } else { Vec::new() };
    let tries: Vec<_> = forwarded
        .into_iter()
        .filter_map(|path| {
            let mut state = shared.state();
            if !state.route_tries.insert(path.clone()) {
                return None; // being tried already
            }
            let awaited = !state.quiet_routes.contains(&path);
            drop(state);
            let task = tokio::spawn(try_route(shared.clone(), path));
            awaited.then_some(task)
        })
        .collect();
    let _ = tokio::time::timeout(FIRST_LOOK, futures::future::join_all(tries)).await;
}

/// How long a scan waits for forwarded gateways to answer (see [`scan`]). Through
/// `ssh -N -R` the first byte takes ~44 ms (FACTS.md).
const FIRST_LOOK: Duration = Duration::from_millis(1500);

/// Tries one forwarded socket and links the gateway behind it, or marks the route quiet.
async fn try_route(shared: Arc<Shared>, path: PathBuf) {
    let outcome = forward::reach(&path, &shared.hello_forwarded, shared.keepalive).await;
    {
        let mut state = shared.state();
        state.route_tries.remove(&path);
        if matches!(outcome, Err(forward::Unreached::Quiet)) {
            state.quiet_routes.insert(path.clone());
        } else {
            state.quiet_routes.remove(&path);
        }
    }
    if let Ok((path, stream, welcome)) = outcome {
        adopt_gateway(&shared, path, stream, welcome);
    }
}

/// Links a gateway reached through a forwarded socket, unless it is one already linked by
/// another route (a second SSH connection to the same machine).
fn adopt_gateway(shared: &Arc<Shared>, path: PathBuf, stream: UnixStream, welcome: HostStatus) {
    let mut state = shared.state();
    let duplicate = state.links.values().any(|link| {
        link.status.machine.is_some()
            && link.status.machine == welcome.machine
            && link.status.host_pid == welcome.host_pid
    });
    if duplicate {
        tracing::debug!(socket = %path.display(), "a second route to a linked gateway");
        state.spare_routes.insert(path);
        return;
    }
    let status = HostStatus {
        socket: path.clone(),
        ..welcome
    };
    attach_after_hello(shared, &mut state, status, stream);
}

/// The forwarded folder must be ours and private, as a runtime directory. Its parent is
/// not judged: in a container it is made by the engine for the bind mount, and one that
/// another user swapped in would be theirs, which this check refuses.
fn forwarded_dir_is_private(dir: &Path) -> bool {
    match runtime::check_private_dir(dir, runtime::current_uid()) {
        Ok(()) => true,
        Err(err) => {
            tracing::warn!("not using any forwarded gateway: {err}");
            false
        }
    }
}

/// Starts [`tidy_forwarded`] for this process's forwarded folder, if it has one: `him
/// serve` keeps the name SSH binds free whether or not its session ever asks (DESIGN.md §10).
pub fn spawn_tidy(located: &runtime::Located) {
    if let Some(dir) = located.forwarded.clone() {
        tokio::spawn(tidy_forwarded(dir));
    }
}

/// For as long as the process runs (`him serve`): a socket at the name SSH binds in the
/// forwarded folder `dir` is removed when it refuses (its connection is gone) and moved to a
/// name of its own when it is live, so that the next SSH connection's bind finds the name
/// free. Sockets under their own names are judged by the scans of questions, and the
/// doctor: a stale one there blocks nothing.
pub async fn tidy_forwarded(dir: PathBuf) {
    loop {
        // Judged quietly: a folder that fails is reported when a question looks there.
        if runtime::check_private_dir(&dir, runtime::current_uid()).is_ok() {
            for path in runtime::list_forwarded_sockets(&dir) {
                if forward::is_bind_name(&path) {
                    forward::tidy(&path).await;
                }
            }
        }
        tokio::time::sleep(forward::TIDY_INTERVAL).await;
    }
}

/// Once, every socket in the forwarded folder `dir`, as [`tidy_forwarded`] does the name
/// SSH binds: refused ones removed, a live one at the bind name moved to a name of its own
/// (`him tidy-forwarded`, from `~/.ssh/rc` at each session's start). Returns the refused
/// sockets it removed from a bind name; an unsafe folder is an error, since agents refuse it.
pub async fn tidy_forwarded_once(dir: &Path) -> Result<Vec<PathBuf>, runtime::RuntimeError> {
    runtime::check_private_dir(dir, runtime::current_uid())?;
    let mut blocking = Vec::new();
    for path in runtime::list_forwarded_sockets(dir) {
        let removed = forward::tidy(&path).await == forward::Tidied::Removed;
        if removed && forward::is_bind_name(&path) {
            blocking.push(path);
        }
    }
    Ok(blocking)
}

/// The bridge's folder and the runtime directory it is in must be ours and private.
fn bridge_dir_is_private(dir: &Path) -> bool {
    let uid = runtime::current_uid();
    let runtime_dir = dir.parent().unwrap_or(dir);
    let verdict = runtime::check_private_dir(runtime_dir, uid)
        .and_then(|()| runtime::check_private_dir(dir, uid));
    match verdict {
        Ok(()) => true,
        Err(err) => {
            tracing::warn!("not using the Matrix bridge: {err}");
            false
        }
    }
}

fn runtime_dir_is_private(runtime_dir: &Path) -> bool {
    let uid = runtime::current_uid();
    let verdict = runtime::check_private_dir(runtime_dir, uid)
        .and_then(|()| runtime::check_private_dir(&runtime::hosts_dir(runtime_dir), uid));
    match verdict {
        Ok(()) => true,
        Err(err) => {
            tracing::warn!("not using any browser: {err}");
            false
        }
    }
}

async fn connect(path: &Path) -> io::Result<UnixStream> {
    let stream = UnixStream::connect(path).await?;
    let cred = stream.peer_cred()?;
    if cred.uid() != runtime::current_uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("host socket belongs to uid {}, not us", cred.uid()),
        ));
    }
    Ok(stream)
}

/// Registers a new link and queues, in order, the hello and every open question. Done
/// under the lock, so a question opened concurrently is sent exactly once.
fn attach(shared: &Arc<Shared>, state: &mut State, path: PathBuf, stream: UnixStream) {
    let status = HostStatus {
        socket: path,
        ..HostStatus::default()
    };
    link_queue(shared, state, status, stream, Some(shared.hello.clone()));
}

/// As [`attach`], for a link whose hello was sent and answered already.
fn attach_after_hello(
    shared: &Arc<Shared>,
    state: &mut State,
    status: HostStatus,
    stream: UnixStream,
) {
    link_queue(shared, state, status, stream, None);
}

fn link_queue(
    shared: &Arc<Shared>,
    state: &mut State,
    status: HostStatus,
    stream: UnixStream,
    hello: Option<Bytes>,
) {
    if state.closed {
        // Shut down while this link was being made: it would stay open for nothing.
        return;
    }
    let path = status.socket.clone();
    let (outgoing, queue) = mpsc::unbounded_channel();
    // A link whose hello went before it was adopted (a forwarded gateway) came with its
    // welcome.
    let welcomed = hello.is_none();
    if let Some(hello) = hello {
        let _ = outgoing.send(hello);
    }
    for entry in state.questions.values() {
        if !status.matrix || entry.to_matrix {
            let _ = outgoing.send(entry.ask_frame.clone());
        }
    }
    // Only a forwarded link can die without a word: a local host that goes away closes it.
    let keepalive = status
        .forwarded
        .then(|| (outgoing.downgrade(), shared.keepalive));
    state.links.insert(
        path.clone(),
        Link {
            outgoing,
            status,
            welcomed,
        },
    );
    shared.publish_link_count(state);
    state.route_to_matrix();
    shared
        .link_tasks
        .spawn(run_link(shared.clone(), path, stream, queue, keepalive));
}

async fn run_link(
    shared: Arc<Shared>,
    path: PathBuf,
    stream: UnixStream,
    queue: mpsc::UnboundedReceiver<Bytes>,
    keepalive: Option<(mpsc::WeakUnboundedSender<Bytes>, Duration)>,
) {
    let mut end = HostEnd {
        shared: &shared,
        path: &path,
    };
    match keepalive {
        None => {
            link::run(stream, queue, &mut end).await;
        }
        Some((outgoing, every)) => {
            let heard = Arc::new(tokio::sync::Notify::new());
            let in_flight = Arc::new(forward::InFlight::default());
            let (read, write) = stream.into_split();
            let read = forward::Heard::new(read, heard.clone());
            let write = forward::Said::new(write, in_flight.clone());
            tokio::select! {
                _ = link::run_halves(read, write, queue, &mut end) => {}
                () = forward::watch_route(&heard, &outgoing, every, &in_flight) => {
                    tracing::info!(
                        socket = %path.display(),
                        "no word through the forwarded socket for {} ms after a ping: the \
                         route is gone (a network lost without a goodbye)",
                        every.as_millis()
                    );
                }
            }
        }
    }
    let mut state = shared.state();
    let ended = state.links.remove(&path);
    // A browser whose panel was open restarting its host (its service worker): that panel
    // is still there, whatever the other browsers' panels are.
    if ended.is_some_and(|link| link.status.panel_open && !link.status.matrix) {
        state.open_panel_lost_at = Some(tokio::time::Instant::now());
        if state.matrix_route != MatrixRoute::Never {
            route_to_matrix_again(&shared, state.restart_grace);
        }
    }
    // A spare route may be the way to that gateway now.
    state.spare_routes.clear();
    if state.browsers() == 0 && !shared.is_matrix(&path) {
        state.all_lost_at = Some(tokio::time::Instant::now());
        if state.matrix_route != MatrixRoute::Never {
            route_to_matrix_again(&shared, state.restart_grace);
        }
    }
    shared.publish_link_count(&state);
    // The last browser gone: the phone is the way to the person now, or once the grace for
    // a restarting service worker has passed without a new host.
    state.route_to_matrix();
    // A host gone before its welcome is no longer waited for.
    shared.welcomes.send_replace(());
}

/// The agent's end of one host link: frames from the host go to their questions.
struct HostEnd<'a> {
    shared: &'a Shared,
    path: &'a Path,
}

impl link::Policy for HostEnd<'_> {
    async fn frame(&mut self, frame: Bytes) -> bool {
        host_frame(self.shared, self.path, &frame);
        true
    }

    fn bad_frame(&mut self, err: &FrameError) -> Option<Bytes> {
        tracing::warn!(socket = %self.path.display(), "host link closed: {err}");
        None
    }

    fn linger(&self) -> Option<Duration> {
        // The pool closed: the host must still read the withdrawals we queued last.
        Some(CLOSE_GRACE)
    }
}

fn host_frame(shared: &Shared, path: &Path, bytes: &[u8]) {
    let message = match protocol::decode::<HostToAgent>(bytes) {
        Ok(message) => message,
        Err(err) => {
            tracing::warn!(socket = %path.display(), "ignoring a bad frame from the host: {err}");
            return;
        }
    };
    let mut state = shared.state();
    let to_question = |state: &State, id: &str, event: HostEvent| {
        if let Some(entry) = state.questions.get(id) {
            let _ = entry.events.unbounded_send(event);
        }
    };
    match message {
        HostToAgent::Welcome(welcome) => {
            if let Some(link) = state.links.get_mut(path) {
                link.status.welcomed_by(welcome);
                link.welcomed = true;
            }
            // The panel opened or closed, or a host said so the first time.
            state.route_to_matrix();
            shared.welcomes.send_replace(());
        }
        HostToAgent::Shown { id } => {
            if let Some(entry) = state.questions.get_mut(&id) {
                entry.shown = true;
            }
            to_question(
                &state,
                &id,
                HostEvent::Shown {
                    host: path.to_owned(),
                },
            );
        }
        HostToAgent::Answer(answer) => {
            let id = answer.id.clone();
            to_question(
                &state,
                &id,
                HostEvent::Answer {
                    host: path.to_owned(),
                    answer: Box::new(answer),
                },
            );
        }
        HostToAgent::Error {
            id: Some(id),
            message,
        } => {
            to_question(
                &state,
                &id,
                HostEvent::Refused {
                    host: path.to_owned(),
                    message,
                },
            );
        }
        // An older host or gateway answers a keep-alive `ping` so: alive, and no news.
        HostToAgent::Error { id: None, message } if message.contains("\"ping\"") => {
            tracing::debug!(socket = %path.display(), "host reported: {message}");
        }
        HostToAgent::Error { id: None, message } => {
            tracing::warn!(socket = %path.display(), "host reported: {message}");
        }
        HostToAgent::Pong => {}
    }
}
