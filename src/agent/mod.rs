//! The asking side: everything between a front end (the MCP tools, `him ask`, a hook) and
//! the hosts that show a question to a person.
//!
//! - [`pool`] — one link to every live host, rescanned while questions wait; each open
//!   question is sent to all of them (with `forward` for sockets forwarded over SSH and
//!   [`presence`] for whether the person is at the browser or away on Matrix).
//! - [`prepare`] — a question made ready to go: its id, its `ask` frame, the size check.
//! - [`ask`] — one question, from form to result: the channel chain of §5 (browsers,
//!   elicitation, the terminal, the fallback), the same for every front end.
//! - [`wait`] — the wait for the browsers' answer: the first host to answer wins.
//! - [`tools`] — the ask tools' arguments and how each becomes a form.
//! - [`result`] — the one result object every ask returns.
//! - [`asker`] — who is asking, as a card names it.
//! - [`late`], [`pending`] — late answers: each question's keep plan (kept in
//!   [`crate::wire::keep`] when its call ends unanswered), and the early `pending` return.
//! - [`matrix`] — starting the Matrix bridge, which answers from the phone.

pub mod ask;
pub mod asker;
mod forward;
pub mod late;
pub mod matrix;
pub mod pending;
pub mod pool;
pub mod prepare;
pub mod presence;
pub mod result;
pub mod tools;
pub mod wait;
