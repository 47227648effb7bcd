//! The last step of a form of several fields in the terminal: the answers, one line each,
//! before they are sent. Enter sends; picking a line asks that field again, with its answer
//! kept as the default — the terminal's way back to an earlier field, since a prompt cannot
//! be left for the one before it.

use std::fmt;

use inquire::{InquireError, Select};
use serde_json::{Map, Value};

use super::{Asked, armed, ended};
use crate::form::display::{terminal_line, terminal_literal};
use crate::form::{Field, FieldType, Form};

const REVIEW_HELP: &str = "Enter sends · ↑↓ then Enter changes an answer · Esc declines";

/// What the person chose on the review.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Review {
    Send,
    /// Ask this field (by its name) again.
    Change(String),
    ChangeNote,
    Decline,
    Cancel,
}

struct Line {
    shown: String,
    choice: Review,
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Whether the form gets a review before it is sent: one field is its own review.
pub(super) fn wanted(form: &Form) -> bool {
    form.fields.len() > 1
}

pub(super) fn review(
    form: &Form,
    values: &Map<String, Value>,
    note: Option<&str>,
) -> Result<Review, InquireError> {
    let mut lines = vec![Line {
        shown: "Send".into(),
        choice: Review::Send,
    }];
    for field in &form.fields {
        lines.push(Line {
            shown: format!(
                "Change {}: {}",
                terminal_line(&field.label),
                shown_value(field, values.get(&field.name))
            ),
            choice: Review::Change(field.name.clone()),
        });
    }
    if form.allow_note {
        let note = note.map_or_else(|| "—".to_owned(), terminal_literal);
        lines.push(Line {
            shown: format!("Change the note: {note}"),
            choice: Review::ChangeNote,
        });
    }
    let prompt = Select::new("Send these answers?", lines)
        .with_formatter(&|line| match line.value.choice {
            Review::Send => "sent".into(),
            _ => "changing".into(),
        })
        .with_help_message(REVIEW_HELP)
        .with_page_size(12);
    match armed(|| prompt.prompt()) {
        Ok(line) => Ok(line.choice),
        Err(err) => Ok(match ended(err)? {
            Asked::Cancel => Review::Cancel,
            _ => Review::Decline,
        }),
    }
}

/// `field` to ask again, its kept answer as the default (a password is typed again: it has
/// no default, and is never drawn).
pub(super) fn again(field: &Field, kept: Option<&Value>) -> Field {
    let mut field = field.clone();
    if field.kind != FieldType::Password
        && let Some(kept) = kept
    {
        field.default = Some(kept.clone());
    }
    field
}

/// An answer as the review line shows it: options by their labels, a password hidden.
fn shown_value(field: &Field, value: Option<&Value>) -> String {
    let label_of = |v: &Value| {
        let value = v.as_str().unwrap_or_default();
        field
            .options
            .iter()
            .find(|o| o.value == value)
            .map_or_else(|| terminal_literal(value), |o| terminal_literal(&o.label))
    };
    match (field.kind, value) {
        (_, None) | (_, Some(Value::Null)) => "—".into(),
        (FieldType::Password, Some(_)) => "(hidden)".into(),
        (_, Some(Value::Bool(yes))) => if *yes { "yes" } else { "no" }.into(),
        (FieldType::Select | FieldType::Radio, Some(v)) => label_of(v),
        (_, Some(Value::Array(chosen))) if chosen.is_empty() => "none".into(),
        (_, Some(Value::Array(chosen))) => {
            chosen.iter().map(label_of).collect::<Vec<_>>().join(", ")
        }
        (_, Some(Value::String(text))) => terminal_line(text),
        (_, Some(other)) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(value: Value) -> Field {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn answers_are_shown_as_the_person_chose_them_and_a_password_never() {
        let tier = field(json!({"name": "tier", "type": "radio", "label": "Tier",
            "options": [{"value": "p", "label": "Production"}, {"value": "s", "label": "Staging"}]}));
        assert_eq!(shown_value(&tier, Some(&json!("s"))), "Staging");
        let pw = field(json!({"name": "pw", "type": "password", "label": "Password"}));
        assert_eq!(shown_value(&pw, Some(&json!("hunter2"))), "(hidden)");
        let many = field(json!({"name": "m", "type": "multi_select", "label": "M",
            "options": [{"value": "a", "label": "Alpha"}, {"value": "b", "label": "Beta"}]}));
        assert_eq!(shown_value(&many, Some(&json!(["a", "b"]))), "Alpha, Beta");
        assert_eq!(shown_value(&many, Some(&json!([]))), "none");
        let yes = field(json!({"name": "y", "type": "checkbox", "label": "Y"}));
        assert_eq!(shown_value(&yes, Some(&json!(false))), "no");
        let text = field(json!({"name": "t", "type": "text", "label": "T"}));
        assert_eq!(shown_value(&text, None), "—");
        assert_eq!(
            shown_value(&text, Some(&json!("a\u{1b}]0;x"))),
            "a⟨U+001B⟩]0;x"
        );
    }

    #[test]
    fn a_field_asked_again_keeps_its_answer_but_a_password_does_not() {
        let text = field(json!({"name": "t", "type": "text", "label": "T", "default": "x"}));
        assert_eq!(
            again(&text, Some(&json!("kept"))).default,
            Some(json!("kept"))
        );
        assert_eq!(again(&text, None).default, Some(json!("x")));
        let pw = field(json!({"name": "pw", "type": "password", "label": "P"}));
        assert_eq!(again(&pw, Some(&json!("secret"))).default, None);
    }
}
