// The loopback form (HIM_FALLBACK=http) answered in real Chromium as a person would: `him
// ask` with no browser extension connected opens the form through $BROWSER (here a script
// that records the URL), and the person fills it in with the keyboard and the mouse.
//
// Needs HIM_BIN (the him binary; `cargo test` sets it), Debian's Chromium (or HIM_CHROMIUM)
// and playwright-core in tests/e2e/node_modules.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const HIM_BIN = process.env.HIM_BIN;
const CHROMIUM = process.env.HIM_CHROMIUM ?? '/usr/lib/chromium/chromium';
const STEP_MS = 20_000;

let tmp;
let browser;

before(async () => {
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary');
  tmp = mkdtempSync(path.join(tmpdir(), 'him-loopback-'));
  chmodSync(tmp, 0o700);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
});

after(async () => {
  await browser?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function until(what, fn, ms = STEP_MS) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const value = await fn();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Runs `him ask <args>` with the loopback form; resolves its URL and, later, its result. */
async function ask(name, args) {
  const dir = path.join(tmp, name);
  const runtime = path.join(dir, 'runtime');
  const urlFile = path.join(dir, 'url');
  const opener = path.join(dir, 'browser.sh');
  await import('node:fs/promises').then((fs) => fs.mkdir(runtime, { recursive: true, mode: 0o700 }));
  writeFileSync(opener, `#!/bin/sh\nprintf '%s' "$1" > '${urlFile}.tmp' && mv '${urlFile}.tmp' '${urlFile}'\n`);
  chmodSync(opener, 0o755);
  const child = spawn(HIM_BIN, ['ask', ...args], {
    env: { ...process.env, HIM_RUNTIME_DIR: runtime, HIM_FALLBACK: 'http', BROWSER: opener, HIM_LOG: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const result = new Promise((resolve, reject) => {
    child.on('exit', () => {
      try {
        resolve(JSON.parse(stdout));
      } catch (err) {
        reject(new Error(`him ask printed no result: ${err}\nstdout: ${stdout}\nstderr: ${stderr}`));
      }
    });
  });
  const url = await until('the form to be opened', () => existsSync(urlFile) && readFileSync(urlFile, 'utf8'));
  return { url, result, child };
}

/**
 * A page that fails the test on any script error or policy violation, once its form has been
 * on screen long enough to take keys and clicks (lib/arming.js; the test "a key sent as the
 * form is drawn" shows what they do before). `before(page)` runs before it is loaded.
 */
async function open(url, before = async () => {}) {
  const page = await browser.newPage();
  await before(page);
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`console ${msg.type()}: ${msg.text()}`);
  });
  const response = await page.goto(url);
  assert.equal(response.status(), 200);
  assert.match(response.headers()['content-security-policy'], /default-src 'none'/);
  await page.locator('form.him-form[data-armed]').waitFor();
  return { page, problems };
}

const DEPLOY = {
  title: 'Deploy the **billing** service',
  description: 'Pick where and how. See the [runbook](https://example.com/runbook).',
  submitLabel: 'Deploy',
  allowNote: true,
  fields: [
    { name: 'owner', type: 'text', label: 'Owner', required: true, placeholder: 'your name' },
    { name: 'contact', type: 'email', label: 'Contact email', required: true },
    { name: 'replicas', type: 'number', label: 'Replicas', min: 1, max: 9 },
    {
      name: 'env',
      type: 'radio',
      label: 'Environment',
      required: true,
      options: [
        { label: 'staging', description: 'safe to break' },
        { label: 'production', recommended: true },
        { label: 'canary' },
      ],
    },
    { name: 'suites', type: 'multi_select', label: 'Suites to run', options: ['unit', 'e2e', 'bench'], min: 1, max: 2 },
    { name: 'notify', type: 'checkbox', label: 'Notify the team' },
  ],
};

test('a person fills in the loopback form with keyboard and mouse, fixes a mistake, and submits', async () => {
  const { url, result } = await ask('submit', ['form', JSON.stringify(DEPLOY)]);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/q\/[0-9a-f]{32}$/);
  const { page, problems } = await open(url);

  // The question renders from the shared form code: Markdown title, description link.
  await page.getByRole('heading', { name: 'Deploy the billing service' }).waitFor();
  // Who asks and the time left, as a panel card says them.
  assert.match(await page.locator('#him-asker').textContent(), /^him ask · [^ ]+ asks you/);
  const shownLeft = await page.getByRole('timer').textContent();
  assert.match(shownLeft, /^\d+:\d\d left$|^\d+ h( \d+ min)? left$/);
  assert.equal(await page.getByRole('link', { name: 'runbook' }).getAttribute('href'), 'https://example.com/runbook');
  // The first field has focus: type as a person would.
  await page.keyboard.type('Ada');
  await page.keyboard.press('Tab');
  await page.keyboard.type('ada-at-example.com');
  await page.getByLabel('Replicas').fill('3');
  // Number keys pick an option once focus is in the group (not in a text box).
  await page.getByRole('radio', { name: /staging/ }).focus();
  await page.keyboard.press('2');
  assert.equal(await page.getByRole('radio', { name: /production/ }).isChecked(), true);
  await page.getByRole('checkbox', { name: 'unit' }).check();
  await page.getByRole('checkbox', { name: 'e2e' }).check();
  await page.getByLabel('Notify the team').check();
  await page.getByLabel('Note (optional)').fill('after lunch');

  // The bad email is caught on the page, as in the panel; nothing is sent yet.
  await page.getByRole('button', { name: 'Deploy' }).click();
  await page.getByText('Enter an email address').waitFor();
  assert.equal(await page.getByLabel('Contact email').evaluate((el) => el === document.activeElement), true);
  await page.getByLabel('Contact email').fill('ada@example.com');
  // Enter submits from a text box.
  await page.getByLabel('Contact email').press('Enter');

  await page.getByText('your answer was sent').waitFor({ timeout: STEP_MS });
  const answer = await result;
  assert.equal(answer.status, 'answered', JSON.stringify(answer));
  assert.equal(answer.via, 'http');
  assert.equal(answer.form_url, url);
  assert.deepEqual(answer.values, {
    owner: 'Ada',
    contact: 'ada@example.com',
    replicas: 3,
    env: 'production',
    suites: ['unit', 'e2e'],
    notify: true,
  });
  assert.equal(answer.free_text, 'after lunch');
  assert.deepEqual(problems, []);

  // The form gives way to what was sent, and the tab says it is done.
  const sent = page.locator('section.sent');
  await sent.getByRole('heading', { name: 'Sent to him ask' }).waitFor();
  assert.equal(await page.locator('form').count(), 0);
  assert.equal(await page.title(), 'him: done — you can close this tab');
  assert.deepEqual(await page.evaluate(() => history.state), { him: 'done' });
  // The form is gone with the answer and the port with it: a reload cannot reach him, and
  // the browser's own error page is all it can show (see docs/fallbacks.md).
  await assert.rejects(page.reload(), /ERR_CONNECTION_REFUSED/);
  await page.close();
});

test('Escape twice declines, and the page says so', async () => {
  const { url, result } = await ask('decline', ['confirm', 'Delete the **old** branch?']);
  const { page, problems } = await open(url);
  await page.getByRole('button', { name: 'Yes', exact: true }).waitFor();
  await page.keyboard.press('Escape');
  await page.getByText('Press Esc again to decline.').waitFor({ timeout: STEP_MS });
  await page.keyboard.press('Escape');
  await page.getByText('You declined').waitFor({ timeout: STEP_MS });
  const answer = await result;
  assert.equal(answer.status, 'declined', JSON.stringify(answer));
  assert.equal(answer.via, 'http');
  assert.deepEqual(problems, []);
  await page.close();
});

test('a long list on the loopback page is compact rows with a filter, and a click anywhere on a tile picks, as in the panel', async () => {
  const regions = ['eu-west-1', 'eu-west-2', 'eu-central-1', 'eu-north-1', 'us-east-1', 'us-east-2', 'us-west-1', 'us-west-2', 'ap-south-1', 'ap-east-1'];
  const { url, result } = await ask('long', ['choice', 'Which region?', ...regions]);
  const { page, problems } = await open(url);
  await page.getByRole('radio', { name: 'eu-west-1' }).waitFor();
  assert.equal(await page.locator('.him-options.him-compact').count(), 1);
  await page.getByRole('radio', { name: 'eu-west-1' }).focus();
  await page.keyboard.type('us-w');
  const filter = page.getByRole('searchbox', { name: 'Filter the options of Which region?' });
  assert.equal(await filter.inputValue(), 'us-w');
  assert.deepEqual(await page.locator('.him-option:visible .him-option-label').allTextContents(), ['us-west-1', 'us-west-2']);
  await filter.fill('');
  const tile = page.locator('.him-option', { has: page.getByRole('radio', { name: 'ap-east-1' }) });
  const box = await tile.boundingBox();
  await page.mouse.click(box.x + box.width - 3, box.y + box.height / 2);
  assert.equal(await page.getByRole('radio', { name: 'ap-east-1' }).isChecked(), true);
  await page.getByRole('button', { name: 'Submit' }).click();
  const answer = await result;
  assert.equal(answer.answer, 'ap-east-1', JSON.stringify(answer));
  assert.deepEqual(problems, []);
  await page.close();
});

test('a click lands where the person aimed even when leaving a field clears its error', async () => {
  // Leaving a field that was wrong judges it again and takes its message away, which moves
  // everything below it up. Done at the press of the button, the release would then land on
  // something else and the click be lost: the first click after a fix did nothing.
  const form = {
    title: 'Who owns it?',
    fields: [
      { name: 'owner', type: 'text', label: 'Owner', required: true },
      { name: 'notify', type: 'checkbox', label: 'Notify the team' },
      { name: 'note', type: 'text', label: 'Anything else' },
    ],
  };
  const { url, result } = await ask('shift', ['form', JSON.stringify(form)]);
  const { page, problems } = await open(url);
  const owner = page.getByRole('textbox', { name: /^Owner/ });
  await owner.waitFor();
  await page.getByRole('button', { name: 'Submit' }).click();
  await until('the required error', async () => (await owner.getAttribute('aria-invalid')) === 'true');
  await owner.focus();
  await page.keyboard.type('Ada');
  const notify = page.getByRole('checkbox', { name: 'Notify the team' });
  const before = await notify.boundingBox();
  await page.mouse.click(before.x + before.width / 2, before.y + before.height / 2);
  assert.equal(await notify.isChecked(), true, 'the click on the checkbox was lost');
  await until('the error to go', async () => (await owner.getAttribute('aria-invalid')) !== 'true');
  const submit = await page.getByRole('button', { name: 'Submit' }).boundingBox();
  await page.mouse.click(submit.x + submit.width / 2, submit.y + submit.height / 2);
  const answer = await result;
  assert.equal(answer.status, 'answered', JSON.stringify(answer));
  assert.equal(answer.values.owner, 'Ada');
  assert.equal(answer.values.notify, true);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a key sent as the form is drawn decides nothing, nor one 40, 120 or 250 ms later; once the page marks it armed, a key decides', async (t) => {
  const { url, result } = await ask('arming', ['confirm', 'Delete the production database backup from March?']);
  // In the page, before its scripts run: as soon as the form is in the page, a Y on whatever
  // has the focus, in that same task; again 40, 120 and 250 ms later while the page's clock
  // says the form cannot be armed yet (under 400 ms since it was drawn; it arms 500 ms after
  // it is first found in view, which is later still).
  const trap = (page) =>
    page.addInitScript(() => {
      const seen = (window.trap = { acts: [], drawnAt: null, armedAt: null });
      const press = (label) => {
        const form = document.querySelector('form.him-form');
        const at = performance.now();
        if (at - seen.drawnAt >= 400) return seen.acts.push({ label, skipped: true });
        const target = document.activeElement;
        const event = new KeyboardEvent('keydown', { key: 'y', bubbles: true, cancelable: true });
        target.dispatchEvent(event);
        seen.acts.push({ label, inForm: form.contains(target), armed: form.hasAttribute('data-armed'), prevented: event.defaultPrevented });
      };
      new MutationObserver((_, watch) => {
        const form = document.querySelector('form.him-form');
        if (!form) return;
        if (seen.drawnAt === null) {
          seen.drawnAt = performance.now();
          press('in the task that drew it');
          for (const ms of [40, 120, 250]) setTimeout(() => press(`${ms} ms later`), ms);
        }
        if (form.hasAttribute('data-armed')) {
          seen.armedAt = performance.now();
          watch.disconnect();
        }
      }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-armed'] });
    });
  const { page, problems } = await open(url, trap);
  const seen = await page.evaluate(() => window.trap);
  const made = seen.acts.filter((a) => !a.skipped);
  assert.equal(made[0]?.label, 'in the task that drew it', JSON.stringify(seen.acts));
  for (const act of made) assert.deepEqual(act, { label: act.label, inForm: true, armed: false, prevented: true });
  const waited = Math.round(seen.armedAt - seen.drawnAt);
  assert.ok(waited >= 500, `armed ${waited} ms after it was drawn`);
  t.diagnostic(`${made.length} early keys refused; the form took keys ${waited} ms after it was drawn`);

  await page.keyboard.press('n');
  const answer = await result;
  assert.equal(answer.status, 'answered', JSON.stringify(answer));
  assert.equal(answer.confirmed, false, 'only the key after the form was seen answered');
  assert.deepEqual(problems, []);
  await page.close();
});

test('a choice is made with a number key and Enter alone', async () => {
  const { url, result } = await ask('choice', ['choice', 'Which database?', 'Postgres', 'SQLite', 'DuckDB']);
  const { page, problems } = await open(url);
  await page.getByRole('radio', { name: /SQLite/ }).waitFor();
  await page.keyboard.press('3');
  await page.keyboard.press('Enter');
  const answer = await result;
  assert.equal(answer.status, 'answered', JSON.stringify(answer));
  assert.equal(answer.answer, 'DuckDB');
  assert.deepEqual(problems, []);
  await page.close();
});

test('an answer whose post is refused or finds the form busy is tried again, not reported closed', async () => {
  const { url, result } = await ask('retry', ['text', 'Which branch?']);
  const { page, problems } = await open(url);
  // The first post never reaches him (as when the port is crowded), the second finds every
  // place taken (503); the third goes through.
  let posts = 0;
  await page.route(url, async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    posts += 1;
    if (posts === 1) return route.abort('connectionrefused');
    if (posts === 2) return route.fulfill({ status: 503, contentType: 'application/json', body: '{"message":"busy"}' });
    return route.continue();
  });
  await page.getByRole('textbox').fill('main');
  await page.keyboard.press('Enter');
  await page.getByText('your answer was sent').waitFor({ timeout: STEP_MS });
  assert.equal(posts, 3);
  const answer = await result;
  assert.equal(answer.status, 'answered', JSON.stringify(answer));
  assert.equal(answer.answer, 'main');
  assert.deepEqual(problems.filter((p) => !/Failed to load resource|503/.test(p)), []);
});

test('the sent answer is echoed as text, never a password', async () => {
  const login = {
    title: 'Log in to staging',
    allowNote: true,
    fields: [
      { name: 'user', type: 'text', label: 'User', required: true },
      { name: 'pw', type: 'password', label: 'Password', required: true },
      { name: 'env', type: 'select', label: 'Where', options: [{ label: 'Staging (eu)', value: 'stg' }, 'prod'] },
      { name: 'remember', type: 'checkbox', label: 'Remember me' },
    ],
  };
  const { url, result } = await ask('echo', ['form', JSON.stringify(login)]);
  const { page, problems } = await open(url);
  const secret = 'hunter2-correct-horse';
  await page.getByLabel('User').fill('<b>ada</b>');
  await page.getByLabel('Password').fill(secret);
  await page.getByLabel('Where').selectOption({ label: 'Staging (eu)' });
  await page.getByLabel('Note (optional)').fill('from the train');
  await page.getByRole('button', { name: 'Submit' }).click();
  const sent = page.locator('section.sent');
  await sent.getByRole('heading', { name: 'Sent to him ask' }).waitFor({ timeout: STEP_MS });
  const rows = await sent.locator('dt, dd').allTextContents();
  assert.deepEqual(rows, [
    'User', '<b>ada</b>', // agent and person text as text, not markup
    'Password', '••••',
    'Where', 'Staging (eu)',
    'Remember me', 'No',
    'Note', 'from the train',
  ]);
  assert.equal(await sent.locator('b').count(), 0);
  assert.ok(!(await page.content()).includes(secret), 'the password is on the page');
  const answer = await result;
  assert.equal(answer.status, 'answered', JSON.stringify(answer));
  assert.equal(answer.values.pw, secret);
  assert.equal(answer.values.env, 'stg');
  assert.deepEqual(problems, []);
  await page.close();
});

test("the page's title and the sent answer's echo read the agent's Markdown as plain text", async () => {
  const form = {
    title: 'Deploy the **billing** service to `prod/*`?',
    fields: [{ name: 'team', type: 'text', label: 'Your **team** (`owner_name`)', required: true }],
  };
  const { url, result } = await ask('plain', ['form', JSON.stringify(form)]);
  const { page, problems } = await open(url);
  assert.equal(await page.title(), 'him: Deploy the billing service to prod/*?');
  await page.getByLabel('Your team (owner_name)').fill('payments');
  await page.getByRole('button', { name: 'Submit' }).click();
  const sent = page.locator('section.sent');
  await sent.getByRole('heading', { name: 'Sent to him ask' }).waitFor({ timeout: STEP_MS });
  assert.deepEqual(await sent.locator('dt, dd').allTextContents(), ['Your team (owner_name)', 'payments']);
  assert.equal((await result).status, 'answered');
  assert.deepEqual(problems, []);
  await page.close();
});

test('the countdown reaching zero says the question timed out and disables the form', async () => {
  const { url, result } = await ask('expire', ['--timeout-ms', '3000', 'text', 'Quick?']);
  const { page, problems } = await open(url);
  const box = page.getByRole('textbox');
  await box.waitFor();
  assert.match(await page.getByRole('timer').textContent(), /^[1-3] s left$/);
  await page.getByText('This question timed out').waitFor({ timeout: STEP_MS });
  assert.equal(await box.isDisabled(), true);
  assert.equal(await page.getByRole('button', { name: 'Submit' }).isDisabled(), true);
  assert.equal(await page.evaluate(() => document.body.dataset.himDone), 'timeout');
  const answer = await result;
  assert.equal(answer.status, 'timeout', JSON.stringify(answer));
  assert.deepEqual(problems, []);
  await page.close();
});

/** Like open(), in a browser context set to `locale`, which Chromium sends as Accept-Language. */
async function openIn(locale, url) {
  const context = await browser.newContext({ locale });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`console ${msg.type()}: ${msg.text()}`);
  });
  const response = await page.goto(url);
  assert.equal(response.status(), 200);
  assert.match(response.request().headers()['accept-language'], new RegExp(`^${locale}`));
  await page.locator('form.him-form[data-armed]').waitFor();
  return { page, problems, context };
}

test('a browser set to German gets the page in German, errors and answer included', async () => {
  const release = {
    title: 'Release',
    allowNote: true,
    fields: [
      { name: 'version', type: 'text', label: 'Version', required: true },
      { name: 'platforms', type: 'multi_select', label: 'Platforms', options: ['linux', 'mac', 'windows'], min: 1, max: 2 },
    ],
  };
  const { url, result } = await ask('german', ['form', JSON.stringify(release)]);
  const { page, problems, context } = await openIn('de-DE', url);
  await page.getByRole('heading', { name: 'Release' }).waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'de');
  assert.match(await page.locator('#him-asker').textContent(), /^him ask · [^ ]+ hat eine Frage an Sie\. Sie können hier einmal antworten\.$/);
  assert.match(await page.getByRole('timer').textContent(), /^noch \d+:\d\d$/);
  await page.getByText('Wählen Sie 1 bis 2 aus.').waitFor();
  await page.getByLabel('Notiz (optional)').waitFor();
  await page.getByRole('button', { name: 'Ablehnen' }).waitFor();

  // Sent empty: the messages and the summary above Senden are German too.
  await page.getByRole('button', { name: 'Senden' }).click();
  await page.getByText('Dieses Feld ist erforderlich.').waitFor();
  await page.getByText('Wählen Sie mindestens 1 Option.').waitFor();
  assert.match(await page.locator('.him-summary').textContent(), /^2 Felder müssen korrigiert werden: /);

  await page.getByLabel('Version').fill('2.0');
  // Leaving the field clears its message, and what is below moves up: leave it first.
  await page.keyboard.press('Tab');
  await page.getByRole('checkbox', { name: 'linux' }).check();
  await page.getByRole('button', { name: 'Senden' }).click();
  const sent = page.locator('section.sent');
  await sent.getByRole('heading', { name: 'An him ask gesendet' }).waitFor({ timeout: STEP_MS });
  await sent.getByText('Ihre Antwort wurde an den Agenten gesendet. Sie können diesen Tab schließen.').waitFor();
  assert.equal(await page.title(), 'him: erledigt – Sie können diesen Tab schließen');
  const answer = await result;
  assert.equal(answer.status, 'answered', JSON.stringify(answer));
  assert.deepEqual(answer.values, { version: '2.0', platforms: ['linux'] });
  assert.deepEqual(problems, []);
  await context.close();
});

test('a browser set to Chinese gets the page in Simplified Chinese; a yes/no is answered with Y', async () => {
  const { url, result } = await ask('chinese', ['confirm', 'Deploy now?']);
  const { page, problems, context } = await openIn('zh-CN', url);
  await page.getByRole('button', { name: '是', exact: false }).waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN');
  await page.getByRole('button', { name: '否', exact: false }).waitFor();
  assert.match(await page.locator('.him-hint').textContent(), /Esc Esc 拒绝/);
  assert.match(await page.locator('#him-asker').textContent(), /^him ask · [^ ]+ 向你提问。/);
  assert.match(await page.getByRole('timer').textContent(), /^剩余 \d+:\d\d$/);
  await page.keyboard.press('Escape');
  await page.getByText('再按一次 Esc 即可拒绝。').waitFor({ timeout: STEP_MS });
  await page.keyboard.press('y');
  const sent = page.locator('section.sent');
  await sent.getByRole('heading', { name: '已发送给 him ask' }).waitFor({ timeout: STEP_MS });
  assert.equal(await sent.locator('dd').first().textContent(), '是');
  const answer = await result;
  assert.equal(answer.status, 'answered', JSON.stringify(answer));
  assert.equal(answer.confirmed, true);
  assert.deepEqual(problems, []);
  await context.close();
});
