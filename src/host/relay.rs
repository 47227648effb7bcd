//! The native host's bookkeeping, as a pure state machine: which agent owns which
//! question, who is asking, what the extension has told us. The async shell in `host/mod.rs`
//! feeds it events and carries out the effects it returns; nothing here waits or does I/O,
//! so every routing rule is unit-tested without a runtime.

use serde::Deserialize as _;
use std::collections::{HashMap, HashSet};

use bytes::Bytes;

use crate::wire::frame::MAX_TO_BROWSER;
use crate::wire::protocol::{
    self, AgentInfo, AgentToHost, Ask, ExtensionInfo, ExtensionToHost, HostInfo, HostToAgent,
    HostToExtension, LabelledAsk, PROTOCOL, WithdrawReason,
};
use crate::wire::protocol::{Answer, Welcome, decode};

/// A connected agent, numbered by the host in order of arrival.
pub type AgentId = u64;

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    ToExtension(HostToExtension),
    /// A question for the extension, already encoded: its size had to be checked against
    /// the browser's limit, and the host sends these bytes rather than encoding it again.
    AskToExtension(Bytes),
    ToAgent(AgentId, HostToAgent),
    /// Write the person's answer to a kept question to the answer store (`wire/keep.rs`), then
    /// report how that went with [`Relay::kept_saved`].
    SaveKept(Answer),
}

/// At most this many questions may wait at a host for one agent link. A person answers a
/// handful at a time; a program asking hundreds at once is a runaway, and every question it
/// queues delays everyone else's in the browser (the extension stores, and the panel draws,
/// each waiting question).
pub const MAX_WAITING_QUESTIONS: usize = 64;

/// At most this many bytes of questions (their `ask` frames as the browser gets them) may
/// wait at a host for one agent link. The extension keeps every waiting question in Chrome's
/// `storage.session`, which holds 10 MiB in all (`QUOTA_BYTES`, 10,485,760) for every
/// agent's questions together: one agent may take less than half of it, so one runaway
/// cannot leave the others no room. Four questions of the largest size a browser accepts
/// (`MAX_TO_BROWSER`, 1 MiB) still fit.
pub const MAX_WAITING_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Default)]
struct AgentState {
    info: Option<AgentInfo>,
    project: Option<String>,
    machine: Option<String>,
    /// Its questions waiting at this host, each with the size of its frame to the browser.
    questions: HashMap<String, usize>,
    /// It said in `hello` that it sends a verdict on every answer.
    verdicts: bool,
}

#[derive(Debug)]
pub struct Relay {
    host: HostInfo,
    agents: HashMap<AgentId, AgentState>,
    owners: HashMap<String, AgentId>,
    /// Questions whose answer went to their agent, which has yet to accept or refuse it.
    /// They stay their agent's: a refused answer leaves the question open.
    judging: HashSet<String>,
    extension: Option<ExtensionInfo>,
    /// The extension said in `ready` that it shows verdicts and lets the person correct a
    /// refused answer.
    extension_verdicts: bool,
    panel_open: bool,
    /// The `ask` frame of every question an agent owns, as the extension got it: what a
    /// question becomes if its agent stops waiting and keeps it.
    asks: HashMap<String, Bytes>,
    /// Whether questions may be kept here (a browser's host with an answer store; not the
    /// gateway, whose "extension" is other hosts).
    keeps: bool,
    /// Questions whose agent stopped waiting: the person may still answer them, and the
    /// answer goes to the store, checked against the form first.
    kept: HashMap<String, KeptCard>,
    /// Answers this host wrote to the store, handed at once to an agent that asks again.
    kept_answers: HashMap<String, Answer>,
}

/// A kept question: the form its answer must fit, and when it expires (Unix ms).
#[derive(Debug)]
struct KeptCard {
    form: crate::form::Form,
    until_ms: u64,
}

/// Shown in the panel for an agent that asked before saying hello.
const UNNAMED_AGENT: &str = "unnamed agent";

impl Relay {
    pub fn new(host: HostInfo) -> Relay {
        Relay {
            host,
            agents: HashMap::new(),
            owners: HashMap::new(),
            judging: HashSet::new(),
            extension: None,
            extension_verdicts: false,
            panel_open: false,
            asks: HashMap::new(),
            keeps: false,
            kept: HashMap::new(),
            kept_answers: HashMap::new(),
        }
    }

    /// Questions may be kept at this host once their agent stops waiting.
    pub fn keep_questions(&mut self) {
        self.keeps = true;
    }

    /// The first message the extension gets.
    pub fn hello(&self) -> HostToExtension {
        HostToExtension::Hello {
            protocol: PROTOCOL,
            host: self.host.clone(),
            verdicts: true,
        }
    }

    /// Whether the answer to `id` went to its agent, which has not yet said whether it
    /// takes it. Were that agent's link to end now, [`Relay::agent_closed`] reports it.
    pub fn judging(&self, id: &str) -> bool {
        self.judging.contains(id)
    }

    pub fn pending(&self) -> usize {
        self.owners.len()
    }

    pub fn agent_connected(&mut self, agent: AgentId) {
        self.agents.entry(agent).or_default();
    }

    /// The agent's link closed (`why`, for the person): its questions can no longer be
    /// answered, so they leave the panel, except one whose answer it had not yet taken,
    /// which goes back to the panel as undelivered, to copy, and one the answer store holds
    /// open (`open_until` gives until when): its agent ended without a word (killed,
    /// crashed) after leaving it open for a late answer, so its card is kept as if the
    /// agent had withdrawn it with `keep`.
    pub fn agent_closed(
        &mut self,
        agent: AgentId,
        why: &str,
        open_until: &dyn Fn(&str) -> Option<u64>,
    ) -> Vec<Effect> {
        let Some(state) = self.agents.remove(&agent) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = state.questions.into_keys().collect();
        ids.sort();
        let mut effects = Vec::new();
        for id in ids {
            self.owners.remove(&id);
            let frame = self.asks.remove(&id);
            if self.judging.remove(&id) {
                effects.push(undelivered(id, why));
                continue;
            }
            if let Some(frame) = frame
                && let Some(until_ms) = open_until(&id)
                && let Some(kept) = self.keep(&id, &frame, until_ms)
            {
                effects.extend(kept);
                continue;
            }
            effects.push(Effect::ToExtension(HostToExtension::Withdraw {
                id,
                reason: WithdrawReason::Cancelled,
                answered_via: None,
                answered_by: None,
            }));
        }
        effects
    }

    pub fn agent_frame(&mut self, agent: AgentId, bytes: &[u8]) -> Vec<Effect> {
        let reply = |message: HostToAgent| vec![Effect::ToAgent(agent, message)];
        let message = match protocol::decode::<AgentToHost>(bytes) {
            Ok(message) => message,
            Err(err) => {
                return reply(HostToAgent::Error {
                    id: protocol::ProtocolError::id_in(bytes),
                    message: err.to_string(),
                });
            }
        };
        match message {
            AgentToHost::Hello {
                agent: info,
                project,
                verdicts,
                machine,
                ..
            } => {
                let state = self.agents.entry(agent).or_default();
                // Names a client wrote, cut to fit a card's head (`labels::MAX_LABEL_CHARS`).
                state.info = Some(crate::wire::labels::capped_agent(info));
                state.project = project
                    .as_deref()
                    .and_then(crate::wire::labels::project_name);
                state.machine = machine;
                state.verdicts = verdicts;
                reply(self.welcome())
            }
            AgentToHost::Ask(ask) => self.ask(agent, ask),
            AgentToHost::Ping => reply(HostToAgent::Pong),
            AgentToHost::Withdraw {
                id,
                reason,
                keep,
                keep_until_ms,
                answered_via,
                answered_by,
            } => {
                if self.owners.get(&id) != Some(&agent) {
                    return reply(HostToAgent::Error {
                        message: format!(
                            "cannot withdraw {id}: this link has no pending question of that id"
                        ),
                        id: Some(id),
                    });
                }
                // An answer on its way to the agent is not the person's to give again.
                let frame = self.asks.get(&id).cloned().filter(|_| !self.judging(&id));
                self.forget(&id);
                if keep
                    && let (Some(frame), Some(until_ms)) = (frame, keep_until_ms)
                    && let Some(kept) = self.keep(&id, &frame, until_ms)
                {
                    return kept;
                }
                // Where it was answered, for the card's last word: only with `answered`.
                let answered = reason == WithdrawReason::Answered;
                vec![Effect::ToExtension(HostToExtension::Withdraw {
                    id,
                    reason,
                    answered_via: answered_via.filter(|_| answered),
                    answered_by: answered_by.filter(|_| answered),
                })]
            }
            AgentToHost::Accepted { id } => {
                if !self.judged_by(agent, &id) {
                    return reply(no_answer_to_judge(id));
                }
                self.forget(&id);
                self.verdict(HostToExtension::Accepted { id })
            }
            AgentToHost::Refused(refusal) => {
                if !self.judged_by(agent, &refusal.id) {
                    return reply(no_answer_to_judge(refusal.id));
                }
                // Still this agent's question: the corrected answer comes here too.
                self.judging.remove(&refusal.id);
                self.verdict(HostToExtension::Refused(refusal))
            }
        }
    }

    /// Whether `agent` owns question `id` and was sent an answer to it that it has not
    /// judged yet. Only that agent, once, may say what became of that answer.
    fn judged_by(&self, agent: AgentId, id: &str) -> bool {
        self.owners.get(id) == Some(&agent) && self.judging.contains(id)
    }

    /// A verdict for the extension, if it understands verdicts; an older one has shown
    /// "Answer sent." already.
    fn verdict(&self, message: HostToExtension) -> Vec<Effect> {
        if self.extension_verdicts {
            vec![Effect::ToExtension(message)]
        } else {
            Vec::new()
        }
    }

    fn ask(&mut self, agent: AgentId, ask: Ask) -> Vec<Effect> {
        let refuse = |id: String, message: String| {
            vec![Effect::ToAgent(
                agent,
                HostToAgent::Error {
                    id: Some(id),
                    message,
                },
            )]
        };
        if !crate::platform::random::is_question_id(&ask.id) {
            return refuse(
                ask.id,
                "question id must be at least 32 lowercase hex digits (128 bits)".into(),
            );
        }
        if let Some(&owner) = self.owners.get(&ask.id)
            && owner != agent
        {
            return refuse(
                ask.id,
                "question id is already in use by another agent".into(),
            );
        }
        // The same rules as the agent side (DESIGN.md §4): a process that skips `him serve`
        // and talks to the socket itself must not get a form the panel cannot render.
        let checked = crate::form::Form::deserialize(&ask.form)
            .map_err(|err| err.to_string())
            .and_then(|form| form.validate().map_err(|err| err.to_string()));
        if let Err(why) = checked {
            return refuse(ask.id, format!("the question's form is not valid: {why}"));
        }
        if let Some(answer) = self.kept_answers.remove(&ask.id) {
            return self.hand_kept_answer(agent, answer);
        }
        let state = self.agents.entry(agent).or_default();
        let mut ask = ask;
        // The question's own project (one `serve --http` link carries many sessions' questions)
        // over its agent's; the label carries it, the ask inside none.
        let project = match ask.project.take() {
            Some(project) => crate::wire::labels::project_name(&project),
            None => state.project.clone(),
        };
        let labelled = HostToExtension::Ask(LabelledAsk {
            agent: state
                .info
                .clone()
                .unwrap_or_else(|| AgentInfo::named(UNNAMED_AGENT)),
            project,
            machine: state.machine.clone(),
            kept_until_ms: None,
            ask,
        });
        let frame = protocol::encode(&labelled);
        let HostToExtension::Ask(LabelledAsk { ask, .. }) = labelled else {
            unreachable!()
        };
        if frame.len() > MAX_TO_BROWSER {
            return refuse(
                ask.id,
                format!(
                    "question is {} bytes; the browser accepts at most {MAX_TO_BROWSER}",
                    frame.len()
                ),
            );
        }
        if let Some(over) = over_limit(&state.questions, &ask.id, frame.len()) {
            return refuse(ask.id, over);
        }
        // Asked again while kept: the agent waits for it again, on the same card (only once
        // the ask is taken: a refused one leaves the card kept, as it was).
        self.kept.remove(&ask.id);
        state.questions.insert(ask.id.clone(), frame.len());
        self.owners.insert(ask.id.clone(), agent);
        self.asks.insert(ask.id, frame.clone());
        vec![Effect::AskToExtension(frame)]
    }

    pub fn extension_frame(&mut self, bytes: &[u8]) -> Vec<Effect> {
        let message = match protocol::decode::<ExtensionToHost>(bytes) {
            Ok(message) => message,
            Err(err) => {
                return vec![Effect::ToExtension(HostToExtension::Error {
                    id: protocol::ProtocolError::id_in(bytes),
                    message: err.to_string(),
                })];
            }
        };
        match message {
            ExtensionToHost::Ready {
                extension,
                verdicts,
                ..
            } => {
                self.extension = Some(extension);
                self.extension_verdicts = verdicts;
                self.broadcast_welcome()
            }
            ExtensionToHost::Panel { open } => {
                self.panel_open = open;
                self.broadcast_welcome()
            }
            ExtensionToHost::Shown { id } => match self.owners.get(&id) {
                Some(&owner) => vec![Effect::ToAgent(owner, HostToAgent::Shown { id })],
                None => Vec::new(),
            },
            ExtensionToHost::Answer(answer) => match self.owners.get(&answer.id).copied() {
                Some(owner) if self.agents.get(&owner).is_some_and(|s| s.verdicts) => {
                    self.judging.insert(answer.id.clone());
                    vec![Effect::ToAgent(owner, HostToAgent::Answer(answer))]
                }
                // An agent that gives no verdicts judges in silence: the answer is as good
                // as taken once relayed, as it always was for such an agent.
                Some(owner) => {
                    self.forget(&answer.id);
                    let mut effects = self.verdict(HostToExtension::Accepted {
                        id: answer.id.clone(),
                    });
                    effects.insert(0, Effect::ToAgent(owner, HostToAgent::Answer(answer)));
                    effects
                }
                None if self.kept.contains_key(&answer.id) => self.kept_answer(answer),
                // The panel shows this to the person as why their answer did not arrive.
                None => vec![Effect::ToExtension(HostToExtension::Error {
                    message: "there is no pending question of that id: its agent left, or it \
                              was withdrawn, timed out or answered elsewhere"
                        .into(),
                    id: Some(answer.id),
                })],
            },
            ExtensionToHost::Error { id, message } => {
                tracing::warn!(
                    id = id.as_deref().unwrap_or("-"),
                    "extension reported: {message}"
                );
                // The extension refused a question (e.g. past its deadline): its agent
                // must hear it now rather than wait out the timeout.
                match id.and_then(|id| self.owners.get(&id).map(|&owner| (id, owner))) {
                    Some((id, owner)) => {
                        self.forget(&id);
                        let message = format!("the browser refused the question: {message}");
                        vec![Effect::ToAgent(
                            owner,
                            HostToAgent::Error {
                                id: Some(id),
                                message,
                            },
                        )]
                    }
                    None => Vec::new(),
                }
            }
        }
    }

    fn forget(&mut self, id: &str) {
        self.judging.remove(id);
        self.asks.remove(id);
        if let Some(owner) = self.owners.remove(id)
            && let Some(state) = self.agents.get_mut(&owner)
        {
            state.questions.remove(id);
        }
    }

    /// Keeps question `id` (its `frame` as the extension got it) until `until_ms`: the card
    /// stays, marked, its deadline moved there. `None` when it may not be kept: this host
    /// keeps nothing, or the form has a password field or is a permission prompt.
    fn keep(&mut self, id: &str, frame: &Bytes, until_ms: u64) -> Option<Vec<Effect>> {
        let Ok(HostToExtension::Ask(mut labelled)) = decode::<HostToExtension>(frame) else {
            return None;
        };
        let form = crate::form::Form::deserialize(&labelled.ask.form).ok()?;
        if !self.keeps
            || form.validate().is_err()
            || form.has_password()
            || form.permission.is_some()
        {
            return None;
        }
        labelled.ask.timeout_ms = until_ms.saturating_sub(labelled.ask.asked_at_ms);
        labelled.kept_until_ms = Some(until_ms);
        self.kept.insert(id.to_owned(), KeptCard { form, until_ms });
        let frame = protocol::encode(&HostToExtension::Ask(labelled));
        Some(vec![Effect::AskToExtension(frame)])
    }

    /// The person answered a kept question: one that fits its form goes to the store; one
    /// that does not is refused, for the person to correct, as its agent would have.
    fn kept_answer(&mut self, mut answer: Answer) -> Vec<Effect> {
        let Some(card) = self.kept.get(&answer.id) else {
            return Vec::new();
        };
        // Who answered is written to the store from the Matrix bridge alone: the agent
        // trusts a live answer's `answered_by` only from it too (`agent/wait.rs`).
        if self.host.kind.as_deref() != Some(protocol::MATRIX_KIND) {
            answer.answered_by = None;
        }
        // A decline or a dismissal always fits; a submission is held to the form.
        let fits = match answer.action {
            protocol::Action::Submit => card
                .form
                .check_reply(
                    answer.values.as_ref().unwrap_or(&serde_json::Map::new()),
                    answer.note.as_deref(),
                )
                .map(drop),
            protocol::Action::Decline | protocol::Action::Cancel => Ok(()),
        };
        match fits {
            Err(err) if self.extension_verdicts => {
                vec![Effect::ToExtension(HostToExtension::Refused(
                    protocol::Refusal {
                        id: answer.id,
                        field: err.field,
                        message: err.message,
                    },
                ))]
            }
            Err(err) => {
                self.kept.remove(&answer.id);
                vec![undelivered(
                    answer.id,
                    &format!("the answer does not fit the question: {err}"),
                )]
            }
            Ok(()) => vec![Effect::SaveKept(answer)],
        }
    }

    /// How writing the answer to a kept question went: the panel hears `accepted`, or why
    /// the answer was not kept.
    pub fn kept_saved(&mut self, answer: Answer, saved: Result<(), String>) -> Vec<Effect> {
        self.kept.remove(&answer.id);
        match saved {
            Ok(()) => {
                let id = answer.id.clone();
                self.kept_answers.insert(id.clone(), answer);
                self.verdict(HostToExtension::Accepted { id })
            }
            Err(why) => vec![undelivered(
                answer.id,
                &format!("the answer could not be kept for the agent: {why}"),
            )],
        }
    }

    /// An agent asked again for a question whose answer this host kept: it gets that answer
    /// at once, as it would have, and judges it as any other.
    fn hand_kept_answer(&mut self, agent: AgentId, answer: Answer) -> Vec<Effect> {
        let state = self.agents.entry(agent).or_default();
        if state.verdicts {
            state.questions.insert(answer.id.clone(), 0);
            self.owners.insert(answer.id.clone(), agent);
            self.judging.insert(answer.id.clone());
        }
        vec![Effect::ToAgent(agent, HostToAgent::Answer(answer))]
    }

    /// Offers the kept questions of the store (a host that starts): the open ones as
    /// marked cards, the answered ones to hand to an agent that asks again.
    pub fn offer_kept(&mut self, records: Vec<crate::wire::keep::Record>) -> Vec<Effect> {
        let mut effects = Vec::new();
        for record in records {
            if let Some(answer) = &record.answer {
                self.kept_answers
                    .insert(record.id.clone(), answer.to_answer(&record.id));
                continue;
            }
            if self.owners.contains_key(&record.id) {
                continue;
            }
            let labelled = HostToExtension::Ask(LabelledAsk {
                ask: Ask {
                    id: record.id.clone(),
                    form: record.form,
                    timeout_ms: 0,
                    asked_at_ms: record.asked_at_ms,
                    // The label below carries it, as for every ask.
                    project: None,
                },
                agent: record.agent,
                project: record.project,
                machine: None,
                kept_until_ms: None,
            });
            let frame = protocol::encode(&labelled);
            if frame.len() <= MAX_TO_BROWSER {
                effects.extend(
                    self.keep(&record.id, &frame, record.until_ms)
                        .unwrap_or_default(),
                );
            }
        }
        effects
    }

    /// The kept cards, each with its expiry (Unix ms), for the host to check against the
    /// store now and then.
    pub fn kept_cards(&self) -> Vec<(String, u64)> {
        let mut ids: Vec<(String, u64)> = self
            .kept
            .iter()
            .map(|(id, card)| (id.clone(), card.until_ms))
            .collect();
        ids.sort();
        ids
    }

    /// The kept answers this host holds, to forget once collected.
    pub fn kept_answer_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.kept_answers.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// The store no longer holds `id` open (expired, collected, or answered in another
    /// browser): its card leaves the panel for `reason`.
    /// `by_matrix` is the answerer when the answer came over Matrix.
    pub fn kept_gone(
        &mut self,
        id: &str,
        reason: WithdrawReason,
        by_matrix: Option<String>,
    ) -> Vec<Effect> {
        self.kept_answers.remove(id);
        match self.kept.remove(id) {
            Some(_) => vec![Effect::ToExtension(HostToExtension::Withdraw {
                id: id.to_owned(),
                reason,
                answered_via: by_matrix.as_ref().map(|_| protocol::MATRIX_KIND.to_owned()),
                answered_by: by_matrix,
            })],
            None => Vec::new(),
        }
    }

    fn welcome(&self) -> HostToAgent {
        HostToAgent::Welcome(Welcome {
            protocol: PROTOCOL,
            host: self.host.clone(),
            extension: self.extension.clone(),
            panel_open: self.panel_open,
            verdicts: Some(self.extension_verdicts),
        })
    }

    /// Agents that said hello learn when the extension identifies itself or the panel opens.
    fn broadcast_welcome(&self) -> Vec<Effect> {
        let mut agents: Vec<AgentId> = self
            .agents
            .iter()
            .filter(|(_, s)| s.info.is_some())
            .map(|(&id, _)| id)
            .collect();
        agents.sort_unstable();
        agents
            .into_iter()
            .map(|id| Effect::ToAgent(id, self.welcome()))
            .collect()
    }
}

/// Why a question of `len` bytes under `id` may not join `waiting` (one agent's questions
/// waiting at this host, with their sizes), if it may not. The same id again (an agent
/// re-sending its question) takes its own place, not another.
fn over_limit(waiting: &HashMap<String, usize>, id: &str, len: usize) -> Option<String> {
    let again = waiting.get(id).copied();
    let count = waiting.len() + usize::from(again.is_none());
    let bytes = waiting.values().sum::<usize>() - again.unwrap_or(0) + len;
    if count > MAX_WAITING_QUESTIONS {
        Some(format!(
            "this agent already has {MAX_WAITING_QUESTIONS} questions waiting in this browser, \
             the most one agent may have at once (so that no agent holds up the others' \
             questions); wait for answers before asking more"
        ))
    } else if bytes > MAX_WAITING_BYTES {
        Some(format!(
            "this agent's questions waiting in this browser would take {bytes} bytes with this \
             one, over the {MAX_WAITING_BYTES} bytes (4 MiB) one agent may have at once (the \
             browser keeps every waiting question in its 10 MiB session storage); wait for \
             answers, or ask something shorter"
        ))
    } else {
        None
    }
}

fn no_answer_to_judge(id: String) -> HostToAgent {
    HostToAgent::Error {
        message: format!(
            "cannot judge {id}: this link was sent no answer to it that awaits a verdict"
        ),
        id: Some(id),
    }
}

/// Tells the extension that the answer to question `id` did not reach its agent, and why.
pub(crate) fn undelivered(id: String, why: &str) -> Effect {
    Effect::ToExtension(HostToExtension::Error {
        id: Some(id),
        message: why.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::protocol::{Action, Answer, encode};
    use serde_json::{Value, json};

    const Q1: &str = "00000000000000000000000000000001";
    const Q2: &str = "00000000000000000000000000000002";

    fn relay() -> Relay {
        Relay::new(HostInfo {
            version: "0.0.0".into(),
            pid: Some(1),
            machine: None,
            kind: None,
        })
    }

    fn hello(name: &str) -> Vec<u8> {
        hello_judging(name, false)
    }

    fn hello_judging(name: &str, verdicts: bool) -> Vec<u8> {
        encode(&AgentToHost::Hello {
            protocol: PROTOCOL,
            agent: AgentInfo {
                name: name.into(),
                title: None,
                version: None,
                via: None,
            },
            project: Some("proj".into()),
            pid: 9,
            verdicts,
            machine: None,
        })
        .to_vec()
    }

    const READY_WITH_VERDICTS: &[u8] = br#"{"type":"ready","protocol":1,"extension":{"id":"abc","version":"1.0"},"verdicts":true}"#;

    fn submit(id: &str) -> Vec<u8> {
        format!(r#"{{"type":"answer","id":"{id}","action":"submit","values":{{}}}}"#).into_bytes()
    }

    fn refused(id: &str) -> Vec<u8> {
        encode(&AgentToHost::Refused(crate::wire::protocol::Refusal {
            id: id.into(),
            field: Some("a".into()),
            message: "is required but was left empty".into(),
        }))
        .to_vec()
    }

    fn accepted(id: &str) -> Vec<u8> {
        encode(&AgentToHost::Accepted { id: id.into() }).to_vec()
    }

    /// A relay whose extension shows verdicts, with agents 1 and 2 that give them, and
    /// agent 1's question Q1 pending.
    fn judging_relay() -> Relay {
        let mut r = relay();
        r.extension_frame(READY_WITH_VERDICTS);
        for agent in [1, 2] {
            r.agent_connected(agent);
            r.agent_frame(agent, &hello_judging("a", true));
        }
        r.agent_frame(1, &ask(Q1));
        r
    }

    fn withdraw_keeping(id: &str, until: u64) -> Vec<u8> {
        encode(&AgentToHost::Withdraw {
            id: id.into(),
            reason: WithdrawReason::Timeout,
            keep: true,
            keep_until_ms: Some(until),
            answered_via: None,
            answered_by: None,
        })
        .to_vec()
    }

    #[test]
    fn a_kept_question_stays_marked_takes_only_a_fitting_answer_and_hands_it_to_the_next_ask() {
        let mut r = judging_relay();
        r.keep_questions();
        let effects = r.agent_frame(1, &withdraw_keeping(Q1, 9_000));
        let [Effect::AskToExtension(frame)] = &effects[..] else {
            panic!("{effects:?}")
        };
        let kept: Value = serde_json::from_slice(frame).unwrap();
        assert_eq!(kept["kept_until_ms"], 9_000);
        assert_eq!(
            kept["timeout_ms"], 9_000,
            "its deadline moves to the end of the keeping"
        );
        assert_eq!(r.pending(), 0, "no agent owns it now");
        // A reply with a field the form lacks goes back to the card; a fitting one is saved.
        let wrong =
            format!(r#"{{"type":"answer","id":"{Q1}","action":"submit","values":{{"b":"x"}}}}"#);
        assert!(matches!(
            &r.extension_frame(wrong.as_bytes())[..],
            [Effect::ToExtension(HostToExtension::Refused(refusal))] if refusal.field.as_deref() == Some("b")
        ));
        let right =
            format!(r#"{{"type":"answer","id":"{Q1}","action":"submit","values":{{"a":"yes"}}}}"#);
        let effects = r.extension_frame(right.as_bytes());
        let [Effect::SaveKept(answer)] = &effects[..] else {
            panic!("{effects:?}")
        };
        assert_eq!(
            r.kept_saved(answer.clone(), Ok(())),
            vec![Effect::ToExtension(HostToExtension::Accepted {
                id: Q1.into()
            })]
        );
        // Its agent asks again: the kept answer comes back at once, no card.
        let effects = r.agent_frame(2, &ask(Q1));
        assert!(
            matches!(&effects[..], [Effect::ToAgent(2, HostToAgent::Answer(a))] if a.id == Q1),
            "{effects:?}"
        );
        assert!(r.judging(Q1), "and it judges that answer as any other");
    }

    #[test]
    fn a_host_without_a_store_or_a_question_being_judged_is_withdrawn_not_kept() {
        let mut r = judging_relay();
        assert!(matches!(
            &r.agent_frame(1, &withdraw_keeping(Q1, 9_000))[..],
            [Effect::ToExtension(HostToExtension::Withdraw { .. })]
        ));
        let mut r = judging_relay();
        r.keep_questions();
        r.extension_frame(&submit(Q1));
        assert!(matches!(
            &r.agent_frame(1, &withdraw_keeping(Q1, 9_000))[..],
            [Effect::ToExtension(HostToExtension::Withdraw { .. })]
        ));
    }

    #[test]
    fn a_refused_answer_leaves_the_question_open_until_a_corrected_one_is_accepted() {
        let mut r = judging_relay();
        assert!(matches!(
            &r.extension_frame(&submit(Q1))[..],
            [Effect::ToAgent(1, HostToAgent::Answer(a))] if a.id == Q1
        ));
        assert!(r.judging(Q1));
        let effects = r.agent_frame(1, &refused(Q1));
        let [Effect::ToExtension(HostToExtension::Refused(refusal))] = &effects[..] else {
            panic!("{effects:?}")
        };
        assert_eq!(
            (refusal.id.as_str(), refusal.field.as_deref()),
            (Q1, Some("a"))
        );
        assert_eq!(r.pending(), 1, "the question is still open");
        assert!(!r.judging(Q1));
        // The corrected answer goes to the same agent, which takes it.
        assert!(matches!(
            &r.extension_frame(&submit(Q1))[..],
            [Effect::ToAgent(1, HostToAgent::Answer(_))]
        ));
        assert_eq!(
            r.agent_frame(1, &accepted(Q1)),
            vec![Effect::ToExtension(HostToExtension::Accepted {
                id: Q1.into()
            })]
        );
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn only_the_agent_that_asked_may_judge_an_answer_and_only_once_sent_one() {
        let mut r = judging_relay();
        // No answer yet: nothing to judge, even for the owner.
        assert!(matches!(
            &r.agent_frame(1, &accepted(Q1))[..],
            [Effect::ToAgent(1, HostToAgent::Error { id: Some(id), .. })] if id == Q1
        ));
        r.extension_frame(&submit(Q1));
        for verdict in [accepted(Q1), refused(Q1)] {
            let effects = r.agent_frame(2, &verdict);
            assert!(
                matches!(&effects[..], [Effect::ToAgent(2, HostToAgent::Error { id: Some(id), .. })] if id == Q1),
                "{effects:?}"
            );
        }
        assert!(r.judging(Q1), "another agent's verdict changed nothing");
        assert_eq!(r.pending(), 1);
    }

    #[test]
    fn an_agent_that_leaves_while_judging_sends_the_answer_back_as_undelivered() {
        let mut r = judging_relay();
        r.agent_frame(1, &ask(Q2));
        r.extension_frame(&submit(Q1));
        let effects = r.agent_closed(1, "it left", &|_| None);
        assert_eq!(
            effects,
            vec![
                Effect::ToExtension(HostToExtension::Error {
                    id: Some(Q1.into()),
                    message: "it left".into()
                }),
                Effect::ToExtension(HostToExtension::Withdraw {
                    id: Q2.into(),
                    reason: WithdrawReason::Cancelled,
                    answered_via: None,
                    answered_by: None,
                }),
            ]
        );
    }

    #[test]
    fn for_an_agent_that_judges_in_silence_the_host_says_accepted_when_it_relays() {
        let mut r = relay();
        r.extension_frame(READY_WITH_VERDICTS);
        r.agent_connected(1);
        r.agent_frame(1, &hello("old"));
        r.agent_frame(1, &ask(Q1));
        let effects = r.extension_frame(&submit(Q1));
        assert!(matches!(
            &effects[..],
            [
                Effect::ToAgent(1, HostToAgent::Answer(_)),
                Effect::ToExtension(HostToExtension::Accepted { id }),
            ] if id == Q1
        ));
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn an_extension_without_verdicts_is_told_none_and_agents_learn_it_cannot_correct() {
        let mut r = relay();
        let effects = r.agent_frame(1, &hello_judging("a", true));
        assert!(matches!(
            &effects[..],
            [Effect::ToAgent(
                1,
                HostToAgent::Welcome(Welcome {
                    verdicts: Some(false),
                    ..
                })
            )]
        ));
        r.agent_frame(1, &ask(Q1));
        r.extension_frame(&submit(Q1));
        assert!(r.agent_frame(1, &accepted(Q1)).is_empty());
        assert_eq!(r.pending(), 0);
        assert!(matches!(
            r.hello(),
            HostToExtension::Hello { verdicts: true, .. }
        ));
    }

    fn ask(id: &str) -> Vec<u8> {
        ask_in(id, None)
    }

    fn ask_in(id: &str, project: Option<&str>) -> Vec<u8> {
        encode(&AgentToHost::Ask(Ask {
            id: id.into(),
            form: json!({"title": "t", "fields": [{"name": "a", "type": "text", "label": "A"}]}),
            timeout_ms: 1000,
            asked_at_ms: 0,
            project: project.map(str::to_owned),
        }))
        .to_vec()
    }

    /// The ask the extension was sent, as it reads it (one key of each name).
    fn labelled(effects: &[Effect]) -> serde_json::Map<String, serde_json::Value> {
        let [Effect::AskToExtension(frame)] = effects else {
            panic!("{effects:?}")
        };
        serde_json::from_slice(frame).unwrap()
    }

    fn answer(id: &str) -> Vec<u8> {
        encode(&HostToAgent::Answer(Answer {
            id: id.into(),
            action: Action::Decline,
            values: None,
            note: None,
            answered_by: None,
        }))
        .to_vec()
    }

    #[test]
    fn an_ask_reaches_the_extension_labelled_with_its_agent() {
        let mut r = relay();
        r.agent_connected(1);
        assert!(matches!(
            r.agent_frame(1, &hello("cursor"))[..],
            [Effect::ToAgent(1, HostToAgent::Welcome(_))]
        ));
        let effects = r.agent_frame(1, &ask(Q1));
        let [Effect::AskToExtension(frame)] = &effects[..] else {
            panic!("{effects:?}")
        };
        let Ok(HostToExtension::Ask(labelled)) = serde_json::from_slice(frame) else {
            panic!("not an ask: {frame:?}")
        };
        assert_eq!(labelled.agent.name, "cursor");
        assert_eq!(labelled.project.as_deref(), Some("proj"));
        assert_eq!(r.pending(), 1);
    }

    #[test]
    fn an_asks_own_project_labels_that_question_over_the_hellos() {
        let mut r = relay();
        r.agent_connected(1);
        r.agent_frame(1, &hello("cursor"));
        let shop = labelled(&r.agent_frame(1, &ask_in(Q1, Some("shop"))));
        assert_eq!(shop["project"], "shop");
        assert_eq!(shop["agent"]["name"], "cursor");
        // An ask without one (an older agent) is the hello's.
        assert_eq!(labelled(&r.agent_frame(1, &ask(Q2)))["project"], "proj");
    }

    #[test]
    fn names_from_an_agent_are_cut_to_fit_a_card() {
        let mut r = relay();
        r.agent_connected(1);
        r.agent_frame(1, &hello(&"n".repeat(300)));
        let long = labelled(&r.agent_frame(1, &ask_in(Q1, Some(&"p".repeat(300)))));
        let chars = |v: &serde_json::Value| v.as_str().unwrap().chars().count();
        assert_eq!(
            chars(&long["agent"]["name"]),
            crate::wire::labels::MAX_LABEL_CHARS
        );
        assert_eq!(
            chars(&long["project"]),
            crate::wire::labels::MAX_LABEL_CHARS
        );
    }

    #[test]
    fn an_answer_goes_only_to_the_agent_that_asked() {
        let mut r = relay();
        for agent in [1, 2] {
            r.agent_connected(agent);
            r.agent_frame(agent, &hello("a"));
        }
        r.agent_frame(1, &ask(Q1));
        r.agent_frame(2, &ask(Q2));
        let effects = r.extension_frame(&answer(Q2));
        assert!(matches!(&effects[..], [Effect::ToAgent(2, HostToAgent::Answer(a))] if a.id == Q2));
        // Answered questions are forgotten: a second answer is refused, not relayed, and
        // the refusal names the question so the panel can say which answer did not arrive.
        let again = r.extension_frame(&answer(Q2));
        assert!(matches!(
            &again[..],
            [Effect::ToExtension(HostToExtension::Error { id: Some(id), .. })] if id == Q2
        ));
        assert_eq!(r.pending(), 1);
    }

    #[test]
    fn a_closed_agent_has_its_questions_withdrawn_and_no_one_elses() {
        let mut r = relay();
        r.agent_connected(1);
        r.agent_connected(2);
        r.agent_frame(1, &ask(Q1));
        r.agent_frame(2, &ask(Q2));
        let effects = r.agent_closed(1, "it left", &|_| None);
        assert_eq!(
            effects,
            vec![Effect::ToExtension(HostToExtension::Withdraw {
                id: Q1.into(),
                reason: WithdrawReason::Cancelled,
                answered_via: None,
                answered_by: None,
            })]
        );
        assert_eq!(r.pending(), 1);
    }

    #[test]
    fn another_agents_question_id_cannot_be_taken_or_withdrawn() {
        let mut r = relay();
        r.agent_frame(1, &ask(Q1));
        assert!(matches!(
            &r.agent_frame(2, &ask(Q1))[..],
            [Effect::ToAgent(2, HostToAgent::Error { .. })]
        ));
        let withdraw = encode(&AgentToHost::Withdraw {
            id: Q1.into(),
            reason: WithdrawReason::Timeout,
            keep: false,
            keep_until_ms: None,
            answered_via: None,
            answered_by: None,
        });
        assert!(matches!(
            &r.agent_frame(2, &withdraw)[..],
            [Effect::ToAgent(2, HostToAgent::Error { .. })]
        ));
        assert!(matches!(
            &r.agent_frame(1, &withdraw)[..],
            [Effect::ToExtension(HostToExtension::Withdraw { .. })]
        ));
    }

    #[test]
    fn a_ping_is_answered_with_a_pong_before_or_after_hello() {
        let mut r = relay();
        let ping = encode(&AgentToHost::Ping);
        assert_eq!(
            r.agent_frame(1, &ping),
            vec![Effect::ToAgent(1, HostToAgent::Pong)]
        );
        r.agent_frame(1, &hello("a"));
        assert_eq!(
            r.agent_frame(1, &ping),
            vec![Effect::ToAgent(1, HostToAgent::Pong)]
        );
    }

    #[test]
    fn bad_frames_from_an_agent_get_an_error_naming_the_problem() {
        let mut r = relay();
        for (bytes, needle) in [
            (&b"\xff\xfe"[..], "not valid UTF-8 JSON"),
            (b"[]", "not an object"),
            (b"{\"type\":\"launch\"}", "unknown message type"),
            (b"{\"type\":\"ask\",\"id\":\"short\",\"form\":{},\"timeout_ms\":1,\"asked_at_ms\":1}", "128 bits"),
        ] {
            let effects = r.agent_frame(1, bytes);
            let [Effect::ToAgent(1, HostToAgent::Error { message, .. })] = &effects[..] else {
                panic!("{effects:?}")
            };
            assert!(message.contains(needle), "{message}");
        }
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn an_oversize_question_is_refused_before_it_reaches_the_browser() {
        let mut r = relay();
        let big = encode(&AgentToHost::Ask(Ask {
            id: Q1.into(),
            form: json!({"title": "x".repeat(MAX_TO_BROWSER)}),
            timeout_ms: 1,
            asked_at_ms: 0,
            project: None,
        }));
        let effects = r.agent_frame(1, &big);
        assert!(matches!(
            &effects[..],
            [Effect::ToAgent(1, HostToAgent::Error { .. })]
        ));
        assert_eq!(r.pending(), 0);
    }

    /// A distinct question id for test question `n`.
    fn qid(n: usize) -> String {
        format!("{n:032x}")
    }

    fn refusal_of(effects: &[Effect]) -> Option<&str> {
        match effects {
            [Effect::ToAgent(_, HostToAgent::Error { message, .. })] => Some(message),
            _ => None,
        }
    }

    #[test]
    fn one_agent_may_have_at_most_64_questions_waiting_and_another_is_not_held_up() {
        let mut r = relay();
        for n in 0..MAX_WAITING_QUESTIONS {
            let effects = r.agent_frame(1, &ask(&qid(n)));
            assert!(
                matches!(&effects[..], [Effect::AskToExtension(_)]),
                "{n}: {effects:?}"
            );
        }
        let over = r.agent_frame(1, &ask(&qid(MAX_WAITING_QUESTIONS)));
        let message = refusal_of(&over).expect("the 65th is refused");
        assert!(message.contains("64 questions"), "{message}");
        // Its own question sent again (after a host restart, say) is no new one.
        assert!(matches!(
            &r.agent_frame(1, &ask(&qid(0)))[..],
            [Effect::AskToExtension(_)]
        ));
        // Another agent is not counted with it.
        assert!(matches!(
            &r.agent_frame(2, &ask(&qid(0xabc)))[..],
            [Effect::AskToExtension(_)]
        ));
        // One answered makes room for one more.
        r.extension_frame(&answer(&qid(3)));
        assert!(matches!(
            &r.agent_frame(1, &ask(&qid(MAX_WAITING_QUESTIONS)))[..],
            [Effect::AskToExtension(_)]
        ));
        assert_eq!(r.pending(), MAX_WAITING_QUESTIONS + 1);
    }

    #[test]
    fn one_agent_may_have_at_most_4_mib_of_questions_waiting() {
        let mut r = relay();
        // About 1 MB each: as many fields as a form may have, each with a long label.
        let fields: Vec<_> = (0..crate::form::MAX_FIELDS)
            .map(|i| json!({"name": format!("f{i}"), "type": "text", "label": "x".repeat(15_600)}))
            .collect();
        let big = |n: usize| {
            encode(&AgentToHost::Ask(Ask {
                id: qid(n),
                form: json!({"title": "t", "fields": fields}),
                timeout_ms: 1000,
                asked_at_ms: 0,
                project: None,
            }))
        };
        for n in 0..4 {
            assert!(matches!(
                &r.agent_frame(1, &big(n))[..],
                [Effect::AskToExtension(_)]
            ));
        }
        let over = r.agent_frame(1, &big(4));
        let message = refusal_of(&over).expect("the fifth megabyte is refused");
        assert!(message.contains("4 MiB"), "{message}");
        // A small one still fits, and so does another agent's large one.
        assert!(matches!(
            &r.agent_frame(1, &ask(&qid(5)))[..],
            [Effect::AskToExtension(_)]
        ));
        assert!(matches!(
            &r.agent_frame(2, &big(6))[..],
            [Effect::AskToExtension(_)]
        ));
        // One withdrawn makes room for another.
        let withdraw = encode(&AgentToHost::Withdraw {
            id: qid(0),
            reason: WithdrawReason::Cancelled,
            keep: false,
            keep_until_ms: None,
            answered_via: None,
            answered_by: None,
        });
        r.agent_frame(1, &withdraw);
        assert!(matches!(
            &r.agent_frame(1, &big(4))[..],
            [Effect::AskToExtension(_)]
        ));
    }

    #[test]
    fn a_question_the_extension_refuses_is_reported_to_its_agent_and_forgotten() {
        let mut r = relay();
        r.agent_connected(1);
        r.agent_frame(1, &ask(Q1));
        let refusal = format!(r#"{{"type":"error","id":"{Q1}","message":"past its deadline"}}"#);
        let effects = r.extension_frame(refusal.as_bytes());
        let [
            Effect::ToAgent(
                1,
                HostToAgent::Error {
                    id: Some(id),
                    message,
                },
            ),
        ] = &effects[..]
        else {
            panic!("{effects:?}")
        };
        assert_eq!(id, Q1);
        assert!(message.contains("past its deadline"));
        assert_eq!(r.pending(), 0);
        // An error about nothing we know of is only logged.
        assert!(r.extension_frame(refusal.as_bytes()).is_empty());
    }

    #[test]
    fn the_extension_identifying_itself_is_told_to_every_greeted_agent() {
        let mut r = relay();
        r.agent_frame(1, &hello("a"));
        r.agent_connected(2); // never said hello
        let ready = br#"{"type":"ready","protocol":1,"extension":{"id":"abc","version":"1.0"}}"#;
        let effects = r.extension_frame(ready);
        let [
            Effect::ToAgent(
                1,
                HostToAgent::Welcome(Welcome {
                    extension: Some(ext),
                    ..
                }),
            ),
        ] = &effects[..]
        else {
            panic!("{effects:?}")
        };
        assert_eq!(ext.id, "abc");
    }
}
