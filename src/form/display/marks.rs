//! The one rule for showing text an agent wrote where a person decides on it (a permission
//! card's command, tool name, path and URL; every text of the terminal prompt). The panel has
//! the same rule in `extension/lib/display.js`; both are tested against
//! `tests/fixtures/display_text.json`, so a change here is a change there.
//!
//! Nothing is dropped and nothing that reads normally is changed; what could make the text
//! read otherwise than it runs is shown as a visible mark:
//! - a control character (C0 but tab and line feed, DEL, C1, U+2028/2029), an invisible
//!   format character (general category Cf: bidi embeddings, overrides and isolates, LRM/RLM/
//!   ALM, zero-width space and joiners, BOM, soft hyphen, tags…) or another invisible
//!   default-ignorable one (Hangul fillers, the combining grapheme joiner, …) becomes
//!   `⟨U+XXXX⟩`. Kept as they are: a zero-width joiner or non-joiner between two non-ASCII
//!   letters (Persian, Indic scripts) or two pictographs (emoji sequences), variation
//!   selectors, and the tags of a flag after U+1F3F4;
//! - a letter of a word mixing scripts, as Unicode TR39 means it, where one of them is
//!   Greek, Cyrillic, Armenian or Cherokee (the scripts whose letters pass for Latin ones:
//!   `gіthub` with a Cyrillic і), becomes `⟨U+XXXX⟩` when it is not of the word's main
//!   script. A word is a run of letters, digits and marks; Latin with Han, kana or Hangul
//!   (Chinese, Japanese, Korean writers mix them) and German's ä or ß are not marked;
//! - more than two blank lines in a row become one line `⏎×N` (N line breaks; spaces and
//!   carriage returns on those lines go with them);
//! - more than 8 spaces in a row (space, tab, no-break and the other Unicode spaces) become
//!   `␣×N`, except an indentation of at most 24 ASCII spaces or tabs at a line's start, so
//!   code keeps its shape.

use unicode_general_category::{GeneralCategory, get_general_category};

/// Why a piece of text is shown as a mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// A control character.
    Control,
    /// An invisible character: format (bidi, zero-width) or another default-ignorable one.
    Invisible,
    /// A letter of another script inside a word.
    Mixed,
    /// A run of blank lines.
    Lines,
    /// A run of spaces.
    Spaces,
}

impl Mark {
    /// Its name in the shared fixture and in the panel's CSS class (`him-mark-<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Mark::Control => "control",
            Mark::Invisible => "invisible",
            Mark::Mixed => "mixed",
            Mark::Lines => "lines",
            Mark::Spaces => "spaces",
        }
    }
}

/// A piece of the shown text: as written, or a mark standing for what was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub text: String,
    pub mark: Option<Mark>,
}

/// More line breaks than this in a row (more than two blank lines) become one mark.
pub const MAX_LINE_BREAKS: usize = 3;
/// More spaces than this in a row become one mark.
pub const MAX_SPACES: usize = 8;
/// An indentation at a line's start of at most this many ASCII spaces or tabs stays as it is.
pub const MAX_INDENT: usize = 24;

/// `text` as it is to be shown: the pieces in order, marks among them.
pub fn pieces(text: &str) -> Vec<Piece> {
    let chars: Vec<char> = text.chars().collect();
    let mixed = mixed_letters(&chars);
    let mut out = Pieces::default();
    let mut in_flag = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            let (breaks, last) = line_break_run(&chars, i);
            if breaks > MAX_LINE_BREAKS {
                out.text("\n");
                out.mark(Mark::Lines, format!("⏎×{breaks}"));
                out.text("\n");
                i = last + 1;
            } else {
                out.text("\n");
                i += 1;
            }
            in_flag = false;
            continue;
        }
        if is_space(c) {
            let end = (i..chars.len())
                .find(|&j| !is_space(chars[j]))
                .unwrap_or(chars.len());
            let run = &chars[i..end];
            let indent = (i == 0 || chars[i - 1] == '\n')
                && run.len() <= MAX_INDENT
                && run.iter().all(|&s| s == ' ' || s == '\t');
            if run.len() > MAX_SPACES && !indent {
                out.mark(Mark::Spaces, format!("␣×{}", run.len()));
            } else {
                out.text(&run.iter().collect::<String>());
            }
            i = end;
            in_flag = false;
            continue;
        }
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let flag_tag = is_tag(c) && in_flag;
        in_flag = c == FLAG || (flag_tag && c != CANCEL_TAG);
        if let Some(mark) = hidden(c, prev, next, flag_tag) {
            out.mark(mark, escape(c));
        } else if mixed[i] {
            out.mark(Mark::Mixed, escape(c));
        } else {
            out.char(c);
        }
        i += 1;
    }
    out.done()
}

/// `text` as it is to be shown, as one string (the terminal's form of [`pieces`]).
pub fn marked(text: &str) -> String {
    pieces(text).into_iter().map(|p| p.text).collect()
}

/// `⟨U+XXXX⟩`: how a marked character is shown.
pub fn escape(c: char) -> String {
    format!("⟨U+{:04X}⟩", c as u32)
}

#[derive(Default)]
struct Pieces {
    pieces: Vec<Piece>,
    text: String,
}

impl Pieces {
    fn text(&mut self, s: &str) {
        self.text.push_str(s);
    }
    fn char(&mut self, c: char) {
        self.text.push(c);
    }
    fn mark(&mut self, mark: Mark, shown: String) {
        self.flush();
        self.pieces.push(Piece {
            text: shown,
            mark: Some(mark),
        });
    }
    fn flush(&mut self) {
        if !self.text.is_empty() {
            self.pieces.push(Piece {
                text: std::mem::take(&mut self.text),
                mark: None,
            });
        }
    }
    fn done(mut self) -> Vec<Piece> {
        self.flush();
        self.pieces
    }
}

/// From the line feed at `start`: how many line breaks follow one another with only spaces
/// (and carriage returns, so that CRLF lines count too) between them, and where the last of
/// them is.
fn line_break_run(chars: &[char], start: usize) -> (usize, usize) {
    let (mut breaks, mut last) = (0, start);
    for (j, &c) in chars.iter().enumerate().skip(start) {
        if c == '\n' {
            breaks += 1;
            last = j;
        } else if !is_space(c) && c != '\r' {
            break;
        }
    }
    (breaks, last)
}

/// Spaces that may be collapsed: ASCII space and tab, and the Unicode spaces (Zs).
pub fn is_space(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
    )
}

const ZWNJ: char = '\u{200c}';
const ZWJ: char = '\u{200d}';
/// WAVING BLACK FLAG, which tag characters follow in a subdivision flag (🏴 + tags).
const FLAG: char = '\u{1f3f4}';
const CANCEL_TAG: char = '\u{e007f}';

fn is_tag(c: char) -> bool {
    ('\u{e0020}'..='\u{e007f}').contains(&c)
}

/// The mark for a character that would not show as itself, if it is one.
fn hidden(c: char, prev: Option<char>, next: Option<char>, flag_tag: bool) -> Option<Mark> {
    if c.is_ascii_graphic() {
        return None;
    }
    let category = get_general_category(c);
    match c {
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' => {
            return Some(Mark::Control);
        }
        ZWJ | ZWNJ if joins(prev, next) => return None,
        _ if flag_tag => return None,
        _ => {}
    }
    let invisible = category == GeneralCategory::Format
        || matches!(
            c,
            '\u{34f}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{17b4}'
                | '\u{17b5}'
                | '\u{3164}'
                | '\u{ffa0}'
                | '\u{fff0}'..='\u{fff8}'
                | '\u{e0000}'..='\u{e0fff}'
        );
    invisible.then_some(Mark::Invisible)
}

/// Whether a joiner between `prev` and `next` joins what it should: two letters of a script
/// that uses joiners (after a letter or a mark, before a letter), or two pictographs.
fn joins(prev: Option<char>, next: Option<char>) -> bool {
    let (Some(prev), Some(next)) = (prev, next) else {
        return false;
    };
    let letter_before = !prev.is_ascii() && (prev.is_alphabetic() || is_mark(prev));
    let letter_after = !next.is_ascii() && next.is_alphabetic();
    (letter_before && letter_after) || (is_pictograph(prev) && is_pictograph(next))
}

fn is_mark(c: char) -> bool {
    !c.is_ascii()
        && matches!(
            get_general_category(c),
            GeneralCategory::NonspacingMark
                | GeneralCategory::SpacingMark
                | GeneralCategory::EnclosingMark
        )
}

/// Emoji and the characters that end one before a joiner (VS16, a skin tone: both in these
/// ranges or the variation selector itself).
fn is_pictograph(c: char) -> bool {
    matches!(c, '\u{2300}'..='\u{23ff}' | '\u{2600}'..='\u{27bf}' | '\u{2b00}'..='\u{2bff}' | '\u{fe0f}' | '\u{1f000}'..='\u{1faff}')
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || is_mark(c)
}

/// The scripts a word is judged by. `Other` is every other letter (Han, Arabic, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Script {
    Latin,
    Greek,
    Cyrillic,
    Armenian,
    Cherokee,
    Other,
}

impl Script {
    /// The scripts whose letters look like Latin ones (TR39's reason to refuse mixing them).
    fn confusable(self) -> bool {
        matches!(
            self,
            Script::Greek | Script::Cyrillic | Script::Armenian | Script::Cherokee
        )
    }
}

/// The script of a letter, by the blocks of each (a letter outside them is `Other`).
fn script(c: char) -> Script {
    match c {
        'a'..='z'
        | 'A'..='Z'
        | '\u{aa}'
        | '\u{ba}'
        | '\u{c0}'..='\u{24f}'
        | '\u{250}'..='\u{2af}'
        | '\u{1e00}'..='\u{1eff}'
        | '\u{2c60}'..='\u{2c7f}'
        | '\u{a720}'..='\u{a7ff}'
        | '\u{ab30}'..='\u{ab6f}'
        | '\u{fb00}'..='\u{fb06}'
        | '\u{ff21}'..='\u{ff3a}'
        | '\u{ff41}'..='\u{ff5a}' => Script::Latin,
        '\u{370}'..='\u{3ff}' | '\u{1f00}'..='\u{1fff}' => Script::Greek,
        '\u{400}'..='\u{52f}'
        | '\u{1c80}'..='\u{1c8f}'
        | '\u{2de0}'..='\u{2dff}'
        | '\u{a640}'..='\u{a69f}' => Script::Cyrillic,
        '\u{531}'..='\u{58f}' | '\u{fb13}'..='\u{fb17}' => Script::Armenian,
        '\u{13a0}'..='\u{13ff}' | '\u{ab70}'..='\u{abbf}' => Script::Cherokee,
        _ => Script::Other,
    }
}

/// For each character: whether it is a letter to mark as of another script in its word.
fn mixed_letters(chars: &[char]) -> Vec<bool> {
    let mut mixed = vec![false; chars.len()];
    let mut i = 0;
    while i < chars.len() {
        if !is_word(chars[i]) {
            i += 1;
            continue;
        }
        let end = (i..chars.len())
            .find(|&j| !is_word(chars[j]))
            .unwrap_or(chars.len());
        if let Some(main) = main_script(&chars[i..end]) {
            for j in i..end {
                let of = script(chars[j]);
                mixed[j] = chars[j].is_alphabetic() && of != main && of != Script::Other;
            }
        }
        i = end;
    }
    mixed
}

/// The script of most of the word's letters when the word mixes scripts in a way TR39 does not
/// allow (ties go to the script first in [`Script`]'s order); `None` for a word to leave as it is.
/// Only the scripts whose letters pass for one another count: a letter of any other script (Han
/// in "β版", a modifier letter such as the Ukrainian apostrophe in "мʼята") is never marked
/// and never makes a word mixed.
fn main_script(word: &[char]) -> Option<Script> {
    let mut counts = [0usize; 6];
    for &c in word.iter().filter(|c| c.is_alphabetic()) {
        counts[script(c) as usize] += 1;
    }
    let present: Vec<Script> = ALL_SCRIPTS
        .into_iter()
        .filter(|&s| s != Script::Other && counts[s as usize] > 0)
        .collect();
    if present.len() < 2 || !present.iter().any(|s| s.confusable()) {
        return None;
    }
    present
        .into_iter()
        .rev()
        .max_by_key(|&s| counts[s as usize])
}

const ALL_SCRIPTS: [Script; 6] = [
    Script::Latin,
    Script::Greek,
    Script::Cyrillic,
    Script::Armenian,
    Script::Cherokee,
    Script::Other,
];
