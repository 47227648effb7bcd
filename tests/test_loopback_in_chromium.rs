//! The loopback form answered in real Chromium (tests/e2e/loopback.test.mjs, Node and
//! playwright-core), against this crate's `him` binary.
//!
//! Needs `node`, playwright-core in tests/e2e/node_modules (`npm ci --prefix tests/e2e`) and
//! Debian's Chromium (`/usr/lib/chromium/chromium`, or `HIM_CHROMIUM`). Missing any of them
//! skips the test with the reason printed, unless `HIM_E2E=1`, under which it fails.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

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

#[test]
fn a_person_answers_the_loopback_form_in_chromium() {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !(have(node, "`node` is not on PATH")
        && have(
            e2e_dir()
                .join("node_modules")
                .join("playwright-core")
                .is_dir(),
            "tests/e2e/node_modules has no playwright-core; run `npm ci --prefix tests/e2e`",
        )
        && have(
            chromium().exists(),
            "Chromium is not installed (HIM_CHROMIUM)",
        ))
    {
        return;
    }
    let out = Command::new("node")
        .args(["--test", "loopback.test.mjs"])
        .current_dir(e2e_dir())
        .env("HIM_BIN", env!("CARGO_BIN_EXE_him"))
        .env("HIM_CHROMIUM", chromium())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "node --test loopback.test.mjs failed ({})\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
}
