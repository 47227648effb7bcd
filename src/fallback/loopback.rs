//! The one-time loopback form (`HIM_FALLBACK=http`, DESIGN.md §6).
//!
//! ```text
//!   Loopback::bind ──► 127.0.0.1:<random port>, token = 128 random bits
//!   GET  /q/<token>            the page: form, who asks and the time left as inline JSON,
//!                              with the words of the Accept-Language's locale, no inline
//!                              script; once closed, a short page saying so (410)
//!   GET  /q/<token>/<asset>    page.js, form.js, markdown.js, queue.js, i18n.js,
//!                              arming.js (the extension's lib), css
//!   POST /q/<token>            {action, values, note} → the answer, once (then 410)
//!   anything else              404; a Host other than 127.0.0.1:<port> → 421, two → 400
//! ```
//!
//! hyper's HTTP/1.1 server, one request per connection, in front of [`route`] and
//! [`check_post`]: pure functions over `http::Request` that decide everything but the
//! answer itself. Bodies only with `Content-Length`, and capped. The server lives as long
//! as [`Loopback::serve`]: it returns on the answer or when told to stop (timeout,
//! cancellation, an answer from another channel), and dropping it closes the port and
//! every open connection.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent::pool::Identity;
use crate::agent::wait::{self, Outcome};
use crate::fallback::locale::{self, Locale};
use crate::form::Form;
use crate::loopback_http::accept::{Door, accept_until};
use crate::loopback_http::admission::{Admission, Proof, Ticket};
use crate::loopback_http::{self, HostRule};
use crate::wire::protocol::{Action, Answer};

/// Largest answer body accepted; a form of 64 fields of text fits many times over.
pub const BODY_LIMIT: usize = 256 * 1024;
/// Largest request head (request line and headers); hyper answers 431 past it.
pub const HEAD_LIMIT: usize = 16 * 1024;
/// Most header lines in a request; hyper answers 431 past it.
const MAX_HEADERS: usize = 64;
/// Connections served at once (a browser needs two or three); past this a request is
/// answered 503 and the page tries again.
const MAX_CONNECTIONS: usize = 32;
/// Connections that have not yet sent a request for this form; past this the oldest of them
/// is closed, so that idle or half-sent connections cannot keep the person's POST out.
const MAX_PENDING_CONNECTIONS: usize = 32;
/// How long the oldest of them may wait for its request before a newer one takes its place.
const PENDING_GRACE: Duration = Duration::from_millis(200);
/// How long requests already under way when the form closed (an answer, the timeout, the
/// agent's cancellation) may take to be told 410 Gone.
const LINGER: Duration = Duration::from_secs(1);
/// A request's first byte, then its head, then its body must each arrive within this time.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

const PAGE_JS: &str = include_str!("page.js");
const PAGE_CSS: &str = include_str!("page.css");
const FORM_JS: &str = include_str!("../../extension/lib/form.js");
const FORM_MODEL_JS: &str = include_str!("../../extension/lib/formmodel.js");
const MARKDOWN_JS: &str = include_str!("../../extension/lib/markdown.js");
// The panel's own time-left wording and agent label, so both say them alike.
const QUEUE_JS: &str = include_str!("../../extension/lib/queue.js");
const FORM_CSS: &str = include_str!("../../extension/lib/form.css");
// The panel's rule that nothing is decided unseen, and its delay: one file for both.
const ARMING_JS: &str = include_str!("../../extension/lib/arming.js");
// lib's words in the page's language (the table comes with the page, see `locale`).
const I18N_JS: &str = include_str!("../../extension/lib/i18n.js");

/// The files a page may load, by the name after `/q/<token>/`.
fn asset(name: &str) -> Option<(&'static str, &'static str)> {
    const JS: &str = "text/javascript; charset=utf-8";
    const CSS: &str = "text/css; charset=utf-8";
    match name {
        "page.js" => Some((JS, PAGE_JS)),
        "form.js" => Some((JS, FORM_JS)),
        "formmodel.js" => Some((JS, FORM_MODEL_JS)),
        "markdown.js" => Some((JS, MARKDOWN_JS)),
        "queue.js" => Some((JS, QUEUE_JS)),
        "i18n.js" => Some((JS, I18N_JS)),
        "arming.js" => Some((JS, ARMING_JS)),
        "form.css" => Some((CSS, FORM_CSS)),
        "page.css" => Some((CSS, PAGE_CSS)),
        _ => None,
    }
}

/// How the loopback form ended.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopbackEnd {
    /// The person sent the form (submit or decline); not yet judged against the form.
    Answer(Answer),
    /// Told to stop before an answer came.
    Stopped,
    /// The page could not be opened in a browser (why, for the agent); nobody will see it.
    NotOpened(String),
}

/// A bound, not yet serving, loopback form.
pub struct Loopback {
    listener: TcpListener,
    port: u16,
    token: String,
    form: Form,
    question_id: String,
    asker: Identity,
    deadline: Instant,
}

impl Loopback {
    /// Binds 127.0.0.1 on a port the system picks and makes the question's token. The page
    /// shows `asker` and counts down to `deadline`, as the side panel does.
    pub async fn bind(
        form: &Form,
        question_id: &str,
        asker: &Identity,
        deadline: Instant,
    ) -> std::io::Result<Loopback> {
        let listener =
            crate::loopback_http::admission::listen(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let port = listener.local_addr()?.port();
        Ok(Loopback {
            listener,
            port,
            token: crate::platform::random::random_hex(16)?,
            form: form.clone(),
            question_id: question_id.to_owned(),
            asker: asker.clone(),
            deadline,
        })
    }

    /// The port alone: what logs may say (the URL carries the token).
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/q/{}", self.port, self.token)
    }

    /// Serves until the first answer or `stop`; the port is closed when this returns.
    pub async fn serve(self, stop: CancellationToken) -> LoopbackEnd {
        let (answer_tx, mut answer_rx) = oneshot::channel();
        let shared = Arc::new(Shared {
            port: self.port,
            base: format!("/q/{}", self.token),
            token: self.token,
            form: self.form,
            question_id: self.question_id,
            asker: self.asker,
            deadline: self.deadline,
            answer: Mutex::new(Some(answer_tx)),
            stopped: AtomicBool::new(false),
            busy: TaskTracker::new(),
        });
        let mut connections = JoinSet::new();
        let admission = Admission::new(MAX_PENDING_CONNECTIONS, PENDING_GRACE, MAX_CONNECTIONS);
        // Another user must not even see the question.
        let door = Door {
            same_user_only: true,
            server: "loopback form",
        };
        let ended = async {
            tokio::select! {
                _ = stop.cancelled() => None,
                answer = &mut answer_rx => answer.ok(),
            }
        };
        let ended = accept_until(
            &self.listener,
            &admission,
            door,
            &mut connections,
            ended,
            |stream, ticket| connection(stream, shared.clone(), ticket),
        )
        .await;
        match ended {
            Some(answer) => {
                close(self.listener, &shared).await;
                LoopbackEnd::Answer(answer)
            }
            None => {
                shared.stopped.store(true, Ordering::SeqCst);
                // An answer racing the stop is told 410, not taken.
                drop(shared.take_answer_slot());
                close(self.listener, &shared).await;
                LoopbackEnd::Stopped
            }
        }
    }
}

/// The port closes now. A request already under way on an open connection (a second tab's
/// submit, a reload) is still told 410 Gone with a page saying why, for a moment; idle
/// connections are simply closed.
async fn close(listener: TcpListener, shared: &Shared) {
    drop(listener);
    shared.busy.close();
    let _ = tokio::time::timeout(LINGER, shared.busy.wait()).await;
}

struct Shared {
    port: u16,
    token: String,
    /// `/q/<token>`: where the page's assets are.
    base: String,
    form: Form,
    question_id: String,
    asker: Identity,
    deadline: Instant,
    /// Taken by the one request whose answer counts.
    answer: Mutex<Option<oneshot::Sender<Answer>>>,
    /// Told to stop before an answer came (the timeout, the agent's cancellation, an
    /// answer in the browser extension).
    stopped: AtomicBool,
    /// Connections that have started a request and not yet been answered.
    busy: TaskTracker,
}

impl Shared {
    fn take_answer_slot(&self) -> Option<oneshot::Sender<Answer>> {
        self.answer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }

    fn closed(&self) -> bool {
        self.answer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_none()
    }

    /// Why the form no longer takes an answer, in the person's words.
    fn closed_because(&self) -> ClosedBecause {
        if !self.stopped.load(Ordering::SeqCst) {
            ClosedBecause::Answered
        } else if Instant::now() >= self.deadline {
            ClosedBecause::TimedOut
        } else {
            ClosedBecause::Withdrawn
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ClosedBecause {
    Answered,
    TimedOut,
    /// Cancelled by the agent, or answered in the browser extension: from here the two look
    /// the same.
    Withdrawn,
}

impl ClosedBecause {
    /// The key of its sentence in the messages files.
    fn sentence(self) -> &'static str {
        match self {
            ClosedBecause::Answered => "loopbackClosedAnswered",
            ClosedBecause::TimedOut => "loopbackClosedTimedOut",
            ClosedBecause::Withdrawn => "loopbackClosedWithdrawn",
        }
    }
}

type Body = Full<Bytes>;

fn content(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A page in `locale`'s language, saying so (`Content-Language`), and that another
/// `Accept-Language` gets another page.
fn html(status: StatusCode, locale: &Locale, body: String) -> Response<Body> {
    let mut response = content(status, "text/html; charset=utf-8", Bytes::from(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_LANGUAGE,
        HeaderValue::from_static(locale.tag),
    );
    headers.insert(header::VARY, HeaderValue::from_static("Accept-Language"));
    response
}

fn json_reply(status: StatusCode, body: &Value) -> Response<Body> {
    content(status, "application/json", Bytes::from(body.to_string()))
}

fn error(status: StatusCode, message: &str) -> Response<Body> {
    json_reply(status, &json!({ "message": message }))
}

fn gone() -> Response<Body> {
    error(StatusCode::GONE, "this question was already answered")
}

/// The value of a header sent exactly once; `None` when absent or repeated.
fn one(headers: &HeaderMap, name: HeaderName) -> Option<&[u8]> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => Some(value.as_bytes()),
        _ => None,
    }
}

/// A request turned away: its status, what it is told, and for a 405 what is allowed.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub status: StatusCode,
    pub message: &'static str,
    pub allow: Option<&'static str>,
}

fn refuse(status: StatusCode, message: &'static str) -> Refusal {
    Refusal {
        status,
        message,
        allow: None,
    }
}

impl Refusal {
    fn response(&self) -> Response<Body> {
        let mut response = error(self.status, self.message);
        if let Some(allow) = self.allow {
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        response
    }
}

/// What a request asks for, once its Host and token are checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    Page,
    Asset(&'static str, &'static str),
    Answer,
    Refuse(Refusal),
}

/// Decides a request by its head alone (the body, if any, is read only for [`Route::Answer`]).
pub fn route<B>(request: &Request<B>, port: u16, token: &str) -> Route {
    let headers = request.headers();
    if loopback_http::repeated_host(headers) {
        return Route::Refuse(refuse(
            StatusCode::BAD_REQUEST,
            "a request may carry only one Host header",
        ));
    }
    // Stricter than `him serve --http`: only the address of the URL it was opened with.
    let own = HostRule::only(vec![format!("127.0.0.1:{port}")]);
    if !own.admits(headers.get(header::HOST).map(HeaderValue::as_bytes)) {
        return Route::Refuse(refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "this form answers only at its own address",
        ));
    }
    let not_found = || Route::Refuse(refuse(StatusCode::NOT_FOUND, "no such question"));
    // The target as sent: with a query, or in absolute form, it names no question.
    let uri = request.uri();
    let target = match (uri.scheme(), uri.path_and_query()) {
        (None, Some(target)) => target.as_str(),
        _ => return not_found(),
    };
    let Some(rest) = target.strip_prefix("/q/") else {
        return not_found();
    };
    let (candidate, file) = match rest.split_once('/') {
        Some((candidate, file)) => (candidate, Some(file)),
        None => (rest, None),
    };
    if !crate::platform::random::same_secret(candidate.as_bytes(), token.as_bytes()) {
        return not_found();
    }
    match (request.method(), file) {
        (&Method::GET, None) => Route::Page,
        (&Method::GET, Some(file)) => match asset(file) {
            Some((kind, body)) => Route::Asset(kind, body),
            None => not_found(),
        },
        (&Method::POST, None) => Route::Answer,
        _ => Route::Refuse(Refusal {
            allow: Some(if file.is_some() { "GET" } else { "GET, POST" }),
            ..refuse(
                StatusCode::METHOD_NOT_ALLOWED,
                "only GET the page and POST the answer",
            )
        }),
    }
}

/// The checks a POST passes before its body is read.
pub fn check_post<B>(request: &Request<B>, port: u16) -> Result<(), Refusal> {
    let headers = request.headers();
    // hyper would decode a chunked body, but an answer is small and a page's fetch always
    // sends its length; one way to frame it is less to get wrong.
    if headers.contains_key(header::TRANSFER_ENCODING) {
        return Err(refuse(
            StatusCode::NOT_IMPLEMENTED,
            "send the answer with a Content-Length",
        ));
    }
    let mut lengths = headers.get_all(header::CONTENT_LENGTH).iter();
    let length = match (lengths.next(), lengths.next()) {
        (None, _) => {
            return Err(refuse(
                StatusCode::LENGTH_REQUIRED,
                "Content-Length required",
            ));
        }
        (Some(value), None) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .ok_or_else(|| refuse(StatusCode::BAD_REQUEST, "bad Content-Length"))?,
        _ => {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                "more than one Content-Length",
            ));
        }
    };
    if length > BODY_LIMIT {
        return Err(refuse(StatusCode::PAYLOAD_TOO_LARGE, "answer too large"));
    }
    let json = one(headers, header::CONTENT_TYPE)
        .and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| t.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the answer as application/json",
        ));
    }
    // Browsers send Origin on every POST; another site's page cannot claim ours.
    if let Some(origin) = one(headers, header::ORIGIN)
        && origin != format!("http://127.0.0.1:{port}").as_bytes()
    {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "answers come from the form's own page",
        ));
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PostedAnswer {
    action: Action,
    #[serde(default)]
    values: Option<Map<String, Value>>,
    #[serde(default)]
    note: Option<String>,
}

/// hyper as the form uses it: one request per connection, heads bounded in size, count and time.
fn http1() -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(REQUEST_TIMEOUT)
        .max_header_size(HEAD_LIMIT)
        .max_headers(MAX_HEADERS)
        .keep_alive(false);
    builder
}

/// One connection, from a caller already admitted.
async fn connection(stream: TcpStream, shared: Arc<Shared>, ticket: Arc<Ticket>) {
    // Idle until the first byte: a browser's speculative connection is not a request.
    let mut first = [0u8; 1];
    match tokio::time::timeout(REQUEST_TIMEOUT, stream.peek(&mut first)).await {
        Ok(Ok(1..)) => {}
        _ => return,
    }
    let _busy = shared.busy.token();
    // The tests wait for this line: from here the request is told 410 if the form closes.
    tracing::debug!("loopback form: a request under way");
    // The answer this connection's request took, if it took one.
    let taken = Arc::new(Mutex::new(None));
    let service = {
        let (shared, taken) = (shared.clone(), taken.clone());
        service_fn(move |request| {
            let (shared, taken, ticket) = (shared.clone(), taken.clone(), ticket.clone());
            async move {
                let (mut response, answer) = respond(request, &shared, &ticket).await;
                *taken.lock().unwrap_or_else(|p| p.into_inner()) = answer;
                // Said, so that the browser does not try to send another request on it.
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                Ok::<_, Infallible>(loopback_http::secure(response))
            }
        })
    };
    if let Err(err) = http1()
        .serve_connection(TokioIo::new(stream), service)
        .await
    {
        tracing::debug!("loopback form: connection ended: {err}");
    }
    // The answer counts once its page has been told, so the page never sees a closed port
    // for an answer that was taken.
    let answer = taken.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some((slot, answer)) = answer {
        let _ = slot.send(answer);
    }
}

type Handled = (Response<Body>, Option<(oneshot::Sender<Answer>, Answer)>);

async fn respond(request: Request<Incoming>, shared: &Shared, ticket: &Ticket) -> Handled {
    let not_taken = |response| (response, None);
    let route = route(&request, shared.port, &shared.token);
    if !matches!(route, Route::Refuse(_)) && ticket.prove() == Proof::Full {
        return not_taken(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many connections; try again",
        ));
    }
    match route {
        Route::Refuse(refusal) => not_taken(refusal.response()),
        // A reload after the end gets a page that says so rather than JSON; the styles
        // carry nothing of the question, so that page may still load them.
        Route::Page if shared.closed() => {
            let locale = locale::for_request(request.headers());
            let body = closed_page(shared.closed_because(), &shared.base, locale);
            not_taken(html(StatusCode::GONE, locale, body))
        }
        Route::Asset(content_type, _)
            if shared.closed() && !content_type.starts_with("text/css") =>
        {
            not_taken(gone())
        }
        Route::Page => {
            let locale = locale::for_request(request.headers());
            let remaining = shared.deadline.saturating_duration_since(Instant::now());
            let body = page(&shared.form, &shared.base, &shared.asker, remaining, locale);
            not_taken(html(StatusCode::OK, locale, body))
        }
        Route::Asset(content_type, body) => not_taken(content(
            StatusCode::OK,
            content_type,
            Bytes::from_static(body.as_bytes()),
        )),
        Route::Answer => {
            if let Err(refusal) = check_post(&request, shared.port) {
                return not_taken(refusal.response());
            }
            let body = match tokio::time::timeout(REQUEST_TIMEOUT, request.into_body().collect())
                .await
            {
                Ok(Ok(body)) => body.to_bytes(),
                Ok(Err(err)) => {
                    return not_taken(error(
                        StatusCode::BAD_REQUEST,
                        &format!("cannot read the answer: {err}"),
                    ));
                }
                Err(_) => {
                    return not_taken(error(StatusCode::REQUEST_TIMEOUT, "request took too long"));
                }
            };
            take(&body, shared)
        }
    }
}

/// A posted body: the question's answer, if it is one and the question is still open.
fn take(body: &[u8], shared: &Shared) -> Handled {
    let posted: PostedAnswer = match serde_json::from_slice(body) {
        Ok(posted) => posted,
        Err(err) => {
            return (
                error(
                    StatusCode::BAD_REQUEST,
                    &format!("not an answer ({{action, values, note}}): {err}"),
                ),
                None,
            );
        }
    };
    let Some(slot) = shared.take_answer_slot() else {
        return (gone(), None);
    };
    let answer = Answer {
        id: shared.question_id.clone(),
        action: posted.action,
        values: posted.values,
        note: posted.note,
        answered_by: None,
    };
    let told = match wait::judge(&shared.form, answer.clone()) {
        Outcome::Answered { .. } => json!({"status": "answered",
            "message": "Thank you: your answer was sent to the agent. You can close this tab."}),
        Outcome::Declined { .. } | Outcome::Dismissed => json!({"status": "declined",
            "message": "You declined; the agent was told. You can close this tab."}),
        // The page says these in the person's language; `reason` is the agent side's own.
        Outcome::Invalid(err) => json!({"status": "invalid_response",
            "message": format!("The answer did not fit the question and was discarded: {err}."),
            "reason": err.to_string()}),
        _ => json!({"status": "error", "message": "The answer was not taken."}),
    };
    (json_reply(StatusCode::OK, &told), Some((slot, answer)))
}

/// The page: static markup, the question as inline JSON data (not script: CSP allows no
/// inline script), and module scripts from the same origin. `remaining` is the time left
/// when the page is served; the page counts down from its own load, so no clocks need agree.
/// The page's words are `locale`'s, its whole table inline as data for `lib/i18n.js`.
fn page(form: &Form, base: &str, asker: &Identity, remaining: Duration, locale: &Locale) -> String {
    // Names a client wrote, marked as the panel marks them (`display::marked`): the page
    // draws them as plain text, where a bidi override would reorder what the person reads.
    let mark = |text: &str| crate::form::display::marked(text);
    let agent = crate::wire::protocol::AgentInfo {
        name: mark(&asker.agent.name),
        title: asker.agent.title.as_deref().map(mark),
        version: asker.agent.version.clone(),
        via: asker.agent.via.as_deref().map(mark),
    };
    let data = json!({
        "form": form,
        "agent": agent,
        "project": asker.project.as_deref().map(mark),
        "remaining_ms": remaining.as_millis() as u64,
    })
    .to_string();
    format!(
        "<!doctype html>\n<html lang=\"{lang}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>him: {title}</title>\n\
         <link rel=\"stylesheet\" href=\"{base}/form.css\">\n\
         <link rel=\"stylesheet\" href=\"{base}/page.css\">\n\
         <script type=\"application/json\" id=\"him-messages\">{messages}</script>\n\
         <script type=\"application/json\" id=\"him-question\">{data}</script>\n\
         <script type=\"module\" src=\"{base}/page.js\"></script>\n\
         </head>\n<body>\n<header class=\"bar\"><h1>him</h1>\
         <p id=\"him-asker\">{asking}</p>\
         <p id=\"him-time\" role=\"timer\"></p></header>\n\
         <main id=\"him-main\"><noscript>{needs_script}</noscript></main>\n\
         </body>\n</html>\n",
        lang = locale.tag,
        title = escape_html(&title_text(&form.title)),
        messages = escape_script_json(&locale.table_json()),
        data = escape_script_json(&data),
        asking = escape_html(locale.text("loopbackAsking")),
        needs_script = escape_html(locale.text("loopbackNeedsScript")),
    )
}

/// What a reload finds once the form is closed: why, and that the tab can go. No script and
/// nothing of the question, which may have held a secret.
fn closed_page(why: ClosedBecause, base: &str, locale: &Locale) -> String {
    format!(
        "<!doctype html>\n<html lang=\"{lang}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>{title}</title>\n\
         <link rel=\"stylesheet\" href=\"{base}/form.css\">\n\
         <link rel=\"stylesheet\" href=\"{base}/page.css\">\n\
         </head>\n<body data-him-done=\"closed\">\n<header class=\"bar\"><h1>him</h1></header>\n\
         <main id=\"him-main\"><p class=\"closed\">{why} {can_close}</p></main>\n\
         </body>\n</html>\n",
        lang = locale.tag,
        title = escape_html(locale.text("loopbackClosedTitle")),
        why = escape_html(locale.text(why.sentence())),
        can_close = escape_html(locale.text("loopbackCanClose")),
    )
}

/// The question's title in the tab strip: its first block as plain text on one line, as the
/// panel names a question (`display::title_line`: marked, so that no bidi control reorders
/// it), cut to a length a tab can show.
fn title_text(title: &str) -> String {
    let line = crate::form::display::title_line(title);
    let mut chars = line.chars();
    let head: String = chars.by_ref().take(120).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON that stays data inside `<script type="application/json">`: no `</script>`, no
/// `<!--`, whatever the agent wrote.
fn escape_script_json(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn request(method: &str, path: &str, headers: &[(&str, &str)]) -> Request<()> {
        let mut builder = Request::builder().method(method).uri(path);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap()
    }

    fn status(route: Route) -> u16 {
        match route {
            Route::Refuse(r) => r.status.as_u16(),
            _ => 200,
        }
    }

    #[test]
    fn only_the_token_path_on_the_loopback_host_is_served() {
        let host = [("Host", "127.0.0.1:4000")];
        let page = format!("/q/{TOKEN}");
        assert_eq!(
            route(&request("GET", &page, &host), 4000, TOKEN),
            Route::Page
        );
        assert_eq!(
            route(&request("POST", &page, &host), 4000, TOKEN),
            Route::Answer
        );
        assert!(matches!(
            route(
                &request("GET", &format!("{page}/form.js"), &host),
                4000,
                TOKEN
            ),
            Route::Asset("text/javascript; charset=utf-8", _)
        ));
        let wrong = "/q/0123456789abcdef0123456789abcdee";
        assert_eq!(
            status(route(&request("GET", wrong, &host), 4000, TOKEN)),
            404
        );
        assert_eq!(status(route(&request("GET", "/", &host), 4000, TOKEN)), 404);
        assert_eq!(
            status(route(&request("GET", "/q/", &host), 4000, TOKEN)),
            404
        );
        for other in [
            format!("{page}/secret"),
            format!("{page}?x=1"),
            format!("http://127.0.0.1:4000{page}"),
        ] {
            assert_eq!(
                status(route(&request("GET", &other, &host), 4000, TOKEN)),
                404,
                "{other}"
            );
        }
        let delete = route(&request("DELETE", &page, &host), 4000, TOKEN);
        let Route::Refuse(delete) = delete else {
            panic!("DELETE served: {delete:?}");
        };
        assert_eq!(delete.status, 405);
        assert_eq!(delete.response().headers()[header::ALLOW], "GET, POST");
        for bad in [
            vec![("Host", "localhost:4000")],
            vec![("Host", "127.0.0.1:4001")],
            vec![("Host", "evil.example")],
            vec![],
        ] {
            assert_eq!(
                status(route(&request("GET", &page, &bad), 4000, TOKEN)),
                421,
                "{bad:?}"
            );
        }
        // RFC 9112 §3.2: more than one Host is a bad request, even when both are right.
        let twice = [("Host", "127.0.0.1:4000"), ("Host", "127.0.0.1:4000")];
        assert_eq!(
            status(route(&request("GET", &page, &twice), 4000, TOKEN)),
            400
        );
    }

    #[test]
    fn a_post_needs_a_small_json_body_from_its_own_origin() {
        let ok = [
            ("Content-Length", "10"),
            ("Content-Type", "application/json"),
            ("Origin", "http://127.0.0.1:4000"),
        ];
        assert_eq!(check_post(&request("POST", "/", &ok), 4000), Ok(()));
        let code = |h: &[(&str, &str)]| {
            check_post(&request("POST", "/", h), 4000)
                .unwrap_err()
                .status
                .as_u16()
        };
        assert_eq!(code(&[("Content-Type", "application/json")]), 411);
        assert_eq!(
            code(&[
                ("Content-Length", "300000"),
                ("Content-Type", "application/json")
            ]),
            413
        );
        assert_eq!(
            code(&[("Content-Length", "10"), ("Content-Type", "text/plain")]),
            415
        );
        assert_eq!(
            code(&[
                ("Content-Length", "10"),
                ("Content-Type", "application/json"),
                ("Origin", "http://evil.example")
            ]),
            403
        );
        assert_eq!(
            code(&[
                ("Transfer-Encoding", "chunked"),
                ("Content-Type", "application/json")
            ]),
            501
        );
    }

    /// The status line hyper, set up as the form's server, answers these bytes with.
    async fn status_of(parts: &[&[u8]]) -> String {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let ok = service_fn(|_| async { Ok::<_, Infallible>(Response::new(Body::default())) });
        let serving = tokio::spawn(http1().serve_connection(TokioIo::new(server), ok));
        let (mut read, mut write) = tokio::io::split(client);
        for part in parts {
            write.write_all(part).await.unwrap();
            tokio::task::yield_now().await;
        }
        let mut reply = Vec::new();
        read.read_to_end(&mut reply).await.unwrap();
        let _ = serving.await;
        let reply = String::from_utf8_lossy(&reply).into_owned();
        reply.lines().next().unwrap_or_default().to_owned()
    }

    #[tokio::test]
    async fn heads_are_read_in_pieces_and_capped() {
        let whole = status_of(&[b"GET /q/x HTTP/1.1\r\nHost: a\r\n", b"\r\n"]).await;
        assert_eq!(whole, "HTTP/1.1 200 OK");
        let mut huge = b"GET / HTTP/1.1\r\nX: ".to_vec();
        huge.resize(HEAD_LIMIT + 10, b'a');
        assert!(status_of(&[&huge]).await.contains(" 431 "));
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("X-{i}: a\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert!(status_of(&[&many]).await.contains(" 431 "));
        assert!(
            status_of(&[b"\x00\x01 nonsense\r\n\r\n"])
                .await
                .contains(" 400 ")
        );
    }

    #[test]
    fn agent_text_cannot_close_the_data_script() {
        let form: Form = serde_json::from_value(json!({
            "title": "</script><script>alert(1)</script>",
            "fields": [{"name": "a", "type": "text", "label": "<!--"}]
        }))
        .unwrap();
        let asker = Identity {
            agent: crate::wire::protocol::AgentInfo {
                name: "</script><b>".into(),
                title: None,
                version: None,
                via: None,
            },
            project: Some("<!-- p".into()),
        };
        let html = page(
            &form,
            "/q/t",
            &asker,
            Duration::from_secs(5),
            locale::english(),
        );
        assert_eq!(html.matches("</script>").count(), 3, "{html}");
        assert!(!html.contains("<b>"));
        assert!(!html.contains("<!--"));
        assert!(html.contains("<title>him: &lt;/script&gt;"));
    }

    #[test]
    fn who_asks_is_marked_in_the_page_data() {
        let form: Form = serde_json::from_value(json!({
            "title": "t", "fields": [{"name": "a", "type": "text", "label": "A"}]
        }))
        .unwrap();
        let asker = Identity {
            agent: crate::wire::protocol::AgentInfo {
                via: Some("mcp-remote".into()),
                ..crate::wire::protocol::AgentInfo::named("agent\u{202e}gpj")
            },
            project: Some("shop\u{7}".into()),
        };
        let html = page(
            &form,
            "/q/t",
            &asker,
            Duration::from_secs(5),
            locale::english(),
        );
        let data = html
            .split("id=\"him-question\">")
            .nth(1)
            .and_then(|rest| rest.split("</script>").next())
            .unwrap();
        let data: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(data["agent"]["name"], "agent⟨U+202E⟩gpj");
        assert_eq!(data["agent"]["via"], "mcp-remote");
        assert_eq!(data["project"], "shop⟨U+0007⟩");
    }

    #[test]
    fn the_page_s_title_is_the_question_in_plain_text() {
        let form: Form = serde_json::from_value(json!({
            "title": "Deploy **v2** to `prod/*`?\u{202e}\n\nMore words",
            "fields": [{"name": "a", "type": "confirm", "label": "A"}]
        }))
        .unwrap();
        let asker = Identity {
            agent: crate::wire::protocol::AgentInfo {
                name: "codex".into(),
                title: None,
                version: None,
                via: None,
            },
            project: None,
        };
        let html = page(
            &form,
            "/q/t",
            &asker,
            Duration::from_secs(5),
            locale::english(),
        );
        assert!(
            html.contains("<title>him: Deploy v2 to prod/*?⟨U+202E⟩</title>"),
            "{html}"
        );
        assert_eq!(title_text(&"a".repeat(200)).chars().count(), 121);
    }

    /// The JSON data of the script element `id` in `html`.
    fn data_of(html: &str, id: &str) -> Value {
        let open = format!("<script type=\"application/json\" id=\"{id}\">");
        let start = html.find(&open).expect("the data script") + open.len();
        let end = start + html[start..].find("</script>").expect("its end");
        serde_json::from_str(&html[start..end]).expect("JSON data")
    }

    #[test]
    fn the_page_is_in_the_language_it_was_given_with_lib_s_words_as_data() {
        let form: Form = serde_json::from_value(json!({
            "title": "Ship it?",
            "fields": [{"name": "a", "type": "text", "label": "A"}]
        }))
        .unwrap();
        let asker = Identity {
            agent: crate::wire::protocol::AgentInfo {
                name: "codex".into(),
                title: None,
                version: None,
                via: None,
            },
            project: None,
        };
        let five = Duration::from_secs(5);
        let german = page(&form, "/q/t", &asker, five, locale::choose("de-DE"));
        assert!(german.contains("<html lang=\"de\">"), "{german}");
        assert!(
            german.contains("Ihr KI-Agent hat eine Frage an Sie."),
            "{german}"
        );
        assert!(german.contains("<noscript>Dieses Formular benötigt JavaScript.</noscript>"));
        assert_eq!(
            data_of(&german, "him-messages")["decline"]["message"],
            "Ablehnen"
        );
        assert_eq!(
            data_of(&german, "him-question")["form"]["title"],
            "Ship it?"
        );
        let chinese = page(&form, "/q/t", &asker, five, locale::choose("zh-CN"));
        assert!(chinese.contains("<html lang=\"zh-CN\">"), "{chinese}");
        assert_eq!(
            data_of(&chinese, "him-messages")["submit"]["message"],
            "提交"
        );
        let english = page(&form, "/q/t", &asker, five, locale::choose("fr"));
        assert!(english.contains("<html lang=\"en\">"));
        assert_eq!(
            data_of(&english, "him-messages")["submit"]["message"],
            "Submit"
        );

        let closed = closed_page(ClosedBecause::TimedOut, "/q/t", locale::choose("zh"));
        assert!(closed.contains("<html lang=\"zh-CN\">"), "{closed}");
        assert!(
            closed.contains("<title>him：问题已关闭</title>"),
            "{closed}"
        );
        assert!(
            closed.contains("这个问题已关闭：已超时。 你可以关闭此标签页。"),
            "{closed}"
        );
        let response = html(StatusCode::GONE, locale::choose("de"), closed);
        assert_eq!(response.headers()[header::CONTENT_LANGUAGE], "de");
        assert_eq!(response.headers()[header::VARY], "Accept-Language");
    }

    #[test]
    fn the_loopback_serves_i18n_js_and_every_module_the_page_imports() {
        let host = [("Host", "127.0.0.1:4000")];
        let mut sources = vec![PAGE_JS];
        let mut served = Vec::new();
        while let Some(source) = sources.pop() {
            for (at, _) in source.match_indices("from './") {
                let rest = &source[at + "from './".len()..];
                let file = &rest[..rest.find('\'').unwrap()];
                if served.contains(&file.to_owned()) {
                    continue;
                }
                let path = format!("/q/{TOKEN}/{file}");
                match route(&request("GET", &path, &host), 4000, TOKEN) {
                    Route::Asset(_, body) => sources.push(body),
                    other => panic!("{file} is imported but not served: {other:?}"),
                }
                served.push(file.to_owned());
            }
        }
        assert!(served.contains(&"i18n.js".to_owned()), "{served:?}");
    }
}
