//! `him matrix`: answering from the phone and with a team, through a Matrix room. In the
//! binary only: the library (every other role, every test that links it) has no Matrix code,
//! so `him serve` and the native host start and stay as small as before.
//!
//! ```text
//!  him serve / him ask ──§3 link──► <runtime>/matrix/bridge.sock ─► host side (host.rs +
//!     (start it on demand:              relay.rs, as in a native host; welcome says
//!      him::matrix_link)                kind "matrix")
//!                                           │ native-messaging frames, in-process pipe
//!                                           ▼
//!                             bridge.rs (plays the extension) ─► matrix-sdk ─► the room
//!                             (render.rs: question → message or poll; reply → values)
//! ```
//!
//! - `setup.rs`: `him matrix login` and `him matrix room`;
//! - `store.rs`: what is kept in `<state>/matrix/` (session, stores, room), 0700/0600;
//! - `bridge.rs`: the bridge process; `render.rs`: the pure rules of the phone's view.

mod bridge;
mod render;
mod setup;
mod store;

use std::process::ExitCode;

use him::BoxError;
use him::cli::{MatrixArgs, MatrixCommand};

pub fn run(args: MatrixArgs) -> Result<ExitCode, BoxError> {
    match args.command {
        MatrixCommand::Login(args) => setup::login(&args),
        MatrixCommand::Room(args) => setup::room(&args),
        MatrixCommand::Bridge => bridge::run(),
    }
}

/// A runtime for one command; the bridge's work is I/O on a few links, one thread is plenty.
fn runtime() -> Result<tokio::runtime::Runtime, BoxError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}
