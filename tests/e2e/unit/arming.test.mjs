// lib/arming.js: nothing is decided unseen. The rule with time passed in, then the forms and
// the permission card in jsdom on a clock the test moves: keys and clicks before a card has
// been on screen ARM_DELAY_MS decide nothing, a held key never does, Allow needs a press that
// began after the card appeared, and a hidden page stops the count.
import './english.mjs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ARM_DELAY_MS, armingRule } from '../../../extension/lib/arming.js';
import { renderForm } from '../../../extension/lib/form.js';
import { renderPermission } from '../../../extension/lib/permission.js';
import { freshDocument, key } from './dom.mjs';

test('the delay is about half a second: long enough to read a line, short enough not to be in the way', () => {
  assert.ok(ARM_DELAY_MS >= 300 && ARM_DELAY_MS <= 800, String(ARM_DELAY_MS));
});

test('a card is armed once it has been on screen the whole delay, without a break', () => {
  const rule = armingRule(500);
  assert.equal(rule.armed(0), false, 'never on screen');
  assert.equal(rule.armsAt(), null);
  rule.seen(true, 1000);
  assert.equal(rule.armsAt(), 1500);
  assert.equal(rule.armed(1499), false);
  assert.equal(rule.armed(1500), true);
  rule.seen(true, 1200);
  assert.equal(rule.armsAt(), 1500, 'still on screen: the count goes on');

  rule.seen(false, 1600);
  assert.equal(rule.armed(1700), false, 'off screen (page hidden, card out of view): not armed');
  rule.seen(true, 5000);
  assert.equal(rule.armed(5499), false, 'back on screen: the count starts over');
  assert.equal(rule.armed(5500), true);

  rule.restart(6000);
  assert.equal(rule.armed(6100), false, 'opened again or moved under the pointer: starts over');
  assert.equal(rule.armed(6500), true);
  rule.seen(false, 7000);
  rule.restart(7100);
  assert.equal(rule.armsAt(), null, 'a restart off screen does not count as shown');
});

test('a press counts for Allow only when it began after the card appeared', () => {
  const rule = armingRule(500);
  assert.equal(rule.pressedSince(100), false, 'not on screen');
  rule.seen(true, 1000);
  assert.equal(rule.pressedSince(999), false);
  assert.equal(rule.pressedSince(1000), false, 'in the same instant it appeared');
  assert.equal(rule.pressedSince(1001), true);
  assert.equal(rule.pressedSince(null), false, 'no press at all (a click from a script)');
  rule.restart(2000);
  assert.equal(rule.pressedSince(1500), false, 'pressed before it moved under the pointer');
});

/** A document with a clock the test moves (jsdom's events are stamped on another one). */
function page() {
  const { document, window } = freshDocument();
  let now = 10_000;
  return {
    document,
    window,
    clock: () => now,
    advance(ms) {
      now += ms;
    },
  };
}

const CONFIRM = { title: 'Delete the production database backup from March?', fields: [{ name: 'ok', type: 'confirm', label: 'Delete the production database backup from March?', default: false }] };

test('a yes/no card takes no Y, no Enter on its default and no click until it is armed', () => {
  const p = page();
  const sent = [];
  const view = renderForm(p.document, CONFIRM, { onSubmit: (a) => sent.push(a), onDecline: () => sent.push('decline'), arming: { now: p.clock } });
  p.document.body.append(view.element);
  view.focusFirst();
  const no = view.element.querySelector('.him-no');

  assert.equal(key(p.window, no, 'y').defaultPrevented, true, 'Y is taken, and does nothing');
  assert.equal(key(p.window, no, 'Enter').defaultPrevented, true, 'Enter would press the focused default');
  assert.equal(key(p.window, p.document.body, 'y').defaultPrevented, false);
  assert.equal(view.handleKey(new p.window.KeyboardEvent('keydown', { key: 'y', cancelable: true })), true, 'a key from outside the form waits too');
  no.click();
  key(p.window, no, 'Escape');
  key(p.window, no, 'Escape');
  assert.deepEqual(sent, [], 'nothing decided, not even a decline');
  assert.equal(view.element.hasAttribute('data-armed'), false);

  p.advance(ARM_DELAY_MS - 1);
  key(p.window, no, 'n');
  assert.deepEqual(sent, [], 'a millisecond short');
  p.advance(1);
  assert.equal(key(p.window, no, 'y', { repeat: true }).defaultPrevented, true, 'a key held down never counts');
  assert.deepEqual(sent, []);
  key(p.window, no, 'y');
  assert.deepEqual(sent, [{ values: { ok: true }, note: '' }], 'armed: Y answers');
});

test('a text answer takes typing at once, but Enter only once the form is armed', () => {
  const p = page();
  const sent = [];
  const form = { title: 'Name the branch', fields: [{ name: 'answer', type: 'text', label: 'Name the branch' }] };
  const view = renderForm(p.document, form, { onSubmit: (a) => sent.push(a), arming: { now: p.clock } });
  p.document.body.append(view.element);
  const input = view.element.querySelector('input');
  assert.equal(key(p.window, input, 'r').defaultPrevented, false, 'typing is not deciding');
  input.value = 'release-7';
  assert.equal(key(p.window, input, 'Enter').defaultPrevented, true);
  assert.deepEqual(sent, []);
  p.advance(ARM_DELAY_MS);
  key(p.window, input, 'Enter');
  assert.deepEqual(sent, [{ values: { answer: 'release-7' }, note: '' }]);
});

test('rearm: a card that opens again waits again', () => {
  const p = page();
  const sent = [];
  const view = renderForm(p.document, CONFIRM, { onSubmit: (a) => sent.push(a), arming: { now: p.clock } });
  p.document.body.append(view.element);
  p.advance(ARM_DELAY_MS);
  view.rearm();
  key(p.window, view.element.querySelector('.him-no'), 'y');
  assert.deepEqual(sent, []);
  p.advance(ARM_DELAY_MS);
  key(p.window, view.element.querySelector('.him-no'), 'n');
  assert.deepEqual(sent, [{ values: { ok: false }, note: '' }]);
});

test('time counts only while the page is visible', () => {
  const p = page();
  const sent = [];
  const view = renderForm(p.document, CONFIRM, { onSubmit: (a) => sent.push(a), arming: { now: p.clock } });
  p.document.body.append(view.element);
  const setVisibility = (state) => {
    Object.defineProperty(p.document, 'visibilityState', { value: state, configurable: true });
    p.document.dispatchEvent(new p.window.Event('visibilitychange'));
  };
  p.advance(300);
  setVisibility('hidden');
  p.advance(5000);
  setVisibility('visible');
  p.advance(ARM_DELAY_MS - 1);
  key(p.window, view.element.querySelector('.him-no'), 'y');
  assert.deepEqual(sent, [], 'the time hidden did not count, nor the 300 ms before it');
  p.advance(1);
  key(p.window, view.element.querySelector('.him-no'), 'y');
  assert.equal(sent.length, 1);
});

const BASH = {
  title: 'Claude Code asks to use Bash',
  fields: [
    {
      name: 'decision',
      type: 'radio',
      label: 'Decision',
      required: true,
      options: [
        { value: 'allow', label: 'Allow' },
        { value: 'deny', label: 'Deny' },
      ],
    },
  ],
  permission: { tool_name: 'Bash', input: { command: 'npm publish' } },
};

test('Allow counts only when armed and pressed after the card appeared; Deny and Esc wait too', () => {
  const p = page();
  const sent = [];
  const view = renderPermission(p.document, BASH, { onSubmit: (a) => sent.push(a.values.decision), onDecline: () => sent.push('esc'), arming: { now: p.clock } });
  p.document.body.append(view.element);
  view.focusFirst();
  const [deny, allow] = ['.him-deny', '.him-allow'].map((s) => view.element.querySelector(s));
  const press = (el) => el.dispatchEvent(new p.window.PointerEvent('pointerdown', { bubbles: true }));

  press(allow);
  allow.click();
  deny.click();
  assert.equal(key(p.window, deny, 'Enter').defaultPrevented, true, 'Enter on the focused Deny would press it');
  key(p.window, deny, 'Escape');
  assert.deepEqual(sent, [], 'nothing decided before the card is armed');

  p.advance(ARM_DELAY_MS);
  allow.click();
  assert.deepEqual(sent, [], 'a click with no press since the card appeared (a script, a press held from before) does not allow');
  press(allow);
  allow.click();
  assert.deepEqual(sent, ['allow']);
});

test('a key held down from before never counts for Allow: Space held on it sends repeats', () => {
  const p = page();
  const sent = [];
  const view = renderPermission(p.document, BASH, { onSubmit: (a) => sent.push(a.values.decision), arming: { now: p.clock } });
  p.document.body.append(view.element);
  const allow = view.element.querySelector('.him-allow');
  p.advance(ARM_DELAY_MS);
  assert.equal(key(p.window, allow, ' ', { repeat: true }).defaultPrevented, true);
  allow.click();
  assert.deepEqual(sent, []);
});

const NPM_TEST = {
  title: 'Claude Code asks to use Bash',
  fields: [
    {
      name: 'decision',
      type: 'radio',
      label: 'Decision',
      required: true,
      options: [
        { value: 'allow', label: 'Allow' },
        { value: 'deny', label: 'Deny' },
        { value: 'allow_session', label: 'Allow for this session: Bash(npm test *)' },
      ],
    },
  ],
  permission: { tool_name: 'Bash', input: { command: 'npm test' }, session_rules: ['Bash(npm test *)'] },
};

test('Allow for this session takes what Allow takes: an armed press that began after the card appeared, never Enter', () => {
  const p = page();
  const sent = [];
  const view = renderPermission(p.document, NPM_TEST, { onSubmit: (a) => sent.push(a.values.decision), arming: { now: p.clock } });
  p.document.body.append(view.element);
  view.focusFirst();
  const session = view.element.querySelector('.him-allow-session');
  const press = (el) => el.dispatchEvent(new p.window.PointerEvent('pointerdown', { bubbles: true }));

  press(session);
  session.click();
  assert.deepEqual(sent, [], 'nothing before the card is armed');
  p.advance(ARM_DELAY_MS);
  session.click();
  assert.deepEqual(sent, [], 'a click with no press since the card appeared');
  assert.equal(key(p.window, session, 'Enter').defaultPrevented, true, 'Enter on it would press it');
  assert.equal(view.element.querySelector('.him-status').textContent, 'Enter does not allow: click “Allow for this session”.');
  assert.deepEqual(sent, [], 'Enter decided nothing');
  press(session);
  session.click();
  assert.deepEqual(sent, ['allow_session'], 'the answer names the choice, never the rule');
});
