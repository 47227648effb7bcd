//! `him remote HOST`: sets up SSH so agents on HOST reach this machine's browsers through
//! the gateway (DESIGN.md §10). It asks HOST once, over ssh, where its forwarded folder is
//! (`him forwarded-dir` there creates it: sshd creates no folders, and `/run/user/<uid>`
//! exists only after a login), then prints the `ssh_config` block with literal paths on both
//! ends (ssh_config expands its tokens on this side only) and the equivalent `ssh -R`; with
//! `--write` it puts the block, marked, at the top of `~/.ssh/config`, replacing an earlier
//! one for the same host, and has `him forwarded-dir --ssh-rc` on HOST put the line in its
//! `~/.ssh/rc` that frees the forwarded socket's name at each session's start
//! ([`ssh_rc`]). `him uninstall` removes every such block, on either machine.

mod config_block;
pub mod ssh_rc;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

use crate::BoxError;
use crate::cli::{ForwardedDirArgs, RemoteArgs};
use crate::wire::runtime;

pub use config_block::{Block, check_host, check_socket_path, remove_blocks, upsert_block};

/// What `him forwarded-dir` prints on the remote machine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RemotePaths {
    /// The folder agents there search for forwarded sockets, created private.
    pub forwarded: PathBuf,
    pub hostname: String,
    pub version: String,
    /// The him binary there, which the `~/.ssh/rc` line names.
    #[serde(default)]
    pub him: Option<PathBuf>,
    /// The `~/.ssh/rc` there that now holds the line (asked for with `--ssh-rc`).
    #[serde(default)]
    pub ssh_rc: Option<PathBuf>,
}

/// `him forwarded-dir`: creates this machine's forwarded folder and prints where it is;
/// with `--ssh-rc`, also puts the tidy line in `~/.ssh/rc`.
pub fn forwarded_dir(args: &ForwardedDirArgs) -> Result<ExitCode, BoxError> {
    let located = runtime::runtime_dir()?;
    let forwarded = located
        .forwarded
        .ok_or("no home directory here, so no folder for forwarded sockets")?;
    runtime::ensure_private_dir(&forwarded)?;
    let paths = RemotePaths {
        forwarded,
        hostname: runtime::hostname().unwrap_or_else(|| "localhost".into()),
        version: env!("CARGO_PKG_VERSION").into(),
        him: std::env::current_exe().ok(),
        ssh_rc: if args.ssh_rc {
            Some(ssh_rc::install()?)
        } else {
            None
        },
    };
    writeln!(
        std::io::stdout().lock(),
        "{}",
        serde_json::to_string(&paths)?
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `him tidy-forwarded`, from `~/.ssh/rc` at the start of each SSH session: frees the name
/// SSH binds in this machine's forwarded folder (DESIGN.md §10). Nothing to do — no home,
/// no folder yet — is no error: the line must never trouble a login.
pub fn tidy_forwarded() -> Result<ExitCode, BoxError> {
    let Some(dir) = runtime::runtime_dir()
        .ok()
        .and_then(|located| located.forwarded)
        .filter(|dir| dir.is_dir())
    else {
        return Ok(ExitCode::SUCCESS);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // A connect to a local socket answers at once; the bound only keeps a login from
    // waiting on a listener whose backlog is full.
    let tidied = runtime.block_on(async {
        tokio::time::timeout(
            std::time::Duration::from_secs(2),
            crate::agent::pool::tidy_forwarded_once(&dir),
        )
        .await
    });
    match tidied {
        Ok(Ok(blocking)) => {
            // sshd bound this connection's forwards before it ran the rc: a refused socket
            // at the name SSH binds means this connection's bind onto it failed (an earlier
            // connection left it: one that opened no session, with no agent during it).
            for path in blocking {
                let from = path.file_stem().map(|s| s.to_string_lossy().into_owned());
                eprintln!(
                    "him: this SSH connection's forward from {} (if it has one) found {} in \
                     its way, left by an earlier connection; removed now, so reconnect to \
                     have it (with ControlMaster, `ssh -O exit HOST` first)",
                    from.as_deref().unwrap_or("the other machine"),
                    path.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(_) => Ok(ExitCode::SUCCESS),
        Ok(Err(err)) => Err(format!("not tidying forwarded sockets: {err}").into()),
    }
}

/// The name a forwarded socket from this machine has on the other: the host name, with
/// nothing an agent there would read as a renamed socket (`@`) or a path.
pub fn bind_name(hostname: &str) -> String {
    let name: String = hostname
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    if name.is_empty() {
        "laptop".into()
    } else {
        name
    }
}

/// `sun_path` holds 108 bytes on Linux, the terminating NUL included.
const SOCKET_PATH_MAX: usize = 107;

pub fn run(args: &RemoteArgs) -> Result<ExitCode, BoxError> {
    let located = runtime::runtime_dir()?;
    let gateway = runtime::gateway_socket(&located.dir);
    if args.container {
        crate::host::gateway::enable()?;
        print_container(&gateway)?;
        start_gateway(&located.dir)?;
        return Ok(ExitCode::SUCCESS);
    }
    let host = args
        .host
        .as_deref()
        .ok_or("name the SSH host (as in `ssh HOST`), or give --container")?;
    check_host(host)?;
    check_socket_path(&gateway, "this machine's gateway socket")
        .map_err(|why| format!("{why}; set HIM_RUNTIME_DIR to a plainer private folder"))?;
    let paths = ask_remote(host, &args.remote_him, args.write)?;
    // What the other machine answered goes into this machine's ~/.ssh/config: a path that
    // would read as more than one path there is refused, and nothing is written.
    check_socket_path(
        &paths.forwarded,
        &format!("{host} answered that its folder for forwarded sockets is"),
    )
    .map_err(|why| format!("{why}; nothing was written"))?;
    let local_name = bind_name(&runtime::hostname().unwrap_or_default());
    let remote_socket = paths.forwarded.join(format!("{local_name}.sock"));
    for path in [&remote_socket, &gateway] {
        if path.as_os_str().len() > SOCKET_PATH_MAX {
            eprintln!(
                "him: warning: {} is longer than a socket path may be ({SOCKET_PATH_MAX} bytes)",
                path.display()
            );
        }
    }
    let block = Block {
        host: host.to_owned(),
        remote_socket,
        local_socket: gateway,
    };
    crate::host::gateway::enable()?;
    let mut out = std::io::stdout().lock();
    if args.write {
        let config = ssh_config_path()?;
        write_config(&config, &block)?;
        writeln!(
            out,
            "Wrote this block at the top of {}:\n",
            config.display()
        )?;
    } else {
        writeln!(
            out,
            "Add this block at the top of ~/.ssh/config (or run again with --write):\n"
        )?;
    }
    writeln!(out, "{}", block.render())?;
    writeln!(
        out,
        "Or, without the block, for one connection:\n\n  {}\n",
        block.ssh_command()
    )?;
    // sshd leaves the socket it bound after every connection; this line, run at each
    // session's start, frees the name for the next one (DESIGN.md §10).
    match (&paths.ssh_rc, &paths.him) {
        (Some(rc), _) => writeln!(
            out,
            "On {host}, a line in {} frees the forwarded socket's name at the start\n\
             of each SSH session, so the next connection's forward is not blocked by this one's\n\
             (`him uninstall` there removes it).\n",
            rc.display()
        )?,
        (None, Some(him)) => writeln!(
            out,
            "On {host}, put this in ~/.ssh/rc (--write does it), so that a stale forwarded\n\
             socket does not block the next connection's forward (when ~/.ssh/rc is there\n\
             already, only its `if [ -x` line, on top):\n\n{}",
            ssh_rc::render(him, true)
        )?,
        (None, None) => {}
    }
    writeln!(
        out,
        "Then, on {host}, `him doctor` says the panel is reached through SSH from this machine.\n\
         VS Code Remote-SSH reads ~/.ssh/config, so it needs nothing more."
    )?;
    drop(out);
    start_gateway(&located.dir)?;
    Ok(ExitCode::SUCCESS)
}

/// How long `him remote` waits for the gateway it starts to answer.
const GATEWAY_START: std::time::Duration = std::time::Duration::from_secs(5);

/// Starts the gateway now that forwarding is enabled, rather than at the next browser
/// start: with the browser already open, remote questions would go back to the chat until
/// then. Says whether it runs.
fn start_gateway(runtime_dir: &Path) -> Result<(), BoxError> {
    let socket = runtime::gateway_socket(runtime_dir);
    if crate::host::gateway::start_now(runtime_dir, GATEWAY_START) {
        writeln!(
            std::io::stdout().lock(),
            "\nThe gateway runs on this machine now ({}): while a browser with him is open, \
             it stays, and its host starts it again should it stop.",
            socket.display()
        )?;
    } else {
        eprintln!(
            "him: warning: the gateway did not start ({} does not answer); open the browser, \
             whose host starts it, or run `him gateway`",
            socket.display()
        );
    }
    Ok(())
}

fn print_container(gateway: &Path) -> Result<(), BoxError> {
    let dir = gateway.parent().unwrap_or(gateway);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Give a container this machine's gateway folder, and run it as yourself:\n\n  \
         docker run --user \"$(id -u):$(id -g)\" \\\n    \
         -v {}:/run/him/forwarded -e HIM_RUNTIME_DIR=/run/him ...\n\n\
         (rootless Podman: --userns=keep-id). Agents in the container find the gateway in\n\
         $HIM_RUNTIME_DIR/forwarded; peers of another uid are dropped, so the container's\n\
         process must run as your uid.",
        dir.display()
    )?;
    Ok(())
}

/// Runs `him forwarded-dir` on `host` over ssh (one round trip, the user's own ssh).
fn ask_remote(host: &str, remote_him: &str, write: bool) -> Result<RemotePaths, BoxError> {
    let output = std::process::Command::new("ssh")
        .arg(host)
        .arg("--")
        .arg(remote_him)
        .arg("forwarded-dir")
        .args(write.then_some("--ssh-rc"))
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ssh: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    // 127: the remote shell found no such command.
    if output.status.code() == Some(127) || stderr.contains("not found") {
        return Err(format!(
            "him is not installed on {host} (ssh {host} {remote_him} found no such command): \
             install him there, or give its path with --remote-him PATH"
        )
        .into());
    }
    if !output.status.success() {
        return Err(format!(
            "`ssh {host} {remote_him} forwarded-dir` failed ({}): {}",
            output.status,
            stderr.trim()
        )
        .into());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'));
    let paths: RemotePaths = line
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            format!(
                "{host} answered `{remote_him} forwarded-dir` with something else than its paths \
             (an older him there?): {:?}",
                stdout.trim()
            )
        })?;
    // These are printed for the person to read (and to copy into ~/.ssh/rc there).
    for path in paths.him.iter().chain(&paths.ssh_rc) {
        if path.to_string_lossy().chars().any(char::is_control) {
            return Err(format!(
                "{host} answered with a path holding control characters: {:?}",
                path.as_os_str()
            )
            .into());
        }
    }
    Ok(paths)
}

/// `~/.ssh/<name>` of this user, by `$HOME` as ssh itself finds it.
fn home_ssh(name: &str) -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".ssh").join(name))
}

fn ssh_config_path() -> Result<PathBuf, BoxError> {
    Ok(home_ssh("config").ok_or("HOME is not set; him needs it to find ~/.ssh/config")?)
}

/// Puts the block in `~/.ssh/config`, which is replaced whole ([`crate::platform::file::replace`]).
fn write_config(path: &Path, block: &Block) -> Result<(), BoxError> {
    let old = ssh_rc::read(path)?.unwrap_or_default();
    let new = upsert_block(&old, block);
    crate::platform::file::replace(path, &new, 0o600)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

/// `him uninstall`: removes every block `him remote --write` put in `~/.ssh/config`;
/// returns the file when it changed.
pub fn uninstall() -> Result<Option<PathBuf>, BoxError> {
    let path = ssh_config_path()?;
    let Some(old) = ssh_rc::read(&path)? else {
        return Ok(None);
    };
    let new = remove_blocks(&old);
    if new == old {
        return Ok(None);
    }
    crate::platform::file::replace(&path, &new, 0o600)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(Some(path))
}
