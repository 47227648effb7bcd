// Real Codex in its interactive terminal UI (in tmux), with him as its PermissionRequest hook,
// configured exactly as `him config codex --hooks` prints it (in $CODEX_HOME/hooks.json; the
// run passes --dangerously-bypass-hook-trust, as Codex runs only hooks the person trusted).
// Its model provider's `base_url` points at a loopback stand-in of the Responses API, whose
// scripted model asks to run one shell command outside the sandbox; the extension stand-in on
// him's native host allows or denies, or no browser is connected and Codex's own approval
// prompt must be what is left waiting on the screen. Hooks do not fire in `codex exec`.
//
// Needs HIM_BIN, tmux and the Codex CLI (HIM_CODEX, or `@openai/codex` from npm in
// tests/e2e/node22; written against 0.171.0). Without them it skips, saying so — and fails
// instead under HIM_E2E=1.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findCodex, functionCallOutput, startHost, startResponsesModel, stopAllHosts, until, untilHostListens } from './standins.mjs';
import { Terminal, haveTmux } from './tmux.mjs';

/** How long the real CLI may take to draw its first screen on a loaded machine (an event waited for, not a sleep). */
const START_MS = 45_000;

const HIM_BIN = process.env.HIM_BIN;
const CODEX = findCodex();
const skip = !CODEX
  ? 'the Codex CLI is not installed (npm install @openai/codex, or set HIM_CODEX)'
  : !haveTmux()
    ? 'tmux is not installed (apt-get install tmux)'
    : false;
if (skip && process.env.HIM_E2E === '1') throw new Error(`HIM_E2E=1: ${skip}`);
if (skip) console.log(`# skipped: ${skip}`);

let tmp;
let runtimeDir;
let model;
const terminals = [];

before(async () => {
  if (skip) return;
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  tmp = mkdtempSync(path.join(tmpdir(), 'him-xtui-'));
  runtimeDir = path.join(tmp, 'run');
  mkdirSync(runtimeDir, { mode: 0o700 });
  model = await startResponsesModel();
});

after(async () => {
  for (const t of terminals) await t.close();
  stopAllHosts();
  model?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/**
 * Starts Codex in a terminal, in a fresh project and CODEX_HOME whose hooks.json is what
 * `him config codex --hooks` prints, and asks it to write the marker file.
 */
async function startCodex(name, command) {
  const project = path.join(tmp, name);
  const codexHome = path.join(tmp, `codex-${name}`);
  mkdirSync(project);
  mkdirSync(codexHome);
  const hooks = execFileSync(HIM_BIN, ['config', 'codex', '--hooks'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  writeFileSync(path.join(codexHome, 'hooks.json'), hooks);
  // The model provider is the stand-in; the project is trusted (no first-run question); the
  // sandbox is read-only and Codex asks before anything runs outside it, which is what the
  // scripted model asks for (`require_escalated`).
  writeFileSync(
    path.join(codexHome, 'config.toml'),
    [
      'model = "gpt-test"',
      'model_provider = "standin"',
      'approval_policy = "on-request"',
      'sandbox_mode = "read-only"',
      '',
      '[model_providers.standin]',
      'name = "loopback stand-in"',
      `base_url = ${JSON.stringify(model.url)}`,
      'env_key = "STANDIN_API_KEY"',
      'wire_api = "responses"',
      '',
      `[projects.${JSON.stringify(project)}]`,
      'trust_level = "trusted"',
      '',
    ].join('\n'),
  );
  model.call = {
    name: 'exec_command',
    arguments: { cmd: command, sandbox_permissions: 'require_escalated', justification: 'Write the marker file?' },
  };
  model.requests.length = 0;
  const terminal = new Terminal(tmp, [CODEX, '--no-daemon', '--dangerously-bypass-hook-trust'], {
    cwd: project,
    env: {
      PATH: process.env.PATH,
      HOME: path.join(tmp, 'home'),
      CODEX_HOME: codexHome,
      TERM: 'xterm-256color',
      STANDIN_API_KEY: 'sk-test',
      // The hook runs in Codex's environment; the host listens here.
      HIM_RUNTIME_DIR: runtimeDir,
    },
  });
  terminals.push(terminal);
  await terminal.until(/Ask Codex to do anything/, START_MS);
  terminal.type('Write the marker file.');
  // Codex reads keys that come in a quick burst as a paste, where Enter is a new line: press
  // Enter until the message goes to the model.
  await until('the message to reach the model', async () => {
    terminal.press('Enter');
    await new Promise((r) => setTimeout(r, 300));
    return model.requests.length > 0;
  });
  return { terminal, marker: path.join(project, 'marker.txt') };
}

const untilOutput = () => until('the command output to reach the model', () => functionCallOutput(model.requests));

/** Waits until the turn is over on the screen and says whether Codex's own prompt is left. */
async function promptLeftOnScreen(terminal) {
  await terminal.until(/^• done$/m);
  return /Would you like to run the following command\?/.test(terminal.screen());
}

test('allowed in the panel, the command runs and no prompt is left in the terminal', { skip, timeout: 60_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { decision: 'allow' } }));
  await untilHostListens(runtimeDir);
  const command = 'echo him-was-here > marker.txt';
  const { terminal, marker } = await startCodex('allow', command);
  await untilOutput();
  host.stop();
  assert.equal(readFileSync(marker, 'utf8').trim(), 'him-was-here', 'the command ran');
  assert.equal(host.asks.length, 1, 'one card reached the panel');
  const { permission } = host.asks[0].form;
  assert.equal(permission.tool_name, 'Bash');
  assert.equal(permission.input.command, command, 'the command verbatim');
  assert.equal(await promptLeftOnScreen(terminal), false);
});

test('denied in the panel with a note, it does not run and the model reads the note', { skip, timeout: 60_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { decision: 'deny' }, note: 'not on a Friday' }));
  await untilHostListens(runtimeDir);
  const { terminal, marker } = await startCodex('deny', 'echo should-not-run > marker.txt');
  const output = await untilOutput();
  host.stop();
  assert.equal(host.asks.length, 1);
  assert.equal(existsSync(marker), false, 'the command did not run');
  assert.match(JSON.stringify(output.output), /not on a Friday/);
  assert.equal(await promptLeftOnScreen(terminal), false);
});

test("with no browser the hook defers: Codex's own prompt waits, and answering it there works", { skip, timeout: 60_000 }, async () => {
  rmSync(path.join(runtimeDir, 'hosts'), { recursive: true, force: true });
  const { terminal, marker } = await startCodex('none', 'echo asked-in-the-terminal > marker.txt');
  await terminal.until(/Would you like to run the following command\?/);
  assert.match(terminal.screen(), /\$ echo asked-in-the-terminal > marker\.txt/, 'the prompt shows the command');
  assert.equal(existsSync(marker), false, 'nothing ran before the person answered');
  // The hook has long exited by now (with no host it answers in milliseconds); the prompt
  // stays until the person answers it.
  await new Promise((r) => setTimeout(r, 1000));
  assert.match(terminal.screen(), /Would you like to run the following command\?/, 'the prompt is still waiting');
  assert.equal(functionCallOutput(model.requests), null, 'the model is still waiting');
  // "y" is the prompt's own key for "Yes, proceed"; pressed until the prompt takes it, in case
  // it drops keys that come before it is ready.
  await until('the terminal prompt to take the answer', async () => {
    terminal.type('y');
    await new Promise((r) => setTimeout(r, 300));
    return functionCallOutput(model.requests);
  });
  assert.equal(readFileSync(marker, 'utf8').trim(), 'asked-in-the-terminal');
  assert.equal(await promptLeftOnScreen(terminal), false);
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Codex 0.171.0 shows "Running hook", not its approval prompt, while the hook waits, so the
// person cannot answer there first; what they can do in the terminal is interrupt the turn
// (Esc), which SIGKILLs the hook: the host sees its link close and withdraws the card.
test('interrupted in the terminal while the card waits, the card leaves the panel and a late Allow there runs nothing', { skip, timeout: 60_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => null);
  await untilHostListens(runtimeDir);
  const { terminal, marker } = await startCodex('interrupt', 'echo should-not-run > marker.txt');
  await until('the card to reach the panel', () => host.asks.length === 1);
  const { id } = host.asks[0];
  await terminal.until(/Running hook/);
  assert.doesNotMatch(terminal.screen(), /Would you like to run the following command\?/, "Codex's own prompt waits for the hook");
  await until('the terminal to take the interrupt', async () => {
    if (/Running hook/.test(terminal.screen())) terminal.press('Escape');
    await sleep(500);
    return /Conversation interrupted/.test(terminal.screen());
  });
  const withdraw = await until('the card to be withdrawn', () => host.withdrawn.find((w) => w.id === id), 10_000);
  // Codex closes the hook's pipes and kills it: a hook that sees its stdout close first
  // withdraws the card itself ('shutdown'); one killed first leaves it to the host, which
  // withdraws it when the link closes ('cancelled'). Which comes first is Codex's timing.
  assert.ok(['cancelled', 'shutdown'].includes(withdraw.reason), withdraw.reason);
  host.answer(id, { action: 'submit', values: { decision: 'allow' } });
  await sleep(1500);
  host.stop();
  assert.equal(existsSync(marker), false, 'the command did not run');
  assert.equal(functionCallOutput(model.requests), null, 'nothing ran for the model to read');
  assert.doesNotMatch(terminal.screen(), /Would you like to run the following command\?/);
});

// When Codex 0.171.0 exits it leaves the hook running, with nobody reading its stdout: him
// sees the pipe close and withdraws the card rather than leaving it for the whole wait.
test('Codex ends while the card waits: the card leaves the panel', { skip, timeout: 60_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => null);
  await untilHostListens(runtimeDir);
  const { terminal, marker } = await startCodex('exit', 'echo should-not-run > marker.txt');
  await until('the card to reach the panel', () => host.asks.length === 1);
  const { id } = host.asks[0];
  await terminal.close();
  const withdraw = await until('the card to be withdrawn', () => host.withdrawn.find((w) => w.id === id), 10_000);
  assert.equal(withdraw.reason, 'shutdown', 'the panel is told the agent shut down');
  host.stop();
  assert.equal(existsSync(marker), false, 'the command did not run');
});
