//! Many agents, many hosts: every question reaches every browser, the first answer wins,
//! the others are withdrawn, and a browser that arrives (or comes back) mid-question gets
//! it under the same id.

use crate::support::*;
use serde_json::{Value, json};

fn ask_in_background(
    agent: Agent,
    tool: &'static str,
    args: Value,
) -> tokio::task::JoinHandle<Value> {
    tokio::spawn(async move { call(&agent, tool, args).await })
}

#[tokio::test]
async fn two_agents_and_two_hosts_each_answer_reaches_its_asker_and_the_other_host_is_told() {
    let runtime = runtime_dir();
    let mut host1 = FakeExtension::start(runtime.path()).await;
    let mut host2 = FakeExtension::start(runtime.path()).await;
    let (alice, _) = start_agent(runtime.path(), "alice", &[]).await;
    let (bob, _) = start_agent(runtime.path(), "bob", &[]).await;

    let a = ask_in_background(alice, "ask_text", json!({"question": "Alice asks"}));
    let a_on_1 = host1.take_ask().await;
    let a_on_2 = host2.take_ask().await;
    assert_eq!(
        a_on_1["id"], a_on_2["id"],
        "the same question id on both hosts"
    );
    assert_eq!(a_on_1["agent"]["name"], "alice");

    let b = ask_in_background(bob, "ask_text", json!({"question": "Bob asks"}));
    let b_on_1 = host1.take_ask().await;
    let b_on_2 = host2.take_ask().await;
    assert_eq!(b_on_1["id"], b_on_2["id"]);
    assert_eq!(b_on_2["agent"]["name"], "bob");
    assert_ne!(a_on_1["id"], b_on_1["id"]);

    // Alice's question answered in browser 1, Bob's in browser 2.
    host1
        .submit(&a_on_1["id"], json!({"answer": "for alice"}))
        .await;
    host2
        .submit(&b_on_2["id"], json!({"answer": "for bob"}))
        .await;
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    assert_eq!(a["answer"], "for alice");
    assert_eq!(b["answer"], "for bob");

    let w2 = host2.recv_type("withdraw").await;
    assert_eq!(
        (w2["id"].clone(), w2["reason"].clone()),
        (a_on_1["id"].clone(), json!("answered"))
    );
    let w1 = host1.recv_type("withdraw").await;
    assert_eq!(
        (w1["id"].clone(), w1["reason"].clone()),
        (b_on_2["id"].clone(), json!("answered"))
    );
}

#[tokio::test]
async fn the_first_answer_wins_and_a_second_one_is_refused() {
    let runtime = runtime_dir();
    let mut host1 = FakeExtension::start(runtime.path()).await;
    let mut host2 = FakeExtension::start(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "agent", &[]).await;
    let call = ask_in_background(agent, "ask_confirm", json!({"question": "Ship?"}));
    let q1 = host1.take_ask().await;
    let q2 = host2.take_ask().await;
    host1.submit(&q1["id"], json!({"confirmed": true})).await;
    assert_eq!(call.await.unwrap()["confirmed"], true);
    // Host 2 is told to withdraw; if its person answers anyway, the host refuses it.
    assert_eq!(host2.recv_type("withdraw").await["id"], q2["id"]);
    host2.submit(&q2["id"], json!({"confirmed": false})).await;
    assert_eq!(host2.recv_type("error").await["id"], q2["id"]);
}

#[tokio::test]
async fn a_host_started_after_the_question_was_asked_receives_it() {
    let runtime = runtime_dir();
    let mut early = FakeExtension::start(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "agent", &[]).await;
    let call = ask_in_background(agent, "ask_text", json!({"question": "Late browser?"}));
    let first = early.take_ask().await;
    let mut late = FakeExtension::start(runtime.path()).await;
    let again = late.take_ask().await;
    assert_eq!(again["id"], first["id"]);
    assert_eq!(
        again["asked_at_ms"], first["asked_at_ms"],
        "same question, same deadline"
    );
    late.submit(&again["id"], json!({"answer": "from the late browser"}))
        .await;
    assert_eq!(call.await.unwrap()["answer"], "from the late browser");
    assert_eq!(early.recv_type("withdraw").await["id"], first["id"]);
}

#[tokio::test]
async fn a_host_killed_mid_question_and_replaced_gets_it_again_with_the_same_id() {
    let runtime = runtime_dir();
    let mut host = FakeExtension::start(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "agent", &[]).await;
    let call = ask_in_background(
        agent,
        "ask_choice",
        json!({"question": "Colour?", "options": ["red", "blue"]}),
    );
    let before = host.take_ask().await;
    host.kill().await;
    let mut replacement = FakeExtension::start(runtime.path()).await;
    let after = replacement.take_ask().await;
    assert_eq!(after["id"], before["id"]);
    replacement
        .submit(&after["id"], json!({"choice": "blue"}))
        .await;
    let result = call.await.unwrap();
    assert_eq!(result["status"], "answered");
    assert_eq!(result["answer"], "blue");
    assert_eq!(result["question_id"], before["id"]);
}

#[tokio::test]
async fn when_the_browser_does_not_come_back_the_question_moves_to_the_chat() {
    let runtime = runtime_dir();
    let mut host = FakeExtension::start(runtime.path()).await;
    let (agent, _) = start_agent(
        runtime.path(),
        "agent",
        &[("HIM_RECONNECT_GRACE_MS", "300")],
    )
    .await;
    let call = ask_in_background(
        agent,
        "ask_choice",
        json!({"question": "Colour?", "options": ["red", "blue"]}),
    );
    let ask = host.take_ask().await;
    host.kill().await;
    let result = call.await.unwrap();
    assert_eq!(result["status"], "needs_user_input");
    assert_eq!(result["via"], "chat");
    assert_eq!(
        result["question_id"], ask["id"],
        "the question keeps its id on the next channel"
    );
    assert!(
        result["next_step"].as_str().unwrap().contains("went away"),
        "{result}"
    );
    assert!(
        result["message"].as_str().unwrap().contains("2. blue"),
        "{result}"
    );
}

#[tokio::test]
async fn with_no_browser_the_question_is_handed_back_to_the_chat_at_once() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "agent", &[]).await;
    let result = call(
        &agent,
        "ask_choice",
        json!({"question": "Which plan?", "options": [{"label": "A", "description": "fast"}, "B"], "default": "B"}),
    )
    .await;
    assert_complete(&result);
    assert_eq!(result["status"], "needs_user_input");
    assert_eq!(result["fallback"], "return");
    let message = result["message"].as_str().unwrap();
    assert!(
        message.contains("Which plan?")
            && message.contains("1. A — fast")
            && message.contains("default: B"),
        "{message}"
    );
    assert!(
        result["next_step"]
            .as_str()
            .unwrap()
            .contains("ask_choice again")
    );
}

#[tokio::test]
async fn with_the_fallback_off_no_browser_means_unsupported() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "agent", &[("HIM_FALLBACK", "off")]).await;
    let result = call(&agent, "ask_text", json!({"question": "Anyone?"})).await;
    assert_eq!(result["status"], "unsupported");
    assert_eq!(result["via"], "none");
}

#[tokio::test]
async fn a_stale_socket_is_removed_and_does_not_count_as_a_browser() {
    let runtime = runtime_dir();
    let hosts = runtime.path().join("hosts");
    // As the host makes it: only a private directory is trusted with clean-up.
    std::fs::create_dir_all(&hosts).unwrap();
    std::fs::set_permissions(&hosts, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let stale = hosts.join("999999.sock");
    leave_stale_socket(&stale);
    assert!(stale.exists());
    let (agent, _) = start_agent(runtime.path(), "agent", &[]).await;
    let result = call(&agent, "ask_text", json!({"question": "Anyone?"})).await;
    assert_eq!(result["status"], "needs_user_input");
    assert!(!stale.exists(), "the stale socket was removed");
}

/// Polls the agent's status until it sees no browser: it has seen its link end.
async fn sees_no_browser(agent: &Agent) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let status = call(agent, "human_input_status", json!({})).await;
        if status["browsers"].as_array().is_some_and(Vec::is_empty) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{status}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A service worker that restarts kills its host and starts another a moment later. A
/// question asked in that moment, by an agent that was linked to the old host, waits for
/// the new one as a question asked a moment earlier would; after the grace, new questions
/// move on at once.
#[tokio::test]
async fn a_question_asked_just_after_the_host_went_away_waits_for_the_next_host() {
    let runtime = runtime_dir();
    let mut first = FakeExtension::start(runtime.path()).await;
    // A grace far longer than the test: the next host's start never races it.
    let (agent, _) = start_agent(
        runtime.path(),
        "restarting",
        &[("HIM_RECONNECT_GRACE_MS", "600000")],
    )
    .await;
    // One whose grace ends soon, for the question after it.
    let (brief, _) = start_agent(
        runtime.path(),
        "brief-grace",
        &[("HIM_RECONNECT_GRACE_MS", "200")],
    )
    .await;
    let agent = std::sync::Arc::new(agent);
    let asked = {
        let agent = agent.clone();
        tokio::spawn(async move { call(&agent, "ask_text", json!({"question": "One"})).await })
    };
    let ask = first.take_ask().await;
    first.submit(&ask["id"], json!({"answer": "1"})).await;
    assert_eq!(asked.await.unwrap()["via"], "extension");

    first.kill().await;
    // The agents have seen their links end: no browser is linked when the next question opens.
    sees_no_browser(&agent).await;
    sees_no_browser(&brief).await;
    let asked = {
        let agent = agent.clone();
        tokio::spawn(async move { call(&agent, "ask_text", json!({"question": "Two"})).await })
    };
    // Answered in the next host's panel: it waited rather than being handed back.
    let mut second = FakeExtension::start(runtime.path()).await;
    let ask = second.take_ask().await;
    assert_eq!(ask["form"]["fields"][0]["label"], "Two");
    second.submit(&ask["id"], json!({"answer": "2"})).await;
    let result = asked.await.unwrap();
    assert_eq!(
        (result["via"].clone(), result["answer"].clone()),
        (json!("extension"), json!("2")),
        "the question was handed back although a browser was linked moments ago: {result}"
    );
    second.kill().await;
    sees_no_browser(&brief).await;

    // The brief agent's grace (200 ms from the loss it has seen) is over after this wait,
    // however slowly the machine runs: a lower bound, not a race.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let late = call(&brief, "ask_text", json!({"question": "Three"})).await;
    assert_eq!(late["status"], "needs_user_input", "{late}");
}
