//! A session's questions end with the session, however it ends, at once and as ended by the
//! server (`shutdown`): not 5 s later as `cancelled`, when rmcp gives up waiting for the
//! session's calls and cancels them. The gate holds no server of any session: the session's
//! transport tells its server (`src/mcp/ending.rs`).

use std::time::{Duration, Instant};

use crate::support::http::*;
use crate::support::*;
use serde_json::json;

/// rmcp's own wait for a closed session's calls, before it cancels them.
const RMCP_DRAIN: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_deleted_session_withdraws_its_open_question_at_once_as_ended() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let (leaver, _) = server.connect("leaver").await;
    let peer = leaver.peer().clone();
    let _pending = tokio::spawn(async move {
        peer.call_tool(params("ask_text", json!({"question": "Still there?"})))
            .await
    });
    let ask = ext.take_ask().await;
    let deleted = Instant::now();
    leaver.cancel().await.expect("DELETE the session");
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"]);
    // Ended by the session's end, not by rmcp cancelling the call once its wait ran out.
    assert_eq!(withdraw["reason"], "shutdown", "{withdraw}");
    eprintln!("withdrawn {:?} after the DELETE", deleted.elapsed());
}

#[tokio::test]
async fn a_session_whose_client_vanished_mid_call_withdraws_its_question_as_ended() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let http = reqwest::Client::new();
    let session = server.initialize(&http, "vanishing").await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "ask_confirm", "arguments": {"question": "Deploy?"}}});
    let response = server
        .post(&http, &call.to_string())
        .header("Mcp-Session-Id", &session)
        .header("Mcp-Protocol-Version", "2025-06-18")
        .send()
        .await
        .expect("tools/call");
    assert_eq!(response.status(), 200);
    let ask = ext.take_ask().await;
    assert_eq!(ask["agent"]["name"], "vanishing");
    // The client dies: its connection closes, with no DELETE and no cancellation.
    let gone = Instant::now();
    drop(response);
    drop(http);
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"]);
    // The gate closed the abandoned session in rmcp; its server heard of it at once.
    assert_eq!(withdraw["reason"], "shutdown", "{withdraw}");
    eprintln!(
        "withdrawn {:?} after the client vanished (grace {:?}, rmcp's own wait {RMCP_DRAIN:?})",
        gone.elapsed(),
        Duration::from_secs(5)
    );
}
