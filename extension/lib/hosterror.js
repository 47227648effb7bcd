// What to tell the person when the native host cannot be reached. The browser's own message
// (runtime.lastError in Chrome, port.error in Firefox) is shown as-is, because it is what a
// search or a bug report needs; this adds what it means and exactly what to run.
// The messages matched here are Chromium's (see FACTS.md) and Firefox's.

/**
 * @param {string|null} message the browser's error text (or, with `fromHost`, the host's
 *   own `error` message), or null when the host just closed
 * @param {{extensionId?: string, fromHost?: boolean}} ctx
 * @returns {{summary: string, message: string, source: 'browser'|'host', commands: string[]}}
 */
export function describeHostProblem(message, ctx = {}) {
  const text = String(message ?? '').trim();
  const doctor = 'him doctor';
  if (ctx.fromHost) {
    return { summary: 'The him host could not start.', message: text, source: 'host', commands: [doctor] };
  }
  return { ...fromBrowser(text, ctx), source: 'browser' };
}

function fromBrowser(text, ctx) {
  const lower = text.toLowerCase();
  const doctor = 'him doctor';
  if (lower.includes('not found') || lower.includes('no such native application')) {
    return {
      summary: 'him is not installed for this browser.',
      message: text,
      commands: ['him install', doctor],
    };
  }
  if (lower.includes('forbidden') || lower.includes('not allowed') || lower.includes('access to the specified')) {
    return {
      summary: "him's host manifest does not allow this extension.",
      message: text,
      commands: [ctx.extensionId ? `him install --extension-id ${ctx.extensionId}` : 'him install', doctor],
    };
  }
  if (lower.includes('invalid native messaging host name')) {
    return {
      summary: 'This extension asked for a host name the browser rejects.',
      message: text,
      commands: [doctor],
    };
  }
  if (lower.includes('exited') || lower.includes('failed to start') || lower.includes('error when communicating')) {
    return {
      summary: 'The him host started but stopped. Reinstalling often fixes a moved binary.',
      message: text,
      commands: [doctor, 'him install'],
    };
  }
  return {
    summary: 'The connection to the him host closed.',
    message: text || 'The host closed the connection.',
    commands: [doctor],
  };
}

/** Reconnect delay after `failures` failed attempts in a row: 0.5 s doubling to 30 s. */
export function backoffMs(failures) {
  return Math.min(30_000, 500 * 2 ** Math.max(0, failures));
}
