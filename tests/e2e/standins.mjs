// Stand-ins the real-agent tests share: scripted loopback models that speak Anthropic's
// Messages API (what Claude Code calls at ANTHROPIC_BASE_URL), OpenAI's Responses API
// (what Codex calls at a model provider's `base_url`), Google's Gemini API (what Gemini
// CLI calls at GOOGLE_GEMINI_BASE_URL) and OpenAI's Chat Completions API (what OpenCode and
// Qwen Code call at a provider's base URL), and him's native host started as Chrome starts it
// with an extension stand-in on its stdio that answers every ask.

import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';

export const EXTENSION_ID = 'mephldgjjmdajmfkonfbblipccnbagig';

/**
 * The Claude Code CLI's native binary: HIM_CLAUDE, or the one npm installed in
 * tests/e2e/node22 (where `cargo test` installs it, beside Node 22, which it wants) or in
 * tests/e2e (a hand install); null when there is none.
 */
export function findClaude() {
  if (process.env.HIM_CLAUDE) return process.env.HIM_CLAUDE;
  for (const from of ['./node22/package.json', './package.json']) {
    try {
      const require = createRequire(new URL(from, import.meta.url));
      const pkg = require.resolve(`@anthropic-ai/claude-code-${process.platform}-${process.arch}/package.json`);
      const bin = path.join(path.dirname(pkg), 'claude');
      if (existsSync(bin)) return bin;
    } catch {}
  }
  return null;
}

/**
 * The Codex CLI's native binary: HIM_CODEX, or the one npm installed (its platform package)
 * in tests/e2e/node22 or tests/e2e; null when there is none.
 */
export function findCodex() {
  if (process.env.HIM_CODEX) return process.env.HIM_CODEX;
  const triple = { x64: 'x86_64', arm64: 'aarch64' }[process.arch];
  for (const from of ['./node22/package.json', './package.json']) {
    try {
      const require = createRequire(new URL(from, import.meta.url));
      const pkg = require.resolve(`@openai/codex-${process.platform}-${process.arch}/package.json`);
      const bin = path.join(path.dirname(pkg), 'vendor', `${triple}-unknown-${process.platform}-musl`, 'bin', 'codex');
      if (existsSync(bin)) return bin;
    } catch {}
  }
  return null;
}

/**
 * Gemini CLI's entry script (run it with Node: this file's tests run on the Node 22 of
 * tests/e2e/node22): HIM_GEMINI, or the one npm installed in tests/e2e/node22 or tests/e2e;
 * null when there is none.
 */
export function findGemini() {
  if (process.env.HIM_GEMINI) return process.env.HIM_GEMINI;
  for (const from of ['./node22/package.json', './package.json']) {
    try {
      const require = createRequire(new URL(from, import.meta.url));
      const pkg = require.resolve('@google/gemini-cli/package.json');
      const bin = path.join(path.dirname(pkg), require(pkg).bin.gemini);
      if (existsSync(bin)) return bin;
    } catch {}
  }
  return null;
}

/**
 * OpenCode's native binary: HIM_OPENCODE, or the one npm installed with `opencode-ai` (its
 * platform package; the `-baseline` build on an x64 CPU without AVX2, as OpenCode's own
 * postinstall picks) in tests/e2e/node22 or tests/e2e; null when there is none.
 */
export function findOpencode() {
  if (process.env.HIM_OPENCODE) return process.env.HIM_OPENCODE;
  const platform = { win32: 'windows' }[process.platform] ?? process.platform;
  let avx2 = process.arch !== 'x64';
  try {
    avx2 ||= /(^|\s)avx2(\s|$)/i.test(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {}
  const name = `opencode-${platform}-${process.arch}${avx2 ? '' : '-baseline'}`;
  for (const from of ['./node22/package.json', './package.json']) {
    try {
      const require = createRequire(new URL(from, import.meta.url));
      const bin = path.join(path.dirname(require.resolve(`${name}/package.json`)), 'bin', 'opencode');
      if (existsSync(bin)) return bin;
    } catch {}
  }
  return null;
}

/**
 * Qwen Code's entry script (run it with Node 22, which it needs): HIM_QWEN, or the one npm
 * installed in tests/e2e/node22 or tests/e2e; null when there is none.
 */
export function findQwen() {
  if (process.env.HIM_QWEN) return process.env.HIM_QWEN;
  for (const from of ['./node22/package.json', './package.json']) {
    try {
      const require = createRequire(new URL(from, import.meta.url));
      const pkg = require.resolve('@qwen-code/qwen-code/package.json');
      const bin = path.join(path.dirname(pkg), require(pkg).bin.qwen);
      if (existsSync(bin)) return bin;
    } catch {}
  }
  return null;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns something truthy, or fails naming `what` after `ms`. */
export async function until(what, check, ms = 20_000) {
  const end = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got) return got;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * The scripted model, on 127.0.0.1: while the conversation has no tool_result yet and the
 * request offers the tool `model.call.name`, it answers with one `tool_use` of `model.call`;
 * after that, "done" (or what `model.next` scripts). Every request to /v1/messages is kept,
 * parsed, in `model.requests`.
 */
export async function startAnthropicModel() {
  const model = { call: { name: 'Bash', input: {} }, requests: [], url: '' };
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url.startsWith('/v1/messages') || req.url.includes('count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ input_tokens: 10 }));
        return;
      }
      const body = JSON.parse(data);
      model.requests.push(body);
      reply(model, res, body);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  model.url = `http://127.0.0.1:${server.address().port}`;
  model.close = () => server.close();
  return model;
}

function reply(model, res, body) {
  const n = model.requests.length;
  const last = body.messages?.at(-1);
  const content = Array.isArray(last?.content) ? last.content : [];
  const sawResult = content.some((c) => c.type === 'tool_result');
  const hasTool = (body.tools ?? []).some((t) => t.name === model.call.name);
  const usage = { input_tokens: 10, output_tokens: 5 };
  // `model.next(body)`, when set, scripts each turn instead: a call {name, input}, or null
  // for "done".
  const call = model.next ? model.next(body) : hasTool && !sawResult ? model.call : null;
  const block = call
    ? { type: 'tool_use', id: `toolu_him_${n}`, name: call.name, input: call.input }
    : { type: 'text', text: 'done' };
  const message = { id: `msg_${n}`, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, usage };
  const stop = block.type === 'tool_use' ? 'tool_use' : 'end_turn';
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...message, content: [block], stop_reason: stop }));
    return;
  }
  const start = block.type === 'tool_use' ? { ...block, input: {} } : { type: 'text', text: '' };
  const delta =
    block.type === 'tool_use'
      ? { type: 'input_json_delta', partial_json: JSON.stringify(block.input) }
      : { type: 'text_delta', text: block.text };
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const [event, data] of [
    ['message_start', { type: 'message_start', message }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: start }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage }],
    ['message_stop', { type: 'message_stop' }],
  ]) {
    res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }
  res.end();
}

/**
 * The scripted model for Codex, on 127.0.0.1, at `${model.url}/responses` (streamed): while
 * the request offers the function `model.call.name` and holds no function_call_output yet,
 * it answers with one function_call of `model.call` (arguments as JSON); after that, a
 * message "done". Codex also asks for a title without tools, which gets "done" too.
 */
export async function startResponsesModel() {
  const model = { call: { name: 'exec_command', arguments: {} }, requests: [], url: '' };
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url.endsWith('/responses')) {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(data);
      model.requests.push(body);
      const n = model.requests.length;
      // An MCP server's tools come in a namespace of their own (`mcp__<server>`), and a
      // call of one names it (`model.call.namespace`).
      const tools = model.call.namespace ? (body.tools ?? []).find((t) => t.type === 'namespace' && t.name === model.call.namespace)?.tools : body.tools;
      const offered = (tools ?? []).some((t) => t.name === model.call.name);
      const answered = (body.input ?? []).some((i) => i.type === 'function_call_output');
      const item =
        offered && !answered
          ? {
              type: 'function_call',
              id: `fc_him_${n}`,
              call_id: `call_him_${n}`,
              name: model.call.name,
              ...(model.call.namespace ? { namespace: model.call.namespace } : {}),
              arguments: JSON.stringify(model.call.arguments),
              status: 'completed',
            }
          : { type: 'message', role: 'assistant', id: `msg_${n}`, content: [{ type: 'output_text', text: 'done' }] };
      const id = `resp_${n}`;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const event = (type, fields) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`);
      event('response.created', { response: { id } });
      event('response.output_item.done', { output_index: 0, item });
      event('response.completed', { response: { id, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } } });
      res.end();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  model.url = `http://127.0.0.1:${server.address().port}/v1`;
  model.close = () => server.close();
  return model;
}

/**
 * The scripted model for Gemini CLI, on 127.0.0.1 (`GOOGLE_GEMINI_BASE_URL`), answering
 * `models/<model>:streamGenerateContent` (SSE) and `:generateContent`: while the request
 * declares the function `model.call.name` (Gemini CLI names an MCP tool
 * `mcp_<server>_<tool>`) and its contents hold no functionResponse yet, it answers with one
 * functionCall of `model.call` (args as an object); after that, "done". Gemini CLI's own
 * helper calls that ask for JSON (its model router) get an object that fills the schema they
 * send, so none of them retries. Every streamed request is kept, parsed, in
 * `model.requests`; `model.declared` holds the function names of the last one.
 */
export async function startGeminiModel() {
  const model = { call: { name: 'mcp_him_ask_text', args: {} }, requests: [], declared: [], url: '' };
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      const json = (status, value) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.method !== 'POST') return json(404, { error: { code: 404, message: 'not here' } });
      if (req.url.includes(':countTokens')) return json(200, { totalTokens: 10 });
      const body = JSON.parse(data || '{}');
      const usage = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 };
      const answer = (part) => ({
        candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: usage,
        modelVersion: 'gemini-stand-in',
      });
      const schema = body.generationConfig?.responseJsonSchema ?? body.generationConfig?.responseSchema;
      if (!req.url.includes(':streamGenerateContent')) {
        const text = schema ? JSON.stringify(fillSchema(schema)) : 'done';
        return json(200, answer({ text }));
      }
      model.requests.push(body);
      const declared = (body.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name));
      model.declared = declared;
      const answered = (body.contents ?? []).some((c) => (c.parts ?? []).some((p) => p.functionResponse));
      const part =
        declared.includes(model.call.name) && !answered
          ? { functionCall: { name: model.call.name, args: model.call.args } }
          : { text: 'done' };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify(answer(part))}\n\n`);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  model.url = `http://127.0.0.1:${server.address().port}`;
  model.close = () => server.close();
  return model;
}

/** The one tool of Qwen Code's auto-mode permission check: the model answers `{shouldBlock}`. */
export const RESPOND_IN_SCHEMA = 'respond_in_schema';

/**
 * The scripted model for clients of OpenAI's Chat Completions API (OpenCode through its
 * `@ai-sdk/openai-compatible` provider, Qwen Code through the `openai` SDK), on 127.0.0.1 at
 * `${model.url}/chat/completions`, streamed as SSE chunks when the request says `stream`:
 * while the request offers the function `model.call.name` and its messages hold no `tool`
 * message yet, it answers with one tool call of `model.call` (arguments as JSON); after that,
 * "done". Requests without tools (titles, summaries) get "done" too. Qwen Code's auto-mode
 * permission check, a request whose tool is `respond_in_schema` (`{shouldBlock}`, and in its
 * second stage `thinking` and `reason` too), gets `shouldBlock: model.block`. Every request is kept, parsed, in `model.requests`;
 * `model.declared` holds the function names of the last one that offered any.
 */
export async function startChatModel() {
  const model = { call: { name: 'him_ask_text', arguments: {} }, block: true, requests: [], declared: [], url: '' };
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no ${req.method} ${req.url} here` } }));
        return;
      }
      const body = JSON.parse(data || '{}');
      model.requests.push(body);
      const n = model.requests.length;
      const declared = (body.tools ?? []).map((t) => t.function?.name);
      if (declared.length) model.declared = declared;
      const answered = (body.messages ?? []).some((m) => m.role === 'tool');
      const fn = (name, args) => ({ index: 0, id: `call_him_${n}`, type: 'function', function: { name, arguments: JSON.stringify(args) } });
      const verdict = (body.tools ?? []).find((t) => t.function?.name === RESPOND_IN_SCHEMA)?.function.parameters;
      const call = verdict
        ? fn(RESPOND_IN_SCHEMA, { ...fillSchema(verdict), shouldBlock: model.block })
        : declared.includes(model.call.name) && !answered
          ? fn(model.call.name, model.call.arguments)
          : null;
      const finish = call ? 'tool_calls' : 'stop';
      const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
      const head = { id: `chatcmpl-${n}`, created: Math.floor(Date.now() / 1000), model: body.model };
      if (!body.stream) {
        const message = call
          ? { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: call.function }] }
          : { role: 'assistant', content: 'done' };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ...head, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }], usage }));
        return;
      }
      const chunk = (choices, extra = {}) => `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices, ...extra })}\n\n`;
      const delta = call
        ? { role: 'assistant', content: null, tool_calls: [{ ...call, function: { name: call.function.name, arguments: '' } }] }
        : { role: 'assistant', content: 'done' };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk([{ index: 0, delta, finish_reason: null }]));
      // The arguments come in a chunk of their own, as OpenAI streams them.
      if (call) res.write(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: call.function.arguments } }] }, finish_reason: null }]));
      res.write(chunk([{ index: 0, delta: {}, finish_reason: finish }]));
      res.write(chunk([], { usage }));
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  model.url = `http://127.0.0.1:${server.address().port}/v1`;
  model.close = () => server.close();
  return model;
}

/** The first `tool` message a Chat Completions client sent the model, in any of `requests`. */
export function toolMessage(requests) {
  for (const body of requests) {
    for (const m of body.messages ?? []) if (m.role === 'tool') return m;
  }
  return null;
}

/** A value of JSON Schema `schema` (OpenAPI-style upper-case types too), each property filled. */
function fillSchema(schema) {
  const type = String(Array.isArray(schema.type) ? schema.type[0] : schema.type ?? 'object').toLowerCase();
  if (schema.enum?.length) return schema.enum[0];
  switch (type) {
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, fillSchema(v)]));
    case 'array':
      return [];
    case 'integer':
    case 'number':
      return Math.max(1, schema.minimum ?? 1);
    case 'boolean':
      return false;
    default:
      return 'stand-in';
  }
}

/** The first functionResponse Gemini CLI sent the model, in any of `requests`. */
export function functionResponse(requests) {
  for (const body of requests) {
    for (const c of body.contents ?? []) {
      for (const p of c.parts ?? []) if (p.functionResponse) return p.functionResponse;
    }
  }
  return null;
}

/** The first function_call_output Codex sent the model, in any of `requests`. */
export function functionCallOutput(requests) {
  for (const body of requests) {
    for (const item of body.input ?? []) if (item.type === 'function_call_output') return item;
  }
  return null;
}

/** The first tool_result the agent sent the model, in any of `requests`. */
export function toolResult(requests) {
  for (const body of requests) {
    for (const m of body.messages ?? []) {
      for (const c of Array.isArray(m.content) ? m.content : []) if (c.type === 'tool_result') return c;
    }
  }
  return null;
}

/** Every host started, stopped or not. */
const hosts = [];

/**
 * him's native host, started as Chrome starts it, and an extension stand-in on its stdio that
 * shows each ask and answers it with `decide(ask)` ({action, values?, note?}); when `decide`
 * returns null the card waits, to be answered later with `answer(id, reply)` (as a person
 * who answers late). Every `withdraw` the host sends is kept in `withdrawn`.
 */
export function startHost(himBin, runtimeDir, decide) {
  const child = spawn(himBin, [`chrome-extension://${EXTENSION_ID}/`], {
    env: { ...process.env, HIM_RUNTIME_DIR: runtimeDir, HIM_LOG: 'warn' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const asks = [];
  const withdrawn = [];
  const send = (msg) => {
    const body = Buffer.from(JSON.stringify(msg));
    const head = Buffer.alloc(4);
    head.writeUInt32LE(body.length);
    child.stdin.write(Buffer.concat([head, body]));
  };
  let buf = Buffer.alloc(0);
  child.stdout.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32LE(0)) {
      const len = buf.readUInt32LE(0);
      const msg = JSON.parse(buf.subarray(4, 4 + len).toString());
      buf = buf.subarray(4 + len);
      if (msg.type === 'hello') send({ type: 'ready', protocol: 1, extension: { id: EXTENSION_ID, version: '0.0.0-e2e' } });
      if (msg.type === 'ask') {
        asks.push(msg);
        send({ type: 'shown', id: msg.id });
        const reply = decide(msg);
        if (reply) send({ type: 'answer', id: msg.id, ...reply });
      }
      if (msg.type === 'withdraw') withdrawn.push(msg);
    }
  });
  hosts.push(child);
  // Closing stdin is how a browser ends its host; the kill makes sure no host outlives its
  // test, since a live child's pipes would keep this process (and cargo test) waiting.
  const stop = () => {
    child.stdin.end();
    child.kill('SIGKILL');
  };
  const answer = (id, reply) => send({ type: 'answer', id, ...reply });
  return { child, asks, withdrawn, answer, stop };
}

/** Ends every host `startHost` started. */
export function stopAllHosts() {
  for (const child of hosts) child.kill('SIGKILL');
}

/** Resolves once a host listens in `runtimeDir`. */
export function untilHostListens(runtimeDir) {
  return until('the host to listen', () => {
    try {
      return readdirSync(path.join(runtimeDir, 'hosts')).some((n) => n.endsWith('.sock'));
    } catch {
      return false;
    }
  }, 10_000);
}
