//! The persistent per-user state directory (DESIGN.md §1): where the HTTP tokens live that
//! clients keep in their configuration. Not the runtime directory, which is a tmpfs emptied
//! at every reboot or last logout: a token kept there silently broke every configured
//! client (and every pasted SuperAssistant URL) after each restart.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub const STATE_HOME_ENV: &str = "XDG_STATE_HOME";

/// `$XDG_STATE_HOME/him` when that is an absolute path (the XDG rule; a relative one is
/// ignored, as other programs do), else `<home>/.local/state/him` with the home directory
/// from the password database. `None` when there is neither.
pub fn locate(xdg_state_home: Option<OsString>, home: Option<&Path>) -> Option<PathBuf> {
    xdg_state_home
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("him"))
        .or_else(|| home.map(|home| home.join(".local/state/him")))
}

/// The state directory of this process (not created).
pub fn state_dir() -> Result<PathBuf, NoStateDir> {
    locate(
        std::env::var_os(STATE_HOME_ENV),
        crate::runtime::probe().home.as_deref(),
    )
    .ok_or(NoStateDir)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoStateDir;

impl std::fmt::Display for NoStateDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no directory to keep the HTTP tokens in: {STATE_HOME_ENV} is not set to an \
             absolute path and there is no home directory in the password database; set \
             {STATE_HOME_ENV}, or give the bearer token in {}",
            crate::mcp::http::TOKEN_ENV
        )
    }
}

impl std::error::Error for NoStateDir {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_state_home_wins_when_absolute_else_the_password_databases_home() {
        let home = Path::new("/home/ada");
        assert_eq!(
            locate(Some("/state".into()), Some(home)),
            Some(PathBuf::from("/state/him"))
        );
        assert_eq!(
            locate(Some("relative/state".into()), Some(home)),
            Some(PathBuf::from("/home/ada/.local/state/him"))
        );
        assert_eq!(
            locate(None, Some(home)),
            Some(PathBuf::from("/home/ada/.local/state/him"))
        );
        assert_eq!(
            locate(Some("/state".into()), None),
            Some(PathBuf::from("/state/him"))
        );
        assert_eq!(locate(Some("".into()), None), None);
        assert_eq!(locate(None, None), None);
    }
}
