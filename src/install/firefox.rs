//! Firefox that keeps the add-on: on Firefox ESR, Developer Edition and Nightly, `him
//! install` puts `him@him.dev.xpi` in each profile's `extensions/` folder (Firefox installs
//! an add-on found there at its next start, for good) and, in the profile's `user.js`, a
//! marked block with the two settings that lets an unsigned add-on found there run:
//!
//! - `xpinstall.signatures.required = false`: these builds honour it (release and Beta do
//!   not), and it turns signature checks off for every add-on of the profile, which is why
//!   `him install` asks first;
//! - `extensions.autoDisableScopes = 2`: Firefox's default, 3, installs an add-on found in the
//!   profile disabled until the person enables it in a notification; 2 keeps that for add-ons
//!   other programs put in the user's folder and drops it for the profile's own.
//!
//! `him uninstall` removes the file and the block, and the two settings Firefox copied into
//! `prefs.js`. Verified with Debian's firefox-esr 153 (tests/e2e/node22/firefox-install.test.mjs).

use std::io;
use std::path::{Path, PathBuf};

use super::browsers::{Layout, Os};
use super::extension;

/// The `user.js` block's first and last lines.
const BEGIN: &str =
    "// >>> him: the unsigned him add-on may run (him install; him uninstall removes this) >>>";
const END: &str = "// <<< him <<<";

/// The settings the block holds, as `prefs.js` spells them once Firefox copied them there.
pub const PREFS: [&str; 2] = [
    "user_pref(\"xpinstall.signatures.required\", false);",
    "user_pref(\"extensions.autoDisableScopes\", 2);",
];

/// Which Firefox last ran a profile, from its `compatibility.ini`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Esr,
    /// Nightly (`a1`) or a Beta build (`b`): Developer Edition is a Beta that honours the
    /// signature setting; Beta itself does not.
    Prerelease,
    Release,
    /// The profile has not been started yet.
    Unknown,
}

impl Channel {
    /// Whether an unsigned add-on can be installed for good there.
    pub fn takes_unsigned(self) -> bool {
        matches!(self, Channel::Esr | Channel::Prerelease)
    }

    /// From the update channel the Firefox build names in `defaults/pref/channel-prefs.js`
    /// (Debian's firefox-esr says `esr`, though its version has no `esr` suffix).
    pub fn from_update_channel(channel: &str) -> Channel {
        match channel {
            "esr" => Channel::Esr,
            // Developer Edition is "aurora"; unbranded builds say "default".
            "aurora" | "nightly" | "default" => Channel::Prerelease,
            _ => Channel::Release,
        }
    }

    /// From the version alone, when the build's folder is gone: e.g. `153.8.0esr_…`,
    /// `148.0a1_…` (Nightly). A `b` version may be Beta, which keeps signature checks on.
    pub fn from_version(version: &str) -> Channel {
        let version = version.split('_').next().unwrap_or_default();
        if version.ends_with("esr") {
            Channel::Esr
        } else if version.contains('a') {
            Channel::Prerelease
        } else if version.is_empty() {
            Channel::Unknown
        } else {
            Channel::Release
        }
    }

    /// The Firefox that last ran the profile, from its `compatibility.ini`.
    pub fn of_profile(profile: &Path) -> Channel {
        let Ok(compat) = std::fs::read_to_string(profile.join("compatibility.ini")) else {
            return Channel::Unknown;
        };
        let from_build = ini_value(&compat, "LastPlatformDir")
            .and_then(|dir| {
                std::fs::read_to_string(Path::new(&dir).join("defaults/pref/channel-prefs.js")).ok()
            })
            .and_then(|prefs| update_channel(&prefs));
        match from_build {
            Some(channel) => Channel::from_update_channel(&channel),
            None => Channel::from_version(&ini_value(&compat, "LastVersion").unwrap_or_default()),
        }
    }
}

/// The value of `pref("app.update.channel", "…")` in a Firefox defaults file.
fn update_channel(prefs: &str) -> Option<String> {
    let line = prefs
        .lines()
        .find(|l| l.contains("\"app.update.channel\""))?;
    let value = line.split(',').nth(1)?;
    Some(
        value
            .trim()
            .trim_end_matches(';')
            .trim_end_matches(')')
            .trim()
            .trim_matches('"')
            .to_owned(),
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub name: String,
    pub path: PathBuf,
    pub channel: Channel,
}

/// The folders holding `profiles.ini`: Firefox 147 and later start new users in
/// `$XDG_CONFIG_HOME/mozilla/firefox`, earlier ones in `~/.mozilla/firefox`.
pub fn profile_roots(layout: &Layout) -> Vec<PathBuf> {
    match layout.os {
        Os::Linux => vec![
            layout.home.join(".mozilla/firefox"),
            layout.config_home.join("mozilla/firefox"),
        ],
        Os::MacOs => vec![layout.home.join("Library/Application Support/Firefox")],
    }
}

/// The profiles `profiles.ini` names under `root`, with the Firefox that last ran each.
pub fn profiles_in(root: &Path, ini: &str) -> Vec<Profile> {
    let mut out = Vec::new();
    let mut section: Option<(String, Option<String>, bool)> = None;
    let finish = |section: Option<(String, Option<String>, bool)>, out: &mut Vec<Profile>| {
        if let Some((name, Some(path), relative)) = section {
            let path = if relative {
                root.join(path)
            } else {
                PathBuf::from(path)
            };
            out.push(Profile {
                name,
                channel: Channel::of_profile(&path),
                path,
            });
        }
    };
    for line in ini.lines().map(str::trim) {
        if line.starts_with('[') {
            finish(section.take(), &mut out);
            if line.starts_with("[Profile") {
                section = Some((String::new(), None, true));
            }
        } else if let Some((key, value)) = line.split_once('=')
            && let Some(s) = section.as_mut()
        {
            match key.trim() {
                "Name" => s.0 = value.trim().to_owned(),
                "Path" => s.1 = Some(value.trim().to_owned()),
                "IsRelative" => s.2 = value.trim() != "0",
                _ => {}
            }
        }
    }
    finish(section, &mut out);
    out
}

fn ini_value(text: &str, key: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim().to_owned())
}

/// Every profile of this user, each once.
pub fn profiles(layout: &Layout) -> Vec<Profile> {
    let mut all: Vec<Profile> = Vec::new();
    for root in profile_roots(layout) {
        if let Ok(ini) = std::fs::read_to_string(root.join("profiles.ini")) {
            for p in profiles_in(&root, &ini) {
                if p.path.is_dir() && !all.iter().any(|q| q.path == p.path) {
                    all.push(p);
                }
            }
        }
    }
    all
}

pub fn xpi_path(profile: &Path) -> PathBuf {
    profile.join("extensions").join(extension::xpi_name())
}

/// The block's line for a setting the person had before him's install: uninstall leaves it.
const HAD: &str = "// him: set before him, kept by him uninstall: ";

/// The settings of `PREFS` the block of `text` says the person had before (see [`HAD`]).
fn had_before(text: &str) -> Vec<&'static str> {
    PREFS
        .into_iter()
        .filter(|pref| text.lines().any(|l| l.strip_prefix(HAD) == Some(*pref)))
        .collect()
}

/// `text` refused when it has the block's first line but not its last after it (edited by
/// hand): taking the block out would take the person's lines after it too.
fn check_block(text: &str, path: &Path) -> io::Result<()> {
    let mut lines = text.lines().skip_while(|l| *l != BEGIN);
    if lines.next().is_some() && !lines.any(|l| l == END) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} has him's line \"{BEGIN}\" but not \"{END}\" after it; put it back or \
                 remove him's lines by hand, then run this again",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Where to write `user.js`: the file a symbolic link (a dotfile manager's) points to.
fn user_js(profile: &Path) -> io::Result<PathBuf> {
    let path = profile.join("user.js");
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(&path),
        _ => Ok(path),
    }
}

/// `text` without him's block (and the blank line before it, which `with_block` adds).
fn without_block(text: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line == BEGIN {
            inside = true;
            if out.last().is_some_and(|l| l.is_empty()) {
                out.pop();
            }
        } else if inside {
            inside = line != END;
        } else {
            out.push(line);
        }
    }
    let mut joined = out.join("\n");
    if !joined.is_empty() {
        joined.push('\n');
    }
    joined
}

/// `text` with him's block at the end, once, saying which settings the person had before.
fn with_block(text: &str, had: &[&str]) -> String {
    let mut out = without_block(text);
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(BEGIN);
    out.push('\n');
    for pref in had {
        out.push_str(HAD);
        out.push_str(pref);
        out.push('\n');
    }
    for pref in PREFS {
        out.push_str(pref);
        out.push('\n');
    }
    out.push_str(END);
    out.push('\n');
    out
}

/// Whether `profile`'s user.js holds him's block (the person agreed at an earlier install).
pub fn has_block(profile: &Path) -> bool {
    read_or_empty(&profile.join("user.js")).is_ok_and(|t| t.lines().any(|l| l == BEGIN))
}

/// Installs the add-on in `profile` for good; true when anything changed.
pub fn install(profile: &Path) -> io::Result<bool> {
    let user_js = user_js(profile)?;
    let old = read_or_empty(&user_js)?;
    check_block(&old, &user_js)?;
    // What the person had set before him's first install stays when him's block goes. Once
    // the block is there, prefs.js holds its settings because Firefox copied them: the block
    // already says what was the person's.
    let had = if old.lines().any(|l| l == BEGIN) {
        had_before(&old)
    } else {
        let prefs = read_or_empty(&profile.join("prefs.js"))?;
        PREFS
            .into_iter()
            .filter(|pref| old.lines().chain(prefs.lines()).any(|l| l == *pref))
            .collect()
    };
    let xpi = extension::write_if_changed(&xpi_path(profile), &extension::xpi())?;
    let prefs = extension::write_if_changed(&user_js, with_block(&old, &had).as_bytes())?;
    Ok(xpi || prefs)
}

/// What uninstalling from one profile did.
#[derive(Debug, Default)]
pub struct Removed {
    pub xpi: bool,
    pub prefs: bool,
}

/// Removes the add-on and the settings from `profile`.
pub fn uninstall(profile: &Path) -> io::Result<Removed> {
    let user_js = user_js(profile)?;
    let old = read_or_empty(&user_js)?;
    check_block(&old, &user_js)?;
    let mut removed = Removed::default();
    match std::fs::remove_file(xpi_path(profile)) {
        Ok(()) => removed.xpi = true,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    if old.lines().any(|l| l == BEGIN) {
        let had = had_before(&old);
        let rest = without_block(&old);
        if rest.is_empty() {
            std::fs::remove_file(&user_js)?;
        } else {
            extension::write_if_changed(&user_js, rest.as_bytes())?;
        }
        removed.prefs = true;
        // Firefox copied the block's settings into prefs.js; without this they would stay.
        let prefs_js = profile.join("prefs.js");
        let prefs = read_or_empty(&prefs_js)?;
        let ours = |l: &str| PREFS.contains(&l) && !had.contains(&l);
        if prefs.lines().any(ours) {
            let kept: Vec<&str> = prefs.lines().filter(|l| !ours(l)).collect();
            extension::write_if_changed(&prefs_js, format!("{}\n", kept.join("\n")).as_bytes())?;
        }
    }
    Ok(removed)
}

/// Whether Firefox is running with this profile (it holds `lock` while it runs).
pub fn in_use(profile: &Path) -> bool {
    std::fs::symlink_metadata(profile.join("lock")).is_ok()
}

fn read_or_empty(path: &Path) -> io::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_channel_comes_from_the_build_that_last_ran_the_profile() {
        let tmp = tempfile::tempdir().unwrap();
        let build = tmp.path().join("usr/lib/firefox-esr");
        std::fs::create_dir_all(build.join("defaults/pref")).unwrap();
        std::fs::write(
            build.join("defaults/pref/channel-prefs.js"),
            "/* licence */\npref(\"app.update.channel\", \"esr\");\n",
        )
        .unwrap();
        let profile = tmp.path().join("p");
        std::fs::create_dir(&profile).unwrap();
        assert_eq!(Channel::of_profile(&profile), Channel::Unknown);
        std::fs::write(
            profile.join("compatibility.ini"),
            format!(
                "[Compatibility]\nLastVersion=153.8.0_2026/2026\nLastPlatformDir={}\n",
                build.display()
            ),
        )
        .unwrap();
        assert_eq!(Channel::of_profile(&profile), Channel::Esr);
        assert_eq!(Channel::from_update_channel("aurora"), Channel::Prerelease);
        assert_eq!(Channel::from_update_channel("beta"), Channel::Release);
        assert_eq!(Channel::from_update_channel("release"), Channel::Release);
    }

    #[test]
    fn without_the_build_the_channel_comes_from_the_last_version() {
        assert_eq!(
            Channel::from_version("153.8.0esr_20260101/20260101"),
            Channel::Esr
        );
        assert_eq!(
            Channel::from_version("148.0a1_20260101/1"),
            Channel::Prerelease
        );
        assert_eq!(
            Channel::from_version("147.0b5_20260101/1"),
            Channel::Release
        );
        assert_eq!(
            Channel::from_version("146.0.1_20260101/1"),
            Channel::Release
        );
        assert_eq!(Channel::from_version(""), Channel::Unknown);
        assert!(!Channel::Release.takes_unsigned());
    }

    #[test]
    fn profiles_ini_gives_relative_and_absolute_profiles() {
        let ini = "[General]\nStartWithLastProfile=1\n\n[Profile1]\nName=work\nIsRelative=0\nPath=/data/work\n\n\
                   [Profile0]\nName=default-esr\nIsRelative=1\nPath=abc.default-esr\nDefault=1\n\n[Install4F96D1932A9F858E]\nDefault=abc.default-esr\n";
        let found = profiles_in(Path::new("/home/u/.mozilla/firefox"), ini);
        let paths: Vec<_> = found
            .iter()
            .map(|p| (p.name.as_str(), p.path.clone()))
            .collect();
        assert_eq!(
            paths,
            [
                ("work", PathBuf::from("/data/work")),
                (
                    "default-esr",
                    PathBuf::from("/home/u/.mozilla/firefox/abc.default-esr")
                )
            ]
        );
    }

    #[test]
    fn the_block_is_added_once_and_removed_leaving_the_person_s_lines() {
        let mine = "user_pref(\"browser.startup.page\", 3);\n";
        let once = with_block(mine, &[]);
        assert_eq!(with_block(&once, &[]), once);
        assert!(once.starts_with(mine));
        for pref in PREFS {
            assert_eq!(once.matches(pref).count(), 1);
        }
        assert_eq!(without_block(&once), mine);
        assert_eq!(without_block(&with_block("", &[])), "");
    }

    #[test]
    fn uninstall_puts_back_user_js_and_prefs_js() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path();
        std::fs::write(p.join("user.js"), "user_pref(\"a\", 1);\n").unwrap();
        assert!(install(p).unwrap());
        assert!(!install(p).unwrap(), "a second install changes nothing");
        assert!(xpi_path(p).is_file());
        // What Firefox writes into prefs.js at its next start.
        std::fs::write(
            p.join("prefs.js"),
            format!("user_pref(\"b\", 2);\n{}\n{}\n", PREFS[0], PREFS[1]),
        )
        .unwrap();
        let removed = uninstall(p).unwrap();
        assert!(removed.xpi && removed.prefs);
        assert_eq!(
            std::fs::read_to_string(p.join("user.js")).unwrap(),
            "user_pref(\"a\", 1);\n"
        );
        assert_eq!(
            std::fs::read_to_string(p.join("prefs.js")).unwrap(),
            "user_pref(\"b\", 2);\n"
        );
        assert!(!xpi_path(p).exists());
    }

    #[test]
    fn a_setting_the_person_had_before_stays_after_uninstall() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path();
        // Set in about:config before him came (another unsigned add-on on ESR).
        std::fs::write(p.join("prefs.js"), format!("{}\n", PREFS[0])).unwrap();
        assert!(install(p).unwrap());
        // Firefox copies the block into prefs.js; a second install keeps what the block says.
        std::fs::write(p.join("prefs.js"), format!("{}\n{}\n", PREFS[0], PREFS[1])).unwrap();
        assert!(!install(p).unwrap(), "a second install changes nothing");
        uninstall(p).unwrap();
        assert_eq!(
            std::fs::read_to_string(p.join("prefs.js")).unwrap(),
            format!("{}\n", PREFS[0]),
            "the person's own setting stays; him's goes"
        );
    }

    #[test]
    fn a_symlinked_user_js_is_written_through_and_a_broken_block_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("profile");
        std::fs::create_dir(&p).unwrap();
        let dotfile = tmp.path().join("dotfiles-user.js");
        std::fs::write(&dotfile, "user_pref(\"a\", 1);\n").unwrap();
        std::os::unix::fs::symlink(&dotfile, p.join("user.js")).unwrap();
        install(&p).unwrap();
        assert!(
            std::fs::symlink_metadata(p.join("user.js"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(std::fs::read_to_string(&dotfile).unwrap().contains(BEGIN));
        uninstall(&p).unwrap();
        assert_eq!(
            std::fs::read_to_string(&dotfile).unwrap(),
            "user_pref(\"a\", 1);\n"
        );

        // A block whose last line was edited away: nothing after it may be lost.
        let broken = format!("{BEGIN}\n{}\nuser_pref(\"mine\", 1);\n", PREFS[0]);
        std::fs::write(&dotfile, &broken).unwrap();
        let err = uninstall(&p).unwrap_err();
        assert!(err.to_string().contains("but not"), "{err}");
        assert!(install(&p).is_err());
        assert_eq!(std::fs::read_to_string(&dotfile).unwrap(), broken);
    }
}
