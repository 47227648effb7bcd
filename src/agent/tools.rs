//! The arguments of the ask tools (DESIGN.md §5) and how each becomes a form (§4). Shared
//! by the MCP server and `him ask`, so both refuse the same bad arguments the same way.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::form::{Choice, Field, FieldType, Form, FormError, MAX_OPTIONS, markdown_too_long};

/// Bad tool arguments: becomes a JSON-RPC invalid-params error (or exit code 2 in the CLI)
/// that names the argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    pub argument: String,
    pub message: String,
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid argument `{}`: {}", self.argument, self.message)
    }
}

impl std::error::Error for ArgError {}

fn arg_error(argument: impl Into<String>, message: impl Into<String>) -> ArgError {
    ArgError {
        argument: argument.into(),
        message: message.into(),
    }
}

/// Which tool asked, which decides how the answer is presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Text,
    Choice,
    MultiSelect,
    Confirm,
    Form,
}

impl ToolKind {
    pub fn tool_name(self) -> &'static str {
        match self {
            ToolKind::Text => "ask_text",
            ToolKind::Choice => "ask_choice",
            ToolKind::MultiSelect => "ask_multi_select",
            ToolKind::Confirm => "ask_confirm",
            ToolKind::Form => "ask_form",
        }
    }
}

/// What the five ask tools have in common (DESIGN.md §4's table): each is a view over the
/// one form model, with the wait it may ask for. The MCP tools and `him ask` go through it.
pub trait AskTool {
    const KIND: ToolKind;

    /// The form this asks, or the argument that is wrong.
    fn to_form(&self) -> Result<Form, ArgError>;

    /// The wait the call asked for, if any.
    fn wait_ms(&self) -> Option<u64>;

    /// Which tool, its form and its wait.
    fn asked(&self) -> Result<(ToolKind, Form, Option<u64>), ArgError> {
        Ok((Self::KIND, self.to_form()?, self.wait_ms()))
    }
}

/// Where a non-empty string means "given": optional strings are plain strings defaulting to
/// empty in the schema, which every client understands.
fn given(s: &str) -> Option<String> {
    let trimmed = s.trim();
    (!trimmed.is_empty()).then(|| s.to_owned())
}

fn need_question(question: &str) -> Result<(), ArgError> {
    if question.trim().is_empty() {
        return Err(arg_error("question", "must not be empty"));
    }
    // The form checks its title too, but would blame the title, which this tool has not.
    if let Some(why) = markdown_too_long(question) {
        return Err(arg_error("question", why));
    }
    Ok(())
}

/// Every argument struct and its parts refuse keys they do not define
/// (`deny_unknown_fields`, which also puts `additionalProperties: false` in the schema): a
/// misspelt or foreign argument (`timeout`, `timeoutMs` on a snake_case tool, `requried` in
/// a field) would otherwise be dropped and the call go on without it. The MCP extractor
/// (`mcp/params.rs`) reports such a key by its path before serde sees it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskTextArgs {
    /// The question, as the person should read it. Markdown (emphasis, code, lists, links).
    pub question: String,
    /// Hint shown in the empty input.
    #[serde(default)]
    pub placeholder: String,
    /// Pre-filled answer the person can accept or edit.
    #[serde(default)]
    pub default: String,
    /// Offer a multi-line text area instead of a single line.
    #[serde(default)]
    pub multiline: bool,
    /// How long to wait for the person, in milliseconds (1 s – 24 h; default 5 min).
    #[serde(default)]
    #[schemars(with = "u64")]
    pub timeout_ms: Option<u64>,
}

/// An option: just its label, or a label with an explanation.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
#[schemars(inline)]
pub enum OptionArg {
    Label(String),
    Described {
        /// What the person sees and what comes back as the answer.
        label: String,
        /// One line on what choosing this means.
        #[serde(default)]
        description: String,
        /// Mark this option as the one you recommend.
        #[serde(default)]
        recommended: bool,
    },
}

impl OptionArg {
    fn to_choice(&self) -> Choice {
        match self {
            OptionArg::Label(label) => Choice::plain(label.clone()),
            OptionArg::Described {
                label,
                description,
                recommended,
            } => described(None, label, description, *recommended),
        }
    }
}

impl FieldOptionArg {
    fn to_choice(&self) -> Choice {
        match self {
            FieldOptionArg::Label(label) => Choice::plain(label.clone()),
            FieldOptionArg::Described {
                value,
                label,
                description,
                recommended,
            } => described(given(value), label, description, *recommended),
        }
    }
}

/// An option given as an object; its value is its label unless it names one.
fn described(value: Option<String>, label: &str, description: &str, recommended: bool) -> Choice {
    Choice {
        value: value.unwrap_or_else(|| label.to_owned()),
        label: label.to_owned(),
        description: given(description),
        recommended,
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskChoiceArgs {
    /// The question, as the person should read it.
    pub question: String,
    /// 2 to 25 options; each a label, or {label, description, recommended}.
    pub options: Vec<OptionArg>,
    /// The label of the option chosen in advance.
    #[serde(default)]
    pub default: String,
    /// Let the person add a free-text note, or answer with a note instead of a choice.
    #[serde(default)]
    pub allow_free_text: bool,
    /// How long to wait for the person, in milliseconds (1 s – 24 h; default 5 min).
    #[serde(default)]
    #[schemars(with = "u64")]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskMultiSelectArgs {
    /// The question, as the person should read it.
    pub question: String,
    /// The options (1 to 200); each a label, or {label, description, recommended}.
    pub options: Vec<OptionArg>,
    /// At least this many must be chosen.
    #[serde(default)]
    #[schemars(with = "u32")]
    pub min: Option<u32>,
    /// At most this many may be chosen.
    #[serde(default)]
    #[schemars(with = "u32")]
    pub max: Option<u32>,
    /// How long to wait for the person, in milliseconds (1 s – 24 h; default 5 min).
    #[serde(default)]
    #[schemars(with = "u64")]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskConfirmArgs {
    /// A yes/no question, as the person should read it.
    pub question: String,
    /// The answer selected in advance.
    #[serde(default)]
    #[schemars(with = "bool")]
    pub default: Option<bool>,
    /// How long to wait for the person, in milliseconds (1 s – 24 h; default 5 min).
    #[serde(default)]
    #[schemars(with = "u64")]
    pub timeout_ms: Option<u64>,
}

/// An option of a form field: a string (value and label alike) or an object.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
#[schemars(inline)]
pub enum FieldOptionArg {
    Label(String),
    Described {
        /// What comes back in `values`; defaults to the label.
        #[serde(default)]
        value: String,
        label: String,
        #[serde(default)]
        description: String,
        #[serde(default)]
        recommended: bool,
    },
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(inline)]
pub struct FieldArg {
    /// Key of this field in the returned `values`.
    pub name: String,
    /// text, email, url, password, number, textarea, select, radio, checkbox, confirm or
    /// multi_select.
    #[serde(rename = "type")]
    pub kind: String,
    /// What the person reads next to the control.
    pub label: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub placeholder: String,
    /// Pre-filled value of the field's type (not allowed for password).
    #[serde(default)]
    #[schemars(schema_with = "default_schema")]
    pub default: Option<Value>,
    /// The same as `default`, as the seed's `form_input` spells it; give one of the two.
    // Its own key rather than a serde alias, so that the schema, which refuses keys it does
    // not list, lists it.
    #[serde(default)]
    #[schemars(schema_with = "default_schema")]
    pub default_value: Option<Value>,
    /// For select, radio and multi_select.
    #[serde(default)]
    pub options: Vec<FieldOptionArg>,
    /// number: smallest value; multi_select: fewest choices.
    #[serde(default)]
    #[schemars(with = "f64")]
    pub min: Option<f64>,
    /// number: largest value; multi_select: most choices.
    #[serde(default)]
    #[schemars(with = "f64")]
    pub max: Option<f64>,
}

/// A union, because the contract is one: a field's default is a value of the field's own
/// type (DESIGN.md §4: a string for text-like fields and options, a number, a boolean for
/// checkbox and confirm, an array of option values for multi_select), and the seed's
/// `form_input` takes it under one key for every type. Spelt as `anyOf` of single types,
/// which every client reads (a `type` array is not portable: `mcp/schema.rs`).
fn default_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "Pre-filled value of the field's type: a string, number, boolean, or for \
                        multi_select an array of option values (not allowed for password)",
        "anyOf": [
            {"type": "string"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "array", "items": {"type": "string"}}
        ]
    })
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AskFormArgs {
    /// What the form is for, shown as its heading.
    pub title: String,
    /// More context, in Markdown.
    #[serde(default)]
    pub description: String,
    /// Label of the submit button (default "Submit").
    #[serde(default)]
    pub submit_label: String,
    /// Let the person add a free-text note to their answer.
    #[serde(default)]
    pub allow_note: bool,
    /// The fields, in order.
    pub fields: Vec<FieldArg>,
    /// How long to wait for the person, in milliseconds (1 s – 24 h; default 5 min).
    /// The name every ask tool takes.
    #[serde(default, rename = "timeout_ms")]
    #[schemars(with = "u64")]
    pub timeout_ms: Option<u64>,
    /// The same as `timeout_ms`, in the camelCase of this tool's other arguments; give one
    /// of the two.
    #[serde(default, rename = "timeoutMs")]
    #[schemars(with = "u64")]
    pub timeout_ms_camel: Option<u64>,
}

const CHOICE_OPTIONS: std::ops::RangeInclusive<usize> = 2..=25;

fn simple_form(question: &str, field: Field) -> Form {
    Form {
        title: question.to_owned(),
        description: None,
        submit_label: None,
        fields: vec![field],
        allow_note: false,
        permission: None,
        one_question: true,
    }
}

/// A single-field form's problem is the tool's argument of the same meaning.
fn blame(err: FormError, argument: &str) -> ArgError {
    arg_error(argument, err.message)
}

impl AskTool for AskTextArgs {
    const KIND: ToolKind = ToolKind::Text;

    fn wait_ms(&self) -> Option<u64> {
        self.timeout_ms
    }

    fn to_form(&self) -> Result<Form, ArgError> {
        need_question(&self.question)?;
        let kind = if self.multiline {
            FieldType::Textarea
        } else {
            FieldType::Text
        };
        let mut field = Field::new("answer", kind, self.question.clone());
        field.required = true;
        field.placeholder = given(&self.placeholder);
        field.default = given(&self.default).map(Value::String);
        let form = simple_form(&self.question, field);
        form.validate().map_err(|e| blame(e, "default"))?;
        Ok(form)
    }
}

fn choices(options: &[OptionArg]) -> Result<Vec<Choice>, ArgError> {
    // Checked before anything else: the argument can be megabytes from a remote client.
    if options.len() > MAX_OPTIONS {
        return Err(arg_error(
            "options",
            format!("give at most {MAX_OPTIONS} options (got {})", options.len()),
        ));
    }
    let list: Vec<Choice> = options.iter().map(OptionArg::to_choice).collect();
    let mut seen = std::collections::HashSet::new();
    for (i, choice) in list.iter().enumerate() {
        if choice.label.trim().is_empty() {
            return Err(arg_error(
                format!("options[{i}]"),
                "an option needs a non-empty label",
            ));
        }
        if !seen.insert(choice.value.as_str()) {
            return Err(arg_error(
                format!("options[{i}]"),
                format!("{:?} appears twice", choice.label),
            ));
        }
    }
    Ok(list)
}

impl AskTool for AskChoiceArgs {
    const KIND: ToolKind = ToolKind::Choice;

    fn wait_ms(&self) -> Option<u64> {
        self.timeout_ms
    }

    fn to_form(&self) -> Result<Form, ArgError> {
        need_question(&self.question)?;
        if !CHOICE_OPTIONS.contains(&self.options.len()) {
            return Err(arg_error(
                "options",
                format!(
                    "give between 2 and 25 options (got {}); for yes/no use ask_confirm",
                    self.options.len()
                ),
            ));
        }
        let mut field = Field::new("choice", FieldType::Radio, self.question.clone());
        field.options = choices(&self.options)?;
        // With free text allowed, a note alone is a valid reply ("discussion").
        field.required = !self.allow_free_text;
        if let Some(default) = given(&self.default) {
            if !field.options.iter().any(|o| o.value == default) {
                return Err(arg_error(
                    "default",
                    format!("{default:?} is not one of the options"),
                ));
            }
            field.default = Some(Value::String(default));
        }
        let mut form = simple_form(&self.question, field);
        form.allow_note = self.allow_free_text;
        form.validate().map_err(|e| blame(e, "options"))?;
        Ok(form)
    }
}

impl AskTool for AskMultiSelectArgs {
    const KIND: ToolKind = ToolKind::MultiSelect;

    fn wait_ms(&self) -> Option<u64> {
        self.timeout_ms
    }

    fn to_form(&self) -> Result<Form, ArgError> {
        need_question(&self.question)?;
        if self.options.is_empty() {
            return Err(arg_error("options", "give at least one option"));
        }
        let mut field = Field::new("selected", FieldType::MultiSelect, self.question.clone());
        field.options = choices(&self.options)?;
        let n = field.options.len() as u32;
        if let Some(min) = self.min.filter(|&m| m > n) {
            return Err(arg_error(
                "min",
                format!("{min} is more than the {n} options"),
            ));
        }
        if let (Some(min), Some(max)) = (self.min, self.max)
            && min > max
        {
            return Err(arg_error(
                "max",
                format!("max ({max}) is less than min ({min})"),
            ));
        }
        field.min = self.min.map(f64::from);
        field.max = self.max.map(f64::from);
        let form = simple_form(&self.question, field);
        form.validate().map_err(|e| blame(e, "options"))?;
        Ok(form)
    }
}

impl AskTool for AskConfirmArgs {
    const KIND: ToolKind = ToolKind::Confirm;

    fn wait_ms(&self) -> Option<u64> {
        self.timeout_ms
    }

    fn to_form(&self) -> Result<Form, ArgError> {
        need_question(&self.question)?;
        let mut field = Field::new("confirmed", FieldType::Confirm, self.question.clone());
        field.required = true;
        field.default = self.default.map(Value::Bool);
        Ok(simple_form(&self.question, field))
    }
}

impl AskTool for AskFormArgs {
    const KIND: ToolKind = ToolKind::Form;

    /// The wait asked for, under either spelling. Both at once is refused by `to_form`.
    fn wait_ms(&self) -> Option<u64> {
        self.timeout_ms.or(self.timeout_ms_camel)
    }

    fn to_form(&self) -> Result<Form, ArgError> {
        // Two waits, possibly different, cannot both be meant.
        if self.timeout_ms.is_some() && self.timeout_ms_camel.is_some() {
            return Err(arg_error(
                "timeout_ms",
                "give `timeout_ms` or `timeoutMs`, not both (they are the same argument)",
            ));
        }
        if self.title.trim().is_empty() {
            return Err(arg_error("title", "must not be empty"));
        }
        // Checked here, as the form would, to name the argument rather than `fields`.
        if let Some(why) = markdown_too_long(&self.title) {
            return Err(arg_error("title", why));
        }
        if let Some(why) = markdown_too_long(&self.description) {
            return Err(arg_error("description", why));
        }
        if self.fields.is_empty() {
            return Err(arg_error("fields", "give at least one field"));
        }
        let mut fields = Vec::with_capacity(self.fields.len());
        for (i, arg) in self.fields.iter().enumerate() {
            let kind = field_type(&arg.kind).ok_or_else(|| {
                arg_error(
                    format!("fields[{i}].type"),
                    format!(
                        "{:?} is not a field type; use one of text, email, url, password, number, \
                         textarea, select, radio, checkbox, confirm, multi_select",
                        arg.kind
                    ),
                )
            })?;
            let mut field = Field::new(&arg.name, kind, arg.label.clone());
            field.description = given(&arg.description);
            field.required = arg.required;
            field.placeholder = given(&arg.placeholder);
            let default = match (&arg.default, &arg.default_value) {
                (Some(_), Some(_)) => {
                    return Err(arg_error(
                        format!("fields[{i}].default"),
                        "give `default` or `defaultValue`, not both (they are the same key)",
                    ));
                }
                (default, default_value) => default.as_ref().or(default_value.as_ref()),
            };
            field.default = default.cloned().filter(|v| !v.is_null());
            field.min = arg.min;
            field.max = arg.max;
            field.options = arg.options.iter().map(FieldOptionArg::to_choice).collect();
            fields.push(field);
        }
        let form = Form {
            title: self.title.clone(),
            description: given(&self.description),
            submit_label: given(&self.submit_label),
            fields,
            allow_note: self.allow_note,
            permission: None,
            one_question: false,
        };
        form.validate().map_err(|err| match &err.field {
            Some(name) => {
                let i = self
                    .fields
                    .iter()
                    .position(|f| &f.name == name)
                    .unwrap_or(0);
                arg_error(format!("fields[{i}] ({name})"), err.message)
            }
            None => arg_error("fields", err.message),
        })?;
        Ok(form)
    }
}

/// Field type names, with the spellings agents commonly use for multi-select.
fn field_type(name: &str) -> Option<FieldType> {
    match name {
        "multiselect" | "multiSelect" | "multi-select" => Some(FieldType::MultiSelect),
        "string" => Some(FieldType::Text),
        "boolean" => Some(FieldType::Checkbox),
        other => FieldType::from_name(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::form::MAX_MARKDOWN_CHARS;
    use serde_json::json;

    #[test]
    fn ask_choice_needs_two_to_twenty_five_options() {
        let args: AskChoiceArgs =
            serde_json::from_value(json!({"question": "q", "options": ["a"]})).unwrap();
        assert_eq!(args.to_form().unwrap_err().argument, "options");
        let args: AskChoiceArgs = serde_json::from_value(
            json!({"question": "q", "options": ["a", {"label": "b", "description": "bee"}]}),
        )
        .unwrap();
        let form = args.to_form().unwrap();
        assert_eq!(
            form.fields[0].options[1].description.as_deref(),
            Some("bee")
        );
        assert!(form.fields[0].required);
    }

    #[test]
    fn a_default_that_is_not_an_option_names_default() {
        let args: AskChoiceArgs =
            serde_json::from_value(json!({"question": "q", "options": ["a", "b"], "default": "c"}))
                .unwrap();
        assert_eq!(args.to_form().unwrap_err().argument, "default");
    }

    #[test]
    fn free_text_makes_the_choice_optional_and_allows_a_note() {
        let args: AskChoiceArgs = serde_json::from_value(
            json!({"question": "q", "options": ["a", "b"], "allow_free_text": true}),
        )
        .unwrap();
        let form = args.to_form().unwrap();
        assert!(form.allow_note);
        assert!(!form.fields[0].required);
    }

    #[test]
    fn ask_form_errors_name_the_field_by_position_and_name() {
        let args: AskFormArgs = serde_json::from_value(json!({
            "title": "t",
            "fields": [
                {"name": "a", "type": "text", "label": "A"},
                {"name": "pw", "type": "password", "label": "P", "defaultValue": "x"}
            ]
        }))
        .unwrap();
        let err = args.to_form().unwrap_err();
        assert_eq!(err.argument, "fields[1] (pw)");
        let args: AskFormArgs = serde_json::from_value(json!({
            "title": "t", "fields": [{"name": "a", "type": "colour", "label": "A"}]
        }))
        .unwrap();
        assert_eq!(args.to_form().unwrap_err().argument, "fields[0].type");
    }

    #[test]
    fn ask_form_takes_seed_camel_case_names() {
        let args: AskFormArgs = serde_json::from_value(json!({
            "title": "Deploy", "submitLabel": "Go",
            "fields": [{"name": "env", "type": "select", "label": "Env", "required": true,
                        "options": ["dev", {"value": "prod", "label": "Production", "recommended": true}],
                        "defaultValue": "dev"}]
        }))
        .unwrap();
        let form = args.to_form().unwrap();
        assert_eq!(form.submit_label.as_deref(), Some("Go"));
        assert_eq!(form.fields[0].options[1].value, "prod");
        assert_eq!(form.fields[0].default, Some(json!("dev")));
    }

    #[test]
    fn a_text_too_long_to_render_names_its_argument() {
        let long = "x".repeat(MAX_MARKDOWN_CHARS + 1);
        let too_long = format!(
            "has {} characters; at most {MAX_MARKDOWN_CHARS} are allowed",
            long.len()
        );
        let err = AskConfirmArgs {
            question: long.clone(),
            ..Default::default()
        }
        .to_form()
        .unwrap_err();
        assert_eq!(
            (err.argument.as_str(), err.message.as_str()),
            ("question", too_long.as_str())
        );
        let args: AskFormArgs = serde_json::from_value(json!({
            "title": "t", "description": long, "fields": [{"name": "a", "type": "text", "label": "A"}]
        }))
        .unwrap();
        assert_eq!(args.to_form().unwrap_err().argument, "description");
        let args: AskFormArgs = serde_json::from_value(json!({
            "title": "t", "fields": [{"name": "a", "type": "text", "label": "A", "description": long}]
        }))
        .unwrap();
        let err = args.to_form().unwrap_err();
        assert_eq!(err.argument, "fields[0] (a)");
        assert_eq!(err.message, format!("the description {too_long}"));
        let args: AskChoiceArgs = serde_json::from_value(
            json!({"question": "q", "options": ["a", {"label": "b", "description": long}]}),
        )
        .unwrap();
        let err = args.to_form().unwrap_err();
        assert_eq!(err.argument, "options");
        assert_eq!(
            err.message,
            format!("the description of option \"b\" {too_long}")
        );
    }

    #[test]
    fn multi_select_bounds_are_checked_against_the_options() {
        let args: AskMultiSelectArgs =
            serde_json::from_value(json!({"question": "q", "options": ["a", "b"], "min": 3}))
                .unwrap();
        assert_eq!(args.to_form().unwrap_err().argument, "min");
        let args: AskMultiSelectArgs = serde_json::from_value(
            json!({"question": "q", "options": ["a", "b"], "min": 2, "max": 1}),
        )
        .unwrap();
        assert_eq!(args.to_form().unwrap_err().argument, "max");
    }
}
