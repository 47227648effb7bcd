// Forms the form tests share.
import { readFileSync } from 'node:fs';

export const opts = (values) => values.map((v) => ({ value: v, label: v.toUpperCase() }));

/** One field of every type, with defaults where the type allows one. */
export const EVERY_TYPE = {
  title: 'Deploy settings',
  description: 'Pick **carefully**.',
  submit_label: 'Deploy',
  allow_note: true,
  fields: [
    { name: 'who', type: 'text', label: 'Your name', required: true, placeholder: 'Ada' },
    { name: 'mail', type: 'email', label: 'Email' },
    { name: 'site', type: 'url', label: 'Site' },
    { name: 'secret', type: 'password', label: 'Token' },
    { name: 'n', type: 'number', label: 'Replicas', min: 1, max: 5, default: 2 },
    { name: 'notes', type: 'textarea', label: 'Notes', description: 'Markdown *here*' },
    { name: 'region', type: 'select', label: 'Region', options: opts(['eu', 'us']), default: 'us' },
    {
      name: 'size',
      type: 'radio',
      label: 'Size',
      required: true,
      options: [
        { value: 's', label: 'Small' },
        { value: 'm', label: 'Medium', recommended: true, description: 'Most *teams*' },
      ],
    },
    { name: 'agree', type: 'checkbox', label: 'I agree' },
    { name: 'go', type: 'confirm', label: 'Go now?', default: true },
    { name: 'tags', type: 'multi_select', label: 'Tags', min: 1, max: 2, options: opts(['a', 'b', 'c']) },
  ],
};

/**
 * The shared fixture (tests/fixtures/forms.json), its long texts written out: the fixture
 * writes one as {"repeat": text, "times": n} (`expand_repeats` in src/form/mod.rs).
 */
export function sharedFixture() {
  const expand = (value) => {
    if (Array.isArray(value)) return value.map(expand);
    if (value && typeof value === 'object') {
      const keys = Object.keys(value);
      if (keys.length === 2 && typeof value.repeat === 'string' && Number.isInteger(value.times)) return value.repeat.repeat(value.times);
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v)]));
    }
    return value;
  };
  return expand(JSON.parse(readFileSync(new URL('../../fixtures/forms.json', import.meta.url), 'utf8')));
}
