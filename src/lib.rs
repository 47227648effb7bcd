//! him — human input for MCP: an agent asks, a person answers, the agent gets a typed answer.
//!
//! ```text
//! MCP client ──stdio / HTTP──► him serve (mcp) ──┐   agent side (agent): the pool of host links,
//! shell script ──────────────► him ask   (cli) ──┤   the ask flow, its wait, late answers
//!                                                │ <runtime>/hosts/<pid>.sock, framed JSON (wire)
//!                                                ▼
//!   browser ──spawns──► him, the native host (host) ◄──native messaging──► extension/
//! ```
//!
//! # Layout
//!
//! Each module is one role or one mechanism; ARCHITECTURE.md maps them in more detail.
//!
//! - [`wire`] — where agents and hosts meet and how they talk: the runtime directory,
//!   length-prefixed frames, the messages of DESIGN.md §3, the link and its handshake, the
//!   label rules both ends apply, and the store where kept questions wait for late answers.
//! - [`form`] — the form model of §4 (every question is a form), an answer judged against
//!   it, and agent text made fit to show where it cannot be drawn as Markdown.
//! - [`host`] — the browser's side: the native host, its relay (which agent owns which
//!   question), and the gateway that takes agents from other machines.
//! - [`agent`] — the asking side: the pool of links to every host, one question's flow from
//!   tool arguments through its channels to a typed result, and its keep plan for late
//!   answers.
//! - [`mcp`] — `him serve`: the MCP server over stdio or Streamable HTTP, its tools,
//!   schemas, elicitation and tasks.
//! - [`fallback`] — where a question goes with no browser: the loopback form, the terminal.
//! - [`loopback_http`] — what both loopback HTTP servers share: the accept loop, connection
//!   slots, whose process is calling, `Host` rules and security headers.
//! - [`permission`] — the agents' own permission prompts and their hooks (§9).
//! - [`remote`] — `him remote`: agents on other machines over OpenSSH (§10).
//! - [`install`] — set-up: manifests, the extension, client snippets, `him doctor`.
//! - [`cli`] — the command line: its options, how the binary knows its role, `him ask`, `him try`.
//! - [`config`] — the `HIM_*` settings of §5, read once.
//! - [`platform`] — the operating system's part: the state folder, logs on stderr, the
//!   clock, random ids, files replaced whole, services started detached, the stop signals.
//!
//! One binary, several roles. Stdout is a protocol channel in both the MCP server and the
//! native host, so nothing in this crate prints to it except the command-line subcommands
//! that exist to print (`manifest`, `config`, `ask`, ...), which write explicitly.

pub mod agent;
pub mod cli;
pub mod config;
pub mod fallback;
pub mod form;
pub mod host;
pub mod install;
pub mod loopback_http;
pub mod mcp;
pub mod permission;
pub mod platform;
pub mod remote;
pub mod wire;

/// Native-messaging host name, the same in every browser's manifest.
pub const HOST_NAME: &str = "dev.him.host";
/// Chromium extension id, pinned by the `key` in `extension/manifest.json`.
pub const EXTENSION_ID: &str = "mephldgjjmdajmfkonfbblipccnbagig";
/// Firefox add-on id, from `browser_specific_settings.gecko.id`.
pub const GECKO_ID: &str = "him@him.dev";
/// The keyboard shortcut that opens the panel (manifest.json `commands`), as the browsers
/// show it.
pub const SHORTCUT: &str = "Alt+Shift+H";

/// The error type of the command-line glue; each layer below has its own.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
