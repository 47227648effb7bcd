//! `him matrix bridge`: one per user, kept by the lock in `<runtime>/matrix/`. Towards agents
//! it is a host (the native host's relay on `<runtime>/matrix/bridge.sock`, its `welcome`
//! saying `kind: "matrix"`); its "extension" is the room: each question is posted there
//! (`render.rs`), and a vote or a reply of an answerer goes back as the answer, judged by
//! the agent like any other. First answer wins across every surface, as between browsers:
//! the agent withdraws the question here when it was answered elsewhere, and the message
//! says so (a poll is ended).
//!
//! It exits once no question has been open for `HIM_MATRIX_IDLE_MS` (default 10 minutes);
//! the next question starts it again. A bridge stopped while questions are open loses
//! nothing: each posted question's event is kept in `<state>/matrix/posted.json`, the sync
//! position in the store, so a bridge started again takes the agent's re-sent question (same
//! id) as the one already in the room, and the votes and replies given meanwhile as its
//! answers.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use matrix_sdk::config::SyncSettings;
use matrix_sdk::ruma::events::poll::unstable_response::OriginalSyncUnstablePollResponseEvent;
use matrix_sdk::ruma::events::room::message::{OriginalSyncRoomMessageEvent, Relation};
use matrix_sdk::ruma::{OwnedEventId, OwnedUserId, RoomId, UserId};
use matrix_sdk::{Client, Room};
use serde_json::json;
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio::net::UnixListener;
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};

use him::BoxError;
use him::form::Form;
use him::host::HostError;
use him::wire::frame::{FrameCodec, MAX_INBOUND};
use him::wire::protocol::{
    self, Action, Answer, ExtensionInfo, ExtensionToHost, HostInfo, HostToExtension, LabelledAsk,
    MATRIX_KIND, PROTOCOL, WithdrawReason,
};
use him::wire::runtime;

use super::permission;
use super::render::{self, Shape};
use super::store::{self, ROOM_FIRST, RoomConfig};
use super::thread;

/// The running bridge's pid, in `<runtime>/matrix/` beside its lock.
pub const PID_FILE: &str = "bridge.pid";

/// Where each question posted and still open is kept, id → event.
const POSTED_FILE: &str = "posted.json";

/// A question in the room, as kept across restarts.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Posted {
    event: OwnedEventId,
    /// When its agent stops waiting (Unix ms): forgotten after.
    until_ms: u64,
    /// A permission prompt's poll beside the message, and the code that allows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    poll: Option<OwnedEventId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    /// A form in a thread: how far the person is, so a bridge started again goes on from
    /// there (never a password: such forms are not asked over Matrix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    progress: Option<thread::Progress>,
}

/// At most this many closed questions are remembered, to tell a late answer it is late.
const CLOSED_MAX: usize = 256;

/// At most this many votes and replies wait for a question not yet re-sent after a restart.
const EARLY_MAX: usize = 256;

/// How long the bridge stays with no question open, unless `HIM_MATRIX_IDLE_MS` says.
const IDLE: Duration = Duration::from_secs(600);

/// The longest wait between two tries to reach the homeserver.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// How long one sync waits on the homeserver for news.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

pub fn run() -> Result<ExitCode, BoxError> {
    him::platform::logging::init();
    let config = him::config::Config::from_env()?;
    let runtime_dir = config.runtime.dir.clone();
    if runtime_dir.as_os_str().is_empty() {
        return Err("no runtime directory (see `him doctor`)".into());
    }
    let Some(lock) = him::host::gateway::lock_in(&runtime_dir, &runtime::matrix_dir(&runtime_dir))?
    else {
        tracing::info!("a Matrix bridge already runs for this user");
        return Ok(ExitCode::SUCCESS);
    };
    // Who holds the lock, for `him matrix verify`, which asks the bridge to stop.
    let pid_file = runtime::matrix_dir(&runtime_dir).join(PID_FILE);
    if let Err(err) = std::fs::write(&pid_file, std::process::id().to_string()) {
        tracing::warn!("cannot write {}: {err}", pid_file.display());
    }
    let idle = std::env::var("HIM_MATRIX_IDLE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(IDLE, Duration::from_millis);
    let result = super::runtime()?.block_on(serve(&runtime_dir, idle));
    drop(lock);
    result.map(|()| ExitCode::SUCCESS)
}

/// Binds the bridge's socket; only the lock holder calls this, so a file there is stale.
fn bind(runtime_dir: &Path) -> Result<(UnixListener, PathBuf), HostError> {
    him::host::bind_over(runtime::matrix_socket(runtime_dir))
}

async fn serve(runtime_dir: &Path, idle: Duration) -> Result<(), BoxError> {
    let dir = store::dir()?;
    let room: RoomConfig = store::read(&dir, him::agent::matrix::ROOM_FILE, ROOM_FIRST)?;
    // Refused before listening: agents would link to a bridge about to leave.
    let _: store::Session = store::read(&dir, store::SESSION_FILE, store::LOGIN_FIRST)?;
    let (host_end, bridge_end) = tokio::io::duplex(256 * 1024);
    let (host_read, host_write) = tokio::io::split(host_end);
    let info = HostInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        pid: Some(std::process::id()),
        machine: None,
        kind: Some(MATRIX_KIND.into()),
    };
    // Listening first: agents link at once, and their questions wait in the pipe while the
    // client restores its session and makes its first sync.
    let host = him::host::run_on(
        || bind(runtime_dir),
        info,
        host_read,
        host_write,
        him::host::AGENT_STALL,
        // Questions kept for their agent after its call ended stay answerable here, the
        // answer written to the same store as a browser's host writes it (`him::wire::keep`).
        him::wire::keep::Store::locate().ok(),
    );
    let room_side = run_room(bridge_end, &dir, room, idle);
    tokio::select! {
        result = host => result.map_err(BoxError::from),
        result = room_side => result,
    }
}

/// What the room said that may answer a question.
#[derive(Debug)]
enum FromRoom {
    Reply {
        to: OwnedEventId,
        event: OwnedEventId,
        sender: OwnedUserId,
        body: String,
    },
    Vote {
        poll: OwnedEventId,
        event: OwnedEventId,
        sender: OwnedUserId,
        answers: Vec<String>,
    },
}

impl FromRoom {
    fn target(&self) -> &OwnedEventId {
        match self {
            FromRoom::Reply { to, .. } => to,
            FromRoom::Vote { poll, .. } => poll,
        }
    }
}

/// A question posted in the room.
struct Open {
    form: Form,
    shape: Shape,
    event: OwnedEventId,
    /// The text posted, for the edit that closes it.
    body: String,
    /// The answerer whose answer awaits the agent's verdict, and the event that gave it.
    judged: Option<(OwnedUserId, OwnedEventId)>,
    /// Its agent stopped waiting and kept it: the answer goes to the store (`him::wire::keep`).
    kept: bool,
    /// A permission prompt's poll (Deny), beside the message.
    poll: Option<OwnedEventId>,
    /// Answerers' votes and replies that came while an earlier one was judged: each is told
    /// how that one fared.
    later: Vec<OwnedEventId>,
    /// A form asked in a thread: how far the person is (`thread.rs`).
    progress: thread::Progress,
}

/// The short code that allows a permission prompt from the phone: six digits from the OS's
/// random source, typed deliberately (no tap on a poll gives it).
fn allow_code() -> std::io::Result<String> {
    let hex = him::platform::random::random_hex(4)?;
    let n = u32::from_str_radix(&hex, 16).map_err(std::io::Error::other)?;
    Ok(format!("{:06}", n % 1_000_000))
}

/// What a question kept for its agent says in the room.
fn kept_note(until_ms: u64) -> String {
    format!(
        "The agent stopped waiting; your answer will be kept for it until {}.",
        him::wire::keep::rfc3339(until_ms)
    )
}

struct Bridge {
    dir: PathBuf,
    /// Questions posted and not yet closed, kept across restarts.
    posted: HashMap<String, Posted>,
    /// Votes and replies to an event of no open question, kept for one re-sent after a
    /// restart.
    early: Vec<FromRoom>,
    /// Questions closed here lately, by event: what an answer that comes after is told.
    closed: std::collections::VecDeque<(OwnedEventId, String)>,
    room: Room,
    me: OwnedUserId,
    answerers: HashSet<OwnedUserId>,
    to_host: FramedWrite<WriteHalf<DuplexStream>, FrameCodec>,
    open: HashMap<String, Open>,
    by_event: HashMap<OwnedEventId, String>,
    /// Questions whose post failed (the homeserver down or refusing): tried again every
    /// [`RETRY_POST`] until posted, withdrawn, or past their deadline.
    unposted: HashMap<String, LabelledAsk>,
}

/// How often a question that could not be posted is tried again.
const RETRY_POST: Duration = Duration::from_secs(5);

async fn run_room(
    io: DuplexStream,
    dir: &Path,
    config: RoomConfig,
    idle: Duration,
) -> Result<(), BoxError> {
    let (read, write) = tokio::io::split(io);
    let mut from_host: FramedRead<ReadHalf<DuplexStream>, FrameCodec> =
        FramedRead::new(read, FrameCodec::new(MAX_INBOUND));
    let mut to_host = FramedWrite::new(write, FrameCodec::new(MAX_INBOUND));
    let ready = ExtensionToHost::Ready {
        protocol: PROTOCOL,
        extension: ExtensionInfo {
            id: config.room_id.clone(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        browser: Some(MATRIX_KIND.into()),
        verdicts: true,
    };
    to_host.send(protocol::encode(&ready)).await?;

    let (client, session) = super::setup::restore(dir).await?;
    let me = UserId::parse(&session.user_id)?;
    let room_id = RoomId::parse(&config.room_id)?;
    let answerers = config.answerer_ids()?;
    let (events_tx, mut events) = mpsc::unbounded_channel::<FromRoom>();
    add_handlers(&client, &room_id, &me, events_tx);
    let room = first_sync(&client, &room_id).await;
    let encrypted = room.latest_encryption_state().await?.is_encrypted();
    if !encrypted && !config.allow_unencrypted {
        return Err(format!(
            "the room {room_id} is not end-to-end encrypted; him posts nothing there (run \
             `him matrix room` again, or give it --allow-unencrypted)"
        )
        .into());
    }
    write_status(dir, &client, &config.answerers).await;
    tokio::spawn(sync_forever(
        client.clone(),
        dir.to_owned(),
        config.answerers.clone(),
    ));

    let mut posted: HashMap<String, Posted> = store::read(dir, POSTED_FILE, "").unwrap_or_default();
    posted.retain(|_, p| p.until_ms > now_ms());
    let mut bridge = Bridge {
        dir: dir.to_owned(),
        posted,
        early: Vec::new(),
        closed: std::collections::VecDeque::new(),
        room,
        me,
        answerers,
        to_host,
        open: HashMap::new(),
        by_event: HashMap::new(),
        unposted: HashMap::new(),
    };
    let mut retry = tokio::time::interval(RETRY_POST);
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Votes and replies to an event no open question has (yet): a question posted before a
    // restart is asked again by its agent under the same id.
    let mut idle_timer = Box::pin(tokio::time::sleep(idle));
    loop {
        tokio::select! {
            frame = from_host.next() => match frame {
                Some(Ok(bytes)) => bridge.host_frame(&bytes).await?,
                _ => return Ok(()),
            },
            Some(event) = events.recv() => bridge.room_event(event).await?,
            _ = retry.tick(), if !bridge.unposted.is_empty() => bridge.post_again().await?,
            () = &mut idle_timer, if bridge.open.is_empty() && bridge.unposted.is_empty() => {
                tracing::info!("no question for {} ms; the Matrix bridge exits", idle.as_millis());
                return Ok(());
            }
        }
        if !bridge.open.is_empty() || !bridge.unposted.is_empty() {
            idle_timer
                .as_mut()
                .reset(tokio::time::Instant::now() + idle);
        }
    }
}

/// Replies and votes in the room, from anyone but the bot, go to the bridge's loop; who
/// may answer is judged there.
fn add_handlers(
    client: &Client,
    room_id: &RoomId,
    me: &UserId,
    events: mpsc::UnboundedSender<FromRoom>,
) {
    let tx = events.clone();
    let bot = me.to_owned();
    client.add_room_event_handler(room_id, move |ev: OriginalSyncRoomMessageEvent| {
        let tx = tx.clone();
        let bot = bot.clone();
        async move {
            if ev.sender == bot {
                return;
            }
            let to = match &ev.content.relates_to {
                Some(Relation::Reply(reply)) => reply.in_reply_to.event_id.clone(),
                Some(Relation::Thread(thread)) => thread.event_id.clone(),
                _ => return,
            };
            let _ = tx.send(FromRoom::Reply {
                to,
                event: ev.event_id.clone(),
                sender: ev.sender.clone(),
                body: ev.content.body().to_owned(),
            });
        }
    });
    let bot = me.to_owned();
    client.add_room_event_handler(room_id, move |ev: OriginalSyncUnstablePollResponseEvent| {
        let tx = events.clone();
        let bot = bot.clone();
        async move {
            if ev.sender == bot {
                return;
            }
            let _ = tx.send(FromRoom::Vote {
                poll: ev.content.relates_to.event_id.clone(),
                event: ev.event_id.clone(),
                sender: ev.sender.clone(),
                answers: ev.content.poll_response.answers.clone(),
            });
        }
    });
}

/// Syncs until the room is there (a homeserver down at the start is tried again, with
/// backoff); returns the room.
async fn first_sync(client: &Client, room_id: &RoomId) -> Room {
    let mut backoff = Duration::from_secs(1);
    loop {
        match client.sync_once(super::setup::once()).await {
            Ok(_) => {
                if let Some(room) = client.get_room(room_id) {
                    return room;
                }
                tracing::warn!("the bot is not in the room {room_id}; run `him matrix room`");
            }
            Err(err) => tracing::warn!("cannot reach the homeserver: {err}"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Syncs for as long as the bridge runs; the sync position is kept in the store, so a
/// bridge started again reads what was said while it was gone.
async fn sync_forever(client: Client, dir: PathBuf, answerers: Vec<String>) {
    let settings = SyncSettings::default().timeout(SYNC_TIMEOUT);
    let mut backoff = Duration::from_secs(1);
    loop {
        match client.sync_once(settings.clone()).await {
            Ok(_) => {
                backoff = Duration::from_secs(1);
                write_status(&dir, &client, &answerers).await;
            }
            Err(err) => {
                tracing::warn!(
                    "sync failed (trying again in {} s): {err}",
                    backoff.as_secs()
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// What `him matrix doctor` reads of this bridge: its last sync, and whether the bot's
/// device is cross-signed and which answerers verified it (which only the store knows).
async fn write_status(dir: &Path, client: &Client, answerers: &[String]) {
    super::doctor::observe_and_write(dir, client, answerers, true).await;
}

fn now_ms() -> u64 {
    him::platform::clock::unix_ms()
}

impl Bridge {
    async fn send_host(&mut self, message: &ExtensionToHost) -> Result<(), BoxError> {
        self.to_host.send(protocol::encode(message)).await?;
        Ok(())
    }

    async fn host_frame(&mut self, bytes: &Bytes) -> Result<(), BoxError> {
        let message = match protocol::decode::<HostToExtension>(bytes) {
            Ok(message) => message,
            Err(err) => {
                tracing::warn!("ignoring a bad frame from the host: {err}");
                return Ok(());
            }
        };
        match message {
            HostToExtension::Hello { .. } => {}
            HostToExtension::Ask(ask) => self.ask(ask).await?,
            HostToExtension::Withdraw { id, reason, .. } => {
                let why = match reason {
                    WithdrawReason::Answered => "Answered elsewhere: no longer needed here.",
                    WithdrawReason::Timeout => "Timed out: no longer needed.",
                    WithdrawReason::Cancelled | WithdrawReason::Shutdown => {
                        "Withdrawn by the agent: no longer needed."
                    }
                };
                self.close(&id, why, reason == WithdrawReason::Answered)
                    .await;
            }
            HostToExtension::Accepted { id } => {
                let who = self
                    .open
                    .get(&id)
                    .and_then(|o| o.judged.as_ref())
                    .map(|(who, _)| who.to_string())
                    .unwrap_or_else(|| "someone".into());
                let kept = self.open.get(&id).is_some_and(|o| o.kept);
                let why = if kept {
                    format!("Answered by {who}; the answer is kept for the agent.")
                } else {
                    format!("Answered by {who}.")
                };
                self.close(&id, &why, true).await;
            }
            HostToExtension::Refused(refusal) => {
                if let Some(open) = self.open.get_mut(&refusal.id)
                    && let Some((_, event)) = open.judged.take()
                {
                    let later = std::mem::take(&mut open.later);
                    let text = format!(
                        "The agent did not take that answer: {}. Answer again.",
                        refusal.message
                    );
                    self.reply(&event, &text).await;
                    for event in later {
                        self.reply(
                            &event,
                            "The agent did not take the earlier answer; answer again.",
                        )
                        .await;
                    }
                }
            }
            HostToExtension::Error {
                id: Some(id),
                message,
            } => {
                if let Some(open) = self.open.get(&id)
                    && let Some((_, event)) = open.judged.clone()
                {
                    self.reply(
                        &event,
                        &format!("That answer did not reach the agent: {message}"),
                    )
                    .await;
                }
                self.close(&id, "No longer open.", false).await;
            }
            HostToExtension::Error { id: None, message } => {
                tracing::warn!("the host reported: {message}");
            }
        }
        Ok(())
    }

    async fn ask(&mut self, ask: LabelledAsk) -> Result<(), BoxError> {
        let id = ask.ask.id.clone();
        if let Some(until_ms) = ask.kept_until_ms
            && (self.open.contains_key(&id) || !self.posted.contains_key(&id))
        {
            return self.kept(&id, until_ms).await;
        }
        if self.open.contains_key(&id) {
            // An agent that linked again re-sends its questions under the same ids.
            return self.send_host(&ExtensionToHost::Shown { id }).await;
        }
        let form: Form = match serde_json::from_value(ask.ask.form.clone()) {
            Ok(form) => form,
            Err(err) => {
                tracing::warn!(id, "a question whose form is not one: {err}");
                return Ok(());
            }
        };
        let mut shape = render::shape(&form);
        let body = render::body(&ask, &form, &shape, now_ms());
        if let Some(event) = self.posted.get(&id).map(|p| p.event.clone()) {
            // Posted by a bridge before this one: the same question, asked again by its
            // agent; what the room said meanwhile answers it.
            tracing::info!(id, event = %event, "question already in the room");
            self.by_event.insert(event.clone(), id.clone());
            let (poll, code, progress) = self
                .posted
                .get(&id)
                .map(|p| (p.poll.clone(), p.code.clone(), p.progress.clone()))
                .unwrap_or_default();
            if let Some(poll) = &poll {
                self.by_event.insert(poll.clone(), id.clone());
            }
            if let Shape::Permission { code: allows } = &mut shape {
                *allows = code;
            }
            // A kept one was marked so in the room by the bridge before.
            let kept = ask.kept_until_ms.is_some();
            let body = match ask.kept_until_ms {
                Some(until_ms) => format!("{body}\n\n{}", kept_note(until_ms)),
                None => body,
            };
            self.open.insert(
                id.clone(),
                Open {
                    form,
                    shape,
                    event: event.clone(),
                    body,
                    judged: None,
                    kept,
                    poll,
                    later: Vec::new(),
                    progress: progress.clone().unwrap_or_default(),
                },
            );
            self.send_host(&ExtensionToHost::Shown { id: id.clone() })
                .await?;
            let early = std::mem::take(&mut self.early);
            let (mine, others): (Vec<_>, Vec<_>) =
                early.into_iter().partition(|e| e.target() == &event);
            self.early = others;
            if mine.is_empty()
                && let (Some(progress), Some(open)) = (progress, self.open.get(&id))
            {
                // Nothing said meanwhile: the thread says where the person is, as they may
                // have waited for an answer from the bridge that was gone.
                let text = thread::resume(&open.form, &progress);
                self.in_thread(&event, None, &text).await;
            }
            for event in mine {
                Box::pin(self.room_event(event)).await?;
            }
            return Ok(());
        }
        if let Some(permission) = form.permission.clone() {
            return self.ask_permission(ask, form, &permission).await;
        }
        let sent = match render::poll_content(&form, &shape, &body) {
            Some(mut content) => {
                content["org.matrix.msc3381.poll.start"]["question"]["org.matrix.msc1767.text"] =
                    json!(format!(
                        "{} {}",
                        render::header(&ask, now_ms()),
                        render::poll_question(&form)
                    ));
                self.room
                    .send_raw("org.matrix.msc3381.poll.start", content)
                    .await
            }
            None => {
                self.room
                    .send_raw("m.room.message", json!({"msgtype": "m.text", "body": body}))
                    .await
            }
        };
        let event = match sent {
            Ok(sent) => sent.response.event_id,
            Err(err) => {
                self.post_later(ask, "question", &err);
                return Ok(());
            }
        };
        tracing::info!(id, event = %event, "question posted");
        self.remember_posted(&ask, &event, None, None);
        self.open.insert(
            id.clone(),
            Open {
                form,
                shape,
                event,
                body,
                judged: None,
                kept: false,
                poll: None,
                later: Vec::new(),
                progress: thread::Progress::default(),
            },
        );
        if let Some(open) = self.open.get(&id)
            && open.shape == Shape::Thread
        {
            let (root, start) = (open.event.clone(), thread::start(&open.form));
            self.in_thread(&root, None, &start).await;
        }
        self.send_host(&ExtensionToHost::Shown { id }).await
    }

    /// A question the homeserver did not take: tried again every [`RETRY_POST`].
    fn post_later(&mut self, ask: LabelledAsk, what: &str, err: &dyn std::fmt::Display) {
        let id = ask.ask.id.clone();
        tracing::warn!(
            id,
            "cannot post the {what} ({err}); trying again every {} s",
            RETRY_POST.as_secs()
        );
        self.unposted.insert(id, ask);
    }

    /// Notes where question `ask` was posted (its message, and a permission prompt's poll
    /// and code), here and in `posted.json`, so that answers in reply find it, also after a
    /// restart.
    fn remember_posted(
        &mut self,
        ask: &LabelledAsk,
        event: &OwnedEventId,
        poll: Option<OwnedEventId>,
        code: Option<String>,
    ) {
        let id = &ask.ask.id;
        self.unposted.remove(id);
        self.by_event.insert(event.clone(), id.clone());
        if let Some(poll) = &poll {
            self.by_event.insert(poll.clone(), id.clone());
        }
        let until_ms = ask.ask.asked_at_ms.saturating_add(ask.ask.timeout_ms);
        self.posted.insert(
            id.clone(),
            Posted {
                event: event.clone(),
                until_ms,
                poll,
                code,
                progress: None,
            },
        );
        self.keep_posted();
    }

    /// Posts an agent's permission prompt (`permission.rs`): the message with the input in a
    /// code block and the code that allows (none when it had to be cut), then a poll to deny.
    async fn ask_permission(
        &mut self,
        ask: LabelledAsk,
        form: Form,
        permission: &him::form::Permission,
    ) -> Result<(), BoxError> {
        let id = ask.ask.id.clone();
        let header = render::header(&ask, now_ms());
        let allowable = permission::message(&header, permission, None).hidden == 0;
        let code = match allowable.then(allow_code).transpose() {
            Ok(code) => code,
            Err(err) => {
                tracing::warn!(id, "no code to allow with: {err}");
                None
            }
        };
        let message = permission::message(&header, permission, code.as_deref());
        let event = match self
            .room
            .send_raw("m.room.message", permission::content(&message))
            .await
        {
            Ok(sent) => sent.response.event_id,
            Err(err) => {
                self.post_later(ask, "permission prompt", &err);
                return Ok(());
            }
        };
        let poll = match self
            .room
            .send_raw(
                "org.matrix.msc3381.poll.start",
                permission::poll(&permission.tool_name, code.is_some()),
            )
            .await
        {
            Ok(sent) => Some(sent.response.event_id),
            Err(err) => {
                tracing::warn!(id, "cannot post the permission prompt's poll: {err}");
                None
            }
        };
        tracing::info!(id, event = %event, "permission prompt posted");
        self.remember_posted(&ask, &event, poll.clone(), code.clone());
        self.open.insert(
            id.clone(),
            Open {
                form,
                shape: Shape::Permission { code },
                event,
                body: message.body,
                judged: None,
                kept: false,
                poll,
                later: Vec::new(),
                progress: thread::Progress::default(),
            },
        );
        self.send_host(&ExtensionToHost::Shown { id }).await
    }

    /// The agent stopped waiting for question `id` and kept it (`him::wire::keep`): it stays open
    /// here until `until_ms`, the message marked so, and the answer goes to the store for the
    /// agent. A kept question this bridge never posted (the host offers every kept one when
    /// it starts) is not posted now: it waits in the browsers.
    async fn kept(&mut self, id: &str, until_ms: u64) -> Result<(), BoxError> {
        if let Some(posted) = self.posted.get_mut(id) {
            posted.until_ms = until_ms;
            self.keep_posted();
        }
        let Some(open) = self.open.get_mut(id) else {
            return Ok(());
        };
        if open.kept {
            return Ok(());
        }
        open.kept = true;
        let note = kept_note(until_ms);
        open.body = format!("{}\n\n{note}", open.body);
        let (event, body, poll) = (
            open.event.clone(),
            open.body.clone(),
            matches!(open.shape, Shape::Poll { .. }),
        );
        if poll {
            // A poll's question cannot be edited in the clients people use: the note is a
            // reply to it, and the poll stays open.
            self.reply(&event, &note).await;
        } else {
            self.edit(&event, &body).await;
        }
        Ok(())
    }

    async fn room_event(&mut self, event: FromRoom) -> Result<(), BoxError> {
        let late = self
            .closed
            .iter()
            .find(|(e, _)| e == event.target())
            .map(|(_, why)| why.clone());
        if let Some(why) = late {
            let (sender, answer) = match &event {
                FromRoom::Reply { sender, event, .. } | FromRoom::Vote { sender, event, .. } => {
                    (sender, event.clone())
                }
            };
            if sender != &self.me && self.answerers.contains(sender) {
                self.reply(&answer, &why).await;
            }
            return Ok(());
        }
        let Some(id) = self.by_event.get(event.target()).cloned() else {
            let kept = self.posted.values().any(|p| &p.event == event.target());
            if kept && self.early.len() < EARLY_MAX {
                self.early.push(event);
            }
            return Ok(());
        };
        let (sender, event_id) = match &event {
            FromRoom::Reply { sender, event, .. } | FromRoom::Vote { sender, event, .. } => {
                (sender.clone(), event.clone())
            }
        };
        if sender == self.me {
            return Ok(());
        }
        if !self.answerers.contains(&sender) {
            tracing::info!(id, %sender, "ignored: not one of the room's answerers");
            return Ok(());
        }
        let Some(open) = self.open.get_mut(&id) else {
            return Ok(());
        };
        if open.judged.is_some() {
            // The agent is judging an earlier answer; the first one decides.
            if open.later.len() < EARLY_MAX {
                open.later.push(event_id);
            }
            return Ok(());
        }
        if open.shape == Shape::Thread {
            let FromRoom::Reply { body, .. } = &event else {
                return Ok(());
            };
            let root = open.event.clone();
            let step = thread::take(&open.form, &mut open.progress, render::reply_text(body));
            let progress = open.progress.clone();
            if let Some(posted) = self.posted.get_mut(&id) {
                posted.progress = Some(progress);
                self.keep_posted();
            }
            let values = match step {
                thread::Step::Say(text) => {
                    self.in_thread(&root, Some(&event_id), &text).await;
                    return Ok(());
                }
                thread::Step::Send(values) => values,
            };
            if let Some(open) = self.open.get_mut(&id) {
                open.judged = Some((sender.clone(), event_id));
            }
            let answer = Answer {
                id,
                action: Action::Submit,
                values: Some(values),
                note: None,
                answered_by: Some(sender.to_string()),
            };
            return self.send_host(&ExtensionToHost::Answer(answer)).await;
        }
        let reply = match &event {
            FromRoom::Reply { body, .. } => {
                render::from_text(&open.shape, render::reply_text(body))
            }
            FromRoom::Vote { answers, .. } => render::from_vote(&open.shape, answers),
        };
        let reply = match reply {
            Ok(reply) => reply,
            Err(why) => {
                let text = match open.shape {
                    // Nothing said here answers it.
                    Shape::AtTheDesk(_) => why,
                    _ => format!("{why}. Answer again."),
                };
                self.reply(&event_id, &text).await;
                return Ok(());
            }
        };
        // Checked here as the agent will (bounds, options), so a poll vote that picked too
        // few is said at once; the agent judges it again.
        if let Err(err) = open.form.check_reply(&reply.values, reply.note.as_deref()) {
            self.reply(&event_id, &format!("{}. Answer again.", err.message))
                .await;
            return Ok(());
        }
        if let Some(open) = self.open.get_mut(&id) {
            open.judged = Some((sender.clone(), event_id));
        }
        let answer = Answer {
            id,
            action: Action::Submit,
            values: Some(reply.values),
            note: reply.note,
            answered_by: Some(sender.to_string()),
        };
        self.send_host(&ExtensionToHost::Answer(answer)).await
    }

    /// Ends a question here: the message says why (a poll is ended with that text); a vote
    /// or reply after it is told it was `answered` already, or came too late.
    /// Tries once more to post each question that could not be posted, unless its deadline
    /// has passed (its agent withdraws it then, and nothing waits for it).
    async fn post_again(&mut self) -> Result<(), BoxError> {
        let now = now_ms();
        let due: Vec<LabelledAsk> = std::mem::take(&mut self.unposted)
            .into_values()
            .filter(|ask| ask.ask.asked_at_ms.saturating_add(ask.ask.timeout_ms) > now)
            .collect();
        for ask in due {
            self.ask(ask).await?;
        }
        Ok(())
    }

    async fn close(&mut self, id: &str, why: &str, answered: bool) {
        // Withdrawn or answered before the room could have it: nothing to post any more.
        self.unposted.remove(id);
        let Some(open) = self.open.remove(id) else {
            return;
        };
        let late = if answered {
            format!("Already answered. {why}")
        } else {
            format!("Too late: this question is closed. {why}")
        };
        self.by_event.remove(&open.event);
        self.posted.remove(id);
        self.keep_posted();
        for event in std::iter::once(&open.event).chain(&open.poll) {
            if self.closed.len() == CLOSED_MAX {
                self.closed.pop_front();
            }
            self.closed.push_back((event.clone(), late.clone()));
        }
        if let Some(poll) = &open.poll {
            self.by_event.remove(poll);
            self.end_poll(id, poll, why).await;
        }
        if matches!(open.shape, Shape::Poll { .. }) {
            self.end_poll(id, &open.event, why).await;
        } else {
            self.edit(&open.event, &format!("{}\n\n— {why}", open.body))
                .await;
        }
        for event in &open.later {
            self.reply(event, &late).await;
        }
    }

    /// Ends the poll `poll` of question `id`, saying `why`.
    async fn end_poll(&self, id: &str, poll: &OwnedEventId, why: &str) {
        let content = json!({
            "m.relates_to": {"rel_type": "m.reference", "event_id": poll},
            "org.matrix.msc3381.poll.end": {},
            "org.matrix.msc1767.text": why,
        });
        if let Err(err) = self
            .room
            .send_raw("org.matrix.msc3381.poll.end", content)
            .await
        {
            tracing::warn!(id, "cannot end the poll in the room: {err}");
        }
    }

    /// Replaces the text of the bot's message `event` with `body` (an `m.replace` edit).
    async fn edit(&self, event: &OwnedEventId, body: &str) {
        let content = json!({
            "msgtype": "m.text",
            "body": format!("* {body}"),
            "m.new_content": {"msgtype": "m.text", "body": body},
            "m.relates_to": {"rel_type": "m.replace", "event_id": event},
        });
        if let Err(err) = self.room.send_raw("m.room.message", content).await {
            tracing::warn!(event = %event, "cannot edit the question in the room: {err}");
        }
    }

    fn keep_posted(&self) {
        if let Err(err) = store::write(&self.dir, POSTED_FILE, &self.posted) {
            tracing::warn!("cannot keep the posted questions: {err}");
        }
    }

    /// A message in the thread under `root` (a form asked field by field), replying to the
    /// person's `to` when there is one.
    async fn in_thread(&self, root: &OwnedEventId, to: Option<&OwnedEventId>, text: &str) {
        let content = json!({
            "msgtype": "m.notice",
            "body": text,
            "m.relates_to": {
                "rel_type": "m.thread",
                "event_id": root,
                "is_falling_back": to.is_none(),
                "m.in_reply_to": {"event_id": to.unwrap_or(root)},
            },
        });
        if let Err(err) = self.room.send_raw("m.room.message", content).await {
            tracing::warn!("cannot post in the question's thread: {err}");
        }
    }

    /// A short reply to `to` in the room (why an answer was not taken).
    async fn reply(&self, to: &OwnedEventId, text: &str) {
        let content = json!({
            "msgtype": "m.notice",
            "body": text,
            "m.relates_to": {"m.in_reply_to": {"event_id": to}},
        });
        if let Err(err) = self.room.send_raw("m.room.message", content).await {
            tracing::warn!("cannot reply in the room: {err}");
        }
    }
}
