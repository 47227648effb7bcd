// Real Claude Code in its interactive terminal UI (in tmux), with him as its PermissionRequest
// hook, configured exactly as `him config claude-code --hooks` prints it. The scripted model
// (a loopback stand-in of its API) asks to run one shell command; the extension stand-in on
// him's native host allows or denies, or no browser is connected and Claude Code's own prompt
// must be what is left waiting on the screen. Its own AskUserQuestion goes through the same
// hook. Hooks do not fire in `claude -p`, so this is the only way to see the hook work where
// people use it. Last, him as its MCP server: the terminal declares MCP tasks, which `claude
// -p` does not, and him's ask_text must still come back as the tool's own result; and a call
// still running at its backgrounding point returns `pending` first (HIM_RETURN_AFTER_MS), the
// answer typed in real Chromium's side panel reaching the model as get_answer's result.
//
// Needs HIM_BIN, tmux and the Claude Code CLI (see standins.mjs findClaude; written against
// 2.1.332), and for the `pending` test Debian's Chromium (or HIM_CHROMIUM). Without them it
// skips, saying so — and fails instead under HIM_E2E=1.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findClaude, startAnthropicModel, startHost, stopAllHosts, toolResult, until, untilHostListens } from './standins.mjs';
import { Terminal, haveTmux } from './tmux.mjs';
import { PANEL_URL, everyCardArmed, launchWithExtension } from './browser.mjs';

/** How long the real CLI may take to draw its first screen on a loaded machine (an event waited for, not a sleep). */
const START_MS = 45_000;

const HIM_BIN = process.env.HIM_BIN;
const CLAUDE = findClaude();
const skip = !CLAUDE
  ? 'the Claude Code CLI is not installed (npm install @anthropic-ai/claude-code, or set HIM_CLAUDE)'
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
  tmp = mkdtempSync(path.join(tmpdir(), 'him-ctui-'));
  runtimeDir = path.join(tmp, 'run');
  mkdirSync(runtimeDir, { mode: 0o700 });
  model = await startAnthropicModel();
});

after(async () => {
  for (const t of terminals) await t.close();
  stopAllHosts();
  model?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/**
 * Starts Claude Code in a terminal, in a fresh project and home whose settings.json is what
 * `him config claude-code --hooks` prints, and asks it to write the marker file.
 */
async function startClaude(name, command, call = { name: 'Bash', input: { command, description: 'Write the marker' } }, { files = {}, next } = {}) {
  const project = path.join(tmp, name);
  const home = path.join(tmp, `home-${name}`);
  mkdirSync(project);
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(project, file), text);
  mkdirSync(path.join(home, '.claude'), { recursive: true });
  const settings = execFileSync(HIM_BIN, ['config', 'claude-code', '--hooks'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  writeFileSync(path.join(home, '.claude', 'settings.json'), settings);
  // Claude Code's first-run screens (theme, onboarding, trusting the folder, using an API key
  // from the environment), answered as Claude Code itself records the answers.
  writeFileSync(
    path.join(home, '.claude.json'),
    JSON.stringify({
      hasCompletedOnboarding: true,
      theme: 'dark',
      customApiKeyResponses: { approved: ['sk-ant-test'], rejected: [] },
      projects: { [project]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
    }),
  );
  model.call = call;
  model.next = next;
  model.requests.length = 0;
  const terminal = new Terminal(tmp, [CLAUDE, '--model', 'claude-sonnet-4-5'], {
    cwd: project,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      TERM: 'xterm-256color',
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_API_KEY: 'sk-ant-test',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      // Claude Code passes its whole environment to hooks; the host listens here.
      HIM_RUNTIME_DIR: runtimeDir,
    },
  });
  terminals.push(terminal);
  await terminal.until(/\? for shortcuts/, START_MS);
  terminal.type('Write the marker file.');
  terminal.press('Enter');
  return { terminal, project, marker: path.join(project, 'marker.txt') };
}

/** The tool_result the model got for the Bash call, once it comes. */
const untilToolResult = () => until('the tool result to reach the model', () => toolResult(model.requests));

/**
 * Waits until the turn is over on the screen (the model's closing "done") and says whether
 * Claude Code's own permission prompt is still there. Claude Code draws its prompt while the
 * hook runs and takes it down once the hook decides, so only the settled screen tells.
 */
async function promptLeftOnScreen(terminal) {
  await terminal.until(/^● done$/m);
  return /Do you want to proceed\?|Enter to select/.test(terminal.screen());
}

const text = (result) =>
  typeof result.content === 'string' ? result.content : result.content.map((c) => c.text ?? '').join('');

test('allowed in the panel, the command runs and no prompt is left in the terminal', { skip, timeout: 60_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { decision: 'allow' } }));
  await untilHostListens(runtimeDir);
  const command = 'echo him-was-here > marker.txt';
  const { terminal, marker } = await startClaude('allow', command);
  const result = await untilToolResult();
  host.stop();
  assert.equal(readFileSync(marker, 'utf8').trim(), 'him-was-here', 'the command ran');
  assert.notEqual(result.is_error, true, text(result));
  assert.equal(host.asks.length, 1, 'one card reached the panel');
  assert.equal(host.asks[0].form.permission.tool_name, 'Bash');
  assert.equal(host.asks[0].form.permission.input.command, command, 'the command verbatim');
  assert.equal(host.asks[0].agent?.name ?? 'Claude Code', 'Claude Code');
  assert.equal(await promptLeftOnScreen(terminal), false);
  assert.match(terminal.screen(), /Allowed by PermissionRequest hook/);
});

test('denied in the panel with a note, it does not run and the model reads the note', { skip, timeout: 60_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { decision: 'deny' }, note: 'not on a Friday' }));
  await untilHostListens(runtimeDir);
  const { terminal, marker } = await startClaude('deny', 'echo should-not-run > marker.txt');
  const result = await untilToolResult();
  host.stop();
  assert.equal(host.asks.length, 1);
  assert.equal(existsSync(marker), false, 'the command did not run');
  assert.equal(result.is_error, true);
  assert.match(text(result), /not on a Friday/);
  assert.equal(await promptLeftOnScreen(terminal), false);
});

test("with no browser the hook defers: Claude Code's own prompt waits, and answering it there works", { skip, timeout: 60_000 }, async () => {
  rmSync(path.join(runtimeDir, 'hosts'), { recursive: true, force: true });
  const { terminal, marker } = await startClaude('none', 'echo asked-in-the-terminal > marker.txt');
  await terminal.until(/Do you want to proceed\?/);
  const screen = terminal.screen();
  assert.match(screen, /echo asked-in-the-terminal > marker\.txt/, 'the prompt shows the command');
  assert.match(screen, /1\. Yes/);
  assert.equal(existsSync(marker), false, 'nothing ran before the person answered');
  assert.equal(toolResult(model.requests), null, 'the model is still waiting');
  // The hook has long exited by now (with no host it answers in milliseconds); the prompt
  // stays until the person answers it.
  await new Promise((r) => setTimeout(r, 1000));
  assert.match(terminal.screen(), /Do you want to proceed\?/, 'the prompt is still waiting');
  assert.equal(existsSync(marker), false);
  // Claude Code drops keys that come in the first moments after it draws a prompt (so a key
  // meant for something else does not answer it): press Enter (on "1. Yes") until it takes.
  const result = await until('the terminal prompt to take the answer', async () => {
    terminal.press('Enter');
    await new Promise((r) => setTimeout(r, 300));
    return toolResult(model.requests);
  });
  assert.notEqual(result.is_error, true, text(result));
  assert.equal(readFileSync(marker, 'utf8').trim(), 'asked-in-the-terminal');
  assert.equal(await promptLeftOnScreen(terminal), false);
});

test("AskUserQuestion goes through the hook too: the panel's answers reach the model", { skip, timeout: 60_000 }, async () => {
  const questions = [
    { question: 'Which database?', header: 'DB', multiSelect: false, options: [{ label: 'Postgres', description: 'a server' }, { label: 'SQLite', description: 'one file' }] },
    { question: 'Which checks?', header: 'CI', multiSelect: true, options: [{ label: 'Lint, format', description: 'clippy, rustfmt' }, { label: 'Fuzz', description: 'cargo fuzz' }] },
  ];
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { q0: 'SQLite', q1: ['Lint, format', 'Fuzz'] } }));
  await untilHostListens(runtimeDir);
  const { terminal } = await startClaude('questions', '', { name: 'AskUserQuestion', input: { questions } });
  const result = await untilToolResult();
  host.stop();
  assert.equal(host.asks.length, 1);
  assert.deepEqual(host.asks[0].form.fields.map((f) => f.type), ['radio', 'text', 'multi_select', 'text']);
  assert.equal(
    text(result).split('\n\n<system-reminder>')[0],
    'Your questions have been answered: "Which database?"="SQLite", "Which checks?"=""Lint, format", Fuzz". ' +
      'You can now continue with these answers in mind.',
  );
  assert.equal(await promptLeftOnScreen(terminal), false, "Claude Code's own question form is gone");
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The tool_results the model got, in order, once `n` of them came. */
const untilResults = (n) =>
  until(`${n} tool results to reach the model`, () => {
    const results = (model.requests.at(-1)?.messages ?? []).flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((c) => c.type === 'tool_result');
    return results.length >= n && results;
  }, 40_000);

// Claude Code 2.1.332 offers a command's rule in the hook input's permission_suggestions
// (`{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test *"}],
// "behavior": "allow", "destination": "localSettings"}`), which its own prompt shows as
// "Yes, and don't ask again for: npm test *". him offers it for the session only.
test('"Allow for this session" in the panel: the call runs, and the same call again runs without a second card', { skip, timeout: 90_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { decision: 'allow_session' } }));
  await untilHostListens(runtimeDir);
  const npmTest = { name: 'Bash', input: { command: 'npm test', description: 'Run the tests' } };
  // The scripted model runs `npm test` twice in the same session, then says "done".
  const next = (body) => {
    const done = body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((c) => c.type === 'tool_result').length;
    return done < 2 && (body.tools ?? []).some((t) => t.name === 'Bash') ? npmTest : null;
  };
  const packageJson = JSON.stringify({ name: 'webshop', private: true, scripts: { test: 'echo ran >> marker.txt' } });
  const { terminal, project, marker } = await startClaude('session', '', npmTest, { files: { 'package.json': packageJson }, next });
  const results = await untilResults(2);
  await terminal.until(/^● done$/m);
  host.stop();
  for (const r of results) assert.notEqual(r.is_error, true, text(r));
  assert.equal(readFileSync(marker, 'utf8'), 'ran\nran\n', 'npm test ran twice');
  // The second call's result reached the model after any hook run for it would have asked:
  // one card in all.
  assert.equal(host.asks.length, 1, 'the second call was not asked about');
  const { permission } = host.asks[0].form;
  assert.deepEqual(permission.session_rules, ['Bash(npm test *)']);
  assert.deepEqual(host.asks[0].form.fields[0].options.map((o) => o.value), ['allow', 'deny', 'allow_session']);
  assert.equal(existsSync(path.join(project, '.claude', 'settings.local.json')), false, 'no settings file was written');
  assert.equal(await promptLeftOnScreen(terminal), false);
});

test('a plain Allow on the same card adds no rule: the same call again is asked again', { skip, timeout: 90_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { decision: 'allow' } }));
  await untilHostListens(runtimeDir);
  const npmTest = { name: 'Bash', input: { command: 'npm test', description: 'Run the tests' } };
  const next = (body) => {
    const done = body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((c) => c.type === 'tool_result').length;
    return done < 2 && (body.tools ?? []).some((t) => t.name === 'Bash') ? npmTest : null;
  };
  const packageJson = JSON.stringify({ name: 'webshop', private: true, scripts: { test: 'echo ran >> marker.txt' } });
  const { terminal, marker } = await startClaude('session-plain', '', npmTest, { files: { 'package.json': packageJson }, next });
  await untilResults(2);
  await terminal.until(/^● done$/m);
  host.stop();
  assert.equal(readFileSync(marker, 'utf8'), 'ran\nran\n');
  assert.equal(host.asks.length, 2, 'each call was asked about');
});

/** The card the stand-in holds unanswered, once Claude Code's own prompt is on the screen too. */
async function cardAndPromptBothWaiting(host, terminal) {
  await terminal.until(/Do you want to proceed\?/);
  await until('the card to reach the panel', () => host.asks.length === 1);
  return host.asks[0].id;
}

// Claude Code 2.1.332 leaves the hook running when its own prompt is answered Yes (see
// src/permission/hook/overtaken.rs): him sees the call's result in the transcript and withdraws.
test('answered Yes in the terminal first, the card leaves the panel and a late Deny there changes nothing', { skip, timeout: 60_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => null);
  await untilHostListens(runtimeDir);
  const { terminal, marker } = await startClaude('terminal-yes', 'echo ran >> marker.txt');
  const id = await cardAndPromptBothWaiting(host, terminal);
  assert.deepEqual(host.withdrawn, [], 'the card waits while the terminal prompt does');
  const result = await until('the terminal prompt to take the answer', async () => {
    terminal.press('Enter');
    await sleep(300);
    return toolResult(model.requests);
  });
  // Well inside the hook's own 60 s wait, after which it would leave anyway.
  const withdraw = await until('the card to be withdrawn', () => host.withdrawn.find((w) => w.id === id), 10_000);
  assert.equal(withdraw.reason, 'answered', 'the panel is told it was answered elsewhere');
  host.answer(id, { action: 'submit', values: { decision: 'deny' }, note: 'too late' });
  assert.equal(await promptLeftOnScreen(terminal), false);
  await sleep(1000);
  host.stop();
  assert.notEqual(result.is_error, true, text(result));
  assert.equal(readFileSync(marker, 'utf8'), 'ran\n', 'the command ran once');
  const results = model.requests.flatMap((b) => b.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))).filter((c) => c.type === 'tool_result');
  assert.ok(results.every((r) => r.is_error !== true && !/too late/.test(text(r))), 'the late deny reached nobody');
  assert.equal(host.asks.length, 1, 'asked once');
});

// Answered No (Esc) there, Claude Code 2.1.332 sends the hook's group SIGTERM, then SIGKILL.
test('answered No in the terminal first, the card leaves the panel and a late Allow there runs nothing', { skip, timeout: 60_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => null);
  await untilHostListens(runtimeDir);
  const { terminal, marker } = await startClaude('terminal-no', 'echo should-not-run >> marker.txt');
  const id = await cardAndPromptBothWaiting(host, terminal);
  // Esc is the prompt's "No"; pressed again only while the prompt is still up, as it drops
  // keys that come just after it is drawn.
  await until('the terminal prompt to take the No', async () => {
    if (/Do you want to proceed\?/.test(terminal.screen())) terminal.press('Escape');
    await sleep(500);
    return !/Do you want to proceed\?/.test(terminal.screen());
  });
  const withdraw = await until('the card to be withdrawn', () => host.withdrawn.find((w) => w.id === id), 10_000);
  assert.equal(withdraw.reason, 'cancelled');
  host.answer(id, { action: 'submit', values: { decision: 'allow' } });
  await sleep(1500);
  host.stop();
  assert.equal(existsSync(marker), false, 'the command did not run');
  assert.doesNotMatch(terminal.screen(), /Allowed by PermissionRequest hook/);
  assert.equal(host.asks.length, 1, 'asked once');
});

// "No, and tell Claude what to do differently" (Tab on No) neither stops the hook nor
// ends the turn in Claude Code 2.1.332: the rejection is the call's result in the
// transcript, which him sees.
test('answered No with a note in the terminal first, the card leaves the panel and a late Allow there runs nothing', { skip, timeout: 60_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => null);
  await untilHostListens(runtimeDir);
  const { terminal, marker } = await startClaude('terminal-no-note', 'echo should-not-run >> marker.txt');
  const id = await cardAndPromptBothWaiting(host, terminal);
  // Each key again only until the screen shows it took (keys just after the prompt is
  // drawn are dropped). A key is pressed again only once the selected line stayed as it was
  // for 3 s: judging after a fixed 300 ms pressed Down twice on a loaded machine, when the
  // first press had not been drawn yet, and the selection overshot.
  const selected = () => (terminal.screen().match(/❯.*/) ?? [''])[0];
  const pressUntil = (key, shown) =>
    until(`${key} to take`, async () => {
      if (shown.test(terminal.screen())) return true;
      const before = selected();
      terminal.press(key);
      const end = Date.now() + 3000;
      while (selected() === before && Date.now() < end) await sleep(50);
      return shown.test(terminal.screen());
    });
  await pressUntil('Down', /❯ 2\. Yes/);
  await pressUntil('Down', /❯ 3\. No/);
  await pressUntil('Tab', /3\. No, and tell Claude what to do differently/);
  terminal.type('use make instead');
  await terminal.until(/3\. No, use make instead/);
  const result = await until('the rejection to reach the model', async () => {
    if (/Do you want to proceed\?/.test(terminal.screen())) terminal.press('Enter');
    await sleep(300);
    return toolResult(model.requests);
  });
  assert.equal(result.is_error, true);
  assert.match(text(result), /use make instead/, 'the note typed in the terminal reached the model');
  const withdraw = await until('the card to be withdrawn', () => host.withdrawn.find((w) => w.id === id), 10_000);
  assert.equal(withdraw.reason, 'answered');
  host.answer(id, { action: 'submit', values: { decision: 'allow' } });
  await sleep(1500);
  host.stop();
  assert.equal(existsSync(marker), false, 'the command did not run');
  assert.equal(host.asks.length, 1, 'asked once');
});

// Claude Code's terminal declares the MCP tasks extension on every request (2.1.332), and a
// task it gets it moves to the background at once, handing the result to the model later as
// "[SYSTEM NOTIFICATION - NOT USER INPUT] … Do NOT interpret this as … response to any
// pending question". So him gives Claude Code the blocking call (HIM_TASKS=auto): the
// person's answer is the ask tool's own result. Under HIM_TASKS=on it gets a task, and the
// second test shows what becomes of the answer then.

/** The tool calls the model made in the conversation `body` carries. */
const callsIn = (body) =>
  body.messages.flatMap((m) => (m.role === 'assistant' && Array.isArray(m.content) ? m.content : [])).filter((c) => c.type === 'tool_use');

/**
 * The scripted model of these tests: it waits for him's tools with Claude Code's own
 * WaitForMcpServers while him is still connecting (Claude Code connects MCP servers beside
 * the first turn), then calls him's ask_text once, then says "done".
 */
function askThroughHim(body) {
  const offered = (body.tools ?? []).map((t) => t.name);
  const made = callsIn(body).map((c) => c.name);
  if (made.includes('mcp__him__ask_text')) return null;
  if (offered.includes('mcp__him__ask_text')) return { name: 'mcp__him__ask_text', input: { question: 'Which branch should I deploy?' } };
  if (offered.includes('WaitForMcpServers') && !made.includes('WaitForMcpServers')) return { name: 'WaitForMcpServers', input: { servers: ['him'] } };
  return null;
}

/** The tool_result Claude Code sent the model for its call of `name`, once it comes. */
function resultOf(name) {
  return until(`the result of ${name} to reach the model`, () => {
    const id = model.requests.flatMap(callsIn).find((c) => c.name === name)?.id;
    return id && model.requests.flatMap((b) => b.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))).find((c) => c.type === 'tool_result' && c.tool_use_id === id);
  }, 40_000);
}

/**
 * Starts Claude Code with him as its MCP server (behind a `tee` that keeps what Claude Code
 * sends it, in the returned file), ask_text allowed, and asks it a question.
 */
async function startClaudeWithHim(name, himEnv = {}, claudeEnv = {}) {
  const project = path.join(tmp, name);
  const home = path.join(tmp, `home-${name}`);
  const tmuxDir = path.join(tmp, `tmux-${name}`);
  mkdirSync(project);
  mkdirSync(tmuxDir);
  mkdirSync(path.join(home, '.claude'), { recursive: true });
  writeFileSync(path.join(home, '.claude', 'settings.json'), JSON.stringify({ permissions: { allow: ['mcp__him__ask_text', 'mcp__him__get_answer'] } }));
  writeFileSync(
    path.join(home, '.claude.json'),
    JSON.stringify({
      hasCompletedOnboarding: true,
      theme: 'dark',
      customApiKeyResponses: { approved: ['sk-ant-test'], rejected: [] },
      projects: { [project]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
    }),
  );
  const sent = path.join(tmp, `${name}-sent.jsonl`);
  const serve = path.join(tmp, `${name}-serve.sh`);
  writeFileSync(serve, `#!/bin/sh\ntee -a '${sent}' | "$HIM_BIN" serve\n`, { mode: 0o755 });
  const mcpConfig = path.join(tmp, `${name}-mcp.json`);
  const env = { HIM_BIN, HIM_RUNTIME_DIR: runtimeDir, HIM_LOG: 'warn', ...himEnv };
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { him: { command: serve, args: [], env } } }));
  model.next = himEnv.HIM_RETURN_AFTER_MS ? askAndCollect : askThroughHim;
  model.requests.length = 0;
  const terminal = new Terminal(tmuxDir, [CLAUDE, '--model', 'claude-sonnet-4-5', '--mcp-config', mcpConfig, '--strict-mcp-config'], {
    cwd: project,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      TERM: 'xterm-256color',
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_API_KEY: 'sk-ant-test',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      // him's tools in the model's tool list itself, not behind Claude Code's tool search.
      ENABLE_TOOL_SEARCH: 'false',
      ...claudeEnv,
    },
  });
  terminals.push(terminal);
  await terminal.until(/\? for shortcuts/, START_MS);
  terminal.type('Ask me which branch to deploy.');
  terminal.press('Enter');
  return { terminal, sent };
}

/** The capabilities Claude Code declared on its `tools/call` to him. */
function declaredOnCall(sent) {
  const call = readFileSync(sent, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .find((m) => m.method === 'tools/call');
  return call?.params?._meta?.['io.modelcontextprotocol/clientCapabilities'];
}

test("Claude Code, which declares MCP tasks, gets the panel's answer as ask_text's own result", { skip, timeout: 90_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { answer: 'main' } }));
  await untilHostListens(runtimeDir);
  const { terminal, sent } = await startClaudeWithHim('tasks-auto');
  try {
    const result = await resultOf('mcp__him__ask_text');
    assert.notEqual(result.is_error, true, text(result));
    const answer = JSON.parse(text(result).split('\n\n<system-reminder>')[0]);
    assert.equal(answer.status, 'answered');
    assert.equal(answer.answer, 'main');
    assert.equal(answer.via, 'extension');
    assert.ok(declaredOnCall(sent)?.extensions?.['io.modelcontextprotocol/tasks'], 'Claude Code declared the tasks extension on the call');
    assert.equal(host.asks.length, 1);
    await terminal.until(/^● done$/m);
  } finally {
    host.stop();
    model.next = undefined;
  }
});

test('under HIM_TASKS=on Claude Code gets a task, and the answer reaches the model marked as not the user\'s', { skip, timeout: 90_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => null);
  await untilHostListens(runtimeDir);
  await startClaudeWithHim('tasks-on', { HIM_TASKS: 'on' });
  try {
    const started = text(await resultOf('mcp__him__ask_text'));
    assert.match(started, /started server-side task .* moved to the background/s, started);
    await until('the card to reach the panel', () => host.asks.length === 1);
    host.answer(host.asks[0].id, { action: 'submit', values: { answer: 'main' } });
    const notified = await until('the task notification to reach the model', () =>
      model.requests
        .flatMap((b) => b.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])))
        .map((c) => c.text ?? '')
        .find((t) => t.includes('<task-notification>')),
    );
    assert.match(notified, /\[SYSTEM NOTIFICATION - NOT USER INPUT\]/);
    assert.match(notified, /"answer":"main"/);
  } finally {
    host.stop();
    model.next = undefined;
  }
});

// Issue 24.3: Claude Code's terminal moves a call still running at 120 s to the background
// (here at 20 s: CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS), and an answer that comes later reaches
// the model only as "[SYSTEM NOTIFICATION - NOT USER INPUT]". So ask_text returns `pending`
// before that (HIM_RETURN_AFTER_MS, here 15 s; `him config claude-code` sets 100 s), the
// question open in the real side panel, and the model calls get_answer as next_step says; the
// person answers at ~30 s, and the answer is get_answer's own tool result.

const CHROMIUM = process.env.HIM_CHROMIUM ?? '/usr/lib/chromium/chromium';
const QUESTION = 'Which branch should I deploy?';

/** The tool_result blocks of every request the stand-in got, each with the call it answers. */
function toolResults() {
  const calls = new Map(model.requests.flatMap(callsIn).map((c) => [c.id, c]));
  return model.requests
    .flatMap((b) => b.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])))
    .filter((c) => c.type === 'tool_result')
    .map((r) => ({ result: r, call: calls.get(r.tool_use_id) }));
}

/** A him tool's result as the model reads it: the JSON object before Claude Code's reminders. */
function himResult(result) {
  try {
    return JSON.parse(text(result).split('\n\n<system-reminder>')[0]);
  } catch {
    return null;
  }
}

/**
 * The scripted model of the `pending` test: it asks with ask_text (after WaitForMcpServers,
 * as askThroughHim), and while him's last result says `pending` it does what next_step says:
 * get_answer with the question_id named there. Then "done".
 */
function askAndCollect(body) {
  const last = body.messages?.at(-1);
  const result = (Array.isArray(last?.content) ? last.content : []).find((c) => c.type === 'tool_result');
  const answered = result && callsIn(body).find((c) => c.id === result.tool_use_id);
  if (answered?.name.startsWith('mcp__him__')) {
    const read = himResult(result);
    const id = read?.status === 'pending' && read.next_step.match(/get_answer with question_id "([0-9a-f]+)"/)?.[1];
    return id ? { name: 'mcp__him__get_answer', input: { question_id: id } } : null;
  }
  return askThroughHim(body);
}

/** The results of him's `tool` the model has got so far, read. */
const resultsOf = (tool) => toolResults().filter((r) => r.call?.name === `mcp__him__${tool}`);

const chromiumSkip = skip || (!existsSync(CHROMIUM) && `Chromium is not installed at ${CHROMIUM} (set HIM_CHROMIUM)`);
if (chromiumSkip && !skip && process.env.HIM_E2E === '1') throw new Error(`HIM_E2E=1: ${chromiumSkip}`);

test('a call past its limit returns pending before Claude Code backgrounds it, and the answer given in the panel at 30 s is get_answer\'s own result', { skip: chromiumSkip, timeout: 90_000 }, async () => {
  const browser = await launchWithExtension({ himBin: HIM_BIN, chromiumPath: CHROMIUM, prefix: 'him-ctui-panel-' });
  try {
    const page = await browser.context.newPage();
    await page.goto(PANEL_URL);
    await page.getByRole('status').filter({ hasText: /^Connected/ }).waitFor({ timeout: 10_000 });
    const { terminal } = await startClaudeWithHim(
      'pending',
      { HIM_RUNTIME_DIR: browser.runtimeDir, HIM_STATE_DIR: browser.stateDir, HIM_RETURN_AFTER_MS: '15000' },
      { CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS: '20000' },
    );
    const box = page.getByRole('textbox', { name: QUESTION });
    await box.waitFor({ timeout: 30_000 });
    const asked = Date.now();

    // At 15 s ask_text returns `pending`, which the model reads and acts on.
    const [first] = await until('ask_text\'s result to reach the model', () => resultsOf('ask_text').length && resultsOf('ask_text'), 40_000);
    const pending = himResult(first.result);
    assert.equal(pending?.status, 'pending', text(first.result));
    assert.notEqual(first.result.is_error, true);
    // get_answer waits again, up to the same 15 s: past Claude Code's 20 s for the first call.
    const [again] = await until('get_answer\'s first result to reach the model', () => resultsOf('get_answer').length && resultsOf('get_answer'), 40_000);
    assert.equal(himResult(again.result)?.status, 'pending', text(again.result));
    assert.equal(again.call.input.question_id, pending.question_id, 'the id next_step named');
    // Claude Code's screen shows the third call to him (get_answer again) running, in the
    // foreground: nothing was moved to the background.
    await terminal.until(/Calling him 3 times/, 30_000);
    assert.doesNotMatch(terminal.screen(), /background/i);
    const waited = Date.now() - asked;
    assert.ok(waited >= 20_000, `the answer comes after Claude Code's 20 s (${waited} ms)`);

    // All the while the card stood as it was: not marked as no longer awaited, its deadline
    // the question's own (5 min), not get_answer's 15 s.
    const card = page.locator('article.card', { has: page.getByRole('heading', { name: QUESTION }) });
    assert.equal(await card.getAttribute('data-kept'), null, 'not marked kept');
    const left = (await card.locator('.card-head').textContent()).match(/(\d+):(\d\d) left/);
    assert.ok(left && Number(left[1]) * 60 + Number(left[2]) > 180, `the question's own deadline: ${left?.[0]}`);
    await everyCardArmed(page);
    await box.fill('release-7');
    await box.press('Enter');

    const collected = await until(
      'the answer to reach the model',
      () => resultsOf('get_answer').find((r) => himResult(r.result)?.status === 'answered'),
      30_000,
    );
    assert.notEqual(collected.result.is_error, true);
    const answer = himResult(collected.result);
    assert.equal(answer.answer, 'release-7');
    assert.equal(answer.question_id, pending.question_id);
    assert.equal(answer.tool, 'ask_text');
    // Nothing reached the model as a background task's notification (as under HIM_TASKS=on).
    const said = model.requests
      .flatMap((b) => b.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])))
      .map((c) => (c.type === 'tool_result' ? text(c) : (c.text ?? '')));
    assert.deepEqual(said.filter((t) => /<task-notification>|\[SYSTEM NOTIFICATION/.test(t)), []);
    await terminal.until(/^● done$/m);
    assert.equal(await card.count(), 0, 'the card left the panel');
  } finally {
    model.next = undefined;
    await browser.context.close().catch(() => {});
    rmSync(browser.tmp, { recursive: true, force: true });
  }
});
