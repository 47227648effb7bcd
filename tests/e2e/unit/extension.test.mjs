// Static checks of extension/: the pinned id, the two manifests, and the promise that
// lib/ runs in a plain web page (no extension API, no import from outside lib/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const EXT = fileURLToPath(new URL('../../../extension/', import.meta.url));
const read = (p) => readFileSync(path.join(EXT, p), 'utf8');
const chrome = JSON.parse(read('manifest.json'));
const firefox = JSON.parse(read('manifest.firefox.json'));

test('the key in manifest.json pins the extension id the Rust side allows', () => {
  // Chromium: first 128 bits of SHA-256 of the DER public key, hex digits mapped 0-f → a-p.
  const digest = createHash('sha256').update(Buffer.from(chrome.key, 'base64')).digest('hex').slice(0, 32);
  const id = [...digest].map((c) => String.fromCharCode(97 + parseInt(c, 16))).join('');
  assert.equal(id, 'mephldgjjmdajmfkonfbblipccnbagig');
  const lib = readFileSync(new URL('../../../src/lib.rs', import.meta.url), 'utf8');
  assert.match(lib, new RegExp(`EXTENSION_ID: &str = "${id}"`));
  assert.match(lib, /HOST_NAME: &str = "dev\.him\.host"/);
  assert.match(lib, new RegExp(`GECKO_ID: &str = "${firefox.browser_specific_settings.gecko.id}"`));
  assert.match(read('background.js'), /const HOST_NAME = 'dev\.him\.host'/);
});

test('both manifests name files that exist and agree on what they share', () => {
  const files = [
    chrome.background.service_worker,
    chrome.side_panel.default_path,
    ...firefox.background.scripts,
    firefox.sidebar_action.default_panel,
    ...Object.values(chrome.icons),
    ...Object.values(chrome.action.default_icon),
    ...Object.values(firefox.sidebar_action.default_icon),
  ];
  for (const file of files) assert.ok(existsSync(path.join(EXT, file)), `${file} is missing`);
  for (const key of ['manifest_version', 'name', 'version', 'icons']) assert.deepEqual(firefox[key], chrome[key], key);
  assert.equal(chrome.side_panel.default_path, firefox.sidebar_action.default_panel, 'one panel page for both');
  assert.deepEqual([...chrome.permissions].sort(), ['nativeMessaging', 'notifications', 'sidePanel', 'storage']);
  assert.ok(!firefox.permissions.includes('sidePanel'));
  assert.deepEqual(firefox.browser_specific_settings.gecko.data_collection_permissions, { required: ['none'] });
  assert.equal(firefox.key, undefined, 'the Chromium key does not belong in the Firefox manifest');
});

test('lib/ uses no extension API and imports only from lib/', () => {
  const dir = path.join(EXT, 'lib');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.js'))) {
    const source = readFileSync(path.join(dir, file), 'utf8').replace(/^\s*\/\/.*$/gm, '');
    assert.doesNotMatch(source, /\b(chrome|browser)\s*\.\s*[A-Za-z_$]/, `${file} touches an extension API`);
    for (const [, spec] of source.matchAll(/\bfrom\s+['"]([^'"]+)['"]/g)) {
      assert.match(spec, /^\.\/[\w.-]+\.js$/, `${file} imports ${spec}`);
    }
  }
});

test('no script in the extension assigns HTML', () => {
  const scripts = ['background.js', 'panel/panel.js', ...readdirSync(path.join(EXT, 'lib')).map((f) => `lib/${f}`)];
  for (const file of scripts.filter((f) => f.endsWith('.js'))) {
    assert.doesNotMatch(read(file), /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, file);
  }
});

test('every message on the panel port is in the README list, and the list names no other', () => {
  const readme = read('README.md');
  const section = readme.slice(readme.indexOf('### Messages between the panel and the worker'));
  const listed = (heading) => {
    const table = section.slice(section.indexOf(heading)).split('\n\n')[1];
    return [...table.matchAll(/^\| `([\w-]+)` \|/gm)].map((m) => m[1]).sort();
  };
  const background = read('background.js');
  const handler = background.slice(background.indexOf('function onPanelMessage'), background.indexOf('function answer('));
  const handled = [...handler.matchAll(/case '([\w-]+)':/g)].map((m) => m[1]).sort();
  const panelSends = [...new Set([...read('panel/panel.js').matchAll(/send\(\{ type: '([\w-]+)'/g)].map((m) => m[1]))].sort();
  assert.deepEqual(listed('Panel → worker:'), handled);
  assert.deepEqual(panelSends, handled, 'the panel sends what the worker handles');
  const workerSends = [
    ...new Set([...background.matchAll(/(?:postMessage\(\{|return \{) type: '([\w-]+)'/g)].map((m) => m[1])),
  ].sort();
  assert.deepEqual(listed('Worker → panel:'), workerSends);
});
