//! The channels a question takes when no browser side panel is connected (DESIGN.md §5–§6),
//! besides MCP elicitation (`mcp/elicitation.rs`, it needs the MCP session):
//!
//! - [`terminal`]: `him ask` in a terminal asks right there, before `HIM_FALLBACK`;
//! - [`loopback`]: `HIM_FALLBACK=http`, a one-time web form on 127.0.0.1 that renders the
//!   form with the extension's own `lib/form.js`, in the language [`locale`] picks, opened
//!   with [`opener`];
//! - the chat hand-back (`HIM_FALLBACK=return`) is a result, not a channel:
//!   `agent::result::needs_user_input`.

pub mod locale;
pub mod loopback;
pub mod opener;
pub mod terminal;
