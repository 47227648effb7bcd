//! The form model of DESIGN.md §4: every question is a form. Pure: no I/O, no clock.
//!
//! Two checks live here, both total functions that name what was wrong:
//! [`Form::validate`] (is this a form we can show?) and [`Form::check_reply`] (do this
//! answer and its note fit the form that was shown?). The agent side runs the second on every
//! answer before its agent sees it, whatever channel the answer came from.
//!
//! `extension/lib/formmodel.js` is this module's twin: the panel and the loopback page check
//! an answer with the same rules and messages before they send it. Both are tested against
//! one fixture, `tests/fixtures/forms.json`; a rule changed here changes there too. The
//! fixture's `forms` are judged by [`Form::validate`] alone: the panel does not refuse forms.

pub mod display;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// More fields or options than a person can take in at once is a mistake on the agent's
/// side, and the caps keep a question well under the 1 MiB frame.
pub const MAX_FIELDS: usize = 64;
pub const MAX_OPTIONS: usize = 200;
/// The longest text the panel renders as Markdown (a title, a description, a field's label,
/// an option's description), in characters: pages of reading in a side panel, more than any
/// question needs, and a bound on what one text makes the panel parse (issue 14.3).
pub const MAX_MARKDOWN_CHARS: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Form {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_label: Option<String>,
    pub fields: Vec<Field>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_note: bool,
    /// Set when the form is an agent's permission prompt (DESIGN.md §9): the panel draws it
    /// as a permission card, where only a deliberate click on Allow allows
    /// (`crate::permission` makes such forms; [`Form::validate`] holds them to its shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<Permission>,
    /// Set by the one-question tools (ask_text, ask_choice, ask_multi_select, ask_confirm):
    /// a reply must hold a value for the one field, or a note where the note can stand in
    /// for it ([`NOT_ANSWERED`]). An MCP client that accepts without content (Codex 0.171's
    /// terminal cannot draw an array field and shows a bare "Yes") has not answered, while
    /// an explicit `[]` is a real empty selection. ask_form's optional fields may stay
    /// absent. Not on the wire: the panel, the loopback page and the terminal always send
    /// the field's value, so only the agent side, which judges every reply, needs it.
    #[serde(skip)]
    pub one_question: bool,
}

/// What an agent asks permission for, shown to the person verbatim: the tool's name and its
/// input exactly as the agent will run it, never a summary the agent wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Permission {
    pub tool_name: String,
    pub input: Value,
    /// The one call this decision is for, when the agent names it (Claude Code's
    /// permission-prompt tool does; its hooks run one process per call instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The rules that "allow for this session" adds, as the agent writes them
    /// (`Bash(npm test *)`): only where the agent offered them (Claude Code's
    /// `PermissionRequest` hook, `permission/hook.rs`). Shown to the person; never read back from
    /// an answer: the hook keeps what it was offered and sends that.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_rules: Vec<String>,
}

/// The one field of a permission form: a required radio of `allow` and `deny`, and a third
/// value `allow_session` exactly when `permission.session_rules` offers rules; no default.
pub const DECISION_FIELD: &str = "decision";
pub const ALLOW: &str = "allow";
pub const DENY: &str = "deny";
pub const ALLOW_SESSION: &str = "allow_session";
/// At most this many session rules, each at most [`MAX_SESSION_RULE_CHARS`] characters: a
/// person reads every one before a click adds them.
pub const MAX_SESSION_RULES: usize = 8;
pub const MAX_SESSION_RULE_CHARS: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    Text,
    Email,
    Url,
    Password,
    Number,
    Textarea,
    Select,
    Radio,
    Checkbox,
    Confirm,
    MultiSelect,
}

impl FieldType {
    pub const ALL: [FieldType; 11] = [
        FieldType::Text,
        FieldType::Email,
        FieldType::Url,
        FieldType::Password,
        FieldType::Number,
        FieldType::Textarea,
        FieldType::Select,
        FieldType::Radio,
        FieldType::Checkbox,
        FieldType::Confirm,
        FieldType::MultiSelect,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FieldType::Text => "text",
            FieldType::Email => "email",
            FieldType::Url => "url",
            FieldType::Password => "password",
            FieldType::Number => "number",
            FieldType::Textarea => "textarea",
            FieldType::Select => "select",
            FieldType::Radio => "radio",
            FieldType::Checkbox => "checkbox",
            FieldType::Confirm => "confirm",
            FieldType::MultiSelect => "multi_select",
        }
    }

    pub fn from_name(name: &str) -> Option<FieldType> {
        FieldType::ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn has_options(self) -> bool {
        matches!(
            self,
            FieldType::Select | FieldType::Radio | FieldType::MultiSelect
        )
    }

    fn takes_string(self) -> bool {
        matches!(
            self,
            FieldType::Text
                | FieldType::Email
                | FieldType::Url
                | FieldType::Password
                | FieldType::Textarea
                | FieldType::Select
                | FieldType::Radio
        )
    }

    fn takes_bounds(self) -> bool {
        matches!(self, FieldType::Number | FieldType::MultiSelect)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: FieldType,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<Choice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    pub value: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recommended: bool,
}

impl Choice {
    /// An option whose value is its label, as the simple tools make them.
    pub fn plain(label: impl Into<String>) -> Choice {
        let label = label.into();
        Choice {
            value: label.clone(),
            label,
            description: None,
            recommended: false,
        }
    }
}

impl Field {
    pub fn new(name: &str, kind: FieldType, label: impl Into<String>) -> Field {
        Field {
            name: name.to_owned(),
            kind,
            label: label.into(),
            description: None,
            required: false,
            placeholder: None,
            default: None,
            options: Vec::new(),
            min: None,
            max: None,
        }
    }
}

/// A form that breaks a rule of §4; always names the field at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormError {
    /// `None` for rules about the whole form.
    pub field: Option<String>,
    pub message: String,
}

impl std::fmt::Display for FormError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "field `{field}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for FormError {}

/// An answer that does not fit its form: the agent gets `invalid_response`, not the values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerError {
    pub field: Option<String>,
    pub message: String,
}

impl std::fmt::Display for AnswerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "answer for `{field}`: {}", self.message),
            None => write!(f, "answer: {}", self.message),
        }
    }
}

impl std::error::Error for AnswerError {}

fn form_error(field: &Field, message: impl Into<String>) -> FormError {
    FormError {
        field: Some(field.name.clone()),
        message: message.into(),
    }
}

/// `None` when `text` is short enough to render as Markdown ([`MAX_MARKDOWN_CHARS`]), else
/// what to say of it: "has N characters; at most … are allowed".
pub fn markdown_too_long(text: &str) -> Option<String> {
    // Counting characters reads the text; its length in bytes is an upper bound found for free.
    if text.len() <= MAX_MARKDOWN_CHARS {
        return None;
    }
    let chars = text.chars().count();
    (chars > MAX_MARKDOWN_CHARS)
        .then(|| format!("has {chars} characters; at most {MAX_MARKDOWN_CHARS} are allowed"))
}

fn answer_error(field: &Field, message: impl Into<String>) -> AnswerError {
    AnswerError {
        field: Some(field.name.clone()),
        message: message.into(),
    }
}

impl Form {
    pub fn has_password(&self) -> bool {
        self.fields.iter().any(|f| f.kind == FieldType::Password)
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Checks every rule of §4. The first broken rule is reported, naming its field.
    pub fn validate(&self) -> Result<(), FormError> {
        let whole = |message: String| FormError {
            field: None,
            message,
        };
        if self.title.trim().is_empty() {
            return Err(whole(
                "the form needs a non-empty title (the question)".into(),
            ));
        }
        if let Some(why) = markdown_too_long(&self.title) {
            return Err(whole(format!("the title {why}")));
        }
        if let Some(why) = self.description.as_deref().and_then(markdown_too_long) {
            return Err(whole(format!("the description {why}")));
        }
        if self.fields.is_empty() {
            return Err(whole("the form needs at least one field".into()));
        }
        if self.fields.len() > MAX_FIELDS {
            return Err(whole(format!(
                "the form has {} fields; at most {MAX_FIELDS} are allowed",
                self.fields.len()
            )));
        }
        let mut names = HashSet::new();
        for field in &self.fields {
            if field.name.trim().is_empty() {
                return Err(whole("every field needs a non-empty name".into()));
            }
            if !names.insert(field.name.as_str()) {
                return Err(form_error(field, "another field has the same name"));
            }
            field.validate()?;
        }
        if self.permission.is_some() {
            self.validate_permission()?;
        }
        Ok(())
    }

    /// A permission form carries exactly one decision, Allow or Deny (or, where the agent
    /// offered rules for the session, Allow for this session), that the person must pick: no
    /// default, so nothing but a deliberate choice can allow — even where a renderer that does
    /// not know permission cards shows it as an ordinary form.
    fn validate_permission(&self) -> Result<(), FormError> {
        let [field] = self.fields.as_slice() else {
            return Err(FormError {
                field: None,
                message: format!("a permission form has exactly one field, `{DECISION_FIELD}`"),
            });
        };
        let rules = self
            .permission
            .as_ref()
            .map_or(&[][..], |p| p.session_rules.as_slice());
        if rules.len() > MAX_SESSION_RULES
            || rules
                .iter()
                .any(|r| r.trim().is_empty() || r.chars().count() > MAX_SESSION_RULE_CHARS)
        {
            return Err(FormError {
                field: None,
                message: format!(
                    "a permission form's `session_rules` are at most {MAX_SESSION_RULES} rules, \
                     each a non-empty text of at most {MAX_SESSION_RULE_CHARS} characters"
                ),
            });
        }
        let values: Vec<&str> = field.option_values().collect();
        let offered: &[&str] = if rules.is_empty() {
            &[ALLOW, DENY]
        } else {
            &[ALLOW, DENY, ALLOW_SESSION]
        };
        if field.name != DECISION_FIELD
            || field.kind != FieldType::Radio
            || !field.required
            || field.default.is_some()
            || values != offered
        {
            return Err(form_error(
                field,
                format!(
                    "a permission form's field is `{DECISION_FIELD}`: a required radio of \
                     `{ALLOW}` and `{DENY}`, and `{ALLOW_SESSION}` exactly when \
                     `session_rules` offers rules, with no default"
                ),
            ));
        }
        Ok(())
    }

    /// Checks submitted values against the form and returns them normalised: every field
    /// present, `null` where the person left an optional field empty.
    pub fn check_answer(
        &self,
        values: &Map<String, Value>,
    ) -> Result<Map<String, Value>, AnswerError> {
        if let Some(unknown) = values.keys().find(|k| self.field(k).is_none()) {
            return Err(AnswerError {
                field: Some(unknown.clone()),
                message: "the form has no field of this name".into(),
            });
        }
        let mut checked = Map::new();
        for field in &self.fields {
            let value = field.check_value(values.get(&field.name))?;
            checked.insert(field.name.clone(), value);
        }
        Ok(checked)
    }

    /// Checks one field's value by the rule [`Form::check_answer`] applies to it, for a channel
    /// that asks field by field and can ask again at once (the terminal). The whole reply
    /// still goes through [`Form::check_reply`] afterwards, as from every channel.
    pub fn check_field(&self, name: &str, value: Option<&Value>) -> Result<Value, AnswerError> {
        let field = self.field(name).ok_or_else(|| AnswerError {
            field: Some(name.to_owned()),
            message: "the form has no field of this name".into(),
        })?;
        field.check_value(value)
    }

    /// Checks a whole reply: its values as [`Form::check_answer`] does, and its note. A note is
    /// taken only where the form allows one, and a blank note is no note. Where it is allowed,
    /// the note can stand in for the answer (ask_choice's free text), so a reply that leaves
    /// every field empty needs one: otherwise it says nothing.
    pub fn check_reply(
        &self,
        values: &Map<String, Value>,
        note: Option<&str>,
    ) -> Result<Map<String, Value>, AnswerError> {
        let note = note.filter(|n| !n.trim().is_empty());
        if note.is_some() && !self.allow_note {
            return Err(AnswerError {
                field: None,
                message: "a note was sent but this question does not take one".into(),
            });
        }
        let checked = self.check_answer(values)?;
        if self.allow_note
            && note.is_none()
            && let Some(first) = self.fields.first()
            && self.fields.iter().all(|f| f.is_empty(values.get(&f.name)))
        {
            return Err(answer_error(first, NOTHING_GIVEN));
        }
        // A required field left out is refused above already, and a note may stand in for a
        // choice: what is left is ask_multi_select's field, which may be empty but not absent.
        if self.one_question
            && note.is_none()
            && let [field] = self.fields.as_slice()
            && values.get(&field.name).is_none_or(Value::is_null)
        {
            let message = match field.kind {
                FieldType::MultiSelect => format!("{NOT_ANSWERED} (choosing none is [])"),
                _ => NOT_ANSWERED.to_owned(),
            };
            return Err(answer_error(field, message));
        }
        Ok(checked)
    }
}

/// What [`Form::check_reply`] says when a form that takes a note gets neither it nor an answer.
pub const NOTHING_GIVEN: &str = "neither an answer nor a note was given";

/// What [`Form::check_reply`] says when the reply to a one-question form
/// ([`Form::one_question`]) holds no value for its field: accepted, but nothing answered.
pub const NOT_ANSWERED: &str = "the reply holds no value for it, so nothing was answered";

impl Field {
    fn validate(&self) -> Result<(), FormError> {
        if self.label.trim().is_empty() {
            return Err(form_error(self, "needs a non-empty label"));
        }
        if let Some(why) = markdown_too_long(&self.label) {
            return Err(form_error(self, format!("the label {why}")));
        }
        if let Some(why) = self.description.as_deref().and_then(markdown_too_long) {
            return Err(form_error(self, format!("the description {why}")));
        }
        if self.kind.has_options() {
            if self.options.is_empty() {
                return Err(form_error(
                    self,
                    format!("a {} field needs at least one option", self.kind.name()),
                ));
            }
            if self.options.len() > MAX_OPTIONS {
                return Err(form_error(
                    self,
                    format!("at most {MAX_OPTIONS} options are allowed"),
                ));
            }
            let mut seen = HashSet::new();
            for option in &self.options {
                if option.value.is_empty() || option.label.trim().is_empty() {
                    return Err(form_error(self, "every option needs a value and a label"));
                }
                if !seen.insert(option.value.as_str()) {
                    return Err(form_error(
                        self,
                        format!("option value {:?} appears twice", option.value),
                    ));
                }
                if let Some(why) = option.description.as_deref().and_then(markdown_too_long) {
                    return Err(form_error(
                        self,
                        format!("the description of option {:?} {why}", option.value),
                    ));
                }
            }
        } else if !self.options.is_empty() {
            return Err(form_error(
                self,
                format!("a {} field takes no options", self.kind.name()),
            ));
        }
        if !self.kind.takes_bounds() && (self.min.is_some() || self.max.is_some()) {
            return Err(form_error(
                self,
                "min and max apply to number and multi_select fields only",
            ));
        }
        for bound in [self.min, self.max].into_iter().flatten() {
            if !bound.is_finite() {
                return Err(form_error(self, "min and max must be finite numbers"));
            }
        }
        if let (Some(min), Some(max)) = (self.min, self.max)
            && min > max
        {
            return Err(form_error(
                self,
                format!("min ({min}) is greater than max ({max})"),
            ));
        }
        if self.kind == FieldType::MultiSelect {
            for bound in [self.min, self.max].into_iter().flatten() {
                if bound < 0.0 || bound.fract() != 0.0 {
                    return Err(form_error(
                        self,
                        "min and max of a multi_select count options: whole numbers ≥ 0",
                    ));
                }
            }
            if self.min.is_some_and(|min| min > self.options.len() as f64) {
                return Err(form_error(self, "min is more than the number of options"));
            }
        }
        if let Some(default) = &self.default {
            if self.kind == FieldType::Password {
                return Err(form_error(self, "a password field cannot have a default"));
            }
            if !default.is_null() {
                self.check_value(Some(default)).map_err(|e| {
                    form_error(self, format!("the default does not fit: {}", e.message))
                })?;
            }
        }
        Ok(())
    }

    fn option_values(&self) -> impl Iterator<Item = &str> {
        self.options.iter().map(|o| o.value.as_str())
    }

    /// Whether an answer left this field empty: no value, null, `""` for a field that takes a
    /// string, `[]` for a multi_select.
    fn is_empty(&self, value: Option<&Value>) -> bool {
        match value {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.is_empty() && self.kind.takes_string(),
            Some(Value::Array(a)) => a.is_empty() && self.kind == FieldType::MultiSelect,
            _ => false,
        }
    }

    fn check_value(&self, value: Option<&Value>) -> Result<Value, AnswerError> {
        if self.is_empty(value) {
            if self.required {
                return Err(answer_error(self, "is required but was left empty"));
            }
            if self.kind == FieldType::MultiSelect {
                // An empty selection is still a selection; its count must meet `min`.
                if self.min.is_some_and(|min| min > 0.0) {
                    return Err(answer_error(self, self.count_rule()));
                }
                return Ok(Value::Array(Vec::new()));
            }
            return Ok(Value::Null);
        }
        let Some(value) = value else {
            return Ok(Value::Null);
        };
        let want =
            |what: &str| answer_error(self, format!("expected {what}, got {}", json_kind(value)));
        match self.kind {
            FieldType::Text | FieldType::Password | FieldType::Textarea => {
                value.as_str().ok_or_else(|| want("a string"))?;
            }
            FieldType::Email => {
                let s = value.as_str().ok_or_else(|| want("a string"))?;
                if !looks_like_email(s) {
                    return Err(answer_error(self, "is not an email address"));
                }
            }
            FieldType::Url => {
                let s = value.as_str().ok_or_else(|| want("a string"))?;
                if !looks_like_url(s) {
                    return Err(answer_error(
                        self,
                        "is not an absolute URL (e.g. https://…)",
                    ));
                }
            }
            FieldType::Number => {
                let n = value.as_f64().ok_or_else(|| want("a number"))?;
                if let Some(min) = self.min.filter(|&min| n < min) {
                    return Err(answer_error(
                        self,
                        format!("{n} is below the minimum {min}"),
                    ));
                }
                if let Some(max) = self.max.filter(|&max| n > max) {
                    return Err(answer_error(
                        self,
                        format!("{n} is above the maximum {max}"),
                    ));
                }
            }
            FieldType::Checkbox | FieldType::Confirm => {
                value.as_bool().ok_or_else(|| want("true or false"))?;
            }
            FieldType::Select | FieldType::Radio => {
                let s = value.as_str().ok_or_else(|| want("a string"))?;
                if !self.option_values().any(|v| v == s) {
                    return Err(answer_error(
                        self,
                        format!("{s:?} is not one of the options"),
                    ));
                }
            }
            FieldType::MultiSelect => {
                let items = value
                    .as_array()
                    .ok_or_else(|| want("an array of option values"))?;
                let mut seen = HashSet::new();
                for item in items {
                    let s = item.as_str().ok_or_else(|| {
                        answer_error(
                            self,
                            format!("expected option values, got {}", json_kind(item)),
                        )
                    })?;
                    if !self.option_values().any(|v| v == s) {
                        return Err(answer_error(
                            self,
                            format!("{s:?} is not one of the options"),
                        ));
                    }
                    if !seen.insert(s) {
                        return Err(answer_error(self, format!("{s:?} is chosen twice")));
                    }
                }
                let n = items.len() as f64;
                if self.min.is_some_and(|min| n < min) || self.max.is_some_and(|max| n > max) {
                    return Err(answer_error(self, self.count_rule()));
                }
            }
        }
        Ok(value.clone())
    }

    fn count_rule(&self) -> String {
        match (self.min, self.max) {
            (Some(min), Some(max)) => format!("choose between {min} and {max} options"),
            (Some(min), None) => format!("choose at least {min} options"),
            (None, Some(max)) => format!("choose at most {max} options"),
            (None, None) => "choose some options".into(),
        }
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Deliberately loose (one `@`, something either side, a dot in the domain, no spaces):
/// the person typed it, and stricter checks reject real addresses.
pub fn looks_like_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.chars().any(char::is_whitespace)
}

/// An absolute URL: a scheme of letters, digits, `+-.` then `:` and something after it.
pub fn looks_like_url(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && rest.len() > 2
        && rest.starts_with("//")
        && !s.chars().any(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(fields: Value) -> Form {
        serde_json::from_value(json!({"title": "Q", "fields": fields})).unwrap()
    }

    fn values(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_well_made_form_validates() {
        let f = form(json!([
            {"name": "who", "type": "text", "label": "Who", "required": true},
            {"name": "n", "type": "number", "label": "N", "min": 1, "max": 5, "default": 3},
            {"name": "pick", "type": "multi_select", "label": "Pick", "min": 1, "max": 2,
             "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B", "recommended": true}]}
        ]));
        f.validate().unwrap();
    }

    #[test]
    fn each_broken_rule_names_its_field() {
        let cases = [
            (
                json!([{"name": "s", "type": "select", "label": "S"}]),
                "s",
                "at least one option",
            ),
            (
                json!([{"name": "r", "type": "radio", "label": "R",
                        "options": [{"value": "x", "label": "X"}, {"value": "x", "label": "Y"}]}]),
                "r",
                "appears twice",
            ),
            (
                json!([{"name": "p", "type": "password", "label": "P", "default": "hunter2"}]),
                "p",
                "password",
            ),
            (
                json!([{"name": "n", "type": "number", "label": "N", "min": 5, "max": 1}]),
                "n",
                "greater than max",
            ),
            (
                json!([{"name": "t", "type": "text", "label": "T", "min": 1}]),
                "t",
                "min and max apply",
            ),
            (
                json!([{"name": "n", "type": "number", "label": "N", "max": 3, "default": 9}]),
                "n",
                "default does not fit",
            ),
            (
                json!([{"name": "d", "type": "text", "label": "D"}, {"name": "d", "type": "email", "label": "E"}]),
                "d",
                "same name",
            ),
        ];
        for (fields, name, needle) in cases {
            let err = form(fields).validate().unwrap_err();
            assert_eq!(err.field.as_deref(), Some(name), "{err}");
            assert!(
                err.to_string().contains(needle),
                "{err} should mention {needle}"
            );
        }
    }

    #[test]
    fn an_empty_title_or_no_fields_is_refused() {
        let mut f = form(json!([{"name": "a", "type": "text", "label": "A"}]));
        f.title = " ".into();
        assert!(f.validate().unwrap_err().message.contains("title"));
        assert!(
            form(json!([]))
                .validate()
                .unwrap_err()
                .message
                .contains("at least one field")
        );
    }

    #[test]
    fn a_fitting_answer_comes_back_with_every_field() {
        let f = form(json!([
            {"name": "a", "type": "email", "label": "A", "required": true},
            {"name": "b", "type": "checkbox", "label": "B"},
            {"name": "c", "type": "multi_select", "label": "C", "options": [{"value": "x", "label": "X"}]}
        ]));
        let checked = f
            .check_answer(&values(json!({"a": "me@example.org"})))
            .unwrap();
        assert_eq!(
            Value::Object(checked),
            json!({"a": "me@example.org", "b": null, "c": []})
        );
    }

    #[test]
    fn an_answer_that_does_not_fit_is_refused_with_the_field() {
        let f = form(json!([
            {"name": "e", "type": "email", "label": "E"},
            {"name": "u", "type": "url", "label": "U"},
            {"name": "n", "type": "number", "label": "N", "min": 0, "max": 10},
            {"name": "r", "type": "radio", "label": "R", "required": true,
             "options": [{"value": "x", "label": "X"}, {"value": "y", "label": "Y"}]},
            {"name": "m", "type": "multi_select", "label": "M", "max": 1,
             "options": [{"value": "x", "label": "X"}, {"value": "y", "label": "Y"}]},
            {"name": "c", "type": "confirm", "label": "C"}
        ]));
        let ok = json!({"r": "x"});
        let cases = [
            (json!({"e": "not an email"}), "e"),
            (json!({"u": "example.com"}), "u"),
            (json!({"n": 11}), "n"),
            (json!({"n": "3"}), "n"),
            (json!({"r": "z"}), "r"),
            (json!({"m": ["x", "y"]}), "m"),
            (json!({"m": ["x", "x"]}), "m"),
            (json!({"c": "yes"}), "c"),
            (json!({"zzz": 1}), "zzz"),
        ];
        for (extra, name) in cases {
            let mut answer = values(ok.clone());
            answer.extend(values(extra.clone()));
            let err = f.check_answer(&answer).unwrap_err();
            assert_eq!(err.field.as_deref(), Some(name), "{extra}: {err}");
        }
        let err = f.check_answer(&Map::new()).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("r"));
        assert!(err.message.contains("required"));
    }

    #[test]
    fn a_multi_select_minimum_applies_to_an_empty_selection() {
        let f = form(
            json!([{"name": "m", "type": "multi_select", "label": "M", "min": 1,
                             "options": [{"value": "x", "label": "X"}]}]),
        );
        assert!(f.check_answer(&Map::new()).is_err());
        assert!(f.check_answer(&values(json!({"m": ["x"]}))).is_ok());
    }

    #[test]
    fn a_one_question_form_needs_a_value_and_an_explicit_empty_selection_is_one() {
        let mut f = form(
            json!([{"name": "selected", "type": "multi_select", "label": "M",
                                 "options": [{"value": "x", "label": "X"}]}]),
        );
        // As ask_form makes it: an optional field may stay absent.
        assert_eq!(
            f.check_reply(&Map::new(), None).unwrap(),
            values(json!({"selected": []}))
        );
        // As ask_multi_select makes it: absent or null is no answer, `[]` is one.
        f.one_question = true;
        for absent in [json!({}), json!({"selected": null})] {
            let err = f.check_reply(&values(absent), None).unwrap_err();
            assert_eq!(err.field.as_deref(), Some("selected"));
            assert!(err.message.starts_with(NOT_ANSWERED), "{err}");
        }
        assert_eq!(
            f.check_reply(&values(json!({"selected": []})), None)
                .unwrap(),
            values(json!({"selected": []}))
        );
    }

    #[test]
    fn email_and_url_checks_accept_real_ones() {
        assert!(looks_like_email("a.b+c@mail.example.co"));
        assert!(!looks_like_email("a@b"));
        assert!(!looks_like_email("a b@example.org"));
        assert!(looks_like_url("https://example.org/x?y=1"));
        assert!(looks_like_url("ftp://host"));
        assert!(!looks_like_url("javascript:alert(1)"));
        assert!(!looks_like_url("/relative"));
    }

    /// One case of `tests/fixtures/forms.json`, which `extension/lib/formmodel.js` is tested
    /// against as well (`tests/e2e/unit/formfixture.test.mjs`).
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Case {
        name: String,
        form: Form,
        answer: Reply,
        valid: bool,
        #[serde(default)]
        field: Option<String>,
        #[serde(default)]
        message: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Reply {
        values: Map<String, Value>,
        #[serde(default)]
        note: Option<String>,
    }

    #[test]
    fn the_shared_fixture_of_forms_and_answers_is_judged_as_it_says() {
        let fixture: Value =
            serde_json::from_str(include_str!("../../tests/fixtures/forms.json")).unwrap();
        let cases: Vec<Case> = serde_json::from_value(fixture["cases"].clone()).unwrap();
        assert!(cases.len() > 50, "the fixture lost its cases");
        let mut wrong = Vec::new();
        for case in &cases {
            case.form
                .validate()
                .unwrap_or_else(|e| panic!("{}: the form itself is refused: {e}", case.name));
            let verdict = case
                .form
                .check_reply(&case.answer.values, case.answer.note.as_deref());
            let fits = match (&verdict, case.valid) {
                (Ok(_), true) => true,
                (Err(e), false) => {
                    e.field == case.field && case.message.as_ref().is_none_or(|m| *m == e.message)
                }
                _ => false,
            };
            if !fits {
                wrong.push(format!("{}: got {verdict:?}", case.name));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// One case of the fixture's `forms`: a form and what [`Form::validate`] says of it.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct FormCase {
        name: String,
        form: Value,
        valid: bool,
        #[serde(default)]
        field: Option<String>,
        #[serde(default)]
        message: Option<String>,
    }

    /// The fixture writes a long text as `{"repeat": text, "times": n}`.
    fn expand_repeats(value: Value) -> Value {
        match value {
            Value::Object(map) if map.len() == 2 && map.contains_key("repeat") => {
                let text = map["repeat"].as_str().unwrap();
                let times = map["times"].as_u64().unwrap();
                Value::String(text.repeat(times as usize))
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, expand_repeats(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.into_iter().map(expand_repeats).collect()),
            other => other,
        }
    }

    #[test]
    fn the_shared_fixture_of_forms_is_accepted_or_refused_as_it_says() {
        judge_fixture_forms("forms");
    }

    /// The permission-form shape that extension/lib/formmodel.js twins (`checkPermissionForm`).
    #[test]
    fn the_shared_fixture_of_permission_forms_is_accepted_or_refused_as_it_says() {
        judge_fixture_forms("permission_forms");
    }

    fn judge_fixture_forms(section: &str) {
        let fixture: Value =
            serde_json::from_str(include_str!("../../tests/fixtures/forms.json")).unwrap();
        let cases: Vec<FormCase> = serde_json::from_value(fixture[section].clone()).unwrap();
        assert!(!cases.is_empty(), "the fixture lost its {section}");
        let mut wrong = Vec::new();
        for case in cases {
            let form: Form = serde_json::from_value(expand_repeats(case.form))
                .unwrap_or_else(|e| panic!("{}: not a form: {e}", case.name));
            let verdict = form.validate();
            let fits = match (&verdict, case.valid) {
                (Ok(()), true) => true,
                (Err(e), false) => {
                    e.field == case.field && case.message.is_none_or(|m| m == e.message)
                }
                _ => false,
            };
            if !fits {
                wrong.push(format!("{}: got {verdict:?}", case.name));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn field_types_round_trip_by_name() {
        for kind in FieldType::ALL {
            assert_eq!(FieldType::from_name(kind.name()), Some(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.name()));
        }
    }
}
