// lib/permission.js in jsdom: it draws a permission card only for a form of the permission
// shape that src/form.rs enforces (the fixture's permission_forms), and throws otherwise, so
// the panel shows its card that cannot be drawn, with no Allow button.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { renderPermission } from '../../../extension/lib/permission.js';
import { freshDocument } from './dom.mjs';

const { permission_forms: cases } = JSON.parse(readFileSync(new URL('../../fixtures/forms.json', import.meta.url), 'utf8'));
const held = cases.filter((c) => c.form.permission);

test('a card is drawn, with Allow, exactly for the permission forms the agent side accepts', () => {
  assert.ok(held.some((c) => c.valid) && held.some((c) => !c.valid));
  for (const c of held) {
    const { document } = freshDocument();
    if (c.valid) {
      const view = renderPermission(document, c.form);
      assert.ok(view.element.querySelector('button.him-allow'), c.name);
      assert.equal(view.element.querySelector('.him-perm-code')?.textContent, c.form.permission.input.command, c.name);
    } else {
      assert.throws(() => renderPermission(document, c.form), { message: `not a permission prompt him can show: ${c.message}` }, c.name);
    }
  }
});
