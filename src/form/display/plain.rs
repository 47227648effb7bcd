//! The plain text of the Markdown subset of DESIGN.md §4: what a person reads in the panel,
//! without the marks, for places that cannot draw it (the terminal, a page's title, a
//! notice). It parses as `extension/lib/markdown.js` does — the same blocks, the same
//! inline rules, in time linear in the text — and keeps the text of each part: a code
//! span's text as written (`rm *.log` stays `rm *.log`), a link's label, an emphasis's
//! words. `plainText` and `plainTitle` in markdown.js give the same results; both are tested
//! against `tests/fixtures/display_text.json`.
//!
//! Layout: blocks are separated by a blank line, list items are lines of their own ("- "
//! or "1. "), a fenced code block is its text. The title is the first block on one line.

use unicode_general_category::{GeneralCategory, get_general_category};

/// The plain text of `markdown`, block by block.
pub fn plain_text(markdown: &str) -> String {
    let blocks: Vec<String> = parse_blocks(markdown)
        .into_iter()
        .map(|block| match block {
            Block::Paragraph(text) => text,
            Block::Code(text) => text,
            Block::List { ordered, items } => items
                .iter()
                .enumerate()
                .map(|(n, item)| {
                    if ordered {
                        format!("{}. {item}", n + 1)
                    } else {
                        format!("- {item}")
                    }
                })
                .collect::<Vec<_>>()
                .join("\n"),
        })
        .collect();
    blocks.join("\n\n")
}

/// The first block of `markdown` as one line: what names a question in a list, a notice or
/// a page's title (the panel's `plainTitle`).
pub fn plain_title(markdown: &str) -> String {
    let first = match parse_blocks(markdown).into_iter().next() {
        None => return String::new(),
        Some(Block::Paragraph(text) | Block::Code(text)) => text,
        Some(Block::List { items, .. }) => items.join(" "),
    };
    first
        .split(is_space)
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

enum Block {
    Paragraph(String),
    Code(String),
    List { ordered: bool, items: Vec<String> },
}

/// markdown.js `parseMarkdown`, each block's inline text already made plain.
fn parse_blocks(text: &str) -> Vec<Block> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<&str> = text.split('\n').collect();
    let mut blocks = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut list: Option<(bool, Vec<String>)> = None;

    fn flush_para(para: &mut Vec<&str>, blocks: &mut Vec<Block>) {
        if !para.is_empty() {
            blocks.push(Block::Paragraph(inline_text(&para.join("\n"))));
            para.clear();
        }
    }
    fn flush_list(list: &mut Option<(bool, Vec<String>)>, blocks: &mut Vec<Block>) {
        if let Some((ordered, items)) = list.take() {
            let items = items.iter().map(|item| inline_text(item)).collect();
            blocks.push(Block::List { ordered, items });
        }
    }

    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if trim_start(line).starts_with("```") {
            flush_para(&mut para, &mut blocks);
            flush_list(&mut list, &mut blocks);
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && !is_closing_fence(lines[i]) {
                body.push(lines[i]);
                i += 1;
            }
            blocks.push(Block::Code(body.join("\n")));
            // Past the closing fence (or the end).
            i += 1;
            continue;
        }
        i += 1;
        if line.chars().all(is_space) {
            flush_para(&mut para, &mut blocks);
            flush_list(&mut list, &mut blocks);
            continue;
        }
        if let Some((ordered, item)) = list_item(line) {
            flush_para(&mut para, &mut blocks);
            if list.as_ref().is_some_and(|(o, _)| *o != ordered) {
                flush_list(&mut list, &mut blocks);
            }
            list.get_or_insert_with(|| (ordered, Vec::new()))
                .1
                .push(item.to_owned());
            continue;
        }
        if let Some((_, items)) = &mut list
            && continues_item(line)
            && let Some(last) = items.last_mut()
        {
            last.push('\n');
            last.push_str(trim(line));
            continue;
        }
        flush_list(&mut list, &mut blocks);
        if let Some(heading) = heading_text(line) {
            flush_para(&mut para, &mut blocks);
            blocks.push(Block::Paragraph(inline_text(heading)));
            continue;
        }
        para.push(trim(line));
    }
    flush_para(&mut para, &mut blocks);
    flush_list(&mut list, &mut blocks);
    blocks
}

/// What JavaScript's `\s` matches.
fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

fn trim_start(s: &str) -> &str {
    s.trim_start_matches(is_space)
}

fn trim(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `/^\s*```\s*$/`
fn is_closing_fence(line: &str) -> bool {
    trim(line) == "```"
}

/// Up to three spaces, then `rest` (a marker) when it is there: what follows it.
fn after_indent(line: &str) -> Option<&str> {
    let indent = line.chars().take_while(|&c| is_space(c)).count();
    if indent > 3 {
        return None;
    }
    let at: usize = line.chars().take(indent).map(char::len_utf8).sum();
    Some(&line[at..])
}

/// At least one space, then the rest of the line (`\s+(.*)`), without a line terminator.
fn after_spaces(rest: &str) -> Option<&str> {
    let text = trim_start(rest);
    if text.len() == rest.len() || text.contains(['\u{2028}', '\u{2029}']) {
        return None;
    }
    Some(text)
}

/// "- text", "* text", "+ text" or "1. text", "1) text": (ordered, text).
fn list_item(line: &str) -> Option<(bool, &str)> {
    let rest = after_indent(line)?;
    if let Some(after) = rest.strip_prefix(['-', '*', '+']) {
        return after_spaces(after).map(|text| (false, text));
    }
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if !(1..=9).contains(&digits) {
        return None;
    }
    let after = rest[digits..].strip_prefix(['.', ')'])?;
    after_spaces(after).map(|text| (true, text))
}

/// `/^\s{2,}\S/`: an indented line that continues the last list item.
fn continues_item(line: &str) -> bool {
    let indent = line.chars().take_while(|&c| is_space(c)).count();
    indent >= 2 && line.chars().nth(indent).is_some()
}

/// The text of a "# heading" line, without closing "#"s and spaces.
fn heading_text(line: &str) -> Option<&str> {
    let rest = after_indent(line)?;
    let hashes = rest.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let after = &rest[hashes..];
    let text = trim_start(after);
    if text.len() == after.len() {
        return None;
    }
    let text = text
        .trim_end_matches(is_space)
        .trim_end_matches('#')
        .trim_end_matches(is_space);
    (!text.contains(['\u{2028}', '\u{2029}'])).then_some(text)
}

const ESCAPABLE: &str = "\\`*_{}[]()#+-.!<>|~";
const MARKUP: &str = "\\\n`[<*_";
/// A link's label longer than this is not a link (markdown.js `MAX_LINK_LABEL`).
const MAX_LINK_LABEL: usize = 1000;
/// Emphasis and links nested deeper than this stay literal (markdown.js `MAX_NESTING`).
const MAX_NESTING: usize = 32;

/// The plain text of one block's inline Markdown (markdown.js `parseInline`, then the text
/// of what it parsed). It reads UTF-16 code units, as markdown.js does, so that both agree on
/// every text, a letter outside the Basic Multilingual Plane next to a "_" included; markup is
/// ASCII, so no cut falls inside a surrogate pair.
fn inline_text(src: &str) -> String {
    let units: Vec<u16> = src.encode_utf16().collect();
    let mut index = InlineIndex::new(&units);
    let mut out = Vec::with_capacity(units.len());
    parse_range(&mut index, 0, units.len(), 0, &mut out);
    String::from_utf16_lossy(&out)
}

const fn unit(c: char) -> u16 {
    c as u16
}

const BACKSLASH: u16 = unit('\\');
const NEWLINE: u16 = unit('\n');
const TICK: u16 = unit('`');
const OPEN_BRACKET: u16 = unit('[');
const CLOSE_BRACKET: u16 = unit(']');
const OPEN_PAREN: u16 = unit('(');
const CLOSE_PAREN: u16 = unit(')');
const LESS: u16 = unit('<');
const GREATER: u16 = unit('>');
const QUOTE: u16 = unit('"');
const STAR: u16 = unit('*');
const UNDERSCORE: u16 = unit('_');
const SPACE: u16 = unit(' ');

fn among(set: &str, u: u16) -> bool {
    u < 0x80 && set.as_bytes().contains(&(u as u8))
}

/// `is_space` of one code unit (a surrogate is no space).
fn space_unit(u: u16) -> bool {
    char::from_u32(u32::from(u)).is_some_and(is_space)
}

/// markdown.js `WORD` (`[\p{L}\p{N}]`) of one code unit.
fn word_unit(u: u16) -> bool {
    if u < 0x80 {
        return (u as u8).is_ascii_alphanumeric();
    }
    char::from_u32(u32::from(u)).is_some_and(is_word)
}

/// markdown.js `parseRange`, writing the text of what it finds to `out`.
fn parse_range(ix: &mut InlineIndex<'_>, lo: usize, hi: usize, depth: usize, out: &mut Vec<u16>) {
    let src = ix.src;
    let nests = depth < MAX_NESTING;
    let mut from = lo;
    let mut i = lo;
    let push = |out: &mut Vec<u16>, a: usize, b: usize| out.extend_from_slice(&src[a..b]);
    while i < hi {
        let c = src[i];
        if c == BACKSLASH && i + 1 < hi && among(ESCAPABLE, src[i + 1]) {
            push(out, from, i);
            from = i + 1;
            i += 2;
            continue;
        }
        if c == NEWLINE {
            push(out, from, i);
            out.push(SPACE);
            i += 1;
            from = i;
            continue;
        }
        if c == TICK {
            let (run, close) = ix.code_span(i, hi);
            if let Some(close) = close {
                push(out, from, i);
                out.extend(
                    src[i + run..close]
                        .iter()
                        .map(|&u| if u == NEWLINE { SPACE } else { u }),
                );
                i = close + run;
                from = i;
                continue;
            }
            i += run;
            continue;
        }
        if c == OPEN_BRACKET
            && nests
            && let Some(link) = ix.link(i, hi)
        {
            push(out, from, i);
            parse_range(ix, i + 1, link.label_end, depth + 1, out);
            i = link.end;
            from = i;
            continue;
        }
        if c == LESS
            && let Some(url_end) = ix.autolink(i, hi)
            && safe_href(&String::from_utf16_lossy(&src[i + 1..url_end]))
        {
            push(out, from, i);
            push(out, i + 1, url_end);
            i = url_end + 1;
            from = i;
            continue;
        }
        if c == STAR || c == UNDERSCORE {
            if nests && let Some((run, close)) = ix.emphasis(i, lo, hi) {
                push(out, from, i);
                parse_range(ix, i + run, close, depth + 1, out);
                i = close + run;
                from = i;
                continue;
            }
            i += ix.repeats(i, hi);
            continue;
        }
        i += 1;
        while i < hi && !among(MARKUP, src[i]) {
            i += 1;
        }
    }
    push(out, from, i);
}

/// markdown.js `safeHref`: an absolute http(s) URL (the WHATWG URL parser, as the browser's).
fn safe_href(href: &str) -> bool {
    url::Url::parse(trim(href)).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// A link: where its label ends (the "]") and where the whole link ends.
struct Link {
    label_end: usize,
    end: usize,
}

/// markdown.js `InlineIndex`: the runs of backticks, where emphasis may close and which "]"
/// closes each "[", found in one pass; lookups through cursors that only move forward.
struct InlineIndex<'a> {
    src: &'a [u16],
    tick_start: Vec<usize>,
    tick_length: Vec<usize>,
    longer_ticks: Vec<Option<usize>>,
    tick_cursor: usize,
    /// Where "*", "**", "_", "__" can close, in increasing order, and a cursor into each.
    closers: [Vec<usize>; 4],
    closer_cursor: [usize; 4],
    opens: Vec<usize>,
    partner: Vec<Option<usize>>,
    open_cursor: usize,
}

fn closer_slot(ch: u16, run: usize) -> usize {
    match (ch == STAR, run) {
        (true, 1) => 0,
        (true, _) => 1,
        (false, 1) => 2,
        (false, _) => 3,
    }
}

fn is_word(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::UppercaseLetter
            | GeneralCategory::LowercaseLetter
            | GeneralCategory::TitlecaseLetter
            | GeneralCategory::ModifierLetter
            | GeneralCategory::OtherLetter
            | GeneralCategory::DecimalNumber
            | GeneralCategory::LetterNumber
            | GeneralCategory::OtherNumber
    )
}

impl<'a> InlineIndex<'a> {
    fn new(src: &'a [u16]) -> InlineIndex<'a> {
        let mut ix = InlineIndex {
            src,
            tick_start: Vec::new(),
            tick_length: Vec::new(),
            longer_ticks: Vec::new(),
            tick_cursor: 0,
            closers: Default::default(),
            closer_cursor: [0; 4],
            opens: Vec::new(),
            partner: Vec::new(),
            open_cursor: 0,
        };
        let mut unclosed = Vec::new();
        let mut backslashes = 0usize;
        for (i, &c) in src.iter().enumerate() {
            // A backslash escapes the next character when an odd number of them precede it.
            let escaped = backslashes % 2 == 1;
            backslashes = if c == BACKSLASH { backslashes + 1 } else { 0 };
            if c == TICK {
                if i > 0 && src[i - 1] == TICK {
                    if let Some(last) = ix.tick_length.last_mut() {
                        *last += 1;
                    }
                } else {
                    ix.tick_start.push(i);
                    ix.tick_length.push(1);
                }
            } else if c == OPEN_BRACKET && !escaped {
                unclosed.push(ix.opens.len());
                ix.opens.push(i);
                ix.partner.push(None);
            } else if c == CLOSE_BRACKET && !escaped {
                if let Some(open) = unclosed.pop() {
                    ix.partner[open] = Some(i);
                }
            } else if c == STAR || c == UNDERSCORE {
                if ix.can_close(i, 1) {
                    ix.closers[closer_slot(c, 1)].push(i);
                }
                if ix.can_close(i, 2) {
                    ix.closers[closer_slot(c, 2)].push(i);
                }
            }
        }
        // Walking back from the last run, `waiting` keeps the runs after j that are longer
        // than every run between them and j, nearest on top.
        let n = ix.tick_length.len();
        ix.longer_ticks = vec![None; n];
        let mut waiting: Vec<usize> = Vec::new();
        for j in (0..n).rev() {
            while waiting
                .last()
                .is_some_and(|&w| ix.tick_length[w] <= ix.tick_length[j])
            {
                waiting.pop();
            }
            ix.longer_ticks[j] = waiting.last().copied();
            waiting.push(j);
        }
        ix
    }

    /// Whether a closing run of `run` times src[k] could be at k, the end of its range aside.
    fn can_close(&self, k: usize, run: usize) -> bool {
        let src = self.src;
        let ch = src[k];
        if run == 2 && src.get(k + 1) != Some(&ch) {
            return false;
        }
        let Some(&before) = k.checked_sub(1).and_then(|b| src.get(b)) else {
            return false;
        };
        let next = src.get(k + run).copied();
        !space_unit(before)
            && before != BACKSLASH
            && next != Some(ch)
            && !(ch == UNDERSCORE && next.is_some_and(word_unit))
    }

    /// How many times src[i] repeats from i, within the range ending at hi.
    fn repeats(&self, i: usize, hi: usize) -> usize {
        let mut n = 1;
        while i + n < hi && self.src[i + n] == self.src[i] {
            n += 1;
        }
        n
    }

    /// The backticks from i: the run's length from i, and where as many close it.
    fn code_span(&mut self, i: usize, hi: usize) -> (usize, Option<usize>) {
        while self.tick_start[self.tick_cursor] + self.tick_length[self.tick_cursor] <= i {
            self.tick_cursor += 1;
        }
        let current = self.tick_cursor;
        let run = self.tick_start[current] + self.tick_length[current] - i;
        // Skipping to the next longer run passes only runs too short to close.
        let mut j = (current + 1 < self.tick_start.len()).then_some(current + 1);
        while let Some(k) = j {
            if self.tick_start[k] >= hi || self.tick_length[k] >= run {
                break;
            }
            j = self.longer_ticks[k];
        }
        let close = j
            .filter(|&k| self.tick_start[k] < hi)
            .map(|k| self.tick_start[k]);
        (run, close)
    }

    /// Emphasis opening at i in the range [lo, hi): (run, close).
    fn emphasis(&mut self, i: usize, lo: usize, hi: usize) -> Option<(usize, usize)> {
        let src = self.src;
        let ch = src[i];
        let run = self.repeats(i, hi);
        if run > 2 {
            return None;
        }
        let after = (i + run < hi).then(|| src[i + run]);
        if after.is_none_or(space_unit) {
            return None;
        }
        if ch == UNDERSCORE && i > lo && word_unit(src[i - 1]) {
            return None;
        }
        let from = i + run + 1;
        let slot = closer_slot(ch, run);
        let closers = &self.closers[slot];
        let cursor = &mut self.closer_cursor[slot];
        while *cursor < closers.len() && closers[*cursor] < from {
            *cursor += 1;
        }
        if let Some(&close) = closers.get(*cursor)
            && close + run < hi
        {
            return Some((run, close));
        }
        // A run that ends the range is followed by nothing, so only the text before it counts.
        let last = hi.checked_sub(run)?;
        let closes_range = last >= from
            && src[last] == ch
            && src[hi - 1] == ch
            && !space_unit(src[last - 1])
            && src[last - 1] != BACKSLASH;
        closes_range.then_some((run, last))
    }

    /// A link whose "[" is at i, within the range ending at hi.
    fn link(&mut self, i: usize, hi: usize) -> Option<Link> {
        while self.open_cursor < self.opens.len() && self.opens[self.open_cursor] < i {
            self.open_cursor += 1;
        }
        if self.opens.get(self.open_cursor) != Some(&i) {
            return None;
        }
        let label_end = self.partner[self.open_cursor]?;
        if label_end >= hi.min(i + MAX_LINK_LABEL) {
            return None;
        }
        if label_end + 1 >= hi || self.src[label_end + 1] != OPEN_PAREN {
            return None;
        }
        let end = self.link_target(label_end + 1, hi)?;
        Some(Link { label_end, end })
    }

    /// `(href)` or `(<href> "title")` at p, within the range ending at hi: where it ends.
    fn link_target(&self, p: usize, hi: usize) -> Option<usize> {
        let src = self.src;
        let skip_spaces = |mut q: usize| {
            while q < hi && space_unit(src[q]) {
                q += 1;
            }
            q
        };
        let mut q = skip_spaces(p + 1);
        if q < hi && src[q] == LESS {
            q += 1;
        }
        let href_start = q;
        while q < hi && !space_unit(src[q]) && !among("()<>", src[q]) {
            q += 1;
        }
        if q == href_start {
            return None;
        }
        if q < hi && src[q] == GREATER {
            q += 1;
        }
        let after_href = skip_spaces(q);
        if after_href > q && after_href < hi && src[after_href] == QUOTE {
            let mut quote = after_href + 1;
            while quote < hi && src[quote] != QUOTE {
                quote += 1;
            }
            let close = if quote < hi {
                skip_spaces(quote + 1)
            } else {
                hi
            };
            (close < hi && src[close] == CLOSE_PAREN).then_some(close + 1)
        } else {
            (after_href < hi && src[after_href] == CLOSE_PAREN).then_some(after_href + 1)
        }
    }

    /// `<http://…>` or `<https://…>` at i, within the range ending at hi: where the URL ends
    /// (at the ">").
    fn autolink(&self, i: usize, hi: usize) -> Option<usize> {
        let src = self.src;
        let starts = |prefix: &str| {
            prefix
                .encode_utf16()
                .enumerate()
                .all(|(k, u)| src.get(i + k) == Some(&u))
        };
        let scheme = if starts("<https://") {
            9
        } else if starts("<http://") {
            8
        } else {
            return None;
        };
        let mut q = i + scheme;
        while q < hi && !space_unit(src[q]) && src[q] != LESS && src[q] != GREATER {
            q += 1;
        }
        (q != i + scheme && q < hi && src[q] == GREATER).then_some(q)
    }
}
