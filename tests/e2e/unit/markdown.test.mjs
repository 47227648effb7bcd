import { test } from 'node:test';
import assert from 'node:assert/strict';
import { markdownWork, parseMarkdown, parseInline, renderMarkdown, safeHref } from '../../../extension/lib/markdown.js';
import { freshDocument } from './dom.mjs';
import { ADVERSARIAL } from './adversarial-markdown.mjs';

const ALLOWED_TAGS = new Set(['P', 'UL', 'OL', 'LI', 'PRE', 'CODE', 'EM', 'STRONG', 'A']);

function html(text) {
  const { document } = freshDocument();
  const div = document.createElement('div');
  div.appendChild(renderMarkdown(document, text));
  return div;
}

test('paragraphs, lists and fenced code become blocks', () => {
  const blocks = parseMarkdown('One\nline.\n\n- a\n- b\n\n1. x\n2. y\n\n```\n<b>raw</b>\n```');
  assert.deepEqual(
    blocks.map((b) => b.type),
    ['p', 'ul', 'ol', 'pre'],
  );
  assert.deepEqual(blocks[0].children, [{ type: 'text', text: 'One line.' }]);
  assert.equal(blocks[1].items.length, 2);
  assert.equal(blocks[3].text, '<b>raw</b>');
});

test('emphasis, strong, code and escapes parse; snake_case stays literal', () => {
  assert.deepEqual(parseInline('*a* **b** `c` \\*d\\*'), [
    { type: 'em', children: [{ type: 'text', text: 'a' }] },
    { type: 'text', text: ' ' },
    { type: 'strong', children: [{ type: 'text', text: 'b' }] },
    { type: 'text', text: ' ' },
    { type: 'code', text: 'c' },
    { type: 'text', text: ' *d*' },
  ]);
  assert.deepEqual(parseInline('use my_var_name here'), [{ type: 'text', text: 'use my_var_name here' }]);
  assert.deepEqual(parseInline('2 * 3 * 4'), [{ type: 'text', text: '2 * 3 * 4' }]);
});

test('only absolute http(s) links become links; others keep just their text', () => {
  assert.equal(safeHref('https://example.org/a?b=1'), 'https://example.org/a?b=1');
  assert.equal(safeHref('javascript:alert(1)'), null);
  assert.equal(safeHref('data:text/html,hi'), null);
  assert.equal(safeHref('/relative'), null);
  const div = html('[ok](https://example.org) [bad](javascript:alert(1)) <http://x.test/y>');
  const links = [...div.querySelectorAll('a')];
  assert.deepEqual(
    links.map((a) => a.getAttribute('href')),
    ['https://example.org/', 'http://x.test/y'],
  );
  for (const a of links) {
    assert.equal(a.getAttribute('rel'), 'noopener noreferrer');
    assert.equal(a.getAttribute('target'), '_blank');
  }
  assert.match(div.textContent, /bad/);
});

test('HTML in agent text stays text: no element but the subset is ever created', () => {
  const div = html(
    '<img src=x onerror="alert(1)"> <script>alert(2)</script>\n\n**<b>bold</b>** [<i>x</i>](https://e.test)\n\n- <iframe>',
  );
  for (const el of div.querySelectorAll('*')) assert.ok(ALLOWED_TAGS.has(el.tagName), `unexpected <${el.tagName}>`);
  assert.equal(div.querySelectorAll('img, script, b, i, iframe').length, 0);
  assert.match(div.textContent, /<img src=x onerror="alert\(1\)">/);
  assert.match(div.textContent, /<script>alert\(2\)<\/script>/);
});

test('a heading line reads as a bold paragraph', () => {
  const div = html('# Title\nbody');
  assert.equal(div.querySelector('p > strong')?.textContent, 'Title');
  assert.equal(div.querySelectorAll('p').length, 2);
});

test('an indented line continues the list item above it', () => {
  const [list] = parseMarkdown('- first\n  more\n- second');
  assert.equal(list.items.length, 2);
  assert.deepEqual(list.items[0], [{ type: 'text', text: 'first more' }]);
});

test('a long run of brackets and angle brackets stays text and a later link still parses', () => {
  // Before the label scan was bounded this input took minutes (each "[" rescanned to the end).
  const text = '['.repeat(300_000) + '<'.repeat(300_000) + ' [ok](https://example.org)';
  const inline = parseInline(text);
  const link = inline.find((node) => node.type === 'link');
  assert.equal(link?.href, 'https://example.org/');
  const textLength = inline.filter((n) => n.type === 'text').reduce((n, t) => n + t.text.length, 0);
  assert.equal(textLength, 600_001);
});

test('the rules hold at their edges: runs in longer runs, a run that ends its range, escapes, titles', () => {
  const inline = (text) => JSON.stringify(parseInline(text));
  const code = (text) => ({ type: 'code', text });
  const t = (text) => ({ type: 'text', text });
  const link = (href, ...children) => ({ type: 'link', href, children });
  assert.equal(inline('`a``b`'), JSON.stringify([code('a'), code('b')]));
  assert.equal(inline('``a`b``'), JSON.stringify([code('a`b')]));
  assert.equal(
    inline('**a *b***'),
    JSON.stringify([{ type: 'strong', children: [t('a '), { type: 'em', children: [t('b')] }] }]),
  );
  // Emphasis is matched before the code span that would cross it.
  assert.equal(inline('*a `b* c`'), JSON.stringify([{ type: 'em', children: [t('a `b')] }, t(' c`')]));
  assert.equal(
    inline('[a [b](https://e.test/b)](https://e.test/a)'),
    JSON.stringify([link('https://e.test/a', t('a '), link('https://e.test/b', t('b')))]),
  );
  assert.equal(inline('\\\\[a](https://e.test)'), JSON.stringify([t('\\'), link('https://e.test/', t('a'))]));
  assert.equal(inline('[a\\](b)](https://e.test)'), JSON.stringify([link('https://e.test/', t('a](b)'))]));
  assert.equal(inline('[a](https://e.test "title")'), JSON.stringify([link('https://e.test/', t('a'))]));
  assert.deepEqual(parseMarkdown('# Title ##  ')[0].children, [{ type: 'strong', children: [t('Title')] }]);
  // A line separator is a line break to a pattern's ".", so this never was a list item.
  assert.deepEqual(parseMarkdown('- a\u2028b')[0], { type: 'p', children: [t('- a\u2028b')] });
});

test('emphasis nested deeper than anyone writes stays text instead of overflowing the stack', () => {
  // Before the bound, 3,000 levels threw "Maximum call stack size exceeded".
  const text = '*a '.repeat(5000) + '*'.repeat(5000);
  const [block] = parseMarkdown(text);
  let depth = 0;
  for (let nodes = block.children; nodes.some((n) => n.children); depth++) {
    nodes = nodes.find((n) => n.children).children;
  }
  assert.ok(depth >= 30 && depth < 40, `nested ${depth} deep`);
  // Every character is shown but the "*"s of the levels that were matched.
  assert.equal(html(text).textContent.length, text.length - 2 * depth);
});

// Growth, not time: the parser counts its steps (markdownWork), and 8 times the text may cost
// at most about 8 times the work. Before the parser was linear, 146 KiB of " *a" took 37 s,
// because every opener that could not close scanned on to the end of the text.
function workFor(text) {
  const before = markdownWork();
  parseMarkdown(text);
  return markdownWork() - before;
}

test('8 times the text costs at most about 8 times the work, for every construct left open', () => {
  const n = 4096;
  const ratios = {};
  for (const [name, make] of Object.entries(ADVERSARIAL)) {
    const small = workFor(make(n));
    const large = workFor(make(8 * n));
    assert.ok(small >= n, `${name}: ${small} steps for ${n} characters is too few to be counted`);
    ratios[name] = Number((large / small).toFixed(2));
  }
  const tooSteep = Object.entries(ratios).filter(([, ratio]) => ratio > 10);
  assert.deepEqual(tooSteep, [], JSON.stringify(ratios, null, 1));
});
