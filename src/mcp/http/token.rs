//! The secrets of `him serve --http`, each in a file of its own in the persistent state
//! directory (`platform/state_dir.rs`; file 0600, directory 0700, both ours), made on first use:
//! - the bearer token every request must carry (`http-token`), unless `HIM_HTTP_TOKEN`
//!   gives it;
//! - the path token (`http-path-token`) for clients that cannot send headers (MCP
//!   SuperAssistant): `/mcp/<path token>`. It is a secret of its own because it sits in a
//!   URL, which ends up in more places than a header does; replacing it
//!   (`--new-path-token`) leaves every other client's configuration alone.
//!
//! Tokens are never logged; `Debug` hides them.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::wire::runtime;

pub const TOKEN_FILE: &str = "http-token";
pub const PATH_TOKEN_FILE: &str = "http-path-token";
pub const TOKEN_ENV: &str = "HIM_HTTP_TOKEN";
/// A shorter secret could be guessed by anyone who can reach the port.
pub const MIN_TOKEN_LEN: usize = 16;
const MAX_TOKEN_LEN: usize = 512;

#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<hidden>)")
    }
}

/// Where the token in force came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    Env,
    File(PathBuf),
    Created(PathBuf),
    /// Moved from the runtime directory, where earlier versions kept it.
    Moved {
        from: PathBuf,
        to: PathBuf,
    },
}

#[derive(Debug)]
pub enum TokenError {
    NoStateDir(crate::platform::state_dir::NoStateDir),
    /// The directory the tokens live in is not a private directory of ours.
    UnsafeDir {
        path: PathBuf,
        why: String,
    },
    Io {
        path: PathBuf,
        err: io::Error,
    },
    /// The token file can be read by others, or is not a plain file of ours.
    Unsafe {
        path: PathBuf,
        why: String,
    },
    Invalid {
        source: String,
        why: &'static str,
    },
    NoRandomness(io::Error),
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::NoStateDir(err) => err.fmt(f),
            TokenError::UnsafeDir { path, why } => write!(
                f,
                "the HTTP token directory {} {why}; it must be a directory of yours that only \
                 you can read (`chmod 700 {}`), or set {} to another place",
                path.display(),
                path.display(),
                crate::platform::state_dir::STATE_DIR_ENV
            ),
            TokenError::Io { path, err } => write!(f, "{}: {err}", path.display()),
            TokenError::Unsafe { path, why } => write!(
                f,
                "the HTTP token file {} {why}; delete it (a new token is made on the next start; \
                 clients that kept the old one must be given the new one)",
                path.display()
            ),
            TokenError::Invalid { source, why } => write!(f, "the HTTP token in {source} {why}"),
            TokenError::NoRandomness(err) => write!(f, "cannot make an HTTP token: {err}"),
        }
    }
}

impl std::error::Error for TokenError {}

impl Token {
    /// Checks a token's shape: RFC 6750 `b64token` characters, long enough to be a secret.
    pub fn new(value: &str, source: &str) -> Result<Token, TokenError> {
        let invalid = |why| TokenError::Invalid {
            source: source.to_owned(),
            why,
        };
        let value = value.trim();
        if value.len() < MIN_TOKEN_LEN {
            return Err(invalid("is shorter than 16 characters"));
        }
        if value.len() > MAX_TOKEN_LEN {
            return Err(invalid("is longer than 512 characters"));
        }
        let body = value.trim_end_matches('=');
        if !body.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        }) {
            return Err(invalid(
                "may hold only letters, digits and - . _ ~ + / (then = padding)",
            ));
        }
        Ok(Token(value.to_owned()))
    }

    pub fn secret(&self) -> &str {
        &self.0
    }

    /// Whether an `Authorization` header value is `Bearer <this token>`, compared in
    /// constant time so the comparison does not tell how much of a guess was right.
    pub fn admits(&self, authorization: Option<&[u8]>) -> bool {
        let Some(value) = authorization else {
            return false;
        };
        let Some(split) = value.iter().position(|&b| b == b' ') else {
            return false;
        };
        let (scheme, rest) = value.split_at(split);
        if !scheme.eq_ignore_ascii_case(b"bearer") {
            return false;
        }
        self.matches(rest.trim_ascii())
    }

    /// Whether `presented` is this token, compared in constant time.
    pub fn matches(&self, presented: &[u8]) -> bool {
        crate::platform::random::same_secret(presented, self.0.as_bytes())
    }
}

/// The bearer token in force: from `env` (`HIM_HTTP_TOKEN`) when given, else read from or
/// created in `state_dir`. A token file that an earlier version left in `old_runtime_dir`
/// is moved to `state_dir` once, so the clients configured with it keep working.
/// The token `HIM_HTTP_TOKEN` gives (`env` is its value), if it gives one.
pub fn from_env(env: Option<String>) -> Result<Option<Token>, TokenError> {
    env.filter(|v| !v.trim().is_empty())
        .map(|value| Token::new(&value, TOKEN_ENV))
        .transpose()
}

pub fn load_or_create(
    state_dir: &Path,
    env: Option<String>,
    old_runtime_dir: Option<&Path>,
) -> Result<(Token, TokenSource), TokenError> {
    if let Some(token) = from_env(env)? {
        return Ok((token, TokenSource::Env));
    }
    ensure_private_dir(state_dir)?;
    let path = state_dir.join(TOKEN_FILE);
    if let Some(old) = old_runtime_dir.map(|dir| dir.join(TOKEN_FILE))
        && fs::symlink_metadata(&path).is_err()
        && let Ok(token) = read_token_file(&old)
    {
        let moved = publish(state_dir, TOKEN_FILE, &token)?;
        let _ = fs::remove_file(&old);
        if moved {
            return Ok((
                token,
                TokenSource::Moved {
                    from: old,
                    to: path,
                },
            ));
        }
    }
    load_or_create_file(state_dir, TOKEN_FILE)
}

/// The token kept in `dir/file`, made if there is none.
pub fn load_or_create_file(dir: &Path, file: &str) -> Result<(Token, TokenSource), TokenError> {
    ensure_private_dir(dir)?;
    let path = dir.join(file);
    // Two servers may start at once: the file appears whole (hard link of a finished
    // temporary file) or not at all, and the loser reads the winner's token.
    for _ in 0..3 {
        match read_token_file(&path) {
            Ok(token) => return Ok((token, TokenSource::File(path))),
            Err(TokenError::Io { err, .. }) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        if publish(dir, file, &new_token()?)? {
            return read_token_file(&path).map(|token| (token, TokenSource::Created(path)));
        }
    }
    read_token_file(&path).map(|token| (token, TokenSource::File(path)))
}

/// A new token in `dir/file`, in place of the one there (if any) in one step: a server
/// reading it meanwhile gets the old one or the new one, never half of either.
pub fn replace_file(dir: &Path, file: &str) -> Result<Token, TokenError> {
    ensure_private_dir(dir)?;
    let token = new_token()?;
    let temp = write_temp(dir, file, &token)?;
    let path = dir.join(file);
    fs::rename(&temp, &path).map_err(|err| {
        let _ = fs::remove_file(&temp);
        TokenError::Io { path, err }
    })?;
    Ok(token)
}

fn new_token() -> Result<Token, TokenError> {
    Token::new(
        &crate::platform::random::random_hex(32).map_err(TokenError::NoRandomness)?,
        "a new token",
    )
}

/// Creates `dir` (and its parents) with mode 0700 if missing; then it must be a directory
/// of ours that nobody else can read. An existing directory is judged, never changed.
fn ensure_private_dir(dir: &Path) -> Result<(), TokenError> {
    let io_err = |err| TokenError::Io {
        path: dir.to_owned(),
        err,
    };
    if let Err(err) = fs::symlink_metadata(dir) {
        if err.kind() != io::ErrorKind::NotFound {
            return Err(io_err(err));
        }
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err)?;
    }
    let meta = fs::symlink_metadata(dir).map_err(io_err)?;
    let unsafe_dir = |why: String| TokenError::UnsafeDir {
        path: dir.to_owned(),
        why,
    };
    if !meta.is_dir() {
        return Err(unsafe_dir("is not a directory".into()));
    }
    if meta.uid() != runtime::current_uid() {
        return Err(unsafe_dir(format!("belongs to uid {}", meta.uid())));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(unsafe_dir(format!(
            "has mode {:o}: others can look into it",
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

fn read_token_file(path: &Path) -> Result<Token, TokenError> {
    let io_err = |err| TokenError::Io {
        path: path.to_owned(),
        err,
    };
    let meta = fs::symlink_metadata(path).map_err(io_err)?;
    let unsafe_file = |why: String| TokenError::Unsafe {
        path: path.to_owned(),
        why,
    };
    if !meta.file_type().is_file() {
        return Err(unsafe_file("is not a plain file".into()));
    }
    if meta.uid() != runtime::current_uid() {
        return Err(unsafe_file(format!("belongs to uid {}", meta.uid())));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(unsafe_file(format!(
            "has mode {:o}; it must be readable only by you",
            meta.mode() & 0o777
        )));
    }
    let text = fs::read_to_string(path).map_err(io_err)?;
    Token::new(&text, &path.display().to_string())
}

/// A finished temporary file in `dir` holding `token`, mode 0600.
fn write_temp(dir: &Path, file: &str, token: &Token) -> Result<PathBuf, TokenError> {
    let suffix = crate::platform::random::random_hex(8).map_err(TokenError::NoRandomness)?;
    let temp = dir.join(format!(".{file}.{suffix}"));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .and_then(|mut out| {
            out.write_all(token.secret().as_bytes())?;
            out.write_all(b"\n")?;
            out.sync_all()
        });
    match written {
        Ok(()) => Ok(temp),
        Err(err) => {
            let _ = fs::remove_file(&temp);
            Err(TokenError::Io { path: temp, err })
        }
    }
}

/// Writes `token` to `dir/file` unless that file already exists; `false` if it did.
fn publish(dir: &Path, file: &str, token: &Token) -> Result<bool, TokenError> {
    let temp = write_temp(dir, file, token)?;
    let path = dir.join(file);
    let linked = fs::hard_link(&temp, &path);
    let _ = fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(err) => Err(TokenError::Io { path, err }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[test]
    fn a_token_is_made_once_kept_private_and_read_back() {
        let dir = private_dir();
        let (made, source) = load_or_create(dir.path(), None, None).unwrap();
        let path = dir.path().join(TOKEN_FILE);
        assert_eq!(source, TokenSource::Created(path.clone()));
        assert_eq!(made.secret().len(), 64);
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        let (again, source) = load_or_create(dir.path(), None, None).unwrap();
        assert_eq!(source, TokenSource::File(path));
        assert_eq!(again.secret(), made.secret());
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "temporary files left: {leftovers:?}");
    }

    #[test]
    fn the_environment_wins_and_must_look_like_a_secret() {
        let dir = private_dir();
        let (token, source) =
            load_or_create(dir.path(), Some("0123456789abcdef-XYZ".into()), None).unwrap();
        assert_eq!(source, TokenSource::Env);
        assert_eq!(token.secret(), "0123456789abcdef-XYZ");
        assert!(!dir.path().join(TOKEN_FILE).exists());
        let short = load_or_create(dir.path(), Some("hunter2".into()), None).unwrap_err();
        assert!(short.to_string().contains("HIM_HTTP_TOKEN"), "{short}");
        assert!(
            load_or_create(dir.path(), Some("a token with spaces in it".into()), None).is_err()
        );
    }

    #[test]
    fn a_token_file_others_can_read_is_refused() {
        let dir = private_dir();
        let path = dir.path().join(TOKEN_FILE);
        fs::write(&path, "0123456789abcdef0123").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_or_create(dir.path(), None, None).unwrap_err();
        assert!(err.to_string().contains("mode 644"), "{err}");
    }

    #[test]
    fn the_token_directory_is_made_private_and_an_open_one_is_refused() {
        let parent = private_dir();
        let state = parent.path().join("state/him");
        let (_, source) = load_or_create(&state, None, None).unwrap();
        assert_eq!(source, TokenSource::Created(state.join(TOKEN_FILE)));
        assert_eq!(fs::metadata(&state).unwrap().mode() & 0o777, 0o700);
        fs::set_permissions(&state, fs::Permissions::from_mode(0o750)).unwrap();
        let err = load_or_create(&state, None, None).unwrap_err();
        assert!(err.to_string().contains("mode 750"), "{err}");
        assert!(err.to_string().contains("chmod 700"), "{err}");
    }

    #[test]
    fn a_token_left_in_the_runtime_directory_is_moved_once() {
        let runtime = private_dir();
        let state = private_dir();
        let old = runtime.path().join(TOKEN_FILE);
        fs::write(&old, "0123456789abcdef0123\n").unwrap();
        fs::set_permissions(&old, fs::Permissions::from_mode(0o600)).unwrap();
        let (token, source) = load_or_create(state.path(), None, Some(runtime.path())).unwrap();
        assert_eq!(token.secret(), "0123456789abcdef0123");
        assert_eq!(
            source,
            TokenSource::Moved {
                from: old.clone(),
                to: state.path().join(TOKEN_FILE)
            }
        );
        assert!(!old.exists());
        // A later one there (another version running) does not replace the kept one.
        fs::write(&old, "ffffffffffffffffffff\n").unwrap();
        fs::set_permissions(&old, fs::Permissions::from_mode(0o600)).unwrap();
        let (again, source) = load_or_create(state.path(), None, Some(runtime.path())).unwrap();
        assert_eq!(again.secret(), "0123456789abcdef0123");
        assert_eq!(source, TokenSource::File(state.path().join(TOKEN_FILE)));
    }

    #[test]
    fn the_path_token_is_its_own_and_is_replaced_alone() {
        let state = private_dir();
        let (bearer, _) = load_or_create(state.path(), None, None).unwrap();
        let (path_token, _) = load_or_create_file(state.path(), PATH_TOKEN_FILE).unwrap();
        assert_ne!(bearer.secret(), path_token.secret());
        let replaced = replace_file(state.path(), PATH_TOKEN_FILE).unwrap();
        assert_ne!(replaced.secret(), path_token.secret());
        let (read, _) = load_or_create_file(state.path(), PATH_TOKEN_FILE).unwrap();
        assert_eq!(read.secret(), replaced.secret());
        let (bearer_again, _) = load_or_create(state.path(), None, None).unwrap();
        assert_eq!(bearer_again.secret(), bearer.secret());
        let path = state.path().join(PATH_TOKEN_FILE);
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        let names: Vec<_> = fs::read_dir(state.path()).unwrap().collect();
        assert_eq!(names.len(), 2, "temporary files left: {names:?}");
        assert!(read.matches(replaced.secret().as_bytes()));
        assert!(!read.matches(bearer.secret().as_bytes()));
    }

    #[test]
    fn only_the_exact_bearer_token_is_admitted() {
        let token = Token::new("0123456789abcdef0123", "test").unwrap();
        assert!(token.admits(Some(b"Bearer 0123456789abcdef0123")));
        assert!(token.admits(Some(b"bearer  0123456789abcdef0123 ")));
        assert!(!token.admits(None));
        assert!(!token.admits(Some(b"Bearer 0123456789abcdef0124")));
        assert!(!token.admits(Some(b"Bearer 0123456789abcdef012")));
        assert!(!token.admits(Some(b"Basic 0123456789abcdef0123")));
        assert!(!token.admits(Some(b"0123456789abcdef0123")));
        assert!(!token.admits(Some(b"Bearer")));
        assert_eq!(format!("{token:?}"), "Token(<hidden>)");
    }
}
