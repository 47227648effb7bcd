//! The snippets of the Python MCP clients: fast-agent's YAML, and code for LangChain's
//! `langchain-mcp-adapters`, the OpenAI Agents SDK and Pydantic AI.
//!
//! Checked against the installed clients (fast-agent-mcp 0.10.48, langchain-mcp-adapters
//! 0.3.2 on mcp 1.30, openai-agents 0.24.0, pydantic-ai-slim 2.68.0): their names for the
//! server's command, arguments and environment, and for their limit on one call. The limits
//! differ: the Agents SDK cuts every request at 5 s (`client_session_timeout_seconds`),
//! Pydantic AI at 300 s (`read_timeout`, the same as him's default wait, so the two would
//! race); fast-agent (`read_timeout_seconds`) and LangChain (the `ClientSession`'s
//! `read_timeout_seconds`) set none. Each snippet sets the client's limit to
//! `CLIENT_TIMEOUT_MS`, so him's own `timeout` result, with its `next_step`, ends the wait.

use super::{CLIENT_TIMEOUT_MS, Format, Snippet, him_timeout_ms};
use crate::cli::Client;

/// Where to put a Python snippet.
const PYTHON_PLACE: &str = "your Python code: save it as him_mcp.py beside your agent and \
                            `from him_mcp import …`, or paste it in";

const SECS: u64 = CLIENT_TIMEOUT_MS / 1000;

const LANGCHAIN: &str = r#"from datetime import timedelta

from langchain_mcp_adapters.client import MultiServerMCPClient

client = MultiServerMCPClient(
    {
        "him": {
            "transport": "stdio",
            "command": {command},
            "args": ["serve"],
            "env": {"HIM_TIMEOUT_MS": {wait}},
            # No limit on a call by default; this one is above him's wait.
            "session_kwargs": {"read_timeout_seconds": timedelta(seconds={secs})},
        }
    }
)
"#;

const OPENAI_AGENTS: &str = r#"from agents.mcp import MCPServerStdio

him = MCPServerStdio(
    name="him",
    params={
        "command": {command},
        "args": ["serve"],
        "env": {"HIM_TIMEOUT_MS": {wait}},
    },
    # The SDK cuts every MCP call at 5 s by default; a person needs longer.
    client_session_timeout_seconds={secs},
)
"#;

const PYDANTIC_AI: &str = r#"from fastmcp.client.transports import StdioTransport
from pydantic_ai.mcp import MCPToolset

him = MCPToolset(
    StdioTransport(
        command={command},
        args=["serve"],
        env={"HIM_TIMEOUT_MS": {wait}},
    ),
    # Each MCP request may take 300 s by default, as long as him waits.
    read_timeout={secs},
)
"#;

const FAST_AGENT: &str = r#"mcp:
  servers:
    him:
      command: {command}
      args: ["serve"]
      env:
        HIM_TIMEOUT_MS: {wait}
      # fast-agent sets no limit on a call by default; this one is above him's wait.
      read_timeout_seconds: {secs}
"#;

/// `template` with its three blanks filled: the quoted binary path last, so that nothing in
/// the path is taken for a blank.
fn fill(template: &str, client: Client, quote: fn(&str) -> String, exe: &str) -> String {
    template
        .replace("{secs}", &SECS.to_string())
        .replace("{wait}", &quote(&him_timeout_ms(client).to_string()))
        .replace("{command}", &quote(exe))
}

pub(super) fn langchain(exe: &str, wait_note: String) -> Snippet {
    Snippet {
        title: "LangChain (langchain-mcp-adapters)",
        place: PYTHON_PLACE.into(),
        format: Format::Python,
        body: fill(LANGCHAIN, Client::Langchain, python_string, exe),
        notes: vec![
            "`tools = await client.get_tools()` gives him's tools as LangChain tools (e.g. for \
             `create_agent(model, tools)`); each call starts `him serve` for its own session."
                .into(),
            "\"transport\": \"stdio\" is required: without it the adapters refuse the entry."
                .into(),
            format!(
                "Timeout: the adapters set no limit on a call (the MCP ClientSession's \
                 read_timeout_seconds is None); read_timeout_seconds={SECS} bounds a stuck call, \
                 above him's wait. At that limit the tool raises an ExceptionGroup \
                 (anyio.BrokenResourceError, as the call's own session closes); an answer given \
                 after that is kept for get_answer."
            ),
            wait_note,
        ],
    }
}

pub(super) fn openai_agents(exe: &str, wait_note: String) -> Snippet {
    Snippet {
        title: "OpenAI Agents SDK",
        place: PYTHON_PLACE.into(),
        format: Format::Python,
        body: fill(OPENAI_AGENTS, Client::OpenaiAgents, python_string, exe),
        notes: vec![
            "Use it as `async with him:` and `Agent(..., mcp_servers=[him])`.".into(),
            format!(
                "Timeout: MCPServerStdio gives each MCP request client_session_timeout_seconds \
                 (default 5 s), progress or not. At the limit the call raises MCPError \"Request \
                 'tools/call' timed out\" (in an agent run the model sees a tool error and may \
                 ask again) and the SDK cancels the call; the question stays in the side panel, and \
                 an answer given after that is kept for the agent to collect with get_answer (or \
                 by asking again). client_session_timeout_seconds={SECS} is above him's wait."
            ),
            wait_note,
        ],
    }
}

pub(super) fn pydantic_ai(exe: &str, wait_note: String) -> Snippet {
    Snippet {
        title: "Pydantic AI",
        place: PYTHON_PLACE.into(),
        format: Format::Python,
        body: fill(PYDANTIC_AI, Client::PydanticAi, python_string, exe),
        notes: vec![
            "Use it as `Agent(model, toolsets=[him])` (pydantic-ai-slim[mcp] 2.x; \
             MCPServerStdio of 1.x is gone)."
                .into(),
            format!(
                "Timeout: read_timeout (default 300 s, the same as him's wait, so the two would \
                 race) limits each MCP request. At the limit the call raises ModelRetry \
                 (\"Request 'tools/call' timed out\"), so the model is asked to retry; an answer \
                 given after that is kept for get_answer. read_timeout={SECS} is above him's wait."
            ),
            wait_note,
        ],
    }
}

pub(super) fn fast_agent(exe: &str, wait_note: String) -> Snippet {
    Snippet {
        title: "fast-agent",
        place: "fastagent.config.yaml (in the folder fast-agent runs in, or given with \
                --config-path)"
            .into(),
        format: Format::Yaml,
        body: fill(FAST_AGENT, Client::FastAgent, yaml_string, exe),
        notes: vec![
            "Merge the \"him\" entry under mcp: servers: (keep the servers already there); \
             `fast-agent go --servers him`, or servers=[\"him\"] on an agent, uses it."
                .into(),
            format!(
                "Timeout: fast-agent 0.10 sets no limit on a call (read_timeout_seconds unset); \
                 read_timeout_seconds: {SECS} bounds a stuck call, above him's wait. At that \
                 limit the call fails (\"Failed to call_tool … Request 'tools/call' timed out\", \
                 which the model sees) and fast-agent cancels it; an answer given after that is \
                 kept for get_answer."
            ),
            wait_note,
            "fast-agent supports elicitation: with no browser connected, him asks in its \
             terminal."
                .into(),
        ],
    }
}

/// A Python string literal of `s`. JSON's escapes (`\"`, `\\`, `\n`, `\uXXXX`, …) mean the
/// same in Python, and serde_json writes no `\/`.
fn python_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// A YAML double-quoted scalar of `s`, read alike by YAML 1.1 (PyYAML, which fast-agent
/// uses) and 1.2: `"` and `\` escaped, and every character outside YAML's printable set (and
/// the byte-order mark) written as `\uXXXX`, since PyYAML refuses such characters raw.
fn yaml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fefe}' => out.push(c),
            '\u{ff00}'..='\u{fffd}' | '\u{10000}'.. => out.push(c),
            _ => out.push_str(&format!("\\u{:04x}", c as u32)),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::install::browsers::Os;
    use std::path::Path;
    use yaml_rust2::{Yaml, YamlLoader};

    const ODD: &str = "/opt/him \"x\"\\y\t\u{7f}\u{85}é\u{feff}😀/him";

    fn parsed_fast_agent(exe: &str) -> Yaml {
        let s = super::super::snippet(Client::FastAgent, Path::new(exe), Os::Linux);
        assert_eq!(s.format, Format::Yaml);
        let mut docs = YamlLoader::load_from_str(&s.body).unwrap();
        assert_eq!(docs.len(), 1, "{}", s.body);
        docs.remove(0)
    }

    #[test]
    fn the_fast_agent_yaml_parses_back_to_the_binary_and_both_limits() {
        for exe in ["/home/u/.cargo/bin/him", ODD] {
            let doc = parsed_fast_agent(exe);
            let him = &doc["mcp"]["servers"]["him"];
            assert_eq!(him["command"].as_str(), Some(exe));
            assert_eq!(him["args"][0].as_str(), Some("serve"));
            let wait: u64 = him["env"]["HIM_TIMEOUT_MS"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            let limit = him["read_timeout_seconds"].as_i64().unwrap() as u64;
            assert!(limit * 1000 > wait, "fast-agent would cut the call first");
        }
    }

    #[test]
    fn a_path_that_names_a_blank_stays_as_it_is() {
        let exe = "/opt/{secs}{wait}/him";
        let s = super::super::snippet(Client::OpenaiAgents, Path::new(exe), Os::Linux);
        assert!(
            s.body.contains(r#""command": "/opt/{secs}{wait}/him","#),
            "{}",
            s.body
        );
        let doc = parsed_fast_agent(exe);
        assert_eq!(doc["mcp"]["servers"]["him"]["command"].as_str(), Some(exe));
    }

    #[test]
    fn yaml_strings_escape_what_pyyaml_refuses_raw() {
        assert_eq!(yaml_string("/usr/bin/him"), "\"/usr/bin/him\"");
        assert_eq!(yaml_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(
            yaml_string("\t\u{7f}\u{85}\u{feff}"),
            "\"\\u0009\\u007f\\u0085\\ufeff\""
        );
        assert_eq!(yaml_string("é😀"), "\"é😀\"");
    }

    #[test]
    fn python_strings_escape_quotes_backslashes_and_controls() {
        assert_eq!(python_string("/a\"b\\c\n"), r#""/a\"b\\c\n""#);
        assert_eq!(python_string("\u{7}"), r#""\u0007""#);
    }

    #[test]
    fn each_python_snippet_names_the_binary_and_a_limit_above_hims_wait() {
        let secs = CLIENT_TIMEOUT_MS / 1000;
        for (client, limit) in [
            (
                Client::Langchain,
                format!("\"read_timeout_seconds\": timedelta(seconds={secs})"),
            ),
            (
                Client::OpenaiAgents,
                format!("client_session_timeout_seconds={secs},"),
            ),
            (Client::PydanticAi, format!("read_timeout={secs},")),
        ] {
            let s = super::super::snippet(client, Path::new(ODD), Os::Linux);
            assert_eq!(s.format, Format::Python, "{client:?}");
            assert!(s.body.contains(&python_string(ODD)), "{client:?}");
            assert!(s.body.contains(&limit), "{client:?}: {}", s.body);
            assert!(
                s.body.contains("\"HIM_TIMEOUT_MS\": \"300000\""),
                "{client:?}"
            );
            assert!(CLIENT_TIMEOUT_MS > him_timeout_ms(client));
            assert!(
                s.notes.iter().any(|n| n.starts_with("Timeout: ")),
                "{client:?}"
            );
        }
    }
}
