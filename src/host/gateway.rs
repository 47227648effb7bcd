//! The gateway (`him gateway`): one stable per-user socket, `<runtime>/gateway/gateway.sock`,
//! for what cannot find this machine's hosts itself — an agent on another machine, whose
//! SSH connection forwards a socket there to this one (`him remote`), or one in a container
//! given the gateway's folder by a bind mount (DESIGN.md §10).
//!
//! ```text
//!  remote agent ─ssh -R─► gateway.sock ─► host side (host/mod.rs + host/relay.rs, as in a native host)
//!                                             │ native-messaging frames, in-process pipe
//!                                             ▼
//!                                  bridge.rs (plays the extension) ─► one agent Pool per
//!                                  remote agent ─► <runtime>/hosts/<pid>.sock ─► browsers
//! ```
//!
//! Towards remote agents it is a host: the same relay with the same rules (ids, forms,
//! verdicts, peer uid, stalls). Towards the local hosts it is an agent: the same pool as
//! `him serve` (rescans, first answer wins, re-sent under the same id to a host that
//! restarts), labelled with the remote agent's name, project and machine. A remote agent
//! only ever hears about its own questions.
//!
//! It starts on demand: `him remote` starts it as it sets forwarding up, and a native host
//! whose user set forwarding up spawns it when nothing answers on the stable socket — at
//! start, and again whenever it finds it gone while the browser runs ([`keep_running`]); one
//! instance holds the folder's lock. It exits
//! once no local host has run for the reconnect grace, so a browser restart keeps it (and
//! the remote questions) while closing the browser for good ends it, and the remote agents'
//! questions move on to their fallback as if the browser had closed.

mod bridge;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use tokio::net::UnixListener;

use crate::host::HostError;
use crate::wire::protocol::HostInfo;
use crate::wire::runtime;

/// The file in the state directory that says this user forwards the gateway somewhere
/// (`him remote`); without it, native hosts start no gateway.
const ENABLED_FILE: &str = "gateway-enabled";

/// Whether this user set up forwarding, so native hosts start the gateway.
pub fn enabled() -> bool {
    crate::platform::state_dir::state_dir().is_ok_and(|dir| dir.join(ENABLED_FILE).is_file())
}

/// Makes native hosts start the gateway from now on; returns the marker's path.
pub fn enable() -> io::Result<PathBuf> {
    let dir =
        crate::platform::state_dir::state_dir().map_err(|e| io::Error::other(e.to_string()))?;
    runtime::ensure_private_dir(&dir).map_err(|e| io::Error::other(e.to_string()))?;
    let path = dir.join(ENABLED_FILE);
    std::fs::write(
        &path,
        "Written by `him remote`: browsers' hosts start `him gateway`, the socket SSH forwards \
         to. `him uninstall` removes this file.\n",
    )?;
    Ok(path)
}

/// Undoes [`enable`]; returns the marker's path when there was one.
pub fn disable() -> io::Result<Option<PathBuf>> {
    let Ok(dir) = crate::platform::state_dir::state_dir() else {
        return Ok(None);
    };
    let path = dir.join(ENABLED_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(Some(path)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// How often a native host looks whether the gateway it should have runs.
const KEEP_RUNNING_INTERVAL: Duration = Duration::from_secs(2);

/// How long a look at the gateway's socket may take: a live gateway accepts at once, and
/// only one whose backlog is full makes a connect wait.
const ANSWER_WAIT: Duration = Duration::from_secs(1);

/// Whether a gateway accepts connections on the stable socket of `runtime_dir`.
pub async fn answers(runtime_dir: &Path) -> bool {
    let socket = runtime::gateway_socket(runtime_dir);
    matches!(
        tokio::time::timeout(ANSWER_WAIT, tokio::net::UnixStream::connect(socket)).await,
        Ok(Ok(_))
    )
}

/// Starts the gateway, detached, when forwarding is set up and nothing answers on the
/// stable socket.
async fn ensure_running(runtime_dir: &Path) {
    if enabled() && !answers(runtime_dir).await {
        start(Stdio::inherit());
    }
}

/// For as long as a native host runs, from its start: starts the gateway whenever
/// forwarding is set up and none answers — set up after this host started (by `him remote`
/// on another terminal, whose own start may have failed), or a gateway that died. Remote
/// questions would otherwise go back to the chat while the browser is open.
pub async fn keep_running(runtime_dir: PathBuf) {
    loop {
        ensure_running(&runtime_dir).await;
        tokio::time::sleep(KEEP_RUNNING_INTERVAL).await;
    }
}

/// Starts `him gateway`, detached, its log going to `stderr`; returns its pid. A second one
/// started meanwhile finds the lock taken and leaves at once.
pub fn start(stderr: Stdio) -> Option<u32> {
    crate::platform::spawn::spawn_detached(&["gateway"], stderr)
}

/// For `him remote`, once forwarding is enabled: starts the gateway unless one answers, and
/// waits up to `within` for it to answer. Returns whether one answers now.
pub fn start_now(runtime_dir: &Path, within: Duration) -> bool {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(_) => return false,
    };
    runtime.block_on(async {
        if answers(runtime_dir).await {
            return true;
        }
        // Its log would land on this terminal after `him remote` has ended.
        if start(Stdio::null()).is_none() {
            return false;
        }
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            if answers(runtime_dir).await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    })
}

/// `him gateway`: runs until no local host has run for the reconnect grace.
pub fn run_gateway() -> ExitCode {
    crate::platform::logging::init();
    let config = match crate::config::Config::from_env() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("him gateway: {err}");
            return ExitCode::FAILURE;
        }
    };
    let dir = config.runtime.dir.clone();
    if dir.as_os_str().is_empty() {
        eprintln!("him gateway: no runtime directory (see `him doctor`)");
        return ExitCode::FAILURE;
    }
    let lock = match lock(&dir) {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            tracing::info!("a gateway already runs for this user");
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            eprintln!("him gateway: {err}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("him gateway: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(serve(
        &config.runtime.search(),
        &dir,
        config.reconnect_grace,
    ));
    drop(lock);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("him gateway: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The lock that makes this the one gateway of the runtime directory; `None` when another
/// holds it.
fn lock(runtime_dir: &Path) -> Result<Option<nix::fcntl::Flock<File>>, HostError> {
    lock_in(runtime_dir, &runtime::gateway_dir(runtime_dir))
}

/// The lock of a per-user service's folder `dir` in `runtime_dir` (made private); `None`
/// when another process holds it.
pub fn lock_in(
    runtime_dir: &Path,
    dir: &Path,
) -> Result<Option<nix::fcntl::Flock<File>>, HostError> {
    runtime::ensure_private_dir(runtime_dir).map_err(HostError::Runtime)?;
    runtime::ensure_private_dir(dir).map_err(HostError::Runtime)?;
    let path = dir.join("lock");
    let file = File::create(&path).map_err(|err| HostError::Bind {
        path: path.clone(),
        err,
    })?;
    match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(Some(lock)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, errno)) => Err(HostError::Bind {
            path,
            err: io::Error::from(errno),
        }),
    }
}

/// Binds the stable socket; only the lock holder calls this, so a file there is stale.
fn bind(runtime_dir: &Path) -> Result<(UnixListener, PathBuf), HostError> {
    crate::host::bind_over(runtime::gateway_socket(runtime_dir))
}

/// The gateway: the host side on the stable socket, its "extension" the bridge to the hosts
/// in `search`, until the bridge finds no local host for `grace`.
pub async fn serve(
    search: &[PathBuf],
    runtime_dir: &Path,
    grace: Duration,
) -> Result<(), HostError> {
    let (host_end, bridge_end) = tokio::io::duplex(256 * 1024);
    let (host_read, host_write) = tokio::io::split(host_end);
    let info = HostInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        pid: Some(std::process::id()),
        machine: Some(runtime::hostname().unwrap_or_else(|| "localhost".into())),
        kind: None,
    };
    let host = crate::host::run_on(
        || bind(runtime_dir),
        info,
        host_read,
        host_write,
        crate::host::AGENT_STALL,
        // Its "extension" is the local hosts, which keep questions themselves.
        None,
    );
    let bridge = bridge::run(bridge_end, search.to_vec(), grace);
    tokio::select! {
        result = host => result,
        () = bridge => {
            tracing::info!("no browser for {} ms; the gateway exits", grace.as_millis());
            Ok(())
        }
    }
}
