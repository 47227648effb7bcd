//! The runtime directory where hosts publish their sockets (DESIGN.md §1), and the rules
//! that keep it private: 0700 directories owned by us, 0600 sockets, peers of our own uid.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum RuntimeError {
    /// The directory exists but belongs to someone else: another user could read our
    /// questions or plant sockets.
    NotOurs {
        path: PathBuf,
        owner: u32,
    },
    /// Group or others may write (or read) it.
    TooOpen {
        path: PathBuf,
        mode: u32,
    },
    NotADirectory(PathBuf),
    Io {
        path: PathBuf,
        err: io::Error,
    },
}

impl std::fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuntimeError::NotOurs { path, owner } => write!(
                f,
                "runtime directory {} belongs to uid {owner}, not to you (uid {}); \
                 remove it or set HIM_RUNTIME_DIR to a directory of your own",
                path.display(),
                current_uid()
            ),
            RuntimeError::TooOpen { path, mode } => write!(
                f,
                "runtime directory {} has mode {mode:o}: group or others can get in; run `chmod 700 {}`",
                path.display(),
                path.display()
            ),
            RuntimeError::NotADirectory(path) => {
                write!(
                    f,
                    "runtime path {} exists but is not a directory",
                    path.display()
                )
            }
            RuntimeError::Io { path, err } => write!(f, "{}: {err}", path.display()),
        }
    }
}

impl std::error::Error for RuntimeError {}

/// Which rule of DESIGN.md §1 chose the runtime directory, for `him doctor` and
/// `human_input_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// `HIM_RUNTIME_DIR`, the explicit override.
    Override,
    /// `/run/user/<uid>`, the login session's private directory (systemd-logind).
    LoginSession,
    /// macOS's per-user temporary folder.
    DarwinTemp,
    /// A folder under the home directory of the password database, for machines with no
    /// per-user runtime directory.
    Home,
}

impl Rule {
    /// A phrase that completes "the runtime directory was chosen by …".
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Override => "HIM_RUNTIME_DIR",
            Rule::LoginSession => "the login session's runtime directory /run/user/<uid>",
            Rule::DarwinTemp => "the per-user temporary folder of macOS",
            Rule::Home => "the home-folder rule, as this machine has no private /run/user/<uid>",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Rule::Override => "HIM_RUNTIME_DIR",
            Rule::LoginSession => "login-session",
            Rule::DarwinTemp => "macos-user-temp",
            Rule::Home => "home",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Linux,
    MacOs,
    /// Other Unix systems: no per-user runtime directory the OS promises.
    OtherUnix,
}

impl Platform {
    pub const fn current() -> Platform {
        if cfg!(target_os = "linux") {
            Platform::Linux
        } else if cfg!(target_os = "macos") {
            Platform::MacOs
        } else {
            Platform::OtherUnix
        }
    }
}

/// What the rule of §1 looks at. Everything but the override comes from the uid, the OS
/// and the password database, never from variables that MCP clients strip (`XDG_RUNTIME_DIR`,
/// `TMPDIR`, `HOME`): both ends must reach the same answer whatever environment they got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub him_runtime_dir: Option<OsString>,
    /// Not used to choose: agents also search `$XDG_RUNTIME_DIR/him` when it differs.
    pub xdg_runtime_dir: Option<OsString>,
    pub uid: u32,
    pub platform: Platform,
    /// Owner and mode of `/run/user/<uid>`, when that is a directory.
    pub login_session_dir: Option<(u32, u32)>,
    pub darwin_temp: Option<PathBuf>,
    /// The home directory in the password database (`$HOME` only if there is no entry).
    pub home: Option<PathBuf>,
    pub hostname: Option<String>,
}

/// Where hosts listen and agents look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Where a host listens, and the first place agents look.
    pub dir: PathBuf,
    pub rule: Rule,
    /// Further directories agents search (`$XDG_RUNTIME_DIR/him` when set and different),
    /// for a host whose environment pointed elsewhere.
    pub also: Vec<PathBuf>,
    /// Where SSH lands the sockets it forwards from other machines' gateways (`him remote`),
    /// which agents search too. Under the home folder whatever rule chose `dir`: sshd binds
    /// there before any login session has made `/run/user/<uid>`, and creates no folders.
    pub forwarded: Option<PathBuf>,
}

impl Located {
    /// Every directory an agent searches, `dir` first. An empty `dir` (no rule applied,
    /// see `Config::from_env`) is no directory, not the current one.
    pub fn search(&self) -> Vec<PathBuf> {
        std::iter::once(self.dir.clone())
            .filter(|dir| !dir.as_os_str().is_empty())
            .chain(self.also.iter().cloned())
            .collect()
    }
}

/// No rule of §1 applies: no override, no per-user directory, and no home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoRuntimeDir {
    pub uid: u32,
}

impl std::fmt::Display for NoRuntimeDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no runtime directory for uid {}: no private /run/user/{0}, and no home directory in \
             the password database or $HOME; set HIM_RUNTIME_DIR to a private directory (the \
             browser's host needs the same value)",
            self.uid
        )
    }
}

impl std::error::Error for NoRuntimeDir {}

pub fn login_session_dir(uid: u32) -> PathBuf {
    PathBuf::from(format!("/run/user/{uid}"))
}

/// The rule of DESIGN.md §1, pure: the probe in, the directory and its rule out.
pub fn locate(probe: &Probe) -> Result<Located, NoRuntimeDir> {
    if let Some(dir) = probe.him_runtime_dir.as_ref().filter(|v| !v.is_empty()) {
        // An explicit choice is the only place: tests and unusual set-ups must not find
        // hosts elsewhere.
        let dir = PathBuf::from(dir);
        return Ok(Located {
            forwarded: Some(dir.join(FORWARDED)),
            dir,
            rule: Rule::Override,
            also: Vec::new(),
        });
    }
    let home_rule_dir = probe
        .home
        .as_ref()
        .filter(|h| h.is_absolute() && *h != Path::new("/"))
        .map(|home| {
            // The host name keeps machines that share an NFS home apart: a socket is only
            // good on the machine whose host made it.
            let host = sanitized_hostname(probe.hostname.as_deref());
            home.join(".local/state/him/run").join(host)
        });
    let private_login_session = probe
        .login_session_dir
        .is_some_and(|(owner, mode)| owner == probe.uid && mode & 0o077 == 0);
    let (dir, rule) = match probe.platform {
        Platform::Linux if private_login_session => {
            (login_session_dir(probe.uid).join("him"), Rule::LoginSession)
        }
        Platform::MacOs if probe.darwin_temp.as_ref().is_some_and(|d| d.is_absolute()) => {
            let temp = probe.darwin_temp.as_ref().map(|d| d.join("him"));
            (temp.unwrap_or_default(), Rule::DarwinTemp)
        }
        _ => {
            let dir = home_rule_dir
                .clone()
                .ok_or(NoRuntimeDir { uid: probe.uid })?;
            (dir, Rule::Home)
        }
    };
    let forwarded = home_rule_dir.map(|dir| dir.join(FORWARDED));
    // The XDG spec requires an absolute path; a relative one is ignored, as other programs do.
    let also = probe
        .xdg_runtime_dir
        .as_ref()
        .map(PathBuf::from)
        .filter(|x| x.is_absolute())
        .map(|x| x.join("him"))
        .filter(|x| *x != dir)
        .into_iter()
        .collect();
    Ok(Located {
        dir,
        rule,
        also,
        forwarded,
    })
}

/// The folder name, beside `hosts/`, where forwarded gateway sockets land.
const FORWARDED: &str = "forwarded";

/// A host name usable as one path component.
fn sanitized_hostname(hostname: Option<&str>) -> String {
    let name: String = hostname
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        // Short enough that the socket path stays within `sun_path` for ordinary homes.
        .take(32)
        .collect();
    match name.trim_start_matches('.') {
        "" => "localhost".to_owned(),
        name => name.to_owned(),
    }
}

/// The probe of this process: the OS's answers, and the two variables the rule may read.
pub fn probe() -> Probe {
    let uid = current_uid();
    let login_session_dir = fs::metadata(login_session_dir(uid))
        .ok()
        .filter(|m| m.is_dir())
        .map(|m| (m.uid(), m.mode()));
    let home = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|user| user.dir)
        .or_else(|| std::env::var_os("HOME").map(PathBuf::from));
    Probe {
        him_runtime_dir: std::env::var_os("HIM_RUNTIME_DIR"),
        xdg_runtime_dir: std::env::var_os("XDG_RUNTIME_DIR"),
        uid,
        platform: Platform::current(),
        login_session_dir,
        darwin_temp: crate::platform::darwin_user_temp_dir(),
        home,
        hostname: hostname(),
    }
}

/// The runtime directory of this process.
pub fn runtime_dir() -> Result<Located, NoRuntimeDir> {
    locate(&probe())
}

/// Where hosts put their sockets.
pub fn hosts_dir(runtime: &Path) -> PathBuf {
    runtime.join("hosts")
}

pub fn socket_path(runtime: &Path, pid: u32) -> PathBuf {
    hosts_dir(runtime).join(format!("{pid}.sock"))
}

/// The folder of the gateway's one stable socket: its own, so that a container can be
/// given it by a bind mount without seeing the hosts beside it.
pub fn gateway_dir(runtime: &Path) -> PathBuf {
    runtime.join("gateway")
}

/// The gateway's stable socket, the one an SSH forward or a container points at.
pub fn gateway_socket(runtime: &Path) -> PathBuf {
    gateway_dir(runtime).join("gateway.sock")
}

/// The Matrix bridge's folder (`him matrix bridge`: its lock and socket).
pub fn matrix_dir(runtime: &Path) -> PathBuf {
    runtime.join("matrix")
}

/// The Matrix bridge's socket, apart from the browsers' `hosts/`: an agent knows by where it
/// found a host that it is not a browser, before the host says anything.
pub fn matrix_socket(runtime: &Path) -> PathBuf {
    matrix_dir(runtime).join("bridge.sock")
}

/// The sockets SSH forwarded into `dir` (the `forwarded` folder of [`Located`]).
pub fn list_forwarded_sockets(dir: &Path) -> Vec<PathBuf> {
    list_sockets(dir)
}

/// Creates `dir` (and its parents) with mode 0700 if missing, then checks it is ours and
/// private. An existing directory is never loosened or re-owned, only judged.
pub fn ensure_private_dir(dir: &Path) -> Result<(), RuntimeError> {
    let io_err = |err| RuntimeError::Io {
        path: dir.to_owned(),
        err,
    };
    match fs::symlink_metadata(dir) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io_err)?;
        }
        Err(err) => return Err(io_err(err)),
        Ok(_) => {}
    }
    check_private_dir(dir, current_uid())
}

/// The ownership and mode rules of §1, with the expected owner passed in.
pub fn check_private_dir(dir: &Path, uid: u32) -> Result<(), RuntimeError> {
    let meta = fs::symlink_metadata(dir).map_err(|err| RuntimeError::Io {
        path: dir.to_owned(),
        err,
    })?;
    if !meta.is_dir() {
        return Err(RuntimeError::NotADirectory(dir.to_owned()));
    }
    check_owner_and_mode(dir, meta.uid(), meta.mode(), uid)
}

/// Pure form of the rule (DESIGN.md §1): owned by `uid`, and no access at all for group or
/// others — who could otherwise plant or replace sockets, or see which hosts run. New
/// directories are made 0700.
pub fn check_owner_and_mode(
    dir: &Path,
    owner: u32,
    mode: u32,
    uid: u32,
) -> Result<(), RuntimeError> {
    if owner != uid {
        return Err(RuntimeError::NotOurs {
            path: dir.to_owned(),
            owner,
        });
    }
    if mode & 0o077 != 0 {
        return Err(RuntimeError::TooOpen {
            path: dir.to_owned(),
            mode: mode & 0o7777,
        });
    }
    Ok(())
}

/// Restricts a freshly bound socket to its owner. The directory is already private; this
/// is the second fence the design asks for.
pub fn make_socket_private(path: &Path) -> io::Result<()> {
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))
}

/// The sockets currently published in the hosts directory, oldest name first.
pub fn list_host_sockets(runtime: &Path) -> Vec<PathBuf> {
    list_sockets(&hosts_dir(runtime))
}

fn list_sockets(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut sockets: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "sock"))
        .collect();
    sockets.sort();
    sockets
}

/// Whether the process that named this socket (`<pid>.sock`) still runs. A socket that
/// refuses connections while its process lives is one between bind and listen, not stale.
pub fn socket_owner_alive(socket: &Path) -> bool {
    let pid = socket
        .file_stem()
        .and_then(|stem| stem.to_str())
        .and_then(|stem| stem.parse::<i32>().ok())
        .filter(|&pid| pid > 0);
    let Some(pid) = pid else { return false };
    // Signal 0 sends nothing; it only asks whether `pid` exists. EPERM: it does, as another
    // user's process.
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(errno) => errno == nix::errno::Errno::EPERM,
    }
}

/// This machine's host name, as it names itself to other machines.
pub fn hostname() -> Option<String> {
    nix::unistd::gethostname()
        .ok()
        .map(|h| h.to_string_lossy().into_owned())
        .filter(|h| !h.is_empty())
}

/// This process's real uid.
pub fn current_uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Linux login as a browser sees it: logind's directory, and the session's variables.
    fn linux(uid: u32) -> Probe {
        Probe {
            him_runtime_dir: None,
            xdg_runtime_dir: Some(format!("/run/user/{uid}").into()),
            uid,
            platform: Platform::Linux,
            login_session_dir: Some((uid, 0o40700)),
            darwin_temp: None,
            home: Some(PathBuf::from("/home/ada")),
            hostname: Some("box".into()),
        }
    }

    #[test]
    fn the_override_wins_and_is_the_only_place() {
        let probe = Probe {
            him_runtime_dir: Some("/r".into()),
            ..linux(7)
        };
        let located = locate(&probe).unwrap();
        assert_eq!(located.dir, PathBuf::from("/r"));
        assert_eq!(located.rule, Rule::Override);
        assert!(located.also.is_empty());
        // Blank is unset, as for every variable.
        let blank = Probe {
            him_runtime_dir: Some("".into()),
            ..linux(7)
        };
        assert_eq!(locate(&blank).unwrap().rule, Rule::LoginSession);
    }

    #[test]
    fn a_stripped_environment_finds_the_same_directory_as_the_browser() {
        let browser = locate(&linux(1000)).unwrap();
        let client = locate(&Probe {
            xdg_runtime_dir: None,
            home: None,
            ..linux(1000)
        })
        .unwrap();
        assert_eq!(browser.dir, PathBuf::from("/run/user/1000/him"));
        assert_eq!(browser.rule, Rule::LoginSession);
        assert_eq!(client.dir, browser.dir);
        assert!(
            browser.also.is_empty(),
            "the same directory is not searched twice"
        );
    }

    #[test]
    fn a_login_directory_that_is_not_private_or_not_ours_is_passed_over() {
        for login in [Some((1000, 0o40755)), Some((0, 0o40700)), None] {
            let located = locate(&Probe {
                login_session_dir: login,
                ..linux(1000)
            })
            .unwrap();
            assert_eq!(located.rule, Rule::Home, "{login:?}");
            assert_eq!(
                located.dir,
                PathBuf::from("/home/ada/.local/state/him/run/box")
            );
            // The session's own directory is still searched, for a host started there.
            assert_eq!(located.also, vec![PathBuf::from("/run/user/1000/him")]);
        }
    }

    #[test]
    fn without_a_login_directory_the_home_folder_is_used_never_tmp() {
        let located = locate(&Probe {
            xdg_runtime_dir: None,
            login_session_dir: None,
            hostname: Some("../evil/host name".into()),
            ..linux(1000)
        })
        .unwrap();
        assert_eq!(
            located.dir,
            PathBuf::from("/home/ada/.local/state/him/run/evilhostname")
        );
        let nameless = locate(&Probe {
            login_session_dir: None,
            hostname: None,
            ..linux(1000)
        })
        .unwrap();
        assert!(nameless.dir.ends_with("run/localhost"));
        let homeless = Probe {
            login_session_dir: None,
            home: Some(PathBuf::from("/")),
            ..linux(1000)
        };
        let err = locate(&homeless).unwrap_err();
        assert!(err.to_string().contains("HIM_RUNTIME_DIR"), "{err}");
    }

    #[test]
    fn a_relative_xdg_runtime_dir_is_ignored() {
        let located = locate(&Probe {
            xdg_runtime_dir: Some("run/me".into()),
            ..linux(1000)
        })
        .unwrap();
        assert!(located.also.is_empty());
    }

    #[test]
    fn macos_uses_the_per_user_temp_folder_the_os_gives() {
        let mac = Probe {
            him_runtime_dir: None,
            xdg_runtime_dir: None,
            uid: 501,
            platform: Platform::MacOs,
            // macOS has no logind; a /run/user there would be someone's invention.
            login_session_dir: Some((501, 0o40700)),
            darwin_temp: Some(PathBuf::from("/var/folders/x1/abc/T/")),
            home: Some(PathBuf::from("/Users/ada")),
            hostname: Some("mac".into()),
        };
        let located = locate(&mac).unwrap();
        assert_eq!(located.rule, Rule::DarwinTemp);
        assert_eq!(located.dir, PathBuf::from("/var/folders/x1/abc/T/him"));
        // If the OS gives none, the home folder, as elsewhere.
        let without = locate(&Probe {
            darwin_temp: None,
            ..mac
        })
        .unwrap();
        assert_eq!(without.rule, Rule::Home);
        assert!(without.dir.starts_with("/Users/ada/.local/state/him/run"));
    }

    #[test]
    fn this_process_probe_reads_the_password_database() {
        let probe = probe();
        assert_eq!(probe.uid, current_uid());
        assert!(probe.home.is_some_and(|h| h.is_absolute()));
    }

    #[test]
    fn a_new_directory_is_created_private() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("a/b");
        ensure_private_dir(&dir).unwrap();
        let mode = fs::metadata(&dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn a_directory_others_can_write_is_refused_and_left_alone() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("open");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let err = ensure_private_dir(&dir).unwrap_err();
        assert!(
            matches!(err, RuntimeError::TooOpen { mode: 0o777, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("chmod 700"));
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o777);
    }

    #[test]
    fn a_directory_of_another_user_is_refused() {
        let err = check_owner_and_mode(Path::new("/x"), 4242, 0o40700, 1000).unwrap_err();
        assert!(matches!(err, RuntimeError::NotOurs { owner: 4242, .. }));
        assert!(check_owner_and_mode(Path::new("/x"), 1000, 0o40700, 1000).is_ok());
        assert!(check_owner_and_mode(Path::new("/x"), 1000, 0o40720, 1000).is_err());
        assert!(check_owner_and_mode(Path::new("/x"), 1000, 0o40702, 1000).is_err());
        // Readable or enterable is enough to refuse.
        assert!(check_owner_and_mode(Path::new("/x"), 1000, 0o40755, 1000).is_err());
        assert!(check_owner_and_mode(Path::new("/x"), 1000, 0o40701, 1000).is_err());
    }

    #[test]
    fn a_file_where_the_directory_should_be_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let file = base.path().join("f");
        fs::write(&file, "").unwrap();
        assert!(matches!(
            ensure_private_dir(&file),
            Err(RuntimeError::NotADirectory(_))
        ));
    }

    #[test]
    fn a_socket_named_after_a_live_process_is_not_stale() {
        let me = socket_path(Path::new("/r"), std::process::id());
        assert!(socket_owner_alive(&me));
        // Pids are below 2^22 on Linux and 99999 on macOS.
        assert!(!socket_owner_alive(Path::new("/r/hosts/2147483646.sock")));
        assert!(!socket_owner_alive(Path::new("/r/hosts/not-a-pid.sock")));
    }

    #[test]
    fn only_sock_files_are_listed_as_hosts() {
        let base = tempfile::tempdir().unwrap();
        fs::create_dir(hosts_dir(base.path())).unwrap();
        fs::write(socket_path(base.path(), 12), "").unwrap();
        fs::write(hosts_dir(base.path()).join("notes.txt"), "").unwrap();
        assert_eq!(
            list_host_sockets(base.path()),
            vec![socket_path(base.path(), 12)]
        );
    }
}
