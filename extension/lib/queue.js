// The pending-question queue the service worker keeps in storage.session and the panel
// shows. Pure functions over plain JSON data (it must survive a structured-clone round
// trip through storage); every function that needs the time takes `now` (Unix ms), so
// tests control the clock. Nothing here touches a browser API; the words the person reads
// come from ./i18n.js.
//
// state = {
//   questions: [{id, form, timeout_ms, asked_at_ms, deadline_ms, agent, project,
//                received_at_ms, draft, unconfirmed_since_ms, undelivered?, judging?, refused?,
//                lost?, closed?, kept?}],
//   notices:   [{key, id, title, subject?, agent, text, kind, at_ms}],
//   sent:      [{question, notice, at_ms}],
// }
// A question is `unconfirmed` after the native host restarted and until its agent re-sends
// it (DESIGN.md §3: agents re-send `ask` with the same id to the next host). Its draft is
// kept either way; an unconfirmed question cannot be answered yet, because the new host
// would not know where to send the answer.
// `sent` keeps the questions answered lately, each with the answer as its draft and the key
// of its "Answer sent." notice: the host may yet report that the answer did not reach the
// agent, and then the question comes back `undelivered: {message, at_ms}`, for the person to
// see and copy what did not arrive. Nobody waits for it any more, so it has no deadline.
// With a host that relays verdicts (its hello says `verdicts`), an answer first waits in the
// queue as `judging: {answer, at_ms}` until the agent side says `accepted` (then it leaves
// as above, "Answer sent.") or `refused`: then it stays, `refused: {field, message, at_ms}`,
// for the person to correct while the agent still waits (same deadline). An answer whose
// host went away (crashed, killed, or the worker restarted) before a verdict came will get
// none: it is marked `lost: {at_ms}`, answerable again with the answer as its draft, and
// the card says the answer did not reach the agent, once the agent has asked again.
// A question whose agent stopped waiting (its call timed out or ended) may be kept for it
// (DESIGN.md §3, the host's `ask` with `kept_until_ms`): `kept: {until_ms}`, answerable as
// any other until then (its deadline), the answer kept for the agent to collect later.
// A question that ends without the person's answer (withdrawn, timed out, its agent gone)
// after they started typing stays in place as `closed: {reason, text, at_ms}`, no longer
// answerable, so that what they typed can still be copied, until they dismiss it.
// A permission card's notice names the call rather than the card's title: `subject` is the
// command (or the tool and its file or URL) on one line, cut to SUBJECT_CHARS, and its text
// says what was decided ("Allowed.", "Allowed for this session.", "Denied.").

import { t } from './i18n.js';
import { fieldsOf } from './formmodel.js';

/** How long a notice stays in the panel. */
export const NOTICE_TTL_MS = 2 * 60 * 1000;
/** At most this many notices are kept, newest first. */
export const MAX_NOTICES = 5;
/**
 * How long an answer is kept after it went to the host. The host reports one it could not
 * deliver at once, or when it cuts off the agent that stopped reading it: by default 10 s
 * without progress and a quarter of that more (HIM_AGENT_STALL_MS).
 */
export const SENT_TTL_MS = 60_000;
/** At most this many answers are kept, newest first. */
export const MAX_SENT = 10;
/**
 * After a new host says hello, how long a question may stay unconfirmed before it is taken
 * away: agents rescan for hosts about every second, and one that has not re-sent its
 * question by then has gone (or moved the question to another channel).
 */
export const UNCONFIRMED_GRACE_MS = 10_000;

/** A permission notice's subject is cut to this many characters (the whole call is on its card). */
export const SUBJECT_CHARS = 80;

/**
 * What a permission card's notice names: a shell command itself, a file tool with its path,
 * a web fetch with its URL, else the tool's name; on one line (line breaks as ⏎), cut to
 * `max` characters. null for a question that is not a permission card.
 */
export function permissionSubject(form, max = SUBJECT_CHARS) {
  const permission = form?.permission;
  if (!permission || typeof permission !== 'object') return null;
  const tool = String(permission.tool_name ?? '');
  const input = permission.input && typeof permission.input === 'object' ? permission.input : {};
  const str = (key) => (typeof input[key] === 'string' ? input[key] : null);
  let subject = tool;
  if (tool === 'Bash' && str('command') !== null) subject = str('command');
  else if (str('file_path') !== null) subject = `${tool} ${str('file_path')}`;
  else if (tool === 'WebFetch' && str('url') !== null) subject = `${tool} ${str('url')}`;
  const line = subject.trim().replace(/[ \t]*\r?\n\s*/g, ' ⏎ ');
  const chars = [...line];
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : line;
}

/** What a permission card's notice says was decided, for the person's `answer`. */
function permissionText(answer) {
  if (answer.action !== 'submit') return t('permissionNoticeDenied');
  const decision = answer.values?.decision;
  if (decision === 'allow') return t('permissionNoticeAllowed');
  if (decision === 'allow_session') return t('permissionNoticeAllowedSession');
  return t('permissionNoticeDenied');
}

export function emptyQueue() {
  return { questions: [], notices: [], sent: [] };
}

/** Make `value` a well-formed queue, whatever storage handed back. */
export function normaliseQueue(value) {
  const q = value && typeof value === 'object' ? value : {};
  return {
    questions: Array.isArray(q.questions) ? q.questions.filter((x) => x && typeof x.id === 'string') : [],
    notices: Array.isArray(q.notices) ? q.notices.filter((x) => x && typeof x.key === 'string') : [],
    sent: Array.isArray(q.sent) ? q.sent.filter((x) => typeof x?.question?.id === 'string') : [],
  };
}

/**
 * The agent's display name: its title, else its name; "via bridge" after it when its client came
 * through a bridge that named itself (him serve knows which, src/agent/asker.rs, and says so in
 * `agent.via`); "@ machine" after that when the agent runs on another machine (reached through
 * SSH or a container: the host puts `machine` in the ask). Text the agent's client wrote: draw
 * it marked (lib/display.js).
 */
export function agentLabel(agent) {
  const name = (agent && (agent.title || agent.name)) || t('agentUnnamed');
  const via = agent && typeof agent.via === 'string' && agent.via.trim() ? t('agentVia', name, agent.via.trim()) : name;
  return agent && isRemote(agent.machine) ? `${via} @ ${machineName(agent.machine)}` : via;
}

/**
 * Whether an ask's `machine` says it comes from another machine: any value at all does, even a
 * blank or invisible one (DESIGN.md §3). A gateway always names one; only a local agent's ask
 * has none.
 */
function isRemote(machine) {
  return machine !== undefined && machine !== null;
}

/** The longest machine name shown (Linux's HOST_NAME_MAX), as the gateway's rule (bridge.rs). */
const MACHINE_NAME_MAX = 64;

/**
 * A remote machine's name as shown: trimmed, when a person can read it as one (1 to 64
 * characters, each a visible ASCII character, a space, or a letter or digit that draws
 * something); else "another machine", so a blank or invisible claim still reads as remote.
 */
export function machineName(machine) {
  const name = typeof machine === 'string' ? machine.trim() : '';
  const readable =
    name !== '' &&
    [...name].length <= MACHINE_NAME_MAX &&
    /^(?:[\x20-\x7e]|(?!\p{Default_Ignorable_Code_Point})[\p{Alphabetic}\p{N}])+$/u.test(name);
  return readable ? name : t('agentOtherMachine');
}

/** Check the parts of an `ask` message the panel relies on; returns an error text or null. */
export function checkAsk(ask) {
  if (!ask || typeof ask.id !== 'string' || ask.id === '') return 'ask without an id';
  if (!ask.form || typeof ask.form !== 'object' || !Array.isArray(ask.form.fields)) {
    return `ask ${ask.id} has no form fields`;
  }
  return null;
}

function deadlineOf(ask, receivedAt) {
  if (typeof ask.timeout_ms !== 'number' || !(ask.timeout_ms > 0)) return null;
  const start = typeof ask.asked_at_ms === 'number' ? ask.asked_at_ms : receivedAt;
  return start + ask.timeout_ms;
}

/**
 * Add an `ask` (host → extension message). The same id again (a re-send after a host
 * restart) updates what the agent sent and keeps the draft. An ask already past its
 * deadline is refused: showing it would invite an answer nobody waits for.
 * Returns {state, added: bool (new id), error?}.
 */
export function addQuestion(state, ask, now) {
  const error = checkAsk(ask);
  if (error) return { state, added: false, error };
  const existing = state.questions.find((q) => q.id === ask.id);
  const receivedAt = existing?.received_at_ms ?? now;
  const question = {
    id: ask.id,
    form: ask.form,
    timeout_ms: ask.timeout_ms ?? null,
    asked_at_ms: ask.asked_at_ms ?? null,
    deadline_ms: deadlineOf(ask, receivedAt),
    agent: {
      ...(ask.agent && typeof ask.agent === 'object' ? ask.agent : { name: 'agent' }),
      ...(isRemote(ask.machine) ? { machine: typeof ask.machine === 'string' ? ask.machine : '' } : {}),
    },
    project: typeof ask.project === 'string' ? ask.project : null,
    received_at_ms: receivedAt,
    draft: existing?.draft ?? null,
    unconfirmed_since_ms: null,
    // Asked again while its answer waited for a verdict: the agent did not take that answer.
    ...(existing?.lost || existing?.judging ? { lost: existing.lost ?? { at_ms: now } } : {}),
    // Its agent stopped waiting; the host keeps the answer for it (until the deadline).
    ...(typeof ask.kept_until_ms === 'number' ? { kept: { until_ms: ask.kept_until_ms } } : {}),
  };
  if (question.deadline_ms !== null && question.deadline_ms <= now) {
    return { state, added: false, error: `ask ${ask.id} arrived after its deadline` };
  }
  const questions = existing
    ? state.questions.map((q) => (q.id === ask.id ? question : q))
    : [...state.questions, question];
  return { state: { ...state, questions }, added: !existing };
}

// Each a call, so that every key is written out where it is used (the locale test scans
// for them) and is looked up in the language of the moment.
const WITHDRAW_TEXT = {
  timeout: () => t('leftTimedOut'),
  cancelled: () => t('leftCancelled'),
  answered: () => t('leftAnsweredElsewhere'),
  shutdown: () => t('leftAgentShutDown'),
  gone: () => t('leftAgentGone'),
  expired: () => t('leftTimedOut'),
  submit: () => t('leftAnswerSent'),
  decline: () => t('leftDeclined'),
  cancel: () => t('leftDismissed'),
};

/** The notice text for a reason a question left the queue; `answered` is where it was
 *  answered when the withdrawal said (`{via: 'matrix', by}`: on the phone, by that Matrix ID). */
export function leaveText(reason, answered = {}) {
  if (reason === 'answered' && answered?.via === 'matrix') {
    const by = typeof answered.by === 'string' ? answered.by.slice(0, 255) : '';
    return by ? t('leftAnsweredOnPhoneBy', by) : t('leftAnsweredOnPhone');
  }
  return Object.hasOwn(WITHDRAW_TEXT, reason) ? WITHDRAW_TEXT[reason]() : t('leftWithdrawn');
}

/**
 * Take question `id` out of the queue for `reason` (a withdraw reason, 'expired', 'gone',
 * or the person's action 'submit' | 'decline' | 'cancel') and leave a notice.
 * Returns {state, removed: the question or null}.
 */
export function removeQuestion(state, id, reason, now, answered = {}) {
  const question = state.questions.find((q) => q.id === id);
  if (!question) return { state, removed: null };
  const subject = permissionSubject(question.form);
  const notice = {
    key: `${id}:${reason}:${now}`,
    id,
    title: question.form?.title || t('questionUntitled'),
    ...(subject === null ? {} : { subject }),
    agent: agentLabel(question.agent),
    // Esc on a permission card denies it.
    text: subject !== null && reason === 'decline' ? t('permissionNoticeDenied') : leaveText(reason, answered),
    kind: reason,
    at_ms: now,
  };
  return {
    state: {
      ...state,
      questions: state.questions.filter((q) => q.id !== id),
      notices: [notice, ...state.notices].slice(0, MAX_NOTICES),
    },
    removed: question,
  };
}

/**
 * Question `id` ended without the person's answer, for `reason` (a withdraw reason,
 * 'expired' or 'gone'): one they had started to answer stays, `closed`, with its draft and
 * no deadline, until dismissed (dismissCard); any other leaves with a notice, as
 * removeQuestion. Returns {state, removed: the question or null, closed: bool}.
 */
export function endQuestion(state, id, reason, now, answered = {}) {
  const question = state.questions.find((q) => q.id === id);
  // Closed already: its deadline passed here a moment before its agent's withdraw arrived
  // (the two clocks race). What the person typed stays until they dismiss it.
  if (question?.closed) return { state, removed: null, closed: true };
  if (!question?.draft || !hasTyped(question.draft) || question.undelivered) {
    return { ...removeQuestion(state, id, reason, now, answered), closed: false };
  }
  const { judging, refused, lost, ...rest } = question;
  const closed = {
    ...rest,
    deadline_ms: null,
    unconfirmed_since_ms: null,
    closed: { reason, text: leaveText(reason, answered), at_ms: now },
  };
  return {
    state: { ...state, questions: state.questions.map((q) => (q.id === id ? closed : q)) },
    removed: null,
    closed: true,
  };
}

/** Whether a draft holds anything the person typed or picked. */
function hasTyped(draft) {
  const picked = Object.values(draft.values ?? {}).some(
    (v) => v !== null && v !== '' && v !== false && !(Array.isArray(v) && v.length === 0),
  );
  return picked || String(draft.note ?? '').trim() !== '';
}

/**
 * A form's title (Markdown) as plain text on one line, its first block only, for the
 * places that name a question in a line: an inbox row, a notice, Recent, a notification.
 * '' when there is none. Read as the card reads it (lib/markdown.js), so `rm *.log` in code
 * keeps its star and snake_case its underscores.
 */
export { plainTitle } from './markdown.js';

/** Whether a question still waits for the person (not closed, not undelivered). */
export function isWaiting(q) {
  return !q.closed && !q.undelivered;
}

/** Questions still waiting for the person. */
export function waitingCount(state) {
  return state.questions.filter(isWaiting).length;
}

/**
 * The person's answer to question `id` went to the host: `answer` is what was sent,
 * {action, values?, note?}. The question leaves as with removeQuestion, and is kept in
 * `sent` a while with the answer as its draft. Returns {state, removed}.
 */
export function answerSent(state, id, answer, now) {
  let { state: next, removed } = removeQuestion(state, id, answer.action, now);
  if (!removed) return { state, removed };
  if (next.notices[0].subject !== undefined) {
    const [notice, ...older] = next.notices;
    next = { ...next, notices: [{ ...notice, text: permissionText(answer) }, ...older] };
  }
  const { judging, refused, lost, ...rest } = removed;
  const question = { ...rest, draft: answerDraft(removed, answer) };
  const kept = state.sent.filter((s) => s.question.id !== id);
  const sent = [{ question, notice: next.notices[0].key, at_ms: now }, ...kept].slice(0, MAX_SENT);
  return { state: { ...next, sent }, removed };
}

/** The draft that `answer` leaves in `question`'s form, password fields left out. */
function answerDraft(question, answer) {
  // What the person had in the form: for a submit, exactly the values sent (a field left
  // out of them was left empty); for a decline, what was typed so far, and the note.
  const values =
    answer.action === 'submit'
      ? Object.fromEntries(fieldsOf(question.form).map((f) => [f.name, answer.values?.[f.name] ?? null]))
      : (question.draft?.values ?? {});
  return cleanDraft(question, { values, note: answer.note ?? '' });
}

/**
 * The person's answer to question `id` went to a host that relays verdicts: the question
 * stays, `judging`, with the answer as its draft, until the agent side accepts or refuses
 * it. Returns {state, marked: bool}.
 */
export function answerJudging(state, id, answer, now) {
  const question = state.questions.find((q) => q.id === id);
  if (!question) return { state, marked: false };
  const { refused, lost, ...rest } = question;
  // Storage is no place for a password, even while the agent side judges the answer: its
  // value is left out (the field is still named, so the echo can say one was hidden).
  const kept = { ...answer, values: secretsBlanked(question, answer.values) };
  const judged = { ...rest, draft: answerDraft(question, answer), judging: { answer: kept, at_ms: now } };
  return { state: { ...state, questions: state.questions.map((q) => (q.id === id ? judged : q)) }, marked: true };
}

/**
 * The agent side took the answer to `id`: it leaves as answerSent says. Returns {state,
 * removed}; removed is null when no answer to `id` was being judged.
 */
export function answerAccepted(state, id, now) {
  const question = state.questions.find((q) => q.id === id && q.judging);
  if (!question) return { state, removed: null };
  return answerSent(state, id, question.judging.answer, now);
}

/**
 * The agent side refused the answer to `id` (`refusal`: {field?, message}) and still waits:
 * the question is answerable again, with the answer as its draft, and says why.
 * Returns {state, marked: bool}; false when no answer to `id` was being judged.
 */
export function answerRefused(state, id, refusal, now) {
  const question = state.questions.find((q) => q.id === id && q.judging);
  if (!question) return { state, marked: false };
  const { judging, ...rest } = question;
  const refused = {
    field: typeof refusal?.field === 'string' ? refusal.field : null,
    message: typeof refusal?.message === 'string' ? refusal.message : t('refusedWithoutReason'),
    at_ms: now,
  };
  return { state: { ...state, questions: state.questions.map((q) => (q.id === id ? { ...rest, refused } : q)) }, marked: true };
}

/**
 * The host reports that the answer to `id` did not reach its agent, for the reason
 * `message`: the question comes back, undelivered, with the answer as its draft and no
 * deadline, in place of its "Answer sent." notice. Returns {state, restored: bool}; false
 * when no answer to `id` was sent lately (or the question is back already).
 */
export function answerUndelivered(state, id, message, now) {
  const judged = state.questions.find((q) => q.id === id && q.judging);
  if (judged) {
    // Its agent left before it said what it made of the answer.
    const { judging, ...rest } = judged;
    const question = { ...rest, deadline_ms: null, unconfirmed_since_ms: null, undelivered: undeliveredBecause(message, now) };
    return { state: { ...state, questions: state.questions.map((q) => (q.id === id ? question : q)) }, restored: true };
  }
  const sent = state.sent.find((s) => s.question.id === id);
  if (!sent || state.questions.some((q) => q.id === id)) return { state, restored: false };
  const question = {
    ...sent.question,
    deadline_ms: null,
    unconfirmed_since_ms: null,
    undelivered: undeliveredBecause(message, now),
  };
  // Back where it was among the others, oldest first.
  const at = state.questions.findIndex((q) => q.received_at_ms > question.received_at_ms);
  const questions = [...state.questions];
  questions.splice(at === -1 ? questions.length : at, 0, question);
  return {
    state: {
      questions,
      notices: state.notices.filter((n) => n.key !== sent.notice),
      sent: state.sent.filter((s) => s !== sent),
    },
    restored: true,
  };
}

function undeliveredBecause(message, now) {
  return { message: typeof message === 'string' ? message : t('undeliveredWithoutReason'), at_ms: now };
}

/**
 * The person dismissed question `id`, whose card nobody waits for any more (undelivered or
 * closed): it goes, with no notice. A question still waiting is not dismissed.
 */
export function dismissCard(state, id) {
  const questions = state.questions.filter((q) => !(q.id === id && !isWaiting(q)));
  return questions.length === state.questions.length ? state : { ...state, questions };
}

/**
 * Keep the person's unsent draft for question `id`. Password fields are dropped here as well
 * as in the form: a secret must never reach storage, whoever calls this.
 */
export function setDraft(state, id, draft) {
  const question = state.questions.find((q) => q.id === id);
  if (!question || !draft || typeof draft !== 'object') return state;
  const clean = cleanDraft(question, draft);
  return { ...state, questions: state.questions.map((q) => (q.id === id ? { ...q, draft: clean } : q)) };
}

/** `values` with every password field's value replaced by null (absent stays absent). */
function secretsBlanked(question, values) {
  if (!values || typeof values !== 'object') return values;
  const blanked = { ...values };
  for (const field of fieldsOf(question.form)) {
    if (field.type === 'password' && Object.hasOwn(blanked, field.name)) blanked[field.name] = null;
  }
  return blanked;
}

/** `draft` for `question` without its password fields, in the shape a draft has. */
function cleanDraft(question, draft) {
  const secret = new Set(fieldsOf(question.form).filter((f) => f.type === 'password').map((f) => f.name));
  const values = {};
  for (const [name, value] of Object.entries(draft.values ?? {})) {
    if (!secret.has(name)) values[name] = value;
  }
  return { values, note: typeof draft.note === 'string' ? draft.note : '' };
}

/** Remove questions whose deadline has passed. Returns {state, expired: [ids]}. */
export function expire(state, now) {
  const expired = state.questions.filter((q) => q.deadline_ms !== null && q.deadline_ms <= now).map((q) => q.id);
  let next = state;
  for (const id of expired) next = endQuestion(next, id, 'expired', now).state;
  return { state: next, expired };
}

/**
 * The host went away (or this worker restarted, which closes its port): no verdict will
 * come on an answer it was judging. Each such question is `lost`, answerable again with the
 * answer as its draft (password values were never kept). Returns the same state when no
 * answer was being judged.
 */
export function verdictsLost(state, now) {
  if (!state.questions.some((q) => q.judging)) return state;
  return {
    ...state,
    questions: state.questions.map((q) => {
      if (!q.judging) return q;
      const { judging, ...rest } = q;
      return { ...rest, lost: { at_ms: now } };
    }),
  };
}

/**
 * A new host connected: every question waits for its agent to re-send it, except one whose
 * answer did not arrive, which waits for the person to copy it; an answer still being
 * judged was lost with the old host. A question already waiting keeps its object, so that
 * only what changed is stored again.
 */
export function markUnconfirmed(state, now) {
  const lost = verdictsLost(state, now);
  return {
    ...lost,
    questions: lost.questions.map((q) =>
      q.undelivered || q.closed || typeof q.unconfirmed_since_ms === 'number' ? q : { ...q, unconfirmed_since_ms: now },
    ),
  };
}

/** Remove questions no agent re-sent within `graceMs`. Returns {state, dropped: [ids]}. */
export function dropUnconfirmed(state, now, graceMs = UNCONFIRMED_GRACE_MS) {
  const dropped = state.questions
    .filter((q) => q.unconfirmed_since_ms !== null && now - q.unconfirmed_since_ms >= graceMs)
    .map((q) => q.id);
  let next = state;
  for (const id of dropped) next = endQuestion(next, id, 'gone', now).state;
  return { state: next, dropped };
}

/** Drop the answers sent more than SENT_TTL_MS ago: no word of them will come now. */
export function pruneSent(state, now) {
  const sent = state.sent.filter((s) => now - s.at_ms < SENT_TTL_MS);
  return sent.length === state.sent.length ? state : { ...state, sent };
}

/** Drop notices older than NOTICE_TTL_MS, or the one with `key` when given. */
export function pruneNotices(state, now, key = null) {
  const notices = state.notices.filter((n) => n.key !== key && now - n.at_ms < NOTICE_TTL_MS);
  return notices.length === state.notices.length ? state : { ...state, notices };
}

/**
 * Milliseconds until something in the queue changes by itself (a deadline, an unconfirmed
 * grace ending, a notice ageing out), or null when nothing will.
 */
export function nextChangeIn(state, now, graceMs = UNCONFIRMED_GRACE_MS) {
  const times = [
    ...state.questions.map((q) => q.deadline_ms),
    ...state.questions.map((q) => (q.unconfirmed_since_ms === null ? null : q.unconfirmed_since_ms + graceMs)),
    ...state.notices.map((n) => n.at_ms + NOTICE_TTL_MS),
  ].filter((t) => typeof t === 'number');
  if (times.length === 0) return null;
  return Math.max(0, Math.min(...times) - now);
}

/** Milliseconds left for question `q` (never negative), or null when it has no deadline. */
export function timeLeft(q, now) {
  return q.deadline_ms === null ? null : Math.max(0, q.deadline_ms - now);
}

/** "45 s", "4:05", "1 h 20 min": short enough for a card header, exact near the end. */
export function formatTimeLeft(ms) {
  if (ms === null || ms === undefined) return t('timeNoLimit');
  const s = Math.ceil(ms / 1000);
  if (s < 60) return t('timeSeconds', s);
  if (s < 3600) return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  const h = Math.floor(s / 3600);
  const min = Math.floor((s % 3600) / 60);
  return min ? t('timeHoursMinutes', h, min) : t('timeHours', h);
}
