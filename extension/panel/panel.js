// The side panel (Chrome side_panel, Firefox sidebar_action; also works opened as a tab).
// It owns no state of record: the worker pushes the whole queue when the panel connects and
// what each change touched after that (lib/queuestore.js), and the panel draws it, keeping
// each question's form element alive across pushes so the person's cursor and typing are
// never disturbed. Drafts and answers go back to the worker; every message on that port is
// listed in extension/README.md ("Messages between the panel and the worker").
//
// It is an inbox (lib/inbox.js): one card is open, on top; the other questions are one line
// each below it, the soonest deadline first; "2 of 3" and ‹ › (or Alt+↑ / Alt+↓) move
// between them. Under the questions: notices, then the session's Recent answers.

import { guardCard, watchArming } from '../lib/arming.js';
import { renderForm } from '../lib/form.js';
import { holdControls } from '../lib/holds.js';
import { isPermissionForm, renderPermission } from '../lib/permission.js';
import { agentLabel, formatTimeLeft, isWaiting, plainTitle, timeLeft } from '../lib/queue.js';
import { sendBlockedReason } from '../lib/hosterror.js';
import { postIfOpen } from '../lib/port.js';
import { t } from '../lib/i18n.js';
import { agentMark, chooseActive, inboxOrder, stepActive } from '../lib/inbox.js';
import { appendMarked, markedString } from '../lib/display.js';
import { recentJson } from '../lib/recent.js';
import { applyChanges } from '../lib/queuestore.js';
import { playChime } from '../lib/chime.js';

const api = globalThis.browser ?? globalThis.chrome;
const $ = (id) => document.getElementById(id);

const DRAFT_DELAY_MS = 250;
/** Under this, the time left turns red. */
const URGENT_MS = 30_000;
/** How long a card that arrived while the panel was not in focus is highlighted. */
const ARRIVAL_CUE_MS = 3200;
/** A value longer than this is cut short in a notice (Recent shows it whole). */
const ECHO_MAX = 80;

let port = null;
let state = null;
let reconnected = false;
/**
 * Question id → {element, row, view, timeEl, rowTime, question, draftTimer, expired, sending,
 * dismiss, broken, collapsed}. `broken` cards show why their form could not be drawn
 * instead of it (brokenView).
 */
const cards = new Map();
let cardCounter = 0;
let noticeKeys = '';
/** Whether the queue has been drawn: what comes after arrives while the panel is open. */
let drawnOnce = false;
let recentKey = '';
/** The id of the open card, and whether the person chose it (then it stays open). */
let activeId = null;
let chosenId = null;

function send(message) {
  return postIfOpen(port, message);
}

function connectWorker() {
  port = api.runtime.connect({ name: 'panel' });
  port.onMessage.addListener(onWorkerMessage);
  port.onDisconnect.addListener(() => {
    // The worker restarted (or the browser is updating the extension). Connecting again
    // starts it; the drafts typed meanwhile are re-sent once it answers.
    port = null;
    reconnected = true;
    setTimeout(connectWorker, 200);
  });
  send({ type: 'visibility', visible: document.visibilityState === 'visible' });
}

function onWorkerMessage(msg) {
  if (msg?.type === 'state') {
    state = msg;
    render();
    if (reconnected) {
      reconnected = false;
      for (const [id, card] of cards) {
        if (!card.broken) send({ type: 'draft', id, draft: card.view.draft() });
        if (card.sending && !card.expired && !card.question.judging) {
          // The worker restarted with this answer in flight and still lists the question,
          // so the answer did not get through.
          card.sending = false;
          card.view.setDisabled(false);
          card.view.setStatus(t('panel_status_interrupted'));
        }
      }
    }
  } else if (msg?.type === 'changes' && state) {
    // Before the first `state` there is nothing to change: that `state` has it all.
    state = {
      ...state,
      queue: applyChanges(state.queue, msg),
      host: msg.host ?? state.host,
      recent: Array.isArray(msg.recent) ? msg.recent : state.recent,
      now: msg.now,
    };
    render();
  } else if (msg?.type === 'answer-failed') {
    const card = cards.get(msg.id);
    if (card && !card.expired) {
      card.sending = false;
      card.view.setDisabled(false);
      card.view.setStatus(msg.message);
    }
  }
}

function render() {
  renderLink(state.host);
  renderNotices(state.queue.notices);
  renderQueue(state.queue.questions);
  renderRecent(Array.isArray(state.recent) ? state.recent : []);
}

/** The static words of panel.html, from _locales: element id → its text, and → its name. */
function translatePage() {
  document.documentElement.lang = t('panel_lang');
  const words = {
    link: t('panel_link_connecting'),
    'problem-run': t('panel_problem_run'),
    retry: t('panel_retry'),
    empty: t('panel_empty'),
    'recent-note': t('panel_recent_note'),
    'recent-copy': t('panel_recent_copy'),
    sound: t('panel_sound'),
  };
  const names = {
    nav: t('panel_nav_label'),
    prev: t('panel_prev'),
    next: t('panel_next'),
    queue: t('panel_queue_label'),
    notices: t('panel_notices_label'),
  };
  for (const [id, text] of Object.entries(words)) $(id).textContent = text;
  for (const [id, name] of Object.entries(names)) $(id).setAttribute('aria-label', name);
  $('sound').title = t('panel_sound_title');
}

function renderLink(host) {
  const link = $('link');
  link.dataset.status = host.status;
  link.textContent =
    host.status === 'connected'
      ? host.version
        ? t('panel_link_connected_version', host.version)
        : t('panel_link_connected')
      : host.status === 'connecting'
        ? t('panel_link_connecting')
        : t('panel_link_disconnected');
  const problem = $('problem');
  problem.hidden = host.status !== 'error' || !host.problem;
  if (problem.hidden) return;
  $('problem-title').textContent = host.problem.summary;
  $('problem-said').textContent = `${host.problem.source === 'host' ? t('panel_problem_host_said') : t('panel_problem_browser_said')} `;
  $('problem-message').textContent = host.problem.message;
  const list = $('problem-commands');
  list.replaceChildren(
    ...host.problem.commands.map((command) => {
      const li = document.createElement('li');
      const code = document.createElement('code');
      code.textContent = command;
      const copy = document.createElement('button');
      copy.type = 'button';
      copy.textContent = t('panel_copy');
      copy.setAttribute('aria-label', t('panel_copy_command', command));
      copy.addEventListener('click', () => {
        navigator.clipboard?.writeText(command).then(
          () => (copy.textContent = t('panel_copied')),
          () => {},
        );
      });
      li.append(code, copy);
      return li;
    }),
  );
}

function renderNotices(notices) {
  // Redraw only when the set changed: the region is live, and redrawing would repeat it.
  const keys = notices.map((n) => n.key).join('|');
  if (keys === noticeKeys) return;
  noticeKeys = keys;
  const recent = Array.isArray(state.recent) ? state.recent : [];
  $('notices').replaceChildren(
    ...notices.map((notice) => {
      const el = document.createElement('div');
      el.className = 'notice';
      el.dataset.kind = notice.kind;
      const p = document.createElement('p');
      const what = document.createElement('span');
      what.className = 'what';
      what.textContent = t('panel_notice_title', noticeName(notice));
      p.append(what, document.createTextNode(` ${t('panel_notice_text', markedString(notice.agent), notice.text)}`));
      // An answer that went through says what it was, so a slip shows at once.
      const sent = notice.kind === 'submit' ? recent.find((e) => e.id === notice.id) : null;
      const echo = sent ? echoOf(sent, ECHO_MAX) : '';
      if (echo) {
        const said = document.createElement('span');
        said.className = 'echo';
        said.textContent = t('panel_notice_echo', echo);
        p.append(document.createTextNode(' '), said);
      }
      // One line each; the whole of it in the tooltip.
      p.title = p.textContent;
      const dismiss = document.createElement('button');
      dismiss.type = 'button';
      dismiss.textContent = '×';
      dismiss.setAttribute('aria-label', t('panel_notice_dismiss', noticeName(notice)));
      dismiss.addEventListener('click', () => send({ type: 'dismiss', key: notice.key }));
      el.append(p, dismiss);
      return el;
    }),
  );
}

/** What a notice names: a permission card's call (its command, marked), else the question's title. */
function noticeName(notice) {
  return typeof notice.subject === 'string' ? markedString(notice.subject) : titleText(notice.title);
}

/** One answer value for a person: options by their labels, yes/no in words. */
function shownValue(value, max = Infinity) {
  let text;
  if (typeof value === 'boolean') text = value ? t('panel_yes') : t('panel_no');
  else if (Array.isArray(value)) text = value.length ? value.map((v) => shownValue(v)).join(', ') : t('panel_echo_none');
  else if (value === null || value === undefined || value === '') text = t('panel_echo_empty');
  else text = String(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * What an answer said, on one line: the value alone for a one-question card, else
 * "label: value" for each field; then the note; then how many password fields went, never
 * what they held (they are not in the entry at all).
 */
function echoOf(entry, max = Infinity) {
  const parts =
    entry.fields.length === 1 && entry.hidden === 0
      ? [shownValue(entry.fields[0].shown, max)]
      : entry.fields.map((f) => t('panel_echo_field', f.label, shownValue(f.shown, max)));
  if (entry.hidden) parts.push(t('panel_echo_hidden', entry.hidden));
  if (entry.note) parts.push(t('panel_echo_note', shownValue(entry.note, max)));
  return parts.join('; ');
}

function renderRecent(recent) {
  const key = recent.map((e) => `${e.id}:${e.at_ms}`).join('|');
  if (key === recentKey) return;
  recentKey = key;
  $('recent').hidden = recent.length === 0;
  $('recent-summary').textContent = t('panel_recent_title', recent.length);
  $('recent-list').replaceChildren(
    ...recent.map((entry) => {
      const li = document.createElement('li');
      li.className = 'recent-item';
      const head = document.createElement('p');
      head.className = 'recent-head';
      head.append(markElement(entry.agent, agentMark(entry.agent, entry.project, huesOnScreen())));
      if (entry.project) appendMarked(document, head, ` · ${entry.project}`);
      const when = document.createElement('time');
      when.dateTime = new Date(entry.at_ms).toISOString();
      when.textContent = new Date(entry.at_ms).toLocaleTimeString(t('panel_lang'), { hour: '2-digit', minute: '2-digit' });
      head.append(when);
      const title = document.createElement('p');
      title.className = 'recent-title';
      title.textContent = titleText(entry.title);
      const answer = document.createElement('p');
      answer.className = 'recent-answer';
      answer.textContent = entry.action === 'submit' ? echoOf(entry) : t('panel_recent_declined', entry.note || '').trim();
      li.append(head, title, answer);
      return li;
    }),
  );
}

$('recent-copy').addEventListener('click', () => {
  const button = $('recent-copy');
  const text = JSON.stringify(recentJson(state?.recent ?? []), null, 2);
  navigator.clipboard?.writeText(text).then(
    () => (button.textContent = t('panel_copied')),
    () => (button.textContent = t('panel_copy_failed')),
  );
  setTimeout(() => (button.textContent = t('panel_recent_copy')), 2000);
});

/** The agents on screen and their hues, so a new agent's colour is one none of them has. */
function huesOnScreen() {
  const taken = new Map();
  for (const card of cards.values()) taken.set(card.agentKey, card.hue);
  return taken;
}

/**
 * The agent's name on a colour of its own (lib/inbox.js's agentMark), which tells agents
 * apart at a glance: the whole name, cut with an ellipsis only in a narrow panel (the tooltip
 * has it all).
 */
function markElement(label, mark) {
  const el = document.createElement('span');
  el.className = 'mark';
  // Names the agent's client wrote, marked (lib/display.js).
  appendMarked(document, el, label);
  el.title = label;
  el.style.setProperty('--mark-light', mark.colours.light);
  el.style.setProperty('--mark-dark', mark.colours.dark);
  return el;
}

/**
 * Tells of questions that came while the panel was open: a screen reader hears who asks
 * what (a live region), and a panel that is not in focus highlights their cards a moment.
 */
function announceArrivals(arrived) {
  if (arrived.length === 0) return;
  $('arrivals').textContent = arrived
    .map((card) => t('panel_arrived', agentLabel(card.question.agent), titleText(card.question.form?.title)))
    .join(' ');
  if (document.hasFocus()) return;
  chimeIfWanted();
  for (const card of arrived) card.element.dataset.arrived = '';
  // Not on animationend: with reduced motion there is no animation, only the outline.
  setTimeout(() => arrived.forEach((card) => delete card.element.dataset.arrived), ARRIVAL_CUE_MS);
}

/** How long a chime waits for the audio to start; after that it is left out. */
const RESUME_WAIT_MS = 300;
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The arrival sound: off unless the person turned it on here (kept in storage.local). */
let soundOn = false;
/** Made at the first chime, and kept: a page may start only so many. */
let audio = null;

async function loadSoundSetting() {
  const stored = await api.storage?.local.get('sound').catch(() => ({}));
  soundOn = stored?.sound === true;
  $('sound').setAttribute('aria-pressed', String(soundOn));
}

$('sound').addEventListener('click', () => {
  soundOn = !soundOn;
  $('sound').setAttribute('aria-pressed', String(soundOn));
  // Nothing is kept while it is off: storage.local holds only a choice the person made.
  (soundOn ? api.storage?.local.set({ sound: true }) : api.storage?.local.remove('sound'))?.catch(() => {});
  // Turning it on plays it once, so the person knows what to listen for.
  if (soundOn) chimeIfWanted();
});

/**
 * Plays the chime when the person asked for it, unless they turned the extension's
 * notifications off in the browser: the sound is a notification too. Firefox has no way to
 * tell, so there only the panel's own switch counts.
 */
async function chimeIfWanted() {
  if (!soundOn) return;
  const level = await api.notifications?.getPermissionLevel?.().catch(() => 'granted');
  if (level === 'denied') return;
  try {
    audio ??= new AudioContext();
    // A browser that lets no sound start without a click leaves resume() waiting until the
    // next one: a chime then would come late, and with every other held back. So it plays
    // now or not at all.
    if (audio.state === 'suspended') await Promise.race([audio.resume(), delay(RESUME_WAIT_MS)]);
    if (audio.state === 'running') playChime(audio);
  } catch {
    // No audio device, or no Web Audio here: the highlight still shows.
  }
}

function renderQueue(questions) {
  const ids = new Set(questions.map((q) => q.id));
  let changed = false;
  for (const [id, card] of cards) {
    if (!ids.has(id)) {
      clearTimeout(card.draftTimer);
      card.view.release();
      card.element.remove();
      cards.delete(id);
      changed = true;
    }
  }
  const arrived = [];
  for (const question of questions) {
    let card = cards.get(question.id);
    if (!card) {
      card = createCard(question);
      cards.set(question.id, card);
      changed = true;
      if (drawnOnce && isWaiting(question)) arrived.push(card);
    }
    card.question = question;
  }
  drawnOnce = true;
  announceArrivals(arrived);
  if (chosenId !== null && !ids.has(chosenId)) chosenId = null;

  const order = inboxOrder(questions);
  const focusCard = cardHolding(document.activeElement);
  const before = activeId;
  const current = cards.get(activeId);
  // The open card stays open while the person is in the middle of it: chose it, typed in
  // it, or sent it and waits for the verdict. Otherwise the most urgent question is.
  const keep = Boolean(
    current &&
      (chosenId === activeId || current.draftSent || current.question.judging || current.question.refused || current.question.lost),
  );
  activeId = chooseActive(order, { current: activeId, keep, canOpen: (q) => !cards.get(q.id).broken });
  const active = cards.get(activeId) ?? null;

  for (const q of order) setCollapsed(cards.get(q.id), q.id !== activeId && isWaiting(q) && !cards.get(q.id).broken);
  let wanted = [active, ...order.map((q) => cards.get(q.id)).filter((c) => c !== active)].filter(Boolean);
  // A card that closed (or whose answer came back) while the person is in it stays exactly
  // where it is, what they typed there to copy; the next question opens around it.
  const held = focusCard && !isWaiting(focusCard.question) ? focusCard : null;
  if (held) {
    wanted = wanted.filter((c) => c !== held);
    wanted.splice(Math.min([...$('queue').children].indexOf(held.element), wanted.length), 0, held);
  }
  placeCards(wanted, focusCard);
  for (const q of order) updateCard(cards.get(q.id));
  renderCount(order);

  // Under the banner that says him cannot be reached, "nothing to answer" would mislead.
  $('empty').hidden = questions.length > 0 || !$('problem').hidden;
  rearmMoved();
  // When a question arrives or leaves, or another card opens, the open card gets the focus:
  // answer one, and the keyboard is already in the next. It never takes the focus from
  // another card the person is in (one that closed under their hands included: the next
  // keys must not land in another question), only from the untouched card that gave way to
  // a more urgent one; and a broken card never takes it (Enter there would decline a
  // question the person could not read).
  const elsewhere = focusCard && focusCard !== active && !(focusCard.id === before && isWaiting(focusCard.question));
  if ((changed || activeId !== before) && active && !active.element.contains(document.activeElement) && !elsewhere) {
    active.view.focusFirst();
    // The browser draws no ring for a focus the page moved after a click; this one must be
    // seen, so the panel draws it until the person next uses the mouse.
    document.body.dataset.focusRing = '';
  }
}

/**
 * A card that moved on the page (a card above it came or went) may now be under the pointer
 * or the keys aimed at what was there: it waits to be seen again before it takes a decision.
 */
function rearmMoved() {
  for (const card of cards.values()) {
    if (card.collapsed) continue;
    const top = card.element.getBoundingClientRect().top + window.scrollY;
    if (card.top !== undefined && card.top !== top) card.view.rearm();
    card.top = top;
  }
}

/** The card whose element holds `node`, or null. */
function cardHolding(node) {
  for (const card of cards.values()) if (card.element.contains(node)) return card;
  return null;
}

/**
 * Put the cards in `wanted` order in the queue, moving only cards that do not hold the
 * focus: moving an element takes the focus out of it.
 */
function placeCards(wanted, focusCard) {
  const main = $('queue');
  const now = [...main.children];
  if (wanted.length === now.length && wanted.every((c, i) => now[i] === c.element)) return;
  const pivot = focusCard && wanted.includes(focusCard) ? wanted.indexOf(focusCard) : -1;
  if (pivot === -1) {
    wanted.forEach((c, i) => {
      if (main.children[i] !== c.element) main.insertBefore(c.element, main.children[i] ?? null);
    });
    return;
  }
  for (const c of wanted.slice(0, pivot)) main.insertBefore(c.element, focusCard.element);
  let previous = focusCard.element;
  for (const c of wanted.slice(pivot + 1)) {
    if (previous.nextElementSibling !== c.element) previous.after(c.element);
    previous = c.element;
  }
}

function setCollapsed(card, collapsed) {
  if (card.collapsed === collapsed) return;
  card.collapsed = collapsed;
  card.element.toggleAttribute('data-collapsed', collapsed);
  card.row.hidden = !collapsed;
  card.head.hidden = collapsed;
  card.view.element.hidden = collapsed;
  // Opened, perhaps in place of the row just clicked: it is new to the eye.
  card.top = undefined;
  if (!collapsed) card.view.rearm();
}

/** "2 of 3" over the questions that can be opened, with ‹ › when there is more than one. */
function renderCount(order) {
  const open = order.filter((q) => isWaiting(q) && !cards.get(q.id).broken);
  const at = open.findIndex((q) => q.id === activeId);
  $('nav').hidden = open.length < 2 || at === -1;
  $('count').textContent = at === -1 ? '' : t('panel_count', at + 1, open.length);
}

/** Open the card `step` places from the open one (wrapping round), as the person asked. */
function step(by) {
  if (!state) return;
  const order = inboxOrder(state.queue.questions);
  const id = stepActive(order, activeId, by, (q) => !cards.get(q.id)?.broken);
  if (id !== null) open(id);
}

/** Open question `id`'s card because the person chose it, and put the keyboard in it. */
function open(id) {
  chosenId = id;
  activeId = id;
  renderQueue(state.queue.questions);
  cards.get(id)?.view.focusFirst();
}

function createCard(question) {
  const prefix = `q${++cardCounter}`;
  const element = document.createElement('article');
  element.className = 'card';
  element.setAttribute('aria-labelledby', `${prefix}-title`);
  const label = agentLabel(question.agent);
  const mark = agentMark(label, question.project, huesOnScreen());

  // The card as one line (agent · title · time left), when another card is open.
  const row = document.createElement('button');
  row.type = 'button';
  row.className = 'card-row';
  row.hidden = true;
  const rowWho = document.createElement('span');
  rowWho.className = 'row-who';
  rowWho.append(markElement(label, mark));
  if (question.project) {
    // In a narrow panel the project gives way to the title; the mark's colour still tells.
    // Names the agent's client wrote, marked (lib/display.js): a bidi override or a control
    // character in them must not reorder or hide what the card says.
    const project = document.createElement('span');
    project.className = 'row-project';
    appendMarked(document, project, ` · ${question.project}`);
    rowWho.append(project);
  }
  const rowTitle = document.createElement('span');
  rowTitle.className = 'row-title';
  // Two lines of the question in the row, the whole of it in the tooltip.
  rowTitle.textContent = titleText(question.form?.title);
  rowTitle.title = rowTitle.textContent;
  const rowTime = document.createElement('span');
  rowTime.className = 'row-time';
  row.append(rowWho, rowTitle, rowTime);
  row.addEventListener('click', () => open(question.id));

  const head = document.createElement('div');
  head.className = 'card-head';
  const who = document.createElement('span');
  who.className = 'who';
  who.append(markElement(label, mark));
  if (question.project) appendMarked(document, who, ` · ${question.project}`);
  const timeEl = document.createElement('span');
  timeEl.className = 'time';
  timeEl.setAttribute('role', 'timer');
  head.append(who, timeEl);

  const card = {
    id: question.id,
    agentKey: mark.key,
    hue: mark.hue,
    element,
    row,
    rowTime,
    head,
    timeEl,
    question,
    draftTimer: null,
    expired: false,
    sending: false,
    broken: false,
    collapsed: false,
    view: null,
  };
  const answer = (action, extra = {}) => {
    if (card.expired) return;
    card.sending = true;
    card.view.setDisabled(true);
    card.view.setStatus(action === 'submit' ? t('panel_status_sending') : t('panel_status_declining'));
    clearTimeout(card.draftTimer);
    if (!send({ type: 'answer', id: question.id, action, ...extra })) {
      card.sending = false;
      card.view.setDisabled(false);
      card.view.setStatus(t('panel_status_no_worker'));
    }
  };
  try {
    // An agent's permission prompt gets its own card, where only a click allows.
    const render = isPermissionForm(question.form) ? renderPermission : renderForm;
    card.view = render(document, question.form, {
      idPrefix: prefix,
      draft: question.draft ?? undefined,
      onChange(draft) {
        clearTimeout(card.draftTimer);
        // The first edit goes at once: a question withdrawn a moment later must still know
        // it was being answered, to stay on the panel with what was typed.
        const delay = question.draft || card.draftSent ? DRAFT_DELAY_MS : 0;
        card.draftSent = true;
        card.draftTimer = setTimeout(() => send({ type: 'draft', id: question.id, draft }), delay);
      },
      onSubmit({ values, note }) {
        answer('submit', { values, note });
      },
      onDecline() {
        // A note written before declining says why; the agent gets it with the decline.
        answer('decline', { note: card.view.note() });
      },
    });
  } catch (err) {
    // A form this page cannot draw (one no agent side would have sent; the host checks
    // every form, but the panel does not count on it) spoils its own card only: the other
    // questions still show, and this one can still be declined.
    console.warn(`him: question ${question.id} could not be shown:`, err);
    card.broken = true;
    element.dataset.broken = '';
    card.view = brokenView(prefix, err, () => answer('decline'));
  }
  // A draft from before a reload means the person is in the middle of this one.
  if (question.draft) card.draftSent = true;
  element.append(row, head, card.view.element);
  return card;
}

/** A question's title as plain text for a line, or "Untitled". */
function titleText(text) {
  return plainTitle(text) || t('panel_untitled');
}

/**
 * What a card shows in place of a form that could not be drawn: why, and Decline (the button
 * or Esc twice). Of a form's view it has what the panel asks of every card (disabling, a status
 * line); drafts, the focus and number keys pass broken cards by.
 */
function brokenView(prefix, err, onDecline) {
  const element = document.createElement('div');
  element.className = 'him-form card-broken';
  const message = document.createElement('p');
  message.id = `${prefix}-title`;
  message.className = 'card-broken-message';
  message.textContent = t('panel_broken', err?.message ?? String(err));
  const actions = document.createElement('div');
  actions.className = 'him-actions';
  const decline = document.createElement('button');
  decline.type = 'button';
  decline.className = 'him-decline';
  decline.textContent = t('panel_decline');
  decline.addEventListener('click', onDecline);
  actions.append(decline);
  const status = document.createElement('p');
  status.className = 'him-status';
  status.setAttribute('role', 'status');
  element.append(message, actions, status);
  // Nothing decided unseen, here too (lib/arming.js).
  const arming = watchArming(element);
  guardCard(element, arming);
  // Esc twice within 2 s, as on every other card (lib/form.js): a reflex Esc declines nothing.
  let escArmedUntil = 0;
  element.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && !decline.disabled) {
      event.preventDefault();
      if (Date.now() > escArmedUntil) {
        escArmedUntil = Date.now() + 2000;
        status.textContent = t('panel_esc_again');
        return;
      }
      escArmedUntil = 0;
      onDecline();
    }
  });
  return {
    element,
    // Decline waits while anything says nothing can be sent (in flight, no host, closed).
    ...holdControls((held) => {
      decline.disabled = held;
    }),
    setStatus(text) {
      status.textContent = text ?? '';
    },
    // Only a decline is ever sent from here, and a decline is never refused.
    showRefusal({ message }) {
      status.textContent = message ?? '';
    },
    draft: () => ({ values: {}, note: '' }),
    focusFirst: () => decline.focus(),
    rearm: () => arming.restart(),
    release: () => arming.disconnect(),
  };
}

function updateCard(card) {
  if (showUndelivered(card)) return;
  if (showClosed(card)) return;
  if (showVerdict(card)) return;
  const left = timeLeft(card.question, Date.now());
  const text = left === null ? '' : t('panel_time_left', formatTimeLeft(left));
  // Every card is updated after each change; writing only what differs keeps one arrival
  // from re-laying out every card already waiting (issue 22.12).
  const label = left === null ? t('panel_no_time_limit') : t('panel_time_left_long', formatTimeLeft(left));
  // A kept question says so in its inbox row too, where the status line is not shown.
  const kept = Boolean(card.question.kept);
  const rowText = kept && left !== null ? t('panel_kept_row', formatTimeLeft(left)) : text;
  if (card.timeEl.textContent !== text || card.rowTime.textContent !== rowText || card.timeEl.getAttribute('aria-label') !== label) {
    card.timeEl.textContent = text;
    card.rowTime.textContent = rowText;
    card.timeEl.setAttribute('aria-label', label);
  }
  if (card.element.hasAttribute('data-kept') !== kept) {
    card.element.toggleAttribute('data-kept', kept);
    card.row.toggleAttribute('data-kept', kept);
  }
  if (left !== null && left < URGENT_MS) {
    card.timeEl.dataset.urgent = '';
    card.rowTime.dataset.urgent = '';
  }
  if (left === 0 && !card.expired) {
    // It can no longer be answered; the worker removes it and leaves a notice.
    card.expired = true;
    card.element.dataset.expired = '';
    card.view.setDisabled(true);
    card.view.setStatus(t('panel_status_timed_out'));
    send({ type: 'tick' });
    return;
  }
  if (card.expired) return;
  const blocked = sendBlockedReason(state.host, card.question);
  // Once it can be sent again, a card whose answer was lost with the host says so; a kept
  // one, that its agent no longer waits but will get the answer.
  const status = blocked ?? lostText(card) ?? (kept ? t('panel_kept') : null);
  if (status) card.view.setStatus(status);
  else if (card.waiting) card.view.setStatus('');
  // The fields stay editable, so the draft goes on; only sending waits.
  card.view.setSendable(!blocked);
  card.waiting = Boolean(status);
  card.element.toggleAttribute('data-lost', Boolean(card.question.lost));
}

/**
 * What a card says when the answer sent from it got no verdict before the host went away
 * (crashed, killed, or the worker restarted) and its agent asked again: the answer is in
 * the form to send again; a password only while this page still holds it, since none is
 * ever stored. Null for any other card.
 */
function lostText(card) {
  if (!card.question.lost) return null;
  const fields = Array.isArray(card.question.form?.fields) ? card.question.form.fields : [];
  const secret = fields.some((f) => f?.type === 'password');
  return [t('panel_answer_lost'), secret ? t('panel_answer_lost_password') : null].filter(Boolean).join(' ');
}

/**
 * Shows that this card's question ended before the person answered it (withdrawn, timed
 * out, its agent gone): the card stays, greyed, says why, and keeps what was typed readable
 * and copyable until *Dismiss*. Returns whether it is closed.
 */
function showClosed(card) {
  const closed = card.question.closed;
  if (!closed) return false;
  if (card.closedAt === closed.at_ms) return true;
  card.closedAt = closed.at_ms;
  clearTimeout(card.draftTimer);
  card.sending = false;
  card.element.dataset.closed = '';
  card.timeEl.textContent = '';
  card.timeEl.removeAttribute('aria-label');
  card.view.setDisabled(false);
  card.view.setReadOnly(true);
  card.view.setStatus(t('panel_closed', closed.text));
  const dismiss = document.createElement('button');
  dismiss.type = 'button';
  dismiss.className = 'discard';
  dismiss.textContent = t('panel_dismiss');
  dismiss.setAttribute('aria-label', t('panel_dismiss_question'));
  dismiss.addEventListener('click', () => send({ type: 'discard', id: card.question.id }));
  card.timeEl.after(dismiss);
  return true;
}

/**
 * Shows where the agent side's verdict on this card's answer stands (extension/README.md):
 * while it is judged the card waits, disabled, and nothing says "sent" yet; once refused, the
 * card is answerable again with the reason at the field it names, the agent still waiting.
 * Returns whether the answer is being judged (then there is nothing more to update).
 */
function showVerdict(card) {
  const { judging, refused } = card.question;
  if (judging) {
    card.judged = true;
    card.sending = true;
    card.view.setDisabled(true);
    card.view.setStatus(t('panel_status_sending'));
    card.rowTime.textContent = t('panel_status_sending');
    return true;
  }
  const newRefusal = refused && refused.at_ms !== card.refusedAt;
  if (card.judged) {
    card.judged = false;
    card.sending = false;
    card.view.setDisabled(false);
    // Asked again with no verdict (the host restarted meanwhile): the answer did not land.
    if (!newRefusal) card.view.setStatus('');
  }
  if (newRefusal) {
    card.refusedAt = refused.at_ms;
    card.view.showRefusal(refused);
  }
  return false;
}

/**
 * Shows whether the host could not deliver this card's answer: the card keeps the answer as
 * typed, to copy (nobody waits for it now), says why and offers to dismiss it, until its
 * agent asks again and it is an ordinary question once more. Returns whether it is marked.
 */
function showUndelivered(card) {
  const undelivered = card.question.undelivered;
  if (Boolean(undelivered) === Boolean(card.dismiss)) return Boolean(undelivered);
  if (!undelivered) {
    card.dismiss.remove();
    card.dismiss = null;
    delete card.element.dataset.undelivered;
    card.view.setStatus('');
    return false;
  }
  card.sending = false;
  card.element.dataset.undelivered = '';
  card.timeEl.textContent = '';
  card.timeEl.removeAttribute('aria-label');
  card.view.setDisabled(false);
  card.view.setStatus(t('panel_undelivered', undelivered.message.replace(/\.?$/, '.')));
  card.dismiss = document.createElement('button');
  card.dismiss.type = 'button';
  card.dismiss.className = 'discard';
  card.dismiss.textContent = t('panel_dismiss');
  card.dismiss.setAttribute('aria-label', t('panel_dismiss_answer'));
  card.dismiss.addEventListener('click', () => send({ type: 'discard', id: card.question.id }));
  card.timeEl.after(card.dismiss);
  return true;
}

document.addEventListener('keydown', (event) => {
  if (event.defaultPrevented || event.isComposing) return;
  // Alt+↓ / Alt+↑ open the next or the previous question, from anywhere but the two
  // controls where those keys already mean something (a drop-down opens; a text area
  // moves by paragraph on macOS).
  if (event.altKey && !event.ctrlKey && !event.metaKey && (event.key === 'ArrowDown' || event.key === 'ArrowUp')) {
    const tag = event.target?.tagName?.toLowerCase();
    if (tag === 'select' || tag === 'textarea') return;
    event.preventDefault();
    step(event.key === 'ArrowDown' ? 1 : -1);
    return;
  }
  // Number keys (and Y/N) pick in the open card even when focus is outside every card —
  // but not from a control of its own there (Enter on the Recent list's header opens the
  // list; it must not answer the open card).
  if ($('queue').contains(event.target)) return;
  if (event.target?.closest?.('button, a, summary, input, select, textarea')) return;
  const active = cards.get(activeId);
  if (active && !active.expired && !active.broken && !active.question.closed) active.view.handleKey(event);
});

document.addEventListener('pointerdown', () => delete document.body.dataset.focusRing, true);

$('prev').addEventListener('click', () => step(-1));
$('next').addEventListener('click', () => step(1));

document.addEventListener('visibilitychange', () => {
  send({ type: 'visibility', visible: document.visibilityState === 'visible' });
});

// Before the page goes away, save what is typed now rather than in 250 ms.
window.addEventListener('pagehide', () => {
  for (const [id, card] of cards) {
    if (card.draftTimer) send({ type: 'draft', id, draft: card.view.draft() });
  }
});

$('retry').addEventListener('click', () => send({ type: 'retry' }));

setInterval(() => {
  if (state) for (const card of cards.values()) updateCard(card);
}, 1000);

translatePage();
connectWorker();
loadSoundSetting();
