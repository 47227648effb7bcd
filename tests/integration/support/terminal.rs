//! `him ask` in a real pseudo-terminal, as a person runs it from a shell: stdin and stderr on
//! the terminal, which is its controlling terminal (util-linux's `setsid --ctty`, on every
//! Debian), and stdout captured as `answer=$(him ask …)` captures it. The test types on the
//! terminal's master side and reads what it shows.
//!
//! A prompt takes no key until it has been on screen the arming delay (prompts.rs `armed`),
//! and keys typed before are thrown away. The test sees that wait in the terminal's own
//! settings, which the prompt sets: raw with `VMIN` 255 while it holds keys back ([`Keys`]).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::pty::{OpenptyResult, Winsize, openpty};
use nix::sys::signal::{Signal, killpg};
use nix::sys::termios::{LocalFlags, SpecialCharacterIndices, Termios, tcgetattr};
use nix::unistd::Pid;
use serde_json::Value;

use super::{PATIENCE, him_bin};

pub const ENTER: &str = "\r";
pub const ESC: &str = "\x1b";
pub const CTRL_C: &str = "\x03";
pub const DOWN: &str = "\x1b[B";
pub const BACKSPACE: &str = "\x7f";

/// What the terminal does with a key typed now, by its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// Line by line, echoed: no prompt is up (before it, between two, after).
    Cooked,
    /// Raw, `VMIN` 255: a prompt is up but has not been on screen long enough; the key will
    /// be thrown away.
    Held,
    /// Raw: the prompt takes the key.
    Taken,
}

/// How `him ask` meets the terminal.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// The terminal is its controlling terminal, so `/dev/tty` opens.
    pub controlling: bool,
    /// Its stderr is the terminal (else a pipe, as an agent runs a command).
    pub stderr: bool,
}

/// A person's terminal: both, as in a shell.
pub const SHELL: Setup = Setup {
    controlling: true,
    stderr: true,
};

pub struct InTerminal {
    master: File,
    /// Kept open to read the terminal's settings once `him ask` has exited.
    slave: OwnedFd,
    before: Termios,
    screen: Arc<Mutex<Vec<u8>>>,
    child: Child,
    /// Where in the shown text the last `expect` matched.
    seen: usize,
}

impl InTerminal {
    pub fn ask(runtime: &Path, args: &[&str]) -> InTerminal {
        InTerminal::ask_with(runtime, args, &[], SHELL)
    }

    pub fn ask_with(
        runtime: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        setup: Setup,
    ) -> InTerminal {
        InTerminal::start(runtime, args, env, setup, "")
    }

    /// `him ask` in a terminal where `keys` were typed before it started.
    pub fn ask_typed_ahead(runtime: &Path, args: &[&str], keys: &str) -> InTerminal {
        InTerminal::start(runtime, args, &[], SHELL, keys)
    }

    fn start(
        runtime: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        setup: Setup,
        typed_ahead: &str,
    ) -> InTerminal {
        let size = Winsize {
            ws_row: 30,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let OpenptyResult { master, slave } = openpty(&size, None).expect("openpty");
        let before = tcgetattr(&slave).expect("the new terminal's settings");
        if !typed_ahead.is_empty() {
            let mut early = File::from(master.try_clone().expect("dup the master"));
            early
                .write_all(typed_ahead.as_bytes())
                .expect("type before him ask starts");
        }
        let on_terminal = || Stdio::from(slave.try_clone().expect("dup the terminal"));
        let mut command = Command::new("setsid");
        if setup.controlling {
            command.arg("--ctty");
        }
        command
            .arg(him_bin())
            .arg("ask")
            .args(args)
            .env("HIM_RUNTIME_DIR", runtime)
            .env(
                "HIM_STATE_DIR",
                super::state_dir(std::path::Path::new(runtime)),
            )
            .env("TERM", "xterm-256color")
            .env_remove("HIM_FALLBACK")
            .envs(env.iter().copied())
            .stdin(if setup.controlling {
                on_terminal()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(if setup.stderr {
                on_terminal()
            } else {
                Stdio::piped()
            });
        let child = command.spawn().expect("spawn setsid him ask");
        let master = File::from(master);
        let screen = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().expect("dup the master");
        let shown = screen.clone();
        // Ends when the last slave closes (EIO): at `finish`.
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                shown.lock().expect("screen").extend_from_slice(&buf[..n]);
            }
        });
        InTerminal {
            master,
            slave,
            before,
            screen,
            child,
            seen: 0,
        }
    }

    /// Everything written to the terminal so far, escape sequences and all.
    pub fn raw(&self) -> Vec<u8> {
        self.screen.lock().expect("screen").clone()
    }

    /// The text written to the terminal so far, without escape sequences.
    pub fn text(&self) -> String {
        strip_escapes(&String::from_utf8_lossy(&self.raw()))
    }

    /// What the terminal does with a key typed now.
    pub fn keys(&self) -> Keys {
        let settings = tcgetattr(&self.slave).expect("the terminal's settings");
        if settings.local_flags.contains(LocalFlags::ICANON) {
            Keys::Cooked
        } else if settings.control_chars[SpecialCharacterIndices::VMIN as usize] == u8::MAX {
            Keys::Held
        } else {
            Keys::Taken
        }
    }

    /// Waits while the prompt up holds keys back; returns how long it was seen doing so.
    pub fn wait_while_held(&self) -> Duration {
        let start = Instant::now();
        while self.keys() == Keys::Held {
            assert!(
                start.elapsed() < PATIENCE,
                "the prompt never took keys; the terminal shows:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        start.elapsed()
    }

    /// Stops `him ask` and its prompt (SIGSTOP to its process group), so that nothing they do
    /// happens between two of the test's steps; [`InTerminal::resume`] lets them go on.
    pub fn pause(&self) {
        killpg(self.group(), Signal::SIGSTOP).expect("kill -STOP");
    }

    pub fn resume(&self) {
        killpg(self.group(), Signal::SIGCONT).expect("kill -CONT");
    }

    /// `setsid` made `him ask` a process group's leader; its prompt is in that group.
    fn group(&self) -> Pid {
        Pid::from_raw(self.child.id() as i32)
    }

    /// Waits until the terminal shows `needle` after what the last `expect` matched, and the
    /// prompt showing it takes keys.
    pub fn expect(&mut self, needle: &str) {
        let start = Instant::now();
        loop {
            let text = self.text();
            if let Some(at) = text.get(self.seen..).and_then(|rest| rest.find(needle)) {
                self.seen += at + needle.len();
                self.wait_while_held();
                return;
            }
            if start.elapsed() > PATIENCE {
                panic!("the terminal never showed {needle:?}; it shows:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types `keys`, as one burst (an arrow key's escape sequence must arrive whole), whatever
    /// the terminal does with them.
    pub fn send(&mut self, keys: &str) {
        self.master
            .write_all(keys.as_bytes())
            .expect("type on the terminal");
        self.master.flush().expect("flush");
        // A person does not type faster than the screen answers.
        std::thread::sleep(Duration::from_millis(60));
    }

    /// Sends `him ask` SIGTERM, as `timeout` or a script's `kill` does.
    pub fn terminate(&self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("kill -TERM");
    }

    /// Waits for `him ask` to exit, checks the terminal is as it was before, and returns the
    /// JSON result it printed on stdout and its exit code.
    pub fn finish(self) -> (Value, i32) {
        let (result, code, _) = self.finish_showing();
        (result, code)
    }

    /// [`InTerminal::finish`], and the text the terminal showed until `him ask` exited.
    pub fn finish_showing(mut self) -> (Value, i32, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if start.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("him ask did not exit; the terminal shows:\n{}", self.text());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        self.child
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut stdout)
            .expect("read stdout");
        let shown = self.text();
        self.assert_restored();
        let result: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!("stdout is not the JSON result ({e}): {stdout:?}; the terminal shows:\n{shown}")
        });
        (result, status.code().unwrap_or(-1), shown)
    }

    /// The terminal's settings are the ones it had before (echo, line editing, signals), it
    /// echoes what is typed again, and the cursor was shown again after the last time it was
    /// hidden.
    fn assert_restored(&mut self) {
        let after = tcgetattr(&self.slave).expect("the terminal's settings");
        assert_eq!(after.local_flags, self.before.local_flags, "local modes");
        assert_eq!(after.input_flags, self.before.input_flags, "input modes");
        assert_eq!(after.output_flags, self.before.output_flags, "output modes");
        assert_eq!(
            after.control_chars, self.before.control_chars,
            "control characters"
        );
        self.send("echoed-again");
        self.expect("echoed-again");
        let raw = String::from_utf8_lossy(&self.raw()).into_owned();
        if let Some(hidden) = raw.rfind("\x1b[?25l") {
            assert!(
                raw[hidden..].contains("\x1b[?25h"),
                "the cursor was left hidden"
            );
        }
    }
}

/// The text of terminal output: CSI and OSC sequences and other escapes removed.
pub fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                for c in chars.by_ref() {
                    if c == '\x07' {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}
