//! A question as the phone shows it, and a reply from the phone as the form's values: pure,
//! so every rule is unit-tested without a homeserver.
//!
//! - One text-like field (ask_text, a number, an e-mail address, a link): a message; the
//!   answer is a reply to it.
//! - One choice (ask_choice, a select) or a yes/no (ask_confirm): a poll with one pick; a
//!   reply naming the option (its number or its label) answers too.
//! - A multi-select: a poll with as many picks as the field's `max`; a reply listing
//!   options, separated by commas.
//! - Anything else (a password field, several fields, a permission prompt): a message that
//!   says to answer at the desk, where it stays open.

use serde_json::{Map, Value, json};

use him::form::display::{terminal_line, terminal_literal, terminal_text};
use him::form::{DECISION_FIELD, FieldType, Form};
use him::wire::protocol::LabelledAsk;

/// Matrix allows at most 20 answers in a poll (MSC3381).
pub const MAX_POLL_ANSWERS: usize = 20;

/// How a question is answered on the phone.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A reply to the message holds the field's value.
    Text { field: String, kind: FieldType },
    /// A poll of `options` (value, label); from `min` to `max` of them may be picked.
    Poll {
        field: String,
        kind: FieldType,
        options: Vec<(String, String)>,
        min: usize,
        max: usize,
        /// A reply that names no option is the person's note (ask_choice's free text).
        note: bool,
    },
    /// An agent's permission prompt (`permission.rs`): denied by a vote or a reply, allowed
    /// only by a reply with `code`; `None` when it was cut and is allowed at the desk only.
    Permission { code: Option<String> },
    /// A form of several fields, asked one field at a time in a thread (`thread.rs`).
    Thread,
    /// Not over Matrix: the reason, said in the message.
    AtTheDesk(&'static str),
}

const PASSWORD: &str = "It asks for a password, which never goes over Matrix: answer it at \
                        your desk (the side panel or the terminal), where it stays open.";
const MANY_FIELDS: &str = "It is a form with a field a phone cannot answer: answer it at your \
                           desk (the side panel), where it stays open.";
const TOO_MANY_OPTIONS: &str = "It has more options than a Matrix poll can hold: answer it at \
                                your desk (the side panel), where it stays open.";

/// How `form` is answered on the phone.
pub fn shape(form: &Form) -> Shape {
    if form.permission.is_some() {
        return Shape::Permission { code: None };
    }
    if form.has_password() {
        return Shape::AtTheDesk(PASSWORD);
    }
    let [field] = form.fields.as_slice() else {
        return if super::thread::fits(form) {
            Shape::Thread
        } else {
            Shape::AtTheDesk(MANY_FIELDS)
        };
    };
    let options = |field: &him::form::Field| -> Vec<(String, String)> {
        field
            .options
            .iter()
            .map(|o| (o.value.clone(), o.label.clone()))
            .collect()
    };
    match field.kind {
        FieldType::Text
        | FieldType::Textarea
        | FieldType::Email
        | FieldType::Url
        | FieldType::Number => Shape::Text {
            field: field.name.clone(),
            kind: field.kind,
        },
        FieldType::Confirm | FieldType::Checkbox => Shape::Poll {
            field: field.name.clone(),
            kind: field.kind,
            options: vec![("yes".into(), "Yes".into()), ("no".into(), "No".into())],
            min: 1,
            max: 1,
            note: false,
        },
        FieldType::Radio | FieldType::Select if field.options.len() <= MAX_POLL_ANSWERS => {
            Shape::Poll {
                field: field.name.clone(),
                kind: field.kind,
                options: options(field),
                min: 1,
                max: 1,
                note: form.allow_note,
            }
        }
        FieldType::MultiSelect if field.options.len() <= MAX_POLL_ANSWERS => {
            let count = field.options.len();
            let bound = |b: Option<f64>, default: usize| {
                b.map_or(default, |b| (b.max(0.0) as usize).min(count))
            };
            Shape::Poll {
                field: field.name.clone(),
                kind: field.kind,
                options: options(field),
                min: bound(field.min, 1).max(1),
                max: bound(field.max, count).max(1),
                note: false,
            }
        }
        _ => Shape::AtTheDesk(TOO_MANY_OPTIONS),
    }
}

/// The first lines of every question: who asks, where, and how long it stays open.
pub fn header(ask: &LabelledAsk, now_ms: u64) -> String {
    let mut who = terminal_literal(ask.agent.title.as_deref().unwrap_or(&ask.agent.name));
    if let Some(project) = &ask.project {
        who.push_str(&format!(" ({})", terminal_literal(project)));
    }
    if let Some(machine) = &ask.machine {
        who.push_str(&format!(" on {}", terminal_literal(machine)));
    }
    let ends = ask.ask.asked_at_ms.saturating_add(ask.ask.timeout_ms);
    let left = ends.saturating_sub(now_ms) / 1000;
    let left = if left >= 120 {
        format!("{} min", left / 60)
    } else {
        format!("{left} s")
    };
    format!("{who} asks ({left} left to answer):")
}

/// Matrix caps an event at 65,536 bytes (spec, "Size limits"), and an encrypted one carries
/// its content base64'd (4/3): of a question's text (title, descriptions, options) at most
/// this much is posted, the rest said to be hidden.
pub const MAX_QUESTION: usize = 12 * 1024;
/// Of one option's label (a poll answer), at most this much.
pub const MAX_LABEL: usize = 300;
/// Of the poll's own question line, at most this much.
pub const MAX_POLL_QUESTION: usize = 2 * 1024;

/// `text`, cut to at most `max` bytes (on a character boundary) with a last line saying how
/// much is hidden, when it is longer.
pub fn fit(text: &str, max: usize) -> String {
    let (shown, hidden) = super::permission::cut(text, max);
    if hidden == 0 {
        return text.to_owned();
    }
    format!(
        "{shown}…\n\n[{hidden} more bytes are hidden: more than a Matrix message holds. The \
         side panel shows it all.]"
    )
}

/// The message's text (a poll's fallback text too): the header, the question (cut to
/// [`MAX_QUESTION`], saying how much is hidden), and how to answer it here.
pub fn body(ask: &LabelledAsk, form: &Form, shape: &Shape, now_ms: u64) -> String {
    let mut question = terminal_line(&form.title);
    if let Some(description) = &form.description {
        question.push_str("\n\n");
        question.push_str(&terminal_text(description));
    }
    if let [field] = form.fields.as_slice()
        && let Some(description) = &field.description
    {
        question.push_str("\n\n");
        question.push_str(&terminal_text(description));
    }
    let how = match shape {
        Shape::Text { kind, .. } => {
            let what = match kind {
                FieldType::Number => "a number",
                FieldType::Email => "an e-mail address",
                FieldType::Url => "a link",
                _ => "your answer",
            };
            format!("Reply to this message with {what}.")
        }
        Shape::Poll {
            options, min, max, ..
        } => {
            question.push_str("\n\n");
            for (n, (_, label)) in options.iter().enumerate() {
                question.push_str(&format!("{}. {}\n", n + 1, label_text(label)));
            }
            if *max == 1 {
                "Vote, or reply with a number or the option's text.".to_owned()
            } else {
                format!(
                    "Pick {} — vote, or reply with numbers or texts separated by commas.",
                    if min == max {
                        format!("{min}")
                    } else {
                        format!("{min} to {max}")
                    }
                )
            }
        }
        Shape::Thread => "Answer in the thread under this message, one field at a time.".to_owned(),
        Shape::AtTheDesk(why) => (*why).to_owned(),
        // Posted as `permission::message`, never as this text.
        Shape::Permission { .. } => String::new(),
    };
    format!(
        "{}\n\n{}\n\n{how}",
        header(ask, now_ms),
        fit(question.trim_end(), MAX_QUESTION)
    )
}

/// An option's label as the phone shows it: marked, on one line, cut to [`MAX_LABEL`].
fn label_text(label: &str) -> String {
    fit(&terminal_literal(label), MAX_LABEL)
}

/// The poll's own question line: the question, plainly (cut to [`MAX_POLL_QUESTION`]).
pub fn poll_question(form: &Form) -> String {
    fit(&terminal_line(&form.title), MAX_POLL_QUESTION)
}

/// The `content` of a poll start (MSC3381, the unstable names every client reads today).
pub fn poll_content(form: &Form, shape: &Shape, fallback: &str) -> Option<Value> {
    let Shape::Poll { options, max, .. } = shape else {
        return None;
    };
    let answers: Vec<Value> = options
        .iter()
        .enumerate()
        .map(|(n, (_, label))| {
            json!({"id": (n + 1).to_string(), "org.matrix.msc1767.text": label_text(label)})
        })
        .collect();
    Some(json!({
        "org.matrix.msc3381.poll.start": {
            "question": {"org.matrix.msc1767.text": poll_question(form)},
            "kind": "org.matrix.msc3381.poll.disclosed",
            "max_selections": max,
            "answers": answers,
        },
        "org.matrix.msc1767.text": fallback,
    }))
}

/// A reply's own words: the body without the quoted lines of an older client's reply
/// fallback ("> <@who> …" lines and the blank line after them).
pub fn reply_text(body: &str) -> &str {
    let mut rest = body;
    if rest.starts_with("> ") {
        match rest.find("\n\n") {
            Some(end) => rest = &rest[end + 2..],
            None => rest = "",
        }
    }
    rest.trim()
}

/// What a reply or a vote answers: the form's values, and a note.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub values: Map<String, Value>,
    pub note: Option<String>,
}

/// The values a text reply gives, or why it gives none (said back to the person). Every
/// value is still judged by the form on the agent's side.
pub fn from_text(shape: &Shape, text: &str) -> Result<Reply, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the reply is empty".into());
    }
    match shape {
        Shape::Text { field, kind } => {
            let value = if *kind == FieldType::Number {
                let number: f64 = text
                    .parse()
                    .map_err(|_| format!("“{text}” is not a number"))?;
                // As the panel sends it: a whole number as an integer, where an f64 holds it
                // exactly (up to 2^53).
                if number.fract() == 0.0 && number.abs() <= 9_007_199_254_740_992.0 {
                    json!(number as i64)
                } else {
                    json!(number)
                }
            } else {
                json!(text)
            };
            Ok(one(field, value, None))
        }
        Shape::Poll {
            field,
            kind,
            options,
            max,
            note,
            ..
        } => {
            let parts: Vec<&str> = if *max > 1 {
                text.split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .collect()
            } else {
                vec![text]
            };
            let mut picked = Vec::new();
            for part in parts {
                match pick(options, part) {
                    Some(n) => picked.push(n),
                    None if *note && *max == 1 => {
                        return Ok(one(field, Value::Null, Some(text.to_owned())));
                    }
                    None => return Err(format!("“{part}” is none of the options")),
                }
            }
            from_picks(field, *kind, options, &picked)
        }
        Shape::Permission { code } => {
            let decision = super::permission::from_text(text, code.as_deref())?;
            Ok(one(DECISION_FIELD, json!(decision), None))
        }
        Shape::Thread => Err("answer in the thread under the question".into()),
        Shape::AtTheDesk(why) => Err((*why).to_owned()),
    }
}

/// The values a poll vote gives (answer ids "1", "2", … as [`poll_content`] numbers them).
pub fn from_vote(shape: &Shape, answers: &[String]) -> Result<Reply, String> {
    if let Shape::Permission { .. } = shape {
        let decision = super::permission::from_vote(answers)?;
        return Ok(one(DECISION_FIELD, json!(decision), None));
    }
    let Shape::Poll {
        field,
        kind,
        options,
        ..
    } = shape
    else {
        return Err("this question is not a poll".into());
    };
    let mut picked = Vec::new();
    for answer in answers {
        match answer.parse::<usize>() {
            Ok(n) if (1..=options.len()).contains(&n) => picked.push(n - 1),
            _ => return Err(format!("the vote names no option of this poll ({answer})")),
        }
    }
    from_picks(field, *kind, options, &picked)
}

fn from_picks(
    field: &str,
    kind: FieldType,
    options: &[(String, String)],
    picked: &[usize],
) -> Result<Reply, String> {
    let mut picked = picked.to_vec();
    picked.dedup();
    let value = match kind {
        FieldType::Confirm | FieldType::Checkbox => match picked.as_slice() {
            [0] => json!(true),
            [1] => json!(false),
            _ => return Err("answer yes or no".into()),
        },
        FieldType::MultiSelect => {
            let mut values: Vec<&str> = Vec::new();
            for n in picked {
                let value = options[n].0.as_str();
                if !values.contains(&value) {
                    values.push(value);
                }
            }
            json!(values)
        }
        _ => match picked.as_slice() {
            [n] => json!(options[*n].0),
            _ => return Err("pick one option".into()),
        },
    };
    Ok(one(field, value, None))
}

/// The option a reply names: its number, its label or its value (case aside); for a yes/no,
/// also y/n.
fn pick(options: &[(String, String)], part: &str) -> Option<usize> {
    if let Ok(n) = part.parse::<usize>()
        && (1..=options.len()).contains(&n)
    {
        return Some(n - 1);
    }
    let lower = part.to_lowercase();
    let by_text = options
        .iter()
        .position(|(value, label)| label.to_lowercase() == lower || value.to_lowercase() == lower);
    by_text.or(match lower.as_str() {
        "y" if options.first().is_some_and(|(v, _)| v == "yes") => Some(0),
        "n" if options.get(1).is_some_and(|(v, _)| v == "no") => Some(1),
        _ => None,
    })
}

fn one(field: &str, value: Value, note: Option<String>) -> Reply {
    let mut values = Map::new();
    values.insert(field.to_owned(), value);
    Reply { values, note }
}

#[cfg(test)]
mod tests {
    use super::*;
    use him::agent::tools::{AskChoiceArgs, AskConfirmArgs, AskMultiSelectArgs, AskTool};

    fn choice(args: Value) -> Form {
        serde_json::from_value::<AskChoiceArgs>(args)
            .unwrap()
            .to_form()
            .unwrap()
    }

    #[test]
    fn a_choice_is_a_poll_answered_by_vote_number_or_label() {
        let f = choice(json!({"question": "Which?", "options": ["Postgres", "SQLite"]}));
        let shape = shape(&f);
        assert!(matches!(&shape, Shape::Poll { max: 1, .. }));
        for reply in [
            from_vote(&shape, &["2".into()]),
            from_text(&shape, "2"),
            from_text(&shape, "sqlite"),
        ] {
            assert_eq!(reply.unwrap().values["choice"], json!("SQLite"));
        }
        assert!(from_text(&shape, "MySQL").is_err());
        assert!(from_vote(&shape, &["3".into()]).is_err());
    }

    #[test]
    fn a_confirm_is_a_yes_no_poll() {
        let f = serde_json::from_value::<AskConfirmArgs>(json!({"question": "Deploy?"}))
            .unwrap()
            .to_form()
            .unwrap();
        let shape = shape(&f);
        assert_eq!(
            from_vote(&shape, &["1".into()]).unwrap().values["confirmed"],
            json!(true)
        );
        assert_eq!(
            from_text(&shape, "no").unwrap().values["confirmed"],
            json!(false)
        );
        assert_eq!(
            from_text(&shape, "Y").unwrap().values["confirmed"],
            json!(true)
        );
    }

    #[test]
    fn a_multi_select_takes_a_list_within_its_bounds_in_the_poll() {
        let f = serde_json::from_value::<AskMultiSelectArgs>(
            json!({"question": "Which?", "options": ["a", "b", "c"], "min": 1, "max": 2}),
        )
        .unwrap()
        .to_form()
        .unwrap();
        let shape = shape(&f);
        assert!(matches!(&shape, Shape::Poll { min: 1, max: 2, .. }));
        assert_eq!(
            from_text(&shape, "1, c").unwrap().values["selected"],
            json!(["a", "c"])
        );
        assert!(from_text(&shape, "1, d").is_err());
    }

    #[test]
    fn a_password_is_never_asked_over_matrix() {
        let f: Form = serde_json::from_value(
            json!({"title": "Log in", "fields": [{"name": "pw", "type": "password", "label": "Password"}]}),
        )
        .unwrap();
        assert_eq!(shape(&f), Shape::AtTheDesk(PASSWORD));
        assert!(from_text(&shape(&f), "hunter2").is_err());
    }

    #[test]
    fn a_question_too_long_for_a_matrix_event_is_cut_saying_how_much_is_hidden() {
        let long = "汉".repeat(16_000);
        let f = choice(json!({"question": long, "options": ["a", "b".repeat(2_000)]}));
        let shape = shape(&f);
        let ask: LabelledAsk = serde_json::from_value(json!({
            "id": "q", "form": {}, "timeout_ms": 60_000, "asked_at_ms": 0,
            "agent": {"name": "agent"}}))
        .unwrap();
        let body = body(&ask, &f, &shape, 0);
        assert!(
            body.contains("more bytes are hidden"),
            "{}",
            &body[body.len() - 300..]
        );
        assert!(body.ends_with("Vote, or reply with a number or the option's text."));
        let content = poll_content(&f, &shape, &body).unwrap();
        // Encrypted (4/3) with room to spare under 65,536 bytes.
        assert!(
            content.to_string().len() * 4 / 3 < 60_000,
            "{}",
            content.to_string().len()
        );
        assert_eq!(fit("short", 10), "short");
    }

    #[test]
    fn a_text_reply_loses_an_older_clients_quoted_fallback() {
        assert_eq!(reply_text("> <@bot:x> Name?\n> more\n\nAda"), "Ada");
        assert_eq!(reply_text("  Ada \n"), "Ada");
    }

    #[test]
    fn a_number_reply_must_be_a_number() {
        let shape = Shape::Text {
            field: "n".into(),
            kind: FieldType::Number,
        };
        assert_eq!(from_text(&shape, "4.5").unwrap().values["n"], json!(4.5));
        assert!(from_text(&shape, "four").is_err());
    }
}
