//! `him serve --http`: rmcp's own Streamable HTTP client reaches the person through the real
//! native host, sessions stay apart, and a client that leaves has its questions withdrawn.

use crate::support::http::*;
use crate::support::*;
use serde_json::json;

#[tokio::test]
async fn an_http_client_lists_the_tools_and_gets_the_persons_answer_with_progress_meanwhile() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let server = HttpServer::start(runtime.path(), &[], &[("HIM_HEARTBEAT_MS", "100")]).await;
    let (agent, client) = server.connect("web-chat").await;

    let tools = agent.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    let mut expected = TOOLS.to_vec();
    expected.sort();
    assert_eq!(names, expected);
    assert!(tools.iter().all(|t| t.output_schema.is_some()));

    let call = tokio::spawn(async move {
        let result = call(
            &agent,
            "ask_choice",
            json!({"question": "Which database?", "options": ["Postgres", "SQLite"]}),
        )
        .await;
        agent.cancel().await.ok();
        result
    });
    let ask = ext.take_ask().await;
    assert_eq!(ask["agent"]["name"], "web-chat");
    let progress = client.progress.clone();
    eventually("progress notifications over the SSE stream", || {
        progress.load(std::sync::atomic::Ordering::SeqCst) >= 2
    })
    .await;
    ext.submit(&ask["id"], json!({"choice": "SQLite"})).await;
    let result = call.await.expect("call task");
    assert_complete(&result);
    assert_eq!(result["status"], "answered");
    assert_eq!(result["via"], "extension");
    assert_eq!(result["answer"], "SQLite");
    assert_eq!(result["question_id"], ask["id"]);
}

#[tokio::test]
async fn two_sessions_at_once_are_routed_apart() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let (first, _) = server.connect("chat-one").await;
    let (second, _) = server.connect("chat-two").await;
    let ask_in = |agent: Agent, question: &'static str| {
        tokio::spawn(async move {
            let result = call(&agent, "ask_text", json!({"question": question})).await;
            agent.cancel().await.ok();
            result
        })
    };
    let one = ask_in(first, "First?");
    let two = ask_in(second, "Second?");
    let a = ext.take_ask().await;
    let b = ext.take_ask().await;
    let mut by_agent = std::collections::HashMap::new();
    for ask in [&a, &b] {
        let name = ask["agent"]["name"]
            .as_str()
            .expect("agent name")
            .to_owned();
        by_agent.insert(name, ask.clone());
    }
    let ask_one = &by_agent["chat-one"];
    let ask_two = &by_agent["chat-two"];
    assert_eq!(ask_one["form"]["title"], "First?");
    assert_eq!(ask_two["form"]["title"], "Second?");
    // Answer the second first: each answer must still reach its own session.
    ext.submit(&ask_two["id"], json!({"answer": "for two"}))
        .await;
    ext.submit(&ask_one["id"], json!({"answer": "for one"}))
        .await;
    let (one, two) = (one.await.unwrap(), two.await.unwrap());
    assert_eq!(one["answer"], "for one");
    assert_eq!(one["question_id"], ask_one["id"]);
    assert_eq!(two["answer"], "for two");
    assert_eq!(two["question_id"], ask_two["id"]);
}

#[tokio::test]
async fn a_session_that_disconnects_mid_question_has_it_withdrawn() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let (leaver, _) = server.connect("leaver").await;
    let (stayer, _) = server.connect("stayer").await;
    let peer = leaver.peer().clone();
    let _pending = tokio::spawn(async move {
        peer.call_tool(params("ask_text", json!({"question": "Still there?"})))
            .await
    });
    let ask = ext.take_ask().await;
    assert_eq!(ask["agent"]["name"], "leaver");
    // The client closes its session (HTTP DELETE) while the question waits.
    leaver.cancel().await.expect("close the session");
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"]);
    // The other session is untouched and still asks.
    let call =
        tokio::spawn(async move { call(&stayer, "ask_text", json!({"question": "Hi?"})).await });
    let ask = ext.take_ask().await;
    assert_eq!(ask["agent"]["name"], "stayer");
    ext.submit(&ask["id"], json!({"answer": "hello"})).await;
    assert_eq!(call.await.unwrap()["answer"], "hello");
}

#[tokio::test]
async fn an_idle_session_expires() {
    let runtime = runtime_dir();
    // Long enough for the request below to come before it; the expiry is waited for.
    let server = HttpServer::start(runtime.path(), &[], &[("HIM_HTTP_IDLE_MS", "1000")]).await;
    let http = reqwest::Client::new();
    let session = server.initialize(&http, "idler").await;
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let response = server
        .post(&http, list)
        .header("Mcp-Session-Id", &session)
        .header("Mcp-Protocol-Version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // Read to its end: a response left unread is a client gone mid-call, which ends the
    // session as abandoned, not idle.
    let tools = response.text().await.unwrap();
    assert!(tools.contains("ask_text"), "{tools}");
    // Polling with requests would keep it alive: the server's log says when it expired.
    let expired = format!("session={session}");
    eventually("the session to expire", || {
        server
            .stderr_text()
            .lines()
            .any(|line| line.contains("HTTP session expired (idle)") && line.contains(&expired))
    })
    .await;
    let status = server
        .post(&http, list)
        .header("Mcp-Session-Id", &session)
        .header("Mcp-Protocol-Version", "2025-06-18")
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 404, "an expired session is unknown");
}

#[tokio::test]
async fn stopping_the_server_withdraws_its_questions_and_exits_cleanly() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let mut server = HttpServer::start(runtime.path(), &[], &[]).await;
    let (agent, _) = server.connect("stopped").await;
    let peer = agent.peer().clone();
    let _pending = tokio::spawn(async move {
        peer.call_tool(params("ask_text", json!({"question": "Hm?"})))
            .await
    });
    let ask = ext.take_ask().await;
    let pid = server.child.id().expect("server pid").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill -TERM");
    assert!(killed.success());
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"]);
    // Withdrawn by the server on its way out, not only noticed by the host when the link drops.
    assert_eq!(withdraw["reason"], "shutdown");
    let status = tokio::time::timeout(PATIENCE, server.child.wait())
        .await
        .expect("the server did not stop")
        .expect("wait");
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn after_five_hundred_health_checks_a_real_client_is_served_and_a_waiting_call_kept() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let server = HttpServer::start(runtime.path(), &[], &[("HIM_LOG", "warn")]).await;
    // A client that connected first and waits for the person all along.
    let (early, _) = server.connect("early-bird").await;
    let waiting = tokio::spawn(async move {
        let result = call(&early, "ask_text", json!({"question": "Still waiting?"})).await;
        early.cancel().await.ok();
        result
    });
    let early_ask = ext.take_ask().await;
    // `claude mcp list` and `gemini mcp list` open a session and never end it.
    let http = reqwest::Client::new();
    for i in 0..500 {
        server.initialize(&http, &format!("health-check-{i}")).await;
    }
    let (late, _) = server.connect("real-client").await;
    let late_call = tokio::spawn(async move {
        let result = call(&late, "ask_text", json!({"question": "Served?"})).await;
        late.cancel().await.ok();
        result
    });
    let late_ask = ext.take_ask().await;
    assert_eq!(late_ask["agent"]["name"], "real-client");
    ext.submit(&late_ask["id"], json!({"answer": "yes"})).await;
    assert_eq!(late_call.await.unwrap()["answer"], "yes");
    ext.submit(&early_ask["id"], json!({"answer": "still here"}))
        .await;
    assert_eq!(waiting.await.unwrap()["answer"], "still here");
}
