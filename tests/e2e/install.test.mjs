// `him install` → the extension folder it writes → real Chromium loading THAT folder → a
// question (`him try`'s demo) answered in its side panel; the toolbar icon opens the panel
// and the keyboard shortcut is registered; re-installing over a changed copy puts the files
// back and removes stale ones, and the restarted browser uses them; `him uninstall` removes
// the folder.
//
// The person's HOME is a throw-away folder (as in tests/integration/support/install.rs); Chromium runs
// with that user's Chromium folder (`~/.config/chromium`, where `him install` put the host
// manifest) as its profile. Chromium loads the folder with --load-extension: the route without
// it (a per-user "External Extensions" file pointing at a .crx) needs a .crx signed with the
// pinned id's private key, which does not exist (docs/install.md, "Why Developer mode").

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { EXTENSION_ID } from './standins.mjs';
import { everyCardArmed, hostPids } from './browser.mjs';

const HIM_BIN = process.env.HIM_BIN;
const CHROMIUM = process.env.HIM_CHROMIUM ?? '/usr/lib/chromium/chromium';
const REPO_EXT = fileURLToPath(new URL('../../extension/', import.meta.url));
const PANEL_URL = `chrome-extension://${EXTENSION_ID}/panel/panel.html`;

let tmp;
let home;
let runtimeDir;
let context;

before(() => {
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  tmp = mkdtempSync(path.join(tmpdir(), 'him-install-e2e-'));
  home = path.join(tmp, 'home');
  mkdirSync(home);
  runtimeDir = path.join(tmp, 'run');
  mkdirSync(runtimeDir, { mode: 0o700 });
});

after(async () => {
  await context?.close().catch(() => {});
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** The environment of the person's shell: their HOME, no XDG folders of the test machine. */
function personEnv() {
  const env = { PATH: process.env.PATH, HOME: home, HIM_RUNTIME_DIR: runtimeDir, HIM_STATE_DIR: path.join(tmp, 'state') };
  return env;
}

function him(args) {
  const run = spawnSync(HIM_BIN, args, { env: personEnv(), encoding: 'utf8' });
  assert.equal(run.status, 0, `him ${args.join(' ')} failed:\n${run.stdout}\n${run.stderr}`);
  return run;
}

const installed = () => path.join(home, '.local/share/him/extension/chromium');
const profile = () => path.join(home, '.config/chromium');

/** Chromium with the person's Chromium folder as its profile and the installed extension. */
async function launch() {
  const context = await chromium.launchPersistentContext(profile(), {
    executablePath: CHROMIUM,
    headless: true,
    env: { ...process.env, ...personEnv() },
    args: [`--disable-extensions-except=${installed()}`, `--load-extension=${installed()}`],
  });
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
  return { context, worker };
}

async function until(what, fn, ms = 10_000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await fn().catch((e) => e);
    if (last === true) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
}

test('the folder him install writes is the extension Chromium runs, and its demo question is answered in the panel', { timeout: 120_000 }, async () => {
  const install = him(['install', '--browser', 'chromium']);
  assert.match(install.stdout, new RegExp(`^wrote ${installed()}$`, 'm'));
  assert.match(install.stdout, new RegExp(`^wrote ${profile()}/NativeMessagingHosts/dev.him.host.json$`, 'm'));
  // The one step left, with the folder to choose; then the pin, the shortcut and `him try`.
  assert.ok(install.stderr.includes(`"Load unpacked" and choose\n      ${installed()}\n`), install.stderr);
  assert.ok(install.stderr.includes('Alt+Shift+H'), install.stderr);
  assert.ok(install.stderr.includes('try` puts a demo question in the panel'), install.stderr);
  assert.ok(!existsSync(path.join(installed(), 'manifest.firefox.json')));

  let worker;
  ({ context, worker } = await launch());
  // The installed copy keeps the pinned id (the manifest's `key`), which the host manifest allows.
  assert.equal(new URL(worker.url()).host, EXTENSION_ID);

  // Clicking the toolbar icon opens the side panel.
  await until('the panel to open on an icon click', async () =>
    (await worker.evaluate(() => chrome.sidePanel.getPanelBehavior())).openPanelOnActionClick === true,
  );
  // The shortcut is registered with its key.
  const commands = await worker.evaluate(() => chrome.commands.getAll());
  const open = commands.find((c) => c.name === '_execute_action');
  assert.equal(open?.shortcut, 'Alt+Shift+H', JSON.stringify(commands));

  const page = await context.newPage();
  await page.goto(PANEL_URL);
  // The worker starts the host as it starts; `him try` looks for a connected browser once.
  await until('the host Chromium started to listen', async () => hostPids(runtimeDir).length > 0);

  const tried = spawn(HIM_BIN, ['try'], { env: personEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  tried.stdout.on('data', (d) => (out += d));
  tried.stderr.on('data', (d) => (err += d));
  const exited = new Promise((resolve) => tried.once('exit', resolve));

  const card = page.locator('article.card', { has: page.getByRole('heading', { name: 'Hello from him: this is how an agent asks you' }) });
  await card.waitFor({ timeout: 20_000 }).catch((e) => {
    throw new Error(`${e.message}\n--- him try ---\n${err}${out}`);
  });
  await until('him try to say where the question waits', async () =>
    /waiting in your browser's him side panel \(the him icon in the toolbar, or Alt\+Shift\+H\)/.test(err),
  );
  await everyCardArmed(page);
  await card.getByRole('radio', { name: 'Open a pull request' }).check();
  await card.getByLabel('Anything to add? (optional)').fill('from the demo');
  await card.getByRole('button', { name: 'Send to the terminal' }).click();
  assert.equal(await exited, 0, `him try: ${err}`);
  const result = JSON.parse(out);
  assert.equal(result.status, 'answered');
  assert.equal(result.via, 'extension');
  assert.deepEqual(result.values, { next: 'Open a pull request', note: 'from the demo' });
  assert.match(err, /this is what the agent would get/);
  await context.close();
  context = undefined;
});

test('installing again over a changed copy puts the files back, drops stale ones, and the restarted browser runs them', { timeout: 60_000 }, async () => {
  const html = path.join(installed(), 'panel/panel.html');
  writeFileSync(html, '<p>an older panel</p>');
  writeFileSync(path.join(installed(), 'lib/removed-in-this-version.js'), 'export {};');

  const again = him(['install', '--browser', 'chromium']);
  assert.match(again.stdout, new RegExp(`^wrote ${installed()}$`, 'm'));
  assert.match(again.stderr, /updated in place: a browser that already loaded them uses the new ones when it restarts/);
  assert.equal(readFileSync(html, 'utf8'), readFileSync(path.join(REPO_EXT, 'panel/panel.html'), 'utf8'));
  assert.ok(!existsSync(path.join(installed(), 'lib/removed-in-this-version.js')));

  let worker;
  ({ context, worker } = await launch());
  const served = await worker.evaluate(async () => (await fetch('/panel/panel.html')).text());
  assert.equal(served, readFileSync(path.join(REPO_EXT, 'panel/panel.html'), 'utf8'));
  await context.close();
  context = undefined;

  const unchanged = him(['install', '--browser', 'chromium']);
  assert.match(unchanged.stdout, new RegExp(`^unchanged ${installed()}$`, 'm'));
});

test('him uninstall removes the extension folder with the host manifest', () => {
  const run = him(['uninstall']);
  assert.match(run.stdout, new RegExp(`^removed ${installed()}$`, 'm'));
  assert.ok(!existsSync(installed()));
  assert.ok(!existsSync(path.join(home, '.local/share/him')), 'no empty him folder left');
  assert.ok(!existsSync(path.join(profile(), 'NativeMessagingHosts/dev.him.host.json')));
});
