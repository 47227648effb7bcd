// The form model of DESIGN.md §4 in JavaScript: the twin of src/form/mod.rs. Pure: no DOM, no
// extension API, no clock; it runs in the panel, the loopback page and Node alike.
//
// Three parts:
//   - checkAnswer(form, values, note): does a typed answer fit the form? The same rules,
//     in the same order, with the same messages as `Form::check_reply` in src/form/mod.rs. Both
//     are tested against one fixture, tests/fixtures/forms.json, so the twins cannot drift.
//   - checkPermissionForm(form): the shape an agent's permission prompt must have, as
//     `Form::validate` holds it (the fixture's `permission_forms`); lib/permission.js
//     draws no Allow for a form that breaks it.
//   - raw values, what the controls hold while the person types (initialRaw, typedValues,
//     draftOf), and validateField / validateRaw, which say what is wrong in words for the
//     person. validateRaw ends with checkAnswer on the typed values, so the panel never
//     sends an answer the agent side would refuse.
//
// Raw values: strings for text-like fields (a number as typed, so "1e" survives a reload),
// an option value or null for select/radio, a boolean or null for confirm, a boolean for
// checkbox, an array of option values for multi_select.
//
// checkAnswer's messages are the agent side's and stay English, word for word; what the
// person reads (validateField, explain, the labels of Yes and No) comes from ./i18n.js.

import { t } from './i18n.js';

export const FIELD_TYPES = Object.freeze([
  'text',
  'email',
  'url',
  'password',
  'number',
  'textarea',
  'select',
  'radio',
  'checkbox',
  'confirm',
  'multi_select',
]);

/** Types whose answer value is a string (`FieldType::takes_string`): '' is empty for them. */
const TAKES_STRING = new Set(['text', 'email', 'url', 'password', 'textarea', 'select', 'radio']);
const CHOOSES_ONE = new Set(['select', 'radio', 'confirm']);

/** Options a field offers, in order; confirm offers Yes and No, in the person's language. */
export function optionsOf(field) {
  if (field.type === 'confirm') {
    return [
      { value: true, label: t('yes') },
      { value: false, label: t('no') },
    ];
  }
  return Array.isArray(field.options) ? field.options : [];
}

/**
 * The fields of `form` that are fields at all, each an object with a name: the worker and
 * the Recent list must not throw on a form the panel could not draw either (a program that
 * is not him may send `{"fields":[null]}`).
 */
export function fieldsOf(form) {
  return Array.isArray(form?.fields) ? form.fields.filter((f) => f && typeof f === 'object' && typeof f.name === 'string') : [];
}

/** An option value as a person reads it: the label of the field's option of that value. */
export function optionLabel(field, value) {
  const option = optionsOf(field).find((o) => o && sameValue(o.value, value));
  return option ? String(option.label ?? option.value) : value;
}

/** Whether two option values are the same, across the string/number/boolean a draft may hold. */
export function sameValue(a, b) {
  return a === b || (a !== null && b !== null && a !== undefined && b !== undefined && String(a) === String(b));
}

// ---- the agent side's rules (src/form/mod.rs) ----

// `char::is_whitespace` (Unicode White_Space), which JavaScript's \s is not quite: it lacks
// U+0085 and adds U+FEFF.
const WHITESPACE = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/u;
const ALL_WHITESPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/u;

/** `looks_like_email`: one @, something either side, a dot inside the domain, no spaces. */
export function looksLikeEmail(s) {
  const at = s.indexOf('@');
  if (at === -1) return false;
  const local = s.slice(0, at);
  const domain = s.slice(at + 1);
  return (
    local !== '' &&
    !domain.includes('@') &&
    domain.includes('.') &&
    !domain.startsWith('.') &&
    !domain.endsWith('.') &&
    !WHITESPACE.test(s)
  );
}

/** `looks_like_url`: an absolute URL, `scheme://something`, no spaces. */
export function looksLikeUrl(s) {
  const colon = s.indexOf(':');
  if (colon === -1) return false;
  const scheme = s.slice(0, colon);
  const rest = s.slice(colon + 1);
  return /^[A-Za-z][A-Za-z0-9+.-]*$/.test(scheme) && rest.length > 2 && rest.startsWith('//') && !WHITESPACE.test(s);
}

/** The old name of looksLikeUrl. */
export const isAbsoluteUrl = looksLikeUrl;

/** The message when a form that allows a note gets neither an answer nor a note. */
export const NOTHING_GIVEN = 'neither an answer nor a note was given';

/**
 * Does a typed answer fit the form? `Form::check_reply` of src/form/mod.rs, rule for rule:
 * {ok: true, values} with every field present (null where an optional field was left
 * empty, [] for an empty multi_select), or {ok: false, field, message}, where `field` is
 * null for a rule about the whole answer.
 */
export function checkAnswer(form, values = {}, note = null) {
  const fields = Array.isArray(form.fields) ? form.fields : [];
  const given = typeof note === 'string' && !ALL_WHITESPACE.test(note);
  if (given && !form.allow_note) return refused(null, 'a note was sent but this question does not take one');
  const unknown = Object.keys(values).find((name) => !fields.some((f) => f.name === name));
  if (unknown !== undefined) return refused(unknown, 'the form has no field of this name');
  const checked = {};
  for (const field of fields) {
    const value = Object.hasOwn(values, field.name) ? values[field.name] : undefined;
    const result = checkValue(field, value);
    if (result.error) return refused(field.name, result.error);
    checked[field.name] = result.value;
  }
  // The note can stand in for the answer (ask_choice's free text); a reply with neither
  // says nothing.
  if (form.allow_note && !given && fields.length > 0 && fields.every((f) => isEmptyValue(f, values[f.name]))) {
    return refused(fields[0].name, NOTHING_GIVEN);
  }
  return { ok: true, values: checked };
}

function refused(field, message) {
  return { ok: false, field, message };
}

/** The one field of a permission form (`DECISION_FIELD`, `ALLOW`, `DENY`, `ALLOW_SESSION` in src/form/mod.rs). */
export const DECISION_FIELD = 'decision';
export const PERMISSION_VALUES = Object.freeze(['allow', 'deny']);
/** The third value, exactly where `permission.session_rules` offers rules (Claude Code's hook). */
export const ALLOW_SESSION = 'allow_session';
/** `MAX_SESSION_RULES`, `MAX_SESSION_RULE_CHARS` in src/form/mod.rs. */
export const MAX_SESSION_RULES = 8;
export const MAX_SESSION_RULE_CHARS = 1024;

/** The rules "allow for this session" would add, as the form offers them ([] for none). */
export function sessionRules(form) {
  const rules = form?.permission?.session_rules;
  return Array.isArray(rules) ? rules : [];
}

/**
 * The shape of an agent's permission prompt (a form with `permission`, DESIGN.md §9):
 * `Form::validate_permission` of src/form/mod.rs, with its messages. Exactly one field,
 * `decision`, a required radio of `allow` and `deny` in that order (then `allow_session`,
 * exactly when `permission.session_rules` offers 1 to 8 rules), with no default, so that
 * nothing but the person's deliberate choice can allow. {ok: true}, or {ok: false, field,
 * message} as checkAnswer gives them; a form without `permission` is not held to it.
 */
export function checkPermissionForm(form) {
  if (!form || typeof form.permission !== 'object' || form.permission === null) return { ok: true };
  const fields = Array.isArray(form.fields) ? form.fields : [];
  if (fields.length !== 1) return refused(null, `a permission form has exactly one field, \`${DECISION_FIELD}\``);
  const rules = form.permission.session_rules ?? [];
  const rulesFit =
    Array.isArray(rules) &&
    rules.length <= MAX_SESSION_RULES &&
    rules.every((r) => typeof r === 'string' && !ALL_WHITESPACE.test(r) && [...r].length <= MAX_SESSION_RULE_CHARS);
  if (!rulesFit) {
    return refused(
      null,
      `a permission form's \`session_rules\` are at most ${MAX_SESSION_RULES} rules, each a non-empty text of at most ${MAX_SESSION_RULE_CHARS} characters`,
    );
  }
  const [field] = fields;
  const values = (Array.isArray(field.options) ? field.options : []).map((o) => o?.value);
  const offered = rules.length ? [...PERMISSION_VALUES, ALLOW_SESSION] : PERMISSION_VALUES;
  const shaped =
    field.name === DECISION_FIELD &&
    field.type === 'radio' &&
    field.required === true &&
    (field.default === undefined || field.default === null) &&
    values.length === offered.length &&
    values.every((v, i) => v === offered[i]);
  if (shaped) return { ok: true };
  return refused(
    field.name,
    `a permission form's field is \`${DECISION_FIELD}\`: a required radio of \`allow\` and \`deny\`, and \`${ALLOW_SESSION}\` exactly when \`session_rules\` offers rules, with no default`,
  );
}

const REQUIRED = 'is required but was left empty';

/** `Field::is_empty`: what counts as left empty, in a typed answer. */
function isEmptyValue(field, v) {
  if (v === undefined || v === null) return true;
  if (typeof v === 'string') return v === '' && TAKES_STRING.has(field.type);
  if (Array.isArray(v)) return v.length === 0 && field.type === 'multi_select';
  return false;
}

const hasBound = (b) => typeof b === 'number';

/** `Field::check_value`: {value} normalised, or {error}. */
function checkValue(field, v) {
  if (isEmptyValue(field, v)) {
    if (field.required) return { error: REQUIRED };
    if (field.type === 'multi_select') {
      // An empty selection is still a selection; its count must meet `min`.
      if (hasBound(field.min) && field.min > 0) return { error: countRule(field) };
      return { value: [] };
    }
    return { value: null };
  }
  const want = (what) => ({ error: `expected ${what}, got ${jsonKind(v)}` });
  switch (field.type) {
    case 'text':
    case 'password':
    case 'textarea':
      if (typeof v !== 'string') return want('a string');
      break;
    case 'email':
      if (typeof v !== 'string') return want('a string');
      if (!looksLikeEmail(v)) return { error: 'is not an email address' };
      break;
    case 'url':
      if (typeof v !== 'string') return want('a string');
      if (!looksLikeUrl(v)) return { error: 'is not an absolute URL (e.g. https://…)' };
      break;
    case 'number':
      if (typeof v !== 'number') return want('a number');
      if (hasBound(field.min) && v < field.min) {
        return { error: `${rustNumber(v)} is below the minimum ${rustNumber(field.min)}` };
      }
      if (hasBound(field.max) && v > field.max) {
        return { error: `${rustNumber(v)} is above the maximum ${rustNumber(field.max)}` };
      }
      break;
    case 'checkbox':
    case 'confirm':
      if (typeof v !== 'boolean') return want('true or false');
      break;
    case 'select':
    case 'radio':
      if (typeof v !== 'string') return want('a string');
      if (!offers(field, v)) return { error: `${rustDebug(v)} is not one of the options` };
      break;
    case 'multi_select': {
      if (!Array.isArray(v)) return want('an array of option values');
      const seen = new Set();
      for (const item of v) {
        if (typeof item !== 'string') return { error: `expected option values, got ${jsonKind(item)}` };
        if (!offers(field, item)) return { error: `${rustDebug(item)} is not one of the options` };
        if (seen.has(item)) return { error: `${rustDebug(item)} is chosen twice` };
        seen.add(item);
      }
      if ((hasBound(field.min) && v.length < field.min) || (hasBound(field.max) && v.length > field.max)) {
        return { error: countRule(field) };
      }
      break;
    }
    default:
      break;
  }
  return { value: v };
}

function offers(field, value) {
  return optionsOf(field).some((o) => o.value === value);
}

function countRule(field) {
  const { min, max } = field;
  if (hasBound(min) && hasBound(max)) return `choose between ${rustNumber(min)} and ${rustNumber(max)} options`;
  if (hasBound(min)) return `choose at least ${rustNumber(min)} options`;
  if (hasBound(max)) return `choose at most ${rustNumber(max)} options`;
  return 'choose some options';
}

function jsonKind(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'boolean':
      return 'a boolean';
    case 'number':
      return 'a number';
    case 'string':
      return 'a string';
    default:
      return 'an object';
  }
}

/** An f64 as Rust's Display writes it: the same shortest digits, never an exponent. */
export function rustNumber(n) {
  if (Object.is(n, -0)) return '-0';
  const s = String(n);
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (!m) return s;
  const [, sign, lead, frac = '', exp] = m;
  const digits = lead + frac;
  const point = 1 + Number(exp);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return sign + digits + '0'.repeat(point - digits.length);
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** A string as Rust's `{:?}` quotes it, for the characters an answer plausibly holds. */
export function rustDebug(s) {
  const escaped = [...s]
    .map((c) => {
      switch (c) {
        case '"':
          return '\\"';
        case '\\':
          return '\\\\';
        case '\n':
          return '\\n';
        case '\r':
          return '\\r';
        case '\t':
          return '\\t';
        case '\0':
          return '\\0';
        default: {
          const code = c.codePointAt(0);
          return code < 0x20 || (code >= 0x7f && code < 0xa0) ? `\\u{${code.toString(16)}}` : c;
        }
      }
    })
    .join('');
  return `"${escaped}"`;
}

// ---- raw values: what the controls hold ----

/** The raw value a field starts with: the draft's if it has one, else the field's default. */
export function initialRaw(field, draft) {
  const saved = draft?.values;
  if (field.type !== 'password' && saved && Object.hasOwn(saved, field.name)) {
    return normaliseRaw(field, saved[field.name]);
  }
  return normaliseRaw(field, field.type === 'password' ? undefined : field.default);
}

/** A raw value of the right shape for `field`, from whatever a draft or default holds. */
export function normaliseRaw(field, v) {
  switch (field.type) {
    case 'checkbox':
      return v === true;
    case 'confirm':
      return typeof v === 'boolean' ? v : null;
    case 'multi_select': {
      const list = Array.isArray(v) ? v : [];
      return optionsOf(field)
        .map((o) => o.value)
        .filter((value) => list.some((x) => sameValue(x, value)));
    }
    case 'select':
    case 'radio': {
      const hit = optionsOf(field).find((o) => sameValue(o.value, v));
      return hit ? hit.value : null;
    }
    default:
      return v === undefined || v === null ? '' : String(v);
  }
}

/** Whether a raw value is "left empty"; blank text counts as empty, as the panel sends it. */
export function isEmptyRaw(field, raw) {
  switch (field.type) {
    case 'checkbox':
      return false;
    case 'multi_select':
      return raw.length === 0;
    case 'confirm':
    case 'select':
    case 'radio':
      return raw === null;
    default:
      return String(raw).trim() === '';
  }
}

const rawOf = (field, raws) => raws[field.name] ?? normaliseRaw(field, undefined);

/** Typed answer values (§4) from raw values; empty optional fields are left out. */
export function typedValues(form, raws) {
  const values = {};
  for (const field of form.fields ?? []) {
    const raw = rawOf(field, raws);
    if (field.type === 'checkbox' || field.type === 'multi_select') {
      values[field.name] = field.type === 'checkbox' ? raw === true : [...raw];
      continue;
    }
    if (isEmptyRaw(field, raw)) continue;
    if (field.type === 'number') values[field.name] = Number(String(raw).trim());
    else if (field.type === 'email' || field.type === 'url') values[field.name] = String(raw).trim();
    else values[field.name] = raw;
  }
  return values;
}

/** A draft to keep: every raw value except passwords, and the note. */
export function draftOf(form, raws, note = '') {
  const values = {};
  for (const field of form.fields ?? []) {
    if (field.type === 'password' || !Object.hasOwn(raws, field.name)) continue;
    const raw = raws[field.name];
    values[field.name] = Array.isArray(raw) ? [...raw] : raw;
  }
  return { values, note: form.allow_note ? String(note ?? '') : '' };
}

// ---- what the person reads ----

// The person-facing email check is a little stricter than the agent side's (each part of
// the domain non-empty): it only asks to fix something earlier.
const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const WHOLE = /^[+-]?\d+$/;

/** The message for one field's raw value, or null when it is acceptable. */
export function validateField(field, raw) {
  if (isEmptyRaw(field, raw)) {
    if (field.required) {
      if (field.type === 'multi_select') return chooseAtLeast(Math.max(1, field.min ?? 1));
      if (CHOOSES_ONE.has(field.type)) return t('chooseOne');
      return t('fieldRequired');
    }
    // An empty selection is still a selection: its count must meet `min`.
    if (field.type !== 'multi_select') return null;
  }
  switch (field.type) {
    case 'email':
      return EMAIL.test(String(raw).trim()) ? null : t('enterEmail');
    case 'url':
      return looksLikeUrl(String(raw).trim()) ? null : t('enterUrl');
    case 'number': {
      const text = String(raw).trim();
      const n = Number(text);
      if (!NUMBER.test(text) || !Number.isFinite(n)) return t('enterNumber');
      // A whole number past 2^53 would reach the agent rounded (1234567890123456789 as
      // …800): what is sent must be what the person typed.
      if (WHOLE.test(text) && !Number.isSafeInteger(n)) return t('enterNumberExactly');
      const { min, max } = field;
      if ((hasBound(min) && n < min) || (hasBound(max) && n > max)) {
        if (hasBound(min) && hasBound(max)) return t('enterNumberFromTo', min, max);
        return hasBound(min) ? t('enterNumberAtLeast', min) : t('enterNumberAtMost', max);
      }
      return null;
    }
    case 'select':
    case 'radio':
      return optionsOf(field).some((o) => sameValue(o.value, raw)) ? null : t('chooseOffered');
    case 'multi_select': {
      const count = raw.length;
      if (hasBound(field.min) && count < field.min) return chooseAtLeast(field.min);
      if (hasBound(field.max) && count > field.max) {
        return field.max === 1 ? t('chooseAtMostOneOption') : t('chooseAtMostOptions', field.max);
      }
      return null;
    }
    default:
      return null;
  }
}

// One message for one and one for more: the few plurals here, in every language we ship,
// differ only there.
function chooseAtLeast(n) {
  return n === 1 ? t('chooseAtLeastOneOption') : t('chooseAtLeastOptions', n);
}

/**
 * Validate every field's raw value and the note: {ok, errors: {name: message}, problem},
 * where `problem` is a message about the whole answer, or null. Once each field reads well,
 * the typed answer goes through checkAnswer, so what passes here passes the agent side.
 */
export function validateRaw(form, raws, note = '') {
  const errors = {};
  for (const field of form.fields ?? []) {
    const message = validateField(field, rawOf(field, raws));
    if (message) errors[field.name] = message;
  }
  let problem = null;
  if (Object.keys(errors).length === 0) {
    const verdict = checkAnswer(form, typedValues(form, raws), form.allow_note ? note : null);
    if (!verdict.ok) {
      const field = (form.fields ?? []).find((f) => f.name === verdict.field);
      if (field) errors[field.name] = explain(field, verdict.message);
      else problem = explain(null, verdict.message);
    }
  }
  return { ok: Object.keys(errors).length === 0 && problem === null, errors, problem };
}

/**
 * A rule of the agent side (checkAnswer's or src/form/mod.rs's `message`, about `field` or, when
 * null, the whole answer) in words for the person.
 */
export function explain(field, message) {
  if (message === NOTHING_GIVEN) {
    const chooses = field && (CHOOSES_ONE.has(field.type) || field.type === 'multi_select');
    return chooses ? t('chooseOrNote') : t('answerOrNote');
  }
  if (message === REQUIRED) return t('fieldRequired');
  // A rule the person-facing checks above missed: say it as the agent side would, in its
  // words (English), which are also what the agent was told.
  return `${message.charAt(0).toUpperCase()}${message.slice(1)}.`;
}
