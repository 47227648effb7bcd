//! The tools of DESIGN.md §5 on an rmcp `ToolRouter`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::params::Parameters;
use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, ErrorData, Implementation, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::agent::{HostStatus, Identity, Pool};
use crate::asking::{self, PrepareError};
use crate::config::Config;
use crate::form::Form;
use crate::outcome::AskResult;
use crate::protocol::{AgentInfo, ExtensionInfo};
use crate::tools::{
    ArgError, AskChoiceArgs, AskConfirmArgs, AskFormArgs, AskMultiSelectArgs, AskTextArgs, ToolKind,
};

#[derive(Clone)]
pub struct HimServer {
    config: Arc<Config>,
    /// Made on the first question, when the client's name is known for the `hello`.
    pool: Arc<OnceLock<Pool>>,
    tool_router: ToolRouter<HimServer>,
}

const INSTRUCTIONS: &str = "him asks the human user a question and returns their typed answer. \
Use the ask_* tools when you need a decision, a missing fact, or approval that only the person \
can give; do not use them for things you can find out yourself. Every result has `status` and \
`next_step`: follow `next_step`.";

fn invalid_params(err: ArgError) -> ErrorData {
    ErrorData::invalid_params(err.to_string(), Some(json!({ "argument": err.argument })))
}

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
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StatusResult {
    /// Browsers with the him extension connected now.
    pub browsers: Vec<BrowserStatus>,
    /// The channel a question would take now: extension, chat (hand-back) or none.
    pub channel: String,
    /// Why that channel.
    pub reason: String,
    /// Whether this client declared MCP form elicitation.
    pub client_elicitation: bool,
    /// HIM_FALLBACK in force: return, http or off.
    pub fallback: String,
    /// Default wait for an answer, in milliseconds.
    pub timeout_ms: u64,
    /// Progress-notification period, in milliseconds.
    pub heartbeat_ms: u64,
    /// How long a question waits for a browser to come back, in milliseconds.
    pub reconnect_grace_ms: u64,
    /// Where host sockets are looked for.
    pub runtime_dir: String,
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
        }
    }
}

#[tool_router]
impl HimServer {
    pub fn new(config: Config) -> HimServer {
        HimServer {
            config: Arc::new(config),
            pool: Arc::new(OnceLock::new()),
            tool_router: Self::tool_router(),
        }
    }

    /// Withdraws every question still open; returns how many there were.
    pub fn shutdown(&self) {
        if let Some(pool) = self.pool.get() {
            pool.shutdown();
        }
    }

    fn pool(&self, ctx: &RequestContext<RoleServer>) -> &Pool {
        self.pool.get_or_init(|| {
            let agent = match ctx.client_info() {
                Some(info) => AgentInfo {
                    name: info.name,
                    title: info.title,
                    version: Some(info.version).filter(|v| !v.is_empty()),
                },
                None => AgentInfo {
                    name: "MCP client".into(),
                    title: None,
                    version: None,
                },
            };
            Pool::new(
                self.config.runtime_dir.clone(),
                Identity::with_cwd_project(agent),
            )
        })
    }

    fn client_elicitation(ctx: &RequestContext<RoleServer>) -> bool {
        ctx.client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some()
    }

    async fn ask(
        &self,
        tool: ToolKind,
        form: Result<Form, ArgError>,
        timeout_ms: Option<u64>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let form = form.map_err(invalid_params)?;
        let prepared = asking::prepare(tool, form, self.config.wait_for(timeout_ms)).map_err(
            |err| match err {
                PrepareError::TooLarge(arg) => invalid_params(arg),
                other => ErrorData::internal_error(other.to_string(), None),
            },
        )?;
        tracing::info!(tool = tool.tool_name(), id = %prepared.ask.id, "asking");
        let pool = self.pool(&ctx).clone();
        let heartbeat = heartbeat(
            ctx.peer.clone(),
            ctx.meta.get_progress_token(),
            self.config.heartbeat,
        );
        let elicitation = Self::client_elicitation(&ctx);
        let result: AskResult = tokio::select! {
            result = asking::ask(&pool, &self.config, prepared, elicitation, ctx.ct.cancelled()) => result,
            never = heartbeat => match never {},
        };
        tracing::info!(tool = tool.tool_name(), id = %result.question_id, status = ?result.status, "asked");
        let value = serde_json::to_value(&result)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(CallToolResult::structured(value))
    }

    /// Ask the person for a short free-text answer (a name, a value, a sentence).
    /// Use when the answer is open-ended and only the person knows it; for a fixed set of
    /// options use ask_choice, for yes/no ask_confirm, for several values at once ask_form.
    /// Blocks until the person answers, declines, or the timeout; read `status` and follow
    /// `next_step` (it may hand the question back to you to ask in chat).
    #[tool(
        name = "ask_text",
        annotations(title = "Ask the person for text", read_only_hint = true, open_world_hint = true),
        output_schema = schema_for_output::<AskResult>()
    )]
    async fn ask_text(
        &self,
        Parameters(args): Parameters<AskTextArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.ask(ToolKind::Text, args.to_form(), args.timeout_ms, ctx)
            .await
    }

    /// Ask the person to pick one of 2–25 options; the answer is the chosen label.
    /// Use for a decision between alternatives you can list (mark the one you recommend);
    /// set allow_free_text when none may fit. Not for yes/no (ask_confirm) or several picks
    /// (ask_multi_select). Read `status` and follow `next_step`.
    #[tool(
        name = "ask_choice",
        annotations(title = "Ask the person to choose", read_only_hint = true, open_world_hint = true),
        output_schema = schema_for_output::<AskResult>()
    )]
    async fn ask_choice(
        &self,
        Parameters(args): Parameters<AskChoiceArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.ask(ToolKind::Choice, args.to_form(), args.timeout_ms, ctx)
            .await
    }

    /// Ask the person to pick any number of options (bounded by min/max); the answer is
    /// `selected`, a list of labels. Use when several may apply (which tests to run, which
    /// files to keep). Read `status` and follow `next_step`.
    #[tool(
        name = "ask_multi_select",
        annotations(title = "Ask the person to pick several", read_only_hint = true, open_world_hint = true),
        output_schema = schema_for_output::<AskResult>()
    )]
    async fn ask_multi_select(
        &self,
        Parameters(args): Parameters<AskMultiSelectArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.ask(ToolKind::MultiSelect, args.to_form(), args.timeout_ms, ctx)
            .await
    }

    /// Ask the person a yes/no question; `confirmed` is true or false.
    /// Use before anything destructive, costly or irreversible (deleting, deploying,
    /// spending). If the result is not `answered`, treat it as no.
    #[tool(
        name = "ask_confirm",
        annotations(title = "Ask the person to confirm", read_only_hint = true, open_world_hint = true),
        output_schema = schema_for_output::<AskResult>()
    )]
    async fn ask_confirm(
        &self,
        Parameters(args): Parameters<AskConfirmArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.ask(ToolKind::Confirm, args.to_form(), args.timeout_ms, ctx)
            .await
    }

    /// Ask the person to fill in a form of several typed fields at once (text, email, url,
    /// password, number, textarea, select, radio, checkbox, confirm, multi_select); the
    /// answer is `values`, keyed by field name, validated against the fields. Use when you
    /// need several related values together; for one value use the simpler tools.
    /// Password values come back only to you; never echo them.
    #[tool(
        name = "ask_form",
        annotations(title = "Ask the person to fill in a form", read_only_hint = true, open_world_hint = true),
        output_schema = schema_for_output::<AskResult>()
    )]
    async fn ask_form(
        &self,
        Parameters(args): Parameters<AskFormArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.ask(ToolKind::Form, args.to_form(), args.timeout_ms, ctx)
            .await
    }

    /// Report, without asking anything, how a question would reach the person right now:
    /// connected browsers, the channel and why, and the configuration in force. Use it to
    /// diagnose, not before every question.
    #[tool(
        name = "human_input_status",
        annotations(title = "How would a question reach the person?", read_only_hint = true, open_world_hint = false),
        output_schema = schema_for_output::<StatusResult>()
    )]
    async fn human_input_status(
        &self,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let pool = self.pool(&ctx);
        let connected = pool.scan().await;
        let browsers: Vec<BrowserStatus> =
            pool.hosts().into_iter().map(BrowserStatus::from).collect();
        let client_elicitation = Self::client_elicitation(&ctx);
        let fallback = self.config.fallback.name().to_owned();
        let (channel, reason) = if connected > 0 {
            (
                "extension",
                format!("{connected} browser(s) with the him extension connected"),
            )
        } else if self.config.fallback == crate::config::FallbackMode::Off {
            (
                "none",
                "no browser is connected and HIM_FALLBACK=off".to_owned(),
            )
        } else {
            (
                "chat",
                format!(
                    "no browser is connected; HIM_FALLBACK={fallback} hands the question back to you"
                ),
            )
        };
        let status = StatusResult {
            browsers,
            channel: channel.into(),
            reason,
            client_elicitation,
            fallback,
            timeout_ms: self.config.timeout.as_millis() as u64,
            heartbeat_ms: self.config.heartbeat.as_millis() as u64,
            reconnect_grace_ms: self.config.reconnect_grace.as_millis() as u64,
            runtime_dir: self.config.runtime_dir.display().to_string(),
        };
        let value = serde_json::to_value(&status)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(CallToolResult::structured(value))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for HimServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }
}

enum Never {}

/// Sends a progress notification every `period` for as long as it is polled; never ends.
/// Clients that reset their request timeout on progress keep waiting for the person.
async fn heartbeat(
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    period: Duration,
) -> Never {
    let Some(token) = token else {
        return std::future::pending().await;
    };
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(started + period, period);
    loop {
        ticks.tick().await;
        let waited = started.elapsed().as_secs();
        let param = ProgressNotificationParam::new(token.clone(), waited as f64).with_message(
            format!("Waiting for the person to answer ({waited} s so far)"),
        );
        if let Err(err) = peer.notify_progress(param).await {
            tracing::debug!("progress notification not sent: {err}");
        }
    }
}
