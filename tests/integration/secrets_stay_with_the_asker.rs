//! A password typed into a form goes to the agent that asked and nowhere else: not into
//! the server's log nor the host's, even at the most verbose log level.

use std::process::Stdio;

use crate::support::*;
use serde_json::json;

const SECRET: &str = "correct-horse-battery-staple-4711";

#[tokio::test]
async fn a_password_reaches_the_agent_and_no_log() {
    let runtime = runtime_dir();
    let logs = tempfile::tempdir().unwrap();
    let host_log = logs.path().join("host.log");
    let serve_log = logs.path().join("serve.log");
    let mut ext = FakeExtension::start_with_stderr(
        runtime.path(),
        Stdio::from(std::fs::File::create(&host_log).unwrap()),
    )
    .await;
    let (agent, _) = start_agent_with_stderr(
        runtime.path(),
        "secretive",
        &[],
        Stdio::from(std::fs::File::create(&serve_log).unwrap()),
    )
    .await;
    let call = tokio::spawn(async move {
        let result = call(
            &agent,
            "ask_form",
            json!({"title": "Database login", "fields": [
                {"name": "user", "type": "text", "label": "User"},
                {"name": "password", "type": "password", "label": "Password", "required": true}
            ]}),
        )
        .await;
        agent.cancel().await.ok();
        result
    });
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"user": "ada", "password": SECRET}))
        .await;
    let result = call.await.unwrap();
    assert_eq!(
        result["values"]["password"], SECRET,
        "the asker gets the secret"
    );
    assert!(!result["message"].as_str().unwrap().contains(SECRET));
    ext.close().await;

    let host = std::fs::read_to_string(&host_log).unwrap();
    let serve = std::fs::read_to_string(&serve_log).unwrap();
    assert!(
        host.contains("host listening"),
        "the host log was captured: {host}"
    );
    assert!(
        serve.contains("asking"),
        "the server log was captured: {serve}"
    );
    assert!(
        !host.contains(SECRET),
        "the host logged the secret:\n{host}"
    );
    assert!(
        !serve.contains(SECRET),
        "the server logged the secret:\n{serve}"
    );
}
