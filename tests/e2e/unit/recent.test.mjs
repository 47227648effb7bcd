// lib/recent.js: the session's answered questions, passwords left out, trimmed, exported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_RECENT, addRecent, dropRecent, normaliseRecent, recentEntry, recentJson } from '../../../extension/lib/recent.js';

const form = {
  title: 'Deploy settings',
  fields: [
    { name: 'owner', type: 'text', label: 'Owner' },
    { name: 'token', type: 'password', label: 'API token' },
    { name: 'size', type: 'radio', label: 'Size', options: [{ value: 's', label: 'Small' }, { value: 'm', label: 'Medium' }] },
    { name: 'flags', type: 'multi_select', label: 'Flags', options: [{ value: 'a', label: 'Audit' }, { value: 'b', label: 'Beta' }] },
    { name: 'agree', type: 'checkbox', label: 'Agree' },
    { name: 'left', type: 'text', label: 'Left out' },
  ],
};
const question = { id: 'q1', form, project: 'demo' };

test('an entry keeps what was sent with the options by their labels, and no password value', () => {
  const answer = { action: 'submit', values: { owner: 'Ada', token: 'hunter2-secret', size: 'm', flags: ['b', 'a'], agree: true }, note: 'ok' };
  const entry = recentEntry(question, answer, 'codex', 1000);
  assert.deepEqual(entry, {
    id: 'q1',
    title: 'Deploy settings',
    agent: 'codex',
    project: 'demo',
    at_ms: 1000,
    action: 'submit',
    fields: [
      { name: 'owner', label: 'Owner', value: 'Ada', shown: 'Ada' },
      { name: 'size', label: 'Size', value: 'm', shown: 'Medium' },
      { name: 'flags', label: 'Flags', value: ['b', 'a'], shown: ['Beta', 'Audit'] },
      { name: 'agree', label: 'Agree', value: true, shown: true },
    ],
    hidden: 1,
    note: 'ok',
  });
  assert.ok(!JSON.stringify(entry).includes('hunter2'));
  assert.ok(!JSON.stringify(recentJson([entry])).includes('hunter2'));
});

test('a decline keeps its note and no values', () => {
  const entry = recentEntry(question, { action: 'decline', values: { owner: 'x' }, note: 'not now' }, 'codex', 5);
  assert.equal(entry.action, 'decline');
  assert.deepEqual(entry.fields, []);
  assert.equal(entry.note, 'not now');
});

test('the list keeps the newest MAX_RECENT, one entry per question', () => {
  let list = [];
  for (let i = 0; i < MAX_RECENT + 5; i++) list = addRecent(list, recentEntry({ id: `q${i}`, form }, { action: 'decline' }, 'a', i));
  assert.equal(list.length, MAX_RECENT);
  assert.equal(list[0].id, `q${MAX_RECENT + 4}`, 'newest first');
  assert.equal(list.at(-1).id, 'q5');
  list = addRecent(list, recentEntry({ id: 'q10', form }, { action: 'decline' }, 'a', 99));
  assert.equal(list.filter((e) => e.id === 'q10').length, 1, 'answered again: one entry, now first');
  assert.equal(list[0].at_ms, 99);
  assert.equal(dropRecent(list, 'q10').length, MAX_RECENT - 1);
  assert.equal(dropRecent(list, 'nope'), list, 'unchanged when absent');
});

test('whatever storage hands back becomes a well-formed list', () => {
  assert.deepEqual(normaliseRecent(undefined), []);
  assert.deepEqual(normaliseRecent({}), []);
  assert.deepEqual(normaliseRecent([null, { id: 3 }, { id: 'x', fields: [] }]).map((e) => e.id), ['x']);
});

test('the JSON export says what was asked, by whom, when, and what the agent got', () => {
  const entry = recentEntry(question, { action: 'submit', values: { owner: 'Ada', size: 's' } }, 'codex', Date.UTC(2026, 11, 1, 12));
  assert.deepEqual(recentJson([entry]), [
    {
      question: 'Deploy settings',
      agent: 'codex',
      project: 'demo',
      answered_at: '2026-12-01T12:00:00.000Z',
      action: 'submit',
      values: { owner: 'Ada', size: 's' },
    },
  ]);
});
