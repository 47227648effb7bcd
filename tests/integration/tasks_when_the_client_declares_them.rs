//! A client that declares the MCP tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`)
//! gets a task at once from an ask tool instead of a call that blocks until the person
//! answers: `tasks/get` says where the question waits and ends with the result the blocking
//! call returns; `tasks/cancel` withdraws the question everywhere. rmcp's own client plays the
//! MCP client, in both protocol eras; a stand-in extension plays the browser.

use std::path::Path;

use crate::support;
use crate::support::http::HttpServer;
use crate::support::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, Implementation, InputResponses, ProtocolVersion, RequestMetaObject, Task,
    TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;

/// rmcp's default task lifetime, which a person's wait may well outlast.
const RMCP_DEFAULT_TTL_MS: u64 = 300_000;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Era {
    /// `initialize` at 2025-11-25; a call takes a task only when its own `_meta` declares the
    /// extension, as the test's calls do ([`declaring`]).
    Session,
    /// `server/discover` at 2026-07-28: rmcp's client declares its capabilities in every
    /// request's `_meta`.
    PerRequest,
}

const ERAS: [Era; 2] = [Era::Session, Era::PerRequest];

/// A client whose capabilities are given: the tasks extension, form elicitation, or neither.
#[derive(Clone)]
struct Client {
    name: &'static str,
    capabilities: Value,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(self.capabilities.clone()).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new(self.name, "1.0.0"))
    }
}

type Agent = RunningService<RoleClient, Client>;

fn tasks() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

fn tasks_and_elicitation() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}})
}

async fn start(runtime: &Path, era: Era, capabilities: Value, env: &[(&str, &str)]) -> Agent {
    start_as("tasks-client", runtime, era, capabilities, env).await
}

async fn start_as(
    name: &'static str,
    runtime: &Path,
    era: Era,
    capabilities: Value,
    env: &[(&str, &str)],
) -> Agent {
    let dir = runtime.to_owned();
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
            // Kept questions (issue 24) have tests of their own; here a wait that ends
            // withdraws its question, as without a store.
            .env("HIM_KEEP_MS", "0")
            .env("HIM_LOG", "debug")
            .env("HIM_RECONNECT_GRACE_MS", "0");
        for (k, v) in &env {
            cmd.env(k, v);
        }
    }))
    .expect("spawn him serve");
    let handler = Client { name, capabilities };
    match era {
        Era::Session => handler.serve(transport).await.expect("initialize"),
        Era::PerRequest => handler
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .expect("discover"),
    }
}

/// A call of `tool` whose `_meta` carries the client's capabilities, as SEP-2663 asks of a
/// request that may take a task (rmcp's client adds them itself in the 2026-07-28 era).
fn declaring(agent: &Agent, tool: &str, args: Value) -> CallToolRequestParams {
    let capabilities: ClientCapabilities =
        serde_json::from_value(agent.service().capabilities.clone()).expect("capabilities");
    let mut meta = RequestMetaObject::new();
    meta.set_client_capabilities(capabilities);
    let mut params = params(tool, args);
    params.meta = Some(meta);
    params
}

/// Calls `tool` once; the reply must come without anyone answering.
async fn call_once(agent: &Agent, tool: &str, args: Value) -> CallToolResponse {
    tokio::time::timeout(PATIENCE, agent.call_tool_once(declaring(agent, tool, args)))
        .await
        .expect("the call returned without waiting for the person")
        .expect("tools/call")
}

async fn start_task(agent: &Agent, tool: &str, args: Value) -> Task {
    match call_once(agent, tool, args).await {
        CallToolResponse::Task(created) => {
            assert_eq!(created.result_type.as_str(), "task");
            created.task
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn get(agent: &Agent, task: &Task) -> rmcp::model::DetailedTask {
    agent
        .peer()
        .get_task(GetTaskParams::new(task.task_id.clone()))
        .await
        .expect("tasks/get")
        .task
}

/// Polls `tasks/get`, as a client does at the task's `pollIntervalMs`, until `done` holds.
async fn poll_until(
    agent: &Agent,
    task: &Task,
    what: &str,
    done: impl Fn(&rmcp::model::DetailedTask) -> bool,
) -> rmcp::model::DetailedTask {
    let interval = std::time::Duration::from_millis(task.poll_interval_ms.unwrap_or(100).min(100));
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let detailed = get(agent, task).await;
        if done(&detailed) {
            return detailed;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}; last: {detailed:?}"
        );
        tokio::time::sleep(interval).await;
    }
}

/// The final `CallToolResult` of a completed task, as its structured content (whose text copy
/// must agree).
fn completed_result(detailed: &rmcp::model::DetailedTask) -> Value {
    let TaskPayload::Completed { result } = &detailed.payload else {
        panic!("not completed: {detailed:?}");
    };
    let result = Value::Object(result.clone());
    assert_eq!(result["isError"], false, "{result}");
    let structured = result["structuredContent"].clone();
    let text = result["content"][0]["text"].as_str().expect("a text copy");
    assert_eq!(
        serde_json::from_str::<Value>(text).expect("JSON text"),
        structured
    );
    assert_complete(&structured);
    structured
}

/// The parts of a result that differ between two askings of the same question.
fn without_call_specifics(mut result: Value) -> Value {
    result["elapsed_ms"] = json!(0);
    result["question_id"] = json!("");
    result
}

#[tokio::test]
async fn an_ask_returns_a_task_at_once_and_tasks_get_ends_with_the_blocking_calls_result() {
    for era in ERAS {
        let runtime = runtime_dir();
        let mut ext = FakeExtension::start_correcting(runtime.path()).await;
        let agent = start(runtime.path(), era, tasks(), &[]).await;
        assert!(
            agent
                .peer_info()
                .is_some_and(|info| info.capabilities.supports_tasks()),
            "{era:?}: the server advertises the tasks extension"
        );
        let args = json!({"question": "Which DB?", "options": ["Postgres", "SQLite"]});
        let task = start_task(&agent, "ask_choice", args.clone()).await;
        assert_eq!(task.status, TaskStatus::Working, "{era:?}");
        let waiting = task.status_message.clone().unwrap_or_default();
        assert!(waiting.contains("side panel"), "{era:?}: {waiting}");

        // The call has returned; the question is in the panel, and the task is working.
        let ask = ext.take_ask().await;
        let working = get(&agent, &task).await;
        assert_eq!(working.status(), TaskStatus::Working, "{era:?}");
        assert_eq!(
            working.task.status_message.as_deref(),
            Some(waiting.as_str())
        );

        ext.submit(&ask["id"], json!({"choice": "SQLite"})).await;
        assert_eq!(ext.verdict_on(&ask["id"]).await["type"], "accepted");
        let done = poll_until(&agent, &task, "the task to complete", |t| {
            t.status().is_terminal()
        })
        .await;
        let result = completed_result(&done);
        assert_eq!(result["status"], "answered", "{era:?}: {result}");
        assert_eq!(result["answer"], "SQLite");
        assert_eq!(result["via"], "extension");
        assert_eq!(result["question_id"], ask["id"]);

        // The same question asked by a client without tasks blocks, and its result is the
        // task's, but for the call's own id and time.
        let blocking = start_agent(runtime.path(), "blocking", &[]).await.0;
        let call = tokio::spawn(async move {
            let result = call(&blocking, "ask_choice", args).await;
            (blocking, result)
        });
        let ask = ext.take_ask().await;
        ext.submit(&ask["id"], json!({"choice": "SQLite"})).await;
        let (blocking, blocked) = call.await.expect("blocking call");
        assert_eq!(
            without_call_specifics(result),
            without_call_specifics(blocked),
            "{era:?}"
        );
        blocking.cancel().await.ok();
        agent.cancel().await.ok();
    }
}

#[tokio::test]
async fn tasks_cancel_withdraws_the_question_from_the_panel() {
    for era in ERAS {
        let runtime = runtime_dir();
        let mut ext = FakeExtension::start_correcting(runtime.path()).await;
        // Keeping on: a cancelled blocking call keeps its question, a cancelled task does not.
        let agent = start(runtime.path(), era, tasks(), &[("HIM_KEEP_MS", "86400000")]).await;
        let task = start_task(&agent, "ask_text", json!({"question": "Name?"})).await;
        let ask = ext.take_ask().await;
        agent
            .peer()
            .cancel_task(CancelTaskParams::new(task.task_id.clone()))
            .await
            .expect("tasks/cancel");
        let withdraw = ext.recv_type("withdraw").await;
        assert_eq!(withdraw["id"], ask["id"], "{era:?}");
        assert_eq!(withdraw["reason"], "cancelled");
        let answers = support::state_dir(runtime.path()).join("answers");
        let kept = std::fs::read_dir(&answers).map(|d| d.count()).unwrap_or(0);
        assert_eq!(kept, 0, "{era:?}: a cancelled task's question was kept");
        let done = poll_until(&agent, &task, "the task to end", |t| {
            t.status().is_terminal()
        })
        .await;
        assert_eq!(done.status(), TaskStatus::Cancelled, "{era:?}: {done:?}");
        agent.cancel().await.ok();
    }
}

#[tokio::test]
async fn a_task_lives_as_long_as_the_persons_wait_not_rmcps_five_minutes() {
    let runtime = runtime_dir();
    let _ext = FakeExtension::start_correcting(runtime.path()).await;
    // A person given ten minutes by default, or an hour by the call.
    let agent = start(
        runtime.path(),
        Era::PerRequest,
        tasks(),
        &[("HIM_TIMEOUT_MS", "600000")],
    )
    .await;
    let by_default = start_task(&agent, "ask_text", json!({"question": "Name?"})).await;
    let ttl = by_default.ttl_ms.expect("a lifetime");
    assert!(ttl > RMCP_DEFAULT_TTL_MS, "{ttl}");
    assert!((600_000..=660_000).contains(&ttl), "{ttl}");
    let by_call = start_task(
        &agent,
        "ask_text",
        json!({"question": "Name?", "timeout_ms": 3_600_000}),
    )
    .await;
    let ttl = by_call.ttl_ms.expect("a lifetime");
    assert!((3_600_000..=3_660_000).contains(&ttl), "{ttl}");
    agent.cancel().await.ok();
}

#[tokio::test]
async fn a_task_whose_wait_ends_completes_with_the_timeout_result() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    // Keeping on: the question outlives the task's wait, as a blocking call's does.
    let agent = start(
        runtime.path(),
        Era::PerRequest,
        tasks(),
        &[("HIM_KEEP_MS", "86400000")],
    )
    .await;
    let task = start_task(
        &agent,
        "ask_confirm",
        json!({"question": "Deploy?", "timeout_ms": 1000}),
    )
    .await;
    let ask = ext.take_ask().await;
    let kept = ext.recv_type("ask").await;
    assert_eq!(kept["id"], ask["id"]);
    assert!(kept["kept_until_ms"].is_u64(), "{kept}");
    let done = poll_until(&agent, &task, "the task to end", |t| {
        t.status().is_terminal()
    })
    .await;
    let result = completed_result(&done);
    assert_eq!(result["status"], "timeout", "{result}");
    assert_eq!(result["confirmed"], Value::Null);
    let next = result["next_step"].as_str().unwrap_or_default();
    assert!(next.contains("get_answer"), "{next}");
    agent.cancel().await.ok();
}

#[tokio::test]
async fn with_no_browser_the_task_asks_for_the_clients_own_form_as_input_required() {
    for era in ERAS {
        let runtime = runtime_dir();
        let agent = start(
            runtime.path(),
            era,
            tasks_and_elicitation(),
            &[("HIM_AUTO_REJECT_MS", "0")],
        )
        .await;
        // A task, not the 2026-07-28 `input_required` result of a blocking call.
        let task = start_task(&agent, "ask_text", json!({"question": "Your name?"})).await;
        let waiting = task.status_message.clone().unwrap_or_default();
        assert!(waiting.contains("client's own form"), "{era:?}: {waiting}");
        let asking = poll_until(&agent, &task, "input_required", |t| {
            t.status() != TaskStatus::Working
        })
        .await;
        let TaskPayload::InputRequired { input_requests } = &asking.payload else {
            panic!("{era:?}: expected input_required, got {asking:?}");
        };
        assert_eq!(input_requests.len(), 1, "{input_requests:?}");
        let (key, request) = input_requests.iter().next().expect("one request");
        let request = serde_json::to_value(request).expect("json");
        assert_eq!(request["method"], "elicitation/create", "{request}");
        assert!(
            request["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Your name?")),
            "{request}"
        );
        assert_eq!(
            request["params"]["requestedSchema"]["properties"]["answer"]["type"],
            "string"
        );

        let mut responses = InputResponses::new();
        responses.insert(
            key.clone(),
            json!({"action": "accept", "content": {"answer": "Ada"}}),
        );
        agent
            .peer()
            .update_task(UpdateTaskParams::new(task.task_id.clone(), responses))
            .await
            .expect("tasks/update");
        let done = poll_until(&agent, &task, "the task to complete", |t| {
            t.status().is_terminal()
        })
        .await;
        let result = completed_result(&done);
        assert_eq!(result["status"], "answered", "{era:?}: {result}");
        assert_eq!(result["via"], "elicitation");
        assert_eq!(result["answer"], "Ada");
        assert_eq!(result["client_elicitation"], true);
        agent.cancel().await.ok();
    }
}

#[tokio::test]
async fn the_status_message_names_the_loopback_page_when_the_question_goes_there() {
    let runtime = runtime_dir();
    let agent = start(
        runtime.path(),
        Era::PerRequest,
        tasks(),
        &[("HIM_FALLBACK", "http"), ("BROWSER", "/bin/true")],
    )
    .await;
    let task = start_task(&agent, "ask_text", json!({"question": "Name?"})).await;
    // First "opening the loopback page", then, once it listens, its address.
    let waiting = poll_until(&agent, &task, "the loopback page's address", |t| {
        t.task
            .status_message
            .as_deref()
            .is_some_and(|m| m.contains("http://127.0.0.1:"))
    })
    .await;
    let message = waiting.task.status_message.clone().unwrap_or_default();
    assert!(message.contains("loopback page"), "{message}");
    assert_eq!(waiting.status(), TaskStatus::Working);
    agent
        .peer()
        .cancel_task(CancelTaskParams::new(task.task_id.clone()))
        .await
        .expect("tasks/cancel");
    let done = poll_until(&agent, &task, "the task to end", |t| {
        t.status().is_terminal()
    })
    .await;
    assert_eq!(done.status(), TaskStatus::Cancelled, "{done:?}");
    agent.cancel().await.ok();
}

/// Asks through `agent` (the call declaring what the client declared when `declare`), which
/// must get the blocking call: still open when the person answers, and ended by the answer.
async fn blocks(agent: Agent, declare: bool, ext: &mut FakeExtension, what: &str) -> Agent {
    let call = tokio::spawn(async move {
        let args = json!({"question": "Name?"});
        let params = if declare {
            declaring(&agent, "ask_text", args)
        } else {
            params("ask_text", args)
        };
        let response = agent.call_tool_once(params).await.expect("tools/call");
        (agent, response)
    });
    let ask = ext.take_ask().await;
    assert!(
        !call.is_finished(),
        "{what}: the call returned before the answer"
    );
    ext.submit(&ask["id"], json!({"answer": "Ada"})).await;
    let (agent, response) = call.await.expect("call");
    let CallToolResponse::Complete(result) = response else {
        panic!("{what}: expected a result, got {response:?}");
    };
    let result = result.structured_content.expect("structured content");
    assert_eq!(result["answer"], "Ada", "{what}");
    agent
}

#[tokio::test]
async fn claude_code_gets_the_blocking_call_unless_him_tasks_is_on() {
    // Claude Code's terminal UI declares the extension per request (2026-07-28).
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let agent = start_as("claude-code", runtime.path(), Era::PerRequest, tasks(), &[]).await;
    let agent = blocks(agent, true, &mut ext, "claude-code under HIM_TASKS=auto").await;
    agent.cancel().await.ok();

    let on = [("HIM_TASKS", "on")];
    let agent = start_as("claude-code", runtime.path(), Era::PerRequest, tasks(), &on).await;
    let task = start_task(&agent, "ask_text", json!({"question": "Name?"})).await;
    assert_eq!(task.status, TaskStatus::Working);
    agent.cancel().await.ok();
}

#[tokio::test]
async fn a_session_that_declared_tasks_only_at_initialize_gets_the_blocking_call() {
    // As the MCP Inspector 2.12 does in the 2025-11-25 era, then reading a plain result.
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let agent = start(runtime.path(), Era::Session, tasks(), &[]).await;
    let agent = blocks(agent, false, &mut ext, "declared at initialize only").await;
    agent.cancel().await.ok();
}

#[tokio::test]
async fn under_him_tasks_off_no_client_gets_a_task_nor_sees_the_extension() {
    for era in ERAS {
        let runtime = runtime_dir();
        let mut ext = FakeExtension::start_correcting(runtime.path()).await;
        let agent = start(runtime.path(), era, tasks(), &[("HIM_TASKS", "off")]).await;
        assert!(
            agent
                .peer_info()
                .is_some_and(|info| !info.capabilities.supports_tasks()),
            "{era:?}"
        );
        let agent = blocks(agent, true, &mut ext, &format!("{era:?}: HIM_TASKS=off")).await;
        agent.cancel().await.ok();
    }
}

#[tokio::test]
async fn a_client_without_the_extension_still_gets_a_blocking_call() {
    for era in ERAS {
        let runtime = runtime_dir();
        let mut ext = FakeExtension::start_correcting(runtime.path()).await;
        let agent = start(runtime.path(), era, json!({}), &[]).await;
        let agent = blocks(agent, true, &mut ext, &format!("{era:?}")).await;
        // Nor can it follow tasks.
        let refused = agent
            .peer()
            .get_task(GetTaskParams::new("any"))
            .await
            .expect_err("tasks/get without the extension");
        assert!(format!("{refused:?}").contains("-32021"), "{refused:?}");
        agent.cancel().await.ok();
    }
}

#[tokio::test]
async fn over_http_a_task_outlives_the_sessionless_request_that_created_it() {
    // Each 2026-07-28 request over `him serve --http` has a server of its own, shut down when
    // its response ends: the task's question must stay in the panel after that.
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
            .auth_header(server.token.clone()),
    );
    let handler = Client {
        name: "web-tasks",
        capabilities: tasks(),
    };
    let agent = handler
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover over HTTP");
    let task = start_task(&agent, "ask_text", json!({"question": "Name?"})).await;
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"answer": "Ada"})).await;
    // The first word on this question after the answer: accepted, not a withdrawal (nor the
    // error of an answer that no longer reached anyone).
    let said = loop {
        let frame = ext.recv().await;
        if frame["id"] == ask["id"] {
            break frame;
        }
    };
    assert_eq!(said["type"], "accepted", "{said}");
    let done = poll_until(&agent, &task, "the task to complete", |t| {
        t.status().is_terminal()
    })
    .await;
    let result = completed_result(&done);
    assert_eq!(result["answer"], "Ada", "{result}");
    agent.cancel().await.ok();
}

#[tokio::test]
async fn a_form_with_a_password_gets_the_blocking_call_so_no_task_keeps_the_secret() {
    // A finished task's result stays readable with tasks/get for its lifetime.
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let agent = start(runtime.path(), Era::PerRequest, tasks(), &[]).await;
    let args = json!({"title": "Sign in", "fields": [
        {"name": "token", "type": "password", "label": "Token", "required": true}]});
    let call = tokio::spawn(async move {
        let response = agent
            .call_tool_once(declaring(&agent, "ask_form", args))
            .await
            .expect("tools/call");
        (agent, response)
    });
    let ask = ext.take_ask().await;
    assert!(!call.is_finished(), "the call returned before the answer");
    ext.submit(&ask["id"], json!({"token": "hunter2"})).await;
    let (agent, response) = call.await.expect("call");
    let CallToolResponse::Complete(result) = response else {
        panic!("expected the blocking call's result, got {response:?}");
    };
    let result = result.structured_content.expect("structured content");
    assert_eq!(result["values"]["token"], "hunter2", "{result}");
    agent.cancel().await.ok();
}

#[tokio::test]
async fn tasks_cancel_withdraws_a_question_a_blocking_call_had_left_open() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let agent = start(
        runtime.path(),
        Era::Session,
        tasks(),
        &[("HIM_KEEP_MS", "86400000"), ("HIM_RETURN_AFTER_MS", "1500")],
    )
    .await;
    let args = json!({"question": "Name?", "timeout_ms": 20_000});
    // A blocking call returns `pending` at its limit, the question left open...
    let call = {
        let (peer, args) = (agent.peer().clone(), args.clone());
        tokio::spawn(async move { peer.call_tool(params("ask_text", args)).await })
    };
    let ask = ext.take_ask().await;
    let pending = call.await.unwrap().expect("tools/call");
    let pending = pending.structured_content.expect("structured content");
    assert_eq!(pending["status"], "pending", "{pending}");
    // ...then the same question, as a task, waits on it; the agent cancels that task.
    let task = start_task(&agent, "ask_text", args).await;
    agent
        .peer()
        .cancel_task(CancelTaskParams::new(task.task_id.clone()))
        .await
        .expect("tasks/cancel");
    // The question is withdrawn everywhere and kept nowhere, as any cancelled task's.
    let withdraw = ext.recv().await;
    assert_eq!(withdraw["type"], "withdraw", "{withdraw}");
    assert_eq!(withdraw["id"], ask["id"]);
    assert_eq!(withdraw["reason"], "cancelled");
    let done = poll_until(&agent, &task, "the task to end", |t| {
        t.status().is_terminal()
    })
    .await;
    assert_eq!(done.status(), TaskStatus::Cancelled, "{done:?}");
    let answers = support::state_dir(runtime.path()).join("answers");
    let kept: Vec<_> = std::fs::read_dir(&answers)
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".json"))
        .collect();
    assert!(kept.is_empty(), "the withdrawn question was kept: {kept:?}");
    agent.cancel().await.ok();
}
