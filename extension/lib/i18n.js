// The extension's own words in the person's language.
//
// They live in extension/_locales/<locale>/messages.json, the WebExtensions convention, so
// Chrome and Firefox pick the language from the browser's own (chrome.i18n, browser.i18n).
// The loopback page has no extension API: him embeds the same files, picks one by the
// request's Accept-Language and the page hands it to useMessages(); Node tests hand it the
// English file the same way.
//
// A message's {1}, {2}… are filled from t()'s arguments in order. They are not Chrome's $1
// placeholders because the loopback page and the tests fill them without chrome.i18n, and
// getMessage returns braces untouched. A "$" in a message is written "$$" for Chrome.

let table = null;

/** Use this messages.json object instead of the browser's i18n API. */
export function useMessages(messages) {
  table = messages && typeof messages === 'object' ? messages : null;
}

function fromBrowser(key) {
  const api = globalThis.browser?.i18n ?? globalThis.chrome?.i18n;
  if (!api || typeof api.getMessage !== 'function') return '';
  try {
    return api.getMessage(key) || '';
  } catch {
    return '';
  }
}

function fromTable(key) {
  const message = table?.[key]?.message;
  // The table is the raw file: undo Chrome's "$$" escape as getMessage would.
  return typeof message === 'string' ? message.replace(/\$\$/g, '$') : '';
}

/**
 * The message `key` with {1}, {2}… filled from `subs`. A key with no message comes back
 * as itself, so a missing string shows where it is missing (and the locale test fails).
 */
export function t(key, ...subs) {
  const template = (table ? fromTable(key) : fromBrowser(key)) || key;
  return template.replace(/\{([1-9])\}/g, (whole, n) => {
    const sub = subs[Number(n) - 1];
    return sub === undefined ? whole : String(sub);
  });
}
