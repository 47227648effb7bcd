// lib/queuestore.js: the queue in storage.session one question per key, and the changes the
// worker posts to the panels — what one change touches, never the whole queue (issue 22.12).
import './english.mjs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addQuestion,
  answerAccepted,
  answerJudging,
  emptyQueue,
  endQuestion,
  markUnconfirmed,
  setDraft,
} from '../../../extension/lib/queue.js';
import {
  applyChanges,
  queueChanges,
  queueFromStorage,
  storageWrites,
  withFailedWrites,
} from '../../../extension/lib/queuestore.js';

const T0 = 1_700_000_000_000;
const ask = (id) => ({
  type: 'ask',
  id,
  form: { title: `Q ${id}`, fields: [{ name: 'a', type: 'text', label: 'A' }] },
  timeout_ms: 60_000,
  asked_at_ms: T0,
  agent: { name: 'codex' },
});

/** A queue of `n` questions, q0…q(n-1), received in that order. */
function queueOf(n) {
  let state = emptyQueue();
  for (let i = 0; i < n; i++) state = addQuestion(state, ask(`q${i}`), T0 + i).state;
  return state;
}

/** What storage.session holds after every write of `steps` (pairs of states) in turn. */
function storeAll(steps) {
  const items = {};
  for (const [before, after] of steps) {
    const changes = queueChanges(before, after);
    if (!changes) continue;
    const { set, remove } = storageWrites(changes);
    Object.assign(items, structuredClone(set));
    for (const key of remove) delete items[key];
  }
  return items;
}

test('one question arriving is one key written and one question posted, however many wait', () => {
  for (const waiting of [0, 1, 200]) {
    const before = queueOf(waiting);
    const after = addQuestion(before, ask('new'), T0 + 1000).state;
    const changes = queueChanges(before, after);
    assert.deepEqual(changes.questions.map((q) => q.id), ['new'], `${waiting} waiting`);
    assert.deepEqual(changes.removed, []);
    assert.equal(changes.notices, undefined, 'the notices did not change');
    const { set, remove } = storageWrites(changes);
    assert.deepEqual(Object.keys(set), ['q:new']);
    assert.deepEqual(remove, []);
  }
  const same = queueOf(3);
  assert.equal(queueChanges(same, same), null, 'no change, nothing to write');
});

test('a draft, an answer accepted and a withdrawal each write what they touched', () => {
  const start = queueOf(3);
  const drafted = setDraft(start, 'q1', { values: { a: 'typed' }, note: '' });
  assert.deepEqual(Object.keys(storageWrites(queueChanges(start, drafted)).set), ['q:q1']);

  const judged = answerJudging(drafted, 'q1', { action: 'submit', values: { a: 'typed' } }, T0 + 10).state;
  const accepted = answerAccepted(judged, 'q1', T0 + 20).state;
  const moved = storageWrites(queueChanges(judged, accepted));
  assert.deepEqual(Object.keys(moved.set).sort(), ['notices', 's:q1'], 'it moves to `sent`, with its notice');
  assert.deepEqual(moved.remove, ['q:q1']);

  const withdrawn = endQuestion(accepted, 'q2', 'cancelled', T0 + 30).state;
  const changes = queueChanges(accepted, withdrawn);
  assert.deepEqual(changes.removed, ['q2']);
  assert.equal(changes.notices.length, 2);
});

test('what was stored reads back as the queue it was, in order, whatever else storage holds', () => {
  const a = queueOf(3);
  const b = answerAccepted(answerJudging(a, 'q0', { action: 'submit', values: { a: 'x' } }, T0 + 10).state, 'q0', T0 + 20).state;
  const c = markUnconfirmed(b, T0 + 30);
  const items = storeAll([
    [emptyQueue(), a],
    [a, b],
    [b, c],
  ]);
  items.recent = [{ id: 'elsewhere' }];
  items['q:broken'] = null;
  assert.deepEqual(queueFromStorage(items), c);
  assert.deepEqual(queueFromStorage(undefined), emptyQueue());
});

test("the panel's copy follows the changes: added, replaced and removed in place, notices when sent", () => {
  const before = queueOf(3);
  const panel = { questions: before.questions, notices: [] };
  const drafted = setDraft(before, 'q1', { values: { a: 'typed' }, note: '' });
  const after = endQuestion(addQuestion(drafted, ask('q9'), T0 + 99).state, 'q0', 'timeout', T0 + 100).state;
  const copy = applyChanges(panel, queueChanges(before, after));
  assert.deepEqual(copy.questions, after.questions);
  assert.deepEqual(copy.notices, after.notices);
  assert.equal(applyChanges(copy, { questions: [], removed: [] }).notices, copy.notices, 'no notices sent: kept');
  assert.deepEqual(applyChanges(copy, { questions: [null, { no: 'id' }], removed: 'junk' }).questions, copy.questions);
});

test('writes that failed (over the quota) are made by the next pass, as the queue then is', () => {
  const two = queueOf(2);
  // q0 is withdrawn, but its removal fails with the set of a large q9 in the same pass.
  const withdrawn = endQuestion(two, 'q0', 'cancelled', T0 + 5).state;
  const arrived = addQuestion(withdrawn, ask('q9'), T0 + 6).state;
  const failed = storageWrites(queueChanges(two, arrived));
  assert.ok(failed.remove.includes('q:q0'));
  assert.ok('q:q9' in failed.set);
  // The next pass touches only q1; q9 has gone meanwhile.
  const gone9 = endQuestion(arrived, 'q9', 'cancelled', T0 + 7).state;
  const drafted = setDraft(gone9, 'q1', { values: { a: 'typed' }, note: '' });
  const own = storageWrites(queueChanges(gone9, drafted));
  assert.deepEqual(Object.keys(own.set), ['q:q1'], 'the pass itself touches only q1');
  const next = withFailedWrites(own, failed, drafted);
  assert.ok(next.remove.includes('q:q0'), 'the removal that failed is made');
  assert.ok(next.remove.includes('q:q9'), 'a question no pass stored and gone since is removed, not written');
  assert.ok(!('q:q9' in next.set));
  assert.equal(next.set['q:q1'].draft.values.a, 'typed');
  for (const key of Object.keys(next.set)) assert.ok(!next.remove.includes(key), `${key} both set and removed`);
  // Nothing failed: just the pass's own writes.
  assert.equal(withFailedWrites(own, null, drafted), own);
});
