// extension/_locales: every panel_ message of the English file in each other language, with
// the same {1}, {2}… places, so no language shows a key name or drops a value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';

const LOCALES = new URL('../../../extension/_locales/', import.meta.url);
const read = (locale) => JSON.parse(readFileSync(new URL(`${locale}/messages.json`, LOCALES), 'utf8'));
const english = read('en');
const places = (message) => [...message.matchAll(/\{([1-9])\}/g)].map((m) => m[1]).sort().join(',');

test('German and Simplified Chinese are there besides English', () => {
  const locales = readdirSync(LOCALES);
  for (const locale of ['en', 'de', 'zh_CN']) assert.ok(locales.includes(locale), locale);
});

for (const locale of readdirSync(LOCALES).filter((l) => l !== 'en')) {
  test(`${locale}: every panel_ message, with the same places as English`, () => {
    const messages = read(locale);
    for (const [key, entry] of Object.entries(english)) {
      if (!key.startsWith('panel_')) continue;
      const translated = messages[key];
      assert.ok(translated, `${locale} lacks ${key}`);
      assert.equal(typeof translated.message, 'string', `${locale} ${key}`);
      assert.ok(translated.description, `${locale} ${key} has no description`);
      assert.equal(places(translated.message), places(entry.message), `${locale} ${key}: ${translated.message}`);
    }
    assert.equal(messages.panel_lang.message.toLowerCase().replace('-', '_'), locale.toLowerCase(), 'panel_lang names the locale');
  });
}
