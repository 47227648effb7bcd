// A terminal for the agents' interactive UIs: one tmux server on its own socket, one window
// of a fixed size running one command, driven as a person drives it (keys typed) and read as
// a person reads it (the screen as text, `capture-pane`). tmux gives a real pseudo-terminal
// and renders the UI's escape sequences, so tests assert on what is on the screen.

import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { until } from './standins.mjs';

/** Whether tmux is installed; the tests skip (or fail under HIM_E2E=1) without it. */
export function haveTmux() {
  return spawnSync('tmux', ['-V']).status === 0;
}

export class Terminal {
  /**
   * Runs `argv` in a 120×40 terminal in `cwd` with exactly the environment `env` (nothing of
   * this process's: tmux's own server environment is not passed on).
   */
  constructor(dir, argv, { cwd, env }) {
    this.socket = path.join(dir, 'tmux.sock');
    const assignments = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    // `env -i` so the command sees only `env`; `exec` so the pane ends when it does.
    const command = ['exec', 'env', '-i', ...assignments, ...argv].map(shellQuote).join(' ');
    this.tmux('new-session', '-d', '-x', '120', '-y', '40', '-c', cwd, command);
    this.tmux('set-option', '-g', 'remain-on-exit', 'on');
  }

  tmux(...args) {
    return execFileSync('tmux', ['-S', this.socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  }

  /** What the terminal shows now, as text. */
  screen() {
    return this.tmux('capture-pane', '-p', '-t', '0');
  }

  /** Waits until the screen matches `pattern`; fails with the screen as it was. */
  async until(pattern, ms = 20_000) {
    try {
      return await until(`${pattern} on the screen`, () => pattern.test(this.screen()), ms);
    } catch (err) {
      err.message += `; the screen:\n${this.screen()}`;
      throw err;
    }
  }

  /** Types `text` literally. */
  type(text) {
    this.tmux('send-keys', '-t', '0', '-l', text);
  }

  /** Presses keys by tmux name (Enter, Escape, Down, C-c). */
  press(...keys) {
    this.tmux('send-keys', '-t', '0', ...keys);
  }

  /** Ends the terminal, and resolves once the program in it has exited (it may still be
   * writing its files for a moment after the hang-up). */
  async close() {
    const pid = Number(spawnSync('tmux', ['-S', this.socket, 'list-panes', '-F', '#{pane_pid}'], { encoding: 'utf8' }).stdout);
    spawnSync('tmux', ['-S', this.socket, 'kill-server']);
    if (!pid) return;
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    try {
      await until(`process ${pid} to exit`, () => !alive(), 5_000);
    } catch {
      process.kill(pid, 'SIGKILL');
    }
  }
}

function shellQuote(s) {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${String(s).replaceAll("'", `'\\''`)}'`;
}
