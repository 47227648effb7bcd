//! `him config <client>` on the real binary: stdout is the snippet alone and parses as the
//! client expects (JSON, or TOML for Codex); where it goes and why goes to stderr.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

struct Out {
    stdout: String,
    stderr: String,
}

fn config(client: &str) -> Out {
    config_with(&[client])
}

fn config_with(args: &[&str]) -> Out {
    let client = args[0];
    let o = Command::new(env!("CARGO_BIN_EXE_him"))
        .arg("config")
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{client}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Out {
        stdout: String::from_utf8(o.stdout).unwrap(),
        stderr: String::from_utf8(o.stderr).unwrap(),
    }
}

fn exe() -> String {
    Path::new(env!("CARGO_BIN_EXE_him"))
        .canonicalize()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

fn him_timeout_ms(server: &Value) -> u64 {
    server["env"]["HIM_TIMEOUT_MS"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn every_json_snippet_parses_and_starts_him_serve_by_absolute_path() {
    for (client, key) in [
        ("claude-code", "mcpServers"),
        ("claude-desktop", "mcpServers"),
        ("cursor", "mcpServers"),
        ("vscode", "servers"),
        ("gemini", "mcpServers"),
        ("windsurf", "mcpServers"),
        ("qwen", "mcpServers"),
    ] {
        let out = config(client);
        let v: Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{client}: stdout is not JSON ({e}):\n{}", out.stdout));
        let servers = v[key]
            .as_object()
            .unwrap_or_else(|| panic!("{client}: no {key}"));
        assert_eq!(servers.len(), 1, "{client}");
        let him = &servers["him"];
        assert_eq!(him["command"], exe(), "{client}");
        // Claude Code's server also offers its permission-prompt tool.
        let args = if client == "claude-code" {
            json!(["serve", "--permission-tool"])
        } else {
            json!(["serve"])
        };
        assert_eq!(him["args"], args, "{client}");
        assert!(him_timeout_ms(him) >= 30_000, "{client}");
        assert!(
            !out.stderr.is_empty(),
            "{client}: says where the snippet goes"
        );
    }
}

#[test]
fn the_codex_snippet_is_toml_with_a_tool_timeout_above_hims_wait() {
    let out = config("codex");
    let doc: toml::Table = toml::from_str(&out.stdout).unwrap();
    let him = &doc["mcp_servers"]["him"];
    assert_eq!(him["command"].as_str(), Some(exe().as_str()));
    assert_eq!(him["args"].as_array().unwrap()[0].as_str(), Some("serve"));
    let tool_timeout = him["tool_timeout_sec"].as_integer().unwrap() as u64;
    let wait: u64 = him["env"]["HIM_TIMEOUT_MS"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        tool_timeout * 1000 > wait,
        "Codex would cut the call before him answers"
    );
    assert!(
        out.stderr.contains("~/.codex/config.toml"),
        "{}",
        out.stderr
    );
}

#[test]
fn claude_code_gets_the_mcp_add_command_and_the_tool_timeout() {
    let out = config("claude-code");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["mcpServers"]["him"]["type"], "stdio");
    assert!(
        out.stderr
            .contains("claude mcp add --scope user --transport stdio him --env HIM_TIMEOUT_MS="),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&format!("-- {} serve", exe())),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("MCP_TOOL_TIMEOUT"), "{}", out.stderr);
    assert!(out.stderr.contains(".mcp.json"));
    // Its terminal UI backgrounds a call at 120 s: him returns `pending` at 100 s.
    assert_eq!(
        v["mcpServers"]["him"]["env"]["HIM_RETURN_AFTER_MS"],
        "100000"
    );
    assert!(
        out.stderr.contains("--env HIM_RETURN_AFTER_MS=100000 --"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("get_answer"), "{}", out.stderr);
}

#[test]
fn claude_desktop_stops_waiting_before_its_60_second_cut() {
    let out = config("claude-desktop");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(him_timeout_ms(&v["mcpServers"]["him"]) < 60_000);
    assert!(
        out.stderr.contains("claude_desktop_config.json"),
        "{}",
        out.stderr
    );
}

#[test]
fn vscode_uses_servers_with_a_type() {
    let v: Value = serde_json::from_str(&config("vscode").stdout).unwrap();
    assert!(v.get("mcpServers").is_none());
    assert_eq!(v["servers"]["him"]["type"], "stdio");
}

#[test]
fn gemini_gets_a_request_timeout_above_hims_wait() {
    let out = config("gemini");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let him = &v["mcpServers"]["him"];
    assert!(him["timeout"].as_u64().unwrap() > him_timeout_ms(him));
    assert!(out.stderr.contains("~/.gemini/settings.json"));
}

#[test]
fn gemini_and_qwen_trust_him_so_that_their_headless_runs_offer_its_tools() {
    for (client, file, without) in [
        ("gemini", "~/.gemini/settings.json", "`gemini -p`"),
        ("qwen", "~/.qwen/settings.json", "`qwen -p`"),
    ] {
        let out = config(client);
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        let him = &v["mcpServers"]["him"];
        assert_eq!(him["trust"], true, "{client}");
        assert!(
            him["timeout"].as_u64().unwrap() > him_timeout_ms(him),
            "{client}"
        );
        assert!(out.stderr.contains(file), "{client}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!("Without it, {without}")),
            "{client}: {}",
            out.stderr
        );
    }
}

#[test]
fn opencode_gets_its_own_mcp_block_with_a_timeout_above_hims_wait() {
    let out = config("opencode");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(v.get("mcpServers").is_none(), "OpenCode ignores mcpServers");
    assert_eq!(v["$schema"], "https://opencode.ai/config.json");
    let him = &v["mcp"]["him"];
    assert_eq!(him["type"], "local");
    assert_eq!(him["command"], json!([exe(), "serve"]));
    assert_eq!(him["enabled"], true);
    let wait: u64 = him["environment"]["HIM_TIMEOUT_MS"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(him["timeout"].as_u64().unwrap() > wait);
    assert!(
        out.stderr.contains("~/.config/opencode/opencode.json"),
        "{}",
        out.stderr
    );
}

#[test]
fn claude_code_says_that_claude_p_needs_him_in_allowed_tools() {
    let out = config("claude-code");
    assert!(
        out.stderr.contains("--allowedTools mcp__him"),
        "{}",
        out.stderr
    );
}

#[test]
fn cursor_and_windsurf_say_where_their_file_lives() {
    assert!(config("cursor").stderr.contains("~/.cursor/mcp.json"));
    assert!(
        config("windsurf")
            .stderr
            .contains("~/.codeium/windsurf/mcp_config.json")
    );
}

#[test]
fn the_http_snippet_points_at_the_loopback_endpoint_with_a_bearer_token() {
    let out = config("http");
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let him = &v["mcpServers"]["him"];
    assert_eq!(him["type"], "http");
    assert_eq!(him["url"], "http://127.0.0.1:7676/mcp");
    assert_eq!(him["headers"]["Authorization"], "Bearer <TOKEN>");
    assert!(
        out.stderr.contains("serve --http --print-token"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("claude mcp add --transport http him"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_unknown_client_is_refused_by_the_command_line() {
    let o = Command::new(env!("CARGO_BIN_EXE_him"))
        .args(["config", "notepad"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(o.stdout.is_empty());
}

#[test]
fn superassistant_gets_the_url_with_the_path_token_and_a_wait_below_its_timeout() {
    let state = tempfile::tempdir().unwrap();
    let run = || {
        let o = Command::new(env!("CARGO_BIN_EXE_him"))
            .args(["config", "superassistant"])
            .env("HIM_STATE_DIR", state.path().join("him"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (
            String::from_utf8(o.stdout).unwrap(),
            String::from_utf8(o.stderr).unwrap(),
        )
    };
    let (stdout, stderr) = run();
    // stdout is the URL alone, ready to paste, with the real path token in it.
    let token = std::fs::read_to_string(state.path().join("him/http-path-token")).unwrap();
    assert_eq!(
        stdout,
        format!("http://127.0.0.1:7676/mcp/{}\n", token.trim())
    );
    // The explanation is on stderr, every line a comment.
    for line in stderr.lines().filter(|l| !l.is_empty()) {
        assert!(line.starts_with('#'), "{line}");
    }
    assert!(
        stderr.contains("--allow-origin chrome-extension://"),
        "{stderr}"
    );
    let wait: u64 = stderr
        .split("HIM_TIMEOUT_MS=")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .expect("HIM_TIMEOUT_MS in the explanation");
    assert!(
        wait < 30_000,
        "him must stop waiting before SuperAssistant does: {wait}"
    );
    // The same URL every time, until it is replaced on purpose.
    assert_eq!(run().0, stdout);
}

#[test]
fn hooks_are_a_settings_document_of_their_own_for_claude_code_and_codex() {
    for agent in ["claude-code", "codex"] {
        let out = config_with(&[agent, "--hooks"]);
        let v: Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{agent}: stdout is not JSON ({e}):\n{}", out.stdout));
        // Only the hook: nothing of the MCP snippet is mixed in.
        assert_eq!(v.as_object().unwrap().len(), 1, "{agent}: {v}");
        let entries = v["hooks"]["PermissionRequest"].as_array().expect("a list");
        assert_eq!(entries.len(), 1);
        let hook = &entries[0]["hooks"][0];
        assert_eq!(hook["type"], "command");
        assert_eq!(hook["command"], format!("{} hook {agent}", exe()));
        // The hook's own wait (60 s) ends before the agent kills it.
        assert!(hook["timeout"].as_u64().unwrap() > 60, "{hook}");
        assert!(out.stderr.contains("PermissionRequest"), "{}", out.stderr);
    }
    let other = Command::new(env!("CARGO_BIN_EXE_him"))
        .args(["config", "cursor", "--hooks"])
        .output()
        .unwrap();
    assert!(!other.status.success());
    assert!(other.stdout.is_empty());
}

/// Every target `him config` knows (clap lists them when given one it does not).
fn targets() -> Vec<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_him"))
        .args(["config", "no-such-client"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let list = stderr
        .split_once("[possible values: ")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list.to_owned())
        .unwrap_or_else(|| panic!("no list of targets in: {stderr}"));
    list.split(", ").map(|t| t.trim().to_owned()).collect()
}

#[test]
fn every_snippets_explanation_says_its_clients_time_limit_and_what_raises_it() {
    let targets = targets();
    assert!(targets.len() > 10, "{targets:?}");
    for target in targets {
        let state = tempfile::tempdir().unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_him"))
            .args(["config", &target])
            .env("HIM_STATE_DIR", state.path().join("him"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{target}");
        let stderr = String::from_utf8(o.stderr).unwrap();
        let line = stderr
            .lines()
            .find(|l| l.starts_with("# Timeout: "))
            .unwrap_or_else(|| panic!("{target}: no `# Timeout:` line in\n{stderr}"));
        // The client's limit (a number), or that it has none or no setting for it, or where
        // each client's is said (the `http` target serves them all).
        let says_limit = line.chars().any(|c| c.is_ascii_digit())
            || line.contains(" no ")
            || line.contains("`him config <client>`");
        assert!(says_limit, "{target}: {line}");
    }
}
