//! Tool arguments by name (issue 12, item 6): every ask tool takes `timeout_ms`, and
//! `ask_form` also its camelCase `timeoutMs` (not both at once); an argument a tool does
//! not define, at the top or inside `ask_form`'s fields and options, is a JSON-RPC
//! invalid-params error that names it (and what was probably meant), never dropped.

use std::time::{Duration, Instant};

use crate::support::*;
use rmcp::model::{ErrorCode, ErrorData};
use rmcp::service::ServiceError;
use serde_json::{Value, json};

async fn refused(agent: &Agent, tool: &str, args: Value) -> ErrorData {
    match agent.call_tool(params(tool, args.clone())).await {
        Err(ServiceError::McpError(err)) => {
            assert_eq!(
                err.code,
                ErrorCode::INVALID_PARAMS,
                "{tool} {args}: {err:?}"
            );
            err
        }
        other => panic!("{tool} {args}: expected invalid params, got {other:?}"),
    }
}

/// The smallest valid arguments of each tool.
fn minimal(tool: &str) -> Value {
    match tool {
        "ask_text" | "ask_confirm" => json!({"question": "Q?"}),
        "ask_choice" => json!({"question": "Q?", "options": ["a", "b"]}),
        "ask_multi_select" => json!({"question": "Q?", "options": ["a", "b"]}),
        "ask_form" => {
            json!({"title": "T", "fields": [{"name": "a", "type": "text", "label": "A"}]})
        }
        "human_input_status" => json!({}),
        "get_answer" => json!({"question_id": "0123456789abcdef0123456789abcdef"}),
        other => panic!("no tool {other}"),
    }
}

#[tokio::test]
async fn an_unknown_argument_of_any_tool_is_invalid_params_naming_it() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "unknown-args", &[]).await;
    for tool in TOOLS {
        let mut args = minimal(tool);
        args["colour"] = json!("blue");
        let err = refused(&agent, tool, args).await;
        assert!(
            err.message.contains("`colour`") && err.message.contains(tool),
            "{tool}: {err:?}"
        );
        assert_eq!(
            err.data.as_ref().map(|d| &d["argument"]),
            Some(&json!("colour"))
        );
    }
}

#[tokio::test]
async fn a_near_miss_is_refused_with_the_name_it_probably_meant() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "near-miss", &[]).await;
    let cases = [
        (
            "ask_text",
            json!({"questoin": "Q?"}),
            "questoin",
            "question",
        ),
        (
            "ask_text",
            json!({"question": "Q?", "timeout": 5000}),
            "timeout",
            "timeout_ms",
        ),
        (
            "ask_text",
            json!({"question": "Q?", "timeoutMs": 5000}),
            "timeoutMs",
            "timeout_ms",
        ),
        (
            "ask_choice",
            json!({"question": "Q?", "options": ["a", "b"], "allowFreeText": true}),
            "allowFreeText",
            "allow_free_text",
        ),
        (
            "ask_form",
            json!({"title": "T", "submit_label": "Go", "fields": [{"name": "a", "type": "text", "label": "A"}]}),
            "submit_label",
            "submitLabel",
        ),
    ];
    for (tool, args, unknown, meant) in cases {
        let err = refused(&agent, tool, args).await;
        assert!(
            err.message
                .contains(&format!("unknown argument `{unknown}`"))
                && err.message.contains(&format!("did you mean `{meant}`?")),
            "{tool}: {err:?}"
        );
    }
}

#[tokio::test]
async fn unknown_keys_inside_ask_form_fields_and_options_are_refused_by_path() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "field-keys", &[]).await;
    let err = refused(
        &agent,
        "ask_form",
        json!({"title": "T", "fields": [
            {"name": "a", "type": "text", "label": "A"},
            {"name": "b", "type": "text", "label": "B", "requried": true}]}),
    )
    .await;
    assert!(
        err.message
            .contains("unknown key `requried` in `fields[1]`")
            && err.message.contains("did you mean `required`?"),
        "{err:?}"
    );
    assert_eq!(
        err.data.as_ref().map(|d| &d["argument"]),
        Some(&json!("fields[1].requried"))
    );
    let err = refused(
        &agent,
        "ask_form",
        json!({"title": "T", "fields": [{"name": "env", "type": "select", "label": "Env",
            "options": ["dev", {"vaule": "prod", "label": "Production"}]}]}),
    )
    .await;
    assert!(
        err.message.contains("`fields[0].options[1]`") && err.message.contains("`value`"),
        "{err:?}"
    );
    // The seed's own spelling of a field's default is a key of its own, not both at once.
    let err = refused(
        &agent,
        "ask_form",
        json!({"title": "T", "fields": [{"name": "a", "type": "text", "label": "A",
            "default": "x", "defaultValue": "y"}]}),
    )
    .await;
    assert!(
        err.message.contains("`default` or `defaultValue`"),
        "{err:?}"
    );
}

#[tokio::test]
async fn ask_form_refuses_both_spellings_of_its_timeout_at_once() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "both-timeouts", &[]).await;
    let mut args = minimal("ask_form");
    args["timeout_ms"] = json!(1000);
    args["timeoutMs"] = json!(2000);
    let err = refused(&agent, "ask_form", args).await;
    assert!(
        err.message.contains("`timeout_ms`") && err.message.contains("`timeoutMs`"),
        "{err:?}"
    );
}

/// Each spelling a tool takes is the wait it gets: with a panel connected that never
/// answers, a 1 s timeout (the shortest there is) ends the call with `timeout` in about a
/// second, not the default five minutes.
#[tokio::test]
async fn every_ask_tool_waits_as_long_as_its_timeout_argument_says() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "timeouts", &[]).await;
    let agent = std::sync::Arc::new(agent);
    let mut calls = Vec::new();
    let spellings = [
        ("ask_text", "timeout_ms"),
        ("ask_choice", "timeout_ms"),
        ("ask_multi_select", "timeout_ms"),
        ("ask_confirm", "timeout_ms"),
        ("ask_form", "timeout_ms"),
        ("ask_form", "timeoutMs"),
    ];
    let started = Instant::now();
    for (tool, key) in spellings {
        let mut args = minimal(tool);
        args[key] = json!(1000);
        let agent = agent.clone();
        calls.push(tokio::spawn(async move {
            let result = tokio::time::timeout(PATIENCE, call(&agent, tool, args))
                .await
                .unwrap_or_else(|_| panic!("{tool} with {key} waited past {PATIENCE:?}"));
            (tool, key, result)
        }));
    }
    for _ in &spellings {
        ext.take_ask().await;
    }
    for call in calls {
        let (tool, key, result) = call.await.expect("call task");
        assert_eq!(result["status"], "timeout", "{tool} with {key}: {result}");
        assert_eq!(result["via"], "extension", "{tool} with {key}: {result}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
