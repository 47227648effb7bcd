//! A form of several fields on the phone (issue 25 item 3): asked one field at a time in a
//! thread under the question, each value checked by the form's own rule for that field
//! (`Form::check_field`), a wrong one answered with the reason and asked again; at the end
//! a summary to confirm, and the whole reply checked as the panel's is (`Form::check_reply`)
//! before it goes to the agent. Pure: the bridge posts what [`Step`] says.
//!
//! A form with a password field never comes here (`render::shape`: at the desk only).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use him::form::display::{terminal_line, terminal_literal, terminal_text};
use him::form::{Field, FieldType, Form};

use super::render::{self, Shape};

/// What a reply of `skip` (or `-`) leaves an optional field: empty.
const SKIP: [&str; 2] = ["skip", "-"];

/// How far the person is through the form (kept with the posted question, `bridge.rs`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// The field asked now (`fields.len()`: the summary is waiting for yes or no).
    pub next: usize,
    pub values: Map<String, Value>,
}

/// What the bridge says next in the thread.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Ask this (the next field, or the summary).
    Say(String),
    /// The whole reply, checked: send it to the agent.
    Send(Map<String, Value>),
}

/// A form of several fields that the thread can ask.
pub fn fits(form: &Form) -> bool {
    form.fields.len() > 1
        && !form.has_password()
        && form.permission.is_none()
        && form
            .fields
            .iter()
            .all(|f| !matches!(alone(f), Shape::AtTheDesk(_)))
}

/// The first message in the thread: the first field.
pub fn start(form: &Form) -> String {
    format!(
        "Answer here, one field at a time (reply in this thread; “skip” leaves an optional \
         field empty, “restart” starts over).\n\n{}",
        prompt(form, 0)
    )
}

/// What a bridge started again says in the thread when nothing was said meanwhile: where
/// the person is, and the field (or the summary) asked again.
pub fn resume(form: &Form, progress: &Progress) -> String {
    let next = if progress.next < form.fields.len() {
        prompt(form, progress.next)
    } else {
        summary(form, &progress.values)
    };
    format!("Going on where you were (him's bridge restarted).\n\n{next}")
}

/// How field `index` is asked.
fn prompt(form: &Form, index: usize) -> String {
    let Some(field) = form.fields.get(index) else {
        return String::new();
    };
    let mut text = format!(
        "{}/{}: {}{}",
        index + 1,
        form.fields.len(),
        terminal_line(&field.label),
        if field.required { "" } else { " (optional)" }
    );
    if let Some(description) = &field.description {
        text.push_str(&format!("\n{}", terminal_text(description)));
    }
    match field.kind {
        FieldType::Select | FieldType::Radio | FieldType::MultiSelect => {
            for (n, option) in field.options.iter().enumerate() {
                text.push_str(&format!("\n{}. {}", n + 1, terminal_literal(&option.label)));
            }
            text.push_str(if field.kind == FieldType::MultiSelect {
                "\nReply with numbers or texts separated by commas."
            } else {
                "\nReply with a number or the option's text."
            });
        }
        FieldType::Confirm | FieldType::Checkbox => text.push_str("\nReply yes or no."),
        FieldType::Number => text.push_str("\nReply with a number."),
        _ => {}
    }
    text
}

/// One field as a form of its own, so a reply to it reads as a reply to a one-field question
/// (`render::from_text`), bounds and options and all.
fn alone(field: &Field) -> Shape {
    render::shape(&Form {
        title: String::new(),
        description: None,
        submit_label: None,
        fields: vec![field.clone()],
        allow_note: false,
        permission: None,
        one_question: true,
    })
}

/// Takes the person's reply `text` to where `progress` is; says what comes next.
pub fn take(form: &Form, progress: &mut Progress, text: &str) -> Step {
    let text = text.trim();
    if text.eq_ignore_ascii_case("restart") {
        *progress = Progress::default();
        return Step::Say(format!("From the start.\n\n{}", prompt(form, 0)));
    }
    let Some(field) = form.fields.get(progress.next) else {
        return confirm(form, progress, text);
    };
    let value = if SKIP.iter().any(|s| text.eq_ignore_ascii_case(s)) {
        None
    } else {
        match render::from_text(&alone(field), text) {
            Ok(reply) => reply.values.get(&field.name).cloned(),
            Err(why) => return again(form, progress.next, &why),
        }
    };
    match form.check_field(&field.name, value.as_ref()) {
        Ok(value) => {
            progress.values.insert(field.name.clone(), value);
            progress.next += 1;
        }
        Err(err) => return again(form, progress.next, &err.message),
    }
    if progress.next < form.fields.len() {
        return Step::Say(prompt(form, progress.next));
    }
    Step::Say(summary(form, &progress.values))
}

fn again(form: &Form, index: usize, why: &str) -> Step {
    Step::Say(format!("{why}. Again:\n\n{}", prompt(form, index)))
}

/// The answers so far, to confirm before they are sent.
fn summary(form: &Form, values: &Map<String, Value>) -> String {
    let mut text = String::from("Send this?\n");
    for field in &form.fields {
        let shown = match values.get(&field.name) {
            None | Some(Value::Null) => "(empty)".to_owned(),
            Some(Value::String(s)) => terminal_literal(s),
            Some(Value::Bool(b)) => if *b { "yes" } else { "no" }.to_owned(),
            Some(other) => terminal_literal(&other.to_string()),
        };
        text.push_str(&format!("\n{}: {shown}", terminal_line(&field.label)));
    }
    text.push_str("\n\nReply yes to send it, or restart.");
    text
}

fn confirm(form: &Form, progress: &mut Progress, text: &str) -> Step {
    if !matches!(text.to_lowercase().as_str(), "yes" | "y") {
        return Step::Say("Reply yes to send it, or restart to start over.".into());
    }
    match form.check_reply(&progress.values, None) {
        Ok(values) => Step::Send(values),
        Err(err) => {
            // A rule across fields (none yet) or a field the form no longer takes.
            *progress = Progress::default();
            Step::Say(format!(
                "{}. From the start:\n\n{}",
                err.message,
                prompt(form, 0)
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deploy() -> Form {
        let form: Form = serde_json::from_value(json!({
            "title": "Deploy",
            "fields": [
                {"name": "env", "type": "radio", "label": "Environment", "required": true,
                 "options": [{"value": "staging", "label": "staging"},
                             {"value": "prod", "label": "production"}]},
                {"name": "replicas", "type": "number", "label": "Replicas", "min": 1, "max": 9},
                {"name": "notify", "type": "checkbox", "label": "Notify"}
            ]
        }))
        .unwrap();
        form.validate().unwrap();
        form
    }

    #[test]
    fn a_form_is_asked_field_by_field_a_wrong_value_again_then_confirmed_and_sent() {
        let form = deploy();
        assert!(fits(&form));
        assert!(start(&form).contains("1/3: Environment"));
        let mut p = Progress::default();
        let Step::Say(next) = take(&form, &mut p, "production") else {
            panic!()
        };
        assert!(next.starts_with("2/3: Replicas (optional)"), "{next}");
        let Step::Say(again) = take(&form, &mut p, "12") else {
            panic!()
        };
        assert!(again.contains("2/3: Replicas"), "asked again: {again}");
        assert_eq!(p.next, 1, "the wrong value is not kept");
        let Step::Say(again) = take(&form, &mut p, "twelve") else {
            panic!()
        };
        assert!(again.contains("is not a number"), "{again}");
        take(&form, &mut p, "3");
        let Step::Say(summary) = take(&form, &mut p, "yes") else {
            panic!()
        };
        assert!(summary.contains("Environment: prod"), "{summary}");
        assert!(summary.contains("Notify: yes"), "{summary}");
        let Step::Send(values) = take(&form, &mut p, "yes") else {
            panic!("not sent")
        };
        assert_eq!(values["env"], json!("prod"));
        assert_eq!(values["replicas"], json!(3));
        assert_eq!(values["notify"], json!(true));
    }

    #[test]
    fn a_required_field_cannot_be_skipped_an_optional_one_can() {
        let form = deploy();
        let mut p = Progress::default();
        let Step::Say(again) = take(&form, &mut p, "skip") else {
            panic!()
        };
        assert!(again.contains("Again"), "{again}");
        take(&form, &mut p, "1");
        take(&form, &mut p, "-");
        assert_eq!(p.values.get("replicas"), Some(&Value::Null));
        let Step::Say(restart) = take(&form, &mut p, "restart") else {
            panic!()
        };
        assert!(restart.contains("1/3"), "{restart}");
        assert_eq!(p, Progress::default());
    }

    #[test]
    fn progress_kept_and_read_back_goes_on_where_it_was() {
        let form = deploy();
        let mut p = Progress::default();
        take(&form, &mut p, "production");
        let kept: Progress = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(kept, p);
        assert!(resume(&form, &kept).contains("2/3: Replicas"));
        let mut kept = kept;
        take(&form, &mut kept, "3");
        take(&form, &mut kept, "no");
        assert!(resume(&form, &kept).contains("Environment: prod"));
    }

    #[test]
    fn a_form_with_a_password_is_never_asked_in_a_thread() {
        let form: Form = serde_json::from_value(json!({"title": "Log in", "fields": [
            {"name": "user", "type": "text", "label": "User"},
            {"name": "pw", "type": "password", "label": "Password"}]}))
        .unwrap();
        assert!(!fits(&form));
    }
}
