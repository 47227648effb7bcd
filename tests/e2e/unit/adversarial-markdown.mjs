// Texts an agent could send to make the Markdown parser slow, each made about `n` characters
// long: constructs left open (so a parser that looks for their end rescans the rest of the
// text for each), nested as deep as they go, and block lines that made backtracking patterns
// slow. The growth test in markdown.test.mjs and the 1 MiB timing in ../markdown-1mib.mjs
// read them.

const repeated = (unit) => (n) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);

export const ADVERSARIAL = {
  'emphasis that never closes: " *a"': repeated(' *a'),
  'emphasis that never closes: "_a "': repeated('_a '),
  'strong that never closes: "**a "': repeated('**a '),
  'links that never close: "[a"': repeated('[a'),
  'links without a target: "[a]("': repeated('[a]('),
  'link titles that never close: "[a](b \\"c"': repeated('[a](b "c'),
  'autolinks that never close: "<http://a"': repeated('<http://a'),
  // After "a ", so that the first run does not open a fenced code block.
  'backtick runs, each longer than all after it, that never close': (n) => {
    let longest = 1;
    while ((longest * (longest + 3)) / 2 < n) longest++;
    let text = 'a ';
    for (let k = longest; k >= 1; k--) text += '`'.repeat(k) + 'a';
    return text;
  },
  'backtick runs of growing length': (n) => {
    let text = 'a ';
    for (let k = 1; text.length < n; k++) text += '`'.repeat(k) + 'a';
    return text;
  },
  'emphasis nested as deep as it goes': (n) => '*a '.repeat(n / 4) + '*'.repeat(n / 4),
  'brackets nested as deep as they go': (n) => '['.repeat(n / 2) + ']('.repeat(n / 4),
  'a heading line of spaces': (n) => '# a' + ' '.repeat(n) + 'b',
  'a list item of spaces before a line separator': (n) => '- ' + ' '.repeat(n) + 'a\u2028b',
};
