//! The native-messaging host manifest: building it, and checking one found on disk.
//!
//! Pure: no file is read here. The rules and the browser's own error text for each mistake
//! come from FACTS.md (Chromium 156, tested); Firefox's rules are the same except that it
//! names add-ons in `allowed_extensions`.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::browsers::Family;
use crate::{EXTENSION_ID, GECKO_ID, HOST_NAME};

/// The manifests packagers copy (`manifests/`, naming `/usr/bin/him`): every manifest him
/// writes starts from one of these, so the two cannot drift apart.
const CHROMIUM_TEMPLATE: &str = include_str!("../../manifests/chromium/dev.him.host.json");
const FIREFOX_TEMPLATE: &str = include_str!("../../manifests/firefox/dev.him.host.json");

fn template(family: Family) -> &'static str {
    match family {
        Family::Chromium => CHROMIUM_TEMPLATE,
        Family::Firefox => FIREFOX_TEMPLATE,
    }
}

/// The manifest as the browsers read it. Field order is the order written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostManifest {
    pub name: String,
    pub description: String,
    pub path: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_origins: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_extensions: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestError {
    BadExtensionId(String),
    RelativePath(String),
    NotUtf8Path(String),
    /// The manifest built into the binary does not parse: a broken build, never the user's.
    BadTemplate(String),
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManifestError::BadExtensionId(id) => write!(
                f,
                "`{id}` is not a Chromium extension id: an id is 32 letters from a to p, as \
                 shown on chrome://extensions with Developer mode on"
            ),
            ManifestError::RelativePath(p) => write!(
                f,
                "the host path `{p}` is not absolute; browsers refuse a relative path \
                 (\"Specified native messaging host not found.\")"
            ),
            ManifestError::BadTemplate(err) => write!(
                f,
                "the host manifest built into him is broken ({err}); reinstall him"
            ),
            ManifestError::NotUtf8Path(p) => {
                write!(
                    f,
                    "the host path `{p}` is not valid UTF-8 and cannot go in a manifest"
                )
            }
        }
    }
}

impl std::error::Error for ManifestError {}

/// Accepts a bare id or its origin form (`chrome-extension://<id>/`), returns the bare id.
pub fn parse_extension_id(input: &str) -> Result<String, ManifestError> {
    let trimmed = input.trim();
    let id = trimmed
        .strip_prefix("chrome-extension://")
        .map(|rest| rest.trim_end_matches('/'))
        .unwrap_or(trimmed);
    if is_extension_id(id) {
        Ok(id.to_owned())
    } else {
        Err(ManifestError::BadExtensionId(input.to_owned()))
    }
}

/// Chromium derives ids from the key's hash, written with the letters a–p (one per nibble).
pub fn is_extension_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| (b'a'..=b'p').contains(&b))
}

pub fn origin(id: &str) -> String {
    format!("chrome-extension://{id}/")
}

/// The pinned id first, then the extra ones in the order given, without duplicates.
pub fn extension_ids(extra: &[String]) -> Result<Vec<String>, ManifestError> {
    let mut ids = vec![EXTENSION_ID.to_owned()];
    for raw in extra {
        let id = parse_extension_id(raw)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Builds the manifest for one browser family: its template from `manifests/`, with `host`
/// as the path. `host` must be absolute; `extra_ids` only matter to the Chromium family
/// (Firefox add-ons are named by their gecko id), after the origins the template allows.
pub fn build(
    family: Family,
    host: &Path,
    extra_ids: &[String],
) -> Result<HostManifest, ManifestError> {
    if !host.is_absolute() {
        return Err(ManifestError::RelativePath(host.display().to_string()));
    }
    let path = host
        .to_str()
        .ok_or_else(|| ManifestError::NotUtf8Path(host.display().to_string()))?
        .to_owned();
    let ids = extension_ids(extra_ids)?;
    let mut manifest: HostManifest = serde_json::from_str(template(family))
        .map_err(|err| ManifestError::BadTemplate(err.to_string()))?;
    manifest.path = path;
    if let Some(origins) = manifest.allowed_origins.as_mut() {
        for id in ids.iter().map(|id| origin(id)) {
            if !origins.contains(&id) {
                origins.push(id);
            }
        }
    }
    Ok(manifest)
}

/// The bytes written to disk: pretty JSON and a final newline, the same every time.
pub fn render(manifest: &HostManifest) -> String {
    let mut text = serde_json::to_string_pretty(manifest).unwrap_or_default();
    text.push('\n');
    text
}

/// Whether a file's contents are a him host manifest (so uninstall may remove it).
pub fn is_ours(text: &str) -> bool {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| {
            v.get("name")
                .and_then(Value::as_str)
                .map(|n| n == HOST_NAME)
        })
        .unwrap_or(false)
}

/// One thing wrong with a manifest's contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    BadJson(String),
    NotAnObject,
    NameMissing,
    /// Upper case or other characters Chrome refuses.
    NameInvalid(String),
    /// The browser looks the file up by name: `<name>.json`.
    NameNotFileName {
        name: String,
        file: String,
    },
    /// A valid manifest, but for another host than the one the extension calls.
    NameNotOurs(String),
    TypeNotStdio(String),
    PathMissing,
    PathRelative(String),
    /// The extension's origin (or gecko id for Firefox) is not allowed.
    ExtensionNotAllowed(String),
    /// Chrome refuses wildcards and malformed origins outright.
    OriginInvalid(String),
}

impl Problem {
    /// What the browser says when it meets this mistake (FACTS.md), for the table in
    /// docs/troubleshooting.md.
    pub fn browser_error(&self) -> Option<&'static str> {
        match self {
            Problem::NameInvalid(_) => Some("Invalid native messaging host name specified."),
            Problem::ExtensionNotAllowed(_) => {
                Some("Access to the specified native messaging host is forbidden.")
            }
            Problem::NameNotOurs(_) | Problem::TypeNotStdio(_) => None,
            _ => Some("Specified native messaging host not found."),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::BadJson(err) => write!(f, "not valid JSON ({err})"),
            Problem::NotAnObject => write!(f, "not a JSON object"),
            Problem::NameMissing => write!(f, "has no \"name\""),
            Problem::NameInvalid(n) => write!(
                f,
                "\"name\" is \"{n}\"; a host name is lowercase letters, digits, dots and underscores"
            ),
            Problem::NameNotFileName { name, file } => write!(
                f,
                "\"name\" is \"{name}\" but the file is {file}; the browser finds a host only in \
                 <name>.json"
            ),
            Problem::NameNotOurs(n) => {
                write!(
                    f,
                    "\"name\" is \"{n}\", but the extension asks for \"{HOST_NAME}\""
                )
            }
            Problem::TypeNotStdio(t) => write!(f, "\"type\" is \"{t}\", not \"stdio\""),
            Problem::PathMissing => write!(f, "has no \"path\""),
            Problem::PathRelative(p) => {
                write!(
                    f,
                    "\"path\" is \"{p}\"; browsers accept only an absolute path"
                )
            }
            Problem::ExtensionNotAllowed(who) => write!(f, "does not allow {who}"),
            Problem::OriginInvalid(o) => write!(
                f,
                "\"allowed_origins\" has \"{o}\"; each entry must be exactly \
                 chrome-extension://<id>/ (no wildcards)"
            ),
        }
    }
}

/// A manifest read back from disk: whatever could be parsed, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The `path` field, when present and absolute (the caller checks the file it names).
    pub host_path: Option<String>,
    pub problems: Vec<Problem>,
}

/// Checks a manifest's contents against the rules the browser applies, for the file
/// named `file_name`, as read by a browser of `family`.
pub fn check(text: &str, file_name: &str, family: Family) -> Checked {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(err) => {
            return Checked {
                host_path: None,
                problems: vec![Problem::BadJson(err.to_string())],
            };
        }
    };
    let Some(obj) = value.as_object() else {
        return Checked {
            host_path: None,
            problems: vec![Problem::NotAnObject],
        };
    };
    let mut problems = Vec::new();

    match obj.get("name").and_then(Value::as_str) {
        None => problems.push(Problem::NameMissing),
        Some(name) => {
            if !is_host_name(name) {
                problems.push(Problem::NameInvalid(name.to_owned()));
            }
            if file_name != format!("{name}.json") {
                problems.push(Problem::NameNotFileName {
                    name: name.to_owned(),
                    file: file_name.to_owned(),
                });
            }
            if name != HOST_NAME {
                problems.push(Problem::NameNotOurs(name.to_owned()));
            }
        }
    }

    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != "stdio" {
        problems.push(Problem::TypeNotStdio(kind.to_owned()));
    }

    let mut host_path = None;
    match obj.get("path").and_then(Value::as_str) {
        None => problems.push(Problem::PathMissing),
        Some(p) if !Path::new(p).is_absolute() => {
            problems.push(Problem::PathRelative(p.to_owned()))
        }
        Some(p) => host_path = Some(p.to_owned()),
    }

    let list = |key: &str| -> Vec<String> {
        obj.get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    match family {
        Family::Chromium => {
            let origins = list("allowed_origins");
            for o in &origins {
                let ok = o
                    .strip_prefix("chrome-extension://")
                    .and_then(|rest| rest.strip_suffix('/'))
                    .is_some_and(is_extension_id);
                if !ok {
                    problems.push(Problem::OriginInvalid(o.clone()));
                }
            }
            let ours = origin(EXTENSION_ID);
            if !origins.contains(&ours) {
                problems.push(Problem::ExtensionNotAllowed(format!(
                    "the him extension ({ours})"
                )));
            }
        }
        Family::Firefox => {
            if !list("allowed_extensions").iter().any(|e| e == GECKO_ID) {
                problems.push(Problem::ExtensionNotAllowed(format!(
                    "the him add-on ({GECKO_ID}) in \"allowed_extensions\""
                )));
            }
        }
    }
    Checked {
        host_path,
        problems,
    }
}

/// Chrome's rule for host names: lowercase letters, digits, underscores and dots; no
/// leading, trailing or doubled dot.
pub fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.')
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const FILE: &str = "dev.him.host.json";

    fn chromium_text() -> String {
        render(&build(Family::Chromium, Path::new("/opt/him"), &[]).unwrap())
    }

    #[test]
    fn the_manifests_packagers_copy_are_what_him_manifest_writes_for_usr_bin_him() {
        for (family, file) in [
            (Family::Chromium, CHROMIUM_TEMPLATE),
            (Family::Firefox, FIREFOX_TEMPLATE),
        ] {
            let built = build(family, Path::new("/usr/bin/him"), &[]).unwrap();
            assert_eq!(
                render(&built),
                file,
                "{family:?}: manifests/ and him manifest differ"
            );
            // And each is a manifest the browser takes under its file name.
            let checked = check(file, FILE, family);
            assert_eq!(checked.problems, Vec::new(), "{family:?}");
            assert_eq!(checked.host_path.as_deref(), Some("/usr/bin/him"));
        }
        let firefox: HostManifest = serde_json::from_str(FIREFOX_TEMPLATE).unwrap();
        assert_eq!(firefox.allowed_extensions, Some(vec![GECKO_ID.to_owned()]));
        let chromium: HostManifest = serde_json::from_str(CHROMIUM_TEMPLATE).unwrap();
        assert_eq!(chromium.allowed_origins, Some(vec![origin(EXTENSION_ID)]));
    }

    #[test]
    fn the_host_name_follows_chromes_rule() {
        assert!(is_host_name(HOST_NAME));
        assert!(!is_host_name("Dev.him.host"));
        assert!(!is_host_name("dev..him"));
        assert!(!is_host_name("dev-him"));
    }

    #[test]
    fn a_chromium_manifest_names_the_pinned_extension_by_origin() {
        let m = build(Family::Chromium, Path::new("/opt/him"), &[]).unwrap();
        assert_eq!(m.name, HOST_NAME);
        assert_eq!(m.path, "/opt/him");
        assert_eq!(m.kind, "stdio");
        assert_eq!(
            m.allowed_origins,
            Some(vec![format!("chrome-extension://{EXTENSION_ID}/")])
        );
        assert_eq!(m.allowed_extensions, None);
    }

    #[test]
    fn a_firefox_manifest_names_the_gecko_id_and_ignores_chromium_ids() {
        let extra = vec!["abcdefghijklmnopabcdefghijklmnop".to_owned()];
        let m = build(Family::Firefox, Path::new("/opt/him"), &extra).unwrap();
        assert_eq!(m.allowed_extensions, Some(vec![GECKO_ID.to_owned()]));
        assert_eq!(m.allowed_origins, None);
        let json: Value = serde_json::from_str(&render(&m)).unwrap();
        assert!(json.get("allowed_origins").is_none());
    }

    #[test]
    fn extra_ids_follow_the_pinned_one_once_each() {
        let extra = vec![
            "abcdefghijklmnopabcdefghijklmnop".to_owned(),
            format!("chrome-extension://{EXTENSION_ID}/"),
            "chrome-extension://abcdefghijklmnopabcdefghijklmnop/".to_owned(),
        ];
        assert_eq!(
            extension_ids(&extra).unwrap(),
            vec![
                EXTENSION_ID.to_owned(),
                "abcdefghijklmnopabcdefghijklmnop".to_owned()
            ]
        );
    }

    #[test]
    fn bad_extension_ids_are_refused_with_the_rule() {
        for bad in [
            "",
            "abc",
            "ABCDEFGHIJKLMNOPABCDEFGHIJKLMNOP",
            "qbcdefghijklmnopabcdefghijklmnop",
        ] {
            let err = parse_extension_id(bad).unwrap_err();
            assert!(err.to_string().contains("32 letters from a to p"), "{err}");
        }
    }

    #[test]
    fn a_relative_host_path_is_refused() {
        let err = build(Family::Chromium, Path::new("him"), &[]).unwrap_err();
        assert_eq!(err, ManifestError::RelativePath("him".into()));
    }

    #[test]
    fn rendering_is_stable_and_ends_with_a_newline() {
        let a = chromium_text();
        assert_eq!(a, chromium_text());
        assert!(a.ends_with("}\n"));
        assert!(a.starts_with("{\n  \"name\": \"dev.him.host\""));
    }

    #[test]
    fn a_manifest_we_built_passes_every_check() {
        let c = check(&chromium_text(), FILE, Family::Chromium);
        assert_eq!(c.problems, vec![]);
        assert_eq!(c.host_path.as_deref(), Some("/opt/him"));
        let ff = render(&build(Family::Firefox, Path::new("/opt/him"), &[]).unwrap());
        assert_eq!(check(&ff, FILE, Family::Firefox).problems, vec![]);
    }

    #[test]
    fn bad_json_is_reported_as_such() {
        let c = check("{ \"name\": ", FILE, Family::Chromium);
        assert!(matches!(c.problems.as_slice(), [Problem::BadJson(_)]));
        assert_eq!(
            c.problems[0].browser_error(),
            Some("Specified native messaging host not found.")
        );
        assert_eq!(
            check("[]", FILE, Family::Chromium).problems,
            vec![Problem::NotAnObject]
        );
    }

    #[test]
    fn a_name_that_differs_from_the_file_is_reported() {
        let text = chromium_text().replace("dev.him.host", "dev.him.other");
        let c = check(&text, FILE, Family::Chromium);
        assert!(c.problems.contains(&Problem::NameNotFileName {
            name: "dev.him.other".into(),
            file: FILE.into()
        }));
        assert!(
            c.problems
                .contains(&Problem::NameNotOurs("dev.him.other".into()))
        );
    }

    #[test]
    fn an_upper_case_name_gets_chromes_own_complaint() {
        let text = chromium_text().replace("dev.him.host", "Dev.him.host");
        let c = check(&text, "Dev.him.host.json", Family::Chromium);
        let p = c
            .problems
            .iter()
            .find(|p| matches!(p, Problem::NameInvalid(_)))
            .unwrap();
        assert_eq!(
            p.browser_error(),
            Some("Invalid native messaging host name specified.")
        );
    }

    #[test]
    fn a_missing_origin_is_forbidden_access() {
        let mut m = build(Family::Chromium, Path::new("/opt/him"), &[]).unwrap();
        m.allowed_origins = Some(vec![origin("abcdefghijklmnopabcdefghijklmnop")]);
        let c = check(&render(&m), FILE, Family::Chromium);
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        assert!(matches!(c.problems[0], Problem::ExtensionNotAllowed(_)));
        assert_eq!(
            c.problems[0].browser_error(),
            Some("Access to the specified native messaging host is forbidden.")
        );
    }

    #[test]
    fn a_wildcard_origin_is_invalid() {
        let mut m = build(Family::Chromium, Path::new("/opt/him"), &[]).unwrap();
        m.allowed_origins
            .as_mut()
            .unwrap()
            .push("chrome-extension://*/".into());
        let c = check(&render(&m), FILE, Family::Chromium);
        assert_eq!(
            c.problems,
            vec![Problem::OriginInvalid("chrome-extension://*/".into())]
        );
    }

    #[test]
    fn a_relative_or_missing_path_is_reported() {
        let text = chromium_text().replace("/opt/him", "him");
        let c = check(&text, FILE, Family::Chromium);
        assert_eq!(c.problems, vec![Problem::PathRelative("him".into())]);
        assert_eq!(c.host_path, None);
        let mut v: Value = serde_json::from_str(&chromium_text()).unwrap();
        v.as_object_mut().unwrap().remove("path");
        let c = check(&v.to_string(), FILE, Family::Chromium);
        assert_eq!(c.problems, vec![Problem::PathMissing]);
    }

    #[test]
    fn a_firefox_manifest_without_the_gecko_id_is_reported() {
        let c = check(&chromium_text(), FILE, Family::Firefox);
        assert!(matches!(
            c.problems.as_slice(),
            [Problem::ExtensionNotAllowed(_)]
        ));
    }

    #[test]
    fn only_manifests_named_for_our_host_are_ours() {
        assert!(is_ours(&chromium_text()));
        assert!(!is_ours("{\"name\": \"org.other.host\"}"));
        assert!(!is_ours("not json"));
    }
}
