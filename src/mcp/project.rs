//! The project of one question asked over MCP, as `crate::agent::asker` orders the sources: the
//! call's `_meta`, the HTTP URL's `?project=` (the session's, read at `initialize`; a
//! sessionless request's own), the client's roots, and else none here — the `hello`'s
//! working directory.
//!
//! Roots are asked for once per session, at its first question, from the call's own future
//! (so that over HTTP the request goes on that call's stream), and kept until the client
//! says they changed. A client that does not answer within `asker::ROOTS_WAIT` is taken as
//! having none for the session; a client that did not declare roots is never asked.

use std::sync::OnceLock;

use rmcp::RoleServer;
use rmcp::model::{Extensions, ProtocolVersion};
use rmcp::service::RequestContext;

use crate::agent::asker;

/// What one session knows of its project. Shared by every call of the session.
#[derive(Default)]
pub struct SessionProject {
    /// The `?project=` of the URL the session was opened with (HTTP only).
    url: OnceLock<Option<String>>,
    /// The project of the client's roots once asked (`Some(None)`: no answer in time, an
    /// error, or no `file://` root); `None` until then, and again after a change. Locked
    /// across the asking, so calls that come meanwhile wait for the one answer.
    roots: tokio::sync::Mutex<Option<Option<String>>>,
}

impl SessionProject {
    /// At `initialize`: the project the session's URL names, if it came over HTTP.
    pub fn initialized(&self, extensions: &Extensions) {
        let _ = self.url.set(url_project(extensions));
    }

    /// `notifications/roots/list_changed`: the next question asks again.
    pub async fn roots_changed(&self) {
        *self.roots.lock().await = None;
    }

    /// The project of the question `ctx` asks, when it names one over the `hello`'s.
    pub async fn of_call(&self, ctx: &RequestContext<RoleServer>) -> Option<String> {
        if let Some(project) = asker::project_of_meta(&ctx.meta) {
            return Some(project);
        }
        // A session's URL was read at its `initialize`; a sessionless request (2026-07-28)
        // had none, and is read on its own.
        let url = match self.url.get() {
            Some(url) => url.clone(),
            None => url_project(&ctx.extensions),
        };
        if url.is_some() || !may_ask_roots(ctx) {
            return url;
        }
        // Boxed: a request to the client is larger than the rest of a call's first step,
        // which would be as large (and the call's future with it, `mcp/server.rs`).
        Box::pin(self.of_roots(ctx)).await
    }

    // Roots leave MCP with 2026-07-28 (SEP-2577, hence rmcp's deprecation); clients of
    // 2025-11-25 and before still tell their folder only this way.
    #[allow(deprecated)]
    async fn of_roots(&self, ctx: &RequestContext<RoleServer>) -> Option<String> {
        let mut known = self.roots.lock().await;
        if let Some(project) = &*known {
            return project.clone();
        }
        let project = match tokio::time::timeout(asker::ROOTS_WAIT, ctx.peer.list_roots()).await {
            Ok(Ok(list)) => asker::project_of_roots(list.roots.iter().map(|r| r.uri.as_str())),
            Ok(Err(err)) => {
                tracing::info!("roots/list failed ({err}); the project is the working directory's");
                None
            }
            Err(_) => {
                tracing::info!(
                    "no answer to roots/list within {} ms; the project is the working \
                     directory's for this session",
                    asker::ROOTS_WAIT.as_millis()
                );
                None
            }
        };
        *known = Some(project.clone());
        project
    }
}

/// Whether the client of `ctx` may be asked for its roots: it declared them, and its
/// protocol is older than 2026-07-28, which forbids server-to-client requests.
fn may_ask_roots(ctx: &RequestContext<RoleServer>) -> bool {
    let declared = ctx.client_capabilities().is_some_and(|c| c.roots.is_some());
    declared
        && !ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// The `?project=` of the HTTP request whose parts rmcp put in `extensions`, if any.
fn url_project(extensions: &Extensions) -> Option<String> {
    let parts = extensions.get::<http::request::Parts>()?;
    asker::project_of_query(parts.uri.query())
}
