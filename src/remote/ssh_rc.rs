//! The marked block `him remote --write` puts in `~/.ssh/rc` on the other machine (DESIGN.md
//! §10). sshd runs that file at the start of every session, after it has bound the forwards
//! of the connection, so the block's `him tidy-forwarded` moves the live forward off the
//! name SSH binds even when no agent runs during the connection: the next connection's bind
//! then finds the name free, whatever sshd's `StreamLocalBindUnlink`.
//!
//! sshd(8) "SSHRC": once `~/.ssh/rc` exists, sshd runs neither `/etc/ssh/sshrc` nor xauth
//! for X11 forwarding itself. So a file this module creates also does what sshd would have
//! done; in a file that was already there, the user's own lines already do it, and the
//! block only adds the tidy line, on top (before any `exec` of theirs).

use std::path::{Path, PathBuf};

const BEGIN: &str = "# >>> him: free the forwarded socket's name for the next SSH connection >>>";
const END: &str = "# <<< him <<<";

/// What sshd does itself when there is no `~/.ssh/rc`, for a file that only holds the block.
const SSHD_DEFAULT: &str = r#"# sshd runs neither /etc/ssh/sshrc nor xauth once this file exists (sshd(8) SSHRC):
if [ -f /etc/ssh/sshrc ]; then
	/bin/sh /etc/ssh/sshrc
elif read proto cookie && [ -n "$DISPLAY" ]; then
	if [ `echo $DISPLAY | cut -c1-10` = 'localhost:' ]; then
		# X11UseLocalhost=yes
		echo add unix:`echo $DISPLAY |
		    cut -c11-` $proto $cookie
	else
		# X11UseLocalhost=no
		echo add $DISPLAY $proto $cookie
	fi | xauth -q -
fi
"#;

/// Single-quoted for sh.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// The block for `him` at `him`; `whole_file` when nothing else is in the file.
pub fn render(him: &Path, whole_file: bool) -> String {
    let him = quoted(him);
    // Harmless when him is gone or fails: the test, no stdin taken from the xauth cookie,
    // nothing on stdout (which is the session's), and status 0 for a `set -e` after it.
    let mut block = format!(
        "{BEGIN}\n\
         # Written by `him remote --write`; `him uninstall` on this machine removes it.\n\
         if [ -x {him} ]; then {him} tidy-forwarded </dev/null >/dev/null || :; fi\n"
    );
    if whole_file {
        block.push_str(SSHD_DEFAULT);
    }
    block.push_str(END);
    block.push('\n');
    block
}

/// `rc` with the block on top (after a `#!` line), in place of an earlier one.
pub fn upsert(rc: &str, him: &Path) -> String {
    let rest = remove(rc);
    if rest.trim().is_empty() {
        return render(him, true);
    }
    let (shebang, body) = match rest.split_inclusive('\n').next() {
        Some(first) if first.starts_with("#!") => rest.split_at(first.len()),
        _ => ("", rest.as_str()),
    };
    format!("{shebang}{}{body}", render(him, false))
}

/// `rc` without the block. A block whose end line is gone (edited away) is left as it is:
/// what follows its start is then the person's own, not ours to drop.
pub fn remove(rc: &str) -> String {
    let mut out = String::with_capacity(rc.len());
    let mut block: Option<String> = None;
    for line in rc.split_inclusive('\n') {
        let trimmed = line.trim_end();
        match &mut block {
            Some(held) if trimmed == END => {
                held.clear();
                block = None;
            }
            Some(held) => held.push_str(line),
            None if trimmed == BEGIN => block = Some(line.to_owned()),
            None => out.push_str(line),
        }
    }
    out.push_str(&block.unwrap_or_default());
    out
}

/// Whether `rc` holds the block.
pub fn has_block(rc: &str) -> bool {
    rc.lines().any(|line| line.trim_end() == BEGIN)
}

/// The him the block in `rc` runs, if it holds the block.
pub fn named_him(rc: &str) -> Option<PathBuf> {
    let mut lines = rc.lines().skip_while(|line| line.trim_end() != BEGIN);
    let word = lines
        .find_map(|line| line.strip_prefix("if [ -x '"))?
        .split("' ]")
        .next()?;
    Some(PathBuf::from(word.replace(r"'\''", "'")))
}

/// `~/.ssh/rc` of this user.
pub fn path() -> Option<PathBuf> {
    super::home_ssh("rc")
}

/// Puts the block, naming this binary, in `~/.ssh/rc`; returns the file.
pub fn install() -> Result<PathBuf, String> {
    let path = path().ok_or("HOME is not set, so there is no ~/.ssh/rc")?;
    let him = std::env::current_exe().map_err(|e| format!("cannot tell where him is: {e}"))?;
    let old = read(&path)?.unwrap_or_default();
    let new = upsert(&old, &him);
    if new != old {
        write(&path, &new)?;
    }
    Ok(path)
}

/// Takes the block out of `~/.ssh/rc`, and the file when only the block was in it; returns
/// the file when it changed. An rc that is a link (a dotfile manager's) is edited where it
/// points and stays: when only the block was there, the file it points to goes (him made
/// it), and the link is left as it was before — pointing at nothing, which sshd takes as
/// no rc at all.
pub fn uninstall() -> Result<Option<PathBuf>, String> {
    let Some(path) = path() else {
        return Ok(None);
    };
    let Some(old) = read(&path)? else {
        return Ok(None);
    };
    if !has_block(&old) {
        return Ok(None);
    }
    let new = remove(&old);
    if new.trim().is_empty() {
        let file = crate::platform::file::through_links(&path)
            .map_err(|e| format!("cannot follow {}: {e}", path.display()))?;
        std::fs::remove_file(&file)
            .map_err(|e| format!("cannot remove {}: {e}", file.display()))?;
    } else {
        write(&path, &new)?;
    }
    Ok(Some(path))
}

/// The file's text, or `None` when there is none.
pub(super) fn read(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(format!("cannot read {}: {err}", path.display())),
    }
}

/// Written whole or not at all (a torn rc would run half), keeping the file's mode; an rc
/// that is a link is written where it points, and stays a link
/// ([`crate::platform::file::replace`]).
fn write(path: &Path, text: &str) -> Result<(), String> {
    crate::platform::file::replace(path, text, 0o600)
        .map(drop)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HIM: &str = "/home/r/.cargo/bin/him";

    #[test]
    fn a_block_without_its_end_line_is_left_with_everything_after_it() {
        let rc = format!("echo mine\n{BEGIN}\nif true; then :; fi\necho also mine\n");
        assert_eq!(remove(&rc), rc);
        let whole = format!("echo mine\n{BEGIN}\nours\n{END}\necho after\n");
        assert_eq!(remove(&whole), "echo mine\necho after\n");
    }

    #[test]
    fn an_rc_that_is_a_link_stays_a_link_and_its_target_is_written() {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = dir.path().join("dotfiles-rc");
        std::fs::write(&target, "echo mine\n").expect("write");
        let link = dir.path().join("rc");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        write(&link, "echo new\n").expect("write through the link");
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("meta")
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_to_string(&target).expect("read"),
            "echo new\n"
        );
    }

    #[test]
    fn a_new_rc_does_what_sshd_would_have_and_goes_away_whole() {
        let rc = upsert("", Path::new(HIM));
        assert!(rc.starts_with(BEGIN), "{rc}");
        assert!(rc.contains("if [ -x '/home/r/.cargo/bin/him' ]; then '/home/r/.cargo/bin/him' tidy-forwarded </dev/null >/dev/null || :; fi\n"));
        assert!(rc.contains("xauth -q -") && rc.contains("/etc/ssh/sshrc"));
        assert_eq!(upsert(&rc, Path::new(HIM)), rc, "idempotent");
        assert_eq!(remove(&rc), "");
    }

    #[test]
    fn an_existing_rc_gains_only_the_tidy_line_on_top_and_gets_back_as_it_was() {
        let mine = "#!/bin/sh\necho hi >&2\nexec /usr/bin/true\n";
        let rc = upsert(mine, Path::new(HIM));
        assert!(rc.starts_with(&format!("#!/bin/sh\n{BEGIN}\n")), "{rc}");
        assert!(rc.ends_with("echo hi >&2\nexec /usr/bin/true\n"), "{rc}");
        assert!(
            !rc.contains("xauth"),
            "the user's rc does its own X11: {rc}"
        );
        let moved = upsert(&rc, Path::new("/usr/bin/him"));
        assert_eq!(moved.matches(BEGIN).count(), 1, "{moved}");
        assert!(moved.contains("'/usr/bin/him' tidy-forwarded"));
        assert_eq!(remove(&moved), mine);
    }

    #[test]
    fn a_path_with_a_quote_stays_one_word() {
        assert_eq!(quoted(Path::new("/a b/it's")), r"'/a b/it'\''s'");
        let rc = upsert("", Path::new("/a b/it's"));
        assert_eq!(named_him(&rc), Some(PathBuf::from("/a b/it's")));
        assert_eq!(
            named_him("if [ -x '/x' ]; then :; fi\n"),
            None,
            "not our block"
        );
    }
}
