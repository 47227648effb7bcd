//! The bearer token every HTTP request must carry: `HIM_HTTP_TOKEN` when set, else the one
//! kept in `<runtime dir>/http-token` (mode 0600 in the 0700 runtime directory), made on
//! first use. The token is never logged; `Debug` hides it.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::runtime::{self, RuntimeError};

pub const TOKEN_FILE: &str = "http-token";
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
}

#[derive(Debug)]
pub enum TokenError {
    Runtime(RuntimeError),
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
            TokenError::Runtime(err) => err.fmt(f),
            TokenError::Io { path, err } => write!(f, "{}: {err}", path.display()),
            TokenError::Unsafe { path, why } => write!(
                f,
                "the HTTP token file {} {why}; delete it (a new token is made on the next start) \
                 or set {TOKEN_ENV}",
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
        let presented = rest.trim_ascii();
        crate::random::same_secret(presented, self.0.as_bytes())
    }
}

/// The token in force: from `env` (`HIM_HTTP_TOKEN`) when given, else read from or created
/// in `runtime_dir`.
pub fn load_or_create(
    runtime_dir: &Path,
    env: Option<String>,
) -> Result<(Token, TokenSource), TokenError> {
    if let Some(value) = env.filter(|v| !v.trim().is_empty()) {
        return Ok((Token::new(&value, TOKEN_ENV)?, TokenSource::Env));
    }
    runtime::ensure_private_dir(runtime_dir).map_err(TokenError::Runtime)?;
    let path = runtime_dir.join(TOKEN_FILE);
    // Two servers may start at once: the file appears whole (hard link of a finished
    // temporary file) or not at all, and the loser reads the winner's token.
    for _ in 0..3 {
        match read_token_file(&path) {
            Ok(token) => return Ok((token, TokenSource::File(path))),
            Err(TokenError::Io { err, .. }) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        let token = Token::new(
            &crate::random::random_hex(32).map_err(TokenError::NoRandomness)?,
            "a new token",
        )?;
        if publish(runtime_dir, &path, &token)? {
            return Ok((token, TokenSource::Created(path)));
        }
    }
    read_token_file(&path).map(|token| (token, TokenSource::File(path)))
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

/// Writes `token` to `path` unless a token file already exists; `false` if one did.
fn publish(dir: &Path, path: &Path, token: &Token) -> Result<bool, TokenError> {
    let suffix = crate::random::random_hex(8).map_err(TokenError::NoRandomness)?;
    let temp = dir.join(format!(".{TOKEN_FILE}.{suffix}"));
    let io_err = |err| TokenError::Io {
        path: temp.clone(),
        err,
    };
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .and_then(|mut file| {
            file.write_all(token.secret().as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()
        });
    if let Err(err) = written {
        let _ = fs::remove_file(&temp);
        return Err(io_err(err));
    }
    let linked = fs::hard_link(&temp, path);
    let _ = fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(err) => Err(TokenError::Io {
            path: path.to_owned(),
            err,
        }),
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
        let (made, source) = load_or_create(dir.path(), None).unwrap();
        let path = dir.path().join(TOKEN_FILE);
        assert_eq!(source, TokenSource::Created(path.clone()));
        assert_eq!(made.secret().len(), 64);
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        let (again, source) = load_or_create(dir.path(), None).unwrap();
        assert_eq!(source, TokenSource::File(path));
        assert_eq!(again.secret(), made.secret());
        let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "temporary files left: {leftovers:?}");
    }

    #[test]
    fn the_environment_wins_and_must_look_like_a_secret() {
        let dir = private_dir();
        let (token, source) =
            load_or_create(dir.path(), Some("0123456789abcdef-XYZ".into())).unwrap();
        assert_eq!(source, TokenSource::Env);
        assert_eq!(token.secret(), "0123456789abcdef-XYZ");
        assert!(!dir.path().join(TOKEN_FILE).exists());
        let short = load_or_create(dir.path(), Some("hunter2".into())).unwrap_err();
        assert!(short.to_string().contains("HIM_HTTP_TOKEN"), "{short}");
        assert!(load_or_create(dir.path(), Some("a token with spaces in it".into())).is_err());
    }

    #[test]
    fn a_token_file_others_can_read_is_refused() {
        let dir = private_dir();
        let path = dir.path().join(TOKEN_FILE);
        fs::write(&path, "0123456789abcdef0123").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_or_create(dir.path(), None).unwrap_err();
        assert!(err.to_string().contains("mode 644"), "{err}");
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
