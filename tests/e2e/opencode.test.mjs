// Real OpenCode, headless (`opencode run`), with him registered exactly as `him config
// opencode` prints it, in ~/.config/opencode/opencode.json of a fresh home (plus only
// HIM_RUNTIME_DIR in its `environment`, so that no test reaches a real browser). Its model is
// a loopback stand-in of the Chat Completions API, an `@ai-sdk/openai-compatible` provider in
// the same file: the scripted model calls him's ask_choice (OpenCode names it
// `him_ask_choice`), him's native host, started as Chrome starts it with an extension stand-in
// on its stdio, shows the question and answers it, and the answer must reach the model as the
// tool result. OpenCode reads servers only from its own `mcp` block: the generic `mcpServers`
// JSON pasted into opencode.json is ignored without a word, and before issue 23 `him config`
// had nothing else to offer.
//
// Needs HIM_BIN and OpenCode: HIM_OPENCODE (its binary), or `opencode-ai` from npm in
// tests/e2e/node22 (where `cargo test` installs it, pinned; written against 1.18.33). Without
// it the test skips, saying so — and fails instead under HIM_E2E=1.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findOpencode, startChatModel, startHost, stopAllHosts, toolMessage, untilHostListens } from './standins.mjs';

const HIM_BIN = process.env.HIM_BIN;
const OPENCODE = findOpencode();
const skip = OPENCODE ? false : 'OpenCode is not installed (npm install --prefix tests/e2e/node22, or set HIM_OPENCODE)';
if (skip && process.env.HIM_E2E === '1') throw new Error(`HIM_E2E=1: ${skip}`);
if (skip) console.log(`# skipped: ${skip}`);

let tmp;
let runtimeDir;
let model;

before(async () => {
  if (skip) return;
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  tmp = mkdtempSync(path.join(tmpdir(), 'him-opencode-'));
  chmodSync(tmp, 0o700);
  runtimeDir = path.join(tmp, 'run');
  mkdirSync(runtimeDir, { mode: 0o700 });
  model = await startChatModel();
});

after(() => {
  stopAllHosts();
  model?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** `him config opencode`'s stdout, parsed, with the stand-in model added as a provider. */
function opencodeJson() {
  const config = JSON.parse(execFileSync(HIM_BIN, ['config', 'opencode'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  config.mcp.him.environment.HIM_RUNTIME_DIR = runtimeDir;
  config.provider = {
    standin: {
      npm: '@ai-sdk/openai-compatible',
      name: 'loopback stand-in',
      options: { baseURL: model.url, apiKey: 'stand-in-key' },
      models: { 'gpt-test': { name: 'gpt-test', tool_call: true } },
    },
  };
  return config;
}

/** Runs `opencode run` in a fresh project and home; resolves with its stdout and stderr. */
function runOpencode(config, prompt) {
  const home = path.join(tmp, 'home');
  const project = path.join(tmp, 'project');
  mkdirSync(path.join(home, '.config', 'opencode'), { recursive: true });
  mkdirSync(project);
  writeFileSync(path.join(home, '.config', 'opencode', 'opencode.json'), JSON.stringify(config, null, 2));
  return new Promise((resolve) => {
    const child = execFile(
      OPENCODE,
      ['run', '--model', 'standin/gpt-test', prompt],
      {
        cwd: project,
        timeout: 120_000,
        // Offline: no model list, update check, default plugins, LSP downloads or sharing.
        env: {
          PATH: process.env.PATH,
          HOME: home,
          OPENCODE_DISABLE_MODELS_FETCH: '1',
          OPENCODE_DISABLE_AUTOUPDATE: '1',
          OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
          OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
          OPENCODE_DISABLE_SHARE: '1',
        },
      },
      (err, stdout, stderr) => resolve({ err, stdout, stderr }),
    );
    // `opencode run` reads a prompt from a stdin that is not a terminal until it closes.
    child.stdin.end();
  });
}

test("OpenCode configured as `him config opencode` prints it asks the panel, and the person's answer reaches the model", { skip, timeout: 150_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { choice: 'blue' } }));
  await untilHostListens(runtimeDir);
  model.call = { name: 'him_ask_choice', arguments: { question: 'Which colour should the button be?', options: ['red', 'blue'] } };
  const started = Date.now();
  const { err, stdout, stderr } = await runOpencode(opencodeJson(), 'Ask me which colour the button should be.');
  console.log(`# opencode run took ${Date.now() - started} ms`);
  host.stop();
  const said = `opencode run (${err?.message ?? 'exit 0'}):\n${stdout}\n${stderr}`;
  assert.ok(model.declared.includes('him_ask_choice'), `OpenCode offered the model none of him's tools; it declared ${JSON.stringify(model.declared)}\n${said}`);
  assert.equal(host.asks.length, 1, `asks that reached the panel: ${JSON.stringify(host.asks)}\n${said}`);
  assert.equal(host.asks[0].form.title, 'Which colour should the button be?');
  const result = toolMessage(model.requests);
  assert.ok(result, `the model got no tool result\n${said}`);
  const text = typeof result.content === 'string' ? result.content : JSON.stringify(result.content);
  assert.match(text, /"status":"answered"/, text);
  assert.match(text, /"answer":"blue"/, text);
  assert.equal(err, null, said);
});
