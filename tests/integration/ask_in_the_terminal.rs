//! `him ask` run by a person in a terminal, with no browser connected, asks right there:
//! through a real pseudo-terminal, keys typed as a person types them, the JSON result on
//! stdout with `via: "terminal"`, and the terminal left as it was. Without a terminal, or
//! with `--no-tty`, nothing changes.

use std::time::{Duration, Instant};

use crate::support::terminal::{
    BACKSPACE, CTRL_C, DOWN, ENTER, ESC, InTerminal, Keys, SHELL, Setup,
};
use crate::support::*;
use serde_json::{Value, json};

fn assert_in_terminal(result: &Value, status: &str) {
    assert_complete(result);
    assert_eq!(result["status"], status, "{result}");
    assert_eq!(result["via"], "terminal", "{result}");
}

#[test]
fn a_question_with_no_browser_is_asked_and_answered_in_the_terminal() {
    let runtime = runtime_dir();
    let mut term = InTerminal::ask(
        runtime.path(),
        &["text", "Name the release branch", "--default", "main"],
    );
    term.expect("Name the release branch");
    term.send("release-7");
    term.expect("release-7");
    term.send(ENTER);
    let (result, code) = term.finish();
    assert_in_terminal(&result, "answered");
    assert_eq!(code, 0);
    assert_eq!(result["tool"], "ask_text");
    assert_eq!(result["answer"], "release-7");
}

#[test]
fn an_option_is_picked_with_the_arrow_keys_or_by_its_digit() {
    let runtime = runtime_dir();
    let args = ["choice", "Which database?", "Postgres", "SQLite", "DuckDB"];
    let mut term = InTerminal::ask(runtime.path(), &args);
    term.expect("3. DuckDB");
    term.send(DOWN);
    term.send(ENTER);
    let (result, _) = term.finish();
    assert_in_terminal(&result, "answered");
    assert_eq!(result["answer"], "SQLite", "one down from the first");

    let mut term = InTerminal::ask(runtime.path(), &args);
    term.expect("3. DuckDB");
    term.send("3");
    term.send(ENTER);
    let (result, _) = term.finish();
    assert_eq!(result["answer"], "DuckDB", "{result}");
    assert_eq!(result["selected"], json!(["DuckDB"]));
}

#[test]
fn options_are_toggled_with_space_and_the_minimum_is_the_forms_rule() {
    let runtime = runtime_dir();
    let mut term = InTerminal::ask(
        runtime.path(),
        &[
            "multi",
            "Which suites?",
            "unit",
            "e2e",
            "bench",
            "--min",
            "1",
        ],
    );
    term.expect("3. bench");
    term.send(ENTER);
    term.expect("choose at least 1 options");
    term.send(" ");
    term.send(DOWN);
    term.send(DOWN);
    term.send(" ");
    term.send(ENTER);
    let (result, _) = term.finish();
    assert_in_terminal(&result, "answered");
    assert_eq!(result["selected"], json!(["unit", "bench"]));
}

#[test]
fn yes_or_no_is_y_or_n() {
    let runtime = runtime_dir();
    let mut term = InTerminal::ask(runtime.path(), &["confirm", "Delete the 3 stale branches?"]);
    term.expect("Delete the 3 stale branches?");
    term.send("y");
    term.send(ENTER);
    let (result, code) = term.finish();
    assert_in_terminal(&result, "answered");
    assert_eq!(code, 0);
    assert_eq!(result["confirmed"], true);
    assert_eq!(result["answer"], "yes");
}

/// Nothing decided unseen (issue 22): keys typed before a prompt drew, or while it had not yet
/// been on screen ARM_DELAY_MS, are thrown away; keys typed after it take. Each early key is
/// one that would have decided: typed before `him ask` started, typed in one burst with the
/// previous answer's Enter, typed while the prompt was up but waiting (with `him ask` stopped,
/// so that the wait cannot end between the look and the keys).
#[test]
fn keys_typed_before_a_prompt_has_been_on_screen_long_enough_are_thrown_away() {
    let runtime = runtime_dir();
    let form = json!({"title": "Clean up", "fields": [
        {"name": "branch", "type": "text", "label": "Which branch?", "required": true},
        {"name": "backup", "type": "confirm", "label": "Delete the production database backup from March?"},
        {"name": "force", "type": "confirm", "label": "Force-push the branch?"}
    ]});
    let mut term =
        InTerminal::ask_typed_ahead(runtime.path(), &["form", &form.to_string()], "main\r");
    term.expect("Which branch?");
    // The answer, and at once a `y` and Enter meant for nothing yet on screen.
    term.send("release\ry\r");

    // The next prompt is up and holding keys back: keys typed now are thrown away too.
    let start = Instant::now();
    while term.keys() != Keys::Held {
        assert!(
            start.elapsed() < PATIENCE,
            "the second prompt never came up"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let seen_held = Instant::now();
    term.pause();
    assert_eq!(
        term.keys(),
        Keys::Held,
        "the prompt took keys before the test could type (the test ran half a second late)"
    );
    term.send("y\r");
    term.resume();
    term.wait_while_held();
    eprintln!(
        "the prompt took keys {} ms after it was first seen holding them back",
        seen_held.elapsed().as_millis()
    );

    term.send("n");
    term.send(ENTER);
    term.expect("Force-push the branch?");
    term.send("y");
    term.send(ENTER);
    term.expect("Send these answers?");
    term.send(ENTER);
    let (result, code) = term.finish();
    assert_in_terminal(&result, "answered");
    assert_eq!(code, 0);
    assert_eq!(
        result["values"],
        json!({"branch": "release", "backup": false, "force": true}),
        "only keys typed once each prompt had been on screen long enough answered"
    );
}

#[test]
fn a_field_that_breaks_its_rule_is_asked_again_with_the_rules_message() {
    let runtime = runtime_dir();
    let form = json!({"title": "Deploy", "fields": [
        {"name": "replicas", "type": "number", "label": "Replicas", "min": 1, "max": 5, "required": true},
        {"name": "notify", "type": "email", "label": "Notify"},
        {"name": "env", "type": "select", "label": "Environment", "options": ["staging", "production"], "required": true},
        {"name": "force", "type": "checkbox", "label": "Force"}
    ]});
    let mut term = InTerminal::ask(runtime.path(), &["form", &form.to_string()]);
    term.expect("Replicas");
    term.send("9");
    term.send(ENTER);
    // The message is the form's own (form/mod.rs), as the agent side would say it.
    term.expect("9 is above the maximum 5");
    term.send(BACKSPACE);
    term.send("3");
    term.send(ENTER);
    term.expect("Notify");
    term.send("nope");
    term.send(ENTER);
    term.expect("is not an email address");
    term.send(&BACKSPACE.repeat(4));
    term.send("ops@example.org");
    term.send(ENTER);
    term.expect("2. production");
    term.send("2");
    term.send(ENTER);
    term.expect("Force");
    term.send(ENTER);
    term.expect("Send these answers?");
    term.send(ENTER);
    let (result, _) = term.finish();
    assert_in_terminal(&result, "answered");
    assert_eq!(
        result["values"],
        json!({"replicas": 3, "notify": "ops@example.org", "env": "production", "force": false})
    );
}

#[test]
fn a_form_shows_its_answers_before_sending_and_any_field_can_be_asked_again() {
    let runtime = runtime_dir();
    let form = json!({"title": "Deploy", "allowNote": true, "fields": [
        {"name": "service", "type": "text", "label": "Service", "required": true},
        {"name": "tier", "type": "radio", "label": "Tier", "required": true,
         "options": [{"value": "p", "label": "Production"}, {"value": "s", "label": "Staging"}]},
        {"name": "token", "type": "password", "label": "Token"}
    ]});
    let mut term = InTerminal::ask(runtime.path(), &["form", &form.to_string()]);
    term.expect("Service");
    term.send("payments");
    term.send(ENTER);
    term.expect("2. Staging");
    term.send("1");
    term.send(ENTER);
    term.expect("Token");
    term.send("s3cret-token");
    term.send(ENTER);
    term.expect("Note (optional)");
    term.send("after lunch");
    term.send(ENTER);
    // The answers, one line each; the password never drawn.
    term.expect("Send these answers?");
    term.expect("Change Service: payments");
    term.expect("Change Tier: Production");
    term.expect("Change Token: (hidden)");
    term.expect("Change the note: after lunch");
    // Back to the tier: it is asked again, the answer given before still chosen.
    term.send(DOWN);
    term.send(DOWN);
    term.send(ENTER);
    term.expect("2. Staging");
    term.send(DOWN);
    term.send(ENTER);
    term.expect("Change Tier: Staging");
    term.send(ENTER);
    let (result, _, shown) = term.finish_showing();
    assert_in_terminal(&result, "answered");
    assert_eq!(
        result["values"],
        json!({"service": "payments", "tier": "s", "token": "s3cret-token"})
    );
    assert_eq!(result["free_text"], "after lunch", "{result}");
    assert!(
        !shown.contains("s3cret"),
        "the terminal showed the password:\n{shown}"
    );

    // Esc on the review declines the whole question, as everywhere else.
    let mut term = InTerminal::ask(runtime.path(), &["form", &form.to_string()]);
    term.expect("Service");
    term.send("ledger");
    term.send(ENTER);
    term.expect("2. Staging");
    term.send(ENTER);
    term.expect("Token");
    term.send(ENTER);
    term.expect("Note (optional)");
    term.send(ENTER);
    term.expect("Send these answers?");
    term.send(ESC);
    let (result, _) = term.finish();
    assert_eq!(result["status"], "declined", "{result}");
}

#[test]
fn a_password_is_typed_unseen() {
    let runtime = runtime_dir();
    let form = json!({"title": "Sign in", "fields": [
        {"name": "user", "type": "text", "label": "User", "required": true},
        {"name": "token", "type": "password", "label": "Token", "required": true}
    ]});
    let mut term = InTerminal::ask(runtime.path(), &["form", &form.to_string()]);
    term.expect("User");
    term.send("ada");
    term.send(ENTER);
    term.expect("Token");
    term.send("hunter2-secret");
    term.send(ENTER);
    term.expect("Change Token: (hidden)");
    term.send(ENTER);
    let (result, _, shown) = term.finish_showing();
    assert_in_terminal(&result, "answered");
    assert_eq!(result["values"]["token"], "hunter2-secret");
    assert_eq!(result["values"]["user"], "ada");
    assert!(shown.contains("ada"), "other fields echo: {shown}");
    assert!(
        !shown.contains("hunter"),
        "the terminal showed the password:\n{shown}"
    );
}

#[test]
fn a_multiline_text_ends_at_an_empty_line() {
    let runtime = runtime_dir();
    let mut term = InTerminal::ask(runtime.path(), &["text", "Describe the bug", "--multiline"]);
    term.expect("Describe the bug");
    term.send("it crashes");
    term.send(ENTER);
    // The next line is the same answer, not a new question: it takes keys at once.
    term.send("on start");
    term.send(ENTER);
    term.send(ENTER);
    let (result, _) = term.finish();
    assert_in_terminal(&result, "answered");
    assert_eq!(result["answer"], "it crashes\non start");
}

#[test]
fn a_choice_that_takes_free_text_can_be_answered_in_own_words() {
    let runtime = runtime_dir();
    let mut term = InTerminal::ask(
        runtime.path(),
        &[
            "choice",
            "Which database?",
            "Postgres",
            "SQLite",
            "--allow-free-text",
        ],
    );
    term.expect("In my own words");
    term.send("own");
    term.send(ENTER);
    term.expect("Your answer");
    term.send("Neither; plain files");
    term.send(ENTER);
    let (result, code) = term.finish();
    assert_in_terminal(&result, "discussion");
    assert_eq!(code, 0);
    assert_eq!(result["free_text"], "Neither; plain files");
    assert_eq!(result["answer"], Value::Null);
}

#[test]
fn going_back_to_a_choice_for_own_words_asks_for_the_words() {
    let runtime = runtime_dir();
    let form = json!({"title": "Plan", "allowNote": true, "fields": [
        {"name": "db", "type": "radio", "label": "Database", "options": ["Postgres", "SQLite"]},
        {"name": "name", "type": "text", "label": "Name", "required": true}
    ]});
    let mut term = InTerminal::ask(runtime.path(), &["form", &form.to_string()]);
    term.expect("In my own words");
    term.send("1");
    term.send(ENTER);
    term.expect("Name");
    term.send("alice");
    term.send(ENTER);
    term.expect("Note (optional)");
    term.send(ENTER);
    term.expect("Change Database: Postgres");
    term.send(DOWN);
    term.send(ENTER);
    term.expect("In my own words");
    term.send("own");
    term.send(ENTER);
    // The note is now the answer: it is asked for, as "Your answer".
    term.expect("Your answer");
    term.send("plain files");
    term.send(ENTER);
    term.expect("Change the note: plain files");
    term.send(ENTER);
    let (result, _) = term.finish();
    assert_in_terminal(&result, "answered");
    assert_eq!(
        result["values"],
        json!({"db": null, "name": "alice"}),
        "{result}"
    );
    assert_eq!(result["free_text"], "plain files", "{result}");
}

#[test]
fn esc_declines_and_ctrl_c_cancels() {
    let runtime = runtime_dir();
    let mut term = InTerminal::ask(runtime.path(), &["confirm", "Deploy?"]);
    term.expect("Deploy?");
    term.send(ESC);
    let (result, code, shown) = term.finish_showing();
    assert_in_terminal(&result, "declined");
    assert_eq!(code, 1);
    assert!(
        shown.contains("Deploy? declined") && !shown.contains("<canceled>"),
        "the prompt Esc closed says it was declined: {shown}"
    );

    let mut term = InTerminal::ask(runtime.path(), &["text", "Name it"]);
    term.expect("Name it");
    term.send("half-typ");
    term.send(CTRL_C);
    let (result, code) = term.finish();
    assert_in_terminal(&result, "cancelled");
    assert_eq!(code, 1);
    assert_eq!(
        result["values"],
        json!({}),
        "nothing half-typed is passed on"
    );
}

#[test]
fn the_deadline_closes_the_prompt_and_restores_the_terminal() {
    let runtime = runtime_dir();
    let mut term = InTerminal::ask(
        runtime.path(),
        &["choice", "Ship it?", "Yes", "No", "--timeout-ms", "1500"],
    );
    term.expect("2. No");
    term.expect("terminal prompt is closed");
    let (result, code) = term.finish();
    assert_in_terminal(&result, "timeout");
    assert_eq!(code, 1);
}

#[test]
fn sigterm_cancels_and_puts_the_terminal_back() {
    let runtime = runtime_dir();
    let mut term = InTerminal::ask(runtime.path(), &["multi", "Which suites?", "unit", "e2e"]);
    term.expect("2. e2e");
    term.terminate();
    let (result, code) = term.finish();
    assert_in_terminal(&result, "cancelled");
    assert_eq!(code, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_browser_that_connects_and_answers_first_withdraws_the_prompt() {
    let runtime = runtime_dir();
    let mut term = InTerminal::ask(runtime.path(), &["choice", "Ship it?", "Yes", "No"]);
    term.expect("2. No");
    let mut ext = FakeExtension::start(runtime.path()).await;
    let ask = ext.take_ask().await;
    assert_eq!(ask["form"]["title"], "Ship it?");
    ext.submit(&ask["id"], json!({"choice": "Yes"})).await;
    term.expect("answered in the browser");
    let (result, code) = term.finish();
    assert_complete(&result);
    assert_eq!(result["via"], "extension");
    assert_eq!(result["answer"], "Yes");
    assert_eq!(code, 0);
}

#[test]
fn without_a_terminal_or_with_no_tty_the_fallback_is_as_before() {
    let runtime = runtime_dir();
    let no_terminal = [
        ("--no-tty", SHELL, true),
        (
            "stderr is a pipe (an agent's subprocess)",
            Setup {
                controlling: true,
                stderr: false,
            },
            false,
        ),
        (
            "no controlling terminal (CI, a hook)",
            Setup {
                controlling: false,
                stderr: true,
            },
            false,
        ),
    ];
    for (case, setup, no_tty) in no_terminal {
        let mut args = vec!["confirm", "Deploy now?"];
        if no_tty {
            args.push("--no-tty");
        }
        let term = InTerminal::ask_with(runtime.path(), &args, &[], setup);
        let (result, code, shown) = term.finish_showing();
        assert!(
            !shown.contains("Deploy now?"),
            "{case}: asked anyway:\n{shown}"
        );
        assert_eq!(result["status"], "needs_user_input", "{case}: {result}");
        assert_eq!(result["via"], "chat", "{case}");
        assert_eq!(code, 1, "{case}");
    }
    let term = InTerminal::ask_with(
        runtime.path(),
        &["confirm", "Deploy now?", "--no-tty"],
        &[("HIM_FALLBACK", "off")],
        SHELL,
    );
    let (result, _) = term.finish();
    assert_eq!(
        result["status"], "unsupported",
        "HIM_FALLBACK still applies"
    );
}

/// Whether `raw` holds `needle` byte for byte.
fn holds(raw: &[u8], needle: &str) -> bool {
    raw.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Issue 22.4: an agent's escape sequences are drawn as text, never run by the terminal.
/// "Drop the production database?" made to read "Run the unit tests now?" by moving the
/// cursor and erasing, with the clipboard set (OSC 52) and the window retitled (OSC 0) on the
/// way: the person sees every sequence as ⟨U+001B⟩… and answers the question that was asked.
#[test]
fn what_the_agent_wrote_is_drawn_with_every_control_escaped() {
    let runtime = runtime_dir();
    let osc52 = "\x1b]52;c;cm0gLXJmIH4=\x07";
    let osc0 = "\x1b]0;build ok\x07";
    let hide = "\r\x1b[2K\x1b[1A\x1b[2K";
    let question =
        format!("Drop the production database?{osc52}{osc0}{hide}Run the unit tests now?");
    let mut term = InTerminal::ask(runtime.path(), &["confirm", &question]);
    term.expect("Run the unit tests now?");
    let raw = term.raw();
    for sequence in [osc52, osc0, hide, "\x1b]"] {
        assert!(
            !holds(&raw, sequence),
            "the agent's {sequence:?} reached the terminal"
        );
    }
    // In pieces: the prompt wraps at the terminal's width. The carriage return is a line
    // break in Markdown, read as a space, as the panel reads it.
    for shown in [
        "Drop the production database?⟨U+001B⟩]52;c;cm0gLXJmIH4=⟨U+0007⟩",
        "⟨U+001B⟩]0;build ok⟨U+0007⟩",
        "[2K⟨U+001B⟩[1A⟨U+001B⟩[2KRun the unit tests now?",
    ] {
        assert!(
            holds(&raw, shown),
            "{shown:?} is not shown: {}",
            term.text()
        );
    }
    term.send("n");
    term.send(ENTER);
    let (result, _) = term.finish();
    assert_in_terminal(&result, "answered");
    assert_eq!(result["confirmed"], false);
}

/// The terminal reads the agent's Markdown as the panel does (a code span keeps its `*`), and
/// marks what would read otherwise in every text it draws: description, label, option, default.
#[test]
fn markdown_is_drawn_as_plain_text_and_every_text_is_marked() {
    let runtime = runtime_dir();
    let form = json!({"title": "Clean **up**", "description": "Runs `rm -rf build/*` on _staging_.\x1b[2J", "fields": [
        {"name": "target", "type": "select", "label": "Which \u{202e}host?", "required": true, "options": [
            {"value": "a", "label": "gіthub.example", "description": "the **mirror**\x1b]0;x\x07"},
            {"value": "b", "label": "local"}]},
        {"name": "branch", "type": "text", "label": "Branch", "default": "main\x1b[31m"}
    ]});
    let mut term = InTerminal::ask(runtime.path(), &["form", &form.to_string()]);
    term.expect("Clean up");
    term.expect("Runs rm -rf build/* on staging.⟨U+001B⟩[2J");
    term.expect("Which ⟨U+202E⟩host?");
    term.expect("1. g⟨U+0456⟩thub.example — the mirror⟨U+001B⟩]0;x⟨U+0007⟩");
    term.send(ENTER);
    term.expect("main⟨U+001B⟩[31m");
    // Enter takes the default as the agent gave it, not as it was shown.
    term.send(ENTER);
    term.expect("Change Branch: main⟨U+001B⟩[31m");
    term.send(ENTER);
    let (result, _) = term.finish();
    assert_in_terminal(&result, "answered");
    assert_eq!(
        result["values"],
        json!({"target": "a", "branch": "main\x1b[31m"})
    );
}
