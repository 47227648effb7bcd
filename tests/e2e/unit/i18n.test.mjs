// lib/i18n.js: the extension's words from _locales, with or without the browser's API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { t, useMessages } from '../../../extension/lib/i18n.js';

const english = JSON.parse(readFileSync(new URL('../../../extension/_locales/en/messages.json', import.meta.url)));

test('a table given to useMessages is read as Chrome reads messages.json', () => {
  useMessages({ left: { message: '{1} left of $$ {2}' }, plain: { message: 'Answer sent.' } });
  assert.equal(t('left', '3 min', 5), '3 min left of $ 5');
  assert.equal(t('plain'), 'Answer sent.');
  assert.equal(t('left'), '{1} left of $ {2}', 'an argument not given leaves its place visible');
  assert.equal(t('nowhere'), 'nowhere', 'a missing message shows its key');
  useMessages(null);
});

test("without a table the browser's i18n API answers, browser.i18n before chrome.i18n", () => {
  const asked = [];
  globalThis.chrome = { i18n: { getMessage: (key) => (asked.push(key), key === 'hi' ? 'Hallo {1}' : '') } };
  try {
    assert.equal(t('hi', 'Ada'), 'Hallo Ada');
    assert.equal(t('gone'), 'gone');
    globalThis.browser = { i18n: { getMessage: () => 'from browser' } };
    assert.equal(t('hi'), 'from browser');
  } finally {
    delete globalThis.chrome;
    delete globalThis.browser;
  }
  assert.deepEqual(asked, ['hi', 'gone']);
});

test('every English message is a string with a description for translators', () => {
  for (const [key, entry] of Object.entries(english)) {
    assert.match(key, /^[A-Za-z0-9_]+$/, `${key}: Chrome allows only these characters in keys`);
    assert.equal(typeof entry.message, 'string', key);
    assert.ok(entry.description, `${key} has no description`);
  }
});
