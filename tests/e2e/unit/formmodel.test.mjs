// The pure form model (extension/lib/formmodel.js): raw values, typed values, drafts and the
// person-facing checks. The agent side's rules are tested from the shared fixture, in
// formfixture.test.mjs.
import './english.mjs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  FIELD_TYPES,
  draftOf,
  isAbsoluteUrl,
  typedValues,
  validateField,
  validateRaw,
} from '../../../extension/lib/formmodel.js';
import { EVERY_TYPE, opts } from './forms.mjs';

test('the form covers every field type of the model', () => {
  assert.deepEqual(
    [...new Set(EVERY_TYPE.fields.map((f) => f.type))].sort(),
    [...FIELD_TYPES].sort(),
  );
});

test('field rules match the agent side: required, email, url, number bounds, options, counts', () => {
  const f = (over) => ({ name: 'x', label: 'X', ...over });
  assert.equal(validateField(f({ type: 'text', required: true }), '  '), 'This field is required.');
  assert.equal(validateField(f({ type: 'text' }), ''), null);
  assert.equal(validateField(f({ type: 'email' }), 'me@example.org'), null);
  assert.match(validateField(f({ type: 'email' }), 'a@b'), /email/);
  assert.match(validateField(f({ type: 'email' }), 'a b@example.org'), /email/);
  assert.equal(validateField(f({ type: 'url' }), 'https://example.org/x'), null);
  assert.equal(validateField(f({ type: 'url' }), 'ftp://host'), null, 'the agent side accepts any scheme://');
  assert.match(validateField(f({ type: 'url' }), 'example.org'), /https:\/\//);
  assert.match(validateField(f({ type: 'url' }), 'javascript:alert(1)'), /https:\/\//);
  const n = f({ type: 'number', min: 1, max: 5 });
  assert.equal(validateField(n, '3'), null);
  assert.equal(validateField(n, '1.5'), null);
  assert.match(validateField(n, '9'), /from 1 to 5/);
  assert.match(validateField(n, '1e'), /Enter a number/);
  assert.match(validateField(n, 'NaN'), /Enter a number/);
  // Sent as typed or not at all: a whole number past 2^53 would arrive rounded.
  const big = f({ type: 'number' });
  assert.equal(validateField(big, '9007199254740991'), null);
  assert.match(validateField(big, '1234567890123456789'), /too many digits/);
  assert.match(validateField(big, '-9007199254740993'), /too many digits/);
  assert.equal(validateField(big, '1e20'), null, '1e20 is exact as a double');
  const r = f({ type: 'radio', required: true, options: opts(['a', 'b']) });
  assert.equal(validateField(r, null), 'Choose one.');
  assert.match(validateField(r, 'z'), /options offered/);
  const m = f({ type: 'multi_select', min: 1, max: 2, options: opts(['a', 'b', 'c']) });
  assert.match(validateField(m, []), /at least 1 option\b/, 'an empty selection must still meet min');
  assert.match(validateField(m, ['a', 'b', 'c']), /at most 2 options/);
  assert.equal(validateField(m, ['a', 'c']), null);
  assert.equal(validateField(f({ type: 'confirm', required: true }), false), null, 'No is an answer');
  assert.equal(validateField(f({ type: 'confirm', required: true }), null), 'Choose one.');
  assert.ok(isAbsoluteUrl('https://x.y') && !isAbsoluteUrl('https:// x'));
});

test('typed values: strings, numbers, booleans, arrays; empty optional fields left out', () => {
  const raws = {
    who: 'Ada',
    mail: ' ada@example.org ',
    site: '',
    secret: 'hunter2',
    n: '3',
    notes: '',
    region: 'eu',
    size: 'm',
    agree: false,
    go: true,
    tags: ['a'],
  };
  assert.deepEqual(typedValues(EVERY_TYPE, raws), {
    who: 'Ada',
    mail: 'ada@example.org',
    secret: 'hunter2',
    n: 3,
    region: 'eu',
    size: 'm',
    agree: false,
    go: true,
    tags: ['a'],
  });
  assert.equal(validateRaw(EVERY_TYPE, raws).ok, true);
});

test('a draft never holds a password value', () => {
  const draft = draftOf(EVERY_TYPE, { who: 'Ada', secret: 'hunter2', tags: ['a'] }, 'note');
  assert.deepEqual(draft, { values: { who: 'Ada', tags: ['a'] }, note: 'note' });
  assert.doesNotMatch(JSON.stringify(draft), /hunter2/);
});
