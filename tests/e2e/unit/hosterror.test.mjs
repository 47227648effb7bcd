import './english.mjs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffMs, describeHostProblem, sendBlockedReason } from '../../../extension/lib/hosterror.js';

// The messages are Chromium's own (FACTS.md), and Firefox's for a missing host.
test("each browser error says what it means and what to run", () => {
  const id = 'mephldgjjmdajmfkonfbblipccnbagig';
  const notFound = describeHostProblem('Specified native messaging host not found.', { extensionId: id });
  assert.deepEqual(notFound.commands, ['him install', 'him doctor']);
  assert.equal(notFound.message, 'Specified native messaging host not found.');
  assert.deepEqual(describeHostProblem('No such native application dev.him.host').commands, ['him install', 'him doctor']);
  assert.deepEqual(
    describeHostProblem('Access to the specified native messaging host is forbidden.', { extensionId: id }).commands,
    [`him install --extension-id ${id}`, 'him doctor'],
  );
  assert.deepEqual(describeHostProblem('Native host has exited.').commands, ['him doctor', 'him install']);
  assert.deepEqual(
    describeHostProblem('Error when communicating with the native messaging host.').commands,
    ['him doctor', 'him install'],
  );
  assert.equal(notFound.source, 'browser');
  const own = describeHostProblem('him host: /run/him is writable by group or others', { fromHost: true });
  assert.deepEqual(own, {
    summary: 'The him host could not start.',
    message: 'him host: /run/him is writable by group or others',
    source: 'host',
    commands: ['him doctor'],
  });
  const unknown = describeHostProblem(null);
  assert.deepEqual(unknown.commands, ['him doctor']);
  assert.ok(unknown.message);
});

test('reconnect backoff doubles from half a second and stops at 30 s', () => {
  assert.deepEqual([0, 1, 2, 3].map(backoffMs), [500, 1000, 2000, 4000]);
  assert.equal(backoffMs(20), 30_000);
});

test('a card says the him host is missing, and the fix, when that is why its answer cannot be sent (issue 15.5)', () => {
  const missing = describeHostProblem('Specified native messaging host not found.');
  const reason = sendBlockedReason({ status: 'error', problem: missing }, { unconfirmed_since_ms: null });
  assert.equal(
    reason,
    'Cannot send: the him host is not connected. him is not installed for this browser. Run him install (see above), then Try again; your answer is kept.',
  );
  assert.doesNotMatch(reason, /agent/, 'the agent is not what is missing');
  assert.match(sendBlockedReason({ status: 'connecting', problem: null }, { unconfirmed_since_ms: null }), /^Connecting to the him host/);
  const connected = { status: 'connected', problem: null };
  assert.match(sendBlockedReason(connected, { unconfirmed_since_ms: 5 }), /^Waiting for the agent to reconnect/);
  assert.equal(sendBlockedReason(connected, { unconfirmed_since_ms: null }), null);
});

test('a host that had started and then stopped is not an installation problem: no advice to reinstall (issue 22.11)', () => {
  for (const said of ['Native host has exited.', 'Error when communicating with the native messaging host.', null]) {
    const crashed = describeHostProblem(said, { saidHello: true });
    assert.deepEqual(crashed.commands, ['him doctor'], String(said));
    assert.match(crashed.summary, /after it had started/);
    assert.doesNotMatch(crashed.summary, /Reinstalling often/);
    assert.ok(crashed.message);
  }
  // One that never said hello may well be a moved binary.
  assert.deepEqual(describeHostProblem('Native host has exited.', { saidHello: false }).commands, ['him doctor', 'him install']);
});
