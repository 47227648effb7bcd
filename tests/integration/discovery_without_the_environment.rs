//! `him serve` finds the browser's host when the MCP client starts it as real clients do:
//! with only PATH, HOME, USER, LOGNAME, SHELL and TERM (the Python and TypeScript SDKs'
//! default environment, the Inspector CLI), or with nothing at all — while the browser
//! starts the host with the whole desktop session's environment, `XDG_RUNTIME_DIR`
//! included. No test here sets `HIM_RUNTIME_DIR`: each runs as a fresh user of its own
//! (DESIGN.md §1), so none can reach the developer's browser or another test's host.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::support::fresh_user::{FreshUser, fresh_user};
use crate::support::*;
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

/// The browser starts the host for `user`, with a browser's environment.
async fn browser_host(user: &FreshUser, runtime: &Path) -> FakeExtension {
    let mut command = user.command(&user.browser_env());
    command.stderr(Stdio::inherit());
    FakeExtension::launch(command, runtime).await
}

/// rmcp's client starts `him serve` as `user`, with exactly `env`.
async fn client_serve(user: &FreshUser, env: &[(&str, String)]) -> Agent {
    let mut command = user.command(env);
    command.arg("serve");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn him serve");
    TestClient {
        name: "stripped-client".into(),
        ..TestClient::default()
    }
    .serve(transport)
    .await
    .expect("initialize him serve")
}

/// Asks through `agent`, answers in the host, and checks the answer came from the panel.
async fn answered_in_the_panel(agent: Agent, ext: &mut FakeExtension) {
    let status = call(&agent, "human_input_status", json!({})).await;
    assert_eq!(status["channel"], "extension", "{status}");
    let asked = tokio::spawn(async move {
        call(&agent, "ask_text", json!({"question": "Which branch?"})).await
    });
    let ask = ext.take_ask().await;
    assert_eq!(ask["agent"]["name"], "stripped-client", "{ask}");
    ext.submit(&ask["id"], json!({"answer": "main"})).await;
    let result = asked.await.expect("call task");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "extension", "{result}");
    assert_eq!(result["answer"], "main");
}

fn login_runtime(login: &Path) -> PathBuf {
    login.join("him")
}

#[tokio::test]
async fn a_client_that_passes_only_the_sdk_whitelist_reaches_the_login_sessions_host() {
    let Some(mut user) = fresh_user() else { return };
    let login = user.log_in();
    let mut ext = browser_host(&user, &login_runtime(&login)).await;
    let agent = client_serve(&user, &user.client_env()).await;
    let status = call(&agent, "human_input_status", json!({})).await;
    assert_eq!(status["runtime_dir_rule"], "login-session", "{status}");
    assert_eq!(
        status["runtime_dir"],
        login_runtime(&login).display().to_string()
    );
    answered_in_the_panel(agent, &mut ext).await;
}

#[tokio::test]
async fn a_client_that_passes_no_environment_at_all_reaches_the_host() {
    let Some(mut user) = fresh_user() else { return };
    let login = user.log_in();
    let mut ext = browser_host(&user, &login_runtime(&login)).await;
    let agent = client_serve(&user, &[]).await;
    answered_in_the_panel(agent, &mut ext).await;
}

#[tokio::test]
async fn without_a_login_session_both_ends_meet_in_the_home_folder() {
    // A machine without systemd-logind (a container, a minimal server): no /run/user/<uid>.
    let Some(user) = fresh_user() else { return };
    let hostname = nix::unistd::gethostname().expect("hostname");
    let runtime = user
        .home
        .join(".local/state/him/run")
        .join(hostname.to_string_lossy().as_ref());
    let mut ext = browser_host(&user, &runtime).await;
    // Made private by the host, never a name under /tmp that another user could take first.
    let agent = client_serve(&user, &user.client_env()).await;
    let status = call(&agent, "human_input_status", json!({})).await;
    assert_eq!(status["runtime_dir_rule"], "home", "{status}");
    answered_in_the_panel(agent, &mut ext).await;
}

/// A late answer (issue 24) is written by the browser's host and collected by `him serve`:
/// both must find the same state folder. The desktop session may set `XDG_STATE_HOME`, which
/// the browser passes to its host and the MCP client strips; neither end reads it.
#[tokio::test]
async fn a_late_answer_given_in_a_browser_whose_desktop_sets_xdg_state_home_reaches_a_stripped_client()
 {
    let Some(mut user) = fresh_user() else { return };
    let login = user.log_in();
    let mut env = user.browser_env();
    env.push((
        "XDG_STATE_HOME",
        user.home.join(".desktop-state").display().to_string(),
    ));
    let mut command = user.command(&env);
    command.stderr(Stdio::inherit());
    let mut ext = FakeExtension::launch_correcting(command, &login_runtime(&login)).await;
    // Keeping is on by default: the client passes nothing but its whitelist.
    let agent = client_serve(&user, &user.client_env()).await;
    let asked = tokio::spawn(async move {
        let result = call(
            &agent,
            "ask_text",
            json!({"question": "Which region?", "timeout_ms": 1000}),
        )
        .await;
        (agent, result)
    });
    let ask = ext.take_ask().await;
    let id = ask["id"].clone();
    let (agent, result) = asked.await.expect("call task");
    assert_eq!(result["status"], "timeout", "{result}");
    // The host kept the card (it found the agent's record in the store), and takes the answer.
    let kept = ext.recv_type("ask").await;
    assert_eq!(kept["id"], id, "{kept}");
    assert!(kept["kept_until_ms"].is_u64(), "{kept}");
    ext.submit(&id, json!({"answer": "eu-west-2"})).await;
    let verdict = ext.verdict_on(&id).await;
    assert_eq!(verdict["type"], "accepted", "{verdict}");
    let late = call(
        &agent,
        "get_answer",
        json!({"question_id": id, "wait_ms": 0}),
    )
    .await;
    assert_eq!(late["status"], "answered", "{late}");
    assert_eq!(late["answer"], "eu-west-2");
    assert!(
        user.home.join(".local/state/him/answers").is_dir(),
        "the store is in the password database's home"
    );
    assert!(!user.home.join(".desktop-state/him").exists());
}

/// The first call of many sessions is `human_input_status` (Codex's and Qwen's first call,
/// the Inspector's one-shot call): it must tell what the browser's host says, not the
/// blank of a link made a moment before (issue 22.14).
#[tokio::test]
async fn the_first_status_of_a_fresh_session_names_the_extension_and_the_open_panel() {
    let Some(mut user) = fresh_user() else { return };
    let login = user.log_in();
    let mut ext = browser_host(&user, &login_runtime(&login)).await;
    ext.send(json!({"type": "panel", "open": true})).await;
    // Another session sees the panel open: the host has read the `panel` frame.
    let probe = client_serve(&user, &user.client_env()).await;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let status = call(&probe, "human_input_status", json!({})).await;
        if status["browsers"][0]["panel_open"] == true {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{status}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    probe.cancel().await.ok();

    // A fresh session, started as the SDKs and the Inspector start a server: its first call.
    let agent = client_serve(&user, &user.client_env()).await;
    let status = call(&agent, "human_input_status", json!({})).await;
    let browsers = status["browsers"].as_array().expect("browsers");
    assert_eq!(browsers.len(), 1, "{status}");
    assert_eq!(browsers[0]["extension_id"], him::EXTENSION_ID, "{status}");
    assert_eq!(browsers[0]["extension_version"], "0.0.0-test", "{status}");
    assert_eq!(browsers[0]["panel_open"], true, "{status}");
    assert_eq!(status["channel"], "extension", "{status}");
}

#[tokio::test]
async fn him_ask_from_a_stripped_environment_reaches_the_host() {
    let Some(mut user) = fresh_user() else { return };
    let login = user.log_in();
    let mut ext = browser_host(&user, &login_runtime(&login)).await;
    let mut command = user.command(&user.client_env());
    command
        .args(["ask", "confirm", "Deploy now?"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let child = command.spawn().expect("spawn him ask");
    let ask = ext.take_ask().await;
    assert_eq!(ask["agent"]["name"], "him ask");
    ext.submit(&ask["id"], json!({"confirmed": true})).await;
    let output = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("him ask ends")
        .expect("him ask output");
    let result: Value = serde_json::from_slice(&output.stdout).expect("JSON result");
    assert_eq!(result["via"], "extension", "{result}");
    assert_eq!(result["confirmed"], true);
}

#[tokio::test]
async fn doctor_names_the_rule_that_chose_the_runtime_directory() {
    let Some(mut user) = fresh_user() else { return };
    let login = user.log_in();
    let _ext = browser_host(&user, &login_runtime(&login)).await;
    let output = user
        .command(&user.client_env())
        .arg("doctor")
        .output()
        .await
        .expect("run him doctor");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!(
            "{} (chosen by the login session's runtime directory",
            login_runtime(&login).display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("browser connected"), "{stdout}");
}
