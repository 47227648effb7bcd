//! The real Python `mcp` 2.3 SDK against `him serve --http` (the client that found issue
//! 12's items 2 and 8): in its default auto mode (2026-07-28, every request on its own) the
//! elicitation round trip works, and a legacy session closes without "Session termination
//! failed". And `mcp` 1.10, of protocol 2025-06-18, which logged "Error parsing SSE message"
//! for every stream that opened with a priming event (issue 23.1): its session logs nothing.
//! Skipped with a message when a client is not installed (`mcp` 2.3 with pip, 1.10 in
//! `target/py/mcp-1.10` by `.ci/python-clients`), except under `HIM_E2E=1`.

use std::process::Stdio;

use crate::support::http::*;
use crate::support::*;
use serde_json::Value;

fn python_has_mcp() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test]
async fn the_python_sdk_elicits_over_http_in_auto_mode_and_closes_its_session_cleanly() {
    if !require(
        python_has_mcp(),
        "python3 cannot import mcp",
        "python3 -m pip install mcp==2.3.0",
    ) {
        return;
    }
    let runtime = runtime_dir();
    let server = HttpServer::start(
        runtime.path(),
        &[],
        &[("HIM_RECONNECT_GRACE_MS", "0"), ("HIM_AUTO_REJECT_MS", "0")],
    )
    .await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/python_http_client.py"
    );
    let run = tokio::process::Command::new("python3")
        .arg(script)
        .arg(&server.url)
        .arg(&server.token)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(PATIENCE * 2, run)
        .await
        .expect("the Python client finished in time")
        .expect("run python3");
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("[python] {stderr}");
    assert!(
        output.status.success(),
        "the Python client failed:\n{stderr}"
    );
    assert!(
        !stderr.contains("Session termination failed"),
        "the Python SDK did not like how the session ended:\n{stderr}"
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("the client's JSON line");

    assert_eq!(report["auto_version"], "2026-07-28", "{report}");
    let auto = &report["auto"];
    assert_eq!(auto["status"], "answered", "{report}");
    assert_eq!(auto["via"], "elicitation", "{report}");
    assert_eq!(auto["answer"], "Ada", "{report}");
    assert!(
        report["forms"][0]
            .as_str()
            .is_some_and(|m| m.contains("Your name?")),
        "{report}"
    );

    assert_ne!(report["legacy_version"], "2026-07-28", "{report}");
    assert!(report["legacy"]["channel"].is_string(), "{report}");
    let log = server.stderr_text();
    assert!(
        log.contains("HTTP session deleted by the client"),
        "the legacy session was not deleted:\n{log}"
    );
}

/// The venv `.ci/python-clients` makes for `mcp` 1.10 (protocol 2025-06-18).
fn python_mcp_1_10() -> Option<std::path::PathBuf> {
    let python =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/py/mcp-1.10/bin/python");
    require(
        python.exists(),
        &format!("Python mcp 1.10 is not installed ({})", python.display()),
        "run .ci/python-clients, which makes target/py/mcp-1.10",
    )
    .then_some(python)
}

#[tokio::test]
async fn python_mcp_1_10_of_2025_06_18_reads_every_event_and_elicits_over_http() {
    let Some(python) = python_mcp_1_10() else {
        return;
    };
    let runtime = runtime_dir();
    let server = HttpServer::start(
        runtime.path(),
        &[],
        &[("HIM_RECONNECT_GRACE_MS", "0"), ("HIM_AUTO_REJECT_MS", "0")],
    )
    .await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/python_mcp_1_10_http_client.py"
    );
    let form = serde_json::json!({
        "title": "Scale the service",
        "fields": [
            {"name": "replicas", "type": "number", "label": "Replicas",
             "min": 1, "max": 120, "defaultValue": 3},
            {"name": "ratio", "type": "number", "label": "CPU ratio", "min": 0.5, "max": 2.5}
        ],
        "timeout_ms": 20000
    });
    let run = tokio::process::Command::new(python)
        .arg(script)
        .arg(&server.url)
        .arg(&server.token)
        .arg(form.to_string())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(PATIENCE * 2, run)
        .await
        .expect("the Python client finished in time")
        .expect("run python");
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("[python mcp 1.10] {stderr}");
    assert!(
        output.status.success(),
        "the Python client failed:\n{stderr}"
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("the client's JSON line");
    assert_eq!(report["version"], "2025-06-18", "{report}");
    assert_eq!(
        report["status"]["protocol_version"], "2025-06-18",
        "{report}"
    );
    assert_eq!(
        report["tools"].as_array().map(Vec::len),
        Some(TOOLS.len()),
        "{report}"
    );
    // Every stream (initialize, the GET stream, each call) carried JSON messages only: the
    // SDK logged nothing, where a priming event made it log "Error parsing SSE message".
    assert_eq!(report["logged"], serde_json::json!([]), "{report}");
    let result = &report["result"];
    assert_eq!(result["status"], "answered", "{report}");
    assert_eq!(result["via"], "elicitation", "{report}");
    assert_eq!(result["values"]["replicas"], 4, "{report}");
    assert_eq!(
        report["types"],
        serde_json::json!({
            "replicas.minimum": "int", "replicas.maximum": "int", "replicas.default": "int",
            "ratio.minimum": "float", "ratio.maximum": "float"
        }),
        "{report}"
    );
    let log = server.stderr_text();
    assert!(
        log.contains("HTTP session deleted by the client"),
        "the session was not deleted:\n{log}"
    );
}
