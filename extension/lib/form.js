// Render a him form (DESIGN.md §4) into DOM controls, collect typed values, validate them.
//
// Used by the extension's side panel and, unchanged, by the one-time loopback web page the
// him binary serves when no browser extension is connected. So this module:
//   - uses no browser-extension API and imports only ./markdown.js;
//   - takes the `document` to build with from its caller (a page passes `document`);
//   - never inserts agent text as HTML (labels and options via textContent, descriptions
//     via the safe Markdown renderer).
//
// Rendering contract
//   const view = renderForm(doc, form, {
//     idPrefix,   // unique per form on the page, for element ids (default 'him')
//     draft,      // {values: {name: raw}, note} from an earlier view.draft(), or undefined
//     onChange,   // (draft) => void, after every edit; the draft never holds password values
//     onSubmit,   // ({values, note}) => void, only once validate() passed
//     onDecline,  // () => void, from the Decline button or Esc (twice, once anything
//                 // was changed: a reflex Esc must not throw away a typed answer)
//   });
//   view.element      the <form> to insert
//   view.values()     typed answer values (§4): string | number | boolean | option values[]
//   view.note()       the optional note ('' when none or not allowed)
//   view.draft()      {values, note} to restore from later, password fields left out
//   view.validate()   {ok, errors: {name: message}}; shows each message at its field
//   view.focusFirst() focus the first control (the first invalid one after a failed submit)
//   view.handleKey(e) number keys 1-9 pick an option when focus is not in a text control;
//                     returns true when it used the key (the form calls it itself; a page
//                     forwards keys that happen outside the form, e.g. on <body>)
//   view.setDisabled(bool), view.setStatus(text)
//
// Answer values follow §4: empty optional text, number, select, radio and confirm fields are
// left out of values(); checkbox is always a boolean and multi_select always an array.
// The rules are the agent side's (src/form.rs, `Field::check_value`), so what passes here
// passes there; where this is stricter (an email needs a dotted domain here too, blank text
// counts as empty) it only asks the person to fix something earlier.

import { renderMarkdown, renderInlineMarkdown } from './markdown.js';

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

const INPUT_TYPES = new Set(['text', 'email', 'url', 'password', 'number']);
const CONFIRM_OPTIONS = Object.freeze([
  { value: true, label: 'Yes' },
  { value: false, label: 'No' },
]);

/** Options a field offers, in order; confirm offers Yes and No. */
export function optionsOf(field) {
  if (field.type === 'confirm') return CONFIRM_OPTIONS;
  return Array.isArray(field.options) ? field.options : [];
}

/** The raw value a field starts with: the draft's if it has one, else the field's default. */
export function initialRaw(field, draft) {
  const saved = draft?.values;
  if (field.type !== 'password' && saved && Object.hasOwn(saved, field.name)) {
    return normaliseRaw(field, saved[field.name]);
  }
  return normaliseRaw(field, field.type === 'password' ? undefined : field.default);
}

// Raw values are what the controls hold: strings for text-like fields (a number as typed,
// so "1e" survives a reload), an option value or null for select/radio, a boolean or null
// for confirm, a boolean for checkbox, an array of option values for multi_select.
function normaliseRaw(field, v) {
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

function sameValue(a, b) {
  return a === b || (a !== null && b !== null && a !== undefined && b !== undefined && String(a) === String(b));
}

function isEmptyRaw(field, raw) {
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

// Deliberately a little stricter than "anything with an @": one @, something on both
// sides, a dot in the domain, no spaces.
const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;

/** An absolute URL as the agent side accepts it: `scheme://something`, no spaces. */
export function isAbsoluteUrl(s) {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\/\/\S+$/.test(s);
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The message for one field's raw value, or null when it is acceptable. */
export function validateField(field, raw) {
  const empty = isEmptyRaw(field, raw);
  if (empty) {
    if (field.required) {
      if (field.type === 'multi_select') {
        return `Choose at least ${plural(Math.max(1, field.min ?? 1), 'option')}.`;
      }
      if (['select', 'radio', 'confirm'].includes(field.type)) return 'Choose one.';
      return 'This field is required.';
    }
    // An empty selection is still a selection: its count must meet `min`.
    if (field.type !== 'multi_select') return null;
  }
  switch (field.type) {
    case 'email':
      return EMAIL.test(String(raw).trim()) ? null : 'Enter an email address, like name@example.com.';
    case 'url':
      return isAbsoluteUrl(String(raw).trim()) ? null : 'Enter a full address, like https://example.com.';
    case 'number': {
      const text = String(raw).trim();
      const n = Number(text);
      if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text) || !Number.isFinite(n)) {
        return 'Enter a number.';
      }
      const hasMin = typeof field.min === 'number';
      const hasMax = typeof field.max === 'number';
      if ((hasMin && n < field.min) || (hasMax && n > field.max)) {
        if (hasMin && hasMax) return `Enter a number from ${field.min} to ${field.max}.`;
        return hasMin ? `Enter a number of at least ${field.min}.` : `Enter a number of at most ${field.max}.`;
      }
      return null;
    }
    case 'select':
    case 'radio':
      return optionsOf(field).some((o) => sameValue(o.value, raw)) ? null : 'Choose one of the options offered.';
    case 'multi_select': {
      const count = raw.length;
      if (typeof field.min === 'number' && count < field.min) {
        return `Choose at least ${plural(field.min, 'option')}.`;
      }
      if (typeof field.max === 'number' && count > field.max) {
        return `Choose at most ${plural(field.max, 'option')}.`;
      }
      return null;
    }
    default:
      return null;
  }
}

/** Validate every field's raw value: {ok, errors: {name: message}}. */
export function validateRaw(form, raws) {
  const errors = {};
  for (const field of form.fields ?? []) {
    const message = validateField(field, raws[field.name] ?? normaliseRaw(field, undefined));
    if (message) errors[field.name] = message;
  }
  return { ok: Object.keys(errors).length === 0, errors };
}

/** Typed answer values (§4) from raw values; empty optional fields are left out. */
export function typedValues(form, raws) {
  const values = {};
  for (const field of form.fields ?? []) {
    const raw = raws[field.name] ?? normaliseRaw(field, undefined);
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

/** Whether a key event's target is a control where digits and Enter are text. */
export function isTextEntry(target) {
  if (!target || !target.tagName) return false;
  const tag = target.tagName.toLowerCase();
  if (tag === 'textarea' || tag === 'select') return true;
  if (target.isContentEditable) return true;
  if (tag !== 'input') return false;
  const type = (target.getAttribute('type') || 'text').toLowerCase();
  return !['radio', 'checkbox', 'button', 'submit', 'reset'].includes(type);
}

/** Render `form` with `doc`; see the contract at the top of this file. */
export function renderForm(doc, form, opts = {}) {
  const prefix = opts.idPrefix ?? 'him';
  const fields = Array.isArray(form.fields) ? form.fields : [];
  let disabled = false;
  let attempted = false;

  const root = doc.createElement('form');
  root.className = 'him-form';
  root.setAttribute('novalidate', '');

  const titleId = `${prefix}-title`;
  root.setAttribute('aria-labelledby', titleId);
  // The title is the agent's question, which the tools document as Markdown: its first
  // paragraph is the heading, anything after it reads as more description.
  const [head, ...more] = String(form.title || 'A question for you').trim().split(/\n\s*\n/);
  const title = doc.createElement('h2');
  title.className = 'him-title';
  title.id = titleId;
  title.appendChild(renderInlineMarkdown(doc, head));
  root.appendChild(title);
  if (more.length) {
    const rest = doc.createElement('div');
    rest.className = 'him-md him-title-more';
    rest.appendChild(renderMarkdown(doc, more.join('\n\n')));
    root.appendChild(rest);
  }

  if (form.description) {
    const desc = doc.createElement('div');
    desc.className = 'him-md him-form-desc';
    desc.id = `${prefix}-desc`;
    desc.appendChild(renderMarkdown(doc, form.description));
    root.appendChild(desc);
    root.setAttribute('aria-describedby', desc.id);
  }

  // One fieldset around everything, so disabling the form is one attribute.
  const body = doc.createElement('fieldset');
  body.className = 'him-body';
  root.appendChild(body);

  // The one-question tools label their only field with the question itself; showing it
  // twice is noise, so the label is then kept for assistive technology only.
  const soleLabelIsTitle = fields.length === 1 && String(fields[0].label ?? '').trim() === String(form.title ?? '').trim();
  const controls = fields.map((field, index) => {
    const control = buildField(doc, field, `${prefix}-f${index}`, initialRaw(field, opts.draft), soleLabelIsTitle);
    body.appendChild(control.element);
    return control;
  });

  let noteArea = null;
  if (form.allow_note) {
    const wrap = doc.createElement('div');
    wrap.className = 'him-field him-note';
    const label = doc.createElement('label');
    label.className = 'him-label';
    label.htmlFor = `${prefix}-note`;
    label.textContent = 'Note (optional)';
    noteArea = doc.createElement('textarea');
    noteArea.id = `${prefix}-note`;
    noteArea.rows = 2;
    noteArea.placeholder = 'Add context, or answer in your own words';
    noteArea.value = typeof opts.draft?.note === 'string' ? opts.draft.note : '';
    wrap.append(label, noteArea);
    body.appendChild(wrap);
  }

  const actions = doc.createElement('div');
  actions.className = 'him-actions';
  const submit = doc.createElement('button');
  submit.type = 'submit';
  submit.className = 'him-submit';
  submit.textContent = form.submit_label || 'Submit';
  const decline = doc.createElement('button');
  decline.type = 'button';
  decline.className = 'him-decline';
  decline.textContent = 'Decline';
  actions.append(submit, decline);
  body.appendChild(actions);

  const status = doc.createElement('p');
  status.className = 'him-status';
  status.setAttribute('role', 'status');
  root.appendChild(status);

  const hint = doc.createElement('p');
  hint.className = 'him-hint';
  const hasChoices = controls.some((c) => c.pick);
  hint.textContent = [
    'Enter submits',
    noteArea || fields.some((f) => f.type === 'textarea') ? 'Ctrl+Enter in a text area' : null,
    'Esc declines',
    hasChoices ? '1–9 pick an option' : null,
  ]
    .filter(Boolean)
    .join(' · ');
  root.appendChild(hint);

  const raws = () => Object.fromEntries(controls.map((c) => [c.field.name, c.read()]));
  const note = () => (noteArea ? noteArea.value : '');
  const draft = () => draftOf(form, raws(), note());
  // Everything the person can change, passwords included, as first shown.
  const snapshot = () => JSON.stringify([raws(), note()]);
  const pristine = snapshot();
  let escArmedUntil = 0;

  const validate = () => {
    const result = validateRaw(form, raws());
    for (const control of controls) control.setError(result.errors[control.field.name] ?? null);
    return result;
  };

  const focusFirst = () => {
    const invalid = controls.find((c) => c.invalid());
    const target = invalid ?? controls[0];
    if (target) target.focus();
    else if (noteArea) noteArea.focus();
    else submit.focus();
  };

  const revalidate = (control) => {
    const raw = control.read();
    // Before the first submit, only say something once there is something to judge:
    // tabbing through an empty required field is not an error yet.
    if (!attempted && isEmptyRaw(control.field, raw) && !control.invalid()) return;
    control.setError(validateField(control.field, raw));
  };

  root.addEventListener('input', () => opts.onChange?.(draft()));
  root.addEventListener('change', (event) => {
    const control = controls.find((c) => c.element.contains(event.target));
    if (control && (control.invalid() || control.pick)) revalidate(control);
  });
  root.addEventListener('focusout', (event) => {
    const control = controls.find((c) => c.element.contains(event.target));
    if (control && !control.element.contains(event.relatedTarget)) revalidate(control);
  });
  root.addEventListener('submit', (event) => {
    event.preventDefault();
    if (disabled) return;
    attempted = true;
    const result = validate();
    if (!result.ok) {
      focusFirst();
      return;
    }
    opts.onSubmit?.({ values: typedValues(form, raws()), note: note() });
  });
  decline.addEventListener('click', () => {
    if (!disabled) opts.onDecline?.();
  });

  const handleKey = (event) => {
    if (disabled || event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return false;
    if (!/^[1-9]$/.test(event.key) || isTextEntry(event.target)) return false;
    const inside = controls.find((c) => c.pick && c.element.contains(event.target));
    const control = inside ?? controls.find((c) => c.pick);
    if (!control || !control.pick(Number(event.key) - 1)) return false;
    event.preventDefault();
    opts.onChange?.(draft());
    revalidate(control);
    return true;
  };

  root.addEventListener('keydown', (event) => {
    // Keys that compose text in an input method (Enter picks a candidate) are not ours.
    if (disabled || event.isComposing || event.keyCode === 229) return;
    if (event.key === 'Escape' && !event.defaultPrevented) {
      event.preventDefault();
      const now = Date.now();
      if (snapshot() !== pristine && now > escArmedUntil) {
        escArmedUntil = now + 3000;
        status.textContent = 'Press Esc again to decline.';
        return;
      }
      opts.onDecline?.();
      return;
    }
    if (event.key === 'Enter' && !event.shiftKey && !event.altKey) {
      const tag = event.target?.tagName?.toLowerCase();
      const onButton = tag === 'button' || tag === 'a';
      // Ctrl/Cmd+Enter submits from anywhere, a text area included; plain Enter submits
      // from any control except a text area (new line) and buttons (they press themselves).
      if (event.ctrlKey || event.metaKey || (tag !== 'textarea' && !onButton)) {
        event.preventDefault();
        root.requestSubmit ? root.requestSubmit(submit) : submit.click();
      }
      return;
    }
    handleKey(event);
  });

  return {
    element: root,
    values: () => typedValues(form, raws()),
    note,
    draft,
    validate,
    focusFirst,
    handleKey,
    setDisabled(value) {
      disabled = Boolean(value);
      body.disabled = disabled;
    },
    setStatus(text) {
      status.textContent = text ?? '';
    },
  };
}

// Build one field: {field, element, read(), focus(), setError(msg|null), invalid(), pick?(i)}.
function buildField(doc, field, id, raw, hideLabel) {
  const wrap = doc.createElement(isGroup(field) ? 'fieldset' : 'div');
  wrap.className = `him-field him-type-${field.type}`;
  wrap.dataset.name = field.name;

  const descId = `${id}-desc`;
  const errorId = `${id}-error`;
  const error = doc.createElement('p');
  error.className = 'him-error';
  error.id = errorId;
  error.hidden = true;

  let description = null;
  if (field.description) {
    description = doc.createElement('div');
    description.className = 'him-md him-field-desc';
    description.id = descId;
    description.appendChild(renderMarkdown(doc, field.description));
  }

  const labelText = field.label || field.name;
  let focusables = [];
  let read;
  let pick;

  if (isGroup(field)) {
    const legend = doc.createElement('legend');
    legend.className = hideLabel ? 'him-label him-visually-hidden' : 'him-label';
    legend.appendChild(renderInlineMarkdown(doc, labelText));
    if (field.required) legend.appendChild(requiredMark(doc));
    wrap.appendChild(legend);
    if (description) wrap.appendChild(description);
    const multi = field.type === 'multi_select';
    wrap.setAttribute('role', multi ? 'group' : 'radiogroup');
    if (field.required && !multi) wrap.setAttribute('aria-required', 'true');
    if (multi && (typeof field.min === 'number' || typeof field.max === 'number')) {
      const bounds = doc.createElement('p');
      bounds.className = 'him-bounds';
      bounds.id = `${id}-bounds`;
      bounds.textContent = boundsText(field);
      wrap.appendChild(bounds);
    }
    const list = doc.createElement('div');
    list.className = 'him-options';
    const options = optionsOf(field);
    const inputs = options.map((option, i) => {
      const row = doc.createElement('div');
      row.className = 'him-option';
      const label = doc.createElement('label');
      const input = doc.createElement('input');
      input.type = multi ? 'checkbox' : 'radio';
      input.name = id;
      input.id = `${id}-o${i}`;
      input.value = String(i);
      input.checked = multi ? raw.some((v) => sameValue(v, option.value)) : sameValue(raw, option.value);
      label.htmlFor = input.id;
      if (i < 9) {
        const key = doc.createElement('kbd');
        key.setAttribute('aria-hidden', 'true');
        key.textContent = String(i + 1);
        label.appendChild(key);
      }
      const text = doc.createElement('span');
      text.className = 'him-option-label';
      text.textContent = option.label ?? String(option.value);
      label.appendChild(text);
      if (option.recommended) {
        row.classList.add('him-recommended');
        const rec = doc.createElement('span');
        rec.className = 'him-rec';
        rec.textContent = 'Recommended';
        label.appendChild(rec);
      }
      row.append(input, label);
      if (option.description) {
        const odesc = doc.createElement('div');
        odesc.className = 'him-md him-option-desc';
        odesc.id = `${input.id}-desc`;
        odesc.appendChild(renderInlineMarkdown(doc, option.description));
        row.appendChild(odesc);
        input.setAttribute('aria-describedby', odesc.id);
      }
      list.appendChild(row);
      return input;
    });
    wrap.appendChild(list);
    focusables = inputs;
    read = () => {
      if (multi) return options.filter((_, i) => inputs[i].checked).map((o) => o.value);
      const i = inputs.findIndex((input) => input.checked);
      return i === -1 ? null : options[i].value;
    };
    pick = (i) => {
      const input = inputs[i];
      if (!input) return false;
      input.checked = multi ? !input.checked : true;
      input.focus();
      return true;
    };
    const describedBy = [description && descId, multi && wrap.querySelector('.him-bounds') && `${id}-bounds`]
      .filter(Boolean)
      .join(' ');
    if (describedBy) wrap.setAttribute('aria-describedby', describedBy);
  } else if (field.type === 'checkbox') {
    const row = doc.createElement('div');
    row.className = 'him-check';
    const input = doc.createElement('input');
    input.type = 'checkbox';
    input.id = id;
    input.checked = raw === true;
    const label = doc.createElement('label');
    label.className = 'him-label';
    label.htmlFor = id;
    label.appendChild(renderInlineMarkdown(doc, labelText));
    row.append(input, label);
    wrap.appendChild(row);
    if (description) wrap.appendChild(description);
    focusables = [input];
    read = () => input.checked;
  } else {
    const label = doc.createElement('label');
    label.className = hideLabel ? 'him-label him-visually-hidden' : 'him-label';
    label.htmlFor = id;
    label.appendChild(renderInlineMarkdown(doc, labelText));
    if (field.required) label.appendChild(requiredMark(doc));
    wrap.appendChild(label);
    if (description) wrap.appendChild(description);
    let input;
    if (field.type === 'textarea') {
      input = doc.createElement('textarea');
      input.rows = 4;
    } else if (field.type === 'select') {
      input = doc.createElement('select');
      const options = optionsOf(field);
      const blank = doc.createElement('option');
      blank.value = '';
      blank.textContent = 'Choose…';
      input.appendChild(blank);
      options.forEach((option, i) => {
        const el = doc.createElement('option');
        el.value = String(i);
        el.textContent = (option.label ?? String(option.value)) + (option.recommended ? ' (recommended)' : '');
        input.appendChild(el);
      });
      const selected = options.findIndex((o) => sameValue(o.value, raw));
      input.value = selected === -1 ? '' : String(selected);
      read = () => (input.value === '' ? null : (options[Number(input.value)]?.value ?? null));
      // "Choose…" stays selectable only where choosing nothing is allowed.
      if (field.required && selected !== -1) blank.disabled = true;
      pick = (i) => {
        if (!options[i]) return false;
        input.value = String(i);
        input.focus();
        return true;
      };
    } else {
      input = doc.createElement('input');
      input.type = INPUT_TYPES.has(field.type) ? field.type : 'text';
      if (field.type === 'number') {
        // A text box with a numeric keyboard: type=number would swallow "1e" and show
        // nothing, which makes the as-typed draft and the error message impossible.
        input.type = 'text';
        input.inputMode = 'decimal';
      }
      if (['email', 'url', 'password', 'number'].includes(field.type)) {
        input.spellcheck = false;
        input.setAttribute('autocapitalize', 'off');
      }
      // "off", not "new-password": a secret asked for once is not a password to generate.
      input.autocomplete = 'off';
    }
    if (field.type !== 'select') {
      input.value = raw;
      read = () => input.value;
      if (field.placeholder) input.placeholder = String(field.placeholder);
    }
    input.id = id;
    input.name = field.name;
    if (field.required) {
      input.required = true;
      input.setAttribute('aria-required', 'true');
    }
    if (description) input.setAttribute('aria-describedby', descId);
    if (field.type === 'number' && (typeof field.min === 'number' || typeof field.max === 'number')) {
      const bounds = doc.createElement('p');
      bounds.className = 'him-bounds';
      bounds.id = `${id}-bounds`;
      bounds.textContent = boundsText(field);
      wrap.appendChild(bounds);
      input.setAttribute('aria-describedby', [description && descId, bounds.id].filter(Boolean).join(' '));
    }
    wrap.appendChild(input);
    focusables = [input];
  }

  wrap.appendChild(error);
  const described = focusables[0] && !isGroup(field) ? focusables[0] : wrap;
  const baseDescribedBy = described.getAttribute('aria-describedby') ?? '';

  return {
    field,
    element: wrap,
    read,
    pick,
    focus() {
      const target = focusables.find((el) => el.checked) ?? focusables[0];
      target?.focus();
    },
    invalid: () => !error.hidden,
    setError(message) {
      error.hidden = !message;
      error.textContent = message ?? '';
      // A radiogroup carries aria-invalid itself; a plain group cannot, so its boxes do.
      const marked = field.type === 'radio' || field.type === 'confirm' ? [wrap] : focusables;
      for (const el of marked) {
        if (message) el.setAttribute('aria-invalid', 'true');
        else el.removeAttribute('aria-invalid');
      }
      const ids = [baseDescribedBy, message ? errorId : ''].filter(Boolean).join(' ');
      if (ids) described.setAttribute('aria-describedby', ids);
      else described.removeAttribute('aria-describedby');
    },
  };
}

function isGroup(field) {
  return field.type === 'radio' || field.type === 'confirm' || field.type === 'multi_select';
}

function requiredMark(doc) {
  const mark = doc.createElement('span');
  mark.className = 'him-req';
  // aria-required already tells assistive technology; this is for the eye.
  mark.setAttribute('aria-hidden', 'true');
  mark.textContent = ' (required)';
  return mark;
}

function boundsText(field) {
  const noun = field.type === 'multi_select' ? 'Choose' : 'A number';
  const { min, max } = field;
  const hasMin = typeof min === 'number';
  const hasMax = typeof max === 'number';
  if (field.type === 'multi_select') {
    if (hasMin && hasMax) return min === max ? `${noun} ${min}.` : `${noun} ${min} to ${max}.`;
    return hasMin ? `${noun} at least ${min}.` : `${noun} up to ${max}.`;
  }
  if (hasMin && hasMax) return `${noun} from ${min} to ${max}.`;
  return hasMin ? `${noun} of at least ${min}.` : `${noun} of at most ${max}.`;
}
