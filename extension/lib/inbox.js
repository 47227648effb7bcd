// The side panel as an inbox: which question comes first, which card is open, and how each
// agent is told apart at a glance. Pure functions over the queue's plain data (lib/queue.js);
// time is passed in, and nothing here touches the DOM or a browser API.

import { isWaiting } from './queue.js';

/**
 * Colours of the agents' marks, one pair per hue: `light` behind white text on the light
 * theme, `dark` behind near-black text on the dark theme. Each has at least 4.5:1 against
 * its text and 3:1 against the panel's surfaces (tests/e2e/unit/inbox.test.mjs checks both).
 */
export const AGENT_PALETTE = [
  { light: '#1f5fa8', dark: '#8cb8f0' },
  { light: '#8a3ab9', dark: '#d3a6f0' },
  { light: '#b4232c', dark: '#ff9e9e' },
  { light: '#1b7340', dark: '#86d9a4' },
  { light: '#9a4a00', dark: '#f5b57a' },
  { light: '#0f6e7a', dark: '#7fd6df' },
  { light: '#5b4bc4', dark: '#b7adff' },
  { light: '#a3245f', dark: '#f59ac4' },
];


/**
 * The order the panel lists questions in: those still waiting first, the soonest deadline
 * first (none last), then the oldest; then the cards nobody waits for (closed,
 * undelivered), oldest first. Ties keep the id order, so the order never flickers.
 */
export function inboxOrder(questions) {
  const deadline = (q) => (typeof q.deadline_ms === 'number' ? q.deadline_ms : Infinity);
  const received = (q) => (typeof q.received_at_ms === 'number' ? q.received_at_ms : 0);
  const byAge = (a, b) => received(a) - received(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  const waiting = questions.filter(isWaiting).sort((a, b) => deadline(a) - deadline(b) || byAge(a, b));
  const done = questions.filter((q) => !isWaiting(q)).sort(byAge);
  return [...waiting, ...done];
}

/**
 * Which question's card is open. `order` is inboxOrder's; `canOpen(q)` says whether a card
 * can be the open one (the panel excludes those it could not draw); `current` is the id open
 * now and `keep` whether to keep it (the person chose it or has typed in it): a new, more
 * urgent question then waits its turn rather than take the card away. Otherwise the most
 * urgent question that can be opened is. Returns an id, or null when none can be.
 */
export function chooseActive(order, { current = null, keep = false, canOpen = () => true } = {}) {
  const open = order.filter((q) => isWaiting(q) && canOpen(q));
  if (current !== null && keep && open.some((q) => q.id === current)) return current;
  return open[0]?.id ?? null;
}

/**
 * The id `step` places from `current` among the questions that can be opened (wrapping
 * round), for the keys and buttons that move through the inbox.
 */
export function stepActive(order, current, step, canOpen = () => true) {
  const open = order.filter((q) => isWaiting(q) && canOpen(q));
  if (open.length === 0) return null;
  const at = open.findIndex((q) => q.id === current);
  if (at === -1) return open[0].id;
  return open[(((at + step) % open.length) + open.length) % open.length].id;
}

/** A stable small hash of a string (FNV-1a, 32 bits). */
function hash(text) {
  let h = 0x811c9dc5;
  for (const ch of text) {
    h ^= ch.codePointAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The key an agent is told apart by: its label and project. */
export function agentKey(label, project) {
  return `${String(label ?? '').trim()}\u0000${project ?? ''}`;
}

/**
 * How an agent looks in the panel: its label on a colour of its own. The colour comes from
 * the label and project, so the same agent in the same project looks the same across
 * questions, reloads and browser restarts; `taken` maps the keys of the other agents on
 * screen to their hues, and a hue one of them has is passed over for the next free one
 * (eight agents at once share none). An agent already in `taken` keeps its hue.
 */
export function agentMark(label, project, taken = new Map()) {
  const name = String(label ?? '').trim();
  const key = agentKey(label, project);
  const preferred = hash(key) % AGENT_PALETTE.length;
  let hue = taken.get(key);
  if (hue === undefined) {
    const used = new Set(taken.values());
    hue = preferred;
    for (let step = 0; step < AGENT_PALETTE.length; step++) {
      const candidate = (preferred + step) % AGENT_PALETTE.length;
      if (!used.has(candidate)) {
        hue = candidate;
        break;
      }
    }
  }
  return { name: name || '?', key, hue, colours: AGENT_PALETTE[hue] };
}
