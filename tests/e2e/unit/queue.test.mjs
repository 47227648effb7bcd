import './english.mjs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_NOTICES,
  MAX_SENT,
  NOTICE_TTL_MS,
  SENT_TTL_MS,
  UNCONFIRMED_GRACE_MS,
  addQuestion,
  agentLabel,
  answerAccepted,
  answerJudging,
  plainTitle,
  answerRefused,
  answerSent,
  answerUndelivered,
  dismissCard,
  dropUnconfirmed,
  emptyQueue,
  endQuestion,
  expire,
  formatTimeLeft,
  markUnconfirmed,
  nextChangeIn,
  normaliseQueue,
  pruneNotices,
  permissionSubject,
  pruneSent,
  removeQuestion,
  setDraft,
  timeLeft,
  verdictsLost,
  waitingCount,
} from '../../../extension/lib/queue.js';

const T0 = 1_700_000_000_000;
const ask = (id, over = {}) => ({
  type: 'ask',
  id,
  form: {
    title: `Q ${id}`,
    fields: [
      { name: 'a', type: 'text', label: 'A' },
      { name: 'p', type: 'password', label: 'P' },
    ],
  },
  timeout_ms: 60_000,
  asked_at_ms: T0,
  agent: { name: 'claude-code', title: 'Claude Code' },
  project: 'him',
  ...over,
});

test('a new ask is added; the same id again keeps its draft and is not new', () => {
  let { state, added } = addQuestion(emptyQueue(), ask('q1'), T0 + 10);
  assert.equal(added, true);
  state = setDraft(state, 'q1', { values: { a: 'typed' }, note: '' });
  const again = addQuestion(state, ask('q1', { project: 'moved' }), T0 + 20);
  assert.equal(again.added, false);
  assert.equal(again.state.questions.length, 1);
  assert.deepEqual(again.state.questions[0].draft, { values: { a: 'typed' }, note: '' });
  assert.equal(again.state.questions[0].project, 'moved');
  assert.equal(again.state.questions[0].deadline_ms, T0 + 60_000, 'the deadline comes from the agent');
});

test('a question its agent stopped waiting for is kept, answerable, with its draft; asked again it is awaited again', () => {
  let { state } = addQuestion(emptyQueue(), ask('k1'), T0 + 10);
  state = setDraft(state, 'k1', { values: { a: 'half' }, note: '' });
  // The host keeps it: the same id, its deadline stretched to when the keeping ends.
  const until = T0 + 86_400_000;
  const kept = addQuestion(state, ask('k1', { timeout_ms: until - T0, kept_until_ms: until }), T0 + 2_000);
  assert.equal(kept.added, false, 'no second card');
  const question = kept.state.questions[0];
  assert.deepEqual(question.kept, { until_ms: until });
  assert.equal(question.deadline_ms, until);
  assert.deepEqual(question.draft, { values: { a: 'half' }, note: '' });
  assert.equal(waitingCount(kept.state), 1, 'still waiting for the person');
  // Its agent asks again: awaited once more, no longer marked kept.
  const again = addQuestion(kept.state, ask('k1'), T0 + 3_000).state.questions[0];
  assert.equal(again.kept, undefined);
});

test('a question from another machine is labelled with it, a local one is not', () => {
  const remote = addQuestion(emptyQueue(), ask('r1', { machine: 'devbox' }), T0).state.questions[0];
  assert.equal(agentLabel(remote.agent), 'Claude Code @ devbox');
  const local = addQuestion(emptyQueue(), ask('l1'), T0).state.questions[0];
  assert.equal(agentLabel(local.agent), 'Claude Code');
});

test('an agent whose client came through a bridge is labelled "via" it; a client named mcp is not', () => {
  assert.equal(agentLabel({ name: 'Claude Desktop', via: 'mcp-remote' }), 'Claude Desktop via mcp-remote');
  assert.equal(agentLabel({ name: 'MCP client', via: 'supergateway', machine: 'devbox' }), 'MCP client via supergateway @ devbox');
  assert.equal(agentLabel({ name: 'mcp' }), 'mcp');
  assert.equal(agentLabel({ name: 'mcp', via: ' ' }), 'mcp');
});

test('a question that names any machine, even a blank or invisible one, is marked as remote', () => {
  const label = (machine) => agentLabel(addQuestion(emptyQueue(), ask('m1', { machine }), T0).state.questions[0].agent);
  // A gateway always names the machine; a blank or unreadable name must not pass for local.
  for (const machine of ['', ' ', '\u200b', '\u3164', '\u00a0', 'dev\u202ebox', 'a\nb', 'x'.repeat(65)]) {
    assert.equal(label(machine), 'Claude Code @ another machine', JSON.stringify(machine));
  }
  assert.equal(label('  devbox '), 'Claude Code @ devbox');
  assert.equal(label('Rechner Müller'), 'Claude Code @ Rechner Müller');
  assert.equal(label('开发机'), 'Claude Code @ 开发机');
  // The label is kept with the question, so it survives storage and a worker restart.
  const stored = JSON.parse(JSON.stringify(addQuestion(emptyQueue(), ask('m2', { machine: '' }), T0).state));
  assert.equal(agentLabel(stored.questions[0].agent), 'Claude Code @ another machine');
});

test('malformed or late asks are refused with a reason', () => {
  assert.match(addQuestion(emptyQueue(), { type: 'ask' }, T0).error, /without an id/);
  assert.match(addQuestion(emptyQueue(), { id: 'x', form: {} }, T0).error, /no form fields/);
  const late = addQuestion(emptyQueue(), ask('old', { asked_at_ms: T0 - 70_000 }), T0);
  assert.match(late.error, /after its deadline/);
  assert.equal(late.state.questions.length, 0);
});

test('a draft keeps no password, whoever sends one', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = setDraft(state, 'q1', { values: { a: 'x', p: 'hunter2' }, note: 'n' });
  assert.deepEqual(state.questions[0].draft, { values: { a: 'x' }, note: 'n' });
  assert.doesNotMatch(JSON.stringify(state), /hunter2/);
  assert.equal(setDraft(state, 'nope', { values: {} }), state);
});

test('withdrawing leaves a notice that says why', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  const out = removeQuestion(state, 'q1', 'cancelled', T0 + 5);
  assert.equal(out.removed.id, 'q1');
  assert.equal(out.state.questions.length, 0);
  assert.equal(out.state.notices[0].text, 'Cancelled by the agent.');
  assert.equal(out.state.notices[0].agent, 'Claude Code');
  assert.equal(out.state.notices[0].title, 'Q q1');
  assert.equal(removeQuestion(out.state, 'q1', 'timeout', T0).removed, null, 'twice is a no-op');
});

test('questions expire at their deadline, not before', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = addQuestion(state, ask('q2', { timeout_ms: 120_000 }), T0).state;
  assert.deepEqual(expire(state, T0 + 59_999).expired, []);
  const out = expire(state, T0 + 60_000);
  assert.deepEqual(out.expired, ['q1']);
  assert.deepEqual(out.state.questions.map((q) => q.id), ['q2']);
  assert.match(out.state.notices[0].text, /Timed out/);
  assert.equal(timeLeft(state.questions[0], T0 + 61_000), 0);
  assert.equal(timeLeft(state.questions[1], T0 + 60_000), 60_000);
});

test('after a host restart, questions not re-sent in the grace period are dropped', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = addQuestion(state, ask('q2'), T0).state;
  state = markUnconfirmed(state, T0 + 1000);
  state = addQuestion(state, ask('q2'), T0 + 1500).state; // q2's agent re-sent it
  assert.deepEqual(dropUnconfirmed(state, T0 + 1000 + UNCONFIRMED_GRACE_MS - 1).dropped, []);
  const out = dropUnconfirmed(state, T0 + 1000 + UNCONFIRMED_GRACE_MS);
  assert.deepEqual(out.dropped, ['q1']);
  assert.equal(out.state.notices[0].text, 'The agent is no longer waiting.');
});

test('notices are capped, age out, and can be dismissed', () => {
  let state = emptyQueue();
  for (let i = 0; i < MAX_NOTICES + 2; i++) {
    state = addQuestion(state, ask(`q${i}`), T0).state;
    state = removeQuestion(state, `q${i}`, 'answered', T0 + i).state;
  }
  assert.equal(state.notices.length, MAX_NOTICES);
  assert.equal(state.notices[0].id, `q${MAX_NOTICES + 1}`, 'newest first');
  const key = state.notices[0].key;
  assert.equal(pruneNotices(state, T0 + 10, key).notices.length, MAX_NOTICES - 1);
  assert.equal(pruneNotices(state, T0 + NOTICE_TTL_MS + 100).notices.length, 0);
});

test('nextChangeIn points at the earliest deadline, grace end or notice expiry', () => {
  assert.equal(nextChangeIn(emptyQueue(), T0), null);
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  assert.equal(nextChangeIn(state, T0 + 1000), 59_000);
  state = markUnconfirmed(state, T0 + 1000);
  assert.equal(nextChangeIn(state, T0 + 1000), UNCONFIRMED_GRACE_MS);
  assert.equal(nextChangeIn(state, T0 + 500_000), 0);
});

test('time left reads well at every scale', () => {
  assert.equal(formatTimeLeft(null), 'no time limit');
  assert.equal(formatTimeLeft(400), '1 s');
  assert.equal(formatTimeLeft(45_000), '45 s');
  assert.equal(formatTimeLeft(245_000), '4:05');
  assert.equal(formatTimeLeft(3_600_000), '1 h');
  assert.equal(formatTimeLeft(4_800_000), '1 h 20 min');
});

test('normaliseQueue tolerates whatever storage hands back', () => {
  assert.deepEqual(normaliseQueue(undefined), emptyQueue());
  assert.deepEqual(normaliseQueue({ questions: [null, { id: 'a' }], notices: 'x' }), {
    questions: [{ id: 'a' }],
    notices: [],
    sent: [],
  });
});

const submit = (values, note) => ({ action: 'submit', values, ...(note ? { note } : {}) });

test('an answer that did not arrive comes back as it was sent, without its password or deadline', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = addQuestion(state, ask('q2'), T0 + 1).state;
  state = answerSent(state, 'q1', submit({ a: 'typed', p: 'hunter2' }, 'a note'), T0 + 10).state;
  assert.deepEqual(state.questions.map((q) => q.id), ['q2']);
  assert.equal(state.notices[0].text, 'Answer sent.');
  assert.doesNotMatch(JSON.stringify(state), /hunter2/, 'a password is never kept');

  const out = answerUndelivered(state, 'q1', 'it stopped reading', T0 + 20);
  assert.equal(out.restored, true);
  assert.deepEqual(out.state.questions.map((q) => q.id), ['q1', 'q2'], 'back in its place, oldest first');
  const back = out.state.questions[0];
  assert.deepEqual(back.undelivered, { message: 'it stopped reading', at_ms: T0 + 20 });
  assert.deepEqual(back.draft, { values: { a: 'typed' }, note: 'a note' });
  assert.equal(back.deadline_ms, null, 'nobody waits for it now');
  assert.equal(nextChangeIn({ ...out.state, questions: [back] }, T0 + 20), null);
  assert.deepEqual(out.state.notices, [], 'no "Answer sent." for it any more');
  assert.deepEqual(out.state.sent, []);
  assert.equal(answerUndelivered(out.state, 'q1', 'again', T0 + 30).restored, false, 'once');
});

test('a field left empty comes back empty, not as its default', () => {
  const form = { title: 'T', fields: [{ name: 'a', type: 'text', label: 'A', default: 'dflt' }] };
  let { state } = addQuestion(emptyQueue(), ask('q1', { form }), T0);
  state = answerSent(state, 'q1', submit({}), T0 + 10).state;
  const back = answerUndelivered(state, 'q1', 'gone', T0 + 20).state.questions[0];
  assert.deepEqual(back.draft.values, { a: null });
});

test('a decline that did not arrive comes back with what was typed and its note', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = setDraft(state, 'q1', { values: { a: 'half' }, note: '' });
  state = answerSent(state, 'q1', { action: 'decline', note: 'not now' }, T0 + 10).state;
  assert.equal(state.notices[0].text, 'Declined.');
  const back = answerUndelivered(state, 'q1', 'gone', T0 + 20).state.questions[0];
  assert.deepEqual(back.draft, { values: { a: 'half' }, note: 'not now' });
});

test('an error about an answer not sent lately changes nothing', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  assert.equal(answerUndelivered(state, 'q1', 'x', T0).state, state, 'still waiting: not an answer of ours');
  assert.equal(answerUndelivered(state, 'zz', 'x', T0).restored, false);
  state = answerSent(state, 'q1', submit({ a: 'x' }), T0).state;
  assert.equal(pruneSent(state, T0 + SENT_TTL_MS - 1), state);
  state = pruneSent(state, T0 + SENT_TTL_MS);
  assert.deepEqual(state.sent, []);
  assert.equal(answerUndelivered(state, 'q1', 'x', T0 + SENT_TTL_MS).restored, false);
});

test('only the latest answers are kept', () => {
  let state = emptyQueue();
  for (let i = 0; i < MAX_SENT + 2; i++) {
    state = addQuestion(state, ask(`q${i}`), T0).state;
    state = answerSent(state, `q${i}`, submit({ a: String(i) }), T0 + i).state;
  }
  assert.equal(state.sent.length, MAX_SENT);
  assert.equal(state.sent[0].question.id, `q${MAX_SENT + 1}`, 'newest first');
});

test('an undelivered question waits for the person: a host restart leaves it, dismissing drops it', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = addQuestion(state, ask('q2'), T0).state;
  state = answerSent(state, 'q1', submit({ a: 'x' }), T0).state;
  state = answerUndelivered(state, 'q1', 'gone', T0 + 5).state;
  state = markUnconfirmed(state, T0 + 10);
  assert.deepEqual(dropUnconfirmed(state, T0 + 10 + UNCONFIRMED_GRACE_MS).dropped, ['q2']);
  assert.equal(dismissCard(state, 'q2'), state, 'a question still waiting is not dismissed');
  const out = dismissCard(state, 'q1');
  assert.deepEqual(out.questions.map((q) => q.id), ['q2']);
  assert.equal(out.notices.length, state.notices.length, 'without a notice');
});

test('its agent asking again makes it answerable, with the answer kept as the draft', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = answerSent(state, 'q1', submit({ a: 'kept' }), T0).state;
  state = answerUndelivered(state, 'q1', 'gone', T0 + 5).state;
  const again = addQuestion(state, ask('q1'), T0 + 10).state.questions[0];
  assert.equal(again.undelivered, undefined);
  assert.equal(again.deadline_ms, T0 + 60_000);
  assert.deepEqual(again.draft, { values: { a: 'kept' }, note: '' });
});

test('a question whose fields are not all fields is still declined, drafted and kept without throwing', () => {
  const broken = ask('b', { form: { title: 'Broken', fields: [null, 7, { name: 'p', type: 'password', label: 'P' }] } });
  let state = addQuestion(emptyQueue(), broken, T0).state;
  state = setDraft(state, 'b', { values: { p: 'hunter2', x: 1 }, note: 'n' });
  assert.deepEqual(state.questions[0].draft, { values: { x: 1 }, note: 'n' }, 'the password is still dropped');
  const { state: after, removed } = answerSent(state, 'b', { action: 'decline' }, T0 + 1);
  assert.equal(removed.id, 'b');
  assert.deepEqual(after.questions, []);
  assert.equal(after.sent[0].question.id, 'b');
});

test('an answer being judged stays in the queue, sent only once accepted (issue 15.1)', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = answerJudging(state, 'q1', submit({ a: 'typed', p: 'secret' }), T0 + 10).state;
  const judged = state.questions[0];
  assert.deepEqual(judged.judging.at_ms, T0 + 10);
  assert.deepEqual(judged.draft.values, { a: 'typed' }, 'the draft is the answer, without its password');
  assert.ok(!JSON.stringify(state).includes('secret'), 'no password in the queue, which lives in storage');
  assert.deepEqual(judged.judging.answer.values, { a: 'typed', p: null }, 'the password field named, its value left out');
  assert.deepEqual(state.notices, [], 'nothing says "Answer sent." yet');
  const accepted = answerAccepted(state, 'q1', T0 + 20).state;
  assert.deepEqual(accepted.questions, []);
  assert.equal(accepted.notices[0].text, 'Answer sent.');
  assert.equal(accepted.sent[0].question.judging, undefined);
  assert.equal(answerAccepted(accepted, 'q1', T0 + 30).removed, null, 'only an answer being judged');
});

test('a refused answer makes the question answerable again, with the reason and the same deadline', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  assert.equal(answerRefused(state, 'q1', { message: 'no' }, T0 + 5).marked, false, 'nothing was being judged');
  state = answerJudging(state, 'q1', submit({ a: '' }), T0 + 10).state;
  state = answerRefused(state, 'q1', { field: 'a', message: 'is required but was left empty' }, T0 + 20).state;
  const back = state.questions[0];
  assert.equal(back.judging, undefined);
  assert.deepEqual(back.refused, { field: 'a', message: 'is required but was left empty', at_ms: T0 + 20 });
  assert.equal(back.deadline_ms, T0 + 60_000, 'the agent still waits, as long as before');
  assert.deepEqual(state.notices, []);
  // Sent again: the old refusal no longer stands.
  state = answerJudging(state, 'q1', submit({ a: 'fixed' }), T0 + 30).state;
  assert.equal(state.questions[0].refused, undefined);
});

test('an answer whose host went away before its verdict is lost: answerable again once its agent asks again, the answer kept without its password (issue 22.11)', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = addQuestion(state, ask('q2'), T0).state;
  state = answerJudging(state, 'q1', submit({ a: 'typed', p: 'secret' }), T0 + 10).state;
  const untouched = state.questions[1];
  const lost = verdictsLost(state, T0 + 20);
  assert.equal(verdictsLost(lost, T0 + 25), lost, 'nothing more to lose: the same state');
  assert.equal(lost.questions[1], untouched, 'a question not being judged keeps its object');
  const [q1] = lost.questions;
  assert.equal(q1.judging, undefined);
  assert.deepEqual(q1.lost, { at_ms: T0 + 20 });
  assert.deepEqual(q1.draft.values, { a: 'typed' }, 'the answer as its draft, the password left out');
  assert.equal(q1.deadline_ms, T0 + 60_000, 'its agent may still wait');
  assert.ok(!JSON.stringify(lost).includes('secret'));
  // A new host: it waits for its agent, still lost; the agent asks again, and it stays lost,
  // draft and all, until the person sends it again.
  state = markUnconfirmed(lost, T0 + 30);
  assert.deepEqual(state.questions[0].lost, { at_ms: T0 + 20 });
  state = addQuestion(state, ask('q1'), T0 + 40).state;
  assert.equal(state.questions[0].unconfirmed_since_ms, null);
  assert.deepEqual(state.questions[0].lost, { at_ms: T0 + 20 });
  assert.deepEqual(state.questions[0].draft.values, { a: 'typed' });
  state = answerJudging(state, 'q1', submit({ a: 'typed', p: 'again' }), T0 + 50).state;
  assert.equal(state.questions[0].lost, undefined);
  assert.equal(answerAccepted(state, 'q1', T0 + 60).state.sent[0].question.lost, undefined);
});

test('a new host loses an answer still being judged (a worker restart), and marks each question once', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = addQuestion(state, ask('q2'), T0).state;
  state = answerJudging(state, 'q1', submit({ a: 'typed' }), T0 + 10).state;
  const once = markUnconfirmed(state, T0 + 20);
  assert.deepEqual(once.questions[0].lost, { at_ms: T0 + 20 });
  assert.equal(once.questions[0].judging, undefined);
  const twice = markUnconfirmed(once, T0 + 30);
  assert.deepEqual(twice.questions, once.questions, 'a question already waiting for its agent is left as it is');
  assert.ok(twice.questions.every((q, i) => q === once.questions[i]));
  // Asked again while its answer was still being judged: that answer was not taken either.
  const judged = answerJudging(addQuestion(emptyQueue(), ask('q3'), T0).state, 'q3', submit({ a: 'x' }), T0 + 5).state;
  assert.deepEqual(addQuestion(judged, ask('q3'), T0 + 6).state.questions[0].lost, { at_ms: T0 + 6 });
});

test('an answer whose agent left while judging it comes back undelivered', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = answerJudging(state, 'q1', submit({ a: 'typed' }), T0 + 10).state;
  const out = answerUndelivered(state, 'q1', 'it closed its link to the host first', T0 + 20);
  assert.equal(out.restored, true);
  const back = out.state.questions[0];
  assert.equal(back.judging, undefined);
  assert.equal(back.undelivered.message, 'it closed its link to the host first');
  assert.deepEqual(back.draft.values, { a: 'typed' });
  assert.equal(back.deadline_ms, null);
});

test('a question that ends after the person started answering stays, closed, until dismissed (issue 15.3)', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = addQuestion(state, ask('q2'), T0 + 1).state;
  state = setDraft(state, 'q1', { values: { a: 'half an answer' }, note: '' });
  const out = endQuestion(state, 'q1', 'cancelled', T0 + 10);
  assert.equal(out.closed, true);
  const closed = out.state.questions[0];
  assert.deepEqual(closed.closed, { reason: 'cancelled', text: 'Cancelled by the agent.', at_ms: T0 + 10 });
  assert.deepEqual(closed.draft.values, { a: 'half an answer' }, 'what was typed stays');
  assert.equal(closed.deadline_ms, null);
  assert.deepEqual(out.state.notices, [], 'the card says it; no notice as well');
  assert.equal(waitingCount(out.state), 1, 'the badge counts only q2');
  assert.equal(markUnconfirmed(out.state, T0 + 20).questions[0].unconfirmed_since_ms, null, 'no agent will re-send it');
  assert.equal(dismissCard(out.state, 'q2'), out.state, 'a question still waiting is not dismissed');
  assert.deepEqual(dismissCard(out.state, 'q1').questions.map((q) => q.id), ['q2']);
  // One not yet touched leaves with a notice, as before.
  const untouched = endQuestion(out.state, 'q2', 'timeout', T0 + 30);
  assert.equal(untouched.closed, false);
  assert.deepEqual(untouched.state.questions.map((q) => q.id), ['q1']);
  assert.match(untouched.state.notices[0].text, /Timed out/);
});

test('a closed card stays when the withdraw of its agent comes after its deadline passed here', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = setDraft(state, 'q1', { values: { a: 'typed' }, note: '' });
  // The worker's clock passes the deadline first (a loaded machine), then the withdraw comes.
  state = expire(state, T0 + 60_000).state;
  const out = endQuestion(state, 'q1', 'timeout', T0 + 60_100);
  assert.equal(out.closed, true);
  assert.equal(out.removed, null);
  assert.deepEqual(out.state.questions.map((q) => [q.id, q.closed?.reason, q.draft.values.a]), [['q1', 'expired', 'typed']]);
  assert.deepEqual(out.state.notices, []);
});

test('a question past its deadline with a draft is closed, not removed', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = setDraft(state, 'q1', { values: { a: '' }, note: '' });
  state = addQuestion(state, ask('q2'), T0).state;
  state = setDraft(state, 'q2', { values: { a: 'typed' }, note: '' });
  const { state: after, expired } = expire(state, T0 + 60_000);
  assert.deepEqual(expired, ['q1', 'q2']);
  assert.deepEqual(after.questions.map((q) => [q.id, q.closed?.reason]), [['q2', 'expired']], 'an empty draft is nothing typed');
  assert.equal(expire(after, T0 + 70_000).expired.length, 0);
});

test('a title names its question in one plain line: no Markdown marks, first paragraph only', () => {
  assert.equal(plainTitle('Which database for the **billing** service?'), 'Which database for the billing service?');
  assert.equal(plainTitle('Run `make`, see [the docs](https://example.com)\n\nMore text'), 'Run make, see the docs');
  assert.equal(plainTitle('  spread\nover   lines '), 'spread over lines');
  assert.equal(plainTitle(''), '');
  assert.equal(plainTitle(undefined), '');
});

test('a question answered on the phone leaves saying so, and by whom', () => {
  let { state } = addQuestion(emptyQueue(), ask('q1'), T0);
  state = addQuestion(state, ask('q2'), T0).state;
  state = addQuestion(state, ask('q3'), T0).state;
  state = setDraft(state, 'q3', { values: { a: 'typed' }, note: '' });
  const by = endQuestion(state, 'q1', 'answered', T0 + 1, { via: 'matrix', by: '@ada:example.org' });
  assert.equal(by.state.notices[0].text, 'Answered on the phone (by @ada:example.org).');
  const nobody = endQuestion(by.state, 'q2', 'answered', T0 + 2, { via: 'matrix' });
  assert.equal(nobody.state.notices[0].text, 'Answered on the phone.');
  const closed = endQuestion(nobody.state, 'q3', 'answered', T0 + 3, { via: 'matrix', by: '@bo:x' });
  assert.equal(closed.state.questions[0].closed.text, 'Answered on the phone (by @bo:x).');
  // Elsewhere (another browser, the terminal): as before.
  const elsewhere = endQuestion(emptyQueue(), 'none', 'answered', T0, {});
  assert.equal(elsewhere.removed, null);
  const other = addQuestion(emptyQueue(), ask('q4'), T0).state;
  assert.equal(endQuestion(other, 'q4', 'answered', T0 + 1).state.notices[0].text, 'Answered somewhere else.');
});

const permissionAsk = (id, input, tool_name = 'Bash') =>
  ask(id, {
    form: {
      title: `Claude Code asks to use ${tool_name}`,
      allow_note: true,
      fields: [{ name: 'decision', type: 'radio', label: 'Decision', required: true, options: [{ value: 'allow', label: 'Allow' }, { value: 'deny', label: 'Deny' }] }],
      permission: { tool_name, input },
    },
  });

test("a permission card's notice names the command and says what was decided", () => {
  let { state } = addQuestion(emptyQueue(), permissionAsk('p1', { command: 'npm test' }), T0);
  ({ state } = addQuestion(state, permissionAsk('p2', { command: 'rm -rf build' }), T0));
  ({ state } = addQuestion(state, permissionAsk('p3', { command: 'make' }), T0));
  ({ state } = addQuestion(state, permissionAsk('p4', { command: 'git push' }), T0));
  ({ state } = answerSent(state, 'p1', { action: 'submit', values: { decision: 'allow_session' } }, T0 + 1));
  ({ state } = answerSent(state, 'p2', { action: 'submit', values: { decision: 'deny' }, note: 'not now' }, T0 + 2));
  ({ state } = answerSent(state, 'p3', { action: 'decline', note: '' }, T0 + 3));
  ({ state } = answerSent(state, 'p4', { action: 'submit', values: { decision: 'allow' } }, T0 + 4));
  assert.deepEqual(
    state.notices.map((n) => [n.subject, n.text]),
    [
      ['git push', 'Allowed.'],
      ['make', 'Denied.'],
      ['rm -rf build', 'Denied.'],
      ['npm test', 'Allowed for this session.'],
    ],
  );
  ({ state } = addQuestion(state, permissionAsk('p5', { command: 'sleep 1000' }), T0));
  const out = removeQuestion(state, 'p5', 'timeout', T0 + 5);
  assert.equal(out.state.notices[0].subject, 'sleep 1000', 'a closed card names its command too');
  assert.equal(out.state.notices[0].text, 'Timed out: the agent stopped waiting for an answer.');
  ({ state } = addQuestion(emptyQueue(), ask('q1'), T0));
  assert.equal(removeQuestion(state, 'q1', 'cancelled', T0).state.notices[0].subject, undefined, 'other questions keep their title');
});

test("a permission notice's subject is one line, cut to fit", () => {
  const form = (tool_name, input) => ({ permission: { tool_name, input } });
  assert.equal(permissionSubject(form('Bash', { command: 'cd build &&\n  make test' })), 'cd build && ⏎ make test');
  assert.equal(permissionSubject(form('Write', { file_path: '/src/a.rs', content: 'x' })), 'Write /src/a.rs');
  assert.equal(permissionSubject(form('WebFetch', { url: 'https://example.com', prompt: 'p' })), 'WebFetch https://example.com');
  assert.equal(permissionSubject(form('mcp__github__merge', { pr: 1 })), 'mcp__github__merge');
  const long = permissionSubject(form('Bash', { command: `echo ${'界'.repeat(200)}` }));
  assert.equal([...long].length, 80);
  assert.ok(long.endsWith('…'));
  assert.equal(permissionSubject({ title: 'Q', fields: [] }), null);
});
