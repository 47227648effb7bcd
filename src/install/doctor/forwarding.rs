//! The doctor's checks of DESIGN.md §10, on both machines: on the one with the browser, the
//! gateway that SSH forwards to; on the other, the routes SSH forwarded into its folder and
//! the `~/.ssh/rc` line that frees their name. Each state has its own sentence and its own
//! fix, for the machine where the fix is made: a machine that reaches another's panel needs
//! no browser of its own, and cannot tell whether the browser there is open when the
//! gateway there does not answer — the doctor there can.

use std::io;
use std::path::Path;

use super::{
    Finding, NoWelcome, PROBE_TIMEOUT, Probe, Status, Welcome, hello_welcome, no_welcome, plain,
};

/// The extension id a gateway gives until it has found a browser's host (`bridge.rs`).
const GATEWAY_WITHOUT_BROWSER: &str = "him-gateway";

/// Whether the gateway answers on its stable socket (asked once `him remote` set forwarding
/// up); `browser_connected`: a browser's host answered here.
pub fn check_gateway(socket: &Path, browser_connected: bool) -> Finding {
    match super::probe(socket) {
        Probe::Live(w) => Finding::new(
            Status::Pass,
            format!(
                "the gateway runs (pid {}) on {}: agents on other machines and in containers reach this browser",
                w.host.pid.map_or("?".to_owned(), |p| p.to_string()),
                socket.display()
            ),
        ),
        Probe::Silent(why) => Finding::new(
            Status::Warn,
            format!("{}: a process listens there but {why}", socket.display()),
        )
        .fix("end that process; a browser's host then starts the gateway (or run `him gateway`)"),
        Probe::Stale(_) if browser_connected => Finding::new(
            Status::Warn,
            format!(
                "the gateway is not running, though a browser is connected ({} does not answer)",
                socket.display()
            ),
        )
        .fix(
            "run `him gateway`; a browser's host of this version starts it within 2 s of finding \
             it gone, an older one only as it starts (restart the browser)",
        ),
        Probe::Stale(_) => Finding::new(
            Status::Warn,
            format!(
                "the gateway is not running ({} does not answer): it runs while a browser with \
                 him is open",
                socket.display()
            ),
        )
        .fix("open the browser: its host starts the gateway"),
    }
}

/// Whether `~/.ssh/rc` frees the name SSH binds at each session's start (DESIGN.md §10):
/// without it, a connection during which no agent ran here blocks the next one's forward.
fn check_ssh_rc() -> Finding {
    use crate::remote::ssh_rc;
    let Some(path) = ssh_rc::path() else {
        return Finding::new(Status::Warn, "HOME is not set, so there is no ~/.ssh/rc");
    };
    let again = "on the machine with the browser, run `him remote <this host> --write` again";
    match std::fs::read_to_string(&path)
        .ok()
        .as_deref()
        .and_then(ssh_rc::named_him)
    {
        Some(him)
            if std::fs::metadata(&him).is_ok_and(|m| m.is_file() && super::is_executable(&m)) =>
        {
            Finding::new(
                Status::Pass,
                format!(
                    "{} frees the forwarded socket's name at each SSH session's start",
                    path.display()
                ),
            )
        }
        Some(him) => Finding::new(
            Status::Warn,
            format!(
                "{} runs {}, which is not there any more: a stale forwarded socket can block \
                 the next SSH connection's forward",
                path.display(),
                him.display()
            ),
        )
        .fix(again),
        None => Finding::new(
            Status::Warn,
            format!(
                "{} does not run him: a connection during which no agent ran here leaves its \
                 forwarded socket, which blocks the next connection's forward",
                path.display()
            ),
        )
        .fix(again),
    }
}

/// What one forwarded socket leads to.
enum Route {
    /// Refused: its SSH connection ended; the file was removed (`true`) or not.
    Ended(bool),
    /// Connecting failed otherwise (why, in words).
    Unreachable(String),
    /// Accepted, then closed before a `welcome`: the SSH connection is up, and on the other
    /// machine nothing listens on the gateway's socket.
    NoGateway,
    /// Accepted, and nothing came back: the other machine sleeps or the network is gone.
    Silent,
    /// Something answered, but not as a him gateway does.
    Strange(String),
    /// A gateway answered, but it reaches no browser's host now.
    NoBrowser(String),
    Live(Welcome),
}

/// How long a gateway may take to find the browsers' hosts once started: it looks every
/// 250 ms (`bridge.rs`), and says it reaches none until its first look has been answered.
const GATEWAY_SETTLES: std::time::Duration = std::time::Duration::from_secs(1);

/// What `sock` leads to; a gateway that says it reaches no browser is asked once more a
/// moment later, since one that has just started says so until it has looked.
fn route(sock: &Path) -> Route {
    match route_once(sock) {
        Route::NoBrowser(_) => {
            std::thread::sleep(GATEWAY_SETTLES);
            route_once(sock)
        }
        other => other,
    }
}

fn route_once(sock: &Path) -> Route {
    use std::os::unix::net::UnixStream;
    let mut stream = match UnixStream::connect(sock) {
        Ok(stream) => stream,
        Err(err) if err.kind() == io::ErrorKind::ConnectionRefused => {
            return Route::Ended(std::fs::remove_file(sock).is_ok());
        }
        Err(err) => return Route::Unreachable(plain(&err)),
    };
    let _ = stream.set_read_timeout(Some(PROBE_TIMEOUT));
    let _ = stream.set_write_timeout(Some(PROBE_TIMEOUT));
    match hello_welcome(&mut stream) {
        Ok(w) => {
            let machine = w
                .host
                .machine
                .clone()
                .unwrap_or_else(|| "another machine".into());
            match w.extension.as_ref().map(|e| e.id.as_str()) {
                None | Some(GATEWAY_WITHOUT_BROWSER) => Route::NoBrowser(machine),
                Some(_) => Route::Live(w),
            }
        }
        Err(NoWelcome::Closed) => Route::NoGateway,
        Err(why) if why.is_silent() => Route::Silent,
        Err(other) => Route::Strange(no_welcome(&other)),
    }
}

/// What the routes SSH forwarded here come to.
pub struct Forwarded {
    pub findings: Vec<Finding>,
    /// The machine whose panel a live route reaches.
    pub reached_from: Option<String>,
    /// When no route reaches a panel: what is wrong, and its fix.
    pub problem: Option<(String, String)>,
}

/// One finding per socket SSH forwarded into `dir`, and what they come to; `None` when there
/// is no such folder (no `him remote` ever pointed here). A socket that refuses is removed
/// here, as agents do: its SSH connection is gone, and the file would block the next one's
/// forward.
pub fn check_forwarded(dir: Option<&Path>) -> Option<Forwarded> {
    let dir = dir.filter(|d| d.is_dir())?;
    let mut findings = vec![check_ssh_rc()];
    let mut reached_from = None;
    // The most telling problem of any route: a connection that is up says more than none.
    let mut problem: Option<(u8, String, String)> = None;
    let mut note = |rank: u8, what: String, fix: &str| {
        if problem.as_ref().is_none_or(|(r, ..)| rank > *r) {
            problem = Some((rank, what, fix.to_owned()));
        }
    };
    for sock in crate::wire::runtime::list_forwarded_sockets(dir) {
        let shown = sock.display();
        let finding = match route(&sock) {
            Route::Ended(removed) => Finding::new(
                Status::Pass,
                format!(
                    "{shown}: left by an SSH connection that ended{}",
                    if removed { "; removed" } else { "" }
                ),
            ),
            Route::Unreachable(why) => {
                let fix =
                    "check the folder's and the socket's owner and mode (yours, 0700 and 0600)";
                note(1, format!("a forwarded socket cannot be used ({why})"), fix);
                Finding::new(Status::Warn, format!("{shown}: cannot connect ({why})")).fix(fix)
            }
            Route::Silent => {
                let fix = "wake the machine with the browser or bring its network back; if that \
                           does not help, reconnect from it (`ssh -O exit <this host>`, then \
                           `ssh <this host>`)";
                note(
                    2,
                    "nothing comes back through the SSH connection (the machine with the browser \
                     is asleep, or the network to it is gone)"
                        .into(),
                    fix,
                );
                Finding::new(
                    Status::Warn,
                    format!(
                        "{shown}: the SSH connection is up on this side, but nothing comes back \
                         through it within {} s: the machine with the browser is asleep, or the \
                         network to it is gone",
                        PROBE_TIMEOUT.as_secs()
                    ),
                )
                .fix(fix)
            }
            Route::Strange(why) => {
                let fix = "on the machine with the browser, install the him of this version";
                note(
                    1,
                    format!("the far end does not answer as him does ({why})"),
                    fix,
                );
                Finding::new(
                    Status::Warn,
                    format!("{shown}: something answers, but not as a him gateway: {why}"),
                )
                .fix(fix)
            }
            Route::NoGateway => {
                let fix = "on the machine with the browser, run `him doctor`: it says why the \
                           gateway is not running there, and how to start it";
                note(
                    3,
                    "no gateway answers on the machine with the browser".into(),
                    fix,
                );
                Finding::new(
                    Status::Warn,
                    format!(
                        "{shown}: the SSH connection is up, but no gateway answers on the machine \
                         with the browser (`him gateway` is not running there)"
                    ),
                )
                .fix(fix)
            }
            Route::NoBrowser(machine) => {
                let fix = format!("open the browser on {machine}");
                note(4, format!("no browser with him is open on {machine}"), &fix);
                Finding::new(
                    Status::Warn,
                    format!(
                        "{shown}: the gateway on {machine} answers, but no browser with him is \
                         open there"
                    ),
                )
                .fix(fix)
            }
            Route::Live(w) => {
                let machine = w.host.machine.unwrap_or_else(|| "another machine".into());
                let panel = if w.panel_open {
                    "side panel open"
                } else {
                    "side panel closed"
                };
                let finding = Finding::new(
                    Status::Pass,
                    format!(
                        "the panel is reached through SSH, from {machine} ({panel}; forwarded \
                         socket {shown})"
                    ),
                );
                reached_from.get_or_insert(machine);
                finding
            }
        };
        findings.push(finding);
    }
    if reached_from.is_some() {
        problem = None;
    } else if problem.is_none() {
        let fix = "from the machine with the browser, connect: `ssh <this host>` (the block \
                   `him remote <this host> --write` wrote there forwards the panel), or open a \
                   folder here with VS Code Remote-SSH";
        findings.push(
            Finding::new(Status::Warn, "no SSH connection forwards a panel here now").fix(fix),
        );
        problem = Some((
            0,
            "no SSH connection forwards a panel here now".into(),
            fix.into(),
        ));
    }
    Some(Forwarded {
        findings,
        reached_from,
        problem: problem.map(|(_, what, fix)| (what, fix)),
    })
}
