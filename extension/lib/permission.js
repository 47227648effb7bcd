// The permission card: an agent asks to run one tool call (DESIGN.md §9, a form with
// `permission: {tool_name, input, tool_use_id?}`), and the person allows or denies it.
//
// Two rules shape this file:
//   - The person sees exactly what will run: the tool's name and its input verbatim, drawn
//     with textContent only, and marked where it would read otherwise than it runs
//     (controls, bidi and zero-width characters, letters of another script in a word, long
//     runs of blank lines or spaces: lib/display.js), each box saying how many lines are out
//     of view below it. A shell command is shown as code, a file edit as its path and
//     the old/new text as a diff, a web fetch as its URL, anything else as formatted JSON;
//     whatever input the tool-specific view does not show is listed below it as JSON, so
//     nothing of the input is ever hidden (a Bash `description` is the agent's own words and
//     is shown as such, never as the heading).
//   - Allow is a deliberate act. Nothing allows by default, Enter never allows (not even on
//     the focused Allow button), no letter key does; only a click on Allow (or Space on it,
//     once the person has moved the focus there) does. The card starts focused on Deny;
//     Esc and Enter on Deny deny. Nothing is decided unseen (lib/arming.js): until the card
//     has been on screen ARM_DELAY_MS no key or click decides, and a click on Allow counts
//     only when its press began after the card appeared (a double-click on an inbox row
//     must not press the Allow button that its first click put under the pointer).
//   - "Allow for this session" is there only when the agent offered rules
//     (`permission.session_rules`, from Claude Code's PermissionRequest hook): a button of its
//     own that shows the exact rules, as code and marked like the input, and takes the same
//     deliberate act as Allow (a click, or Space once the focus is moved there). The answer
//     names only the choice; the hook sends Claude Code the rules it was offered.
//
// The view has renderForm's interface (lib/form.js), so the panel treats both alike:
//   const view = renderPermission(doc, form, {idPrefix, draft, onChange, onSubmit, onDecline, arming});
// onSubmit gets {values: {decision: 'allow' | 'deny' | 'allow_session'}, note}. Like form.js it uses no
// extension API and takes the document from its caller. A form that breaks the permission
// shape (formmodel.js checkPermissionForm) throws, as renderForm does for a form it cannot draw.

import { appendMarked, codeBox, diffBox } from './display.js';
import { guardCard, watchArming } from './arming.js';
import { ALLOW_SESSION, checkPermissionForm, sessionRules } from './formmodel.js';
import { holdControls } from './holds.js';
import { t, tParts } from './i18n.js';

/** Whether `form` is a permission prompt, drawn by this module rather than lib/form.js. */
export function isPermissionForm(form) {
  return Boolean(form && typeof form.permission === 'object' && form.permission);
}

export function renderPermission(doc, form, opts = {}) {
  // The agent side refuses a permission form of another shape (Form::validate); one that
  // got here anyway gets no Allow button but the panel's card that cannot be drawn, where
  // the person can only decline.
  const shape = checkPermissionForm(form);
  if (!shape.ok) throw new Error(`not a permission prompt him can show: ${shape.message}`);
  const prefix = opts.idPrefix ?? 'him';
  const permission = form.permission;
  const tool = String(permission.tool_name ?? '');
  const input = permission.input;
  let disabled = false;

  const el = (tag, className, text) => {
    const node = doc.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  };

  const root = el('form', 'him-form him-permission');
  root.setAttribute('novalidate', '');
  const arming = watchArming(root, opts.arming);
  guardCard(root, arming);
  root.setAttribute('aria-labelledby', `${prefix}-title`);
  // Nothing in this card submits the form: a stray Enter in a control would otherwise.
  root.addEventListener('submit', (event) => event.preventDefault());

  const title = el('h2', 'him-title');
  title.id = `${prefix}-title`;
  title.append(...tParts('permissionAllowTool', appendMarked(doc, el('code', 'him-perm-tool'), tool)));
  root.append(title);

  const body = el('fieldset', 'him-body');
  root.append(body);
  body.append(...inputView(doc, el, tool, input));
  // What would read otherwise than it runs is marked (lib/display.js); say so above it all.
  if (root.querySelector('.him-mark')) body.prepend(el('p', 'him-perm-marked', t('permissionMarked')));

  const noteWrap = el('div', 'him-field him-note');
  const noteLabel = el('label', 'him-label', t('permissionNoteLabel'));
  noteLabel.htmlFor = `${prefix}-note`;
  const noteArea = el('textarea');
  noteArea.id = `${prefix}-note`;
  noteArea.rows = 2;
  noteArea.placeholder = t('permissionNotePlaceholder');
  noteArea.value = typeof opts.draft?.note === 'string' ? opts.draft.note : '';
  noteWrap.append(noteLabel, noteArea);
  body.append(noteWrap);

  const actions = el('div', 'him-actions');
  const deny = el('button', 'him-deny', t('permissionDeny'));
  deny.type = 'button';
  const allow = el('button', 'him-allow', t('permissionAllow'));
  allow.type = 'button';
  actions.append(deny, allow);
  // Its own button, apart from Allow, naming exactly what it adds.
  const rules = sessionRules(form);
  let allowSession = null;
  if (rules.length) {
    allowSession = el('button', 'him-allow-session');
    allowSession.type = 'button';
    const ruleCodes = rules.map((rule) => appendMarked(doc, el('code', 'him-perm-rule'), rule));
    allowSession.append(...tParts('permissionAllowSession', joinNodes(doc, ruleCodes)));
    actions.append(allowSession);
  }
  body.append(actions);

  const status = el('p', 'him-status');
  status.setAttribute('role', 'status');
  root.append(status);
  root.append(el('p', 'him-hint', t('permissionHint')));

  const note = () => noteArea.value;
  const decide = (decision) => {
    if (!disabled) opts.onSubmit?.({ values: { decision }, note: note() });
  };
  allow.addEventListener('click', () => {
    if (arming.pressedAfterShown()) decide('allow');
  });
  allowSession?.addEventListener('click', () => {
    if (arming.pressedAfterShown()) decide(ALLOW_SESSION);
  });
  deny.addEventListener('click', () => decide('deny'));
  noteArea.addEventListener('input', () => opts.onChange?.({ values: {}, note: note() }));

  root.addEventListener('keydown', (event) => {
    if (disabled || event.isComposing || event.keyCode === 229) return;
    if (event.key === 'Escape' && !event.defaultPrevented) {
      event.preventDefault();
      opts.onDecline?.();
      return;
    }
    if (event.key === 'Enter') {
      // Enter on a focused button "clicks" it; on Allow that would be an allow by reflex.
      if (event.target === allow) {
        event.preventDefault();
        status.textContent = t('permissionEnterDoesNotAllow');
        return;
      }
      if (allowSession && event.target === allowSession) {
        event.preventDefault();
        status.textContent = t('permissionEnterDoesNotAllowSession');
        return;
      }
      // Elsewhere Enter decides nothing: on Deny it is Deny's own click, in the note a
      // new line; anywhere else (Ctrl/⌘+Enter included) it does nothing at all.
      if (event.target !== deny && (event.target !== noteArea || event.ctrlKey || event.metaKey)) {
        event.preventDefault();
      }
    }
  });

  return {
    element: root,
    values: () => ({}),
    note,
    draft: () => ({ values: {}, note: note() }),
    validate: () => ({ ok: true, errors: {}, problem: null }),
    focusFirst: () => deny.focus(),
    // No number or letter key picks anything on a permission card.
    handleKey: () => false,
    rearm: () => arming.restart(),
    release: () => arming.disconnect(),
    // In flight, no host to send to, or the question closed: nothing can be decided; the
    // input can still be read and copied.
    ...holdControls((held) => {
      disabled = held;
      body.disabled = held;
    }),
    setStatus(text) {
      status.textContent = text ?? '';
    },
    showRefusal({ message }) {
      status.textContent = message ?? '';
    },
  };
}

/** `nodes` side by side, ", " between them, as one fragment. */
function joinNodes(doc, nodes) {
  const fragment = doc.createDocumentFragment();
  nodes.forEach((node, i) => fragment.append(...(i ? [doc.createTextNode(', '), node] : [node])));
  return fragment;
}

/** The input, drawn for a person: the view for its tool, then whatever it did not show. */
function inputView(doc, el, tool, input) {
  const parts = [];
  const shown = new Set();
  const obj = input && typeof input === 'object' && !Array.isArray(input) ? input : null;
  const str = (key) => (obj && typeof obj[key] === 'string' ? obj[key] : null);
  const section = (label, content) => {
    const wrap = el('div', 'him-perm-part');
    wrap.append(el('p', 'him-perm-label', label), content);
    parts.push(wrap);
  };
  // Marked, and saying how much is out of view below (lib/display.js): what is shown is what runs.
  const code = (text, className = 'him-perm-code') => codeBox(doc, className, text);
  const diff = (oldText, newText) => diffBox(doc, oldText, newText);

  if (obj && tool === 'Bash' && str('command') !== null) {
    section(t('permissionCommand'), code(str('command')));
    shown.add('command');
  } else if (obj && (tool === 'Edit' || tool === 'Write' || tool === 'MultiEdit') && str('file_path') !== null) {
    section(t('permissionFile'), code(str('file_path'), 'him-perm-path'));
    shown.add('file_path');
    if (tool === 'Write' && str('content') !== null) {
      section(t('permissionNewContent'), diff(null, str('content')));
      shown.add('content');
    } else if (tool === 'Edit' && str('old_string') !== null && str('new_string') !== null) {
      section(t('permissionChange'), diff(str('old_string'), str('new_string')));
      shown.add('old_string');
      shown.add('new_string');
    } else if (tool === 'MultiEdit' && Array.isArray(obj.edits)) {
      const edits = obj.edits;
      if (edits.every((e) => typeof e?.old_string === 'string' && typeof e?.new_string === 'string')) {
        edits.forEach((e, i) => section(t('permissionChangeOf', i + 1, edits.length), diff(e.old_string, e.new_string)));
        // Other keys of an edit (replace_all) must still be seen: keep them in the rest.
        if (edits.every((e) => Object.keys(e).length === 2)) shown.add('edits');
      }
    }
  } else if (obj && tool === 'WebFetch' && str('url') !== null) {
    section(t('permissionUrl'), code(str('url'), 'him-perm-path'));
    shown.add('url');
  }

  if (!shown.size) {
    section(t('permissionInput'), code(JSON.stringify(input ?? null, null, 2)));
  } else {
    const rest = Object.fromEntries(Object.entries(obj).filter(([key]) => !shown.has(key)));
    if (Object.keys(rest).length) section(t('permissionOtherInput'), code(JSON.stringify(rest, null, 2)));
  }
  return parts;
}
