//! One question, from form to result, the same for every front end (MCP tools, `him ask`):
//! through the browser when one is connected, else the configured fallback.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use crate::agent::Pool;
use crate::config::{Config, FallbackMode};
use crate::form::Form;
use crate::frame::MAX_TO_BROWSER;
use crate::outcome::{self, AskResult, CallContext, Via};
use crate::protocol::{self, AgentToHost, Ask};
use crate::question::{self, Outcome, WaitOptions};
use crate::tools::{ArgError, ToolKind};

/// Room kept in the 1 MiB browser frame for what the host adds (the agent's label).
const LABEL_ROOM: usize = 16 * 1024;

/// A question ready to go: its id and the frame the hosts will get.
pub struct Prepared {
    pub ask: Ask,
    pub form: Form,
    pub tool: ToolKind,
    pub timeout: Duration,
}

#[derive(Debug)]
pub enum PrepareError {
    /// The question cannot travel to a browser; names the argument to shorten.
    TooLarge(ArgError),
    /// The system's random source failed, so no safe id can be made.
    NoRandomness(std::io::Error),
}

impl std::fmt::Display for PrepareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrepareError::TooLarge(err) => err.fmt(f),
            PrepareError::NoRandomness(err) => write!(f, "cannot make a question id: {err}"),
        }
    }
}

impl std::error::Error for PrepareError {}

pub fn prepare(tool: ToolKind, form: Form, timeout: Duration) -> Result<Prepared, PrepareError> {
    let id = crate::random::question_id().map_err(PrepareError::NoRandomness)?;
    let asked_at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let ask = Ask {
        id,
        form: serde_json::to_value(&form).unwrap_or_default(),
        timeout_ms: timeout.as_millis() as u64,
        asked_at_ms,
    };
    let size = protocol::encode(&AgentToHost::Ask(ask.clone())).len();
    if size + LABEL_ROOM > MAX_TO_BROWSER {
        let argument = if tool == ToolKind::Form {
            "fields"
        } else {
            "question"
        };
        return Err(PrepareError::TooLarge(ArgError {
            argument: argument.into(),
            message: format!(
                "the question is {size} bytes; the browser accepts at most {} — shorten it",
                MAX_TO_BROWSER - LABEL_ROOM
            ),
        }));
    }
    Ok(Prepared {
        ask,
        form,
        tool,
        timeout,
    })
}

/// Asks the person and returns the finished result. `cancelled` resolves when the caller
/// gives up.
pub async fn ask(
    pool: &Pool,
    config: &Config,
    prepared: Prepared,
    client_elicitation: bool,
    cancelled: impl Future<Output = ()>,
) -> AskResult {
    let started = Instant::now();
    let options = WaitOptions {
        deadline: started + prepared.timeout,
        reconnect_grace: config.reconnect_grace,
    };
    let outcome = question::wait(
        pool,
        &prepared.form,
        prepared.ask.clone(),
        options,
        cancelled,
    )
    .await;
    let cx = CallContext {
        tool: prepared.tool,
        form: &prepared.form,
        question_id: &prepared.ask.id,
        elapsed_ms: started.elapsed().as_millis() as u64,
        client_elicitation,
    };
    match outcome {
        Outcome::NoBrowser { was_connected } => {
            let reason = if was_connected {
                "The browser went away before the person answered."
            } else {
                "No browser with the him side panel is connected."
            };
            fallback(&cx, config.fallback, reason)
        }
        other => outcome::from_outcome(&cx, Via::Extension, other),
    }
}

/// The configured fallback when no interactive channel can take the question.
pub fn fallback(cx: &CallContext<'_>, mode: FallbackMode, reason: &str) -> AskResult {
    match mode {
        FallbackMode::Return => outcome::needs_user_input(cx, reason),
        FallbackMode::Off => outcome::unsupported(cx, reason),
        // The loopback form arrives with its own channel; until then `http` behaves like
        // `return` rather than leaving the person without a way to answer.
        FallbackMode::Http => outcome::needs_user_input(cx, reason),
    }
}
