//! `him serve`: the MCP server on stdio (or, with `--http`, Streamable HTTP: `http.rs`).
//! Each ask tool turns its arguments into a form (`tools.rs`), asks through the shared flow
//! (`asking.rs`) while sending progress heartbeats, and returns the result object as
//! structured content.

mod dispatch;
pub mod elicitation;
pub mod http;
mod params;
mod server;

use std::process::ExitCode;

use std::future::Future;

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{RoleServer, ServiceExt};

use crate::BoxError;
use crate::cli::ServeArgs;
use crate::config::Config;

pub use server::HimServer;

pub fn serve(args: ServeArgs) -> Result<ExitCode, BoxError> {
    crate::logging::init();
    let config = Config::from_env()?;
    if args.http.is_some() {
        if args.print_token {
            return http::print_token(&config);
        }
        return http::serve(&args, config);
    }
    // One thread: a session's work is a few messages a second, and every hand-off between
    // threads (runtime workers, the blocking pool behind tokio's stdin and stdout) costs a
    // wake-up on each hop of a round trip. BENCHMARKS.md has the figures.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let server = HimServer::new(config);
        let pool_owner = server.clone();
        // Non-blocking pipes when the client gave us pipes (the usual case), on their own
        // open file descriptions so our stdio stays blocking for anything we spawn.
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        let on_eof = server.clone();
        let transport = UntilEof {
            inner: AsyncRwTransport::new_server(stdin, stdout),
            on_eof: Some(Box::new(move || on_eof.shutdown())),
        };
        let service = dispatch::Dispatch(server).serve(transport).await?;
        let reason = service.waiting().await;
        // The client is gone: whatever it asked can no longer be answered to anyone.
        pool_owner.shutdown();
        tracing::debug!(?reason, "MCP session ended");
        Ok::<_, BoxError>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// rmcp's stdio transport, telling us the moment the client closes its end. rmcp then
/// gives calls in progress 5 s to finish before it stops them; ours wait for a person, so
/// they are withdrawn at once instead: the panel clears, and each call ends as cancelled.
struct UntilEof<T> {
    inner: T,
    on_eof: Option<Box<dyn FnOnce() + Send>>,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for UntilEof<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.inner.receive().await;
        if message.is_none()
            && let Some(on_eof) = self.on_eof.take()
        {
            on_eof();
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
