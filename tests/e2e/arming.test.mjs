// Nothing decided unseen (issue 22, item 1), in real Chromium with the real host and a real
// MCP client (the TypeScript SDK on `him serve --permission-tool`): a second key press, a
// double Enter or the second click of a double-click lands on a card the person has not seen,
// and decides nothing; once the page says the card is armed, a key or a click decides.
//
// No sleep races the arming delay. The keys and clicks that must decide nothing are sent by
// the page itself, stamped by it: in the very task that drew the card (a MutationObserver
// callback), and at 40, 120 and 250 ms after (the gaps measured between a person's double
// presses), each only while the page's own clock says the card cannot be armed yet. What
// decides is what the person does after the page marked the card `data-armed`, and the
// agent's result names it: had an earlier key decided, the call would have returned that.
//
// Needs HIM_BIN (the him binary; `cargo test` sets it) and Debian's Chromium (or HIM_CHROMIUM).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { PANEL_URL, launchWithExtension } from './browser.mjs';

const HIM_BIN = process.env.HIM_BIN;
const CHROMIUM = process.env.HIM_CHROMIUM ?? '/usr/lib/chromium/chromium';
const STEP_MS = 30_000;
const ARM_DELAY_MS = Number(/export const ARM_DELAY_MS = (\d+);/.exec(readFileSync(new URL('../../extension/lib/arming.js', import.meta.url), 'utf8'))[1]);

let tmp;
let context;
let page;
let client;
let problems = [];

before(async () => {
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  const launched = await launchWithExtension({ himBin: HIM_BIN, chromiumPath: CHROMIUM, prefix: 'him-arming-', args: ['--no-first-run'] });
  ({ tmp, context } = launched);
  problems = launched.problems;
  page = await context.newPage();
  await page.goto(PANEL_URL);
  await page.getByRole('status').filter({ hasText: /^Connected/ }).waitFor({ timeout: 10_000 });
  const transport = new StdioClientTransport({
    command: HIM_BIN,
    args: ['serve', '--permission-tool'],
    env: { HIM_RUNTIME_DIR: launched.runtimeDir, HIM_LOG: 'warn', HIM_FALLBACK: 'off', HIM_KEEP_MS: '0' },
    stderr: 'inherit',
  });
  client = new Client({ name: 'claude-code', version: '2.1.332' });
  await client.connect(transport);
});

after(async () => {
  await client?.close().catch(() => {});
  await context?.close().catch(() => {});
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Starts a tool call; the person acts in the panel meanwhile. */
function call(name, args) {
  const pending = client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 });
  return {
    async result() {
      const res = await pending;
      return res.structuredContent ?? JSON.parse(res.content[0].text);
    },
  };
}

/** The open card whose heading is `title`, once it is armed: it takes keys and clicks. */
function armedCard(title) {
  return page.locator('article.card:not([data-collapsed])', {
    has: page.locator('form.him-form[data-armed]', { has: page.getByRole('heading', { name: title, exact: true }) }),
  });
}

/**
 * In the page: when the card titled `title` opens, run `act` (named in ACTS) on it in the very
 * task that drew it, then at 40, 120 and 250 ms, each only while the card surely cannot be armed
 * (less than ARM_DELAY_MS − 100 ms since it was drawn: it arms ARM_DELAY_MS after it is first
 * found in view, which is later still). Records each act, and when the card was drawn and when
 * the page marked it armed, in `window.trap`.
 */
function setTrap(title, act) {
  return page.evaluate(
    ({ title, act, margin }) => {
      const ACTS = {
        // A key on whatever has the focus, as the keyboard sends it.
        key: (form, key) => {
          const target = document.activeElement;
          const event = new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true });
          target.dispatchEvent(event);
          const on = target.tagName === 'BUTTON' ? target.textContent : target.tagName;
          return { on, inCard: form.contains(target), prevented: event.defaultPrevented };
        },
        // The second click of a double-click, landing on Allow.
        clickAllow: (form) => {
          const allow = form.querySelector('.him-allow');
          const init = { bubbles: true, cancelable: true, button: 0 };
          allow.dispatchEvent(new PointerEvent('pointerdown', init));
          allow.dispatchEvent(new MouseEvent('mousedown', init));
          allow.dispatchEvent(new PointerEvent('pointerup', init));
          allow.dispatchEvent(new MouseEvent('mouseup', init));
          const click = new MouseEvent('click', init);
          allow.dispatchEvent(click);
          return { on: 'Allow', inCard: true, prevented: click.defaultPrevented };
        },
      };
      const trap = (window.trap = { acts: [], drawnAt: null, armedAt: null, ringWhenDrawn: null });
      const formOf = () =>
        [...document.querySelectorAll('#queue form.him-form')].find((f) => f.querySelector('h2')?.textContent === title);
      const run = (label) => {
        const form = formOf();
        const at = performance.now();
        if (at >= trap.drawnAt + margin) {
          trap.acts.push({ label, skipped: `${Math.round(at - trap.drawnAt)} ms after the card was drawn` });
          return;
        }
        trap.acts.push({ label, ms: Math.round(at - trap.drawnAt), armed: form.hasAttribute('data-armed'), ...ACTS[act.name](form, act.key) });
      };
      const watch = new MutationObserver(() => {
        const form = formOf();
        if (!form || form.hidden) return;
        if (trap.drawnAt === null) {
          trap.drawnAt = performance.now();
          trap.ringWhenDrawn = getComputedStyle(form).outlineColor;
          if (act) {
            run('in the task that drew it');
            for (const ms of [40, 120, 250]) setTimeout(() => run(`${ms} ms later`), ms);
          }
        }
        if (trap.armedAt === null && form.hasAttribute('data-armed')) {
          trap.armedAt = performance.now();
          watch.disconnect();
        }
      });
      watch.observe(document.getElementById('queue'), { subtree: true, childList: true, attributes: true, attributeFilter: ['hidden', 'data-armed'] });
    },
    { title, act, margin: ARM_DELAY_MS - 100 },
  );
}

/** What the trap saw, once the card it watched is armed; every act it made was refused. */
async function sprungTrap(t) {
  await page.waitForFunction(() => window.trap?.armedAt !== null);
  const trap = await page.evaluate(() => window.trap);
  const made = trap.acts.filter((a) => !a.skipped);
  assert.ok(made.length >= 1 && made[0].label === 'in the task that drew it', JSON.stringify(trap.acts));
  for (const act of made) {
    assert.equal(act.armed, false, JSON.stringify(act));
    assert.equal(act.inCard, true, `the act reached the card: ${JSON.stringify(act)}`);
    assert.equal(act.prevented, true, `the card took ${JSON.stringify(act)}`);
  }
  const waited = Math.round(trap.armedAt - trap.drawnAt);
  t.diagnostic(`acts refused: ${made.map((a) => a.label).join(', ')}; the card took keys ${waited} ms after it was drawn (ARM_DELAY_MS ${ARM_DELAY_MS})`);
  assert.ok(waited >= ARM_DELAY_MS, `armed ${waited} ms after it was drawn`);
  return waited;
}

test('two confirms waiting: Y pressed twice answers only the first', { timeout: STEP_MS }, async (t) => {
  const first = call('ask_confirm', { question: 'Run the unit tests now?', timeout_ms: 60_000 });
  await armedCard('Run the unit tests now?').waitFor();
  const second = call('ask_confirm', { question: 'Delete the production database backup from March?', timeout_ms: 120_000 });
  await page.locator('article.card[data-collapsed]', { hasText: 'Delete the production database backup' }).waitFor();
  await setTrap('Delete the production database backup from March?', { name: 'key', key: 'y' });

  await page.keyboard.press('y');
  assert.equal((await first.result()).confirmed, true, 'the first is answered');
  await sprungTrap(t);

  // Read, then answered: the second card takes its own answer, and only that.
  await armedCard('Delete the production database backup from March?').waitFor();
  await page.keyboard.press('n');
  const r = await second.result();
  assert.equal(r.status, 'answered');
  assert.equal(r.confirmed, false, 'no Y pressed before the card was seen answered it');
});

test('a double Enter after a text answer does not decide the next card, a permission request', { timeout: STEP_MS }, async (t) => {
  const text = call('ask_text', { question: 'Name the release branch', timeout_ms: 60_000 });
  await armedCard('Name the release branch').waitFor();
  const input = { command: 'npm publish', description: 'Publish the package' };
  const approve = call('approve', { tool_name: 'Bash', input, tool_use_id: 'toolu_arming_1' });
  await page.locator('article.card[data-collapsed]', { hasText: 'Allow Bash?' }).waitFor();
  await setTrap('Allow Bash?', { name: 'key', key: 'Enter' });

  await page.keyboard.type('release-7');
  await page.keyboard.press('Enter');
  assert.equal((await text.result()).answer, 'release-7');
  await sprungTrap(t);
  const trap = await page.evaluate(() => window.trap);
  // A real Enter there would press Deny; refused (default prevented), it presses nothing.
  assert.equal(trap.acts[0].on, 'Deny', 'the permission card opened with the focus on Deny');

  const c = armedCard('Allow Bash?');
  await c.getByRole('button', { name: 'Allow' }).click();
  assert.deepEqual(await approve.result(), { behavior: 'allow', updatedInput: input }, 'only the click after it was seen decided');
});

test('a double-click on a permission request\'s inbox row does not allow it', { timeout: STEP_MS }, async (t) => {
  const text = call('ask_text', { question: 'Which branch to tag?', timeout_ms: 60_000 });
  await armedCard('Which branch to tag?').waitFor();
  const input = { command: 'git push --force origin main' };
  const approve = call('approve', { tool_name: 'Bash', input, tool_use_id: 'toolu_arming_2' });
  const row = page.locator('article.card[data-collapsed]', { hasText: 'Allow Bash?' }).locator('.card-row');
  await row.waitFor();
  await setTrap('Allow Bash?', { name: 'clickAllow' });

  // The first click opens the card in the row's place; the trap clicks Allow at once, as the
  // second click of a double-click whose target the card put under the pointer.
  await row.click();
  await sprungTrap(t);

  const c = armedCard('Allow Bash?');
  await c.getByRole('button', { name: 'Deny' }).click();
  const decision = await approve.result();
  assert.equal(decision.behavior, 'deny', `no click before the card was seen allowed it: ${JSON.stringify(decision)}`);

  await armedCard('Which branch to tag?').waitFor();
  await page.keyboard.type('main');
  await page.keyboard.press('Enter');
  assert.equal((await text.result()).answer, 'main');
});

test('a card that moves up when the card above it goes must be seen again before it takes a key', { timeout: STEP_MS }, async (t) => {
  // A question typed in that then times out stays where it is, greyed, with the next one open
  // below it; dismissing it moves the next one up, where the pointer and the keys were.
  const gone = call('ask_text', { question: 'Which changelog entry is this?', timeout_ms: 2500 });
  await armedCard('Which changelog entry is this?').waitFor();
  await page.keyboard.type('Fixed the upload');
  const next = call('ask_confirm', { question: 'Publish the release notes?', timeout_ms: 60_000 });
  assert.equal((await gone.result()).status, 'timeout');
  const closed = page.locator('article.card[data-closed]', { hasText: 'Which changelog entry is this?' });
  await closed.waitFor();
  // It looks closed in both themes: no key hints, and a Submit that looks like no button.
  for (const scheme of ['dark', 'light']) {
    await page.emulateMedia({ colorScheme: scheme });
    assert.equal(await closed.locator('.him-hint').isVisible(), false, `${scheme}: a closed card shows no key hints`);
    const submit = await closed.locator('.him-submit').evaluate((el) => {
      const probe = document.createElement('div');
      probe.style.background = 'var(--him-surface)';
      el.parentElement.append(probe);
      const surface = getComputedStyle(probe).backgroundColor;
      probe.remove();
      return { disabled: el.disabled, background: getComputedStyle(el).backgroundColor, surface };
    });
    assert.equal(submit.disabled, true);
    assert.equal(submit.background, submit.surface, `${scheme}: a disabled Submit is not filled like one to press`);
  }
  await armedCard('Publish the release notes?').waitFor();

  // In the page: in the task that takes the closed card away, a Y where the keys go then.
  await page.evaluate(() => {
    const trap = (window.moveTrap = { movedAt: null });
    const queue = document.getElementById('queue');
    const watch = new MutationObserver(() => {
      if ([...queue.children].some((c) => c.hasAttribute('data-closed'))) return;
      watch.disconnect();
      const form = [...queue.querySelectorAll('form.him-form')].find((f) => !f.hidden);
      const event = new KeyboardEvent('keydown', { key: 'y', bubbles: true, cancelable: true });
      (document.activeElement ?? document.body).dispatchEvent(event);
      Object.assign(trap, { movedAt: performance.now(), armed: form.hasAttribute('data-armed'), prevented: event.defaultPrevented });
      new MutationObserver((_, again) => {
        if (!form.hasAttribute('data-armed')) return;
        again.disconnect();
        trap.armedAt = performance.now();
      }).observe(form, { attributes: true, attributeFilter: ['data-armed'] });
    });
    watch.observe(queue, { childList: true });
  });
  await closed.getByRole('button', { name: 'Dismiss this question' }).click();
  await page.waitForFunction(() => window.moveTrap.armedAt !== undefined);
  const trap = await page.evaluate(() => window.moveTrap);
  assert.equal(trap.armed, false, 'moved up: no longer armed');
  assert.equal(trap.prevented, true, 'the Y in that task was refused');
  t.diagnostic(`armed again ${Math.round(trap.armedAt - trap.movedAt)} ms after it moved`);

  await armedCard('Publish the release notes?').waitFor();
  await page.keyboard.press('n');
  assert.equal((await next.result()).confirmed, false, 'only the key after it was seen again answered');
});

test('a new card is ringed in the accent colour until it takes keys, then the ring fades', { timeout: STEP_MS }, async () => {
  await setTrap('Rotate the API key?', null);
  const q = call('ask_confirm', { question: 'Rotate the API key?', timeout_ms: 60_000 });
  await armedCard('Rotate the API key?').waitFor();
  const form = armedCard('Rotate the API key?').locator('form');
  const accent = await form.evaluate((el) => {
    const probe = document.createElement('span');
    probe.style.color = 'var(--him-accent)';
    el.append(probe);
    const colour = getComputedStyle(probe).color;
    probe.remove();
    return colour;
  });
  const trap = await page.evaluate(() => window.trap);
  assert.equal(trap.ringWhenDrawn, accent, 'ringed as it was drawn');
  await page.waitForFunction((el) => getComputedStyle(el).outlineColor === 'rgba(0, 0, 0, 0)', await form.elementHandle());
  await page.keyboard.press('y');
  assert.equal((await q.result()).confirmed, true);
});

test('no console errors or warnings', () => {
  assert.deepEqual(problems, []);
});
