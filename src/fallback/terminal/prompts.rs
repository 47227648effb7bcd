//! The terminal prompt's own process (`him terminal-prompt`, started by `terminal.rs`): the
//! form comes in on stdin, each field is asked in turn with inquire, and the reply goes out
//! on stdout. Nothing here checks a value by a rule of its own: each typed value goes through
//! the form's rule for its field ([`Form::check_field`]) while the prompt is open, so a value
//! that breaks it is refused with the rule's message and the person fixes it in place; the
//! whole reply then goes through [`Form::check_reply`], and a field it blames is asked again.
//! The agent side judges the reply once more, as it judges every channel's.
//!
//! Every text the agent wrote reaches the terminal through `display` (its Markdown as plain
//! text, every control and invisible character as `⟨U+XXXX⟩`): a terminal runs what it is
//! sent, so an escape sequence in a question would set the clipboard (OSC 52), retitle the
//! window (OSC 0), or move the cursor and erase, showing another question than the one
//! answered.
//!
//! Nothing is decided unseen (the rule of the panel's lib/arming.js): each prompt takes no key
//! until it has been on screen [`ARM_DELAY_MS`]; keys typed before it drew, or while it waited,
//! are thrown away ([`armed`]). A second Enter or `y` typed after one answer never answers the
//! next question.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::time::Duration;

use inquire::list_option::ListOption;
use inquire::validator::Validation;
use inquire::{
    Confirm, CustomUserError, InquireError, MultiSelect, Password, PasswordDisplayMode, Select,
    Text,
};
use nix::sys::termios::{self, FlushArg, LocalFlags, SetArg, SpecialCharacterIndices, Termios};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::form::display::{marked, terminal_line, terminal_literal, terminal_text};
use crate::form::{Field, FieldType, Form};
use crate::wire::protocol::{Action, Answer};

mod review;
use review::Review;

/// What the prompt process is given on stdin.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub id: String,
    pub form: Form,
    /// How long the question stays open, for the person to see.
    pub timeout_ms: u64,
}

const SELECT_HELP: &str = "↑↓ move · 1–9 pick · type to filter · Enter answers · Esc declines";
const MULTI_HELP: &str =
    "↑↓ move · Space toggles · → all · ← none · type to filter · Enter answers · Esc declines";
const TEXT_HELP: &str = "Enter answers · Esc declines";
const LINES_HELP: &str = "Enter on an empty line ends the text · Esc declines";

/// How long a prompt must have been on screen before it takes a key, in ms: the panel's
/// `ARM_DELAY_MS` (extension/lib/arming.js; a test checks they agree).
pub const ARM_DELAY_MS: u64 = 500;

/// While a prompt holds keys back, the terminal's `VMIN`: the terminal tells its reader there
/// is something to read only once this many bytes wait, which no typing reaches in half a
/// second (a paste of 255 bytes would).
const HOLD_VMIN: u8 = u8::MAX;

/// Runs one of inquire's prompts so that it takes no key typed before it had been on screen
/// [`ARM_DELAY_MS`]. inquire draws at once and then reads; it cannot be told to wait. So the
/// prompt starts in crossterm's raw mode set here (inquire's own call then finds it on and
/// leaves it, and turns it off as it ends), with `VMIN` at [`HOLD_VMIN`]: the prompt draws,
/// and its reader is not woken by what is typed. Keys crossterm had already read are dropped
/// before it starts. Once the delay is over, what was typed meanwhile is flushed and `VMIN`
/// goes back to 1: the next key is the first the prompt sees.
fn armed<T>(prompt: impl FnOnce() -> Result<T, InquireError>) -> Result<T, InquireError> {
    let tty = OpenOptions::new().read(true).write(true).open("/dev/tty")?;
    crossterm::terminal::enable_raw_mode()?;
    let mut held = termios::tcgetattr(&tty).map_err(std::io::Error::from)?;
    held.control_chars[SpecialCharacterIndices::VMIN as usize] = HOLD_VMIN;
    held.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
    termios::tcsetattr(&tty, SetArg::TCSANOW, &held).map_err(std::io::Error::from)?;
    // Keys typed before this prompt drew: in the terminal, and any crossterm read ahead.
    termios::tcflush(&tty, FlushArg::TCIFLUSH).map_err(std::io::Error::from)?;
    while crossterm::event::poll(Duration::ZERO)? {
        let _ = crossterm::event::read()?;
    }
    let arming = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(ARM_DELAY_MS));
        take_keys(&tty);
    });
    let asked = prompt();
    let _ = arming.join();
    asked
}

/// The prompt has been on screen long enough: what was typed meanwhile goes, and the next key
/// wakes its reader. Only while the terminal is still as [`armed`] left it: a prompt that
/// ended early (the terminal went away) has put its settings back, and they stay.
fn take_keys(tty: &File) {
    let Ok(mut now) = termios::tcgetattr(tty) else {
        return;
    };
    if !holding(&now) {
        return;
    }
    let _ = termios::tcflush(tty, FlushArg::TCIFLUSH);
    now.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
    if let Err(err) = termios::tcsetattr(tty, SetArg::TCSANOW, &now) {
        tracing::warn!("could not let the prompt take keys: {err}");
    }
}

/// Whether the terminal is set as [`armed`] sets it to hold keys back.
fn holding(settings: &Termios) -> bool {
    !settings.local_flags.contains(LocalFlags::ICANON)
        && settings.control_chars[SpecialCharacterIndices::VMIN as usize] == HOLD_VMIN
}

/// How one prompt ended.
#[derive(Debug, Clone, PartialEq)]
enum Asked {
    /// A value, or `None` when the person left an optional field empty.
    Value(Option<Value>),
    /// "In my own words": no option, the note answers instead (ask_choice's free text).
    OwnWords,
    /// Esc: the person declines the whole question, as Esc does in the panel.
    Decline,
    /// Ctrl-C: the person closes the question without an answer.
    Cancel,
}

/// Esc and Ctrl-C are the person's answers; anything else is a terminal that failed.
fn ended(err: InquireError) -> Result<Asked, InquireError> {
    match err {
        InquireError::OperationCanceled => Ok(Asked::Decline),
        InquireError::OperationInterrupted => Ok(Asked::Cancel),
        other => Err(other),
    }
}

/// Asks the whole form and returns the person's reply (submit, decline or cancel).
pub fn ask(request: &Request) -> Result<Answer, InquireError> {
    let form = &request.form;
    // Esc declines here, as in the panel: the prompt Esc closed says so, not "<canceled>".
    inquire::set_global_render_config(
        inquire::ui::RenderConfig::default()
            .with_canceled_prompt_indicator(inquire::ui::Styled::new("declined")),
    );
    eprint!("{}", header(form, request.timeout_ms));
    let reply = |action, values, note| Answer {
        id: request.id.clone(),
        action,
        values,
        note,
        answered_by: None,
    };
    let mut values = Map::new();
    let mut note: Option<String> = None;
    // Fields answered "in my own words": the note is then the answer, not an addition.
    let mut own_words: Vec<String> = Vec::new();
    let mut pending: Vec<Field> = form.fields.clone();
    let mut note_pending = form.allow_note;
    loop {
        for field in pending.drain(..) {
            // A field that was or becomes "in my own words" changes what the note is (the
            // answer, or an addition): the note is asked again.
            if own_words.contains(&field.name) {
                own_words.retain(|name| *name != field.name);
                note_pending = true;
            }
            match ask_field(form, &field)? {
                Asked::Value(Some(value)) => {
                    values.insert(field.name.clone(), value);
                }
                Asked::Value(None) => {
                    values.remove(&field.name);
                }
                Asked::OwnWords => {
                    values.remove(&field.name);
                    own_words.push(field.name.clone());
                    note_pending = true;
                }
                Asked::Decline => return Ok(reply(Action::Decline, None, None)),
                Asked::Cancel => return Ok(reply(Action::Cancel, None, None)),
            }
        }
        if note_pending {
            note_pending = false;
            match ask_note(!own_words.is_empty(), note.as_deref())? {
                Asked::Value(text) => note = text.and_then(|v| v.as_str().map(str::to_owned)),
                Asked::Decline => return Ok(reply(Action::Decline, None, None)),
                Asked::Cancel => return Ok(reply(Action::Cancel, None, None)),
                Asked::OwnWords => {}
            }
        }
        if let Err(err) = form.check_reply(&values, note.as_deref()) {
            eprintln!("✗ {}", marked(&err.message));
            // Only a rule over the whole reply gets here (a note-taking form answered
            // with neither): ask its field again, then the note.
            pending = err
                .field
                .as_deref()
                .and_then(|name| form.field(name))
                .cloned()
                .into_iter()
                .collect();
            note_pending = form.allow_note;
            if pending.is_empty() && !note_pending {
                // Nothing to ask again; the agent side will say what was wrong.
                return Ok(reply(Action::Submit, Some(values), note));
            }
            continue;
        }
        if !review::wanted(form) {
            return Ok(reply(Action::Submit, Some(values), note));
        }
        match review::review(form, &values, note.as_deref())? {
            Review::Send => return Ok(reply(Action::Submit, Some(values), note)),
            Review::Change(name) => {
                if let Some(field) = form.field(&name) {
                    pending.push(review::again(field, values.get(&name)));
                }
            }
            Review::ChangeNote => note_pending = true,
            Review::Decline => return Ok(reply(Action::Decline, None, None)),
            Review::Cancel => return Ok(reply(Action::Cancel, None, None)),
        }
    }
}

/// The lines above the first prompt: the form's title and description when the prompts do
/// not say them already, and the keys that end the question.
fn header(form: &Form, timeout_ms: u64) -> String {
    let mut out = String::new();
    let single = form.fields.len() == 1 && form.fields[0].label == form.title;
    if !single {
        out.push_str(&format!("{}\n", terminal_text(&form.title)));
    }
    if let Some(description) = &form.description {
        out.push_str(&format!("{}\n", terminal_text(description)));
    }
    out.push_str(&format!(
        "(him: Esc declines, Ctrl-C cancels; closes in {})\n",
        duration_words(timeout_ms)
    ));
    out
}

fn duration_words(ms: u64) -> String {
    let s = ms.div_ceil(1000);
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        _ => format!("{} h", s / 3600),
    }
}

fn ask_field(form: &Form, field: &Field) -> Result<Asked, InquireError> {
    let label = prompt_label(form, field);
    match field.kind {
        FieldType::Text | FieldType::Email | FieldType::Url | FieldType::Number => {
            ask_text(form, field, &label)
        }
        FieldType::Password => {
            let help = help(field, TEXT_HELP);
            let prompt = Password::new(&label)
                .with_display_mode(PasswordDisplayMode::Hidden)
                .without_confirmation()
                .with_validator(rule(form, field, None))
                .with_help_message(&help);
            match armed(|| prompt.prompt()) {
                Ok(text) => Ok(Asked::Value(typed(field, &text).ok().flatten())),
                Err(err) => ended(err),
            }
        }
        FieldType::Textarea => ask_lines(form, field, &label),
        FieldType::Select | FieldType::Radio => ask_one(form, field, &label),
        FieldType::MultiSelect => ask_many(form, field, &label),
        FieldType::Confirm | FieldType::Checkbox => {
            let help = help(field, "y or n, then Enter · Esc declines");
            let mut prompt = Confirm::new(&label).with_help_message(&help);
            let default = field.default.as_ref().and_then(Value::as_bool);
            // An untouched checkbox is unticked, as in the panel; a confirm has no such
            // answer, so without a default the person types y or n.
            let default = match field.kind {
                FieldType::Checkbox => Some(default.unwrap_or(false)),
                _ => default,
            };
            if let Some(default) = default {
                prompt = prompt.with_default(default);
            }
            match armed(|| prompt.prompt()) {
                Ok(yes) => Ok(Asked::Value(Some(Value::Bool(yes)))),
                Err(err) => ended(err),
            }
        }
    }
}

/// The label, marked when the field may be left empty (a yes/no always has an answer; a
/// multi_select with a minimum does not count as optional, nor a choice whose other answer
/// is the person's own words).
fn prompt_label(form: &Form, field: &Field) -> String {
    let optional = !field.required
        && match field.kind {
            FieldType::Confirm | FieldType::Checkbox => false,
            FieldType::MultiSelect => field.min.is_none_or(|min| min <= 0.0),
            FieldType::Select | FieldType::Radio => !form.allow_note,
            _ => true,
        };
    let label = terminal_line(&field.label);
    if optional {
        format!("{label} (optional)")
    } else {
        label
    }
}

/// The field's description, if any, before the keys.
fn help(field: &Field, keys: &str) -> String {
    let mut parts = Vec::new();
    if let Some(description) = &field.description {
        parts.push(terminal_line(description));
    }
    if field.kind == FieldType::Number {
        match (field.min, field.max) {
            (Some(min), Some(max)) => parts.push(format!("a number from {min} to {max}")),
            (Some(min), None) => parts.push(format!("a number of at least {min}")),
            (None, Some(max)) => parts.push(format!("a number of at most {max}")),
            (None, None) => parts.push("a number".into()),
        }
    }
    parts.push(keys.to_owned());
    parts.join(" · ")
}

/// The form's rule for `field`, as an inquire validator of the typed text. Owns a copy of
/// the form: some of inquire's prompts keep only `'static` validators.
fn rule(
    form: &Form,
    field: &Field,
    default: Option<&Shown>,
) -> impl Fn(&str) -> Result<Validation, CustomUserError> + Clone + use<> {
    let (form, field, default) = (form.clone(), field.clone(), default.cloned());
    move |input: &str| {
        Ok(match typed(&field, Shown::real(default.as_ref(), input)) {
            Ok(value) => verdict(&form, &field, value.as_ref()),
            Err(message) => Validation::Invalid(marked(&message).into()),
        })
    }
}

fn verdict(form: &Form, field: &Field, value: Option<&Value>) -> Validation {
    match form.check_field(&field.name, value) {
        Ok(_) => Validation::Valid,
        Err(err) => Validation::Invalid(marked(&err.message).into()),
    }
}

/// The value a typed text stands for in `field`, as the panel reads its inputs: `None` when
/// left empty, trimmed for email, url and number, a JSON number for a number field. Only
/// text that is no number at all, or a whole number that would arrive rounded, is refused
/// here; every rule is the form's.
fn typed(field: &Field, input: &str) -> Result<Option<Value>, String> {
    let trimmed = input.trim();
    match field.kind {
        FieldType::Number => {
            if trimmed.is_empty() {
                return Ok(None);
            }
            if let Ok(n) = trimmed.parse::<i64>() {
                return Ok(Some(Value::from(n)));
            }
            if let Ok(n) = trimmed.parse::<u64>() {
                return Ok(Some(Value::from(n)));
            }
            // Past 64 bits a whole number would reach the agent rounded: what is sent must be
            // what the person typed.
            let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err("this number has too many digits to be sent exactly".to_owned());
            }
            trimmed
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(|n| Some(Value::Number(n)))
                .ok_or_else(|| "enter a number".to_owned())
        }
        FieldType::Email | FieldType::Url => {
            Ok((!trimmed.is_empty()).then(|| Value::String(trimmed.to_owned())))
        }
        _ => Ok((!input.is_empty()).then(|| Value::String(input.to_owned()))),
    }
}

fn ask_text(form: &Form, field: &Field, label: &str) -> Result<Asked, InquireError> {
    let default = field
        .default
        .as_ref()
        .and_then(default_text)
        .map(|d| Shown::new(&d));
    let help = help(field, TEXT_HELP);
    let placeholder = field.placeholder.as_deref().map(terminal_literal);
    let mut prompt = Text::new(label)
        .with_validator(rule(form, field, default.as_ref()))
        .with_help_message(&help);
    if let Some(placeholder) = &placeholder {
        prompt = prompt.with_placeholder(placeholder);
    }
    if let Some(default) = &default {
        prompt = prompt.with_default(&default.shown);
    }
    match armed(|| prompt.prompt()) {
        Ok(text) => Ok(Asked::Value(
            typed(field, Shown::real(default.as_ref(), &text))
                .ok()
                .flatten(),
        )),
        Err(err) => ended(err),
    }
}

fn default_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A default the agent gave, as the terminal shows it (inquire draws a default as it is, and
/// Enter on an empty line answers with it): marked, and taken back to what the agent wrote
/// when the person accepts it.
#[derive(Debug, Clone)]
struct Shown {
    shown: String,
    real: String,
}

impl Shown {
    fn new(real: &str) -> Shown {
        Shown {
            shown: terminal_literal(real),
            real: real.to_owned(),
        }
    }

    /// What `input` stands for: the agent's default when it is the default as shown.
    fn real<'a>(default: Option<&'a Shown>, input: &'a str) -> &'a str {
        match default {
            Some(d) if input == d.shown => &d.real,
            _ => input,
        }
    }
}

/// A text area, one line per prompt until an empty line; the lines are checked together.
fn ask_lines(form: &Form, field: &Field, label: &str) -> Result<Asked, InquireError> {
    let default = field
        .default
        .as_ref()
        .and_then(Value::as_str)
        .map(Shown::new);
    let help = help(field, LINES_HELP);
    loop {
        let mut lines: Vec<String> = Vec::new();
        loop {
            let shown = if lines.is_empty() { label } else { "…" };
            let mut prompt = Text::new(shown);
            if lines.is_empty() {
                prompt = prompt.with_help_message(&help);
                if let Some(default) = &default {
                    prompt = prompt.with_default(&default.shown);
                }
            }
            // The next line of the same text is no new question: it takes keys at once, so
            // that typing runs on from one line to the next.
            let asked = if lines.is_empty() {
                armed(|| prompt.prompt())
            } else {
                prompt.prompt()
            };
            match asked {
                Ok(line) if line.is_empty() => break,
                // The default may hold several lines; it is the whole text.
                Ok(line)
                    if lines.is_empty() && default.as_ref().is_some_and(|d| line == d.shown) =>
                {
                    lines.push(Shown::real(default.as_ref(), &line).to_owned());
                    break;
                }
                Ok(line) => lines.push(line),
                Err(err) => return ended(err),
            }
        }
        let value = typed(field, &lines.join("\n")).ok().flatten();
        match form.check_field(&field.name, value.as_ref()) {
            Ok(_) => return Ok(Asked::Value(value)),
            Err(err) => eprintln!("✗ {}", marked(&err.message)),
        }
    }
}

/// One entry of a list prompt.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    /// In the list: number, label, description, badge.
    shown: String,
    /// Once picked: the label alone.
    label: String,
    pick: Pick,
}

#[derive(Debug, Clone, PartialEq)]
enum Pick {
    /// The option of this value; numbered, so a digit picks it.
    Option(String),
    /// No option: the note answers (a note-taking form's optional choice).
    OwnWords,
    /// No option, for an optional field.
    Nothing,
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

/// The options, numbered; `one` adds a way to leave a single choice empty when the field
/// allows it (a multi_select is left empty by choosing none).
fn items(form: &Form, field: &Field, one: bool) -> Vec<Item> {
    let mut items: Vec<Item> = field
        .options
        .iter()
        .enumerate()
        .map(|(i, option)| {
            let label = terminal_literal(&option.label);
            let mut shown = format!("{}. {label}", i + 1);
            if let Some(description) = &option.description {
                shown.push_str(&format!(" — {}", terminal_line(description)));
            }
            if option.recommended {
                shown.push_str(" (recommended)");
            }
            Item {
                shown,
                label,
                pick: Pick::Option(option.value.clone()),
            }
        })
        .collect();
    if one && !field.required {
        let extra = if form.allow_note {
            Item {
                shown: "✎ In my own words…".into(),
                label: "in my own words".into(),
                pick: Pick::OwnWords,
            }
        } else {
            Item {
                shown: "(no answer)".into(),
                label: "no answer".into(),
                pick: Pick::Nothing,
            }
        };
        items.push(extra);
    }
    items
}

/// Keeps the options in their order; typed digits pick the option of that number, other
/// text keeps the options whose label holds it.
fn score(input: &str, item: &Item, shown: &str, index: usize) -> Option<i64> {
    let order = -(index as i64);
    let typed = input.trim();
    if typed.is_empty() {
        return Some(order);
    }
    if typed.chars().all(|c| c.is_ascii_digit()) {
        let numbered = matches!(item.pick, Pick::Option(_));
        return (numbered && typed == (index + 1).to_string()).then_some(order);
    }
    shown
        .to_lowercase()
        .contains(&typed.to_lowercase())
        .then_some(order)
}

fn ask_one(form: &Form, field: &Field, label: &str) -> Result<Asked, InquireError> {
    let items = items(form, field, true);
    let start = field
        .default
        .as_ref()
        .and_then(Value::as_str)
        .and_then(|d| items.iter().position(|i| i.pick == Pick::Option(d.into())))
        .unwrap_or(0);
    let help = help(field, SELECT_HELP);
    let prompt = Select::new(label, items)
        .with_starting_cursor(start)
        .with_scorer(&score)
        .with_formatter(&|picked| picked.value.label.clone())
        .with_help_message(&help)
        .with_page_size(12);
    match armed(|| prompt.prompt()) {
        Ok(item) => Ok(match item.pick {
            Pick::Option(value) => Asked::Value(Some(Value::String(value))),
            Pick::OwnWords => Asked::OwnWords,
            Pick::Nothing => Asked::Value(None),
        }),
        Err(err) => ended(err),
    }
}

fn chosen_values(chosen: &[ListOption<&Item>]) -> Value {
    Value::Array(
        chosen
            .iter()
            .filter_map(|o| match &o.value.pick {
                Pick::Option(value) => Some(Value::String(value.clone())),
                _ => None,
            })
            .collect(),
    )
}

fn ask_many(form: &Form, field: &Field, label: &str) -> Result<Asked, InquireError> {
    let items = items(form, field, false);
    let defaults: Vec<usize> = match &field.default {
        Some(Value::Array(values)) => items
            .iter()
            .enumerate()
            .filter(|(_, item)| match &item.pick {
                Pick::Option(v) => values.iter().any(|d| d.as_str() == Some(v)),
                _ => false,
            })
            .map(|(i, _)| i)
            .collect(),
        _ => Vec::new(),
    };
    let help = help(field, MULTI_HELP);
    let (owned_form, owned_field) = (form.clone(), field.clone());
    let check = move |chosen: &[ListOption<&Item>]| -> Result<Validation, CustomUserError> {
        Ok(verdict(
            &owned_form,
            &owned_field,
            Some(&chosen_values(chosen)),
        ))
    };
    let prompt = MultiSelect::new(label, items)
        .with_default(&defaults)
        .with_scorer(&score)
        .with_keep_filter(false)
        .with_formatter(&|picked| {
            let labels: Vec<&str> = picked.iter().map(|o| o.value.label.as_str()).collect();
            labels.join(", ")
        })
        .with_validator(check)
        .with_help_message(&help)
        .with_page_size(12);
    match armed(|| prompt.raw_prompt()) {
        Ok(chosen) => {
            let refs: Vec<ListOption<&Item>> = chosen
                .iter()
                .map(|o| ListOption::new(o.index, &o.value))
                .collect();
            Ok(Asked::Value(Some(chosen_values(&refs))))
        }
        Err(err) => ended(err),
    }
}

/// The note of a form that takes one: the answer itself after "in my own words", else an
/// optional addition; `kept` is the note already given, when it is asked again.
fn ask_note(own_words: bool, kept: Option<&str>) -> Result<Asked, InquireError> {
    let label = if own_words {
        "Your answer"
    } else {
        "Note (optional)"
    };
    let help = if own_words {
        TEXT_HELP
    } else {
        "Enter alone adds none · Esc declines"
    };
    let mut prompt = Text::new(label).with_help_message(help);
    // Asked again from the review: the note as it was, to edit.
    if let Some(kept) = kept {
        prompt = prompt.with_initial_value(kept);
    }
    match armed(|| prompt.prompt()) {
        Ok(text) if text.trim().is_empty() => Ok(Asked::Value(None)),
        Ok(text) => Ok(Asked::Value(Some(Value::String(text)))),
        Err(err) => ended(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(value: Value) -> Field {
        serde_json::from_value(value).unwrap()
    }

    fn form(fields: Value, allow_note: bool) -> Form {
        serde_json::from_value(json!({"title": "Q", "fields": fields, "allow_note": allow_note}))
            .unwrap()
    }

    #[test]
    fn the_terminal_waits_as_long_as_the_panel_before_a_prompt_takes_keys() {
        let js = include_str!("../../../extension/lib/arming.js");
        let line = js
            .lines()
            .find_map(|l| l.strip_prefix("export const ARM_DELAY_MS = "))
            .expect("arming.js exports ARM_DELAY_MS");
        let panel: u64 = line.trim_end_matches(';').parse().unwrap();
        assert_eq!(
            ARM_DELAY_MS, panel,
            "prompts.rs and extension/lib/arming.js disagree"
        );
    }

    #[test]
    fn typed_text_becomes_the_value_the_panel_would_send() {
        let number = field(json!({"name": "n", "type": "number", "label": "N"}));
        assert_eq!(typed(&number, " 3 "), Ok(Some(json!(3))));
        assert_eq!(typed(&number, "2.5"), Ok(Some(json!(2.5))));
        assert_eq!(typed(&number, ""), Ok(None));
        assert!(typed(&number, "three").is_err());
        assert!(typed(&number, "inf").is_err(), "JSON has no infinity");
        // Whole numbers go out exactly, to 64 bits; past that they would arrive rounded.
        assert_eq!(
            typed(&number, "18446744073709551615"),
            Ok(Some(json!(18446744073709551615u64)))
        );
        assert_eq!(
            typed(&number, "-9223372036854775808"),
            Ok(Some(json!(i64::MIN)))
        );
        assert!(typed(&number, "18446744073709551616").is_err());
        assert!(typed(&number, "-9223372036854775809").is_err());
        let email = field(json!({"name": "e", "type": "email", "label": "E"}));
        assert_eq!(typed(&email, " a@b.org "), Ok(Some(json!("a@b.org"))));
        let text = field(json!({"name": "t", "type": "text", "label": "T"}));
        assert_eq!(
            typed(&text, " kept as typed "),
            Ok(Some(json!(" kept as typed ")))
        );
        assert_eq!(typed(&text, ""), Ok(None));
    }

    #[test]
    fn the_forms_own_rule_judges_each_typed_value() {
        let f = form(
            json!([{"name": "n", "type": "number", "label": "N", "min": 1, "max": 5, "required": true}]),
            false,
        );
        let check = rule(&f, &f.fields[0], None);
        assert_eq!(check("3").unwrap(), Validation::Valid);
        assert_eq!(
            check("9").unwrap(),
            Validation::Invalid("9 is above the maximum 5".into())
        );
        assert_eq!(
            check("").unwrap(),
            Validation::Invalid("is required but was left empty".into())
        );
    }

    #[test]
    fn a_digit_picks_the_option_of_that_number_and_words_filter() {
        let f = form(
            json!([{"name": "c", "type": "radio", "label": "C",
                    "options": [{"value": "pg", "label": "Postgres"}, {"value": "lite", "label": "SQLite", "recommended": true}]}]),
            true,
        );
        let items = items(&f, &f.fields[0], true);
        assert_eq!(items[1].shown, "2. SQLite (recommended)");
        assert_eq!(
            items[2].pick,
            Pick::OwnWords,
            "optional with a note: own words"
        );
        let kept = |input: &str| -> Vec<usize> {
            (0..items.len())
                .filter(|&i| score(input, &items[i], &items[i].shown, i).is_some())
                .collect()
        };
        assert_eq!(kept(""), vec![0, 1, 2]);
        assert_eq!(kept("2"), vec![1]);
        assert_eq!(kept("3"), Vec::<usize>::new(), "own words has no number");
        assert_eq!(kept("sql"), vec![1]);
        assert_eq!(kept("own"), vec![2]);
    }

    #[test]
    fn an_optional_choice_without_a_note_offers_no_answer() {
        let f = form(
            json!([{"name": "c", "type": "select", "label": "C",
                    "options": [{"value": "a", "label": "A"}]}]),
            false,
        );
        assert_eq!(items(&f, &f.fields[0], true)[1].pick, Pick::Nothing);
        assert_eq!(
            items(&f, &f.fields[0], false).len(),
            1,
            "none of a multi_select"
        );
    }

    #[test]
    fn the_header_names_a_form_but_not_a_question_twice() {
        let single: Form = serde_json::from_value(
            json!({"title": "Deploy?", "fields": [{"name": "confirmed", "type": "confirm", "label": "Deploy?"}]}),
        )
        .unwrap();
        assert!(!header(&single, 300_000).contains("Deploy?"));
        assert!(header(&single, 300_000).contains("closes in 5 min"));
        let many = form(
            json!([{"name": "a", "type": "text", "label": "A"}, {"name": "b", "type": "text", "label": "B"}]),
            false,
        );
        assert!(header(&many, 1500).starts_with("Q\n"));
        assert!(header(&many, 1500).contains("closes in 2 s"));
    }
}
