// Render a him form (DESIGN.md §4) into DOM controls and collect the person's answer.
//
// Used by the extension's side panel and, unchanged, by the one-time loopback web page the
// him binary serves when no browser extension is connected. So this module:
//   - uses no browser-extension API and imports only ./formmodel.js, ./markdown.js and
//     ./i18n.js (its own words, in the person's language: the page hands it the table);
//   - takes the `document` to build with from its caller (a page passes `document`);
//   - never inserts agent text as HTML (labels and options via textContent, descriptions
//     via the safe Markdown renderer).
// What a value means, what is empty and what is valid is ./formmodel.js, the twin of
// src/form/mod.rs; this file only reads and writes controls.
//
// Rendering contract
//   const view = renderForm(doc, form, {
//     idPrefix,   // unique per form on the page, for element ids (default 'him')
//     draft,      // {values: {name: raw}, note} from an earlier view.draft(), or undefined
//     onChange,   // (draft) => void, after every edit; the draft never holds password values
//     onSubmit,   // ({values, note}) => void, only once validate() passed
//     onDecline,  // () => void, from the Decline button or Esc pressed twice within 2 s
//                 // (in a side panel Esc is a reflex: one press must not decline)
//     now,        // () => Unix ms, the clock for that 2 s (default Date.now)
//     arming,     // options of lib/arming.js's watchArming ({delay, now}), for tests
//   });
// Nothing is decided unseen (lib/arming.js): until the form has been on screen ARM_DELAY_MS
// (and again after view.rearm()), keys that would act on it and clicks in it do nothing; it
// is marked `data-armed` once they count.
// A one-question yes/no form (ask_confirm) is two buttons, Yes and No, that send at once;
// Y and N press them, Enter presses the default (only when the question has one), and
// Decline is a small text button.
//   view.element      the <form> to insert
//   view.values()     typed answer values (§4): string | number | boolean | option values[]
//   view.note()       the optional note ('' when none or not allowed)
//   view.draft()      {values, note} to restore from later, password fields left out
//   view.validate()   {ok, errors: {name: message}, problem}; shows each message at its
//                     field, and a problem of the whole answer in the status line
//   view.focusFirst() focus the first control (the first invalid one after a failed submit)
//   view.handleKey(e) number keys 1-9 pick an option of the focused option group, or of the
//                     only field of a one-question form, when focus is not in a text control;
//                     on a yes/no card, Y, N and Enter (the default) answer instead;
//                     returns true when it used the key (the form calls it itself; a page
//                     forwards keys that happen outside the form, e.g. on <body>)
//   view.setDisabled(bool), view.setStatus(text)
//   view.setSendable(bool)  false: Submit and Decline are disabled (nothing can be sent
//                     now) while the fields stay editable, so the draft goes on
//   view.setReadOnly(bool)  true: nothing can be changed or sent, but typed text can still
//                     be selected and copied (a disabled text box cannot be, in Chromium)
//   view.showRefusal({field, message})  the agent side refused the answer sent: its reason
//                     (src/form/mod.rs's words) at the field it names, or in the status line
//   view.rearm()      the form appeared anew (opened in the panel, moved): the wait starts over
//   view.release()    the form is gone for good: stop watching whether it is on screen
//
// Answer values follow §4: empty optional text, number, select, radio and confirm fields are
// left out of values(); checkbox is always a boolean and multi_select always an array.

import { actsOnCard, guardCard, isTextEntry, watchArming } from './arming.js';
import { renderMarkdown, renderInlineMarkdown } from './markdown.js';
import { t } from './i18n.js';
import {
  draftOf,
  explain,
  initialRaw,
  isEmptyRaw,
  optionsOf,
  sameValue,
  typedValues,
  validateField,
  validateRaw,
} from './formmodel.js';

// The model's names this module has always exported, for callers that import them from here.
export {
  FIELD_TYPES,
  draftOf,
  initialRaw,
  isAbsoluteUrl,
  optionsOf,
  typedValues,
  validateField,
  validateRaw,
} from './formmodel.js';

// Where digits and Enter are text; lib/arming.js needs the same answer.
export { isTextEntry };

/** Whether the browser runs on Apple's systems, whose modifier key is ⌘ rather than Ctrl. */
export function isApplePlatform(nav) {
  const platform = nav?.userAgentData?.platform || nav?.platform || '';
  return /mac|iphone|ipad|ipod/i.test(platform);
}

const ESC_AGAIN_MS = 2000;

/** Render `form` with `doc`; see the contract at the top of this file. */
export function renderForm(doc, form, opts = {}) {
  const prefix = opts.idPrefix ?? 'him';
  const fields = Array.isArray(form.fields) ? form.fields : [];
  let disabled = false;
  let sendable = true;
  let attempted = false;
  const escAgain = t('escAgainToDecline');

  const root = doc.createElement('form');
  root.className = 'him-form';
  root.setAttribute('novalidate', '');
  const arming = watchArming(root, opts.arming);
  guardCard(root, arming);

  const titleId = `${prefix}-title`;
  root.setAttribute('aria-labelledby', titleId);
  // The title is the agent's question, which the tools document as Markdown: its first
  // paragraph is the heading, anything after it reads as more description.
  const [head, ...more] = String(form.title || t('questionForYou')).trim().split(/\n\s*\n/);
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
  // A yes/no question alone on its card: two buttons answer it in one press. In a form of
  // several fields a confirm stays a pair of options, sent with the rest.
  const yesNo = fields.length === 1 && fields[0].type === 'confirm';
  const controls = fields.map((field, index) => {
    const control = buildField(doc, field, `${prefix}-f${index}`, initialRaw(field, opts.draft), soleLabelIsTitle, yesNo);
    body.appendChild(control.element);
    return control;
  });
  // A long list of options scrolls Submit out of sight: it stays at the bottom instead.
  if (controls.some((c) => c.compact)) root.classList.add('him-long');

  let noteArea = null;
  if (form.allow_note) {
    const wrap = doc.createElement('div');
    wrap.className = 'him-field him-note';
    const label = doc.createElement('label');
    label.className = 'him-label';
    label.htmlFor = `${prefix}-note`;
    label.textContent = t('noteOptional');
    noteArea = doc.createElement('textarea');
    noteArea.id = `${prefix}-note`;
    noteArea.rows = 2;
    noteArea.placeholder = t('notePlaceholder');
    noteArea.value = typeof opts.draft?.note === 'string' ? opts.draft.note : '';
    wrap.append(label, noteArea);
    body.appendChild(wrap);
  }

  const actions = doc.createElement('div');
  actions.className = 'him-actions';
  const submit = doc.createElement('button');
  submit.type = 'submit';
  submit.className = 'him-submit';
  submit.textContent = form.submit_label || t('submit');
  const decline = doc.createElement('button');
  decline.type = 'button';
  decline.className = 'him-decline';
  decline.textContent = t('decline');
  const hint = doc.createElement('p');
  hint.className = 'him-hint';
  hint.setAttribute('aria-hidden', 'true');
  if (yesNo) {
    // The two answer buttons send; Submit would be a third big button meaning nothing more.
    submit.hidden = true;
    decline.classList.add('him-quiet');
  }
  actions.append(submit, decline, hint);
  // Above Submit, in a long form, which fields stopped the last submit, each a way to it.
  const summary = doc.createElement('p');
  summary.className = 'him-summary';
  summary.id = `${prefix}-summary`;
  summary.hidden = true;
  body.append(summary, actions);

  // With the buttons, whose bar stays in sight in a long form: "Press Esc again" or a
  // refusal shows where the person is, not below the fold.
  const status = doc.createElement('p');
  status.className = 'him-status';
  status.setAttribute('role', 'status');
  actions.appendChild(status);

  // Digits pick only where it is plain which field they mean: the group the focus is in,
  // or the one field there is. Key badges show only there (form.css).
  const soleControl = controls.length === 1 ? controls[0] : null;
  root.dataset.keys = soleControl ? 'always' : 'focus';
  const yesNoControl = yesNo ? soleControl : null;
  const defaultAnswer = yesNoControl && typeof yesNoControl.field.default === 'boolean' ? yesNoControl.field.default : null;

  // The hint names only keys that work here and now: digits where a digit picks (in a form
  // of several fields, only while the focus is in an option group), ⌘ on Apple's systems.
  const modifier = isApplePlatform(doc.defaultView?.navigator) ? '⌘' : 'Ctrl+';
  const hasTextArea = Boolean(noteArea) || fields.some((f) => f.type === 'textarea');
  const showHint = (focused) => {
    const picker = soleControl ?? focused;
    const count = picker?.pick && !yesNo ? Math.min(9, optionsOf(picker.field).length) : 0;
    // The keys themselves (Y, N, Enter, Esc) are the keys' names, in every language.
    const parts = yesNo
      ? [
          'Y / N',
          defaultAnswer === null ? null : defaultAnswer ? t('hintEnterForYes') : t('hintEnterForNo'),
          t('hintEscEscToDecline'),
        ]
      : [
          hasTextArea ? t('hintModifierEnterToSend', modifier) : t('hintEnterToSend'),
          count > 1 ? t('hintDigitsToPick', count) : count === 1 ? t('hintOneToPick') : null,
          t('hintEscEscToDecline'),
        ];
    hint.textContent = parts.filter(Boolean).join(' · ');
  };
  showHint(null);

  const raws = () => Object.fromEntries(controls.map((c) => [c.field.name, c.read()]));
  const note = () => (noteArea ? noteArea.value : '');
  const draft = () => draftOf(form, raws(), note());
  let escArmedUntil = 0;
  const now = opts.now ?? Date.now;

  let summarised = '';
  const showSummary = () => {
    const invalid = attempted && controls.length > 1 ? controls.filter((c) => c.invalid()) : [];
    // Rebuilt only when the list changes: the focus leaving a field revalidates it, and a
    // link replaced between its mousedown and its click would never be clicked.
    const names = invalid.map((c) => c.field.name).join('\n');
    if (names === summarised) return;
    summarised = names;
    summary.hidden = invalid.length === 0;
    const n = invalid.length;
    const links = invalid.flatMap((control, i) => {
      const link = doc.createElement('button');
      link.type = 'button';
      link.appendChild(renderInlineMarkdown(doc, labelText(control.field)));
      link.addEventListener('click', () => control.focus());
      return i === 0 ? [link] : [doc.createTextNode(', '), link];
    });
    const heading = n === 1 ? t('summaryOneField') : t('summaryFields', n);
    summary.replaceChildren(...(n ? [doc.createTextNode(`${heading} `), ...links] : []));
  };

  let shownProblem = null;
  // Counts judgements of the whole form, so that a field's judgement put off until a click
  // was over is dropped when that click judged everything (Submit) or set an error itself.
  let wholeJudgements = 0;
  const validate = () => {
    wholeJudgements += 1;
    const result = validateRaw(form, raws(), note());
    for (const control of controls) control.setError(result.errors[control.field.name] ?? null);
    // A problem of the whole answer has no field to stand by: the status line says it.
    if (result.problem || (shownProblem && status.textContent === shownProblem)) {
      status.textContent = result.problem ?? '';
    }
    shownProblem = result.problem;
    showSummary();
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
    showSummary();
  };

  root.addEventListener('input', (event) => {
    opts.onChange?.(draft());
    // After a failed submit, a note can settle what the fields could not ("an option, or
    // a note"), so it is judged again as it is typed.
    if (attempted && noteArea && event.target === noteArea) validate();
  });
  // Leaving a field judges it again, and a message that comes or goes moves what is below.
  // When a press of the pointer moved the focus, that waits until the click is over: moved
  // between press and release, the click would land on nothing and be lost.
  // The release may come anywhere, so it is heard on the window, only while pressed (a
  // listener left there for good would keep every form ever shown alive).
  let pointerDown = false;
  let afterPointer = [];
  const win = doc.defaultView;
  const pointerReleased = () => {
    win.removeEventListener('pointerup', pointerReleased, true);
    win.removeEventListener('pointercancel', pointerReleased, true);
    pointerDown = false;
    const waiting = afterPointer;
    afterPointer = [];
    // After the click that this release ends, which the browser dispatches next.
    if (waiting.length) win.setTimeout(() => waiting.forEach((run) => run()), 0);
  };
  root.addEventListener(
    'pointerdown',
    () => {
      if (pointerDown) return;
      pointerDown = true;
      win.addEventListener('pointerup', pointerReleased, true);
      win.addEventListener('pointercancel', pointerReleased, true);
    },
    true,
  );
  const judge = (control) => {
    if (!pointerDown) {
      revalidate(control);
      return;
    }
    const seen = wholeJudgements;
    afterPointer.push(() => {
      if (seen === wholeJudgements) revalidate(control);
    });
  };
  // A text field's change comes as it loses the focus, so with the press that moved it.
  root.addEventListener('change', (event) => {
    const control = controls.find((c) => c.element.contains(event.target));
    if (control && (control.invalid() || control.pick)) judge(control);
  });
  root.addEventListener('focusout', (event) => {
    const control = controls.find((c) => c.element.contains(event.target));
    if (control && !control.element.contains(event.relatedTarget)) judge(control);
    if (!root.contains(event.relatedTarget)) showHint(null);
  });
  root.addEventListener('focusin', (event) => {
    showHint(controls.find((c) => c.element.contains(event.target)) ?? null);
  });
  root.addEventListener('submit', (event) => {
    event.preventDefault();
    if (disabled || !sendable) return;
    attempted = true;
    const result = validate();
    if (!result.ok) {
      focusFirst();
      return;
    }
    opts.onSubmit?.({ values: typedValues(form, raws()), note: note() });
  });
  decline.addEventListener('click', () => {
    if (!disabled && sendable) opts.onDecline?.();
  });

  // Pressing Yes or No is the whole answer: it goes through the same check as Submit.
  const answerYesNo = (value) => {
    if (disabled || !sendable) return;
    yesNoControl.set(value);
    opts.onChange?.(draft());
    root.requestSubmit ? root.requestSubmit() : root.dispatchEvent(new doc.defaultView.Event('submit', { cancelable: true }));
  };
  yesNoControl?.onPress(answerYesNo);

  const handleYesNoKey = (event) => {
    if (event.altKey || event.metaKey || isTextEntry(event.target)) return false;
    const tag = event.target?.tagName?.toLowerCase();
    let value = null;
    if (!event.ctrlKey && /^[yn]$/i.test(event.key)) value = event.key.toLowerCase() === 'y';
    // Enter on a button presses that button; elsewhere it means the default, and with no
    // default it means nothing: a yes or a no is never guessed.
    else if (event.key === 'Enter' && !event.shiftKey && tag !== 'button' && tag !== 'a') {
      event.preventDefault();
      if (defaultAnswer === null) return true;
      value = defaultAnswer;
    } else return false;
    event.preventDefault();
    answerYesNo(value);
    return true;
  };

  const handleKey = (event) => {
    if (disabled || event.defaultPrevented) return false;
    // A key from outside the form (the page forwards it) waits for the form to be seen too.
    if (actsOnCard(event) && !arming.allows(event)) {
      event.preventDefault();
      return true;
    }
    if (yesNoControl) return handleYesNoKey(event);
    if (event.altKey || event.ctrlKey || event.metaKey) return false;
    if (!/^[1-9]$/.test(event.key) || isTextEntry(event.target)) return false;
    // Only the control the focus is in, or the only one: never another field than meant.
    const control = controls.find((c) => c.element.contains(event.target)) ?? soleControl;
    if (!control?.pick || !control.pick(Number(event.key) - 1)) return false;
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
      // In a side panel Esc is a reflex (it closes things elsewhere): one press only asks
      // for a second, typed text or not, so nothing is declined by accident.
      const at = now();
      if (at > escArmedUntil) {
        escArmedUntil = at + ESC_AGAIN_MS;
        status.textContent = escAgain;
        doc.defaultView?.setTimeout(() => {
          if (status.textContent === escAgain && now() > escArmedUntil) status.textContent = '';
        }, ESC_AGAIN_MS + 50);
        return;
      }
      escArmedUntil = 0;
      if (status.textContent === escAgain) status.textContent = '';
      if (sendable) opts.onDecline?.();
      return;
    }
    if (yesNoControl && handleYesNoKey(event)) return;
    if (event.key === 'Enter' && !event.shiftKey && !event.altKey && !event.defaultPrevented) {
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
    rearm: () => arming.restart(),
    release: () => arming.disconnect(),
    setDisabled(value) {
      disabled = Boolean(value);
      body.disabled = disabled;
    },
    setStatus(text) {
      status.textContent = text ?? '';
    },
    setReadOnly(value) {
      const readOnly = Boolean(value);
      for (const el of body.querySelectorAll('input, textarea, select')) {
        const isText = el.tagName.toLowerCase() === 'textarea' || isTextEntry(el);
        if (isText && el.tagName.toLowerCase() !== 'select') el.readOnly = readOnly;
        else el.disabled = readOnly;
      }
      for (const el of body.querySelectorAll('.him-yesno button')) el.disabled = readOnly || !sendable;
      disabled = readOnly;
      submit.disabled = readOnly || !sendable;
      decline.disabled = readOnly || !sendable;
    },
    setSendable(value) {
      sendable = Boolean(value);
      for (const el of body.querySelectorAll('.him-yesno button')) el.disabled = !sendable;
      submit.disabled = !sendable;
      decline.disabled = !sendable;
    },
    showRefusal({ field, message }) {
      attempted = true;
      wholeJudgements += 1;
      const control = controls.find((c) => c.field.name === field);
      const reason = explain(control?.field ?? null, String(message ?? ''));
      if (control) {
        control.setError(reason);
        showSummary();
        status.textContent = t('refusedAtField');
        control.focus();
      } else {
        status.textContent = t('refusedWhole', reason);
        focusFirst();
      }
    },
  };
}

// ---- one field ----
//
// buildField returns {field, element, read(), focus(), setError(msg|null), invalid(), pick?(i)}.
// Each kind of field has its builder, which adds its label and controls to `parts.wrap` and
// returns {focusables, read, pick?, described}: `described` is the element whose
// aria-describedby gains the error message.

const BUILDERS = {
  radio: buildOptionGroup,
  confirm: buildOptionGroup,
  multi_select: buildOptionGroup,
  checkbox: buildCheckbox,
  select: buildSelect,
  textarea: buildTextarea,
};

function buildField(doc, field, id, raw, hideLabel, yesNo) {
  const wrap = doc.createElement(isGroup(field) ? 'fieldset' : 'div');
  wrap.className = `him-field him-type-${field.type}`;
  wrap.dataset.name = field.name;
  const parts = { wrap, id, descId: `${id}-desc`, description: fieldDescription(doc, field, `${id}-desc`), hideLabel };
  const build = yesNo ? buildYesNo : (BUILDERS[field.type] ?? buildInput);
  const { focusables, read, pick, described, set, onPress, focusTarget, compact } = build(doc, field, raw, parts);

  const errorId = `${id}-error`;
  const error = doc.createElement('p');
  error.className = 'him-error';
  error.id = errorId;
  error.hidden = true;
  wrap.appendChild(error);
  const baseDescribedBy = described.getAttribute('aria-describedby') ?? '';
  // A radiogroup carries aria-invalid itself; a plain group cannot, so its boxes do.
  const marked = field.type === 'radio' || field.type === 'confirm' ? [wrap] : focusables;

  return {
    field,
    element: wrap,
    compact: Boolean(compact),
    read,
    pick,
    set,
    onPress,
    focus() {
      const target = focusTarget?.() ?? focusables.find((el) => el.checked) ?? focusables[0];
      target?.focus();
    },
    invalid: () => !error.hidden,
    setError(message) {
      error.hidden = !message;
      error.textContent = message ?? '';
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

function fieldDescription(doc, field, descId) {
  if (!field.description) return null;
  const description = doc.createElement('div');
  description.className = 'him-md him-field-desc';
  description.id = descId;
  description.appendChild(renderMarkdown(doc, field.description));
  return description;
}

/** radio, confirm and multi_select: a fieldset with a legend and one input per option. */
function buildOptionGroup(doc, field, raw, { wrap, id, descId, description, hideLabel }) {
  const multi = field.type === 'multi_select';
  const legend = doc.createElement('legend');
  legend.className = labelClass(hideLabel);
  legend.appendChild(renderInlineMarkdown(doc, labelText(field)));
  if (field.required) legend.appendChild(requiredMark(doc));
  wrap.appendChild(legend);
  if (description) wrap.appendChild(description);
  wrap.setAttribute('role', multi ? 'group' : 'radiogroup');
  if (field.required && !multi) wrap.setAttribute('aria-required', 'true');
  const bounds = multi ? boundsNote(doc, field, id) : null;
  if (bounds) wrap.appendChild(bounds);

  const list = doc.createElement('div');
  list.className = 'him-options';
  list.id = `${id}-options`;
  const options = optionsOf(field);
  const rows = options.map((option, i) => {
    const checked = multi ? raw.some((v) => sameValue(v, option.value)) : sameValue(raw, option.value);
    const made = optionRow(doc, option, i, { name: id, id: `${id}-o${i}`, multi, checked });
    list.appendChild(made.row);
    return made;
  });
  const inputs = rows.map((r) => r.input);
  const compact = options.length > COMPACT_OVER;
  // Digits pick among the options in sight: all of them, or those the filter left.
  let visible = rows;
  if (compact) {
    list.classList.add('him-compact');
    wrap.appendChild(optionFilter(doc, field, id, list, rows, (shown) => (visible = shown)));
  }
  wrap.appendChild(list);

  const describedBy = [description && descId, bounds?.id].filter(Boolean).join(' ');
  if (describedBy) wrap.setAttribute('aria-describedby', describedBy);
  return {
    focusables: inputs,
    described: wrap,
    compact,
    read() {
      if (multi) return options.filter((_, i) => inputs[i].checked).map((o) => o.value);
      const i = inputs.findIndex((input) => input.checked);
      return i === -1 ? null : options[i].value;
    },
    pick(i) {
      const input = visible[i]?.input;
      if (!input) return false;
      input.checked = multi ? !input.checked : true;
      input.focus();
      return true;
    },
  };
}

/** More options than this in one group: compact rows, with a box that filters them. */
const COMPACT_OVER = 8;

/**
 * The filter above a long option group: typing narrows the rows to those whose label or
 * description holds the text (a letter typed on an option lands here too); Enter picks
 * the first row left and, once it is picked, sends; ↓ goes to it, Esc clears the text. `onFilter(rows)` hears which rows
 * are left; their key badges are renumbered 1–9.
 */
function optionFilter(doc, field, id, list, rows, onFilter) {
  const box = doc.createElement('div');
  box.className = 'him-filter';
  const input = doc.createElement('input');
  input.type = 'search';
  input.id = `${id}-filter`;
  input.autocomplete = 'off';
  input.spellcheck = false;
  input.placeholder = t('filterPlaceholder');
  input.setAttribute('aria-label', t('filterLabel', labelText(field)));
  input.setAttribute('aria-controls', list.id);
  const none = doc.createElement('p');
  none.className = 'him-filter-none';
  none.hidden = true;
  box.append(input, none);

  // What a row says, without its key badge or the Recommended badge.
  const texts = rows.map(({ row }) =>
    [...row.querySelectorAll('.him-option-label, .him-option-desc')].map((el) => el.textContent).join(' ').toLocaleLowerCase(),
  );
  const apply = () => {
    const wanted = input.value.trim().toLocaleLowerCase();
    const shown = rows.filter((r, i) => {
      const match = wanted === '' || texts[i].includes(wanted);
      r.row.hidden = !match;
      return match;
    });
    shown.forEach((r, i) => r.setKey(i < 9 ? String(i + 1) : null));
    rows.filter((r) => r.row.hidden).forEach((r) => r.setKey(null));
    none.hidden = shown.length > 0;
    none.textContent = shown.length ? '' : t('filterNoMatch', input.value.trim());
    onFilter(shown);
    return shown;
  };
  // The row the last Enter here picked, for this text: a second Enter sends, as the hint
  // says. Any other Enter picks (or, in a multiple choice, unticks) the first row left.
  let enterPicked = null;
  // The filter's text is no part of the answer: its edits are not the form's.
  input.addEventListener('input', (event) => {
    event.stopPropagation();
    enterPicked = null;
    apply();
  });
  input.addEventListener('keydown', (event) => {
    if (event.isComposing || event.keyCode === 229) return;
    const shown = rows.filter((r) => !r.row.hidden);
    if (event.key === 'Enter' && !event.ctrlKey && !event.metaKey) {
      // The second Enter on the row the first picked goes on to the form's own Enter.
      const first = shown[0];
      if (first && enterPicked?.row === first && enterPicked.text === input.value && first.input.checked) return;
      event.preventDefault();
      if (first && !first.input.disabled) {
        // A radio already chosen stays chosen; a checkbox toggles, as a click on it does.
        if (!(first.input.type === 'radio' && first.input.checked)) first.input.click();
        enterPicked = first.input.checked ? { row: first, text: input.value } : null;
      }
    } else if (event.key === 'ArrowDown' && shown[0]) {
      event.preventDefault();
      shown[0].input.focus();
    } else if (event.key === 'Escape' && input.value !== '') {
      event.preventDefault();
      input.value = '';
      apply();
    }
  });
  // A letter typed on one of the options starts (or goes on with) the filter.
  list.addEventListener('keydown', (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.isComposing) return;
    if (event.key.length !== 1 || /[\s0-9]/.test(event.key)) return;
    event.preventDefault();
    input.focus();
    input.value += event.key;
    apply();
  });
  return box;
}

/**
 * A yes/no question on its own: a group of two buttons, Yes and No, each sending at once.
 * Focus starts on the default's button, so Enter presses it; with no default it starts on
 * the group itself, where Enter presses nothing.
 */
function buildYesNo(doc, field, raw, { wrap, descId, description, hideLabel }) {
  const legend = doc.createElement('legend');
  legend.className = labelClass(hideLabel);
  legend.appendChild(renderInlineMarkdown(doc, labelText(field)));
  wrap.appendChild(legend);
  if (description) {
    wrap.appendChild(description);
    wrap.setAttribute('aria-describedby', descId);
  }
  wrap.tabIndex = -1;
  let chosen = typeof raw === 'boolean' ? raw : null;
  const row = doc.createElement('div');
  row.className = 'him-yesno';
  const buttons = optionsOf(field).map((option) => {
    const button = doc.createElement('button');
    button.type = 'button';
    button.className = option.value ? 'him-yes' : 'him-no';
    if (field.default === option.value) button.classList.add('him-default');
    const text = doc.createElement('span');
    text.textContent = option.label;
    const key = doc.createElement('kbd');
    key.setAttribute('aria-hidden', 'true');
    key.textContent = option.value ? 'Y' : 'N';
    button.append(text, key);
    row.appendChild(button);
    return { button, value: option.value };
  });
  wrap.appendChild(row);
  return {
    focusables: buttons.map((b) => b.button),
    described: wrap,
    read: () => chosen,
    set(value) {
      chosen = value;
    },
    onPress(answer) {
      for (const { button, value } of buttons) button.addEventListener('click', () => answer(value));
    },
    focusTarget: () => buttons.find((b) => b.value === field.default)?.button ?? wrap,
  };
}

/** One option of a group: its input, a key badge for the first nine, label, badge, description. */
function optionRow(doc, option, i, { name, id, multi, checked }) {
  const row = doc.createElement('div');
  row.className = 'him-option';
  const input = doc.createElement('input');
  input.type = multi ? 'checkbox' : 'radio';
  input.name = name;
  input.id = id;
  input.value = String(i);
  input.checked = checked;
  const label = doc.createElement('label');
  label.htmlFor = id;
  const key = doc.createElement('kbd');
  key.setAttribute('aria-hidden', 'true');
  // A row without a key keeps an invisible badge, so that every label starts in line.
  const setKey = (text) => {
    key.textContent = text ?? '0';
    key.toggleAttribute('data-none', text === null);
  };
  setKey(i < 9 ? String(i + 1) : null);
  label.appendChild(key);
  const text = doc.createElement('span');
  text.className = 'him-option-label';
  text.textContent = option.label ?? String(option.value);
  label.appendChild(text);
  if (option.recommended) {
    // A badge beside the label; the tile itself looks like every other until chosen.
    row.classList.add('him-recommended');
    const rec = doc.createElement('span');
    rec.className = 'him-rec';
    rec.textContent = t('recommended');
    label.appendChild(rec);
  }
  row.append(input, label);
  if (option.description) {
    const desc = doc.createElement('div');
    desc.className = 'him-md him-option-desc';
    desc.id = `${id}-desc`;
    desc.appendChild(renderInlineMarkdown(doc, option.description));
    row.appendChild(desc);
    input.setAttribute('aria-describedby', desc.id);
  }
  clickableTile(row, input);
  return { row, input, setKey };
}

/**
 * A click anywhere on `tile` (its padding, its description) picks its `input`, as a click on
 * its label does: the whole tile is the target. Links and the controls themselves keep
 * their own clicks.
 */
function clickableTile(tile, input) {
  tile.addEventListener('click', (event) => {
    if (event.target.closest?.('a, input, label, button')) return;
    if (input.disabled) return;
    input.click();
    input.focus();
  });
}

/** checkbox: the box first, its label beside it. */
function buildCheckbox(doc, field, raw, { wrap, id, description }) {
  const row = doc.createElement('div');
  row.className = 'him-check';
  const input = doc.createElement('input');
  input.type = 'checkbox';
  input.id = id;
  input.checked = raw === true;
  const label = doc.createElement('label');
  label.className = 'him-label';
  label.htmlFor = id;
  label.appendChild(renderInlineMarkdown(doc, labelText(field)));
  row.append(input, label);
  clickableTile(row, input);
  wrap.appendChild(row);
  if (description) wrap.appendChild(description);
  return { focusables: [input], described: input, read: () => input.checked };
}

/** select: a drop-down whose first entry, "Choose…", stands for nothing chosen. */
function buildSelect(doc, field, raw, parts) {
  const input = doc.createElement('select');
  const options = optionsOf(field);
  const blank = doc.createElement('option');
  blank.value = '';
  blank.textContent = t('selectNothing');
  input.appendChild(blank);
  options.forEach((option, i) => {
    const el = doc.createElement('option');
    el.value = String(i);
    const label = option.label ?? String(option.value);
    el.textContent = option.recommended ? t('optionRecommended', label) : label;
    input.appendChild(el);
  });
  const selected = options.findIndex((o) => sameValue(o.value, raw));
  input.value = selected === -1 ? '' : String(selected);
  // "Choose…" stays selectable only where choosing nothing is allowed.
  if (field.required && selected !== -1) blank.disabled = true;
  labelledControl(doc, field, input, parts);
  return {
    focusables: [input],
    described: input,
    read: () => (input.value === '' ? null : (options[Number(input.value)]?.value ?? null)),
    pick(i) {
      if (!options[i]) return false;
      input.value = String(i);
      input.focus();
      return true;
    },
  };
}

function buildTextarea(doc, field, raw, parts) {
  const input = doc.createElement('textarea');
  input.rows = 4;
  return textControl(doc, field, input, raw, parts);
}

/** text, email, url, password and number: one <input>. */
function buildInput(doc, field, raw, parts) {
  const input = doc.createElement('input');
  input.type = ['email', 'url', 'password'].includes(field.type) ? field.type : 'text';
  if (field.type === 'number') {
    // A text box with a numeric keyboard: type=number would swallow "1e" and show
    // nothing, which makes the as-typed draft and the error message impossible.
    input.inputMode = 'decimal';
  }
  if (['email', 'url', 'password', 'number'].includes(field.type)) {
    input.spellcheck = false;
    input.setAttribute('autocapitalize', 'off');
  }
  // "off", not "new-password": a secret asked for once is not a password to generate.
  input.autocomplete = 'off';
  return textControl(doc, field, input, raw, parts);
}

function textControl(doc, field, input, raw, parts) {
  input.value = raw;
  if (field.placeholder) input.placeholder = String(field.placeholder);
  labelledControl(doc, field, input, parts);
  return { focusables: [input], described: input, read: () => input.value };
}

/** A label above one control (with the description between), then the control. */
function labelledControl(doc, field, input, { wrap, id, descId, description, hideLabel }) {
  const label = doc.createElement('label');
  label.className = labelClass(hideLabel);
  label.htmlFor = id;
  label.appendChild(renderInlineMarkdown(doc, labelText(field)));
  if (field.required) label.appendChild(requiredMark(doc));
  wrap.appendChild(label);
  if (description) wrap.appendChild(description);
  input.id = id;
  input.name = field.name;
  if (field.required) {
    input.required = true;
    input.setAttribute('aria-required', 'true');
  }
  if (description) input.setAttribute('aria-describedby', descId);
  const bounds = field.type === 'number' ? boundsNote(doc, field, id) : null;
  if (bounds) {
    wrap.appendChild(bounds);
    input.setAttribute('aria-describedby', [description && descId, bounds.id].filter(Boolean).join(' '));
  }
  wrap.appendChild(input);
}

function isGroup(field) {
  return field.type === 'radio' || field.type === 'confirm' || field.type === 'multi_select';
}

function labelText(field) {
  return field.label || field.name;
}

function labelClass(hideLabel) {
  return hideLabel ? 'him-label him-visually-hidden' : 'him-label';
}

function requiredMark(doc) {
  const mark = doc.createElement('span');
  mark.className = 'him-req';
  // aria-required already tells assistive technology; this is for the eye.
  mark.setAttribute('aria-hidden', 'true');
  mark.textContent = ` ${t('requiredMark')}`;
  return mark;
}

/** The line under a number or multi_select that states its bounds; null when it has none. */
function boundsNote(doc, field, id) {
  const { min, max } = field;
  const hasMin = typeof min === 'number';
  const hasMax = typeof max === 'number';
  if (!hasMin && !hasMax) return null;
  const bounds = doc.createElement('p');
  bounds.className = 'him-bounds';
  bounds.id = `${id}-bounds`;
  if (field.type === 'multi_select') {
    if (hasMin && hasMax) bounds.textContent = min === max ? t('boundsChoose', min) : t('boundsChooseFromTo', min, max);
    else bounds.textContent = hasMin ? t('boundsChooseAtLeast', min) : t('boundsChooseUpTo', max);
  } else if (hasMin && hasMax) bounds.textContent = t('boundsNumberFromTo', min, max);
  else bounds.textContent = hasMin ? t('boundsNumberAtLeast', min) : t('boundsNumberAtMost', max);
  return bounds;
}
