//! `him serve`: the MCP server on stdio (or, with `--http`, Streamable HTTP: `http.rs`).
//! Each ask tool turns its arguments into a form (`agent/tools.rs`), asks through the shared flow
//! (`agent/ask.rs`) while sending progress heartbeats, and returns the result object as
//! structured content.

pub mod elicitation;
mod ending;
pub mod http;
mod params;
mod project;
pub mod schema;
mod server;
mod tasks;

use std::process::ExitCode;

use rmcp::ServiceExt;
use rmcp::model::{CallToolResult, ContentBlock};

use crate::BoxError;
use crate::agent::result::AskResult;
use crate::cli::ServeArgs;
use crate::config::Config;

pub use server::{HimServer, SharedParts};

pub fn serve(args: ServeArgs) -> Result<ExitCode, BoxError> {
    crate::platform::logging::init();
    let config = Config::from_env()?;
    if args.http.is_some() {
        if args.print_token {
            return http::print_token(&config);
        }
        if args.new_path_token {
            return http::new_path_token(&args);
        }
        return http::serve(&args, config);
    }
    // One thread: a session's work is a few messages a second.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let ended = runtime.block_on(async move {
        // First, before anything can be asked: a signal must find its handler in place.
        let stopped = crate::platform::signals::stop_signals();
        crate::agent::pool::spawn_tidy(&config.runtime);
        let server = if args.permission_tool {
            HimServer::new(config).with_permission_tool()
        } else {
            HimServer::new(config)
        };
        let pool_owner = server.clone();
        // Non-blocking pipes when the client gave us pipes (the usual case), on their own
        // open file descriptions so our stdio stays blocking for anything we spawn.
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        let on_eof = server.clone();
        let transport = ending::WithdrawOnEof::new(
            rmcp::transport::async_rw::AsyncRwTransport::new_server(stdin, stdout),
            Box::new(move || {
                on_eof.shutdown();
                on_eof.shutdown_tasks();
            }),
        );
        let running = async {
            let service = elicitation::IntegralNumbers(server)
                .serve(transport)
                .await?;
            Ok::<_, BoxError>(service.waiting().await)
        };
        // A client stops its server with a signal as often as by closing its input (Claude
        // Code: SIGINT, SIGTERM 100 ms later, SIGKILL at 500 ms, stdin closed only after).
        // Either way the session is over, and ends alike: what a browser has is kept.
        tokio::select! {
            reason = running => tracing::debug!(reason = ?reason?, "MCP session ended"),
            () = stopped => {}
        }
        // The client is gone: whatever it asked can no longer be answered to anyone.
        pool_owner.close().await;
        pool_owner.close_tasks().await;
        Ok::<_, BoxError>(())
    });
    // Not waiting on a read of stdin still blocked in a thread (a signal came first).
    runtime.shutdown_background();
    ended?;
    Ok(ExitCode::SUCCESS)
}

/// The result as structured content and its text copy (MCP asks for both). The text is
/// written from the result itself, the same bytes as from the JSON tree but without
/// walking it a second time.
fn structured(result: &AskResult) -> Result<CallToolResult, rmcp::ErrorData> {
    let internal = |e: serde_json::Error| rmcp::ErrorData::internal_error(e.to_string(), None);
    let value = serde_json::to_value(result).map_err(internal)?;
    let text = serde_json::to_string(result).map_err(internal)?;
    let mut call_result = CallToolResult::success(vec![ContentBlock::text(text)]);
    call_result.structured_content = Some(value);
    Ok(call_result)
}
