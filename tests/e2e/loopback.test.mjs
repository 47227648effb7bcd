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

/** A page that fails the test on any script error or policy violation. */
async function open(url) {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`console ${msg.type()}: ${msg.text()}`);
  });
  const response = await page.goto(url);
  assert.equal(response.status(), 200);
  assert.match(response.headers()['content-security-policy'], /default-src 'none'/);
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

  // The form is gone with the answer: a reload cannot reach it.
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
