//! Each Python client runs the snippet `him config <client>` prints, through its own loader,
//! against the real `him serve`, and a stand-in browser host answers: fast-agent reads the
//! YAML as its `fastagent.config.yaml` and calls the tool on its non-LLM path (`fast-agent go
//! --model passthrough`, `***CALL_TOOL`); the LangChain adapters, the OpenAI Agents SDK and
//! Pydantic AI execute the printed Python as a program's prelude and call the tool through
//! the object it built (tests/clients/python_snippet_driver.py). Every client runs with only
//! PATH and HOME in its environment, so `him serve` gets what the client's SDK passes a stdio
//! server, plus `HIM_RUNTIME_DIR` for the test's private host (fast-agent's
//! `fastagent.secrets.yaml` adds it; the driver adds it to the SDK's default environment).
//!
//! The clients live in virtual environments under `target/py/` that `.ci/python-clients`
//! makes (fast-agent 0.10 needs Python 3.13; the LangChain adapters need mcp < 2). A test
//! whose client is missing is skipped with a message, except under `HIM_E2E=1`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::support;
use crate::support::*;
use serde_json::{Value, json};
use tokio::time::Instant;

/// A loaded machine starts a Python client (and its imports) slowly: fast-agent has taken
/// 60 s here while two builds ran.
const CLIENT_PATIENCE: Duration = Duration::from_secs(180);

/// The late answer of the Agents SDK tests: after the SDK's default 5 s limit.
const PERSON_ANSWERS_AFTER: Duration = Duration::from_secs(8);

fn venv(client: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/py")
        .join(client);
    require(
        dir.join("bin/python").exists(),
        &format!("{client} is not installed in {}", dir.display()),
        "run .ci/python-clients, which makes target/py/<client>",
    )
    .then_some(dir)
}

/// What `him config <client>` prints on stdout.
fn snippet(client: &str) -> String {
    let out = std::process::Command::new(him_bin())
        .args(["config", client])
        .output()
        .expect("run him config");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// `program args…` in `dir`, with only PATH and HOME (a home of its own, in `dir`).
fn stripped(program: &Path, dir: &Path) -> tokio::process::Command {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let mut command = tokio::process::Command::new(program);
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .current_dir(dir)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

/// Waits for the output of a client run; it must succeed.
async fn finished(command: &mut tokio::process::Command, who: &str) -> String {
    let output = tokio::time::timeout(CLIENT_PATIENCE, command.output())
        .await
        .unwrap_or_else(|_| panic!("{who} did not finish in time"))
        .unwrap_or_else(|e| panic!("run {who}: {e}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{who} failed:\n{stderr}");
    String::from_utf8(output.stdout).expect("utf-8")
}

/// Runs the Python snippet of `client` through the driver: it lists the tools and calls
/// `tool`. Returns the driver's report.
async fn drive(
    venv: PathBuf,
    client: &'static str,
    code: String,
    runtime: PathBuf,
    tool: &'static str,
    args: Value,
) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("him_mcp.py");
    std::fs::write(&file, code).expect("write the snippet");
    let driver = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/python_snippet_driver.py"
    );
    let mut command = stripped(&venv.join("bin/python"), dir.path());
    command
        .arg(driver)
        .arg(client)
        .arg(&file)
        .arg(&runtime)
        .arg(tool)
        .arg(args.to_string());
    let stdout = finished(&mut command, client).await;
    eprintln!("[{client}] {}", stdout.trim());
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{client}: report ({e}): {stdout}"))
}

/// The next `ask` from the host, however slowly the client started; says it is shown.
async fn next_ask(ext: &mut FakeExtension) -> Value {
    let deadline = Instant::now() + CLIENT_PATIENCE;
    loop {
        assert!(Instant::now() < deadline, "no question reached the host");
        let Some(frame) = ext.quiet_for(Duration::from_secs(1)).await else {
            continue;
        };
        if frame["type"] == "ask" {
            ext.send(json!({"type": "shown", "id": frame["id"]})).await;
            return frame;
        }
    }
}

/// A form whose answer has a type a client could lose: an integer and a boolean.
fn form() -> Value {
    json!({
        "title": "Scale the service",
        "fields": [
            {"name": "replicas", "type": "number", "label": "Replicas", "min": 1, "max": 120},
            {"name": "ship", "type": "confirm", "label": "Ship it?"}
        ]
    })
}

fn values() -> Value {
    json!({"replicas": 4, "ship": true})
}

/// The host takes the form and submits `values()`.
async fn answer_the_form(ext: &mut FakeExtension) {
    let ask = next_ask(ext).await;
    assert_eq!(ask["form"]["title"], "Scale the service", "{ask}");
    ext.submit(&ask["id"], values()).await;
}

fn assert_answered_with_typed_values(client: &str, result: &Value) {
    assert_eq!(result["status"], "answered", "{client}: {result}");
    assert_eq!(result["via"], "extension", "{client}: {result}");
    // `4` and `true`, not `4.0` or `"true"`: serde_json tells an integer from a float.
    assert_eq!(result["values"], values(), "{client}: {result}");
}

fn assert_lists_every_tool(client: &str, report: &Value) {
    let mut tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{client}: no tools in {report}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    tools.sort_unstable();
    let mut expected = TOOLS.to_vec();
    expected.sort_unstable();
    assert_eq!(tools, expected, "{client}");
}

/// A Python snippet client answers the form through its own API.
async fn python_client_answers_the_form(client: &'static str) {
    let Some(venv) = venv(client) else { return };
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let run = tokio::spawn(drive(
        venv,
        client,
        snippet(client),
        runtime.path().to_owned(),
        "ask_form",
        form(),
    ));
    answer_the_form(&mut ext).await;
    let report = run.await.expect("driver task");
    assert_eq!(report["error"], Value::Null, "{client}: {report}");
    assert_lists_every_tool(client, &report);
    assert_answered_with_typed_values(client, &report["result"]);
}

#[tokio::test]
async fn langchain_adapters_load_the_snippet_and_get_a_typed_answer() {
    python_client_answers_the_form("langchain").await;
}

#[tokio::test]
async fn pydantic_ai_loads_the_snippet_and_gets_a_typed_answer() {
    python_client_answers_the_form("pydantic-ai").await;
}

#[tokio::test]
async fn the_openai_agents_sdk_loads_the_snippet_and_gets_a_typed_answer() {
    python_client_answers_the_form("openai-agents").await;
}

#[tokio::test]
async fn fast_agent_reads_the_yaml_and_gets_a_typed_answer() {
    let Some(venv) = venv("fast-agent") else {
        return;
    };
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("fastagent.config.yaml"),
        snippet("fast-agent"),
    )
    .expect("config");
    // fast-agent merges this file over the config: the one thing the test adds.
    let secrets = format!(
        "mcp:\n  servers:\n    him:\n      env:\n        HIM_RUNTIME_DIR: {}\n",
        serde_json::to_string(&runtime.path().display().to_string()).expect("json")
    );
    std::fs::write(dir.path().join("fastagent.secrets.yaml"), secrets).expect("secrets");
    let mut command = stripped(&venv.join("bin/fast-agent"), dir.path());
    command.args([
        "go",
        "--model",
        "passthrough",
        "--config-path",
        "fastagent.config.yaml",
        "--servers",
        "him",
        "--quiet",
        "--message",
    ]);
    command.arg(format!("***CALL_TOOL ask_form {}", form()));
    let run = tokio::spawn(async move { finished(&mut command, "fast-agent").await });
    answer_the_form(&mut ext).await;
    let stdout = run.await.expect("fast-agent task");
    // --quiet prints the tool's text result alone: him's JSON.
    let result: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("fast-agent printed no result ({e}):\n{stdout}"));
    assert_answered_with_typed_values("fast-agent", &result);
}

/// The OpenAI Agents SDK snippet with its limit, or without it (the SDK's default, 5 s).
fn agents_snippet(default_limit: bool) -> String {
    let code = snippet("openai-agents");
    if !default_limit {
        return code;
    }
    let line = "    client_session_timeout_seconds=600,\n";
    assert!(code.contains(line), "the snippet sets no limit:\n{code}");
    code.replace(line, "")
}

#[tokio::test]
async fn the_agents_sdk_cuts_a_call_at_5_s_by_default_and_the_later_answer_is_kept() {
    let Some(venv) = venv("openai-agents") else {
        return;
    };
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let question = json!({"question": "Deploy now?"});
    let run = tokio::spawn(drive(
        venv,
        "openai-agents",
        agents_snippet(true),
        runtime.path().to_owned(),
        "ask_text",
        question,
    ));
    let ask = next_ask(&mut ext).await;
    let asked = Instant::now();
    // The SDK gives up on the call and cancels it; the card stays, kept for a late answer.
    let kept = ext.recv_type("ask").await;
    assert_eq!(kept["id"], ask["id"], "{kept}");
    assert!(kept["kept_until_ms"].is_u64(), "{kept}");
    tokio::time::sleep_until(asked + PERSON_ANSWERS_AFTER).await;
    ext.submit(&ask["id"], json!({"answer": "yes"})).await;
    let accepted = ext.recv_type("accepted").await;
    assert_eq!(
        accepted["id"], ask["id"],
        "the answer was not kept: {accepted}"
    );
    let file = support::state_dir(runtime.path()).join(format!(
        "answers/{}.json",
        ask["id"].as_str().unwrap_or_default()
    ));
    let record = std::fs::read_to_string(&file).expect("the kept answer's file");
    assert!(record.contains("\"yes\""), "{record}");
    let report = run.await.expect("driver task");
    assert_eq!(report["result"], Value::Null, "{report}");
    let message = report["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(report["error"]["type"], "MCPError", "{report}");
    assert!(message.contains("timed out"), "{report}");
    // The session outlived the cut: the SDK's cancellation came first on the link.
    assert_eq!(report["error"]["then_status"], "extension", "{report}");
    let elapsed = report["elapsed_s"].as_f64().expect("elapsed");
    assert!(elapsed >= 5.0, "cut before the SDK's 5 s: {report}");
}

#[tokio::test]
async fn the_agents_sdk_with_the_snippets_limit_gets_an_answer_given_at_8_s() {
    let Some(venv) = venv("openai-agents") else {
        return;
    };
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let question = json!({"question": "Deploy now?"});
    let run = tokio::spawn(drive(
        venv,
        "openai-agents",
        agents_snippet(false),
        runtime.path().to_owned(),
        "ask_text",
        question,
    ));
    let ask = next_ask(&mut ext).await;
    tokio::time::sleep(PERSON_ANSWERS_AFTER).await;
    ext.submit(&ask["id"], json!({"answer": "yes"})).await;
    let report = run.await.expect("driver task");
    assert_eq!(report["error"], Value::Null, "{report}");
    assert_eq!(report["result"]["status"], "answered", "{report}");
    assert_eq!(report["result"]["answer"], "yes", "{report}");
    let elapsed = report["elapsed_s"].as_f64().expect("elapsed");
    assert!(elapsed >= 8.0, "{report}");
}

#[tokio::test]
async fn the_agents_sdk_at_its_default_5_s_gets_pending_at_4_s_and_then_the_answer_given_at_8_s() {
    let Some(venv) = venv("openai-agents") else {
        return;
    };
    // For a client whose limit cannot be raised: him returns `pending` before it.
    let env = r#""env": {"HIM_TIMEOUT_MS": "300000"},"#;
    let code = agents_snippet(true);
    assert!(code.contains(env), "{code}");
    let code = code.replace(
        env,
        r#""env": {"HIM_TIMEOUT_MS": "300000", "HIM_RETURN_AFTER_MS": "4000"},"#,
    );
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let question = json!({"question": "Deploy now?"});
    let run = tokio::spawn(drive(
        venv,
        "openai-agents",
        code,
        runtime.path().to_owned(),
        "ask_text",
        question,
    ));
    let ask = next_ask(&mut ext).await;
    let asked = Instant::now();
    tokio::time::sleep_until(asked + PERSON_ANSWERS_AFTER).await;
    ext.submit(&ask["id"], json!({"answer": "yes"})).await;
    // The next frame is the verdict: the card was neither withdrawn nor marked kept meanwhile.
    let verdict = ext.recv().await;
    assert_eq!(verdict["type"], "accepted", "{verdict}");
    assert_eq!(verdict["id"], ask["id"], "{verdict}");
    let report = run.await.expect("driver task");
    assert_eq!(report["error"], Value::Null, "{report}");
    assert_eq!(report["result"]["status"], "answered", "{report}");
    assert_eq!(report["result"]["answer"], "yes", "{report}");
    assert_eq!(report["result"]["question_id"], ask["id"], "{report}");
    assert!(report["pending"].as_u64().unwrap_or(0) >= 1, "{report}");
    let elapsed = report["elapsed_s"].as_f64().expect("elapsed");
    assert!(elapsed >= 8.0, "{report}");
}
