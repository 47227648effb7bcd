//! An agent's permission prompt on the phone (DESIGN.md §9; issue 25 item 4): pure, so every
//! rule is unit-tested without a homeserver.
//!
//! - The tool and its input are shown verbatim in a code block, marked as the panel marks them
//!   (`him::form::display::marked`: controls, invisible, bidi and look-alike characters as
//!   `⟨U+XXXX⟩`), and the message says when something was marked.
//! - Deny: a vote for Deny in the poll beside it, or a reply "deny" / "no".
//! - Allow only by a reply holding the short code shown in the message: a deliberate act
//!   that no reflex tap gives (a vote for Allow is answered with how to allow).
//! - A prompt too large for one Matrix event is cut, saying how much is hidden, and offers no
//!   Allow: "answer this one at the desk".

use serde_json::{Value, json};

use him::form::display::{marked, pieces};
use him::form::{ALLOW, DENY, Permission};

/// Of the shown input, at most this much goes into the message: Matrix caps an event at
/// 65,536 bytes (spec, "Size limits"), and an encrypted one carries its content base64'd
/// (4/3), as plain text and as HTML.
pub const MAX_SHOWN: usize = 12 * 1024;

/// Of a tool's name, at most this much is shown (the panel's title cuts it too).
const MAX_TOOL_NAME: usize = 256;

/// The most a message's content may take, as JSON: an encrypted event holds it base64'd
/// (4/3 of it) with room to spare under the 65,536 bytes.
pub const MAX_CONTENT: usize = 45_000;

/// The poll's answers ("1", "2"): Deny, and Allow, which a vote cannot give.
pub const POLL_DENY: &str = "1";

/// The message of a permission prompt: its plain text, its HTML, and how many bytes of the
/// input it leaves out (0 when none: then, and only then, it can be allowed from the phone).
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub body: String,
    pub html: String,
    pub hidden: usize,
}

/// The input as the panel shows it: a shell command as itself, anything else as JSON.
fn input_text(permission: &Permission) -> String {
    if let Some(command) = permission.input.get("command").and_then(Value::as_str) {
        let mut rest = permission.input.clone();
        if let Some(map) = rest.as_object_mut() {
            map.remove("command");
        }
        let rest = match rest.as_object() {
            Some(map) if map.is_empty() => String::new(),
            _ => format!("\n\n{}", pretty(&rest)),
        };
        return format!("{command}{rest}");
    }
    pretty(&permission.input)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// `text`, at most `max` bytes of it (on a character boundary), and how many bytes are left.
pub fn cut(text: &str, max: usize) -> (&str, usize) {
    if text.len() <= max {
        return (text, 0);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], text.len() - end)
}

fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// The message for `permission`, under `header` (who asks, time left); `code` is the one that
/// allows, shown only when nothing is cut (pass `None` to learn first whether it is).
pub fn message(header: &str, permission: &Permission, code: Option<&str>) -> Message {
    // Marks and HTML escapes make the shown text longer than the input: cut more until the
    // whole content fits.
    let mut limit = MAX_SHOWN;
    loop {
        let message = message_within(header, permission, code, limit);
        if limit == 0 || content(&message).to_string().len() <= MAX_CONTENT {
            return message;
        }
        limit /= 2;
    }
}

fn message_within(
    header: &str,
    permission: &Permission,
    code: Option<&str>,
    limit: usize,
) -> Message {
    let tool = marked(cut(&permission.tool_name, MAX_TOOL_NAME).0);
    let input = input_text(permission);
    let was_marked = pieces(&input).iter().any(|p| p.mark.is_some())
        || pieces(&permission.tool_name)
            .iter()
            .any(|p| p.mark.is_some());
    let (shown, hidden) = cut(&input, limit);
    let shown = marked(shown);
    let mut notes = Vec::new();
    if was_marked {
        notes.push(
            "Marked: characters that would read otherwise than they run are shown as ⟨U+…⟩."
                .to_owned(),
        );
    }
    let how = if hidden > 0 {
        notes.push(format!(
            "{hidden} bytes of the input are hidden: more than a Matrix message holds."
        ));
        "Answer this one at the desk to allow it (the side panel shows it all). To deny it, \
         vote Deny or reply “deny”."
            .to_owned()
    } else {
        match code {
            Some(code) => format!(
                "To allow it, reply with the code {code}. To deny it, vote Deny or reply “deny”."
            ),
            None => "To deny it, vote Deny or reply “deny”.".to_owned(),
        }
    };
    let lead = format!("{header}\n\nIt wants to use the tool {tool} with this input:");
    let tail: String = notes.iter().map(|n| format!("{n}\n\n")).collect();
    let body = format!("{lead}\n\n{shown}\n\n{tail}{how}");
    let html = format!(
        "<p>{}</p><pre><code>{}</code></pre>{}<p>{}</p>",
        html_escape(&lead).replace('\n', "<br>"),
        html_escape(&shown),
        notes
            .iter()
            .map(|n| format!("<p><em>{}</em></p>", html_escape(n)))
            .collect::<String>(),
        html_escape(&how),
    );
    Message { body, html, hidden }
}

/// The `m.room.message` content of `message`.
pub fn content(message: &Message) -> Value {
    json!({
        "msgtype": "m.text",
        "body": message.body,
        "format": "org.matrix.custom.html",
        "formatted_body": message.html,
    })
}

/// The poll beside the message: Deny, and Allow (which a vote cannot give) only where the
/// prompt can be allowed from the phone at all.
pub fn poll(tool_name: &str, allowable: bool) -> Value {
    let mut answers = vec![json!({"id": "1", "org.matrix.msc1767.text": "Deny"})];
    if allowable {
        answers.push(json!({"id": "2", "org.matrix.msc1767.text": "Allow (reply with the code)"}));
    }
    let question = format!("Allow {}?", marked(cut(tool_name, MAX_TOOL_NAME).0));
    json!({
        "org.matrix.msc3381.poll.start": {
            "question": {"org.matrix.msc1767.text": question},
            "kind": "org.matrix.msc3381.poll.disclosed",
            "max_selections": 1,
            "answers": answers,
        },
        "org.matrix.msc1767.text": question,
    })
}

/// The decision a reply gives: `allow` only for the code itself, `deny` for a plain no; else
/// why it gives none (said back to the person).
pub fn from_text(text: &str, code: Option<&str>) -> Result<&'static str, String> {
    let text = text.trim();
    if matches!(text.to_lowercase().as_str(), "deny" | "no" | "n") {
        return Ok(DENY);
    }
    match code {
        Some(code) if text == code => Ok(ALLOW),
        Some(_) => Err(
            "that is not the code: to allow, reply with the code shown in the \
                        message; to deny, reply “deny”"
                .into(),
        ),
        None => Err(
            "this one can be allowed at the desk only (its input is too long to \
                     show here); to deny it, reply “deny”"
                .into(),
        ),
    }
}

/// The decision a poll vote gives: Deny only.
pub fn from_vote(answers: &[String]) -> Result<&'static str, String> {
    match answers {
        [answer] if answer == POLL_DENY => Ok(DENY),
        _ => Err("a vote cannot allow: reply with the code shown in the message".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(command: &str) -> Permission {
        Permission {
            tool_name: "Bash".into(),
            input: json!({"command": command, "description": "Clean"}),
            tool_use_id: None,
            session_rules: Vec::new(),
        }
    }

    #[test]
    fn the_input_is_shown_verbatim_and_only_the_code_allows() {
        let m = message("claude asks:", &bash("rm -rf build"), Some("482915"));
        assert!(m.body.contains("rm -rf build"), "{}", m.body);
        assert!(m.body.contains("\"description\": \"Clean\""), "{}", m.body);
        assert!(m.body.contains("reply with the code 482915"), "{}", m.body);
        assert!(m.html.contains("<pre><code>rm -rf build"), "{}", m.html);
        assert_eq!(m.hidden, 0);
        assert_eq!(from_text("482915", Some("482915")), Ok(ALLOW));
        assert_eq!(from_text(" Deny ", Some("482915")), Ok(DENY));
        for reflex in ["yes", "allow", "ok", "482916", "y"] {
            assert!(from_text(reflex, Some("482915")).is_err(), "{reflex}");
        }
        assert_eq!(from_vote(&["1".into()]), Ok(DENY));
        assert!(from_vote(&["2".into()]).is_err());
    }

    #[test]
    fn what_reads_otherwise_than_it_runs_is_marked_and_said() {
        let m = message("a asks:", &bash("echo safe\u{202e}fr- mr"), Some("1"));
        assert!(m.body.contains("⟨U+202E⟩"), "{}", m.body);
        assert!(m.body.contains("Marked:"), "{}", m.body);
        assert!(!m.body.contains('\u{202e}'));
        let plain = message("a asks:", &bash("ls"), Some("1"));
        assert!(!plain.body.contains("Marked:"));
    }

    #[test]
    fn a_prompt_too_long_for_matrix_is_cut_says_how_much_and_offers_no_allow() {
        let long = "x".repeat(MAX_SHOWN + 500);
        let m = message("a asks:", &bash(&long), Some("123456"));
        assert!(m.hidden >= 500, "{}", m.hidden);
        assert!(
            m.body
                .contains(&format!("{} bytes of the input are hidden", m.hidden))
        );
        assert!(!m.body.contains("123456"), "no code for a cut prompt");
        assert!(m.body.contains("at the desk"));
        assert!(from_text("123456", None).is_err());
        assert_eq!(from_text("deny", None), Ok(DENY));
        assert_eq!(
            poll("Bash", false)["org.matrix.msc3381.poll.start"]["answers"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        // The whole content stays well under the event cap, even encrypted (4/3).
        let size = content(&m).to_string().len();
        assert!(size * 4 / 3 < 60_000, "{size}");
    }

    #[test]
    fn a_prompt_whose_marks_or_escapes_swell_it_is_cut_to_fit_too() {
        for swell in ["&", "\u{202e}", "<"] {
            let m = message("a asks:", &bash(&swell.repeat(MAX_SHOWN)), Some("1"));
            assert!(m.hidden > 0, "{swell:?}");
            assert!(content(&m).to_string().len() <= MAX_CONTENT, "{swell:?}");
        }
    }

    #[test]
    fn html_in_the_input_is_text() {
        let m = message("a asks:", &bash("echo '<b>&'"), Some("1"));
        assert!(m.html.contains("echo '&lt;b&gt;&amp;'"), "{}", m.html);
    }
}
