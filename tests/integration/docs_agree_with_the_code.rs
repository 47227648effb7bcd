//! The docs say what the code does, where that can be checked mechanically: the clients
//! `him config` knows, the links between the documents, and the `HIM_*` variables the code
//! reads. Plain text in, plain text out: no browser, no network.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The documents whose links must lead somewhere: the README, the top-level guides for
/// contributors, every guide in docs/, and the extension's own README.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut docs: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    docs.push(root.join("extension/README.md"));
    let mut guides: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guides.sort();
    assert!(!guides.is_empty(), "docs/ holds no guide");
    docs.extend(guides);
    docs
}

/// The text outside fenced code blocks, line by line, with inline code spans blanked out:
/// what a renderer reads as Markdown rather than shows as code.
fn prose_lines(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            lines.push(String::new());
            continue;
        }
        lines.push(if fenced {
            String::new()
        } else {
            line.to_owned()
        });
    }
    lines
}

fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            out.push(c);
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, spaces become '-', and every character but
/// letters, digits, '-' and '_' is dropped; a repeated heading gets "-1", "-2", ….
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = line[hashes..]
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                '-' | '_' => Some(c),
                c if c.is_alphanumeric() => Some(c),
                _ => None,
            })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while seen.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        seen.insert(unique);
    }
    seen
}

/// Every `[text](target)` outside code: its target.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
        let line = without_code_spans(&line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                targets.push(rest[..end].trim().to_owned());
                rest = &rest[end + 1..];
            }
        }
    }
    targets
}

#[test]
fn every_relative_link_and_anchor_in_the_docs_leads_somewhere() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = read(&doc);
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                doc.clone()
            } else {
                doc.parent().expect("a document's folder").join(path)
            };
            let name = doc
                .strip_prefix(root())
                .unwrap_or(&doc)
                .display()
                .to_string();
            if !file.exists() {
                broken.push(format!("{name}: ({target}): no {}", file.display()));
                continue;
            }
            if anchor.is_empty() {
                continue;
            }
            if file.extension().is_none_or(|e| e != "md") {
                broken.push(format!(
                    "{name}: ({target}): an anchor into a file that is not Markdown"
                ));
                continue;
            }
            if !anchors(&read(&file)).contains(anchor) {
                broken.push(format!("{name}: ({target}): no heading #{anchor} there"));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the parser broken?"
    );
    assert!(
        broken.is_empty(),
        "links that lead nowhere:\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_him_config_target_is_in_the_clients_guide_and_no_other() {
    // clap lists the values it accepts when given one it does not.
    let out = Command::new(env!("CARGO_BIN_EXE_him"))
        .args(["config", "no-such-client"])
        .output()
        .expect("run him config");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let list = stderr
        .split_once("[possible values: ")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .unwrap_or_else(|| panic!("no list of targets in: {stderr}"));
    let known: BTreeSet<String> = list.split(", ").map(|t| t.trim().to_owned()).collect();
    assert!(known.len() > 10, "{known:?}");

    // The targets table: the column headed "`him config …`".
    let guide = read(&root().join("docs/clients.md"));
    let lines: Vec<&str> = guide.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with('|') && l.contains("`him config …`"))
        .expect("docs/clients.md has a table with a `him config …` column");
    let cells = |line: &str| -> Vec<String> {
        line.replace("\\|", "\u{0}")
            .trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect()
    };
    let column = cells(lines[header])
        .iter()
        .position(|c| c == "`him config …`")
        .expect("the column");
    let documented: BTreeSet<String> = lines[header + 2..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let cell = cells(row)[column].clone();
            cell.trim_matches('`').to_owned()
        })
        .collect();
    let missing: Vec<_> = known.difference(&documented).collect();
    let invented: Vec<_> = documented.difference(&known).collect();
    assert!(
        missing.is_empty(),
        "`him config` targets not in docs/clients.md's table: {missing:?}"
    );
    assert!(
        invented.is_empty(),
        "docs/clients.md names targets `him config` does not know: {invented:?}"
    );
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The string literals that are exactly a `HIM_*` name, e.g. `"HIM_TIMEOUT_MS"`.
fn him_literals(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("\"HIM_") {
        rest = &rest[at + 1..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if rest[name.len()..].starts_with('"') {
            names.insert(name);
        }
    }
    names
}

#[test]
fn every_him_variable_the_code_reads_is_in_the_configuration_reference() {
    // The rule: a string literal that is exactly a `HIM_*` name, in the code of him and of
    // its Matrix bridge (src/, matrix/src/), outside the unit tests at the end of a file
    // (`#[cfg(test)] mod tests`). Variables only the tests, benches and CI read
    // (HIM_E2E, HIM_BIN, HIM_CHROMIUM, HIM_FIREFOX, HIM_TEST_SEED, HIM_SCREENSHOTS,
    // HIM_SYNAPSE_VENV, HIM_CLAUDE, HIM_CODEX, …) live in tests/, benches/ and .ci/, which
    // the rule does not read: CONTRIBUTING.md lists them.
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("matrix/src"), &mut files);
    let mut read_by_code = BTreeSet::new();
    for file in &files {
        let code = read(file);
        let code = match code.find("\n#[cfg(test)]\nmod ") {
            Some(tests) => &code[..tests],
            None => &code[..],
        };
        read_by_code.extend(him_literals(code));
    }
    assert!(read_by_code.contains("HIM_TIMEOUT_MS"), "{read_by_code:?}");

    let reference = read(&root().join("docs/configuration.md"));
    let documented: BTreeSet<String> = reference
        .lines()
        .filter_map(|l| l.strip_prefix("| `HIM_"))
        .filter_map(|l| l.split_once('`'))
        .map(|(name, _)| format!("HIM_{name}"))
        .collect();
    let missing: Vec<_> = read_by_code.difference(&documented).collect();
    let invented: Vec<_> = documented.difference(&read_by_code).collect();
    assert!(
        missing.is_empty(),
        "read in src/ or matrix/src/ but not in docs/configuration.md's table: {missing:?}"
    );
    assert!(
        invented.is_empty(),
        "in docs/configuration.md's table but read nowhere in src/ or matrix/src/: {invented:?}"
    );
}
