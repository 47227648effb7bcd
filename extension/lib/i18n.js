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
  return tParts(key, ...subs.map((sub) => (sub === undefined ? sub : String(sub)))).join('');
}

/**
 * The message `key` as a list of its text pieces with `subs` in their places, unchanged:
 * for a message that holds an element (`title.append(...tParts('allowTool', codeElement))`),
 * since the words around it come in another order in another language.
 */
export function tParts(key, ...subs) {
  const template = (table ? fromTable(key) : fromBrowser(key)) || key;
  const parts = [];
  let at = 0;
  for (const match of template.matchAll(/\{([1-9])\}/g)) {
    const sub = subs[Number(match[1]) - 1];
    if (sub === undefined) continue;
    parts.push(template.slice(at, match.index), sub);
    at = match.index + match[0].length;
  }
  parts.push(template.slice(at));
  return parts.filter((part) => part !== '');
}
