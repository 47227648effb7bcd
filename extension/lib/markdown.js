// The safe Markdown subset of DESIGN.md §4, for text an agent wrote (form and field
// descriptions). Agent text is untrusted: it is parsed into a small tree and built with
// createElement/textContent, never assigned as HTML, so no markup in it can run or style
// anything. Links are kept only when they are absolute http(s) URLs.
//
// Supported: paragraphs (blank-line separated), "- "/"* " and "1. " lists, ``` fenced
// code, `inline code`, *em*/_em_, **strong**/__strong__, [text](http://...), <http://...>,
// backslash escapes, and "#" heading lines (shown as a bold paragraph: a form description
// is not a document). Anything else stays literal text.
//
// This module has no browser-extension API use and imports nothing, so the loopback web
// page served by the him binary can load it as-is.

// Parsing takes time linear in the text, whatever an agent sends (DESIGN.md §2 lets a question
// be about 1 MiB): lines are classified by scans that never backtrack, and inline markup is
// matched against an index of the text built in one pass (see InlineIndex), so no position is
// looked at again for every opener that cannot close. `markdownWork()` counts the steps, which
// the tests use to check that the work grows in proportion to the text.

let work = 0;

/** Steps the parser has taken since the module loaded: for tests of how its work grows. */
export function markdownWork() {
  return work;
}

/** Parse Markdown text into blocks: {type:'p', children} | {type:'ul'|'ol', items:[children]} | {type:'pre', text}. */
export function parseMarkdown(text) {
  const lines = String(text ?? '').replace(/\r\n?/g, '\n').split('\n');
  const blocks = [];
  let para = [];
  let list = null;

  const flushPara = () => {
    if (para.length) blocks.push({ type: 'p', children: parseInline(para.join('\n')) });
    para = [];
  };
  const flushList = () => {
    if (list) blocks.push({ type: list.type, items: list.items.map((item) => parseInline(item)) });
    list = null;
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    // Each test below reads the line once, from its start.
    work += line.length + 1;
    const fence = /^\s*```/.exec(line);
    if (fence) {
      flushPara();
      flushList();
      const body = [];
      i++;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) {
        work += lines[i].length + 1;
        body.push(lines[i++]);
      }
      blocks.push({ type: 'pre', text: body.join('\n') });
      continue;
    }
    if (/^\s*$/.test(line)) {
      flushPara();
      flushList();
      continue;
    }
    const item = listItem(line);
    if (item) {
      flushPara();
      if (list && list.type !== item.type) flushList();
      if (!list) list = { type: item.type, items: [] };
      list.items.push(item.text);
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) {
      // An indented line continues the last list item.
      list.items[list.items.length - 1] += '\n' + line.trim();
      continue;
    }
    flushList();
    const heading = headingText(line);
    if (heading !== null) {
      flushPara();
      blocks.push({ type: 'p', children: [{ type: 'strong', children: parseInline(heading) }] });
      continue;
    }
    para.push(line.trim());
  }
  flushPara();
  flushList();
  return blocks;
}

// Only the start of a block line is matched with a pattern, one that cannot backtrack far.
// The rest is cut by hand, as the patterns used before read it: a heading's
// /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/ took 41 s on "# a", 4,096 spaces and "b", and a list
// item's /^\s{0,3}[-*+]\s+(.*)$/ 2.6 s on "- ", 32,768 spaces and "a\u2028b".
const BULLET_START = /^\s{0,3}[-*+]\s+/;
const ORDERED_START = /^\s{0,3}\d{1,9}[.)]\s+/;
const HEADING_START = /^\s{0,3}#{1,6}\s+/;
// What `.` does not match: the text after a list marker or in a heading must not hold one.
const LINE_TERMINATOR = /[\u2028\u2029]/;
const SPACE = /\s/;
const WORD = /[\p{L}\p{N}]/u;

/** Whether `ch` is one character of /\s/; ASCII is decided without the pattern, for speed. */
function isSpace(ch) {
  if (ch === undefined) return false;
  const code = ch.charCodeAt(0);
  if (code < 0x80) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  return SPACE.test(ch);
}

/** "- text", "* text", "+ text" or "1. text", "1) text": {type: 'ul' | 'ol', text}, else null. */
function listItem(line) {
  const bullet = BULLET_START.exec(line);
  const start = bullet ?? ORDERED_START.exec(line);
  if (!start) return null;
  const text = line.slice(start[0].length);
  if (LINE_TERMINATOR.test(text)) return null;
  return { type: bullet ? 'ul' : 'ol', text };
}

/** The text of a "# heading" line, without closing "#"s and spaces; null for another line. */
function headingText(line) {
  const start = HEADING_START.exec(line);
  if (!start) return null;
  const from = start[0].length;
  let end = line.length;
  while (end > from && isSpace(line[end - 1])) end--;
  while (end > from && line[end - 1] === '#') end--;
  while (end > from && isSpace(line[end - 1])) end--;
  const text = line.slice(from, end);
  return LINE_TERMINATOR.test(text) ? null : text;
}

/** Return `href` when it is an absolute http(s) URL, else null. */
export function safeHref(href) {
  let url;
  try {
    url = new URL(String(href).trim());
  } catch {
    return null;
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
}

const ESCAPABLE = '\\`*_{}[]()#+-.!<>|~';

// [label](href) with balanced brackets in the label and no spaces in the href (an optional
// "title" after the href is dropped). A label longer than this is not a link: a stray "["
// early in a long text should not turn pages of it into one link.
const MAX_LINK_LABEL = 1000;
// Emphasis and links inside each other deeper than this stay literal text: nobody writes
// them, and it bounds the recursion of the parser and of the renderer (3,000 levels of
// "*a " … "*" overflowed the stack).
const MAX_NESTING = 32;

/** Parse inline Markdown into nodes: text, code, em, strong, link. */
export function parseInline(src) {
  return parseRange(new InlineIndex(src), 0, src.length, 0);
}

// Inline parsing reads a range [lo, hi) of the text and calls itself on the inside of each
// emphasis and link label it finds. The rules, as CommonMark's but simpler:
//   - `code`: a run of n backticks up to the next n backticks (inside a longer run too);
//   - *em*, _em_, **strong**, __strong__: the opening run (one or two, not three) is followed
//     by a non-space, the first closing run after it is preceded by a non-space other than
//     "\" and not followed by the same character; "_" does not open or close inside a word,
//     so snake_case_names stay as written;
//   - [label](href), <http://…>, and "\" before a punctuation character.
// A range ends at a closing delimiter ("*", "_", "]") or at the end of the text, never inside
// a run of backticks; a closing run at the very end of a range is not "followed" by anything.
//
// Positions are visited in increasing order, across all ranges: an inner range is read
// before the outer one moves past it. So each list of the index is read once, by a cursor.
function parseRange(ix, lo, hi, depth) {
  const { src } = ix;
  const out = [];
  // Text is kept as src[from, i) for as long as it is a stretch of the source, and added to
  // `text` only where it is not (an escape, a line break, a node): joining a string piece by
  // piece made 1 MiB of plain text take a fifth of a second, most of it collecting garbage.
  let text = '';
  let from = lo;
  let i = lo;
  const flush = () => {
    text += src.slice(from, i);
    if (text) out.push({ type: 'text', text });
    text = '';
  };
  const nests = depth < MAX_NESTING;

  while (i < hi) {
    work++;
    const c = src[i];
    if (c === '\\' && i + 1 < hi && ESCAPABLE.includes(src[i + 1])) {
      text += src.slice(from, i);
      from = i + 1;
      i += 2;
      continue;
    }
    if (c === '\n') {
      // A soft line break inside a paragraph reads as a space, as in CommonMark.
      text += src.slice(from, i) + ' ';
      from = ++i;
      continue;
    }
    if (c === '`') {
      const span = ix.codeSpan(i, hi);
      if (span.close !== -1) {
        flush();
        out.push({ type: 'code', text: src.slice(i + span.run, span.close).replace(/\n/g, ' ') });
        work += span.close - i;
        from = i = span.close + span.run;
        continue;
      }
      i += span.run;
      continue;
    }
    if (c === '[' && nests) {
      const link = ix.link(i, hi);
      if (link) {
        flush();
        const children = parseRange(ix, i + 1, link.labelEnd, depth + 1);
        const href = safeHref(link.href);
        if (href) out.push({ type: 'link', href, children });
        else out.push(...children);
        from = i = link.end;
        continue;
      }
    }
    if (c === '<') {
      const auto = ix.autolink(i, hi);
      const href = auto && safeHref(auto.url);
      if (href) {
        flush();
        out.push({ type: 'link', href, children: [{ type: 'text', text: auto.url }] });
        from = i = auto.end;
        continue;
      }
    }
    if (c === '*' || c === '_') {
      const emphasis = nests ? ix.emphasis(i, lo, hi) : null;
      if (emphasis) {
        flush();
        const children = parseRange(ix, i + emphasis.run, emphasis.close, depth + 1);
        out.push({ type: emphasis.run === 2 ? 'strong' : 'em', children });
        from = i = emphasis.close + emphasis.run;
        continue;
      }
      i += ix.repeats(i, hi);
      continue;
    }
    // This character is text, and so are the plain ones after it.
    i++;
    while (i < hi && !MARKUP.includes(src[i])) {
      work++;
      i++;
    }
  }
  flush();
  return out;
}

/** The characters where inline markup can start (the cases of parseRange). */
const MARKUP = '\\\n`[<*_';

/**
 * What inline parsing needs to know about a text, found in one pass over it: its runs of
 * backticks, the positions where each kind of emphasis could close, and which "]" closes
 * each "[". Lookups go through cursors that only move forward (see parseRange).
 */
class InlineIndex {
  constructor(src) {
    this.src = src;
    // Maximal runs of backticks, and for each the next run that is longer (or -1).
    this.tickStart = [];
    this.tickLength = [];
    // Where "*", "**", "_", "__" can close, as far as the text around them says (the end of
    // a range is checked at lookup), in increasing order.
    this.closers = { '*': [], '**': [], _: [], __: [] };
    this.closerCursor = { '*': 0, '**': 0, _: 0, __: 0 };
    // Every "[" not escaped by a backslash, and the "]" that closes it (or -1).
    this.opens = [];
    this.partner = [];
    this.tickCursor = 0;
    this.openCursor = 0;

    const unclosed = [];
    let backslashes = 0;
    for (let i = 0; i < src.length; i++) {
      work++;
      const c = src[i];
      // A backslash escapes the next character when an odd number of them precede it.
      const escaped = backslashes % 2 === 1;
      backslashes = c === '\\' ? backslashes + 1 : 0;
      if (c === '`') {
        if (src[i - 1] === '`') this.tickLength[this.tickLength.length - 1]++;
        else {
          this.tickStart.push(i);
          this.tickLength.push(1);
        }
      } else if (c === '[' && !escaped) {
        unclosed.push(this.opens.length);
        this.opens.push(i);
        this.partner.push(-1);
      } else if (c === ']' && !escaped && unclosed.length) {
        this.partner[unclosed.pop()] = i;
      } else if (c === '*' || c === '_') {
        if (this.canClose(i, 1)) this.closers[c].push(i);
        if (this.canClose(i, 2)) this.closers[c + c].push(i);
      }
    }
    const { tickLength } = this;
    this.longerTicks = new Array(tickLength.length).fill(-1);
    // Walking back from the last run, `waiting` keeps the runs after j that are longer than
    // every run between them and j, nearest on top: the nearest longer than run j is its
    // next longer run.
    const waiting = [];
    for (let j = tickLength.length - 1; j >= 0; j--) {
      work++;
      while (waiting.length && tickLength[waiting[waiting.length - 1]] <= tickLength[j]) waiting.pop();
      if (waiting.length) this.longerTicks[j] = waiting[waiting.length - 1];
      waiting.push(j);
    }
  }

  /** Whether a closing run of `run` times src[k] could be at k, the end of its range aside. */
  canClose(k, run) {
    const { src } = this;
    const ch = src[k];
    if (run === 2 && src[k + 1] !== ch) return false;
    const before = src[k - 1];
    const next = src[k + run];
    return (
      before !== undefined &&
      !isSpace(before) &&
      before !== '\\' &&
      next !== ch &&
      !(ch === '_' && next !== undefined && WORD.test(next))
    );
  }

  /** How many times src[i] repeats from i, within the range ending at hi. */
  repeats(i, hi) {
    const { src } = this;
    let n = 1;
    while (i + n < hi && src[i + n] === src[i]) n++;
    work += n;
    return n;
  }

  /** The backticks from i: {run, close}, close being where as many close it, or -1. */
  codeSpan(i, hi) {
    const { tickStart, tickLength, longerTicks } = this;
    while (tickStart[this.tickCursor] + tickLength[this.tickCursor] <= i) {
      work++;
      this.tickCursor++;
    }
    const current = this.tickCursor;
    const run = tickStart[current] + tickLength[current] - i;
    // Skipping to the next longer run passes only runs too short to close; the runs it
    // stops at grow longer each time, so at most `run` of them are looked at.
    let j = current + 1 < tickStart.length ? current + 1 : -1;
    while (j !== -1 && tickStart[j] < hi && tickLength[j] < run) {
      work++;
      j = longerTicks[j];
    }
    const close = j !== -1 && tickStart[j] < hi ? tickStart[j] : -1;
    return { run, close };
  }

  /** Emphasis opening at i in the range [lo, hi): {run, close}, or null. */
  emphasis(i, lo, hi) {
    const { src } = this;
    const ch = src[i];
    const run = this.repeats(i, hi);
    if (run > 2) return null;
    const after = i + run < hi ? src[i + run] : undefined;
    if (after === undefined || isSpace(after)) return null;
    if (ch === '_' && i > lo && WORD.test(src[i - 1])) return null;
    const from = i + run + 1;
    const delimiter = src.slice(i, i + run);
    const closers = this.closers[delimiter];
    while (this.closerCursor[delimiter] < closers.length && closers[this.closerCursor[delimiter]] < from) {
      work++;
      this.closerCursor[delimiter]++;
    }
    const close = closers[this.closerCursor[delimiter]];
    if (close !== undefined && close + run < hi) return { run, close };
    // A run that ends the range is followed by nothing, so only the text before it counts.
    const last = hi - run;
    const closesRange =
      last >= from &&
      src[last] === ch &&
      src[hi - 1] === ch &&
      !isSpace(src[last - 1]) &&
      src[last - 1] !== '\\';
    return closesRange ? { run, close: last } : null;
  }

  /** A link whose "[" is at i, within the range ending at hi: {labelEnd, href, end}, or null. */
  link(i, hi) {
    const { src, opens } = this;
    while (this.openCursor < opens.length && opens[this.openCursor] < i) {
      work++;
      this.openCursor++;
    }
    if (opens[this.openCursor] !== i) return null;
    const labelEnd = this.partner[this.openCursor];
    if (labelEnd === -1 || labelEnd >= Math.min(hi, i + MAX_LINK_LABEL)) return null;
    if (labelEnd + 1 >= hi || src[labelEnd + 1] !== '(') return null;
    const target = this.linkTarget(labelEnd + 1, hi);
    return target && { labelEnd, ...target };
  }

  /**
   * `(href)` or `(<href> "title")` at p, within the range ending at hi: {href, end}, or null.
   * What /\(\s*<?([^\s()<>]+)>?(?:\s+"[^"]*")?\s*\)/ matches, read without backtracking; no
   * two links read the same "(", so each part of the text is read here about once.
   */
  linkTarget(p, hi) {
    const { src } = this;
    const skipSpaces = (q) => {
      while (q < hi && isSpace(src[q])) {
        work++;
        q++;
      }
      return q;
    };
    let q = skipSpaces(p + 1);
    if (q < hi && src[q] === '<') q++;
    const hrefStart = q;
    while (q < hi && !isSpace(src[q]) && !'()<>'.includes(src[q])) {
      work++;
      q++;
    }
    if (q === hrefStart) return null;
    const hrefEnd = q;
    if (q < hi && src[q] === '>') q++;
    const afterHref = skipSpaces(q);
    let end = -1;
    if (afterHref > q && afterHref < hi && src[afterHref] === '"') {
      let quote = afterHref + 1;
      while (quote < hi && src[quote] !== '"') {
        work++;
        quote++;
      }
      const close = quote < hi ? skipSpaces(quote + 1) : hi;
      if (close < hi && src[close] === ')') end = close + 1;
    } else if (afterHref < hi && src[afterHref] === ')') {
      end = afterHref + 1;
    }
    return end === -1 ? null : { href: src.slice(hrefStart, hrefEnd), end };
  }

  /** `<http://…>` or `<https://…>` at i, within the range ending at hi: {url, end}, or null. */
  autolink(i, hi) {
    const { src } = this;
    const scheme = src.startsWith('<https://', i) ? 9 : src.startsWith('<http://', i) ? 8 : 0;
    if (scheme === 0) return null;
    // Past hi when the scheme does not fit in the range: then nothing is read and q === i + scheme.
    let q = i + scheme;
    while (q < hi && !isSpace(src[q]) && src[q] !== '<' && src[q] !== '>') {
      work++;
      q++;
    }
    if (q === i + scheme || q >= hi || src[q] !== '>') return null;
    return { url: src.slice(i + 1, q), end: q + 1 };
  }
}

/**
 * Render Markdown `text` as DOM nodes owned by `doc`; returns a DocumentFragment.
 * Links open in a new tab without an opener or referrer.
 */
export function renderMarkdown(doc, text) {
  const frag = doc.createDocumentFragment();
  for (const block of parseMarkdown(text)) {
    if (block.type === 'pre') {
      const pre = doc.createElement('pre');
      const code = doc.createElement('code');
      code.textContent = block.text;
      pre.appendChild(code);
      frag.appendChild(pre);
    } else if (block.type === 'ul' || block.type === 'ol') {
      const list = doc.createElement(block.type);
      for (const item of block.items) {
        const li = doc.createElement('li');
        appendInline(doc, li, item);
        list.appendChild(li);
      }
      frag.appendChild(list);
    } else {
      const p = doc.createElement('p');
      appendInline(doc, p, block.children);
      frag.appendChild(p);
    }
  }
  return frag;
}

/** Render inline Markdown only (no blocks), e.g. for an option's one-line description. */
export function renderInlineMarkdown(doc, text) {
  const frag = doc.createDocumentFragment();
  appendInline(doc, frag, parseInline(String(text ?? '').trim()));
  return frag;
}

function appendInline(doc, parent, nodes) {
  for (const node of nodes) {
    if (node.type === 'text') {
      parent.appendChild(doc.createTextNode(node.text));
    } else if (node.type === 'code') {
      const el = doc.createElement('code');
      el.textContent = node.text;
      parent.appendChild(el);
    } else if (node.type === 'link') {
      const a = doc.createElement('a');
      a.setAttribute('href', node.href);
      a.setAttribute('target', '_blank');
      a.setAttribute('rel', 'noopener noreferrer');
      appendInline(doc, a, node.children);
      parent.appendChild(a);
    } else if (node.type === 'em' || node.type === 'strong') {
      const el = doc.createElement(node.type);
      appendInline(doc, el, node.children);
      parent.appendChild(el);
    }
  }
}

// ---- plain text ----
// What a person reads of Markdown, without the marks, for places that cannot draw it: an
// inbox row, a notification, the loopback page's summary (and, in him itself, the terminal
// and a page's title: src/form/display/plain.rs reads the same text the same way; both are
// tested against tests/fixtures/display_text.json). A code span keeps its text as written
// (`rm *.log` stays `rm *.log`), a link is its label, emphasis is its words.

/** The plain text of inline nodes (parseInline's). */
function inlineText(nodes) {
  let out = '';
  for (const node of nodes) out += node.type === 'text' || node.type === 'code' ? node.text : inlineText(node.children);
  return out;
}

/** The plain text of each block of `text`: paragraphs, "- "/"1. " list items, code. */
function plainBlocks(text) {
  return parseMarkdown(text).map((block) => {
    if (block.type === 'pre') return { text: block.text };
    if (block.type === 'p') return { text: inlineText(block.children) };
    return { items: block.items.map(inlineText), ordered: block.type === 'ol' };
  });
}

/** The plain text of Markdown `text`: blocks apart by a blank line, a list item a line. */
export function plainText(text) {
  return plainBlocks(text)
    .map((block) =>
      block.items ? block.items.map((item, n) => `${block.ordered ? `${n + 1}.` : '-'} ${item}`).join('\n') : block.text,
    )
    .join('\n\n');
}

/** The first block of Markdown `text` on one line: what names a question in a list. */
export function plainTitle(text) {
  const [first] = plainBlocks(text);
  if (!first) return '';
  const line = first.items ? first.items.join(' ') : first.text;
  return line.split(/\s+/).filter(Boolean).join(' ');
}
