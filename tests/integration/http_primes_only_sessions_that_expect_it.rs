//! `him serve --http` opens a session's SSE streams with a priming event (an event id and a
//! `retry` time over empty `data`, SEP-1699) only when the session's protocol is 2025-11-25
//! or later. Clients of the earlier eras `JSON.parse` every event (Gemini CLI 0.61 then
//! offers the model none of him's tools), so their streams carry JSON messages only.
//! Raw HTTP, so the test sees each event as it is on the wire: the `initialize` response, a
//! request's response stream (`tools/list`), and the standalone GET stream, in every era.

use std::time::Duration;

use crate::support::http::*;
use crate::support::*;
use futures::StreamExt;
use serde_json::{Value, json};

/// One SSE event as it came: its data (`None` for a comment such as a keep-alive), id and
/// retry time.
#[derive(Debug, Default)]
struct Event {
    data: Option<String>,
    id: Option<String>,
    retry: Option<u64>,
}

impl Event {
    fn is_priming(&self) -> bool {
        self.data.as_deref() == Some("")
    }

    /// The event's JSON-RPC message; fails the test when the data is not one, as a client
    /// of 2025-03-26 or 2025-06-18 would.
    fn message(&self) -> Value {
        let data = self.data.as_deref().expect("an event with data");
        serde_json::from_str(data)
            .unwrap_or_else(|e| panic!("event data {data:?} is not JSON ({e}): {self:?}"))
    }
}

/// The complete events in `text`; a partial one at its end is left out.
fn events(text: &str) -> Vec<Event> {
    let text = text.replace("\r\n", "\n");
    let mut complete: Vec<&str> = text.split("\n\n").collect();
    complete.pop();
    complete
        .into_iter()
        .map(|block| {
            let mut event = Event::default();
            for line in block.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "data" => match &mut event.data {
                        Some(data) => {
                            data.push('\n');
                            data.push_str(value);
                        }
                        None => event.data = Some(value.to_owned()),
                    },
                    "id" => event.id = Some(value.to_owned()),
                    "retry" => event.retry = value.parse().ok(),
                    _ => {}
                }
            }
            event
        })
        .collect()
}

/// What a server may send a client of `era` on one stream: for 2025-11-25 and later a
/// priming event with an id and a retry time first, then messages; for earlier eras only
/// messages. Returns the messages.
fn check_stream(era: &str, what: &str, events: &[Event]) -> Vec<Value> {
    let messages: Vec<&Event> = events.iter().filter(|e| e.data.is_some()).collect();
    let primed = era >= "2025-11-25";
    let rest = if primed {
        let first = messages
            .first()
            .unwrap_or_else(|| panic!("{era} {what}: no event at all"));
        assert!(
            first.is_priming(),
            "{era} {what}: the first event is not a priming event: {first:?}"
        );
        assert!(first.id.is_some(), "{era} {what}: priming without an id");
        assert_eq!(first.retry, Some(3000), "{era} {what}: priming retry time");
        &messages[1..]
    } else {
        &messages[..]
    };
    rest.iter()
        .map(|event| {
            assert!(
                !event.is_priming(),
                "{era} {what}: an event with empty data, which a client of {era} cannot \
                 parse: {events:?}"
            );
            event.message()
        })
        .collect()
}

/// The headers a client of `era` sends after `initialize`: 2025-06-18 brought
/// `MCP-Protocol-Version`.
fn in_session(
    request: reqwest::RequestBuilder,
    session: &str,
    era: &str,
) -> reqwest::RequestBuilder {
    let request = request.header("Mcp-Session-Id", session);
    if era >= "2025-06-18" {
        request.header("Mcp-Protocol-Version", era)
    } else {
        request
    }
}

async fn text_of(response: reqwest::Response) -> String {
    tokio::time::timeout(PATIENCE, response.text())
        .await
        .expect("the response ended in time")
        .expect("response body")
}

/// Initializes a session of `era` by hand, checking the `initialize` response's events;
/// returns the session id.
async fn initialize(server: &HttpServer, http: &reqwest::Client, era: &str) -> String {
    let body = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": era, "capabilities": {},
                   "clientInfo": {"name": format!("raw-{era}"), "version": "1.0.0"}}
    });
    let response = server
        .post(http, &body.to_string())
        .send()
        .await
        .expect("initialize");
    assert_eq!(response.status(), 200, "{era}: initialize refused");
    let session = response
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .expect("session id is text")
        .to_owned();
    let messages = check_stream(era, "initialize", &events(&text_of(response).await));
    assert_eq!(messages.len(), 1, "{era}: {messages:?}");
    assert_eq!(messages[0]["result"]["protocolVersion"], era);
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let response = in_session(server.post(http, initialized), &session, era)
        .send()
        .await
        .expect("initialized");
    assert_eq!(response.status(), 202);
    session
}

const ERAS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

#[tokio::test]
async fn initialize_and_request_streams_are_primed_only_from_2025_11_25() {
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let http = reqwest::Client::new();
    for era in ERAS {
        let session = initialize(&server, &http, era).await;
        let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let response = in_session(server.post(&http, list), &session, era)
            .send()
            .await
            .expect("tools/list");
        assert_eq!(response.status(), 200);
        let messages = check_stream(era, "tools/list", &events(&text_of(response).await));
        assert_eq!(messages.len(), 1, "{era}: {messages:?}");
        let tools = messages[0]["result"]["tools"]
            .as_array()
            .expect("a tools list");
        assert_eq!(tools.len(), TOOLS.len(), "{era}");
    }
}

#[tokio::test]
async fn the_standalone_stream_is_primed_only_from_2025_11_25() {
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let http = reqwest::Client::new();
    for era in ERAS {
        let session = initialize(&server, &http, era).await;
        let get = http
            .get(&server.url)
            .header("Authorization", server.bearer())
            .header("Accept", "text/event-stream");
        let response = in_session(get, &session, era)
            .send()
            .await
            .expect("GET stream");
        assert_eq!(response.status(), 200, "{era}: GET stream refused");
        let mut body = response.bytes_stream();
        let mut seen = String::new();
        if era >= "2025-11-25" {
            // The priming event comes at once.
            while events(&seen).is_empty() {
                let chunk = tokio::time::timeout(PATIENCE, body.next())
                    .await
                    .expect("the priming event in time")
                    .expect("the stream stays open")
                    .expect("a chunk");
                seen.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
            }
            check_stream(era, "GET stream", &events(&seen));
        } else {
            // Nothing is due on this stream, so it is ended (the session deleted) and
            // everything it carried until its end is read: no priming event came first.
            let delete = http
                .delete(&server.url)
                .header("Authorization", server.bearer());
            let deleted = in_session(delete, &session, era)
                .send()
                .await
                .expect("DELETE");
            assert!(deleted.status().is_success(), "{era}: {}", deleted.status());
            tokio::time::timeout(PATIENCE, async {
                while let Some(chunk) = body.next().await {
                    let chunk = chunk.expect("a chunk");
                    seen.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
                }
            })
            .await
            .expect("the GET stream ended with its session");
            let messages = check_stream(era, "GET stream", &events(&seen));
            assert!(messages.is_empty(), "{era}: {messages:?}");
        }
    }
}

#[tokio::test]
async fn a_sessionless_2026_07_28_response_carries_messages_only() {
    // Without a session there is no stream to resume, so no event id and no priming event.
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let http = reqwest::Client::new();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "human_input_status", "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "sessionless", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    }});
    let response = server
        .post(&http, &call.to_string())
        .header("Mcp-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "human_input_status")
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("a sessionless call");
    assert_eq!(response.status(), 200);
    let events = events(&text_of(response).await);
    let messages: Vec<Value> = events
        .iter()
        .filter(|e| e.data.is_some())
        .map(Event::message)
        .collect();
    assert_eq!(messages.last().expect("a response")["id"], 7);
    assert_eq!(
        messages.last().expect("a response")["result"]["structuredContent"]["protocol_version"],
        "2026-07-28"
    );
}
