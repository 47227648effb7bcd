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
    const fence = /^\s*```/.exec(line);
    if (fence) {
      flushPara();
      flushList();
      const body = [];
      i++;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) body.push(lines[i++]);
      blocks.push({ type: 'pre', text: body.join('\n') });
      continue;
    }
    if (/^\s*$/.test(line)) {
      flushPara();
      flushList();
      continue;
    }
    const bullet = /^\s{0,3}[-*+]\s+(.*)$/.exec(line);
    const ordered = /^\s{0,3}\d{1,9}[.)]\s+(.*)$/.exec(line);
    const item = bullet ?? ordered;
    if (item) {
      flushPara();
      const type = bullet ? 'ul' : 'ol';
      if (list && list.type !== type) flushList();
      if (!list) list = { type, items: [] };
      list.items.push(item[1]);
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) {
      // An indented line continues the last list item.
      list.items[list.items.length - 1] += '\n' + line.trim();
      continue;
    }
    flushList();
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flushPara();
      blocks.push({ type: 'p', children: [{ type: 'strong', children: parseInline(heading[1]) }] });
      continue;
    }
    para.push(line.trim());
  }
  flushPara();
  flushList();
  return blocks;
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

/** Parse inline Markdown into nodes: text, code, em, strong, link. */
export function parseInline(src) {
  const out = [];
  let text = '';
  const pushText = (t) => {
    text += t;
  };
  const flush = () => {
    if (text) out.push({ type: 'text', text });
    text = '';
  };

  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\' && i + 1 < src.length && ESCAPABLE.includes(src[i + 1])) {
      pushText(src[i + 1]);
      i += 2;
      continue;
    }
    if (c === '\n') {
      // A soft line break inside a paragraph reads as a space, as in CommonMark.
      pushText(' ');
      i++;
      continue;
    }
    if (c === '`') {
      const run = countRun(src, i, '`');
      const close = src.indexOf('`'.repeat(run), i + run);
      if (close !== -1) {
        flush();
        out.push({ type: 'code', text: src.slice(i + run, close).replace(/\n/g, ' ') });
        i = close + run;
        continue;
      }
      pushText(src.slice(i, i + run));
      i += run;
      continue;
    }
    if (c === '[') {
      const link = matchLink(src, i);
      if (link) {
        flush();
        const href = safeHref(link.href);
        if (href) out.push({ type: 'link', href, children: parseInline(link.label) });
        else out.push(...parseInline(link.label));
        i = link.end;
        continue;
      }
    }
    if (c === '<') {
      AUTOLINK.lastIndex = i;
      const auto = AUTOLINK.exec(src);
      const href = auto && safeHref(auto[1]);
      if (href) {
        flush();
        out.push({ type: 'link', href, children: [{ type: 'text', text: auto[1] }] });
        i += auto[0].length;
        continue;
      }
    }
    if (c === '*' || c === '_') {
      const emphasis = matchEmphasis(src, i);
      if (emphasis) {
        flush();
        out.push({ type: emphasis.type, children: parseInline(emphasis.inner) });
        i = emphasis.end;
        continue;
      }
      const run = countRun(src, i, c);
      pushText(src.slice(i, i + run));
      i += run;
      continue;
    }
    pushText(c);
    i++;
  }
  flush();
  return out;
}

function countRun(src, i, ch) {
  let n = 0;
  while (src[i + n] === ch) n++;
  return n;
}

// [label](href) with balanced brackets in the label and no spaces in the href
// (an optional "title" after the href is dropped).
// Agent text can be long and full of brackets; a label longer than this is not a link,
// which keeps the scan linear instead of rescanning to the end for every "[".
const MAX_LINK_LABEL = 1000;
// Sticky, so it matches at a position without copying the rest of the text.
const AUTOLINK = /<(https?:\/\/[^\s<>]+)>/y;

function matchLink(src, start) {
  let depth = 0;
  let i = start;
  const limit = Math.min(src.length, start + MAX_LINK_LABEL);
  for (; i < limit; i++) {
    if (src[i] === '\\') {
      i++;
      continue;
    }
    if (src[i] === '[') depth++;
    else if (src[i] === ']' && --depth === 0) break;
  }
  if (i >= limit || src[i + 1] !== '(') return null;
  const rest = /^\(\s*<?([^\s()<>]+)>?(?:\s+"[^"]*")?\s*\)/.exec(src.slice(i + 1));
  if (!rest) return null;
  return { label: src.slice(start + 1, i), href: rest[1], end: i + 1 + rest[0].length };
}

// *em*, _em_, **strong**, __strong__. The opening run must be followed by a non-space and
// the closing run preceded by one; "_" does not open or close inside a word, so
// snake_case_names stay as written.
function matchEmphasis(src, start) {
  const ch = src[start];
  const run = Math.min(countRun(src, start, ch), 2);
  if (countRun(src, start, ch) > 2) return null;
  const after = src[start + run];
  if (after === undefined || /\s/.test(after)) return null;
  if (ch === '_' && start > 0 && /[\p{L}\p{N}]/u.test(src[start - 1])) return null;
  const delim = ch.repeat(run);
  let j = start + run;
  while (j < src.length) {
    const k = src.indexOf(delim, j);
    if (k === -1) return null;
    const before = src[k - 1];
    const next = src[k + run];
    const closes =
      k > start + run &&
      !/\s/.test(before) &&
      before !== '\\' &&
      next !== ch &&
      !(ch === '_' && next !== undefined && /[\p{L}\p{N}]/u.test(next));
    if (closes) {
      return { type: run === 2 ? 'strong' : 'em', inner: src.slice(start + run, k), end: k + run };
    }
    j = k + 1;
  }
  return null;
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
