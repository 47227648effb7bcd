// Nothing decided unseen (issue 22; ARCHITECTURE.md, "Who can do what"). A card — a question or a
// permission request in the side panel, the loopback page's form — takes no decision, by key,
// click or Enter on a default, until it has been on screen long enough to be read: with two
// confirms waiting, a Y pressed twice must not answer the second, which was never on screen
// when the key went down; a double-click on an inbox row must not press the Allow button that
// the first click put under the pointer.
//
//   ARM_DELAY_MS        how long a card must have been on screen (the terminal prompt's
//                       src/fallback/terminal/prompts.rs holds the same number; a test
//                       checks they agree)
//   armingRule(delay)   the rule, pure, time passed in
//   watchArming(el)     the rule for an element on a page: on screen = the page visible and
//                       the element in view (IntersectionObserver); marks it `data-armed`
//                       once armed (form.css highlights a card until then); the gate
//   guardCard(root, g)  keys and clicks on `root` that would act on the card do nothing while
//                       gate `g` does not allow them
//
// Time is the page's clock, performance.now(), which event.timeStamp shares: an act counts
// at the moment it happened, not when its handler runs, so a key pressed in the task that
// drew the card (or queued while it was drawn) counts as pressed before the card was there.

/** How long a card must have been on screen before it takes a decision, in ms. */
export const ARM_DELAY_MS = 500;

/**
 * The arming rule for one card. Time counts only while the card is on screen, and only
 * unbroken: off screen (the page hidden, the card scrolled away or folded) it starts over.
 *   seen(onScreen, at)   whether the card is on screen from `at` on
 *   restart(at)          the card appeared anew (opened, moved under the pointer): count again
 *   armed(at)            whether an act at `at` may decide
 *   armsAt()             when it will be armed; null while it is not on screen
 *   pressedSince(at)     whether a press that began at `at` began after the card appeared
 */
export function armingRule(delay = ARM_DELAY_MS) {
  /** When the present unbroken stretch on screen began; null while off screen. */
  let since = null;
  return {
    seen(onScreen, at) {
      if (!onScreen) since = null;
      else if (since === null) since = at;
    },
    restart(at) {
      if (since !== null) since = at;
    },
    armed: (at) => since !== null && at >= since + delay,
    armsAt: () => (since === null ? null : since + delay),
    pressedSince: (at) => since !== null && at !== null && at > since,
  };
}

/**
 * When `event` happened, on `now`'s clock: the earlier of its time stamp and now (a page whose
 * events are stamped on another clock, as jsdom's are, then counts them as happening now).
 */
function eventTime(event, now) {
  const stamp = typeof event.timeStamp === 'number' ? event.timeStamp : Infinity;
  return Math.min(stamp, now);
}

/**
 * The arming of `element` on its page. Options: `delay` (ARM_DELAY_MS), `now` (the clock,
 * performance.now()). Returns the gate:
 *   allows(event)        whether `event` may decide: not a key held down (a repeat never
 *                        counts), and the card armed when it happened
 *   pressedAfterShown()  whether the last press (pointer, mouse or key) on the element began
 *                        after it appeared: a click on Allow needs that too
 *   restart()            the card appeared anew: the wait starts over
 *   disconnect()         the card is gone: stop watching
 * Where the page cannot tell whether an element is in view (no IntersectionObserver, as in
 * jsdom), it counts as in view.
 */
export function watchArming(element, { delay = ARM_DELAY_MS, now } = {}) {
  const doc = element.ownerDocument;
  const win = doc.defaultView;
  const clock = now ?? (() => win.performance.now());
  const rule = armingRule(delay);
  const canObserve = typeof win.IntersectionObserver === 'function';
  let inView = !canObserve;
  let timer = null;
  let lastPress = null;

  const update = (at) => {
    rule.seen(inView && doc.visibilityState !== 'hidden', at);
    win.clearTimeout(timer);
    timer = null;
    const armsAt = rule.armsAt();
    const armed = armsAt !== null && clock() >= armsAt;
    element.toggleAttribute('data-armed', armed);
    if (armsAt !== null && !armed) timer = win.setTimeout(() => update(clock()), Math.max(1, armsAt - clock()));
  };

  const observer = canObserve
    ? new win.IntersectionObserver((entries) => {
        const last = entries[entries.length - 1];
        inView = last.isIntersecting;
        // The entry's time is when the browser found the change, on the same clock.
        update(Math.min(last.time, clock()));
      })
    : null;
  observer?.observe(element);
  const onVisibility = () => update(clock());
  doc.addEventListener('visibilitychange', onVisibility);
  const onPress = (event) => {
    if (!event.repeat) lastPress = eventTime(event, clock());
  };
  for (const type of ['pointerdown', 'mousedown', 'keydown']) element.addEventListener(type, onPress, true);
  update(clock());

  return {
    allows: (event) => !event.repeat && rule.armed(eventTime(event, clock())),
    pressedAfterShown: () => rule.pressedSince(lastPress),
    restart() {
      rule.restart(clock());
      update(clock());
    },
    disconnect() {
      observer?.disconnect();
      doc.removeEventListener('visibilitychange', onVisibility);
      win.clearTimeout(timer);
    },
  };
}

/** Whether a key event's target is a control where digits and Enter are text. */
export function isTextEntry(target) {
  if (!target || !target.tagName) return false;
  const tag = target.tagName.toLowerCase();
  if (tag === 'textarea' || tag === 'select') return true;
  if (target.isContentEditable) return true;
  if (tag !== 'input') return false;
  const type = (target.getAttribute('type') || 'text').toLowerCase();
  return !['radio', 'checkbox', 'button', 'submit', 'reset'].includes(type);
}

/**
 * Whether a key would act on a card — answer, decline, press a button, pick an option —
 * rather than type text or move the focus (Tab, Alt+arrows between cards).
 */
export function actsOnCard(event) {
  if (event.key === 'Enter' || event.key === 'Escape') return true;
  if (isTextEntry(event.target) || event.ctrlKey || event.metaKey || event.altKey) return false;
  return typeof event.key === 'string' && (event.key.length === 1 || event.key.startsWith('Arrow'));
}

/**
 * Keys that act on the card and clicks anywhere in `root` do nothing while `gate` does not
 * allow them. Listening in the capture phase, before the card's own handlers, so each of them
 * can go on assuming the person has seen what they act on.
 */
export function guardCard(root, gate) {
  const refuse = (event) => {
    event.preventDefault();
    event.stopImmediatePropagation();
  };
  root.addEventListener(
    'keydown',
    (event) => {
      if (actsOnCard(event) && !gate.allows(event)) refuse(event);
    },
    true,
  );
  root.addEventListener(
    'click',
    (event) => {
      if (!gate.allows(event)) refuse(event);
    },
    true,
  );
}
