//! `him ask` for shell scripts: the same path as the tools, the result as JSON on stdout,
//! exit 0 when answered, 1 otherwise, 2 on bad arguments.

use std::process::Stdio;

use crate::support;
use crate::support::*;
use serde_json::{Value, json};
use tokio::process::Command;

fn him_ask(runtime: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(him_bin());
    cmd.arg("ask")
        .args(args)
        .env("HIM_RUNTIME_DIR", runtime)
        .env(
            "HIM_STATE_DIR",
            support::state_dir(std::path::Path::new(runtime)),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

#[tokio::test]
async fn an_answered_question_prints_the_result_and_exits_0() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let child = him_ask(
        runtime.path(),
        &["multi", "Which suites?", "unit", "e2e", "--min", "1"],
    )
    .spawn()
    .unwrap();
    let ask = ext.take_ask().await;
    assert_eq!(ask["agent"]["name"], "him ask");
    ext.submit(&ask["id"], json!({"selected": ["e2e"]})).await;
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout).expect("stdout is the JSON result");
    assert_complete(&result);
    assert_eq!(result["tool"], "ask_multi_select");
    assert_eq!(result["selected"], json!(["e2e"]));
    // The person at the terminal learns where the question went, and how to take it back.
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("waiting in your browser's him side panel") && said.contains("Ctrl-C"),
        "{said}"
    );
}

#[tokio::test]
async fn a_form_can_come_from_stdin() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let mut child = him_ask(runtime.path(), &["form", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        let form = json!({"title": "Release", "fields": [{"name": "v", "type": "text", "label": "Version", "required": true}]});
        stdin.write_all(form.to_string().as_bytes()).await.unwrap();
    }
    let ask = ext.take_ask().await;
    ext.send(json!({"type": "answer", "id": ask["id"], "action": "decline"}))
        .await;
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(output.status.code(), Some(1), "a decline is not an answer");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["status"], "declined");
}

#[tokio::test]
async fn with_nothing_connected_it_follows_the_fallback_and_exits_1() {
    let runtime = runtime_dir();
    let output = him_ask(runtime.path(), &["confirm", "Deploy?"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["status"], "needs_user_input");
    let output = him_ask(runtime.path(), &["confirm", "Deploy?"])
        .env("HIM_FALLBACK", "off")
        .output()
        .await
        .unwrap();
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["status"], "unsupported");
}

#[tokio::test]
async fn bad_arguments_exit_2_and_say_which() {
    let runtime = runtime_dir();
    let output = him_ask(runtime.path(), &["choice", "Pick one", "lonely"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("`options`"));
    let output = him_ask(runtime.path(), &["form", "{not json"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("`json`"));
    let output = him_ask(runtime.path(), &["text"]).output().await.unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "clap's own usage errors are exit 2 too"
    );
}

/// The form's JSON takes ask_form's arguments, its wait included (either spelling), and
/// refuses keys ask_form does not define, as the MCP tool does.
#[tokio::test]
async fn a_forms_json_names_its_own_timeout_and_nothing_unknown() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    for key in ["timeout_ms", "timeoutMs"] {
        let form = json!({"title": "Release", key: 1000,
                          "fields": [{"name": "v", "type": "text", "label": "Version"}]});
        let child = him_ask(runtime.path(), &["form", &form.to_string()])
            .spawn()
            .unwrap();
        ext.take_ask().await;
        let output = tokio::time::timeout(PATIENCE, child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("{key} in the form's JSON was not the wait"))
            .unwrap();
        assert_eq!(output.status.code(), Some(1));
        let result: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(result["status"], "timeout", "{key}: {result}");
    }
    let form = json!({"title": "Release", "timeout": 1000,
                      "fields": [{"name": "v", "type": "text", "label": "Version"}]});
    let output = him_ask(runtime.path(), &["form", &form.to_string()])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("unknown field `timeout`"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn the_panel_hears_its_answer_was_taken_before_him_ask_exits() {
    // him ask exits as soon as it has its answer; the `accepted` it queued for the host
    // must still be written, or the panel tells the person their answer was not delivered.
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start_correcting(runtime.path()).await;
    let child = him_ask(runtime.path(), &["confirm", "Deploy now?"])
        .spawn()
        .unwrap();
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"confirmed": true})).await;
    let verdict = ext.verdict_on(&ask["id"]).await;
    assert_eq!(verdict["type"], "accepted", "{verdict}");
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(output.status.code(), Some(0));
}

#[tokio::test]
async fn sigint_sigterm_or_sighup_keeps_the_question_for_a_late_answer_and_prints_a_result() {
    // Ctrl-C, a script's kill, or the terminal closing (SIGHUP) end the call as a timeout
    // does: the card stays, kept for a late answer, and the caller still gets its JSON,
    // with the id `him ask --answer-of` collects it by.
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        let child = him_ask(runtime.path(), &["text", "Which port?"])
            .spawn()
            .unwrap();
        let ask = ext.take_ask().await;
        let pid = Pid::from_raw(child.id().expect("him ask runs") as i32);
        kill(pid, signal).expect("signal him ask");
        let kept = ext.recv().await;
        assert_eq!(
            kept["type"], "ask",
            "{signal}: the card was not kept: {kept}"
        );
        assert_eq!(kept["id"], ask["id"], "{signal}: {kept}");
        assert!(kept["kept_until_ms"].is_u64(), "{signal}: {kept}");
        let output = child.wait_with_output().await.unwrap();
        assert_eq!(output.status.code(), Some(1), "{signal}");
        let result: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("{signal}: stdout is not the JSON result ({e})"));
        assert_eq!(result["status"], "cancelled", "{signal}: {result}");
        assert_eq!(result["question_id"], ask["id"], "{signal}: {result}");
    }
}
