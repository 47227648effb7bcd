// lib/inbox.js: the order of the inbox, which card is open, and the agents' marks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AGENT_PALETTE, agentMark, chooseActive, inboxOrder, stepActive } from '../../../extension/lib/inbox.js';

const q = (id, deadline, received = 0, extra = {}) => ({ id, deadline_ms: deadline, received_at_ms: received, ...extra });
const ids = (list) => list.map((x) => x.id);

test('the soonest deadline first, none last, then the oldest; closed and undelivered cards after all', () => {
  const order = inboxOrder([
    q('none-old', null, 1),
    q('late', 9000, 5),
    q('closed', null, 0, { closed: { reason: 'timeout' } }),
    q('soon', 2000, 9),
    q('none-new', null, 7),
    q('tie-b', 5000, 3),
    q('tie-a', 5000, 3),
    q('undelivered', null, 2, { undelivered: { message: 'gone' } }),
  ]);
  assert.deepEqual(ids(order), ['soon', 'tie-a', 'tie-b', 'late', 'none-old', 'none-new', 'closed', 'undelivered']);
});

test('the open card is the most urgent one, unless the person is in the middle of another', () => {
  const order = inboxOrder([q('a', 1000), q('b', 2000), q('c', 3000, 0, { closed: {} })]);
  assert.equal(chooseActive(order), 'a');
  assert.equal(chooseActive(order, { current: 'b', keep: false }), 'a', 'an untouched card gives way');
  assert.equal(chooseActive(order, { current: 'b', keep: true }), 'b');
  assert.equal(chooseActive(order, { current: 'gone', keep: true }), 'a', 'a card that left is not kept');
  assert.equal(chooseActive(order, { current: 'c', keep: true }), 'a', 'a closed card is never the open one');
  assert.equal(chooseActive(order, { canOpen: (x) => x.id !== 'a' }), 'b', 'one the panel cannot draw is passed by');
  assert.equal(chooseActive([]), null);
});

test('stepping goes through the questions that can be opened, round and round', () => {
  const order = inboxOrder([q('a', 1000), q('b', 2000), q('x', 2500), q('c', 3000), q('d', null, 0, { undelivered: {} })]);
  const canOpen = (x) => x.id !== 'x';
  assert.equal(stepActive(order, 'a', 1, canOpen), 'b');
  assert.equal(stepActive(order, 'b', 1, canOpen), 'c', 'passes the card that cannot be opened');
  assert.equal(stepActive(order, 'c', 1, canOpen), 'a', 'wraps round');
  assert.equal(stepActive(order, 'a', -1, canOpen), 'c');
  assert.equal(stepActive(order, 'nothing', 1, canOpen), 'a');
  assert.equal(stepActive([], 'a', 1), null);
});

test("an agent's mark is its name, on a colour that depends on its label and project only", () => {
  const a = agentMark('claude-code', 'him');
  assert.deepEqual(agentMark('claude-code', 'him'), a, 'stable');
  assert.equal(a.name, 'claude-code');
  assert.equal(agentMark('  codex ', null).name, 'codex');
  assert.equal(agentMark('', null).name, '?');
  assert.equal(agentMark('', null).colours, AGENT_PALETTE[agentMark('', null).hue]);
  // Different agents and projects spread over the palette.
  const hues = new Set(
    ['claude-code', 'codex', 'gemini-cli', 'cursor', 'him ask', 'vscode', 'zed', 'goose'].flatMap((n) =>
      ['him', 'web', 'infra'].map((p) => agentMark(n, p).hue),
    ),
  );
  assert.ok(hues.size >= 6, `only ${hues.size} colours for 24 agent/project pairs`);
});

test('agents on screen never share a colour, and one already there keeps its own', () => {
  const taken = new Map();
  const agents = [
    ['codex', 'payments-api'],
    ['cursor', 'docs-site'],
    ['cline', 'infra'],
    ['claude-code', 'web'],
    ['codex', 'web'],
    ['gemini-cli', 'web'],
    ['goose', 'web'],
    ['zed', 'web'],
  ];
  for (const [name, project] of agents) {
    const mark = agentMark(name, project, taken);
    assert.ok(![...taken.values()].includes(mark.hue), `${name}·${project} got a colour already on screen`);
    taken.set(mark.key, mark.hue);
  }
  assert.equal(new Set(taken.values()).size, AGENT_PALETTE.length, 'eight agents, eight colours');
  // The first agent asks again: the same colour as its card on screen.
  const again = agentMark('codex', 'payments-api', taken);
  assert.equal(again.hue, taken.get(again.key));
  // Alone on screen, an agent has the colour of its own name and project.
  assert.equal(agentMark('cline', 'infra', new Map()).hue, agentMark('cline', 'infra').hue);
  // Two agents whose preferred colours are the same: the second is moved on.
  const [x, y] = findClash();
  const first = agentMark(x, 'p');
  const second = agentMark(y, 'p', new Map([[first.key, first.hue]]));
  assert.equal(agentMark(y, 'p').hue, first.hue, 'they would clash');
  assert.notEqual(second.hue, first.hue);
});

/** Two agent names whose preferred colours in project "p" are the same. */
function findClash() {
  const seen = new Map();
  for (let i = 0; ; i++) {
    const name = `agent-${i}`;
    const hue = agentMark(name, 'p').hue;
    if (seen.has(hue)) return [seen.get(hue), name];
    seen.set(hue, name);
  }
}

function luminance(hex) {
  const n = Number.parseInt(hex.slice(1), 16);
  const [r, g, b] = [n >> 16, (n >> 8) & 255, n & 255].map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

test('every mark colour is legible under its initial and stands out from the panel, in both themes', () => {
  // The text and surface colours of panel.css and lib/form.css.
  const light = { text: '#ffffff', surfaces: ['#ffffff', '#fbfbfa'] };
  const dark = { text: '#10131c', surfaces: ['#202226', '#17181b'] };
  for (const { light: l, dark: d } of AGENT_PALETTE) {
    assert.ok(contrast(l, light.text) >= 4.5, `${l} under white`);
    assert.ok(contrast(d, dark.text) >= 4.5, `${d} under dark text`);
    for (const s of light.surfaces) assert.ok(contrast(l, s) >= 3, `${l} on ${s}`);
    for (const s of dark.surfaces) assert.ok(contrast(d, s) >= 3, `${d} on ${s}`);
  }
});
