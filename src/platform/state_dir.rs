//! The persistent per-user state directory (DESIGN.md §1): where the HTTP tokens live that
//! clients keep in their configuration, and the answers kept for agents whose call ended
//! (`wire/keep.rs`). Not the runtime directory, which is a tmpfs emptied at every reboot or last
//! logout: a token kept there silently broke every configured client (and every pasted
//! SuperAssistant URL) after each restart.
//!
//! Found as the runtime directory is (wire/runtime.rs): from the password database, never from a
//! variable MCP clients strip. `XDG_STATE_HOME` is such a variable: the browser's host saw the
//! desktop's value and `him serve` none, so a late answer went to one folder and its agent
//! looked in another.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The explicit override; like `HIM_RUNTIME_DIR`, every process of the user needs it.
pub const STATE_DIR_ENV: &str = "HIM_STATE_DIR";

/// `$HIM_STATE_DIR` when set (it must be absolute: a relative one would name a different
/// folder in each process's working directory), else `<home>/.local/state/him` with the home
/// directory from the password database.
pub fn locate(him_state_dir: Option<OsString>, home: Option<&Path>) -> Result<PathBuf, NoStateDir> {
    match him_state_dir
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
    {
        Some(dir) if dir.is_absolute() => Ok(dir),
        Some(dir) => Err(NoStateDir::Relative(dir)),
        None => home
            .filter(|home| home.is_absolute())
            .map(|home| home.join(".local/state/him"))
            .ok_or(NoStateDir::NoHome),
    }
}

/// The state directory of this process (not created).
pub fn state_dir() -> Result<PathBuf, NoStateDir> {
    locate(
        std::env::var_os(STATE_DIR_ENV),
        crate::wire::runtime::probe().home.as_deref(),
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoStateDir {
    /// No override and no home directory in the password database (nor `$HOME`).
    NoHome,
    /// `HIM_STATE_DIR` is a relative path.
    Relative(PathBuf),
}

impl std::fmt::Display for NoStateDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoStateDir::NoHome => write!(
                f,
                "no state directory: there is no home directory in the password database and \
                 {STATE_DIR_ENV} is not set; set {STATE_DIR_ENV} to a private directory (every \
                 him process of yours needs the same value)"
            ),
            NoStateDir::Relative(dir) => write!(
                f,
                "{STATE_DIR_ENV} is the relative path {}; give an absolute one (each process \
                 would find a different folder)",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for NoStateDir {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_wins_else_the_password_databases_home() {
        let home = Path::new("/home/ada");
        assert_eq!(
            locate(Some("/state/him".into()), Some(home)),
            Ok(PathBuf::from("/state/him"))
        );
        assert_eq!(
            locate(None, Some(home)),
            Ok(PathBuf::from("/home/ada/.local/state/him"))
        );
        assert_eq!(
            locate(Some("".into()), Some(home)),
            Ok(PathBuf::from("/home/ada/.local/state/him")),
            "an empty override is no override"
        );
        assert_eq!(
            locate(Some("/state/him".into()), None),
            Ok(PathBuf::from("/state/him"))
        );
        assert_eq!(locate(None, None), Err(NoStateDir::NoHome));
    }

    #[test]
    fn a_relative_override_is_refused_not_ignored() {
        let err = locate(Some("state".into()), Some(Path::new("/home/ada"))).unwrap_err();
        assert_eq!(err, NoStateDir::Relative("state".into()));
        assert!(err.to_string().contains("HIM_STATE_DIR"), "{err}");
    }
}
