//! What an MCP client sees of him: six tools with schemas and annotations, bad arguments
//! refused as invalid params that name the argument, and lines on stdin that are no
//! message ignored or answered, without ending the session.

use crate::support::*;
use rmcp::model::ErrorCode;
use rmcp::service::ServiceError;
use serde_json::json;

#[tokio::test]
async fn the_six_tools_are_listed_with_output_schemas_and_annotations() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "lister", &[]).await;
    let info = agent.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("him")
    );
    let tools = agent.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ask_choice",
            "ask_confirm",
            "ask_form",
            "ask_multi_select",
            "ask_text",
            "get_answer",
            "human_input_status"
        ]
    );
    for tool in &tools {
        let schema = tool
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no outputSchema", tool.name));
        assert_eq!(schema.get("type"), Some(&json!("object")));
        let annotations = tool.annotations.as_ref().expect("annotations");
        assert_eq!(annotations.read_only_hint, Some(true), "{}", tool.name);
        assert!(
            tool.description.as_ref().is_some_and(|d| d.len() > 80),
            "{} needs a real description",
            tool.name
        );
        // A `pending` result is not a no: the agent collects the answer (issue 24.3).
        if tool.name == "ask_confirm" {
            let description = tool.description.as_deref().unwrap_or_default();
            assert!(
                description.contains("`pending`") && description.contains("get_answer"),
                "ask_confirm must say what `pending` means: {description}"
            );
        }
        // The TypeScript SDK rejects `true` schemas and unresolved references.
        let text = serde_json::to_string(schema).unwrap();
        assert!(
            !text.contains(":true}") && !text.contains("$ref"),
            "{}: {text}",
            tool.name
        );
        if tool.name.starts_with("ask_") {
            let required = schema
                .get("required")
                .and_then(|r| r.as_array())
                .expect("required list");
            assert_eq!(
                required.len(),
                RESULT_KEYS.len(),
                "{}: every result field is required",
                tool.name
            );
            assert_eq!(annotations.open_world_hint, Some(true));
        }
    }
}

async fn invalid_params(tool: &str, args: serde_json::Value) -> String {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "bad-args", &[]).await;
    match agent.call_tool(params(tool, args)).await {
        Err(ServiceError::McpError(err)) => {
            assert_eq!(err.code, ErrorCode::INVALID_PARAMS, "{err:?}");
            err.message.to_string()
        }
        other => panic!("expected invalid params, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_arguments_are_invalid_params_naming_the_argument() {
    let message = invalid_params(
        "ask_choice",
        json!({"question": "Pick", "options": ["only one"]}),
    )
    .await;
    assert!(message.contains("`options`"), "{message}");
    let message = invalid_params("ask_text", json!({"placeholder": "no question"})).await;
    assert!(message.contains("question"), "{message}");
    let message = invalid_params(
        "ask_form",
        json!({"title": "T", "fields": [{"name": "a", "type": "select", "label": "A"}]}),
    )
    .await;
    assert!(
        message.contains("fields[0] (a)") && message.contains("option"),
        "{message}"
    );
    let message = invalid_params("ask_confirm", json!({"question": "  "})).await;
    assert!(message.contains("`question`"), "{message}");
}

#[tokio::test]
async fn human_input_status_reports_the_channel_without_asking() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "status", &[]).await;
    let status = call(&agent, "human_input_status", json!({})).await;
    assert_eq!(status["channel"], "chat");
    assert_eq!(status["browsers"], json!([]));
    let _ext = FakeExtension::start(runtime.path()).await;
    let status = call(&agent, "human_input_status", json!({})).await;
    assert_eq!(status["channel"], "extension");
    assert_eq!(status["browsers"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn an_unknown_tool_is_invalid_params() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "unknown-tool", &[]).await;
    match agent.call_tool(params("ask_nothing", json!({}))).await {
        Err(ServiceError::McpError(err)) => {
            assert_eq!(err.code, ErrorCode::INVALID_PARAMS, "{err:?}");
            assert!(err.message.contains("tool not found"), "{err:?}");
        }
        other => panic!("expected invalid params, got {other:?}"),
    }
}

/// What a client reads back from `him serve` for the given input lines, until it has an
/// answer to each of `ids`; its input is then closed and it must exit cleanly.
fn serve_lines(input: &[u8], ids: &[i64]) -> Vec<serde_json::Value> {
    use std::io::{BufRead, BufReader, Write};
    let runtime = runtime_dir();
    let mut serve = spawn_raw_serve(runtime.path());
    let mut stdin = serve.stdin.take().expect("stdin");
    stdin.write_all(input).expect("write");
    stdin.flush().expect("flush");
    let mut seen = Vec::new();
    let mut lines = BufReader::new(serve.stdout.take().expect("stdout")).lines();
    while !ids.iter().all(|id| {
        seen.iter()
            .any(|line: &serde_json::Value| line["id"] == *id)
    }) {
        let line = lines.next().expect("a line before the end").expect("read");
        seen.push(serde_json::from_str(&line).expect("each line is JSON"));
    }
    drop(stdin);
    assert!(serve.wait().expect("wait").success());
    seen
}

#[test]
fn bad_lines_on_stdin_are_ignored_or_answered_and_the_session_carries_on() {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bad-lines", "version": "1"}}});
    let status = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "human_input_status", "arguments": {}}})
    };
    // The same call with a key JSON-RPC does not define, which rmcp ignores.
    let mut with_extra_key = status(7);
    with_extra_key["extra"] = json!(true);
    let input = format!(
        "{initialize}\n{}\nnot json at all\n{{\"hello\":\"there\"}}\n\n{}\r\n{}\n{with_extra_key}\n",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        status(6),
    );
    let lines = serve_lines(input.as_bytes(), &[1, 5, 6, 7]);
    // Only the JSON that is no message is answered, with Invalid Request and no id.
    let errors: Vec<_> = lines.iter().filter(|l| l.get("error").is_some()).collect();
    assert_eq!(errors.len(), 1, "{lines:?}");
    assert_eq!(errors[0]["error"]["code"], -32600);
    assert!(errors[0]["id"].is_null(), "{:?}", errors[0]);
    let result = |id: i64| {
        lines
            .iter()
            .find(|l| l["id"] == id)
            .map(|l| l["result"].clone())
            .expect("an answer")
    };
    assert_eq!(result(5), json!({}));
    assert_eq!(result(6)["structuredContent"]["channel"], "chat");
    assert_eq!(result(6), result(7));
}
