//! Opening the loopback form's URL in the person's browser without waiting for it.

use std::process::Stdio;

/// The command that opens a URL: `$BROWSER` when set (a command that takes the URL as its
/// one argument), else the system opener.
pub fn opener(browser_env: Option<String>) -> String {
    match browser_env.filter(|b| !b.trim().is_empty()) {
        Some(browser) => browser,
        None if cfg!(target_os = "macos") => "open".into(),
        None => "xdg-open".into(),
    }
}

/// Starts the opener on `url` and returns at once; the child is reaped in the background.
/// Its stdio is closed: in `him serve` stdout is the MCP channel, and an opener that prints
/// there would corrupt it.
pub fn open(url: &str) -> std::io::Result<String> {
    let program = opener(std::env::var("BROWSER").ok());
    let mut child = tokio::process::Command::new(&program)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot run `{program}`: {e}")))?;
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    Ok(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_wins_over_the_system_opener() {
        assert_eq!(opener(Some("/bin/firefox".into())), "/bin/firefox");
        assert_ne!(opener(Some("  ".into())), "  ");
        assert!(["xdg-open", "open"].contains(&opener(None).as_str()));
    }
}
