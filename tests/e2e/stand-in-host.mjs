// A native messaging host that is not him, for chromium.test.mjs: it sends the extension
// what a host that checks nothing could relay, which the real host no longer lets through
// (issue 14.4). Chromium starts it from a host manifest, through a small shell script that
// passes two paths:
//
//   node stand-in-host.mjs ASKS LOG
//
// ASKS is a JSON array of `ask` messages, sent in order once the extension says `ready`.
// LOG gets one JSON line per message the extension sends, after a first line {"pid"}.
// Frames are those of DESIGN.md §2: a u32 length in native byte order, then UTF-8 JSON.

import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { endianness } from 'node:os';

const [asksPath, logPath] = process.argv.slice(2);
const asks = JSON.parse(readFileSync(asksPath, 'utf8'));
writeFileSync(logPath, `${JSON.stringify({ pid: process.pid })}\n`);

function send(message) {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  const head = Buffer.alloc(4);
  if (endianness() === 'LE') head.writeUInt32LE(body.length);
  else head.writeUInt32BE(body.length);
  process.stdout.write(Buffer.concat([head, body]));
}

function received(message) {
  appendFileSync(logPath, `${JSON.stringify(message)}\n`);
  if (message.type === 'ready') for (const ask of asks) send(ask);
}

let pending = Buffer.alloc(0);
process.stdin.on('data', (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  while (pending.length >= 4) {
    const length = endianness() === 'LE' ? pending.readUInt32LE(0) : pending.readUInt32BE(0);
    if (pending.length < 4 + length) break;
    received(JSON.parse(pending.subarray(4, 4 + length).toString('utf8')));
    pending = pending.subarray(4 + length);
  }
});
// The browser closing the port closes stdin: then this host is done, as him's is.
process.stdin.on('end', () => process.exit(0));

send({ type: 'hello', protocol: 1, host: { version: '0.0.0-stand-in' } });
