//! The browser extension, built into him (build.rs lists `extension/`), and the per-user
//! folder `him install` writes it to: `chromium/` (loaded unpacked), `firefox/` and the
//! Firefox add-on as one file, `him@him.dev.xpi`.
//!
//! One source of truth for both builds: [`files`] decides which file of `extension/` goes to
//! which browser, and `him extension <chromium|firefox> DIR` writes exactly that for the tests
//! and for packagers (who copy it under `/usr/share/him/extension/`).

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use super::browsers::Os;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/extension_files.rs"));
}

/// The two builds of the one extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// Chrome, Chromium, Edge, Brave, Vivaldi, Opera: `manifest.json` as it is.
    Chromium,
    /// Firefox: `manifest.firefox.json` as its `manifest.json` (sidebar, background scripts).
    Firefox,
}

impl Build {
    pub fn folder_name(self) -> &'static str {
        match self {
            Build::Chromium => "chromium",
            Build::Firefox => "firefox",
        }
    }
}

/// The Firefox add-on file's name: its gecko id, as Firefox names a sideloaded add-on.
pub fn xpi_name() -> String {
    format!("{}.xpi", crate::GECKO_ID)
}

/// Files of `extension/` that are for developers, not browsers.
fn for_developers(path: &str) -> bool {
    path == "README.md" || path.ends_with(".py")
}

/// The files of one build, by path inside it, in a stable order.
pub fn files(build: Build) -> Vec<(&'static str, &'static [u8])> {
    embedded::FILES
        .iter()
        .filter(|(path, _)| !for_developers(path))
        .filter_map(|&(path, bytes)| match (build, path) {
            (Build::Chromium, "manifest.firefox.json") | (Build::Firefox, "manifest.json") => None,
            (Build::Firefox, "manifest.firefox.json") => Some(("manifest.json", bytes)),
            _ => Some((path, bytes)),
        })
        .collect()
}

/// Where `him install` puts the extension for this user: `$XDG_DATA_HOME/him/extension`
/// (when absolute, else `~/.local/share/him/extension`) on Linux, and
/// `~/Library/Application Support/him/extension` on macOS.
pub fn install_root(os: Os, home: &Path, xdg_data_home: Option<PathBuf>) -> PathBuf {
    let base = match os {
        Os::Linux => xdg_data_home
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".local/share")),
        Os::MacOs => home.join("Library/Application Support"),
    };
    base.join("him/extension")
}

/// What writing a folder changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Written {
    pub written: usize,
    pub unchanged: usize,
    pub removed: usize,
}

impl Written {
    pub fn changed(&self) -> bool {
        self.written + self.removed > 0
    }
}

/// The file that marks a folder as a build him wrote: only such a folder is written over,
/// has files removed, or is removed by `him uninstall`.
pub const MARKER: &str = ".him-extension";

const MARKER_TEXT: &[u8] =
    b"This folder is the him browser extension, written by `him install` or \
`him extension`.\nhim rewrites it on the next install and removes what is not part of the \
extension: keep nothing of your own here.\n";

/// Whether `dir` is a build him wrote (it holds the marker).
pub fn is_ours(dir: &Path) -> bool {
    dir.join(MARKER).is_file()
}

/// Makes `dir` hold exactly the files of `build`: each file rewritten only when it differs
/// (renamed into place, so a browser starting meanwhile reads old or new, never half), and
/// files that are no longer part of the extension removed, so an upgrade leaves no stale file.
/// Refuses a symbolic link, and a folder that holds anything but a build him wrote: that is
/// someone's own folder, and nothing in it is removed.
pub fn write_folder(dir: &Path, build: Build) -> io::Result<Written> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a symbolic link; give the folder itself, or remove the link",
                    dir.display()
                ),
            ));
        }
        Ok(meta) if !meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is a file, not a folder", dir.display()),
            ));
        }
        Ok(_) if !is_ours(dir) && std::fs::read_dir(dir)?.next().is_some() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} holds files him did not write (no {MARKER}); give an empty or new \
                     folder: him would remove what is not part of the extension",
                    dir.display()
                ),
            ));
        }
        _ => {}
    }
    let files = files(build);
    let mut done = Written::default();
    write_if_changed(&dir.join(MARKER), MARKER_TEXT)?;
    for (rel, bytes) in &files {
        if write_if_changed(&dir.join(rel), bytes)? {
            done.written += 1;
        } else {
            done.unchanged += 1;
        }
    }
    let mut keep: BTreeSet<PathBuf> = files.iter().map(|(rel, _)| dir.join(rel)).collect();
    keep.insert(dir.join(MARKER));
    done.removed = remove_others(dir, &keep)?;
    Ok(done)
}

/// Removes every file under `dir` not in `keep`, and folders left empty; returns how many files.
fn remove_others(dir: &Path, keep: &BTreeSet<PathBuf>) -> io::Result<usize> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            removed += remove_others(&path, keep)?;
            if std::fs::read_dir(&path)?.next().is_none() {
                std::fs::remove_dir(&path)?;
            }
        } else if !keep.contains(&path) {
            std::fs::remove_file(&path)?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Writes `bytes` to `path` unless it already holds exactly that; creates the folder.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("a file path with no folder"))?;
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(true)
}

/// The Firefox add-on as one `.xpi` file (a zip of the Firefox build).
pub fn xpi() -> Vec<u8> {
    super::zip::stored(&files(Build::Firefox))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn paths(build: Build) -> Vec<&'static str> {
        files(build).into_iter().map(|(p, _)| p).collect()
    }

    #[test]
    fn each_build_has_one_manifest_of_its_own() {
        let chromium = paths(Build::Chromium);
        let firefox = paths(Build::Firefox);
        assert!(chromium.contains(&"manifest.json"));
        assert!(!chromium.contains(&"manifest.firefox.json"));
        assert!(firefox.contains(&"manifest.json"));
        assert!(!firefox.contains(&"manifest.firefox.json"));
        let manifest = |b| {
            files(b)
                .into_iter()
                .find(|(p, _)| *p == "manifest.json")
                .unwrap()
                .1
        };
        let chromium_manifest: serde_json::Value =
            serde_json::from_slice(manifest(Build::Chromium)).unwrap();
        let firefox_manifest: serde_json::Value =
            serde_json::from_slice(manifest(Build::Firefox)).unwrap();
        assert!(chromium_manifest.get("side_panel").is_some());
        assert!(firefox_manifest.get("sidebar_action").is_some());
    }

    #[test]
    fn the_builds_share_every_other_file_and_leave_developer_files_out() {
        let chromium = paths(Build::Chromium);
        let firefox = paths(Build::Firefox);
        assert_eq!(chromium, firefox);
        for must in [
            "background.js",
            "panel/panel.html",
            "_locales/en/messages.json",
        ] {
            assert!(chromium.contains(&must), "{must} missing: {chromium:?}");
        }
        assert!(
            !chromium
                .iter()
                .any(|p| p.ends_with(".py") || *p == "README.md")
        );
    }

    #[test]
    fn the_folder_is_under_the_data_home_of_each_os() {
        let home = Path::new("/home/u");
        assert_eq!(
            install_root(Os::Linux, home, None),
            PathBuf::from("/home/u/.local/share/him/extension")
        );
        assert_eq!(
            install_root(Os::Linux, home, Some("/data".into())),
            PathBuf::from("/data/him/extension")
        );
        assert_eq!(
            install_root(Os::Linux, home, Some("relative".into())),
            PathBuf::from("/home/u/.local/share/him/extension")
        );
        assert_eq!(
            install_root(Os::MacOs, Path::new("/Users/u"), Some("/data".into())),
            PathBuf::from("/Users/u/Library/Application Support/him/extension")
        );
    }

    #[test]
    fn writing_again_changes_nothing_and_a_stale_file_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("chromium");
        let first = write_folder(&dir, Build::Chromium).unwrap();
        assert_eq!(first.written, files(Build::Chromium).len());
        assert_eq!(first.removed, 0);
        let again = write_folder(&dir, Build::Chromium).unwrap();
        assert!(!again.changed(), "{again:?}");
        std::fs::create_dir_all(dir.join("old")).unwrap();
        std::fs::write(dir.join("old/gone.js"), "x").unwrap();
        std::fs::write(dir.join("background.js"), "changed").unwrap();
        let repaired = write_folder(&dir, Build::Chromium).unwrap();
        assert_eq!((repaired.written, repaired.removed), (1, 1));
        assert!(!dir.join("old").exists());
    }

    #[test]
    fn a_folder_him_did_not_write_is_refused_and_nothing_in_it_is_touched() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("project");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("NOTES.md"), "mine").unwrap();
        std::fs::write(dir.join("src/main.rs"), "fn main() {}").unwrap();
        let err = write_folder(&dir, Build::Chromium).unwrap_err();
        assert!(
            err.to_string().contains("holds files him did not write"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("NOTES.md")).unwrap(),
            "mine"
        );
        assert!(dir.join("src/main.rs").exists());
        assert!(!dir.join("manifest.json").exists());

        // A symbolic link to a folder (a checkout's extension/, say) is refused too.
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let err = write_folder(&link, Build::Chromium).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(dir.join("NOTES.md").exists());

        // An empty folder is taken, and marked.
        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        write_folder(&empty, Build::Firefox).unwrap();
        assert!(is_ours(&empty));
    }
}
