//! Each ask tool, called by rmcp's client on `him serve`, reaches the extension through the
//! real native host and comes back as a validated, structured result.

use crate::support::*;
use serde_json::{Value, json};

/// Calls `tool` in the background, lets the fake extension answer with `reply`, and
/// returns the result and the `ask` the extension saw.
async fn round_trip(
    tool: &str,
    args: Value,
    reply: impl FnOnce(&Value) -> Value,
) -> (Value, Value) {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "round-trip-agent", &[]).await;
    let tool = tool.to_owned();
    let call = tokio::spawn(async move {
        let result = call(&agent, &tool, args).await;
        agent.cancel().await.ok();
        result
    });
    let ask = ext.take_ask().await;
    ext.answer(&ask, reply(&ask)).await;
    let result = call.await.expect("call task");
    assert_complete(&result);
    assert_eq!(result["question_id"], ask["id"]);
    (result, ask)
}

#[tokio::test]
async fn ask_text_returns_the_typed_text() {
    let (result, ask) = round_trip(
        "ask_text",
        json!({"question": "Name the branch", "placeholder": "feature/…", "default": "main"}),
        |_| json!({"action": "submit", "values": {"answer": "feature/login"}}),
    )
    .await;
    assert_eq!(result["status"], "answered");
    assert_eq!(result["via"], "extension");
    assert_eq!(result["answer"], "feature/login");
    assert_eq!(result["values"], json!({"answer": "feature/login"}));
    let field = &ask["form"]["fields"][0];
    assert_eq!(field["type"], "text");
    assert_eq!(field["placeholder"], "feature/…");
    assert_eq!(field["default"], "main");
    assert_eq!(ask["agent"]["name"], "round-trip-agent");
    assert!(ask["project"].is_string(), "ask carries the project: {ask}");
}

#[tokio::test]
async fn ask_choice_returns_the_chosen_label_and_the_note() {
    let (result, ask) = round_trip(
        "ask_choice",
        json!({"question": "Which database?", "allow_free_text": true,
               "options": ["Postgres", {"label": "SQLite", "description": "One file", "recommended": true}]}),
        |_| json!({"action": "submit", "values": {"choice": "SQLite"}, "note": "for now"}),
    )
    .await;
    assert_eq!(result["status"], "answered");
    assert_eq!(result["answer"], "SQLite");
    assert_eq!(result["selected"], json!(["SQLite"]));
    assert_eq!(result["free_text"], "for now");
    let options = &ask["form"]["fields"][0]["options"];
    assert_eq!(
        options[1],
        json!({"value": "SQLite", "label": "SQLite", "description": "One file", "recommended": true})
    );
    assert_eq!(ask["form"]["allow_note"], true);
}

#[tokio::test]
async fn ask_choice_with_only_a_note_is_a_discussion() {
    let (result, _) = round_trip(
        "ask_choice",
        json!({"question": "Which?", "options": ["a", "b"], "allow_free_text": true}),
        |_| json!({"action": "submit", "values": {}, "note": "Neither, let's talk"}),
    )
    .await;
    assert_eq!(result["status"], "discussion");
    assert_eq!(result["free_text"], "Neither, let's talk");
    assert_eq!(result["answer"], Value::Null);
}

#[tokio::test]
async fn ask_multi_select_returns_the_selection() {
    let (result, ask) = round_trip(
        "ask_multi_select",
        json!({"question": "Which suites?", "options": ["unit", "e2e", "bench"], "min": 1, "max": 2}),
        |_| json!({"action": "submit", "values": {"selected": ["unit", "e2e"]}}),
    )
    .await;
    assert_eq!(result["status"], "answered");
    assert_eq!(result["selected"], json!(["unit", "e2e"]));
    assert_eq!(ask["form"]["fields"][0]["type"], "multi_select");
    assert_eq!(ask["form"]["fields"][0]["max"], 2.0);
}

#[tokio::test]
async fn ask_multi_select_with_nothing_chosen_says_the_person_chose_none() {
    let (result, _) = round_trip(
        "ask_multi_select",
        json!({"question": "Which suites should run?", "options": ["unit", "e2e"]}),
        |_| json!({"action": "submit", "values": {"selected": []}}),
    )
    .await;
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["selected"], json!([]));
    assert_eq!(result["message"], "The person chose none of the options.");
}

#[tokio::test]
async fn ask_multi_select_submitted_without_its_selection_is_invalid_response() {
    let (result, _) = round_trip(
        "ask_multi_select",
        json!({"question": "Which suites should run?", "options": ["unit", "e2e"]}),
        |_| json!({"action": "submit", "values": {}}),
    )
    .await;
    assert_eq!(result["status"], "invalid_response", "{result}");
    assert!(
        result["message"]
            .as_str()
            .unwrap()
            .contains(him::form::NOT_ANSWERED),
        "{result}"
    );
}

#[tokio::test]
async fn ask_confirm_returns_a_boolean() {
    let (result, _) = round_trip(
        "ask_confirm",
        json!({"question": "Delete 3 files?", "default": false}),
        |_| json!({"action": "submit", "values": {"confirmed": true}}),
    )
    .await;
    assert_eq!(result["status"], "answered");
    assert_eq!(result["confirmed"], true);
    assert_eq!(result["answer"], "yes");
}

#[tokio::test]
async fn ask_form_returns_every_field_by_name() {
    let (result, ask) = round_trip(
        "ask_form",
        json!({"title": "Deploy", "submitLabel": "Ship it",
               "fields": [
                   {"name": "env", "type": "select", "label": "Environment", "required": true,
                    "options": ["staging", "production"]},
                   {"name": "replicas", "type": "number", "label": "Replicas", "min": 1, "max": 9},
                   {"name": "token", "type": "password", "label": "Token"},
                   {"name": "notify", "type": "checkbox", "label": "Notify"}
               ]}),
        |_| json!({"action": "submit", "values": {"env": "staging", "replicas": 3, "token": "s3cret"}}),
    )
    .await;
    assert_eq!(result["status"], "answered");
    assert_eq!(
        result["values"],
        json!({"env": "staging", "replicas": 3, "token": "s3cret", "notify": null})
    );
    assert!(!result["message"].as_str().unwrap().contains("s3cret"));
    assert_eq!(ask["form"]["submit_label"], "Ship it");
}

#[tokio::test]
async fn a_decline_is_a_result_not_an_error() {
    let (result, _) = round_trip(
        "ask_confirm",
        json!({"question": "Proceed?"}),
        |_| json!({"action": "decline", "note": "not today"}),
    )
    .await;
    assert_eq!(result["status"], "declined");
    assert_eq!(result["free_text"], "not today");
    assert_eq!(result["confirmed"], Value::Null);
}

#[tokio::test]
async fn a_dismissed_question_is_cancelled() {
    let (result, _) = round_trip(
        "ask_text",
        json!({"question": "Anything?"}),
        |_| json!({"action": "cancel"}),
    )
    .await;
    assert_eq!(result["status"], "cancelled");
}

#[tokio::test]
async fn an_answer_that_does_not_fit_its_form_is_invalid_response() {
    let (result, _) = round_trip(
        "ask_choice",
        json!({"question": "Pick", "options": ["a", "b"]}),
        |_| json!({"action": "submit", "values": {"choice": "c"}}),
    )
    .await;
    assert_eq!(result["status"], "invalid_response");
    assert_eq!(result["answer"], Value::Null);
    assert_eq!(result["values"], json!({}));
    assert!(
        result["message"].as_str().unwrap().contains("choice"),
        "{result}"
    );
}

#[tokio::test]
async fn a_timeout_withdraws_the_question() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "impatient", &[]).await;
    let call = tokio::spawn(async move {
        call(
            &agent,
            "ask_text",
            json!({"question": "Quick?", "timeout_ms": 1000}),
        )
        .await
    });
    let ask = ext.take_ask().await;
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"]);
    assert_eq!(withdraw["reason"], "timeout");
    let result = call.await.unwrap();
    assert_eq!(result["status"], "timeout");
    assert!(
        result["next_step"]
            .as_str()
            .unwrap()
            .contains("No answer is not consent")
    );
    // A late answer is refused by the host, not relayed.
    ext.submit(&ask["id"], json!({"answer": "late"})).await;
    let error = ext.recv_type("error").await;
    assert_eq!(error["id"], ask["id"]);
}

#[tokio::test]
async fn a_cancelled_tool_call_withdraws_the_question() {
    use rmcp::model::{ClientRequest, Request};
    use rmcp::service::PeerRequestOptions;
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "canceller", &[]).await;
    let request = ClientRequest::CallToolRequest(Request::new(params(
        "ask_text",
        json!({"question": "Wait?"}),
    )));
    let handle = agent
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let ask = ext.take_ask().await;
    handle
        .cancel(Some("user pressed stop".into()))
        .await
        .unwrap();
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"]);
    assert_eq!(withdraw["reason"], "cancelled");
}

#[tokio::test]
async fn progress_heartbeats_arrive_while_the_person_thinks() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let (agent, client) =
        start_agent(runtime.path(), "heartbeat", &[("HIM_HEARTBEAT_MS", "100")]).await;
    let call =
        tokio::spawn(async move { call(&agent, "ask_confirm", json!({"question": "Ok?"})).await });
    let ask = ext.take_ask().await;
    let progress = client.progress.clone();
    eventually("three progress notifications", || {
        progress.load(std::sync::atomic::Ordering::SeqCst) >= 3
    })
    .await;
    ext.submit(&ask["id"], json!({"confirmed": true})).await;
    assert_eq!(call.await.unwrap()["status"], "answered");
}

#[tokio::test]
async fn a_client_that_goes_away_has_its_questions_withdrawn() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "leaver", &[]).await;
    let peer = agent.peer().clone();
    let pending = tokio::spawn(async move {
        peer.call_tool(params("ask_text", json!({"question": "Still there?"})))
            .await
    });
    let ask = ext.take_ask().await;
    agent.cancel().await.unwrap();
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"]);
    assert!(
        pending.await.unwrap().is_err(),
        "the call cannot complete once the client is gone"
    );
    // The host survives the agent and still serves the next one.
    let (agent, _) = start_agent(runtime.path(), "next", &[]).await;
    let call =
        tokio::spawn(async move { call(&agent, "ask_text", json!({"question": "Hello?"})).await });
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"answer": "hi"})).await;
    assert_eq!(call.await.unwrap()["answer"], "hi");
}

#[tokio::test]
async fn a_client_that_closes_its_input_has_its_questions_withdrawn_and_its_calls_ended() {
    use std::io::{BufRead, BufReader, Write};
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    // A client that writes its JSON-RPC lines itself, so it can close its end of stdin
    // while it goes on reading (as a client that is shutting down does).
    let mut serve = spawn_raw_serve(runtime.path());
    let mut stdin = serve.stdin.take().expect("stdin");
    let stdout = serve.stdout.take().expect("stdout");
    for line in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "closer", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "ask_text", "arguments": {"question": "Still there?"}}}),
    ] {
        writeln!(stdin, "{line}").expect("write");
    }
    stdin.flush().expect("flush");
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map(|line| serde_json::from_str::<Value>(&line.expect("line")).expect("json"))
            .collect::<Vec<Value>>()
    });
    let ask = ext.take_ask().await;
    drop(stdin);
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"]);
    // The call ends with a result the client can still read, rather than being dropped
    // when rmcp gives up waiting for it.
    let lines = tokio::task::spawn_blocking(move || reader.join().expect("reader"))
        .await
        .expect("join");
    let result = lines
        .iter()
        .find(|line| line["id"] == 2)
        .unwrap_or_else(|| panic!("no answer to the call in {lines:?}"));
    assert_eq!(result["result"]["structuredContent"]["status"], "cancelled");
    // The text copy says exactly what the structured content says.
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .expect("a text copy");
    let copy: Value = serde_json::from_str(text).expect("the text copy is JSON");
    assert_eq!(copy, result["result"]["structuredContent"]);
    assert!(serve.wait().expect("wait").success());
}

#[tokio::test]
async fn an_answer_that_does_not_fit_is_refused_back_to_the_browser_and_the_call_waits_for_a_corrected_one()
 {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "strict-agent", &[]).await;
    let call = tokio::spawn(async move {
        call(
            &agent,
            "ask_choice",
            json!({"question": "Which?", "options": ["a", "b"], "allow_free_text": true}),
        )
        .await
    });
    let ask = ext.take_ask().await;
    // Neither an option nor a note: the agent side refuses it, and says why and where.
    ext.submit(&ask["id"], json!({})).await;
    let refused = ext.recv_type("refused").await;
    assert_eq!(refused["id"], ask["id"]);
    assert_eq!(refused["field"], "choice");
    assert_eq!(refused["message"], him::form::NOTHING_GIVEN);
    assert!(!call.is_finished(), "the call still waits for the person");
    // The corrected answer, under the same id, completes the call. Its verdict is the next
    // frame: a withdraw, had the agent sent one after its `refused`, would have come first.
    ext.submit(&ask["id"], json!({"choice": "b"})).await;
    let accepted = ext.recv().await;
    assert_eq!(
        (&accepted["type"], &accepted["id"]),
        (&json!("accepted"), &ask["id"]),
        "no withdraw: the question stays open: {accepted}"
    );
    let result = call.await.expect("call task");
    assert_eq!(result["status"], "answered");
    assert_eq!(result["answer"], "b");
    assert_eq!(result["question_id"], ask["id"]);
}

#[tokio::test]
async fn an_answer_that_does_not_fit_ends_the_call_as_invalid_where_the_browser_cannot_correct_it()
{
    let runtime = runtime_dir();
    // An extension from before verdicts: it says nothing of them in `ready`.
    let mut ext = FakeExtension::start(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "strict-agent", &[]).await;
    let call = tokio::spawn(async move {
        call(
            &agent,
            "ask_choice",
            json!({"question": "Which?", "options": ["a", "b"], "allow_free_text": true}),
        )
        .await
    });
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({})).await;
    let result = call.await.expect("call task");
    assert_eq!(result["status"], "invalid_response");
    // Told nothing it does not know: the host forgets the question with a withdraw.
    let withdraw = ext.recv().await;
    assert_eq!(withdraw["type"], "withdraw", "{withdraw}");
    assert_eq!(withdraw["id"], ask["id"]);
}
