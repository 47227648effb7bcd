// The JS twin of src/form/mod.rs judged against the fixture the Rust side is tested with
// (`the_shared_fixture_of_forms_and_answers_is_judged_as_it_says` in src/form/mod.rs): the
// panel and the agent side apply the same rules, with the same messages.
import './english.mjs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sharedFixture } from './forms.mjs';
import { checkAnswer, checkPermissionForm, validateRaw } from '../../../extension/lib/formmodel.js';

const { cases, permission_forms: permissionForms } = sharedFixture();

test('the shared fixture of forms and answers is judged as it says', () => {
  assert.ok(cases.length > 50, 'the fixture lost its cases');
  const wrong = [];
  for (const c of cases) {
    const verdict = checkAnswer(c.form, c.answer.values, c.answer.note ?? null);
    const fits = c.valid
      ? verdict.ok
      : !verdict.ok && verdict.field === (c.field ?? null) && (c.message === undefined || verdict.message === c.message);
    if (!fits) wrong.push(`${c.name}: got ${JSON.stringify(verdict)}`);
  }
  assert.deepEqual(wrong, []);
});

test('the fixture covers every field type, and valid and invalid answers of each', () => {
  const seen = new Map();
  for (const c of cases) {
    for (const field of c.form.fields) {
      const v = seen.get(field.type) ?? new Set();
      if (c.valid || c.field === field.name) v.add(c.valid);
      seen.set(field.type, v);
    }
  }
  for (const [type, verdicts] of seen) assert.deepEqual([...verdicts].sort(), [false, true], type);
  assert.equal(seen.size, 11);
});

test('ask_choice with free text: nothing chosen and no note is stopped in the panel, at the choice', () => {
  const form = cases.find((c) => c.name.includes('issue 15.1')).form;
  const none = validateRaw(form, { choice: null }, '');
  assert.equal(none.ok, false);
  assert.equal(none.errors.choice, 'Choose an option, or add a note.');
  assert.equal(validateRaw(form, { choice: null }, 'Neither; use files').ok, true);
  assert.equal(validateRaw(form, { choice: 'SQLite' }, '').ok, true);
});

test("the shared fixture's permission forms are judged as Form::validate judges them", () => {
  assert.ok(permissionForms.length >= 10, 'the fixture lost its permission forms');
  assert.ok(permissionForms.some((c) => c.valid) && permissionForms.some((c) => !c.valid));
  const wrong = [];
  for (const c of permissionForms) {
    const verdict = checkPermissionForm(c.form);
    const fits = c.valid
      ? verdict.ok
      : !verdict.ok && verdict.field === (c.field ?? null) && verdict.message === c.message;
    if (!fits) wrong.push(`${c.name}: got ${JSON.stringify(verdict)}`);
  }
  assert.deepEqual(wrong, []);
});
