//! him — human input for MCP.
//!
//! ```text
//! MCP client ──stdio JSON-RPC──► him serve ──┐   (agent side: mcp/, channels.rs, wait.rs,
//! shell script ────────────────► him ask   ──┤    agent.rs; him ask: ask_cli.rs)
//!                                            │ <runtime>/hosts/<pid>.sock (runtime.rs),
//!                                            │ link.rs over frame.rs + protocol.rs
//!                                            ▼
//!     browser ──spawns──► him (native host, host.rs + relay.rs) ◄──stdio native messaging──► extension/
//! ```
//!
//! A question's channels, in order (channels.rs): the browsers, MCP elicitation, the terminal
//! (`him ask` only: `fallback/terminal.rs`), then the fallback (`fallback/`: the loopback form
//! on hyper, sharing web.rs with `serve --http`). A question whose call ends unanswered is kept
//! for a late answer (keep.rs, late.rs); one whose client would cut or background the call
//! returns `pending` first and stays open (pending.rs).
//!
//! One binary, several roles. Stdout is a protocol channel in both the MCP server and the
//! native host, so nothing in this crate prints to it except the command-line subcommands
//! that exist to print (`manifest`, `config`, `ask`, ...), which write explicitly.

pub mod admission;
pub mod agent;
pub mod ask_cli;
pub mod ask_result;
pub mod asker;
pub mod channels;
pub mod cli;
pub mod config;
pub mod display;
pub mod fallback;
pub mod form;
pub mod frame;
pub mod gateway;
pub mod hook;
pub mod host;
pub mod install;
pub mod keep;
pub mod late;
pub mod link;
pub mod logging;
pub mod matrix_link;
pub mod mcp;
pub mod peer;
pub mod pending;
pub mod permission;
pub mod platform;
pub mod protocol;
pub mod random;
pub mod relay;
pub mod remote;
pub mod role;
pub mod runtime;
pub mod state;
pub mod tools;
pub mod try_cli;
pub mod wait;
pub mod web;

/// Native-messaging host name, the same in every browser's manifest.
pub const HOST_NAME: &str = "dev.him.host";
/// Chromium extension id, pinned by the `key` in `extension/manifest.json`.
pub const EXTENSION_ID: &str = "mephldgjjmdajmfkonfbblipccnbagig";
/// Firefox add-on id, from `browser_specific_settings.gecko.id`.
pub const GECKO_ID: &str = "him@him.dev";

/// The error type of the command-line glue; each layer below has its own.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
