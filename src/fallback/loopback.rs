//! The one-time loopback form (`HIM_FALLBACK=http`, DESIGN.md §6).
//!
//! ```text
//!   Loopback::bind ──► 127.0.0.1:<random port>, token = 128 random bits
//!   GET  /q/<token>            the page: form JSON inline, no inline script
//!   GET  /q/<token>/<asset>    page.js, form.js, markdown.js (the extension's lib), css
//!   POST /q/<token>            {action, values, note} → the answer, once (then 410)
//!   anything else              404; a Host other than 127.0.0.1:<port> → 421
//! ```
//!
//! A minimal HTTP/1.1 server: one request per connection (`Connection: close`), the head
//! parsed by `httparse` with a size cap, bodies only with `Content-Length` and capped. The
//! server lives as long as [`Loopback::serve`]: it returns on the answer or when told to
//! stop (timeout, cancellation, an answer from another channel), and dropping it closes
//! the port and every open connection.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::form::Form;
use crate::protocol::{Action, Answer};
use crate::wait::{self, Outcome};

/// Largest answer body accepted; a form of 64 fields of text fits many times over.
pub const BODY_LIMIT: usize = 256 * 1024;
/// Largest request head (request line and headers).
pub const HEAD_LIMIT: usize = 16 * 1024;
/// Connections served at once; more are closed unanswered (a browser needs two or three).
const MAX_CONNECTIONS: usize = 32;
/// How long requests already under way when the answer came may take to be told 410 Gone.
const LINGER: Duration = Duration::from_secs(1);
/// A request must arrive whole within this time.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// `connect-src 'self'` is what lets the page post its answer; everything else is closed.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const PAGE_JS: &str = include_str!("page.js");
const PAGE_CSS: &str = include_str!("page.css");
const FORM_JS: &str = include_str!("../../extension/lib/form.js");
const FORM_MODEL_JS: &str = include_str!("../../extension/lib/formmodel.js");
const MARKDOWN_JS: &str = include_str!("../../extension/lib/markdown.js");
const FORM_CSS: &str = include_str!("../../extension/lib/form.css");

/// The files a page may load, by the name after `/q/<token>/`.
fn asset(name: &str) -> Option<(&'static str, &'static str)> {
    const JS: &str = "text/javascript; charset=utf-8";
    const CSS: &str = "text/css; charset=utf-8";
    match name {
        "page.js" => Some((JS, PAGE_JS)),
        "form.js" => Some((JS, FORM_JS)),
        "formmodel.js" => Some((JS, FORM_MODEL_JS)),
        "markdown.js" => Some((JS, MARKDOWN_JS)),
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
}

/// A bound, not yet serving, loopback form.
pub struct Loopback {
    listener: TcpListener,
    port: u16,
    token: String,
    form: Form,
    question_id: String,
}

impl Loopback {
    /// Binds 127.0.0.1 on a port the system picks and makes the question's token.
    pub async fn bind(form: &Form, question_id: &str) -> std::io::Result<Loopback> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        Ok(Loopback {
            listener,
            port,
            token: crate::random::random_hex(16)?,
            form: form.clone(),
            question_id: question_id.to_owned(),
        })
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/q/{}", self.port, self.token)
    }

    /// Serves until the first answer or `stop`; the port is closed when this returns.
    pub async fn serve(self, stop: CancellationToken) -> LoopbackEnd {
        let (answer_tx, mut answer_rx) = oneshot::channel();
        let page = page(&self.form, &format!("/q/{}", self.token));
        let shared = Arc::new(Shared {
            port: self.port,
            token: self.token,
            page,
            form: self.form,
            question_id: self.question_id,
            answer: Mutex::new(Some(answer_tx)),
            busy: Busy::default(),
        });
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                _ = stop.cancelled() => return LoopbackEnd::Stopped,
                answer = &mut answer_rx => match answer {
                    Ok(answer) => {
                        // The port closes now. A request already under way on an open
                        // connection (a second tab's submit) is still told 410 Gone, for a
                        // moment; idle connections are simply closed.
                        drop(self.listener);
                        let _ = tokio::time::timeout(LINGER, shared.busy.until_zero()).await;
                        return LoopbackEnd::Answer(answer);
                    }
                    // `shared` holds the sender for as long as this loop runs.
                    Err(_) => return LoopbackEnd::Stopped,
                },
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) if connections.len() < MAX_CONNECTIONS => {
                        connections.spawn(connection(stream, shared.clone()));
                    }
                    Ok(_) => tracing::warn!("loopback form: too many connections; one refused"),
                    Err(err) => {
                        tracing::debug!("loopback form: accept failed: {err}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    }
}

struct Shared {
    port: u16,
    token: String,
    page: String,
    form: Form,
    question_id: String,
    /// Taken by the one request whose answer counts.
    answer: Mutex<Option<oneshot::Sender<Answer>>>,
    /// Connections that have started a request and not yet been answered.
    busy: Busy,
}

/// A count of requests under way, and a way to wait until there are none.
#[derive(Default)]
struct Busy {
    count: std::sync::atomic::AtomicUsize,
    idle: tokio::sync::Notify,
}

impl Busy {
    fn enter(&self) -> BusyGuard<'_> {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        BusyGuard(self)
    }

    async fn until_zero(&self) {
        loop {
            let idle = self.idle.notified();
            if self.count.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

struct BusyGuard<'a>(&'a Busy);

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0
            .count
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.0.idle.notify_waiters();
    }
}

impl Shared {
    fn take_answer_slot(&self) -> Option<oneshot::Sender<Answer>> {
        self.answer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }

    fn answered(&self) -> bool {
        self.answer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_none()
    }
}

/// An HTTP response, always closed after sending.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub extra: Vec<(&'static str, String)>,
}

impl Response {
    fn json(status: u16, body: Value) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: body.to_string().into_bytes(),
            extra: Vec::new(),
        }
    }

    fn error(status: u16, message: &str) -> Response {
        Response::json(status, json!({ "message": message }))
    }

    fn bytes(&self) -> Vec<u8> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
             Content-Security-Policy: {CSP}\r\nCache-Control: no-store\r\n\
             X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n\
             X-Frame-Options: DENY\r\nCross-Origin-Resource-Policy: same-origin\r\n\
             Cross-Origin-Opener-Policy: same-origin\r\nConnection: close\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        for (name, value) in &self.extra {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        410 => "Gone",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        _ => "Error",
    }
}

/// A parsed request head: what routing needs and nothing else.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Head {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// Every value of a header, by case-insensitive name.
    fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn one(&self, name: &str) -> Option<&str> {
        match self.all(name).as_slice() {
            [value] => Some(value),
            _ => None,
        }
    }
}

/// Parses a request head. `Ok(None)`: incomplete, read more. `Err`: refuse with this.
pub fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, Response> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(buf) {
        Ok(httparse::Status::Complete(len)) => {
            let head = Head {
                method: request.method.unwrap_or_default().to_owned(),
                path: request.path.unwrap_or_default().to_owned(),
                headers: request
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_owned(),
                            String::from_utf8_lossy(h.value).trim().to_owned(),
                        )
                    })
                    .collect(),
            };
            Ok(Some((head, len)))
        }
        Ok(httparse::Status::Partial) if buf.len() >= HEAD_LIMIT => {
            Err(Response::error(431, "request head too large"))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => Err(Response::error(431, "too many headers")),
        Err(_) => Err(Response::error(400, "malformed request")),
    }
}

/// What a request asks for, once its Host and token are checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    Page,
    Asset(&'static str, &'static str),
    Answer,
    Refuse(Response),
}

/// Decides a request by its head alone (the body, if any, is read only for [`Route::Answer`]).
pub fn route(head: &Head, port: u16, token: &str) -> Route {
    // DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends `Host: evil.example`.
    let host = format!("127.0.0.1:{port}");
    if head.one("host") != Some(host.as_str()) {
        return Route::Refuse(Response::error(
            421,
            "this form answers only at its own address",
        ));
    }
    let not_found = || Route::Refuse(Response::error(404, "no such question"));
    let Some(rest) = head.path.strip_prefix("/q/") else {
        return not_found();
    };
    let (candidate, file) = match rest.split_once('/') {
        Some((candidate, file)) => (candidate, Some(file)),
        None => (rest, None),
    };
    if !crate::random::same_secret(candidate.as_bytes(), token.as_bytes()) {
        return not_found();
    }
    match (head.method.as_str(), file) {
        ("GET", None) => Route::Page,
        ("GET", Some(file)) => match asset(file) {
            Some((kind, body)) => Route::Asset(kind, body),
            None => not_found(),
        },
        ("POST", None) => Route::Answer,
        _ => {
            let mut refuse = Response::error(405, "only GET the page and POST the answer");
            refuse.extra.push((
                "Allow",
                if file.is_some() { "GET" } else { "GET, POST" }.into(),
            ));
            Route::Refuse(refuse)
        }
    }
}

/// The checks a POST passes before its body is read. Returns the body length.
pub fn check_post(head: &Head, port: u16) -> Result<usize, Response> {
    if !head.all("transfer-encoding").is_empty() {
        return Err(Response::error(
            501,
            "send the answer with a Content-Length",
        ));
    }
    let length = match head.all("content-length").as_slice() {
        [] => return Err(Response::error(411, "Content-Length required")),
        [value] => value
            .parse::<usize>()
            .map_err(|_| Response::error(400, "bad Content-Length"))?,
        _ => return Err(Response::error(400, "more than one Content-Length")),
    };
    if length > BODY_LIMIT {
        return Err(Response::error(413, "answer too large"));
    }
    let json = head
        .one("content-type")
        .and_then(|t| t.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(Response::error(415, "send the answer as application/json"));
    }
    // Browsers send Origin on every POST; another site's page cannot claim ours.
    if let Some(origin) = head.one("origin")
        && origin != format!("http://127.0.0.1:{port}")
    {
        return Err(Response::error(
            403,
            "answers come from the form's own page",
        ));
    }
    Ok(length)
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

async fn connection(mut stream: TcpStream, shared: Arc<Shared>) {
    // Idle until the first byte: a browser's speculative connection is not a request.
    let mut first = [0u8; 1];
    match tokio::time::timeout(REQUEST_TIMEOUT, stream.peek(&mut first)).await {
        Ok(Ok(1..)) => {}
        _ => return,
    }
    let _busy = shared.busy.enter();
    let response = match tokio::time::timeout(REQUEST_TIMEOUT, request(&mut stream, &shared)).await
    {
        Ok(Ok(response)) => response,
        Ok(Err(ReadFailed)) => return,
        Err(_) => (Response::error(408, "request took too long"), None),
    };
    let (status, answer) = response;
    if let Err(err) = stream.write_all(&status.bytes()).await {
        tracing::debug!("loopback form: response not sent: {err}");
    }
    let _ = stream.shutdown().await;
    // The answer counts once its page has been told, so the page never sees a closed port
    // for an answer that was taken.
    if let Some((slot, answer)) = answer {
        let _ = slot.send(answer);
    }
}

struct ReadFailed;

type Handled = (Response, Option<(oneshot::Sender<Answer>, Answer)>);

async fn request(stream: &mut TcpStream, shared: &Shared) -> Result<Handled, ReadFailed> {
    let mut buf = Vec::with_capacity(2048);
    let (head, head_len) = loop {
        match parse_head(&buf) {
            Ok(Some(parsed)) => break parsed,
            Ok(None) => {}
            Err(refuse) => return Ok((refuse, None)),
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.map_err(|_| ReadFailed)?;
        if n == 0 {
            return Err(ReadFailed);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let refuse = |r: Response| Ok((r, None));
    match route(&head, shared.port, &shared.token) {
        Route::Refuse(response) => refuse(response),
        Route::Page | Route::Asset(..) if shared.answered() => {
            refuse(Response::error(410, "this question was already answered"))
        }
        Route::Page => refuse(Response {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: shared.page.clone().into_bytes(),
            extra: Vec::new(),
        }),
        Route::Asset(content_type, body) => refuse(Response {
            status: 200,
            content_type,
            body: body.as_bytes().to_vec(),
            extra: Vec::new(),
        }),
        Route::Answer => {
            let length = match check_post(&head, shared.port) {
                Ok(length) => length,
                Err(response) => return refuse(response),
            };
            let mut body = buf.split_off(head_len);
            if body.len() > length {
                return refuse(Response::error(400, "body longer than Content-Length"));
            }
            let missing = length - body.len();
            let start = body.len();
            body.resize(length, 0);
            stream
                .read_exact(&mut body[start..start + missing])
                .await
                .map_err(|_| ReadFailed)?;
            let posted: PostedAnswer = match serde_json::from_slice(&body) {
                Ok(posted) => posted,
                Err(err) => {
                    return refuse(Response::error(
                        400,
                        &format!("not an answer ({{action, values, note}}): {err}"),
                    ));
                }
            };
            let Some(slot) = shared.take_answer_slot() else {
                return refuse(Response::error(410, "this question was already answered"));
            };
            let answer = Answer {
                id: shared.question_id.clone(),
                action: posted.action,
                values: posted.values,
                note: posted.note,
            };
            let told = match wait::judge(&shared.form, answer.clone()) {
                Outcome::Answered { .. } => json!({"status": "answered",
                    "message": "Thank you: your answer was sent to the agent. You can close this tab."}),
                Outcome::Declined { .. } | Outcome::Dismissed => json!({"status": "declined",
                    "message": "You declined; the agent was told. You can close this tab."}),
                Outcome::Invalid(err) => json!({"status": "invalid_response",
                    "message": format!("The answer did not fit the question and was discarded: {err}.")}),
                _ => json!({"status": "error", "message": "The answer was not taken."}),
            };
            Ok((Response::json(200, told), Some((slot, answer))))
        }
    }
}

/// The page: static markup, the form as inline JSON data (not script: CSP allows no inline
/// script), and module scripts from the same origin.
fn page(form: &Form, base: &str) -> String {
    let data = json!({ "form": form }).to_string();
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>him: {title}</title>\n\
         <link rel=\"stylesheet\" href=\"{base}/form.css\">\n\
         <link rel=\"stylesheet\" href=\"{base}/page.css\">\n\
         <script type=\"application/json\" id=\"him-question\">{data}</script>\n\
         <script type=\"module\" src=\"{base}/page.js\"></script>\n\
         </head>\n<body>\n<header class=\"bar\"><h1>him</h1>\
         <p>Your AI agent is asking you. Answer here, once; this page closes with the question.</p></header>\n\
         <main id=\"him-main\"><noscript>This form needs JavaScript.</noscript></main>\n\
         </body>\n</html>\n",
        title = escape_html(&first_line(&form.title)),
        data = escape_script_json(&data),
    )
}

fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.chars().take(120).collect()
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

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn head(method: &str, path: &str, headers: &[(&str, &str)]) -> Head {
        Head {
            method: method.into(),
            path: path.into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn status(route: Route) -> u16 {
        match route {
            Route::Refuse(r) => r.status,
            _ => 200,
        }
    }

    #[test]
    fn only_the_token_path_on_the_loopback_host_is_served() {
        let host = [("Host", "127.0.0.1:4000")];
        let page = format!("/q/{TOKEN}");
        assert_eq!(route(&head("GET", &page, &host), 4000, TOKEN), Route::Page);
        assert_eq!(
            route(&head("POST", &page, &host), 4000, TOKEN),
            Route::Answer
        );
        assert!(matches!(
            route(&head("GET", &format!("{page}/form.js"), &host), 4000, TOKEN),
            Route::Asset("text/javascript; charset=utf-8", _)
        ));
        let wrong = "/q/0123456789abcdef0123456789abcdee";
        assert_eq!(status(route(&head("GET", wrong, &host), 4000, TOKEN)), 404);
        assert_eq!(status(route(&head("GET", "/", &host), 4000, TOKEN)), 404);
        assert_eq!(status(route(&head("GET", "/q/", &host), 4000, TOKEN)), 404);
        assert_eq!(
            status(route(
                &head("GET", &format!("{page}/secret"), &host),
                4000,
                TOKEN
            )),
            404
        );
        assert_eq!(
            status(route(&head("DELETE", &page, &host), 4000, TOKEN)),
            405
        );
        for bad in [
            vec![("Host", "localhost:4000")],
            vec![("Host", "127.0.0.1:4001")],
            vec![("Host", "evil.example")],
            vec![],
            vec![("Host", "127.0.0.1:4000"), ("Host", "127.0.0.1:4000")],
        ] {
            assert_eq!(status(route(&head("GET", &page, &bad), 4000, TOKEN)), 421);
        }
    }

    #[test]
    fn a_post_needs_a_small_json_body_from_its_own_origin() {
        let ok = [
            ("Content-Length", "10"),
            ("Content-Type", "application/json"),
            ("Origin", "http://127.0.0.1:4000"),
        ];
        assert_eq!(check_post(&head("POST", "/", &ok), 4000), Ok(10));
        let code = |h: &[(&str, &str)]| check_post(&head("POST", "/", h), 4000).unwrap_err().status;
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

    #[test]
    fn heads_are_parsed_incrementally_and_capped() {
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nHost: a\r\n"), Ok(None));
        let (head, len) = parse_head(b"GET /q/x HTTP/1.1\r\nHost: a\r\n\r\nrest")
            .unwrap()
            .unwrap();
        assert_eq!(head.path, "/q/x");
        assert_eq!(len, 30);
        let mut huge = b"GET / HTTP/1.1\r\nX: ".to_vec();
        huge.resize(HEAD_LIMIT + 10, b'a');
        assert_eq!(parse_head(&huge).unwrap_err().status, 431);
        assert_eq!(
            parse_head(b"\x00\x01 nonsense\r\n\r\n").unwrap_err().status,
            400
        );
    }

    #[test]
    fn agent_text_cannot_close_the_data_script() {
        let form: Form = serde_json::from_value(json!({
            "title": "</script><script>alert(1)</script>",
            "fields": [{"name": "a", "type": "text", "label": "<!--"}]
        }))
        .unwrap();
        let html = page(&form, "/q/t");
        assert_eq!(html.matches("</script>").count(), 2, "{html}");
        assert!(!html.contains("<!--"));
        assert!(html.contains("<title>him: &lt;/script&gt;"));
    }
}
