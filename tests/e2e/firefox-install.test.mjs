// Firefox that stays, in Debian's Firefox ESR: `him install --browser firefox --yes` puts the
// add-on in the person's profile (extensions/him@him.dev.xpi, and the two settings in its
// user.js that let an unsigned add-on found there run); Firefox, started on that profile as
// the person starts it, runs the add-on, which starts the real host and says ready as
// him@him.dev; after Firefox restarts it is still there; a question asked with `him ask` is
// answered in the add-on's panel page in that profile (the page the sidebar shows, in a tab
// the test build opens, as WebDriver BiDi cannot open one: puppeteer-core, Node >= 22.12,
// hence tests/e2e/node22); `him uninstall`
// takes the file and the settings out again. Without --yes and with no terminal to ask on,
// install leaves the profile alone.
//
// Needs HIM_BIN, Firefox ESR (HIM_FIREFOX, else firefox-esr or firefox on PATH) and
// puppeteer-core in tests/e2e/node22; without Firefox it skips, unless HIM_E2E=1.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildFirefox } from './build-firefox.mjs';
import { rawAgent } from './rawagent.mjs';

const HIM_BIN = process.env.HIM_BIN;
const FIREFOX = findFirefox();
const MISSING = 'Firefox is not installed (apt-get install firefox-esr)';

function findFirefox() {
  if (process.env.HIM_FIREFOX) return existsSync(process.env.HIM_FIREFOX) ? process.env.HIM_FIREFOX : null;
  for (const name of ['firefox-esr', 'firefox']) {
    try {
      return execFileSync('which', [name], { encoding: 'utf8' }).trim();
    } catch {
      // not this one
    }
  }
  return null;
}

let tmp;
let home;
let runtimeDir;
let profile;
let running;
let browser;

before(() => {
  if (!FIREFOX) return;
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  tmp = mkdtempSync(path.join(tmpdir(), 'him-firefox-install-'));
  home = path.join(tmp, 'home');
  mkdirSync(home);
  runtimeDir = path.join(tmp, 'run');
  mkdirSync(runtimeDir, { mode: 0o700 });
});

after(async () => {
  await browser?.close().catch(() => {});
  if (running && running.exitCode === null) running.kill('SIGKILL');
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** The person's environment: their HOME, none of the test machine's XDG folders. */
function personEnv() {
  return { PATH: process.env.PATH, HOME: home, HIM_RUNTIME_DIR: runtimeDir, HIM_STATE_DIR: path.join(tmp, 'state') };
}

function him(args) {
  const run = spawnSync(HIM_BIN, args, { env: personEnv(), encoding: 'utf8' });
  assert.equal(run.status, 0, `him ${args.join(' ')} failed:\n${run.stdout}\n${run.stderr}`);
  return run;
}

function liveHostSockets() {
  try {
    return readdirSync(path.join(runtimeDir, 'hosts')).filter((n) => /^\d+\.sock$/.test(n)).filter((n) => {
      try {
        process.kill(Number.parseInt(n, 10), 0);
        return true;
      } catch {
        return false;
      }
    });
  } catch {
    return [];
  }
}

/** Firefox on the person's profile, started as their desktop starts it (no test flags). */
function startFirefox() {
  const child = spawn(FIREFOX, ['--profile', profile, '--no-remote', 'about:blank'], {
    env: { ...personEnv(), MOZ_HEADLESS: '1' },
    stdio: 'ignore',
  });
  running = child;
  return child;
}

async function stopFirefox(child) {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** Waits for a host Firefox started, and returns the extension its `welcome` names. */
async function extensionBehindTheHost(child) {
  let socket = null;
  const end = Date.now() + 60_000;
  while (!socket && Date.now() < end && child.exitCode === null) {
    await new Promise((r) => setTimeout(r, 100));
    socket = liveHostSockets()[0] ?? null;
  }
  assert.ok(socket, 'Firefox never started the host: the add-on is not running');
  let a;
  for (let tries = 0; ; tries++) {
    a = rawAgent(path.join(runtimeDir, 'hosts', socket));
    try {
      await a.connected;
      break;
    } catch (err) {
      // A socket exists from bind() on, a moment before listen().
      if (err.code !== 'ECONNREFUSED' || tries >= 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  a.send({ type: 'hello', protocol: 1, agent: { name: 'firefox-install-e2e' }, project: 'e2e', pid: process.pid });
  const welcome = await a.next((m) => m.type === 'welcome' && m.extension, 20_000);
  a.close();
  return welcome.extension;
}

/** The text of a Firefox `.jsonlz4`/`.lz4` file: "mozLz40\0", the size, one LZ4 block. */
function mozLz4(buf) {
  assert.equal(buf.subarray(0, 8).toString('latin1'), 'mozLz40\0');
  const out = Buffer.alloc(buf.readUInt32LE(8));
  let i = 12;
  let o = 0;
  const length = (n) => {
    if (n !== 15) return n;
    let b;
    do {
      b = buf[i++];
      n += b;
    } while (b === 255);
    return n;
  };
  while (i < buf.length) {
    const token = buf[i++];
    const literals = length(token >> 4);
    buf.copy(out, o, i, i + literals);
    i += literals;
    o += literals;
    if (i >= buf.length) break;
    const offset = buf.readUInt16LE(i);
    i += 2;
    const match = length(token & 15) + 4;
    for (let k = 0; k < match; k++, o++) out[o] = out[o - offset];
  }
  return out.subarray(0, o).toString('utf8');
}

/** Waits until him@him.dev is among the add-ons the profile starts with, enabled. */
async function inStartupList(child) {
  const end = Date.now() + 60_000;
  while (Date.now() < end && child.exitCode === null) {
    try {
      const list = JSON.parse(mozLz4(readFileSync(path.join(profile, 'addonStartup.json.lz4'))));
      if (list['app-profile']?.addons?.['him@him.dev']?.enabled) return;
    } catch {
      // not written yet, or being written
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.fail('Firefox never listed him@him.dev among the add-ons it starts with');
}

/** Waits until Firefox lists him@him.dev in the profile's extensions.json; returns its entry. */
async function installedAddon(child) {
  // Firefox writes the record when it finds the file and again once the add-on is started:
  // read before the second write (a loaded machine), it says active: false. So wait for the
  // record to settle as started, and hand back the last one seen either way.
  const end = Date.now() + 60_000;
  let last;
  while (Date.now() < end && child.exitCode === null) {
    try {
      const db = JSON.parse(readFileSync(path.join(profile, 'extensions.json'), 'utf8'));
      last = db.addons.find((a) => a.id === 'him@him.dev') ?? last;
      if (last?.active) return last;
    } catch {
      // not written yet, or being written
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  if (last) return last;
  assert.fail('Firefox never installed him@him.dev from the profile');
}

/**
 * The tab showing the add-on's panel page. BiDi reports such a tab as about:blank (it sends
 * no navigation events from moz-extension:// pages), so each tab is asked where it is.
 */
async function panelPage(browser) {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    for (const page of await browser.pages()) {
      const href = await page.evaluate(() => location.href).catch(() => '');
      if (/^moz-extension:\/\/[^/]+\/panel\/panel\.html$/.test(href)) return page;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.fail('the test build never opened its panel page');
}

test('Firefox is installed when HIM_E2E=1', { skip: process.env.HIM_E2E !== '1' && 'HIM_E2E is not 1' }, () => {
  assert.ok(FIREFOX, `HIM_E2E=1, but ${MISSING}`);
});

test('him install puts the add-on in the ESR profile only when told to, and it runs there for good', { skip: !FIREFOX && MISSING, timeout: 180_000 }, async () => {
  // The person's profile, made and run once by Firefox itself (so Firefox says which build ran it).
  execFileSync(FIREFOX, ['--headless', '-CreateProfile', 'himtest'], { env: personEnv(), stdio: 'ignore' });
  const roots = [path.join(home, '.config/mozilla/firefox'), path.join(home, '.mozilla/firefox')];
  const root = roots.find((r) => existsSync(path.join(r, 'profiles.ini')));
  assert.ok(root, 'Firefox made no profiles.ini');
  profile = path.join(root, readdirSync(root).find((n) => n.endsWith('.himtest')));
  execFileSync(FIREFOX, ['--headless', '--profile', profile, '--no-remote', '--screenshot', path.join(tmp, 'first.png'), 'about:blank'], {
    env: personEnv(),
    stdio: 'ignore',
  });
  const xpi = path.join(profile, 'extensions', 'him@him.dev.xpi');

  // No terminal to ask on and no --yes: the profile is left alone, and install says how.
  const asked = him(['install', '--browser', 'firefox']);
  assert.ok(!existsSync(xpi));
  assert.ok(!existsSync(path.join(profile, 'user.js')));
  assert.match(asked.stderr, /install --browser firefox --yes`, which turns signature checks off/);

  const install = him(['install', '--browser', 'firefox', '--yes']);
  assert.match(install.stdout, new RegExp(`^wrote ${xpi}$`, 'm'));
  assert.match(install.stderr, /Firefox \(profile himtest\): restart Firefox twice: it installs him at the first start and runs it from the next, for good/);
  const userJs = readFileSync(path.join(profile, 'user.js'), 'utf8');
  assert.match(userJs, /^user_pref\("xpinstall.signatures.required", false\);$/m);

  // The first start finds the file and installs the add-on, enabled: Firefox lists it in
  // extensions.json, then in the add-ons it starts with (addonStartup.json.lz4), a moment
  // later; stopped before that, it forgets it. Its background script first runs at the start
  // after that: Firefox ESR 153 does not start the background of an add-on it found during
  // that same start (headless, at least), where the person opening the sidebar would.
  let firefox = startFirefox();
  const addon = await installedAddon(firefox);
  await inStartupList(firefox);
  assert.deepEqual(
    { active: addon.active, userDisabled: addon.userDisabled, appDisabled: addon.appDisabled, location: addon.location },
    { active: true, userDisabled: false, appDisabled: false, location: 'app-profile' },
  );
  await stopFirefox(firefox);

  // Restarted on the same profile: the add-on is still installed, and starts the host.
  firefox = startFirefox();
  assert.deepEqual(await extensionBehindTheHost(firefox), { id: 'him@him.dev', version: '0.1.0' });
  await stopFirefox(firefox);
  // And after one more restart.
  firefox = startFirefox();
  assert.deepEqual(await extensionBehindTheHost(firefox), { id: 'him@him.dev', version: '0.1.0' });
  await stopFirefox(firefox);
  running = undefined;

  // Installing again (say after an upgrade) does not ask again: the profile's block says it agreed.
  const again = him(['install', '--browser', 'firefox']);
  assert.match(again.stdout, new RegExp(`^unchanged ${xpi}$`, 'm'));
});

test('a question is answered in the add-on\'s panel page, in the same profile', { skip: !FIREFOX && MISSING, timeout: 120_000 }, async () => {
  assert.ok(profile, 'the install test ran first');
  const puppeteer = (await import('./node22/node_modules/puppeteer-core/lib/puppeteer/puppeteer-core.js')).default;
  // puppeteer writes its own user.js for the run (and puts the person's back when it closes);
  // the settings him wrote go in with it, so add-ons run as in the person's Firefox.
  const himPrefs = Object.fromEntries(
    [...readFileSync(path.join(profile, 'user.js'), 'utf8').matchAll(/^user_pref\("([^"]+)", (.+)\);$/gm)].map((m) => [m[1], JSON.parse(m[2])]),
  );
  browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: FIREFOX,
    headless: true,
    userDataDir: profile,
    extraPrefsFirefox: himPrefs,
    env: { ...personEnv() },
  });
  try {
    // BiDi cannot show the sidebar nor open a moz-extension:// page itself, so the same
    // add-on with a test-only tab opener (build-firefox.mjs) takes the installed one's place
    // for this run: it opens the panel page, the sidebar's page, in a tab.
    const testBuild = path.join(tmp, 'test-build');
    mkdirSync(testBuild);
    buildFirefox(testBuild, { testOpener: true });
    await browser.installExtension(testBuild);
    const page = await panelPage(browser);
    while (liveHostSockets().length === 0) await new Promise((r) => setTimeout(r, 100));
    // The shortcut that opens the sidebar is registered with its key.
    const commands = await page.evaluate(() => browser.commands.getAll());
    const sidebar = commands.find((c) => c.name === '_execute_sidebar_action');
    assert.equal(sidebar?.shortcut, 'Alt+Shift+H', JSON.stringify(commands));

    const ask = spawn(HIM_BIN, ['ask', 'text', 'Which branch shall I release from?', '--no-tty'], {
      env: personEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    ask.stdout.on('data', (d) => (out += d));
    ask.stderr.on('data', (d) => (err += d));
    const exited = new Promise((resolve) => ask.once('exit', resolve));
    // The card takes keys once it has been on screen a moment (lib/arming.js).
    await page.waitForSelector('.him-form[data-armed]', { timeout: 30_000 });
    const field = await page.waitForSelector('.him-form[data-armed] textarea, .him-form[data-armed] input[type="text"]');
    await field.type('main');
    await page.keyboard.press('Enter');
    assert.equal(await exited, 0, `him ask: ${err}`);
    const result = JSON.parse(out);
    assert.equal(result.status, 'answered');
    assert.equal(result.via, 'extension');
    assert.equal(result.answer, 'main');
  } finally {
    await browser.close();
    browser = undefined;
  }
});

test('him uninstall takes the add-on and the settings out of the profile', { skip: !FIREFOX && MISSING }, () => {
  assert.ok(profile, 'the install test ran first');
  const run = him(['uninstall', '--browser', 'firefox']);
  assert.match(run.stdout, /removed .*him@him\.dev\.xpi$/m);
  assert.match(run.stdout, /signature checks are on again/);
  assert.ok(!existsSync(path.join(profile, 'extensions', 'him@him.dev.xpi')));
  const userJs = existsSync(path.join(profile, 'user.js')) ? readFileSync(path.join(profile, 'user.js'), 'utf8') : '';
  assert.doesNotMatch(userJs, /signatures/);
  assert.doesNotMatch(readFileSync(path.join(profile, 'prefs.js'), 'utf8'), /xpinstall\.signatures\.required/);
});
