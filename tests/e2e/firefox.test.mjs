// The Firefox build in real Firefox: `web-ext run` loads it (headless) into a throw-away
// profile, with the host manifest `him manifest firefox` prints in a throw-away HOME, so
// Firefox starts the real him binary as the host. An agent on the host's socket then sees
// the extension say `ready` as him@him.dev and answer an `ask` with `shown`: the background
// script runs as a module in Firefox and owns the native port there as in Chromium.
//
// The panel itself is not driven here (Playwright cannot drive a stock Firefox); the
// Chromium test covers it, and it is the same page. Needs HIM_BIN and Firefox
// (HIM_FIREFOX, else firefox-esr or firefox on PATH); without Firefox it skips.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildFirefox } from './build-firefox.mjs';
import { rawAgent } from './rawagent.mjs';

const HIM_BIN = process.env.HIM_BIN;
const WEB_EXT = fileURLToPath(new URL('./node_modules/web-ext/bin/web-ext.js', import.meta.url));
const FIREFOX = findFirefox();
const QUESTION_ID = 'f1f2f3f4f5f6f7f8f9f0a1a2a3a4a5a6';

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
let firefox;
let firefoxLog = '';

before(() => {
  if (!FIREFOX) return;
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  tmp = mkdtempSync(path.join(tmpdir(), 'him-firefox-e2e-'));
});

after(async () => {
  if (firefox && firefox.exitCode === null) {
    // web-ext closes Firefox when it is interrupted.
    const exited = new Promise((resolve) => firefox.once('exit', resolve));
    firefox.kill('SIGINT');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (firefox.exitCode === null) firefox.kill('SIGKILL');
  }
  if (process.exitCode && firefoxLog) process.stderr.write(`--- web-ext run ---\n${firefoxLog.slice(-5000)}\n`);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// Under HIM_E2E=1 (CI) a missing Firefox is a failure, not a skip.
const MISSING = 'Firefox is not installed (apt-get install firefox-esr)';
test('Firefox is installed when HIM_E2E=1', { skip: process.env.HIM_E2E !== '1' && 'HIM_E2E is not 1' }, () => {
  assert.ok(FIREFOX, `HIM_E2E=1, but ${MISSING}`);
});

test('in Firefox, the add-on starts the real host, says ready as him@him.dev and shows an ask', { skip: !FIREFOX && MISSING, timeout: 90_000 }, async () => {
  const home = path.join(tmp, 'home');
  const runtimeDir = path.join(tmp, 'run');
  const addon = path.join(tmp, 'addon');
  mkdirSync(runtimeDir, { mode: 0o700 });
  mkdirSync(addon);
  buildFirefox(addon);
  // Firefox looks for host manifests per user, so a throw-away HOME keeps the real one out.
  const hosts = path.join(home, '.mozilla', 'native-messaging-hosts');
  mkdirSync(hosts, { recursive: true });
  const manifest = execFileSync(HIM_BIN, ['manifest', 'firefox'], { encoding: 'utf8' });
  assert.deepEqual(JSON.parse(manifest).allowed_extensions, ['him@him.dev']);
  writeFileSync(path.join(hosts, 'dev.him.host.json'), manifest);

  firefox = spawn(
    process.execPath,
    [WEB_EXT, 'run', '-s', addon, '--firefox', FIREFOX, '--no-reload', '--no-input', '--no-config-discovery',
      '--profile-create-if-missing', '--firefox-profile', path.join(tmp, 'profile')],
    {
      env: { ...process.env, HOME: home, HIM_RUNTIME_DIR: runtimeDir, MOZ_HEADLESS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  firefox.stdout.on('data', (d) => (firefoxLog += d));
  firefox.stderr.on('data', (d) => (firefoxLog += d));

  // The background script connects at start-up, so a host socket appears by itself.
  let socket = null;
  const end = Date.now() + 60_000;
  while (!socket && Date.now() < end && firefox.exitCode === null) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      socket = readdirSync(path.join(runtimeDir, 'hosts')).find((n) => n.endsWith('.sock')) ?? null;
    } catch {
      // not created yet
    }
  }
  assert.ok(socket, 'Firefox never started the host');

  // A socket file exists from bind() on, a moment before listen(): a refusal then means
  // "not yet" (the agent side's rule too, wire/runtime.rs), so try again rather than fail.
  let a;
  for (let tries = 0; ; tries++) {
    a = rawAgent(path.join(runtimeDir, 'hosts', socket));
    try {
      await a.connected;
      break;
    } catch (err) {
      if (err.code !== 'ECONNREFUSED' || tries >= 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
      socket = readdirSync(path.join(runtimeDir, 'hosts')).find((n) => n.endsWith('.sock')) ?? socket;
    }
  }
  a.send({ type: 'hello', protocol: 1, agent: { name: 'firefox-e2e' }, project: 'e2e', pid: process.pid });
  const welcome = await a.next((m) => m.type === 'welcome' && m.extension);
  assert.deepEqual(welcome.extension, { id: 'him@him.dev', version: '0.1.0' });
  a.send({
    type: 'ask',
    id: QUESTION_ID,
    form: { title: 'Does Firefox show this?', fields: [{ name: 'answer', type: 'text', label: 'Answer' }] },
    timeout_ms: 60_000,
    asked_at_ms: Date.now(),
  });
  await a.next((m) => m.type === 'shown' && m.id === QUESTION_ID);
  a.close();
});
