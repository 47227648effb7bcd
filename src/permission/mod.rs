//! An agent's own permission prompts (DESIGN.md §9), asked in the side panel like any other
//! question: Claude Code's permission-prompt tool (`mcp/server.rs`, tool `approve`) and the
//! agents' `PermissionRequest` hooks (`permission/hook.rs`).
//!
//! ```text
//!  request {tool_name, input, tool_use_id?, suggestions} ── prompt_for ──► Prompt (a form)
//!      ask: the browsers only (same queue, labels, first answer wins, validation)
//!  Outcome ── decide ──► Decision: Allow {updated_input, updated_permissions}
//!                                  | Deny {message} | Undecided {why}
//! ```
//!
//! Pure but for [`ask`]. The front ends turn a [`Decision`] into their agent's format, and
//! differ only on `Undecided`: the permission tool denies, a hook defers to the agent's own
//! prompt. Nothing else is ever allowed: Allow comes only from a submitted, validated
//! `decision: "allow"` (or, for `AskUserQuestion`, submitted answers).
//!
//! "Allow for this session" (`decision: "allow_session"`) exists only where the agent
//! offered rules: Claude Code's `PermissionRequest` hook sends `permission_suggestions`
//! ([`session_offer`] has what is kept). The card shows the rules; the answer only names the
//! choice, and the allow carries the suggestions this process was given, never text from the
//! answer.
//!
//! The browsers are the only channel. MCP elicitation would go back to the very client that
//! asks for permission (and `claude -p` declines it at once), and neither it nor the
//! loopback form draws the permission card, whose Allow only a deliberate click gives.

pub mod hook;

use std::future::Future;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::agent::pool::Pool;
use crate::agent::prepare::{self, MAX_ASK_BYTES, PrepareError};
use crate::agent::tools::ToolKind;
use crate::agent::wait::{self, Outcome, WaitOptions};
use crate::form::{
    ALLOW, ALLOW_SESSION, Choice, DECISION_FIELD, DENY, Field, FieldType, Form, MAX_MARKDOWN_CHARS,
    MAX_SESSION_RULE_CHARS, MAX_SESSION_RULES, Permission,
};
use crate::wire::protocol::WithdrawReason;

/// Claude Code's built-in tool that asks the person questions. In `claude -p` it reaches
/// the permission-prompt tool like any tool (verified with Claude Code 2.1.197 and 2.1.332,
/// tests/e2e/claude-code.test.mjs): input
/// `{"questions": [{"question", "header", "options": [{"label", "description"}],
/// "multiSelect"}]}`; allowing it with `updatedInput` = the input plus `"answers":
/// {"<question text>": "<label or free text>"}` answers them.
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";

/// How several picked labels of one multi-select question go back in `answers` (a map of
/// strings), as Claude Code 2.1.332 itself writes them (read in its bundled source, the
/// AskUserQuestion tool: `e.map(t => t.includes(", ") || t.includes('"') ? JSON.stringify(t)
/// : t).join(", ")`, and its output schema: "multi-select answers are comma-separated"):
/// the labels joined with ", ", each label that holds ", " or a `"` written as a JSON
/// string. Claude Code parses such an answer back into labels; when every answer is one
/// of the options offered it tells the model "Your questions have been answered: …",
/// otherwise "The user answered: … Read the answers carefully".
pub const MULTI_SELECT_SEPARATOR: &str = ", ";

/// One multi-select answer in Claude Code's encoding (see [`MULTI_SELECT_SEPARATOR`]).
fn join_labels(labels: &[&str]) -> String {
    labels
        .iter()
        .map(|label| {
            if label.contains(MULTI_SELECT_SEPARATOR) || label.contains('"') {
                Value::from(*label).to_string()
            } else {
                (*label).to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(MULTI_SELECT_SEPARATOR)
}

/// One call an agent asks permission for.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub tool_name: String,
    pub input: Value,
    pub tool_use_id: Option<String>,
    /// The agent's own offers of permission updates for this call, as it sent them
    /// (Claude Code's hook input `permission_suggestions`); empty where it sends none.
    pub suggestions: Vec<Value>,
}

/// What the person is shown for a request, and how to read their reply.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub form: Form,
    kind: PromptKind,
}

impl Prompt {
    /// Whether the card offers "allow for this session".
    pub fn offers_session(&self) -> bool {
        matches!(&self.kind, PromptKind::Card { session } if !session.is_empty())
    }
}

#[derive(Debug, Clone)]
enum PromptKind {
    /// A permission card: Allow or Deny, with an optional note; and Allow for this session
    /// where `session` (the agent's suggestions, destination "session") is not empty.
    Card { session: Vec<Value> },
    /// `AskUserQuestion`'s questions as a form; each question's text, by field order.
    Questions(Vec<AskedQuestion>),
}

#[derive(Debug, Clone)]
struct AskedQuestion {
    text: String,
    multi: bool,
}

/// The person's decision on one call, before it is written in an agent's format.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run the call with this input (the input as asked, plus answers for AskUserQuestion),
    /// and apply these permission updates (the agent's own offer, for the session; empty
    /// unless the person chose "allow for this session").
    Allow {
        updated_input: Value,
        updated_permissions: Vec<Value>,
    },
    /// The person said no; `message` tells the agent, with the person's note if any.
    Deny { message: String },
    /// Nobody decided (no browser, no answer in time, the call was cancelled, an answer
    /// that did not fit). Never an allow.
    Undecided { why: String },
}

impl Decision {
    /// The permission-prompt tool's result text (Claude Code 2.1.197): `{"behavior":
    /// "allow","updatedInput":{…}}` (updatedInput required) or `{"behavior":"deny",
    /// "message":M}`. Undecided is a deny: the tool has no way to defer. The tool's input
    /// carries no suggestions (Claude Code 2.1.332 calls it with `{tool_name, input,
    /// tool_use_id}`), so its allow never holds permission updates.
    pub fn prompt_tool_json(&self) -> Value {
        match self {
            Decision::Allow { updated_input, .. } => {
                json!({"behavior": "allow", "updatedInput": updated_input})
            }
            Decision::Deny { message } => json!({"behavior": "deny", "message": message}),
            Decision::Undecided { why } => json!({
                "behavior": "deny",
                "message": format!(
                    "Not approved: {why} The person has not allowed this call; do not retry it \
                     on your own. Ask the person in chat, or wait and try again later."
                ),
            }),
        }
    }

    /// The name logged for the decision: the decision is all that is logged.
    pub fn name(&self) -> &'static str {
        match self {
            Decision::Allow { .. } => "allow",
            Decision::Deny { .. } => "deny",
            Decision::Undecided { .. } => "undecided",
        }
    }
}

/// The form for a request: `AskUserQuestion`'s questions as the form they are, anything
/// else a permission card. `agent` names who asks in the card's title ("Claude Code").
pub fn prompt_for(request: &Request, agent: &str) -> Prompt {
    if request.tool_name == ASK_USER_QUESTION
        && let Some(prompt) = questions_prompt(request, agent)
    {
        return prompt;
    }
    let (session, session_rules) = session_offer(&request.suggestions);
    Prompt {
        form: card_form(request, agent, session_rules),
        kind: PromptKind::Card { session },
    }
}

fn card_form(request: &Request, agent: &str, session_rules: Vec<String>) -> Form {
    let mut decision = Field::new(DECISION_FIELD, FieldType::Radio, "Decision");
    decision.required = true;
    decision.options = vec![Choice::plain(ALLOW), Choice::plain(DENY)];
    decision.options[0].label = "Allow".into();
    decision.options[1].label = "Deny".into();
    if !session_rules.is_empty() {
        let mut session = Choice::plain(ALLOW_SESSION);
        session.label = format!("Allow for this session: {}", session_rules.join(", "));
        decision.options.push(session);
    }
    Form {
        title: format!(
            "{agent} asks to use {}",
            title_tool_name(&request.tool_name)
        ),
        description: Some(fallback_description(&request.input)),
        submit_label: None,
        fields: vec![decision],
        allow_note: true,
        permission: Some(Permission {
            tool_name: request.tool_name.clone(),
            input: request.input.clone(),
            tool_use_id: request.tool_use_id.clone(),
            session_rules,
        }),
        one_question: false,
    }
}

/// Of the agent's suggestions, those "allow for this session" may apply, each as sent but
/// for its destination, which becomes `"session"`; and their rules as Claude Code writes
/// them (`Bash(npm test *)`). Only `addRules` of `behavior: "allow"` are kept: a rule is
/// what the person can read on the button. Claude Code 2.1.332 offers a command's rule with
/// destination `localSettings` (its terminal's "don't ask again" writes it to
/// `.claude/settings.local.json`); sent back with destination `session` it holds for the
/// session only and no file is written (both seen in tests/e2e/claude-code-tui.test.mjs).
/// Its other offers (`setMode` acceptEdits, `addDirectories`) are not rules and are not
/// offered. Nothing is offered when the rules would not fit the card's limits.
fn session_offer(suggestions: &[Value]) -> (Vec<Value>, Vec<String>) {
    let mut kept = Vec::new();
    let mut rules = Vec::new();
    for suggestion in suggestions {
        let Some(entry) = suggestion.as_object() else {
            continue;
        };
        if entry.get("type").and_then(Value::as_str) != Some("addRules")
            || entry.get("behavior").and_then(Value::as_str) != Some("allow")
        {
            continue;
        }
        let Some(list) = entry
            .get("rules")
            .and_then(Value::as_array)
            .filter(|list| !list.is_empty())
        else {
            continue;
        };
        let Some(shown) = list.iter().map(rule_text).collect::<Option<Vec<_>>>() else {
            continue;
        };
        // Sent back made of what the button shows and nothing else: each rule's tool and
        // content, for this session.
        let sent: Vec<Value> = list
            .iter()
            .map(|rule| {
                let mut out = Map::new();
                out.insert("toolName".into(), rule["toolName"].clone());
                if let Some(content) = rule.get("ruleContent").filter(|c| !c.is_null()) {
                    out.insert("ruleContent".into(), content.clone());
                }
                Value::Object(out)
            })
            .collect();
        kept.push(json!({
            "type": "addRules",
            "rules": sent,
            "behavior": "allow",
            "destination": "session",
        }));
        rules.extend(shown);
    }
    let fits = rules.len() <= MAX_SESSION_RULES
        && rules
            .iter()
            .all(|r| r.chars().count() <= MAX_SESSION_RULE_CHARS);
    if fits {
        (kept, rules)
    } else {
        (Vec::new(), Vec::new())
    }
}

/// One rule as Claude Code 2.1.332 writes it in settings and in its own prompt: the tool's
/// name, then the rule's content in parentheses with `\`, `(` and `)` escaped by a
/// backslash (read in its bundled source); the name alone when there is no content. `None`
/// for a rule of another shape.
fn rule_text(rule: &Value) -> Option<String> {
    let tool = rule
        .get("toolName")?
        .as_str()
        .filter(|t| !t.trim().is_empty())?;
    match rule.get("ruleContent") {
        None | Some(Value::Null) => Some(tool.to_owned()),
        Some(Value::String(content)) if content.is_empty() => Some(tool.to_owned()),
        Some(Value::String(content)) => {
            let escaped = content
                .replace('\\', "\\\\")
                .replace('(', "\\(")
                .replace(')', "\\)");
            Some(format!("{tool}({escaped})"))
        }
        Some(_) => None,
    }
}

/// The tool's name as the card's title names it: the title is what an inbox row, a notice
/// and a notification show, so it is marked as the card's body marks it (an RLO or a look-alike
/// letter in a tool name reads otherwise than it runs), and cut to [`TITLE_TOOL_CHARS`] so a
/// long name cannot make the title a text the panel refuses (§4's 16,384), which would deny
/// the request unseen.
fn title_tool_name(tool_name: &str) -> String {
    let marked = crate::form::display::marked(tool_name);
    match marked.char_indices().nth(TITLE_TOOL_CHARS) {
        Some((cut, _)) => format!("{}…", &marked[..cut]),
        None => marked,
    }
}

/// At most this many characters of a tool's name go in a card's title; the card's body
/// shows the whole name.
const TITLE_TOOL_CHARS: usize = 200;

/// How much of the input the fallback description quotes, in characters: the description
/// must stay a text the panel renders ([`MAX_MARKDOWN_CHARS`]), with room left for its
/// first line and the line that says how much was cut.
const QUOTED_INPUT_CHARS: usize = MAX_MARKDOWN_CHARS - 512;

/// For a renderer that does not draw permission cards: the input verbatim, as code, cut
/// below the Markdown limit with a line saying how much was cut. The card itself is drawn
/// from `permission.input`, whole, so a Write of a long file or an Edit of long strings
/// still gets one (issue 22.3: the whole input here made the form invalid, and the call
/// was denied unseen).
///
/// JSON holds a backtick only inside a string, after its opening quote: so a line of the
/// pretty-printed input, whole or cut short, that holds a backtick holds a quote before it,
/// and cannot close the fence early.
fn fallback_description(input: &Value) -> String {
    let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
    match pretty.char_indices().nth(QUOTED_INPUT_CHARS) {
        None => format!("Input, exactly as it will run:\n\n```\n{pretty}\n```"),
        Some((end, _)) => {
            let total = pretty.chars().count();
            format!(
                "Input as it will run, cut here after {QUOTED_INPUT_CHARS} of its {total} \
                 characters:\n\n```\n{}\n```\n\n*Cut: {} more characters of the input are not \
                 shown here.*",
                &pretty[..end],
                total - QUOTED_INPUT_CHARS
            )
        }
    }
}

/// `AskUserQuestion`'s input as a form: per question a radio (multi_select where
/// `multiSelect`) of its options, and an "Other" text field for an answer of one's own.
/// `None` when the input is not the shape Claude Code sends, or makes no valid form; the
/// request is then shown as a permission card like any other tool.
fn questions_prompt(request: &Request, agent: &str) -> Option<Prompt> {
    let questions = request.input.get("questions")?.as_array()?;
    let mut fields = Vec::new();
    let mut asked = Vec::new();
    for (i, question) in questions.iter().enumerate() {
        let text = question.get("question")?.as_str()?.to_owned();
        let header = question.get("header").and_then(Value::as_str).unwrap_or("");
        let multi = question
            .get("multiSelect")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let kind = if multi {
            FieldType::MultiSelect
        } else {
            FieldType::Radio
        };
        let mut field = Field::new(&format!("q{i}"), kind, text.clone());
        field.description = Some(header.to_owned()).filter(|h| !h.trim().is_empty());
        for option in question.get("options")?.as_array()? {
            let label = option.get("label")?.as_str()?.to_owned();
            let mut choice = Choice::plain(label);
            choice.description = option
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .filter(|d| !d.trim().is_empty());
            field.options.push(choice);
        }
        let other = Field::new(
            &format!("q{i}_other"),
            FieldType::Text,
            "Other (an answer of your own)",
        );
        fields.push(field);
        fields.push(other);
        asked.push(AskedQuestion { text, multi });
    }
    let form = Form {
        title: format!("{agent} asks you"),
        description: None,
        submit_label: Some("Answer".into()),
        fields,
        allow_note: false,
        permission: None,
        one_question: false,
    };
    form.validate().ok()?;
    Some(Prompt {
        form,
        kind: PromptKind::Questions(asked),
    })
}

/// What the person's reply (or its absence) decides for `request`.
pub fn decide(request: &Request, prompt: &Prompt, outcome: Outcome) -> Decision {
    let tool = &request.tool_name;
    let denied = |note: Option<String>, what: &str| Decision::Deny {
        message: match note {
            Some(note) => format!("The person {what} this {tool} call, saying: {note}"),
            None => format!("The person {what} this {tool} call."),
        },
    };
    match outcome {
        Outcome::Answered { values, note } => match &prompt.kind {
            PromptKind::Card { session } => {
                match values.get(DECISION_FIELD).and_then(Value::as_str) {
                    Some(ALLOW) => Decision::Allow {
                        updated_input: request.input.clone(),
                        updated_permissions: Vec::new(),
                    },
                    // The rules are the ones this process was offered, whatever the answer held.
                    Some(ALLOW_SESSION) if !session.is_empty() => Decision::Allow {
                        updated_input: request.input.clone(),
                        updated_permissions: session.clone(),
                    },
                    Some(ALLOW_SESSION) => Decision::Undecided {
                        why: "the reply chose rules for the session, and none were offered.".into(),
                    },
                    _ => denied(note, "denied"),
                }
            }
            PromptKind::Questions(asked) => Decision::Allow {
                updated_input: with_answers(&request.input, asked, &values),
                updated_permissions: Vec::new(),
            },
        },
        Outcome::Declined { note } => match prompt.kind {
            PromptKind::Card { .. } => denied(note, "denied"),
            PromptKind::Questions(_) => denied(note, "declined to answer"),
        },
        Outcome::Dismissed => Decision::Undecided {
            why: "the person closed the prompt without deciding.".into(),
        },
        Outcome::Invalid(err) => Decision::Undecided {
            why: format!("the reply did not fit the prompt ({err})."),
        },
        Outcome::Timeout => Decision::Undecided {
            why: "no answer came in time.".into(),
        },
        Outcome::Cancelled => Decision::Undecided {
            why: "the request was cancelled before the person decided.".into(),
        },
        Outcome::NoBrowser { was_connected } => Decision::Undecided {
            why: if was_connected {
                "the browser went away before the person decided."
            } else {
                "no browser with the him side panel is connected, so the person could not be asked."
            }
            .into(),
        },
        Outcome::Refused(message) => Decision::Undecided {
            why: format!("the browser could not show the prompt ({message})."),
        },
    }
}

/// The input with `answers` added: each question's text → the picked label(s) or the
/// person's own answer (which wins over a pick of a single-choice question, and joins the
/// picks of a multi-select one). A question left unanswered is left out, which Claude Code
/// reads as "the user did not answer" for it.
fn with_answers(input: &Value, asked: &[AskedQuestion], values: &Map<String, Value>) -> Value {
    let mut answers = Map::new();
    for (i, question) in asked.iter().enumerate() {
        let other = values
            .get(&format!("q{i}_other"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let picked: Vec<&str> = match values.get(&format!("q{i}")) {
            Some(Value::String(label)) => vec![label.as_str()],
            Some(Value::Array(labels)) => labels.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let answer = match (question.multi, other) {
            (false, Some(own)) => own.to_owned(),
            (true, Some(own)) => {
                let mut all = picked;
                all.push(own);
                join_labels(&all)
            }
            (false, None) => picked.first().copied().unwrap_or_default().to_owned(),
            (true, None) => join_labels(&picked),
        };
        if !answer.is_empty() {
            answers.insert(question.text.clone(), Value::String(answer));
        }
    }
    let mut updated = input.as_object().cloned().unwrap_or_default();
    updated.insert("answers".into(), Value::Object(answers));
    Value::Object(updated)
}

/// Asks the browsers, and only them, until an answer, `timeout`, `cancelled`, or no
/// browser (none connected, or all gone longer than `reconnect_grace`).
pub async fn ask(
    pool: &Pool,
    prompt: &Prompt,
    timeout: Duration,
    reconnect_grace: Duration,
    cancelled: impl Future<Output = ()>,
) -> Outcome {
    let cancelled = async {
        cancelled.await;
        WithdrawReason::Cancelled
    };
    ask_until(pool, prompt, timeout, reconnect_grace, cancelled).await
}

/// [`ask`], ended early when `overtaken` resolves (the outcome is then `Cancelled`); the
/// panel is told the reason it gives, so a card answered in the agent's own terminal says
/// it was answered elsewhere rather than cancelled.
pub async fn ask_until(
    pool: &Pool,
    prompt: &Prompt,
    timeout: Duration,
    reconnect_grace: Duration,
    overtaken: impl Future<Output = WithdrawReason>,
) -> Outcome {
    let prepared = match prepare::prepare(ToolKind::Form, prompt.form.clone(), timeout) {
        Ok(prepared) => prepared,
        // Never shown, so never allowed: the tool denies, a hook defers.
        Err(PrepareError::TooLarge { size, .. }) => {
            return Outcome::Refused(format!(
                "its input is too large to show: the prompt would be {size} bytes, and a \
                 browser takes at most {MAX_ASK_BYTES}"
            ));
        }
        Err(err) => return Outcome::Refused(err.to_string()),
    };
    let options = WaitOptions {
        deadline: Instant::now() + timeout,
        reconnect_grace,
    };
    pool.ensure_matrix().await;
    let mut question = pool.open(prepared.ask).await;
    let reason = std::sync::Mutex::new(None);
    let cancelled = async {
        let why = overtaken.await;
        if let Ok(mut reason) = reason.lock() {
            *reason = Some(why);
        }
    };
    tokio::pin!(cancelled);
    let (mut outcome, mut answered_by) = question
        .wait_alone(&prompt.form, &options, cancelled.as_mut())
        .await;
    if matches!(outcome, Outcome::NoBrowser { .. }) && pool.matrix().is_some() {
        // No browser: the phone is the one place left to answer (Allow only with its code).
        (outcome, answered_by) = question
            .wait_beside(&prompt.form, options.deadline, cancelled)
            .await;
    }
    let reason = reason.lock().ok().and_then(|reason| *reason);
    let reason = match (&outcome, reason) {
        (Outcome::Cancelled, Some(reason)) => reason,
        _ => wait::withdraw_reason(&outcome),
    };
    question.close(reason, answered_by.as_deref());
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash() -> Request {
        Request {
            tool_name: "Bash".into(),
            input: json!({"command": "rm -rf build", "description": "Clean"}),
            tool_use_id: Some("toolu_1".into()),
            suggestions: Vec::new(),
        }
    }

    fn answered(values: Value, note: Option<&str>) -> Outcome {
        Outcome::Answered {
            values: values.as_object().cloned().unwrap_or_default(),
            note: note.map(str::to_owned),
        }
    }

    #[test]
    fn a_permission_card_is_a_valid_form_that_carries_the_input_verbatim() {
        let prompt = prompt_for(&bash(), "Claude Code");
        prompt.form.validate().unwrap();
        let permission = prompt.form.permission.as_ref().unwrap();
        assert_eq!(permission.input, bash().input);
        assert_eq!(permission.tool_use_id.as_deref(), Some("toolu_1"));
        let field = &prompt.form.fields[0];
        assert!(field.required && field.default.is_none());
    }

    #[test]
    fn a_tool_name_that_reads_otherwise_or_runs_long_is_marked_and_cut_in_the_title() {
        let tricky = Request {
            tool_name: "mcp__g\u{0456}thub__merge\u{202e}".into(),
            ..bash()
        };
        let form = prompt_for(&tricky, "Claude Code").form;
        assert_eq!(
            form.title,
            "Claude Code asks to use mcp__g⟨U+0456⟩thub__merge⟨U+202E⟩"
        );
        // The body keeps the name as the agent sent it; only what is shown is marked.
        assert_eq!(form.permission.unwrap().tool_name, tricky.tool_name);

        let long = Request {
            tool_name: "x".repeat(20_000),
            ..bash()
        };
        let form = prompt_for(&long, "Claude Code").form;
        form.validate().unwrap();
        assert!(form.title.ends_with('…'));
        assert!(form.title.chars().count() < 300);
    }

    #[test]
    fn a_long_input_makes_a_card_whose_fallback_text_is_cut_and_says_by_how_much() {
        let content = "line of a long file\n".repeat(900); // 18,000 characters
        let request = Request {
            tool_name: "Write".into(),
            input: json!({"file_path": "/src/big.rs", "content": content}),
            tool_use_id: None,
            suggestions: Vec::new(),
        };
        let form = prompt_for(&request, "Claude Code").form;
        form.validate().unwrap();
        assert_eq!(form.permission.as_ref().unwrap().input, request.input);
        let description = form.description.unwrap();
        assert!(description.chars().count() <= MAX_MARKDOWN_CHARS);
        let total = serde_json::to_string_pretty(&request.input)
            .unwrap()
            .chars()
            .count();
        let cut = total - QUOTED_INPUT_CHARS;
        assert!(
            description.ends_with(&format!(
                "*Cut: {cut} more characters of the input are not shown here.*"
            )),
            "{description}"
        );
        // A short input is quoted whole, with nothing said of cutting.
        let description = prompt_for(&bash(), "Claude Code").form.description.unwrap();
        assert!(description.contains("rm -rf build") && !description.contains("Cut"));
    }

    #[test]
    fn a_permission_form_with_a_default_is_refused() {
        let mut form = prompt_for(&bash(), "Claude Code").form;
        form.fields[0].default = Some(json!("allow"));
        assert!(form.validate().is_err());
        let mut form = prompt_for(&bash(), "Claude Code").form;
        form.fields[0].required = false;
        assert!(form.validate().is_err());
    }

    #[test]
    fn only_a_submitted_allow_allows_and_it_returns_the_input_unchanged() {
        let prompt = prompt_for(&bash(), "Claude Code");
        assert_eq!(
            decide(
                &bash(),
                &prompt,
                answered(json!({"decision": "allow"}), None)
            ),
            Decision::Allow {
                updated_input: bash().input,
                updated_permissions: Vec::new(),
            }
        );
        for outcome in [
            answered(json!({"decision": "deny"}), Some("not today")),
            Outcome::Declined { note: None },
            Outcome::Dismissed,
            Outcome::Timeout,
            Outcome::Cancelled,
            Outcome::NoBrowser {
                was_connected: false,
            },
        ] {
            let decision = decide(&bash(), &prompt, outcome.clone());
            assert!(
                !matches!(decision, Decision::Allow { .. }),
                "{outcome:?} allowed"
            );
            assert_eq!(decision.prompt_tool_json()["behavior"], "deny");
        }
    }

    #[test]
    fn a_deny_carries_the_note() {
        let prompt = prompt_for(&bash(), "Claude Code");
        let decision = decide(
            &bash(),
            &prompt,
            answered(json!({"decision": "deny"}), Some("use make clean")),
        );
        let Decision::Deny { message } = decision else {
            panic!("not a deny: {decision:?}")
        };
        assert!(message.contains("use make clean"), "{message}");
    }

    fn questions() -> Request {
        Request {
            tool_name: ASK_USER_QUESTION.into(),
            input: json!({"questions": [
                {"question": "Which database?", "header": "DB", "multiSelect": false,
                 "options": [{"label": "Postgres", "description": "server"}, {"label": "SQLite", "description": "file"}]},
                {"question": "Which checks?", "header": "CI", "multiSelect": true,
                 "options": [{"label": "lint", "description": ""}, {"label": "test", "description": ""}]}
            ]}),
            tool_use_id: None,
            suggestions: Vec::new(),
        }
    }

    #[test]
    fn ask_user_question_becomes_a_form_and_its_answers_go_back_by_question_text() {
        let prompt = prompt_for(&questions(), "Claude Code");
        assert!(prompt.form.permission.is_none());
        let names: Vec<&str> = prompt.form.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["q0", "q0_other", "q1", "q1_other"]);
        assert_eq!(prompt.form.fields[2].kind, FieldType::MultiSelect);
        let values =
            json!({"q0": "SQLite", "q0_other": null, "q1": ["lint", "test"], "q1_other": null});
        let Decision::Allow { updated_input, .. } =
            decide(&questions(), &prompt, answered(values, None))
        else {
            panic!("not allowed")
        };
        assert_eq!(updated_input["questions"], questions().input["questions"]);
        assert_eq!(
            updated_input["answers"],
            json!({"Which database?": "SQLite", "Which checks?": "lint, test"})
        );
    }

    #[test]
    fn multi_select_labels_are_joined_as_claude_code_joins_them() {
        assert_eq!(join_labels(&["lint", "test"]), "lint, test");
        assert_eq!(
            join_labels(&["Lint, format", "say \"hi\"", "a,b"]),
            r#""Lint, format", "say \"hi\"", a,b"#
        );
    }

    #[test]
    fn an_answer_of_ones_own_wins_and_an_unanswered_question_is_left_out() {
        let prompt = prompt_for(&questions(), "Claude Code");
        let values = json!({"q0": "SQLite", "q0_other": "DuckDB", "q1": [], "q1_other": null});
        let Decision::Allow { updated_input, .. } =
            decide(&questions(), &prompt, answered(values, None))
        else {
            panic!("not allowed")
        };
        assert_eq!(
            updated_input["answers"],
            json!({"Which database?": "DuckDB"})
        );
    }

    #[test]
    fn an_ask_user_question_of_another_shape_is_shown_as_a_card() {
        let request = Request {
            tool_name: ASK_USER_QUESTION.into(),
            input: json!({"questions": "not a list"}),
            tool_use_id: None,
            suggestions: Vec::new(),
        };
        assert!(prompt_for(&request, "x").form.permission.is_some());
    }

    /// What Claude Code 2.1.332 sent its PermissionRequest hook for `npm test` (captured in
    /// tests/e2e/claude-code-tui.test.mjs's terminal), and for a command that writes a file.
    fn npm_test() -> Request {
        Request {
            tool_name: "Bash".into(),
            input: json!({"command": "npm test", "description": "Run tests"}),
            tool_use_id: None,
            // Keys the card does not show are not sent back (`extra`, `note`).
            suggestions: vec![json!({"type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": "npm test *", "note": "x"}],
                "behavior": "allow", "destination": "localSettings", "extra": "kept?"})],
        }
    }

    #[test]
    fn a_rule_offered_by_claude_code_is_offered_for_the_session_only() {
        let prompt = prompt_for(&npm_test(), "Claude Code");
        prompt.form.validate().unwrap();
        let permission = prompt.form.permission.as_ref().unwrap();
        assert_eq!(permission.session_rules, ["Bash(npm test *)"]);
        let values: Vec<&str> = prompt.form.fields[0]
            .options
            .iter()
            .map(|o| o.value.as_str())
            .collect();
        assert_eq!(values, [ALLOW, DENY, ALLOW_SESSION]);
        assert_eq!(
            prompt.form.fields[0].options[2].label,
            "Allow for this session: Bash(npm test *)"
        );
        let decision = decide(
            &npm_test(),
            &prompt,
            answered(json!({"decision": "allow_session"}), None),
        );
        assert_eq!(
            decision,
            Decision::Allow {
                updated_input: npm_test().input,
                // As Claude Code sent it, but for the session: no settings file is written.
                updated_permissions: vec![json!({"type": "addRules",
                    "rules": [{"toolName": "Bash", "ruleContent": "npm test *"}],
                    "behavior": "allow", "destination": "session"})],
            }
        );
        // A plain Allow adds no rule.
        let Decision::Allow {
            updated_permissions,
            ..
        } = decide(
            &npm_test(),
            &prompt,
            answered(json!({"decision": "allow"}), None),
        )
        else {
            panic!("not an allow")
        };
        assert!(updated_permissions.is_empty());
    }

    #[test]
    fn offers_that_are_not_allow_rules_give_no_third_choice() {
        let request = Request {
            suggestions: vec![
                json!({"type": "addDirectories", "directories": ["/p"], "destination": "session"}),
                json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"}),
                json!({"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "rm *"}],
                       "behavior": "deny", "destination": "session"}),
                json!({"type": "addRules", "rules": [], "behavior": "allow", "destination": "session"}),
                json!({"type": "addRules", "rules": [{"ruleContent": "x"}], "behavior": "allow"}),
                json!("addRules"),
            ],
            ..npm_test()
        };
        let prompt = prompt_for(&request, "Claude Code");
        prompt.form.validate().unwrap();
        assert!(prompt.form.permission.unwrap().session_rules.is_empty());
        assert_eq!(prompt.form.fields[0].options.len(), 2);
    }

    #[test]
    fn rules_are_written_as_claude_code_writes_them_and_too_many_are_not_offered() {
        let rule = |content: Value| json!({"toolName": "Bash", "ruleContent": content});
        assert_eq!(
            rule_text(&rule(json!("npm test *"))).unwrap(),
            "Bash(npm test *)"
        );
        assert_eq!(
            rule_text(&rule(json!(r"echo (a) \ b"))).unwrap(),
            r"Bash(echo \(a\) \\ b)"
        );
        assert_eq!(rule_text(&rule(json!(""))).unwrap(), "Bash");
        assert_eq!(
            rule_text(&json!({"toolName": "mcp__github__merge"})).unwrap(),
            "mcp__github__merge"
        );
        assert_eq!(rule_text(&rule(json!(3))), None);

        let many: Vec<Value> = (0..=MAX_SESSION_RULES)
            .map(|i| rule(json!(format!("make t{i} *"))))
            .collect();
        let offer = json!({"type": "addRules", "rules": many, "behavior": "allow", "destination": "session"});
        assert_eq!(session_offer(&[offer]), (Vec::new(), Vec::new()));
        let long = json!({"type": "addRules", "rules": [rule(json!("x".repeat(MAX_SESSION_RULE_CHARS)))],
                          "behavior": "allow", "destination": "session"});
        assert_eq!(session_offer(&[long]), (Vec::new(), Vec::new()));
    }

    #[test]
    fn the_answer_only_chooses_it_cannot_name_a_rule_or_choose_one_not_offered() {
        // A forged answer that brings its own rule: the form has no such field.
        let prompt = prompt_for(&npm_test(), "Claude Code");
        let forged = json!({"decision": "allow_session", "session_rules": ["Bash(rm *)"]});
        assert!(
            prompt
                .form
                .check_reply(forged.as_object().unwrap(), None)
                .is_err()
        );
        // Where nothing was offered, allow_session is not one of the options...
        let plain = prompt_for(&bash(), "Claude Code");
        let chosen = json!({"decision": "allow_session"});
        let err = plain
            .form
            .check_reply(chosen.as_object().unwrap(), None)
            .unwrap_err();
        assert_eq!(err.message, "\"allow_session\" is not one of the options");
        // ...and were it to get through, it would allow nothing.
        let decision = decide(&bash(), &plain, answered(chosen, None));
        assert!(
            matches!(decision, Decision::Undecided { .. }),
            "{decision:?}"
        );
        // A card the agent's form refuses: rules in the form, no option for them.
        let mut form = prompt.form.clone();
        form.fields[0].options.pop();
        assert!(form.validate().is_err());
    }
}
