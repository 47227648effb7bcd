// The extension in real Chromium started in German, then in Chinese: the words of lib/ and
// the worker come from _locales in the browser's language. An agent on the real host's
// socket asks; the person answers in the panel page.
//
// What makes Chromium's extension i18n pick a language on Linux (verified with Debian's
// Chromium 148, headless, only en-US.pak installed): `--lang=<tag>` does, for
// chrome.i18n.getMessage and __MSG_…__ in the manifest, even though the browser's own UI
// stays English; LANGUAGE, LANG and LC_ALL do not, nor does Playwright's `locale`, which
// only sets navigator.language and Accept-Language.
//
// Needs HIM_BIN (the him binary; `cargo test` sets it) and Debian's Chromium (or HIM_CHROMIUM).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { rawAgent } from './rawagent.mjs';
import { PANEL_URL, launchWithExtension } from './browser.mjs';

const HIM_BIN = process.env.HIM_BIN;
const CHROMIUM = process.env.HIM_CHROMIUM ?? '/usr/lib/chromium/chromium';
const STEP_MS = 20_000;

async function until(what, fn, ms = STEP_MS) {
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

/** Chromium with the extension, its UI language `lang`, and the real host it can start. */
async function launch(lang) {
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  const { tmp, runtimeDir, context, worker, problems } = await launchWithExtension({
    himBin: HIM_BIN,
    chromiumPath: CHROMIUM,
    prefix: `him-lang-${lang}-`,
    args: [`--lang=${lang}`, '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
  const page = await context.newPage();
  await page.goto(PANEL_URL);
  // The worker starts the host, which listens for agents: then `him ask` finds it.
  const socket = await until('the host to listen', () =>
    readdirSync(path.join(runtimeDir, 'hosts')).find((n) => n.endsWith('.sock')),
  );
  return {
    worker,
    page,
    problems,
    /** An agent that said hello on the host's socket. */
    async agent() {
      const agent = rawAgent(path.join(runtimeDir, 'hosts', socket));
      await agent.connected;
      agent.send({ type: 'hello', protocol: 1, agent: { name: 'codex' }, project: 'demo', pid: process.pid });
      await agent.next((m) => m.type === 'welcome');
      return agent;
    },
    async close() {
      await context.close().catch(() => {});
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/**
 * One question asked and answered in the panel of a browser in `lang`; `words` are what lib/
 * and the worker must say there.
 */
async function answerIn(lang, words) {
  const browser = await launch(lang);
  try {
    const { page, worker } = browser;
    assert.equal(await worker.evaluate(() => chrome.i18n.getMessage('extensionName')), words.name);
    const agent = await browser.agent();
    const id = randomBytes(16).toString('hex');
    const form = {
      title: 'Release',
      fields: [
        { name: 'version', type: 'text', label: 'Version', required: true },
        { name: 'count', type: 'number', label: 'Count', min: 1, max: 9 },
      ],
    };
    // Two hours, so the time left is in hours: formatTimeLeft's units are words too.
    agent.send({ type: 'ask', id, form, timeout_ms: 7_200_000, asked_at_ms: Date.now() });
    const card = page.locator('article.card', { has: page.getByRole('heading', { name: 'Release' }) });
    await card.waitFor({ timeout: STEP_MS });
    // Seen long enough to take keys and clicks (lib/arming.js).
    await card.locator('.him-form[data-armed]').waitFor();
    assert.match(await card.locator('.card-head').textContent(), words.hours);
    await card.getByRole('button', { name: words.decline, exact: true }).waitFor();
    await card.getByText(words.bounds, { exact: true }).waitFor();
    assert.match(await card.locator('.him-hint').textContent(), words.hint);
    assert.equal(await worker.evaluate(() => chrome.action.getTitle({})), words.badge);

    // Submit empty: the field says what is wrong, in the language.
    await card.getByRole('button', { name: words.submit, exact: true }).click();
    await card.getByText(words.required, { exact: true }).waitFor();
    await card.getByLabel('Version').fill('2.0');
    // Enter, not a click: leaving the field clears its message and moves Submit up under
    // the pointer between press and release.
    await card.getByLabel('Version').press('Enter');
    const answer = await agent.next((m) => m.type === 'answer' && m.id === id, STEP_MS);
    assert.equal(answer.action, 'submit');
    assert.deepEqual(answer.values, { version: '2.0' });
    // The notice of what happened to it is queue.js's.
    await page.locator('.notice', { hasText: words.sent }).waitFor({ timeout: STEP_MS });
    assert.deepEqual(browser.problems, []);
    agent.close();
  } finally {
    await browser.close();
  }
}

test('Chromium in German: the card, its checks, the badge and the notice are German', { timeout: 60_000 }, () =>
  answerIn('de', {
    name: 'him: menschliche Eingaben für MCP',
    hours: /(1 Std\. 59 Min\.|2 Std\.)/,
    decline: 'Ablehnen',
    submit: 'Senden',
    bounds: 'Eine Zahl von 1 bis 9.',
    hint: /^Enter zum Senden · Esc Esc zum Ablehnen$/,
    badge: 'him: 1 Frage wartet',
    required: 'Dieses Feld ist erforderlich.',
    sent: 'Antwort gesendet.',
  }));

test('Chromium in Simplified Chinese: the same, in Chinese', { timeout: 60_000 }, () =>
  answerIn('zh-CN', {
    name: 'him：MCP 人工输入',
    hours: /(1 小时 59 分钟|2 小时)/,
    decline: '拒绝',
    submit: '提交',
    bounds: '介于 1 和 9 之间的数字。',
    hint: /^Enter 发送 · Esc Esc 拒绝$/,
    badge: 'him：1 个问题待回答',
    required: '此项为必填。',
    sent: '回答已发送。',
  }));
