// What to tell the person when the native host cannot be reached. The browser's own message
// (runtime.lastError in Chrome, port.error in Firefox) is shown as-is, because it is what a
// search or a bug report needs; this adds what it means and exactly what to run.
// The messages matched here are Chromium's (see FACTS.md) and Firefox's, which are English
// whatever the browser's language; what this adds is in the person's (./i18n.js).

import { t } from './i18n.js';

/**
 * @param {string|null} message the browser's error text (or, with `fromHost`, the host's
 *   own `error` message), or null when the host just closed
 * @param {{extensionId?: string, fromHost?: boolean, saidHello?: boolean}} ctx `saidHello`: the
 *   host had started and said hello before the link closed
 * @returns {{summary: string, message: string, source: 'browser'|'host', commands: string[]}}
 */
export function describeHostProblem(message, ctx = {}) {
  const text = String(message ?? '').trim();
  const doctor = 'him doctor';
  if (ctx.fromHost) {
    return { summary: t('hostCouldNotStart'), message: text, source: 'host', commands: [doctor] };
  }
  return { ...fromBrowser(text, ctx), source: 'browser' };
}

function fromBrowser(text, ctx) {
  const lower = text.toLowerCase();
  const doctor = 'him doctor';
  if (ctx.saidHello) {
    // It ran, so it is installed and the browser may start it: it crashed or was killed
    // ("Native host has exited."). Reinstalling would not help; a new host is started.
    return { summary: t('hostCrashed'), message: text || t('hostClosedConnection'), commands: [doctor] };
  }
  if (lower.includes('not found') || lower.includes('no such native application')) {
    return {
      summary: t('hostNotInstalled'),
      message: text,
      commands: ['him install', doctor],
    };
  }
  if (lower.includes('forbidden') || lower.includes('not allowed') || lower.includes('access to the specified')) {
    return {
      summary: t('hostForbidsExtension'),
      message: text,
      commands: [ctx.extensionId ? `him install --extension-id ${ctx.extensionId}` : 'him install', doctor],
    };
  }
  if (lower.includes('invalid native messaging host name')) {
    return {
      summary: t('hostNameRejected'),
      message: text,
      commands: [doctor],
    };
  }
  if (lower.includes('exited') || lower.includes('failed to start') || lower.includes('error when communicating')) {
    return {
      summary: t('hostStopped'),
      message: text,
      commands: [doctor, 'him install'],
    };
  }
  return {
    summary: t('hostConnectionClosed'),
    message: text || t('hostClosedConnection'),
    commands: [doctor],
  };
}

/**
 * Why an answer to `question` cannot be sent now, for its card, or null when it can: the
 * browser's link to the him host is down (the host is missing, not the agent), still being
 * made, or up while the question's agent has yet to ask it again of a new host.
 * @param {{status: string, problem: ?{summary: string, commands: string[]}}} host
 * @param {{unconfirmed_since_ms: ?number}} question
 */
export function sendBlockedReason(host, question) {
  if (host.status === 'error') {
    const fix = host.problem?.commands?.[0];
    const then = fix ? t('sendBlockedRunFix', fix) : t('answerKept');
    return [t('sendBlockedNoHost'), host.problem?.summary, then].filter(Boolean).join(' ');
  }
  if (host.status !== 'connected') return t('sendBlockedConnecting');
  if (question.unconfirmed_since_ms !== null && question.unconfirmed_since_ms !== undefined) {
    return t('sendBlockedAgentReconnecting');
  }
  return null;
}

/** Reconnect delay after `failures` failed attempts in a row: 0.5 s doubling to 30 s. */
export function backoffMs(failures) {
  return Math.min(30_000, 500 * 2 ** Math.max(0, failures));
}
