//! Opening the loopback form's URL in the person's browser without waiting for it.
//!
//! The URL carries the form's token, and an opener's arguments are visible to every user
//! (`ps`, `/proc/<pid>/cmdline`). On Linux the form asks the kernel who each connection
//! belongs to (`loopback_http/owner.rs`), so a token read there is useless to another user, and the
//! URL is passed as is — which confined (Snap, Flatpak) browsers need, since they cannot read a
//! private file of ours. macOS cannot tell who is connecting, so there the opener gets a launcher
//! page instead: a file only the user can read, in the per-user runtime directory, that forwards to
//! the URL. It is removed when the form ends.
//!
//! Whether the page opened is judged by the opener alone, never by `DISPLAY` in our own
//! environment (MCP clients strip it even on a desktop, while the opener may still reach the
//! person's browser): one that exits non-zero within [`VERDICT_WITHIN`] failed (xdg-open exits
//! 3 when it finds no way to open a URL); one that exits 0, or is still running by then (a
//! `$BROWSER` that runs the browser in the foreground), opened it.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

/// Whether the token must stay out of the opener's arguments on this platform.
const HIDE_TOKEN_FROM_ARGUMENTS: bool = cfg!(not(target_os = "linux"));

/// The command that opens a URL: `$BROWSER` when set (a command that takes the URL as its
/// one argument), else the system opener.
pub fn opener(browser_env: Option<String>) -> String {
    match browser_env.filter(|b| !b.trim().is_empty()) {
        Some(browser) => browser,
        None if cfg!(target_os = "macos") => "open".into(),
        None => "xdg-open".into(),
    }
}

/// How long an opener has to fail; one still running then counts as having opened the page.
pub const VERDICT_WITHIN: Duration = Duration::from_secs(2);

/// An opener started on the form; keep it until the form ends (it holds the launcher page).
pub struct Opened {
    pub program: String,
    /// The opener, until it is judged.
    child: Option<tokio::process::Child>,
    _launcher: Option<LauncherPage>,
}

/// Whether the page reached a browser, as far as its opener tells.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Opened,
    /// The opener failed; why, in words for the agent.
    Failed(String),
}

impl Opened {
    /// Waits for the opener's word, at most [`VERDICT_WITHIN`] (see the module's comment).
    pub async fn verdict(&mut self) -> Verdict {
        let Some(child) = self.child.as_mut() else {
            return Verdict::Opened;
        };
        let verdict = match tokio::time::timeout(VERDICT_WITHIN, child.wait()).await {
            Err(_still_running) => Verdict::Opened,
            Ok(Ok(status)) if status.success() => Verdict::Opened,
            Ok(Ok(status)) => Verdict::Failed(failure(&self.program, status)),
            Ok(Err(err)) => {
                Verdict::Failed(format!("`{}` could not be waited for: {err}", self.program))
            }
        };
        if let Some(child) = self.child.take() {
            reap(child);
        }
        verdict
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            reap(child);
        }
    }
}

/// Waits for an opener in the background, so that it leaves no zombie whenever it ends.
fn reap(mut child: tokio::process::Child) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let _ = child.wait().await;
        });
    }
}

fn failure(program: &str, status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("`{program}` exited with status {code}"),
        (None, Some(signal)) => format!("`{program}` was ended by signal {signal}"),
        (None, None) => format!("`{program}` ended with {status}"),
    }
}

/// Starts the opener on `url` (or on a launcher page for it, see above) and returns at once;
/// [`Opened::verdict`] then says whether it opened. Its stdio is closed: in `him serve` stdout
/// is the MCP channel, and an opener that prints there would corrupt it. An opener that cannot
/// be started (none installed) is an error.
pub fn open(url: &str) -> std::io::Result<Opened> {
    let launcher = if HIDE_TOKEN_FROM_ARGUMENTS {
        let dir = crate::wire::runtime::runtime_dir()
            .map_err(|e| std::io::Error::other(format!("no private directory: {e}")))?
            .dir;
        // No request says which language the person reads; their session's locale does.
        let locale = crate::fallback::locale::from_environment(|name| std::env::var(name).ok());
        Some(LauncherPage::write(&dir, url, locale)?)
    } else {
        None
    };
    let target = match &launcher {
        Some(page) => format!("file://{}", page.path.display()),
        None => url.to_owned(),
    };
    let program = opener(std::env::var("BROWSER").ok());
    let child = tokio::process::Command::new(&program)
        .arg(&target)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot run `{program}`: {e}")))?;
    Ok(Opened {
        program,
        child: Some(child),
        _launcher: launcher,
    })
}

/// A page that forwards to the form, readable by its owner only; removed on drop.
struct LauncherPage {
    path: PathBuf,
}

impl LauncherPage {
    fn write(
        dir: &Path,
        url: &str,
        locale: &crate::fallback::locale::Locale,
    ) -> std::io::Result<LauncherPage> {
        // The URL is him's own (`http://127.0.0.1:<port>/q/<hex>`); anything else would
        // need escaping in the page, so it is refused rather than escaped.
        if !url
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ":/.".contains(c))
        {
            return Err(std::io::Error::other("not a loopback form URL"));
        }
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!(
            "form-{}.html",
            crate::platform::random::random_hex(8)?
        ));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        writeln!(
            file,
            "<!doctype html><html lang=\"{lang}\"><meta charset=utf-8>\
             <meta name=referrer content=no-referrer>\
             <meta http-equiv=refresh content=\"0;url={url}\"><title>him</title>\
             <a href=\"{url}\">{open}</a>",
            lang = locale.tag,
            // The messages are ours, but a "<" in one must not become markup here either.
            open = locale
                .text("launcherOpenQuestion")
                .replace('&', "&amp;")
                .replace('<', "&lt;"),
        )?;
        Ok(LauncherPage { path })
    }
}

impl Drop for LauncherPage {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launcher_page_is_private_forwards_to_the_url_and_goes_with_the_form() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let url = "http://127.0.0.1:40000/q/0123456789abcdef0123456789abcdef";
        let german = crate::fallback::locale::choose("de");
        let page = LauncherPage::write(dir.path(), url, german).expect("launcher");
        let meta = std::fs::metadata(&page.path).expect("written");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let text = std::fs::read_to_string(&page.path).expect("read");
        assert!(text.contains(&format!("content=\"0;url={url}\"")), "{text}");
        assert!(
            text.contains("lang=\"de\"") && text.contains(">Frage öffnen</a>"),
            "{text}"
        );
        let path = page.path.clone();
        drop(page);
        assert!(!path.exists());
        assert!(LauncherPage::write(dir.path(), "http://x/\"><script>", german).is_err());
    }

    #[test]
    fn browser_wins_over_the_system_opener() {
        assert_eq!(opener(Some("/bin/firefox".into())), "/bin/firefox");
        assert_ne!(opener(Some("  ".into())), "  ");
        assert!(["xdg-open", "open"].contains(&opener(None).as_str()));
    }
}
