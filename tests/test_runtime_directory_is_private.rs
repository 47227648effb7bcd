//! The host publishes its socket only in a private place: a 0700 directory it creates
//! itself, a 0600 socket, and never a directory that others can write to.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Stdio;

use common::*;

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

#[tokio::test]
async fn the_host_refuses_a_directory_others_can_write_and_says_how_to_fix_it() {
    let base = runtime_dir();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let output = tokio::process::Command::new(him_bin())
        .arg(origin())
        .env("HIM_RUNTIME_DIR", base.path())
        .stdin(Stdio::piped())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("others can write to it") && stderr.contains("chmod 700"),
        "{stderr}"
    );
    // Stdout is the browser's channel: whole frames only, hello and then the reason.
    let mut stdout = &output.stdout[..];
    let hello = him::frame::read_frame_sync(&mut stdout, 1 << 20)
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&hello).contains("\"hello\""));
    let error = him::frame::read_frame_sync(&mut stdout, 1 << 20)
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
