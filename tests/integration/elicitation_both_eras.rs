//! With no browser connected, a client that declared form elicitation shows the question
//! itself: `elicitation/create` on protocol ≤ 2025-11-25, an `input_required` round trip on
//! 2026-07-28. rmcp's own client plays the MCP client, with a scripted person.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support;
use crate::support::*;
use rmcp::model::{
    CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorData, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;

/// What the scripted person (or client) does with a form.
#[derive(Clone, Debug)]
enum Person {
    Accept(Value),
    /// `accept` with no content at all, as a client that showed a bare "Yes" sends it.
    AcceptNothing,
    Decline,
    Cancel,
    /// Wait, then do the other thing.
    After(Duration, Box<Person>),
    /// Never answer; only the server's cancellation ends it.
    Hang,
    /// The client cannot show the form: an error reply.
    Fail,
}

#[derive(Clone)]
struct ElicitingClient {
    person: Person,
    forms: Arc<Mutex<Vec<ElicitRequestParams>>>,
    cancelled: Arc<AtomicBool>,
    calls: Arc<AtomicUsize>,
}

impl ElicitingClient {
    fn new(person: Person) -> ElicitingClient {
        ElicitingClient {
            person,
            forms: Arc::default(),
            cancelled: Arc::default(),
            calls: Arc::default(),
        }
    }

    fn form(&self) -> Value {
        let forms = self.forms.lock().expect("lock");
        serde_json::to_value(forms.last().expect("an elicitation arrived")).expect("json")
    }

    /// The form's properties in wire order.
    fn property_order(&self) -> Vec<String> {
        let forms = self.forms.lock().expect("lock");
        match forms.last().expect("an elicitation arrived") {
            ElicitRequestParams::FormElicitationParams {
                requested_schema, ..
            } => requested_schema.property_order.clone().unwrap_or_default(),
            other => panic!("not a form elicitation: {other:?}"),
        }
    }
}

async fn act(
    person: &Person,
    cx: &RequestContext<RoleClient>,
    cancelled: &AtomicBool,
) -> ElicitResult {
    let mut person = person.clone();
    loop {
        match person {
            Person::Accept(content) => {
                return ElicitResult::new(ElicitationAction::Accept).with_content(content);
            }
            Person::AcceptNothing => return ElicitResult::new(ElicitationAction::Accept),
            Person::Decline => return ElicitResult::new(ElicitationAction::Decline),
            Person::Cancel => return ElicitResult::new(ElicitationAction::Cancel),
            Person::After(wait, then) => {
                tokio::time::sleep(wait).await;
                person = *then;
            }
            Person::Fail => unreachable!("answered in create_elicitation"),
            Person::Hang => {
                cx.ct.cancelled().await;
                cancelled.store(true, Ordering::SeqCst);
                return ElicitResult::new(ElicitationAction::Cancel);
            }
        }
    }
}

impl ClientHandler for ElicitingClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("capabilities");
        ClientConfig::new(
            capabilities,
            Implementation::new("eliciting-client", "1.0.0"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.forms.lock().expect("lock").push(request);
        if matches!(self.person, Person::Fail) {
            return Err(ErrorData::internal_error("no form support here", None));
        }
        Ok(act(&self.person, &cx, &self.cancelled).await)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Era {
    /// `initialize` at 2025-11-25: `elicitation/create`.
    Request,
    /// `server/discover` at 2026-07-28: `input_required`.
    InputRequired,
}

type Client = RunningService<RoleClient, ElicitingClient>;

async fn start(
    era: Era,
    person: Person,
    env: &[(&str, &str)],
) -> (Client, ElicitingClient, tempfile::TempDir) {
    let runtime = runtime_dir();
    let handler = ElicitingClient::new(person);
    let dir = runtime.path().to_owned();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let transport = TokioChildProcess::new(Command::new(him_bin()).configure(move |cmd| {
        cmd.arg("serve")
            .env("HIM_RUNTIME_DIR", &dir)
            .env(
                "HIM_STATE_DIR",
                support::state_dir(std::path::Path::new(&dir)),
            )
            .env("HIM_LOG", "debug")
            .env("HIM_RECONNECT_GRACE_MS", "0");
        for (k, v) in &env {
            cmd.env(k, v);
        }
    }))
    .expect("spawn him serve");
    let client = match era {
        Era::Request => handler.clone().serve(transport).await.expect("initialize"),
        Era::InputRequired => handler
            .clone()
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("discover"),
    };
    (client, handler, runtime)
}

async fn call_tool(client: &Client, tool: &str, args: Value) -> Value {
    let result = tokio::time::timeout(PATIENCE, client.call_tool(params(tool, args)))
        .await
        .expect("the call ended in time")
        .expect("tools/call");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let value = result.structured_content.expect("structured content");
    assert_complete(&value);
    value
}

const ERAS: [Era; 2] = [Era::Request, Era::InputRequired];

fn deploy_form() -> Value {
    json!({"title": "Deploy", "description": "Where to, and **how**?\u{1b}]0;pwned\u{7}", "allowNote": true,
    "fields": [
        {"name": "env", "type": "radio", "label": "Environment", "required": true,
         "options": [{"label": "staging", "description": "safe to break"},
                     {"label": "production", "recommended": true}]},
        {"name": "replicas", "type": "number", "label": "Replicas", "min": 1, "max": 9},
        {"name": "suites", "type": "multi_select", "label": "Suites",
         "options": ["unit", "e2e"], "min": 1},
        {"name": "contact", "type": "email", "label": "Contact"},
        {"name": "notify", "type": "checkbox", "label": "Notify", "defaultValue": true}
    ]})
}

#[tokio::test]
async fn an_accepted_form_is_answered_through_elicitation_in_both_eras() {
    for era in ERAS {
        let person = Person::After(
            Duration::from_millis(50),
            Box::new(Person::Accept(json!({
                "env": "production", "replicas": 3, "suites": ["unit", "e2e"],
                "contact": "ops@example.com", "notify": false, "note": "after lunch"
            }))),
        );
        let (client, handler, _runtime) = start(era, person, &[("HIM_AUTO_REJECT_MS", "0")]).await;
        let result = call_tool(&client, "ask_form", deploy_form()).await;
        assert_eq!(result["status"], "answered", "{era:?}: {result}");
        assert_eq!(result["via"], "elicitation");
        assert_eq!(result["client_elicitation"], true);
        assert_eq!(result["auto_reject_suspected"], false);
        assert_eq!(result["free_text"], "after lunch");
        assert_eq!(
            result["values"],
            json!({"env": "production", "replicas": 3, "suites": ["unit", "e2e"],
                   "contact": "ops@example.com", "notify": false})
        );
        assert_eq!(
            handler.property_order(),
            ["env", "replicas", "suites", "contact", "notify", "note"]
        );
        let form = handler.form();
        let message = form["message"].as_str().unwrap();
        assert!(message.contains("staging: safe to break"), "{message}");
        // Clients draw the message as text, most in a terminal: the Markdown goes as its plain
        // text and an escape sequence as marks, never raw.
        assert!(
            message.starts_with("Deploy\n\nWhere to, and how?⟨U+001B⟩]0;pwned⟨U+0007⟩"),
            "{message}"
        );
        assert!(
            !message.contains('\u{1b}') && !message.contains("**"),
            "{message}"
        );
        let env = &form["requestedSchema"]["properties"]["env"];
        assert_eq!(
            env["oneOf"][1],
            json!({"const": "production", "title": "production (recommended)"})
        );
        assert_eq!(
            form["requestedSchema"]["properties"]["suites"]["minItems"],
            1
        );
        assert_eq!(
            form["requestedSchema"]["properties"]["contact"]["format"],
            "email"
        );
        assert_eq!(form["requestedSchema"]["required"], json!(["env"]));
        client.cancel().await.ok();
    }
}

#[tokio::test]
async fn ask_choice_and_ask_confirm_map_to_one_of_and_boolean() {
    for era in ERAS {
        let (client, handler, _runtime) = start(
            era,
            Person::Accept(json!({"confirmed": true})),
            &[("HIM_AUTO_REJECT_MS", "0")],
        )
        .await;
        let result = call_tool(
            &client,
            "ask_confirm",
            json!({"question": "Ship it?", "default": false}),
        )
        .await;
        assert_eq!(result["confirmed"], true, "{era:?}: {result}");
        assert_eq!(result["answer"], "yes");
        let schema = &handler.form()["requestedSchema"]["properties"]["confirmed"];
        assert_eq!(schema["type"], "boolean");
        assert_eq!(schema["default"], false);
        client.cancel().await.ok();
    }
}

#[tokio::test]
async fn a_person_who_declines_or_cancels_is_reported_as_such() {
    for era in ERAS {
        for (person, status) in [(Person::Decline, "declined"), (Person::Cancel, "cancelled")] {
            let slow = Person::After(Duration::from_millis(600), Box::new(person));
            let (client, _, _runtime) = start(era, slow, &[("HIM_AUTO_REJECT_MS", "300")]).await;
            let result = call_tool(&client, "ask_text", json!({"question": "Name?"})).await;
            assert_eq!(result["status"], status, "{era:?}: {result}");
            assert_eq!(result["via"], "elicitation");
            assert_eq!(result["auto_reject_suspected"], false);
            client.cancel().await.ok();
        }
    }
}

#[tokio::test]
async fn an_instant_decline_is_suspected_to_be_the_clients_and_handed_to_chat() {
    for era in ERAS {
        for person in [Person::Decline, Person::Cancel] {
            // Any decline within a minute counts as instant: however loaded the machine, the
            // scripted person's at-once reply is well inside it.
            let (client, _, _runtime) =
                start(era, person, &[("HIM_AUTO_REJECT_MS", "60000")]).await;
            let result = call_tool(
                &client,
                "ask_choice",
                json!({"question": "Which DB?", "options": ["Postgres", "SQLite"]}),
            )
            .await;
            assert_eq!(result["status"], "needs_user_input", "{era:?}: {result}");
            assert_eq!(result["auto_reject_suspected"], true);
            assert_eq!(result["via"], "elicitation");
            let message = result["message"].as_str().unwrap();
            assert!(
                message.contains("1. Postgres") && message.contains("2. SQLite"),
                "{message}"
            );
            let next = result["next_step"].as_str().unwrap();
            assert!(next.contains("in the chat"), "{next}");
            client.cancel().await.ok();
        }
    }
}

#[tokio::test]
async fn content_that_does_not_fit_the_form_is_invalid_response() {
    for era in ERAS {
        let (client, _, _runtime) = start(
            era,
            Person::Accept(json!({"choice": "MySQL"})),
            &[("HIM_AUTO_REJECT_MS", "0")],
        )
        .await;
        let result = call_tool(
            &client,
            "ask_choice",
            json!({"question": "Which DB?", "options": ["Postgres", "SQLite"]}),
        )
        .await;
        assert_eq!(result["status"], "invalid_response", "{era:?}: {result}");
        assert_eq!(result["via"], "elicitation");
        assert_eq!(result["answer"], Value::Null);
        assert_eq!(result["values"], json!({}));
        client.cancel().await.ok();
    }
}

/// Codex 0.171's terminal cannot draw an array field: it shows a bare "Yes" and accepts
/// with no content. That answers none of the one-question tools.
#[tokio::test]
async fn an_accept_without_content_answers_no_one_question_tool_in_either_era() {
    let tools = [
        ("ask_text", json!({"question": "Name?"})),
        (
            "ask_choice",
            json!({"question": "Which DB?", "options": ["Postgres", "SQLite"]}),
        ),
        (
            "ask_multi_select",
            json!({"question": "Which suites?", "options": ["unit", "e2e"]}),
        ),
        ("ask_confirm", json!({"question": "Ship it?"})),
    ];
    for era in ERAS {
        for empty in [Person::AcceptNothing, Person::Accept(json!({}))] {
            let (client, _, _runtime) =
                start(era, empty.clone(), &[("HIM_AUTO_REJECT_MS", "0")]).await;
            for (tool, args) in &tools {
                let result = call_tool(&client, tool, args.clone()).await;
                let case = format!("{era:?}, {empty:?}, {tool}: {result}");
                assert_eq!(result["status"], "invalid_response", "{case}");
                assert_eq!(result["via"], "elicitation", "{case}");
                assert_eq!(result["values"], json!({}), "{case}");
                assert_eq!(result["selected"], json!([]), "{case}");
                assert_eq!(result["answer"], Value::Null, "{case}");
            }
            client.cancel().await.ok();
        }
    }
}

/// An explicit empty selection is an answer, said in words; ask_form's optional fields may
/// stay absent.
#[tokio::test]
async fn an_explicit_empty_selection_and_absent_optional_form_fields_are_answers() {
    for era in ERAS {
        let (client, _, _runtime) = start(
            era,
            Person::Accept(json!({"selected": []})),
            &[("HIM_AUTO_REJECT_MS", "0")],
        )
        .await;
        let result = call_tool(
            &client,
            "ask_multi_select",
            json!({"question": "Which suites?", "options": ["unit", "e2e"]}),
        )
        .await;
        assert_eq!(result["status"], "answered", "{era:?}: {result}");
        assert_eq!(result["selected"], json!([]));
        assert_eq!(result["message"], "The person chose none of the options.");
        client.cancel().await.ok();

        let (client, _, _runtime) =
            start(era, Person::AcceptNothing, &[("HIM_AUTO_REJECT_MS", "0")]).await;
        let result = call_tool(
            &client,
            "ask_form",
            json!({"title": "Anything else?", "fields": [
                {"name": "suites", "type": "multi_select", "label": "Suites", "options": ["unit", "e2e"]},
                {"name": "remark", "type": "text", "label": "Remark"}]}),
        )
        .await;
        assert_eq!(result["status"], "answered", "{era:?}: {result}");
        assert_eq!(result["values"], json!({"suites": [], "remark": null}));
        client.cancel().await.ok();
    }
}

#[tokio::test]
async fn a_form_with_a_password_never_goes_through_elicitation() {
    for era in ERAS {
        let (client, handler, _runtime) = start(era, Person::Accept(json!({})), &[]).await;
        let result = call_tool(
            &client,
            "ask_form",
            json!({"title": "Log in", "fields": [
                {"name": "user", "type": "text", "label": "User"},
                {"name": "pw", "type": "password", "label": "Password"}]}),
        )
        .await;
        assert_eq!(result["status"], "needs_user_input", "{era:?}: {result}");
        assert_eq!(result["via"], "chat");
        assert_eq!(result["client_elicitation"], true);
        assert_eq!(
            handler.calls.load(Ordering::SeqCst),
            0,
            "{era:?}: elicited a password form"
        );
        client.cancel().await.ok();
    }
}

#[tokio::test]
async fn cancelling_the_call_cancels_the_open_elicitation() {
    let (client, handler, _runtime) = start(Era::Request, Person::Hang, &[]).await;
    let client = Arc::new(client);
    let caller = client.clone();
    let call = tokio::spawn(async move {
        let _ = caller
            .call_tool(params("ask_text", json!({"question": "Still there?"})))
            .await;
    });
    let calls = handler.calls.clone();
    eventually("the elicitation", || calls.load(Ordering::SeqCst) == 1).await;
    // Dropping the call's future makes rmcp's client send notifications/cancelled.
    call.abort();
    let cancelled = handler.cancelled.clone();
    eventually("the elicitation to be cancelled", || {
        cancelled.load(Ordering::SeqCst)
    })
    .await;
}

#[tokio::test]
async fn a_timeout_cancels_the_open_elicitation() {
    let (client, handler, _runtime) = start(Era::Request, Person::Hang, &[]).await;
    let result = call_tool(
        &client,
        "ask_text",
        json!({"question": "Quick?", "timeout_ms": 1000}),
    )
    .await;
    assert_eq!(result["status"], "timeout", "{result}");
    assert_eq!(result["via"], "elicitation");
    let cancelled = handler.cancelled.clone();
    eventually("the elicitation to be cancelled", || {
        cancelled.load(Ordering::SeqCst)
    })
    .await;
    client.cancel().await.ok();
}

#[tokio::test]
async fn a_browser_that_appears_during_the_elicitation_can_answer_it() {
    let (client, handler, runtime) = start(Era::Request, Person::Hang, &[]).await;
    let client = Arc::new(client);
    let caller = client.clone();
    let call = tokio::spawn(async move {
        call_tool(&caller, "ask_text", json!({"question": "Branch name?"})).await
    });
    let calls = handler.calls.clone();
    eventually("the elicitation", || calls.load(Ordering::SeqCst) == 1).await;
    let mut ext = FakeExtension::start(runtime.path()).await;
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"answer": "main"})).await;
    let result = call.await.unwrap();
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "extension");
    assert_eq!(result["answer"], "main");
    assert_eq!(result["question_id"], ask["id"]);
    let cancelled = handler.cancelled.clone();
    eventually("the elicitation to be withdrawn", || {
        cancelled.load(Ordering::SeqCst)
    })
    .await;
}

/// The first round of a 2026-07-28 call, by hand: its sealed state.
async fn first_round(client: &Client, args: Value) -> String {
    match client
        .call_tool_once(params("ask_text", args))
        .await
        .expect("first round")
    {
        CallToolResponse::InputRequired(required) => {
            let requests = required.input_requests.expect("input requests");
            assert!(requests.contains_key("him"), "{requests:?}");
            required.request_state.expect("a request state")
        }
        other => panic!("expected input_required, got {other:?}"),
    }
}

fn retry(args: Value, state: &str, reply: Value) -> rmcp::model::CallToolRequestParams {
    let mut p = params("ask_text", args);
    p.request_state = Some(state.to_owned());
    p.input_responses = Some([("him".to_owned(), reply)].into_iter().collect());
    p
}

fn refused(response: Result<CallToolResponse, rmcp::ServiceError>) -> String {
    match response {
        Err(rmcp::ServiceError::McpError(err)) => {
            assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{err:?}");
            err.message.into_owned()
        }
        other => panic!("expected an invalid-params error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_request_state_answers_its_own_question_once_and_cannot_be_forged() {
    let (client, _, _runtime) = start(
        Era::InputRequired,
        Person::Decline,
        &[("HIM_AUTO_REJECT_MS", "0")],
    )
    .await;
    let args = json!({"question": "Name?"});
    let accept = json!({"action": "accept", "content": {"answer": "Ada"}});

    let state = first_round(&client, args.clone()).await;
    // Tampered: one character of the seal changed.
    let mut forged = state.clone().into_bytes();
    let last = forged.len() - 1;
    forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    let message = refused(
        client
            .call_tool_once(retry(args.clone(), &forged, accept.clone()))
            .await,
    );
    assert!(message.contains("requestState"), "{message}");
    // Sent back with other arguments (another question).
    refused(
        client
            .call_tool_once(retry(json!({"question": "Age?"}), &state, accept.clone()))
            .await,
    );
    // Made up from scratch.
    refused(
        client
            .call_tool_once(retry(args.clone(), "rs1.e30.AAAA", accept.clone()))
            .await,
    );

    // The genuine state answers once…
    let answered = client
        .call_tool_once(retry(args.clone(), &state, accept.clone()))
        .await
        .expect("retry");
    let CallToolResponse::Complete(result) = answered else {
        panic!("expected a result, got {answered:?}");
    };
    let result = result.structured_content.unwrap();
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["answer"], "Ada");
    // …and a replay is refused.
    let message = refused(client.call_tool_once(retry(args, &state, accept)).await);
    assert!(message.contains("already answered"), "{message}");
    client.cancel().await.ok();
}

#[tokio::test]
async fn a_reply_after_the_deadline_is_a_timeout() {
    let (client, _, _runtime) = start(
        Era::InputRequired,
        Person::Decline,
        &[("HIM_AUTO_REJECT_MS", "0")],
    )
    .await;
    let args = json!({"question": "Name?", "timeout_ms": 1000});
    let state = first_round(&client, args.clone()).await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let response = client
        .call_tool_once(retry(
            args,
            &state,
            json!({"action": "accept", "content": {"answer": "late"}}),
        ))
        .await
        .expect("retry");
    let CallToolResponse::Complete(result) = response else {
        panic!("expected a result, got {response:?}");
    };
    let result = result.structured_content.unwrap();
    assert_eq!(result["status"], "timeout", "{result}");
    assert_eq!(result["answer"], Value::Null);
    client.cancel().await.ok();
}

#[tokio::test]
async fn status_names_elicitation_and_its_era() {
    for (era, how) in [
        (Era::Request, "elicitation/create"),
        (Era::InputRequired, "input_required"),
    ] {
        let (client, _, _runtime) = start(era, Person::Decline, &[]).await;
        let status = call_tool_status(&client).await;
        assert_eq!(status["channel"], "elicitation", "{status}");
        assert_eq!(status["elicitation"], how, "{status}");
        assert_eq!(status["client_elicitation"], true);
        assert!(
            status["reason"].as_str().unwrap().contains("password"),
            "{status}"
        );
        client.cancel().await.ok();
    }
}

async fn call_tool_status(client: &Client) -> Value {
    let result = client
        .call_tool(params("human_input_status", json!({})))
        .await
        .expect("status");
    result.structured_content.expect("structured")
}

/// A client whose form fails hands the question to the loopback form; the question stays
/// open to the browsers meanwhile, so one that appears can still answer it.
#[tokio::test]
async fn after_a_failed_elicitation_the_question_stays_open_beside_the_loopback_form() {
    let (client, handler, runtime) = start(
        Era::Request,
        Person::Fail,
        &[("HIM_FALLBACK", "http"), ("BROWSER", "/bin/true")],
    )
    .await;
    let client = Arc::new(client);
    let caller = client.clone();
    let call = tokio::spawn(async move {
        call_tool(&caller, "ask_text", json!({"question": "Branch name?"})).await
    });
    let calls = handler.calls.clone();
    eventually("the elicitation", || calls.load(Ordering::SeqCst) == 1).await;
    // The browser that appears now gets the question and its answer is the result: the
    // question did not end with the failed elicitation (no wait for it not to).
    let mut ext = FakeExtension::start(runtime.path()).await;
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"answer": "main"})).await;
    let result = call.await.unwrap();
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "extension");
    assert_eq!(result["answer"], "main");
}
