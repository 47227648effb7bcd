// lib/display.js (the marking rule) and lib/markdown.js's plain text, judged against the
// fixture the Rust side is tested with (src/form/display.rs): the permission card and the
// terminal show agent text by one rule, and the panel and him read Markdown alike.
import './english.mjs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { appendMarked, markText, markedString } from '../../../extension/lib/display.js';
import { plainText, plainTitle } from '../../../extension/lib/markdown.js';
import { plainTitle as queuePlainTitle } from '../../../extension/lib/queue.js';
import { freshDocument } from './dom.mjs';

const fixture = JSON.parse(readFileSync(new URL('../../fixtures/display_text.json', import.meta.url), 'utf8'));

/** A fixture text: a string, or parts that are strings or {repeat, times}. */
const textOf = (v) => (typeof v === 'string' ? v : Array.isArray(v) ? v.map(textOf).join('') : v.repeat.repeat(v.times));

test('the shared fixture of marked texts is shown as it says', () => {
  assert.ok(fixture.marks.length >= 30, 'the fixture lost its cases');
  const wrong = [];
  for (const c of fixture.marks) {
    const text = textOf(c.text);
    const shown = c.shown === undefined ? text : textOf(c.shown);
    const pieces = markText(text);
    const got = pieces.map((p) => p.text).join('');
    const kinds = pieces.filter((p) => p.mark).map((p) => p.mark);
    if (got !== shown || JSON.stringify(kinds) !== JSON.stringify(c.marks)) {
      wrong.push(`${c.name}: shown ${JSON.stringify(got)} with ${JSON.stringify(kinds)}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('the shared fixture of Markdown reads as it says, and queue.js names questions by it', () => {
  assert.ok(fixture.plain.length >= 15, 'the fixture lost its cases');
  const wrong = [];
  for (const c of fixture.plain) {
    const markdown = textOf(c.markdown);
    const [text, title] = [plainText(markdown), plainTitle(markdown)];
    if (text !== textOf(c.text) || title !== textOf(c.title)) wrong.push(`${c.name}: ${JSON.stringify(text)} / ${JSON.stringify(title)}`);
  }
  assert.deepEqual(wrong, []);
  assert.equal(queuePlainTitle, plainTitle);
});

test('a lone surrogate, which only JavaScript strings can hold, is shown as a control', () => {
  assert.equal(markedString('a\ud800b'), 'a⟨U+D800⟩b');
});

test('marks are drawn as spans that say what they stand for; the rest is text', () => {
  const { document } = freshDocument();
  const box = appendMarked(document, document.createElement('code'), `ls${'\n'.repeat(300)}x\u202e y${'\u00a0'.repeat(5000)}; gіt`);
  assert.equal(box.textContent, 'ls\n⏎×300\nx⟨U+202E⟩ y␣×5000; g⟨U+0456⟩t');
  const marks = [...box.querySelectorAll('span.him-mark')].map((s) => [s.className, s.title]);
  assert.deepEqual(marks, [
    ['him-mark him-mark-lines', '300 line breaks in a row'],
    ['him-mark him-mark-invisible', 'An invisible character: it could reorder or hide text. Shown as its code.'],
    ['him-mark him-mark-spaces', '5000 spaces in a row'],
    ['him-mark him-mark-mixed', 'A letter of another script inside this word: it may pass for another letter.'],
  ]);
  assert.equal(box.querySelectorAll('*').length, 4, 'nothing but the marks is an element');
});
