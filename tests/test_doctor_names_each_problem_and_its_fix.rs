//! `him doctor` on the real binary: each kind of broken manifest is named with its fix and
//! the browser's own error text; the runtime directory and live hosts are checked.
#![cfg(all(unix, not(target_os = "macos")))]
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;

use serde_json::json;
use support::install::{Env, Run, linux_manifest, read_json, write_json};

/// Installs for one browser, lets `edit` change the manifest, and runs the doctor.
fn doctor_after(browser: &str, edit: impl FnOnce(&Path)) -> Run {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", browser]).ok());
    edit(&linux_manifest(&env, browser));
    env.him(&["doctor"])
}

fn edit_json(path: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v = read_json(path);
    f(&mut v);
    write_json(path, &v);
}

fn assert_has(run: &Run, needles: &[&str]) {
    for n in needles {
        assert!(run.stdout.contains(n), "missing {n:?} in:\n{}", run.stdout);
    }
}

#[test]
fn a_manifest_whose_path_does_not_exist_is_reported_with_its_fix() {
    let run = doctor_after("chromium", |p| {
        edit_json(p, |v| v["path"] = json!("/nonexistent-him-test/him"));
    });
    assert!(
        !run.ok(),
        "the only manifest is broken, so the panel cannot work"
    );
    assert_has(
        &run,
        &[
            "✗ Chromium: ",
            "\"path\" is /nonexistent-him-test/him, which does not exist",
            "the browser says: \"Native host has exited.\"",
            "install --browser chromium`",
            "✗ The side panel cannot work",
        ],
    );
}

#[test]
fn a_manifest_whose_path_is_not_executable_is_reported() {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", "chrome"]).ok());
    let plain = env.home.join("him-not-executable");
    std::fs::write(&plain, "").unwrap();
    edit_json(&linux_manifest(&env, "chrome"), |v| {
        v["path"] = json!(plain)
    });
    let run = env.him(&["doctor"]);
    assert!(!run.ok());
    assert_has(
        &run,
        &[
            "✗ Google Chrome: ",
            "which is not an executable file",
            "fix: run `",
        ],
    );
}

#[test]
fn a_relative_path_is_reported_with_the_not_found_error() {
    let run = doctor_after("edge", |p| edit_json(p, |v| v["path"] = json!("him")));
    assert!(!run.ok());
    assert_has(
        &run,
        &[
            "✗ Microsoft Edge: ",
            "browsers accept only an absolute path",
            "the browser says: \"Specified native messaging host not found.\"",
            "install --browser edge`",
        ],
    );
}

#[test]
fn bad_json_is_reported_with_its_fix() {
    let run = doctor_after("brave", |p| {
        std::fs::write(p, "{\"name\": \"dev.him.host\",").unwrap()
    });
    assert!(!run.ok());
    assert_has(
        &run,
        &[
            "✗ Brave: ",
            "not valid JSON",
            "the browser says: \"Specified native messaging host not found.\"",
            "install --browser brave`",
        ],
    );
}

#[test]
fn a_name_that_does_not_match_the_file_is_reported() {
    let run = doctor_after("vivaldi", |p| {
        edit_json(p, |v| v["name"] = json!("dev.him.other"))
    });
    assert!(!run.ok());
    assert_has(
        &run,
        &[
            "✗ Vivaldi: ",
            "\"name\" is \"dev.him.other\" but the file is dev.him.host.json",
            "install --browser vivaldi`",
        ],
    );
}

#[test]
fn an_upper_case_name_gets_the_invalid_name_error() {
    let run = doctor_after("opera", |p| {
        edit_json(p, |v| v["name"] = json!("Dev.him.host"))
    });
    assert!(!run.ok());
    assert_has(
        &run,
        &["the browser says: \"Invalid native messaging host name specified.\""],
    );
}

#[test]
fn a_missing_origin_is_reported_as_forbidden() {
    let run = doctor_after("chromium", |p| {
        edit_json(p, |v| {
            v["allowed_origins"] = json!(["chrome-extension://abcdefghijklmnopabcdefghijklmnop/"]);
        });
    });
    assert!(!run.ok());
    assert_has(
        &run,
        &[
            "does not allow the him extension (chrome-extension://mephldgjjmdajmfkonfbblipccnbagig/)",
            "the browser says: \"Access to the specified native messaging host is forbidden.\"",
            "install --browser chromium`",
        ],
    );
}

#[test]
fn a_firefox_manifest_without_the_add_on_id_is_reported() {
    let run = doctor_after("firefox", |p| {
        edit_json(p, |v| v["allowed_extensions"] = json!(["someone@else"]));
    });
    assert!(!run.ok());
    assert_has(
        &run,
        &["✗ Firefox: ", "does not allow the him add-on (him@him.dev)"],
    );
}

#[test]
fn one_broken_browser_is_a_failure_line_but_not_a_failed_panel() {
    let env = Env::new();
    assert!(
        env.him(&["install", "--browser", "chromium", "--browser", "chrome"])
            .ok()
    );
    std::fs::write(linux_manifest(&env, "chrome"), "nope").unwrap();
    let run = env.him(&["doctor"]);
    assert!(run.ok(), "Chromium still works:\n{}", run.stdout);
    assert_has(
        &run,
        &[
            "✗ Google Chrome: ",
            "✓ Chromium: ",
            "✓ The side panel can work in: Chromium",
        ],
    );
}

#[test]
fn an_installed_browser_without_a_manifest_is_reported() {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", "chromium"]).ok());
    std::fs::create_dir_all(env.home.join(".config/microsoft-edge")).unwrap();
    let run = env.him(&["doctor"]);
    assert!(run.ok());
    assert_has(
        &run,
        &[
            "✗ Microsoft Edge: no him manifest at ",
            "the browser says: \"Specified native messaging host not found.\"",
            "install --browser edge`",
        ],
    );
}

#[test]
fn a_manifest_that_starts_another_executable_is_a_warning() {
    let run = doctor_after("chromium", |p| {
        edit_json(p, |v| v["path"] = json!("/bin/sh"))
    });
    assert!(run.ok(), "{}", run.stdout);
    assert_has(
        &run,
        &[
            "⚠ Chromium: ",
            "not this binary",
            "hint: if the browser should start this binary",
        ],
    );
}

#[test]
fn with_no_manifest_at_all_the_panel_cannot_work() {
    let env = Env::new();
    let run = env.him(&["doctor"]);
    assert_eq!(run.code, 1);
    assert_has(
        &run,
        &[
            "· Chromium: not installed for this user",
            "✗ The side panel cannot work: no browser has a valid him manifest",
            "install`",
        ],
    );
}

#[test]
fn a_runtime_dir_others_can_write_is_refused_with_its_fix() {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", "chromium"]).ok());
    std::fs::create_dir(&env.runtime).unwrap();
    std::fs::set_permissions(&env.runtime, std::fs::Permissions::from_mode(0o777)).unwrap();
    let run = env.him(&["doctor"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_has(
        &run,
        &[
            "has mode 0777: group or others can get in, so him refuses it",
            &format!("fix: chmod 700 {}", env.runtime.display()),
            "runtime directory would be refused",
        ],
    );
}

#[test]
fn a_private_runtime_dir_passes() {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", "chromium"]).ok());
    std::fs::create_dir(&env.runtime).unwrap();
    std::fs::set_permissions(&env.runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let run = env.him(&["doctor"]);
    assert!(run.ok());
    assert_has(
        &run,
        &[&format!(
            "✓ {} (chosen by HIM_RUNTIME_DIR): yours, mode 0700",
            env.runtime.display()
        )],
    );
}

#[test]
fn no_browser_connected_is_a_warning_with_a_hint() {
    let run = doctor_after("chromium", |_| {});
    assert!(run.ok());
    assert_has(
        &run,
        &["⚠ no browser is connected now", "hint: open the browser"],
    );
}

/// Plays a host on `<runtime>/hosts/<pid>.sock`: reads one frame, answers with `welcome`,
/// and hands back what it read.
fn fake_host(
    env: &Env,
    pid: u32,
    welcome: serde_json::Value,
) -> std::thread::JoinHandle<serde_json::Value> {
    let hosts = env.runtime.join("hosts");
    std::fs::create_dir_all(&hosts).unwrap();
    std::fs::set_permissions(&env.runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let listener = UnixListener::bind(hosts.join(format!("{pid}.sock"))).unwrap();
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut len = [0u8; 4];
        conn.read_exact(&mut len).unwrap();
        let mut body = vec![0; u32::from_ne_bytes(len) as usize];
        conn.read_exact(&mut body).unwrap();
        let reply = welcome.to_string();
        conn.write_all(&(reply.len() as u32).to_ne_bytes()).unwrap();
        conn.write_all(reply.as_bytes()).unwrap();
        serde_json::from_slice(&body).unwrap()
    })
}

#[test]
fn a_connected_browser_is_reported_with_the_extension_version() {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", "chromium"]).ok());
    let host = fake_host(
        &env,
        4242,
        json!({
            "type": "welcome", "protocol": 1,
            "host": {"version": env!("CARGO_PKG_VERSION"), "pid": 4242},
            "extension": {"id": "mephldgjjmdajmfkonfbblipccnbagig", "version": "9.8.7"},
            "panel_open": false
        }),
    );
    let run = env.him(&["doctor"]);
    let hello = host.join().unwrap();
    assert_eq!(hello["type"], "hello");
    assert_eq!(hello["protocol"], 1);
    assert!(run.ok(), "{}", run.stdout);
    assert_has(
        &run,
        &[&format!(
            "✓ browser connected: host pid 4242 (him {}), extension mephldgjjmdajmfkonfbblipccnbagig \
             version 9.8.7, side panel closed",
            env!("CARGO_PKG_VERSION")
        )],
    );
    assert!(!run.stdout.contains("no browser is connected"));
}

#[test]
fn a_host_of_another_version_is_pointed_out() {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", "chromium"]).ok());
    let host = fake_host(
        &env,
        7,
        json!({"type": "welcome", "protocol": 1, "host": {"version": "0.0.1", "pid": 7}, "panel_open": true}),
    );
    let run = env.him(&["doctor"]);
    host.join().unwrap();
    assert_has(
        &run,
        &[
            "extension not ready yet, side panel open",
            "⚠ the running host is him 0.0.1",
            "restart the browser",
        ],
    );
}

#[test]
fn a_stale_socket_is_a_warning_not_a_failure() {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", "chromium"]).ok());
    let hosts = env.runtime.join("hosts");
    std::fs::create_dir_all(&hosts).unwrap();
    std::fs::set_permissions(&env.runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let sock = hosts.join("99999.sock");
    drop(UnixListener::bind(&sock).unwrap()); // the file stays, nobody listens
    let run = env.him(&["doctor"]);
    assert!(run.ok(), "{}", run.stdout);
    assert_has(
        &run,
        &[
            &format!("⚠ {}: no host listens there", sock.display()),
            "stale socket",
        ],
    );
}

#[test]
fn a_flatpak_browser_is_named_plainly() {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", "firefox"]).ok());
    std::fs::create_dir_all(env.home.join(".var/app/org.mozilla.firefox")).unwrap();
    std::fs::create_dir_all(env.home.join("snap/chromium")).unwrap();
    let run = env.him(&["doctor"]);
    assert!(run.ok());
    assert_has(
        &run,
        &[
            "Sandboxed browsers",
            "⚠ Snap Chromium (",
            "⚠ Flatpak Firefox (",
            "cannot start native-messaging hosts",
        ],
    );
}

/// A client configured for the `--http` address sends its token to whoever listens there.
#[tokio::test]
async fn an_http_port_held_by_another_user_is_a_warning_naming_the_uid() {
    let Some(other) = support::fresh_user::fresh_user() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut theirs = other
        .command(&other.client_env())
        .args(["serve", "--http", &addr])
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    support::eventually("the other user's server to listen", || {
        std::net::TcpStream::connect(&addr).is_ok()
    })
    .await;
    let env = Env::new();
    let run = env.him(&["doctor", "--http", &addr]);
    assert_has(
        &run,
        &[
            &format!(
                "{addr} is held by another user (uid {}), not by you",
                other.uid
            ),
            "sends its bearer token to that process",
        ],
    );
    theirs.kill().await.unwrap();
    theirs.wait().await.unwrap();
    let run = env.him(&["doctor", "--http", &addr]);
    assert_has(&run, &[&format!("nothing listens on {addr} now")]);
}
