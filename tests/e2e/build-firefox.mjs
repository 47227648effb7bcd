// Builds the Firefox add-on from extension/: every file but the Chromium manifest (and the
// icon generator), with manifest.firefox.json as its manifest.json. Firefox and Chromium
// share everything else.

import { cpSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const EXT_DIR = fileURLToPath(new URL('../../extension/', import.meta.url));

/** Copy extension/ into `dest` as the Firefox add-on. */
export function buildFirefox(dest) {
  cpSync(EXT_DIR, dest, {
    recursive: true,
    filter: (src) => !src.endsWith('.py') && path.basename(src) !== 'manifest.json',
  });
  rmSync(path.join(dest, 'manifest.firefox.json'));
  cpSync(path.join(EXT_DIR, 'manifest.firefox.json'), path.join(dest, 'manifest.json'));
}
