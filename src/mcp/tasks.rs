//! MCP tasks (SEP-2663, the `io.modelcontextprotocol/tasks` extension): an ask tool called
//! with the extension in the request's client capabilities returns a task at once instead of
//! blocking until the person answers.
//!
//! ```text
//!  tools/call + tasks ──► him ──► CreateTaskResult {taskId, statusMessage: where it waits, ttlMs}
//!  tasks/get ──► working (statusMessage) │ input_required {inputRequests: the client's form}
//!                │ completed {result: the CallToolResult the blocking call returns} │ cancelled
//!  tasks/update {inputResponses} ──► the person's reply to the client's own form
//!  tasks/cancel ──► the question is withdrawn everywhere; the task ends `cancelled`
//! ```
//!
//! rmcp's `TaskManager` keeps the tasks and runs each as its own tokio task; the question goes
//! through the same channel chain as a blocking call (`agent/ask.rs`), with two differences:
//! elicitation is the task's input request (the spec's way for a task to ask the client; no
//! request of the call is left to carry `elicitation/create`), and no progress heartbeat goes
//! out (the spec has none for tasks; the status message says where the question waits).
//!
//! A task has links to the hosts of its own: it outlives the request that created it, and over
//! HTTP a 2026-07-28 request's server, which is shut down when its response ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, DetailedTask, ElicitRequest, ElicitResult, ErrorData, InputRequest, Task,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use tokio_util::sync::CancellationToken;

use super::elicitation::{self, INPUT_KEY};
use crate::agent::ask::{self, Asked, Channels, ElicitEnd, Elicitation};
use crate::agent::pending::Parking;
use crate::agent::pool::{EXIT_WAIT, Identity, Pool};
use crate::agent::prepare::Prepared;
use crate::agent::result::Status;
use crate::config::{Config, FallbackMode, TasksMode};
use crate::form::Form;

/// How long a task lives past the person's wait (its `ttlMs` is the wait plus this). The
/// channel chain ends a moment after its deadline with a `timeout` result, which the client
/// must read, rather than rmcp failing the task as expired at the same instant.
pub const TTL_MARGIN: Duration = Duration::from_secs(60);

/// Where the question waits, as each task's `statusMessage` says.
const SIDE_PANEL: &str = "Waiting for the person to answer in the browser's side panel.";
const BROWSER_RETURNING: &str =
    "Waiting for the browser to come back; its side panel gets the question.";
const CLIENT_FORM: &str = "Waiting for the person to answer in the client's own form (this \
    task's input request); a browser side panel that connects gets the question too.";
const LOOPBACK_OPENING: &str =
    "No browser side panel is connected; opening the loopback page in the person's browser.";
const HANDED_BACK: &str = "No browser side panel is connected; the result hands the question back.";

/// The process's tasks. Over HTTP every session and every sessionless request shares them, so
/// a `tasks/get` may reach any server of the process.
#[derive(Clone, Default)]
pub struct Tasks {
    manager: TaskManager,
    /// The links of each running task, by question id, for the process's end to withdraw.
    pools: Arc<Mutex<HashMap<String, Pool>>>,
}

/// Whether this request gets a task: it declared the tasks extension in its own `_meta`
/// client capabilities, and `HIM_TASKS` gives its client tasks. A declaration in a legacy
/// session's `initialize` does not count (SEP-2663: not "regardless of prior declarations"),
/// although rmcp's `client_capabilities()` would take it: the MCP Inspector 2.12 declares
/// the extension there and then reads a plain result on its 2025-11-25 calls. Claude Code's
/// terminal UI (2.1.332) declares the extension, moves every task to the background at once and
/// hands its result to the model as "[SYSTEM NOTIFICATION - NOT USER INPUT] … Do NOT interpret this
/// as … response to any pending question": the person's answer would not read as theirs, so under
/// `auto` Claude Code gets the blocking call.
pub fn offered(mode: TasksMode, ctx: &RequestContext<RoleServer>) -> bool {
    let declared = ctx
        .meta
        .client_capabilities()
        .is_some_and(|caps| caps.supports_tasks());
    declared
        && match mode {
            TasksMode::On => true,
            TasksMode::Off => false,
            TasksMode::Auto => ctx
                .client_info()
                .is_none_or(|info| !crate::agent::asker::is_claude_code(&info.name)),
        }
}

impl Tasks {
    /// Asks `prepared` as a task and returns its seed state; the task is there for
    /// `tasks/get` before this returns.
    pub async fn start(
        &self,
        config: &Config,
        identity: Identity,
        prepared: Prepared,
        client_elicitation: bool,
        parking: Parking,
    ) -> Task {
        let pool = Pool::for_runtime(&config.runtime, identity)
            .with_matrix_route(config.matrix_route, config.reconnect_grace);
        // Linked now, so the first status message says where the chain will put the question.
        let linked = pool.scan().await;
        let waiting = if linked > 0 {
            SIDE_PANEL
        } else if pool.hosts_lost_within(config.reconnect_grace).is_some() {
            BROWSER_RETURNING
        } else if client_elicitation && !prepared.form.has_password() {
            CLIENT_FORM
        } else if config.fallback == FallbackMode::Http {
            LOOPBACK_OPENING
        } else {
            HANDED_BACK
        };
        let ttl = prepared.timeout + TTL_MARGIN;
        let options = TaskOptions::new()
            .with_ttl_ms(ttl.as_millis() as u64)
            .with_status_message(waiting);
        let id = prepared.ask.id.clone();
        self.lock().insert(id.clone(), pool.clone());
        let pools = self.pools.clone();
        let config = config.clone();
        self.manager.spawn(options, move |task| {
            Box::pin(async move {
                let result =
                    run(&pool, &config, prepared, client_elicitation, parking, &task).await;
                pools
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .remove(&id);
                pool.shutdown();
                result
            })
        })
    }

    pub fn get(&self, task_id: &str) -> Result<DetailedTask, ErrorData> {
        self.manager.get_task(task_id)
    }

    pub fn update(
        &self,
        task_id: &str,
        responses: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Result<(), ErrorData> {
        self.manager.update_task(task_id, responses)
    }

    pub fn cancel(&self, task_id: &str) -> Result<(), ErrorData> {
        self.manager.cancel_task(task_id)
    }

    /// Withdraws every running task's question (the process is going away); each task then
    /// ends as cancelled.
    pub fn shutdown(&self) {
        for pool in self.lock().values() {
            pool.shutdown();
        }
    }

    /// As [`Tasks::shutdown`], then waits a little for the withdrawals to be written, for a
    /// process about to exit.
    pub async fn close(&self) {
        let pools: Vec<Pool> = self.lock().drain().map(|(_, pool)| pool).collect();
        futures::future::join_all(pools.iter().map(|pool| pool.close(EXIT_WAIT))).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pool>> {
        self.pools
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One task's question, through the channel chain; its result is what the blocking call
/// would have returned.
async fn run(
    pool: &Pool,
    config: &Config,
    prepared: Prepared,
    client_elicitation: bool,
    parking: Parking,
    task: &TaskContext,
) -> Result<CallToolResult, TaskExit> {
    let tool = prepared.tool;
    let elicitation = if client_elicitation {
        let (task, form, id) = (task.clone(), prepared.form.clone(), prepared.ask.id.clone());
        Elicitation::Request(Box::new(move |stop| Box::pin(elicit(task, form, id, stop))))
    } else {
        Elicitation::None
    };
    let told = task.clone();
    let channels = Channels {
        collect: crate::agent::result::Collect::GetAnswer,
        // `tasks/cancel` is the agent saying it no longer wants the answer.
        keep_if_cancelled: false,
        parking: Some(parking),
        // A task waits without a blocking call: it never returns early.
        return_after: None,
        tell_where: false,
        client_elicitation,
        elicitation,
        terminal: None,
        // The loopback page's address: where the person answers now.
        notice: Box::new(move |notice: String| {
            told.set_status_message(format!(
                "Waiting for the person to answer in the loopback page. {notice}"
            ));
        }),
    };
    let cancelled = std::pin::pin!(task.cancelled());
    let asked = ask::ask(pool, config, Box::new(prepared), channels, cancelled).await;
    let result = match asked {
        Asked::Done(result) => result,
        // Only `Elicitation::OnRetry` hands the question back, and a task never offers it.
        Asked::InputRequired(_) => {
            let error = ErrorData::internal_error("the task asked for a retry", None);
            return Err(TaskExit::Error(error));
        }
    };
    tracing::info!(tool = tool.tool_name(), id = %result.question_id, status = ?result.status, via = ?result.via, task = task.task_id(), "asked as a task");
    if result.status == Status::Cancelled && task.is_cancel_requested() {
        return Err(TaskExit::Cancelled);
    }
    super::structured(&result).map_err(TaskExit::Error)
}

/// The client's own form, as the task's input request (`input_required` until the client
/// answers with `tasks/update`); withdrawn when `stop` fires first.
async fn elicit(task: TaskContext, form: Form, id: String, stop: CancellationToken) -> ElicitEnd {
    let params = match elicitation::request(&form) {
        Ok(params) => params,
        Err(err) => return ElicitEnd::Failed(err.to_string()),
    };
    task.set_status_message(CLIENT_FORM);
    let request = InputRequest::Elicitation(ElicitRequest::new(params));
    tracing::info!(%id, task = task.task_id(), "elicitation as the task's input request");
    let reply = tokio::select! {
        reply = task.request_input(INPUT_KEY, request) => reply,
        _ = stop.cancelled() => return ElicitEnd::Stopped,
    };
    match reply {
        Ok(reply) => match serde_json::from_value::<ElicitResult>(reply) {
            Ok(result) => ElicitEnd::Reply(elicitation::answer_of(&form, &id, &result)),
            Err(err) => ElicitEnd::Failed(format!("the reply is not an elicitation result: {err}")),
        },
        // `tasks/cancel` drops the pending input; the chain sees the cancellation too.
        Err(TaskExit::Cancelled) => ElicitEnd::Stopped,
        Err(TaskExit::Error(err)) => ElicitEnd::Failed(err.message.into_owned()),
    }
}
