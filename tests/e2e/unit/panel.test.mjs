// The side panel page itself (extension/panel/panel.js) in jsdom, with a stand-in for the
// worker's port: what the worker pushes is drawn card by card, and one card that cannot be
// drawn does not take the others with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { JSDOM } from 'jsdom';

const PANEL_HTML = readFileSync(new URL('../../../extension/panel/panel.html', import.meta.url), 'utf8');

/**
 * Loads panel.js into a fresh panel page: the page, what it sent to the worker, `push` (a
 * worker's `state` with these questions) and `deliver` (any message from the worker).
 */
async function openPanel() {
  const dom = new JSDOM(PANEL_HTML, { url: 'https://panel.test/panel/panel.html' });
  const sent = [];
  let listener = null;
  const port = {
    postMessage: (message) => sent.push(message),
    onMessage: { addListener: (fn) => (listener = fn) },
    onDisconnect: { addListener() {} },
  };
  Object.assign(globalThis, {
    window: dom.window,
    document: dom.window.document,
    chrome: { runtime: { connect: () => port } },
  });
  // The page redraws its timers every second; that must not keep this test process alive.
  const realSetInterval = globalThis.setInterval;
  globalThis.setInterval = (fn, ms) => realSetInterval(fn, ms).unref();
  try {
    await import('../../../extension/panel/panel.js');
  } finally {
    globalThis.setInterval = realSetInterval;
  }
  const deliver = (message) => listener(message);
  const push = (questions) =>
    deliver({
      type: 'state',
      queue: { questions, notices: [] },
      host: { status: 'connected', version: 'test', problem: null },
      now: Date.now(),
    });
  return { window: dom.window, document: dom.window.document, sent, push, deliver };
}

function question(id, form, agent) {
  return {
    id,
    form,
    timeout_ms: null,
    asked_at_ms: null,
    deadline_ms: null,
    agent: { name: agent },
    project: 'demo',
    received_at_ms: 0,
    draft: null,
    unconfirmed_since_ms: null,
  };
}

test('a form that cannot be drawn shows as an error card; the other questions show and work', async () => {
  const { window, document, sent, push, deliver } = await openPanel();
  const warnings = [];
  const realWarn = console.warn;
  console.warn = (...args) => warnings.push(args.join(' '));
  try {
    push([
      // What a process talking to a host socket sent before the host checked forms.
      question('bad', { fields: [null] }, 'raw-socket'),
      question(
        'good',
        { title: 'Ship it?', fields: [{ name: 'ok', type: 'confirm', label: 'Ship it?', required: true }] },
        'claude-code',
      ),
    ]);
  } finally {
    console.warn = realWarn;
  }

  const [bad, good] = document.querySelectorAll('article.card');
  assert.ok(bad && good, 'both cards are in the panel');
  assert.match(bad.textContent, /This question could not be shown: .+/);
  assert.match(bad.querySelector('.card-head').textContent, /raw-socket · demo/, 'who asked is still shown');
  assert.ok(bad.hasAttribute('data-broken'));
  assert.equal(document.getElementById(bad.getAttribute('aria-labelledby'))?.className, 'card-broken-message');
  assert.match(warnings.join('\n'), /question bad could not be shown/);
  assert.equal(good.querySelector('h2').textContent, 'Ship it?');
  assert.equal(document.getElementById('empty').hidden, true);
  assert.ok(good.contains(document.activeElement), 'the focus goes to the question that can be answered');

  // Keys outside the cards go to the first question that takes them: Y answers Yes.
  const y = new window.KeyboardEvent('keydown', { key: 'y', bubbles: true, cancelable: true });
  document.body.dispatchEvent(y);
  assert.deepEqual(
    sent.filter((m) => m.type === 'answer'),
    [{ type: 'answer', id: 'good', action: 'submit', values: { ok: true }, note: '' }],
  );

  // The broken one can still be declined, with the button or with Esc.
  bad.querySelector('button.him-decline').click();
  assert.deepEqual(sent.at(-1), { type: 'answer', id: 'bad', action: 'decline' });
  assert.equal(bad.querySelector('button.him-decline').disabled, true);
  assert.equal(bad.querySelector('.him-status').textContent, 'Declining…');

  // The next push redraws around it, and a new question still arrives.
  push([
    question('bad', { fields: [null] }, 'raw-socket'),
    question('next', { title: 'And this?', fields: [{ name: 'a', type: 'text', label: 'A' }] }, 'codex'),
  ]);
  const titles = [...document.querySelectorAll('article.card')].map((c) => c.querySelector('h2')?.textContent);
  assert.deepEqual(titles, [undefined, 'And this?'], 'the broken card first, as queued');
  // The worker could not send the decline: the card takes it back, and Esc twice declines again.
  deliver({ type: 'answer-failed', id: 'bad', message: 'Reconnecting to the agent; try again.' });
  const decline = document.querySelector('article.card button.him-decline');
  assert.equal(decline.disabled, false);
  assert.equal(document.querySelector('article.card .him-status').textContent, 'Reconnecting to the agent; try again.');
  sent.length = 0;
  decline.dispatchEvent(new window.KeyboardEvent('keydown', { key: 'Escape', bubbles: true, cancelable: true }));
  assert.deepEqual(sent, [], 'one Esc only asks for another');
  assert.equal(document.querySelector('article.card .him-status').textContent, 'Press Esc again to decline.');
  decline.dispatchEvent(new window.KeyboardEvent('keydown', { key: 'Escape', bubbles: true, cancelable: true }));
  assert.deepEqual(sent, [{ type: 'answer', id: 'bad', action: 'decline' }]);
});
