//! `him serve --http`: the same tools over MCP Streamable HTTP, for agents that cannot start
//! a process — web chats given tools by a browser extension, agent UIs served from
//! localhost, agents inside a page.
//!
//! ```text
//!  HTTP client ──► TcpListener ──► hyper, HTTP/1.1, one task per connection
//!                                      │
//!                                    gate: Host ─ Origin (CORS, preflight) ─ /mcp ─ bearer token
//!                                      │     ─ body size ─ session cap
//!                                      ▼
//!                rmcp StreamableHttpService ──► HimServer, one per session ──► Pool ──► hosts
//!                                      │         or per sessionless request
//!                                      ▲
//!                 sessions.rs: idle / abandoned / evicted ──► closed in rmcp
//! ```
//!
//! Every check sits in front of rmcp's service, so nothing reaches MCP from a page that was
//! not allowed or a client without the token. Each session gets its own `HimServer`, whose
//! `hello` carries that session's `clientInfo`. The gate never holds a server: a session
//! ends in rmcp (deleted by the client, or closed here), and its transport tells its server
//! at once, which withdraws its questions (`manager.rs`, `../ending.rs`). A 2026-07-28
//! request carries no session: rmcp makes a server for it alone and drops it when the
//! response is sent or the client goes away, and its pool's links to the hosts end with
//! it. All servers share one `SharedParts` (the `requestState` key), so a retry may reach
//! any of them.
//!
//! A session's SSE streams open with rmcp's priming event only when its protocol is
//! 2025-11-25 or later; older clients read that event as a broken message (`priming.rs`).
//! A sessionless response has none: without an event store there is nothing to resume.

mod integral;
mod manager;
mod origin;
mod priming;
mod sessions;
mod token;

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body::{Body as _, Frame, SizeHint};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{
    SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::BoxError;
use crate::cli::ServeArgs;
use crate::config::{Config, MAX_WAIT};
use crate::loopback_http::accept::{Door, accept_until};
use crate::loopback_http::admission::{Admission, Proof, Ticket};
use crate::loopback_http::{self, HostRule};
use crate::mcp::{HimServer, SharedParts};

use integral::IntegralEvents;
use manager::EndingSessions;
use origin::{AllowedOrigins, OriginVerdict};
use priming::{Primed, Rule};
use sessions::{Ending, Reservation, Sessions};
use token::{Token, TokenSource};

pub use token::{MIN_TOKEN_LEN, PATH_TOKEN_FILE, TOKEN_ENV, TOKEN_FILE};

pub const DEFAULT_ADDR: &str = "127.0.0.1:7676";
pub const ENDPOINT: &str = "/mcp";
/// Largest request body; a question's `ask` frame is capped at 1 MiB anyway (DESIGN.md §2).
pub const MAX_BODY: usize = 4 * 1024 * 1024;
pub const MAX_SESSIONS: usize = 64;
pub const IDLE_ENV: &str = "HIM_HTTP_IDLE_MS";
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30 * 60);
/// Connections that have shown the token, at once; past this a request is answered 503.
const MAX_CONNECTIONS: usize = 256;
/// Connections that have not yet shown it; past this the oldest of them is closed once it
/// has had `PENDING_GRACE` (`loopback_http/admission.rs`).
const MAX_PENDING_CONNECTIONS: usize = 128;
const PENDING_GRACE: Duration = Duration::from_millis(200);
/// A client that takes longer than this to send request headers is dropped (slowloris).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// ... and this long to send its body.
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How much of an oversize body is read and thrown away so the client sees the 413.
const DRAIN_LIMIT: usize = 4 * MAX_BODY;
/// SSE comment lines on open streams; a write is how hyper notices a vanished client.
const SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);
/// rmcp's own idle timer counts only messages, not open streams, so it would end a session
/// that waits quietly for a person; ours ends sessions (see `sessions.rs`) and this one is
/// left as a backstop longer than any wait.
const RMCP_IDLE_BACKSTOP: Duration = Duration::from_secs(MAX_WAIT.as_secs() + 3600);

/// Time for the sessions closed when the server stops to withdraw their questions (each
/// session's transport sees its end in its own task) and for the withdrawals to reach the
/// hosts, before the runtime goes.
const FLUSH_GRACE: Duration = Duration::from_millis(200);

const SESSION_HEADER: &str = "mcp-session-id";
const PNA_REQUEST: &str = "access-control-request-private-network";
const PNA_ALLOW: &str = "access-control-allow-private-network";

type Body = BoxBody<Bytes, Infallible>;

/// The options of one HTTP server, checked.
struct Options {
    addr: SocketAddr,
    origins: AllowedOrigins,
    idle: Duration,
    /// Only processes of this user may connect; off with `--allow-remote`, whose peers
    /// (a TLS proxy of another user, another machine) are others by design.
    same_user_only: bool,
}

impl Options {
    fn from_args(args: &ServeArgs) -> Result<Options, BoxError> {
        let addr = parse_addr(args.http.as_deref().unwrap_or(DEFAULT_ADDR))?;
        if !addr.ip().is_loopback() && !args.allow_remote {
            return Err(format!(
                "{addr} is not a loopback address; anyone who can reach it could try to ask the \
                 person questions. Use 127.0.0.1, or add --allow-remote if you mean it"
            )
            .into());
        }
        Ok(Options {
            addr,
            origins: AllowedOrigins::parse(&args.allow_origin)?,
            idle: idle_from(std::env::var(IDLE_ENV).ok())?,
            same_user_only: !args.allow_remote,
        })
    }
}

/// `IP:PORT`, `[IPv6]:PORT` or `localhost:PORT`. Port 0 picks a free port (printed).
pub fn parse_addr(value: &str) -> Result<SocketAddr, String> {
    let value = value.trim();
    if let Ok(addr) = value.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = value.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    Err(format!(
        "--http {value:?} is not an address to listen on; give IP:PORT, e.g. {DEFAULT_ADDR}"
    ))
}

fn idle_from(value: Option<String>) -> Result<Duration, String> {
    match value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(DEFAULT_IDLE),
        // Below 100 ms the sweeper would spin for nothing.
        Some(v) => v
            .parse::<u64>()
            .map(|ms| Duration::from_millis(ms.max(100)))
            .map_err(|_| {
                format!("{IDLE_ENV}={v:?} is not valid: expected a whole number of milliseconds")
            }),
    }
}

/// The bearer token in force, from `HIM_HTTP_TOKEN` or the state directory.
fn bearer_token(config: &Config) -> Result<(Token, TokenSource), BoxError> {
    // A token given in the environment needs no state directory at all.
    if let Some(token) = token::from_env(std::env::var(TOKEN_ENV).ok())? {
        return Ok((token, TokenSource::Env));
    }
    let state = crate::platform::state_dir::state_dir()?;
    Ok(token::load_or_create(
        &state,
        std::env::var(TOKEN_ENV).ok(),
        Some(&config.runtime.dir),
    )?)
}

/// The path token (for `/mcp/<path token>`), made on first use.
pub fn path_token() -> Result<Token, BoxError> {
    let state = crate::platform::state_dir::state_dir()?;
    Ok(token::load_or_create_file(&state, PATH_TOKEN_FILE)?.0)
}

/// The URL a client that cannot send headers calls: the endpoint with the path token.
pub fn path_token_url(addr: &str, token: &Token) -> String {
    format!("http://{addr}{ENDPOINT}/{}", token.secret())
}

fn tell_where(source: &TokenSource) {
    match source {
        TokenSource::Env => eprintln!("him: bearer token from {TOKEN_ENV}"),
        TokenSource::File(path) => eprintln!(
            "him: bearer token kept in {} (print it with `him serve --http --print-token`)",
            path.display()
        ),
        TokenSource::Created(path) => eprintln!(
            "him: made a new bearer token, kept in {} (print it with `him serve --http \
             --print-token`)",
            path.display()
        ),
        TokenSource::Moved { from, to } => eprintln!(
            "him: moved the bearer token from {} to {}, which a reboot does not empty",
            from.display(),
            to.display()
        ),
    }
}

/// `him serve --http --print-token`: the token the server uses, creating it if needed.
pub fn print_token(config: &Config) -> Result<ExitCode, BoxError> {
    let (token, source) = bearer_token(config)?;
    if !matches!(source, TokenSource::File(_) | TokenSource::Env) {
        tell_where(&source);
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", token.secret())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `him serve --http [ADDR] --new-path-token`: replaces the path token alone and prints the
/// new URL.
pub fn new_path_token(args: &ServeArgs) -> Result<ExitCode, BoxError> {
    let addr = args.http.as_deref().unwrap_or(DEFAULT_ADDR);
    parse_addr(addr)?;
    let state = crate::platform::state_dir::state_dir()?;
    let token = token::replace_file(&state, PATH_TOKEN_FILE)?;
    eprintln!(
        "him: made a new path token, kept in {}; the old URL no longer works once `him serve \
         --http` restarts. The bearer token of other clients is unchanged.",
        state.join(PATH_TOKEN_FILE).display()
    );
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", path_token_url(addr, &token))?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `him serve --http [ADDR]`: serves until SIGINT or SIGTERM.
pub fn serve(args: &ServeArgs, config: Config) -> Result<ExitCode, BoxError> {
    let options = Options::from_args(args)?;
    let (token, source) = bearer_token(&config)?;
    // Only pages of listed origins may use one, so without any there is none to make.
    let path_token = if options.origins.list().is_empty() {
        None
    } else {
        Some(path_token()?)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        crate::agent::pool::spawn_tidy(&config.runtime);
        let listener = crate::loopback_http::admission::listen(options.addr)
            .map_err(|err| format!("cannot listen on {}: {err}", options.addr))?;
        let bound = listener.local_addr()?;
        if !bound.ip().is_loopback() {
            eprintln!(
                "him: WARNING: listening on {bound}, which other machines can reach. The token \
                 travels in clear text over plain HTTP, so anyone who can watch the network can \
                 take it and then put questions before the person and read their answers. \
                 Prefer 127.0.0.1 behind an SSH tunnel or a TLS proxy."
            );
        }
        eprintln!("him: serving MCP (Streamable HTTP) at http://{bound}{ENDPOINT}");
        tell_where(&source);
        for origin in options.origins.list() {
            eprintln!("him: pages from {origin} may call it");
        }
        if !options.origins.list().is_empty() {
            eprintln!(
                "him: those pages may also put a token in the path instead of a header (MCP \
                 SuperAssistant); `him config superassistant` prints that URL"
            );
        }
        let gate = Gate::new(config, bound, &options, token, path_token);
        run(listener, gate, crate::platform::signals::stop_signals()).await;
        Ok::<_, BoxError>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Accepts connections until `shutdown`, then ends every session (withdrawing its
/// questions). On a loopback address a connection of another user is closed before a byte
/// of it is read (`loopback_http/owner.rs`); one that has not yet shown the token may be displaced
/// by newer ones (`loopback_http/admission.rs`).
async fn run(listener: TcpListener, gate: Arc<Gate>, shutdown: impl Future<Output = ()>) {
    tokio::spawn(gate.clone().sweep());
    let admission = Admission::new(MAX_PENDING_CONNECTIONS, PENDING_GRACE, MAX_CONNECTIONS);
    let door = Door {
        same_user_only: gate.same_user_only,
        server: "serve --http",
    };
    let mut connections = JoinSet::new();
    accept_until(
        &listener,
        &admission,
        door,
        &mut connections,
        shutdown,
        |stream, ticket| serve_connection(stream, gate.clone(), ticket),
    )
    .await;
    gate.stop().await;
}

/// One connection, from a caller already admitted: rmcp's service behind the gate, every
/// response with the security headers.
async fn serve_connection(stream: TcpStream, gate: Arc<Gate>, ticket: Arc<Ticket>) {
    let service = service_fn(move |request| {
        let (gate, ticket) = (gate.clone(), ticket.clone());
        async move { Ok::<_, Infallible>(loopback_http::secure(gate.handle(request, &ticket).await)) }
    });
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .await;
    if let Err(err) = served {
        tracing::debug!("HTTP connection ended: {err}");
    }
}

/// Everything in front of rmcp's service.
struct Gate {
    mcp: StreamableHttpService<HimServer, EndingSessions>,
    manager: Arc<EndingSessions>,
    sessions: Arc<Sessions>,
    token: Token,
    /// Taken in the path (`/mcp/<path token>`) from pages of listed origins only.
    path_token: Option<Token>,
    origins: AllowedOrigins,
    /// `None` on a non-loopback address (`--allow-remote`): any `Host`.
    hosts: Option<HostRule>,
    idle: Duration,
    same_user_only: bool,
    stopping: CancellationToken,
    /// The process's tasks outlive every session; `stop` withdraws their questions.
    shared: Arc<SharedParts>,
}

impl Gate {
    fn new(
        config: Config,
        bound: SocketAddr,
        options: &Options,
        token: Token,
        path_token: Option<Token>,
    ) -> Arc<Gate> {
        // Behind a loopback address only local names can be right; on a reachable address
        // (which needs --allow-remote) the names it is reached by cannot be known.
        let hosts = bound.ip().is_loopback().then(|| HostRule::loopback(bound));
        let stopping = CancellationToken::new();
        let mut rmcp_config = StreamableHttpServerConfig::default()
            .with_sse_keep_alive(Some(SSE_KEEP_ALIVE))
            .with_max_request_body_bytes(MAX_BODY)
            .with_cancellation_token(stopping.child_token());
        // The gate checks Host and Origin first; rmcp's own Host check stays as a second
        // fence with the same rule.
        rmcp_config = match &hosts {
            Some(rule) => rmcp_config.with_allowed_hosts(rule.allowed().iter().cloned()),
            None => rmcp_config.disable_allowed_hosts(),
        };
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(RMCP_IDLE_BACKSTOP);
        let manager = Arc::new(EndingSessions(manager));
        // One requestState key (and one set of redeemed states) for every server: a
        // 2026-07-28 retry is a new sessionless request, served by a new server.
        let shared = SharedParts::new(config);
        let tasks_owner = shared.clone();
        let factory = move || Ok(HimServer::with_shared(shared.clone()));
        Arc::new(Gate {
            mcp: StreamableHttpService::new(factory, manager.clone(), rmcp_config),
            manager,
            sessions: Sessions::new(MAX_SESSIONS),
            token,
            path_token,
            origins: if bound.ip().is_loopback() {
                options.origins.clone().with_own_loopback(bound)
            } else {
                options.origins.clone()
            },
            hosts,
            idle: options.idle,
            same_user_only: options.same_user_only,
            shared: tasks_owner,
            stopping,
        })
    }

    async fn handle(
        self: &Arc<Self>,
        request: Request<Incoming>,
        ticket: &Ticket,
    ) -> Response<Body> {
        if loopback_http::repeated_host(request.headers()) {
            return text(
                StatusCode::BAD_REQUEST,
                "him: a request may carry only one Host header\n".into(),
            );
        }
        if let Some(hosts) = &self.hosts {
            let host = request.headers().get(header::HOST);
            if !hosts.admits(host.map(HeaderValue::as_bytes)) {
                tracing::warn!(
                    host = ?host,
                    "refused a request for another Host (a DNS-rebinding attempt, or a proxy)"
                );
                return text(
                    StatusCode::FORBIDDEN,
                    format!(
                        "him: this server answers only to Host {}\n",
                        hosts.allowed().join(" or ")
                    ),
                );
            }
        }
        let origins = request.headers().get_all(header::ORIGIN);
        let verdict = self
            .origins
            .judge(origins.iter().map(HeaderValue::as_bytes));
        let listed = matches!(verdict, OriginVerdict::Allowed(_));
        let page = match verdict {
            OriginVerdict::Absent => None,
            OriginVerdict::Allowed(origin) | OriginVerdict::Own(origin) => Some(origin),
            OriginVerdict::Refused(origin) => {
                let advice = origin::advice_for_refused(&origin);
                tracing::warn!("refused a request from a page: {advice}");
                return text(StatusCode::FORBIDDEN, format!("him: {advice}\n"));
            }
        };
        let mut response = self.route(request, page.is_some(), listed, ticket).await;
        let headers = response.headers_mut();
        if let Some(origin) = page
            && let Ok(origin) = HeaderValue::from_str(&origin)
        {
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            headers.insert(
                header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static(origin::EXPOSE_HEADERS),
            );
        }
        headers.append(header::VARY, HeaderValue::from_static("Origin"));
        response
    }

    async fn route(
        self: &Arc<Self>,
        mut request: Request<Incoming>,
        from_page: bool,
        listed_origin: bool,
        ticket: &Ticket,
    ) -> Response<Body> {
        let by_path_token = match request.uri().path().strip_prefix(ENDPOINT) {
            Some("") => false,
            Some(rest) if rest.starts_with('/') => {
                if let Err(refusal) = self.take_path_token(&mut request, listed_origin) {
                    return refusal;
                }
                true
            }
            _ => {
                return text(
                    StatusCode::NOT_FOUND,
                    format!("him: the MCP endpoint is {ENDPOINT}\n"),
                );
            }
        };
        if request.method() == Method::OPTIONS {
            return preflight(&request, from_page);
        }
        // Exactly one `Authorization`: with two, a proxy and this server might read different ones.
        let mut authorizations = request.headers().get_all(header::AUTHORIZATION).iter();
        let authorization = authorizations.next();
        let admitted = by_path_token
            || authorizations.next().is_none()
                && self.token.admits(authorization.map(HeaderValue::as_bytes));
        if !admitted {
            tracing::warn!(
                presented = authorization.is_some(),
                "refused a request without the right bearer token"
            );
            return unauthorized(authorization.is_some());
        }
        if ticket.prove() == Proof::Full {
            tracing::warn!("refused a request: {MAX_CONNECTIONS} connections are open");
            let mut busy = text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("him: {MAX_CONNECTIONS} connections are open; try again shortly\n"),
            );
            busy.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            busy.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return busy;
        }
        let (parts, body) = request.into_parts();
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let body = match read_body(body, declared).await {
            Ok(body) => body,
            Err(refusal) => return refusal,
        };
        self.forward(parts, body).await
    }

    /// Checks the token in a `/mcp/<path token>` request and takes it out: the request goes
    /// on as one for `/mcp`, so neither rmcp nor any log sees it. Only pages of an origin
    /// listed with `--allow-origin` may use one: a client that can send headers has no need
    /// of a secret in its URL, where it ends up in more places.
    #[allow(clippy::result_large_err)]
    fn take_path_token(
        &self,
        request: &mut Request<Incoming>,
        listed_origin: bool,
    ) -> Result<(), Response<Body>> {
        if !listed_origin {
            tracing::warn!("refused a token in the path from a request without a listed Origin");
            return Err(text(
                StatusCode::FORBIDDEN,
                "him: a token in the path is accepted only from pages of an origin allowed with \
                 `him serve --http --allow-origin <origin>`; other clients send \
                 `Authorization: Bearer <token>` to /mcp\n"
                    .into(),
            ));
        }
        let presented = request
            .uri()
            .path()
            .strip_prefix(ENDPOINT)
            .and_then(|rest| rest.strip_prefix('/'))
            .unwrap_or_default();
        if !self
            .path_token
            .as_ref()
            .is_some_and(|token| token.matches(presented.as_bytes()))
        {
            tracing::warn!("refused a request with a wrong token in the path");
            return Err(text(
                StatusCode::UNAUTHORIZED,
                "him: wrong token in the path; `him config superassistant` prints the URL to \
                 use\n"
                    .into(),
            ));
        }
        let endpoint = match request.uri().query() {
            Some(query) => format!("{ENDPOINT}?{query}"),
            None => ENDPOINT.to_owned(),
        };
        let mut parts = request.uri().clone().into_parts();
        parts.path_and_query = endpoint.parse().ok();
        match http::Uri::from_parts(parts) {
            Ok(uri) => {
                *request.uri_mut() = uri;
                Ok(())
            }
            Err(_) => Err(text(
                StatusCode::BAD_REQUEST,
                "him: the request's URL cannot be read\n".into(),
            )),
        }
    }

    /// Hands an admitted request to rmcp, keeping the session table in step.
    async fn forward(self: &Arc<Self>, parts: http::request::Parts, body: Bytes) -> Response<Body> {
        let method = parts.method.clone();
        let session = parts
            .headers
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let opens_session = method == Method::POST && session.is_none() && is_initialize(&body);
        let reservation = if opens_session {
            match self.sessions.reserve() {
                Some((reservation, evicted)) => {
                    if let Some(id) = evicted {
                        tracing::info!(
                            session = %id,
                            "HTTP session ended to make room for a new one: {} are open, the \
                             most this server keeps, and it was idle longest",
                            self.sessions.cap()
                        );
                        self.close_in_rmcp(&id).await;
                    }
                    Some(reservation)
                }
                None => return too_many_sessions(self.sessions.cap()),
            }
        } else {
            None
        };
        // Busy until rmcp has answered; a call's open stream keeps it busy after that.
        let _in_flight = session
            .as_deref()
            .and_then(|id| self.sessions.request(id, Instant::now()));
        let request = Request::from_parts(parts, Full::new(body));
        let (response, created) = if opens_session {
            // In a task of its own, so that a client going away in the middle cannot leave
            // a session rmcp made out of the table (uncounted, never expired).
            let exchange =
                tokio::spawn(
                    self.clone()
                        .exchange(request, reservation, None, method.clone()),
                );
            match exchange.await {
                Ok(done) => done,
                Err(err) => {
                    tracing::error!("an MCP request failed: {err}");
                    return text(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "him: the request failed; see the server's log\n".into(),
                    );
                }
            }
        } else {
            // Not detached: a client that goes away drops rmcp's handling with this
            // future, and rmcp then cancels the call (a sessionless call sends nothing
            // until its result, unless it reports progress) and drops its server.
            self.clone()
                .exchange(request, None, session.clone(), method.clone())
                .await
        };

        let streaming = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let response = if streaming {
            response.map(|inner| BoxBody::new(IntegralEvents::new(inner)))
        } else {
            response
        };
        match session.or(created) {
            Some(id) if streaming => {
                self.sessions.stream_opened(&id);
                let sessions = self.sessions.clone();
                let rule = if opens_session {
                    let (sessions, id) = (sessions.clone(), id.clone());
                    Rule::Settle(Box::new(move |primed| {
                        tracing::debug!(session = %id, primed, "HTTP session's protocol era settled");
                        sessions.set_primed(&id, primed);
                    }))
                } else if sessions.primed(&id) {
                    Rule::Keep
                } else {
                    Rule::Strip
                };
                response.map(|inner| {
                    BoxBody::new(Tracked {
                        inner: BoxBody::new(Primed::new(inner, rule)),
                        sessions,
                        session: id,
                        call: method == Method::POST,
                        done: false,
                        answered: false,
                    })
                })
            }
            _ => response,
        }
    }

    /// rmcp's answer to one request, and the session table kept in step with it: a new
    /// session is entered, a deleted one leaves (rmcp has ended it, and its server has
    /// withdrawn its questions). Returns the answer and the id of a session it created.
    async fn exchange(
        self: Arc<Self>,
        request: Request<Full<Bytes>>,
        reservation: Option<Reservation>,
        session: Option<String>,
        method: Method,
    ) -> (Response<Body>, Option<String>) {
        let mut response = self.mcp.handle(request).await;
        if method == Method::DELETE && response.status() == StatusCode::ACCEPTED {
            // rmcp answers a DELETE with 202 (and no body); the specification's clients
            // expect 200 or 204, and the Python SDK logs "Session termination failed: 202"
            // on every close otherwise.
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        let created = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let (Some(reservation), Some(id)) = (reservation, &created) {
            reservation.fulfil(id.clone(), Instant::now());
            tracing::info!(session = %id, open = self.sessions.len(), "HTTP session opened");
        }
        if method == Method::DELETE
            && response.status().is_success()
            && let Some(id) = &session
            && self.sessions.remove(id)
        {
            tracing::info!(session = %id, "HTTP session deleted by the client");
        }
        (response, created)
    }

    async fn close_in_rmcp(&self, id: &str) {
        if let Err(err) = self.manager.close_session(&Arc::from(id)).await {
            tracing::debug!(session = %id, "closing the session: {err}");
        }
    }

    /// Ends sessions whose client is gone: idle or abandoned. (One that rmcp ended itself
    /// has no stream left, and leaves the table once idle the idle time.)
    async fn sweep(self: Arc<Self>) {
        let period = (self.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = self.stopping.cancelled() => return,
                _ = tokio::time::sleep(period) => {}
            }
            for (id, ending) in self.sessions.take_ended(Instant::now(), self.idle) {
                match ending {
                    Ending::Idle => tracing::info!(session = %id, "HTTP session expired (idle)"),
                    Ending::Abandoned => tracing::info!(
                        session = %id,
                        "HTTP client went away in the middle of a call; ending its session"
                    ),
                }
                self.close_in_rmcp(&id).await;
            }
        }
    }

    /// Ends every session, as a client's DELETE would: each withdraws its questions.
    async fn stop(&self) {
        let sessions = self.sessions.take_all();
        for id in &sessions {
            self.close_in_rmcp(id).await;
        }
        self.shared.close_tasks().await;
        if !sessions.is_empty() {
            // Each session sees its end and queues its withdrawals to each host link's
            // writer task; let that happen before rmcp's token ends the calls (which would
            // withdraw them as `cancelled`) and the writes go out before the runtime and
            // those tasks end. Hosts would withdraw on the broken link anyway, but as
            // `cancelled` rather than `shutdown`.
            tokio::time::sleep(FLUSH_GRACE).await;
        }
        self.stopping.cancel();
    }
}

/// The whole request body, at most `MAX_BODY` bytes. A larger one is read on (up to
/// `DRAIN_LIMIT`) and thrown away before the 413, so the client, still sending, gets to read
/// the answer instead of a reset connection.
async fn read_body(mut body: Incoming, declared: Option<u64>) -> Result<Bytes, Response<Body>> {
    let too_large = || {
        text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("him: a request body may be at most {MAX_BODY} bytes\n"),
        )
    };
    if declared.is_some_and(|len| len > DRAIN_LIMIT as u64) {
        return Err(too_large());
    }
    let read = async {
        let mut buffer = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame?.into_data() else {
                continue;
            };
            if buffer.len() + data.len() > MAX_BODY {
                return Ok(None);
            }
            buffer.extend_from_slice(&data);
        }
        Ok::<_, hyper::Error>(Some(Bytes::from(buffer)))
    };
    match tokio::time::timeout(BODY_READ_TIMEOUT, read).await {
        Ok(Ok(Some(bytes))) => Ok(bytes),
        Ok(Ok(None)) => {
            let drain = async {
                let mut seen = MAX_BODY;
                while let Some(Ok(frame)) = body.frame().await {
                    seen += frame.data_ref().map_or(0, Bytes::len);
                    if seen > DRAIN_LIMIT {
                        break;
                    }
                }
            };
            let _ = tokio::time::timeout(BODY_READ_TIMEOUT, drain).await;
            Err(too_large())
        }
        Ok(Err(err)) => Err(text(
            StatusCode::BAD_REQUEST,
            format!("him: cannot read the request body: {err}\n"),
        )),
        Err(_) => Err(text(
            StatusCode::REQUEST_TIMEOUT,
            "him: the request body came too slowly\n".into(),
        )),
    }
}

fn text(status: StatusCode, message: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(message)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn unauthorized(presented: bool) -> Response<Body> {
    // RFC 6750 §3: no error code when no credentials came, `invalid_token` when they were wrong.
    let (challenge, message) = if presented {
        (
            r#"Bearer realm="him", error="invalid_token""#,
            "him: wrong bearer token",
        )
    } else {
        (r#"Bearer realm="him""#, "him: a bearer token is required")
    };
    let mut response = text(
        StatusCode::UNAUTHORIZED,
        format!(
            "{message}; send `Authorization: Bearer <token>` with the token from \
             `him serve --http --print-token` (or {TOKEN_ENV})\n"
        ),
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    response
}

fn too_many_sessions(cap: usize) -> Response<Body> {
    let mut response = text(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "him: {cap} MCP sessions are open, the most this server keeps, and every one is \
             busy with a call or an open stream; end one (HTTP DELETE with its Mcp-Session-Id) \
             or try again when a call has finished\n"
        ),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("30"));
    response
}

/// The answer to a CORS preflight: only for pages of an allowed origin (the gate has
/// refused the others), and no token, which browsers never send on a preflight.
fn preflight(request: &Request<Incoming>, from_page: bool) -> Response<Body> {
    if !from_page {
        return text(
            StatusCode::FORBIDDEN,
            "him: a CORS preflight must come from a page of an allowed origin\n".into(),
        );
    }
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = StatusCode::NO_CONTENT;
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(origin::ALLOW_METHODS),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(origin::ALLOW_HEADERS),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(origin::PREFLIGHT_MAX_AGE),
    );
    // Private Network Access: a public page asking a loopback server must be told yes.
    let wants_private_network = request
        .headers()
        .get(PNA_REQUEST)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
    if wants_private_network {
        headers.insert(PNA_ALLOW, HeaderValue::from_static("true"));
    }
    response
}

/// Whether the HTTP request whose parts rmcp put in `extensions` came outside any session
/// (a 2026-07-28 sessionless request); never for stdio, which has no HTTP request.
pub(crate) fn outside_a_session(extensions: &rmcp::model::Extensions) -> bool {
    extensions
        .get::<http::request::Parts>()
        .is_some_and(|parts| !parts.headers.contains_key(SESSION_HEADER))
}

/// Whether a request body is an `initialize`, the one request that opens a session.
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Request {
        method: Option<String>,
    }
    serde_json::from_slice::<Request>(body).is_ok_and(|r| r.method.as_deref() == Some("initialize"))
}

/// A response stream of one session, counted while open. The stream of a call dropped
/// before it carried the call's response means the client went away without waiting for the
/// answer.
struct Tracked {
    inner: Body,
    sessions: Arc<Sessions>,
    session: String,
    call: bool,
    done: bool,
    answered: bool,
}

/// Whether an SSE event (rmcp writes one per frame) carries a JSON-RPC response or error,
/// as opposed to a notification, a server request, a priming event or a keep-alive.
fn carries_response(event: &[u8]) -> bool {
    let Some(data) = priming::event_data(event) else {
        return false;
    };
    match serde_json::from_str::<serde_json::Value>(&data) {
        Ok(serde_json::Value::Object(message)) => {
            message.contains_key("id")
                && !message.contains_key("method")
                && (message.contains_key("result") || message.contains_key("error"))
        }
        _ => false,
    }
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => this.done = true,
            Poll::Ready(Some(Ok(frame))) if this.call && !this.answered => {
                this.answered = frame.data_ref().is_some_and(|data| carries_response(data));
            }
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let finished = self.done || self.answered || self.inner.is_end_stream();
        self.sessions
            .stream_closed(&self.session, self.call && !finished, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_are_ip_and_port_or_localhost() {
        assert_eq!(
            parse_addr("127.0.0.1:7676").unwrap(),
            "127.0.0.1:7676".parse().unwrap()
        );
        assert_eq!(
            parse_addr("localhost:0").unwrap(),
            "127.0.0.1:0".parse().unwrap()
        );
        assert_eq!(parse_addr("[::1]:80").unwrap(), "[::1]:80".parse().unwrap());
        let err = parse_addr("7676").unwrap_err();
        assert!(err.contains("IP:PORT"), "{err}");
        assert!(parse_addr("example.com:80").is_err());
    }

    #[test]
    fn only_an_event_with_a_response_or_error_answers_the_call() {
        assert!(carries_response(
            b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\nid: 0/2\n\n"
        ));
        assert!(carries_response(
            b"data:{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":1,\"message\":\"x\"}}\n\n"
        ));
        for other in [
            &b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"[..],
            b"data: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"elicitation/create\",\"params\":{}}\n\n",
            b"data: \nid: 0\nretry: 3000\n\n",
            b":ping\n\n",
            b"\xff",
        ] {
            assert!(!carries_response(other), "{}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn the_idle_time_comes_from_the_environment_in_milliseconds() {
        assert_eq!(idle_from(None).unwrap(), DEFAULT_IDLE);
        assert_eq!(
            idle_from(Some("2500".into())).unwrap(),
            Duration::from_millis(2500)
        );
        assert_eq!(
            idle_from(Some("0".into())).unwrap(),
            Duration::from_millis(100)
        );
        assert!(
            idle_from(Some("soon".into()))
                .unwrap_err()
                .contains(IDLE_ENV)
        );
    }
}
