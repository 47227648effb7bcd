// The person's phone in the Matrix tests: an independent Matrix client (matrix-js-sdk with its
// Rust crypto, as Element Web runs it) driven by the Rust test over JSON lines.
//
//   stdin:  {"id": n, "cmd": "...", ...}           one command a line
//   stdout: {"reply": n, "ok": true, ...}          its reply (or "ok": false, "error")
//           {"event": "timeline", ...}             every event of a joined room, decrypted
//           {"event": "joined", "room": "!…"}      a room this client joined (auto-join)
//
// Commands: register (by the homeserver's shared secret: no login needed), login, create_room,
// join, invite, send, reply, thread_reply, vote; and verification by emojis, as Element does it:
// cross_sign (this user's cross-signing keys), verify_dm / verify_device (a request to a user in
// a room, or to one device), sas_confirm / sas_mismatch (the person's verdict on the emojis),
// trust (what this phone's crypto says of a user and device). A verification's progress comes as
// events: {"event": "verification", "phase": ..., "emojis": [[emoji, name]…], "cancel": code}.
// Nothing else is printed on stdout: the SDK's own logging goes to stderr.

import { createHmac } from 'node:crypto';
import { createInterface } from 'node:readline';

// The SDK logs its every step through console; only warnings and errors are kept, unless
// PHONE_LOG=debug.
const verbose = process.env.PHONE_LOG === 'debug';
for (const level of ['log', 'info', 'warn', 'error', 'debug', 'trace']) {
  const keep = verbose || level === 'warn' || level === 'error';
  console[level] = keep
    ? (...args) => process.stderr.write(`phone: ${args.map(String).join(' ')}\n`)
    : () => {};
}
const sdk = await import('matrix-js-sdk');
const { logger } = await import('matrix-js-sdk/lib/logger.js');
logger.setLevel(process.env.PHONE_LOG || 'warn');

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

let client = null;
let autojoin = true;
const seen = new Set();

async function emitTimeline(ev, room) {
  if (seen.has(ev.getId())) return;
  seen.add(ev.getId());
  if (ev.isEncrypted()) await client.decryptEventIfNeeded(ev);
  out({
    event: 'timeline',
    room: room.roomId,
    event_id: ev.getId(),
    // The homeserver's clock (ms) when it took the event.
    ts: ev.getTs(),
    sender: ev.getSender(),
    type: ev.getType(),
    encrypted: ev.isEncrypted(),
    decryption_failure: ev.isDecryptionFailure(),
    content: ev.getOriginalContent(),
  });
}

// Resolves once a sync has brought the room as joined, and its encryption (if any) is
// configured: sending into it before that fails ("Cannot encrypt event in unconfigured room").
async function roomReady(roomId) {
  const ready = async () => {
    const room = client.getRoom(roomId);
    if (room?.getMyMembership() !== 'join') return false;
    const encrypted = room.currentState.getStateEvents('m.room.encryption', '');
    return !encrypted || (await client.getCrypto().isEncryptionEnabledInRoom(roomId));
  };
  while (!(await ready())) {
    await new Promise((resolve) => client.once(sdk.ClientEvent.Sync, resolve));
  }
}

async function register({ homeserver, secret, user, password }) {
  const url = `${homeserver}/_synapse/admin/v1/register`;
  const { nonce } = await (await fetch(url)).json();
  const mac = createHmac('sha1', secret)
    .update(`${nonce}\0${user}\0${password}\0notadmin`)
    .digest('hex');
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ nonce, username: user, password, admin: false, mac }),
  });
  const body = await res.json();
  if (!res.ok) throw new Error(`register ${user}: ${res.status} ${JSON.stringify(body)}`);
  return { user_id: body.user_id };
}

async function login({ homeserver, user, password, join = true }) {
  autojoin = join;
  const bare = sdk.createClient({ baseUrl: homeserver });
  const session = await bare.loginRequest({
    type: 'm.login.password',
    identifier: { type: 'm.id.user', user },
    password,
    initial_device_display_name: 'phone',
  });
  client = sdk.createClient({
    baseUrl: homeserver,
    accessToken: session.access_token,
    userId: session.user_id,
    deviceId: session.device_id,
  });
  await client.initRustCrypto({ useIndexedDB: false });
  client.on(sdk.RoomEvent.Timeline, (ev, room, toStart) => {
    if (toStart || !room) return;
    emitTimeline(ev, room).catch((err) => process.stderr.write(`phone: ${err}\n`));
  });
  client.on(sdk.RoomMemberEvent.Membership, (_ev, member) => {
    if (member.userId !== client.getUserId()) return;
    if (member.membership === 'invite' && autojoin) {
      client.joinRoom(member.roomId).then(
        () => roomReady(member.roomId).then(() => out({ event: 'joined', room: member.roomId })),
        (err) => process.stderr.write(`phone: cannot join ${member.roomId}: ${err}\n`),
      );
    }
  });
  const prepared = new Promise((resolve) => {
    client.on(sdk.ClientEvent.Sync, (state) => {
      if (state === 'PREPARED') resolve();
    });
  });
  await client.startClient({ initialSyncLimit: 20 });
  await prepared;
  return { user_id: session.user_id, device_id: session.device_id };
}

async function createRoom({ invite = [], encrypted = true, name }) {
  const initial_state = encrypted
    ? [{ type: 'm.room.encryption', state_key: '', content: { algorithm: 'm.megolm.v1.aes-sha2' } }]
    : [];
  const { room_id } = await client.createRoom({ invite, name, initial_state, preset: 'private_chat' });
  return { room: room_id };
}

async function send({ room, body, content }) {
  const { event_id } = await client.sendEvent(room, 'm.room.message', content ?? { msgtype: 'm.text', body });
  return { event_id };
}

async function reply({ room, to, body }) {
  return send({
    room,
    content: { msgtype: 'm.text', body, 'm.relates_to': { 'm.in_reply_to': { event_id: to } } },
  });
}

// A reply in the thread under `root`, as Element sends one (its reply fallback to `root`).
async function threadReply({ room, root, body }) {
  return send({
    room,
    content: {
      msgtype: 'm.text',
      body,
      'm.relates_to': {
        rel_type: 'm.thread',
        event_id: root,
        is_falling_back: true,
        'm.in_reply_to': { event_id: root },
      },
    },
  });
}

async function vote({ room, poll, answers }) {
  const { event_id } = await client.sendEvent(room, 'org.matrix.msc3381.poll.response', {
    'm.relates_to': { rel_type: 'm.reference', event_id: poll },
    'org.matrix.msc3381.poll.response': { answers },
  });
  return { event_id };
}

const { VerificationPhase, VerificationRequestEvent, VerifierEvent } = await import(
  'matrix-js-sdk/lib/crypto-api/index.js'
);
const phaseName = (phase) =>
  Object.keys(VerificationPhase).find((k) => VerificationPhase[k] === phase) ?? String(phase);

async function crossSign({ password }) {
  await client.getCrypto().bootstrapCrossSigning({
    authUploadDeviceSigningKeys: async (makeRequest) => {
      await makeRequest({
        type: 'm.login.password',
        identifier: { type: 'm.id.user', user: client.getUserId() },
        password,
      });
    },
  });
  return {};
}

// The verification under way (one at a time, as on a phone) and its SAS callbacks.
let sasCallbacks = null;

// Follows `request`: once the bot is ready, starts the emoji comparison, and reports each
// phase, the emojis and the end.
function follow(request) {
  let started = false;
  const report = () => {
    out({
      event: 'verification',
      phase: phaseName(request.phase),
      cancel: request.cancellationCode ?? null,
    });
    if (request.phase === VerificationPhase.Ready && !started) {
      started = true;
      request.startVerification('m.sas.v1').then((verifier) => {
        verifier.on(VerifierEvent.ShowSas, (callbacks) => {
          sasCallbacks = callbacks;
          out({ event: 'verification', phase: 'Sas', emojis: callbacks.sas.emoji ?? null });
        });
        verifier.verify().then(
          () => out({ event: 'verification', phase: 'Verified' }),
          (err) => out({ event: 'verification', phase: 'Failed', error: String(err) }),
        );
      }, (err) => out({ event: 'verification', phase: 'Failed', error: String(err) }));
    }
  };
  request.on(VerificationRequestEvent.Change, report);
  report();
}

async function verifyDm({ user, room }) {
  follow(await client.getCrypto().requestVerificationDM(user, room));
  return {};
}

async function verifyDevice({ user, device }) {
  // The device must be known to the crypto (its owner shares a room with this client; the
  // keys come with a sync).
  const known = async () =>
    (await client.getCrypto().getUserDeviceInfo([user])).get(user)?.has(device);
  while (!(await known())) {
    await new Promise((resolve) => client.once(sdk.ClientEvent.Sync, resolve));
  }
  follow(await client.getCrypto().requestDeviceVerification(user, device));
  return {};
}

async function trust({ user, device }) {
  const crypto = client.getCrypto();
  const identity = await crypto.getUserVerificationStatus(user);
  const dev = device ? await crypto.getDeviceVerificationStatus(user, device) : null;
  return {
    user_verified: identity.isVerified(),
    device_verified: dev?.isVerified() ?? false,
    device_signed_by_owner: dev?.signedByOwner ?? false,
  };
}

const commands = {
  register,
  login,
  create_room: createRoom,
  join: async ({ room }) => (await client.joinRoom(room), await roomReady(room), {}),
  invite: async ({ room, user }) => (await client.invite(room, user), {}),
  send,
  reply,
  thread_reply: threadReply,
  vote,
  cross_sign: crossSign,
  verify_dm: verifyDm,
  verify_device: verifyDevice,
  sas_confirm: async () => (await sasCallbacks.confirm(), {}),
  sas_mismatch: async () => (sasCallbacks.mismatch(), {}),
  trust,
};

// One command at a time, in order, as a person acts.
let turn = Promise.resolve();
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  turn = turn.then(() => handle(line));
});

async function handle(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (err) {
    out({ reply: null, ok: false, error: `not JSON: ${err}` });
    return;
  }
  const run = commands[request.cmd];
  if (!run) {
    out({ reply: request.id, ok: false, error: `unknown command ${request.cmd}` });
    return;
  }
  try {
    out({ reply: request.id, ok: true, ...(await run(request)) });
  } catch (err) {
    out({ reply: request.id, ok: false, error: String(err?.stack ?? err) });
  }
}
lines.on('close', () => {
  turn.then(() => {
    client?.stopClient();
    process.exit(0);
  });
});
