// Real Claude Code, headless, asks him for its permissions: `claude -p
// --permission-prompt-tool mcp__him__approve` against a loopback stand-in of its model API
// (a scripted model that asks to run one Bash command), with him's native host started as
// Chrome starts it and an extension stand-in on its stdio that allows or denies. The test
// checks what Claude Code then did: ran the command, or not, and what the model was told.
// The same for Claude Code's own AskUserQuestion: its questions become a form in the panel,
// and the test reads the answers as Claude Code hands them to the model.
//
// Needs HIM_BIN and the Claude Code CLI: HIM_CLAUDE, or tests/e2e/node22 (where `cargo test`
// installs it), or `npm install @anthropic-ai/claude-code` (its native binary is used;
// written against 2.1.332). Without
// the CLI it skips, saying so — and fails instead under HIM_E2E=1.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  findClaude,
  startAnthropicModel,
  startHost as startHostOn,
  stopAllHosts,
  toolResult as firstToolResult,
  untilHostListens as untilRunsHost,
} from './standins.mjs';

const HIM_BIN = process.env.HIM_BIN;

const CLAUDE = findClaude();
const skip = CLAUDE ? false : 'the Claude Code CLI is not installed (npm install @anthropic-ai/claude-code, or set HIM_CLAUDE)';
if (skip && process.env.HIM_E2E === '1') throw new Error(`HIM_E2E=1: ${skip}`);
if (skip) console.log(`# skipped: ${skip}`);

let tmp;
let runtimeDir;
let model;
let host;

/** The Bash call's command, for the tests that ask to run one. */
let command = '';
function runBash(cmd) {
  command = cmd;
  model.call = { name: 'Bash', input: { command, description: 'Write the marker' } };
}

const startHost = (decide) => startHostOn(HIM_BIN, runtimeDir, decide);
const untilHostListens = () => untilRunsHost(runtimeDir);

/** Runs `claude -p` in a fresh project and home; returns its parsed JSON result. */
function runClaude(project, prompt = 'Write the marker file.') {
  const home = path.join(tmp, `home-${path.basename(project)}`);
  mkdirSync(home, { recursive: true });
  const mcpConfig = path.join(tmp, 'mcp.json');
  writeFileSync(
    mcpConfig,
    JSON.stringify({
      mcpServers: { him: { command: HIM_BIN, args: ['serve', '--permission-tool'], env: { HIM_RUNTIME_DIR: runtimeDir, HIM_LOG: 'warn' } } },
    }),
  );
  const args = ['-p', prompt, '--permission-prompt-tool', 'mcp__him__approve', '--mcp-config', mcpConfig, '--strict-mcp-config', '--output-format', 'json', '--model', 'claude-sonnet-4-5'];
  return new Promise((resolve, reject) => {
    execFile(
      CLAUDE,
      args,
      {
        cwd: project,
        timeout: 90_000,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          ANTHROPIC_BASE_URL: model.url,
          ANTHROPIC_API_KEY: 'sk-ant-test',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_AUTOUPDATER: '1',
        },
      },
      (err, stdout, stderr) => {
        try {
          resolve(JSON.parse(stdout));
        } catch {
          reject(new Error(`claude gave no JSON (${err?.message}):\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

before(async () => {
  if (skip) return;
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary (cargo test sets it)');
  tmp = mkdtempSync(path.join(tmpdir(), 'him-claude-'));
  runtimeDir = path.join(tmp, 'run');
  mkdirSync(runtimeDir, { mode: 0o700 });
  model = await startAnthropicModel();
});

after(() => {
  stopAllHosts();
  model?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** The tool_result Claude Code sent the model for the scripted call. */
const toolResult = () => firstToolResult(model.requests);

test('Claude Code runs the command once the person allows it in the panel', { skip, timeout: 120_000 }, async () => {
  const project = path.join(tmp, 'allow-project');
  mkdirSync(project);
  runBash('echo him-was-here > marker.txt');
  model.requests.length = 0;
  host = startHost(() => ({ action: 'submit', values: { decision: 'allow' } }));
  await untilHostListens();
  const result = await runClaude(project);
  host.stop();
  assert.equal(host.asks.length, 1, 'one permission prompt reached the panel');
  const ask = host.asks[0];
  assert.equal(ask.form.permission.tool_name, 'Bash');
  assert.equal(ask.form.permission.input.command, command, 'the command verbatim');
  assert.match(ask.form.permission.tool_use_id, /^toolu_him_/);
  assert.equal(readFileSync(path.join(project, 'marker.txt'), 'utf8').trim(), 'him-was-here', 'the command ran');
  assert.deepEqual(result.permission_denials ?? [], []);
});

test('Claude Code does not run it when the person denies, and the model reads the note', { skip, timeout: 120_000 }, async () => {
  const project = path.join(tmp, 'deny-project');
  mkdirSync(project);
  runBash('echo should-not-run > marker.txt');
  model.requests.length = 0;
  host = startHost(() => ({ action: 'submit', values: { decision: 'deny' }, note: 'not on a Friday' }));
  await untilHostListens();
  const result = await runClaude(project);
  host.stop();
  assert.equal(host.asks.length, 1);
  assert.equal(existsSync(path.join(project, 'marker.txt')), false, 'the command did not run');
  assert.equal(result.permission_denials?.length, 1, JSON.stringify(result));
  const denied = toolResult();
  assert.ok(denied, 'the model got a tool result');
  assert.match(JSON.stringify(denied.content), /not on a Friday/);
});

test('with no browser connected Claude Code is denied, never allowed', { skip, timeout: 120_000 }, async () => {
  const project = path.join(tmp, 'none-project');
  mkdirSync(project);
  runBash('echo should-not-run > marker.txt');
  model.requests.length = 0;
  rmSync(path.join(runtimeDir, 'hosts'), { recursive: true, force: true });
  const result = await runClaude(project);
  assert.equal(existsSync(path.join(project, 'marker.txt')), false);
  assert.equal(result.permission_denials?.length, 1, JSON.stringify(result));
  assert.match(JSON.stringify(toolResult()?.content), /no browser/);
});

// AskUserQuestion in `claude -p` reaches the permission-prompt tool; him shows its questions
// as a form and allows the call with the answers in `updatedInput`. What counts is what
// Claude Code then tells the model, which these tests read in the model's next request.

const QUESTIONS = [
  {
    question: 'Which database should the service use?',
    header: 'Database',
    multiSelect: false,
    options: [
      { label: 'Postgres', description: 'A server' },
      { label: 'SQLite', description: 'One file' },
    ],
  },
  {
    question: 'Which checks should CI run?',
    header: 'CI',
    multiSelect: true,
    // A label holding ", " is what makes the multi-select encoding matter.
    options: [
      { label: 'Lint, format', description: 'clippy and rustfmt' },
      { label: 'Unit tests', description: 'cargo test' },
      { label: 'Fuzz', description: 'cargo fuzz' },
    ],
  },
  {
    question: 'What should the service be called?',
    header: 'Name',
    multiSelect: false,
    options: [
      { label: 'shop-api', description: '' },
      { label: 'store-api', description: '' },
    ],
  },
];

/**
 * The text of the tool_result Claude Code sent the model, whatever its content shape, without
 * the `<system-reminder>` Claude Code appends to it.
 */
function toolResultText() {
  const result = toolResult();
  assert.ok(result, 'the model got a tool result');
  const { content } = result;
  const text = typeof content === 'string' ? content : content.map((c) => c.text ?? '').join('');
  return text.split('\n\n<system-reminder>')[0];
}

/** Runs `claude -p` whose model calls AskUserQuestion with `questions`; the panel answers `values`. */
async function askQuestions(name, questions, values) {
  const project = path.join(tmp, name);
  mkdirSync(project);
  model.call = { name: 'AskUserQuestion', input: { questions } };
  model.requests.length = 0;
  host = startHost(() => ({ action: 'submit', values }));
  await untilHostListens();
  const result = await runClaude(project, 'Ask me about the service.');
  host.stop();
  return result;
}

test("AskUserQuestion's questions reach the panel as a form and the model reads the answers", { skip, timeout: 120_000 }, async () => {
  const result = await askQuestions('questions-project', QUESTIONS, {
    q0: 'SQLite',
    q1: ['Lint, format', 'Unit tests'],
    q2_other: 'till',
  });
  assert.equal(host.asks.length, 1, 'one form reached the panel');
  const { form } = host.asks[0];
  assert.equal(form.permission, undefined, 'questions, not a permission card');
  const kinds = form.fields.map((f) => [f.name, f.type]);
  assert.deepEqual(kinds, [
    ['q0', 'radio'], ['q0_other', 'text'],
    ['q1', 'multi_select'], ['q1_other', 'text'],
    ['q2', 'radio'], ['q2_other', 'text'],
  ]);
  assert.equal(form.fields[0].label, QUESTIONS[0].question);
  assert.equal(form.fields[0].description, 'Database', 'the header');
  assert.deepEqual(form.fields[2].options.map((o) => [o.label, o.description]), [
    ['Lint, format', 'clippy and rustfmt'], ['Unit tests', 'cargo test'], ['Fuzz', 'cargo fuzz'],
  ]);
  assert.deepEqual(result.permission_denials ?? [], [], JSON.stringify(result));
  // An answer of one's own is not one of the options, so Claude Code 2.1.332 words it as
  // "The user answered", asking the model to read it carefully.
  assert.equal(
    toolResultText(),
    'The user answered: "Which database should the service use?"="SQLite", ' +
      '"Which checks should CI run?"=""Lint, format", Unit tests", ' +
      '"What should the service be called?"="till". Read the answers carefully \u2014 they may ' +
      'request clarification, changes, or that you not proceed \u2014 and follow what they actually say.',
  );
});

test('a multi-select answer is written so that Claude Code reads back the very labels picked', { skip, timeout: 120_000 }, async () => {
  await askQuestions('multi-project', QUESTIONS.slice(0, 2), { q0: 'Postgres', q1: ['Lint, format', 'Fuzz'] });
  // Claude Code says "Your questions have been answered" only when it parses every answer
  // back into options it offered: here, the multi-select string into its two labels (it
  // shows the answer as written, without escaping its quotes). Unquoted, "Lint, format,
  // Fuzz" would read as three labels, two of them never offered.
  assert.equal(
    toolResultText(),
    'Your questions have been answered: "Which database should the service use?"="Postgres", ' +
      '"Which checks should CI run?"=""Lint, format", Fuzz". You can now continue with these answers in mind.',
  );
});

// `claude -p` has no one to ask for a permission, so it denies an MCP tool it was not allowed;
// `him config claude-code` says to pass `--allowedTools mcp__him`. The server's entry is the
// snippet as printed (plus HIM_RUNTIME_DIR). Claude Code 2.1.332 offers MCP tools through its
// ToolSearch unless ENABLE_TOOL_SEARCH=false, which puts them in the request itself, where
// the scripted model finds the tool to call.

/** Runs `claude -p` with `him config claude-code`'s entry and `args`; resolves with its result. */
function runClaudeWithSnippet(name, args) {
  const project = path.join(tmp, name);
  const home = path.join(tmp, `home-${name}`);
  mkdirSync(project);
  mkdirSync(home);
  const snippet = JSON.parse(execFileSync(HIM_BIN, ['config', 'claude-code'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  snippet.mcpServers.him.env.HIM_RUNTIME_DIR = runtimeDir;
  const mcpConfig = path.join(tmp, `${name}.mcp.json`);
  writeFileSync(mcpConfig, JSON.stringify(snippet));
  model.call = { name: 'mcp__him__ask_choice', input: { question: 'Which colour should the button be?', options: ['red', 'blue'] } };
  model.requests.length = 0;
  const argv = ['-p', 'Ask me which colour the button should be.', '--mcp-config', mcpConfig, '--strict-mcp-config', '--output-format', 'json', '--model', 'claude-sonnet-4-5', ...args];
  return new Promise((resolve, reject) => {
    execFile(
      CLAUDE,
      argv,
      {
        cwd: project,
        timeout: 90_000,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          ANTHROPIC_BASE_URL: model.url,
          ANTHROPIC_API_KEY: 'sk-ant-test',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_AUTOUPDATER: '1',
          ENABLE_TOOL_SEARCH: 'false',
        },
      },
      (err, stdout, stderr) => {
        try {
          resolve(JSON.parse(stdout));
        } catch {
          reject(new Error(`claude gave no JSON (${err?.message}):\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

test("claude -p calls him's tools only when --allowedTools names mcp__him, as `him config claude-code` says", { skip, timeout: 150_000 }, async () => {
  host = startHost(() => ({ action: 'submit', values: { choice: 'blue' } }));
  await untilHostListens();

  const denied = await runClaudeWithSnippet('not-allowed', []);
  assert.deepEqual(denied.permission_denials?.map((d) => d.tool_name), ['mcp__him__ask_choice'], JSON.stringify(denied));
  // The model got the refusal as the tool's result, so the question never went out.
  assert.match(JSON.stringify(toolResult()?.content), /requested permissions to use mcp__him__ask_choice/);
  assert.equal(host.asks.length, 0);

  const allowed = await runClaudeWithSnippet('allowed', ['--allowedTools', 'mcp__him']);
  host.stop();
  assert.deepEqual(allowed.permission_denials ?? [], [], JSON.stringify(allowed));
  assert.equal(host.asks.length, 1);
  const text = JSON.stringify(toolResult()?.content);
  assert.match(text, /\\"answer\\":\\"blue\\"/, text);
});
