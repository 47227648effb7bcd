//! Bad input on the browser link and on agent links: each bad frame gets an `error` and is
//! skipped; a frame that cannot be framed closes only its own link; nothing crashes the host
//! or disturbs another agent.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use crate::support::*;
use him::wire::frame::{MAX_INBOUND, read_frame_sync, write_frame_sync};
use serde_json::{Value, json};

/// A raw agent link to the host, written by hand.
fn raw_agent(ext: &FakeExtension) -> UnixStream {
    let stream = UnixStream::connect(&ext.socket).expect("connect to host socket");
    stream
        .set_read_timeout(Some(PATIENCE))
        .expect("set a read timeout");
    stream
}

fn read_json(stream: &mut UnixStream) -> Value {
    let frame = read_frame_sync(stream, MAX_INBOUND)
        .expect("read")
        .expect("a frame, not EOF");
    serde_json::from_slice(&frame).expect("json")
}

#[tokio::test]
async fn bad_frames_from_the_browser_get_an_error_and_the_host_carries_on() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    for (bytes, needle) in [
        (b"this is not json".to_vec(), "not valid UTF-8 JSON"),
        (b"[1, 2, 3]".to_vec(), "not an object"),
        (br#"{"type": "teleport"}"#.to_vec(), "unknown message type"),
        (br#"{"no_type": true}"#.to_vec(), "no string \"type\""),
        (
            br#"{"type": "answer", "id": "0123456789abcdef0123456789abcdef", "action": "submit"}"#
                .to_vec(),
            "no pending question",
        ),
    ] {
        ext.send_raw(bytes).await;
        let error = ext.recv_type("error").await;
        assert!(
            error["message"].as_str().unwrap().contains(needle),
            "{error} should say {needle}"
        );
    }
    host_still_works(&mut ext, runtime.path()).await;
}

#[tokio::test]
async fn a_length_over_the_cap_from_the_browser_closes_that_link_and_the_host_exits_cleanly() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let socket = ext.socket.clone();
    ext.write_unframed(&((MAX_INBOUND as u32) + 1).to_ne_bytes())
        .await;
    let status = tokio::time::timeout(PATIENCE, ext.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(!socket.exists(), "the socket is removed on the way out");
}

#[tokio::test]
async fn a_truncated_frame_from_the_browser_ends_the_host_without_a_crash() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    ext.write_unframed(&100u32.to_ne_bytes()).await;
    ext.write_unframed(b"{\"type\":").await;
    let status = ext.close().await;
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn the_host_exits_0_on_stdin_eof_and_removes_its_socket() {
    let runtime = runtime_dir();
    let ext = FakeExtension::start(runtime.path()).await;
    let socket = ext.socket.clone();
    assert!(socket.exists());
    let status = ext.close().await;
    assert_eq!(status.code(), Some(0));
    assert!(!socket.exists());
}

#[tokio::test]
async fn bad_frames_from_an_agent_get_an_error_and_other_agents_are_undisturbed() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let mut raw = raw_agent(&ext);
    // Markdown the panel would have to parse, far past what a question needs (issue 14.3).
    let long_description = serde_json::to_vec(&json!({"type": "ask", "id": "0123456789abcdef0123456789abcdef",
        "form": {"title": "t", "description": "x".repeat(20_000), "fields": [{"name": "a", "type": "text", "label": "A"}]},
        "timeout_ms": 1000, "asked_at_ms": 0}))
    .unwrap();
    for (bytes, needle) in [
        (b"\x00\x01garbage".to_vec(), "not valid UTF-8 JSON"),
        (b"\"a string\"".to_vec(), "not an object"),
        (br#"{"type": "answer", "id": "x"}"#.to_vec(), "unknown message type"),
        (br#"{"type": "withdraw", "id": "0123456789abcdef0123456789abcdef", "reason": "timeout"}"#.to_vec(), "no pending question"),
        (br#"{"type": "ask", "id": "0123456789abcdef0123456789abcdef"}"#.to_vec(), "malformed \"ask\""),
        // A form the panel could not render, sent past him serve's checks.
        (br#"{"type": "ask", "id": "0123456789abcdef0123456789abcdef", "form": {"fields": [null]}, "timeout_ms": 1000, "asked_at_ms": 0}"#.to_vec(), "form is not valid"),
        (br#"{"type": "ask", "id": "0123456789abcdef0123456789abcdef", "form": {"title": "t", "fields": [{"name": "c", "type": "radio", "label": "C", "options": []}]}, "timeout_ms": 1000, "asked_at_ms": 0}"#.to_vec(), "form is not valid"),
        (long_description, "form is not valid: the description has 20000 characters; at most 16384 are allowed"),
    ] {
        write_frame_sync(&mut raw, &bytes).unwrap();
        let error = read_json(&mut raw);
        assert_eq!(error["type"], "error");
        assert!(error["message"].as_str().unwrap().contains(needle), "{error} should say {needle}");
    }
    // None of that reached the browser.
    nothing_came_before_a_new_question(&mut ext, runtime.path()).await;
}

#[tokio::test]
async fn an_oversize_length_from_an_agent_closes_only_that_link() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    // A well-behaved agent with a question open on the same host.
    let (agent, _) = start_agent(runtime.path(), "bystander", &[]).await;
    let call =
        tokio::spawn(
            async move { call(&agent, "ask_text", json!({"question": "Undisturbed?"})).await },
        );
    let ask = ext.take_ask().await;

    let mut raw = raw_agent(&ext);
    raw.write_all(&((MAX_INBOUND as u32) + 1).to_ne_bytes())
        .unwrap();
    let error = read_json(&mut raw);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("over this link's limit"),
        "{error}"
    );
    let mut rest = Vec::new();
    assert_eq!(
        raw.read_to_end(&mut rest).unwrap(),
        0,
        "the link is closed after the error"
    );

    ext.submit(&ask["id"], json!({"answer": "yes"})).await;
    assert_eq!(call.await.unwrap()["answer"], "yes");
}

#[tokio::test]
async fn a_truncated_frame_from_an_agent_withdraws_its_questions_and_nothing_else() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let mut raw = raw_agent(&ext);
    let ask = json!({"type": "ask", "id": "0123456789abcdef0123456789abcdef",
                     "form": {"title": "raw", "fields": [{"name": "a", "type": "text", "label": "A"}]},
                     "timeout_ms": 60000, "asked_at_ms": 0});
    write_frame_sync(&mut raw, &serde_json::to_vec(&ask).unwrap()).unwrap();
    let relayed = ext.recv_type("ask").await;
    assert_eq!(relayed["agent"]["name"], "unnamed agent");
    raw.write_all(&50u32.to_ne_bytes()).unwrap();
    raw.write_all(b"{\"type\"").unwrap();
    raw.shutdown(std::net::Shutdown::Write).unwrap();
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], relayed["id"]);
    host_still_works(&mut ext, runtime.path()).await;
}

#[tokio::test]
async fn one_agent_cannot_take_over_another_agents_question_id() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "owner", &[]).await;
    let call =
        tokio::spawn(async move { call(&agent, "ask_text", json!({"question": "Mine?"})).await });
    let ask = ext.take_ask().await;
    let mut intruder = raw_agent(&ext);
    let withdraw = json!({"type": "withdraw", "id": ask["id"], "reason": "cancelled"});
    write_frame_sync(&mut intruder, &serde_json::to_vec(&withdraw).unwrap()).unwrap();
    assert_eq!(read_json(&mut intruder)["type"], "error");
    ext.submit(&ask["id"], json!({"answer": "still mine"}))
        .await;
    assert_eq!(call.await.unwrap()["answer"], "still mine");
}

#[tokio::test]
async fn a_verdict_on_another_agents_answer_is_refused_and_reaches_no_browser() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let send = |stream: &mut UnixStream, message: Value| {
        write_frame_sync(stream, &serde_json::to_vec(&message).expect("json")).expect("write");
    };
    let greet = |name: &str| {
        let mut agent = raw_agent(&ext);
        send(
            &mut agent,
            json!({"type": "hello", "protocol": 1, "agent": {"name": name}, "pid": 1, "verdicts": true}),
        );
        assert_eq!(read_json(&mut agent)["type"], "welcome");
        agent
    };
    let mut owner = greet("owner");
    let mut other = greet("other");
    let id = "0123456789abcdef0123456789abcdef";
    send(
        &mut owner,
        json!({"type": "ask", "id": id, "timeout_ms": 60_000, "asked_at_ms": 0,
               "form": {"title": "Q", "fields": [{"name": "a", "type": "text", "label": "A", "required": true}]}}),
    );
    ext.take_ask().await;
    assert_eq!(read_json(&mut owner)["type"], "shown");
    ext.submit(&json!(id), json!({})).await;
    let answer = read_json(&mut owner);
    assert_eq!(
        (answer["type"].clone(), answer["id"].clone()),
        (json!("answer"), json!(id))
    );

    // The other agent cannot accept or refuse it: it is told so, and the browser hears nothing.
    for verdict in [
        json!({"type": "accepted", "id": id}),
        json!({"type": "refused", "id": id, "message": "no"}),
    ] {
        send(&mut other, verdict);
        let error = read_json(&mut other);
        assert_eq!(error["type"], "error", "{error}");
        assert_eq!(error["id"], id);
        assert!(
            error["message"].as_str().unwrap().contains("cannot judge"),
            "{error}"
        );
    }

    // The owner's verdict still counts: the person is told why, and the question stays open.
    // It is the next frame the browser gets: the other agent's verdicts, had the host relayed
    // them, would have gone before the errors it answered them with.
    send(
        &mut owner,
        json!({"type": "refused", "id": id, "field": "a", "message": "is required but was left empty"}),
    );
    let refused = ext.recv().await;
    assert_eq!(refused["type"], "refused", "the browser heard: {refused}");
    assert_eq!(
        (refused["id"].clone(), refused["field"].clone()),
        (json!(id), json!("a"))
    );
    ext.submit(&json!(id), json!({"a": "fixed"})).await;
    assert_eq!(read_json(&mut owner)["values"], json!({"a": "fixed"}));
    send(&mut owner, json!({"type": "accepted", "id": id}));
    assert_eq!(ext.recv_type("accepted").await["id"], id);
}
