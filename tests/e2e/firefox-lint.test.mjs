// The Firefox build passes `web-ext lint` with no errors. The build is extension/ with
// manifest.firefox.json as its manifest.json (and without the icon generator), made in a
// temporary directory: Firefox and Chromium share every other file.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const EXT_DIR = fileURLToPath(new URL('../../extension/', import.meta.url));
const WEB_EXT = fileURLToPath(new URL('./node_modules/web-ext/bin/web-ext.js', import.meta.url));

/** Copy extension/ into `dest` as the Firefox add-on. */
export function buildFirefox(dest) {
  cpSync(EXT_DIR, dest, {
    recursive: true,
    filter: (src) => !src.endsWith('.py') && path.basename(src) !== 'manifest.json',
  });
  rmSync(path.join(dest, 'manifest.firefox.json'));
  cpSync(path.join(EXT_DIR, 'manifest.firefox.json'), path.join(dest, 'manifest.json'));
}

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
