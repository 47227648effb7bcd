//! `him serve --permission-tool` offers `approve`, Claude Code's permission-prompt tool:
//! rmcp's client calls it as Claude Code does, the fake extension answers through the real
//! host, and the result is exactly one text block of the JSON Claude Code reads.

use std::process::Stdio;

use crate::support;
use crate::support::*;
use rmcp::ServiceExt;
use rmcp::model::CallToolResult;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use tokio::process::Command;

/// rmcp's client running `him serve <extra args>`, as `start_agent` does for plain serve.
async fn start_serve(runtime: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Agent {
    let handler = TestClient {
        name: "claude-code".into(),
        ..TestClient::default()
    };
    let runtime = runtime.to_owned();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let command = Command::new(him_bin()).configure(move |cmd| {
        cmd.arg("serve")
            .args(&args)
            .env("HIM_RUNTIME_DIR", &runtime)
            .env(
                "HIM_STATE_DIR",
                support::state_dir(std::path::Path::new(&runtime)),
            )
            .env("HIM_LOG", "info")
            .envs(env.iter().map(|(k, v)| (k, v)));
    });
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn him serve");
    handler
        .serve(transport)
        .await
        .expect("initialize him serve")
}

/// The decision JSON of a permission-tool result, checking it is one text block only.
fn decision_of(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert!(
        result.structured_content.is_none(),
        "Claude Code refuses a result with structuredContent: {result:?}"
    );
    assert_eq!(result.content.len(), 1, "exactly one block: {result:?}");
    let text = result.content[0].as_text().expect("a text block");
    serde_json::from_str(&text.text).expect("the text is JSON")
}

fn bash_call() -> Value {
    json!({"tool_name": "Bash",
           "input": {"command": "terraform apply -auto-approve", "description": "Apply the plan"},
           "tool_use_id": "toolu_01abc"})
}

/// Calls `approve` with `args` while the fake extension answers the ask with `reply`;
/// returns the decision and the ask the extension saw.
async fn decide(args: Value, reply: impl FnOnce(&Value) -> Value) -> (Value, Value) {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let agent = start_serve(runtime.path(), &["--permission-tool"], &[]).await;
    let call = tokio::spawn(async move {
        let result = agent
            .call_tool(params("approve", args))
            .await
            .expect("tools/call");
        agent.cancel().await.ok();
        result
    });
    let ask = ext.take_ask().await;
    ext.answer(&ask, reply(&ask)).await;
    let result = call.await.expect("call task");
    (decision_of(&result), ask)
}

#[tokio::test]
async fn allow_returns_the_input_unchanged_as_updated_input() {
    let (decision, ask) = decide(
        bash_call(),
        |_| json!({"action": "submit", "values": {"decision": "allow"}}),
    )
    .await;
    assert_eq!(
        decision,
        json!({"behavior": "allow", "updatedInput": bash_call()["input"]})
    );
    // The panel got the tool and its input verbatim, bound to that one call.
    let permission = &ask["form"]["permission"];
    assert_eq!(permission["tool_name"], "Bash");
    assert_eq!(permission["input"], bash_call()["input"]);
    assert_eq!(permission["tool_use_id"], "toolu_01abc");
    assert_eq!(ask["agent"]["name"], "claude-code");
    let field = &ask["form"]["fields"][0];
    assert_eq!(field["name"], "decision");
    assert!(field.get("default").is_none(), "no default: {field}");
}

#[tokio::test]
async fn deny_carries_the_persons_note_to_the_agent() {
    let (decision, _) = decide(
        bash_call(),
        |_| json!({"action": "submit", "values": {"decision": "deny"}, "note": "run plan first"}),
    )
    .await;
    assert_eq!(decision["behavior"], "deny");
    let message = decision["message"].as_str().unwrap();
    assert!(
        message.contains("run plan first") && message.contains("Bash"),
        "{message}"
    );
    assert!(decision.get("updatedInput").is_none());
}

#[tokio::test]
async fn declining_the_card_denies() {
    let (decision, _) = decide(bash_call(), |_| json!({"action": "decline", "note": "no"})).await;
    assert_eq!(decision["behavior"], "deny");
}

#[tokio::test]
async fn an_answer_the_card_did_not_offer_denies() {
    let (decision, _) = decide(
        bash_call(),
        |_| json!({"action": "submit", "values": {"decision": "yes please"}}),
    )
    .await;
    assert_eq!(decision["behavior"], "deny");
    assert!(
        decision["message"]
            .as_str()
            .unwrap()
            .contains("did not fit")
    );
}

#[tokio::test]
async fn input_fields_it_does_not_know_are_tolerated() {
    let mut args = bash_call();
    args["permission_suggestions"] = json!([{"type": "addRules"}]);
    args["a_future_field"] = json!(1);
    let (decision, _) = decide(
        args,
        |_| json!({"action": "submit", "values": {"decision": "allow"}}),
    )
    .await;
    assert_eq!(decision["behavior"], "allow");
}

/// A Write of a file of `len` characters, as Claude Code asks for it. In JSON each line of
/// 11 characters takes 12 bytes (its newline is written `\n`).
fn write_call(len: usize) -> Value {
    let content: String = "let x = 1;\n".chars().cycle().take(len).collect();
    json!({"tool_name": "Write",
           "input": {"file_path": "/home/me/shop-api/src/generated.rs", "content": content},
           "tool_use_id": "toolu_write"})
}

/// The form's fallback text: a Markdown text the panel renders (§4), saying what it cut.
fn assert_cut_fallback(ask: &Value) {
    let description = ask["form"]["description"].as_str().expect("a description");
    assert!(
        description.chars().count() <= him::form::MAX_MARKDOWN_CHARS,
        "{} characters",
        description.chars().count()
    );
    assert!(
        description.contains("more characters of the input are not shown here"),
        "{description}"
    );
}

#[tokio::test]
async fn a_write_of_a_17_kb_file_reaches_the_card_and_the_person_allows_it() {
    let args = write_call(17 * 1024);
    let (decision, ask) = decide(
        args.clone(),
        |_| json!({"action": "submit", "values": {"decision": "allow"}}),
    )
    .await;
    assert_eq!(
        decision,
        json!({"behavior": "allow", "updatedInput": args["input"]})
    );
    // The card is drawn from the whole input; only the fallback text is cut.
    assert_eq!(ask["form"]["permission"]["input"], args["input"]);
    assert_cut_fallback(&ask);
}

#[tokio::test]
async fn an_edit_of_two_9_kb_strings_reaches_the_card_and_the_person_denies_it() {
    let old: String = "let total = a + b;\n"
        .chars()
        .cycle()
        .take(9 * 1024)
        .collect();
    let new: String = "let total = a.checked_add(b)?;\n"
        .chars()
        .cycle()
        .take(9 * 1024)
        .collect();
    let args = json!({"tool_name": "Edit",
                      "input": {"file_path": "/home/me/shop-api/src/sum.rs",
                                "old_string": old, "new_string": new},
                      "tool_use_id": "toolu_edit"});
    let (decision, ask) = decide(
        args.clone(),
        |_| json!({"action": "submit", "values": {"decision": "deny"}, "note": "keep the old sum"}),
    )
    .await;
    assert_eq!(decision["behavior"], "deny", "{decision}");
    // The person's own note: they saw the card and decided.
    assert!(
        decision["message"]
            .as_str()
            .unwrap()
            .contains("keep the old sum"),
        "{decision}"
    );
    assert_eq!(ask["form"]["permission"]["input"], args["input"]);
    assert_cut_fallback(&ask);
}

#[tokio::test]
async fn an_input_just_under_the_frame_cap_still_gets_a_card() {
    // 900,000 characters, 981,819 bytes as JSON: with the cut fallback text (about 17 KB)
    // and room for the labels, still under the browser's 1 MiB frame.
    let args = write_call(900_000);
    let (decision, ask) = decide(
        args.clone(),
        |_| json!({"action": "submit", "values": {"decision": "allow"}}),
    )
    .await;
    assert_eq!(decision["behavior"], "allow", "{decision}");
    assert_eq!(ask["form"]["permission"]["input"], args["input"]);
}

#[tokio::test]
async fn an_input_over_the_frame_cap_is_denied_naming_its_size_and_the_limit() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let agent = start_serve(runtime.path(), &["--permission-tool"], &[]).await;
    let result = agent
        .call_tool(params("approve", write_call(1_100_000)))
        .await
        .expect("tools/call");
    let decision = decision_of(&result);
    assert_eq!(decision["behavior"], "deny", "{decision}");
    let message = decision["message"].as_str().unwrap();
    let size: usize = message
        .split_once("would be ")
        .and_then(|(_, rest)| rest.split_once(" bytes"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no size in {message}"));
    assert!(size > 1_100_000, "{message}");
    assert!(
        message.contains(&format!(
            "a browser takes at most {}",
            him::agent::prepare::MAX_ASK_BYTES
        )),
        "{message}"
    );
    // It never reached the browser: the next card the browser gets is the next call's.
    let call = tokio::spawn(async move {
        agent
            .call_tool(params("approve", bash_call()))
            .await
            .expect("tools/call")
    });
    let ask = ext.take_ask().await;
    assert_eq!(ask["form"]["permission"]["tool_name"], "Bash", "{ask}");
    ext.answer(&ask, json!({"action": "decline"})).await;
    assert_eq!(decision_of(&call.await.unwrap())["behavior"], "deny");
}

#[tokio::test]
async fn with_no_browser_connected_it_denies_at_once_and_says_why() {
    let runtime = runtime_dir();
    let agent = start_serve(runtime.path(), &["--permission-tool"], &[]).await;
    let started = std::time::Instant::now();
    let result = agent
        .call_tool(params("approve", bash_call()))
        .await
        .expect("tools/call");
    let decision = decision_of(&result);
    assert_eq!(decision["behavior"], "deny");
    assert!(
        decision["message"].as_str().unwrap().contains("no browser"),
        "{decision}"
    );
    assert!(started.elapsed() < PATIENCE / 3);
}

#[tokio::test]
async fn with_no_answer_in_time_it_denies() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let agent = start_serve(
        runtime.path(),
        &["--permission-tool"],
        &[("HIM_TIMEOUT_MS", "1000")],
    )
    .await;
    let call = tokio::spawn(async move {
        agent
            .call_tool(params("approve", bash_call()))
            .await
            .expect("tools/call")
    });
    ext.take_ask().await;
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["reason"], "timeout");
    let decision = decision_of(&call.await.unwrap());
    assert_eq!(decision["behavior"], "deny");
    assert!(decision["message"].as_str().unwrap().contains("in time"));
}

#[tokio::test]
async fn ask_user_question_is_answered_with_the_answers_by_question_text() {
    let input = json!({"questions": [
        {"question": "Which database?", "header": "DB", "multiSelect": false,
         "options": [{"label": "Postgres", "description": "A server"}, {"label": "SQLite", "description": "One file"}]},
        {"question": "Which checks?", "header": "CI", "multiSelect": true,
         "options": [{"label": "lint", "description": "clippy"}, {"label": "test", "description": "cargo test"}]}
    ]});
    let args = json!({"tool_name": "AskUserQuestion", "input": input, "tool_use_id": "toolu_q"});
    let (decision, ask) = decide(
        args,
        |_| json!({"action": "submit", "values": {"q0": "SQLite", "q1": ["lint", "test"]}}),
    )
    .await;
    let form = &ask["form"];
    assert!(
        form.get("permission").is_none(),
        "questions are a form: {form}"
    );
    assert_eq!(form["fields"][0]["label"], "Which database?");
    assert_eq!(form["fields"][0]["options"][1]["description"], "One file");
    assert_eq!(form["fields"][2]["type"], "multi_select");
    assert_eq!(form["fields"][3]["name"], "q1_other");
    let mut expected = input.clone();
    expected["answers"] = json!({"Which database?": "SQLite", "Which checks?": "lint, test"});
    assert_eq!(
        decision,
        json!({"behavior": "allow", "updatedInput": expected})
    );
}

#[tokio::test]
async fn approve_is_listed_only_when_enabled_and_declares_no_output_schema() {
    let runtime = runtime_dir();
    let plain = start_serve(runtime.path(), &[], &[]).await;
    let names: Vec<String> = plain
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(!names.iter().any(|n| n == "approve"), "{names:?}");
    let enabled = start_serve(runtime.path(), &["--permission-tool"], &[]).await;
    let tools = enabled.list_all_tools().await.unwrap();
    let approve = tools
        .iter()
        .find(|t| t.name == "approve")
        .expect("approve listed");
    assert!(approve.output_schema.is_none(), "{approve:?}");
    assert_eq!(tools.len(), TOOLS.len() + 1);
    let schema = serde_json::to_value(&approve.input_schema).unwrap();
    assert!(
        schema.get("additionalProperties").is_none(),
        "unknown keys must pass: {schema}"
    );
}

#[test]
fn the_permission_tool_is_never_offered_over_http() {
    let output = std::process::Command::new(him_bin())
        .args(["serve", "--http", "127.0.0.1:0", "--permission-tool"])
        .stdin(Stdio::null())
        .output()
        .expect("run him");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--permission-tool"), "{stderr}");
}
