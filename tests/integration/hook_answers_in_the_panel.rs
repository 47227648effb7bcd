//! `him hook claude-code|codex`, run as the agents run a PermissionRequest hook: the hook's
//! JSON on stdin, the fake extension answering through the real host, the decision in the
//! agent's format on stdout — and nothing at all (exit 0) when nobody decides.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::support;
use crate::support::*;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// Claude Code 2.1.197's PermissionRequest input for a Bash call.
fn claude_input() -> Value {
    json!({"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": "/home/me/shop-api",
           "prompt_id": "p1", "permission_mode": "default", "hook_event_name": "PermissionRequest",
           "tool_name": "Bash", "tool_input": {"command": "git push --force", "description": "Push"},
           "permission_suggestions": [{"type": "addRules"}]})
}

/// Codex 0.171.0's PermissionRequest input for a shell call.
fn codex_input() -> Value {
    json!({"session_id": "s2", "turn_id": "t1", "transcript_path": null, "cwd": "/home/me/infra",
           "hook_event_name": "PermissionRequest", "model": "gpt-test", "permission_mode": "default",
           "tool_name": "Bash", "tool_input": {"command": "terraform destroy"}})
}

/// Starts `him hook <agent> <args>` with `input` on its stdin (then closed).
async fn start_hook(
    runtime: &std::path::Path,
    agent: &str,
    args: &[&str],
    input: &Value,
) -> tokio::process::Child {
    let mut child = Command::new(him_bin())
        .arg("hook")
        .arg(agent)
        .args(args)
        .env("HIM_RUNTIME_DIR", runtime)
        .env(
            "HIM_STATE_DIR",
            support::state_dir(std::path::Path::new(runtime)),
        )
        .env("HIM_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn him hook");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(input.to_string().as_bytes())
        .await
        .expect("write hook input");
    drop(stdin);
    child
}

async fn finish(child: tokio::process::Child) -> Output {
    tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("the hook did not exit")
        .expect("wait")
}

fn stdout_json(output: &Output) -> Value {
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("stdout is one JSON document")
}

/// No decision: nothing on stdout, exit 0; stderr says why.
fn assert_deferred(output: &Output) {
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(
        output.stdout.is_empty(),
        "stdout must stay empty: {:?}",
        String::from_utf8_lossy(&output.stdout)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("leaving the decision to"), "{stderr}");
}

/// Runs the hook while the fake extension answers its ask with `reply`.
async fn decided(agent: &str, input: Value, reply: Value) -> (Output, Value) {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let hook = start_hook(runtime.path(), agent, &[], &input).await;
    let ask = ext.take_ask().await;
    ext.answer(&ask, reply).await;
    (finish(hook).await, ask)
}

#[tokio::test]
async fn claude_code_hook_writes_an_allow_when_the_person_clicks_allow() {
    let (output, ask) = decided(
        "claude-code",
        claude_input(),
        json!({"action": "submit", "values": {"decision": "allow"}}),
    )
    .await;
    assert_eq!(
        stdout_json(&output),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                      "decision": {"behavior": "allow"}}})
    );
    assert_eq!(ask["form"]["permission"]["tool_name"], "Bash");
    assert_eq!(
        ask["form"]["permission"]["input"],
        claude_input()["tool_input"]
    );
    assert_eq!(ask["agent"]["name"], "Claude Code");
    assert_eq!(ask["project"], "shop-api", "the project of the hook's cwd");
    // Nothing of the input in the log: only the decision.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("git push"),
        "the command was logged: {stderr}"
    );
}

#[tokio::test]
async fn claude_code_hook_writes_a_deny_with_the_note() {
    let (output, _) = decided(
        "claude-code",
        claude_input(),
        json!({"action": "submit", "values": {"decision": "deny"}, "note": "never force-push main"}),
    )
    .await;
    let decision = &stdout_json(&output)["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny");
    assert!(
        decision["message"]
            .as_str()
            .unwrap()
            .contains("never force-push main")
    );
}

#[tokio::test]
async fn codex_hook_writes_its_allow_and_deny() {
    let (output, ask) = decided(
        "codex",
        codex_input(),
        json!({"action": "submit", "values": {"decision": "allow"}}),
    )
    .await;
    assert_eq!(
        stdout_json(&output),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                      "decision": {"behavior": "allow"}}})
    );
    assert_eq!(ask["agent"]["name"], "Codex");
    let (output, _) = decided("codex", codex_input(), json!({"action": "decline"})).await;
    assert_eq!(
        stdout_json(&output)["hookSpecificOutput"]["decision"]["behavior"],
        "deny"
    );
}

#[tokio::test]
async fn claude_code_hook_answers_ask_user_question_in_updated_input() {
    let mut input = claude_input();
    input["tool_name"] = json!("AskUserQuestion");
    input["tool_input"] = json!({"questions": [{"question": "Ship it?", "header": "Ship",
        "multiSelect": false, "options": [{"label": "Yes", "description": ""}, {"label": "No", "description": ""}]}]});
    let (output, _) = decided(
        "claude-code",
        input.clone(),
        json!({"action": "submit", "values": {"q0": "Yes"}}),
    )
    .await;
    let decision = &stdout_json(&output)["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "allow");
    assert_eq!(
        decision["updatedInput"]["answers"],
        json!({"Ship it?": "Yes"})
    );
    assert_eq!(
        decision["updatedInput"]["questions"],
        input["tool_input"]["questions"]
    );
}

/// Claude Code's input for a Write of a file of `len` characters.
fn claude_write(len: usize) -> Value {
    let mut input = claude_input();
    input["tool_name"] = json!("Write");
    let content: String = "let x = 1;\n".chars().cycle().take(len).collect();
    input["tool_input"] = json!({"file_path": "/home/me/shop-api/src/big.rs", "content": content});
    input
}

#[tokio::test]
async fn a_write_of_a_17_kb_file_reaches_the_card_and_the_hook_writes_the_allow() {
    let input = claude_write(17 * 1024);
    let (output, ask) = decided(
        "claude-code",
        input.clone(),
        json!({"action": "submit", "values": {"decision": "allow"}}),
    )
    .await;
    assert_eq!(
        stdout_json(&output),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                      "decision": {"behavior": "allow"}}})
    );
    assert_eq!(ask["form"]["permission"]["input"], input["tool_input"]);
}

#[tokio::test]
async fn a_hook_whose_input_is_too_large_to_show_defers_naming_its_size_and_the_limit() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let output =
        finish(start_hook(runtime.path(), "claude-code", &[], &claude_write(1_100_000)).await)
            .await;
    assert_deferred(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "a browser takes at most {}",
            him::agent::prepare::MAX_ASK_BYTES
        )) && stderr.contains("the prompt would be"),
        "{stderr}"
    );
    // It never reached the browser: the next card the browser gets is the next hook's.
    let hook = start_hook(runtime.path(), "codex", &[], &codex_input()).await;
    let ask = ext.take_ask().await;
    assert_eq!(
        ask["form"]["permission"]["input"],
        codex_input()["tool_input"]
    );
    ext.answer(&ask, json!({"action": "decline"})).await;
    finish(hook).await;
}

#[tokio::test]
async fn with_no_browser_the_hook_defers_at_once() {
    let runtime = runtime_dir();
    for (agent, input) in [("claude-code", claude_input()), ("codex", codex_input())] {
        let started = Instant::now();
        let output = finish(start_hook(runtime.path(), agent, &[], &input).await).await;
        assert_deferred(&output);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

#[tokio::test]
async fn with_no_answer_in_its_wait_the_hook_defers_and_withdraws_the_card() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let started = Instant::now();
    let hook = start_hook(
        runtime.path(),
        "claude-code",
        &["--wait-ms", "1000"],
        &claude_input(),
    )
    .await;
    ext.take_ask().await;
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["reason"], "timeout");
    assert_deferred(&finish(hook).await);
    assert!(started.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn a_hook_stopped_by_its_agent_withdraws_the_card() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let hook = start_hook(runtime.path(), "codex", &[], &codex_input()).await;
    ext.take_ask().await;
    let pid = nix::unistd::Pid::from_raw(hook.id().expect("pid") as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM the hook");
    ext.recv_type("withdraw").await;
    assert_deferred(&finish(hook).await);
}

/// One line of Claude Code 2.1.332's transcript holding one content block.
fn transcript_line(kind: &str, block: Value) -> String {
    let entry = json!({"type": kind, "message": {"role": kind, "content": [block]}});
    format!("{entry}\n")
}

#[tokio::test]
async fn a_claude_code_call_answered_in_its_terminal_leaves_the_panel_as_answered() {
    use std::io::Write;
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let transcript = dir.path().join("session.jsonl");
    let input = claude_input();
    let call = |id: &str| {
        let block =
            json!({"type": "tool_use", "id": id, "name": "Bash", "input": input["tool_input"]});
        transcript_line("assistant", block)
    };
    let result = |id: &str| {
        let block =
            json!({"type": "tool_result", "tool_use_id": id, "content": "", "is_error": false});
        transcript_line("user", block)
    };
    // An identical call answered earlier in the session, and this one, not answered yet.
    std::fs::write(
        &transcript,
        call("toolu_old") + &result("toolu_old") + &call("toolu_now"),
    )
    .expect("write transcript");
    let mut input = input.clone();
    input["transcript_path"] = json!(transcript);
    let hook = start_hook(runtime.path(), "claude-code", &[], &input).await;
    ext.take_ask().await;
    let early = ext.quiet_for(Duration::from_millis(1500)).await;
    assert!(
        early.is_none(),
        "withdrawn before the terminal answered: {early:?}"
    );
    // The person answers Claude Code's own prompt: the call runs and its result is written.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .expect("open");
    file.write_all(result("toolu_now").as_bytes())
        .expect("append");
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["reason"], "answered");
    assert_deferred(&finish(hook).await);
}

#[tokio::test]
async fn a_hook_nobody_reads_any_more_withdraws_the_card() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let mut hook = start_hook(runtime.path(), "codex", &[], &codex_input()).await;
    ext.take_ask().await;
    // Codex 0.171.0 exits without stopping its hook: the pipe's reading end closes.
    drop(hook.stdout.take());
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(withdraw["reason"], "shutdown");
    let output = finish(hook).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

#[tokio::test]
async fn other_events_and_bad_input_are_left_to_the_agent() {
    let runtime = runtime_dir();
    let mut pre_tool_use = claude_input();
    pre_tool_use["hook_event_name"] = json!("PreToolUse");
    assert_deferred(
        &finish(start_hook(runtime.path(), "claude-code", &[], &pre_tool_use).await).await,
    );
    assert_deferred(
        &finish(start_hook(runtime.path(), "codex", &[], &json!("not an object")).await).await,
    );
}

#[tokio::test]
async fn the_panel_hears_the_decision_was_taken_before_the_hook_exits() {
    // The hook exits as soon as it has written the decision; the `accepted` it queued for
    // the host must be written first, or the panel says the answer was not delivered.
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let child = start_hook(runtime.path(), "claude-code", &[], &claude_input()).await;
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"decision": "deny"})).await;
    let verdict = ext.verdict_on(&ask["id"]).await;
    assert_eq!(verdict["type"], "accepted", "{verdict}");
    let decision = &stdout_json(&finish(child).await)["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny");
}

/// Plays a host of before "allow for this session" on `<runtime>/hosts/<pid>.sock`: it
/// refuses a permission form with a third choice, as such a host's form rules do, and has the
/// person allow a card with two. Returns the number of choices of each card it was asked.
fn older_host(runtime: &std::path::Path) -> std::thread::JoinHandle<Vec<usize>> {
    use him::wire::frame::{MAX_INBOUND, read_frame_sync, write_frame_sync};
    let listener = host_listener(runtime, std::process::id());
    std::thread::spawn(move || {
        let (mut link, _) = listener.accept().expect("the older host");
        let mut writer = link.try_clone().expect("the older host");
        let mut send = |message: Value| {
            write_frame_sync(&mut writer, message.to_string().as_bytes()).expect("the older host")
        };
        let mut asked = Vec::new();
        while let Ok(Some(frame)) = read_frame_sync(&mut link, MAX_INBOUND) {
            let message: Value = serde_json::from_slice(&frame).expect("the older host");
            match message["type"].as_str() {
                Some("hello") => send(json!({"type": "welcome", "protocol": 1,
                    "host": {"version": "0.0.9", "pid": std::process::id()},
                    "extension": {"id": "mephldgjjmdajmfkonfbblipccnbagig", "version": "0.0.9"},
                    "panel_open": true})),
                Some("ask") => {
                    let id = message["id"].clone();
                    let choices = message["form"]["fields"][0]["options"]
                        .as_array()
                        .expect("the older host")
                        .len();
                    asked.push(choices);
                    if choices == 2 {
                        send(json!({"type": "shown", "id": id}));
                        send(json!({"type": "answer", "id": id, "action": "submit",
                                    "values": {"decision": "allow"}}));
                    } else {
                        send(json!({"type": "error", "id": id, "message":
                            "the question's form is not valid: a permission form has one field, \
                             `decision`: a required radio of `allow` and `deny`, with no default"}));
                    }
                }
                Some("accepted") => break,
                _ => {}
            }
        }
        asked
    })
}

#[tokio::test]
async fn a_host_older_than_the_session_choice_still_gets_an_allow_and_deny_card() {
    let runtime = runtime_dir();
    let host = older_host(runtime.path());
    let mut input = claude_input();
    input["permission_suggestions"] = json!([{"type": "addRules",
        "rules": [{"toolName": "Bash", "ruleContent": "git push *"}],
        "behavior": "allow", "destination": "localSettings"}]);
    let hook = start_hook(runtime.path(), "claude-code", &[], &input).await;
    let output = finish(hook).await;
    assert!(
        !output.stdout.is_empty(),
        "no decision: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        stdout_json(&output),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                      "decision": {"behavior": "allow"}}})
    );
    assert_eq!(
        host.join().expect("the older host"),
        [3, 2],
        "refused with three choices, asked again with two"
    );
}
