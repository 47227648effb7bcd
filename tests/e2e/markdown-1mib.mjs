// Prints how long the panel's Markdown parser takes on 1 MiB of each adversarial text (the
// largest a question can be: DESIGN.md §2), and its work counter. It prints and asserts
// nothing: the unit test checks how the work grows, this shows what it means on this machine.
//
//   node tests/e2e/markdown-1mib.mjs

import { loadavg } from 'node:os';
import { markdownWork, parseMarkdown } from '../../extension/lib/markdown.js';
import { ADVERSARIAL } from './unit/adversarial-markdown.mjs';

const MIB = 1024 * 1024;
console.log(`load average ${loadavg()[0].toFixed(2)}; 1 MiB of each, the best of 3 runs`);
for (const [name, make] of Object.entries(ADVERSARIAL)) {
  const text = make(MIB);
  let best = Infinity;
  let steps = 0;
  for (let run = 0; run < 3; run++) {
    const before = markdownWork();
    const start = performance.now();
    parseMarkdown(text);
    best = Math.min(best, performance.now() - start);
    steps = markdownWork() - before;
  }
  console.log(`${best.toFixed(1).padStart(8)} ms  ${String(steps).padStart(9)} steps  ${name}`);
}
