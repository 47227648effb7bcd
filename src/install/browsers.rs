//! Where each browser looks for native-messaging host manifests, per user, and how to tell
//! that a browser is installed. Pure path arithmetic over a [`Layout`] (home, config home,
//! OS), so the macOS table is tested on Linux; only the `*_on_disk` functions touch the disk.
//!
//! Sources: FACTS.md (Linux and macOS locations, verified with Chromium 156); Firefox still
//! reads `~/.mozilla/native-messaging-hosts` even when its profile moved to
//! `$XDG_CONFIG_HOME/mozilla` (Firefox 147+, Mozilla bug 2005167).

use std::path::{Path, PathBuf};

use crate::cli::Browser;

/// The operating systems with per-user manifest directories (Windows uses the registry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    MacOs,
}

impl Os {
    /// The OS this binary was built for; other Unixes lay out like Linux (XDG).
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else {
            Os::Linux
        }
    }
}

/// What the locations depend on: the OS, `$HOME`, and on Linux the XDG config home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub os: Os,
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME` when set to an absolute path, else `~/.config`. Ignored on macOS.
    pub config_home: PathBuf,
}

impl Layout {
    /// `xdg_config_home` is the raw variable; the XDG spec says to ignore a relative one.
    pub fn new(os: Os, home: PathBuf, xdg_config_home: Option<PathBuf>) -> Layout {
        let config_home = xdg_config_home
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".config"));
        Layout {
            os,
            home,
            config_home,
        }
    }

    fn app_support(&self) -> PathBuf {
        self.home.join("Library/Application Support")
    }
}

/// Chromium-family manifests name extensions by origin; Firefox's by add-on id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Chromium,
    Firefox,
}

pub const ALL: [Browser; 7] = [
    Browser::Chrome,
    Browser::Chromium,
    Browser::Edge,
    Browser::Brave,
    Browser::Vivaldi,
    Browser::Opera,
    Browser::Firefox,
];

pub fn family(browser: Browser) -> Family {
    match browser {
        Browser::Firefox => Family::Firefox,
        _ => Family::Chromium,
    }
}

/// The name people know the browser by.
pub fn display_name(browser: Browser) -> &'static str {
    match browser {
        Browser::Chrome => "Google Chrome",
        Browser::Chromium => "Chromium",
        Browser::Edge => "Microsoft Edge",
        Browser::Brave => "Brave",
        Browser::Vivaldi => "Vivaldi",
        Browser::Opera => "Opera",
        Browser::Firefox => "Firefox",
    }
}

/// The name on the command line (`--browser NAME`).
pub fn cli_name(browser: Browser) -> &'static str {
    match browser {
        Browser::Chrome => "chrome",
        Browser::Chromium => "chromium",
        Browser::Edge => "edge",
        Browser::Brave => "brave",
        Browser::Vivaldi => "vivaldi",
        Browser::Opera => "opera",
        Browser::Firefox => "firefox",
    }
}

/// The browser's own per-user data folder for the Chromium family (its existence means the
/// browser has run for this user); the manifest folder lives inside it.
fn chromium_config_dir(browser: Browser, layout: &Layout) -> Option<PathBuf> {
    let (linux, macos) = match browser {
        Browser::Chrome => ("google-chrome", "Google/Chrome"),
        Browser::Chromium => ("chromium", "Chromium"),
        Browser::Edge => ("microsoft-edge", "Microsoft Edge"),
        Browser::Brave => ("BraveSoftware/Brave-Browser", "BraveSoftware/Brave-Browser"),
        Browser::Vivaldi => ("vivaldi", "Vivaldi"),
        Browser::Opera => ("opera", "com.operasoftware.Opera"),
        Browser::Firefox => return None,
    };
    Some(match layout.os {
        Os::Linux => layout.config_home.join(linux),
        Os::MacOs => layout.app_support().join(macos),
    })
}

/// The folder the browser reads `<host name>.json` from.
pub fn manifest_dir(browser: Browser, layout: &Layout) -> PathBuf {
    match chromium_config_dir(browser, layout) {
        Some(dir) => dir.join("NativeMessagingHosts"),
        None => match layout.os {
            Os::Linux => layout.home.join(".mozilla/native-messaging-hosts"),
            Os::MacOs => layout.app_support().join("Mozilla/NativeMessagingHosts"),
        },
    }
}

/// The manifest file itself: `<dir>/<host name>.json`.
pub fn manifest_path(browser: Browser, layout: &Layout) -> PathBuf {
    manifest_dir(browser, layout).join(format!("{}.json", crate::HOST_NAME))
}

/// Where a package puts the browser's manifest for every user (Linux; the `.deb` of
/// packaging/build-dist): read when the user has none of their own.
pub fn system_manifest_path(browser: Browser, layout: &Layout) -> Option<PathBuf> {
    let dir = match (layout.os, browser) {
        (Os::Linux, Browser::Chromium) => "/etc/chromium/native-messaging-hosts",
        (Os::Linux, Browser::Chrome) => "/etc/opt/chrome/native-messaging-hosts",
        (Os::Linux, Browser::Firefox) => "/usr/lib/mozilla/native-messaging-hosts",
        _ => return None,
    };
    Some(Path::new(dir).join(format!("{}.json", crate::HOST_NAME)))
}

/// Folders whose existence means the browser is installed for this user (any one will do).
pub fn detection_dirs(browser: Browser, layout: &Layout) -> Vec<PathBuf> {
    if let Some(dir) = chromium_config_dir(browser, layout) {
        return vec![dir];
    }
    match layout.os {
        Os::Linux => vec![
            layout.home.join(".mozilla"),
            layout.config_home.join("mozilla"),
        ],
        Os::MacOs => vec![
            layout.app_support().join("Firefox"),
            layout.app_support().join("Mozilla"),
        ],
    }
}

pub fn detected_on_disk(browser: Browser, layout: &Layout) -> bool {
    detection_dirs(browser, layout).iter().any(|d| d.is_dir())
}

/// A browser packaged in a sandbox that cannot start native-messaging hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandboxed {
    pub browser: Browser,
    pub kind: SandboxKind,
    /// Where we saw it.
    pub evidence: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxKind {
    Snap,
    Flatpak,
}

impl SandboxKind {
    pub fn name(self) -> &'static str {
        match self {
            SandboxKind::Snap => "Snap",
            SandboxKind::Flatpak => "Flatpak",
        }
    }
}

/// Snap names of the browsers that ship as snaps.
const SNAPS: [(&str, Browser); 5] = [
    ("chromium", Browser::Chromium),
    ("firefox", Browser::Firefox),
    ("brave", Browser::Brave),
    ("opera", Browser::Opera),
    ("vivaldi", Browser::Vivaldi),
];

/// Flathub application ids of the browsers that ship as Flatpaks.
const FLATPAKS: [(&str, Browser); 8] = [
    ("org.chromium.Chromium", Browser::Chromium),
    (
        "io.github.ungoogled_software.ungoogled_chromium",
        Browser::Chromium,
    ),
    ("com.google.Chrome", Browser::Chrome),
    ("com.microsoft.Edge", Browser::Edge),
    ("com.brave.Browser", Browser::Brave),
    ("com.vivaldi.Vivaldi", Browser::Vivaldi),
    ("com.opera.Opera", Browser::Opera),
    ("org.mozilla.firefox", Browser::Firefox),
];

/// The places that reveal a Snap or Flatpak browser, in the order we look: system-wide
/// installs under `root` (normally `/`), then per-user installs and data under `home`.
pub fn sandbox_candidates(root: &Path, home: &Path) -> Vec<(Browser, SandboxKind, PathBuf)> {
    let mut out = Vec::new();
    for (name, browser) in SNAPS {
        for path in [
            root.join("snap/bin").join(name),
            root.join("snap").join(name),
            home.join("snap").join(name),
        ] {
            out.push((browser, SandboxKind::Snap, path));
        }
    }
    for (id, browser) in FLATPAKS {
        for path in [
            root.join("var/lib/flatpak/app").join(id),
            home.join(".local/share/flatpak/app").join(id),
            home.join(".var/app").join(id),
        ] {
            out.push((browser, SandboxKind::Flatpak, path));
        }
    }
    out
}

/// Snap and Flatpak browsers present on this machine, one entry per browser and kind.
pub fn sandboxed_on_disk(root: &Path, home: &Path) -> Vec<Sandboxed> {
    let mut found: Vec<Sandboxed> = Vec::new();
    for (browser, kind, path) in sandbox_candidates(root, home) {
        let seen = found.iter().any(|s| s.browser == browser && s.kind == kind);
        if !seen && path.exists() {
            found.push(Sandboxed {
                browser,
                kind,
                evidence: path,
            });
        }
    }
    found
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn linux() -> Layout {
        Layout::new(Os::Linux, PathBuf::from("/home/u"), None)
    }

    fn mac() -> Layout {
        Layout::new(Os::MacOs, PathBuf::from("/Users/u"), None)
    }

    #[test]
    fn linux_manifest_locations_match_each_browser() {
        let l = linux();
        let expect = [
            (
                Browser::Chrome,
                "/home/u/.config/google-chrome/NativeMessagingHosts",
            ),
            (
                Browser::Chromium,
                "/home/u/.config/chromium/NativeMessagingHosts",
            ),
            (
                Browser::Edge,
                "/home/u/.config/microsoft-edge/NativeMessagingHosts",
            ),
            (
                Browser::Brave,
                "/home/u/.config/BraveSoftware/Brave-Browser/NativeMessagingHosts",
            ),
            (
                Browser::Vivaldi,
                "/home/u/.config/vivaldi/NativeMessagingHosts",
            ),
            (Browser::Opera, "/home/u/.config/opera/NativeMessagingHosts"),
            (Browser::Firefox, "/home/u/.mozilla/native-messaging-hosts"),
        ];
        for (browser, dir) in expect {
            assert_eq!(manifest_dir(browser, &l), PathBuf::from(dir), "{browser:?}");
        }
    }

    #[test]
    fn macos_manifest_locations_match_each_browser() {
        let m = mac();
        let base = "/Users/u/Library/Application Support";
        let expect = [
            (Browser::Chrome, "Google/Chrome/NativeMessagingHosts"),
            (Browser::Chromium, "Chromium/NativeMessagingHosts"),
            (Browser::Edge, "Microsoft Edge/NativeMessagingHosts"),
            (
                Browser::Brave,
                "BraveSoftware/Brave-Browser/NativeMessagingHosts",
            ),
            (Browser::Vivaldi, "Vivaldi/NativeMessagingHosts"),
            (
                Browser::Opera,
                "com.operasoftware.Opera/NativeMessagingHosts",
            ),
            (Browser::Firefox, "Mozilla/NativeMessagingHosts"),
        ];
        for (browser, dir) in expect {
            assert_eq!(
                manifest_dir(browser, &m),
                Path::new(base).join(dir),
                "{browser:?}"
            );
        }
    }

    #[test]
    fn the_manifest_file_is_named_after_the_host() {
        assert_eq!(
            manifest_path(Browser::Chromium, &linux()),
            PathBuf::from("/home/u/.config/chromium/NativeMessagingHosts/dev.him.host.json")
        );
    }

    #[test]
    fn xdg_config_home_moves_the_chromium_family_but_not_firefox() {
        let l = Layout::new(Os::Linux, "/home/u".into(), Some("/xdg".into()));
        assert_eq!(
            manifest_dir(Browser::Chrome, &l),
            PathBuf::from("/xdg/google-chrome/NativeMessagingHosts")
        );
        assert_eq!(
            manifest_dir(Browser::Firefox, &l),
            PathBuf::from("/home/u/.mozilla/native-messaging-hosts")
        );
        assert!(detection_dirs(Browser::Firefox, &l).contains(&PathBuf::from("/xdg/mozilla")));
    }

    #[test]
    fn a_relative_xdg_config_home_is_ignored() {
        let l = Layout::new(Os::Linux, "/home/u".into(), Some("relative".into()));
        assert_eq!(l.config_home, PathBuf::from("/home/u/.config"));
    }

    #[test]
    fn macos_ignores_xdg_config_home() {
        let m = Layout::new(Os::MacOs, "/Users/u".into(), Some("/xdg".into()));
        assert_eq!(
            manifest_dir(Browser::Chromium, &m),
            PathBuf::from("/Users/u/Library/Application Support/Chromium/NativeMessagingHosts")
        );
    }

    #[test]
    fn the_chromium_family_is_detected_by_the_folder_holding_its_manifest_folder() {
        for browser in ALL.into_iter().filter(|b| family(*b) == Family::Chromium) {
            for layout in [linux(), mac()] {
                let dirs = detection_dirs(browser, &layout);
                assert_eq!(dirs.len(), 1);
                assert_eq!(
                    manifest_dir(browser, &layout).parent(),
                    Some(dirs[0].as_path())
                );
            }
        }
    }

    #[test]
    fn names_round_trip_through_clap() {
        use clap::ValueEnum;
        for browser in ALL {
            assert_eq!(Browser::from_str(cli_name(browser), false), Ok(browser));
        }
    }

    #[test]
    fn sandboxed_browsers_are_found_once_per_kind() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(root.join("snap/bin")).unwrap();
        std::fs::write(root.join("snap/bin/chromium"), "").unwrap();
        std::fs::create_dir_all(root.join("snap/chromium")).unwrap();
        std::fs::create_dir_all(home.join(".var/app/org.mozilla.firefox")).unwrap();
        let found = sandboxed_on_disk(&root, &home);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].browser, Browser::Chromium);
        assert_eq!(found[0].kind, SandboxKind::Snap);
        assert_eq!(found[0].evidence, root.join("snap/bin/chromium"));
        assert_eq!(found[1].browser, Browser::Firefox);
        assert_eq!(found[1].kind, SandboxKind::Flatpak);
    }

    #[test]
    fn nothing_sandboxed_on_an_empty_machine() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(sandboxed_on_disk(tmp.path(), tmp.path()).is_empty());
    }
}
