// A minimal agent on a host's socket, for tests that speak the protocol themselves (to see
// what the extension says to the host, or to misbehave as `him serve` never does): frames
// are a u32 native-endian length, then JSON (DESIGN.md §2).

import net from 'node:net';

export function rawAgent(socketPath) {
  const socket = net.connect(socketPath);
  const messages = [];
  const waiters = [];
  let buf = Buffer.alloc(0);
  let failed = null;
  socket.on('data', (data) => {
    buf = Buffer.concat([buf, data]);
    while (buf.length >= 4) {
      const n = buf.readUInt32LE(0);
      if (buf.length < 4 + n) break;
      messages.push(JSON.parse(buf.subarray(4, 4 + n).toString('utf8')));
      buf = buf.subarray(4 + n);
    }
    for (const w of [...waiters]) w();
  });
  // Kept for the report rather than thrown: a host that closes the link (as it does to an
  // agent that stopped reading) makes the next write fail.
  socket.on('error', (err) => {
    failed = err;
  });
  return {
    connected: new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject)),
    send(message) {
      const body = Buffer.from(JSON.stringify(message));
      const head = Buffer.alloc(4);
      head.writeUInt32LE(body.length);
      socket.write(Buffer.concat([head, body]));
    },
    /** The first message (received or yet to come) that `match` accepts. */
    next(match, ms = 10_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching message in ${JSON.stringify(messages)}${failed ? `; ${failed}` : ''}`)),
          ms,
        );
        const check = () => {
          const found = messages.find(match);
          if (!found) return;
          clearTimeout(timer);
          waiters.splice(waiters.indexOf(check), 1);
          resolve(found);
        };
        waiters.push(check);
        check();
      });
    },
    /** Stop reading: what the host sends piles up in the socket, then in the host. */
    stopReading: () => socket.pause(),
    close: () => socket.end(),
    destroy: () => socket.destroy(),
  };
}
