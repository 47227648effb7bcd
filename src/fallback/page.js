// The loopback form's page script (served by `him` at /q/<token>/page.js; DESIGN.md §6).
// It renders the question with the extension's own lib/form.js, so the form looks, checks
// and answers to the keyboard as in the side panel, and posts the answer once as JSON
// {action, values, note} to the page's own URL. It loads nothing else: the question comes
// inline as JSON data, and the Content-Security-Policy allows no other origin.
//
// Like a panel card it says who asks and counts down the time left (from the remaining
// milliseconds the server put in the page, counted from this page's load, so the person's
// clock need not agree with him's). After an answer it replaces the form with what was
// sent, in text only and never a password; a reload finds the port closed soon after, so
// that state says plainly that the tab can go.
//
// Its words, and lib's, are the extension's (_locales): him picks the file for the
// request's Accept-Language and puts it in the page as JSON data, for useMessages() to
// take before anything is drawn.

import { renderForm } from './form.js';
import { optionsOf } from './formmodel.js';
import { t, useMessages } from './i18n.js';
import { plainText } from './markdown.js';
import { agentLabel, formatTimeLeft } from './queue.js';

useMessages(JSON.parse(document.getElementById('him-messages').textContent));
const main = document.getElementById('him-main');
const question = JSON.parse(document.getElementById('him-question').textContent);
const { form } = question;
const loadedAt = Date.now();
const deadline = typeof question.remaining_ms === 'number' ? loadedAt + question.remaining_ms : null;
const asker = agentLabel(question.agent);

// Who asks, as the panel's card head says it: "claude-code · him".
document.getElementById('him-asker').textContent = t('loopbackAsks', [asker, question.project].filter(Boolean).join(' · '));

const view = renderForm(document, form, {
  idPrefix: 'him',
  onSubmit: ({ values, note }) => send({ action: 'submit', values, note: note || undefined }),
  onDecline: () => send({ action: 'decline', note: view.note() || undefined }),
});
main.replaceChildren(view.element);
view.focusFirst();

// Number keys pick an option even when focus is on the page rather than in the form.
document.addEventListener('keydown', (event) => {
  if (!view.element.contains(event.target)) view.handleKey(event);
});

let sent = false;
let done = false;

// ---- the time left ----

/** Under this, the time left is marked urgent (the panel's threshold). */
const URGENT_MS = 60_000;
const timeEl = document.getElementById('him-time');
let ticker = null;

function tick() {
  if (done || deadline === null) return;
  const left = Math.max(0, deadline - Date.now());
  timeEl.textContent = t('timeLeft', formatTimeLeft(left));
  timeEl.setAttribute('aria-label', t('timeLeftToAnswer', formatTimeLeft(left)));
  if (left < URGENT_MS) timeEl.dataset.urgent = '';
  if (left === 0 && !sent) {
    // him closes the port at the deadline too; say so before a submit finds it closed.
    finish(t('loopbackTimedOut'), 'timeout');
    view.setDisabled(true);
  }
}

if (deadline !== null) {
  tick();
  ticker = setInterval(tick, 1000);
} else {
  timeEl.remove();
}

// ---- sending ----

// A post that never reached him (connection refused or reset) or found every connection
// slot taken (503) is tried again before the page gives up: a burst of other connections
// to the port must not cost the person their answer. Nothing is taken twice: once an
// answer is taken every later post is told 410.
const RETRY_DELAYS_MS = [200, 500, 1000, 2000];

async function post(answer) {
  for (let attempt = 0; ; attempt++) {
    let response = null;
    try {
      response = await fetch(window.location.pathname, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(answer),
        cache: 'no-store',
        credentials: 'omit',
      });
    } catch {
      // Unreachable: retried below, then reported as closed.
    }
    const retriable = response === null || response.status === 503;
    if (!retriable || attempt >= RETRY_DELAYS_MS.length) return response;
    view.setStatus(t('sendingAgain'));
    await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS_MS[attempt]));
  }
}

async function send(answer) {
  if (sent || done) return;
  sent = true;
  view.setDisabled(true);
  view.setStatus(t('sending'));
  const response = await post(answer);
  if (response === null) {
    finish(t('loopbackNoLongerOpen'));
    return;
  }
  const body = await response.json().catch(() => ({}));
  if (response.ok && (body.status === 'answered' || body.status === 'declined')) {
    showSent(answer, body.status);
  } else if (response.ok) {
    // him's `message` is English for any client; the page says it in the person's words,
    // with the agent side's reason (English, as the agent got it) when there is one.
    const reason = typeof body.reason === 'string' ? body.reason : null;
    finish(body.status === 'invalid_response' && reason ? t('loopbackDiscarded', reason) : t('loopbackNotTaken'), body.status);
  } else if (response.status === 410) {
    finish(t('loopbackAlreadyAnswered'));
  } else {
    // Nothing was taken: let the person try again.
    sent = false;
    view.setDisabled(false);
    view.setStatus(typeof body.message === 'string' ? t('notSentBecause', body.message) : t('notSentStatus', response.status));
  }
}

function finish(message, status) {
  done = true;
  if (ticker !== null) clearInterval(ticker);
  timeEl.textContent = '';
  view.setStatus(message);
  document.body.dataset.himDone = status || 'closed';
  forgetTheForm();
}

// ---- after the answer ----

/** What a value reads as in the summary; a password never reaches here. */
function shown(field, value) {
  const options = optionsOf(field);
  const label = (v) => {
    const option = options.find((o) => (typeof o === 'object' && o !== null ? (o.value ?? o.label) : o) === v);
    if (option === undefined) return String(v);
    return typeof option === 'object' ? String(option.label) : String(option);
  };
  if (Array.isArray(value)) return value.length ? value.map(label).join(', ') : t('noneChosen');
  if (field.type === 'checkbox') return value ? t('yes') : t('no');
  return label(value);
}

/** The form gives way to a summary of what was sent: text only, passwords as dots. */
function showSent(answer, status) {
  const section = document.createElement('section');
  section.className = 'sent';
  section.setAttribute('role', 'status');
  const heading = document.createElement('h2');
  heading.textContent = status === 'declined' ? t('loopbackDeclinedHeading', asker) : t('loopbackSentHeading', asker);
  section.append(heading);

  const list = document.createElement('dl');
  const row = (term, detail) => {
    const dt = document.createElement('dt');
    dt.textContent = term;
    const dd = document.createElement('dd');
    dd.textContent = detail;
    list.append(dt, dd);
  };
  if (status === 'answered') {
    for (const field of form.fields ?? []) {
      if (!answer.values || !Object.hasOwn(answer.values, field.name)) continue;
      // Not even its length: a summary on screen is one more place a secret could be read.
      const value = field.type === 'password' ? '••••' : shown(field, answer.values[field.name]);
      // The label is Markdown: the summary is text, so it reads as the card read it.
      row(plainText(field.label) || field.name, value);
    }
  }
  if (answer.note) row(t('noteTerm'), answer.note);
  if (list.childElementCount) section.append(list);

  const closing = document.createElement('p');
  closing.textContent = status === 'declined' ? t('loopbackDeclinedClosing') : t('loopbackSentClosing');
  section.append(closing);

  done = true;
  if (ticker !== null) clearInterval(ticker);
  timeEl.textContent = '';
  main.replaceChildren(section);
  document.body.dataset.himDone = status;
  forgetTheForm();
}

// The port closes with the answer, so a reload would find a browser error; marking the
// history entry answered at least keeps a back/forward restore (bfcache) of this state
// from showing the form again, and the document title says it is done in the tab strip.
function forgetTheForm() {
  try {
    history.replaceState({ him: 'done' }, '');
  } catch {
    // Only the state is lost; the page already says what happened.
  }
  document.title = t('loopbackDoneTitle');
}
