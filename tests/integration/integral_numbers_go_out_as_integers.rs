//! A bound or default that is a whole number goes out as an integer (`1`, not `1.0`): clients
//! show the number as they read it (fast-agent printed "min 1.0"; Python reads a float). The
//! elicitation form is read as it is on the wire (raw JSON-RPC over stdio and over HTTP) in
//! each place it goes: `elicitation/create` (≤ 2025-11-25), the 2026-07-28 `input_required`
//! result, and a task's input request in `tasks/get`; and as the real Python `mcp` SDK hands
//! it to its elicitation callback in both eras. The tools' own schemas are checked on the
//! wire too.

use std::process::Stdio;

use crate::support;
use crate::support::http::HttpServer;
use crate::support::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout, Command};

/// A form with whole and fractional bounds and a whole default, as an agent sends it.
fn form_args() -> Value {
    json!({
        "title": "Scale the service",
        "fields": [
            {"name": "replicas", "type": "number", "label": "Replicas",
             "min": 1, "max": 120, "defaultValue": 3, "required": true},
            {"name": "ratio", "type": "number", "label": "CPU ratio", "min": 0.5, "max": 2.5},
            {"name": "suites", "type": "multi_select", "label": "Suites",
             "options": ["unit", "e2e", "load"], "min": 1, "max": 2}
        ],
        "timeout_ms": 20000
    })
}

struct RawServe {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    _child: tokio::process::Child,
}

impl RawServe {
    /// `him serve` with no browser, so a client that declares elicitation is asked that way.
    fn start(runtime: &std::path::Path) -> RawServe {
        let mut child = Command::new(him_bin())
            .arg("serve")
            .env("HIM_RUNTIME_DIR", runtime)
            .env(
                "HIM_STATE_DIR",
                support::state_dir(std::path::Path::new(runtime)),
            )
            .env("HIM_RECONNECT_GRACE_MS", "0")
            .env("HIM_AUTO_REJECT_MS", "0")
            .env("HIM_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn him serve");
        RawServe {
            stdin: child.stdin.take().expect("stdin"),
            lines: BufReader::new(child.stdout.take().expect("stdout")).lines(),
            _child: child,
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .expect("write to him serve");
    }

    /// The next line that `matches`, as it came (text), skipping notifications.
    async fn next_line(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> String {
        tokio::time::timeout(PATIENCE, async {
            loop {
                let line = self
                    .lines
                    .next_line()
                    .await
                    .expect("read him serve")
                    .unwrap_or_else(|| panic!("him serve ended before {what}"));
                let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
                if matches(&message) {
                    return line;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {what} in time"))
    }

    async fn initialize(&mut self, version: &str, capabilities: Value) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities,
            "clientInfo": {"name": "raw-numbers", "version": "1.0.0"}}}),
        )
        .await;
        self.next_line("the initialize result", |m| m["id"] == 0)
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }
}

/// Every number in `value` that is whole but written as a float, with where it is.
fn whole_floats(value: &Value, at: &str, found: &mut Vec<String>) {
    match value {
        Value::Number(n) if n.is_f64() && n.as_f64().is_some_and(|f| f.fract() == 0.0) => {
            found.push(format!("{at} = {n}"));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                whole_floats(item, &format!("{at}[{i}]"), found);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                whole_floats(item, &format!("{at}.{key}"), found);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn the_elicitation_form_carries_whole_bounds_and_defaults_as_integers() {
    let runtime = runtime_dir();
    let mut serve = RawServe::start(runtime.path());
    serve
        .initialize("2025-11-25", json!({"elicitation": {"form": {}}}))
        .await;
    serve
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "ask_form", "arguments": form_args()}}))
        .await;
    let line = serve
        .next_line("the elicitation/create request", |m| {
            m["method"] == "elicitation/create"
        })
        .await;
    let request: Value = serde_json::from_str(&line).expect("json");
    let schema = &request["params"]["requestedSchema"];
    let mut found = Vec::new();
    whole_floats(schema, "requestedSchema", &mut found);
    assert!(
        found.is_empty(),
        "whole numbers written as floats: {found:?}\n{line}"
    );
    let p = &schema["properties"];
    assert_eq!(p["replicas"]["minimum"].as_u64(), Some(1), "{line}");
    assert_eq!(p["replicas"]["maximum"].as_u64(), Some(120), "{line}");
    assert_eq!(p["replicas"]["default"].as_u64(), Some(3), "{line}");
    assert_eq!(p["ratio"]["minimum"].as_f64(), Some(0.5), "{line}");
    assert_eq!(p["ratio"]["maximum"].as_f64(), Some(2.5), "{line}");
    assert_eq!(p["suites"]["minItems"].as_u64(), Some(1), "{line}");
    assert_eq!(p["suites"]["maxItems"].as_u64(), Some(2), "{line}");
    // The rest of the request is as before: the form's order, its message, form mode.
    assert_eq!(request["params"]["mode"], "form");
    assert_eq!(request["params"]["message"], "Scale the service");
    assert_eq!(schema["required"], json!(["replicas"]));
    let order: Vec<usize> = ["\"replicas\":{", "\"ratio\":{", "\"suites\":{"]
        .iter()
        .map(|key| line.find(key).expect("each field"))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{line}");

    // The person's answer comes back as the person gave it.
    serve
        .send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
            "action": "accept",
            "content": {"replicas": 4, "ratio": 1.5, "suites": ["unit"]}}}))
        .await;
    let line = serve.next_line("the tool result", |m| m["id"] == 1).await;
    let result: Value = serde_json::from_str(&line).expect("json");
    let structured = &result["result"]["structuredContent"];
    assert_eq!(structured["status"], "answered", "{line}");
    assert_eq!(structured["values"]["replicas"].as_u64(), Some(4), "{line}");
    assert_eq!(structured["values"]["ratio"].as_f64(), Some(1.5), "{line}");
}

#[tokio::test]
async fn no_tool_schema_writes_a_whole_number_as_a_float() {
    let runtime = runtime_dir();
    let mut serve = RawServe::start(runtime.path());
    serve.initialize("2025-11-25", json!({})).await;
    serve
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    let line = serve.next_line("the tools list", |m| m["id"] == 1).await;
    let list: Value = serde_json::from_str(&line).expect("json");
    let tools = list["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), TOOLS.len());
    let mut found = Vec::new();
    for tool in tools {
        whole_floats(tool, tool["name"].as_str().expect("a name"), &mut found);
    }
    assert!(
        found.is_empty(),
        "whole numbers written as floats: {found:?}"
    );
}

/// A request's `_meta` in the 2026-07-28 era, where each request says who sends it.
fn per_request(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-numbers", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities
    })
}

/// The form of the one elicitation in an `inputRequests` map: its whole numbers must be
/// integers, its fractions stay, and the bounds are those of `form_args()`.
fn assert_integral_input_request(input_requests: &Value, line: &str) {
    let requests = input_requests.as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{line}");
    let (_, request) = requests.iter().next().expect("one input request");
    assert_eq!(request["method"], "elicitation/create", "{line}");
    let schema = &request["params"]["requestedSchema"];
    let mut found = Vec::new();
    whole_floats(schema, "requestedSchema", &mut found);
    assert!(
        found.is_empty(),
        "whole numbers written as floats: {found:?}\n{line}"
    );
    let p = &schema["properties"];
    assert_eq!(p["replicas"]["minimum"].as_u64(), Some(1), "{line}");
    assert_eq!(p["replicas"]["maximum"].as_u64(), Some(120), "{line}");
    assert_eq!(p["replicas"]["default"].as_u64(), Some(3), "{line}");
    assert_eq!(p["ratio"]["minimum"].as_f64(), Some(0.5), "{line}");
    assert_eq!(p["ratio"]["maximum"].as_f64(), Some(2.5), "{line}");
    assert!(p["ratio"]["minimum"].is_f64(), "{line}");
    assert_eq!(p["suites"]["minItems"].as_u64(), Some(1), "{line}");
    assert_eq!(p["suites"]["maxItems"].as_u64(), Some(2), "{line}");
    assert_eq!(schema["required"], json!(["replicas"]), "{line}");
}

#[tokio::test]
async fn the_2026_07_28_input_required_result_carries_whole_bounds_and_defaults_as_integers() {
    let runtime = runtime_dir();
    let mut serve = RawServe::start(runtime.path());
    let meta = per_request(json!({"elicitation": {"form": {}}}));
    serve
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "ask_form", "arguments": form_args(), "_meta": meta}}))
        .await;
    let line = serve.next_line("the tool result", |m| m["id"] == 1).await;
    let result: Value = serde_json::from_str(&line).expect("json");
    let result = &result["result"];
    assert_eq!(result["resultType"], "input_required", "{line}");
    assert_integral_input_request(&result["inputRequests"], &line);

    // The retry with the person's answer, as the client sends it, is answered as before.
    let (key, _) = result["inputRequests"]
        .as_object()
        .and_then(|r| r.iter().next())
        .expect("one input request");
    serve
        .send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "ask_form", "arguments": form_args(), "_meta": meta,
            "requestState": result["requestState"],
            "inputResponses": {key.as_str(): {"action": "accept",
                "content": {"replicas": 4, "ratio": 1.5, "suites": ["unit"]}}}}}),
        )
        .await;
    let line = serve
        .next_line("the retry's result", |m| m["id"] == 2)
        .await;
    let retried: Value = serde_json::from_str(&line).expect("json");
    let structured = &retried["result"]["structuredContent"];
    assert_eq!(structured["status"], "answered", "{line}");
    assert_eq!(structured["via"], "elicitation", "{line}");
    assert_eq!(structured["values"]["replicas"].as_u64(), Some(4), "{line}");
    assert_eq!(structured["values"]["ratio"].as_f64(), Some(1.5), "{line}");
}

#[tokio::test]
async fn a_tasks_input_request_carries_whole_bounds_and_defaults_as_integers() {
    let runtime = runtime_dir();
    let mut serve = RawServe::start(runtime.path());
    let meta = per_request(json!({
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }));
    serve
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                     "params": {"name": "ask_form", "arguments": form_args(), "_meta": meta}}))
        .await;
    let line = serve.next_line("the task", |m| m["id"] == 1).await;
    let created: Value = serde_json::from_str(&line).expect("json");
    let task_id = created["result"]["taskId"].clone();
    assert!(task_id.is_string(), "no task: {line}");
    // Polled as a client polls a task, until it waits on the client's own form.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    for id in 2.. {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task never asked"
        );
        serve
            .send(json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get",
                         "params": {"taskId": task_id, "_meta": meta}}))
            .await;
        let line = serve.next_line("the task's state", |m| m["id"] == id).await;
        let got: Value = serde_json::from_str(&line).expect("json");
        match got["result"]["status"].as_str() {
            Some("working") => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Some("input_required") => {
                assert_integral_input_request(&got["result"]["inputRequests"], &line);
                return;
            }
            _ => panic!("the task neither works nor waits on the form: {line}"),
        }
    }
}

/// One sessionless 2026-07-28 request to `him serve --http` (SEP-2243's headers), and the
/// JSON-RPC message that answers it, as its line of the SSE response.
async fn post_sessionless(server: &HttpServer, http: &reqwest::Client, request: Value) -> String {
    let method = request["method"].as_str().expect("a method").to_owned();
    let mut post = server
        .post(http, &request.to_string())
        .header("Mcp-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", &method);
    // What the request names: a tool, or a task.
    let params = &request["params"];
    if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
        post = post.header("Mcp-Name", name);
    }
    let response = tokio::time::timeout(PATIENCE, post.send())
        .await
        .expect("the request was answered in time")
        .expect(&method);
    let status = response.status();
    assert_eq!(
        status,
        200,
        "{method}: {}",
        response.text().await.unwrap_or_default()
    );
    let body = tokio::time::timeout(PATIENCE, response.text())
        .await
        .expect("the response ended in time")
        .expect("the response body");
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| serde_json::from_str::<Value>(data).is_ok_and(|m| m["id"] == request["id"]))
        .unwrap_or_else(|| panic!("no answer to {method} in: {body}"))
        .to_owned()
}

#[tokio::test]
async fn over_http_the_2026_07_28_input_required_result_and_a_tasks_form_carry_integers() {
    let runtime = runtime_dir();
    let server = HttpServer::start(
        runtime.path(),
        &[],
        &[("HIM_RECONNECT_GRACE_MS", "0"), ("HIM_AUTO_REJECT_MS", "0")],
    )
    .await;
    let http = reqwest::Client::new();

    // A blocking call: the form comes in the input_required result, and the retry is answered.
    let meta = per_request(json!({"elicitation": {"form": {}}}));
    let call = |id: u64, extra: Value| {
        let mut params = json!({"name": "ask_form", "arguments": form_args(), "_meta": meta});
        if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
            params.extend(extra);
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    let line = post_sessionless(&server, &http, call(1, json!({}))).await;
    let result: Value = serde_json::from_str(&line).expect("json");
    let result = &result["result"];
    assert_eq!(result["resultType"], "input_required", "{line}");
    assert_integral_input_request(&result["inputRequests"], &line);
    let retry = json!({
        "requestState": result["requestState"],
        "inputResponses": {"him": {"action": "accept",
            "content": {"replicas": 4, "ratio": 1.5, "suites": ["unit"]}}}
    });
    let line = post_sessionless(&server, &http, call(2, retry)).await;
    let retried: Value = serde_json::from_str(&line).expect("json");
    let structured = &retried["result"]["structuredContent"];
    assert_eq!(structured["status"], "answered", "{line}");
    assert_eq!(structured["values"]["replicas"].as_u64(), Some(4), "{line}");

    // A task: its form comes in tasks/get.
    let meta = per_request(json!({
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }));
    let request = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "ask_form", "arguments": form_args(), "_meta": meta}});
    let line = post_sessionless(&server, &http, request).await;
    let created: Value = serde_json::from_str(&line).expect("json");
    let task_id = created["result"]["taskId"].clone();
    assert!(task_id.is_string(), "no task: {line}");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    for id in 4.. {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task never asked"
        );
        let get = json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get",
                         "params": {"taskId": task_id, "_meta": meta}});
        let line = post_sessionless(&server, &http, get).await;
        let got: Value = serde_json::from_str(&line).expect("json");
        match got["result"]["status"].as_str() {
            Some("working") => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            Some("input_required") => {
                assert_integral_input_request(&got["result"]["inputRequests"], &line);
                return;
            }
            _ => panic!("the task neither works nor waits on the form: {line}"),
        }
    }
}

fn python_has_mcp() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test]
async fn the_python_sdk_reads_whole_bounds_as_ints_in_its_elicitation_callback_in_both_eras() {
    if !require(
        python_has_mcp(),
        "python3 cannot import mcp",
        "python3 -m pip install mcp==2.3.0",
    ) {
        return;
    }
    // legacy: elicitation/create in a 2025-11-25 session; auto: the SDK's default, the
    // form inside a 2026-07-28 input_required result.
    for (mode, era) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let runtime = runtime_dir();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/clients/python_elicitation_numbers.py"
        );
        let run = tokio::process::Command::new("python3")
            .arg(script)
            .arg(him_bin())
            .arg(runtime.path())
            .arg(form_args().to_string())
            .arg(mode)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(PATIENCE * 2, run)
            .await
            .expect("the Python client finished in time")
            .expect("run python3");
        let stderr = String::from_utf8_lossy(&output.stderr);
        eprintln!("[python {mode}] {stderr}");
        assert!(
            output.status.success(),
            "the Python client ({mode}) failed:\n{stderr}"
        );
        let report: Value = serde_json::from_slice(&output.stdout).expect("the client's JSON line");
        assert_eq!(report["version"], era, "{report}");
        assert_eq!(
            report["types"],
            json!({
                "replicas.minimum": "int", "replicas.maximum": "int", "replicas.default": "int",
                "ratio.minimum": "float", "ratio.maximum": "float",
                "suites.minItems": "int", "suites.maxItems": "int"
            }),
            "{mode}: {report}"
        );
        assert_eq!(report["result"]["status"], "answered", "{report}");
        assert_eq!(report["result"]["via"], "elicitation", "{report}");
        assert_eq!(report["result"]["values"]["replicas"], 4, "{report}");
    }
}
