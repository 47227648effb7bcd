// Real Qwen Code, headless (`qwen -p`), with him registered exactly as `him config qwen`
// prints it, in ~/.qwen/settings.json of a fresh home (plus only HIM_RUNTIME_DIR in its `env`,
// so that no test reaches a real browser). Its model is a loopback stand-in of the Chat
// Completions API (Qwen's `openai` auth type, OPENAI_BASE_URL). Qwen Code 0.24 lists MCP tools
// to the model by name and lets it reach them through its `tool_call` tool, which is what the
// scripted model calls, naming `mcp__him__ask_choice`; him's native host, started as Chrome
// starts it with an extension stand-in on its stdio, shows the question and answers it, and
// the answer must reach the model as the tool result.
//
// The snippet carries `"trust": true`. Without it, `qwen -p` (in its default auto mode) first
// asks the model whether to allow each call of him's tool, and declines the call when the
// answer is to block it: the second test shows that, its stand-in answering "block".
//
// Needs HIM_BIN and Qwen Code: HIM_QWEN (its cli-entry.js), or `@qwen-code/qwen-code` from npm
// in tests/e2e/node22 (where `cargo test` installs it, pinned; written against 0.24.4; it
// needs Node 22, on which this file runs). Without it the tests skip, saying so — and fail
// instead under HIM_E2E=1.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  RESPOND_IN_SCHEMA,
  findQwen,
  startChatModel,
  startHost,
  stopAllHosts,
  toolMessage,
  untilHostListens,
} from './standins.mjs';

const HIM_BIN = process.env.HIM_BIN;
const QWEN = findQwen();
const skip = QWEN ? false : 'Qwen Code is not installed (npm install --prefix tests/e2e/node22, or set HIM_QWEN)';
if (skip && process.env.HIM_E2E === '1') throw new Error(`HIM_E2E=1: ${skip}`);
if (skip) console.log(`# skipped: ${skip}`);

const TOOL = 'mcp__him__ask_choice';
const QUESTION = { question: 'Which colour should the button be?', options: ['red', 'blue'] };

let tmp;
let runtimeDir;
let model;

before(async () => {
  if (skip) return;
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  tmp = mkdtempSync(path.join(tmpdir(), 'him-qwen-'));
  chmodSync(tmp, 0o700);
  runtimeDir = path.join(tmp, 'run');
  mkdirSync(runtimeDir, { mode: 0o700 });
  model = await startChatModel();
  model.call = { name: 'tool_call', arguments: { name: TOOL, arguments: QUESTION } };
});

after(() => {
  stopAllHosts();
  model?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** `him config qwen`'s stdout, parsed, with the stand-in model chosen as Qwen's provider. */
function settingsJson() {
  const settings = JSON.parse(execFileSync(HIM_BIN, ['config', 'qwen'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  settings.mcpServers.him.env.HIM_RUNTIME_DIR = runtimeDir;
  settings.security = { auth: { selectedType: 'openai' } };
  settings.privacy = { usageStatisticsEnabled: false };
  return settings;
}

/** Runs `qwen -p` in a fresh project and home; resolves with its stdout and stderr. */
function runQwen(name, settings, prompt) {
  const home = path.join(tmp, `home-${name}`);
  const project = path.join(tmp, `project-${name}`);
  mkdirSync(path.join(home, '.qwen'), { recursive: true });
  mkdirSync(project);
  writeFileSync(path.join(home, '.qwen', 'settings.json'), JSON.stringify(settings, null, 2));
  model.requests.length = 0;
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [QWEN, '-p', prompt, '--output-format', 'json'],
      {
        cwd: project,
        timeout: 120_000,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          OPENAI_API_KEY: 'stand-in-key',
          OPENAI_BASE_URL: model.url,
          OPENAI_MODEL: 'gpt-test',
        },
      },
      (err, stdout, stderr) => resolve({ err, said: `qwen -p (${err?.message ?? 'exit 0'}):\n${stdout}\n${stderr}` }),
    );
    child.stdin.end();
  });
}

/** The requests of Qwen's auto-mode permission check. */
const permissionChecks = () => model.requests.filter((r) => (r.tools ?? []).some((t) => t.function?.name === RESPOND_IN_SCHEMA));

/** The text of the tool result the model got. */
function toolResultText(said) {
  const result = toolMessage(model.requests);
  assert.ok(result, `the model got no tool result\n${said}`);
  return typeof result.content === 'string' ? result.content : result.content.map((c) => c.text ?? '').join('');
}

test("Qwen Code configured as `him config qwen` prints it asks the panel, and the person's answer reaches the model", { skip, timeout: 150_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { choice: 'blue' } }));
  await untilHostListens(runtimeDir);
  const started = Date.now();
  const { err, said } = await runQwen('trusted', settingsJson(), 'Ask me which colour the button should be.');
  console.log(`# qwen -p took ${Date.now() - started} ms`);
  host.stop();
  assert.match(JSON.stringify(model.requests[0]?.messages ?? []), new RegExp(TOOL), `Qwen did not list him's tools to the model\n${said}`);
  assert.equal(host.asks.length, 1, `asks that reached the panel: ${JSON.stringify(host.asks)}\n${said}`);
  assert.equal(host.asks[0].form.title, QUESTION.question);
  const text = toolResultText(said);
  assert.match(text, /"status":"answered"/, text);
  assert.match(text, /"answer":"blue"/, text);
  assert.equal(permissionChecks().length, 0, 'a trusted server needs no permission check');
  assert.equal(err, null, said);
});

test('without "trust": true, qwen -p puts the call to its permission check and declines it when that blocks', { skip, timeout: 150_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { choice: 'blue' } }));
  await untilHostListens(runtimeDir);
  const settings = settingsJson();
  delete settings.mcpServers.him.trust;
  model.block = true;
  const { said } = await runQwen('untrusted', settings, 'Ask me which colour the button should be.');
  host.stop();
  // Qwen 0.24.4 asks in two stages: a quick verdict, then a second look at a block.
  const checks = permissionChecks();
  assert.ok(checks.length >= 1, `no permission check\n${said}`);
  for (const check of checks) assert.match(JSON.stringify(check.messages), new RegExp(`Tool: ${TOOL}`));
  // The model got the refusal as the tool's result, so the question never went out.
  assert.match(toolResultText(said), /^Blocked by auto mode policy/);
  assert.equal(host.asks.length, 0, `asks that reached the panel: ${JSON.stringify(host.asks)}`);
});
