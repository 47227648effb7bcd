// Forms the form tests share.

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
