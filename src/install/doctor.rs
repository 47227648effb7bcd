//! `him doctor`: checks, in the order the side panel needs them, everything `him install`
//! set up and everything the host needs at run time, and says how to fix what fails.
//!
//! ```text
//! Binary             this binary, and whether its path will last
//! Browser manifests  per browser: present, JSON, name = file, stdio, absolute path to this
//!                    binary, the extension allowed (the browser's own error text alongside)
//! Runtime directory  DESIGN.md §1: ours, mode 0700
//! Browser connection live host sockets, asked `hello` → `welcome` (extension id, version)
//! Sandboxed browsers Snap and Flatpak browsers, which cannot start native hosts
//! ```
//!
//! The checks gather [`Finding`]s; rendering is separate, so tests read the findings and
//! the command prints them. The side panel "cannot work" — exit 1 — when no browser has a
//! valid manifest (and no host is connected), or the runtime directory would be refused.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

mod forwarding;

use super::browsers::{self, Layout, Os};
use super::{Context, INSTALL_FOR_GOOD, him_command, looks_temporary, manifest};
use crate::cli::Browser;
use crate::wire::link::handshake::{self, NoWelcome};
use crate::wire::protocol::Welcome;
use crate::{BoxError, EXTENSION_ID, HOST_NAME};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pass,
    Warn,
    Fail,
    /// Not applicable here (a browser that is not installed).
    Skip,
}

impl Status {
    fn symbol(self) -> &'static str {
        match self {
            Status::Pass => "✓",
            Status::Warn => "⚠",
            Status::Fail => "✗",
            Status::Skip => "·",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub status: Status,
    pub text: String,
    /// What exactly is wrong, one item a line.
    pub details: Vec<String>,
    /// The command or step that fixes it (a hint, for warnings).
    pub fix: Option<String>,
}

impl Finding {
    pub fn new(status: Status, text: impl Into<String>) -> Finding {
        Finding {
            status,
            text: text.into(),
            details: Vec::new(),
            fix: None,
        }
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Finding {
        self.fix = Some(fix.into());
        self
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Finding {
        self.details.push(detail.into());
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub title: &'static str,
    pub findings: Vec<Finding>,
}

pub fn render(sections: &[Section]) -> String {
    let mut out = String::new();
    for section in sections {
        let _ = writeln!(out, "{}", section.title);
        for f in &section.findings {
            let _ = writeln!(out, "  {} {}", f.status.symbol(), f.text);
            for d in &f.details {
                let _ = writeln!(out, "      {d}");
            }
            if let Some(fix) = &f.fix {
                let label = if f.status == Status::Fail {
                    "fix"
                } else {
                    "hint"
                };
                let _ = writeln!(out, "      {label}: {fix}");
            }
        }
        out.push('\n');
    }
    out
}

pub fn run(http: SocketAddr) -> Result<ExitCode, BoxError> {
    let ctx = Context::from_env()?;
    let uid = crate::wire::runtime::current_uid();
    let located = crate::wire::runtime::runtime_dir()?;
    let him = him_command(&ctx.exe);

    let binary = check_binary(&ctx.exe);
    let (manifests, valid) = check_manifests(&ctx.layout, &ctx.exe, &him);
    let (mut runtime_findings, runtime_ok) =
        check_runtime_dir(&located.dir, located.rule.describe(), uid);
    for also in &located.also {
        runtime_findings.push(Finding::new(
            Status::Pass,
            format!(
                "agents also look in {} ($XDG_RUNTIME_DIR of this shell); MCP clients often \
                 start him without it, so a browser's host listens in the directory above",
                also.display()
            ),
        ));
    }
    let forwarded = forwarding::check_forwarded(located.forwarded.as_deref());
    // A machine that SSH forwards another machine's panel to needs no browser of its own.
    let (connection, local_live) = check_connection(&located.search(), forwarded.is_none());
    let reached_from = forwarded.as_ref().and_then(|f| f.reached_from.clone());
    let live = local_live || reached_from.is_some();
    let sandboxed = if ctx.layout.os == Os::Linux {
        check_sandboxed(Path::new("/"), &ctx.layout.home)
    } else {
        Vec::new()
    };

    let mut tokens = check_http_tokens(crate::platform::state_dir::state_dir().as_deref(), uid);
    tokens.push(check_http_port(
        http,
        crate::loopback_http::owner::listener_uid(http),
        uid,
    ));

    let mut sections = vec![
        Section {
            title: "Binary",
            findings: binary,
        },
        Section {
            title: "Browser manifests",
            findings: manifests,
        },
        Section {
            title: "Runtime directory",
            findings: runtime_findings,
        },
        Section {
            title: "Browser connection",
            findings: connection,
        },
    ];
    let through_ssh_only = valid.is_empty() && !local_live;
    let mut forwarding_problem = None;
    if let Some(forwarded) = forwarded {
        sections.push(Section {
            title: "Browsers on other machines (SSH)",
            findings: forwarded.findings,
        });
        forwarding_problem = forwarded.problem.filter(|_| through_ssh_only);
    }
    if crate::host::gateway::enabled() {
        let socket = crate::wire::runtime::gateway_socket(&located.dir);
        sections.push(Section {
            title: "Gateway for agents on other machines (him remote)",
            findings: vec![forwarding::check_gateway(&socket, local_live)],
        });
    }
    if !sandboxed.is_empty() {
        sections.push(Section {
            title: "Sandboxed browsers",
            findings: sandboxed,
        });
    }
    sections.push(Section {
        title: "HTTP tokens (him serve --http)",
        findings: tokens,
    });
    let works = (!valid.is_empty() || live) && runtime_ok;
    let verdict = if works {
        let names: Vec<&str> = valid.iter().map(|b| browsers::display_name(*b)).collect();
        let mut f = Finding::new(Status::Pass, "The side panel can work");
        if !names.is_empty() {
            f.text.push_str(&format!(" in: {}", names.join(", ")));
        } else if let Some(machine) = reached_from.as_deref().filter(|_| through_ssh_only) {
            f.text.push_str(&format!(": through SSH, from {machine}"));
        }
        f
    } else if !runtime_ok {
        Finding::new(
            Status::Fail,
            "The side panel cannot work: the runtime directory would be refused",
        )
        .fix("see Runtime directory above")
    } else if let Some((what, fix)) = forwarding_problem {
        // Forwarding leads here: installing a browser here is not the fix.
        Finding::new(
            Status::Fail,
            format!("The side panel cannot be reached from here now: {what}"),
        )
        .fix(fix)
    } else {
        Finding::new(
            Status::Fail,
            "The side panel cannot work: no browser has a valid him manifest",
        )
        .fix(format!(
            "load the extension, then run `{him} install` (or `{him} install --browser NAME`)"
        ))
    };
    let summary = Section {
        title: "Summary",
        findings: vec![verdict],
    };
    let matrix = matrix_section(&ctx.exe);

    let mut out = io::stdout().lock();
    writeln!(out, "him doctor (him {})\n", env!("CARGO_PKG_VERSION"))?;
    out.write_all(render(&sections).as_bytes())?;
    out.write_all(matrix.as_bytes())?;
    out.write_all(render(&[summary]).as_bytes())?;
    Ok(if works {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The Matrix section, when a bot is logged in: `him-matrix doctor`'s report (the Matrix code
/// lives in that binary only), or why it could not run.
fn matrix_section(exe: &Path) -> String {
    let logged_in =
        crate::agent::matrix::state_dir().is_some_and(|dir| dir.join("session.json").is_file());
    if !logged_in {
        return String::new();
    }
    let matrix = exe.with_file_name("him-matrix");
    match std::process::Command::new(&matrix)
        .arg("doctor")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    {
        Ok(output) => String::from_utf8_lossy(&output.stdout).into_owned(),
        Err(err) => render(&[Section {
            title: "Matrix (answering from your phone)",
            findings: vec![
                Finding::new(
                    Status::Fail,
                    format!("cannot run {}: {}", matrix.display(), plain(&err)),
                )
                .fix("install the Matrix bridge beside him: cargo install --path matrix (in him's source folder)"),
            ],
        }]),
    }
}

/// Where `him serve --http` keeps its tokens, and whether it would accept that directory
/// (`mcp/http/token.rs` refuses one that is not ours or that others can open). It is not
/// needed for the side panel, so it never fails the summary.
pub fn check_http_tokens(
    state_dir: Result<&Path, &crate::platform::state_dir::NoStateDir>,
    uid: u32,
) -> Vec<Finding> {
    use std::os::unix::fs::MetadataExt;
    let dir = match state_dir {
        Ok(dir) => dir,
        Err(why) => {
            return vec![
                Finding::new(
                    Status::Warn,
                    format!("no directory for HTTP tokens or kept answers: {why}"),
                )
                .fix(match why {
                    crate::platform::state_dir::NoStateDir::Relative(_) => {
                        "make HIM_STATE_DIR absolute (the same value for every him process)"
                    }
                    crate::platform::state_dir::NoStateDir::NoHome => {
                        "set HIM_STATE_DIR, or give the token in HIM_HTTP_TOKEN"
                    }
                }),
            ];
        }
    };
    match std::fs::symlink_metadata(dir) {
        Err(_) => vec![Finding::new(
            Status::Pass,
            format!(
                "HTTP tokens will be kept in {} (made, private, by the first `him serve --http`)",
                dir.display()
            ),
        )],
        Ok(meta) if meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0 => {
            vec![Finding::new(
                Status::Pass,
                format!("HTTP tokens are kept in {}", dir.display()),
            )]
        }
        Ok(meta) => vec![
            Finding::new(
                Status::Warn,
                format!(
                    "him serve --http would refuse its token directory {}",
                    dir.display()
                ),
            )
            .detail(format!(
                "owner uid {}, mode {:o}; it must be a directory of yours (uid {uid}) that only \
                 you can open",
                meta.uid(),
                meta.mode() & 0o7777
            ))
            .fix(format!("chmod 700 {}", dir.display())),
        ],
    }
}

/// Who holds the `--http` port. Another user's listener there is how a client's token is
/// stolen: the client sends it to whoever answers on the address it was given.
pub fn check_http_port(addr: SocketAddr, holder: Result<Option<u32>, String>, uid: u32) -> Finding {
    match holder {
        Ok(None) => Finding::new(
            Status::Pass,
            format!("nothing listens on {addr} now; `him serve --http` may take it"),
        ),
        Ok(Some(owner)) if owner == uid => Finding::new(
            Status::Pass,
            format!("{addr} is held by a process of yours (`him serve --http`, presumably)"),
        ),
        Ok(Some(owner)) => Finding::new(
            Status::Warn,
            format!("{addr} is held by another user (uid {owner}), not by you"),
        )
        .detail("an MCP client configured for this address sends its bearer token to that process")
        .fix(format!(
            "do not start clients for {addr}; serve on a free port (`him serve --http \
             127.0.0.1:PORT`, then `him config`) and ask who runs uid {owner}"
        )),
        Err(why) => Finding::new(Status::Skip, format!("cannot tell who holds {addr}: {why}")),
    }
}

fn check_binary(exe: &Path) -> Vec<Finding> {
    let mut findings = vec![Finding::new(
        Status::Pass,
        format!("him {} at {}", env!("CARGO_PKG_VERSION"), exe.display()),
    )];
    if let Some(why) = looks_temporary(exe, &std::env::temp_dir()) {
        findings.push(
            Finding::new(
                Status::Warn,
                format!("this binary is in {why}; manifests that point here break when it goes"),
            )
            .fix(INSTALL_FOR_GOOD),
        );
    }
    findings
}

/// One finding per browser, and the browsers whose manifest is valid.
pub fn check_manifests(layout: &Layout, exe: &Path, him: &str) -> (Vec<Finding>, Vec<Browser>) {
    let mut findings = Vec::new();
    let mut valid = Vec::new();
    for browser in browsers::ALL {
        let (finding, ok) = check_manifest(browser, layout, exe, him);
        if ok {
            valid.push(browser);
        }
        findings.push(finding);
    }
    (findings, valid)
}

/// Checks one browser's manifest on disk; `true` when the browser can start this host.
pub fn check_manifest(browser: Browser, layout: &Layout, exe: &Path, him: &str) -> (Finding, bool) {
    let name = browsers::display_name(browser);
    let own = browsers::manifest_path(browser, layout);
    // The user's own manifest, else the one a package put there for every user.
    let path = match browsers::system_manifest_path(browser, layout) {
        Some(system) if !own.exists() && system.is_file() => system,
        _ => own,
    };
    let reinstall = format!(
        "run `{him} install --browser {}`",
        browsers::cli_name(browser)
    );
    let says = |e: &str| format!("the browser says: \"{e}\"");

    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            if browsers::detected_on_disk(browser, layout) {
                let f = Finding::new(
                    Status::Fail,
                    format!("{name}: no him manifest at {}", path.display()),
                )
                .detail(says("Specified native messaging host not found."))
                .fix(reinstall);
                return (f, false);
            }
            let dirs: Vec<String> = browsers::detection_dirs(browser, layout)
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            let f = Finding::new(
                Status::Skip,
                format!(
                    "{name}: not installed for this user (no {})",
                    dirs.join(" or ")
                ),
            );
            return (f, false);
        }
        Err(err) => {
            let f = Finding::new(
                Status::Fail,
                format!("{name}: cannot read {}: {err}", path.display()),
            )
            .fix(format!("make the file readable, or {reinstall}"));
            return (f, false);
        }
    };

    let file_name = format!("{HOST_NAME}.json");
    let checked = manifest::check(&text, &file_name, browsers::family(browser));
    let mut details: Vec<String> = Vec::new();
    let mut errors: Vec<&'static str> = Vec::new();
    for p in &checked.problems {
        details.push(p.to_string());
        if let Some(e) = p.browser_error() {
            errors.push(e);
        }
    }
    let mut other_binary = None;
    if let Some(host) = &checked.host_path {
        match inspect_host(Path::new(host), exe) {
            HostFile::ThisBinary => {}
            HostFile::Missing => {
                details.push(format!("\"path\" is {host}, which does not exist"));
                errors.push("Native host has exited.");
            }
            HostFile::NotExecutable => {
                details.push(format!(
                    "\"path\" is {host}, which is not an executable file"
                ));
                errors.push("Native host has exited.");
            }
            HostFile::Other(found) => other_binary = Some(found),
        }
    }

    if !details.is_empty() {
        errors.dedup();
        let mut f =
            Finding::new(Status::Fail, format!("{name}: {}", path.display())).fix(reinstall);
        f.details = details;
        f.details.extend(errors.into_iter().map(says));
        return (f, false);
    }
    if let Some(found) = other_binary {
        let f = Finding::new(Status::Warn, format!("{name}: {}", path.display()))
            .detail(format!(
                "starts {}, not this binary ({})",
                found.display(),
                exe.display()
            ))
            .fix(format!(
                "if the browser should start this binary, {reinstall}"
            ));
        return (f, true);
    }
    (
        Finding::new(Status::Pass, format!("{name}: {}", path.display())),
        true,
    )
}

enum HostFile {
    ThisBinary,
    Missing,
    NotExecutable,
    /// Another executable: the browser will start that one.
    Other(PathBuf),
}

fn inspect_host(host: &Path, exe: &Path) -> HostFile {
    let Ok(meta) = std::fs::metadata(host) else {
        return HostFile::Missing;
    };
    if !meta.is_file() || !is_executable(&meta) {
        return HostFile::NotExecutable;
    }
    let canonical = host.canonicalize().unwrap_or_else(|_| host.to_path_buf());
    if canonical == exe {
        HostFile::ThisBinary
    } else {
        HostFile::Other(canonical)
    }
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    true
}

/// Whether the runtime directory is one the host and agents will use: ours, and not
/// writable by anyone else. `false` means they would refuse it.
#[cfg(unix)]
pub fn check_runtime_dir(dir: &Path, source: &str, uid: u32) -> (Vec<Finding>, bool) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    let shown = format!("{} (chosen by {source})", dir.display());
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            let f = Finding::new(
                Status::Pass,
                format!(
                    "{shown} does not exist yet; the host creates it (mode 0700) when the browser starts it"
                ),
            );
            return (vec![f], true);
        }
        Err(err) => {
            let f = Finding::new(Status::Fail, format!("{shown}: cannot read it: {err}"))
                .fix("set HIM_RUNTIME_DIR to a directory of your own");
            return (vec![f], false);
        }
    };
    if !meta.is_dir() {
        let f = Finding::new(Status::Fail, format!("{shown} is not a directory")).fix(format!(
            "remove {}, or set HIM_RUNTIME_DIR to a directory of your own",
            dir.display()
        ));
        return (vec![f], false);
    }
    let mode = meta.permissions().mode() & 0o777;
    // The verdict is the runtime module's, the one the host and agents apply.
    if let Err(err) = crate::wire::runtime::check_owner_and_mode(dir, meta.uid(), mode, uid) {
        use crate::wire::runtime::RuntimeError;
        let chmod = format!(
            "chmod 700 {}",
            super::clients::shell_quote(&dir.to_string_lossy())
        );
        let (text, fix) = match err {
            RuntimeError::TooOpen { mode, .. } => (
                format!(
                    "{shown} has mode {mode:04o}: group or others can get in, so him refuses it"
                ),
                chmod,
            ),
            RuntimeError::NotOurs { owner, .. } => (
                format!("{shown} belongs to uid {owner}, not to you (uid {uid}); him refuses it"),
                "set HIM_RUNTIME_DIR to a directory of your own".to_owned(),
            ),
            other => (
                format!("{shown}: {other}"),
                "set HIM_RUNTIME_DIR to a directory of your own".to_owned(),
            ),
        };
        let f = Finding::new(Status::Fail, text).fix(fix);
        return (vec![f], false);
    }
    if mode != 0o700 {
        let f = Finding::new(
            Status::Warn,
            format!(
                "{shown} has mode {mode:04o}, not 0700; hosts may fail to publish their sockets"
            ),
        )
        .fix(format!(
            "chmod 700 {}",
            super::clients::shell_quote(&dir.to_string_lossy())
        ));
        return (vec![f], true);
    }
    (
        vec![Finding::new(
            Status::Pass,
            format!("{shown}: yours, mode 0700"),
        )],
        true,
    )
}

#[cfg(not(unix))]
pub fn check_runtime_dir(dir: &Path, source: &str, _uid: u32) -> (Vec<Finding>, bool) {
    let f = Finding::new(
        Status::Skip,
        format!(
            "{} (chosen by {source}): not checked on this OS",
            dir.display()
        ),
    );
    (vec![f], true)
}

/// How long the doctor waits for a host to answer. A host answers `hello` at once.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What the doctor says of a host that gave no `welcome` (the handshake's reason, with a
/// silence named by the doctor's own wait).
pub fn no_welcome(why: &NoWelcome) -> String {
    match why {
        _ if why.is_silent() => format!(
            "gave no answer to hello within {} s",
            PROBE_TIMEOUT.as_secs()
        ),
        NoWelcome::Io(err) => format!("cannot reach it: {}", plain(err)),
        other => other.to_string(),
    }
}

/// A failed system call in words, without its "(os error N)".
pub fn plain(err: &io::Error) -> String {
    let words = match err.raw_os_error() {
        Some(code) => nix::errno::Errno::from_raw(code).desc().to_owned(),
        None => err.kind().to_string(),
    };
    let mut chars = words.chars();
    chars.next().map_or(words.clone(), |first| {
        first.to_lowercase().chain(chars).collect()
    })
}

/// Says the doctor's `hello` and reads the `welcome` (the shared handshake).
pub fn hello_welcome(stream: &mut (impl Read + Write)) -> Result<Welcome, NoWelcome> {
    use crate::wire::protocol::{self, AgentInfo, AgentToHost, PROTOCOL};

    let hello = protocol::encode(&AgentToHost::Hello {
        protocol: PROTOCOL,
        agent: AgentInfo {
            name: "him doctor".into(),
            title: None,
            version: Some(env!("CARGO_PKG_VERSION").into()),
            via: None,
        },
        project: None,
        pid: std::process::id(),
        // It asks nothing, so it has no answers to judge.
        verdicts: false,
        machine: None,
    });
    handshake::welcome_sync(stream, &hello)
}

#[derive(Debug)]
pub enum Probe {
    Live(Welcome),
    /// Accepted the connection but did not answer as a him host.
    Silent(String),
    /// Nothing listens there: a host that died without cleaning up.
    Stale(String),
}

#[cfg(unix)]
pub fn probe(sock: &Path) -> Probe {
    use std::os::unix::net::UnixStream;
    let mut stream = match UnixStream::connect(sock) {
        Ok(s) => s,
        Err(err) => return Probe::Stale(plain(&err)),
    };
    let _ = stream.set_read_timeout(Some(PROBE_TIMEOUT));
    let _ = stream.set_write_timeout(Some(PROBE_TIMEOUT));
    match hello_welcome(&mut stream) {
        Ok(w) => Probe::Live(w),
        Err(why) => Probe::Silent(no_welcome(&why)),
    }
}

#[cfg(not(unix))]
pub fn probe(_sock: &Path) -> Probe {
    Probe::Silent("not supported on this OS yet".to_owned())
}

/// One finding per host socket in any directory agents search (or, when there is none, a
/// warning if a browser is `needed` here, a note if not); `true` when a host answered.
pub fn check_connection(search: &[PathBuf], needed: bool) -> (Vec<Finding>, bool) {
    let socks: Vec<PathBuf> = search
        .iter()
        .flat_map(|dir| crate::wire::runtime::list_host_sockets(dir))
        .collect();
    let mut findings = Vec::new();
    let mut live = false;
    for sock in &socks {
        match probe(sock) {
            Probe::Live(w) => {
                live = true;
                findings.extend(describe_live(sock, &w));
            }
            Probe::Silent(why) => findings.push(
                Finding::new(Status::Warn, format!("{}: a process listens there but {why}", sock.display()))
                    .fix("restart the browser so it starts the installed him"),
            ),
            Probe::Stale(why) => findings.push(Finding::new(
                Status::Warn,
                format!("{}: no host listens there ({why}); a stale socket, which the next agent removes", sock.display()),
            )),
        }
    }
    if !live && needed {
        findings.push(
            Finding::new(Status::Warn, "no browser is connected now")
                .fix("open the browser where the him extension is loaded: the extension connects when the browser starts"),
        );
    } else if !live {
        findings.push(Finding::new(
            Status::Skip,
            "no browser runs on this machine, and none is needed: agents here reach the panel \
             of another machine through SSH (below)",
        ));
    }
    (findings, live)
}

fn describe_live(sock: &Path, w: &Welcome) -> Vec<Finding> {
    let host = match w.host.pid {
        Some(pid) => format!("host pid {pid} (him {})", w.host.version),
        None => format!("host him {} at {}", w.host.version, sock.display()),
    };
    let ext = match &w.extension {
        Some(e) => format!("extension {} version {}", e.id, e.version),
        None => "extension not ready yet".to_owned(),
    };
    let panel = if w.panel_open {
        ", side panel open"
    } else {
        ", side panel closed"
    };
    let mut f = Finding::new(
        Status::Pass,
        format!("browser connected: {host}, {ext}{panel}"),
    );
    if w.extension.as_ref().is_some_and(|e| e.id != EXTENSION_ID) {
        f = f.detail(format!(
            "this is not the published extension id ({EXTENSION_ID}): an unpacked copy allowed with --extension-id"
        ));
    }
    let mut out = vec![f];
    let v = &w.host.version;
    if v != env!("CARGO_PKG_VERSION") {
        out.push(
            Finding::new(
                Status::Warn,
                format!(
                    "the running host is him {v}, this binary is him {}",
                    env!("CARGO_PKG_VERSION")
                ),
            )
            .fix("restart the browser (or reload the extension) so it starts this version"),
        );
    }
    out
}

/// One warning per Snap or Flatpak browser, each with what to install instead.
pub fn check_sandboxed(root: &Path, home: &Path) -> Vec<Finding> {
    browsers::sandboxed_on_disk(root, home)
        .into_iter()
        .map(|s| {
            let name = browsers::display_name(s.browser);
            Finding::new(
                Status::Warn,
                format!(
                    "{} {name} ({}) cannot start native-messaging hosts: the side panel cannot reach him from it",
                    s.kind.name(),
                    s.evidence.display()
                ),
            )
            .fix(format!(
                "use a {name} installed from a .deb/.rpm or the vendor's package instead (on Ubuntu, \
                 `apt install chromium` installs the snap again); then run `him install`"
            ))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_welcome_is_read_after_hello() {
        // The stream replays the host's side; what we wrote is checked afterwards.
        struct Duplex {
            input: io::Cursor<Vec<u8>>,
            output: Vec<u8>,
        }
        impl Read for Duplex {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.input.read(buf)
            }
        }
        impl Write for Duplex {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                self.output.write(buf)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let frame = |json: &str| {
            let mut f = (json.len() as u32).to_ne_bytes().to_vec();
            f.extend_from_slice(json.as_bytes());
            f
        };
        let mut input = frame(r#"{"type":"shown","id":"x"}"#);
        input.extend(frame(
            r#"{"type":"welcome","protocol":1,"host":{"version":"0.1.0","pid":42},
               "extension":{"id":"mephldgjjmdajmfkonfbblipccnbagig","version":"0.2.0"},"panel_open":true}"#,
        ));
        let mut s = Duplex {
            input: io::Cursor::new(input),
            output: Vec::new(),
        };
        let w = hello_welcome(&mut s).unwrap();
        assert_eq!(w.host.pid, Some(42));
        assert_eq!(w.extension.map(|e| e.version).as_deref(), Some("0.2.0"));
        assert!(w.panel_open);
        let len = u32::from_ne_bytes(s.output[..4].try_into().unwrap()) as usize;
        let hello: serde_json::Value = serde_json::from_slice(&s.output[4..4 + len]).unwrap();
        assert_eq!(hello["type"], "hello");
        assert_eq!(hello["protocol"], 1);
        assert_eq!(hello["agent"]["name"], "him doctor");
    }

    #[test]
    fn a_failed_call_is_told_in_words_without_its_number() {
        let err = io::Error::from_raw_os_error(32);
        assert_eq!(plain(&err), "broken pipe");
        assert!(!err.to_string().starts_with("broken"), "{err}");
        assert_eq!(plain(&io::Error::other("x")), "other error");
    }

    #[test]
    fn a_host_that_closes_without_welcome_is_described() {
        let mut s = io::Cursor::new(Vec::new());
        // Writing to a cursor works; reading then hits EOF at once.
        assert!(matches!(
            hello_welcome(&mut s).unwrap_err(),
            NoWelcome::Closed
        ));
    }

    #[test]
    fn another_users_listener_on_the_http_port_is_warned_about() {
        let addr: SocketAddr = "127.0.0.1:7676".parse().expect("address");
        assert_eq!(check_http_port(addr, Ok(None), 1000).status, Status::Pass);
        assert_eq!(
            check_http_port(addr, Ok(Some(1000)), 1000).status,
            Status::Pass
        );
        let theirs = check_http_port(addr, Ok(Some(1001)), 1000);
        assert_eq!(theirs.status, Status::Warn);
        assert!(theirs.text.contains("uid 1001"), "{theirs:?}");
        assert!(theirs.details[0].contains("bearer token"), "{theirs:?}");
        assert_eq!(
            check_http_port(addr, Err("no /proc".into()), 1000).status,
            Status::Skip
        );
    }

    #[test]
    fn the_http_token_directory_is_named_and_an_open_one_is_warned_about() {
        use std::os::unix::fs::PermissionsExt;
        let uid = crate::wire::runtime::current_uid();
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("him");
        let missing = check_http_tokens(Ok(&dir), uid);
        assert_eq!(missing[0].status, Status::Pass);
        assert!(missing[0].text.contains(&dir.display().to_string()));
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(check_http_tokens(Ok(&dir), uid)[0].status, Status::Pass);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let open = &check_http_tokens(Ok(&dir), uid)[0];
        assert_eq!(open.status, Status::Warn);
        assert!(open.fix.as_deref().is_some_and(|f| f.contains("chmod 700")));
        assert_eq!(check_http_tokens(Ok(&dir), uid + 1)[0].status, Status::Warn);
        assert_eq!(
            check_http_tokens(Err(&crate::platform::state_dir::NoStateDir::NoHome), uid)[0].status,
            Status::Warn
        );
        let relative = crate::platform::state_dir::NoStateDir::Relative("state".into());
        let relative = &check_http_tokens(Err(&relative), uid)[0];
        assert_eq!(relative.status, Status::Warn);
        assert!(
            relative
                .fix
                .as_deref()
                .is_some_and(|f| f.contains("make HIM_STATE_DIR absolute")),
            "{:?}",
            relative.fix
        );
    }

    #[test]
    fn findings_render_with_symbols_and_fixes() {
        let text = render(&[Section {
            title: "T",
            findings: vec![
                Finding::new(Status::Fail, "bad")
                    .detail("why")
                    .fix("do this"),
                Finding::new(Status::Warn, "meh").fix("maybe"),
                Finding::new(Status::Pass, "good"),
            ],
        }]);
        assert_eq!(
            text,
            "T\n  ✗ bad\n      why\n      fix: do this\n  ⚠ meh\n      hint: maybe\n  ✓ good\n\n"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_group_writable_runtime_dir_is_refused_and_a_private_one_passes() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        std::fs::create_dir(&dir).unwrap();
        let uid = crate::wire::runtime::current_uid();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770)).unwrap();
        let (f, ok) = check_runtime_dir(&dir, "test", uid);
        assert!(!ok);
        assert_eq!(f[0].status, Status::Fail);
        assert!(f[0].fix.as_deref().unwrap().starts_with("chmod 700 "));
        // Others may not even enter it (DESIGN.md §1).
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (f, ok) = check_runtime_dir(&dir, "test", uid);
        assert!(!ok);
        assert_eq!(f[0].status, Status::Fail);
        // Owner-only but unusual: works, with a warning.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o500)).unwrap();
        let (f, ok) = check_runtime_dir(&dir, "test", uid);
        assert!(ok);
        assert_eq!(f[0].status, Status::Warn);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let (f, ok) = check_runtime_dir(&dir, "test", uid);
        assert!(ok);
        assert_eq!(f[0].status, Status::Pass);
        let (f, ok) = check_runtime_dir(&dir, "test", uid + 1);
        assert!(!ok);
        assert!(f[0].text.contains("not to you"));
    }
}
