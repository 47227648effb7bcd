// A fresh jsdom document per test: the lib modules take `document` from their caller, so
// they run here exactly as they run in the panel and the loopback page.
import { JSDOM } from 'jsdom';

export function freshDocument() {
  const dom = new JSDOM('<!doctype html><html><body></body></html>');
  return { document: dom.window.document, window: dom.window };
}

/** Dispatch a keydown on `target` and return the event (to read defaultPrevented). */
export function key(window, target, keyName, init = {}) {
  const event = new window.KeyboardEvent('keydown', { key: keyName, bubbles: true, cancelable: true, ...init });
  target.dispatchEvent(event);
  return event;
}

/** Set a text control's value as typing would, firing input. */
export function type(window, input, value) {
  input.value = value;
  input.dispatchEvent(new window.Event('input', { bubbles: true }));
}
