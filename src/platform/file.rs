//! Writing a file whole or not at all (the person's `~/.ssh/config` and `~/.ssh/rc`, the
//! store of kept questions). A torn config stops every `ssh`, and a torn rc runs half at the
//! next login, so the new text goes to a temporary file beside the target, which is then
//! renamed over it. The temporary file has a random name and is created
//! `O_EXCL | O_NOFOLLOW`: a link planted where it is to be made (by anyone who can write that
//! folder) makes the write fail instead of writing through the link. A target that is a link
//! (a dotfile manager's) is written where the link points, and stays a link.

use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// As many links as Linux follows in one path (`MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Where `path` leads: itself, or the file its chain of links ends at (which may not exist
/// yet: a link to a file that is to be created is written there, not replaced by a file).
pub(crate) fn through_links(path: &Path) -> io::Result<PathBuf> {
    let mut at = path.to_owned();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&at)?;
                at = match at.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(io::Error::other(format!(
        "{} is a chain of more than {MAX_LINKS} links",
        path.display()
    )))
}

/// Replaces the file at `path` (through links) with `text`, keeping its mode; a new file gets
/// `new_mode`, and a new folder for it 0700. Returns the file written.
pub(crate) fn replace(path: &Path, text: &str, new_mode: u32) -> io::Result<PathBuf> {
    let target = through_links(path)?;
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(io::Error::other(format!(
            "{} is not a file's path",
            target.display()
        )));
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mode = std::fs::metadata(&target).map_or(new_mode, |m| m.permissions().mode() & 0o7777);
    let random = crate::platform::random::question_id()?;
    let temporary = dir.join(format!(".{}.him-{}", name.to_string_lossy(), &random[..16]));
    let written =
        write_new(&temporary, text, mode).and_then(|()| std::fs::rename(&temporary, &target));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written?;
    // The rename is durable once the folder is.
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(target)
}

/// Creates `path`, which must not exist (not even as a link), holding `text` with `mode`.
fn write_new(path: &Path, text: &str, mode: u32) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_file_is_replaced_whole_keeping_its_mode_and_nothing_is_left_beside_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("config");
        std::fs::write(&config, "old\n").expect("write");
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        assert_eq!(replace(&config, "new\n", 0o600).expect("replace"), config);
        assert_eq!(std::fs::read_to_string(&config).expect("read"), "new\n");
        let mode = std::fs::metadata(&config)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["config"]);
        let fresh = dir.path().join("new/rc");
        replace(&fresh, "x\n", 0o600).expect("a new file in a new folder");
        let mode = std::fs::metadata(&fresh)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_link_is_written_through_to_where_it_points_and_stays_a_link() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("dotfiles")).expect("mkdir");
        // Relative, through two links, and to a file that does not exist yet.
        symlink("dotfiles/ssh-rc", dir.path().join("middle")).expect("symlink");
        symlink("middle", dir.path().join("rc")).expect("symlink");
        let rc = dir.path().join("rc");
        let written = replace(&rc, "new\n", 0o600).expect("replace");
        assert_eq!(written, dir.path().join("dotfiles/ssh-rc"));
        assert!(
            std::fs::symlink_metadata(&rc)
                .expect("meta")
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&rc).expect("read"), "new\n");
    }

    #[test]
    fn a_link_where_the_temporary_file_is_made_is_not_followed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep\n").expect("write");
        let temporary = dir.path().join(".rc.him-0123456789abcdef");
        symlink(&victim, &temporary).expect("symlink");
        let err = write_new(&temporary, "evil\n", 0o600).expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{err}");
        assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep\n");
    }
}
