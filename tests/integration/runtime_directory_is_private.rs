//! The host publishes its socket only in a private place: a 0700 directory it creates
//! itself, a 0600 socket, never a directory that group or others can get into, and never
//! a name another user could create first.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Stdio;

use crate::support;
use crate::support::*;

#[tokio::test]
async fn the_host_creates_a_private_directory_and_a_private_socket() {
    let base = runtime_dir();
    let runtime = base.path().join("fresh/him");
    let ext = FakeExtension::start(&runtime).await;
    assert_eq!(std::fs::metadata(&runtime).unwrap().mode() & 0o777, 0o700);
    assert_eq!(
        std::fs::metadata(runtime.join("hosts")).unwrap().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(&ext.socket).unwrap().mode() & 0o777,
        0o600
    );
    assert_eq!(
        ext.socket.file_name().unwrap().to_str().unwrap(),
        format!("{}.sock", ext.pid)
    );
}

/// A host started as Chrome starts it, in `runtime`, which must refuse to run (exit 1).
async fn refused_host(runtime: &std::path::Path) -> std::process::Output {
    let output = tokio::process::Command::new(him_bin())
        .arg(origin())
        .env("HIM_RUNTIME_DIR", runtime)
        .env(
            "HIM_STATE_DIR",
            support::state_dir(std::path::Path::new(runtime)),
        )
        .stdin(Stdio::piped())
        .output()
        .await
        .expect("run the host");
    assert_eq!(
        output.status.code(),
        Some(1),
        "the host did not refuse {}",
        runtime.display()
    );
    output
}

#[tokio::test]
async fn the_host_refuses_a_directory_others_can_write_and_says_how_to_fix_it() {
    let base = runtime_dir();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let output = refused_host(base.path()).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("group or others can get in") && stderr.contains("chmod 700"),
        "{stderr}"
    );
    // Stdout is the browser's channel: whole frames only, hello and then the reason.
    let mut stdout = &output.stdout[..];
    let hello = him::wire::frame::read_frame_sync(&mut stdout, 1 << 20)
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&hello).contains("\"hello\""));
    let error = him::wire::frame::read_frame_sync(&mut stdout, 1 << 20)
        .unwrap()
        .unwrap();
    let error: serde_json::Value = serde_json::from_slice(&error).unwrap();
    assert_eq!(error["type"], "error");
    assert!(
        error["message"].as_str().unwrap().contains("chmod 700"),
        "{error}"
    );
    assert!(stdout.is_empty(), "nothing after the frames");
    assert!(!base.path().join("hosts").exists());
}

#[tokio::test]
async fn a_runtime_directory_others_may_only_enter_is_refused_too() {
    let base = runtime_dir();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let output = refused_host(base.path()).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("group or others can get in"), "{stderr}");
    assert!(!base.path().join("hosts").exists());
}

/// The old fallback, `/tmp/him-<uid>`, was a name anyone could create first: another user
/// who made it owned the person's runtime directory, and him refused it. The home-folder
/// rule has no such name.
#[tokio::test]
async fn another_user_cannot_take_the_runtime_directory_first() {
    let Some(person) = support::fresh_user::fresh_user() else {
        return;
    };
    let Some(attacker) = support::fresh_user::fresh_user() else {
        return;
    };
    let squatted = std::env::temp_dir().join(format!("him-{}", person.uid));
    // As the attacker: a directory named for the person's uid, open to all.
    let squat = tokio::process::Command::new("/bin/sh")
        .args([
            "-c",
            "mkdir -m 0777 \"$SQUAT\" && mkdir -m 0777 \"$SQUAT/hosts\"",
        ])
        .env("SQUAT", &squatted)
        .uid(attacker.uid)
        .gid(attacker.gid)
        .status()
        .await
        .unwrap();
    assert!(
        squat.success(),
        "the attacker could not make {}",
        squatted.display()
    );
    let hostname = nix::unistd::gethostname().expect("hostname");
    let runtime = person
        .home
        .join(".local/state/him/run")
        .join(hostname.to_string_lossy().as_ref());
    let mut command = person.command(&person.browser_env());
    command.stderr(Stdio::inherit());
    let mut ext = FakeExtension::launch(command, &runtime).await;
    let mut serve = person.command(&person.client_env());
    serve.arg("serve");
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(serve)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    use rmcp::ServiceExt;
    let agent = TestClient::default().serve(transport).await.unwrap();
    let asked = tokio::spawn(async move {
        call(
            &agent,
            "ask_confirm",
            serde_json::json!({"question": "Still yours?"}),
        )
        .await
    });
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], serde_json::json!({"confirmed": true}))
        .await;
    let result = asked.await.unwrap();
    assert_eq!(result["via"], "extension", "{result}");
    let _ = std::fs::remove_dir_all(&squatted);
}

#[tokio::test]
async fn a_runtime_directory_too_long_for_a_socket_path_says_what_to_do() {
    let base = runtime_dir();
    let long = base.path().join("d".repeat(100));
    let output = refused_host(&long).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("at most 107 bytes") && stderr.contains("HIM_RUNTIME_DIR"),
        "{stderr}"
    );
}
