//! `him install`, `uninstall` and `manifest` on the real binary, for a throw-away user.
//! Linux locations; the macOS table is unit-tested in `src/install/browsers.rs`.
#![cfg(all(unix, not(target_os = "macos")))]
#![allow(clippy::unwrap_used)]

use crate::support::install::{BROWSERS, Env, exe, linux_manifest, read_json, write_json};
use serde_json::json;

const PINNED_ORIGIN: &str = "chrome-extension://mephldgjjmdajmfkonfbblipccnbagig/";
const OTHER_ID: &str = "abcdefghijklmnopabcdefghijklmnop";

/// The lines of install's or uninstall's output about host manifests (the extension's own
/// folder has lines too: tests/integration/install_writes_the_extension.rs).
fn manifest_lines(stdout: &str) -> String {
    stdout
        .lines()
        .filter(|l| l.ends_with("dev.him.host.json"))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn each_browser_gets_its_manifest_where_it_looks_passes_doctor_and_loses_it_on_uninstall() {
    for (browser, name) in BROWSERS {
        let env = Env::new();
        let path = linux_manifest(&env, browser);

        let run = env.him(&["install", "--browser", browser]);
        assert!(run.ok(), "{browser}: {}", run.stderr);
        assert_eq!(
            manifest_lines(&run.stdout),
            format!("wrote {}\n", path.display()),
            "{browser}"
        );

        let written = std::fs::read_to_string(&path).unwrap();
        let printed = env.him(&["manifest", browser]);
        assert_eq!(
            written, printed.stdout,
            "{browser}: install and manifest agree"
        );
        let m = read_json(&path);
        assert_eq!(m["name"], "dev.him.host");
        assert_eq!(m["type"], "stdio");
        assert_eq!(m["path"], exe().to_str().unwrap());
        if browser == "firefox" {
            assert_eq!(m["allowed_extensions"], json!(["him@him.dev"]));
            assert!(m.get("allowed_origins").is_none());
        } else {
            assert_eq!(m["allowed_origins"], json!([PINNED_ORIGIN]));
            assert!(m.get("allowed_extensions").is_none());
        }

        let doctor = env.him(&["doctor"]);
        assert!(doctor.ok(), "{browser}: {}", doctor.stdout);
        assert!(
            doctor
                .stdout
                .contains(&format!("✓ {name}: {}", path.display())),
            "{browser}: {}",
            doctor.stdout
        );
        assert!(!doctor.stdout.contains('✗'), "{browser}: {}", doctor.stdout);

        let run = env.him(&["uninstall"]);
        assert!(run.ok(), "{browser}: {}", run.stderr);
        assert_eq!(
            manifest_lines(&run.stdout),
            format!("removed {}\n", path.display())
        );
        assert!(!path.exists(), "{browser}: manifest left behind");
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert!(leftovers.is_empty(), "{browser}: {leftovers:?}");
    }
}

#[test]
fn installing_twice_is_the_same_as_once() {
    let env = Env::new();
    let args = ["install", "--browser", "chromium", "--browser", "firefox"];
    assert!(env.him(&args).ok());
    let paths = [
        linux_manifest(&env, "chromium"),
        linux_manifest(&env, "firefox"),
    ];
    let first: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let again = env.him(&args);
    assert!(again.ok());
    let second: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert_eq!(first, second);
    assert_eq!(
        manifest_lines(&again.stdout),
        format!(
            "unchanged {}\nunchanged {}\n",
            paths[0].display(),
            paths[1].display()
        )
    );
    // Nothing else appeared beside them (no temporary files left over).
    for p in &paths {
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }
}

#[test]
fn install_repairs_a_manifest_that_was_changed() {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", "edge"]).ok());
    let path = linux_manifest(&env, "edge");
    let good = std::fs::read(&path).unwrap();
    std::fs::write(&path, "{ broken").unwrap();
    let run = env.him(&["install", "--browser", "edge"]);
    assert_eq!(
        manifest_lines(&run.stdout),
        format!("wrote {}\n", path.display())
    );
    assert_eq!(std::fs::read(&path).unwrap(), good);
}

#[test]
fn with_no_browser_found_and_none_named_install_fails_and_says_where_it_looked() {
    let env = Env::new();
    let run = env.him(&["install"]);
    assert!(!run.ok());
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    for (_, name) in BROWSERS {
        assert!(run.stderr.contains(name), "{}", run.stderr);
    }
    assert!(
        run.stderr
            .contains(&env.home.join(".config/chromium").display().to_string())
    );
    assert!(
        run.stderr
            .contains(&env.home.join(".mozilla").display().to_string())
    );
    assert!(
        run.stderr.contains("him install --browser chromium"),
        "{}",
        run.stderr
    );
}

#[test]
fn install_writes_for_the_browsers_whose_folders_exist_and_no_others() {
    let env = Env::new();
    std::fs::create_dir_all(env.home.join(".config/google-chrome")).unwrap();
    std::fs::create_dir_all(env.home.join(".mozilla/firefox")).unwrap();
    let run = env.him(&["install"]);
    assert!(run.ok(), "{}", run.stderr);
    let chrome = linux_manifest(&env, "chrome");
    let firefox = linux_manifest(&env, "firefox");
    assert_eq!(
        manifest_lines(&run.stdout),
        format!("wrote {}\nwrote {}\n", chrome.display(), firefox.display())
    );
    for (browser, _) in BROWSERS {
        let path = linux_manifest(&env, browser);
        assert_eq!(
            path.exists(),
            browser == "chrome" || browser == "firefox",
            "{browser}"
        );
    }
}

#[test]
fn firefox_is_found_by_its_xdg_folder_too_but_its_manifest_stays_in_dot_mozilla() {
    let env = Env::new();
    std::fs::create_dir_all(env.home.join(".config/mozilla/firefox")).unwrap();
    let run = env.him(&["install"]);
    assert!(run.ok(), "{}", run.stderr);
    assert!(linux_manifest(&env, "firefox").starts_with(env.home.join(".mozilla")));
    assert!(linux_manifest(&env, "firefox").exists());
}

#[test]
fn xdg_config_home_decides_where_the_chromium_family_looks() {
    let env = Env::with_xdg_config_home();
    let xdg = env.xdg.clone().unwrap();
    std::fs::create_dir_all(xdg.join("BraveSoftware/Brave-Browser")).unwrap();
    let run = env.him(&["install"]);
    assert!(run.ok(), "{}", run.stderr);
    let path = xdg.join("BraveSoftware/Brave-Browser/NativeMessagingHosts/dev.him.host.json");
    assert_eq!(
        manifest_lines(&run.stdout),
        format!("wrote {}\n", path.display())
    );
    assert!(!env.home.join(".config").exists());
    let doctor = env.him(&["doctor"]);
    assert!(doctor.ok(), "{}", doctor.stdout);
    assert!(
        doctor
            .stdout
            .contains(&format!("✓ Brave: {}", path.display()))
    );
    assert!(env.him(&["uninstall"]).ok());
    assert!(!path.exists());
}

#[test]
fn extra_extension_ids_are_allowed_after_the_pinned_one() {
    let env = Env::new();
    let run = env.him(&[
        "install",
        "--browser",
        "vivaldi",
        "--extension-id",
        OTHER_ID,
        "--extension-id",
        &format!("chrome-extension://{OTHER_ID}/"),
    ]);
    assert!(run.ok(), "{}", run.stderr);
    let m = read_json(&linux_manifest(&env, "vivaldi"));
    assert_eq!(
        m["allowed_origins"],
        json!([PINNED_ORIGIN, format!("chrome-extension://{OTHER_ID}/")])
    );
}

#[test]
fn a_bad_extension_id_is_refused_before_anything_is_written() {
    let env = Env::new();
    let run = env.him(&[
        "install",
        "--browser",
        "opera",
        "--extension-id",
        "not-an-id",
    ]);
    assert!(!run.ok());
    assert!(
        run.stderr
            .contains("`not-an-id` is not a Chromium extension id"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("32 letters from a to p"));
    assert!(!linux_manifest(&env, "opera").exists());
}

#[test]
fn uninstall_removes_only_him_manifests() {
    let env = Env::new();
    assert!(env.him(&["install", "--browser", "chromium"]).ok());
    let ours = linux_manifest(&env, "chromium");
    let dir = ours.parent().unwrap().to_path_buf();
    let neighbour = dir.join("org.other.host.json");
    std::fs::write(&neighbour, r#"{"name": "org.other.host"}"#).unwrap();
    // A file with our name but someone else's contents is not ours to delete.
    let foreign = linux_manifest(&env, "firefox");
    std::fs::create_dir_all(foreign.parent().unwrap()).unwrap();
    write_json(&foreign, &json!({"name": "org.other.host", "path": "/x"}));

    let run = env.him(&["uninstall"]);
    assert!(run.ok(), "{}", run.stderr);
    assert_eq!(
        manifest_lines(&run.stdout),
        format!("removed {}\n", ours.display())
    );
    assert!(
        run.stderr
            .contains(&format!("left {} alone", foreign.display())),
        "{}",
        run.stderr
    );
    assert!(!ours.exists());
    assert!(neighbour.exists());
    assert!(foreign.exists());
    assert!(dir.is_dir(), "the browser's folder stays");
}

#[test]
fn uninstall_of_one_browser_leaves_the_others() {
    let env = Env::new();
    assert!(
        env.him(&["install", "--browser", "chrome", "--browser", "edge"])
            .ok()
    );
    let run = env.him(&["uninstall", "--browser", "edge"]);
    assert!(run.ok());
    assert!(!linux_manifest(&env, "edge").exists());
    assert!(linux_manifest(&env, "chrome").exists());
}

#[test]
fn uninstall_with_nothing_installed_says_so_and_succeeds() {
    let env = Env::new();
    let run = env.him(&["uninstall"]);
    assert!(run.ok());
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("nothing to remove"), "{}", run.stderr);
}

#[test]
fn install_warns_when_the_binary_sits_in_a_build_folder() {
    // The test binary is target/debug/him, which is exactly that case.
    let env = Env::new();
    let run = env.him(&["install", "--browser", "chromium"]);
    assert!(run.ok());
    assert!(run.stderr.contains("cargo build folder"), "{}", run.stderr);
    assert!(
        run.stderr.contains("cargo install --path ."),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("~/.cargo/bin/him install"),
        "{}",
        run.stderr
    );
}

#[test]
fn manifest_uses_a_given_path_and_refuses_a_relative_one() {
    let env = Env::new();
    let run = env.him(&[
        "manifest",
        "chrome",
        "--path",
        "/nonexistent-him-test/bin/him",
    ]);
    assert!(run.ok(), "{}", run.stderr);
    let m: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(m["path"], "/nonexistent-him-test/bin/him");
    let run = env.him(&["manifest", "chrome", "--path", "bin/him"]);
    assert!(!run.ok());
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("not absolute"), "{}", run.stderr);
}

#[test]
fn manifest_refuses_a_bad_extension_id() {
    let env = Env::new();
    let run = env.him(&[
        "manifest",
        "edge",
        "--extension-id",
        "ABCDEFGHIJKLMNOPABCDEFGHIJKLMNOP",
    ]);
    assert!(!run.ok());
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("32 letters from a to p"),
        "{}",
        run.stderr
    );
}

#[test]
fn install_names_a_flatpak_browser_it_cannot_serve() {
    let env = Env::new();
    std::fs::create_dir_all(env.home.join(".var/app/org.chromium.Chromium")).unwrap();
    let run = env.him(&["install", "--browser", "chromium"]);
    assert!(run.ok());
    assert!(
        run.stderr.contains("Flatpak Chromium")
            && run.stderr.contains("cannot start native-messaging hosts"),
        "{}",
        run.stderr
    );
}
