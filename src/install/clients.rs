//! `him config <client>`: the snippet that registers `him serve` with an MCP client.
//!
//! Pure: the binary path and OS come in, text comes out. The body is a complete,
//! parseable file (JSON, TOML for Codex, YAML for fast-agent, a short Python file for the
//! Python SDKs: `python.rs`), so `him config codex > snippet.toml` works;
//! where it lives and why each setting is there go in `notes`, printed to stderr.
//!
//! Every snippet sets two clocks so that him's ends first and the agent gets a clean
//! `timeout` result with a `next_step`, instead of the client cutting the call off:
//! him's own wait (`HIM_TIMEOUT_MS` in the server's environment) and, where the client has
//! one, the client's tool-call limit set well above it.
//!
//! Formats checked against each client's documentation (docs/clients.md says which
//! versions): Claude Code `.mcp.json` and `claude mcp add`, `MCP_TOOL_TIMEOUT`; Claude
//! Desktop `claude_desktop_config.json`; Cursor `mcp.json`; VS Code `mcp.json` with
//! `servers` and `type`; Codex `[mcp_servers.<name>]` with `tool_timeout_sec` (default 60 s);
//! Gemini CLI `settings.json` with `timeout` in ms (default 600000); Windsurf
//! `mcp_config.json` (`serverUrl` for remote servers). OpenCode 1.18 and Qwen Code 0.24 were
//! read in their shipped code and run (tests/e2e/opencode.test.mjs, qwen.test.mjs): OpenCode's
//! `mcp` entry (`McpLocalConfig`) and Qwen's `mcpServers` entry with `trust` and `timeout`.
//!
//! Headless runs have allow-lists of their own, which the notes name: `claude -p` denies an
//! MCP tool not in `--allowedTools`, and `gemini -p` offers the model no tool of a server
//! without `"trust": true`, which the Gemini and Qwen snippets therefore carry.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::browsers::Os;
use crate::cli::Client;

mod python;

/// Where `him serve --http` listens by default (see `ServeArgs::http`).
pub const HTTP_URL: &str = "http://127.0.0.1:7676/mcp";
/// Stands for the bearer token in the HTTP snippet.
pub const TOKEN_PLACEHOLDER: &str = "<TOKEN>";
/// Stands for the path token in the SuperAssistant URL; `him config` puts the real one in.
pub const PATH_TOKEN_PLACEHOLDER: &str = "<PATH_TOKEN>";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Toml,
    /// One URL to paste into a form.
    Url,
    /// fast-agent's `fastagent.config.yaml`.
    Yaml,
    /// A short Python file that builds the client's server object.
    Python,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    pub title: &'static str,
    /// Which file to put the body in.
    pub place: String,
    pub format: Format,
    /// The snippet alone, ending with a newline.
    pub body: String,
    /// What to do with it, and why each setting is there.
    pub notes: Vec<String>,
}

/// him's own wait, in ms, per client: below every known client limit.
fn him_timeout_ms(client: Client) -> u64 {
    match client {
        // Claude Desktop drops a tool call near 60 s and has no setting for it (FACTS.md).
        Client::ClaudeDesktop => 50_000,
        // Copilot in VS Code has cancelled tool calls at 5 minutes (microsoft/vscode#261734).
        Client::Vscode => 240_000,
        // MCP SuperAssistant gives up on a tool call after 30-60 s on its side (FACTS.md).
        Client::Superassistant => 25_000,
        _ => 300_000,
    }
}

/// When a Claude Code call returns `pending` (`HIM_RETURN_AFTER_MS`): before its terminal UI
/// moves the call to the background at 120 s.
fn claude_code_return_after_ms() -> u64 {
    crate::config::AUTO_RETURN_AFTER.as_millis() as u64
}

/// Client-side limits set to twice him's wait: room for the person, and him still ends first.
const CLIENT_TIMEOUT_MS: u64 = 600_000;

#[derive(Serialize)]
struct StdioServer<'a> {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    command: &'a str,
    args: &'static [&'static str],
    env: BTreeMap<&'static str, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<u64>,
    /// Gemini CLI and Qwen Code: call the server's tools without their confirmation prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    trust: Option<bool>,
}

#[derive(Serialize)]
struct HttpServer {
    #[serde(rename = "type")]
    kind: &'static str,
    url: &'static str,
    headers: BTreeMap<&'static str, String>,
}

/// `{"<key>": {"him": server}}`, pretty-printed with a final newline.
fn wrap(key: &str, server: impl Serialize) -> String {
    let mut inner = BTreeMap::new();
    inner.insert("him", server);
    let mut outer = BTreeMap::new();
    outer.insert(key, inner);
    let mut text = serde_json::to_string_pretty(&outer).unwrap_or_default();
    text.push('\n');
    text
}

fn stdio<'a>(
    client: Client,
    kind: Option<&'static str>,
    exe: &'a str,
    timeout: Option<u64>,
) -> StdioServer<'a> {
    let mut env = BTreeMap::new();
    env.insert("HIM_TIMEOUT_MS", him_timeout_ms(client).to_string());
    if client == Client::ClaudeCode {
        // What `auto` gives Claude Code anyway, said where the person can see and change it.
        env.insert(
            "HIM_RETURN_AFTER_MS",
            claude_code_return_after_ms().to_string(),
        );
    }
    StdioServer {
        kind,
        command: exe,
        // Claude Code's server also offers `approve`, its permission-prompt tool (stdio only).
        args: if client == Client::ClaudeCode {
            &["serve", "--permission-tool"]
        } else {
            &["serve"]
        },
        env,
        timeout,
        trust: None,
    }
}

/// `him config <agent> --hooks`: the PermissionRequest hook that runs `him hook <agent>`,
/// a settings document of its own (never mixed into the MCP snippet). Both agents read the
/// same shape (Claude Code 2.1.197 `~/.claude/settings.json`, Codex 0.171.0
/// `~/.codex/hooks.json`): `{"hooks": {"PermissionRequest": [{"hooks": [{"type": "command",
/// "command": …, "timeout": seconds}]}]}}`; no `matcher`, so every tool's prompt comes.
/// `None` for clients without permission hooks.
pub fn hook_settings(client: Client, exe: &Path) -> Option<Snippet> {
    let (title, agent, place, trust) = match client {
        Client::ClaudeCode => (
            "Claude Code PermissionRequest hook",
            "claude-code",
            "~/.claude/settings.json (all projects), or .claude/settings.json in a project",
            "Claude Code runs it at its next start.",
        ),
        Client::Codex => (
            "Codex PermissionRequest hook",
            "codex",
            "~/.codex/hooks.json (or .codex/hooks.json in a trusted project)",
            "Codex runs only hooks you trusted: review it in Codex's /hooks first.",
        ),
        _ => return None,
    };
    let command = format!("{} hook {agent}", shell_quote(&exe.to_string_lossy()));
    let wait_s = crate::permission::hook::DEFAULT_WAIT_MS / 1000;
    let timeout_s = crate::permission::hook::HOOK_TIMEOUT_S;
    let doc = serde_json::json!({"hooks": {"PermissionRequest": [
        {"hooks": [{"type": "command", "command": command, "timeout": timeout_s}]}
    ]}});
    let mut body = serde_json::to_string_pretty(&doc).unwrap_or_default();
    body.push('\n');
    Some(Snippet {
        title,
        place: place.into(),
        format: Format::Json,
        body,
        notes: vec![
            "Merge \"hooks\".\"PermissionRequest\" into the file (keep any hooks already there).".into(),
            trust.into(),
            format!(
                "It fires only where the terminal would ask for a permission (not in `claude -p` or \
                 `codex exec`). The card waits {wait_s} s in the side panel, below the hook's \
                 timeout of {timeout_s} s; with no browser connected or no answer by then, the \
                 terminal asks as usual (him writes no decision: it never allows or denies on its own)."
            ),
            "him only prints this; `him uninstall` leaves your agent settings alone, so remove the \
             entry by hand to stop."
                .into(),
        ],
    })
}

/// Quotes a word for a POSIX shell, leaving plain paths as they are.
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%=,".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A TOML basic string. JSON's string escapes are a subset of TOML's.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

pub fn snippet(client: Client, exe: &Path, os: Os) -> Snippet {
    let exe_str = exe.to_string_lossy();
    let exe_json = exe_str.as_ref();
    let exe_sh = shell_quote(exe_json);
    let him_wait = him_timeout_ms(client);
    let wait_note = format!(
        "HIM_TIMEOUT_MS={him_wait} is how long him waits for the person ({} s) before it returns a \
         `timeout` result telling the agent what to do next.",
        him_wait / 1000
    );
    let return_after = claude_code_return_after_ms();
    match client {
        Client::ClaudeCode => Snippet {
            title: "Claude Code",
            place: "`.mcp.json` at the root of a project (shared with everyone who works on it)".into(),
            format: Format::Json,
            body: wrap("mcpServers", stdio(client, Some("stdio"), exe_json, None)),
            notes: vec![
                "Or register him for all your projects with:".into(),
                format!(
                    "  claude mcp add --scope user --transport stdio him --env HIM_TIMEOUT_MS={him_wait} --env HIM_RETURN_AFTER_MS={return_after} -- {exe_sh} serve --permission-tool"
                ),
                "--permission-tool offers `approve`: run `claude -p --permission-prompt-tool mcp__him__approve …` \
                 and its permission prompts (and AskUserQuestion) are answered in the side panel."
                    .into(),
                "For interactive sessions, `him config claude-code --hooks` prints the PermissionRequest hook \
                 for ~/.claude/settings.json."
                    .into(),
                "Headless: `claude -p` denies every MCP tool it was not allowed; add `--allowedTools \
                 mcp__him` (all of him's tools, get_answer included, which collects an answer after \
                 `pending`), or \"permissions\": {\"allow\": [\"mcp__him\"]} in \
                 ~/.claude/settings.json (the terminal UI then asks nothing either)."
                    .into(),
                format!(
                    "Timeout: Claude Code ends a tool call after MCP_TOOL_TIMEOUT ms (default 100000000, \
                     about 28 h; a \"timeout\" in ms on the entry overrides it; progress does not \
                     extend it). If you set it, keep it above him's wait, e.g. \"env\": \
                     {{\"MCP_TOOL_TIMEOUT\": \"{CLIENT_TIMEOUT_MS}\"}} in ~/.claude/settings.json. Its \
                     terminal UI moves a call still running at 120 s to the background; `claude -p` waits."
                ),
                wait_note,
                format!(
                    "HIM_RETURN_AFTER_MS={return_after}: a call in the terminal UI still running at \
                     120 s goes to the background, and an answer given then reaches the model as a \
                     notification, not as the person's answer. So at {} s him returns `pending` \
                     with the question still open in the side panel, and the agent calls get_answer, \
                     which waits again up to {} s and returns the answer as its own result. `auto` \
                     (the default) does this for Claude Code alone; 0 turns it off.",
                    return_after / 1000,
                    return_after / 1000
                ),
                "Claude Code supports elicitation: with no browser connected, him asks in the terminal.".into(),
            ],
        },
        Client::ClaudeDesktop => {
            let mac = "~/Library/Application Support/Claude/claude_desktop_config.json";
            let win = r"%APPDATA%\Claude\claude_desktop_config.json";
            let linux = "~/.config/Claude/claude_desktop_config.json (unofficial Linux builds)";
            let place = match os {
                Os::MacOs => format!("{mac} (Windows: {win})"),
                Os::Linux => format!("{linux}; macOS: {mac}; Windows: {win}"),
            };
            Snippet {
                title: "Claude Desktop",
                place,
                format: Format::Json,
                body: wrap("mcpServers", stdio(client, None, exe_json, None)),
                notes: vec![
                    "Merge the \"him\" entry into the file's \"mcpServers\" (Settings → Developer → \
                     Edit Config opens it), then quit and restart Claude Desktop."
                        .into(),
                    format!(
                        "Timeout: Claude Desktop has no setting for it and drops a tool call near 60 s, \
                         so him stops waiting first. {wait_note}"
                    ),
                    "Claude Desktop has no elicitation: with no browser connected, him hands the \
                     question back to the chat (HIM_FALLBACK)."
                        .into(),
                ],
            }
        }
        Client::Cursor => Snippet {
            title: "Cursor",
            place: "~/.cursor/mcp.json (all projects) or .cursor/mcp.json in a project".into(),
            format: Format::Json,
            body: wrap("mcpServers", stdio(client, None, exe_json, None)),
            notes: vec![
                "Merge the \"him\" entry into the file's \"mcpServers\", then check it is on under \
                 Cursor Settings → MCP."
                    .into(),
                format!(
                    "Timeout: Cursor has no documented per-server tool timeout. {wait_note} Lower it \
                     if Cursor gives up on the call first."
                ),
            ],
        },
        Client::Vscode => Snippet {
            title: "VS Code",
            place: ".vscode/mcp.json in the workspace, or your user mcp.json (Command Palette: \
                    \"MCP: Open User Configuration\")"
                .into(),
            format: Format::Json,
            body: wrap("servers", stdio(client, Some("stdio"), exe_json, None)),
            notes: vec![
                "VS Code's mcp.json uses \"servers\" (not \"mcpServers\") and a \"type\" for each server."
                    .into(),
                format!(
                    "Timeout: mcp.json has no timeout setting, and Copilot has cancelled tool calls \
                     after 5 minutes, so him stops waiting first. {wait_note}"
                ),
                "VS Code supports elicitation (1.102+): with no browser connected, him asks in the \
                 chat view."
                    .into(),
            ],
        },
        Client::Codex => {
            let secs = CLIENT_TIMEOUT_MS / 1000;
            let body = format!(
                "[mcp_servers.him]\n\
                 command = {}\n\
                 args = [\"serve\"]\n\
                 # Codex ends a tool call after 60 s unless told otherwise; a person needs longer.\n\
                 tool_timeout_sec = {secs}\n\
                 \n\
                 [mcp_servers.him.env]\n\
                 HIM_TIMEOUT_MS = \"{him_wait}\"\n",
                toml_string(exe_json)
            );
            Snippet {
                title: "Codex",
                place: "~/.codex/config.toml (or .codex/config.toml in a trusted project)".into(),
                format: Format::Toml,
                body,
                notes: vec![
                    "Append this to the file; the Codex CLI, IDE extension and app all read it."
                        .into(),
                    format!(
                        "Timeout: tool_timeout_sec (default 60) must be above him's wait. {wait_note}"
                    ),
                    "Codex auto-declines elicitation in some approval modes; him then hands the \
                     question back to the chat."
                        .into(),
                    "To approve Codex's own permission prompts in the side panel, `him config codex \
                     --hooks` prints its PermissionRequest hook."
                        .into(),
                ],
            }
        }
        Client::Gemini => {
            let mut server = stdio(client, None, exe_json, Some(CLIENT_TIMEOUT_MS));
            server.trust = Some(true);
            Snippet {
                title: "Gemini CLI",
                place: "~/.gemini/settings.json (or .gemini/settings.json in a project)".into(),
                format: Format::Json,
                body: wrap("mcpServers", server),
                notes: vec![
                    "Merge the \"him\" entry into the file's \"mcpServers\"; /mcp in Gemini CLI lists it."
                        .into(),
                    trust_note(
                        "Gemini CLI",
                        "`gemini -p` does not even offer them to the model",
                    ),
                    format!(
                        "Timeout: \"timeout\" is Gemini's per-request limit in ms (default 600000); keep \
                         it above him's wait. {wait_note}"
                    ),
                ],
            }
        }
        Client::Windsurf => Snippet {
            title: "Windsurf",
            place: r"~/.codeium/windsurf/mcp_config.json (Windows: %USERPROFILE%\.codeium\windsurf\mcp_config.json)"
                .into(),
            format: Format::Json,
            body: wrap("mcpServers", stdio(client, None, exe_json, None)),
            notes: vec![
                "Merge the \"him\" entry into the file's \"mcpServers\", then press refresh in \
                 Cascade's MCP panel."
                    .into(),
                format!(
                    "Timeout: Windsurf has no documented tool timeout setting. {wait_note} Lower it if \
                     Windsurf gives up on the call first."
                ),
            ],
        },
        Client::Opencode => opencode(exe_json, wait_note),
        Client::Qwen => qwen(client, exe_json, wait_note),
        Client::Http => {
            let mut headers = BTreeMap::new();
            headers.insert("Authorization", format!("Bearer {TOKEN_PLACEHOLDER}"));
            Snippet {
                title: "any client, over Streamable HTTP",
                place: "the client's MCP configuration (this is the Claude Code `.mcp.json` / Cursor \
                        `mcp.json` shape)"
                    .into(),
                format: Format::Json,
                body: wrap("mcpServers", HttpServer { kind: "http", url: HTTP_URL, headers }),
                notes: vec![
                    format!(
                        "Run the server with `{exe_sh} serve --http`; replace {TOKEN_PLACEHOLDER} with \
                         the output of `{exe_sh} serve --http --print-token`."
                    ),
                    format!(
                        "Claude Code: claude mcp add --transport http him {HTTP_URL} --header \
                         \"Authorization: Bearer {TOKEN_PLACEHOLDER}\""
                    ),
                    "VS Code: put the entry under \"servers\" with \"type\": \"http\".".into(),
                    "Windsurf: \"serverUrl\" instead of \"url\". Gemini CLI: \"httpUrl\" instead of \"url\"."
                        .into(),
                    format!(
                        "Codex: [mcp_servers.him] url = \"{HTTP_URL}\" and bearer_token_env_var = \
                         \"HIM_HTTP_TOKEN\", with the token in HIM_HTTP_TOKEN (`him serve --http` \
                         uses that variable too when it is set)."
                    ),
                    "Timeout: each client's own limit on a tool call holds over HTTP too: \
                     `him config <client>` says it and what raises it (docs/clients.md lists them \
                     all)."
                        .into(),
                ],
            }
        }
        Client::FastAgent => python::fast_agent(exe_json, wait_note),
        Client::Langchain => python::langchain(exe_json, wait_note),
        Client::OpenaiAgents => python::openai_agents(exe_json, wait_note),
        Client::PydanticAi => python::pydantic_ai(exe_json, wait_note),
        Client::Superassistant => Snippet {
            title: "MCP SuperAssistant (web chats in Chrome), over Streamable HTTP",
            place: "SuperAssistant's sidebar: server settings, transport Streamable HTTP, this URL"
                .into(),
            format: Format::Url,
            body: format!("{HTTP_URL}/{PATH_TOKEN_PLACEHOLDER}\n"),
            notes: vec![
                format!(
                    "Run the server with: HIM_TIMEOUT_MS={him_wait} {exe_sh} serve --http \
                     --allow-origin chrome-extension://kngiafgkdnlkgmefdafaibkibegkcaef (the \
                     Chrome Web Store build's id; another build's is on chrome://extensions with \
                     developer mode on)."
                ),
                format!(
                    "Timeout: SuperAssistant gives up on a call after 30-60 s, and no setting \
                     raises it. HIM_TIMEOUT_MS={him_wait} makes him stop waiting first, so the chat \
                     gets a `timeout` result that says what to do next, instead of an error."
                ),
                "SuperAssistant cannot send an Authorization header, so the URL carries a token of \
                 its own (the path token), accepted only from the origins given with \
                 --allow-origin. Treat the URL as a password."
                    .into(),
                format!(
                    "To replace it (the old URL stops working when the server restarts), run \
                     `{exe_sh} serve --http --new-path-token`; other clients' bearer token stays."
                ),
                "Firefox: SuperAssistant's Firefox add-on has another origin; the proxy way in \
                 docs/http.md of the him repository (\"Pairing a web chat\") still works there."
                    .into(),
            ],
        },
    }
}

/// Why the Gemini and Qwen snippets carry `"trust": true`, and what happens without it.
fn trust_note(client: &str, without: &str) -> String {
    format!(
        "\"trust\": true lets {client} call him's tools without its confirmation prompt: they only \
         ask you a question, which you can still decline in the side panel. Without it, {without}. \
         Remove it to confirm each question in the terminal before it is asked."
    )
}

/// OpenCode's entry for a local server (`McpLocalConfig` in OpenCode 1.18): the command and
/// its arguments in one array, `environment` rather than `env`.
#[derive(Serialize)]
struct OpencodeServer<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    command: [&'a str; 2],
    environment: BTreeMap<&'static str, String>,
    enabled: bool,
    timeout: u64,
}

#[derive(Serialize)]
struct OpencodeConfig<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    mcp: BTreeMap<&'static str, OpencodeServer<'a>>,
}

/// `him config opencode`: OpenCode reads servers from its own `mcp` block and ignores a
/// pasted `mcpServers` without a word, so the snippet is a whole opencode.json of that shape.
fn opencode(exe: &str, wait_note: String) -> Snippet {
    let mut environment = BTreeMap::new();
    environment.insert(
        "HIM_TIMEOUT_MS",
        him_timeout_ms(Client::Opencode).to_string(),
    );
    let server = OpencodeServer {
        kind: "local",
        command: [exe, "serve"],
        environment,
        enabled: true,
        timeout: CLIENT_TIMEOUT_MS,
    };
    let mut mcp = BTreeMap::new();
    mcp.insert("him", server);
    let config = OpencodeConfig {
        schema: "https://opencode.ai/config.json",
        mcp,
    };
    let mut body = serde_json::to_string_pretty(&config).unwrap_or_default();
    body.push('\n');
    Snippet {
        title: "OpenCode",
        place:
            "~/.config/opencode/opencode.json (all projects) or opencode.json at a project's root"
                .into(),
        format: Format::Json,
        body,
        notes: vec![
            "Merge the \"him\" entry into the file's \"mcp\" (OpenCode ignores an \"mcpServers\" \
             block without a word); `opencode mcp list` shows it."
                .into(),
            format!(
                "Timeout: \"timeout\" is OpenCode's limit in ms for each request to the server. \
                 Without it a tool call gets 60 s, counted again from each progress notification \
                 (him sends one every 10 s, HIM_HEARTBEAT_MS); {CLIENT_TIMEOUT_MS} holds above \
                 him's wait even without them. {wait_note}"
            ),
            "Headless: `opencode run` calls him's tools without asking (OpenCode allows MCP tools \
             unless its \"permission\" setting says otherwise)."
                .into(),
        ],
    }
}

/// `him config qwen`: Qwen Code's settings.json takes Gemini CLI's `mcpServers` entry.
fn qwen(client: Client, exe: &str, wait_note: String) -> Snippet {
    let mut server = stdio(client, None, exe, Some(CLIENT_TIMEOUT_MS));
    server.trust = Some(true);
    Snippet {
        title: "Qwen Code",
        place: "~/.qwen/settings.json (or .qwen/settings.json in a project)".into(),
        format: Format::Json,
        body: wrap("mcpServers", server),
        notes: vec![
            "Merge the \"him\" entry into the file's \"mcpServers\"; `qwen mcp list` lists it."
                .into(),
            trust_note(
                "Qwen Code",
                "`qwen -p` puts each call to its auto-mode check (one more model request) and \
                 declines it when that check blocks it (always, with --approval-mode default)",
            ),
            format!(
                "Timeout: \"timeout\" is Qwen's limit in ms for a whole tool call (default 600000; \
                 progress does not extend it); keep it above him's wait. Qwen also ends a call \
                 silent for QWEN_CODE_MCP_TOOL_IDLE_TIMEOUT_MS (default 300000), which him's \
                 progress every 10 s keeps from running out. {wait_note}"
            ),
        ],
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::Value;

    const ALL: [Client; 15] = [
        Client::ClaudeCode,
        Client::ClaudeDesktop,
        Client::Cursor,
        Client::Vscode,
        Client::Codex,
        Client::Gemini,
        Client::Windsurf,
        Client::Opencode,
        Client::Qwen,
        Client::Http,
        Client::Superassistant,
        Client::FastAgent,
        Client::Langchain,
        Client::OpenaiAgents,
        Client::PydanticAi,
    ];

    #[test]
    fn plain_paths_stay_plain_and_others_are_quoted() {
        assert_eq!(
            shell_quote("/home/u/.cargo/bin/him"),
            "/home/u/.cargo/bin/him"
        );
        assert_eq!(shell_quote("/Users/a b/him"), "'/Users/a b/him'");
        assert_eq!(shell_quote("/x/it's"), r"'/x/it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn every_json_snippet_names_the_binary_and_serve() {
        let exe = Path::new("/opt/him \"x\"/him");
        for client in ALL {
            let s = snippet(client, exe, Os::Linux);
            assert!(s.body.ends_with('\n'));
            if s.format == Format::Json && ![Client::Http, Client::Opencode].contains(&client) {
                let v: Value = serde_json::from_str(&s.body).unwrap();
                let key = if client == Client::Vscode {
                    "servers"
                } else {
                    "mcpServers"
                };
                let him = &v[key]["him"];
                assert_eq!(him["command"], exe.to_str().unwrap(), "{client:?}");
                let args = if client == Client::ClaudeCode {
                    serde_json::json!(["serve", "--permission-tool"])
                } else {
                    serde_json::json!(["serve"])
                };
                assert_eq!(him["args"], args, "{client:?}");
                assert!(him["env"]["HIM_TIMEOUT_MS"].is_string(), "{client:?}");
            }
        }
    }

    #[test]
    fn claude_code_returns_pending_before_its_terminal_backgrounds_the_call() {
        let s = snippet(Client::ClaudeCode, Path::new("/h"), Os::Linux);
        let v: Value = serde_json::from_str(&s.body).unwrap();
        let env = &v["mcpServers"]["him"]["env"];
        assert_eq!(env["HIM_RETURN_AFTER_MS"], "100000");
        let add = s
            .notes
            .iter()
            .find(|n| n.contains("claude mcp add"))
            .unwrap();
        assert!(add.contains("--env HIM_RETURN_AFTER_MS=100000 "), "{add}");
        for client in ALL.into_iter().filter(|c| *c != Client::ClaudeCode) {
            let s = snippet(client, Path::new("/h"), Os::Linux);
            assert!(!s.body.contains("HIM_RETURN_AFTER_MS"), "{client:?}");
        }
    }

    #[test]
    fn him_stops_waiting_before_each_client_limit() {
        assert!(him_timeout_ms(Client::ClaudeDesktop) < 60_000);
        assert!(him_timeout_ms(Client::Vscode) < 300_000);
        for client in ALL {
            assert!(him_timeout_ms(client) < CLIENT_TIMEOUT_MS);
        }
    }

    #[test]
    fn the_codex_snippet_escapes_the_path_as_toml() {
        let s = snippet(Client::Codex, Path::new(r#"/a"b\c/him"#), Os::Linux);
        assert!(s.body.contains(r#"command = "/a\"b\\c/him""#), "{}", s.body);
    }

    #[test]
    fn claude_desktop_names_the_file_for_the_current_os_first() {
        let mac = snippet(Client::ClaudeDesktop, Path::new("/h"), Os::MacOs);
        assert!(
            mac.place
                .starts_with("~/Library/Application Support/Claude/")
        );
        let linux = snippet(Client::ClaudeDesktop, Path::new("/h"), Os::Linux);
        assert!(linux.place.starts_with("~/.config/Claude/"));
    }

    #[test]
    fn the_http_snippet_carries_the_url_and_a_bearer_header() {
        let s = snippet(Client::Http, Path::new("/h"), Os::Linux);
        let v: Value = serde_json::from_str(&s.body).unwrap();
        assert_eq!(v["mcpServers"]["him"]["url"], HTTP_URL);
        assert_eq!(v["mcpServers"]["him"]["type"], "http");
        assert_eq!(
            v["mcpServers"]["him"]["headers"]["Authorization"],
            "Bearer <TOKEN>"
        );
        assert!(s.notes.iter().any(|n| n.contains("--print-token")));
    }

    #[test]
    fn the_superassistant_url_has_a_path_token_and_him_gives_up_before_it_does() {
        let s = snippet(Client::Superassistant, Path::new("/h"), Os::Linux);
        assert_eq!(s.body, format!("{HTTP_URL}/{PATH_TOKEN_PLACEHOLDER}\n"));
        assert!(him_timeout_ms(Client::Superassistant) < 30_000);
        assert!(s.notes.iter().any(|n| n.contains("HIM_TIMEOUT_MS=25000")));
        assert!(
            s.notes
                .iter()
                .any(|n| n.contains("--allow-origin chrome-extension://"))
        );
        assert!(s.notes.iter().any(|n| n.contains("--new-path-token")));
    }
}
