//! The messages of DESIGN.md §3, the only place they are named. Each link direction has its
//! own enum, so a message can only be sent the way the protocol allows.
//!
//! Decoding keeps four failures apart (not JSON, not an object, unknown `type`, bad fields)
//! so the receiver can answer with an `error` that says which, then carry on.

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Version of this protocol, sent in every `hello`, `welcome` and `ready`.
pub const PROTOCOL: u32 = 1;

/// Who is asking: the MCP client's `clientInfo`, or `him ask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The bridge the client came through, when the bridge named itself in `clientInfo`
    /// (`asker::BRIDGES`): the card says "via" it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

impl AgentInfo {
    /// An agent known by its name alone.
    pub fn named(name: impl Into<String>) -> AgentInfo {
        AgentInfo {
            name: name.into(),
            title: None,
            version: None,
            via: None,
        }
    }
}

/// A question on its way to the person. The form travels as JSON: the host checks it once
/// against the form rules (host/relay.rs: a process that skips `him serve` must not reach the
/// panel with a form it cannot draw) and passes it on as it came; the agent that built it
/// validates the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    pub id: String,
    pub form: Value,
    pub timeout_ms: u64,
    pub asked_at_ms: u64,
    /// This question's project, over the `hello`'s: one `him serve --http` carries many
    /// sessions, and a client may name the project in the call itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// An `ask` encoded once, for every host it goes to now and every host that appears while
/// it waits. Bytes are shared, not copied, and no JSON tree of the form stays alive.
#[derive(Debug, Clone)]
pub struct AskFrame {
    pub id: String,
    pub bytes: Bytes,
}

impl AskFrame {
    pub fn new(ask: Ask) -> AskFrame {
        AskFrame::encode(
            ask.id,
            &ask.form,
            ask.timeout_ms,
            ask.asked_at_ms,
            ask.project.as_deref(),
        )
    }

    /// The `ask` for a form of any serialisable type, encoded straight from it rather than
    /// through a JSON tree of it: the same bytes as `AgentToHost::Ask`.
    pub fn encode(
        id: String,
        form: &impl Serialize,
        timeout_ms: u64,
        asked_at_ms: u64,
        project: Option<&str>,
    ) -> AskFrame {
        let wire = AskWire {
            id: &id,
            form,
            timeout_ms,
            asked_at_ms,
            project,
        };
        // Exactly as long as it is: it is kept for as long as the question waits, and the
        // encoder grows its buffer by doubling.
        let mut bytes = to_json(&wire);
        bytes.shrink_to_fit();
        AskFrame {
            id,
            bytes: Bytes::from(bytes),
        }
    }
}

/// `AgentToHost::Ask` as the agent writes it, borrowing its parts.
#[derive(Serialize)]
#[serde(tag = "type", rename = "ask")]
struct AskWire<'a, F> {
    id: &'a str,
    form: &'a F,
    timeout_ms: u64,
    asked_at_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    project: Option<&'a str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WithdrawReason {
    Timeout,
    Cancelled,
    Answered,
    Shutdown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Submit,
    Decline,
    Cancel,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub id: String,
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Who answered, when the host can tell people apart: the Matrix ID of the answerer
    /// that a Matrix bridge relays (trusted from a host whose `welcome` says `kind:
    /// "matrix"` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Set by a gateway (`him gateway`): the name of the machine whose browsers it reaches,
    /// so an agent on another machine can say where its questions are shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// What the host reaches, when it is not a browser: `"matrix"` for the Matrix bridge
    /// (`him matrix bridge`), a channel beside the browsers that does not count as one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// [`HostInfo::kind`] of the Matrix bridge.
pub const MATRIX_KIND: &str = "matrix";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtensionInfo {
    pub id: String,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentToHost {
    Hello {
        protocol: u32,
        agent: AgentInfo,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        project: Option<String>,
        pid: u32,
        /// This agent answers every `answer` it is relayed with `accepted` or `refused`.
        /// An agent that does not say so (one from before verdicts) judges in silence.
        #[serde(default, skip_serializing_if = "is_false")]
        verdicts: bool,
        /// The machine the agent runs on, when that is not the host's: an agent says it on
        /// a link it reached through a forwarded socket, and a gateway passes on the name
        /// its remote agent gave. The panel marks such a question with it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        machine: Option<String>,
    },
    Ask(Ask),
    Withdraw {
        id: String,
        reason: WithdrawReason,
        /// The call ended without an answer and the agent wrote the question to the answer
        /// store (`wire/keep.rs`): the host keeps the card answerable until `keep_until_ms` and
        /// writes the answer there. A host that cannot keep it withdraws it as usual.
        #[serde(default, skip_serializing_if = "is_false")]
        keep: bool,
        /// Unix ms: when a kept question expires (`HIM_KEEP_MS` after it was kept).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        keep_until_ms: Option<u64>,
        /// With `answered`: where it was answered when that was not a browser, `"matrix"`
        /// (the panel's card says "answered on the phone").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answered_via: Option<String>,
        /// With `answered_via: "matrix"`: the answerer's Matrix ID.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answered_by: Option<String>,
    },
    /// The answer to `id` fit its form: the question is over (no `withdraw` follows).
    Accepted {
        id: String,
    },
    /// The answer to `id` did not fit its form (`field` names the field at fault, if one
    /// is): the question stays open, with the same id and deadline, for a corrected answer.
    Refused(Refusal),
    /// Are you there? Sent by an agent on a link that can die without a word (one through a
    /// forwarded socket, DESIGN.md §10) after a while without a frame; the host answers
    /// `pong`. An older host answers `error` (unknown type), which shows it alive as well.
    Ping,
}

/// Why an answer was refused, for the person to correct it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
}

fn is_false(value: &bool) -> bool {
    !value
}

/// A host's answer to `hello` (DESIGN.md §3), sent again whenever what it says changes. One
/// type for every reader: the agent's pool, the forwarded-socket handshake and the doctor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    pub protocol: u32,
    pub host: HostInfo,
    #[serde(default)]
    pub extension: Option<ExtensionInfo>,
    #[serde(default)]
    pub panel_open: bool,
    /// Present when the host relays verdicts (`accepted`, `refused`); `true` when its
    /// extension also lets the person correct a refused answer. Absent from an older
    /// host, which must be sent neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdicts: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostToAgent {
    Welcome(Welcome),
    Shown {
        id: String,
    },
    Answer(Answer),
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        message: String,
    },
    /// The answer to `ping`.
    Pong,
}

/// `ask` as the extension sees it: the agent's question plus who asked. The host moves the
/// ask's own `project` here (over its agent's `hello`'s), so the ask inside has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelledAsk {
    #[serde(flatten)]
    pub ask: Ask,
    pub agent: AgentInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The other machine the agent runs on (from its `hello`), absent for a local agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// Unix ms: set on a question whose agent stopped waiting, kept for it until then
    /// (its `timeout_ms` is stretched to end there too, so an older extension shows it
    /// until then as well). The panel marks the card: the answer will be kept for the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_until_ms: Option<u64>,
}

// An `ask` is most of what this link carries, and one message lives at a time: boxing it
// would only add an allocation per question.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostToExtension {
    Hello {
        protocol: u32,
        host: HostInfo,
        /// Every answer the extension sends gets a verdict back: `accepted`, `refused`, or
        /// an `error` with its id (undelivered). An older host says nothing after an answer.
        #[serde(default, skip_serializing_if = "is_false")]
        verdicts: bool,
    },
    Ask(LabelledAsk),
    Withdraw {
        id: String,
        reason: WithdrawReason,
        /// As the agent's `withdraw` says (relayed as it came).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answered_via: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answered_by: Option<String>,
    },
    /// The agent took the answer to `id`.
    Accepted {
        id: String,
    },
    /// The agent refused the answer to `id` and still waits for a corrected one.
    Refused(Refusal),
    /// The reply to a frame the host could not use (§2: answered with an `error`, then
    /// skipped), or, with the question's `id`, to an answer it could not deliver (the agent
    /// left or was cut off first, or no such question is pending), `message` saying why.
    /// Extensions ignore types they do not know, so older ones are unaffected.
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExtensionToHost {
    Ready {
        protocol: u32,
        extension: ExtensionInfo,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        browser: Option<String>,
        /// The extension waits for the verdict on each answer and lets the person correct
        /// a refused one; without it, agents end a refused answer with invalid_response.
        #[serde(default, skip_serializing_if = "is_false")]
        verdicts: bool,
    },
    Shown {
        id: String,
    },
    Answer(Answer),
    Panel {
        open: bool,
    },
    /// Not part of the contract's list, but an extension may report a problem; the host
    /// logs it rather than answering "unknown type".
    Error {
        #[serde(default)]
        id: Option<String>,
        message: String,
    },
}

/// A message enum and the `type` values it accepts.
pub trait Message: DeserializeOwned + Serialize {
    const TYPES: &'static [&'static str];
}

impl Message for AgentToHost {
    const TYPES: &'static [&'static str] =
        &["hello", "ask", "withdraw", "accepted", "refused", "ping"];
}
impl Message for HostToAgent {
    const TYPES: &'static [&'static str] = &["welcome", "shown", "answer", "error", "pong"];
}
impl Message for HostToExtension {
    const TYPES: &'static [&'static str] =
        &["hello", "ask", "withdraw", "accepted", "refused", "error"];
}
impl Message for ExtensionToHost {
    const TYPES: &'static [&'static str] = &["ready", "shown", "answer", "panel", "error"];
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    NotJson(String),
    NotObject,
    MissingType,
    UnknownType(String),
    BadFields { kind: String, detail: String },
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtocolError::NotJson(e) => write!(f, "frame is not valid UTF-8 JSON: {e}"),
            ProtocolError::NotObject => write!(f, "frame is JSON but not an object"),
            ProtocolError::MissingType => write!(f, "message has no string \"type\" field"),
            ProtocolError::UnknownType(t) => write!(f, "unknown message type {t:?}"),
            ProtocolError::BadFields { kind, detail } => {
                write!(f, "malformed {kind:?} message: {detail}")
            }
        }
    }
}

impl std::error::Error for ProtocolError {}

impl ProtocolError {
    /// The question id the bad message was about, if it named one, so the error reply can
    /// carry it.
    pub fn id_in(bytes: &[u8]) -> Option<String> {
        let value: Value = serde_json::from_slice(bytes).ok()?;
        value.get("id")?.as_str().map(str::to_owned)
    }
}

pub fn decode<M: Message>(bytes: &[u8]) -> Result<M, ProtocolError> {
    // Every well-formed message decodes straight into its type in one pass. Only a frame
    // that fails is parsed again as a JSON tree, to tell the sender which way it is bad.
    match serde_json::from_slice::<M>(bytes) {
        Ok(message) => Ok(message),
        Err(_) => classify(bytes),
    }
}

/// Why `bytes` is not a message of `M` (or, should the tree accept what the one-pass
/// decoder did not, the message after all).
fn classify<M: Message>(bytes: &[u8]) -> Result<M, ProtocolError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| ProtocolError::NotJson(e.to_string()))?;
    let Value::Object(object) = &value else {
        return Err(ProtocolError::NotObject);
    };
    let kind = match object.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        _ => return Err(ProtocolError::MissingType),
    };
    if !M::TYPES.contains(&kind.as_str()) {
        return Err(ProtocolError::UnknownType(kind));
    }
    serde_json::from_value(value).map_err(|e| ProtocolError::BadFields {
        kind,
        detail: e.to_string(),
    })
}

pub fn encode<M: Message>(message: &M) -> Bytes {
    Bytes::from(to_json(message))
}

fn to_json(message: &impl Serialize) -> Vec<u8> {
    // Serialising these types cannot fail: every map key is a string and no Serialize impl
    // of ours returns an error. Fall back to an empty object rather than panic regardless.
    serde_json::to_vec(message).unwrap_or_else(|_| b"{}".to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_labelled_ask_flattens_onto_the_wire() {
        let msg = HostToExtension::Ask(LabelledAsk {
            ask: Ask {
                id: "ab".into(),
                form: json!({"title": "t", "fields": []}),
                timeout_ms: 1000,
                asked_at_ms: 5,
                project: None,
            },
            agent: AgentInfo::named("claude-code"),
            project: Some("him".into()),
            machine: None,
            kept_until_ms: None,
        });
        let wire: Value = serde_json::from_slice(&encode(&msg)).unwrap();
        assert_eq!(
            wire,
            json!({"type": "ask", "id": "ab", "form": {"title": "t", "fields": []},
                   "timeout_ms": 1000, "asked_at_ms": 5,
                   "agent": {"name": "claude-code"}, "project": "him"})
        );
    }

    #[test]
    fn an_ask_frame_is_the_ask_message() {
        let form = json!({"title": "t", "fields": [{"name": "b", "type": "text"}, {"name": "a"}]});
        let frame = AskFrame::encode("ab".into(), &form, 1000, 5, Some("shop"));
        let decoded: AgentToHost = decode(&frame.bytes).unwrap();
        let ask = Ask {
            id: "ab".into(),
            form,
            timeout_ms: 1000,
            asked_at_ms: 5,
            project: Some("shop".into()),
        };
        assert_eq!(decoded, AgentToHost::Ask(ask.clone()));
        assert_eq!(frame.bytes, encode(&AgentToHost::Ask(ask)));
        assert_eq!(frame.id, "ab");
    }

    #[test]
    fn decoding_tells_each_kind_of_bad_message_apart() {
        assert!(matches!(
            decode::<AgentToHost>(b"nope"),
            Err(ProtocolError::NotJson(_))
        ));
        assert_eq!(
            decode::<AgentToHost>(b"[1,2]"),
            Err(ProtocolError::NotObject)
        );
        assert_eq!(
            decode::<AgentToHost>(b"{\"id\":\"x\"}"),
            Err(ProtocolError::MissingType)
        );
        assert_eq!(
            decode::<AgentToHost>(b"{\"type\":\"answer\"}"),
            Err(ProtocolError::UnknownType("answer".into()))
        );
        assert!(matches!(
            decode::<AgentToHost>(b"{\"type\":\"ask\",\"id\":3}"),
            Err(ProtocolError::BadFields { .. })
        ));
    }

    #[test]
    fn ping_and_pong_are_bare_messages() {
        assert_eq!(&encode(&AgentToHost::Ping)[..], br#"{"type":"ping"}"#);
        assert_eq!(&encode(&HostToAgent::Pong)[..], br#"{"type":"pong"}"#);
        assert_eq!(
            decode::<AgentToHost>(br#"{"type":"ping","later":1}"#),
            Ok(AgentToHost::Ping)
        );
        assert_eq!(
            decode::<HostToAgent>(br#"{"type":"pong"}"#),
            Ok(HostToAgent::Pong)
        );
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let msg: ExtensionToHost =
            decode(br#"{"type":"panel","open":true,"future":{"x":1}}"#).unwrap();
        assert_eq!(msg, ExtensionToHost::Panel { open: true });
    }

    #[test]
    fn an_answer_round_trips() {
        let raw = br#"{"type":"answer","id":"q1","action":"submit","values":{"a":1},"note":"n"}"#;
        let msg: ExtensionToHost = decode(raw).unwrap();
        let ExtensionToHost::Answer(answer) = &msg else {
            panic!("not an answer: {msg:?}")
        };
        assert_eq!(answer.action, Action::Submit);
        assert_eq!(answer.note.as_deref(), Some("n"));
        let again: HostToAgent = decode(&encode(&HostToAgent::Answer(answer.clone()))).unwrap();
        assert_eq!(again, HostToAgent::Answer(answer.clone()));
    }
}
