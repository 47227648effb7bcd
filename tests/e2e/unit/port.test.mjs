import { test } from 'node:test';
import assert from 'node:assert/strict';
import { postIfOpen } from '../../../extension/lib/port.js';

test('a message reaches an open port', () => {
  const sent = [];
  assert.equal(postIfOpen({ postMessage: (m) => sent.push(m) }, { type: 'tick' }), true);
  assert.deepEqual(sent, [{ type: 'tick' }]);
});

test('no port, or one that has closed, says false instead of throwing', () => {
  assert.equal(postIfOpen(null, { type: 'tick' }), false);
  const closed = {
    postMessage() {
      throw new Error('Attempting to use a disconnected port object');
    },
  };
  assert.equal(postIfOpen(closed, { type: 'tick' }), false);
});
