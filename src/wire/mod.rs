//! Where agents and hosts meet and how they talk (DESIGN.md §1–§3).
//!
//! - [`runtime`] — the private runtime directory where hosts publish their sockets, and the
//!   rules that find it without the environment.
//! - [`frame`] — length-prefixed JSON, the same on every link and on native messaging.
//! - [`protocol`] — the messages of §3, the only place they are named.
//! - [`link`] — one agent–host link over a Unix stream, and its `hello`/`welcome` handshake.
//! - [`labels`] — names a client wrote, cut to fit a card: the rule both ends apply.
//! - [`keep`] — the store where a question whose call ended waits for its late answer; the
//!   agent keeps questions there and a host writes their answers.

pub mod frame;
pub mod keep;
pub mod labels;
pub mod link;
pub mod protocol;
pub mod runtime;
