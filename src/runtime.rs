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
                "runtime directory {} has mode {mode:o}: others can write to it; run `chmod 700 {}`",
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

/// Where the runtime directory is, from the environment values passed in (so tests need
/// not touch the process environment), and which rule chose it.
pub fn locate(
    him_runtime_dir: Option<OsString>,
    xdg_runtime_dir: Option<OsString>,
    temp_dir: &Path,
    uid: u32,
) -> (PathBuf, &'static str) {
    if let Some(dir) = him_runtime_dir.filter(|v| !v.is_empty()) {
        return (PathBuf::from(dir), "HIM_RUNTIME_DIR");
    }
    // The XDG spec requires an absolute path; a relative one is ignored, as other
    // programs do.
    if let Some(xdg) = xdg_runtime_dir
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
    {
        return (xdg.join("him"), "XDG_RUNTIME_DIR");
    }
    (temp_dir.join(format!("him-{uid}")), "the temporary folder")
}

pub fn runtime_dir_from(
    him_runtime_dir: Option<OsString>,
    xdg_runtime_dir: Option<OsString>,
    temp_dir: &Path,
    uid: u32,
) -> PathBuf {
    locate(him_runtime_dir, xdg_runtime_dir, temp_dir, uid).0
}

/// The runtime directory for this process's environment.
pub fn runtime_dir() -> PathBuf {
    runtime_dir_from(
        std::env::var_os("HIM_RUNTIME_DIR"),
        std::env::var_os("XDG_RUNTIME_DIR"),
        &std::env::temp_dir(),
        current_uid(),
    )
}

/// Where hosts put their sockets.
pub fn hosts_dir(runtime: &Path) -> PathBuf {
    runtime.join("hosts")
}

pub fn socket_path(runtime: &Path, pid: u32) -> PathBuf {
    hosts_dir(runtime).join(format!("{pid}.sock"))
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

/// Pure form of the rule: owned by `uid`, not writable by group or others (who could
/// otherwise plant or replace sockets). New directories are made 0700; `him doctor` warns
/// about one that others can merely read.
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
    if mode & 0o022 != 0 {
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
    let Ok(entries) = fs::read_dir(hosts_dir(runtime)) else {
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
    // SAFETY: kill with signal 0 sends nothing; it only asks whether `pid` exists, and
    // touches no memory of ours.
    #[allow(unsafe_code)]
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// This process's real uid.
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions, cannot fail and touches no memory of ours.
    #[allow(unsafe_code)]
    unsafe {
        libc::getuid()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_that_chose_the_directory_is_named() {
        let tmp = Path::new("/tmp");
        assert_eq!(
            locate(Some("/r".into()), Some("/run/user/7".into()), tmp, 7),
            (PathBuf::from("/r"), "HIM_RUNTIME_DIR")
        );
        assert_eq!(
            locate(None, Some("/run/user/7".into()), tmp, 7).1,
            "XDG_RUNTIME_DIR"
        );
        assert_eq!(locate(None, None, tmp, 7).1, "the temporary folder");
    }

    #[test]
    fn him_runtime_dir_wins_then_xdg_then_temp() {
        let tmp = Path::new("/tmp");
        assert_eq!(
            runtime_dir_from(Some("/a".into()), Some("/run/user/7".into()), tmp, 7),
            PathBuf::from("/a")
        );
        assert_eq!(
            runtime_dir_from(None, Some("/run/user/7".into()), tmp, 7),
            PathBuf::from("/run/user/7/him")
        );
        assert_eq!(
            runtime_dir_from(Some("".into()), None, tmp, 7),
            PathBuf::from("/tmp/him-7")
        );
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
        // Readable is not a reason to refuse (the sockets themselves are 0600).
        assert!(check_owner_and_mode(Path::new("/x"), 1000, 0o40755, 1000).is_ok());
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
