// Who is asking, as the side panel's card says it (issue 23.5), with real bridges and real
// clients in front of the real `him`, in real Chromium:
// - supergateway 4.0 (stateless Streamable HTTP, its default) in front of `him serve`, driven
//   by the TS SDK over HTTP: supergateway initializes him with its own name, so the card says
//   "MCP client via supergateway";
// - mcp-remote 0.15 (stdio → remote HTTP) in front of `him serve --http`, started by the TS
//   SDK as a client starts it: the card says "<client> via mcp-remote";
// - a client named `mcp` (the Python SDK's default name) is no bridge;
// - a project named in the call's `_meta` with a bidi override and control characters is
//   drawn marked, and cut to 64 characters.
//
// Needs HIM_BIN, HIM_CHROMIUM (or Debian's Chromium) and tests/e2e/node_modules. Run by
// tests/integration/extension_in_real_browsers_and_clients.rs.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PANEL_URL, everyCardArmed, launchWithExtension } from './browser.mjs';

const HIM_BIN = process.env.HIM_BIN;
const CHROMIUM = process.env.HIM_CHROMIUM ?? '/usr/lib/chromium/chromium';
const TOKEN = 'asker-test-token-0123456789abcdef';
const STEP_MS = 30_000;
const require = createRequire(import.meta.url);
const SUPERGATEWAY = path.join(path.dirname(require.resolve('supergateway/package.json')), 'dist', 'index.js');
const MCP_REMOTE = path.join(path.dirname(require.resolve('mcp-remote/package.json')), 'dist', 'proxy.js');

let tmp;
let runtimeDir;
let context;
let page;
let problems;
/** Processes and clients to end after the tests. */
const children = [];
const clients = [];

/** A folder under the test's own directory, for him to run in (its name is the project). */
function folder(name) {
  const dir = path.join(tmp, name);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  return dir;
}

/** The environment him gets: the test's runtime directory, no real browser's. */
function himEnv(extra = {}) {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: folder('home'), HIM_RUNTIME_DIR: runtimeDir, HIM_LOG: 'info', ...extra };
}

/** Starts `command args`; resolves once its output matches `ready` (its match). */
function startUntil(command, args, options, ready, what) {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${output}`)), STEP_MS);
    const read = (d) => {
      output += d;
      const m = ready.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({ child, match: m, output: () => output });
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => reject(new Error(`${what} exited (${code}):\n${output}`)));
  });
}

/** A free loopback port, for supergateway, which takes no port 0. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

async function connected(client, transport) {
  clients.push(client);
  await client.connect(transport);
  return client;
}

/** The card of the question titled `title`, once the panel shows it. */
async function cardOf(title) {
  const card = page.locator('article.card', { has: page.getByRole('heading', { name: title }) });
  await card.waitFor({ timeout: STEP_MS });
  return card;
}

/** Asks `title` through `client` (with `meta` as the call's _meta); answers in the panel; returns the card's "who" text. */
async function askAndAnswer(client, title, meta) {
  const call = client.callTool({ name: 'ask_text', arguments: { question: title }, ...(meta ? { _meta: meta } : {}) }, undefined, { timeout: STEP_MS });
  const card = await cardOf(title);
  const who = card.locator('.who');
  // What it says: the agent's name (its coloured mark, `.mark`), then the project.
  const text = await who.textContent();
  const shown = { text, marks: await who.locator('.him-mark').allTextContents() };
  await everyCardArmed(page);
  await card.getByRole('textbox').fill('fine');
  await card.getByRole('textbox').press('Enter');
  const result = await call;
  assert.equal(result.structuredContent?.status, 'answered', JSON.stringify(result));
  return shown;
}

before(async () => {
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  const launched = await launchWithExtension({ himBin: HIM_BIN, chromiumPath: CHROMIUM, prefix: 'him-asker-', args: ['--no-first-run', '--disable-sync'] });
  ({ tmp, runtimeDir, context, problems } = launched);
  page = await context.newPage();
  await page.goto(PANEL_URL);
  await page.getByRole('status').filter({ hasText: /^Connected/ }).waitFor({ timeout: 10_000 });
});

after(async () => {
  for (const client of clients) await client.close().catch(() => {});
  for (const child of children) child.kill();
  await context?.close().catch(() => {});
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test('supergateway in front of him serve: the card says "via supergateway"', { timeout: 60_000 }, async () => {
  const port = await freePort();
  // Stateless Streamable HTTP, supergateway's default: it starts `him serve` once, and
  // initializes it with its own clientInfo for each request.
  await startUntil(
    process.execPath,
    [SUPERGATEWAY, '--stdio', `${HIM_BIN} serve`, '--port', String(port), '--outputTransport', 'streamableHttp'],
    { cwd: folder('gateway-project'), env: himEnv() },
    /Listening on port/,
    'supergateway',
  );
  const client = await connected(
    new Client({ name: 'web-chat', version: '1.0.0' }),
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)),
  );
  const { text } = await askAndAnswer(client, 'Through supergateway?');
  assert.equal(text, 'MCP client via supergateway · gateway-project');
});

test('mcp-remote in front of him serve --http: the card names the client "via mcp-remote"', { timeout: 60_000 }, async () => {
  const http = await startUntil(
    HIM_BIN,
    ['serve', '--http', '127.0.0.1:0'],
    { cwd: folder('http-folder'), env: himEnv({ HIM_STATE_DIR: folder('http-state'), HIM_HTTP_TOKEN: TOKEN }) },
    // To the line's end: output comes in chunks, and a chunk may end inside the URL.
    /serving MCP \(Streamable HTTP\) at (http:\/\/\S+)\n/,
    'him serve --http',
  );
  const url = `${http.match[1]}?project=remote-shop`;
  // As a client starts mcp-remote: a stdio server command with the URL and a header.
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MCP_REMOTE, url, '--allow-http', '--header', `Authorization: Bearer ${TOKEN}`],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: folder('remote-home') },
    stderr: 'pipe',
  });
  let said = '';
  transport.stderr?.on('data', (d) => (said += d));
  const client = new Client({ name: 'Claude Desktop', version: '0.9.0' });
  const { text } = await connected(client, transport)
    .then(() => askAndAnswer(client, 'Through mcp-remote?'))
    .catch((err) => assert.fail(`${err}\n--- mcp-remote ---\n${said}\n--- him serve --http ---\n${http.output()}`));
  assert.equal(text, 'Claude Desktop via mcp-remote · remote-shop');
});

test('a client named mcp is only a client; a project named in _meta is drawn marked and cut to 64 characters', { timeout: 60_000 }, async () => {
  const client = await connected(
    new Client({ name: 'mcp', version: '0.1.0' }),
    new StdioClientTransport({ command: HIM_BIN, args: ['serve'], cwd: folder('plain-project'), env: himEnv(), stderr: 'ignore' }),
  );
  const plain = await askAndAnswer(client, 'Named mcp?');
  assert.equal(plain.text, 'mcp · plain-project');

  // An override that would show "exe.txt" as "txt.exe", a bell, and more than 64 characters.
  const project = `report\u202Etxt.exe\u0007${'x'.repeat(80)}`;
  const marked = await askAndAnswer(client, 'Which project?', { 'dev.him/project': project });
  assert.deepEqual(marked.marks, ['⟨U+202E⟩', '⟨U+0007⟩'], marked.text);
  assert.ok(!/[\u202E\u0007]/.test(marked.text), `a raw control character is drawn: ${JSON.stringify(marked.text)}`);
  const shownProject = marked.text.split(' · ')[1];
  assert.equal(shownProject, `report⟨U+202E⟩txt.exe⟨U+0007⟩${'x'.repeat(63 - 'report\u202Etxt.exe\u0007'.length)}…`);
});

test('the worker and the panel logged no error or warning', () => {
  assert.deepEqual(problems, []);
});
