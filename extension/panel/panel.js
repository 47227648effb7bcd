// The side panel (Chrome side_panel, Firefox sidebar_action; also works opened as a tab).
// It owns no state of record: the worker pushes the whole queue after every change and the
// panel draws it, keeping each question's form element alive across pushes so the person's
// cursor and typing are never disturbed. Drafts and answers go back to the worker; every
// message on that port is listed in extension/README.md ("Messages between the panel and
// the worker").

import { renderForm } from '../lib/form.js';
import { isPermissionForm, renderPermission } from '../lib/permission.js';
import { agentLabel, formatTimeLeft, timeLeft } from '../lib/queue.js';
import { postIfOpen } from '../lib/port.js';

const api = globalThis.browser ?? globalThis.chrome;
const $ = (id) => document.getElementById(id);

const DRAFT_DELAY_MS = 250;
/** Under this, the time left turns red. */
const URGENT_MS = 30_000;

let port = null;
let state = null;
let reconnected = false;
/** Question id → {element, view, timeEl, question, draftTimer, expired, sending, dismiss}. */
const cards = new Map();
let cardCounter = 0;
let noticeKeys = '';

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
        send({ type: 'draft', id, draft: card.view.draft() });
        if (card.sending && !card.expired) {
          // The worker restarted with this answer in flight and still lists the question,
          // so the answer did not get through.
          card.sending = false;
          card.view.setDisabled(false);
          card.view.setStatus('The connection was interrupted before your answer was sent; send it again.');
        }
      }
    }
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
}

function renderLink(host) {
  const link = $('link');
  link.dataset.status = host.status;
  link.textContent =
    host.status === 'connected'
      ? `Connected${host.version ? ` to him ${host.version}` : ''}`
      : host.status === 'connecting'
        ? 'Connecting to him…'
        : 'Not connected';
  const problem = $('problem');
  problem.hidden = host.status !== 'error' || !host.problem;
  if (problem.hidden) return;
  $('problem-title').textContent = host.problem.summary;
  $('problem-said').textContent = host.problem.source === 'host' ? 'The host said: ' : 'The browser said: ';
  $('problem-message').textContent = host.problem.message;
  const list = $('problem-commands');
  list.replaceChildren(
    ...host.problem.commands.map((command) => {
      const li = document.createElement('li');
      const code = document.createElement('code');
      code.textContent = command;
      const copy = document.createElement('button');
      copy.type = 'button';
      copy.textContent = 'Copy';
      copy.setAttribute('aria-label', `Copy ${command}`);
      copy.addEventListener('click', () => {
        navigator.clipboard?.writeText(command).then(
          () => (copy.textContent = 'Copied'),
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
  $('notices').replaceChildren(
    ...notices.map((notice) => {
      const el = document.createElement('div');
      el.className = 'notice';
      el.dataset.kind = notice.kind;
      const p = document.createElement('p');
      const what = document.createElement('span');
      what.className = 'what';
      what.textContent = `“${notice.title}”`;
      p.append(what, document.createTextNode(` (${notice.agent}): ${notice.text}`));
      const dismiss = document.createElement('button');
      dismiss.type = 'button';
      dismiss.textContent = '×';
      dismiss.setAttribute('aria-label', 'Dismiss notice');
      dismiss.addEventListener('click', () => send({ type: 'dismiss', key: notice.key }));
      el.append(p, dismiss);
      return el;
    }),
  );
}

function renderQueue(questions) {
  const ids = new Set(questions.map((q) => q.id));
  let changed = false;
  for (const [id, card] of cards) {
    if (!ids.has(id)) {
      clearTimeout(card.draftTimer);
      card.element.remove();
      cards.delete(id);
      changed = true;
    }
  }
  const main = $('queue');
  questions.forEach((question, i) => {
    let card = cards.get(question.id);
    if (!card) {
      card = createCard(question);
      cards.set(question.id, card);
      changed = true;
    }
    card.question = question;
    // Keep the cards in queue order (oldest first). Move one only when it is out of place:
    // moving an element takes the focus out of it.
    if (main.children[i] !== card.element) main.insertBefore(card.element, main.children[i] ?? null);
    updateCard(card);
  });
  $('empty').hidden = questions.length > 0;
  // When a question arrives or leaves and the focus is not in another one, the oldest
  // question gets it: answer one, and the keyboard is already in the next. A question
  // never takes the focus from one the person is in.
  if (changed && !main.contains(document.activeElement)) {
    cards.values().next().value?.view.focusFirst();
  }
}

function createCard(question) {
  const prefix = `q${++cardCounter}`;
  const element = document.createElement('article');
  element.className = 'card';
  element.setAttribute('aria-labelledby', `${prefix}-title`);

  const head = document.createElement('div');
  head.className = 'card-head';
  const who = document.createElement('span');
  who.className = 'who';
  who.textContent = [agentLabel(question.agent), question.project].filter(Boolean).join(' · ');
  const timeEl = document.createElement('span');
  timeEl.className = 'time';
  timeEl.setAttribute('role', 'timer');
  head.append(who, timeEl);

  const card = { element, timeEl, question, draftTimer: null, expired: false, sending: false, view: null };
  const answer = (action, extra = {}) => {
    if (card.expired) return;
    card.sending = true;
    card.view.setDisabled(true);
    card.view.setStatus(action === 'submit' ? 'Sending…' : 'Declining…');
    clearTimeout(card.draftTimer);
    if (!send({ type: 'answer', id: question.id, action, ...extra })) {
      card.sending = false;
      card.view.setDisabled(false);
      card.view.setStatus('Not connected to the extension; try again in a moment.');
    }
  };
  // An agent's permission prompt gets its own card, where only a click allows.
  const render = isPermissionForm(question.form) ? renderPermission : renderForm;
  card.view = render(document, question.form, {
    idPrefix: prefix,
    draft: question.draft ?? undefined,
    onChange(draft) {
      clearTimeout(card.draftTimer);
      card.draftTimer = setTimeout(() => send({ type: 'draft', id: question.id, draft }), DRAFT_DELAY_MS);
    },
    onSubmit({ values, note }) {
      answer('submit', { values, note });
    },
    onDecline() {
      // A note written before declining says why; the agent gets it with the decline.
      answer('decline', { note: card.view.note() });
    },
  });
  element.append(head, card.view.element);
  return card;
}

function updateCard(card) {
  if (showUndelivered(card)) return;
  const left = timeLeft(card.question, Date.now());
  card.timeEl.textContent = left === null ? '' : `${formatTimeLeft(left)} left`;
  card.timeEl.setAttribute('aria-label', left === null ? 'No time limit' : `${formatTimeLeft(left)} left to answer`);
  if (left !== null && left < URGENT_MS) card.timeEl.dataset.urgent = '';
  if (left === 0 && !card.expired) {
    // It can no longer be answered; the worker removes it and leaves a notice.
    card.expired = true;
    card.element.dataset.expired = '';
    card.view.setDisabled(true);
    card.view.setStatus('Timed out.');
    send({ type: 'tick' });
    return;
  }
  if (card.expired) return;
  const waiting = card.question.unconfirmed_since_ms !== null || state.host.status !== 'connected';
  if (waiting) card.view.setStatus('Reconnecting to the agent… your answer is kept.');
  else if (card.waiting) card.view.setStatus('');
  card.waiting = waiting;
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
  card.view.setStatus(`Your answer did not reach the agent: ${undelivered.message.replace(/\.?$/, '.')}`);
  card.dismiss = document.createElement('button');
  card.dismiss.type = 'button';
  card.dismiss.className = 'discard';
  card.dismiss.textContent = 'Dismiss';
  card.dismiss.setAttribute('aria-label', 'Dismiss this answer');
  card.dismiss.addEventListener('click', () => send({ type: 'discard', id: card.question.id }));
  card.timeEl.after(card.dismiss);
  return true;
}

// Number keys pick options even when focus is outside any form (e.g. on the page itself).
document.addEventListener('keydown', (event) => {
  if (event.defaultPrevented || $('queue').contains(event.target)) return;
  const first = [...cards.values()].find((c) => !c.expired);
  first?.view.handleKey(event);
});

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

connectWorker();
