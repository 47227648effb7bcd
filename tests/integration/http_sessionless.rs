//! 2026-07-28 clients over `him serve --http`: every request stands alone (no session), so
//! each is served by a server of its own. The elicitation round trip still works across two
//! such requests, a request's links to the browser's host end with it, and a call whose
//! stream the client closes is withdrawn from the panel.

use std::time::{Duration, Instant};

use crate::support::http::*;
use crate::support::*;
use rmcp::model::{
    CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorData, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};

/// A 2026-07-28 client that declares form elicitation and accepts every form with `content`.
#[derive(Clone)]
struct Accepting {
    content: Value,
}

impl ClientHandler for Accepting {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("web-chat-2026", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(self.content.clone()))
    }
}

async fn discover(server: &HttpServer, content: Value) -> RunningService<RoleClient, Accepting> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
            .auth_header(server.token.clone()),
    );
    Accepting { content }
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover over HTTP")
}

#[tokio::test]
async fn the_input_required_round_trip_works_across_two_sessionless_requests() {
    let runtime = runtime_dir();
    let server = HttpServer::start(
        runtime.path(),
        &[],
        &[("HIM_RECONNECT_GRACE_MS", "0"), ("HIM_AUTO_REJECT_MS", "0")],
    )
    .await;
    let client = discover(&server, json!({"answer": "Ada"})).await;
    let args = json!({"question": "Name?"});

    // The first round, by hand: its sealed state comes back from one server...
    let state = match client
        .call_tool_once(params("ask_text", args.clone()))
        .await
        .expect("first round")
    {
        CallToolResponse::InputRequired(required) => {
            required.request_state.expect("a request state")
        }
        other => panic!("expected input_required, got {other:?}"),
    };
    // ...and the retry, a new request, reaches another, which must accept it once.
    let mut retry = params("ask_text", args.clone());
    retry.request_state = Some(state.clone());
    retry.input_responses = Some(
        [(
            "him".to_owned(),
            json!({"action": "accept", "content": {"answer": "Ada"}}),
        )]
        .into_iter()
        .collect(),
    );
    let answered = client
        .call_tool_once(retry.clone())
        .await
        .expect("the retry is accepted");
    let CallToolResponse::Complete(result) = answered else {
        panic!("expected a result, got {answered:?}");
    };
    let result = result.structured_content.expect("structured content");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "elicitation");
    assert_eq!(result["answer"], "Ada");
    // A replay, reaching yet another server, is still refused.
    match client.call_tool_once(retry).await {
        Err(rmcp::ServiceError::McpError(err)) => {
            assert!(err.message.contains("already answered"), "{err:?}")
        }
        other => panic!("a replayed requestState was not refused: {other:?}"),
    }

    // The SDK's own loop (call, elicit, retry) gets the answer too.
    let result = call_tool_2026(&client, "ask_text", json!({"question": "Name again?"})).await;
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["answer"], "Ada");
    client.cancel().await.ok();
}

async fn call_tool_2026(
    client: &RunningService<RoleClient, Accepting>,
    tool: &str,
    args: Value,
) -> Value {
    let result = tokio::time::timeout(PATIENCE, client.call_tool(params(tool, args)))
        .await
        .expect("the call ended in time")
        .expect("tools/call");
    result.structured_content.expect("structured content")
}

/// A sessionless 2026-07-28 `tools/call` as a web client sends it: the protocol version,
/// client info and capabilities in the request's own `_meta`.
fn sessionless_call(id: u64, tool: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": args,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "sessionless", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    }})
    .to_string()
}

/// With the standard headers 2026-07-28 asks of a `tools/call` (SEP-2243).
fn post_sessionless(
    server: &HttpServer,
    http: &reqwest::Client,
    body: &str,
) -> reqwest::RequestBuilder {
    let tool: Value = serde_json::from_str(body).expect("json body");
    server
        .post(http, body)
        .header("Mcp-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header(
            "Mcp-Name",
            tool["params"]["name"].as_str().expect("a tool name"),
        )
}

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the process's descriptors")
        .count()
}

#[tokio::test]
async fn a_thousand_sessionless_calls_leave_no_descriptors_behind_in_serve_or_the_host() {
    let runtime = runtime_dir();
    let ext = FakeExtension::start(runtime.path()).await;
    let server = HttpServer::start(runtime.path(), &[], &[("HIM_LOG", "warn")]).await;
    let serve_pid = server.child.id().expect("serve pid");
    let http = reqwest::Client::new();
    let status = |id: u64| {
        let request = post_sessionless(
            &server,
            &http,
            &sessionless_call(id, "human_input_status", json!({})),
        );
        async move {
            let response = request.send().await.expect("tools/call");
            let code = response.status();
            let body = response.text().await.expect("body");
            assert_eq!(code, 200, "{body}");
            assert!(
                body.contains("\"extension\""),
                "the host was not seen: {body}"
            );
        }
    };
    // Warm up: the connection pool, the runtime's threads, the host's first agent.
    for id in 0..20 {
        status(id).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = (open_descriptors(serve_pid), open_descriptors(ext.pid));
    let started = Instant::now();
    for id in 0..1000 {
        status(1000 + id).await;
    }
    let took = started.elapsed();
    // Links close once their withdrawals are out and the host has ended its side.
    let slack = 8;
    let deadline = Instant::now() + PATIENCE;
    let after = loop {
        let after = (open_descriptors(serve_pid), open_descriptors(ext.pid));
        if (after.0 <= before.0 + slack && after.1 <= before.1 + slack) || Instant::now() > deadline
        {
            break after;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!(
        "1000 sessionless calls in {took:?}; descriptors of him serve --http {} -> {}, of the \
         host {} -> {}",
        before.0, after.0, before.1, after.1
    );
    assert!(
        after.0 <= before.0 + slack,
        "him serve --http kept descriptors: {} before, {} after",
        before.0,
        after.0
    );
    assert!(
        after.1 <= before.1 + slack,
        "the host kept descriptors: {} before, {} after",
        before.1,
        after.1
    );
}

#[tokio::test]
async fn a_sessionless_call_whose_stream_is_closed_is_withdrawn_within_two_seconds() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let server = HttpServer::start(runtime.path(), &[], &[("HIM_HEARTBEAT_MS", "100")]).await;
    let withdrawn_in_time = async |ext: &mut FakeExtension, ask: &Value, closed: Instant| {
        let withdraw = tokio::time::timeout(Duration::from_secs(2), ext.recv_type("withdraw"))
            .await
            .expect("the question was not withdrawn within 2 s of the stream closing");
        assert_eq!(withdraw["id"], ask["id"]);
        eprintln!("withdrawn {:?} after the stream closed", closed.elapsed());
    };

    // Without a progress token, nothing is sent before the result, not even the headers:
    // the client gives up on a request still waiting for its response.
    let http = reqwest::Client::new();
    let request = post_sessionless(
        &server,
        &http,
        &sessionless_call(1, "ask_confirm", json!({"question": "Deploy?"})),
    );
    let waiting = tokio::spawn(async move { request.send().await });
    let ask = ext.take_ask().await;
    assert_eq!(ask["agent"]["name"], "sessionless");
    let closed = Instant::now();
    waiting.abort();
    withdrawn_in_time(&mut ext, &ask, closed).await;

    // With one, progress opens the stream at once; the client closes it mid-call.
    let mut call: Value = serde_json::from_str(&sessionless_call(
        2,
        "ask_confirm",
        json!({"question": "Deploy now?"}),
    ))
    .unwrap();
    call["params"]["_meta"]["progressToken"] = json!("p1");
    let mut response = post_sessionless(&server, &http, &call.to_string())
        .send()
        .await
        .expect("tools/call");
    assert_eq!(response.status(), 200);
    let ask = ext.take_ask().await;
    let first = tokio::time::timeout(PATIENCE, response.chunk())
        .await
        .expect("a progress event")
        .expect("the stream");
    assert!(first.is_some());
    let closed = Instant::now();
    drop(response);
    drop(http);
    withdrawn_in_time(&mut ext, &ask, closed).await;
}

/// The JSON-RPC response in a body that is plain JSON or a stream of server-sent events.
fn response_in(body: &str) -> Value {
    let data = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|data| data.contains("\"result\"") || data.contains("\"error\""))
        .unwrap_or(body);
    serde_json::from_str(data).expect("a JSON-RPC response")
}

#[tokio::test]
async fn a_sessionless_call_never_returns_pending_so_its_card_is_not_re_marked() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let server = HttpServer::start(
        runtime.path(),
        &[],
        &[("HIM_KEEP_MS", "60000"), ("HIM_RETURN_AFTER_MS", "1500")],
    )
    .await;
    let http = reqwest::Client::new();
    // Its server ends with the request: a question left open after `pending` would be
    // marked kept at once, and marked again at each get_answer. So it waits to its end.
    let request = post_sessionless(
        &server,
        &http,
        &sessionless_call(
            1,
            "ask_text",
            json!({"question": "Which tag?", "timeout_ms": 3000}),
        ),
    );
    let calling = tokio::spawn(async move {
        let response = request.send().await.expect("tools/call");
        response.text().await.expect("body")
    });
    let ask = ext.take_ask().await;
    let response = response_in(&calling.await.unwrap());
    let result = &response["result"]["structuredContent"];
    assert_eq!(result["status"], "timeout", "{response}");
    assert!(result["elapsed_ms"].as_u64().unwrap() >= 3000, "{result}");
    // The next the panel sees of it is its card kept at its deadline, as any timeout's.
    let kept = ext.recv().await;
    assert_eq!(kept["type"], "ask", "{kept}");
    assert_eq!(kept["id"], ask["id"]);
    assert!(kept["kept_until_ms"].is_u64(), "{kept}");
    // human_input_status says so to such a client.
    let status = post_sessionless(
        &server,
        &http,
        &sessionless_call(2, "human_input_status", json!({})),
    )
    .send()
    .await
    .expect("tools/call");
    let status = response_in(&status.text().await.expect("body"));
    assert_eq!(
        status["result"]["structuredContent"]["return_after_ms"], 0,
        "{status}"
    );
}
