//! rmcp's `Service` for [`HimServer`]: tool calls are dispatched here, every other request
//! and every notification by rmcp's own `ServerHandler` dispatch.
//!
//! Why: rmcp runs each request in a task of its own, sized by the largest branch of its
//! dispatch (`subscriptions/listen`, 4.3 KiB in rmcp 3.11), and a call waiting for a person
//! keeps that task for minutes. Dispatched here, a waiting call's task holds only what the
//! call needs (BENCHMARKS.md, memory). The steps rmcp 3.11 takes around a tool call
//! (`impl Service<RoleServer> for H: ServerHandler`, `handler/server.rs`) are taken here in
//! the same order. Sessions that rmcp opened without `initialize` keep rmcp's dispatch:
//! what their calls must carry depends on session state that rmcp keeps to itself. So do
//! `--http` sessions, as rmcp's HTTP service takes a `ServerHandler`, not a `Service`.

use std::borrow::Cow;
use std::future::Future;
use std::sync::OnceLock;

use futures::FutureExt;
use futures::future::Either;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientNotification, ClientRequest,
    ErrorData, ProtocolVersion, ServerConfig, ServerResult,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, RequestContext, Service};
use rmcp::{RoleServer, ServerHandler};

use super::HimServer;

pub struct Dispatch {
    server: HimServer,
    /// Whether the session's first request (after any `server/discover`) was `initialize`.
    /// rmcp keeps whether a session opened without it to itself, and such a session's
    /// requests must carry their own metadata, even after a later `initialize`.
    opened_with_initialize: OnceLock<bool>,
}

impl Dispatch {
    pub fn new(server: HimServer) -> Dispatch {
        Dispatch {
            server,
            opened_with_initialize: OnceLock::new(),
        }
    }
}

impl Service<RoleServer> for Dispatch {
    fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ServerResult, ErrorData>> + MaybeSendFuture + '_ {
        if !matches!(request, ClientRequest::DiscoverRequest(_)) {
            self.opened_with_initialize
                .get_or_init(|| matches!(request, ClientRequest::InitializeRequest(_)));
        }
        match request {
            ClientRequest::CallToolRequest(call)
                if self.opened_with_initialize.get() == Some(&true) =>
            {
                Either::Left(self.call_tool(call.params, context))
            }
            // Boxed, so that only the requests that take rmcp's dispatch pay for its size.
            other => Either::Right(Box::pin(Service::handle_request(
                &self.server,
                other,
                context,
            ))),
        }
    }

    fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        Service::handle_notification(&self.server, notification, context)
    }

    fn get_info(&self) -> ServerConfig {
        ServerHandler::get_info(&self.server)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        ServerHandler::supported_protocol_versions(&self.server)
    }
}

impl Dispatch {
    /// A `tools/call` in a session opened with `initialize`: rmcp's checks before the call,
    /// then the call, then rmcp's shaping of the result for the session's version. Built
    /// from parts, not as an async fn, which would keep the request and its context a
    /// second time beside the call that owns them.
    fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ServerResult, ErrorData>> + Send + '_ {
        let session = CallSession::of(&context);
        match self.check_request(&context) {
            Ok(()) => Either::Left(
                self.server
                    .call(params, context)
                    .map(move |response| session.finish(response?)),
            ),
            Err(err) => Either::Right(std::future::ready(Err(err))),
        }
    }

    /// A request may name its own protocol version in `_meta`; it must be one we speak,
    /// and from 2026-07-28 on it must then carry the metadata that version requires.
    fn check_request(&self, context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let Some(requested) = context.meta.protocol_version() else {
            return Ok(());
        };
        let supported = ServerHandler::supported_protocol_versions(&self.server);
        if !supported.contains(&requested) {
            return Err(ErrorData::unsupported_protocol_version(
                requested, &supported,
            ));
        }
        if requested.as_str() < ProtocolVersion::V_2026_07_28.as_str() {
            return Ok(());
        }
        let missing = context
            .meta
            .missing_required_keys(&ProtocolVersion::V_2026_07_28);
        if missing.is_empty() {
            return Ok(());
        }
        Err(ErrorData::invalid_params(
            format!(
                "request _meta is missing or has malformed required fields: {}",
                missing.join(", ")
            ),
            None,
        ))
    }
}

/// What shaping a call's result needs to know of its session, read before the call takes
/// the context.
struct CallSession {
    /// 2026-07-28 or later: results may be `input_required` and carry `resultType`.
    current: bool,
    client_declared_tasks: bool,
}

impl CallSession {
    fn of(context: &RequestContext<RoleServer>) -> CallSession {
        CallSession {
            // ISO dates: lexical order is time order (as rmcp compares them).
            current: context
                .protocol_version()
                .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str()),
            client_declared_tasks: context
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks()),
        }
    }

    fn finish(&self, response: CallToolResponse) -> Result<ServerResult, ErrorData> {
        if matches!(response, CallToolResponse::Task(_)) && !self.client_declared_tasks {
            return Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ));
        }
        let mut result = ServerResult::from(response);
        if self.current {
            result.fill_missing_cache_hints();
        } else if matches!(result, ServerResult::InputRequiredResult(_)) {
            return Err(ErrorData::invalid_request(
                "InputRequiredResult requires negotiated protocol version 2026-07-28 or newer",
                None,
            ));
        } else {
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
        }
        // rmcp's last step, `RESOURCE_NOT_FOUND` read as `INVALID_PARAMS` for 2026-07-28,
        // is not here: a call's errors leave rmcp's dispatch before it.
        Ok(result)
    }
}
