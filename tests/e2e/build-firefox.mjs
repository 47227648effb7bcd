// The Firefox add-on as him ships it: `him extension firefox DIR` writes the very build `him
// install` writes (src/install/extension.rs decides which file of extension/ goes where), so
// the tests run what people get. Needs HIM_BIN (cargo test sets it).

import { execFileSync } from 'node:child_process';

/** Write the shipped Firefox add-on into `dest`. */
export function buildFirefox(dest) {
  if (!process.env.HIM_BIN) throw new Error('HIM_BIN must name the him binary (cargo test sets it)');
  execFileSync(process.env.HIM_BIN, ['extension', 'firefox', dest], { stdio: ['ignore', 'ignore', 'inherit'] });
}
