//! The agent side's part of the Matrix bridge (`him matrix bridge`, whose code is in the
//! `him-matrix` package, `matrix/`): whether this user set Matrix up, and starting the bridge when
//! a question is asked and none answers on its socket, as a native host starts the gateway.
//! Nothing here touches Matrix; a user without it pays one `stat` per question.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::wire::runtime;

/// The file `him matrix room` writes last: with it, Matrix is set up.
pub const ROOM_FILE: &str = "room.json";

/// How long a question waits for a bridge it started to listen: it binds its socket before
/// it touches the homeserver, so this bounds only a machine under load.
const START_WAIT: Duration = Duration::from_secs(5);

/// How long a look at the bridge's socket may take (see `gateway::answers`).
const ANSWER_WAIT: Duration = Duration::from_secs(1);

/// `<state>/matrix`: the session, the crypto and state stores, the room, the bridge's log.
pub fn state_dir() -> Option<PathBuf> {
    crate::platform::state_dir::state_dir()
        .ok()
        .map(|dir| dir.join("matrix"))
}

/// Whether this user set a Matrix room up (`him matrix login`, then `him matrix room`).
pub fn configured() -> bool {
    state_dir().is_some_and(|dir| dir.join(ROOM_FILE).is_file())
}

/// Whether a bridge accepts connections on the socket of `runtime_dir`.
pub async fn answers(runtime_dir: &Path) -> bool {
    let socket = runtime::matrix_socket(runtime_dir);
    matches!(
        tokio::time::timeout(ANSWER_WAIT, tokio::net::UnixStream::connect(socket)).await,
        Ok(Ok(_))
    )
}

/// When Matrix is set up and no bridge answers: starts one, detached (its log in
/// `<state>/matrix/bridge.log`), and waits for it to listen, so the question about to be
/// opened reaches it. A second one started meanwhile finds the lock taken and leaves.
pub async fn ensure_running(runtime_dir: &Path) {
    if !configured() || answers(runtime_dir).await {
        return;
    }
    let log = state_dir().and_then(|dir| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode_private()
            .open(dir.join("bridge.log"))
            .ok()
    });
    let stderr = log.map_or_else(Stdio::null, Stdio::from);
    let Some(pid) = crate::platform::spawn::spawn_detached(&["matrix", "bridge"], stderr) else {
        return;
    };
    let pid = nix::unistd::Pid::from_raw(pid as i32);
    let deadline = tokio::time::Instant::now() + START_WAIT;
    while tokio::time::Instant::now() < deadline {
        if answers(runtime_dir).await {
            return;
        }
        // One that left at once (set-up incomplete, another bridge holds the lock) is not
        // waited for: its reason is in its log, and the question goes on without it.
        if nix::sys::signal::kill(pid, None).is_err() {
            tracing::warn!("the Matrix bridge did not start; see {}", log_hint());
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tracing::warn!("the Matrix bridge did not start listening within {START_WAIT:?}");
}

fn log_hint() -> String {
    state_dir().map_or_else(
        || "its log".to_owned(),
        |dir| dir.join("bridge.log").display().to_string(),
    )
}

/// Files of the Matrix state are the person's alone.
trait PrivateMode {
    fn mode_private(&mut self) -> &mut Self;
}

impl PrivateMode for std::fs::OpenOptions {
    fn mode_private(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::mode(self, 0o600)
    }
}
