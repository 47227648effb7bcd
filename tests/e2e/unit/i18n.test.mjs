// lib/i18n.js: the extension's words from _locales, with or without the browser's API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { t, tParts, useMessages } from '../../../extension/lib/i18n.js';

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

// ---- the shipped languages (extension/_locales) ----

const ROOT = new URL('../../../', import.meta.url);
const LOCALES = readdirSync(new URL('extension/_locales/', ROOT));
const messagesOf = (locale) => JSON.parse(readFileSync(new URL(`extension/_locales/${locale}/messages.json`, ROOT), 'utf8'));
const placeholders = (message) => [...message.matchAll(/\{(\d)\}/g)].map((m) => m[1]).sort();

/** Every file under `dir` (a URL of a directory) whose name ends with one of `ends`. */
function filesUnder(dir, ends) {
  return readdirSync(dir, { recursive: true })
    .filter((name) => ends.some((end) => name.endsWith(end)))
    .map((name) => new URL(name, dir));
}

// What reads the messages: the extension's scripts, pages and manifests, the loopback
// page's script and the Rust side of the loopback page.
const SOURCES = [
  ...filesUnder(new URL('extension/', ROOT), ['.js', '.html', '.json']).filter((u) => !u.pathname.includes('/_locales/')),
  ...filesUnder(new URL('src/fallback/', ROOT), ['.js', '.rs']),
].map((url) => ({ name: url.pathname.slice(ROOT.pathname.length), text: readFileSync(url, 'utf8') }));

test('the shipped languages are English, German and Simplified Chinese, English the default', () => {
  assert.deepEqual([...LOCALES].sort(), ['de', 'en', 'zh_CN']);
  for (const manifest of ['manifest.json', 'manifest.firefox.json']) {
    assert.equal(JSON.parse(readFileSync(new URL(`extension/${manifest}`, ROOT), 'utf8')).default_locale, 'en', manifest);
  }
});

test('every language has exactly the English keys, with the same {n} placeholders', () => {
  for (const locale of LOCALES) {
    const messages = messagesOf(locale);
    const missing = Object.keys(english).filter((key) => !Object.hasOwn(messages, key));
    const extra = Object.keys(messages).filter((key) => !Object.hasOwn(english, key));
    assert.deepEqual(missing, [], `${locale} lacks these`);
    assert.deepEqual(extra, [], `${locale} has keys English does not`);
    for (const [key, entry] of Object.entries(messages)) {
      assert.equal(typeof entry.message, 'string', `${locale} ${key}`);
      assert.notEqual(entry.message.trim(), '', `${locale} ${key} is empty`);
      assert.deepEqual(placeholders(entry.message), placeholders(english[key].message), `${locale} ${key}: placeholders`);
      // Chrome reads "$1" and "$name$" as its own placeholders; a "$" must be written "$$".
      assert.doesNotMatch(entry.message.replace(/\$\$/g, ''), /\$/, `${locale} ${key}: a lone $`);
      // Plain words: the panel draws messages as text, and Markdown would show as such.
      assert.doesNotMatch(entry.message, /\*\*|`|\[[^\]]*\]\(|<[a-z]/i, `${locale} ${key}: markup`);
    }
  }
});

test('German and Chinese are translated, not copied from English', () => {
  // The few messages that read the same in a language (a unit, an acronym) are named here.
  const same = { de: ['timeSeconds', 'permissionUrl', 'panel_notice_text', 'panel_echo_field'], zh_CN: ['panel_notice_title'], en: Object.keys(english) };
  for (const locale of LOCALES) {
    const messages = messagesOf(locale);
    const copied = Object.keys(english).filter((key) => messages[key].message === english[key].message);
    assert.deepEqual(copied.filter((key) => !same[locale].includes(key)), [], `${locale}: the same as English`);
  }
  assert.match(messagesOf('zh_CN').decline.message, /\p{Script=Han}/u);
});

test('every key the code asks for is in English, and every English key is asked for', () => {
  const asked = new Map();
  const note = (key, where) => asked.set(key, [...(asked.get(key) ?? []), where]);
  for (const { name, text } of SOURCES) {
    // lib/i18n.js defines t and tParts, over a `key` that is a variable there.
    if (name.endsWith('.js') && name !== 'extension/lib/i18n.js') {
      // t('key', …) and tParts('key', …), with the key written out: the scan must see them all.
      for (const m of text.matchAll(/\b(t|tParts)\(\s*([^)\s,]*)/g)) {
        assert.match(m[2], /^'[A-Za-z0-9_]+'$/, `${name}: ${m[0]}… does not name its key`);
        note(m[2].slice(1, -1), name);
      }
    }
    // Rust: what the server writes (its tests, which ask for keys that are not there, aside).
    const code = name.endsWith('.rs') ? text.split('#[cfg(test)]')[0] : '';
    for (const m of code.matchAll(/\.text\(\s*"([A-Za-z0-9_]+)"/g)) note(m[1], name);
    for (const m of text.matchAll(/__MSG_([A-Za-z0-9_]+)__/g)) note(m[1], name);
  }
  const missing = [...asked].filter(([key]) => !Object.hasOwn(english, key)).map(([key, where]) => `${key} (${where.join(', ')})`);
  assert.deepEqual(missing, [], 'asked for, but not in _locales/en/messages.json');
  // A key used some other way (a data attribute, a table of keys) still appears quoted.
  const everything = SOURCES.map((s) => s.text).join('\n');
  const unused = Object.keys(english).filter((key) => !asked.has(key) && !new RegExp(`['"]${key}['"]`).test(everything));
  assert.deepEqual(unused, [], 'in the English file but used nowhere');
  assert.ok(asked.size > 100, `only ${asked.size} keys found: the scan is broken`);
});

test('the Rust side keys its words from the same files (ClosedBecause::sentence)', () => {
  const loopback = SOURCES.find((s) => s.name === 'src/fallback/loopback.rs').text;
  for (const key of ['loopbackClosedAnswered', 'loopbackClosedTimedOut', 'loopbackClosedWithdrawn']) {
    assert.match(loopback, new RegExp(`=> "${key}"`));
    assert.ok(english[key], key);
  }
});

test('tParts keeps what fills a placeholder as it is, where the language puts it', () => {
  const code = { element: 'code' };
  useMessages({ allow: { message: '{1} erlauben?' }, two: { message: 'von {2} nach {1}' } });
  try {
    assert.deepEqual(tParts('allow', code), [code, ' erlauben?']);
    assert.deepEqual(tParts('two', 'a', 'b'), ['von ', 'b', ' nach ', 'a']);
    assert.deepEqual(tParts('allow'), ['{1} erlauben?'], 'nothing given: the placeholder shows');
  } finally {
    useMessages(null);
  }
});

test("lib's words follow the table it is given: a German form, its checks and the queue's words", async () => {
  const { renderForm } = await import('../../../extension/lib/form.js');
  const { formatTimeLeft, leaveText, agentLabel } = await import('../../../extension/lib/queue.js');
  const { describeHostProblem } = await import('../../../extension/lib/hosterror.js');
  const { freshDocument } = await import('./dom.mjs');
  useMessages(messagesOf('de'));
  try {
    const { document } = freshDocument();
    const view = renderForm(document, {
      title: 'Deploy?',
      allow_note: true,
      fields: [
        { name: 'env', type: 'select', label: 'Env', required: true, options: [{ value: 'p', label: 'prod', recommended: true }] },
        { name: 'n', type: 'number', label: 'N', min: 1, max: 3 },
      ],
    });
    const text = view.element.textContent;
    for (const words of ['Auswählen …', 'prod (empfohlen)', '(erforderlich)', 'Eine Zahl von 1 bis 3.', 'Notiz (optional)', 'Senden', 'Ablehnen']) {
      assert.ok(text.includes(words), `${words} in ${text}`);
    }
    view.element.querySelector('input[name="n"]').value = '7';
    const { errors } = view.validate();
    assert.deepEqual(errors, { env: 'Wählen Sie eine Option aus.', n: 'Geben Sie eine Zahl von 1 bis 3 ein.' });
    assert.equal(formatTimeLeft(4_800_000), '1 Std. 20 Min.');
    assert.equal(formatTimeLeft(null), 'ohne Zeitlimit');
    assert.equal(leaveText('submit'), 'Antwort gesendet.');
    assert.equal(agentLabel(null), 'Ein Agent');
    // The browser's own error stays as the browser said it; what him adds is German.
    const problem = describeHostProblem('Specified native messaging host not found.');
    assert.equal(problem.summary, 'him ist für diesen Browser nicht installiert.');
    assert.equal(problem.message, 'Specified native messaging host not found.');
  } finally {
    useMessages(null);
  }
});
