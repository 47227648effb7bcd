//! What `him install` tells the person at the end: the one thing left in each browser it set
//! up, with the folder to choose; how to pin the icon and open the panel; the demo question.
//! Pure text, so each browser's wording is tested.

use std::path::Path;

use super::browsers::{self, Family};
use super::extension::Build;
use super::firefox::Profile;
use crate::SHORTCUT;
use crate::cli::Browser;

/// What `him install` did about keeping the Firefox add-on (firefox.rs).
#[derive(Debug, Default)]
pub struct FirefoxSetup {
    /// Profiles (ESR, Developer Edition, Nightly) that now hold the add-on for good.
    pub installed: Vec<Profile>,
    /// Profiles of a release Firefox (or never started), which keep only signed add-ons.
    pub release: Vec<Profile>,
    /// The person said no (or there was no terminal to ask on, and no --yes).
    pub declined: bool,
    pub failed: bool,
}

/// The page that lists extensions in a Chromium-family browser.
pub fn extensions_page(browser: Browser) -> &'static str {
    match browser {
        Browser::Edge => "edge://extensions",
        Browser::Brave => "brave://extensions",
        Browser::Vivaldi => "vivaldi://extensions",
        Browser::Opera => "opera://extensions",
        _ => "chrome://extensions",
    }
}

/// What is left for the person, per browser, once the files are written. `updated` says the
/// extension folder held an older copy, which a browser that loaded it picks up on restart.
pub fn next_steps(
    chosen: &[Browser],
    root: &Path,
    him: &str,
    updated: bool,
    firefox: Option<&FirefoxSetup>,
) -> String {
    let chromium_dir = root.join(Build::Chromium.folder_name());
    let mut text = String::from("\nOne step is left in each browser:\n");
    for browser in chosen {
        let name = browsers::display_name(*browser);
        match browsers::family(*browser) {
            Family::Chromium => text.push_str(&format!(
                "  {name}: open {}, turn on \"Developer mode\", click \"Load unpacked\" and choose\n      {}\n",
                extensions_page(*browser),
                chromium_dir.display()
            )),
            Family::Firefox => text.push_str(&firefox_steps(root, him, firefox)),
        }
    }
    if updated {
        text.push_str(&format!(
            "The extension's files were updated in place: a browser that already loaded them \
             uses the new ones when it restarts (or at once: the reload arrow on the him card in {}).\n",
            extensions_page(Browser::Chromium)
        ));
    }
    text.push_str(&format!(
        "Then pin him: the puzzle-piece icon in the toolbar, then the pin next to him. Click the \
         him icon, or press {SHORTCUT}, to open the panel.\n\
         Try it: `{him} try` puts a demo question in the panel. Check everything with `{him} doctor`.\n"
    ));
    text
}

fn firefox_steps(root: &Path, him: &str, setup: Option<&FirefoxSetup>) -> String {
    let mut text = String::new();
    let installed = setup.map(|s| s.installed.as_slice()).unwrap_or_default();
    for profile in installed {
        text.push_str(&format!(
            "  Firefox (profile {}): restart Firefox twice: it installs him at the first start \
             and runs it from the next, for good (signature checks are off in that profile until \
             `{him} uninstall`).\n",
            profile.name
        ));
    }
    let temporary = installed.is_empty() || setup.is_some_and(|s| !s.release.is_empty());
    if temporary {
        text.push_str(&format!(
            "  Firefox: open about:debugging#/runtime/this-firefox, click \"Load Temporary Add-on…\" \
             and choose\n      {}\n    (a temporary add-on is gone when Firefox restarts.",
            root.join(Build::Firefox.folder_name()).join("manifest.json").display()
        ));
        if setup.is_some_and(|s| s.declined) {
            text.push_str(&format!(
                " To keep it in Firefox ESR, Developer Edition or Nightly: `{him} install --browser \
                 firefox --yes`, which turns signature checks off in those profiles."
            ));
        }
        if setup.is_some_and(|s| !s.release.is_empty()) {
            text.push_str(
                " Release Firefox keeps only add-ons signed by Mozilla: see docs/install.md#firefox in the him repository.",
            );
        }
        text.push_str(")\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_chromium_browser_is_sent_to_its_own_extensions_page_with_the_folder() {
        let root = Path::new("/home/u/.local/share/him/extension");
        let text = next_steps(
            &[Browser::Edge, Browser::Chromium],
            root,
            "him",
            false,
            None,
        );
        assert!(
            text.contains("Microsoft Edge: open edge://extensions"),
            "{text}"
        );
        assert!(
            text.contains("Chromium: open chrome://extensions"),
            "{text}"
        );
        assert!(text.contains("Load unpacked"), "{text}");
        assert!(
            text.contains("/home/u/.local/share/him/extension/chromium\n"),
            "{text}"
        );
        assert!(text.contains("Alt+Shift+H"), "{text}");
        assert!(text.contains("`him try`"), "{text}");
        assert!(!text.contains("updated in place"), "{text}");
    }

    #[test]
    fn firefox_installed_for_good_says_restart_and_a_release_profile_gets_the_temporary_way() {
        use crate::install::firefox::Channel;
        let profile = |name: &str, channel| Profile {
            name: name.into(),
            path: format!("/p/{name}").into(),
            channel,
        };
        let setup = FirefoxSetup {
            installed: vec![profile("default-esr", Channel::Esr)],
            ..FirefoxSetup::default()
        };
        let text = next_steps(
            &[Browser::Firefox],
            Path::new("/r"),
            "him",
            false,
            Some(&setup),
        );
        assert!(
            text.contains("Firefox (profile default-esr): restart Firefox twice"),
            "{text}"
        );
        assert!(!text.contains("Temporary"), "{text}");

        let setup = FirefoxSetup {
            release: vec![profile("default-release", Channel::Release)],
            ..FirefoxSetup::default()
        };
        let text = next_steps(
            &[Browser::Firefox],
            Path::new("/r"),
            "him",
            false,
            Some(&setup),
        );
        assert!(text.contains("Load Temporary Add-on"), "{text}");
        assert!(text.contains("/r/firefox/manifest.json"), "{text}");
        assert!(text.contains("signed by Mozilla"), "{text}");

        let setup = FirefoxSetup {
            declined: true,
            ..FirefoxSetup::default()
        };
        let text = next_steps(
            &[Browser::Firefox],
            Path::new("/r"),
            "him",
            false,
            Some(&setup),
        );
        assert!(
            text.contains("`him install --browser firefox --yes`"),
            "{text}"
        );
    }

    #[test]
    fn an_update_says_when_the_browser_picks_it_up() {
        let text = next_steps(&[Browser::Chrome], Path::new("/r"), "him", true, None);
        assert!(text.contains("when it restarts"), "{text}");
    }
}
