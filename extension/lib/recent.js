// The panel's "Recent" list: the questions answered in this browser session, each with what
// was sent, kept by the worker in storage.session (memory only, gone when the browser
// closes) and shown under the inbox, with a copy-as-JSON export. Pure functions over plain
// JSON; time is passed in. Password values never get in: a field of type password is left
// out of an entry, and only counted.
//
// entry = {id, title, agent, project, at_ms, action: submit | decline,
//          fields: [{name, label, value, shown}], hidden, note}
// `value` is what the agent got (§4 answer values); `shown` is the same for a person: the
// options' labels instead of their values. `hidden` counts the password fields sent.

import { fieldsOf, optionLabel } from './formmodel.js';

/** At most this many answers are kept, newest first. */
export const MAX_RECENT = 20;

const OPTION_TYPES = new Set(['select', 'radio', 'multi_select']);

/**
 * The entry for `question` (a queue question) answered with `answer` ({action, values?,
 * note?}, as sent to the host) at `now`; `agent` is the label to show for its agent.
 */
export function recentEntry(question, answer, agent, now) {
  const fields = [];
  let hidden = 0;
  if (answer.action === 'submit') {
    for (const field of fieldsOf(question.form)) {
      if (!Object.hasOwn(answer.values ?? {}, field.name)) continue;
      if (field.type === 'password') {
        hidden += 1;
        continue;
      }
      const value = answer.values[field.name];
      let shown = value;
      if (OPTION_TYPES.has(field.type)) {
        shown = Array.isArray(value) ? value.map((v) => optionLabel(field, v)) : optionLabel(field, value);
      }
      fields.push({ name: field.name, label: String(field.label || field.name), value, shown });
    }
  }
  return {
    id: question.id,
    title: String(question.form?.title || ''),
    agent: String(agent ?? ''),
    project: typeof question.project === 'string' ? question.project : null,
    at_ms: now,
    action: answer.action === 'submit' ? 'submit' : 'decline',
    fields,
    hidden,
    note: typeof answer.note === 'string' ? answer.note : '',
  };
}

/** `list` with `entry` first (replacing an older entry for the same question), trimmed. */
export function addRecent(list, entry) {
  return [entry, ...list.filter((e) => e.id !== entry.id)].slice(0, MAX_RECENT);
}

/** `list` without the entry for question `id` (its answer did not reach the agent after all). */
export function dropRecent(list, id) {
  const next = list.filter((e) => e.id !== id);
  return next.length === list.length ? list : next;
}

/** Make `value` a well-formed list, whatever storage handed back. */
export function normaliseRecent(value) {
  return Array.isArray(value)
    ? value.filter((e) => e && typeof e.id === 'string' && Array.isArray(e.fields)).slice(0, MAX_RECENT)
    : [];
}

/** What "Copy as JSON" puts on the clipboard: one object per answer, newest first. */
export function recentJson(list) {
  return list.map((e) => ({
    question: e.title,
    agent: e.agent,
    project: e.project,
    answered_at: new Date(e.at_ms).toISOString(),
    action: e.action,
    values: Object.fromEntries(e.fields.map((f) => [f.name, f.value])),
    ...(e.note ? { note: e.note } : {}),
  }));
}
