// The side panel as an inbox, in real Chromium: two real MCP clients (the TypeScript SDK,
// as "claude-code" in web-shop and "codex" in infra) → `him serve` → the native host
// Chromium starts → the extension → the panel, driven by clicks and keys (issue 15).
// What is measured about the rendered page (contrast of control borders, target sizes,
// text sizes) is computed from the computed styles and boxes in both themes at 320 and
// 400 px, never read from the CSS text.
//
// Needs HIM_BIN (the him binary; `cargo test` sets it) and Debian's Chromium (or
// HIM_CHROMIUM). With HIM_SCREENSHOTS=<dir> it also saves the screenshots that
// docs/panel.md describes ("What the panel looks like").

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { agentMark } from '../../extension/lib/inbox.js';
import { EXT_DIR, PANEL_URL, everyCardArmed, launchWithExtension } from './browser.mjs';

const HIM_BIN = process.env.HIM_BIN;
const CHROMIUM = process.env.HIM_CHROMIUM ?? '/usr/lib/chromium/chromium';
const SCREENSHOTS = process.env.HIM_SCREENSHOTS ?? null;
const STEP_MS = 30_000;
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let tmp;
let context;
let worker;
let page;
/** Two MCP sessions, as two agents in two projects. */
const clients = {};
let problems = [];

async function until(what, fn, ms = 10_000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      last = await fn();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
}

/** Start a tool call from agent `who`; the person answers in the panel meanwhile. */
function ask(who, name, args) {
  const call = clients[who].callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  return { result: async () => (await call).structuredContent };
}

const inboxCard = (title) => page.locator('article.card', { hasText: title });
const openCard = () => page.locator('article.card:not([data-collapsed])').first();
const openTitle = () => openCard().locator('h2').first().textContent();
const rowTitles = () => page.locator('article.card[data-collapsed] .row-title').allTextContents();
/** Waits until every card the panel shows takes keys and clicks. */
const armed = () => everyCardArmed(page);

async function connect(name, project, runtimeDir) {
  const cwd = path.join(tmp, project);
  mkdirSync(cwd);
  const transport = new StdioClientTransport({
    command: HIM_BIN,
    args: ['serve'],
    cwd,
    env: { HIM_RUNTIME_DIR: runtimeDir, HIM_LOG: 'warn', HIM_FALLBACK: 'off', HIM_KEEP_MS: '0' },
    stderr: 'inherit',
  });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return client;
}

before(async () => {
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  const launched = await launchWithExtension({
    himBin: HIM_BIN,
    chromiumPath: CHROMIUM,
    prefix: 'him-inbox-',
    args: ['--no-first-run', '--disable-sync'],
    viewport: { width: 400, height: 800 },
  });
  ({ tmp, context, worker } = launched);
  const { runtimeDir } = launched;
  problems = launched.problems;
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  page = await context.newPage();
  await page.goto(PANEL_URL);
  await page.getByRole('status').filter({ hasText: /^Connected/ }).waitFor({ timeout: 10_000 });
  clients.claude = await connect('claude-code', 'web-shop', runtimeDir);
  clients.codex = await connect('codex', 'infra', runtimeDir);
});

after(async () => {
  for (const c of Object.values(clients)) await c.close().catch(() => {});
  await context?.close().catch(() => {});
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test('the inbox: the soonest deadline is open on top, the others one line each; Alt+↓ and a click move; typing is never interrupted', { timeout: STEP_MS }, async () => {
  const port = ask('codex', 'ask_text', { question: 'Which port for the API?', timeout_ms: 240_000 });
  await openCard().getByRole('textbox', { name: 'Which port for the API?' }).waitFor();
  // Untouched, it gives way to a more urgent question.
  const db = ask('claude', 'ask_choice', { question: 'Which database?', options: ['Postgres', 'SQLite'], timeout_ms: 120_000 });
  const migrate = ask('claude', 'ask_confirm', { question: 'Run the migrations now?', timeout_ms: 300_000 });
  await inboxCard('Run the migrations now?').waitFor();
  await until('the soonest question to open', async () => (await openTitle()) === 'Which database?');
  assert.equal(await page.locator('#count').textContent(), '1 of 3');
  assert.deepEqual(await rowTitles(), ['Which port for the API?', 'Run the migrations now?'], 'the rest by deadline');
  assert.match(
    await inboxCard('Which port for the API?').locator('.card-row').textContent(),
    /^codex · infraWhich port for the API\?[34]:\d\d left$/,
    'agent (its mark) · project · title · time left',
  );
  assert.equal(await page.locator('h1').count(), 0, 'no product name: the side panel header shows it');
  assert.equal(await openCard().getByRole('radio', { name: 'Postgres' }).evaluate((el) => el === document.activeElement), true);

  // Each agent has its own colour, the same on every card of that agent, in either theme.
  const colour = (title) => inboxCard(title).locator('.mark').first().evaluate((el) => getComputedStyle(el).backgroundColor);
  const rgb = (hex) => `rgb(${[1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)).join(', ')})`;
  const claude = agentMark('claude-code', 'web-shop').colours;
  const codex = agentMark('codex', 'infra').colours;
  assert.notEqual(claude.light, codex.light, 'these two agents differ in colour');
  assert.equal(await colour('Which database?'), rgb(claude.light));
  assert.equal(await colour('Run the migrations now?'), rgb(claude.light));
  assert.equal(await colour('Which port for the API?'), rgb(codex.light));
  await page.emulateMedia({ colorScheme: 'dark' });
  assert.equal(await colour('Which port for the API?'), rgb(codex.dark));
  await page.emulateMedia({ colorScheme: 'light' });

  await page.keyboard.press('Alt+ArrowDown');
  assert.equal(await openTitle(), 'Which port for the API?');
  assert.equal(await page.locator('#count').textContent(), '2 of 3');
  const box = openCard().getByRole('textbox', { name: 'Which port for the API?' });
  assert.equal(await box.evaluate((el) => el === document.activeElement), true, 'the keyboard is in the card that opened');
  await box.pressSequentially('80');
  // A more urgent question arrives while the person types: it waits, first in the list.
  const urgent = ask('codex', 'ask_text', { question: 'Which region?', timeout_ms: 60_000 });
  await inboxCard('Which region?').waitFor();
  assert.equal(await openTitle(), 'Which port for the API?', 'the card being typed in stays open');
  assert.equal(await box.evaluate((el) => el === document.activeElement), true, 'and keeps the focus');
  assert.deepEqual((await rowTitles())[0], 'Which region?');
  assert.equal(await page.locator('#count').textContent(), '3 of 4');
  await box.pressSequentially('80');
  await armed();
  await box.press('Enter');
  assert.equal((await port.result()).answer, '8080');

  // The next most urgent opens with the keyboard in it.
  await until('the most urgent to open', async () => (await openTitle()) === 'Which region?');
  await until('the focus in it', () => openCard().getByRole('textbox').evaluate((el) => el === document.activeElement));
  await armed();
  await page.keyboard.type('eu-west');
  await page.keyboard.press('Enter');
  assert.equal((await urgent.result()).answer, 'eu-west');

  // A click on a row opens it; ‹ › step; Y answers the yes/no card.
  await until('the database question to open', async () => (await openTitle()) === 'Which database?');
  await inboxCard('Run the migrations now?').locator('.card-row').click();
  assert.equal(await openTitle(), 'Run the migrations now?');
  await page.getByRole('button', { name: 'Next question' }).click();
  assert.equal(await openTitle(), 'Which database?');
  await page.getByRole('button', { name: 'Previous question' }).click();
  assert.equal(await openTitle(), 'Run the migrations now?');
  await armed();
  await page.keyboard.press('y');
  assert.equal((await migrate.result()).confirmed, true);
  await until('the last one to open', async () => (await openTitle()) === 'Which database?');
  assert.equal(await page.locator('#nav').isVisible(), false, 'one question: no count');
  await armed();
  await page.keyboard.press('2');
  await page.keyboard.press('Enter');
  assert.equal((await db.result()).answer, 'SQLite');
});

test('a card that arrives takes the focus, with a visible ring, even after a mouse click', { timeout: STEP_MS }, async () => {
  await page.mouse.click(5, 790);
  const q = ask('claude', 'ask_choice', { question: 'Which test runner?', options: ['vitest', 'jest'] });
  const radio = openCard().getByRole('radio', { name: 'vitest' });
  await radio.waitFor();
  await until('the focus on the first option', () => radio.evaluate((el) => el === document.activeElement));
  const ring = await radio.evaluate((el) => {
    const s = getComputedStyle(el);
    return { style: s.outlineStyle, width: Number.parseFloat(s.outlineWidth) };
  });
  assert.notEqual(ring.style, 'none', 'a focus ring is drawn');
  assert.ok(ring.width >= 2, `the ring is ${ring.width}px`);
  await armed();
  await page.keyboard.press('1');
  await page.keyboard.press('Enter');
  assert.equal((await q.result()).answer, 'vitest');
});

test('options: the whole tile picks; Recommended is a badge, not a look of being chosen; over 8 options, compact rows with a filter and Submit in sight', { timeout: STEP_MS }, async () => {
  const languages = ['Rust', 'Go', 'Python', 'TypeScript', 'Kotlin', 'Swift', 'Haskell', 'OCaml', 'Elixir', 'Gleam', 'Zig', 'Crystal'];
  await page.setViewportSize({ width: 320, height: 480 });
  const q = ask('claude', 'ask_form', {
    title: 'Pick the stack',
    fields: [
      { name: 'lang', type: 'multi_select', label: 'Languages', options: languages },
      {
        name: 'ci',
        type: 'radio',
        label: 'CI',
        options: [
          { value: 'gh', label: 'GitHub Actions', description: 'hosted runners' },
          { value: 'local', label: 'Local runner', recommended: true },
        ],
      },
    ],
  });
  const c = openCard();
  await c.getByRole('checkbox', { name: 'Rust' }).waitFor();
  await armed();
  assert.equal(await c.locator('.him-options.him-compact').count(), 1, 'the long group is compact');
  // A letter typed on an option goes to the filter.
  await c.getByRole('checkbox', { name: 'Rust' }).focus();
  await page.keyboard.type('qx');
  const filter = c.getByRole('searchbox', { name: 'Filter the options of Languages' });
  assert.equal(await filter.inputValue(), 'qx');
  assert.equal(await filter.evaluate((el) => el === document.activeElement), true);
  const shown = () => c.locator('.him-compact .him-option:visible .him-option-label').allTextContents();
  assert.deepEqual(await shown(), []);
  await c.getByText('No option matches “qx”.').waitFor();
  await filter.fill('o');
  assert.deepEqual(await shown(), ['Go', 'Python', 'Kotlin', 'OCaml']);
  assert.deepEqual(await c.locator('.him-compact .him-option:visible kbd').allTextContents(), ['1', '2', '3', '4'], 'badges renumbered');
  await filter.press('Enter');
  assert.equal(await c.getByRole('checkbox', { name: 'Go' }).isChecked(), true, 'Enter picks the first left');
  await filter.press('ArrowDown');
  await page.keyboard.press('3');
  assert.equal(await c.getByRole('checkbox', { name: 'Kotlin' }).isChecked(), true, 'a digit picks among those in sight');
  await filter.fill('');
  assert.equal((await shown()).length, 12);

  // Submit stays in sight while the long form scrolls.
  const submit = c.getByRole('button', { name: 'Submit' });
  const where = () =>
    submit.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return { top: r.top, bottom: r.bottom, height: innerHeight, page: document.documentElement.scrollHeight };
    });
  await c.getByRole('checkbox', { name: 'Rust' }).scrollIntoViewIfNeeded();
  const at = await where();
  assert.ok(at.page > at.height + 100, `the form is taller than the view: ${JSON.stringify(at)}`);
  assert.ok(at.top >= 0 && at.bottom <= at.height, `Submit sits at the bottom of the view: ${JSON.stringify(at)}`);

  // The whole tile is the target: a click on its padding, or on its description.
  const tile = c.locator('.him-option', { has: page.getByRole('checkbox', { name: 'Swift' }) });
  const box = await tile.boundingBox();
  await page.mouse.click(box.x + box.width - 4, box.y + box.height / 2);
  assert.equal(await c.getByRole('checkbox', { name: 'Swift' }).isChecked(), true);
  await c.getByText('hosted runners').click();
  assert.equal(await c.getByRole('radio', { name: 'GitHub Actions' }).isChecked(), true);

  // The recommended tile looks like any other until it is chosen; only the badge says it.
  const look = (name) =>
    c.locator('.him-option', { has: page.getByRole('radio', { name }) }).evaluate((el) => {
      const s = getComputedStyle(el);
      return `${s.borderTopColor} ${s.backgroundColor} ${s.borderTopWidth}`;
    });
  const rec = c.locator('.him-option', { has: page.getByRole('radio', { name: /Local runner/ }) });
  assert.match(await rec.locator('.him-rec').textContent(), /Recommended/);
  const plain = await c.locator('.him-option', { has: page.getByRole('checkbox', { name: 'Zig' }) }).evaluate((el) => {
    const s = getComputedStyle(el);
    return `${s.borderTopColor} ${s.backgroundColor} ${s.borderTopWidth}`;
  });
  assert.equal(await look(/Local runner/), plain, 'same border and fill as an unchosen tile');
  assert.notEqual(await look('GitHub Actions'), plain, 'a chosen tile looks chosen');

  // "Press Esc again" shows where the person is: in the bar that stays in sight.
  await page.evaluate(() => scrollTo(0, 0));
  await c.getByRole('checkbox', { name: 'Rust' }).focus();
  await page.keyboard.press('Escape');
  const escAgain = c.getByText('Press Esc again to decline.');
  await escAgain.waitFor();
  const seen = await escAgain.evaluate((el) => {
    const r = el.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, height: innerHeight };
  });
  assert.ok(seen.top >= 0 && seen.bottom <= seen.height, `"Press Esc again" is in sight: ${JSON.stringify(seen)}`);
  await c.getByText('Press Esc again to decline.').waitFor({ state: 'hidden' });

  await submit.click();
  const r = await q.result();
  assert.deepEqual(r.values, { lang: ['Go', 'Kotlin', 'Swift'], ci: 'gh' });
  await page.setViewportSize({ width: 400, height: 800 });
});

test('after answering: the notice echoes what was sent, never a password; Recent keeps it in storage.session and copies it as JSON', { timeout: STEP_MS }, async () => {
  const secret = 'pw-inbox-0042-secret';
  const q = ask('codex', 'ask_form', {
    title: 'Database login',
    allowNote: true,
    fields: [
      { name: 'user', type: 'text', label: 'User', required: true },
      { name: 'password', type: 'password', label: 'Password' },
      { name: 'tier', type: 'radio', label: 'Tier', options: [{ value: 'p', label: 'Production' }, { value: 's', label: 'Staging' }] },
    ],
  });
  const c = openCard();
  await c.getByLabel('User').waitFor();
  await armed();
  await c.getByLabel('User').fill('deploy');
  await c.getByLabel('Password').fill(secret);
  await c.getByRole('radio', { name: 'Staging' }).check();
  await c.getByLabel('Note (optional)').fill('rotate it next week');
  await c.getByRole('button', { name: 'Submit' }).click();
  assert.equal((await q.result()).values.password, secret, 'the agent that asked gets the password');

  const notice = page.locator('.notice', { hasText: 'Database login' });
  await notice.waitFor();
  assert.equal(
    await notice.locator('p').textContent(),
    '“Database login” (codex): Answer sent. You sent: User: deploy; Tier: Staging; 1 hidden (password); note: rotate it next week',
  );
  // One line, the rest in its tooltip: a long echo does not push the queue down.
  const { height, line, tooltip } = await notice.locator('p').evaluate((p) => ({
    height: p.getBoundingClientRect().height,
    line: parseFloat(getComputedStyle(p).lineHeight) || parseFloat(getComputedStyle(p).fontSize) * 1.5,
    tooltip: p.title,
  }));
  assert.ok(height < line * 1.5, `the notice is one line high (${height} px for a ${line} px line)`);
  assert.match(tooltip, /note: rotate it next week$/);
  const recent = page.locator('#recent');
  await recent.locator('summary').click();
  const item = recent.locator('.recent-item', { hasText: 'Database login' });
  assert.match(await item.textContent(), /codex · infra.*Database login.*User: deploy; Tier: Staging; 1 hidden \(password\)/);
  assert.ok(!(await page.content()).includes(secret), 'the password is nowhere on the page');
  const stored = await worker.evaluate(() => chrome.storage.session.get('recent'));
  assert.equal(stored.recent[0].title, 'Database login');
  assert.ok(!JSON.stringify(await worker.evaluate(() => chrome.storage.session.get(null))).includes(secret), 'nor in storage.session');
  assert.equal(
    JSON.stringify(await worker.evaluate(() => chrome.storage.local.get(null))),
    '{}',
    'nothing is kept beyond the session',
  );

  await recent.getByRole('button', { name: 'Copy as JSON' }).click();
  await recent.getByRole('button', { name: 'Copied' }).waitFor();
  const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
  assert.deepEqual(
    { ...copied[0], answered_at: typeof copied[0].answered_at },
    {
      question: 'Database login',
      agent: 'codex',
      project: 'infra',
      answered_at: 'string',
      action: 'submit',
      values: { user: 'deploy', tier: 's' },
      note: 'rotate it next week',
    },
  );
  assert.ok(!JSON.stringify(copied).includes(secret));
  assert.ok(copied.some((e) => e.question === 'Which database?'), 'the earlier answers of this session too');
});

test('Enter on the header of the Recent list opens the list and answers no open card', { timeout: STEP_MS }, async () => {
  const q = ask('codex', 'ask_confirm', { question: 'Drop the staging database?' });
  const c = openCard();
  await c.getByRole('heading', { name: 'Drop the staging database?' }).waitFor();
  await armed();
  const recent = page.locator('#recent');
  if (await recent.evaluate((d) => d.open)) await recent.locator('summary').click();
  await recent.locator('summary').focus();
  await page.keyboard.press('Enter');
  await until('the Recent list to open', () => recent.evaluate((d) => d.open));
  // The card is still waiting: a click on No is what answers it, with confirmed false.
  await c.getByRole('button', { name: 'No' }).click();
  assert.equal((await q.result()).confirmed, false);
});

test('the arrival sound: off at first; on, it plays once, then for a question that comes while the panel is out of focus, never in focus', { timeout: STEP_MS }, async () => {
  // Counts the notes the panel starts, through the Web Audio API it plays them with.
  await page.evaluate(() => {
    window.notes = 0;
    const start = AudioScheduledSourceNode.prototype.start;
    AudioScheduledSourceNode.prototype.start = function (...args) {
      window.notes += 1;
      return start.apply(this, args);
    };
  });
  const notes = () => page.evaluate(() => window.notes);
  // Playwright makes every page think it has the focus; the panel must see it go.
  const cdp = await context.newCDPSession(page);
  await cdp.send('Emulation.setFocusEmulationEnabled', { enabled: false });
  const elsewhere = await context.newPage();
  const lookAway = async () => {
    await elsewhere.bringToFront();
    await until('the panel to lose the focus', async () => !(await page.evaluate(() => document.hasFocus())));
  };
  const answerNo = async (title) => {
    const c = openCard();
    await c.getByRole('heading', { name: title }).waitFor();
    await armed();
    await c.getByRole('button', { name: 'No' }).click();
  };
  try {
    const sound = page.getByRole('button', { name: 'Sound' });
    assert.equal(await sound.getAttribute('aria-pressed'), 'false', 'off until the person turns it on');

    await lookAway();
    const silent = ask('codex', 'ask_confirm', { question: 'Rotate the logs?' });
    // The highlight is set after the chime would have started: no note by then, none at all.
    await page.locator('article.card[data-arrived]', { hasText: 'Rotate the logs?' }).waitFor();
    assert.equal(await notes(), 0, 'no sound while it is off');
    await page.bringToFront();
    await answerNo('Rotate the logs?');
    assert.equal((await silent.result()).confirmed, false);

    await sound.click();
    assert.equal(await sound.getAttribute('aria-pressed'), 'true');
    await until('the sample chime', async () => (await notes()) === 2);
    assert.deepEqual(await worker.evaluate(() => chrome.storage.local.get(null)), { sound: true });

    await lookAway();
    const heard = ask('claude', 'ask_confirm', { question: 'Run the migration?' });
    await until('the chime of a question out of focus', async () => (await notes()) === 4);
    await page.bringToFront();
    await answerNo('Run the migration?');
    assert.equal((await heard.result()).confirmed, false);

    assert.ok(await page.evaluate(() => document.hasFocus()));
    const inFocus = ask('codex', 'ask_confirm', { question: 'Clear the cache?' });
    await answerNo('Clear the cache?');
    assert.equal((await inFocus.result()).confirmed, false);
    assert.equal(await notes(), 4, 'no sound for a question that comes while the person is looking');

    await sound.click();
    assert.equal(await sound.getAttribute('aria-pressed'), 'false');
    await until('the switch to be forgotten', async () => JSON.stringify(await worker.evaluate(() => chrome.storage.local.get(null))) === '{}');
  } finally {
    await cdp.send('Emulation.setFocusEmulationEnabled', { enabled: true });
    await elsewhere.close();
    await page.bringToFront();
  }
});

/**
 * In the page: every visible control whose border shows where it is, whose border has less
 * than 3:1 against the colour outside it or its own fill; every target under 24 × 24 px; every
 * visible text under 12 px. Returns the failures as strings.
 */
function measure() {
  const parse = (c) => {
    const m = c.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const [r, g, b, a = 1] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return { r, g, b, a };
  };
  const lum = ({ r, g, b }) => {
    const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const ratio = (x, y) => {
    const [hi, lo] = [lum(x), lum(y)].sort((p, q) => q - p);
    return (hi + 0.05) / (lo + 0.05);
  };
  const backdrop = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0.5) return c;
    }
    return parse(getComputedStyle(document.documentElement).backgroundColor) ?? { r: 255, g: 255, b: 255 };
  };
  const visible = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const name = (el) => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}[${(el.textContent || el.getAttribute('aria-label') || '').trim().slice(0, 30)}]`;
  const failures = [];
  const checked = { borders: 0, targets: 0, texts: 0 };

  const bordered = document.querySelectorAll(
    'input[type="text"], input[type="email"], input[type="url"], input[type="password"], input[type="search"], textarea, select, .him-option, .nav-step',
  );
  for (const el of bordered) {
    if (!visible(el) || el.matches(':disabled') || el.closest('fieldset:disabled')) continue;
    const border = parse(getComputedStyle(el).borderTopColor);
    const outside = backdrop(el.parentElement);
    const own = parse(getComputedStyle(el).backgroundColor);
    const r1 = ratio(border, outside);
    const r2 = own && own.a > 0.5 ? ratio(border, own) : r1;
    checked.borders += 1;
    if (Math.min(r1, r2) < 3) failures.push(`border ${name(el)}: ${Math.min(r1, r2).toFixed(2)}:1`);
  }

  // Radio buttons and checkboxes are picked by their whole tile or row; links and buttons
  // inside a sentence (the summary of problems) are inline targets, which WCAG 2.5.8 exempts.
  const targets = document.querySelectorAll(
    'button, summary, select, textarea, input:not([type="radio"]):not([type="checkbox"]), .him-option, .him-check',
  );
  for (const el of targets) {
    if (!visible(el) || el.closest('.him-summary')) continue;
    const r = el.getBoundingClientRect();
    checked.targets += 1;
    if (r.width < 24 || r.height < 24) failures.push(`target ${name(el)}: ${r.width.toFixed(1)}×${r.height.toFixed(1)}`);
  }

  for (const el of document.body.querySelectorAll('*')) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !visible(el) || el.closest('.him-visually-hidden')) continue;
    const size = Number.parseFloat(getComputedStyle(el).fontSize);
    checked.texts += 1;
    if (size < 12) failures.push(`text ${name(el)}: ${size}px`);
  }
  return { failures, checked };
}

async function axeViolations() {
  await page.evaluate(`${AXE_SOURCE};0`);
  const results = await page.evaluate(() =>
    globalThis.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] } }),
  );
  return results.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

test('borders of controls 3:1, targets 24 px, small text 12 px, and axe-core, in both themes at 320 and 400 px', { timeout: 60_000 }, async () => {
  // A full panel: an open form with every kind of field (an error showing), questions of
  // both agents waiting as rows, a long option list, notices and Recent.
  const form = ask('claude', 'ask_form', {
    title: 'Release checklist',
    description: 'Check **before** you tag.',
    allowNote: true,
    timeout_ms: 25_000,
    fields: [
      { name: 'owner', type: 'text', label: 'Owner', required: true },
      { name: 'mail', type: 'email', label: 'Contact email' },
      { name: 'token', type: 'password', label: 'Token' },
      { name: 'count', type: 'number', label: 'Replicas', min: 1, max: 5 },
      { name: 'notes', type: 'textarea', label: 'Notes' },
      { name: 'region', type: 'select', label: 'Region', options: ['eu', 'us'] },
      { name: 'size', type: 'radio', label: 'Size', options: [{ value: 's', label: 'Small' }, { value: 'm', label: 'Medium', recommended: true }] },
      { name: 'agree', type: 'checkbox', label: 'I have read the runbook' },
      { name: 'now', type: 'confirm', label: 'Tag right away?' },
      { name: 'flags', type: 'multi_select', label: 'Flags', options: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'] },
    ],
  });
  const others = [
    ask('codex', 'ask_text', { question: 'Which changelog heading?', timeout_ms: 300_000 }),
    ask('claude', 'ask_confirm', { question: 'Publish the docs too?', timeout_ms: 400_000 }),
  ];
  await inboxCard('Publish the docs too?').waitFor();
  await until('the checklist to be open', async () => (await openTitle()) === 'Release checklist');
  const c = openCard();
  await armed();
  await c.getByRole('button', { name: 'Submit' }).click();
  await c.getByText('This field is required.').waitFor();

  const shots = [];
  for (const width of [320, 400]) {
    for (const scheme of ['light', 'dark']) {
      await page.setViewportSize({ width, height: 900 });
      await page.emulateMedia({ colorScheme: scheme });
      await new Promise((r) => setTimeout(r, 300)); // past the colour transitions
      const { failures, checked } = await page.evaluate(measure);
      assert.deepEqual(failures, [], `${scheme} at ${width} px`);
      // What was measured: the open form's controls and option tiles, the rows, the header.
      assert.ok(checked.borders >= 20 && checked.targets >= 25 && checked.texts >= 40, JSON.stringify(checked));
      assert.deepEqual(await axeViolations(), [], `axe, ${scheme} at ${width} px`);
      // The count and the rows do not overflow the narrow panel.
      assert.equal(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth), true, `no sideways scroll at ${width} px`);
      if (SCREENSHOTS) shots.push({ width, scheme });
    }
  }
  if (SCREENSHOTS) {
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.locator('#recent').evaluate((el) => (el.open = true));
    for (const { width, scheme } of shots) {
      // As tall as the page, so the Submit bar sits where it belongs rather than stuck halfway.
      await page.setViewportSize({ width, height: 900 });
      const height = await page.evaluate(() => document.documentElement.scrollHeight);
      await page.setViewportSize({ width, height });
      await page.emulateMedia({ colorScheme: scheme });
      await new Promise((r) => setTimeout(r, 300));
      await page.screenshot({ path: path.join(SCREENSHOTS, `panel-${scheme}-${width}.png`) });
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 400, height: 800 });
  // The checklist times out; the others are declined with Esc twice.
  assert.equal((await form.result()).status, 'timeout');
  for (const q of others) {
    await until('a card to be open', async () => (await openCard().count()) > 0 && !(await openCard().getAttribute('data-closed')));
    await armed();
    await page.keyboard.press('Escape');
    await page.keyboard.press('Escape');
    assert.equal((await q.result()).status, 'declined');
  }
});

// The panel's own words in a German and in a Chinese browser (tests/e2e/languages.test.mjs
// covers the words of lib/ and the worker): `--lang` is what sets chrome.i18n's language.
const LANGUAGES = [
  { name: 'German', flag: 'de', lang: 'de', retry: 'Erneut versuchen', link: 'Nicht verbunden', main: 'Fragen' },
  { name: 'Simplified Chinese', flag: 'zh-CN', lang: 'zh-CN', retry: '重试', link: '未连接', main: '问题' },
];

for (const language of LANGUAGES) {
  test(`in a ${language.name} browser the panel speaks ${language.name}, from _locales`, { timeout: STEP_MS }, async () => {
    const profile = mkdtempSync(path.join(tmp, `profile-${language.flag}-`));
    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [`--disable-extensions-except=${EXT_DIR}`, `--load-extension=${EXT_DIR}`, '--no-first-run', `--lang=${language.flag}`],
    });
    try {
      browser.serviceWorkers()[0] ?? (await browser.waitForEvent('serviceworker'));
      const p = await browser.newPage();
      await p.goto(PANEL_URL);
      // No host manifest in this profile: the panel says so, in that language.
      await p.getByRole('button', { name: language.retry }).waitFor({ timeout: 10_000 });
      assert.equal(await p.locator('#link').textContent(), language.link);
      assert.equal(await p.evaluate(() => document.documentElement.lang), language.lang);
      assert.equal(await p.getByRole('main').getAttribute('aria-label'), language.main);
    } finally {
      await browser.close();
    }
  });
}

test('the worker and the panel logged no error or warning throughout', () => {
  assert.deepEqual(problems, []);
});
