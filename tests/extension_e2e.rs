//! The browser extension's own tests, run from `cargo test`: the Node unit tests of
//! `extension/lib`, `web-ext lint` on the Firefox build, the end-to-end run in real
//! Chromium against this crate's `him` binary (tests/e2e/chromium.test.mjs), and the
//! Firefox build's handshake with the real host in real Firefox (tests/e2e/firefox.test.mjs),
//! and the loopback form answered in real Chromium (tests/e2e/loopback.test.mjs).
//!
//! They need Node, the npm packages of tests/e2e (installed here with `npm ci` when they are
//! missing), and for the end-to-end runs Debian's Chromium (`/usr/lib/chromium/chromium`, or `HIM_CHROMIUM`).
//! Missing any of these skips the test with the reason printed, unless `HIM_E2E=1`
//! (`.ci/run` sets it), under which a missing prerequisite fails — Firefox (`firefox-esr`,
//! or `HIM_FIREFOX`) included, which `.ci/run` installs.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("e2e")
}

fn chromium() -> PathBuf {
    std::env::var_os("HIM_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/chromium/chromium"))
}

/// True when `what` is available; otherwise skips (returns false) or, under HIM_E2E=1, fails.
fn have(ok: bool, missing: &str) -> bool {
    if ok {
        return true;
    }
    if std::env::var_os("HIM_E2E").is_some_and(|v| v == "1") {
        panic!("HIM_E2E=1, but {missing}");
    }
    eprintln!("skipped: {missing} (set HIM_E2E=1 to make this a failure)");
    false
}

const PACKAGES: [&str; 5] = [
    "jsdom",
    "playwright-core",
    "@modelcontextprotocol/sdk",
    "web-ext",
    "axe-core",
];

fn packages_installed() -> bool {
    PACKAGES
        .iter()
        .all(|p| e2e_dir().join("node_modules").join(p).is_dir())
}

/// On a fresh checkout, `cargo test` installs the pinned packages itself (once per run),
/// so the README's test command is all the set-up there is. Without npm, or offline, the
/// tests skip as before.
fn install_packages_once() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        if packages_installed() {
            return true;
        }
        eprintln!("installing the browser tests' npm packages (npm ci --prefix tests/e2e)…");
        let ok = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefix"])
            .arg(e2e_dir())
            .status()
            .is_ok_and(|s| s.success());
        ok && packages_installed()
    })
}

/// Node and the npm packages the tests import.
fn node_ready() -> bool {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    have(node, "`node` is not on PATH")
        && have(
            install_packages_once(),
            "tests/e2e/node_modules is missing or incomplete and `npm ci --prefix tests/e2e` did not fix it",
        )
}

/// Runs `node --test <args>` in tests/e2e and fails with node's whole output if it fails.
fn node_test(args: &[&str]) {
    let out = Command::new("node")
        .arg("--test")
        .args(args)
        .current_dir(e2e_dir())
        .env("HIM_BIN", env!("CARGO_BIN_EXE_him"))
        .env("HIM_CHROMIUM", chromium())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "node --test {} failed ({})\n--- stdout ---\n{}\n--- stderr ---\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
}

#[test]
fn the_extension_lib_modules_pass_their_node_unit_tests() {
    if node_ready() {
        node_test(&["unit/"]);
    }
}

#[test]
fn the_firefox_build_passes_web_ext_lint() {
    if node_ready() {
        node_test(&["firefox-lint.test.mjs"]);
    }
}

#[test]
fn the_firefox_build_starts_the_real_host_in_firefox() {
    if node_ready() {
        // The node test skips itself, saying so, when it finds no Firefox, and fails
        // instead under HIM_E2E=1 (passed on to it).
        node_test(&["firefox.test.mjs"]);
    }
}

#[test]
fn a_person_answers_every_ask_tool_in_the_chromium_side_panel() {
    if node_ready()
        && have(
            chromium().is_file(),
            "Chromium is not installed (apt-get install chromium)",
        )
    {
        node_test(&["chromium.test.mjs"]);
    }
}

#[test]
fn a_person_answers_the_loopback_form_in_chromium() {
    if node_ready()
        && have(
            chromium().is_file(),
            "Chromium is not installed (apt-get install chromium)",
        )
    {
        node_test(&["loopback.test.mjs"]);
    }
}
