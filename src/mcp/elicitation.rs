//! MCP form elicitation: the channel used when no browser is connected and the client can
//! show a form itself (DESIGN.md §5).
//!
//! ```text
//!  ≤ 2025-11-25:  tools/call ──► him ──elicitation/create──► client ──► person
//!                             ◄──────── ElicitResult ───────┘   (cancelled with the call)
//!  2026-07-28:    tools/call ──► him ──► input_required {inputRequests, requestState}
//!                 tools/call + inputResponses + requestState ──► him ──► result
//! ```
//!
//! Three pure pieces live here: the form as the restricted elicitation schema ([`request`]),
//! the client's reply as an answer to that form ([`answer_of`]), and the sealed
//! `requestState` of the 2026-07-28 round trip ([`StateCodec`]). The wire work is in
//! `server.rs`; the answer is judged by the same rules as every other answer. Whole numbers
//! in a form go out as integers wherever it goes: [`create_params`] for `elicitation/create`,
//! [`IntegralNumbers`] (stdio) and `http/integral.rs` for the input requests rmcp writes.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Mutex;

use futures::FutureExt;
use rmcp::RoleServer;
use rmcp::model::{
    ClientNotification, ClientRequest, CustomResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, ErrorData, ProtocolVersion, RequestStateCodec,
    RequestStateError, ServerConfig, ServerResult, TaskPayload,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, RequestContext, Service};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::form::display;
use crate::form::{Field, FieldType, Form};
use crate::wire::protocol::{Action, Answer};

/// The key of our one input request in a 2026-07-28 `input_required` result.
pub const INPUT_KEY: &str = "him";

/// Why a form cannot go through elicitation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotElicitable(pub String);

impl std::fmt::Display for NotElicitable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The property that carries the person's note when the form allows one: `note`, unless a
/// field already has that name.
pub fn note_property(form: &Form) -> Option<String> {
    if !form.allow_note {
        return None;
    }
    let mut name = "note".to_owned();
    while form.field(&name).is_some() {
        name.insert(0, '_');
    }
    Some(name)
}

/// The form as an `elicitation/create` form request: the restricted schema (flat object of
/// primitives, fields in order) and a message holding the question, its description and
/// what each option means (the schema has no room for option descriptions).
///
/// A password field is refused: the MCP specification forbids asking for secrets this way.
pub fn request(form: &Form) -> Result<ElicitRequestParams, NotElicitable> {
    let (schema, message) = schema_and_message(form)?;
    typed(schema, message)
}

/// The same request's params as JSON for the wire, where a whole number stays an integer
/// (`"minimum": 1`). rmcp's schema type keeps every bound and number default as an `f64`,
/// which goes out as `1.0`, and clients show it so (fast-agent: "min 1.0"; Python reads a
/// float). The form must still make a valid schema of that type: the check is the same.
/// The input requests of a 2026-07-28 `input_required` result and of a task can only be
/// rmcp's type: [`IntegralNumbers`] writes them by the same rule on their way out.
pub fn create_params(form: &Form) -> Result<Value, NotElicitable> {
    let (schema, message) = schema_and_message(form)?;
    typed(schema.clone(), message.clone())?;
    Ok(json!({"mode": "form", "message": message, "requestedSchema": schema}))
}

fn schema_and_message(form: &Form) -> Result<(Value, String), NotElicitable> {
    if let Some(field) = form.fields.iter().find(|f| f.kind == FieldType::Password) {
        return Err(NotElicitable(format!(
            "field `{}` is a password, and secrets must not go through MCP elicitation",
            field.name
        )));
    }
    // Properties in the form's order: serde_json keeps a map's insertion order here
    // (`preserve_order`), and a form's order is part of the question.
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in &form.fields {
        properties.insert(field.name.clone(), property(field));
        if field.required {
            required.push(Value::String(field.name.clone()));
        }
    }
    if let Some(name) = note_property(form) {
        properties.insert(
            name,
            json!({"type": "string", "title": "Note (optional)",
                   "description": "Add context, or answer in your own words"}),
        );
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    Ok((schema, message(form)))
}

fn typed(schema: Value, message: String) -> Result<ElicitRequestParams, NotElicitable> {
    let order: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let mut requested_schema: ElicitationSchema = serde_json::from_value(schema).map_err(|e| {
        NotElicitable(format!(
            "the form does not map to an elicitation schema: {e}"
        ))
    })?;
    // The schema type keeps properties sorted by name; this puts the form's order back.
    requested_schema.property_order = Some(order);
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    })
}

/// A number as JSON: an integer when it is a whole number that an `f64` holds exactly.
fn number(n: f64) -> Value {
    // 2^53: past it not every whole number has an `f64`.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if n.fract() == 0.0 && n.abs() <= EXACT {
        Value::from(n as i64)
    } else {
        json!(n)
    }
}

/// Every whole number in `value` as an integer, by [`number`]'s rule.
fn integral(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64() {
                *value = number(f);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral),
        Value::Object(map) => map.values_mut().for_each(integral),
        _ => {}
    }
}

/// Makes the whole numbers in the forms of `result`'s input requests integers, by
/// [`number`]'s rule; says whether it has any. A 2026-07-28 `input_required` result and a
/// task's `tasks/get` while it waits on the client's form carry rmcp's `ElicitRequest`,
/// whose schema type writes every bound and number default as an `f64` (`1.0`).
pub fn integral_input_requests(result: &mut Value) -> bool {
    let Some(requests) = result
        .get_mut("inputRequests")
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    for schema in requests
        .values_mut()
        .filter_map(|r| r.pointer_mut("/params/requestedSchema"))
    {
        integral(schema);
    }
    true
}

/// `result` as it goes on the wire, its input requests' forms through
/// [`integral_input_requests`]; any other result as it is.
fn with_integral_input_requests(result: ServerResult) -> ServerResult {
    let carries_forms = match &result {
        ServerResult::InputRequiredResult(r) => r.input_requests.is_some(),
        ServerResult::GetTaskResult(r) => {
            matches!(r.task.payload, TaskPayload::InputRequired { .. })
        }
        _ => false,
    };
    if !carries_forms {
        return result;
    }
    let mut wire = match serde_json::to_value(&result) {
        Ok(wire) => wire,
        Err(err) => {
            tracing::warn!("an input request left as rmcp writes it: {err}");
            return result;
        }
    };
    integral_input_requests(&mut wire);
    ServerResult::CustomResult(CustomResult(wire))
}

/// `him serve`'s service on stdio: the server, its results through
/// [`integral_input_requests`]. (Over HTTP rmcp takes only a `ServerHandler`, whose results
/// are typed: there `http.rs` rewrites the response events themselves.)
pub struct IntegralNumbers<S>(pub S);

impl<S: Service<RoleServer>> Service<RoleServer> for IntegralNumbers<S> {
    // Not an `async fn`: its state would reserve room for the request and its context beside
    // the inner call's future for as long as the call runs (624 B per pending question,
    // measured), where mapping the inner future's output keeps nothing of its own.
    fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ServerResult, ErrorData>> + MaybeSendFuture + '_ {
        self.0
            .handle_request(request, context)
            .map(|result| result.map(with_integral_input_requests))
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.0.handle_notification(notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        self.0.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.0.supported_protocol_versions()
    }
}

fn property(field: &Field) -> Value {
    let mut p = Map::new();
    let kind = match field.kind {
        FieldType::Number => "number",
        FieldType::Checkbox | FieldType::Confirm => "boolean",
        FieldType::MultiSelect => "array",
        _ => "string",
    };
    p.insert("type".into(), kind.into());
    p.insert("title".into(), display::terminal_line(&field.label).into());
    let mut description = field
        .description
        .as_deref()
        .map(display::terminal_text)
        .unwrap_or_default();
    if let Some(placeholder) = &field.placeholder {
        if !description.is_empty() {
            description.push(' ');
        }
        description.push_str(&format!("(e.g. {placeholder})"));
    }
    if !description.is_empty() {
        p.insert("description".into(), description.into());
    }
    let titled = |field: &Field| -> Vec<Value> {
        field
            .options
            .iter()
            .map(|o| {
                let title = if o.recommended {
                    format!("{} (recommended)", o.label)
                } else {
                    o.label.clone()
                };
                json!({"const": o.value, "title": title})
            })
            .collect()
    };
    match field.kind {
        FieldType::Email => {
            p.insert("format".into(), "email".into());
        }
        FieldType::Url => {
            p.insert("format".into(), "uri".into());
        }
        FieldType::Number => {
            if let Some(min) = field.min {
                p.insert("minimum".into(), number(min));
            }
            if let Some(max) = field.max {
                p.insert("maximum".into(), number(max));
            }
        }
        FieldType::Select | FieldType::Radio => {
            p.insert("oneOf".into(), Value::Array(titled(field)));
        }
        FieldType::MultiSelect => {
            p.insert("items".into(), json!({"anyOf": titled(field)}));
            if let Some(min) = field.min {
                p.insert("minItems".into(), json!(min as u64));
            }
            if let Some(max) = field.max {
                p.insert("maxItems".into(), json!(max as u64));
            }
        }
        _ => {}
    }
    if let Some(default) = field.default.as_ref().filter(|d| !d.is_null()) {
        let default = match default.as_f64() {
            Some(n) if field.kind == FieldType::Number => number(n),
            _ => default.clone(),
        };
        p.insert("default".into(), default);
    }
    Value::Object(p)
}

/// The question as the person reads it in the client's dialog. Clients draw it as text
/// (Claude Code and fast-agent showed `*field*` literally; Codex ran lines together), most
/// of them in a terminal: so the §4 Markdown goes as its plain text, each control and
/// invisible character marked (`display`), as `him ask` draws it.
pub fn message(form: &Form) -> String {
    let mut out = display::terminal_text(&form.title);
    if let Some(description) = &form.description {
        out.push_str("\n\n");
        out.push_str(&display::terminal_text(description));
    }
    let single = form.fields.len() == 1;
    for field in &form.fields {
        let described: Vec<_> = field
            .options
            .iter()
            .filter(|o| o.description.is_some())
            .collect();
        if described.is_empty() {
            continue;
        }
        out.push_str("\n\n");
        if !single {
            out.push_str(&format!("{}:", display::terminal_line(&field.label)));
        } else {
            out.push_str("Options:");
        }
        for option in field.options.iter() {
            out.push_str(&format!("\n- {}", display::terminal_literal(&option.label)));
            if let Some(description) = &option.description {
                out.push_str(&format!(": {}", display::terminal_line(description)));
            }
        }
    }
    out
}

/// The client's reply as an answer to `form` (not yet judged: `wait::judge` does that).
pub fn answer_of(form: &Form, question_id: &str, reply: &ElicitResult) -> Answer {
    let action = match reply.action {
        ElicitationAction::Accept => Action::Submit,
        ElicitationAction::Decline => Action::Decline,
        // Cancel, and any action a later protocol adds: the person did not answer.
        _ => Action::Cancel,
    };
    let (values, note) = match (&reply.action, &reply.content) {
        (ElicitationAction::Accept, Some(Value::Object(content))) => {
            let mut values = content.clone();
            let note = note_property(form)
                .and_then(|name| values.remove(&name))
                .and_then(|n| n.as_str().map(str::to_owned));
            (Some(values), note)
        }
        // Anything but an object cannot fit a form; let the judge say so.
        (ElicitationAction::Accept, Some(other)) => {
            let mut values = Map::new();
            values.insert("(reply is not an object)".into(), other.clone());
            (Some(values), None)
        }
        (ElicitationAction::Accept, None) => (Some(Map::new()), None),
        _ => (None, None),
    };
    Answer {
        id: question_id.to_owned(),
        action,
        values,
        note,
        answered_by: None,
    }
}

/// What the 2026-07-28 `requestState` carries between the call that returned
/// `input_required` and its retry. The form itself is not carried: the retry repeats the
/// call's arguments, so the form is rebuilt from them and bound to the seal as associated
/// data (a retry with other arguments fails verification).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryState {
    /// The question id, the same as on every other channel.
    pub id: String,
    /// When the call was first made (Unix ms): the result's `elapsed_ms` counts from here.
    pub asked_ms: u64,
    /// When `input_required` went out (Unix ms): a decline sooner than HIM_AUTO_REJECT_MS
    /// after it was probably not the person's.
    pub elicited_ms: u64,
    /// When the question expires (Unix ms).
    pub deadline_ms: u64,
}

#[derive(Debug)]
pub enum StateError {
    /// Not sealed by this process for this tool and form: forged, tampered with, from an
    /// earlier `him serve`, or sent back with other arguments.
    Unverified(RequestStateError),
    /// Verified, but its question was already answered (a replay).
    Used,
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::Unverified(err) => write!(
                f,
                "requestState was not issued by this server for this call ({err}); call the tool \
                 again without requestState"
            ),
            StateError::Used => f.write_str(
                "requestState belongs to a question that was already answered; call the tool \
                 again without requestState to ask again",
            ),
        }
    }
}

impl std::error::Error for StateError {}

/// Seals and opens [`RetryState`]s with an HMAC key made fresh for each process, and keeps
/// the ids already redeemed so a sealed state answers its question once.
pub struct StateCodec {
    codec: RequestStateCodec,
    redeemed: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for StateCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateCodec").finish_non_exhaustive()
    }
}

impl StateCodec {
    /// A codec with a new random 256-bit key (kept in memory only: states die with the
    /// process, like the stdio session they belong to).
    pub fn generate() -> std::io::Result<StateCodec> {
        let key = crate::platform::random::random_hex(32)?;
        StateCodec::with_key(key.as_bytes()).map_err(std::io::Error::other)
    }

    pub fn with_key(key: &[u8]) -> Result<StateCodec, RequestStateError> {
        Ok(StateCodec {
            codec: RequestStateCodec::try_new(key.to_vec())?,
            redeemed: Mutex::new(HashMap::new()),
        })
    }

    fn context(tool: &str, form: &Form) -> Vec<u8> {
        let mut context = format!("him/elicitation/1\n{tool}\n").into_bytes();
        context.extend(serde_json::to_vec(form).unwrap_or_default());
        context
    }

    pub fn seal(&self, tool: &str, form: &Form, state: &RetryState) -> String {
        let context = Self::context(tool, form);
        let options = rmcp::model::SealOptions::new().associated_data(&context);
        self.codec
            .seal_json_with(state, &options)
            .unwrap_or_else(|_| self.codec.seal_with(b"{}", &options))
    }

    /// Verifies a state sent back with a retry of `tool` whose arguments make `form`.
    pub fn open(&self, tool: &str, form: &Form, sealed: &str) -> Result<RetryState, StateError> {
        let context = Self::context(tool, form);
        let state: RetryState = self
            .codec
            .open_json_with(sealed, &context)
            .map_err(StateError::Unverified)?;
        if self.redeemed().contains_key(&state.id) {
            return Err(StateError::Used);
        }
        Ok(state)
    }

    /// Marks a state's question answered; `now_ms` prunes entries past their deadline,
    /// which cannot be replayed to any effect (they come back as `timeout`).
    pub fn redeem(&self, state: &RetryState, now_ms: u64) -> Result<(), StateError> {
        let mut redeemed = self.redeemed();
        redeemed.retain(|_, deadline| *deadline + 60_000 > now_ms);
        if redeemed
            .insert(state.id.clone(), state.deadline_ms)
            .is_some()
        {
            return Err(StateError::Used);
        }
        Ok(())
    }

    fn redeemed(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.redeemed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tools::{AskChoiceArgs, AskFormArgs, AskTool};

    fn form() -> Form {
        serde_json::from_value::<AskFormArgs>(json!({
            "title": "Deploy", "description": "To *where*?", "allowNote": true,
            "fields": [
                {"name": "env", "type": "radio", "label": "Environment", "required": true,
                 "options": [{"label": "staging", "description": "safe"},
                             {"label": "prod", "recommended": true}],
                 "defaultValue": "staging"},
                {"name": "replicas", "type": "number", "label": "Replicas", "min": 1, "max": 9},
                {"name": "contact", "type": "email", "label": "Contact"},
                {"name": "docs", "type": "url", "label": "Docs", "placeholder": "https://…"},
                {"name": "suites", "type": "multi_select", "label": "Suites",
                 "options": ["unit", "e2e"], "min": 1, "max": 2},
                {"name": "notify", "type": "checkbox", "label": "Notify", "defaultValue": true},
                {"name": "a_last", "type": "text", "label": "Last"}
            ]
        }))
        .unwrap()
        .to_form()
        .unwrap()
    }

    fn wire(params: &ElicitRequestParams) -> Value {
        serde_json::to_value(params).unwrap()
    }

    #[test]
    fn the_schema_keeps_field_order_types_bounds_and_defaults() {
        let params = request(&form()).unwrap();
        // serde_json's maps sort keys, so read the order off the text.
        let text = serde_json::to_string(&params).unwrap();
        let at = |name: &str| text.find(&format!("\"{name}\":{{")).unwrap();
        let order = [
            "env", "replicas", "contact", "docs", "suites", "notify", "a_last", "note",
        ];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
        let wire = wire(&params);
        let schema = &wire["requestedSchema"];
        let p = &schema["properties"];
        assert_eq!(
            p["env"]["oneOf"],
            json!([{"const": "staging", "title": "staging"},
                   {"const": "prod", "title": "prod (recommended)"}])
        );
        assert_eq!(p["env"]["default"], "staging");
        assert_eq!(p["replicas"]["type"], "number");
        assert_eq!(p["replicas"]["minimum"], 1.0);
        assert_eq!(p["replicas"]["maximum"], 9.0);
        assert_eq!(p["contact"]["format"], "email");
        assert_eq!(p["docs"]["format"], "uri");
        assert_eq!(p["suites"]["type"], "array");
        assert_eq!(p["suites"]["minItems"], 1);
        assert_eq!(p["suites"]["maxItems"], 2);
        assert_eq!(p["suites"]["items"]["anyOf"][1]["const"], "e2e");
        assert_eq!(
            p["notify"],
            json!({"type": "boolean", "title": "Notify", "default": true})
        );
        assert_eq!(schema["required"], json!(["env"]));
        assert_eq!(wire["mode"], "form");
        let message = wire["message"].as_str().unwrap();
        assert!(message.starts_with("Deploy\n\nTo where?"), "{message}");
        assert!(message.contains("- staging: safe"), "{message}");
    }

    /// `value` with every number as an `f64`, as rmcp's schema type holds them.
    fn as_floats(value: &Value) -> Value {
        match value {
            Value::Number(n) => json!(n.as_f64().unwrap()),
            Value::Array(items) => Value::Array(items.iter().map(as_floats).collect()),
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), as_floats(v))).collect())
            }
            other => other.clone(),
        }
    }

    #[test]
    fn the_wire_params_are_the_typed_request_with_whole_numbers_as_integers() {
        let form = form();
        let wire = create_params(&form).unwrap();
        let typed = serde_json::to_value(request(&form).unwrap()).unwrap();
        assert_eq!(as_floats(&wire), as_floats(&typed));
        let replicas = &wire["requestedSchema"]["properties"]["replicas"];
        assert_eq!(replicas["minimum"].to_string(), "1");
        assert_eq!(replicas["maximum"].to_string(), "9");
        // The same order of properties as the typed request puts on the wire.
        let typed_text = serde_json::to_string(&request(&form).unwrap()).unwrap();
        let keys = |text: &str| -> Vec<usize> {
            form.fields
                .iter()
                .map(|f| text.find(&format!("\"{}\":{{", f.name)).unwrap())
                .collect()
        };
        let wire_text = wire.to_string();
        assert!(
            keys(&wire_text).windows(2).all(|w| w[0] < w[1]),
            "{wire_text}"
        );
        assert!(
            keys(&typed_text).windows(2).all(|w| w[0] < w[1]),
            "{typed_text}"
        );
    }

    #[test]
    fn only_whole_numbers_an_f64_holds_exactly_become_integers() {
        assert_eq!(number(1.0).to_string(), "1");
        assert_eq!(number(-120.0).to_string(), "-120");
        assert_eq!(number(0.5).to_string(), "0.5");
        assert_eq!(
            number(9_007_199_254_740_992.0).to_string(),
            "9007199254740992"
        );
        assert!(number(1e300).is_f64());
    }

    #[test]
    fn only_the_forms_of_input_requests_get_integers() {
        let mut result = json!({
            "resultType": "input_required",
            "inputRequests": {"him": {"method": "elicitation/create", "params": {
                "_meta": {"weight": 2.0},
                "requestedSchema": {"properties": {
                    "n": {"type": "number", "minimum": 1.0, "maximum": 2.5, "default": -3.0}}}}}},
            "ttl": 60.0
        });
        assert!(integral_input_requests(&mut result));
        let n = &result["inputRequests"]["him"]["params"]["requestedSchema"]["properties"]["n"];
        assert_eq!(
            n.to_string(),
            r#"{"type":"number","minimum":1,"maximum":2.5,"default":-3}"#
        );
        assert!(result["inputRequests"]["him"]["params"]["_meta"]["weight"].is_f64());
        assert!(result["ttl"].is_f64());
        assert!(!integral_input_requests(&mut json!({"content": []})));
    }

    #[test]
    fn a_password_form_is_never_elicited() {
        let form: Form = serde_json::from_value(json!({
            "title": "Log in",
            "fields": [{"name": "pw", "type": "password", "label": "Password"}]
        }))
        .unwrap();
        let err = request(&form).unwrap_err();
        assert!(err.0.contains("`pw`"), "{err}");
    }

    #[test]
    fn an_accepted_reply_becomes_values_and_a_note() {
        let form = form();
        let reply = ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({"env": "prod", "suites": ["unit"], "note": "careful"}));
        let answer = answer_of(&form, "q1", &reply);
        assert_eq!(answer.action, Action::Submit);
        assert_eq!(answer.note.as_deref(), Some("careful"));
        assert_eq!(
            Value::Object(answer.values.unwrap()),
            json!({"env": "prod", "suites": ["unit"]})
        );
        let declined = answer_of(&form, "q1", &ElicitResult::new(ElicitationAction::Decline));
        assert_eq!(declined.action, Action::Decline);
        assert_eq!(declined.values, None);
    }

    #[test]
    fn the_note_property_steps_aside_for_a_field_called_note() {
        let form = serde_json::from_value::<AskChoiceArgs>(json!({
            "question": "q", "options": ["a", "b"], "allow_free_text": true
        }))
        .unwrap()
        .to_form()
        .unwrap();
        assert_eq!(note_property(&form).as_deref(), Some("note"));
        let mut form = form;
        form.fields[0].name = "note".into();
        assert_eq!(note_property(&form).as_deref(), Some("_note"));
    }

    fn state() -> RetryState {
        RetryState {
            id: "abc".into(),
            asked_ms: 1,
            elicited_ms: 2,
            deadline_ms: 3,
        }
    }

    #[test]
    fn a_sealed_state_opens_only_for_its_tool_and_form_and_only_once() {
        let codec = StateCodec::generate().unwrap();
        let form = form();
        let sealed = codec.seal("ask_form", &form, &state());
        assert_eq!(codec.open("ask_form", &form, &sealed).unwrap(), state());
        assert!(matches!(
            codec.open("ask_text", &form, &sealed),
            Err(StateError::Unverified(_))
        ));
        let mut other = form.clone();
        other.title = "Deploy now".into();
        assert!(matches!(
            codec.open("ask_form", &other, &sealed),
            Err(StateError::Unverified(_))
        ));
        let forged = StateCodec::generate()
            .unwrap()
            .seal("ask_form", &form, &state());
        assert!(matches!(
            codec.open("ask_form", &form, &forged),
            Err(StateError::Unverified(_))
        ));
        codec.redeem(&state(), 10).unwrap();
        assert!(matches!(
            codec.open("ask_form", &form, &sealed),
            Err(StateError::Used)
        ));
    }
}
