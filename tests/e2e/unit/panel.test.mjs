// The side panel page itself (extension/panel/panel.js) in jsdom, with a stand-in for the
// worker's port: what the worker pushes is drawn card by card, and one card that cannot be
// drawn does not take the others with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { JSDOM } from 'jsdom';

const PANEL_HTML = readFileSync(new URL('../../../extension/panel/panel.html', import.meta.url), 'utf8');
const ENGLISH = JSON.parse(readFileSync(new URL('../../../extension/_locales/en/messages.json', import.meta.url), 'utf8'));

/** chrome.i18n as the browser answers it for English: the raw message, "$$" undone. */
const i18n = { getMessage: (key) => ENGLISH[key]?.message.replace(/\$\$/g, '$') ?? '' };

/**
 * Loads panel.js into a fresh panel page: the page, what it sent to the worker, `push` (a
 * worker's `state` with these questions) and `deliver` (any message from the worker).
 */
let pages = 0;
async function openPanel(browserApis = {}) {
  const dom = new JSDOM(PANEL_HTML, { url: 'https://panel.test/panel/panel.html', pretendToBeVisual: true });
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
    chrome: { runtime: { connect: () => port }, i18n, ...browserApis },
  });
  // The page redraws its timers every second; that must not keep this test process alive.
  const realSetInterval = globalThis.setInterval;
  globalThis.setInterval = (fn, ms) => realSetInterval(fn, ms).unref();
  try {
    // A fresh instance of the page's module for each page (the lib modules it imports are pure).
    await import(`../../../extension/panel/panel.js?page=${++pages}`);
  } finally {
    globalThis.setInterval = realSetInterval;
  }
  const deliver = (message) => listener(message);
  const push = (questions, { notices = [], recent = [] } = {}) =>
    deliver({
      type: 'state',
      queue: { questions, notices },
      host: { status: 'connected', version: 'test', problem: null },
      recent,
      now: Date.now(),
    });
  return { window: dom.window, document: dom.window.document, sent, push, deliver };
}

/** Resolves once `element` is marked armed: it has been on screen long enough to take keys. */
function armed(window, element) {
  return new Promise((resolve) => {
    if (element.hasAttribute('data-armed')) return resolve();
    const watch = new window.MutationObserver(() => {
      if (!element.hasAttribute('data-armed')) return;
      watch.disconnect();
      resolve();
    });
    watch.observe(element, { attributes: true, attributeFilter: ['data-armed'] });
  });
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

  const [good, bad] = document.querySelectorAll('article.card');
  assert.ok(bad && good, 'both cards are in the panel');
  assert.ok(bad.hasAttribute('data-broken'), 'the card that can be answered is open, on top');
  assert.match(bad.textContent, /This question could not be shown: .+/);
  assert.match(bad.querySelector('.card-head').textContent, /raw-socket · demo/, 'who asked is still shown');
  assert.ok(bad.hasAttribute('data-broken'));
  assert.equal(document.getElementById(bad.getAttribute('aria-labelledby'))?.className, 'card-broken-message');
  assert.match(warnings.join('\n'), /question bad could not be shown/);
  assert.equal(good.querySelector('h2').textContent, 'Ship it?');
  assert.equal(document.getElementById('empty').hidden, true);
  assert.ok(good.contains(document.activeElement), 'the focus goes to the question that can be answered');

  // Keys outside the cards go to the first question that takes them, once it has been on
  // screen long enough to be read: Y then answers Yes.
  const early = new window.KeyboardEvent('keydown', { key: 'y', bubbles: true, cancelable: true });
  document.body.dispatchEvent(early);
  assert.deepEqual(sent.filter((m) => m.type === 'answer'), [], 'a key before the card was seen decides nothing');
  assert.equal(early.defaultPrevented, true);
  await armed(window, good.querySelector('form'));
  await armed(window, bad.querySelector('.him-form'));
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
  assert.deepEqual(titles, ['And this?', undefined], 'the open card first; the broken one never opens');
  // The worker could not send the decline: the card takes it back, and Esc twice declines again.
  deliver({ type: 'answer-failed', id: 'bad', message: 'Reconnecting to the agent; try again.' });
  const decline = document.querySelector('article.card[data-broken] button.him-decline');
  assert.equal(decline.disabled, false);
  assert.equal(document.querySelector('article.card[data-broken] .him-status').textContent, 'Reconnecting to the agent; try again.');
  sent.length = 0;
  decline.dispatchEvent(new window.KeyboardEvent('keydown', { key: 'Escape', bubbles: true, cancelable: true }));
  assert.deepEqual(sent, [], 'one Esc only asks for another');
  assert.equal(document.querySelector('article.card[data-broken] .him-status').textContent, 'Press Esc again to decline.');
  decline.dispatchEvent(new window.KeyboardEvent('keydown', { key: 'Escape', bubbles: true, cancelable: true }));
  assert.deepEqual(sent, [{ type: 'answer', id: 'bad', action: 'decline' }]);
});

function textForm(title) {
  return { title, fields: [{ name: 'answer', type: 'text', label: title }] };
}

function withDeadline(q, deadline) {
  return { ...q, deadline_ms: deadline, timeout_ms: 600_000 };
}

test('an inbox: the most urgent question is open on top, the others one line each, "1 of 3", Alt+↓ and a click move', async () => {
  const { window, document, sent, push } = await openPanel();
  const now = Date.now();
  const later = withDeadline(question('later', textForm('Later one'), 'codex'), now + 500_000);
  const soon = withDeadline(question('soon', textForm('Soon one'), 'claude-code'), now + 100_000);
  const never = question('never', textForm('No deadline'), 'gemini');
  push([later, never, soon]);

  const cards = () => [...document.querySelectorAll('article.card')];
  const open = () => cards().filter((c) => !c.hasAttribute('data-collapsed'));
  assert.deepEqual(
    cards().map((c) => c.querySelector('.row-title').textContent),
    ['Soon one', 'Later one', 'No deadline'],
    'soonest deadline first, none last',
  );
  assert.equal(open().length, 1);
  assert.equal(open()[0].querySelector('h2').textContent, 'Soon one');
  assert.ok(open()[0].contains(document.activeElement), 'the open card has the focus');
  assert.equal(document.getElementById('count').textContent, '1 of 3');
  assert.equal(document.getElementById('nav').hidden, false);
  const row = cards()[1].querySelector('.card-row');
  assert.equal(row.hidden, false);
  assert.match(row.textContent, /^codex · demoLater one\d+:\d\d left$/, 'agent · project · title · time left');
  assert.equal(cards()[1].querySelector('form').hidden, true, 'its form is kept, hidden');
  assert.equal(document.querySelector('h1'), null, 'no product name: the browser shows it above the panel');

  document.activeElement.dispatchEvent(new window.KeyboardEvent('keydown', { key: 'ArrowDown', altKey: true, bubbles: true, cancelable: true }));
  assert.equal(open()[0].querySelector('h2').textContent, 'Later one', 'Alt+↓ opens the next');
  assert.equal(cards()[0], open()[0], 'on top');
  assert.equal(document.getElementById('count').textContent, '2 of 3');
  assert.ok(open()[0].contains(document.activeElement));

  cards().find((c) => c.textContent.includes('No deadline')).querySelector('.card-row').click();
  assert.equal(open()[0].querySelector('h2').textContent, 'No deadline');
  assert.equal(document.getElementById('count').textContent, '3 of 3');
  document.getElementById('next').click();
  assert.equal(open()[0].querySelector('h2').textContent, 'Soon one', '› wraps round');

  // The person types in the open one; a more urgent question arrives: it waits its turn.
  const box = open()[0].querySelector('input');
  box.value = 'typing';
  box.dispatchEvent(new window.Event('input', { bubbles: true }));
  const urgent = withDeadline(question('urgent', textForm('Urgent one'), 'claude-code'), now + 20_000);
  push([later, never, soon, urgent]);
  assert.equal(open()[0].querySelector('h2').textContent, 'Soon one', 'the card being typed in stays open');
  assert.equal(document.activeElement, box, 'and keeps the focus');
  assert.equal(document.getElementById('count').textContent, '2 of 4');
  assert.equal(cards()[1].querySelector('.row-title').textContent, 'Urgent one', 'the new one first in the list');
  assert.equal(cards()[1].querySelector('.row-time').hasAttribute('data-urgent'), true, 'under 30 s: red');

  // Answered: the most urgent one opens, with the keyboard in it.
  push([later, never, urgent]);
  assert.equal(open()[0].querySelector('h2').textContent, 'Urgent one');
  assert.equal(document.activeElement, open()[0].querySelector('input'));
});

test('each agent has a mark of its own: its name on a colour no other agent on screen has', async () => {
  const { document, push } = await openPanel();
  const a = question('a', textForm('A'), 'claude-code');
  const b = { ...question('b', textForm('B'), 'claude-code'), project: 'other' };
  const c = question('c', textForm('C'), 'claude-code');
  push([a, b, c]);
  const mark = (id) => [...document.querySelectorAll('article.card')].find((el) => el.textContent.includes(id === 'a' ? 'A' : id === 'b' ? 'B' : 'C')).querySelector('.mark');
  assert.equal(mark('a').textContent, 'claude-code', 'the name, not an initial');
  assert.equal(mark('a').title, 'claude-code');
  assert.equal(mark('a').style.getPropertyValue('--mark-light'), mark('c').style.getPropertyValue('--mark-light'), 'same agent, same project, same colour');
  assert.notEqual(mark('a').style.getPropertyValue('--mark-light'), mark('b').style.getPropertyValue('--mark-light'), 'another project, another colour');
  assert.match(mark('a').style.getPropertyValue('--mark-dark'), /^#[0-9a-f]{6}$/);
});

test('a question that comes while the panel is open is said to a screen reader, and a notice is one line with a named dismiss', async () => {
  const { document, push } = await openPanel();
  const a = question('a', textForm('First'), 'codex');
  push([a]);
  assert.equal(document.getElementById('arrivals').textContent, '', 'what was there when the panel opened is not announced');
  assert.equal(document.getElementById('arrivals').getAttribute('aria-live'), 'polite');
  const b = question('b', textForm('Deploy now?'), 'cursor');
  push([a, b]);
  assert.equal(document.getElementById('arrivals').textContent, 'cursor asks: Deploy now?');
  const row = [...document.querySelectorAll('.row-title')].find((el) => el.textContent === 'Deploy now?' || el.textContent === 'First');
  assert.equal(row.title, row.textContent, 'the row title has the whole question as its tooltip');
  push([a, b], { notices: [{ key: 'n1', id: 'z', title: 'Old one', agent: 'codex', text: 'Answer sent.', kind: 'submit', at_ms: Date.now() }] });
  const notice = document.querySelector('.notice');
  assert.equal(notice.querySelector('button').getAttribute('aria-label'), 'Dismiss the notice about “Old one”');
  assert.equal(notice.querySelector('p').title, notice.querySelector('p').textContent);
  assert.match(notice.querySelector('p').title, /Old one.*Answer sent/);
});

test('a notice echoes what was sent, password fields never; Recent lists the session\'s answers', async () => {
  const { document, push } = await openPanel();
  const recent = [
    {
      id: 'q2',
      title: 'Deploy settings',
      agent: 'codex',
      project: 'demo',
      at_ms: Date.UTC(2026, 11, 1, 12, 0),
      action: 'submit',
      fields: [
        { name: 'region', label: 'Region', value: 'eu', shown: 'eu-west' },
        { name: 'now', label: 'Right away?', value: true, shown: true },
        { name: 'flags', label: 'Flags', value: [], shown: [] },
      ],
      hidden: 1,
      note: 'ping me',
    },
    { id: 'q1', title: 'Ship it?', agent: 'codex', project: 'demo', at_ms: Date.UTC(2026, 11, 1, 11, 0), action: 'decline', fields: [], hidden: 0, note: 'not today' },
  ];
  const notices = [{ key: 'k', id: 'q2', title: 'Deploy settings', agent: 'codex', text: 'Answer sent.', kind: 'submit', at_ms: Date.now() }];
  push([], { notices, recent });
  const notice = document.querySelector('.notice').textContent;
  assert.equal(notice, '“Deploy settings” (codex): Answer sent. You sent: Region: eu-west; Right away?: Yes; Flags: nothing chosen; 1 hidden (password); note: ping me×');
  const section = document.getElementById('recent');
  assert.equal(section.hidden, false);
  assert.equal(document.getElementById('recent-summary').textContent, 'Recent (2)');
  const items = [...section.querySelectorAll('.recent-item')].map((li) => li.querySelector('.recent-answer').textContent);
  assert.deepEqual(items, ['Region: eu-west; Right away?: Yes; Flags: nothing chosen; 1 hidden (password); note: ping me', 'Declined. not today']);
  push([], { notices: [], recent: [] });
  assert.equal(section.hidden, true, 'nothing answered yet: no Recent');
});

test('every string of the panel page comes from _locales', async () => {
  const { document } = await openPanel();
  const text = (id) => document.getElementById(id).textContent;
  const name = (id) => document.getElementById(id).getAttribute('aria-label');
  assert.equal(text('link'), ENGLISH.panel_link_connecting.message);
  assert.equal(text('problem-run'), ENGLISH.panel_problem_run.message);
  assert.equal(text('retry'), ENGLISH.panel_retry.message);
  assert.equal(text('empty'), ENGLISH.panel_empty.message);
  assert.equal(text('recent-copy'), ENGLISH.panel_recent_copy.message);
  assert.equal(name('queue'), ENGLISH.panel_queue_label.message);
  assert.equal(name('prev'), ENGLISH.panel_prev.message);
  assert.equal(document.documentElement.lang, 'en');
  // Nothing in the page is English written into the HTML: every text node is filled in.
  const html = readFileSync(new URL('../../../extension/panel/panel.html', import.meta.url), 'utf8');
  const body = html.slice(html.indexOf('<body>')).replace(/<!--[\s\S]*?-->/g, '');
  assert.deepEqual([...body.matchAll(/>([^<>]*[A-Za-z][^<>]*)</g)].map((m) => m[1].trim()).filter(Boolean), []);
});

test('permission cards, closed cards and drafts keep working in the inbox', async () => {
  const { document, push } = await openPanel();
  const now = Date.now();
  const permission = withDeadline(
    question(
      'perm',
      {
        title: 'Claude Code asks to use Bash',
        fields: [
          {
            name: 'decision',
            type: 'radio',
            label: 'Decision',
            required: true,
            options: [
              { value: 'allow', label: 'Allow' },
              { value: 'deny', label: 'Deny' },
            ],
          },
        ],
        permission: { tool_name: 'Bash', input: { command: 'ls -la' } },
      },
      'claude-code',
    ),
    now + 200_000,
  );
  const drafted = { ...withDeadline(question('draft', textForm('Kept draft'), 'codex'), now + 100_000), draft: { values: { answer: 'half typed' }, note: '' } };
  const closed = { ...question('closed', textForm('Closed one'), 'codex'), closed: { reason: 'cancelled', text: 'Cancelled by the agent.', at_ms: now } };
  push([permission, drafted, closed]);
  const cards = [...document.querySelectorAll('article.card')];
  assert.deepEqual(
    cards.map((c) => [c.querySelector('.row-title').textContent, c.hasAttribute('data-collapsed')]),
    [
      ['Kept draft', false],
      ['Claude Code asks to use Bash', true],
      ['Closed one', false],
    ],
    'the open card, the permission card as a line, the closed card whole',
  );
  assert.equal(cards[0].querySelector('input').value, 'half typed', 'the draft is back in its field');
  assert.match(cards[2].querySelector('.him-status').textContent, /^Cancelled by the agent\. What you typed stays here/);
  assert.equal(document.getElementById('count').textContent, '1 of 2', 'a closed card is not counted');

  cards[1].querySelector('.card-row').click();
  assert.equal(cards[1].hasAttribute('data-collapsed'), false);
  assert.equal(document.activeElement.textContent, 'Deny', 'a permission card opens on Deny');
  assert.equal(cards[0].hasAttribute('data-collapsed'), true);
  assert.equal(cards[0].querySelector('input').value, 'half typed', 'the draft stays in the folded card');
});

test('the open card closing under the person\'s hands stays in place with the focus; the next one opens below it', async () => {
  const { window, document, push } = await openPanel();
  const now = Date.now();
  const a = withDeadline(question('a', textForm('Being typed'), 'codex'), now + 100_000);
  const b = withDeadline(question('b', textForm('Next up'), 'codex'), now + 200_000);
  push([a, b]);
  const box = document.querySelector('article.card input');
  box.focus();
  box.value = 'my text';
  box.dispatchEvent(new window.Event('input', { bubbles: true }));
  push([{ ...a, deadline_ms: null, draft: { values: { answer: 'my text' }, note: '' }, closed: { reason: 'cancelled', text: 'Cancelled by the agent.', at_ms: now } }, b]);
  const cards = [...document.querySelectorAll('article.card')];
  assert.equal(cards[0].querySelector('.row-title').textContent, 'Being typed', 'still first');
  assert.equal(document.activeElement, box, 'the focus stays where the person was typing');
  assert.equal(box.readOnly, true);
  assert.equal(cards[1].hasAttribute('data-collapsed'), false, 'the next question opened, below it');
  assert.equal(document.getElementById('nav').hidden, true, 'one question waits: no count');
});

test("the worker's changes add, change and remove cards; an answer lost with the host says so and can be sent again (issue 22.11, 22.12)", async () => {
  const { document, push, deliver } = await openPanel();
  const host = { status: 'connected', version: 'test', problem: null };
  const form = {
    title: 'Database login',
    fields: [
      { name: 'user', type: 'text', label: 'User' },
      { name: 'pw', type: 'password', label: 'Password' },
    ],
  };
  // Typed before a reload: the draft fills the form.
  const draft = { values: { user: 'deploy' }, note: '' };
  const login = { ...question('login', form, 'codex'), draft };
  push([login]);
  const cardOf = (title) => [...document.querySelectorAll('article.card')].find((c) => c.textContent.includes(title));
  // A question added by a change, none of the others sent again.
  deliver({ type: 'changes', questions: [question('other', textForm('Another one'), 'codex')], removed: [], host, now: Date.now() });
  assert.ok(cardOf('Another one'), 'added');
  assert.ok(cardOf('Database login'), 'the other kept');

  // Sent, waiting for the verdict; then the host went away and the agent asked again.
  const judging = { ...login, judging: { answer: { action: 'submit', values: { user: 'deploy', pw: null } }, at_ms: 1 } };
  deliver({ type: 'changes', questions: [judging], removed: [], host, now: Date.now() });
  const status = () => cardOf('Database login').querySelector('.him-status').textContent;
  assert.equal(status(), 'Sending…');
  const { judging: _, ...rest } = judging;
  const reconnecting = { status: 'connecting', version: null, problem: null };
  deliver({ type: 'changes', questions: [{ ...rest, lost: { at_ms: 2 } }], removed: [], host: reconnecting, now: Date.now() });
  assert.match(status(), /^Connecting to the him host/, 'nothing to send to yet');
  deliver({ type: 'changes', questions: [{ ...rest, lost: { at_ms: 2 }, unconfirmed_since_ms: 3 }], removed: [], host, now: Date.now() });
  assert.match(status(), /^Waiting for the agent to reconnect/);
  deliver({ type: 'changes', questions: [{ ...rest, lost: { at_ms: 2 } }], removed: [], host, now: Date.now() });
  const card = cardOf('Database login');
  assert.equal(
    status(),
    'Your answer did not reach the agent: the him host stopped before the agent confirmed it. The agent has asked again; send it again? A password is never kept: if its box is empty, type it again.',
  );
  assert.ok(card.hasAttribute('data-lost'));
  assert.equal(card.querySelector('input[type=text]').value, 'deploy', 'the answer is kept');
  assert.equal(card.querySelector('input[type=password]').value, '', 'the password is not');
  const submit = [...card.querySelectorAll('button')].find((b) => b.textContent === 'Submit');
  assert.equal(submit.disabled, false, 'it can be sent again');

  deliver({ type: 'changes', questions: [], removed: ['login'], host, now: Date.now() });
  assert.equal(cardOf('Database login'), undefined, 'removed');
  assert.ok(cardOf('Another one'));
});

test('the arrival sound, turned on, stays quiet while the browser has the extension\'s notifications off', async () => {
  const notes = [];
  const node = () => ({ connect: (next) => next, frequency: {}, gain: { setValueAtTime() {}, exponentialRampToValueAtTime() {} } });
  globalThis.AudioContext = class {
    state = 'running';
    currentTime = 0;
    destination = node();
    createOscillator = () => ({ ...node(), start: (at) => notes.push(at), stop() {} });
    createGain = () => node();
  };
  let level = 'denied';
  try {
    const { document, push } = await openPanel({
      storage: { local: { get: async () => ({ sound: true }), set: async () => {}, remove: async () => {} } },
      notifications: { getPermissionLevel: async () => level },
    });
    // The person is elsewhere: jsdom would say the page has the focus once a card takes it.
    document.hasFocus = () => false;
    await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(document.getElementById('sound').getAttribute('aria-pressed'), 'true', 'the kept choice is shown');
    const a = question('a', textForm('First'), 'codex');
    push([a]);
    const b = question('b', textForm('Second'), 'codex');
    push([a, b]);
    level = 'granted';
    push([a, b, question('c', textForm('Third'), 'codex')]);
    // The chimes play in the order the questions came: two notes, both the third's.
    for (let i = 0; i < 50 && notes.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(notes.length, 2, 'the second question, asked while notifications were off, played nothing');
  } finally {
    delete globalThis.AudioContext;
  }
});

test('a sound the browser holds back is left out, not played later with the others', async () => {
  const notes = [];
  const node = () => ({ connect: (next) => next, frequency: {}, gain: { setValueAtTime() {}, exponentialRampToValueAtTime() {} } });
  let context = null;
  const waiting = [];
  globalThis.AudioContext = class {
    // As a browser that lets no sound start before a click: resume() waits for one.
    state = 'suspended';
    currentTime = 0;
    destination = node();
    constructor() {
      context = this;
    }
    resume = () => new Promise((resolve) => waiting.push(resolve));
    createOscillator = () => ({ ...node(), start: (at) => notes.push(at), stop() {} });
    createGain = () => node();
  };
  try {
    const { document, push } = await openPanel({
      storage: { local: { get: async () => ({ sound: true }), set: async () => {}, remove: async () => {} } },
    });
    document.hasFocus = () => false;
    await new Promise((resolve) => setTimeout(resolve, 0));
    const a = question('a', textForm('First'), 'codex');
    push([a]);
    const b = question('b', textForm('Second'), 'codex');
    const c = question('c', textForm('Third'), 'codex');
    push([a, b]);
    push([a, b, c]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(notes.length, 0, 'nothing plays while the audio is held back');
    // The person clicks somewhere; the audio starts. Only the next arrival is heard.
    context.state = 'running';
    waiting.forEach((resume) => resume());
    push([a, b, c, question('d', textForm('Fourth'), 'codex')]);
    for (let i = 0; i < 50 && notes.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(notes.length, 2, 'one chime, the fourth question\'s');
  } finally {
    delete globalThis.AudioContext;
  }
});
