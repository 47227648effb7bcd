//! Issue 24: a question whose call ended unanswered stays answerable in the panel, the
//! person's answer is kept in `<state>/answers/<id>.json`, and the agent collects it with
//! `get_answer`, by asking the same question again, or with `him ask --answer-of` — across
//! restarts of `him serve` and of the browser's host. Never kept: a form with a password
//! field, a permission prompt. Real binary: rmcp's client on `him serve`, the native host as
//! the browser starts it (`FakeExtension`), raw agents on the host's socket.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::*;
use serde_json::{Value, json};

/// Keep questions for a minute, unless a test says otherwise.
const KEEP: (&str, &str) = ("HIM_KEEP_MS", "60000");

fn answers_dir(runtime: &Path) -> PathBuf {
    state_dir(runtime).join("answers")
}

fn record_path(runtime: &Path, id: &Value) -> PathBuf {
    answers_dir(runtime).join(format!("{}.json", id.as_str().expect("id")))
}

fn read_record(runtime: &Path, id: &Value) -> Value {
    let bytes = std::fs::read(record_path(runtime, id)).expect("the kept record");
    serde_json::from_slice(&bytes).expect("the record is JSON")
}

/// The host's `ask` that keeps question `id`: marked with `kept_until_ms`.
async fn kept_card(ext: &mut FakeExtension, id: &Value) -> Value {
    loop {
        let frame = ext.recv().await;
        assert!(
            !(frame["type"] == "withdraw" && &frame["id"] == id),
            "the question was withdrawn, not kept: {frame}"
        );
        if frame["type"] == "ask" && &frame["id"] == id {
            assert!(
                frame["kept_until_ms"].is_u64(),
                "a kept card says until when: {frame}"
            );
            return frame;
        }
    }
}

/// Asks `tool` with `args` (a 1 s timeout); the extension shows it and lets the call time
/// out. Returns the timeout result and the question's id, once its card is kept.
async fn time_out_and_keep(
    agent: Agent,
    ext: &mut FakeExtension,
    tool: &str,
    args: Value,
) -> (Agent, Value, Value) {
    let tool = tool.to_owned();
    let call = tokio::spawn(async move {
        let result = call(&agent, &tool, args).await;
        (agent, result)
    });
    let ask = ext.take_ask().await;
    let id = ask["id"].clone();
    let card = kept_card(ext, &id).await;
    assert_eq!(card["form"], ask["form"], "the same form stays on the card");
    let (agent, result) = call.await.expect("call task");
    assert_complete(&result);
    assert_eq!(result["status"], "timeout");
    (agent, result, id)
}

fn choice_args() -> Value {
    json!({"question": "Which database?", "options": ["Postgres", "SQLite"], "timeout_ms": 1000})
}

#[tokio::test]
async fn a_late_answer_in_the_panel_is_collected_with_get_answer_typed_and_marked_late() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP]).await;
    let (agent, result, id) = time_out_and_keep(agent, &mut ext, "ask_choice", choice_args()).await;
    let question_id = id.as_str().unwrap();
    // The timeout names the id and says how to collect it, and that no answer is no consent.
    let next_step = result["next_step"].as_str().unwrap();
    assert!(next_step.contains("get_answer"), "{next_step}");
    assert!(next_step.contains(question_id), "{next_step}");
    assert!(next_step.contains("not consent"), "{next_step}");
    assert!(result["message"].as_str().unwrap().contains(question_id));
    assert_eq!(result["late"], false);
    // The question was written when kept, not only when answered: 0600 in a 0700 folder.
    let record = read_record(runtime.path(), &id);
    assert_eq!(record["tool"], "ask_choice");
    assert!(record["answer"].is_null());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&answers_dir(runtime.path())), 0o700);
    assert_eq!(mode(&record_path(runtime.path(), &id)), 0o600);

    // The person answers afterwards: a value the form did not offer is refused for them to
    // correct, as the agent would have; then the right one is taken.
    ext.submit(&id, json!({"choice": "MySQL"})).await;
    let refused = ext.verdict_on(&id).await;
    assert_eq!(refused["type"], "refused", "{refused}");
    assert_eq!(refused["field"], "choice");
    ext.submit(&id, json!({"choice": "SQLite"})).await;
    assert_eq!(ext.verdict_on(&id).await["type"], "accepted");
    assert_eq!(
        read_record(runtime.path(), &id)["answer"]["values"]["choice"],
        "SQLite"
    );

    let late = call(
        &agent,
        "get_answer",
        json!({"question_id": id, "wait_ms": 0}),
    )
    .await;
    assert_complete(&late);
    assert_eq!(late["status"], "answered", "{late}");
    assert_eq!(late["tool"], "ask_choice");
    assert_eq!(late["answer"], "SQLite");
    assert_eq!(late["selected"], json!(["SQLite"]));
    assert_eq!(late["question_id"], id);
    assert_eq!(late["late"], true);
    assert!(
        late["answered_at"].as_str().unwrap().ends_with('Z'),
        "{late}"
    );
    // Collected: the file is gone, and asking again finds nothing.
    assert!(!record_path(runtime.path(), &id).exists());
    let again = call(
        &agent,
        "get_answer",
        json!({"question_id": id, "wait_ms": 0}),
    )
    .await;
    assert_eq!(again["status"], "unknown", "{again}");
    assert_eq!(again["late"], false);
}

#[tokio::test]
async fn the_same_question_asked_again_returns_its_kept_answer_at_once() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP]).await;
    let (agent, _, id) = time_out_and_keep(agent, &mut ext, "ask_choice", choice_args()).await;
    ext.submit(&id, json!({"choice": "Postgres"})).await;
    assert_eq!(ext.verdict_on(&id).await["type"], "accepted");

    // The same tool and arguments (another wait makes no other question).
    let mut args = choice_args();
    args["timeout_ms"] = json!(30_000);
    let result = call(&agent, "ask_choice", args).await;
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["answer"], "Postgres");
    assert_eq!(result["question_id"], id);
    assert_eq!(result["late"], true);
    assert!(result["answered_at"].is_string());
    // The agent asked anew, and may not know the answer is older than its question.
    assert!(
        result["next_step"]
            .as_str()
            .unwrap()
            .contains("check with the person first"),
        "{result}"
    );
    assert!(!record_path(runtime.path(), &id).exists(), "collected");
    // No second card: the next thing the panel sees is the next question.
    let next = tokio::spawn(async move {
        call(&agent, "ask_text", json!({"question": "And the port?"})).await
    });
    let ask = ext.take_ask().await;
    assert_eq!(ask["form"]["title"], "And the port?");
    ext.submit(&ask["id"], json!({"answer": "5432"})).await;
    assert_eq!(next.await.unwrap()["late"], false);
}

#[tokio::test]
async fn asked_again_while_still_open_the_call_waits_on_the_same_card() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP]).await;
    let (agent, _, id) = time_out_and_keep(agent, &mut ext, "ask_choice", choice_args()).await;
    let mut args = choice_args();
    args["timeout_ms"] = json!(30_000);
    let again = tokio::spawn(async move { call(&agent, "ask_choice", args).await });
    // The same id again, awaited once more: no longer marked kept.
    let ask = ext.take_ask().await;
    assert_eq!(ask["id"], id);
    assert!(ask.get("kept_until_ms").is_none(), "{ask}");
    ext.submit(&id, json!({"choice": "SQLite"})).await;
    let result = again.await.unwrap();
    assert_eq!(result["status"], "answered");
    assert_eq!(result["question_id"], id);
    assert_eq!(result["late"], false, "answered while this call waited");
    assert!(
        !record_path(runtime.path(), &id).exists(),
        "answered: no longer kept"
    );
}

#[tokio::test]
async fn get_answer_waits_for_an_open_question_and_says_pending_when_none_comes() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP]).await;
    let (agent, _, id) = time_out_and_keep(
        agent,
        &mut ext,
        "ask_text",
        json!({"question": "Which tag?", "timeout_ms": 1000}),
    )
    .await;
    let pending = call(
        &agent,
        "get_answer",
        json!({"question_id": id, "wait_ms": 0}),
    )
    .await;
    assert_complete(&pending);
    assert_eq!(pending["status"], "pending", "{pending}");
    assert!(
        pending["next_step"]
            .as_str()
            .unwrap()
            .contains("get_answer")
    );
    // Waiting: the card is the agent's again until the wait ends, then kept again.
    let waiting = tokio::spawn(async move {
        let result = call(
            &agent,
            "get_answer",
            json!({"question_id": id, "wait_ms": 1000}),
        )
        .await;
        (agent, result)
    });
    let id = pending["question_id"].clone();
    let ask = ext.take_ask().await;
    assert_eq!(ask["id"], id);
    kept_card(&mut ext, &id).await;
    let (agent, result) = waiting.await.unwrap();
    assert_eq!(result["status"], "pending", "{result}");
    let waiting = tokio::spawn(async move {
        call(
            &agent,
            "get_answer",
            json!({"question_id": id, "wait_ms": 30_000}),
        )
        .await
    });
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"answer": "v2.0"})).await;
    let result = waiting.await.unwrap();
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["answer"], "v2.0");
    assert_eq!(result["late"], true);
}

#[tokio::test]
async fn a_kept_question_outlives_him_serve_and_the_host_and_is_offered_again() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP]).await;
    // The client goes away mid-call: him serve keeps what the person saw.
    let peer = agent.peer().clone();
    let pending = tokio::spawn(async move {
        peer.call_tool(params("ask_text", json!({"question": "Release name?"})))
            .await
    });
    let ask = ext.take_ask().await;
    let id = ask["id"].clone();
    agent.cancel().await.unwrap();
    kept_card(&mut ext, &id).await;
    assert!(pending.await.unwrap().is_err(), "the client is gone");
    // The browser closes and comes back: the new host offers the kept question again.
    assert!(ext.close().await.success());
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let offered = kept_card(&mut ext, &id).await;
    assert_eq!(offered["form"], ask["form"]);
    assert_eq!(offered["agent"]["name"], "claude-code");
    ext.submit(&id, json!({"answer": "Aurora"})).await;
    assert_eq!(ext.verdict_on(&id).await["type"], "accepted");
    // A new him serve, with no browser at all, collects it.
    ext.kill().await;
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP]).await;
    let late = call(&agent, "get_answer", json!({"question_id": id})).await;
    assert_eq!(late["status"], "answered", "{late}");
    assert_eq!(late["answer"], "Aurora");
    assert_eq!(late["late"], true);
}

#[tokio::test]
async fn an_expired_question_is_reported_expired_its_file_gone_and_its_card_withdrawn() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let keep = [("HIM_KEEP_MS", "1500")];
    let (agent, _) = start_agent(runtime.path(), "claude-code", &keep).await;
    let (agent, _, first) = time_out_and_keep(
        agent,
        &mut ext,
        "ask_text",
        json!({"question": "First?", "timeout_ms": 1000}),
    )
    .await;
    // The host withdraws the card when its time is up, and removes the file.
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], first);
    assert!(!record_path(runtime.path(), &first).exists());
    // With no browser, the agent finds the expired record itself.
    let (agent, _, second) = time_out_and_keep(
        agent,
        &mut ext,
        "ask_text",
        json!({"question": "Second?", "timeout_ms": 1000}),
    )
    .await;
    ext.kill().await;
    let until = read_record(runtime.path(), &second)["until_ms"]
        .as_u64()
        .unwrap();
    eventually("the keep time to pass", || {
        him::platform::clock::unix_ms() > until
    })
    .await;
    let result = call(
        &agent,
        "get_answer",
        json!({"question_id": second, "wait_ms": 0}),
    )
    .await;
    assert_complete(&result);
    assert_eq!(result["status"], "expired", "{result}");
    assert!(!record_path(runtime.path(), &second).exists());
}

/// Every byte under `dir`, of every file.
fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            bytes.extend(all_bytes(&path));
        } else {
            bytes.extend(std::fs::read(&path).unwrap_or_default());
        }
    }
    bytes
}

#[tokio::test]
async fn a_form_with_a_password_is_never_kept_and_no_password_reaches_the_state_folder() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP]).await;
    let secret = "hunter2-correct-horse";
    let call = tokio::spawn(async move {
        let result = call(
            &agent,
            "ask_form",
            json!({"title": "Log in", "timeout_ms": 1000,
            "fields": [{"name": "user", "type": "text", "label": "User"},
                       {"name": "pw", "type": "password", "label": "Password"}]}),
        )
        .await;
        (agent, result)
    });
    let ask = ext.take_ask().await;
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"]);
    assert_eq!(withdraw["reason"], "timeout");
    let (agent, result) = call.await.unwrap();
    assert!(
        !result["next_step"].as_str().unwrap().contains("get_answer"),
        "{result}"
    );
    // Typed too late: refused, never written.
    ext.submit(&ask["id"], json!({"user": "ada", "pw": secret}))
        .await;
    assert_eq!(ext.verdict_on(&ask["id"]).await["type"], "error");
    // A kept question beside it, answered, so the folder is in use.
    let (_agent, _, id) = time_out_and_keep(
        agent,
        &mut ext,
        "ask_text",
        json!({"question": "Which user?", "timeout_ms": 1000}),
    )
    .await;
    ext.submit(&id, json!({"answer": "ada"})).await;
    assert_eq!(ext.verdict_on(&id).await["type"], "accepted");
    assert!(!record_path(runtime.path(), &ask["id"]).exists());
    let bytes = all_bytes(&state_dir(runtime.path()));
    assert!(
        bytes.windows(3).any(|w| w == b"ada"),
        "the scan sees the kept answer"
    );
    assert!(
        !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
        "a password reached the state folder"
    );
}

/// A raw agent on the host's socket, for what `him serve` never sends.
async fn raw_agent(
    socket: &Path,
) -> tokio_util::codec::Framed<tokio::net::UnixStream, him::wire::frame::FrameCodec> {
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .expect("connect");
    tokio_util::codec::Framed::new(
        stream,
        him::wire::frame::FrameCodec::new(him::wire::frame::MAX_INBOUND),
    )
}

#[tokio::test]
async fn the_host_keeps_no_permission_prompt_and_no_password_form_even_when_told_to() {
    use futures::SinkExt;
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let mut agent = raw_agent(&ext.socket).await;
    let permission = json!({"title": "Allow Bash?", "permission": {"tool_name": "Bash", "input": {"command": "ls"}},
        "fields": [{"name": "decision", "type": "radio", "label": "Decision", "required": true,
                    "options": [{"value": "allow", "label": "Allow"}, {"value": "deny", "label": "Deny"}]}]});
    let password =
        json!({"title": "Token?", "fields": [{"name": "t", "type": "password", "label": "Token"}]});
    let text =
        json!({"title": "Name?", "fields": [{"name": "answer", "type": "text", "label": "Name?"}]});
    let now = him::platform::clock::unix_ms();
    for (n, form) in [permission, password, text].into_iter().enumerate() {
        let id = format!("{:032x}", n + 1);
        let send = |v: Value| bytes::Bytes::from(serde_json::to_vec(&v).unwrap());
        agent.send(send(json!({"type": "ask", "id": id, "form": form, "timeout_ms": 60_000, "asked_at_ms": now}))).await.unwrap();
        let ask = ext.take_ask().await;
        assert_eq!(ask["id"], id);
        agent
            .send(send(
                json!({"type": "withdraw", "id": id, "reason": "timeout", "keep": true,
                               "keep_until_ms": now + 60_000}),
            ))
            .await
            .unwrap();
        let frame = ext.recv().await;
        if n < 2 {
            assert_eq!(frame["type"], "withdraw", "never kept: {frame}");
        } else {
            assert_eq!(
                frame["type"], "ask",
                "an ordinary question is kept: {frame}"
            );
            assert_eq!(frame["kept_until_ms"], now + 60_000);
        }
    }
}

#[tokio::test]
async fn a_state_folder_that_cannot_be_written_is_named_in_next_step() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    // `him` is a file where the folder should be: nothing can be made under it, even by root.
    let blocked = runtime.path().join("blocked");
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("him"), b"not a folder").unwrap();
    let state = blocked.join("him");
    let env = [KEEP, ("HIM_STATE_DIR", state.to_str().unwrap())];
    let (agent, _) = start_agent(runtime.path(), "claude-code", &env).await;
    let call = tokio::spawn(async move {
        call(
            &agent,
            "ask_text",
            json!({"question": "Which port?", "timeout_ms": 1000}),
        )
        .await
    });
    let ask = ext.take_ask().await;
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"], "not kept");
    let result = call.await.unwrap();
    let next_step = result["next_step"].as_str().unwrap();
    assert!(next_step.contains("cannot be kept"), "{next_step}");
    assert!(
        next_step.contains(&blocked.join("him").display().to_string()),
        "{next_step}"
    );
    assert!(next_step.contains("not consent"), "{next_step}");
}

#[tokio::test]
async fn a_full_store_keeps_nothing_more_and_says_so() {
    let runtime = runtime_dir();
    let dir = answers_dir(runtime.path());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let until = him::platform::clock::unix_ms() + 3_600_000;
    for n in 0..him::wire::keep::MAX_KEPT {
        let id = format!("{n:032x}");
        let record = json!({"id": id, "tool": "ask_text", "form": {"title": "t", "fields": []},
            "agent": {"name": "other"}, "asked_at_ms": 1, "kept_at_ms": 1, "until_ms": until,
            "answer": {"action": "decline", "answered_at_ms": 2}});
        std::fs::write(dir.join(format!("{id}.json")), record.to_string()).unwrap();
    }
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP]).await;
    let call = tokio::spawn(async move {
        call(
            &agent,
            "ask_text",
            json!({"question": "Which port?", "timeout_ms": 1000}),
        )
        .await
    });
    let ask = ext.take_ask().await;
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"], "not kept");
    let result = call.await.unwrap();
    assert!(
        result["next_step"].as_str().unwrap().contains("full"),
        "{result}"
    );
    assert_eq!(
        std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| e
                .as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json"))
            .count(),
        him::wire::keep::MAX_KEPT
    );
}

fn him_ask(runtime: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(him_bin());
    cmd.arg("ask")
        .args(args)
        .env("HIM_RUNTIME_DIR", runtime)
        .env("HIM_STATE_DIR", state_dir(runtime))
        .env("HIM_KEEP_MS", "60000")
        .env("HIM_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    cmd
}

#[tokio::test]
async fn him_ask_keeps_an_unanswered_question_and_answer_of_collects_it() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let asking = him_ask(
        runtime.path(),
        &["--no-tty", "--timeout-ms", "1000", "text", "Which host?"],
    )
    .output();
    let asking = tokio::spawn(asking);
    let ask = ext.take_ask().await;
    let id = ask["id"].clone();
    kept_card(&mut ext, &id).await;
    let out = asking.await.unwrap().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["status"], "timeout");
    let next_step = result["next_step"].as_str().unwrap();
    assert!(
        next_step.contains(&format!("him ask --answer-of {}", id.as_str().unwrap())),
        "{next_step}"
    );
    // Nothing yet: pending at once with --timeout-ms 0.
    let out = him_ask(
        runtime.path(),
        &["--answer-of", id.as_str().unwrap(), "--timeout-ms", "0"],
    )
    .output()
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let pending: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pending["status"], "pending", "{pending}");
    ext.submit(&id, json!({"answer": "db-1"})).await;
    assert_eq!(ext.verdict_on(&id).await["type"], "accepted");
    let out = him_ask(runtime.path(), &["--answer-of", id.as_str().unwrap()])
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let late: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(late["answer"], "db-1");
    assert_eq!(late["late"], true);
    // A bad id is a bad argument.
    let out = him_ask(runtime.path(), &["--answer-of", "nope"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("question_id"));
}

#[tokio::test]
async fn a_cancelled_call_keeps_its_question_and_says_how_to_collect_it() {
    use rmcp::model::{ClientRequest, Request};
    use rmcp::service::PeerRequestOptions;
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "codex", &[KEEP]).await;
    let request = ClientRequest::CallToolRequest(Request::new(params(
        "ask_confirm",
        json!({"question": "Deploy now?"}),
    )));
    let handle = agent
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let ask = ext.take_ask().await;
    handle
        .cancel(Some("the client's own limit".into()))
        .await
        .unwrap();
    kept_card(&mut ext, &ask["id"]).await;
    ext.submit(&ask["id"], json!({"confirmed": true})).await;
    assert_eq!(ext.verdict_on(&ask["id"]).await["type"], "accepted");
    let late = call(
        &agent,
        "get_answer",
        json!({"question_id": ask["id"], "wait_ms": 0}),
    )
    .await;
    assert_eq!(late["confirmed"], true);
    assert_eq!(late["tool"], "ask_confirm");
    assert_eq!(late["late"], true);
}

// Issue 24.3: a call returns `pending` at `HIM_RETURN_AFTER_MS` with the question still open.

/// The limit the tests of `pending` set, short to keep them fast.
const RETURN_AFTER: (&str, &str) = ("HIM_RETURN_AFTER_MS", "1500");

/// The next frame the extension gets, which must be the host's verdict on question `id`:
/// nothing (no withdrawal, no card sent again) came between.
async fn next_is_verdict_on(ext: &mut FakeExtension, id: &Value) -> Value {
    let frame = ext.recv().await;
    assert_eq!(
        &frame["id"], id,
        "the next frame is about the question: {frame}"
    );
    assert!(
        ["accepted", "refused", "error"].contains(&frame["type"].as_str().unwrap_or("")),
        "the card changed before the answer: {frame}"
    );
    frame
}

#[tokio::test]
async fn a_call_past_its_limit_returns_pending_the_card_stays_and_get_answer_brings_the_answer() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP, RETURN_AFTER]).await;
    let asking = tokio::spawn(async move {
        let result = call(
            &agent,
            "ask_choice",
            json!({"question": "Which region?", "options": ["eu-west", "us-east"], "timeout_ms": 20_000}),
        )
        .await;
        (agent, result)
    });
    let ask = ext.take_ask().await;
    let id = ask["id"].clone();
    let question_id = id.as_str().unwrap();
    let (agent, pending) = asking.await.unwrap();
    assert_complete(&pending);
    assert_eq!(pending["status"], "pending", "{pending}");
    assert_eq!(pending["question_id"], id);
    assert_eq!(pending["via"], "extension");
    let next_step = pending["next_step"].as_str().unwrap();
    assert!(next_step.contains("get_answer"), "{next_step}");
    assert!(next_step.contains(question_id), "{next_step}");
    assert!(next_step.contains("not consent"), "{next_step}");
    assert!(
        pending["message"]
            .as_str()
            .unwrap()
            .contains("not answered within 1.5 s."),
        "{pending}"
    );
    // Its own deadline (its timeout_ms) still stands: it is open until then.
    let deadline = ask["asked_at_ms"].as_u64().unwrap() + ask["timeout_ms"].as_u64().unwrap();
    assert!(
        pending["message"]
            .as_str()
            .unwrap()
            .contains(&him::wire::keep::rfc3339(deadline)),
        "{pending}"
    );
    // Written to the store as the call returned, kept past that deadline.
    let record = read_record(runtime.path(), &id);
    assert!(record["answer"].is_null());
    assert_eq!(record["until_ms"].as_u64().unwrap(), deadline + 60_000);

    // get_answer waits again, up to the same limit (not its 5-minute default), then says so.
    let again = call(&agent, "get_answer", json!({"question_id": id})).await;
    assert_complete(&again);
    assert_eq!(again["status"], "pending", "{again}");
    assert_eq!(again["tool"], "ask_choice");
    assert!(again["next_step"].as_str().unwrap().contains(question_id));

    // The person answers; a value the form did not offer goes back to the card first. The
    // next frames the panel gets are the verdicts: the card stayed as it was, never withdrawn
    // nor sent again marked.
    ext.submit(&id, json!({"choice": "ap-south"})).await;
    assert_eq!(next_is_verdict_on(&mut ext, &id).await["type"], "refused");
    let collecting = tokio::spawn(async move {
        let result = call(&agent, "get_answer", json!({"question_id": id})).await;
        (agent, result)
    });
    ext.submit(&ask["id"], json!({"choice": "us-east"})).await;
    assert_eq!(
        next_is_verdict_on(&mut ext, &ask["id"]).await["type"],
        "accepted"
    );
    // The answer came while get_answer waited, or just after it said pending again.
    let (agent, mut late) = collecting.await.unwrap();
    if late["status"] == "pending" {
        late = call(&agent, "get_answer", json!({"question_id": ask["id"]})).await;
    }
    assert_complete(&late);
    assert_eq!(late["status"], "answered", "{late}");
    assert_eq!(late["answer"], "us-east");
    assert_eq!(late["tool"], "ask_choice");
    assert_eq!(late["question_id"], ask["id"]);
    assert!(
        !record_path(runtime.path(), &ask["id"]).exists(),
        "collected"
    );
}

#[tokio::test]
async fn a_question_left_open_is_kept_at_its_own_deadline_and_asked_again_gets_no_second_card() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "codex", &[KEEP, RETURN_AFTER]).await;
    let args = json!({"question": "Which tag?", "timeout_ms": 5000});
    let asking = {
        let args = args.clone();
        tokio::spawn(async move {
            let result = call(&agent, "ask_text", args).await;
            (agent, result)
        })
    };
    let ask = ext.take_ask().await;
    let id = ask["id"].clone();
    let (agent, pending) = asking.await.unwrap();
    assert_eq!(pending["status"], "pending", "{pending}");
    // The same question again waits on the one left open (same id, no second card), and
    // returns pending again at the limit.
    let again = call(&agent, "ask_text", args).await;
    assert_eq!(again["status"], "pending", "{again}");
    assert_eq!(again["question_id"], id);
    // A get_answer that waits over the deadline gets what the call would have got then:
    // `timeout`, the question kept. The first frame since the card came is that keeping.
    let waiting = tokio::spawn(async move {
        let mut result = call(&agent, "get_answer", json!({"question_id": id})).await;
        while result["status"] == "pending" {
            result = call(&agent, "get_answer", json!({"question_id": id})).await;
        }
        (agent, result)
    });
    let kept = ext.recv().await;
    assert_eq!(kept["type"], "ask", "kept, not withdrawn: {kept}");
    assert_eq!(kept["id"], ask["id"]);
    assert!(kept["kept_until_ms"].is_u64(), "{kept}");
    let (agent, ended) = waiting.await.unwrap();
    assert_complete(&ended);
    assert_eq!(ended["status"], "timeout", "{ended}");
    assert!(
        ended["next_step"].as_str().unwrap().contains("get_answer"),
        "{ended}"
    );
    // Kept as any call that ended unanswered: the host writes the answer, get_answer has it.
    ext.submit(&ask["id"], json!({"answer": "v3"})).await;
    assert_eq!(ext.verdict_on(&ask["id"]).await["type"], "accepted");
    let late = call(
        &agent,
        "get_answer",
        json!({"question_id": ask["id"], "wait_ms": 0}),
    )
    .await;
    assert_eq!(late["status"], "answered", "{late}");
    assert_eq!(late["answer"], "v3");
    assert_eq!(late["late"], true);
}

#[tokio::test]
async fn an_answer_given_with_no_call_waiting_is_kept_and_outlives_him_serve() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP, RETURN_AFTER]).await;
    let asking = tokio::spawn(async move {
        let result = call(
            &agent,
            "ask_confirm",
            json!({"question": "Ship it?", "timeout_ms": 20_000}),
        )
        .await;
        (agent, result)
    });
    let ask = ext.take_ask().await;
    let (agent, pending) = asking.await.unwrap();
    assert_eq!(pending["status"], "pending", "{pending}");
    ext.submit(&ask["id"], json!({"confirmed": true})).await;
    assert_eq!(
        next_is_verdict_on(&mut ext, &ask["id"]).await["type"],
        "accepted"
    );
    // Written before the panel heard `accepted`.
    let record = read_record(runtime.path(), &ask["id"]);
    assert_eq!(record["answer"]["values"]["confirmed"], true);
    // The client goes away; a new him serve, with no browser, collects it.
    agent.cancel().await.unwrap();
    ext.kill().await;
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP, RETURN_AFTER]).await;
    let late = call(&agent, "get_answer", json!({"question_id": ask["id"]})).await;
    assert_eq!(late["status"], "answered", "{late}");
    assert_eq!(late["confirmed"], true);
    assert_eq!(late["late"], true);
}

#[tokio::test]
async fn a_password_form_and_return_after_zero_wait_to_the_end_instead() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    // A password is never written to disk, so its call cannot leave it open: it blocks.
    let (agent, _) = start_agent(runtime.path(), "claude-code", &[KEEP, RETURN_AFTER]).await;
    let asking = tokio::spawn(async move {
        call(
            &agent,
            "ask_form",
            json!({"title": "Token", "timeout_ms": 4000,
                   "fields": [{"name": "t", "type": "password", "label": "Token"}]}),
        )
        .await
    });
    let ask = ext.take_ask().await;
    let result = asking.await.unwrap();
    assert_eq!(result["status"], "timeout", "{result}");
    assert!(result["elapsed_ms"].as_u64().unwrap() >= 4000, "{result}");
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"]);

    // HIM_RETURN_AFTER_MS=0: never, even for Claude Code; `auto` gives it 100 s, and other
    // clients nothing, as human_input_status reports.
    let (zero, _) = start_agent(
        runtime.path(),
        "claude-code",
        &[KEEP, ("HIM_RETURN_AFTER_MS", "0")],
    )
    .await;
    assert_eq!(
        call(&zero, "human_input_status", json!({})).await["return_after_ms"],
        0
    );
    let asking = tokio::spawn(async move {
        call(
            &zero,
            "ask_text",
            json!({"question": "Which port?", "timeout_ms": 2500}),
        )
        .await
    });
    let ask = ext.take_ask().await;
    let result = asking.await.unwrap();
    assert_eq!(result["status"], "timeout", "{result}");
    kept_card(&mut ext, &ask["id"]).await;
    for (client, limit) in [("claude-code", 100_000), ("codex", 0)] {
        let (auto, _) = start_agent(runtime.path(), client, &[KEEP]).await;
        let status = call(&auto, "human_input_status", json!({})).await;
        assert_eq!(status["return_after_ms"], limit, "{client}: {status}");
    }
}

// Claude Code stops `him serve` with SIGINT (then SIGTERM at 100 ms, SIGKILL at 500 ms),
// closing its input only after: a signal ends the session as the end of input does.

fn send_signal(pid: u32, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal)
        .expect("signal him serve");
}

/// `him serve` as Claude Code (with its pid), and a question whose call returned `pending`.
async fn left_open(runtime: &Path, ext: &mut FakeExtension) -> (Agent, u32, Value) {
    let (agent, _, pid) = start_agent_with_pid(
        runtime,
        "claude-code",
        &[KEEP, RETURN_AFTER],
        std::process::Stdio::inherit(),
    )
    .await;
    let asking = tokio::spawn(async move {
        let result = call(
            &agent,
            "ask_text",
            json!({"question": "Which tag?", "timeout_ms": 20_000}),
        )
        .await;
        (agent, result)
    });
    let ask = ext.take_ask().await;
    let (agent, pending) = asking.await.expect("the call");
    assert_eq!(pending["status"], "pending", "{pending}");
    (agent, pid, ask)
}

/// The next frame the extension gets must be question `id`'s card, kept until the
/// record in the store says, which is `HIM_KEEP_MS` past the question's own deadline.
async fn next_is_kept_card(ext: &mut FakeExtension, runtime: &Path, ask: &Value) {
    let frame = ext.recv().await;
    assert_eq!(frame["type"], "ask", "the card was not kept: {frame}");
    assert_eq!(frame["id"], ask["id"]);
    let record = read_record(runtime, &ask["id"]);
    assert!(record["answer"].is_null());
    let deadline = ask["asked_at_ms"].as_u64().expect("asked_at_ms")
        + ask["timeout_ms"].as_u64().expect("timeout_ms");
    assert_eq!(
        record["until_ms"].as_u64().expect("until_ms"),
        deadline + 60_000
    );
    assert_eq!(frame["kept_until_ms"], record["until_ms"], "{frame}");
}

#[tokio::test]
async fn sigint_after_pending_keeps_the_card_open_to_its_deadline() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (_agent, pid, ask) = left_open(runtime.path(), &mut ext).await;
    send_signal(pid, nix::sys::signal::Signal::SIGINT);
    next_is_kept_card(&mut ext, runtime.path(), &ask).await;
}

#[tokio::test]
async fn sigkill_after_pending_the_host_keeps_the_card_the_store_holds_open() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (_agent, pid, ask) = left_open(runtime.path(), &mut ext).await;
    // No clean-up at all: only the host, seeing the link close, can keep the card.
    send_signal(pid, nix::sys::signal::Signal::SIGKILL);
    next_is_kept_card(&mut ext, runtime.path(), &ask).await;
}

#[tokio::test]
async fn sigint_or_sigterm_or_sighup_during_a_blocking_call_keeps_its_question() {
    use nix::sys::signal::Signal;
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // Not Claude Code: no early return; the call blocks when the signal comes.
        let (agent, _, pid) = start_agent_with_pid(
            runtime.path(),
            "codex",
            &[KEEP],
            std::process::Stdio::inherit(),
        )
        .await;
        let peer = agent.peer().clone();
        // Its client sees the server go: no result to wait for.
        let _call = tokio::spawn(async move {
            let _ = peer
                .call_tool(params(
                    "ask_text",
                    json!({"question": "Which port?", "timeout_ms": 20_000}),
                ))
                .await;
        });
        let ask = ext.take_ask().await;
        send_signal(pid, signal);
        let kept = ext.recv().await;
        assert_eq!(
            kept["type"], "ask",
            "{signal}: the card was not kept: {kept}"
        );
        assert_eq!(kept["id"], ask["id"]);
        let record = read_record(runtime.path(), &ask["id"]);
        assert!(record["answer"].is_null(), "{signal}");
        assert_eq!(
            kept["kept_until_ms"], record["until_ms"],
            "{signal}: {kept}"
        );
    }
}

#[tokio::test]
async fn get_answer_after_the_person_answered_between_calls_says_nothing_of_predating() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _, _) = start_agent_with_pid(
        runtime.path(),
        "claude-code",
        &[KEEP, RETURN_AFTER],
        std::process::Stdio::inherit(),
    )
    .await;
    let asking = tokio::spawn(async move {
        let result = call(
            &agent,
            "ask_text",
            json!({"question": "Which tag?", "timeout_ms": 20_000}),
        )
        .await;
        (agent, result)
    });
    let ask = ext.take_ask().await;
    let (agent, pending) = asking.await.unwrap();
    assert_eq!(pending["status"], "pending", "{pending}");
    // The person answers while the model takes its turn: Claude Code's usual flow.
    ext.submit(&ask["id"], json!({"answer": "v3"})).await;
    assert_eq!(
        next_is_verdict_on(&mut ext, &ask["id"]).await["type"],
        "accepted"
    );
    let late = call(&agent, "get_answer", json!({"question_id": ask["id"]})).await;
    assert_eq!(late["status"], "answered", "{late}");
    assert_eq!(late["answer"], "v3");
    // It named the question it collects: the answer is to it, not to a question asked anew.
    let next_step = late["next_step"].as_str().unwrap();
    assert!(!next_step.contains("check with the person"), "{next_step}");
    assert!(!next_step.contains("predates"), "{next_step}");
}

#[tokio::test]
async fn a_second_serve_asking_the_same_question_gets_its_own_card_not_the_one_another_waits_on() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    // Two terminals of one client in one project: the same name, the same folder.
    let (first, _, _) = left_open(runtime.path(), &mut ext).await;
    let (second, _) = start_agent(runtime.path(), "claude-code", &[KEEP, RETURN_AFTER]).await;
    let asking = tokio::spawn(async move {
        let result = call(
            &second,
            "ask_text",
            json!({"question": "Which tag?", "timeout_ms": 20_000}),
        )
        .await;
        (second, result)
    });
    let own = ext.take_ask().await;
    let parked: Vec<String> = std::fs::read_dir(answers_dir(runtime.path()))
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".json"))
        .collect();
    assert_eq!(
        parked.len(),
        1,
        "only the first question is parked: {parked:?}"
    );
    assert_ne!(
        format!("{}.json", own["id"].as_str().unwrap()),
        parked[0],
        "the second asks anew"
    );
    ext.submit(&own["id"], json!({"answer": "v4"})).await;
    let (_second, result) = asking.await.unwrap();
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["answer"], "v4");
    assert_eq!(result["question_id"], own["id"]);
    // The first's question is still its own, open, for its get_answer.
    let mine = call(
        &first,
        "get_answer",
        json!({"question_id": parked[0].trim_end_matches(".json"), "wait_ms": 0}),
    )
    .await;
    assert_eq!(mine["status"], "pending", "{mine}");
}

#[tokio::test]
async fn an_answer_the_store_had_first_is_collected_once_not_twice() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let (agent, _, ask) = left_open(runtime.path(), &mut ext).await;
    let id = ask["id"].as_str().unwrap().to_owned();
    // A browser's host writes an answer first (it kept the card after a restart).
    let store = him::wire::keep::Store::at(&state_dir(runtime.path()));
    let first: him::wire::protocol::Answer =
        serde_json::from_value(json!({"id": id, "action": "submit", "values": {"answer": "v1"}}))
            .unwrap();
    store.answer(&first, 1).unwrap();
    // Then the panel's answer reaches the question's own wait.
    ext.submit(&ask["id"], json!({"answer": "v2"})).await;
    assert_eq!(
        next_is_verdict_on(&mut ext, &ask["id"]).await["type"],
        "accepted"
    );
    let late = call(&agent, "get_answer", json!({"question_id": id})).await;
    assert_eq!(late["status"], "answered", "{late}");
    assert_eq!(late["answer"], "v1", "the first answer wins");
    assert!(
        !record_path(runtime.path(), &ask["id"]).exists(),
        "collected"
    );
    // The same question again is a new question: the answer is not handed out twice.
    let again = tokio::spawn(async move {
        call(
            &agent,
            "ask_text",
            json!({"question": "Which tag?", "timeout_ms": 20_000}),
        )
        .await
    });
    let next = ext.take_ask().await;
    assert_ne!(next["id"], ask["id"]);
    ext.submit(&next["id"], json!({"answer": "v5"})).await;
    let result = again.await.unwrap();
    assert_eq!(result["answer"], "v5", "{result}");
    assert_eq!(result["late"], false);
}
