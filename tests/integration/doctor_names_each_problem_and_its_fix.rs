//! `him doctor` on the real binary: each kind of broken manifest is named with its fix and
//! the browser's own error text; the runtime directory and live hosts are checked.
#![cfg(all(unix, not(target_os = "macos")))]
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;

use crate::support;
use crate::support::install::{Env, Run, linux_manifest, read_json, write_json};
use serde_json::json;

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
    let listener = crate::support::host_listener(&env.runtime, pid);
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

/// What the far end of a forwarded socket does, for the doctor on the machine it leads to.
#[derive(Clone)]
enum FarEnd {
    /// The SSH connection is up, no gateway on the other machine: closed at once.
    NoGateway,
    /// The other machine asleep: accepted, nothing ever comes back.
    Asleep,
    /// A gateway answers `hello` with this `welcome`.
    Gateway(serde_json::Value),
}

/// A socket SSH forwarded into this machine's forwarded folder, its far end `far`.
fn forwarded_socket(env: &Env, name: &str, far: FarEnd) {
    let dir = env.runtime.join("forwarded");
    std::fs::create_dir_all(&dir).unwrap();
    for private in [&env.runtime, &dir] {
        std::fs::set_permissions(private, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let listener = UnixListener::bind(dir.join(name)).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let mut conn = conn.unwrap();
            match &far {
                FarEnd::NoGateway => drop(conn),
                FarEnd::Asleep => held.push(conn),
                FarEnd::Gateway(welcome) => {
                    let mut len = [0u8; 4];
                    conn.read_exact(&mut len).unwrap();
                    let mut body = vec![0; u32::from_ne_bytes(len) as usize];
                    conn.read_exact(&mut body).unwrap();
                    let reply = welcome.to_string();
                    conn.write_all(&(reply.len() as u32).to_ne_bytes()).unwrap();
                    conn.write_all(reply.as_bytes()).unwrap();
                }
            }
        }
    });
}

fn gateway_welcome(extension_id: &str) -> serde_json::Value {
    json!({"type": "welcome", "protocol": 1,
           "host": {"version": env!("CARGO_PKG_VERSION"), "pid": 77, "machine": "laptop"},
           "extension": {"id": extension_id, "version": "1.0"}, "panel_open": true})
}

/// `him doctor` on a machine with no browser whose forwarded folder `him remote` made, its
/// ~/.ssh/rc line in place; its own state folder.
fn doctor_on_the_remote(env: &Env) -> Run {
    assert!(env.him(&["forwarded-dir", "--ssh-rc"]).ok());
    env.command(&["doctor"])
        .env("HIM_STATE_DIR", env.home.join(".state/him"))
        .output()
        .unwrap()
        .into()
}

/// The lines of the doctor's report from `from` up to (not including) `to`.
fn between<'a>(run: &'a Run, from: &str, to: &str) -> &'a str {
    let start = run.stdout.find(from).expect(from);
    let end = run.stdout[start..]
        .find(to)
        .map_or(run.stdout.len(), |e| start + e);
    &run.stdout[start..end]
}

/// All well on a machine that reaches another's panel: nothing warns, no browser is asked for.
#[test]
fn a_machine_that_reaches_anothers_panel_through_ssh_is_told_so_without_a_warning() {
    let env = Env::new();
    forwarded_socket(
        &env,
        "laptop@0123456789ab.sock",
        FarEnd::Gateway(gateway_welcome(him::EXTENSION_ID)),
    );
    let run = doctor_on_the_remote(&env);
    assert!(run.ok(), "{}", run.stdout);
    assert_has(
        &run,
        &[
            "· no browser runs on this machine, and none is needed",
            "✓ the panel is reached through SSH, from laptop (side panel open",
            "✓ The side panel can work: through SSH, from laptop",
        ],
    );
    let checked = between(&run, "Browser connection", "HTTP tokens");
    assert!(
        !checked.contains('⚠') && !checked.contains('✗'),
        "{checked}"
    );
    assert!(
        !run.stdout.contains("no browser is connected"),
        "{}",
        run.stdout
    );
}

/// The SSH connection is up, the gateway on the machine with the browser is not: said as
/// that, with the fix there — not `him install` here, not "open the browser" (it may be
/// open), no error number.
#[test]
fn a_gateway_down_on_the_machine_with_the_browser_is_named_with_the_fix_there() {
    let env = Env::new();
    forwarded_socket(&env, "laptop@0123456789ab.sock", FarEnd::NoGateway);
    let run = doctor_on_the_remote(&env);
    assert!(!run.ok());
    assert_has(
        &run,
        &[
            "the SSH connection is up, but no gateway answers on the machine with the browser",
            "✗ The side panel cannot be reached from here now: no gateway answers on the machine with the browser",
            "fix: on the machine with the browser, run `him doctor`: it says why the gateway is not running there",
        ],
    );
    for wrong in [
        "him install",
        "open the browser",
        "os error",
        "no browser is connected",
        "Broken pipe",
    ] {
        let after_binary = between(&run, "Browser manifests", "\0");
        assert!(
            !after_binary.contains(wrong),
            "{wrong:?} in:\n{}",
            run.stdout
        );
    }
}

#[test]
fn a_gateway_that_reaches_no_browser_asks_for_the_browser_there() {
    let env = Env::new();
    forwarded_socket(
        &env,
        "laptop@0123456789ab.sock",
        FarEnd::Gateway(gateway_welcome("him-gateway")),
    );
    let run = doctor_on_the_remote(&env);
    assert!(!run.ok());
    assert_has(
        &run,
        &[
            "the gateway on laptop answers, but no browser with him is open there",
            "hint: open the browser on laptop",
            "✗ The side panel cannot be reached from here now: no browser with him is open on laptop",
        ],
    );
    assert!(
        !between(&run, "Browser manifests", "\0").contains("him install"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_route_that_says_nothing_is_a_machine_asleep_or_a_network_gone() {
    let env = Env::new();
    forwarded_socket(&env, "laptop@0123456789ab.sock", FarEnd::Asleep);
    let run = doctor_on_the_remote(&env);
    assert!(!run.ok());
    assert_has(
        &run,
        &[
            "the SSH connection is up on this side, but nothing comes back through it within 2 s",
            "wake the machine with the browser",
        ],
    );
    assert!(
        !between(&run, "Browser manifests", "\0").contains("him install"),
        "{}",
        run.stdout
    );
}

#[test]
fn with_no_ssh_connection_the_doctor_says_to_connect_and_removes_what_the_last_one_left() {
    let env = Env::new();
    forwarded_socket(&env, "laptop@0123456789ab.sock", FarEnd::NoGateway);
    let stale = env.runtime.join("forwarded/laptop.sock");
    drop(UnixListener::bind(&stale).unwrap()); // its connection ended
    std::fs::remove_file(env.runtime.join("forwarded/laptop@0123456789ab.sock")).unwrap();
    let run = doctor_on_the_remote(&env);
    assert!(!run.ok());
    assert_has(
        &run,
        &[
            &format!(
                "✓ {}: left by an SSH connection that ended; removed",
                stale.display()
            ),
            "⚠ no SSH connection forwards a panel here now",
            "from the machine with the browser, connect: `ssh <this host>`",
        ],
    );
    assert!(!stale.exists());
    assert!(
        !between(&run, "Browser manifests", "\0").contains("him install"),
        "{}",
        run.stdout
    );
}

/// On the machine with the browser: a stopped gateway with the browser open is not fixed by
/// opening the browser.
#[test]
fn a_stopped_gateway_is_told_apart_with_the_browser_open_and_closed() {
    let env = Env::new();
    let state = env.home.join(".state/him");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("gateway-enabled"), "").unwrap();
    let doctor = || -> Run {
        env.command(&["doctor"])
            .env("HIM_STATE_DIR", &state)
            .output()
            .unwrap()
            .into()
    };
    let closed = doctor();
    assert_has(
        &closed,
        &[
            "it runs while a browser with him is open",
            "hint: open the browser: its host starts the gateway",
        ],
    );
    let host = fake_host(
        &env,
        4343,
        json!({"type": "welcome", "protocol": 1,
               "host": {"version": env!("CARGO_PKG_VERSION"), "pid": 4343},
               "extension": {"id": him::EXTENSION_ID, "version": "1.0"}, "panel_open": false}),
    );
    let open = doctor();
    host.join().unwrap();
    assert_has(
        &open,
        &[
            "the gateway is not running, though a browser is connected",
            "hint: run `him gateway`",
        ],
    );
    let section = between(&open, "Gateway for agents", "HTTP tokens");
    assert!(!section.contains("open the browser"), "{section}");
}
