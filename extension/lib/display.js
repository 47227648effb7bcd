// What a person is shown of text an agent wrote where they decide on it: a permission card's
// command, tool name, path, URL, diff and input. One rule, written twice: src/form/display/marks.rs
// has it for the terminal, and both are tested against tests/fixtures/display_text.json, so
// a change here is a change there.
//
// Nothing is dropped and nothing that reads normally is changed; what could make the text
// read otherwise than it runs is shown as a visible mark:
//   - a control character (C0 but tab and line feed, DEL, C1, U+2028/2029, a lone surrogate),
//     an invisible format character (\p{Cf}: bidi embeddings, overrides and isolates,
//     LRM/RLM/ALM, zero-width space and joiners, BOM, soft hyphen, tags…) or another invisible
//     default-ignorable one (Hangul fillers, the combining grapheme joiner…) becomes
//     `⟨U+XXXX⟩`. Kept: a zero-width joiner or non-joiner between two non-ASCII letters
//     (Persian, Indic scripts) or two pictographs (emoji sequences), variation selectors, and
//     the tags of a flag after U+1F3F4;
//   - a letter of a word that mixes scripts as Unicode TR39 means it, one of them Greek,
//     Cyrillic, Armenian or Cherokee (whose letters pass for Latin ones: `gіthub` with a
//     Cyrillic і), becomes `⟨U+XXXX⟩` when it is not of the word's main script. A word is a
//     run of letters, digits and marks; Latin with Han, kana or Hangul and German's ä or ß are
//     not marked;
//   - more than two blank lines in a row become one line `⏎×N` (N line breaks);
//   - more than 8 spaces in a row (space, tab, no-break and the other Unicode spaces) become
//     `␣×N`, except an indentation of at most 24 ASCII spaces or tabs at a line's start.
// The text is read by code point, as the Rust side reads chars.

import { t } from './i18n.js';

/** More line breaks than this in a row (more than two blank lines) become one mark. */
export const MAX_LINE_BREAKS = 3;
/** More spaces than this in a row become one mark. */
export const MAX_SPACES = 8;
/** An indentation at a line's start of at most this many ASCII spaces or tabs stays. */
export const MAX_INDENT = 24;

const SPACE = /[ \t\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/u;
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/u;
const FORMAT = /\p{Cf}/u;
const IGNORABLE = /[\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0\ufff0-\ufff8\u{e0000}-\u{e0fff}]/u;
const PICTOGRAPH = /[\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\ufe0f\u{1f000}-\u{1faff}]/u;
const ALPHABETIC = /\p{Alphabetic}/u;
const MARK = /\p{M}/u;
const WORD = /[\p{Alphabetic}\p{N}\p{M}]/u;
const ZWNJ = '\u200c';
const ZWJ = '\u200d';
const FLAG = '\u{1f3f4}';
const CANCEL_TAG = '\u{e007f}';

/** `⟨U+XXXX⟩`: how a marked character is shown. */
export function escapeChar(ch) {
  return `⟨U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`;
}

const isSpace = (ch) => SPACE.test(ch);
const isAscii = (ch) => ch.codePointAt(0) < 0x80;
// Array.from keeps a pair whole, so a character of length 1 in this range is alone.
const isLoneSurrogate = (ch) => ch.length === 1 && ch.charCodeAt(0) >= 0xd800 && ch.charCodeAt(0) <= 0xdfff;
const isTag = (ch) => ch >= '\u{e0020}' && ch <= '\u{e007f}';

/**
 * `text` as it is to be shown: pieces in order, {text} as written or {text, mark} where
 * `mark` is 'control' | 'invisible' | 'mixed' | 'lines' | 'spaces' and `text` what stands
 * for it.
 */
export function markText(text) {
  const chars = Array.from(String(text ?? ''));
  const mixed = mixedLetters(chars);
  const pieces = [];
  let plain = '';
  const mark = (kind, shown) => {
    if (plain) pieces.push({ text: plain });
    plain = '';
    pieces.push({ text: shown, mark: kind });
  };
  let inFlag = false;
  let i = 0;
  while (i < chars.length) {
    const c = chars[i];
    if (c === '\n') {
      const { breaks, last } = lineBreakRun(chars, i);
      if (breaks > MAX_LINE_BREAKS) {
        plain += '\n';
        mark('lines', `⏎×${breaks}`);
        plain += '\n';
        i = last + 1;
      } else {
        plain += '\n';
        i += 1;
      }
      inFlag = false;
      continue;
    }
    if (isSpace(c)) {
      let end = i;
      while (end < chars.length && isSpace(chars[end])) end++;
      const run = chars.slice(i, end);
      const indent =
        (i === 0 || chars[i - 1] === '\n') && run.length <= MAX_INDENT && run.every((s) => s === ' ' || s === '\t');
      if (run.length > MAX_SPACES && !indent) mark('spaces', `␣×${run.length}`);
      else plain += run.join('');
      i = end;
      inFlag = false;
      continue;
    }
    const flagTag = isTag(c) && inFlag;
    inFlag = c === FLAG || (flagTag && c !== CANCEL_TAG);
    const kind = hidden(c, chars[i - 1], chars[i + 1], flagTag);
    if (kind) mark(kind, escapeChar(c));
    else if (mixed[i]) mark('mixed', escapeChar(c));
    else plain += c;
    i += 1;
  }
  if (plain) pieces.push({ text: plain });
  return pieces;
}

/** `text` as it is to be shown, as one string. */
export function markedString(text) {
  return markText(text)
    .map((p) => p.text)
    .join('');
}

/** From the line feed at `start`: line breaks in a row with only spaces (or CR) between. */
function lineBreakRun(chars, start) {
  let breaks = 0;
  let last = start;
  for (let j = start; j < chars.length; j++) {
    const c = chars[j];
    if (c === '\n') {
      breaks++;
      last = j;
    } else if (!isSpace(c) && c !== '\r') {
      break;
    }
  }
  return { breaks, last };
}

function hidden(c, prev, next, flagTag) {
  if (CONTROL.test(c) || isLoneSurrogate(c)) return 'control';
  if ((c === ZWJ || c === ZWNJ) && joins(prev, next)) return null;
  if (flagTag) return null;
  return FORMAT.test(c) || IGNORABLE.test(c) ? 'invisible' : null;
}

function joins(prev, next) {
  if (prev === undefined || next === undefined) return false;
  const letterBefore = !isAscii(prev) && (ALPHABETIC.test(prev) || MARK.test(prev));
  const letterAfter = !isAscii(next) && ALPHABETIC.test(next);
  return (letterBefore && letterAfter) || (PICTOGRAPH.test(prev) && PICTOGRAPH.test(next));
}

// The scripts a word is judged by, in the order that breaks a tie; any other letter is
// 'other' (Han, Arabic…). Greek, Cyrillic, Armenian and Cherokee letters pass for Latin ones.
const SCRIPTS = ['latin', 'greek', 'cyrillic', 'armenian', 'cherokee', 'other'];
const CONFUSABLE = new Set(['greek', 'cyrillic', 'armenian', 'cherokee']);
const SCRIPT_RANGES = [
  ['latin', /[a-zA-Z\u00aa\u00ba\u00c0-\u024f\u0250-\u02af\u1e00-\u1eff\u2c60-\u2c7f\ua720-\ua7ff\uab30-\uab6f\ufb00-\ufb06\uff21-\uff3a\uff41-\uff5a]/u],
  ['greek', /[\u0370-\u03ff\u1f00-\u1fff]/u],
  ['cyrillic', /[\u0400-\u052f\u1c80-\u1c8f\u2de0-\u2dff\ua640-\ua69f]/u],
  ['armenian', /[\u0531-\u058f\ufb13-\ufb17]/u],
  ['cherokee', /[\u13a0-\u13ff\uab70-\uabbf]/u],
];

function scriptOf(ch) {
  for (const [name, range] of SCRIPT_RANGES) if (range.test(ch)) return name;
  return 'other';
}

/** For each character: whether it is a letter to mark as of another script in its word. */
function mixedLetters(chars) {
  const mixed = new Array(chars.length).fill(false);
  let i = 0;
  while (i < chars.length) {
    if (!WORD.test(chars[i])) {
      i++;
      continue;
    }
    let end = i;
    while (end < chars.length && WORD.test(chars[end])) end++;
    const main = mainScript(chars.slice(i, end));
    if (main) {
      for (let j = i; j < end; j++) {
        const of = scriptOf(chars[j]);
        mixed[j] = ALPHABETIC.test(chars[j]) && of !== main && of !== 'other';
      }
    }
    i = end;
  }
  return mixed;
}

/**
 * The main script of a word that mixes scripts as TR39 does not allow; else null. Only the
 * scripts whose letters pass for one another count: a letter of any other script (Han in
 * "β版", a modifier letter such as the Ukrainian apostrophe in "мʼята") is never marked and
 * never makes a word mixed.
 */
function mainScript(word) {
  const counts = new Map();
  for (const c of word) if (ALPHABETIC.test(c)) counts.set(scriptOf(c), (counts.get(scriptOf(c)) ?? 0) + 1);
  const present = SCRIPTS.filter((s) => s !== 'other' && counts.has(s));
  if (present.length < 2 || !present.some((s) => CONFUSABLE.has(s))) return null;
  // The first of the most frequent, in SCRIPTS' order.
  return present.reduce((best, s) => (counts.get(s) > counts.get(best) ? s : best));
}

// ---- drawing ----

/** Appends `text` to `parent` as text nodes, each mark a span that says what it stands for. */
export function appendMarked(doc, parent, text) {
  for (const piece of markText(text)) {
    parent.append(piece.mark ? appendMarkedPiece(doc, piece) : doc.createTextNode(piece.text));
  }
  return parent;
}

function markTitle(piece) {
  const count = piece.text.split('×')[1];
  switch (piece.mark) {
    case 'lines':
      return t('markLines', count);
    case 'spaces':
      return t('markSpaces', count);
    case 'mixed':
      return t('markMixed');
    case 'invisible':
      return t('markInvisible');
    default:
      return t('markControl');
  }
}

/**
 * A box of code an agent wrote (a command, a path, input as JSON): `<pre class><code>`, the
 * text marked. Returns the box and, under it, a note that says how many lines are out of view
 * below while the box is too short to show it all (kept up to date as it scrolls or resizes).
 */
export function codeBox(doc, className, text) {
  const pre = doc.createElement('pre');
  pre.className = className;
  pre.append(appendMarked(doc, doc.createElement('code'), text));
  return withHiddenNote(doc, pre);
}

/** Old and new text as a diff box: "- " and "+ " lines, each marked. */
export function diffBox(doc, oldText, newText) {
  const pre = doc.createElement('pre');
  pre.className = 'him-perm-diff';
  const lines = (text, sign, className) => {
    if (text === null) return;
    // Marked as one text, so a run of blank lines is one "⏎×N" line, then cut into lines.
    let line = doc.createElement('span');
    const start = () => {
      line = doc.createElement('span');
      line.className = className;
      line.append(`${sign} `);
    };
    start();
    for (const piece of markText(text)) {
      if (piece.mark) {
        line.append(appendMarkedPiece(doc, piece));
        continue;
      }
      const parts = piece.text.split('\n');
      parts.forEach((part, n) => {
        if (n > 0) {
          line.append('\n');
          pre.append(line);
          start();
        }
        if (part) line.append(part);
      });
    }
    line.append('\n');
    pre.append(line);
  };
  lines(oldText, '-', 'him-del');
  lines(newText, '+', 'him-add');
  return withHiddenNote(doc, pre);
}

function appendMarkedPiece(doc, piece) {
  const span = doc.createElement('span');
  span.className = `him-mark him-mark-${piece.mark}`;
  span.textContent = piece.text;
  span.title = markTitle(piece);
  return span;
}

/** `box` in a wrapper with the note of what is out of view below it. */
function withHiddenNote(doc, box) {
  const wrap = doc.createElement('div');
  wrap.className = 'him-perm-box';
  const note = doc.createElement('p');
  note.className = 'him-perm-more';
  note.hidden = true;
  const view = doc.defaultView;
  const update = () => {
    const below = box.scrollHeight - box.clientHeight - box.scrollTop;
    const lineHeight = parseFloat(view?.getComputedStyle?.(box).lineHeight ?? '') || 16;
    const lines = Math.round(below / lineHeight);
    note.hidden = !(lines >= 1);
    note.textContent = lines >= 1 ? t('permissionMoreBelow', lines) : '';
  };
  box.addEventListener('scroll', update, { passive: true });
  // Layout is known only once the card is on screen; the observer says when, and again on
  // every resize (a wider panel wraps fewer lines).
  if (typeof view?.ResizeObserver === 'function') new view.ResizeObserver(update).observe(box);
  wrap.append(box, note);
  return wrap;
}
