// How fast the side panel shows a question, measured in real Chromium with the real host and
// a real MCP client (the TypeScript SDK on `him serve`). Run by hand; it prints figures and
// asserts nothing (timings belong in a bench, never in a test):
//
//   HIM_BIN=$PWD/../../target/debug/him node bench-panel.mjs [rounds]
//
// Each figure comes with a baseline measured in the same run, on the same loaded machine:
//   - tool call → card painted (ask_text from the MCP client until the panel has drawn the
//     card and a frame has passed), against a tool call the server answers at once
//     (human_input_status) and against the link alone (an `ask` on the host's socket until
//     the extension's `shown`);
//   - service-worker restart → card back (the worker stopped over CDP until the card can
//     send again: the panel reconnected, the worker started a new host, the agent re-sent
//     its question), against a host restart (the host SIGKILLed, same end point);
//   - queue depth (issue 22.12): host ask → card painted with DEPTH questions already
//     waiting, against the same with none waiting; and DEPTH asks sent at once until every
//     card is in the panel. Raw agents ask them, 50 each (one may have 64 waiting at a host).

import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { rawAgent } from './rawagent.mjs';
import { EXTENSION_ID, hostPids, launchWithExtension } from './browser.mjs';

const HIM_BIN = process.env.HIM_BIN;
const CHROMIUM = process.env.HIM_CHROMIUM ?? '/usr/lib/chromium/chromium';
const ROUNDS = Number(process.argv[2] ?? 20);
const RESTARTS = Math.max(3, Math.round(ROUNDS / 4));
const DEPTH = Number(process.env.HIM_BENCH_DEPTH ?? 250);

if (!HIM_BIN) {
  console.error('HIM_BIN must name the him binary');
  process.exit(2);
}

/** Wall-clock milliseconds with sub-millisecond resolution, comparable with the page's. */
const now = () => performance.timeOrigin + performance.now();

async function until(fn, ms = 20_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await fn().catch(() => null);
    if (v) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('timed out');
}

function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { median: at(0.5), p90: at(0.9), min: sorted[0] };
}

function report(name, values, baselineName, baseline) {
  const s = stats(values);
  const b = stats(baseline);
  console.log(
    `${name.padEnd(38)} median ${s.median.toFixed(1).padStart(7)} ms  p90 ${s.p90.toFixed(1).padStart(7)} ms` +
      `   baseline ${baselineName}: median ${b.median.toFixed(1)} ms  → ratio ${(s.median / b.median).toFixed(2)}`,
  );
}

const { tmp, runtimeDir, context } = await launchWithExtension({
  himBin: HIM_BIN,
  chromiumPath: CHROMIUM,
  prefix: 'him-bench-panel-',
  args: ['--no-first-run', '--disable-sync'],
});
let client;
try {
  const page = await context.newPage();
  await page.goto(`chrome-extension://${EXTENSION_ID}/panel/panel.html`);
  await page.getByRole('status').filter({ hasText: /^Connected/ }).waitFor({ timeout: 10_000 });
  // In the page: the wall-clock time at which a card with a given title was first painted
  // (found in the DOM, then one animation frame later, when it is on screen).
  await page.evaluate(() => {
    globalThis.painted = {};
    new MutationObserver(() => {
      for (const h of document.querySelectorAll('#queue article.card h2')) {
        const title = h.textContent;
        if (title in globalThis.painted) continue;
        globalThis.painted[title] = null;
        requestAnimationFrame(() => {
          globalThis.painted[title] = performance.timeOrigin + performance.now();
        });
      }
    }).observe(document.getElementById('queue'), { childList: true, subtree: true });
  });
  const paintedAt = (title) => until(() => page.evaluate((t) => globalThis.painted[t], title));

  const cwd = path.join(tmp, 'bench-project');
  mkdirSync(cwd);
  client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: HIM_BIN,
      args: ['serve'],
      cwd,
      env: { HIM_RUNTIME_DIR: runtimeDir, HIM_LOG: 'warn', HIM_FALLBACK: 'off' },
      stderr: 'inherit',
    }),
  );

  const agent = rawAgent(path.join(runtimeDir, 'hosts', `${hostPids(runtimeDir)[0]}.sock`));
  await agent.connected;
  agent.send({ type: 'hello', protocol: 1, agent: { name: 'bench-raw' }, pid: process.pid });
  await agent.next((m) => m.type === 'welcome');

  const status = [];
  const painted = [];
  const shown = [];
  const rawPainted = [];
  for (let i = 0; i < ROUNDS + 2; i++) {
    // A tool call the server answers without the browser.
    let t0 = now();
    await client.callTool({ name: 'human_input_status', arguments: {} });
    const statusMs = now() - t0;

    // ask_text through him serve → host → worker → panel.
    const title = `Bench question ${i}?`;
    const abort = new AbortController();
    t0 = now();
    const call = client.callTool({ name: 'ask_text', arguments: { question: title } }, undefined, { signal: abort.signal, timeout: 60_000 });
    call.catch(() => {});
    const paintedMs = (await paintedAt(title)) - t0;
    abort.abort();
    await until(async () => (await page.locator('article.card', { hasText: title }).count()) === 0);

    // The same on the host's socket directly: ask → shown (the link), and → painted.
    const id = randomBytes(16).toString('hex');
    const rawTitle = `Raw question ${i}?`;
    const form = { title: rawTitle, fields: [{ name: 'answer', type: 'text', label: rawTitle }] };
    t0 = now();
    agent.send({ type: 'ask', id, form, timeout_ms: 60_000, asked_at_ms: Date.now() });
    await agent.next((m) => m.type === 'shown' && m.id === id);
    const shownMs = now() - t0;
    const rawPaintedMs = (await paintedAt(rawTitle)) - t0;
    agent.send({ type: 'withdraw', id, reason: 'cancelled' });
    await until(async () => (await page.locator('article.card', { hasText: rawTitle }).count()) === 0);

    if (i >= 2) {
      // The first rounds warm up the worker, the page and the JIT.
      status.push(statusMs);
      painted.push(paintedMs);
      shown.push(shownMs);
      rawPainted.push(rawPaintedMs);
    }
  }
  agent.destroy();

  // Restarts: a question waits; the worker (or the host) goes; how long until the card can
  // send again.
  const sendable = (title) =>
    page.locator('article.card', { hasText: title }).getByRole('button', { name: 'Submit' }).isEnabled();
  const workerBack = [];
  const hostBack = [];
  for (let i = 0; i < RESTARTS; i++) {
    for (const kind of ['worker', 'host']) {
      const title = `Restart ${kind} ${i}?`;
      const abort = new AbortController();
      const call = client.callTool({ name: 'ask_text', arguments: { question: title } }, undefined, { signal: abort.signal, timeout: 60_000 });
      call.catch(() => {});
      await until(() => sendable(title));
      // In the page: each time the card's Submit turns disabled or enabled again.
      await page.locator('article.card', { hasText: title }).getByRole('button', { name: 'Submit' }).evaluate((button) => {
        const seen = (globalThis.submitSeen = []);
        new MutationObserver(() => seen.push({ at: performance.timeOrigin + performance.now(), disabled: button.disabled })).observe(
          button,
          { attributes: true, attributeFilter: ['disabled'] },
        );
      });
      const before = hostPids(runtimeDir);
      const t0 = now();
      if (kind === 'worker') {
        const cdp = await context.newCDPSession(page);
        await cdp.send('ServiceWorker.enable');
        await cdp.send('ServiceWorker.stopAllWorkers');
        await cdp.detach();
      } else {
        for (const pid of before) process.kill(pid, 'SIGKILL');
      }
      // It cannot send while the link is down and until its agent re-sent it to the new
      // host; the moment it can again is the figure.
      const back = await until(() =>
        page.evaluate(() => {
          const seen = globalThis.submitSeen;
          const off = seen.findIndex((s) => s.disabled);
          const on = off === -1 ? undefined : seen.slice(off).find((s) => !s.disabled);
          return on?.at ?? null;
        }),
      );
      (kind === 'worker' ? workerBack : hostBack).push(back - t0);
      abort.abort();
      await until(async () => (await page.locator('article.card', { hasText: title }).count()) === 0);
    }
  }

  // Queue depth: one more question with none waiting and with DEPTH waiting.
  const cards = () => page.evaluate(() => document.querySelectorAll('#queue article.card').length);
  const depthAgents = [];
  const depthAgent = async (n) => {
    const a = rawAgent(path.join(runtimeDir, 'hosts', `${hostPids(runtimeDir)[0]}.sock`));
    await a.connected;
    a.send({ type: 'hello', protocol: 1, agent: { name: `depth-${n}` }, pid: process.pid });
    await a.next((m) => m.type === 'welcome');
    return a;
  };
  const one = await depthAgent('one');
  const oneMore = async (label, i) => {
    const id = randomBytes(16).toString('hex');
    const title = `One more ${label} ${i}?`;
    const t0 = now();
    one.send({ type: 'ask', id, form: { title, fields: [{ name: 'answer', type: 'text', label: title }] }, timeout_ms: 600_000, asked_at_ms: Date.now() });
    const ms = (await paintedAt(title)) - t0;
    one.send({ type: 'withdraw', id, reason: 'cancelled' });
    await until(async () => (await page.locator('article.card', { hasText: title }).count()) === 0);
    return ms;
  };
  const shallow = [];
  for (let i = 0; i < ROUNDS; i++) shallow.push(await oneMore('shallow', i));
  const t0 = now();
  for (let i = 0; i < DEPTH; i++) {
    if (i % 50 === 0) depthAgents.push(await depthAgent(i / 50));
    const title = `Waiting ${String(i).padStart(5, '0')}?`;
    depthAgents.at(-1).send({
      type: 'ask',
      id: randomBytes(16).toString('hex'),
      form: { title, fields: [{ name: 'answer', type: 'text', label: title }] },
      timeout_ms: 600_000,
      asked_at_ms: Date.now(),
    });
  }
  await until(async () => (await cards()) >= DEPTH, 600_000);
  const fillMs = now() - t0;
  const deep = [];
  for (let i = 0; i < ROUNDS; i++) deep.push(await oneMore('deep', i));
  for (const a of [one, ...depthAgents]) a.destroy();
  await until(async () => (await cards()) === 0, 120_000);

  console.log(`him panel bench: ${ROUNDS} rounds, ${RESTARTS} restarts each, Chromium headless, ${new Date().toISOString()}`);
  report('tool call → card painted', painted, 'human_input_status call', status);
  report('host ask → card painted', rawPainted, 'host ask → shown', shown);
  report('worker restart → card answerable', workerBack, 'host restart → card answerable', hostBack);
  report(`host ask → card painted, ${DEPTH} waiting`, deep, 'the same, none waiting', shallow);
  console.log(`${DEPTH} asks at once → every card in the panel: ${(fillMs / 1000).toFixed(2)} s (${(fillMs / DEPTH).toFixed(1)} ms per question)`);
} finally {
  await client?.close().catch(() => {});
  await context.close().catch(() => {});
  rmSync(tmp, { recursive: true, force: true });
}
