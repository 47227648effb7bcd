//! Text an agent wrote, made fit to show a person where it cannot be drawn as the panel
//! draws it, or where what is shown must be what runs:
//!
//! - [`marks`]: the one rule that marks what would make text read otherwise than it is
//!   (controls, invisible characters, letters of another script inside a word, runs of blank
//!   lines and spaces); the panel has it too (`extension/lib/display.js`);
//! - [`plain`]: the plain text of the §4 Markdown subset, as the panel reads it.
//!
//! Both sides are tested against one fixture, `tests/fixtures/display_text.json`.

pub mod marks;
pub mod plain;

pub use marks::{Mark, Piece, marked, pieces};
pub use plain::{plain_text, plain_title};

/// Markdown an agent wrote, for a terminal: its plain text, marked. Nothing in it can move
/// the cursor, retitle the window, set the clipboard or reorder what is shown.
pub fn terminal_text(markdown: &str) -> String {
    marked(&plain_text(markdown))
}

/// Markdown an agent wrote, for one line of a terminal (a prompt, its help line): as
/// [`terminal_text`], its line breaks read as spaces, so nothing of it is dropped.
pub fn terminal_line(markdown: &str) -> String {
    marked(&plain_text(markdown).replace('\n', " "))
}

/// Text an agent wrote that is not Markdown (an option's label, a default), for one line of
/// a terminal: marked, its line breaks read as spaces.
pub fn terminal_literal(text: &str) -> String {
    marked(&text.replace('\n', " "))
}

/// A title on one line (a page's `<title>`, a notice), marked.
pub fn title_line(markdown: &str) -> String {
    marked(&plain_title(markdown))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn fixture() -> Value {
        serde_json::from_str(include_str!("../../tests/fixtures/display_text.json"))
            .expect("the fixture is JSON")
    }

    /// A fixture text: a string, or parts that are strings or `{"repeat": s, "times": n}`.
    fn text_of(value: &Value) -> String {
        match value {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().map(text_of).collect(),
            Value::Object(o) => o["repeat"]
                .as_str()
                .expect("repeat")
                .repeat(o["times"].as_u64().expect("times") as usize),
            other => panic!("not a fixture text: {other}"),
        }
    }

    #[test]
    fn the_shared_fixture_of_marked_texts_is_shown_as_it_says() {
        let fixture = fixture();
        let cases = fixture["marks"].as_array().expect("marks");
        assert!(cases.len() >= 30, "the fixture lost its cases");
        let mut wrong = Vec::new();
        for case in cases {
            let text = text_of(&case["text"]);
            let shown = case
                .get("shown")
                .map(text_of)
                .unwrap_or_else(|| text.clone());
            let kinds: Vec<&str> = case["marks"]
                .as_array()
                .expect("marks")
                .iter()
                .map(|k| k.as_str().expect("a kind"))
                .collect();
            let got = pieces(&text);
            let got_shown: String = got.iter().map(|p| p.text.as_str()).collect();
            let got_kinds: Vec<&str> = got.iter().filter_map(|p| p.mark.map(Mark::name)).collect();
            if got_shown != shown || got_kinds != kinds {
                wrong.push(format!(
                    "{}: shown {got_shown:?} with {got_kinds:?}",
                    case["name"]
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn the_shared_fixture_of_markdown_reads_as_it_says() {
        let fixture = fixture();
        let cases = fixture["plain"].as_array().expect("plain");
        assert!(cases.len() >= 15, "the fixture lost its cases");
        let mut wrong = Vec::new();
        for case in cases {
            let markdown = text_of(&case["markdown"]);
            let (text, title) = (plain_text(&markdown), plain_title(&markdown));
            if text != text_of(&case["text"]) || title != text_of(&case["title"]) {
                wrong.push(format!("{}: {text:?} / {title:?}", case["name"]));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn nothing_an_agent_writes_reaches_a_terminal_as_a_control() {
        let question = "**Drop** the production database?\x1b[1A\x1b[2K\rRun the unit tests now?\x1b]0;hi\x07\u{9b}2J";
        let shown = terminal_text(question);
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{shown:?}"
        );
        assert!(
            shown.starts_with("Drop the production database?⟨U+001B⟩[1A"),
            "{shown}"
        );
        assert_eq!(title_line("# Ship **v2**?\n\nmore"), "Ship v2?");
    }
}
