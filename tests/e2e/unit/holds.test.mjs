import { test } from 'node:test';
import assert from 'node:assert/strict';
import { holdControls } from '../../../extension/lib/holds.js';

test('controls work again only once nothing holds them, whatever the order', () => {
  const seen = [];
  const view = holdControls((held) => seen.push(held));
  view.setDisabled(true);
  view.setSendable(false);
  view.setDisabled(false);
  assert.equal(seen.at(-1), true, 'still no host');
  view.setReadOnly(true);
  view.setSendable(true);
  assert.equal(seen.at(-1), true, 'still closed');
  view.setReadOnly(false);
  assert.equal(seen.at(-1), false);
});
