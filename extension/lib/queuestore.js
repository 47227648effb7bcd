// How the worker keeps the queue (./queue.js) in storage.session and tells the panels what
// changed: each question under a key of its own, and after each change only what it
// touched. So a question that arrives costs one question's worth of storage and of
// messaging however many wait (issue 22.12: stringifying, storing and posting the whole
// queue for each arrival made 1,000 waiting questions take minutes to show).
// Pure functions over plain JSON; nothing here touches a browser API.
//
// storage.session:  `q:<id>` → a question   `s:<id>` → an entry of `sent`
//                   `notices` → the notices (at most MAX_NOTICES)   (`recent`: ./recent.js)
// changes = {questions: [question], removed: [id], notices?, sent: [entry], unsent: [id]}:
// the questions new or changed, those gone, the notices when they changed, and the same
// for `sent`. The queue's functions return the very same object for anything they did not
// change, so a change is found by identity, without serialising anything.

import { normaliseQueue } from './queue.js';

const QUESTION = 'q:';
const SENT = 's:';
const NOTICES = 'notices';

/** `list`'s items by `key(item)`. */
function byKey(list, key) {
  return new Map(list.map((item) => [key(item), item]));
}

/**
 * What differs between two items lists keyed by `key`: the items of `after` that are not
 * the same object in `before`, and the keys of `before` that `after` has not.
 */
function diff(before, after, key) {
  if (before === after) return { changed: [], gone: [] };
  const old = byKey(before, key);
  const changed = after.filter((item) => old.get(key(item)) !== item);
  const kept = new Set(after.map(key));
  const gone = before.map(key).filter((k) => !kept.has(k));
  return { changed, gone };
}

const questionId = (q) => q.id;
const sentId = (s) => s.question.id;

/**
 * The changes from queue state `before` to `after` (./queue.js states), or null when there
 * are none.
 */
export function queueChanges(before, after) {
  if (before === after) return null;
  const questions = diff(before.questions, after.questions, questionId);
  const sent = diff(before.sent, after.sent, sentId);
  const notices = before.notices === after.notices ? undefined : after.notices;
  const none = [questions.changed, questions.gone, sent.changed, sent.gone].every((l) => l.length === 0);
  if (none && notices === undefined) return null;
  return {
    questions: questions.changed,
    removed: questions.gone,
    ...(notices === undefined ? {} : { notices }),
    sent: sent.changed,
    unsent: sent.gone,
  };
}

/**
 * What storage.session must be told for `changes`: `set`, the items to write, and
 * `remove`, the keys to remove.
 */
export function storageWrites(changes) {
  const set = {};
  for (const q of changes.questions) set[QUESTION + q.id] = q;
  for (const s of changes.sent) set[SENT + s.question.id] = s;
  if (changes.notices !== undefined) set[NOTICES] = changes.notices;
  // A question answered moves from `q:` to `s:`; one back from `sent` moves the other way.
  const remove = [...changes.removed.map((id) => QUESTION + id), ...changes.unsent.map((id) => SENT + id)];
  return { set, remove };
}

/**
 * `writes` (from storageWrites) together with `failed`, writes an earlier pass could not
 * make (over the session-storage quota: a `set` fails whole), brought up to date with
 * `queue`: each key that failed is written as the queue now has it, or removed when the
 * queue no longer has it. Without this, a key whose removal failed stayed for the whole
 * session, holding quota and coming back after a worker restart, since later passes only
 * write what they touch. `failed` null: just `writes`.
 */
export function withFailedWrites(writes, failed, queue) {
  if (!failed) return writes;
  const set = {};
  const remove = new Set(writes.remove);
  for (const key of [...Object.keys(failed.set), ...failed.remove]) {
    const value = storedItem(queue, key);
    if (value === undefined) remove.add(key);
    else set[key] = value;
  }
  Object.assign(set, writes.set);
  for (const key of Object.keys(set)) remove.delete(key);
  return { set, remove: [...remove] };
}

/** What storage.session should hold under `key` for `queue`; undefined: nothing. */
function storedItem(queue, key) {
  if (key === NOTICES) return queue.notices;
  if (key.startsWith(QUESTION)) return queue.questions.find((q) => QUESTION + q.id === key);
  if (key.startsWith(SENT)) return queue.sent.find((s) => SENT + s.question.id === key);
  return undefined;
}

/**
 * The queue as it was stored, from every item of storage.session (`get(null)`): the
 * questions in the order they came, the answers sent newest first.
 */
export function queueFromStorage(items) {
  const all = items && typeof items === 'object' ? items : {};
  const under = (prefix) => Object.keys(all).filter((k) => k.startsWith(prefix)).map((k) => all[k]);
  const received = (q) => (typeof q?.received_at_ms === 'number' ? q.received_at_ms : 0);
  const queue = normaliseQueue({
    questions: under(QUESTION),
    notices: all[NOTICES],
    sent: under(SENT),
  });
  queue.questions.sort((a, b) => received(a) - received(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  queue.sent.sort((a, b) => (b.at_ms ?? 0) - (a.at_ms ?? 0));
  return queue;
}

/**
 * The panel's copy of the queue (`{questions, notices}`) with the worker's `changes`
 * message applied: questions added or replaced, removed, and the notices when sent.
 */
export function applyChanges(queue, changes) {
  const gone = new Set(Array.isArray(changes.removed) ? changes.removed : []);
  const questions = queue.questions.filter((q) => !gone.has(q.id));
  const at = new Map(questions.map((q, i) => [q.id, i]));
  for (const q of Array.isArray(changes.questions) ? changes.questions : []) {
    if (!q || typeof q.id !== 'string') continue;
    if (at.has(q.id)) questions[at.get(q.id)] = q;
    else at.set(q.id, questions.push(q) - 1);
  }
  return { ...queue, questions, notices: Array.isArray(changes.notices) ? changes.notices : queue.notices };
}
