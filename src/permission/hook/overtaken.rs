//! What ends a hook's wait before the panel answers: the person answered the agent's own
//! prompt in the terminal, or the agent stopped the hook, or went away. The question then
//! leaves the panel at once instead of lingering until the hook's own wait ends.
//!
//! What each agent does to a running hook, observed with the real programs (a hook that
//! logged its signals, parent and pipes, and `strace -e kill` on the agent):
//! - Claude Code 2.1.332 runs the hook as `/bin/sh -c COMMAND` in a session of its own
//!   (stdio on sockets) and draws its own prompt while the hook runs. Answered "No" there
//!   (or Esc, or the session ends), it sends SIGTERM to the hook's process group, polls it,
//!   and after about 1.3 s sends SIGKILL. Answered "Yes" there, or "No, and tell Claude
//!   what to do differently" (Tab on No, with a note), it leaves the hook running (until
//!   the session ends or the hook timeout) and ignores what the hook writes later; nothing
//!   is signalled or closed. The one trace of such an answer is in the transcript
//!   (`transcript_path` in the hook input, JSON lines): the call's `tool_result` (with a
//!   `permissionDecision` of `accept` / `reject`), written after the `tool_use` it answers
//!   (which may itself be written a moment after the hook starts): at once for a rejection,
//!   once the tool has run for a Yes. So for Claude Code the hook watches the transcript.
//! - Codex 0.171.0 runs the hook directly in a session of its own (stdio on pipes) and
//!   shows "Running hook", not its approval prompt, until the hook has returned: the
//!   person cannot answer there first. Esc (interrupting the turn) SIGKILLs the hook and
//!   its group at once, which him cannot catch; the host sees the link close and withdraws
//!   the question. When Codex exits it signals nothing: the hook is left to init, its
//!   stdout's reader closed, which is what the hook watches.

use std::collections::HashSet;
use std::io::SeekFrom;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::wire::protocol::WithdrawReason;

/// How often the transcript is looked at: a person does not notice half a second, and a
/// file's length is all that is read while nothing is written.
const TRANSCRIPT_EVERY: Duration = Duration::from_millis(500);

/// How much of the transcript's end is read at the start. The call's `tool_use` is among
/// the last lines written; one further back is missed, which only leaves the card until
/// the hook's wait ends.
const TRANSCRIPT_TAIL: u64 = 4 * 1024 * 1024;

/// The one call this hook was asked about, and where its agent records its result.
#[derive(Debug, Clone)]
pub struct Call {
    pub tool_name: String,
    pub tool_input: Value,
    /// Claude Code's transcript; `None` for an agent whose own prompt cannot be answered
    /// while the hook runs.
    pub transcript: Option<PathBuf>,
}

/// Resolves, with the reason the panel is told, once the hook's question is moot.
pub async fn overtaken(call: Call) -> WithdrawReason {
    let Call {
        tool_name,
        tool_input,
        transcript,
    } = call;
    let answered_in_terminal = async {
        match transcript {
            Some(path) => watch_transcript(path, Transcript::new(tool_name, tool_input)).await,
            None => std::future::pending().await,
        }
    };
    let (reason, why) = tokio::select! {
        _ = stopped() => (WithdrawReason::Cancelled, "the agent stopped the hook"),
        _ = stdout_closed() => (WithdrawReason::Shutdown, "nobody reads the hook's answer any more"),
        _ = answered_in_terminal => (WithdrawReason::Answered, "answered in the agent's own prompt"),
    };
    tracing::info!(why, "withdrawing the card");
    reason
}

/// The agent stopped the hook: SIGTERM (Claude Code), SIGINT or SIGHUP.
async fn stopped() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = hup.recv() => {}
    }
}

/// Nobody reads the hook's answer any more: its stdout is a pipe or socket whose other end
/// closed (Codex exited). The kernel reports that as an error or hang-up on the writing
/// end; a thread of its own waits for it in `poll`, so nothing is polled on a timer. A
/// file or /dev/null as stdout reports neither, and never closes.
async fn stdout_closed() {
    let (closed, on_close) = tokio::sync::oneshot::channel();
    // Detached: it ends with the process, blocked or not.
    let watcher = std::thread::Builder::new()
        .name("stdout-closed".into())
        .spawn(move || {
            use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
            use std::os::fd::AsFd;
            let stdout = std::io::stdout();
            loop {
                // No events asked for: POLLERR, POLLHUP and POLLNVAL come regardless.
                let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(n) if n > 0 => break,
                    Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
                    Err(_) => return,
                }
            }
            let _ = closed.send(());
        });
    if watcher.is_err() || on_close.await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Reads what is appended to the transcript until it shows the call's result.
async fn watch_transcript(path: PathBuf, mut seen: Transcript) {
    let mut offset = None;
    let mut ticks = tokio::time::interval(TRANSCRIPT_EVERY);
    loop {
        ticks.tick().await;
        // A transcript that is not there yet, or cannot be read, is looked for again.
        let Ok(mut file) = tokio::fs::File::open(&path).await else {
            continue;
        };
        let Ok(len) = file.metadata().await.map(|m| m.len()) else {
            continue;
        };
        let start = match offset {
            Some(at) if at <= len => at,
            // First look, or the file was replaced by a shorter one: its tail.
            _ => len.saturating_sub(TRANSCRIPT_TAIL),
        };
        let first = offset.is_none();
        if Some(len) == offset {
            continue;
        }
        if file.seek(SeekFrom::Start(start)).await.is_err() {
            continue;
        }
        let mut bytes = Vec::new();
        if file.read_to_end(&mut bytes).await.is_err() {
            continue;
        }
        offset = Some(start + bytes.len() as u64);
        if first && start > 0 {
            // Started mid-line: drop the partial line.
            let cut = bytes
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |i| i + 1);
            bytes.drain(..cut);
        }
        if seen.feed(&bytes) {
            return;
        }
        if first {
            seen.history_read();
        }
    }
}

/// The transcript as far as it was read, for one call: the `tool_use` ids of calls with
/// this tool name and input that have no result yet, and whether one of them got its
/// result after the history was read (a result already there is an earlier, identical
/// call's). Pure, so the parsing is tested without an agent.
pub struct Transcript {
    tool_name: String,
    tool_input: Value,
    pending: HashSet<String>,
    partial: Vec<u8>,
    history_read: bool,
}

impl Transcript {
    pub fn new(tool_name: String, tool_input: Value) -> Self {
        Transcript {
            tool_name,
            tool_input,
            pending: HashSet::new(),
            partial: Vec::new(),
            history_read: false,
        }
    }

    /// What came before the hook started has been fed; results from now on are answers.
    pub fn history_read(&mut self) {
        self.history_read = true;
    }

    /// Takes the next bytes of the transcript; true once the call has its result. A line
    /// not finished yet is kept for the next bytes.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        self.partial.extend_from_slice(bytes);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return false;
        };
        let lines: Vec<u8> = self.partial.drain(..=end).collect();
        let mut answered = false;
        for line in lines.split(|&b| b == b'\n') {
            answered |= self.line(line);
        }
        answered
    }

    fn line(&mut self, line: &[u8]) -> bool {
        // Most lines are not messages with tool blocks; skip them before parsing.
        if !contains(line, b"\"tool_") {
            return false;
        }
        let Ok(entry) = serde_json::from_slice::<Value>(line) else {
            return false;
        };
        let Some(blocks) = entry.pointer("/message/content").and_then(Value::as_array) else {
            return false;
        };
        let mut answered = false;
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use")
                    if block.get("name").and_then(Value::as_str) == Some(&self.tool_name)
                        && block.get("input") == Some(&self.tool_input) =>
                {
                    if let Some(id) = block.get("id").and_then(Value::as_str) {
                        self.pending.insert(id.to_owned());
                    }
                }
                Some("tool_result") => {
                    let id = block.get("tool_use_id").and_then(Value::as_str);
                    if id.is_some_and(|id| self.pending.remove(id)) && self.history_read {
                        answered = true;
                    }
                }
                _ => {}
            }
        }
        answered
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(entry: Value) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(&entry).unwrap();
        bytes.push(b'\n');
        bytes
    }

    fn tool_use(id: &str, command: &str) -> Vec<u8> {
        line(
            json!({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command, "description": "d"}}
            ]}}),
        )
    }

    fn tool_result(id: &str) -> Vec<u8> {
        line(
            json!({"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": id, "type": "tool_result", "content": "ok", "is_error": false}
        ]}, "permissionDecision": {"decision": "accept", "source": "user_temporary"}}),
        )
    }

    fn call() -> Transcript {
        Transcript::new(
            "Bash".into(),
            json!({"description": "d", "command": "make"}),
        )
    }

    #[test]
    fn the_calls_result_after_the_history_is_an_answer() {
        let mut seen = call();
        assert!(!seen.feed(&tool_use("toolu_1", "make")));
        seen.history_read();
        assert!(!seen.feed(&line(json!({"type": "mode", "mode": "normal"}))));
        assert!(seen.feed(&tool_result("toolu_1")));
    }

    #[test]
    fn the_tool_use_may_be_written_after_the_hook_starts_and_lines_come_in_pieces() {
        let mut seen = call();
        seen.history_read();
        let mut bytes = tool_use("toolu_2", "make");
        bytes.extend(tool_result("toolu_2"));
        let (a, b) = bytes.split_at(bytes.len() - 20);
        assert!(!seen.feed(a));
        assert!(seen.feed(b));
    }

    #[test]
    fn an_earlier_identical_call_answered_before_the_hook_is_not_this_one() {
        let mut seen = call();
        let mut history = tool_use("toolu_1", "make");
        history.extend(tool_result("toolu_1"));
        history.extend(tool_use("toolu_3", "make"));
        assert!(!seen.feed(&history));
        seen.history_read();
        assert!(!seen.feed(&tool_result("toolu_other")));
        assert!(seen.feed(&tool_result("toolu_3")));
    }

    #[test]
    fn another_calls_result_is_not_an_answer() {
        let mut seen = call();
        seen.history_read();
        assert!(!seen.feed(&tool_use("toolu_4", "make clean")));
        assert!(!seen.feed(&tool_result("toolu_4")));
        assert!(!seen.feed(b"not json but \"tool_ mentioned\n"));
    }
}
