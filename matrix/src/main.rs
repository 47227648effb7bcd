//! `him-matrix`, run as `him matrix …`: answering from the phone and with a team, through a
//! Matrix room. A package of its own (on the `him` library): `him` (every other role) has no
//! Matrix code, so `him serve` and the native host start and stay as small as before, and
//! building `him` does not build matrix-sdk; `him matrix ARGS` executes `him-matrix ARGS`,
//! installed beside `him` (`cargo install --path matrix`).
//!
//! ```text
//!  him serve / him ask ──§3 link──► <runtime>/matrix/bridge.sock ─► host side (him's
//!     (start it on demand:              host/mod.rs + host/relay.rs, as in a native
//!      him::agent::matrix)              host; welcome says kind "matrix")
//!                                           │ native-messaging frames, in-process pipe
//!                                           ▼
//!                             bridge.rs (plays the extension) ─► matrix-sdk ─► the room
//!                             (render.rs: question → message or poll; reply → values)
//! ```
//!
//! - `setup.rs`: `him matrix login` and `him matrix room`;
//! - `store.rs`: what is kept in `<state>/matrix/` (session, stores, room), 0700/0600;
//! - `bridge.rs`: the bridge process; `render.rs`: the pure rules of the phone's view;
//! - `verify.rs`: `him matrix verify`, the emoji comparison with an answerer's phone.

mod bridge;
mod doctor;
mod logout;
mod permission;
mod render;
mod setup;
mod store;
mod thread;
mod verify;

use std::process::ExitCode;

use clap::Parser;
use him::BoxError;
use him::cli::MatrixCommand;

/// The same subcommands as `him matrix` (`him::cli::MatrixArgs`).
#[derive(Debug, Parser)]
#[command(name = "him matrix", version)]
struct Cli {
    #[command(subcommand)]
    command: MatrixCommand,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("him: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: MatrixCommand) -> Result<ExitCode, BoxError> {
    match command {
        MatrixCommand::Login(args) => setup::login(&args),
        MatrixCommand::Room(args) => setup::room(&args),
        MatrixCommand::Bridge => bridge::run(),
        MatrixCommand::Doctor => doctor::run(),
        MatrixCommand::Verify => verify::run(),
        MatrixCommand::Logout => logout::run(),
    }
}

/// A runtime for one command; the bridge's work is I/O on a few links, one thread is plenty.
fn runtime() -> Result<tokio::runtime::Runtime, BoxError> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}
