import './english.mjs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderForm } from '../../../extension/lib/form.js';
import { freshDocument, key, type } from './dom.mjs';
import { EVERY_TYPE, opts } from './forms.mjs';

function mount(form, options = {}) {
  const { document, window } = freshDocument();
  const calls = { submit: [], decline: 0, change: [] };
  const view = renderForm(document, form, {
    idPrefix: 't',
    onSubmit: (answer) => calls.submit.push(answer),
    onDecline: () => calls.decline++,
    onChange: (draft) => calls.change.push(draft),
    // What keys and clicks do once the form takes them; how long it first waits is
    // arming.test.mjs's.
    arming: { delay: 0 },
    ...options,
  });
  document.body.appendChild(view.element);
  return { document, window, view, calls, el: view.element };
}

test('every control has an accessible name: a label for it, or a legend for its group', () => {
  const { el, document } = mount(EVERY_TYPE);
  const controls = el.querySelectorAll('input, textarea, select');
  assert.ok(controls.length >= 15);
  for (const control of controls) {
    const label = document.querySelector(`label[for="${control.id}"]`);
    assert.ok(label && label.textContent.trim(), `no label for #${control.id}`);
  }
  for (const group of el.querySelectorAll('fieldset.him-field')) {
    assert.ok(group.querySelector('legend')?.textContent.trim(), 'group without legend');
    assert.match(group.getAttribute('role'), /^(radiogroup|group)$/);
  }
  assert.equal(el.querySelector('[data-name="size"]').getAttribute('aria-required'), 'true');
  assert.equal(el.querySelector('#t-f0').getAttribute('aria-required'), 'true');
});

test('it renders defaults, placeholders, descriptions, recommended options and the submit label', () => {
  const { el, view } = mount(EVERY_TYPE);
  assert.equal(el.querySelector('#t-f0').placeholder, 'Ada');
  assert.equal(el.querySelector('#t-f4').value, '2');
  assert.equal(el.querySelector('.him-submit').textContent, 'Deploy');
  assert.equal(el.querySelector('[data-name="notes"] em')?.textContent, 'here');
  const rec = el.querySelector('.him-recommended');
  assert.match(rec.textContent, /Medium/);
  assert.match(rec.textContent, /Recommended/);
  assert.equal(el.querySelector('.him-form-desc strong').textContent, 'carefully');
  assert.deepEqual(view.values(), { n: 2, region: 'us', agree: false, go: true, tags: [] });
});

test('agent text in titles, labels and options is never parsed as HTML', () => {
  const evil = '<img src=x onerror=alert(1)>';
  const { el } = mount({
    title: evil,
    fields: [{ name: 'a', type: 'radio', label: evil, options: [{ value: evil, label: evil }] }],
  });
  assert.equal(el.querySelectorAll('img').length, 0);
  assert.equal(el.querySelector('h2').textContent, evil);
  assert.equal(el.querySelector('.him-option-label').textContent, evil);
});

test('submit with problems shows them at each field, focuses the first, and sends nothing', () => {
  const { el, view, calls, document } = mount(EVERY_TYPE);
  el.requestSubmit();
  assert.equal(calls.submit.length, 0);
  const errors = [...el.querySelectorAll('.him-error:not([hidden])')].map((e) => e.closest('.him-field').dataset.name);
  assert.deepEqual(errors, ['who', 'size', 'tags']);
  assert.equal(document.activeElement, el.querySelector('#t-f0'));
  assert.equal(el.querySelector('#t-f0').getAttribute('aria-invalid'), 'true');
  assert.match(el.querySelector('#t-f0').getAttribute('aria-describedby'), /t-f0-error/);
  assert.equal(view.validate().ok, false);
});

test('a field says what is wrong when the person leaves it, and clears once fixed', () => {
  const { el, window } = mount(EVERY_TYPE);
  const mail = el.querySelector('#t-f1');
  type(window, mail, 'nope');
  mail.dispatchEvent(new window.FocusEvent('focusout', { bubbles: true }));
  const error = el.querySelector('#t-f1-error');
  assert.equal(error.hidden, false);
  assert.match(error.textContent, /email/);
  type(window, mail, 'me@example.org');
  mail.dispatchEvent(new window.Event('change', { bubbles: true }));
  assert.equal(error.hidden, true);
  // Tabbing through an empty required field says nothing before the first submit.
  const who = el.querySelector('#t-f0');
  who.dispatchEvent(new window.FocusEvent('focusout', { bubbles: true }));
  assert.equal(el.querySelector('#t-f0-error').hidden, true);
});

test('a filled-in form submits typed values and the note', () => {
  const { el, window, calls } = mount(EVERY_TYPE);
  type(window, el.querySelector('#t-f0'), 'Ada');
  type(window, el.querySelector('#t-f3'), 'hunter2');
  el.querySelector('#t-f7-o1').checked = true;
  el.querySelector('#t-f10-o2').checked = true;
  type(window, el.querySelector('#t-note'), 'ship it');
  el.requestSubmit();
  assert.deepEqual(calls.submit, [
    {
      values: { who: 'Ada', secret: 'hunter2', n: 2, region: 'us', size: 'm', agree: false, go: true, tags: ['c'] },
      note: 'ship it',
    },
  ]);
});

test('drafts restore every value but the password, and onChange drafts hold no password', () => {
  const first = mount(EVERY_TYPE);
  type(first.window, first.el.querySelector('#t-f0'), 'Ada');
  type(first.window, first.el.querySelector('#t-f3'), 'hunter2');
  type(first.window, first.el.querySelector('#t-f4'), '1e');
  const draft = first.calls.change.at(-1);
  assert.doesNotMatch(JSON.stringify(draft), /hunter2/);
  assert.equal(draft.values.n, '1e', 'numbers are kept as typed');

  const second = mount(EVERY_TYPE, { draft: { ...draft, values: { ...draft.values, secret: 'leak', tags: ['b'] } } });
  assert.equal(second.el.querySelector('#t-f0').value, 'Ada');
  assert.equal(second.el.querySelector('#t-f3').value, '', 'a password is never restored');
  assert.equal(second.el.querySelector('#t-f4').value, '1e');
  assert.equal(second.el.querySelector('#t-f10-o1').checked, true);
});

test('keys: digits pick options outside text inputs, Enter submits, Esc declines', () => {
  const { el, window, document, calls, view } = mount({
    title: 'Pick',
    fields: [
      { name: 'c', type: 'radio', label: 'Choice', required: true, options: opts(['a', 'b', 'c']) },
      { name: 't', type: 'text', label: 'Why' },
    ],
  });
  const radio = el.querySelector('#t-f0-o0');
  radio.focus();
  assert.equal(key(window, radio, '2').defaultPrevented, true);
  assert.equal(el.querySelector('#t-f0-o1').checked, true);
  assert.equal(document.activeElement, el.querySelector('#t-f0-o1'));

  const text = el.querySelector('#t-f1');
  text.focus();
  assert.equal(key(window, text, '3').defaultPrevented, false, 'a digit in a text box is text');
  assert.equal(el.querySelector('#t-f0-o2').checked, false);

  // From outside the form (the page forwards keys it gets on <body>): with two fields it
  // is not plain which one a digit means, so it means none (issue 15.2).
  assert.equal(view.handleKey(new window.KeyboardEvent('keydown', { key: '3', cancelable: true })), false);
  assert.equal(el.querySelector('#t-f0-o1').checked, true);
  el.querySelector('#t-f0-o1').focus();
  key(window, el.querySelector('#t-f0-o1'), '3');

  key(window, text, 'Enter');
  assert.deepEqual(calls.submit, [{ values: { c: 'c' }, note: '' }]);
  key(window, text, 'Escape');
  key(window, text, 'Escape');
  assert.equal(calls.decline, 1, 'the form was changed, so it takes two');
});

test('Enter in a text area is a new line; Ctrl+Enter submits', () => {
  const { el, window, calls } = mount({ title: 'T', fields: [{ name: 'a', type: 'textarea', label: 'A' }] });
  const area = el.querySelector('textarea');
  assert.equal(key(window, area, 'Enter').defaultPrevented, false);
  assert.equal(calls.submit.length, 0);
  key(window, area, 'Enter', { ctrlKey: true });
  assert.equal(calls.submit.length, 1);
});

test('digits toggle multi_select options; confirm offers Yes and No', () => {
  const { el, window, view } = mount({
    title: 'T',
    fields: [
      { name: 'm', type: 'multi_select', label: 'M', options: opts(['a', 'b']) },
      { name: 'c', type: 'confirm', label: 'Sure?' },
    ],
  });
  const first = el.querySelector('#t-f0-o0');
  first.focus();
  key(window, first, '2');
  key(window, first, '1');
  key(window, first, '1');
  assert.deepEqual(view.values().m, ['b']);
  const yes = el.querySelector('#t-f1-o0');
  assert.equal(el.querySelector(`label[for="${yes.id}"]`).textContent.replace(/\d/, ''), 'Yes');
  yes.focus();
  key(window, yes, '2');
  assert.equal(view.values().c, false);
});

test('a disabled form neither submits nor declines', () => {
  const { el, window, calls, view } = mount({ title: 'T', fields: [{ name: 'a', type: 'text', label: 'A' }] });
  view.setDisabled(true);
  el.requestSubmit();
  key(window, el.querySelector('input'), 'Escape');
  el.querySelector('.him-decline').click();
  assert.deepEqual(calls, { submit: [], decline: 0, change: [] });
  view.setDisabled(false);
  el.querySelector('.him-decline').click();
  assert.equal(calls.decline, 1);
});

test('a sole field labelled with the question keeps its label for assistive technology only', () => {
  const { el, document } = mount({
    title: 'Ship **today**?\n\nThe `main` branch is green.',
    fields: [{ name: 'answer', type: 'text', label: 'Ship **today**?\n\nThe `main` branch is green.', required: true }],
  });
  assert.equal(el.querySelector('h2 strong')?.textContent, 'today', 'the question reads as Markdown');
  assert.equal(el.querySelector('.him-title-more code')?.textContent, 'main');
  const label = document.querySelector('label[for="t-f0"]');
  assert.ok(label.classList.contains('him-visually-hidden'));
  assert.match(label.textContent, /Ship today/);

  const two = mount({ title: 'T', fields: [{ name: 'a', type: 'text', label: 'T' }, { name: 'b', type: 'text', label: 'B' }] });
  assert.equal(two.el.querySelectorAll('.him-visually-hidden').length, 0, 'only a sole field hides its label');
});

test('Esc after typing asks to be pressed again, so a reflex cannot discard an answer', () => {
  const { el, window, calls } = mount({ title: 'T', fields: [{ name: 'a', type: 'password', label: 'A' }] });
  const input = el.querySelector('input');
  type(window, input, 'secret');
  key(window, input, 'Escape');
  assert.equal(calls.decline, 0);
  assert.equal(el.querySelector('.him-status').textContent, 'Press Esc again to decline.');
  key(window, input, 'Escape');
  assert.equal(calls.decline, 1);

});

test('Esc on an untouched card only asks for a second Esc, which declines within 2 s', () => {
  let clock = 1_000;
  const { el, window, calls } = mount({ title: 'T', fields: [{ name: 'a', type: 'text', label: 'A', default: 'x' }] }, { now: () => clock });
  const input = el.querySelector('input');
  const status = el.querySelector('.him-status');
  key(window, input, 'Escape');
  assert.equal(calls.decline, 0, 'a reflex Esc declines nothing');
  assert.equal(status.textContent, 'Press Esc again to decline.');
  clock += 2_500;
  key(window, input, 'Escape');
  assert.equal(calls.decline, 0, 'too late: this Esc asks again');
  clock += 1_500;
  key(window, input, 'Escape');
  assert.equal(calls.decline, 1);
  assert.equal(status.textContent, '', 'the request to press again is gone');
});

test('keys that compose text in an input method are left alone', () => {
  const { el, window, calls } = mount({ title: 'T', fields: [{ name: 'a', type: 'text', label: 'A' }] });
  const input = el.querySelector('input');
  assert.equal(key(window, input, 'Enter', { isComposing: true }).defaultPrevented, false);
  key(window, input, 'Escape', { isComposing: true });
  assert.deepEqual([calls.submit.length, calls.decline], [0, 0]);
});

test('a choice with free text takes an option or a note, and submits neither alone without saying so', () => {
  // ask_choice with allow_free_text, as src/agent/tools.rs builds it: the choice is optional
  // because a note may answer instead, but a reply of neither is refused by the agent side.
  const form = {
    title: 'Which DB?',
    allow_note: true,
    fields: [{ name: 'choice', type: 'radio', label: 'Which DB?', options: opts(['pg', 'lite']) }],
  };
  const { el, window, calls } = mount(form);
  el.requestSubmit();
  assert.equal(calls.submit.length, 0);
  const error = el.querySelector('#t-f0-error');
  assert.equal(error.hidden, false);
  assert.equal(error.textContent, 'Choose an option, or add a note.');
  assert.equal(el.querySelector('[data-name="choice"]').getAttribute('aria-invalid'), 'true');
  // A note settles it as it is typed, and then goes alone.
  type(window, el.querySelector('#t-note'), 'Neither; use files');
  assert.equal(error.hidden, true);
  el.requestSubmit();
  assert.deepEqual(calls.submit, [{ values: {}, note: 'Neither; use files' }]);

  const picked = mount(form);
  picked.el.querySelector('#t-f0-o1').checked = true;
  picked.el.requestSubmit();
  assert.deepEqual(picked.calls.submit, [{ values: { choice: 'lite' }, note: '' }]);
});

test('a refusal from the agent side shows at the field it names, in words for the person', () => {
  const form = {
    title: 'Which DB?',
    allow_note: true,
    fields: [{ name: 'choice', type: 'radio', label: 'Which DB?', options: [{ value: 'a', label: 'A' }] }],
  };
  const { el, view } = mount(form);
  view.showRefusal({ field: 'choice', message: 'neither an answer nor a note was given' });
  assert.equal(el.querySelector('.him-error').textContent, 'Choose an option, or add a note.');
  assert.equal(el.querySelector('[data-name="choice"]').getAttribute('aria-invalid'), 'true');
  assert.match(el.querySelector('.him-status').textContent, /did not accept this answer; correct it/);
  view.showRefusal({ message: 'a note was sent but this question does not take one' });
  assert.equal(
    el.querySelector('.him-status').textContent,
    'The agent did not accept this answer: A note was sent but this question does not take one.',
  );
});

test('while nothing can be sent, Submit and Decline are disabled and the fields stay editable', () => {
  const form = { title: 'T', fields: [{ name: 'a', type: 'text', label: 'A' }] };
  const { el, view, window, calls } = mount(form);
  view.setSendable(false);
  const input = el.querySelector('#t-f0');
  assert.equal(el.querySelector('.him-submit').disabled, true);
  assert.equal(el.querySelector('.him-decline').disabled, true);
  assert.equal(input.disabled || el.querySelector('fieldset').disabled, false, 'typing goes on');
  type(window, input, 'kept');
  key(window, input, 'Enter');
  el.dispatchEvent(new window.Event('submit', { bubbles: true, cancelable: true }));
  key(window, input, 'Escape');
  key(window, input, 'Escape');
  assert.deepEqual(calls.submit, []);
  assert.equal(calls.decline, 0);
  view.setSendable(true);
  key(window, input, 'Enter');
  assert.deepEqual(calls.submit, [{ values: { a: 'kept' }, note: '' }]);
});

test('a read-only form keeps its text selectable but nothing can change or be sent', () => {
  const { el, view, calls, window } = mount({
    title: 'T',
    fields: [
      { name: 'a', type: 'text', label: 'A' },
      { name: 'c', type: 'radio', label: 'C', options: [{ value: 'x', label: 'X' }] },
    ],
  });
  view.setReadOnly(true);
  const text = el.querySelector('#t-f0');
  assert.equal(text.readOnly, true);
  assert.equal(text.disabled, false, 'a disabled box could not be selected from');
  assert.equal(el.querySelector('input[type="radio"]').disabled, true);
  assert.equal(el.querySelector('.him-submit').disabled, true);
  key(window, el.querySelector('[data-name="c"]'), '1');
  assert.equal(el.querySelector('input[type="radio"]').checked, false, 'no key picks anything');
  el.dispatchEvent(new window.Event('submit', { bubbles: true, cancelable: true }));
  assert.deepEqual(calls.submit, []);
});

test('a failed submit of a long form sums up, above Submit, which fields need attention, each a way to it (issue 15.4)', () => {
  const { el, window, document } = mount({
    title: 'T',
    fields: [
      { name: 'owner', type: 'text', label: 'Owner', required: true },
      { name: 'email', type: 'email', label: 'Contact email', required: true },
    ],
  });
  const summary = el.querySelector('.him-summary');
  assert.equal(summary.hidden, true, 'nothing to say before a submit');
  el.dispatchEvent(new window.Event('submit', { bubbles: true, cancelable: true }));
  assert.equal(summary.hidden, false);
  assert.equal(summary.textContent, '2 fields need attention: Owner, Contact email');
  assert.equal(summary.nextElementSibling, el.querySelector('.him-actions'), 'right above Submit');
  summary.querySelectorAll('button')[1].click();
  assert.equal(document.activeElement, el.querySelector('#t-f1'));
  const owner = el.querySelector('#t-f0');
  type(window, owner, 'Ada');
  owner.dispatchEvent(new window.Event('change', { bubbles: true }));
  owner.dispatchEvent(new window.FocusEvent('focusout', { bubbles: true }));
  assert.equal(summary.textContent, '1 field needs attention: Contact email');
});

test('a one-field form has no summary: its one message is by the field', () => {
  const { el, window } = mount({ title: 'T', fields: [{ name: 'a', type: 'text', label: 'A', required: true }] });
  el.dispatchEvent(new window.Event('submit', { bubbles: true, cancelable: true }));
  assert.equal(el.querySelector('.him-error').hidden, false);
  assert.equal(el.querySelector('.him-summary').hidden, true);
});

test('a digit on a checkbox or a button changes no other field; badges show only where digits work (issue 15.2)', () => {
  const { el, window, view } = mount({
    title: 'T',
    fields: [
      { name: 'agree', type: 'checkbox', label: 'Agree' },
      { name: 'size', type: 'radio', label: 'Size', options: opts(['s', 'm']) },
    ],
  });
  assert.equal(el.dataset.keys, 'focus', 'badges only in the focused group (form.css)');
  const hint = el.querySelector('.him-hint');
  assert.equal(hint.textContent, 'Enter to send · Esc Esc to decline', 'no digits named while they would do nothing');
  el.querySelector('#t-f1-o0').focus();
  assert.equal(hint.textContent, 'Enter to send · 1–2 to pick · Esc Esc to decline', 'in the group, digits work');
  el.querySelector('#t-f0').focus();
  assert.equal(hint.textContent, 'Enter to send · Esc Esc to decline');
  for (const target of [el.querySelector('#t-f0'), el.querySelector('.him-submit')]) {
    target.focus();
    assert.equal(key(window, target, '1').defaultPrevented, false);
  }
  assert.equal(view.values().size, undefined, 'the radio group is untouched');
  assert.equal(view.values().agree, false);

  const one = mount({ title: 'T', fields: [{ name: 'c', type: 'radio', label: 'C', options: opts(['a', 'b']) }] });
  assert.equal(one.el.dataset.keys, 'always');
  const submit = one.el.querySelector('.him-submit');
  assert.equal(key(one.window, submit, '2').defaultPrevented, true, 'one question: a digit means its options anywhere');
  assert.equal(one.view.values().c, 'b');
  assert.equal(one.view.handleKey(new one.window.KeyboardEvent('keydown', { key: '1', cancelable: true })), true);
  assert.equal(one.view.values().c, 'a');
});

test('a yes/no question is two buttons that send at once; Decline is a small text button', () => {
  const { el, calls } = mount({ title: 'Ship it?', fields: [{ name: 'confirmed', type: 'confirm', label: 'Ship it?', required: true }] });
  const yes = el.querySelector('.him-yesno .him-yes');
  const no = el.querySelector('.him-yesno .him-no');
  assert.equal(yes.querySelector('span').textContent, 'Yes');
  assert.equal(no.querySelector('span').textContent, 'No');
  assert.equal(el.querySelector('.him-submit').hidden, true, 'no third big button');
  assert.ok(el.querySelector('.him-decline').classList.contains('him-quiet'));
  assert.equal(el.querySelectorAll('input').length, 0);
  no.click();
  assert.deepEqual(calls.submit, [{ values: { confirmed: false }, note: '' }]);
  yes.click();
  assert.deepEqual(calls.submit.at(-1), { values: { confirmed: true }, note: '' });
  el.querySelector('.him-decline').click();
  assert.equal(calls.decline, 1);
});

test('on a yes/no card Y and N answer, and Enter answers only with a default', () => {
  const bare = mount({ title: 'Ship it?', fields: [{ name: 'confirmed', type: 'confirm', label: 'Ship it?', required: true }] });
  bare.view.focusFirst();
  const group = bare.el.querySelector('.him-type-confirm');
  assert.equal(bare.document.activeElement, group, 'no default: the focus is on the group, not on a button');
  assert.equal(key(bare.window, group, 'Enter').defaultPrevented, true);
  assert.equal(bare.calls.submit.length, 0, 'Enter guesses no answer');
  assert.equal(key(bare.window, group, '1').defaultPrevented, false, 'digits are not the keys here');
  assert.equal(bare.el.querySelector('.him-hint').textContent, 'Y / N · Esc Esc to decline');
  key(bare.window, group, 'N');
  assert.deepEqual(bare.calls.submit, [{ values: { confirmed: false }, note: '' }]);
  // From the page (the panel forwards keys outside the cards).
  assert.equal(bare.view.handleKey(new bare.window.KeyboardEvent('keydown', { key: 'y', cancelable: true })), true);
  assert.deepEqual(bare.calls.submit.at(-1), { values: { confirmed: true }, note: '' });

  const withDefault = mount({ title: 'Delete?', fields: [{ name: 'confirmed', type: 'confirm', label: 'Delete?', required: true, default: false }] });
  withDefault.view.focusFirst();
  const no = withDefault.el.querySelector('.him-no');
  assert.equal(withDefault.document.activeElement, no, 'the default button has the focus');
  assert.ok(no.classList.contains('him-default'));
  assert.equal(withDefault.el.querySelector('.him-hint').textContent, 'Y / N · Enter for No · Esc Esc to decline');
  key(withDefault.window, withDefault.el.querySelector('.him-type-confirm'), 'Enter');
  assert.deepEqual(withDefault.calls.submit, [{ values: { confirmed: false }, note: '' }]);
});

test('a yes/no card that cannot send now, or is read-only, answers to neither buttons nor keys', () => {
  const { el, window, view, calls } = mount({ title: 'Q', fields: [{ name: 'confirmed', type: 'confirm', label: 'Q', required: true }] });
  view.setSendable(false);
  assert.equal(el.querySelector('.him-yes').disabled, true);
  key(window, el.querySelector('.him-type-confirm'), 'y');
  view.setSendable(true);
  view.setReadOnly(true);
  assert.equal(el.querySelector('.him-no').disabled, true);
  key(window, el.querySelector('.him-type-confirm'), 'n');
  assert.deepEqual(calls.submit, []);
});

test('the send hint is platform-aware and names digits only where they work', async () => {
  const { isApplePlatform } = await import('../../../extension/lib/form.js');
  assert.equal(isApplePlatform({ platform: 'MacIntel' }), true);
  assert.equal(isApplePlatform({ userAgentData: { platform: 'macOS' }, platform: '' }), true);
  assert.equal(isApplePlatform({ platform: 'Linux x86_64' }), false);
  assert.equal(isApplePlatform(undefined), false);

  const { document, window } = freshDocument();
  Object.defineProperty(window.navigator, 'platform', { value: 'MacIntel' });
  const mac = renderForm(document, { title: 'T', fields: [{ name: 'a', type: 'textarea', label: 'A' }] }, {});
  assert.equal(mac.element.querySelector('.him-actions .him-hint').textContent, '⌘Enter to send · Esc Esc to decline');
  const linux = mount({ title: 'T', allow_note: true, fields: [{ name: 'c', type: 'radio', label: 'C', options: opts(['a', 'b', 'c', 'd']) }] });
  assert.equal(linux.el.querySelector('.him-hint').textContent, 'Ctrl+Enter to send · 1–4 to pick · Esc Esc to decline');
});

test('in a long option list, Enter in the filter picks the first row left, and a second Enter sends', () => {
  const options = Array.from({ length: 12 }, (_, i) => ({ value: `v${i}`, label: `Option ${i}` }));
  for (const [kind, text, picked] of [
    ['radio', 'option 7', 'v7'],
    ['multi_select', 'ion 1', ['v1']],
  ]) {
    const { el, window, view, calls } = mount({ fields: [{ name: 'pick', type: kind, label: 'Pick', options }] });
    const filter = el.querySelector('.him-filter input');
    assert.ok(filter, `${kind}: a long list has a filter`);
    type(window, filter, text);
    assert.equal(key(window, filter, 'Enter').defaultPrevented, true, `${kind}: the first Enter only picks`);
    assert.equal(calls.submit.length, 0, `${kind}: nothing sent on the first Enter`);
    assert.deepEqual(view.values().pick, picked, `${kind}: the first row left is picked`);
    key(window, filter, 'Enter');
    assert.deepEqual(view.values().pick, picked, `${kind}: the second Enter does not unpick it`);
    assert.equal(calls.submit.length, 1, `${kind}: the second Enter sends`);
    assert.deepEqual(calls.submit[0].values.pick, picked);
  }
});

test('in a long multiple choice, Enter in the filter on a ticked row unticks it; the form is not sent', () => {
  const options = Array.from({ length: 12 }, (_, i) => ({ value: `v${i}`, label: `Option ${i}` }));
  const { el, window, view, calls } = mount({ fields: [{ name: 'pick', type: 'multi_select', label: 'Pick', options, default: ['v3', 'v7'] }] });
  const filter = el.querySelector('.him-filter input');
  type(window, filter, 'option 7');
  assert.equal(key(window, filter, 'Enter').defaultPrevented, true);
  assert.deepEqual(view.values().pick, ['v3'], 'the person meant to untick it');
  assert.equal(calls.submit.length, 0);
  // A pre-chosen radio: the first Enter keeps it chosen and sends nothing.
  const radio = mount({ fields: [{ name: 'r', type: 'radio', label: 'R', options, default: 'v7' }] });
  const box = radio.el.querySelector('.him-filter input');
  type(radio.window, box, 'option 7');
  assert.equal(key(radio.window, box, 'Enter').defaultPrevented, true, 'the first Enter only picks');
  assert.equal(radio.calls.submit.length, 0);
  key(radio.window, box, 'Enter');
  assert.equal(radio.calls.submit.length, 1, 'the second sends');
});
