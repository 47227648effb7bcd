//! A question made ready to go: its id, its `ask` frame as the hosts will get it, and the
//! size check that keeps it within what a browser accepts. Every front end (the MCP tools,
//! `him ask`, the permission prompts) prepares its question here; the ask flow
//! (`agent/ask.rs`), or a permission prompt (`crate::permission`), then opens it.

use std::time::Duration;

use crate::agent::tools::{ArgError, ToolKind};
use crate::form::Form;
use crate::wire::frame::MAX_TO_BROWSER;
use crate::wire::protocol::AskFrame;

/// Room kept in the 1 MiB browser frame for what the host adds (the agent's label).
const LABEL_ROOM: usize = 16 * 1024;
/// The largest `ask` frame an agent sends: the browser's 1 MiB less [`LABEL_ROOM`].
pub const MAX_ASK_BYTES: usize = MAX_TO_BROWSER - LABEL_ROOM;

/// A question ready to go: its id and the frame the hosts will get.
#[derive(Debug)]
pub struct Prepared {
    pub ask: AskFrame,
    pub asked_at_ms: u64,
    pub form: Form,
    pub tool: ToolKind,
    pub timeout: Duration,
    /// The project this question names, when not its agent's (`crate::agent::asker`).
    pub project: Option<String>,
}

#[derive(Debug)]
pub enum PrepareError {
    /// The question cannot travel to a browser: its `ask` frame is `size` bytes, over
    /// [`MAX_ASK_BYTES`]; `error` names the argument to shorten.
    TooLarge { error: ArgError, size: usize },
    /// The system's random source failed, so no safe id can be made.
    NoRandomness(std::io::Error),
}

impl std::fmt::Display for PrepareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrepareError::TooLarge { error, .. } => error.fmt(f),
            PrepareError::NoRandomness(err) => write!(f, "cannot make a question id: {err}"),
        }
    }
}

impl std::error::Error for PrepareError {}

pub fn prepare(tool: ToolKind, form: Form, timeout: Duration) -> Result<Prepared, PrepareError> {
    prepare_in(tool, form, timeout, None)
}

/// As [`prepare`], for a question that names its own `project` (over the agent's `hello`).
pub fn prepare_in(
    tool: ToolKind,
    form: Form,
    timeout: Duration,
    project: Option<String>,
) -> Result<Prepared, PrepareError> {
    let id = crate::platform::random::question_id().map_err(PrepareError::NoRandomness)?;
    let asked_at_ms = crate::platform::clock::unix_ms();
    let ask = AskFrame::encode(
        id,
        &form,
        timeout.as_millis() as u64,
        asked_at_ms,
        project.as_deref(),
    );
    let size = ask.bytes.len();
    if size > MAX_ASK_BYTES {
        let argument = if tool == ToolKind::Form {
            "fields"
        } else {
            "question"
        };
        let error = ArgError {
            argument: argument.into(),
            message: format!(
                "the question is {size} bytes; the browser accepts at most {MAX_ASK_BYTES} — \
                 shorten it"
            ),
        };
        return Err(PrepareError::TooLarge { error, size });
    }
    Ok(Prepared {
        ask,
        asked_at_ms,
        form,
        tool,
        timeout,
        project,
    })
}
