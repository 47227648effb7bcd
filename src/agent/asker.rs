//! Who is asking, as a card names it: the agent (the MCP client's `clientInfo`, and the
//! bridge it came through when the bridge says so) and its project.
//!
//! A question's project is, first to last (DESIGN.md §3, `project?` on `ask`):
//!
//! ```text
//!  the call's _meta "dev.him/project"  ─┐
//!  the URL's ?project= (serve --http)  ─┤ first one given, per question
//!  the client's first file:// root     ─┤ (roots/list, at most ROOTS_WAIT)
//!  him serve's working directory       ─┘ (the `hello`'s, as before)
//! ```
//!
//! Everything here is text a client wrote: it is cut to
//! [`MAX_LABEL_CHARS`](crate::wire::labels::MAX_LABEL_CHARS), and every surface draws it under the
//! marking rules (`form/display/marks.rs`, `extension/lib/display.js`).

use std::path::Path;
use std::time::Duration;

use crate::wire::labels::{capped_agent, project_name};
use crate::wire::protocol::AgentInfo;

/// The `_meta` key of a `tools/call` that names its project. Prefixed, as MCP asks of keys it
/// does not define: un-prefixed names and prefixes with a `modelcontextprotocol` or `mcp`
/// label are the protocol's own (e.g. `progressToken`, `io.modelcontextprotocol/…`).
pub const META_PROJECT: &str = "dev.him/project";

/// The query parameter of `him serve --http`'s URL that names the session's project.
pub const URL_PROJECT: &str = "project";

/// How long a question waits for the client's `roots/list` before it goes with the working
/// directory's name.
pub const ROOTS_WAIT: Duration = Duration::from_secs(1);

/// What an agent is called when its client's name is not known (no `clientInfo`, or a bridge
/// that put its own name in its place).
pub const UNNAMED_CLIENT: &str = "MCP client";

/// The bridges that name themselves in `clientInfo`, the one list of them (the extension
/// draws `agent.via` and knows no names). Each, as measured (2026-12, driven by the TS SDK):
/// - `mcp-remote` 0.15 (stdio → remote HTTP) sends the client's name with
///   " (via mcp-remote <version>)" after it;
/// - `supergateway` 4.0 initializes with its own `{"name": "supergateway"}` in front of a
///   stdio server in its stateless Streamable HTTP mode (the default), and in its stdio →
///   remote modes for a request that comes before `initialize`; its SSE, WebSocket and
///   `--stateful` modes pass the client's `clientInfo` through unchanged, so the card names
///   the client itself.
///
/// The Python SDK's default client name, `mcp` (also what mcp-proxy sends), is no bridge's:
/// a client of that name is only a client.
pub const BRIDGES: [&str; 2] = ["mcp-remote", "supergateway"];

/// Claude Code's `clientInfo.name`.
const CLAUDE_CODE: &str = "claude-code";

/// Whether a client's `clientInfo.name` is Claude Code's: its terminal UI (2.1.332) moves a
/// call still running at 120 s, and every MCP task at once, to the background, and hands
/// what comes of it to the model as "[SYSTEM NOTIFICATION - NOT USER INPUT] … Do NOT
/// interpret this as … response to any pending question" (`HIM_TASKS`, `HIM_RETURN_AFTER_MS`).
pub fn is_claude_code(client_name: &str) -> bool {
    client_name == CLAUDE_CODE
}

/// The agent a client's `clientInfo` names, the bridge it came through set apart, each
/// part cut to [`MAX_LABEL_CHARS`](crate::wire::labels::MAX_LABEL_CHARS).
pub fn agent_of_client(name: &str, title: Option<&str>, version: Option<&str>) -> AgentInfo {
    let (name, via) = through_bridge(name);
    let agent = match via {
        // The bridge in the client's place: whose client it carries is not known.
        Some(bridge) if name.is_none() => AgentInfo {
            via: Some(bridge.to_owned()),
            ..AgentInfo::named(UNNAMED_CLIENT)
        },
        via => AgentInfo {
            name: name.unwrap_or_default().to_owned(),
            title: title.map(str::to_owned),
            version: version.filter(|v| !v.is_empty()).map(str::to_owned),
            via: via.map(str::to_owned),
        },
    };
    capped_agent(agent)
}

/// `name` as a bridge wrote it: the client's own name (`None` when the bridge put its own
/// in its place) and the bridge, if one of [`BRIDGES`] named itself.
fn through_bridge(name: &str) -> (Option<&str>, Option<&'static str>) {
    for bridge in BRIDGES {
        if name == bridge {
            return (None, Some(bridge));
        }
        // "<client> (via <bridge> <version>)", or without the version.
        if let Some(rest) = name.strip_suffix(')')
            && let Some((client, inside)) = rest.rsplit_once(" (via ")
            && (inside == bridge
                || inside
                    .strip_prefix(bridge)
                    .is_some_and(|v| v.starts_with(' ')))
        {
            return (Some(client).filter(|c| !c.trim().is_empty()), Some(bridge));
        }
    }
    (Some(name), None)
}

/// The project a directory stands for: its last component (`None` for `/`).
pub fn project_of_dir(dir: &Path) -> Option<String> {
    dir.file_name()
        .and_then(|name| project_name(&name.to_string_lossy()))
}

/// The project a `tools/call` names in its `_meta`, if any.
pub fn project_of_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    meta.get(META_PROJECT)
        .and_then(serde_json::Value::as_str)
        .and_then(project_name)
}

/// The project an HTTP request's query names (`?project=name`, percent-decoded), if any.
pub fn project_of_query(query: Option<&str>) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(key, _)| key == URL_PROJECT)
        .and_then(|(_, value)| project_name(&value))
}

/// The project of a client's roots: the last segment, percent-decoded, of the first
/// `file://` root's path. Roots of other schemes say nothing about a folder here.
pub fn project_of_roots<'a>(uris: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let root = uris
        .into_iter()
        .filter_map(|uri| url::Url::parse(uri).ok())
        .find(|url| url.scheme() == "file")?;
    // `to_file_path` decodes the path; it refuses a root on another host.
    let path = root.to_file_path().ok()?;
    project_of_dir(&path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::labels::MAX_LABEL_CHARS;
    use serde_json::json;

    #[test]
    fn mcp_remote_names_the_client_and_itself() {
        let agent = agent_of_client("Claude Desktop (via mcp-remote 0.15.1)", None, Some("1.2"));
        assert_eq!(agent.name, "Claude Desktop");
        assert_eq!(agent.via.as_deref(), Some("mcp-remote"));
        assert_eq!(agent.version.as_deref(), Some("1.2"));
    }

    #[test]
    fn supergateway_in_the_clients_place_is_an_unnamed_client_via_it() {
        let agent = agent_of_client("supergateway", None, Some("4.0.0"));
        assert_eq!(
            agent,
            AgentInfo {
                via: Some("supergateway".into()),
                ..AgentInfo::named(UNNAMED_CLIENT)
            }
        );
    }

    #[test]
    fn a_client_named_mcp_or_like_a_bridge_is_only_a_client() {
        for name in [
            "mcp",
            "mcp-remote-ish",
            "x (via mcp-remotely 1)",
            "supergateway2",
            "x (via someone)",
        ] {
            let agent = agent_of_client(name, None, None);
            assert_eq!(agent.name, name);
            assert_eq!(agent.via, None, "{name}");
        }
    }

    #[test]
    fn names_are_cut_to_sixty_four_characters() {
        let long = "a".repeat(200);
        let agent = agent_of_client(&long, Some(&long), None);
        assert_eq!(agent.name.chars().count(), MAX_LABEL_CHARS);
        assert!(agent.name.ends_with('…'));
        assert_eq!(agent.title.unwrap().chars().count(), MAX_LABEL_CHARS);
        assert_eq!(project_name(&"é".repeat(64)).unwrap(), "é".repeat(64));
        assert_eq!(project_name("  ").as_deref(), None);
    }

    #[test]
    fn the_project_is_the_first_file_roots_last_segment_decoded() {
        assert_eq!(
            project_of_roots([
                "https://example.com/x",
                "file:///home/me/my%20shop/",
                "file:///b"
            ]),
            Some("my shop".into())
        );
        assert_eq!(project_of_roots(["file:///"]), None);
        assert_eq!(project_of_roots(["not a uri"]), None);
        assert_eq!(project_of_roots([]), None);
    }

    #[test]
    fn the_project_comes_from_meta_and_query() {
        let meta = json!({"dev.him/project": " shop ", "progressToken": 1});
        assert_eq!(
            project_of_meta(meta.as_object().unwrap()),
            Some("shop".into())
        );
        assert_eq!(
            project_of_meta(json!({"dev.him/project": 3}).as_object().unwrap()),
            None
        );
        assert_eq!(
            project_of_query(Some("a=1&project=caf%C3%A9+bar")),
            Some("café bar".into())
        );
        assert_eq!(project_of_query(Some("project=")), None);
        assert_eq!(project_of_query(None), None);
    }
}
