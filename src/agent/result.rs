//! The one result object every ask tool returns (DESIGN.md §5), and how each way a question
//! can end becomes one. Every field is always present, `null` or empty where it does not
//! apply, so an agent can read any of them without checking first.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::agent::pool::Question;
use crate::agent::tools::ToolKind;
use crate::agent::wait::Outcome;
use crate::form::{FieldType, Form};
use crate::wire::keep::rfc3339;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum Status {
    Answered,
    Discussion,
    NeedsUserInput,
    Declined,
    Cancelled,
    Timeout,
    InvalidResponse,
    Unsupported,
    Error,
    /// The question is still open in the person's browser, unanswered: an ask tool's call
    /// that returned before the client's limit (`HIM_RETURN_AFTER_MS`), or get_answer.
    Pending,
    /// get_answer: the question was kept, and its time (HIM_KEEP_MS) ran out unanswered.
    Expired,
    /// get_answer: nothing is kept under that id (collected already, or never kept).
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum Via {
    Extension,
    Elicitation,
    Http,
    /// `him ask` in the person's own terminal (`fallback/terminal.rs`).
    Terminal,
    /// A Matrix room, through the bridge (`him matrix bridge`): the person's phone, a team.
    Matrix,
    Chat,
    None,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AskResult {
    /// How the question ended.
    pub status: Status,
    /// Which channel reached the person.
    pub via: Via,
    /// The tool that asked.
    pub tool: String,
    /// The question (or form title) as shown.
    pub question: String,
    /// ask_text: the text; ask_choice: the chosen option; ask_confirm: "yes" or "no".
    pub answer: Option<String>,
    /// The chosen options (ask_multi_select; ask_choice as a one-element list).
    pub selected: Vec<String>,
    /// ask_confirm: the person's yes (true) or no (false).
    pub confirmed: Option<bool>,
    /// The person's free-text note, when they wrote one.
    pub free_text: Option<String>,
    /// Every field of the form by name (null where left empty); empty unless answered.
    #[schemars(schema_with = "values_schema")]
    pub values: Map<String, Value>,
    /// A human-readable account of what happened (or the question to ask in chat).
    pub message: String,
    /// What the agent should do next, in one sentence.
    pub next_step: String,
    /// The fallback mode used when no browser was connected, if any.
    pub fallback: Option<String>,
    /// The loopback form's address, when one was opened.
    pub form_url: Option<String>,
    /// Milliseconds from the call to its end.
    pub elapsed_ms: u64,
    /// Whether the client declared support for MCP form elicitation.
    pub client_elicitation: bool,
    /// A decline so fast that a client probably refused on the person's behalf.
    pub auto_reject_suspected: bool,
    /// The question's id, the same on every channel.
    pub question_id: String,
    /// Who answered, where the channel tells people apart: the answerer's Matrix ID when
    /// `via` is `matrix`; null on every other channel (one person at their own desk).
    pub answered_by: Option<String>,
    /// The answer was given after the call that asked had ended, and kept for you
    /// (get_answer, or the same question asked again).
    pub late: bool,
    /// When the person answered (RFC 3339, UTC), for a late answer.
    pub answered_at: Option<String>,
}

/// A union, because the contract is one: a field's value has the field's type (DESIGN.md
/// §4: a string, a number, a boolean, or an array of option values for multi_select), and
/// `null` where the person left an optional field empty. Spelt as `anyOf` of single types,
/// which every client reads (a `type` array is not portable: `mcp/schema.rs`).
fn values_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "description": "Every field of the form by name (null where left empty); empty unless answered",
        "additionalProperties": {
            "anyOf": [
                {"type": "string"},
                {"type": "number"},
                {"type": "boolean"},
                {"type": "array", "items": {"type": "string"}},
                {"type": "null"}
            ]
        }
    })
}

/// What the result needs to know about the call besides its outcome.
#[derive(Debug, Clone)]
pub struct CallContext<'a> {
    pub tool: ToolKind,
    pub form: &'a Form,
    pub question_id: &'a str,
    pub elapsed_ms: u64,
    pub client_elicitation: bool,
}

impl AskResult {
    /// Every field, in the contract's order (DESIGN.md §5); all are always serialised.
    pub const FIELDS: [&'static str; 20] = [
        "status",
        "via",
        "tool",
        "question",
        "answer",
        "selected",
        "confirmed",
        "free_text",
        "values",
        "message",
        "next_step",
        "fallback",
        "form_url",
        "elapsed_ms",
        "client_elicitation",
        "auto_reject_suspected",
        "question_id",
        "answered_by",
        "late",
        "answered_at",
    ];

    /// The skeleton every result starts from: nothing answered yet.
    pub fn blank(cx: &CallContext<'_>, status: Status, via: Via) -> AskResult {
        AskResult {
            status,
            via,
            tool: cx.tool.tool_name().into(),
            question: cx.form.title.clone(),
            answer: None,
            selected: Vec::new(),
            confirmed: None,
            free_text: None,
            values: Map::new(),
            message: String::new(),
            next_step: String::new(),
            fallback: None,
            form_url: None,
            elapsed_ms: cx.elapsed_ms,
            client_elicitation: cx.client_elicitation,
            auto_reject_suspected: false,
            question_id: cx.question_id.into(),
            answered_by: None,
            late: false,
            answered_at: None,
        }
    }

    pub fn is_answered(&self) -> bool {
        matches!(self.status, Status::Answered | Status::Discussion)
    }
}

/// The result of an outcome reached through `via`.
pub fn from_outcome(cx: &CallContext<'_>, via: Via, outcome: Outcome) -> AskResult {
    let tool = cx.tool.tool_name();
    match outcome {
        Outcome::Answered { values, note } => answered(cx, via, values, note),
        Outcome::Declined { note } => AskResult {
            free_text: note,
            message: "The person declined to answer.".into(),
            next_step: "Respect the decline as a no: do not do what you asked about, and do not \
                        ask the same thing again right away; continue without it or explain in \
                        chat why you need it."
                .into(),
            ..AskResult::blank(cx, Status::Declined, via)
        },
        Outcome::Dismissed => AskResult {
            message: "The person closed the question without answering.".into(),
            next_step: "Nothing was answered, and that is no consent: do not assume an answer; \
                        ask in chat whether to continue."
                .into(),
            ..AskResult::blank(cx, Status::Cancelled, via)
        },
        Outcome::Invalid(err) => AskResult {
            message: format!("The reply did not fit the question and was discarded: {err}."),
            next_step: format!(
                "Do not use this reply and do not act as if answered; call {tool} again or ask \
                 in chat."
            ),
            ..AskResult::blank(cx, Status::InvalidResponse, via)
        },
        Outcome::Timeout => AskResult {
            message: format!("No answer within {} s.", cx.elapsed_ms / 1000),
            next_step: format!("{NOT_CONSENT} Ask again later or in chat."),
            ..AskResult::blank(cx, Status::Timeout, via)
        },
        Outcome::Cancelled => AskResult {
            message: "The call was cancelled before the person answered; the question was \
                      withdrawn."
                .into(),
            next_step: format!("{NOT_CONSENT} Ask again only if it is still needed."),
            ..AskResult::blank(cx, Status::Cancelled, via)
        },
        Outcome::Refused(reason) => AskResult {
            message: format!("The browser could not show the question: {reason}."),
            next_step: "Nothing was answered: do not act as if it were. Do not send the same \
                        question again at once: ask a shorter one, or wait until the person has \
                        answered the questions already waiting, or ask in chat."
                .into(),
            ..AskResult::blank(cx, Status::Error, via)
        },
        Outcome::NoBrowser { .. } => AskResult {
            message: "No browser side panel is connected.".into(),
            next_step: "Nothing was answered: ask the person in chat, and wait for their reply \
                        before you act on it."
                .into(),
            ..AskResult::blank(cx, Status::Unsupported, Via::None)
        },
    }
}

/// The rule every unanswered result starts from (docs/tools.md: "A timeout halts").
pub const NOT_CONSENT: &str = "No answer is not consent: do not guess, and do not do what you \
                               asked about.";

/// How an agent collects a late answer: the MCP tool, or `him ask` from a shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collect {
    GetAnswer,
    AnswerOf,
}

impl Collect {
    /// The instruction, naming the question's id.
    pub fn how(self, id: &str) -> String {
        match self {
            Collect::GetAnswer => format!("call get_answer with question_id \"{id}\""),
            Collect::AnswerOf => format!("run `him ask --answer-of {id}`"),
        }
    }
}

/// Says, on a result that ended unanswered (timeout, cancelled), whether the question was
/// kept for a late answer and how to collect it, or why it could not be kept.
pub fn note_kept(
    result: &mut AskResult,
    kept: Option<&crate::agent::pool::Kept>,
    collect: Collect,
) {
    if !matches!(result.status, Status::Timeout | Status::Cancelled) {
        return;
    }
    let id = result.question_id.clone();
    match kept {
        Some(crate::agent::pool::Kept::Until(until)) => {
            result.message = format!(
                "{} The question stays open in the person's browser until {}, marked as no \
                 longer awaited; their answer will be kept for you (question_id {id}).",
                result.message,
                crate::wire::keep::rfc3339(*until)
            );
            result.next_step = format!(
                "{NOT_CONSENT} Later, {} to collect the person's answer (or ask the same \
                 question again: a kept answer comes back at once), or ask in chat.",
                collect.how(&id)
            );
        }
        Some(crate::agent::pool::Kept::Failed(why)) => {
            result.message = format!(
                "{} It could not be kept for a late answer: {why}.",
                result.message
            );
            result.next_step = format!(
                "{NOT_CONSENT} A late answer cannot be kept, because {why}: ask again later or \
                 in chat (and fix the state folder, or set HIM_KEEP_MS=0 to stop keeping)."
            );
        }
        None => {}
    }
}

/// A result that is not about an answer: the question is still open (`pending`), or
/// expired, or unknown (get_answer).
pub fn unanswered(
    cx: &CallContext<'_>,
    status: Status,
    message: String,
    next_step: String,
) -> AskResult {
    AskResult {
        message,
        next_step,
        ..AskResult::blank(cx, status, Via::None)
    }
}

fn answered(
    cx: &CallContext<'_>,
    via: Via,
    values: Map<String, Value>,
    note: Option<String>,
) -> AskResult {
    let text = |name: &str| values.get(name).and_then(Value::as_str).map(str::to_owned);
    let mut result = AskResult {
        free_text: note.clone(),
        ..AskResult::blank(cx, Status::Answered, via)
    };
    match cx.tool {
        ToolKind::Text => result.answer = text("answer"),
        ToolKind::Choice => {
            result.answer = text("choice");
            result.selected = result.answer.iter().cloned().collect();
            if result.answer.is_none() {
                result.status = Status::Discussion;
            }
        }
        ToolKind::MultiSelect => {
            result.selected = values
                .get("selected")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
        }
        ToolKind::Confirm => {
            result.confirmed = values.get("confirmed").and_then(Value::as_bool);
            result.answer = result
                .confirmed
                .map(|yes| if yes { "yes" } else { "no" }.to_owned());
        }
        ToolKind::Form => {}
    }
    result.message = match (&result.status, cx.tool) {
        (Status::Discussion, _) => format!(
            "The person chose no option and wrote instead: {}",
            note.as_deref().unwrap_or_default()
        ),
        (_, ToolKind::Form) => "The person submitted the form; see values.".into(),
        // An empty selection is an answer (where `min` allows it): say so in words, not
        // with an empty list. A reply with no selection at all never gets here.
        (_, ToolKind::MultiSelect) if result.selected.is_empty() => {
            "The person chose none of the options.".into()
        }
        (_, ToolKind::MultiSelect) => format!("The person chose: {}.", result.selected.join(", ")),
        _ => match &result.answer {
            Some(answer) if !cx.form.has_password() => format!("The person answered: {answer}"),
            _ => "The person answered.".into(),
        },
    };
    result.next_step = match result.status {
        Status::Discussion => {
            "Read the note, reply to it in chat, then ask again with adjusted options if a choice \
             is still needed."
                .into()
        }
        _ => "Proceed with the answer.".into(),
    };
    result.values = values;
    result
}

/// The chat hand-back: the whole question as text an agent can relay, with numbered
/// options, descriptions, defaults and constraints.
pub fn chat_handback(form: &Form) -> String {
    let mut out = String::new();
    out.push_str(&form.title);
    if let Some(description) = &form.description {
        out.push_str("\n\n");
        out.push_str(description);
    }
    let single = form.fields.len() == 1 && form.fields[0].label == form.title;
    for field in &form.fields {
        out.push('\n');
        if !single {
            out.push_str(&format!("\n- {}", field.label));
            let mut notes = vec![field.kind.name().replace('_', "-")];
            if field.required {
                notes.push("required".into());
            }
            out.push_str(&format!(" ({})", notes.join(", ")));
            if let Some(description) = &field.description {
                out.push_str(&format!(": {description}"));
            }
        }
        for (i, option) in field.options.iter().enumerate() {
            out.push_str(&format!("\n  {}. {}", i + 1, option.label));
            if let Some(description) = &option.description {
                out.push_str(&format!(" — {description}"));
            }
            if option.recommended {
                out.push_str(" (recommended)");
            }
        }
        let mut rules = Vec::new();
        if let Some(default) = field.default.as_ref().filter(|d| !d.is_null()) {
            let shown = match default {
                Value::String(s) => s.clone(),
                Value::Bool(true) => "yes".into(),
                Value::Bool(false) => "no".into(),
                other => other.to_string(),
            };
            rules.push(format!("default: {shown}"));
        }
        match field.kind {
            FieldType::MultiSelect => {
                let n = |b: Option<f64>| b.map(|v| v as u64);
                match (n(field.min), n(field.max)) {
                    (Some(min), Some(max)) => rules.push(format!("choose {min} to {max}")),
                    (Some(min), None) => rules.push(format!("choose at least {min}")),
                    (None, Some(max)) => rules.push(format!("choose at most {max}")),
                    (None, None) => rules.push("choose any number".into()),
                }
            }
            FieldType::Number => {
                if let Some(min) = field.min {
                    rules.push(format!("at least {min}"));
                }
                if let Some(max) = field.max {
                    rules.push(format!("at most {max}"));
                }
            }
            FieldType::Confirm => rules.push("answer yes or no".into()),
            FieldType::Password => {
                rules.push("a secret: ask the person to use a safe channel, not the chat".into())
            }
            _ => {}
        }
        if !rules.is_empty() {
            out.push_str(&format!("\n  ({})", rules.join("; ")));
        }
    }
    if form.allow_note {
        out.push_str("\n\nThe person may also answer in their own words.");
    }
    out
}

/// No interactive channel: hand the question back to the chat (`HIM_FALLBACK=return`).
pub fn needs_user_input(cx: &CallContext<'_>, reason: &str) -> AskResult {
    AskResult {
        message: chat_handback(cx.form),
        next_step: format!(
            "{reason} Ask the person this question in the chat, wait for their reply, and use it; \
             you may call {} again once a browser side panel is connected.",
            cx.tool.tool_name()
        ),
        fallback: Some("return".into()),
        ..AskResult::blank(cx, Status::NeedsUserInput, Via::Chat)
    }
}

/// The client declined the elicitation faster than a person could have read it
/// (`HIM_AUTO_REJECT_MS`): most likely a client set to refuse forms on its own. The question
/// goes back to the chat, where the person can see it.
pub fn auto_rejected(cx: &CallContext<'_>, waited_ms: u64) -> AskResult {
    AskResult {
        message: chat_handback(cx.form),
        next_step: format!(
            "The client refused the form {waited_ms} ms after it was sent, too fast for a person, \
             so it was probably refused automatically: do not treat this as the person's no; ask \
             them this question in the chat, wait for their reply, and use it (or call {} again \
             once a browser side panel is connected).",
            cx.tool.tool_name()
        ),
        auto_reject_suspected: true,
        ..AskResult::blank(cx, Status::NeedsUserInput, Via::Elicitation)
    }
}

/// No interactive channel and no fallback allowed (`HIM_FALLBACK=off`).
pub fn unsupported(cx: &CallContext<'_>, reason: &str) -> AskResult {
    AskResult {
        message: format!("{reason} The fallback is turned off (HIM_FALLBACK=off)."),
        next_step: "Ask the person in the chat instead, or ask them to open the browser with the \
                    him extension (run `him doctor` to check the set-up)."
            .into(),
        fallback: Some("off".into()),
        ..AskResult::blank(cx, Status::Unsupported, Via::None)
    }
}

/// `result` as the host that answered gives it: the Matrix bridge's answer is `via: "matrix"`
/// and says who answered; a browser's is left as it is.
pub fn via_host(
    question: &Question,
    host: Option<&std::path::Path>,
    result: AskResult,
) -> AskResult {
    if host.is_some_and(|h| question.is_matrix(h)) {
        AskResult {
            via: Via::Matrix,
            answered_by: question.answered_by().map(str::to_owned),
            ..result
        }
    } else {
        result
    }
}

/// `result` marked as an answer given after the call that asked had ended, at
/// `answered_at_ms`; `predates`: collected by a call that asked the same question anew, so
/// the agent hears that the answer is older than its question.
pub(crate) fn mark_late(mut result: AskResult, answered_at_ms: u64, predates: bool) -> AskResult {
    let at = rfc3339(answered_at_ms);
    result.message = format!(
        "{} (A late answer, given at {at}, after the call that asked had ended.)",
        result.message
    );
    if result.is_answered() && predates {
        result.next_step = format!(
            "{} It predates this call: if what you asked about has changed since, check with \
             the person first.",
            result.next_step
        );
    }
    result.late = true;
    result.answered_at = Some(at);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tools::{AskChoiceArgs, AskConfirmArgs, AskTool};
    use serde_json::json;

    fn cx(tool: ToolKind, form: &Form) -> CallContext<'_> {
        CallContext {
            tool,
            form,
            question_id: "q",
            elapsed_ms: 1200,
            client_elicitation: false,
        }
    }

    fn choice_form() -> Form {
        serde_json::from_value::<AskChoiceArgs>(json!({
            "question": "Which DB?", "allow_free_text": true,
            "options": ["Postgres", {"label": "SQLite", "description": "one file", "recommended": true}],
            "default": "Postgres"
        }))
        .unwrap()
        .to_form()
        .unwrap()
    }

    #[test]
    fn every_field_is_present_in_the_json() {
        let form = choice_form();
        let result = from_outcome(
            &cx(ToolKind::Choice, &form),
            Via::Extension,
            Outcome::Timeout,
        );
        let json = serde_json::to_value(&result).unwrap();
        for key in AskResult::FIELDS {
            assert!(json.get(key).is_some(), "{key} missing from {json}");
        }
        assert_eq!(json.as_object().unwrap().len(), AskResult::FIELDS.len());
        assert_eq!(json["status"], "timeout");
        assert!(result.next_step.contains("No answer is not consent"));
    }

    #[test]
    fn a_choice_answer_fills_answer_and_selected() {
        let form = choice_form();
        let values = json!({"choice": "SQLite"}).as_object().unwrap().clone();
        let result = from_outcome(
            &cx(ToolKind::Choice, &form),
            Via::Extension,
            Outcome::Answered { values, note: None },
        );
        assert_eq!(result.status, Status::Answered);
        assert_eq!(result.answer.as_deref(), Some("SQLite"));
        assert_eq!(result.selected, vec!["SQLite"]);
    }

    #[test]
    fn a_note_without_a_choice_is_a_discussion() {
        let form = choice_form();
        let values = json!({"choice": null}).as_object().unwrap().clone();
        let result = from_outcome(
            &cx(ToolKind::Choice, &form),
            Via::Extension,
            Outcome::Answered {
                values,
                note: Some("Neither; use files".into()),
            },
        );
        assert_eq!(result.status, Status::Discussion);
        assert_eq!(result.free_text.as_deref(), Some("Neither; use files"));
    }

    #[test]
    fn confirm_answers_carry_a_boolean() {
        let form = AskConfirmArgs {
            question: "Deploy?".into(),
            ..Default::default()
        }
        .to_form()
        .unwrap();
        let values = json!({"confirmed": false}).as_object().unwrap().clone();
        let result = from_outcome(
            &cx(ToolKind::Confirm, &form),
            Via::Extension,
            Outcome::Answered { values, note: None },
        );
        assert_eq!(result.confirmed, Some(false));
        assert_eq!(result.answer.as_deref(), Some("no"));
    }

    #[test]
    fn the_chat_handback_numbers_options_with_descriptions_and_default() {
        let form = choice_form();
        let result = needs_user_input(&cx(ToolKind::Choice, &form), "No browser is connected.");
        assert_eq!(result.status, Status::NeedsUserInput);
        assert_eq!(result.via, Via::Chat);
        assert!(result.message.contains("1. Postgres"), "{}", result.message);
        assert!(
            result
                .message
                .contains("2. SQLite — one file (recommended)"),
            "{}",
            result.message
        );
        assert!(
            result.message.contains("default: Postgres"),
            "{}",
            result.message
        );
        assert!(result.next_step.contains("ask_choice again"));
    }
}
