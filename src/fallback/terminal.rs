//! The person's own terminal as a channel, for `him ask` only — never for `him serve` or a
//! hook, whose stdin and stdout are protocols. `him ask` offers it when stderr is a terminal
//! and `/dev/tty` opens (as ssh and sudo read a password), in the foreground; the chain
//! (`agent/ask.rs`) runs it after the browsers' wait and before `HIM_FALLBACK`, beside the
//! browsers, so a side panel that appears meanwhile can still answer first.
//!
//! ```text
//!  him ask ──spawns──► him terminal-prompt    stdin: the form (JSON)    (terminal/prompts.rs)
//!    │ keeps the terminal's                     stdout: the reply (JSON)
//!    │ settings, puts them back                 keys and drawing: /dev/tty
//!    └─ stopped (answered in the browser, the deadline, Ctrl-C): kills the prompt first
//! ```
//!
//! Why a process of its own: a prompt crate cannot be stopped from outside while it waits
//! for a key (inquire, dialoguer and cliclack all block in a read of the terminal), and a
//! thread cannot be killed. A process can: killing it ends its read for certain, and the
//! settings taken before it started are put back once it is gone, whatever it left the
//! terminal in — on an answer, a timeout, a withdrawal, and when either side panics.

mod prompts;

use std::fs::{File, OpenOptions};
use std::io::{IsTerminal, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, Stdio};

use nix::sys::signal::Signal;
use nix::sys::termios::{self, SetArg, Termios};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

pub use prompts::Request;

use crate::BoxError;
use crate::wire::protocol::{Action, Answer};

/// The hidden subcommand that runs [`prompts`] (`cli/mod.rs`).
const PROMPT_COMMAND: &str = "terminal-prompt";

/// After a kill: CAN ends an escape sequence the prompt may have been half-way through,
/// then a fresh line with the rest of the prompt (an option list) cleared below it.
const AFTER_WITHDRAWAL: &[u8] = b"\x18\r\n\x1b[J";
/// Whatever the prompt left on: colours and styles reset, bracketed paste off (inquire turns
/// it on), the cursor shown (inquire hides it while it draws a list).
const RESET: &[u8] = b"\x1b[0m\x1b[?2004l\x1b[?25h";

/// The person's terminal, open for a question.
#[derive(Debug)]
pub struct Terminal {
    tty: File,
}

/// How the terminal prompt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TerminalEnd {
    /// The person's reply (submit, decline or cancel), not yet judged against the form.
    Answer(Answer),
    /// Told to stop first; the prompt is gone and the terminal restored.
    Stopped,
    /// The prompt could not run; the question goes on to `HIM_FALLBACK`.
    Failed(String),
}

impl Terminal {
    /// The terminal `him ask` runs in, when there is one to ask in: stderr is a terminal (a
    /// person watches), `/dev/tty` opens (there is a controlling terminal: not so in CI, a
    /// hook or most agents' subprocesses), and `him ask` is in its foreground (a background
    /// job reading it would be stopped). `TERM=dumb` (an editor's shell buffer) cannot draw
    /// a prompt.
    pub fn open() -> Option<Terminal> {
        if !std::io::stderr().is_terminal() || std::env::var_os("TERM").is_some_and(|t| t == "dumb")
        {
            return None;
        }
        let tty = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        let foreground = nix::unistd::tcgetpgrp(&tty).ok()? == nix::unistd::getpgrp();
        foreground.then_some(Terminal { tty })
    }

    /// Asks `request` on the terminal until the person replies or `stop` is cancelled.
    pub async fn ask(self, request: Request, stop: CancellationToken) -> TerminalEnd {
        match self.run(request, stop).await {
            Ok(end) => end,
            Err(err) => TerminalEnd::Failed(err.to_string()),
        }
    }

    async fn run(self, request: Request, stop: CancellationToken) -> Result<TerminalEnd, BoxError> {
        let mut restore = Restore {
            saved: termios::tcgetattr(&self.tty)?,
            tty: self.tty.try_clone()?,
            withdrawn: false,
        };
        let mut child = Command::new(std::env::current_exe()?)
            .arg(PROMPT_COMMAND)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(self.tty))
            .kill_on_drop(true)
            .spawn()?;
        let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the prompt's pipes did not open".into());
        };
        let body = serde_json::to_vec(&request)?;
        let mut reply = Vec::new();
        let exchange = async {
            stdin.write_all(&body).await?;
            drop(stdin);
            stdout.read_to_end(&mut reply).await
        };
        tokio::select! {
            read = exchange => { read?; }
            _ = stop.cancelled() => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                restore.withdrawn = true;
                return Ok(TerminalEnd::Stopped);
            }
        }
        let status = child.wait().await?;
        drop(restore);
        // Ctrl-C between two prompts, while the terminal was not raw, is a signal rather
        // than a key: the person's cancel all the same.
        if status.signal() == Some(Signal::SIGINT as i32) {
            return Ok(TerminalEnd::Answer(Answer {
                id: request.id,
                action: Action::Cancel,
                values: None,
                note: None,
                answered_by: None,
            }));
        }
        if !status.success() {
            return Ok(TerminalEnd::Failed(format!(
                "the prompt ended with {status}"
            )));
        }
        let answer: Answer = serde_json::from_slice(&reply)
            .map_err(|e| format!("the prompt's reply did not parse: {e}"))?;
        Ok(TerminalEnd::Answer(answer))
    }
}

/// Puts the terminal back as it was before the prompt, however the prompt ended.
struct Restore {
    tty: File,
    saved: Termios,
    withdrawn: bool,
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Err(err) = termios::tcsetattr(&self.tty, SetArg::TCSANOW, &self.saved) {
            tracing::warn!("could not restore the terminal's settings: {err}");
        }
        if self.withdrawn {
            let _ = self.tty.write_all(AFTER_WITHDRAWAL);
        }
        let _ = self.tty.write_all(RESET);
        let _ = self.tty.flush();
    }
}

/// `him terminal-prompt`: reads the request on stdin, asks it on the terminal, writes the
/// reply on stdout.
pub fn run_prompt() -> Result<ExitCode, BoxError> {
    // A `him ask` killed outright cannot stop this prompt; without this it would go on
    // reading the terminal beside the shell.
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    let request: Request = serde_json::from_str(&text)?;
    let answer = prompts::ask(&request)?;
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &answer)?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}
