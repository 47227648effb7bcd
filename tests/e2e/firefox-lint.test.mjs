// The Firefox build (see build-firefox.mjs) passes `web-ext lint` with no errors, and no
// warnings either.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildFirefox } from './build-firefox.mjs';

const WEB_EXT = fileURLToPath(new URL('./node_modules/web-ext/bin/web-ext.js', import.meta.url));

test('web-ext lint finds no errors in the Firefox build', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'him-firefox-'));
  try {
    buildFirefox(dir);
    // web-ext exits non-zero when it finds errors; the JSON report is on stdout either way.
    const { stdout } = await promisify(execFile)(process.execPath, [WEB_EXT, 'lint', '-s', dir, '-o', 'json', '--no-config-discovery'], {
      maxBuffer: 16 * 1024 * 1024,
    }).catch((err) => err);
    const report = JSON.parse(stdout);
    const show = (list) => list.map((m) => `${m.code}: ${m.message} (${m.file ?? ''})`).join('\n');
    assert.equal(report.summary.errors, 0, show(report.errors));
    assert.deepEqual(show(report.warnings), '', 'warnings too, so they are seen and judged');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
