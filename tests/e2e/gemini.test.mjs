// Real Gemini CLI, headless (`gemini -p`), reaches him over Streamable HTTP (`him serve
// --http`, configured with `httpUrl` as `him config http` says, `"trust": true` so that -p
// offers and calls the server's tools) against a loopback stand-in of its model API
// (GOOGLE_GEMINI_BASE_URL): the scripted model calls him's ask_text, him's native host,
// started as Chrome starts it with an extension stand-in on its stdio, shows the question,
// and the answer comes back to the model. Gemini CLI 0.61 speaks protocol 2025-06-18 and
// `JSON.parse`s every SSE event: an event with empty data (a priming event, which him now
// sends only to sessions of 2025-11-25 or later) made it offer the model none of him's tools
// (issue 23). And over stdio with the entry `him config gemini` prints, whose `"trust": true`
// is what makes `gemini -p` offer the model him's tools at all: without it, Gemini connects
// to him and offers the model none of them.
//
// Needs HIM_BIN and Gemini CLI: HIM_GEMINI (its gemini.js), or tests/e2e/node22 (where
// `cargo test` installs @google/gemini-cli, pinned). Without it the test skips, saying so —
// and fails instead under HIM_E2E=1.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  findGemini,
  functionResponse,
  startGeminiModel,
  startHost,
  stopAllHosts,
  untilHostListens,
} from './standins.mjs';

const HIM_BIN = process.env.HIM_BIN;
const TOKEN = 'gemini-test-token-0123456789abcdef';

const GEMINI = findGemini();
const skip = GEMINI ? false : 'Gemini CLI is not installed (npm install --prefix tests/e2e/node22, or set HIM_GEMINI)';
if (skip && process.env.HIM_E2E === '1') throw new Error(`HIM_E2E=1: ${skip}`);
if (skip) console.log(`# skipped: ${skip}`);

let tmp;
let runtimeDir;
let model;
let serve; // { url, child, stderr }

function privateDir(name) {
  const dir = path.join(tmp, name);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  return dir;
}

/** `him serve --http 127.0.0.1:0`; resolves once it says where it listens. */
function startServe() {
  const child = spawn(HIM_BIN, ['serve', '--http', '127.0.0.1:0'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: tmp,
      HIM_RUNTIME_DIR: runtimeDir,
      HIM_STATE_DIR: privateDir('state'),
      HIM_HTTP_TOKEN: TOKEN,
      HIM_LOG: 'info',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`him serve --http said nothing in time:\n${stderr}`)), 20_000);
    child.stderr.on('data', (d) => {
      stderr += d;
      const m = /serving MCP \(Streamable HTTP\) at (http:\/\/\S+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1], child, stderr: () => stderr });
      }
    });
    child.on('exit', (code) => reject(new Error(`him serve --http exited (${code}):\n${stderr}`)));
  });
}

/** him's entry in Gemini's settings.json, over HTTP. */
const overHttp = () => ({ httpUrl: serve.url, headers: { Authorization: `Bearer ${TOKEN}` }, trust: true, timeout: 600000 });

/**
 * Runs `gemini -p` in a fresh trusted project and home with `him` as the entry for him in its
 * settings.json (over HTTP unless told); resolves with its parsed JSON output and its stderr.
 */
function runGemini(prompt, him = overHttp()) {
  const home = privateDir('home');
  const project = privateDir('project');
  mkdirSync(path.join(home, '.gemini'), { recursive: true });
  writeFileSync(
    path.join(home, '.gemini', 'settings.json'),
    JSON.stringify({
      mcpServers: { him },
      security: { auth: { selectedType: 'gemini-api-key' } },
      privacy: { usageStatisticsEnabled: false },
    }),
  );
  // Without this, a folder's MCP servers stay disabled.
  writeFileSync(path.join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [project]: 'TRUST_FOLDER' }));
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [GEMINI, '-p', prompt, '--output-format', 'json'],
      {
        cwd: project,
        timeout: 120_000,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          GEMINI_API_KEY: 'stand-in-key',
          GOOGLE_GEMINI_BASE_URL: model.url,
        },
      },
      (err, stdout, stderr) => {
        try {
          resolve({ result: JSON.parse(stdout), stderr });
        } catch {
          reject(new Error(`gemini gave no JSON (${err?.message}):\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

before(async () => {
  if (skip) return;
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  tmp = mkdtempSync(path.join(tmpdir(), 'him-gemini-'));
  chmodSync(tmp, 0o700);
  runtimeDir = privateDir('run');
  model = await startGeminiModel();
  serve = await startServe();
});

after(() => {
  stopAllHosts();
  serve?.child.kill();
  model?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test('Gemini CLI over HTTP is offered him\'s tools, asks, and the person\'s answer reaches the model', { skip, timeout: 150_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { answer: 'release-2.1' } }));
  await untilHostListens(runtimeDir);
  model.call = { name: 'mcp_him_ask_text', args: { question: 'Which branch should I deploy?' } };
  let { result, stderr } = await runGemini('Ask me which branch to deploy.');
  // Gemini CLI connects to its MCP servers while it starts, and once in a loaded .ci/run
  // (other browsers and clients running beside it) it went on without him ("MCP issues
  // detected") though him answered every request. One more run in a fresh home tells that
  // apart from the defect this test is for, which leaves every run without him's tools.
  if (!model.declared.includes('mcp_him_ask_text') && /MCP issues detected/.test(stderr)) {
    console.log(`# Gemini CLI started without him once; running it again. Its stderr:\n${stderr}\nhim serve's:\n${serve.stderr()}`);
    ({ result, stderr } = await runGemini('Ask me which branch to deploy.'));
  }
  host.stop();
  assert.doesNotMatch(stderr, /Unexpected end of JSON input|SyntaxError/, 'Gemini CLI could not read an SSE event');
  assert.ok(
    model.declared.includes('mcp_him_ask_text'),
    `Gemini CLI offered the model none of him's tools; it declared ${JSON.stringify(model.declared)}\n${stderr}\nhim serve's stderr:\n${serve.stderr()}`,
  );
  assert.equal(host.asks.length, 1, `asks that reached the panel: ${JSON.stringify(host.asks)}`);
  assert.equal(host.asks[0].form.title, 'Which branch should I deploy?');
  const response = functionResponse(model.requests);
  assert.ok(response, 'the model got the tool result');
  assert.equal(response.name, 'mcp_him_ask_text');
  const text = JSON.stringify(response.response);
  assert.match(text, /release-2\.1/, text);
  assert.match(text, /answered/, text);
  assert.equal(result.stats?.tools?.totalSuccess, 1, JSON.stringify(result.stats?.tools));
  assert.match(serve.stderr(), /HTTP session opened/);
});

// The stdio entry exactly as `him config gemini` prints it (plus only HIM_RUNTIME_DIR in its
// env). Without its `"trust": true`, `gemini -p` offers the model none of him's tools at all,
// so the call below never comes (issue 23: no snippet said so).
test("Gemini CLI configured as `him config gemini` prints it is offered him's tools in -p, and the answer reaches the model", { skip, timeout: 150_000 }, async () => {
  const host = startHost(HIM_BIN, runtimeDir, () => ({ action: 'submit', values: { choice: 'blue' } }));
  await untilHostListens(runtimeDir);
  const snippet = JSON.parse(execFileSync(HIM_BIN, ['config', 'gemini'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  const him = snippet.mcpServers.him;
  him.env.HIM_RUNTIME_DIR = runtimeDir;
  model.requests.length = 0;
  model.declared = [];
  model.call = { name: 'mcp_him_ask_choice', args: { question: 'Which colour should the button be?', options: ['red', 'blue'] } };
  const { result, stderr } = await runGemini('Ask me which colour the button should be.', him);
  host.stop();
  assert.ok(
    model.declared.includes('mcp_him_ask_choice'),
    `Gemini CLI offered the model none of him's tools; it declared ${JSON.stringify(model.declared)}\n${stderr}`,
  );
  assert.equal(host.asks.length, 1, `asks that reached the panel: ${JSON.stringify(host.asks)}`);
  const response = functionResponse(model.requests);
  assert.equal(response?.name, 'mcp_him_ask_choice', JSON.stringify(response));
  const text = JSON.stringify(response.response);
  assert.match(text, /\\"answer\\":\\"blue\\"/, text);
  assert.equal(result.stats?.tools?.totalSuccess, 1, JSON.stringify(result.stats?.tools));
});

// Why the snippet carries `"trust": true`: without it Gemini CLI still connects to him and
// lists its tools (the session opens), but `gemini -p` offers the model none of them.
test('without "trust": true, gemini -p connects to him but offers the model none of its tools', { skip, timeout: 150_000 }, async () => {
  const { trust, ...untrusted } = overHttp();
  assert.equal(trust, true);
  const sessions = () => serve.stderr().match(/HTTP session opened/g)?.length ?? 0;
  const before = sessions();
  model.requests.length = 0;
  model.declared = [];
  model.call = { name: 'mcp_him_ask_text', args: { question: 'Which branch should I deploy?' } };
  let { stderr } = await runGemini('Ask me which branch to deploy.', untrusted);
  if (sessions() === before && /MCP issues detected/.test(stderr)) {
    // Gemini CLI could not reach him at all, as the first test allows once (above).
    console.log(`# Gemini CLI started without him once; running it again. Its stderr:\n${stderr}`);
    model.requests.length = 0;
    model.declared = [];
    ({ stderr } = await runGemini('Ask me which branch to deploy.', untrusted));
  }
  assert.ok(model.requests.length > 0, `the model was not asked:\n${stderr}`);
  assert.ok(sessions() > before, `Gemini CLI did not connect to him:\n${stderr}\n${serve.stderr()}`);
  assert.deepEqual(
    model.declared.filter((name) => name.startsWith('mcp_him_')),
    [],
    `Gemini CLI offered him's tools without trust:\n${stderr}`,
  );
});
