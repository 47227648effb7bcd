//! The loopback page's language: the extension's own messages files
//! (`extension/_locales/<name>/messages.json`, embedded), one of them chosen by the
//! request's `Accept-Language` (RFC 9110 §12.5.4), English when none fits.
//!
//! The page gets the whole chosen table ([`Locale::table_json`]) for `lib/i18n.js`, so the
//! form says in the person's language what the side panel says in theirs; the few words the
//! server writes itself (the title, the page shown after the question closed) come from the
//! same table ([`Locale::text`]).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use http::HeaderMap;
use http::header::ACCEPT_LANGUAGE;

/// A language of the page.
#[derive(Debug, PartialEq)]
pub struct Locale {
    /// The `_locales` directory: `zh_CN`.
    pub name: &'static str,
    /// Its BCP 47 tag, for `<html lang>`: `zh-CN`.
    pub tag: &'static str,
    source: &'static str,
}

/// Every language shipped; the first is the default (the manifests' `default_locale`).
/// Adding one: its `_locales` file, then a line here.
pub static LOCALES: [Locale; 3] = [
    Locale {
        name: "en",
        tag: "en",
        source: include_str!("../../extension/_locales/en/messages.json"),
    },
    Locale {
        name: "de",
        tag: "de",
        source: include_str!("../../extension/_locales/de/messages.json"),
    },
    Locale {
        name: "zh_CN",
        tag: "zh-CN",
        source: include_str!("../../extension/_locales/zh_CN/messages.json"),
    },
];

/// Each locale's messages, key → message, in the order of [`LOCALES`]. A file that does not
/// parse (the locale tests catch that) counts as empty, so its words fall back to English.
static MESSAGES: LazyLock<Vec<BTreeMap<String, String>>> =
    LazyLock::new(|| LOCALES.iter().map(|l| parse(l.source)).collect());

fn parse(source: &str) -> BTreeMap<String, String> {
    #[derive(serde::Deserialize)]
    struct Entry {
        message: String,
    }
    serde_json::from_str::<BTreeMap<String, Entry>>(source)
        .map(|entries| {
            entries
                .into_iter()
                // Chrome's messages.json writes "$" as "$$"; undone as chrome.i18n would.
                .map(|(key, entry)| (key, entry.message.replace("$$", "$")))
                .collect()
        })
        .unwrap_or_default()
}

impl Locale {
    fn messages(&self) -> &'static BTreeMap<String, String> {
        let at = LOCALES
            .iter()
            .position(|l| l.name == self.name)
            .unwrap_or(0);
        &MESSAGES[at]
    }

    /// The message `key`, else the English one, else the key itself (so a missing string
    /// shows where it is missing).
    pub fn text<'a>(&self, key: &'a str) -> &'a str {
        self.messages()
            .get(key)
            .or_else(|| english().messages().get(key))
            .map_or(key, String::as_str)
    }

    /// The table `lib/i18n.js`'s `useMessages` takes: `{key: {message}}`, as in the file but
    /// without the descriptions for translators, and with English for any key missing here.
    pub fn table_json(&self) -> String {
        let mut table = serde_json::Map::new();
        for (key, english) in english().messages() {
            let message = self.messages().get(key).unwrap_or(english);
            // `useMessages` reads the raw file format, where "$" is "$$".
            table.insert(
                key.clone(),
                serde_json::json!({ "message": message.replace('$', "$$") }),
            );
        }
        serde_json::Value::Object(table).to_string()
    }
}

pub fn english() -> &'static Locale {
    &LOCALES[0]
}

/// The locale for a request: its `Accept-Language` (every such header, in order).
pub fn for_request(headers: &HeaderMap) -> &'static Locale {
    let values: Vec<&str> = headers
        .get_all(ACCEPT_LANGUAGE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    choose(&values.join(","))
}

/// The locale the process's environment asks for (`LC_ALL`, `LC_MESSAGES`, `LANG`, as
/// POSIX orders them, then `LANGUAGE`), for what him writes with no request to go by.
pub fn from_environment(var: impl Fn(&str) -> Option<String>) -> &'static Locale {
    let posix = ["LC_ALL", "LC_MESSAGES", "LANG"]
        .into_iter()
        .filter_map(&var)
        .find(|v| !v.is_empty());
    let wanted = posix
        .into_iter()
        .chain(var("LANGUAGE").map(|l| l.replace(':', ",")));
    let tags: Vec<String> = wanted
        // "de_DE.UTF-8@euro" → "de_DE"; "C" and "POSIX" name no language.
        .flat_map(|v| {
            v.split(',')
                .map(|t| t.split(['.', '@']).next().unwrap_or("").to_owned())
                .collect::<Vec<_>>()
        })
        .filter(|t| !t.is_empty() && t != "C" && t != "POSIX")
        .collect();
    choose(&tags.join(","))
}

/// The shipped locale that best fits an `Accept-Language` value: its tags by weight (ties in
/// the order given), each matched exactly, then by its language alone (`de-AT` → de);
/// English when none matches.
pub fn choose(accept_language: &str) -> &'static Locale {
    preferences(accept_language)
        .iter()
        .find_map(|tag| matching(tag))
        .unwrap_or_else(english)
}

/// The language tags of an `Accept-Language` value, most wanted first, lowercase, without
/// those of weight 0 (not wanted) or with a weight that is no number.
fn preferences(value: &str) -> Vec<String> {
    let mut weighted: Vec<(u32, String)> = Vec::new();
    for item in value.split(',') {
        let mut parts = item.split(';');
        let tag = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        if tag.is_empty() {
            continue;
        }
        let mut weight = Some(1000);
        for param in parts {
            let (name, v) = param.split_once('=').unwrap_or((param, ""));
            if name.trim().eq_ignore_ascii_case("q") {
                weight = v
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|q| (0.0..=1.0).contains(q))
                    .map(|q| (q * 1000.0).round() as u32);
            }
        }
        match weight {
            Some(w) if w > 0 => weighted.push((w, tag)),
            _ => {}
        }
    }
    // A stable sort: equal weights keep the order the browser gave.
    weighted.sort_by_key(|(w, _)| std::cmp::Reverse(*w));
    weighted.into_iter().map(|(_, tag)| tag).collect()
}

fn matching(tag: &str) -> Option<&'static Locale> {
    let tag = tag.replace('_', "-");
    let mut subtags = tag.split('-');
    let language = subtags.next().unwrap_or("");
    let rest: Vec<&str> = subtags.collect();
    if language == "zh" {
        // For Chinese the script is what matters, and a region implies one: Simplified for
        // zh, zh-CN, zh-SG, zh-Hans…; Traditional (not shipped) for zh-TW, zh-HK, zh-Hant…
        let traditional = rest.contains(&"hant")
            || (!rest.contains(&"hans") && rest.iter().any(|s| matches!(*s, "tw" | "hk" | "mo")));
        let want = if traditional { "zh-tw" } else { "zh-cn" };
        return LOCALES.iter().find(|l| l.tag.eq_ignore_ascii_case(want));
    }
    LOCALES
        .iter()
        .find(|l| l.tag.eq_ignore_ascii_case(&tag))
        .or_else(|| {
            LOCALES
                .iter()
                .find(|l| l.tag.split('-').next() == Some(language))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(header: &str) -> &'static str {
        choose(header).name
    }

    #[test]
    fn accept_language_picks_the_best_shipped_locale_by_weight() {
        for (header, name) in [
            ("de", "de"),
            ("de-DE", "de"),
            ("de-AT,de;q=0.9", "de"),
            ("DE-de", "de"),
            ("zh", "zh_CN"),
            ("zh-CN", "zh_CN"),
            ("zh-cn,zh;q=0.9,en;q=0.8", "zh_CN"),
            ("zh-Hans", "zh_CN"),
            ("zh-Hans-HK", "zh_CN"),
            ("zh-SG", "zh_CN"),
            ("zh_CN", "zh_CN"),
            ("en-US,en;q=0.9,de;q=0.8", "en"),
            // Weights, not order, decide; equal weights keep the order.
            ("de;q=0.5, zh-CN", "zh_CN"),
            ("fr, de;q=0.7, zh;q=0.7", "de"),
            ("de;q=0.8, zh;q=0.8", "de"),
            // Not wanted at all, or a weight that is no weight.
            ("de;q=0, zh", "zh_CN"),
            ("de;q=2, zh;q=0.1", "zh_CN"),
            ("de;q=x, zh;q=0.1", "zh_CN"),
            // Traditional Chinese is not shipped: the next choice, else English.
            ("zh-TW", "en"),
            ("zh-Hant", "en"),
            ("zh-HK, de;q=0.5", "de"),
            // Nothing that fits.
            ("fr-CH, fr;q=0.9, *;q=0.5", "en"),
            ("*", "en"),
            ("", "en"),
            (" , ;q=1,", "en"),
            ("x-klingon, i-default", "en"),
        ] {
            assert_eq!(chosen(header), name, "Accept-Language: {header}");
        }
    }

    #[test]
    fn every_accept_language_header_of_a_request_counts_and_none_means_english() {
        let mut headers = HeaderMap::new();
        assert_eq!(for_request(&headers).name, "en");
        headers.append(ACCEPT_LANGUAGE, "fr".parse().unwrap());
        headers.append(ACCEPT_LANGUAGE, "zh-CN;q=0.5".parse().unwrap());
        assert_eq!(for_request(&headers).name, "zh_CN");
        let mut latin1 = HeaderMap::new();
        latin1.insert(
            ACCEPT_LANGUAGE,
            http::HeaderValue::from_bytes(b"d\xe9").unwrap(),
        );
        assert_eq!(for_request(&latin1).name, "en");
    }

    #[test]
    fn the_environment_names_a_locale_as_posix_orders_its_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(from_environment(env(&[("LANG", "de_DE.UTF-8")])).name, "de");
        assert_eq!(
            from_environment(env(&[("LANG", "de_DE.UTF-8"), ("LC_ALL", "zh_CN.UTF-8")])).name,
            "zh_CN"
        );
        assert_eq!(from_environment(env(&[("LANG", "C.UTF-8")])).name, "en");
        assert_eq!(
            from_environment(env(&[("LANG", "C"), ("LANGUAGE", "fr:de")])).name,
            "de"
        );
        assert_eq!(from_environment(env(&[])).name, "en");
    }

    #[test]
    fn each_shipped_file_parses_and_has_every_english_key() {
        let english = english().messages();
        assert!(english.len() > 50, "the English file lost its messages");
        for locale in &LOCALES {
            let messages = locale.messages();
            let missing: Vec<_> = english
                .keys()
                .filter(|k| !messages.contains_key(*k))
                .collect();
            assert!(missing.is_empty(), "{}: {missing:?}", locale.name);
        }
    }

    #[test]
    fn text_falls_back_to_english_then_to_the_key() {
        let german = choose("de");
        assert_eq!(
            german.text("loopbackCanClose"),
            "Sie können diesen Tab schließen."
        );
        assert_eq!(
            english().text("loopbackCanClose"),
            "You can close this tab."
        );
        assert_eq!(german.text("noSuchKey"), "noSuchKey");
        let table: serde_json::Value = serde_json::from_str(&german.table_json()).unwrap();
        assert_eq!(table["decline"]["message"], "Ablehnen");
        assert!(table["decline"].get("description").is_none());
    }
}
