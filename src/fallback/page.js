// The loopback form's page script (served by `him` at /q/<token>/page.js; DESIGN.md §6).
// It renders the question with the extension's own lib/form.js, so the form looks, checks
// and answers to the keyboard as in the side panel, and posts the answer once as JSON
// {action, values, note} to the page's own URL. It loads nothing else: the question comes
// inline as JSON data, and the Content-Security-Policy allows no other origin.

import { renderForm } from './form.js';

const main = document.getElementById('him-main');
const { form } = JSON.parse(document.getElementById('him-question').textContent);

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
    view.setStatus('Sending… (trying again)');
    await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS_MS[attempt]));
  }
}

async function send(answer) {
  if (sent) return;
  sent = true;
  view.setDisabled(true);
  view.setStatus('Sending…');
  const response = await post(answer);
  if (response === null) {
    finish('This question is no longer open: it was answered elsewhere, timed out, or the agent stopped waiting. You can close this tab.');
    return;
  }
  const body = await response.json().catch(() => ({}));
  if (response.ok) {
    finish(body.message || 'Sent. You can close this tab.', body.status);
  } else if (response.status === 410) {
    finish('This question was already answered. You can close this tab.');
  } else {
    // Nothing was taken: let the person try again.
    sent = false;
    view.setDisabled(false);
    view.setStatus(body.message || `Not sent (HTTP ${response.status}); try again.`);
  }
}

function finish(message, status) {
  view.setStatus(message);
  document.body.dataset.himDone = status || 'closed';
}
