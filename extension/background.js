// The service worker (Chrome) / background script (Firefox): the only owner of the native
// port to the him host (DESIGN.md §1, §3).
//
//   him host ◄── connectNative('dev.him.host') ──► this worker ◄── runtime.connect('panel') ──► panel page(s)
//                                                       │
//                                                       └── storage.session: the queue, with drafts
//
// The worker keeps the queue (lib/queue.js) in storage.session, so a worker restart, a
// panel reload or a host restart loses no question and no unsent draft. A panel gets the
// whole state when it connects, then only what each change touched; storage too is written
// per question (lib/queuestore.js), so a question arriving costs the same however many wait.
// Panels send back drafts and answers.
// The messages on the panel port are listed in one place, extension/README.md ("Messages
// between the panel and the worker").
// An open native port keeps a Chrome MV3 worker alive; when the host is missing the worker
// may idle out, and the next event (a panel opening, the action clicked) starts it again.

import {
  addQuestion,
  agentLabel,
  answerAccepted,
  answerJudging,
  answerRefused,
  answerSent,
  answerUndelivered,
  dismissCard,
  dropUnconfirmed,
  emptyQueue,
  endQuestion,
  expire,
  isWaiting,
  markUnconfirmed,
  nextChangeIn,
  plainTitle,
  pruneNotices,
  pruneSent,
  setDraft,
  verdictsLost,
  waitingCount,
} from './lib/queue.js';
import { queueChanges, queueFromStorage, storageWrites, withFailedWrites } from './lib/queuestore.js';
import { backoffMs, describeHostProblem } from './lib/hosterror.js';
import { postIfOpen } from './lib/port.js';
import { t } from './lib/i18n.js';
import { markedString } from './lib/display.js';
import { addRecent, dropRecent, normaliseRecent, recentEntry } from './lib/recent.js';

const api = globalThis.browser ?? globalThis.chrome;
const HOST_NAME = 'dev.him.host';
const PROTOCOL = 1;

let queue = emptyQueue();
/** The answers sent this session, newest first (lib/recent.js); stored under `recent`. */
let recent = [];
/** What the panel shows about the link: connecting | connected | error. */
let host = { status: 'connecting', version: null, problem: null };
let port = null;
let hostReady = false;
/**
 * The host relays the agent side's verdict on each answer (its hello said `verdicts`): an
 * answer is "sent" only once accepted. An older host says nothing after an answer.
 */
let hostVerdicts = false;
/** Failed connection attempts in a row. */
let failures = 0;
/** When the current host said hello, and what it said was wrong with itself, if anything. */
let helloAt = null;
let hostSaid = null;
/**
 * A host that said hello and lived this long worked; one that dies sooner (or says what is
 * wrong first) failed, and the next attempt waits longer.
 */
const WORKED_MS = 2000;
let reconnectTimer = null;
let tickTimer = null;
/** Connected panels → whether each is visible (a visible panel makes notifications noise). */
const panels = new Map();
let lastWindowId = null;

// Every change to the queue runs through this chain, after the stored state has loaded, one
// at a time: messages from the host and the panels interleave, and storage writes are async.
let chain = api.storage.session
  .get(null)
  .then((got) => {
    queue = queueFromStorage(got);
    recent = normaliseRecent(got.recent);
  })
  .catch(() => {
    queue = emptyQueue();
  });

function update(change) {
  const run = chain.then(async () => {
    const now = Date.now();
    const before = queue;
    const recentBefore = recent;
    const result = await change(now);
    const expired = expire(queue, now);
    const dropped = dropUnconfirmed(expired.state, now);
    const noticesBefore = dropped.state.notices;
    queue = pruneSent(pruneNotices(dropped.state, now), now);
    const gone = [...expired.expired, ...dropped.dropped];
    for (const id of gone) clearNotification(id);
    const changes = queueChanges(before, queue);
    const recentChanged = recent !== recentBefore;
    if (recentChanged) {
      try {
        await api.storage.session.set({ recent });
      } catch (err) {
        console.warn('him: could not keep the recent answers in session storage:', err);
      }
    }
    if (changes || recentChanged) {
      if (changes) await store(changes);
      // A quiet change (a draft) is not redrawn, unless this pass also removed something.
      if (!result?.quiet || gone.length > 0 || queue.notices !== noticesBefore) {
        postToPanels(changesMessage(changes, recentChanged));
      }
      updateBadge();
    }
    scheduleTick(now);
    return result;
  });
  chain = run.catch(() => {});
  return run;
}

/** Writes failed by the last pass, to make with the next one (withFailedWrites). */
let failedWrites = null;

/** Writes what `changes` touched to storage.session, and what an earlier pass could not. */
async function store(changes) {
  const writes = withFailedWrites(storageWrites(changes), failedWrites, queue);
  try {
    // Removals first: what goes frees room for what comes.
    if (writes.remove.length > 0) await api.storage.session.remove(writes.remove);
    if (Object.keys(writes.set).length > 0) await api.storage.session.set(writes.set);
    failedWrites = null;
  } catch (err) {
    // Over the session-storage quota (a few very large questions): the queue in memory is
    // still right, so the panel must still be redrawn; the next pass tries these again.
    failedWrites = writes;
    console.warn('him: could not keep the queue in session storage:', err);
  }
}

function scheduleTick(now) {
  clearTimeout(tickTimer);
  const wait = nextChangeIn(queue, now);
  // A little after the moment, so the deadline has surely passed when the tick runs.
  if (wait !== null) tickTimer = setTimeout(() => update(() => {}), wait + 50);
}

// ---- the native host ----

function connect() {
  clearTimeout(reconnectTimer);
  reconnectTimer = null;
  if (port) return;
  let p;
  try {
    p = api.runtime.connectNative(HOST_NAME);
  } catch (err) {
    hostGone(String(err?.message ?? err));
    return;
  }
  port = p;
  hostReady = false;
  helloAt = null;
  hostSaid = null;
  p.onMessage.addListener((msg) => onHostMessage(p, msg));
  p.onDisconnect.addListener((closed) => {
    // Chrome reports why in runtime.lastError (reading it also keeps Chrome from logging
    // "Unchecked runtime.lastError"); Firefox puts it on the port.
    const message = api.runtime.lastError?.message ?? closed?.error?.message ?? null;
    if (port !== p) return;
    port = null;
    hostReady = false;
    hostGone(message);
  });
}

function hostGone(message) {
  const worked = helloAt !== null && hostSaid === null && Date.now() - helloAt >= WORKED_MS;
  failures = worked ? 0 : failures + 1;
  // A host that was working and went away (killed, crashed, updated) usually comes straight
  // back: show "reconnecting", not an error, unless the next attempt fails too. The host's
  // own account of what is wrong says more than the browser's "Native host has exited."
  host = {
    status: worked ? 'connecting' : 'error',
    version: null,
    problem: hostSaid
      ? describeHostProblem(hostSaid, { extensionId: api.runtime.id, fromHost: true })
      : describeHostProblem(message, { extensionId: api.runtime.id, saidHello: helloAt !== null }),
  };
  helloAt = null;
  hostSaid = null;
  broadcast();
  // An answer this host was to relay a verdict on will get none now.
  update((now) => {
    queue = verdictsLost(queue, now);
  });
  clearTimeout(reconnectTimer);
  reconnectTimer = setTimeout(connect, backoffMs(worked ? 0 : failures - 1));
}

function sendToHost(message) {
  return postIfOpen(port, message);
}

function onHostMessage(from, msg) {
  if (from !== port || !msg || typeof msg !== 'object') return;
  switch (msg.type) {
    case 'hello':
      hostReady = true;
      hostVerdicts = msg.verdicts === true;
      helloAt = Date.now();
      host = { status: 'connected', version: msg.host?.version ?? null, problem: null };
      sendToHost({
        type: 'ready',
        protocol: PROTOCOL,
        extension: { id: api.runtime.id, version: api.runtime.getManifest().version },
        browser: browserName(),
        // This worker waits for the verdict on each answer and the panel lets the person
        // correct a refused one, so agents keep waiting rather than end invalid_response.
        verdicts: true,
      });
      sendToHost({ type: 'panel', open: panels.size > 0 });
      // Questions from before this host are answerable again once their agents re-send them.
      update((now) => {
        queue = markUnconfirmed(queue, now);
      });
      broadcast();
      break;
    case 'ask':
      update((now) => {
        const result = addQuestion(queue, msg, now);
        if (result.error) {
          sendToHost({ type: 'error', id: typeof msg.id === 'string' ? msg.id : undefined, message: result.error });
          return;
        }
        queue = result.state;
        sendToHost({ type: 'shown', id: msg.id });
        if (result.added) notify(queue.questions.find((q) => q.id === msg.id));
      });
      break;
    case 'withdraw':
      update((now) => {
        // Answered on the phone (the Matrix bridge): the card says so, and by whom.
        const answered = { via: msg.answered_via, by: msg.answered_by };
        queue = endQuestion(queue, msg.id, msg.reason, now, answered).state;
        clearNotification(msg.id);
      });
      break;
    case 'accepted':
      update((now) => {
        const judged = queue.questions.find((q) => q.id === msg.id && q.judging);
        const accepted = answerAccepted(queue, msg.id, now);
        queue = accepted.state;
        if (accepted.removed && judged) remember(judged, judged.judging.answer, now);
      });
      break;
    case 'refused':
      // Not "undelivered": the agent read the answer, refused it, and still waits.
      update((now) => {
        queue = answerRefused(queue, msg.id, { field: msg.field, message: msg.message }, now).state;
      });
      break;
    case 'error':
      // With an id it is about that question: an answer the host could not deliver comes
      // back to the panel, marked so. Without one it is about the host itself (e.g. it
      // cannot listen for agents and is about to exit); keep it for the panel.
      if (typeof msg.id === 'string') {
        update((now) => {
          const back = answerUndelivered(queue, msg.id, msg.message, now);
          queue = back.state;
          if (back.restored) recent = dropRecent(recent, msg.id);
        });
      } else if (typeof msg.message === 'string') {
        hostSaid = msg.message;
      }
      break;
    default:
      // Unknown types are ignored: a newer host may say more than this extension knows.
      break;
  }
}

let browserLabel = null;
function browserName() {
  if (browserLabel) return browserLabel;
  // The most specific real brand ("Google Chrome" over "Chromium"), never the made-up
  // "Not=A?Brand" entry browsers add so that nobody parses this list naively.
  const brands = (globalThis.navigator?.userAgentData?.brands ?? []).filter((b) => !/not.a.brand/i.test(b.brand));
  const brand = brands.find((b) => b.brand !== 'Chromium') ?? brands[0];
  return brand ? `${brand.brand} ${brand.version}` : undefined;
}
if (api.runtime.getBrowserInfo) {
  api.runtime
    .getBrowserInfo()
    .then((info) => {
      browserLabel = `${info.name} ${info.version}`;
    })
    .catch(() => {});
}

// ---- the panels ----

function panelState() {
  return { type: 'state', queue, host, recent, now: Date.now() };
}

/** Keep `answer` to `question` in the session's recent answers (passwords left out). */
function remember(question, answer, now) {
  recent = addRecent(recent, recentEntry(question, answer, agentLabel(question.agent), now));
}

/**
 * What a change means for the panels: the questions it added or changed, those it removed,
 * the notices and the recent answers when they changed, and the link to the host.
 */
function changesMessage(changes, recentChanged) {
  const touched = {
    questions: changes?.questions ?? [],
    removed: changes?.removed ?? [],
    ...(changes?.notices ? { notices: changes.notices } : {}),
    ...(recentChanged ? { recent } : {}),
  };
  return { type: 'changes', ...touched, host, now: Date.now() };
}

function postToPanels(message) {
  for (const p of panels.keys()) {
    try {
      p.postMessage(message);
    } catch {
      panels.delete(p);
    }
  }
}

/** The link to the host changed: every panel hears it. */
function broadcast() {
  postToPanels(changesMessage(null, false));
}

api.runtime.onConnect.addListener((p) => {
  if (p.name !== 'panel' || p.sender?.id !== api.runtime.id) return;
  const wasEmpty = panels.size === 0;
  panels.set(p, true);
  if (wasEmpty && hostReady) sendToHost({ type: 'panel', open: true });
  // Opening the panel is a good moment to retry a host that was missing.
  if (!port) connect();
  chain.then(() => p.postMessage(panelState())).catch(() => {});
  p.onMessage.addListener((msg) => onPanelMessage(p, msg));
  p.onDisconnect.addListener(() => {
    panels.delete(p);
    if (panels.size === 0 && hostReady) sendToHost({ type: 'panel', open: false });
  });
});

function onPanelMessage(from, msg) {
  if (!msg || typeof msg !== 'object') return;
  switch (msg.type) {
    case 'visibility':
      if (panels.has(from)) panels.set(from, Boolean(msg.visible));
      if (msg.visible) clearAllNotifications();
      break;
    case 'draft':
      // Quiet: the panel that typed it already shows it, and redrawing on every keystroke
      // would fight the person's cursor.
      update(() => {
        queue = setDraft(queue, msg.id, msg.draft);
        return { quiet: true };
      });
      break;
    case 'answer':
      update((now) => answer(from, msg, now));
      break;
    case 'dismiss':
      update((now) => {
        queue = pruneNotices(queue, now, msg.key);
      });
      break;
    case 'discard':
      update(() => {
        queue = dismissCard(queue, msg.id);
      });
      break;
    case 'retry':
      failures = 0;
      connect();
      break;
    case 'tick':
      // The panel saw a deadline pass; make sure the worker did too.
      update(() => {});
      break;
    default:
      break;
  }
}

function answer(from, msg, now) {
  const question = queue.questions.find((q) => q.id === msg.id);
  const fail = (message) => {
    try {
      from.postMessage({ type: 'answer-failed', id: msg.id, message });
    } catch {
      // That panel closed; the question stays in the queue for the next one.
    }
  };
  if (!question) return fail(t('answerFailedNotWaiting'));
  if (question.judging) return fail(t('answerFailedBeingChecked'));
  if (!isWaiting(question)) return fail(t('answerFailedNobodyWaits'));
  if (!hostReady) return fail(t('answerFailedNoHost'));
  if (question.unconfirmed_since_ms !== null) return fail(t('answerFailedAgentReconnecting'));
  const action = ['submit', 'decline', 'cancel'].includes(msg.action) ? msg.action : 'cancel';
  const out = { type: 'answer', id: msg.id, action };
  if (action === 'submit') out.values = msg.values && typeof msg.values === 'object' ? msg.values : {};
  if (typeof msg.note === 'string' && msg.note.trim() !== '') out.note = msg.note;
  if (!sendToHost(out)) return fail(t('answerFailedConnectionClosed'));
  if (hostVerdicts) {
    queue = answerJudging(queue, msg.id, out, now).state;
  } else {
    queue = answerSent(queue, msg.id, out, now).state;
    remember(question, out, now);
  }
  clearNotification(msg.id);
}

// ---- badge, notifications, opening the panel ----

function updateBadge() {
  const n = waitingCount(queue);
  const action = api.action;
  if (!action) return;
  action.setBadgeText({ text: n ? String(n) : '' }).catch(() => {});
  action.setBadgeBackgroundColor?.({ color: '#3558d6' })?.catch?.(() => {});
  action
    .setTitle({ title: n === 0 ? 'him' : n === 1 ? t('badgeOneQuestion') : t('badgeQuestions', n) })
    .catch(() => {});
}

function notify(question) {
  if (!question || !api.notifications) return;
  if ([...panels.values()].some((visible) => visible)) return;
  // Names the agent's client wrote, marked as the panel draws them (lib/display.js).
  const who = markedString(agentLabel(question.agent));
  const project = question.project ? markedString(question.project) : null;
  api.notifications
    .create(`him:${question.id}`, {
      type: 'basic',
      iconUrl: api.runtime.getURL('icons/icon-128.png'),
      title: project ? t('notificationTitleInProject', who, project) : t('notificationTitle', who),
      message: plainTitle(question.form.title) || t('notificationNoTitle'),
    })
    .catch(() => {});
}

function clearNotification(id) {
  api.notifications?.clear(`him:${id}`).catch(() => {});
}

function clearAllNotifications() {
  for (const q of queue.questions) clearNotification(q.id);
}

// Opening the panel needs a user gesture, and an `await` before the call loses it, so the
// window id is tracked ahead of time and the open call is the first thing the handler does.
function openPanel() {
  let opening;
  try {
    if (api.sidePanel?.open && lastWindowId !== null) opening = api.sidePanel.open({ windowId: lastWindowId });
    else if (api.sidebarAction?.open) opening = api.sidebarAction.open();
  } catch (err) {
    opening = Promise.reject(err);
  }
  Promise.resolve(opening ?? Promise.reject(new Error('no side panel')))
    .catch(() =>
      // Where the browser refuses (no gesture, no side panel), a small window of the same
      // page still gets the person to the question.
      api.windows.create({ url: api.runtime.getURL('panel/panel.html'), type: 'popup', width: 420, height: 680 }),
    )
    .catch(() => {});
}

api.notifications?.onClicked.addListener((id) => {
  if (id.startsWith('him:')) openPanel();
});

api.windows?.onFocusChanged.addListener((id) => {
  if (id !== api.windows.WINDOW_ID_NONE) lastWindowId = id;
});
api.windows
  ?.getLastFocused()
  .then((w) => {
    lastWindowId ??= w?.id ?? null;
  })
  .catch(() => {});

if (api.sidePanel?.setPanelBehavior) {
  api.sidePanel.setPanelBehavior({ openPanelOnActionClick: true }).catch(() => {});
} else if (api.sidebarAction?.toggle) {
  api.action?.onClicked.addListener(() => api.sidebarAction.toggle());
}

// ---- start ----

api.runtime.onInstalled.addListener(() => connect());
api.runtime.onStartup?.addListener(() => connect());
connect();
update(() => {}).then(updateBadge);
