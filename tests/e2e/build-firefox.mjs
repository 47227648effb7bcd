// The Firefox add-on as him ships it: `him extension firefox DIR` writes the very build `him
// install` writes (src/install/extension.rs decides which file of extension/ goes where), so
// the tests run what people get. Needs HIM_BIN (cargo test sets it).
//
// `testOpener` adds, for the tests only, a background script that opens the panel page in a
// tab: WebDriver BiDi neither lists the sidebar nor navigates a tab to a moz-extension://
// page, but it sees a tab the add-on opened. The shipped add-on never has it.

import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Write the shipped Firefox add-on into `dest`, plus the test-only tab opener if asked. */
export function buildFirefox(dest, { testOpener = false } = {}) {
  if (!process.env.HIM_BIN) throw new Error('HIM_BIN must name the him binary (cargo test sets it)');
  execFileSync(process.env.HIM_BIN, ['extension', 'firefox', dest], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (!testOpener) return;
  writeFileSync(
    path.join(dest, 'test-open-panel-tab.js'),
    "// Test build only (tests/e2e/build-firefox.mjs).\nbrowser.tabs.create({ url: browser.runtime.getURL('panel/panel.html') });\n",
  );
  const manifestPath = path.join(dest, 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  manifest.background.scripts.push('test-open-panel-tab.js');
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
}
