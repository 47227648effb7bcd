// Real Codex, headless (`codex exec`), with him registered exactly as `him config codex` prints
// it, appended to $CODEX_HOME/config.toml of a fresh home (plus only HIM_RUNTIME_DIR in its
// `[mcp_servers.him.env]`, so that no test reaches a real browser). Its model provider's
// `base_url` points at a loopback stand-in of the Responses API, where Codex offers an MCP
// server's tools in a namespace of their own (`mcp__him`): the scripted model calls him's
// ask_choice there, him's native host, started as Chrome starts it with an extension stand-in
// on its stdio, shows the question and answers it, and the answer must reach the model as the
// tool result. With no browser connected, `codex exec` (approval policy `never`) refuses the
// form him offers through elicitation at once, and him hands the question back for the chat
// (as the snippet says), instead of taking that refusal as the person's. Codex 0.171 speaks
// protocol 2025-06-18 to him.
//
// Needs HIM_BIN and the Codex CLI (HIM_CODEX, or `@openai/codex` from npm in tests/e2e/node22;
// written against 0.171.0). Without it the tests skip, saying so — and fail instead under
// HIM_E2E=1.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findCodex, functionCallOutput, startHost, startResponsesModel, stopAllHosts, untilHostListens } from './standins.mjs';

const HIM_BIN = process.env.HIM_BIN;
const CODEX = findCodex();
const skip = CODEX ? false : 'the Codex CLI is not installed (npm install --prefix tests/e2e/node22, or set HIM_CODEX)';
if (skip && process.env.HIM_E2E === '1') throw new Error(`HIM_E2E=1: ${skip}`);
if (skip) console.log(`# skipped: ${skip}`);

let tmp;
let model;
let runs = 0;

before(async () => {
  if (skip) return;
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  tmp = mkdtempSync(path.join(tmpdir(), 'him-codex-'));
  chmodSync(tmp, 0o700);
  model = await startResponsesModel();
});

after(() => {
  stopAllHosts();
  model?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/**
 * Runs `codex exec` in a fresh project and CODEX_HOME whose config.toml is the stand-in model
 * provider followed by what `him config codex` prints; resolves with its error, stdout and
 * stderr.
 */
function runCodex(runtimeDir, prompt) {
  runs += 1;
  const project = path.join(tmp, `project-${runs}`);
  const codexHome = path.join(tmp, `codex-${runs}`);
  mkdirSync(project);
  mkdirSync(codexHome);
  const snippet = execFileSync(HIM_BIN, ['config', 'codex'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  // The snippet ends in its [mcp_servers.him.env] table, so the line after it goes there.
  assert.match(snippet, /\[mcp_servers\.him\.env\]\nHIM_TIMEOUT_MS = "\d+"\n$/, snippet);
  writeFileSync(
    path.join(codexHome, 'config.toml'),
    [
      'model = "gpt-test"',
      'model_provider = "standin"',
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
      snippet.trimEnd(),
      `HIM_RUNTIME_DIR = ${JSON.stringify(runtimeDir)}`,
      '',
    ].join('\n'),
  );
  model.requests.length = 0;
  return new Promise((resolve) => {
    const child = execFile(
      CODEX,
      ['exec', '--skip-git-repo-check', prompt],
      {
        cwd: project,
        timeout: 120_000,
        env: { PATH: process.env.PATH, HOME: path.join(tmp, 'home'), CODEX_HOME: codexHome, STANDIN_API_KEY: 'sk-test' },
      },
      (err, stdout, stderr) => resolve({ err, stdout, stderr }),
    );
    // `codex exec` reads more of the prompt from a stdin that is not a terminal until it closes.
    child.stdin.end();
  });
}

/** A private runtime directory for one run's him and host. */
function runtime(name) {
  const dir = path.join(tmp, name);
  mkdirSync(dir, { mode: 0o700 });
  return dir;
}

/** him's result as the model got it: the JSON after Codex's "Output:" line. */
function himResult(said) {
  const output = functionCallOutput(model.requests)?.output;
  assert.ok(typeof output === 'string', `the model got no tool result\n${said}`);
  const json = output.slice(output.indexOf('{'));
  return JSON.parse(json);
}

const ASK = { name: 'ask_choice', namespace: 'mcp__him', arguments: { question: 'Which colour should the button be?', options: ['red', 'blue'] } };

test("Codex configured as `him config codex` prints it asks the panel in codex exec, and the person's answer reaches the model", { skip, timeout: 150_000 }, async () => {
  const runtimeDir = runtime('run-panel');
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { choice: 'blue' } }));
  await untilHostListens(runtimeDir);
  model.call = ASK;
  const { err, stdout, stderr } = await runCodex(runtimeDir, 'Ask me which colour the button should be.');
  host.stop();
  const said = `codex exec (${err?.message ?? 'exit 0'}):\n${stdout}\n${stderr}`;
  const him = (model.requests[0]?.tools ?? []).find((t) => t.type === 'namespace' && t.name === 'mcp__him');
  assert.ok(him?.tools?.some((t) => t.name === 'ask_choice'), `Codex offered the model none of him's tools\n${said}`);
  assert.equal(host.asks.length, 1, `asks that reached the panel: ${JSON.stringify(host.asks)}\n${said}`);
  assert.equal(host.asks[0].form.title, 'Which colour should the button be?');
  const result = himResult(said);
  assert.equal(result.status, 'answered', JSON.stringify(result));
  assert.equal(result.via, 'extension');
  assert.equal(result.answer, 'blue');
  assert.equal(err, null, said);
});

test('with no browser, codex exec refuses the form at once and him hands the question back for the chat', { skip, timeout: 150_000 }, async () => {
  const runtimeDir = runtime('run-alone');
  model.call = ASK;
  const { err, stdout, stderr } = await runCodex(runtimeDir, 'Ask me which colour the button should be.');
  const said = `codex exec (${err?.message ?? 'exit 0'}):\n${stdout}\n${stderr}`;
  const result = himResult(said);
  // Codex declared elicitation, and declined the form faster than a person could.
  assert.equal(result.client_elicitation, true, JSON.stringify(result));
  assert.equal(result.status, 'needs_user_input', JSON.stringify(result));
  assert.equal(result.auto_reject_suspected, true, JSON.stringify(result));
  assert.match(result.next_step, /ask them this question in the chat/, result.next_step);
  assert.match(result.message, /1\. red\n {2}2\. blue/, result.message);
  assert.equal(err, null, said);
});
