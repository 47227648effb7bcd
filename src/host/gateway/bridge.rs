//! The gateway's "extension": it reads what the embedded host sends a browser (each remote
//! agent's `ask`, labelled; `withdraw`; the verdicts) and answers as a browser would, by
//! asking the local hosts through agent pools — one per remote agent, so each local host
//! labels its questions with that agent — and passing back `shown` and `answer`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio::io::DuplexStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::codec::{FramedRead, FramedWrite};

use crate::agent::pool::{HostEvent, Identity, Pool, Question, Signal};
use crate::wire::frame::{FrameCodec, MAX_INBOUND};
use crate::wire::protocol::{
    self, AgentInfo, AskFrame, ExtensionInfo, ExtensionToHost, HostToExtension, LabelledAsk,
    Refusal, WithdrawReason,
};

/// How often the bridge looks at the local hosts (to say whether a panel is open, and to
/// notice that none is left).
const LOOK_INTERVAL: Duration = Duration::from_millis(250);

/// Named in the panel when a remote agent did not say which machine it runs on, or gave a
/// name a person could not read as one.
const UNNAMED_MACHINE: &str = "another machine";

/// The longest machine name passed on (Linux's `HOST_NAME_MAX`).
const MACHINE_NAME_MAX: usize = 64;

/// What the panel shows as the machine of a remote agent that claims `claim`: the claim,
/// trimmed, when it is a name a person can read — 1 to 64 characters, each a visible ASCII
/// character, a space or a letter or digit, nothing invisible — else "another machine".
/// Never blank: every question through the gateway is marked as remote, and a remote agent
/// cannot pass itself off as local by naming no machine, a blank one or an invisible one.
pub(crate) fn machine_label(claim: Option<&str>) -> String {
    let name = claim.map(str::trim).unwrap_or_default();
    let readable = !name.is_empty()
        && name.chars().count() <= MACHINE_NAME_MAX
        && name.chars().all(|c| {
            c == ' ' || c.is_ascii_graphic() || (c.is_alphanumeric() && !is_default_ignorable(c))
        });
    if readable {
        name.to_owned()
    } else {
        UNNAMED_MACHINE.to_owned()
    }
}

/// Unicode's Default_Ignorable_Code_Point among letters (U+3164 HANGUL FILLER is a letter
/// that draws nothing); the format and control characters it also holds are not letters.
fn is_default_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}' | '\u{3164}' | '\u{FFA0}'
    )
}

/// What the embedded host said about one question, for the task that owns it.
enum Command {
    Withdraw(WithdrawReason),
    Accepted,
    Refused(Refusal),
}

/// A question's task ended: its id, its generation and its pool's key.
type Ended = (String, u64, String);

struct Open {
    commands: mpsc::UnboundedSender<Command>,
    /// Tells this question from a later one under the same id (a remote agent that
    /// reconnected sends it again, maybe before the old one's task has ended).
    generation: u64,
}

/// Runs until no local host has been there for `grace`.
pub async fn run(io: DuplexStream, search: Vec<PathBuf>, grace: Duration) {
    let (read, write) = tokio::io::split(io);
    let mut from_host = FramedRead::new(read, FrameCodec::new(MAX_INBOUND));
    let (to_host, mut queue) = mpsc::unbounded_channel::<Bytes>();
    let writer = tokio::spawn(async move {
        let mut sink = FramedWrite::new(write, FrameCodec::new(MAX_INBOUND));
        while let Some(frame) = queue.recv().await {
            if sink.send(frame).await.is_err() {
                return;
            }
        }
    });
    let status = Pool::for_gateway(
        search.clone(),
        Identity {
            agent: AgentInfo {
                name: "him gateway".into(),
                title: None,
                version: Some(env!("CARGO_PKG_VERSION").into()),
                via: None,
            },
            project: None,
        },
        None,
    );
    let mut bridge = Bridge {
        search,
        to_host,
        pools: HashMap::new(),
        open: HashMap::new(),
        told: None,
        generation: 0,
    };
    let (ended_tx, mut ended) = mpsc::unbounded_channel::<Ended>();
    let mut look = tokio::time::interval(LOOK_INTERVAL);
    let mut alone_since: Option<Instant> = None;
    let mut open_panels = OpenPanels::default();
    loop {
        tokio::select! {
            frame = from_host.next() => match frame {
                Some(Ok(bytes)) => bridge.host_frame(&bytes, &ended_tx),
                _ => break,
            },
            Some((id, generation, pool)) = ended.recv() => bridge.ended(&id, generation, &pool),
            _ = look.tick() => {
                status.scan().await;
                let hosts = status.hosts();
                if hosts.is_empty() {
                    let since = *alone_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= grace {
                        break;
                    }
                } else {
                    alone_since = None;
                }
                let extension = hosts.iter().find_map(|h| h.extension.clone());
                let panel_open = open_panels.look(&hosts, Instant::now(), grace);
                bridge.tell_status(extension, panel_open);
            }
        }
    }
    status.shutdown();
    for pool in bridge.pools.values() {
        pool.0.shutdown();
    }
    drop(bridge);
    let _ = writer.await;
}

/// Whether a panel is open on this machine, as the remote agents are told it: a host whose
/// panel was open and that ended (its browser's service worker restarting) still counts for
/// the reconnect grace, so that an agent over there does not take the person for away (and
/// ring the phone) while the new host's panel finds its worker.
#[derive(Default)]
struct OpenPanels {
    /// The hosts whose panel was open at the last look.
    open: Vec<PathBuf>,
    /// When one of them was last seen gone.
    lost_at: Option<Instant>,
}

impl OpenPanels {
    fn look(
        &mut self,
        hosts: &[crate::agent::pool::HostStatus],
        now: Instant,
        grace: Duration,
    ) -> bool {
        if self
            .open
            .iter()
            .any(|socket| !hosts.iter().any(|h| &h.socket == socket))
        {
            self.lost_at = Some(now);
        }
        self.open = hosts
            .iter()
            .filter(|h| h.panel_open)
            .map(|h| h.socket.clone())
            .collect();
        !self.open.is_empty() || self.lost_at.is_some_and(|at| now < at + grace)
    }
}

struct Bridge {
    search: Vec<PathBuf>,
    to_host: mpsc::UnboundedSender<Bytes>,
    /// One pool per remote agent (by its label), and how many of its questions are open.
    pools: HashMap<String, (Pool, usize)>,
    open: HashMap<String, Open>,
    /// What the embedded host was last told about the browsers.
    told: Option<(Option<ExtensionInfo>, bool)>,
    generation: u64,
}

impl Bridge {
    fn send(&self, message: &ExtensionToHost) {
        let _ = self.to_host.send(protocol::encode(message));
    }

    /// The embedded host passes the browsers' state on in every `welcome`: the local
    /// extension (the gateway's own name until one is linked) and whether a panel is open.
    fn tell_status(&mut self, extension: Option<ExtensionInfo>, panel_open: bool) {
        let now = (extension.clone(), panel_open);
        if self.told.as_ref() == Some(&now) {
            return;
        }
        let extension = extension.unwrap_or(ExtensionInfo {
            id: "him-gateway".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        });
        self.send(&ExtensionToHost::Ready {
            protocol: protocol::PROTOCOL,
            extension,
            browser: Some("gateway".into()),
            verdicts: true,
        });
        self.send(&ExtensionToHost::Panel { open: panel_open });
        self.told = Some(now);
    }

    fn host_frame(&mut self, bytes: &[u8], ended: &mpsc::UnboundedSender<Ended>) {
        let message = match protocol::decode::<HostToExtension>(bytes) {
            Ok(message) => message,
            Err(err) => {
                tracing::warn!("the gateway's host sent a bad frame: {err}");
                return;
            }
        };
        let command = match message {
            HostToExtension::Ask(labelled) => return self.ask(labelled, ended),
            HostToExtension::Withdraw { id, reason, .. } => (id, Command::Withdraw(reason)),
            HostToExtension::Accepted { id } => (id, Command::Accepted),
            HostToExtension::Refused(refusal) => (refusal.id.clone(), Command::Refused(refusal)),
            // The remote agent left while it judged the answer: the local question ends.
            HostToExtension::Error {
                id: Some(id),
                message,
            } => {
                tracing::info!(id, "answer not delivered to the remote agent: {message}");
                (id, Command::Withdraw(WithdrawReason::Cancelled))
            }
            HostToExtension::Error { id: None, message } => {
                tracing::warn!("the gateway's host reported: {message}");
                return;
            }
            HostToExtension::Hello { .. } => return,
        };
        let (id, command) = command;
        let Some(open) = self.open.get(&id) else {
            return;
        };
        let generation = open.generation;
        let ends = !matches!(command, Command::Refused(_));
        let _ = open.commands.send(command);
        // Forgotten now, not when its task says so: the same id may come again at once.
        if ends {
            self.forget(&id, generation);
        }
    }

    fn ask(&mut self, labelled: LabelledAsk, ended: &mpsc::UnboundedSender<Ended>) {
        let LabelledAsk {
            ask,
            agent,
            project,
            machine,
            ..
        } = labelled;
        let machine = machine_label(machine.as_deref());
        let key = json!([agent, project, machine]).to_string();
        let id = ask.id.clone();
        if self.open.contains_key(&id) {
            return;
        }
        let search = self.search.clone();
        let (pool, count) = self.pools.entry(key.clone()).or_insert_with(|| {
            let identity = Identity { agent, project };
            (Pool::for_gateway(search, identity, Some(machine)), 0)
        });
        *count += 1;
        let (commands, receiver) = mpsc::unbounded_channel();
        self.generation += 1;
        let generation = self.generation;
        self.open.insert(
            id.clone(),
            Open {
                commands,
                generation,
            },
        );
        let pool = pool.clone();
        let pool_key = key;
        let to_host = self.to_host.clone();
        let ended = ended.clone();
        tokio::spawn(async move {
            let question = pool.open(AskFrame::new(ask)).await;
            drive(question, receiver, &to_host).await;
            let _ = ended.send((id, generation, pool_key));
        });
    }

    /// Drops the entry of question `id`, if it is still the one of `generation`.
    fn forget(&mut self, id: &str, generation: u64) {
        if self
            .open
            .get(id)
            .is_some_and(|open| open.generation == generation)
        {
            self.open.remove(id);
        }
    }

    /// The task of question `id` ended (it closed the question on its pool first, so the
    /// host that answered heard `accepted` rather than a shutdown).
    fn ended(&mut self, id: &str, generation: u64, pool_key: &str) {
        self.forget(id, generation);
        if let Some((pool, count)) = self.pools.get_mut(pool_key) {
            *count -= 1;
            if *count == 0 {
                pool.shutdown();
                self.pools.remove(pool_key);
            }
        }
    }
}

/// One remote question among the local hosts, until the remote agent (through the embedded
/// host) ends it, or every local host refused it.
async fn drive(
    mut question: Question,
    mut commands: mpsc::UnboundedReceiver<Command>,
    to_host: &mpsc::UnboundedSender<Bytes>,
) {
    let send = |message: ExtensionToHost| {
        let _ = to_host.send(protocol::encode(&message));
    };
    let id = question.id().to_owned();
    let mut answered_by: Option<PathBuf> = None;
    let mut refusals = 0usize;
    loop {
        tokio::select! {
            command = commands.recv() => match command {
                Some(Command::Withdraw(reason)) => {
                    question.close(reason, None);
                    return;
                }
                Some(Command::Accepted) => {
                    question.close(WithdrawReason::Answered, answered_by.as_deref());
                    return;
                }
                Some(Command::Refused(refusal)) => {
                    if let Some(host) = &answered_by {
                        question.refuse(host, refusal.field, refusal.message);
                    }
                }
                None => {
                    question.close(WithdrawReason::Shutdown, None);
                    return;
                }
            },
            signal = question.next_signal() => match signal {
                Signal::Event(Some(HostEvent::Shown { .. })) => {
                    send(ExtensionToHost::Shown { id: id.clone() });
                }
                Signal::Event(Some(HostEvent::Answer { host, answer })) => {
                    answered_by = Some(host);
                    send(ExtensionToHost::Answer(*answer));
                }
                Signal::Event(Some(HostEvent::Refused { message, .. })) => {
                    refusals += 1;
                    if refusals >= question.hosts().max(1) {
                        send(ExtensionToHost::Error { id: Some(id.clone()), message });
                        question.close(WithdrawReason::Cancelled, None);
                        return;
                    }
                }
                Signal::Event(None) => return,
                Signal::Hosts(_) => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(socket: &str, panel_open: bool) -> crate::agent::pool::HostStatus {
        crate::agent::pool::HostStatus {
            socket: PathBuf::from(socket),
            panel_open,
            ..Default::default()
        }
    }

    #[test]
    fn a_host_with_an_open_panel_that_restarts_still_counts_as_open_for_the_grace() {
        let grace = Duration::from_secs(15);
        let start = Instant::now();
        let mut panels = OpenPanels::default();
        assert!(panels.look(&[host("a", true), host("b", false)], start, grace));
        // a's service worker restarts: a is gone, b's panel is closed.
        let gone = start + Duration::from_secs(1);
        assert!(panels.look(&[host("b", false)], gone, grace), "still open");
        // The new host, its panel not yet found again.
        assert!(panels.look(
            &[host("b", false), host("c", false)],
            gone + Duration::from_secs(2),
            grace
        ));
        assert!(
            !panels.look(&[host("b", false), host("c", false)], gone + grace, grace),
            "the grace ended"
        );
    }

    #[test]
    fn a_panel_the_person_closes_is_closed_at_once() {
        let grace = Duration::from_secs(15);
        let start = Instant::now();
        let mut panels = OpenPanels::default();
        assert!(panels.look(&[host("a", true)], start, grace));
        assert!(!panels.look(
            &[host("a", false)],
            start + Duration::from_millis(250),
            grace
        ));
    }

    #[test]
    fn a_remote_agent_is_named_by_a_readable_claim_and_else_as_another_machine() {
        for (claim, shown) in [
            (Some("devbox"), "devbox"),
            (Some("  build-7.corp "), "build-7.corp"),
            (Some("Rechner Müller"), "Rechner Müller"),
            (Some("开发机"), "开发机"),
            (None, UNNAMED_MACHINE),
            (Some(""), UNNAMED_MACHINE),
            (Some("   "), UNNAMED_MACHINE),
            (Some("\u{200B}"), UNNAMED_MACHINE),
            (Some("\u{3164}"), UNNAMED_MACHINE),
            (Some("dev\u{202E}xob"), UNNAMED_MACHINE),
            (Some("dev\nbox"), UNNAMED_MACHINE),
            (Some("\u{1b}[2Jdevbox"), UNNAMED_MACHINE),
            (Some("\u{00A0}"), UNNAMED_MACHINE),
        ] {
            assert_eq!(machine_label(claim), shown, "{claim:?}");
        }
        assert_eq!(machine_label(Some(&"a".repeat(64))), "a".repeat(64));
        assert_eq!(machine_label(Some(&"a".repeat(65))), UNNAMED_MACHINE);
    }
}
