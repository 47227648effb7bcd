// Chromium with the unpacked extension and the real native host it can start, as the
// panel tests and the panel bench need it: a private runtime directory for the host, the
// host manifest `him manifest chromium` prints in the profile, and every console error or
// warning and uncaught error of the extension's pages and worker collected in `problems`.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { EXTENSION_ID } from './standins.mjs';

export { EXTENSION_ID };
export const EXT_DIR = fileURLToPath(new URL('../../extension/', import.meta.url));
export const PANEL_URL = `chrome-extension://${EXTENSION_ID}/panel/panel.html`;

/**
 * Launches Chromium (`chromiumPath`) with the extension; `args` are Chromium flags beyond
 * the two that load the extension, `viewport` as playwright takes it. Resolves
 * {tmp, runtimeDir, stateHome, context, worker, problems}; `tmp` holds the profile, the
 * runtime directory and the host's state folder (`XDG_STATE_HOME`), for the caller to remove.
 */
export async function launchWithExtension({ himBin, chromiumPath, prefix, args = [], viewport }) {
  const tmp = mkdtempSync(path.join(tmpdir(), prefix));
  const runtimeDir = path.join(tmp, 'run');
  mkdirSync(runtimeDir, { mode: 0o700 });
  // The host's state folder (its kept answers) is the test's own, never the user's.
  const stateHome = path.join(tmp, 'state');
  const profile = path.join(tmp, 'profile');
  mkdirSync(path.join(profile, 'NativeMessagingHosts'), { recursive: true });
  const manifest = execFileSync(himBin, ['manifest', 'chromium'], { encoding: 'utf8' });
  writeFileSync(path.join(profile, 'NativeMessagingHosts', 'dev.him.host.json'), manifest);
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    ...(viewport ? { viewport } : {}),
    env: { ...process.env, HIM_RUNTIME_DIR: runtimeDir, XDG_STATE_HOME: stateHome },
    args: [`--disable-extensions-except=${EXT_DIR}`, `--load-extension=${EXT_DIR}`, ...args],
  });
  const problems = [];
  context.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console.${m.type()}: ${m.text()}`);
  });
  context.on('weberror', (err) => problems.push(`uncaught: ${err.error()}`));
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
  return { tmp, runtimeDir, stateHome, context, worker, problems };
}

/**
 * The pids of the live hosts listening in `runtimeDir`. A SIGKILLed host leaves its socket
 * until an agent sweeps it: only hosts whose process is alive are listed.
 */
export function hostPids(runtimeDir) {
  let names = [];
  try {
    names = readdirSync(path.join(runtimeDir, 'hosts'));
  } catch {
    return [];
  }
  return names
    .filter((n) => /^\d+\.sock$/.test(n))
    .map((n) => Number.parseInt(n, 10))
    .filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
}

/**
 * Waits until every card the panel `page` shows has been on screen long enough to take keys
 * and clicks (lib/arming.js; arming.test.mjs shows what they do before).
 */
export function everyCardArmed(page) {
  return page.waitForFunction(() =>
    [...document.querySelectorAll('#queue .him-form')].every((f) => f.hidden || f.hasAttribute('data-armed')),
  );
}
