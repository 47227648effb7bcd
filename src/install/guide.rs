//! What `him install` tells the person at the end: the one thing left in each browser it set
//! up, with the folder to choose; how to pin the icon and open the panel; the demo question.
//! Pure text, so each browser's wording is tested.

use std::path::Path;

use super::browsers::{self, Family};
use super::extension::Build;
use crate::cli::Browser;

/// The keyboard shortcut that opens the panel (manifest.json `commands`), as the browsers
/// show it.
pub const SHORTCUT: &str = "Alt+Shift+H";

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
pub fn next_steps(chosen: &[Browser], root: &Path, him: &str, updated: bool) -> String {
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
            Family::Firefox => text.push_str(&format!(
                "  {name}: open about:debugging#/runtime/this-firefox, click \"Load Temporary Add-on…\" \
                 and choose\n      {}\n    (a temporary add-on is gone when Firefox restarts)\n",
                root.join(Build::Firefox.folder_name()).join("manifest.json").display()
            )),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_chromium_browser_is_sent_to_its_own_extensions_page_with_the_folder() {
        let root = Path::new("/home/u/.local/share/him/extension");
        let text = next_steps(&[Browser::Edge, Browser::Chromium], root, "him", false);
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
    fn an_update_says_when_the_browser_picks_it_up() {
        let text = next_steps(&[Browser::Chrome], Path::new("/r"), "him", true);
        assert!(text.contains("when it restarts"), "{text}");
    }
}
