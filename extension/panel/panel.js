// The side panel (Chrome side_panel, Firefox sidebar_action; also works opened as a tab).
// It owns no state of record: the worker pushes the whole queue after every change and the
// panel draws it, keeping each question's form element alive across pushes so the person's
// cursor and typing are never disturbed. Drafts and answers go back to the worker; every
// message on that port is listed in extension/README.md ("Messages between the panel and
// the worker").

import { renderForm } from '../lib/form.js';
import { holdControls } from '../lib/holds.js';
import { isPermissionForm, renderPermission } from '../lib/permission.js';
import { agentLabel, formatTimeLeft, timeLeft } from '../lib/queue.js';
import { sendBlockedReason } from '../lib/hosterror.js';
import { postIfOpen } from '../lib/port.js';

const api = globalThis.browser ?? globalThis.chrome;
const $ = (id) => document.getElementById(id);

const DRAFT_DELAY_MS = 250;
/** Under this, the time left turns red. */
const URGENT_MS = 30_000;

let port = null;
let state = null;
let reconnected = false;
/**
 * Question id → {element, view, timeEl, question, draftTimer, expired, sending, dismiss, broken}.
 * `broken` cards show why their form could not be drawn instead of it (brokenView).
 */
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
        if (!card.broken) send({ type: 'draft', id, draft: card.view.draft() });
        if (card.sending && !card.expired && !card.question.judging) {
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
  // Under the banner that says him cannot be reached, "nothing to answer" would mislead.
  $('empty').hidden = questions.length > 0 || !$('problem').hidden;
  // When a question arrives or leaves and the focus is not in another one, the oldest
  // question gets it: answer one, and the keyboard is already in the next. A question
  // never takes the focus from one the person is in, and a broken card never takes it
  // (Enter there would decline a question the person could not read).
  if (changed && !main.contains(document.activeElement)) {
    [...cards.values()].find((c) => !c.broken && !c.question.closed)?.view.focusFirst();
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

  const card = {
    element,
    timeEl,
    question,
    draftTimer: null,
    expired: false,
    sending: false,
    broken: false,
    view: null,
  };
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
  element.append(head, card.view.element);
  return card;
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
  message.textContent = `This question could not be shown: ${err?.message ?? err}`;
  const actions = document.createElement('div');
  actions.className = 'him-actions';
  const decline = document.createElement('button');
  decline.type = 'button';
  decline.className = 'him-decline';
  decline.textContent = 'Decline';
  decline.addEventListener('click', onDecline);
  actions.append(decline);
  const status = document.createElement('p');
  status.className = 'him-status';
  status.setAttribute('role', 'status');
  element.append(message, actions, status);
  // Esc twice within 2 s, as on every other card (lib/form.js): a reflex Esc declines nothing.
  let escArmedUntil = 0;
  element.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && !decline.disabled) {
      event.preventDefault();
      if (Date.now() > escArmedUntil) {
        escArmedUntil = Date.now() + 2000;
        status.textContent = 'Press Esc again to decline.';
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
  };
}

function updateCard(card) {
  if (showUndelivered(card)) return;
  if (showClosed(card)) return;
  if (showVerdict(card)) return;
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
  const blocked = sendBlockedReason(state.host, card.question);
  if (blocked) card.view.setStatus(blocked);
  else if (card.waiting) card.view.setStatus('');
  // The fields stay editable, so the draft goes on; only sending waits.
  card.view.setSendable(!blocked);
  card.waiting = Boolean(blocked);
}

/**
 * Shows that this card's question ended before the person answered it (withdrawn, timed
 * out, its agent gone): the card stays where it is, greyed, says why, and keeps what was
 * typed readable and copyable until *Dismiss*. Returns whether it is closed.
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
  card.view.setStatus(`${closed.text} What you typed stays here to copy until you dismiss it.`);
  const dismiss = document.createElement('button');
  dismiss.type = 'button';
  dismiss.className = 'discard';
  dismiss.textContent = 'Dismiss';
  dismiss.setAttribute('aria-label', 'Dismiss this question');
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
    card.view.setStatus('Sending…');
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
  const first = [...cards.values()].find((c) => !c.expired && !c.broken && !c.question.closed);
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
