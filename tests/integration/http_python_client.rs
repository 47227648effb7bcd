//! The real Python `mcp` 2.3 SDK against `him serve --http` (the client that found issue
//! 12's items 2 and 8): in its default auto mode (2026-07-28, every request on its own) the
//! elicitation round trip works, and a legacy session closes without "Session termination
//! failed". Skipped with a message when `mcp` is not installed, except under `HIM_E2E=1`.

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
