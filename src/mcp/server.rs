//! The tools of DESIGN.md §5 on an rmcp `ToolRouter`.

use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::params::Parameters;
use super::schema::output_schema;
use futures::future::{self, BoxFuture, Either, Ready};
use futures::{Future, FutureExt, StreamExt};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses as Responses, RequestState};
use rmcp::model::{
    CallToolResponse, CallToolResult, CancelTaskParams, ClientResult, ConstString, ContentBlock,
    CreateTaskResult, CustomRequest, CustomResult, ElicitRequest, ElicitResult,
    ElicitationCreateRequestMethod, ErrorData, GetTaskParams, GetTaskResult, Implementation,
    InitializeRequestParams, InitializeResult, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities,
    ServerConfig, ServerRequest, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::elicitation::{self, INPUT_KEY, RetryState, StateCodec};
use super::ending::{PoolSlot, SessionEnd};
use super::project::SessionProject;
use super::tasks::{self, Tasks};
use crate::agent::ask::{self, Asked, Channels, ElicitEnd, Elicitation};
use crate::agent::asker;
use crate::agent::pending::Parking;
use crate::agent::pool::{HostStatus, Identity, Pool};
use crate::agent::prepare::{self, PrepareError, Prepared};
use crate::agent::result::{self, AskResult, CallContext, Via};
use crate::agent::tools::{
    ArgError, AskChoiceArgs, AskConfirmArgs, AskFormArgs, AskMultiSelectArgs, AskTextArgs, AskTool,
    ToolKind,
};
use crate::agent::wait::Outcome;
use crate::config::{Config, FallbackMode, TasksMode};
use crate::form::{AnswerError, Form};
use crate::wire::protocol::{AgentInfo, ExtensionInfo};

#[derive(Clone)]
pub struct HimServer {
    shared: Arc<SharedParts>,
    /// Made on the first question, when the client's name is known for the `hello`; one
    /// per session, shared by the server's clones, it withdraws what is open when the last
    /// of them goes (`ending.rs`).
    pool: Arc<PoolSlot>,
    /// The session's heartbeat clock, started by the first question.
    ticks: Arc<OnceLock<watch::Receiver<()>>>,
    /// What the session says of its project (URL, roots), for each question's label.
    project: Arc<SessionProject>,
    tool_router: ToolRouter<HimServer>,
}

/// What every `HimServer` of one process shares. Over HTTP a 2026-07-28 client's retry
/// is a new sessionless request, served by a new `HimServer`: it must open the
/// `requestState` the first request sealed, and must not redeem it a second time, so the
/// key and the redeemed ids belong to the process, not to one server.
pub struct SharedParts {
    config: Config,
    /// Seals the 2026-07-28 `requestState`; `None` if no key could be made (then such
    /// sessions skip elicitation).
    states: Option<StateCodec>,
    /// The questions asked as MCP tasks, which a `tasks/get` from any session may follow.
    tasks: Tasks,
    /// The questions left open by calls that returned `pending`, which a `get_answer` from
    /// any session may wait on.
    parking: Parking,
}

impl SharedParts {
    pub fn new(config: Config) -> Arc<SharedParts> {
        let states = match StateCodec::generate() {
            Ok(codec) => Some(codec),
            Err(err) => {
                tracing::warn!(
                    "no requestState key ({err}); 2026-07-28 clients get no elicitation"
                );
                None
            }
        };
        Arc::new(SharedParts {
            config,
            states,
            tasks: Tasks::default(),
            parking: Parking::default(),
        })
    }

    /// Withdraws the question of every task still running and waits a little for the
    /// withdrawals to be written, for a process about to exit.
    pub async fn close_tasks(&self) {
        self.tasks.close().await;
    }
}

/// An ask tool's call after its first step ([`HimServer::start_ask`]).
enum Started<'a> {
    /// Its response is ready: bad arguments, a finished retry, a task started.
    Done(Result<CallToolResponse, ErrorData>),
    /// The question is ready to ask, and the call waits for its end.
    Waiting(Waiting<'a>),
}

impl<'a> Started<'a> {
    /// The call's second step: its response at once, or the wait for it.
    fn finish(
        self,
    ) -> Either<
        Ready<Result<CallToolResponse, ErrorData>>,
        impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'a,
    > {
        match self {
            Started::Done(response) => Either::Left(future::ready(response)),
            Started::Waiting(waiting) => Either::Right(waiting.wait()),
        }
    }
}

/// What an ask tool's call keeps while its question waits: no arguments, no request
/// context (rmcp's copy of the request's extensions is freed with it).
struct Waiting<'a> {
    server: &'a HimServer,
    pool: &'a Pool,
    tool: ToolKind,
    prepared: Box<Prepared>,
    channels: Channels<'static>,
    /// Cancelled when the client cancels the call or the session ends.
    cancelled: CancellationToken,
    heartbeat: Heartbeat,
}

impl<'a> Waiting<'a> {
    /// The question through the channel chain while heartbeats go out, then the call's
    /// result. A block over `self` rather than an `async fn`, whose arguments would be held
    /// twice for the whole wait.
    #[allow(clippy::manual_async_fn)]
    fn wait(self) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'a {
        async move {
            let cancelled = std::pin::pin!(self.cancelled.cancelled_owned());
            let asking = ask::ask(
                self.pool,
                &self.server.shared.config,
                self.prepared,
                self.channels,
                cancelled,
            );
            let asked = tokio::select! {
                asked = asking => asked,
                never = self.heartbeat.run() => match never {},
            };
            self.server.asked(self.tool, asked)
        }
    }
}

/// The 2026-07-28 round trip's inputs to a tool call.
struct Retry {
    state: Option<String>,
    responses: Option<InputResponses>,
}

const INSTRUCTIONS: &str = "him asks the human user a question and returns their typed answer. \
Use the ask_* tools when you need a decision, a missing fact, or approval that only the person \
can give; do not use them for things you can find out yourself. Every result has `status` and \
`next_step`: follow `next_step`.";

fn invalid_params(err: ArgError) -> ErrorData {
    ErrorData::invalid_params(err.to_string(), Some(json!({ "argument": err.argument })))
}

/// How long `human_input_status` waits for a host just linked to answer `hello`: a live
/// host answers at once, so this bounds only one that is stuck.
const FIRST_WELCOME_WAIT: Duration = Duration::from_secs(1);

/// Status of one connected browser, for `human_input_status`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(inline)]
pub struct BrowserStatus {
    /// The host's socket.
    pub socket: String,
    /// The extension's id, once it has identified itself.
    pub extension_id: Option<String>,
    /// The extension's version, once it has identified itself.
    pub extension_version: Option<String>,
    /// Whether the side panel is open now.
    pub panel_open: bool,
    /// The other machine whose browser this is, when it is reached through SSH (a
    /// forwarded gateway socket, DESIGN.md §10).
    pub via_machine: Option<String>,
}

/// The Matrix bridge, for `human_input_status`: a channel of its own beside the browsers.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(inline)]
pub struct MatrixStatus {
    /// The bridge's socket.
    pub socket: String,
    /// The room its questions go to, once the bridge has said.
    pub room: Option<String>,
}

/// `get_answer`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetAnswerArgs {
    /// The question_id of an earlier result that was not answered (timeout, cancelled,
    /// pending).
    pub question_id: String,
    /// How long to wait for the person while the question is still open, in milliseconds
    /// (0 answers at once; default HIM_TIMEOUT_MS, 5 min; at most 24 h; for a client that
    /// cuts or backgrounds long calls, at most HIM_RETURN_AFTER_MS).
    #[serde(default)]
    #[schemars(with = "u64")]
    pub wait_ms: Option<u64>,
}

/// `human_input_status` takes no arguments, and says so to a client that gives some.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StatusResult {
    /// Browsers with the him extension connected now.
    pub browsers: Vec<BrowserStatus>,
    /// The Matrix bridge (`him matrix`), when one is linked: every question goes to its
    /// room too, beside the browsers; null when Matrix is not set up or not running.
    pub matrix: Option<MatrixStatus>,
    /// The channel a question would take now: extension, elicitation, matrix, http (loopback
    /// form), chat (hand-back) or none.
    pub channel: String,
    /// Why that channel.
    pub reason: String,
    /// Whether this client declared MCP form elicitation.
    pub client_elicitation: bool,
    /// How elicitation would reach this client: `elicitation/create` (protocol ≤ 2025-11-25),
    /// `input_required` (2026-07-28), or `none`.
    pub elicitation: String,
    /// The MCP protocol version of this session.
    pub protocol_version: String,
    /// HIM_FALLBACK in force: return, http or off.
    pub fallback: String,
    /// Default wait for an answer, in milliseconds.
    pub timeout_ms: u64,
    /// Progress-notification period, in milliseconds.
    pub heartbeat_ms: u64,
    /// How long a question waits for a browser to come back, in milliseconds.
    pub reconnect_grace_ms: u64,
    /// After how long an ask tool's call returns `pending` for this client, its question
    /// left open for get_answer (HIM_RETURN_AFTER_MS: `auto` is 100000 for Claude Code and
    /// never for others), in milliseconds; 0: never.
    pub return_after_ms: u64,
    /// Where browsers' hosts listen, and agents look first.
    pub runtime_dir: String,
    /// Which rule chose `runtime_dir` (DESIGN.md §1): `HIM_RUNTIME_DIR`, `login-session`
    /// (/run/user/<uid>), `macos-user-temp` or `home`.
    pub runtime_dir_rule: String,
    /// Every directory searched for hosts, `runtime_dir` first.
    pub runtime_dirs_searched: Vec<String>,
}

impl From<HostStatus> for BrowserStatus {
    fn from(host: HostStatus) -> Self {
        let (extension_id, extension_version) = match host.extension {
            Some(ExtensionInfo { id, version }) => (Some(id), Some(version)),
            None => (None, None),
        };
        BrowserStatus {
            socket: host.socket.display().to_string(),
            extension_id,
            extension_version,
            panel_open: host.panel_open,
            via_machine: host.forwarded.then_some(host.machine).flatten(),
        }
    }
}

/// How a client without a browser can be asked through MCP itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElicitationMode {
    None,
    /// ≤ 2025-11-25: `elicitation/create`.
    Create,
    /// 2026-07-28: an `input_required` result, finished on the retry.
    InputRequired,
}

impl ElicitationMode {
    fn name(self) -> &'static str {
        match self {
            ElicitationMode::None => "none",
            ElicitationMode::Create => "elicitation/create",
            ElicitationMode::InputRequired => "input_required",
        }
    }
}

#[tool_router]
impl HimServer {
    /// A server with parts of its own (stdio: one server per process anyway).
    pub fn new(config: Config) -> HimServer {
        HimServer::with_shared(SharedParts::new(config))
    }

    /// A server on the process's shared parts (HTTP: one server per session or request).
    pub fn with_shared(shared: Arc<SharedParts>) -> HimServer {
        HimServer {
            shared,
            pool: Arc::default(),
            ticks: Arc::new(OnceLock::new()),
            project: Arc::default(),
            tool_router: Self::tool_router(),
        }
    }

    /// Also offer `approve`, Claude Code's permission-prompt tool. Only `him serve
    /// --permission-tool` on stdio does: a tool that can allow an agent's actions is never
    /// offered over HTTP, nor to a client that did not ask for it.
    pub fn with_permission_tool(mut self) -> HimServer {
        self.tool_router += Self::permission_router();
        self
    }

    /// Withdraws every question still open.
    pub fn shutdown(&self) {
        self.pool.shutdown();
    }

    /// As [`HimServer::shutdown`], for a process about to exit: waits (a little) for the
    /// withdrawals to be written.
    pub async fn close(&self) {
        if let Some(pool) = self.pool.get() {
            pool.close(crate::agent::pool::EXIT_WAIT).await;
        }
    }

    /// Withdraws the question of every task still running (the process is going away).
    pub fn shutdown_tasks(&self) {
        self.shared.tasks.shutdown();
    }

    /// As [`HimServer::shutdown_tasks`], for a process about to exit.
    pub async fn close_tasks(&self) {
        self.shared.close_tasks().await;
    }

    /// `work`, with progress heartbeats to the client while it runs; for a wait that has no
    /// notices to announce (no loopback form): `get_answer` and the permission prompt.
    async fn with_heartbeat<T>(
        &self,
        ctx: &RequestContext<RoleServer>,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        let (_notices, notice_rx) = futures::channel::mpsc::unbounded();
        let heartbeat = Heartbeat {
            peer: ctx.peer.clone(),
            token: ctx.meta.get_progress_token(),
            ticks: self.ticks(),
            notices: notice_rx,
        };
        tokio::select! {
            done = work => done,
            never = heartbeat.run() => match never {},
        }
    }

    fn pool(&self, ctx: &RequestContext<RoleServer>) -> &Pool {
        let mut made = false;
        let pool = self.pool.get_or_init(|| {
            made = true;
            Pool::for_runtime(&self.shared.config.runtime, identity(ctx)).with_matrix_route(
                self.shared.config.matrix_route,
                self.shared.config.reconnect_grace,
            )
        });
        // Over HTTP the session's transport tells its end through here (`ending.rs`).
        if made && let Some(end) = ctx.extensions.get::<SessionEnd>() {
            end.attach(&self.pool);
        }
        pool
    }

    /// A receiver of the session's heartbeat clock that waits for its next tick.
    fn ticks(&self) -> watch::Receiver<()> {
        let mut ticks = self
            .ticks
            .get_or_init(|| {
                let (ticks, receiver) = watch::channel(());
                tokio::spawn(tick(ticks, self.shared.config.heartbeat));
                receiver
            })
            .clone();
        // A clone has seen what the stored receiver has, which is no tick at all.
        ticks.mark_unchanged();
        ticks
    }

    /// Whether the client declared form elicitation (an empty `elicitation` object means
    /// form, as before URL mode existed).
    fn client_elicitation(ctx: &RequestContext<RoleServer>) -> bool {
        ctx.client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
    }

    /// After how long an ask tool's call returns `pending` for this client, if ever
    /// (`HIM_RETURN_AFTER_MS`; `auto` recognises Claude Code by its `clientInfo.name`).
    /// Never for an HTTP request outside a session (2026-07-28): its server, and with it
    /// the question left open, ends with the request (`http.rs`).
    fn return_after(&self, ctx: &RequestContext<RoleServer>) -> Option<Duration> {
        if super::http::outside_a_session(&ctx.extensions) {
            return None;
        }
        let name = ctx.client_info().map(|info| info.name);
        self.shared.config.return_after.for_client(name.as_deref())
    }

    /// How this client can be elicited, if at all. 2026-07-28 and later forbid
    /// server-to-client requests, so there elicitation is an `input_required` round trip.
    fn elicitation_mode(&self, ctx: &RequestContext<RoleServer>) -> ElicitationMode {
        let input_required_era = ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        match (Self::client_elicitation(ctx), input_required_era) {
            (false, _) => ElicitationMode::None,
            (true, true) if self.shared.states.is_some() => ElicitationMode::InputRequired,
            (true, true) => ElicitationMode::None,
            (true, false) => ElicitationMode::Create,
        }
    }

    /// The body of each of the five ask tools. rmcp holds a call's future for as long as its
    /// question waits, and a future is as large as its largest state: so the arguments and
    /// the request's context are read by a first step ([`HimServer::start_ask`]), whose
    /// state is gone once the second ([`Waiting::wait`]) keeps only what the wait needs
    /// (BENCHMARKS.md, "Memory per pending question").
    fn ask_tool<A: AskTool>(
        &self,
        args: A,
        retry: Retry,
        ctx: RequestContext<RoleServer>,
    ) -> BoxFuture<'_, Result<CallToolResponse, ErrorData>> {
        let (form, timeout_ms) = (args.to_form(), args.wait_ms());
        Box::pin(
            self.start_ask(A::KIND, form, timeout_ms, retry, ctx)
                .then(Started::finish),
        )
    }

    /// One ask tool's call up to its wait: the retry of a 2026-07-28 round trip is finished
    /// at once, and a task is started; otherwise the question is ready to go through the
    /// channel chain.
    async fn start_ask(
        &self,
        tool: ToolKind,
        form: Result<Form, ArgError>,
        timeout_ms: Option<u64>,
        retry: Retry,
        ctx: RequestContext<RoleServer>,
    ) -> Started<'_> {
        let form = match form {
            Ok(form) => form,
            Err(err) => return Started::Done(Err(invalid_params(err))),
        };
        if let Some(state) = retry.state {
            return Started::Done(self.finish_retry(tool, form, &state, retry.responses, &ctx));
        }
        let project = self.project.of_call(&ctx).await;
        let timeout = self.shared.config.wait_for(timeout_ms);
        let prepared = match prepare::prepare_in(tool, form, timeout, project) {
            Ok(prepared) => Box::new(prepared),
            Err(PrepareError::TooLarge { error, .. }) => {
                return Started::Done(Err(invalid_params(error)));
            }
            Err(other) => {
                return Started::Done(Err(ErrorData::internal_error(other.to_string(), None)));
            }
        };
        // A password's value must not stay readable from a finished task (rmcp keeps a task's
        // result for its lifetime): such a form gets the blocking call.
        if tasks::offered(self.shared.config.tasks, &ctx) && !prepared.form.has_password() {
            // Boxed: larger than the wait, which would otherwise be as large.
            return Started::Done(Box::pin(self.ask_as_task(*prepared, &ctx)).await);
        }
        tracing::info!(tool = tool.tool_name(), id = %prepared.ask.id, "asking");
        let (notices, notice_rx) = futures::channel::mpsc::unbounded();
        let elicitation = match self.elicitation_mode(&ctx) {
            ElicitationMode::None => Elicitation::None,
            ElicitationMode::InputRequired => Elicitation::OnRetry,
            ElicitationMode::Create => {
                let (peer, form, id) = (
                    ctx.peer.clone(),
                    prepared.form.clone(),
                    prepared.ask.id.clone(),
                );
                Elicitation::Request(Box::new(move |stop| Box::pin(elicit(peer, form, id, stop))))
            }
        };
        let channels = Channels {
            client_elicitation: Self::client_elicitation(&ctx),
            elicitation,
            // stdin and stdout are the MCP client's; the terminal is `him ask`'s alone.
            terminal: None,
            notice: Box::new(move |message: String| {
                let _ = notices.unbounded_send(message);
            }),
            collect: crate::agent::result::Collect::GetAnswer,
            keep_if_cancelled: true,
            parking: Some(self.shared.parking.clone()),
            return_after: self.return_after(&ctx),
            tell_where: false,
        };
        Started::Waiting(Waiting {
            server: self,
            pool: self.pool(&ctx),
            tool,
            prepared,
            channels,
            cancelled: ctx.ct.clone(),
            heartbeat: Heartbeat {
                peer: ctx.peer.clone(),
                token: ctx.meta.get_progress_token(),
                ticks: self.ticks(),
                notices: notice_rx,
            },
        })
    }

    /// A client that declared the tasks extension gets a task at once; the question goes
    /// through the same chain, and `tasks/get` ends with the result this call would return.
    async fn ask_as_task(
        &self,
        prepared: Prepared,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (tool, id) = (prepared.tool, prepared.ask.id.clone());
        let task = self
            .shared
            .tasks
            .start(
                &self.shared.config,
                identity(ctx),
                prepared,
                Self::client_elicitation(ctx),
                self.shared.parking.clone(),
            )
            .await;
        tracing::info!(tool = tool.tool_name(), %id, task = %task.task_id, ttl_ms = ?task.ttl_ms, "asking as a task");
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    /// The tool result for how the question ended.
    fn asked(&self, tool: ToolKind, asked: Asked) -> Result<CallToolResponse, ErrorData> {
        let result = match asked {
            Asked::Done(result) => result,
            Asked::InputRequired(prepared) => {
                let state = RetryState {
                    id: prepared.ask.id,
                    asked_ms: prepared.asked_at_ms,
                    elicited_ms: crate::platform::clock::unix_ms(),
                    deadline_ms: prepared.asked_at_ms + prepared.timeout.as_millis() as u64,
                };
                tracing::info!(tool = tool.tool_name(), id = %state.id, "asking through the client (input_required)");
                return self.input_required(tool, &prepared.form, &state);
            }
        };
        tracing::info!(tool = tool.tool_name(), id = %result.question_id, status = ?result.status, via = ?result.via, "asked");
        super::structured(&result).map(Into::into)
    }

    /// The 2026-07-28 elicitation: the form as an input request, the question's state
    /// sealed so the retry can be trusted.
    fn input_required(
        &self,
        tool: ToolKind,
        form: &Form,
        state: &RetryState,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(codec) = self.shared.states.as_ref() else {
            return Err(ErrorData::internal_error("no requestState key", None));
        };
        let params = elicitation::request(form)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut requests = InputRequests::new();
        requests.insert(
            INPUT_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        let sealed = codec.seal(tool.tool_name(), form, state);
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)).into())
    }

    /// The retry of a call that returned `input_required`: verify the state, judge the reply.
    fn finish_retry(
        &self,
        tool: ToolKind,
        form: Form,
        sealed: &str,
        responses: Option<InputResponses>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let refuse = |message: String| {
            ErrorData::invalid_params(message, Some(json!({ "argument": "requestState" })))
        };
        let Some(codec) = self.shared.states.as_ref() else {
            return Err(refuse("this server issued no requestState".into()));
        };
        let state = codec
            .open(tool.tool_name(), &form, sealed)
            .map_err(|e| refuse(e.to_string()))?;
        let Some(reply) = responses.and_then(|mut r| r.remove(INPUT_KEY)) else {
            // A retry without our answer (e.g. load shedding): ask for it again.
            return self.input_required(tool, &form, &state);
        };
        let now = crate::platform::clock::unix_ms();
        codec
            .redeem(&state, now)
            .map_err(|e| refuse(e.to_string()))?;
        let cx = CallContext {
            tool,
            form: &form,
            question_id: &state.id,
            elapsed_ms: now.saturating_sub(state.asked_ms),
            client_elicitation: Self::client_elicitation(ctx),
        };
        let result = if now > state.deadline_ms {
            result::from_outcome(&cx, Via::Elicitation, Outcome::Timeout)
        } else {
            match serde_json::from_value::<ElicitResult>(reply) {
                Ok(reply) => ask::elicitation_result(
                    &cx,
                    self.shared.config.auto_reject,
                    elicitation::answer_of(&form, &state.id, &reply),
                    Duration::from_millis(now.saturating_sub(state.elicited_ms)),
                ),
                Err(err) => result::from_outcome(
                    &cx,
                    Via::Elicitation,
                    Outcome::Invalid(AnswerError {
                        field: None,
                        message: format!("the client's reply is not an elicitation result: {err}"),
                    }),
                ),
            }
        };
        tracing::info!(tool = tool.tool_name(), id = %result.question_id, status = ?result.status, "asked through the client");
        super::structured(&result).map(Into::into)
    }

    /// Ask the person for a short free-text answer (a name, a value, a sentence).
    /// Use when the answer is open-ended and only the person knows it; for a fixed set of
    /// options use ask_choice, for yes/no ask_confirm, for several values at once ask_form.
    /// Blocks until the person answers, declines, or the timeout (for a client that cuts or
    /// backgrounds long calls it returns `pending` before that: then call get_answer); read
    /// `status` and follow `next_step` (it may hand the question back to you to ask in chat).
    #[tool(
        name = "ask_text",
        annotations(title = "Ask the person for text", read_only_hint = true, open_world_hint = true),
        output_schema = output_schema::<AskResult>()
    )]
    fn ask_text(
        &self,
        Parameters(args): Parameters<AskTextArgs>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> BoxFuture<'_, Result<CallToolResponse, ErrorData>> {
        self.ask_tool(args, Retry { state, responses }, ctx)
    }

    /// Ask the person to pick one of 2–25 options; the answer is the chosen label.
    /// Use for a decision between alternatives you can list (mark the one you recommend);
    /// set allow_free_text when none may fit. Not for yes/no (ask_confirm) or several picks
    /// (ask_multi_select). Read `status` and follow `next_step`.
    #[tool(
        name = "ask_choice",
        annotations(title = "Ask the person to choose", read_only_hint = true, open_world_hint = true),
        output_schema = output_schema::<AskResult>()
    )]
    fn ask_choice(
        &self,
        Parameters(args): Parameters<AskChoiceArgs>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> BoxFuture<'_, Result<CallToolResponse, ErrorData>> {
        self.ask_tool(args, Retry { state, responses }, ctx)
    }

    /// Ask the person to pick any number of options (bounded by min/max); the answer is
    /// `selected`, a list of labels. Use when several may apply (which tests to run, which
    /// files to keep). Read `status` and follow `next_step`.
    #[tool(
        name = "ask_multi_select",
        annotations(title = "Ask the person to pick several", read_only_hint = true, open_world_hint = true),
        output_schema = output_schema::<AskResult>()
    )]
    fn ask_multi_select(
        &self,
        Parameters(args): Parameters<AskMultiSelectArgs>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> BoxFuture<'_, Result<CallToolResponse, ErrorData>> {
        self.ask_tool(args, Retry { state, responses }, ctx)
    }

    /// Ask the person a yes/no question; `confirmed` is true or false.
    /// Use before anything destructive, costly or irreversible (deleting, deploying,
    /// spending). If the result is `pending`, the person has not answered yet: call
    /// `get_answer` as its `next_step` says, and do nothing meanwhile. Any other result that
    /// is not `answered` is a no.
    #[tool(
        name = "ask_confirm",
        annotations(title = "Ask the person to confirm", read_only_hint = true, open_world_hint = true),
        output_schema = output_schema::<AskResult>()
    )]
    fn ask_confirm(
        &self,
        Parameters(args): Parameters<AskConfirmArgs>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> BoxFuture<'_, Result<CallToolResponse, ErrorData>> {
        self.ask_tool(args, Retry { state, responses }, ctx)
    }

    /// Ask the person to fill in a form of several typed fields at once (text, email, url,
    /// password, number, textarea, select, radio, checkbox, confirm, multi_select); the
    /// answer is `values`, keyed by field name, validated against the fields. Use when you
    /// need several related values together; for one value use the simpler tools.
    /// Password values come back only to you; never echo them.
    #[tool(
        name = "ask_form",
        annotations(title = "Ask the person to fill in a form", read_only_hint = true, open_world_hint = true),
        output_schema = output_schema::<AskResult>()
    )]
    fn ask_form(
        &self,
        Parameters(args): Parameters<AskFormArgs>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> BoxFuture<'_, Result<CallToolResponse, ErrorData>> {
        self.ask_tool(args, Retry { state, responses }, ctx)
    }

    /// Collect the person's answer to a question whose call ended unanswered (its result
    /// said `pending`, `timeout` or `cancelled` and named a question_id): the question stays
    /// open in their browser for a while and their answer is kept for you. Returns the same
    /// result as the ask tool would have, with `late: true` and `answered_at`; or `pending`
    /// (still open: this call waits up to wait_ms for the person first), `expired`, or
    /// `unknown`.
    /// Never guess an answer that is not here.
    #[tool(
        name = "get_answer",
        annotations(title = "Collect a late answer", read_only_hint = true, open_world_hint = true),
        output_schema = output_schema::<AskResult>()
    )]
    async fn get_answer(
        &self,
        Parameters(args): Parameters<GetAnswerArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let config = &self.shared.config;
        let wait = match args.wait_ms {
            Some(0) => Duration::ZERO,
            given => config.wait_for(given),
        };
        // A client that cuts or backgrounds long calls gets `pending` before that, again.
        let wait = self
            .return_after(&ctx)
            .map_or(wait, |limit| wait.min(limit));
        let getting = crate::agent::late::get_answer(
            self.pool(&ctx),
            config,
            &args.question_id,
            wait,
            crate::agent::result::Collect::GetAnswer,
            Self::client_elicitation(&ctx),
            Some(&self.shared.parking),
            ctx.ct.clone().cancelled_owned(),
        );
        let result = self
            .with_heartbeat(&ctx, getting)
            .await
            .map_err(invalid_params)?;
        tracing::info!(id = %result.question_id, status = ?result.status, "get_answer");
        super::structured(&result)
    }

    /// Report, without asking anything, how a question would reach the person right now:
    /// connected browsers, the channel and why, and the configuration in force. Use it to
    /// diagnose, not before every question.
    #[tool(
        name = "human_input_status",
        annotations(title = "How would a question reach the person?", read_only_hint = true, open_world_hint = false),
        output_schema = output_schema::<StatusResult>()
    )]
    async fn human_input_status(
        &self,
        Parameters(StatusArgs {}): Parameters<StatusArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let pool = self.pool(&ctx);
        let connected = pool.scan().await;
        // A host just linked has not yet said which extension it serves or whether the
        // panel is open: its welcome says so, within milliseconds.
        pool.welcomed(FIRST_WELCOME_WAIT).await;
        let browsers: Vec<BrowserStatus> =
            pool.hosts().into_iter().map(BrowserStatus::from).collect();
        let matrix = pool.matrix().map(|host| MatrixStatus {
            socket: host.socket.display().to_string(),
            room: host.extension.map(|e| e.id),
        });
        let client_elicitation = Self::client_elicitation(&ctx);
        let fallback = self.shared.config.fallback.name().to_owned();
        let elicitation = self.elicitation_mode(&ctx).name();
        let (otherwise, otherwise_why) = match self.shared.config.fallback {
            FallbackMode::Http => (
                "http",
                "HIM_FALLBACK=http opens a one-time form on 127.0.0.1 in the person's browser \
                 (its address comes back as form_url and in a progress message)",
            ),
            FallbackMode::Return => (
                "chat",
                "HIM_FALLBACK=return hands the question back to you to ask in chat",
            ),
            FallbackMode::Off => ("none", "HIM_FALLBACK=off answers unsupported"),
        };
        let (channel, reason) = if connected > 0 {
            (
                "extension",
                format!(
                    "{connected} browser(s) with the him extension connected; the side panel \
                     takes the question"
                ),
            )
        } else if let Some(lost_at) = pool.hosts_lost_within(self.shared.config.reconnect_grace) {
            (
                "extension",
                format!(
                    "the browser's host went away {} ms ago, as when its service worker \
                     restarts; a question waits up to HIM_RECONNECT_GRACE_MS for it to come back",
                    lost_at.elapsed().as_millis()
                ),
            )
        } else if elicitation != "none" {
            let how = if elicitation == "input_required" {
                "as an input_required result (protocol 2026-07-28) that the client shows and \
                 answers on its retry"
            } else {
                "with elicitation/create (protocol 2025-11-25 or earlier)"
            };
            (
                "elicitation",
                format!(
                    "no browser is connected and this client declared form elicitation, so the \
                     client shows the form itself, {how}; a form with a password field skips \
                     it: {otherwise_why}"
                ),
            )
        } else if matrix.is_some() {
            (
                "matrix",
                "no browser is connected and this client cannot show a form itself; the \
                 question goes to the Matrix room and waits there for an answer"
                    .to_owned(),
            )
        } else {
            let why = if client_elicitation {
                "this session cannot carry elicitation"
            } else {
                "this client did not declare form elicitation"
            };
            (
                otherwise,
                format!("no browser is connected and {why}; {otherwise_why}"),
            )
        };
        let status = StatusResult {
            browsers,
            matrix,
            channel: channel.into(),
            reason,
            client_elicitation,
            elicitation: elicitation.into(),
            protocol_version: ctx
                .protocol_version()
                .map(|v| v.to_string())
                .unwrap_or_default(),
            fallback,
            timeout_ms: self.shared.config.timeout.as_millis() as u64,
            heartbeat_ms: self.shared.config.heartbeat.as_millis() as u64,
            reconnect_grace_ms: self.shared.config.reconnect_grace.as_millis() as u64,
            return_after_ms: self
                .return_after(&ctx)
                .map_or(0, |after| after.as_millis() as u64),
            runtime_dir: self.shared.config.runtime.dir.display().to_string(),
            runtime_dir_rule: self.shared.config.runtime.rule.name().to_owned(),
            runtime_dirs_searched: self
                .shared
                .config
                .runtime
                .search()
                .iter()
                .map(|dir| dir.display().to_string())
                .collect(),
        };
        let value = serde_json::to_value(&status)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(CallToolResult::structured(value))
    }
}

/// The arguments Claude Code's `--permission-prompt-tool` passes (verified with Claude Code
/// 2.1.197): `{"tool_name": "Bash", "input": {…}, "tool_use_id": "toolu_…"}`. Keys this
/// struct does not name are accepted and ignored (no `deny_unknown_fields`, so the schema
/// has no `additionalProperties: false`): a newer Claude Code may send more.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ApproveArgs {
    /// The tool the agent wants to run (Bash, Edit, Write, WebFetch, mcp__server__tool, …).
    pub tool_name: String,
    /// Its input, exactly as it would run; shown to the person verbatim.
    #[serde(default)]
    #[schemars(schema_with = "input_schema")]
    pub input: Value,
    /// The one call this decision is for.
    #[serde(default)]
    pub tool_use_id: String,
}

fn input_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "description": "The tool's input, exactly as it would run"
    })
}

#[tool_router(router = permission_router)]
impl HimServer {
    /// Claude Code's permission prompt, answered by the person in the browser side panel:
    /// register with `--permission-prompt-tool mcp__him__approve`. Shows the tool and its
    /// input verbatim with Allow and Deny; returns `{"behavior":"allow","updatedInput":…}`
    /// or `{"behavior":"deny","message":…}`. Denies when the person denies, no answer comes
    /// in time, or no browser is connected. Not for agents to call on their own.
    #[tool(
        name = "approve",
        annotations(
            title = "Ask the person to approve a tool call",
            read_only_hint = true,
            open_world_hint = true
        )
    )]
    async fn approve(
        &self,
        Parameters(args): Parameters<ApproveArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = crate::permission::Request {
            tool_name: args.tool_name,
            input: args.input,
            tool_use_id: Some(args.tool_use_id).filter(|id| !id.is_empty()),
            // Claude Code calls the tool with `{tool_name, input, tool_use_id}` only (2.1.332):
            // no suggestions, so no "allow for this session" here.
            suggestions: Vec::new(),
        };
        let agent = ctx
            .client_info()
            .map(|info| info.title.unwrap_or(info.name))
            .unwrap_or_else(|| "The agent".into());
        let prompt = crate::permission::prompt_for(&request, &agent);
        let config = &self.shared.config;
        let asking = crate::permission::ask(
            self.pool(&ctx),
            &prompt,
            config.timeout,
            config.reconnect_grace,
            ctx.ct.clone().cancelled_owned(),
        );
        let outcome = self.with_heartbeat(&ctx, asking).await;
        let decision = crate::permission::decide(&request, &prompt, outcome);
        // The decision only: the tool's input may hold secrets (a command line, a file).
        tracing::info!(decision = decision.name(), "permission prompt decided");
        // Exactly one text block and no structuredContent: Claude Code 2.1.197 refuses any
        // other result ("Permission prompt tool returned an invalid result").
        let text = decision.prompt_tool_json().to_string();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for HimServer {
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // The default's own step; the URL's project is ours.
        context.peer.set_peer_info(request.clone());
        self.project.initialized(&context.extensions);
        self.negotiate_initialize(&request)
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        self.project.roots_changed().await;
    }

    fn get_info(&self) -> ServerConfig {
        let capabilities = match self.shared.config.tasks {
            TasksMode::Off => ServerCapabilities::builder().enable_tools().build(),
            TasksMode::Auto | TasksMode::On => ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    // rmcp answers these only for a client that declared the tasks extension.
    async fn get_task(
        &self,
        request: GetTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.shared
            .tasks
            .get(&request.task_id)
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared
            .tasks
            .update(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared.tasks.cancel(&request.task_id)
    }
}

/// Who asks, as the hosts are told: the MCP client's `clientInfo` and the project.
fn identity(ctx: &RequestContext<RoleServer>) -> Identity {
    let agent = match ctx.client_info() {
        Some(info) => {
            asker::agent_of_client(&info.name, info.title.as_deref(), Some(&info.version))
        }
        None => AgentInfo::named(asker::UNNAMED_CLIENT),
    };
    Identity::with_cwd_project(agent)
}

/// One `elicitation/create` (protocol ≤ 2025-11-25), withdrawn with a cancellation when
/// `stop` fires first. Runs in the tool call's own task: rmcp checks the protocol version
/// of outgoing requests with a task-local set for the call.
async fn elicit(
    peer: Peer<RoleServer>,
    form: Form,
    id: String,
    stop: CancellationToken,
) -> ElicitEnd {
    // Our own params rather than rmcp's `ElicitRequest`, whose schema type writes every
    // bound as a float (`elicitation::create_params`); the client reads the same request.
    let params = match elicitation::create_params(&form) {
        Ok(params) => params,
        Err(err) => return ElicitEnd::Failed(err.to_string()),
    };
    let request = ServerRequest::CustomRequest(CustomRequest::new(
        ElicitationCreateRequestMethod::VALUE,
        Some(params),
    ));
    let mut handle = match peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(err) => return ElicitEnd::Failed(err.to_string()),
    };
    tracing::info!(%id, "elicitation sent");
    let reply = tokio::select! {
        reply = &mut handle.rx => reply,
        _ = stop.cancelled() => {
            if let Err(err) = handle.cancel(Some("the question was closed".into())).await {
                tracing::debug!("elicitation cancellation not sent: {err}");
            }
            return ElicitEnd::Stopped;
        }
    };
    match reply {
        Ok(Ok(ClientResult::ElicitResult(result))) => {
            ElicitEnd::Reply(elicitation::answer_of(&form, &id, &result))
        }
        Ok(Ok(ClientResult::CustomResult(CustomResult(reply)))) => {
            match serde_json::from_value::<ElicitResult>(reply) {
                Ok(result) => ElicitEnd::Reply(elicitation::answer_of(&form, &id, &result)),
                Err(err) => {
                    ElicitEnd::Failed(format!("the reply is not an elicitation result: {err}"))
                }
            }
        }
        Ok(Ok(other)) => ElicitEnd::Failed(format!("unexpected reply {other:?}")),
        Ok(Err(ServiceError::McpError(err))) => ElicitEnd::Failed(err.message.into_owned()),
        Ok(Err(err)) => ElicitEnd::Failed(err.to_string()),
        Err(_) => ElicitEnd::Failed("the MCP session closed".into()),
    }
}

/// The session's heartbeat clock: one timer for every waiting call, which each call
/// follows with a receiver instead of keeping a timer of its own. Ends when the session's
/// server, and with it every receiver, is gone.
async fn tick(ticks: watch::Sender<()>, period: Duration) {
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        if ticks.send(()).is_err() {
            return;
        }
    }
}

/// What a waiting call needs to send progress: the session's peer, the call's progress
/// token, the session's clock, and the notices for the agent (the loopback form's URL).
struct Heartbeat {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    ticks: watch::Receiver<()>,
    notices: futures::channel::mpsc::UnboundedReceiver<String>,
}

impl Heartbeat {
    /// Sends a progress notification at every tick of the session's clock (so at least every
    /// heartbeat period), and each notice as it comes, for as long as it is polled; never
    /// ends. It runs inside the call's own future, so nothing is sent for a call once it has
    /// returned. Clients that reset their request timeout on progress keep waiting for the
    /// person. Notices are not logged: the loopback form's carries its URL, whose token is
    /// the question's one secret (the log says its port).
    ///
    /// A block over `self` rather than an `async fn`, whose arguments would be held twice
    /// for the whole wait.
    #[allow(clippy::manual_async_fn)]
    fn run(mut self) -> impl Future<Output = Infallible> + Send {
        async move {
            let started = tokio::time::Instant::now();
            let mut ticking = true;
            let mut last = 0.0f64;
            loop {
                let message = tokio::select! {
                    changed = self.ticks.changed(), if ticking => {
                        if changed.is_err() {
                            ticking = false;
                            continue;
                        }
                        format!(
                            "Waiting for the person to answer ({} s so far)",
                            started.elapsed().as_secs()
                        )
                    }
                    Some(notice) = self.notices.next() => notice,
                    // Neither can end while the call runs (the call holds the notice sender
                    // and the session the clock); should both, there is nothing left to send.
                    else => std::future::pending().await,
                };
                let Some(token) = &self.token else { continue };
                // Progress must grow with every notification, notices included.
                let progress = started.elapsed().as_secs_f64().max(last + 0.001);
                last = progress;
                let param =
                    ProgressNotificationParam::new(token.clone(), progress).with_message(message);
                // Boxed: rmcp's send is larger than the rest of this loop, and inline it
                // would size every waiting call for the moment of each tick.
                if let Err(err) = Box::pin(self.peer.notify_progress(param)).await {
                    tracing::debug!("progress notification not sent: {err}");
                }
            }
        }
    }
}
