//! `HIM_FALLBACK=http`: with no browser extension connected, the question is served once
//! as a web form on 127.0.0.1. These tests talk raw HTTP to it, as a browser (or an
//! attacker on the same machine) would; `$BROWSER` is a script that records the URL.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use crate::support;
use crate::support::*;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// A `$BROWSER` that writes the URL it is given to `<dir>/url`.
fn recording_browser(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("browser.sh");
    let url_file = dir.join("url");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > '{}.tmp' && mv '{0}.tmp' '{0}'\n",
            url_file.display()
        ),
    )
    .expect("write browser script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    script
}

async fn recorded_url(dir: &Path) -> String {
    let file = dir.join("url");
    eventually("the browser to be opened", || file.exists()).await;
    std::fs::read_to_string(&file).expect("url file")
}

/// `him ask` with the loopback form, its URL, and the environment's temp dir.
struct Asked {
    child: Child,
    url: String,
    /// Its stderr so far, read as it comes.
    stderr: Arc<Mutex<String>>,
    stderr_read: tokio::task::JoinHandle<()>,
    _runtime: tempfile::TempDir,
}

impl Asked {
    async fn start(args: &[&str]) -> Asked {
        Asked::start_logging(args, "info").await
    }

    async fn start_logging(args: &[&str], log: &str) -> Asked {
        let runtime = runtime_dir();
        let browser = recording_browser(runtime.path());
        // The form's debug line for each request it starts to read, which `half_sent` waits for.
        let log = if log == "trace" {
            log.to_owned()
        } else {
            format!("{log},him::fallback::loopback=debug")
        };
        let mut child = Command::new(him_bin())
            .arg("ask")
            .args(args)
            .env("HIM_RUNTIME_DIR", runtime.path())
            .env("HIM_STATE_DIR", support::state_dir(runtime.path()))
            .env("HIM_FALLBACK", "http")
            .env("BROWSER", &browser)
            .env("HIM_LOG", log)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn him ask");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let stderr_read = tokio::spawn({
            let stderr = stderr.clone();
            async move {
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut text = stderr.lock().expect("stderr");
                    text.push_str(&line);
                    text.push('\n');
                }
            }
        });
        let url = recorded_url(runtime.path()).await;
        Asked {
            child,
            url,
            stderr,
            stderr_read,
            _runtime: runtime,
        }
    }

    /// How many requests the form has started to read (each is told 410 once it closes).
    fn requests_under_way(&self) -> usize {
        let text = self.stderr.lock().expect("stderr");
        text.matches("loopback form: a request under way").count()
    }

    fn port(&self) -> u16 {
        let rest = self
            .url
            .strip_prefix("http://127.0.0.1:")
            .expect("loopback url");
        rest.split('/')
            .next()
            .expect("port")
            .parse()
            .expect("port number")
    }

    fn path(&self) -> String {
        let rest = self.url.strip_prefix("http://").expect("http url");
        format!("/{}", rest.split_once('/').expect("path").1)
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port())
    }

    /// The result `him ask` printed, and its stderr.
    async fn finish(self) -> (Value, String) {
        let output = tokio::time::timeout(PATIENCE, self.child.wait_with_output())
            .await
            .expect("him ask ended")
            .expect("output");
        self.stderr_read.await.expect("stderr read");
        let result: Value = serde_json::from_slice(&output.stdout).expect("result JSON");
        assert_complete(&result);
        let stderr = self.stderr.lock().expect("stderr").clone();
        (result, stderr)
    }
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("JSON body")
    }
}

async fn send_on(mut stream: TcpStream, request: &[u8]) -> std::io::Result<Reply> {
    stream.write_all(request).await?;
    let mut bytes = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut bytes))
        .await
        .expect("a response in time")?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    Ok(Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    })
}

async fn send(port: u16, request: &[u8]) -> std::io::Result<Reply> {
    send_on(TcpStream::connect(("127.0.0.1", port)).await?, request).await
}

fn get(path: &str, host: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes()
}

/// A GET as a browser set to `languages` sends it.
fn get_in(path: &str, host: &str, languages: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept-Language: {languages}\r\n\r\n")
        .into_bytes()
}

fn post(path: &str, host: &str, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Origin: http://{host}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

const CHOICE: [&str; 4] = ["choice", "Which database?", "Postgres", "SQLite"];

/// The inline JSON the page script reads: the form, who asks, the time left.
fn page_data(html: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"him-question\">";
    let start = html.find(open).expect("the data script") + open.len();
    let end = start + html[start..].find("</script>").expect("its end");
    serde_json::from_str(&html[start..end]).expect("the data is JSON")
}

/// Asserts the headers every response of the form carries (`loopback_http::secure`).
fn assert_secure(reply: &Reply) {
    let csp = reply.header("content-security-policy").expect("CSP");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(reply.header("cache-control").as_deref(), Some("no-store"));
    assert_eq!(
        reply.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );
    assert_eq!(
        reply.header("referrer-policy").as_deref(),
        Some("no-referrer")
    );
}

#[tokio::test]
async fn the_page_carries_who_asks_and_the_time_left_as_data() {
    let asked = Asked::start(&["--timeout-ms", "60000", "text", "Which branch?"]).await;
    let page = send(asked.port(), &get(&asked.path(), &asked.host()))
        .await
        .expect("page");
    assert_eq!(page.status, 200, "{}", page.head);
    let data = page_data(&page.body);
    assert_eq!(data["agent"]["name"], "him ask", "{data}");
    // `him ask` names its project after the directory it runs in, as the panel shows it.
    let cwd = std::env::current_dir().expect("cwd");
    let project = cwd.file_name().expect("a directory name").to_string_lossy();
    assert_eq!(data["project"], project.as_ref(), "{data}");
    let remaining = data["remaining_ms"].as_u64().expect("remaining_ms");
    assert!(
        (50_000..=60_000).contains(&remaining),
        "the time left when served: {remaining}"
    );
    assert!(
        page.body.contains("id=\"him-time\""),
        "a place for the countdown"
    );
    // Asked again later, the page tells the time left then, not the whole wait again.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let later = send(asked.port(), &get(&asked.path(), &asked.host()))
        .await
        .expect("page");
    let later = page_data(&later.body)["remaining_ms"].as_u64().expect("ms");
    assert!(later + 1000 <= remaining, "{later} after {remaining}");
    send(
        asked.port(),
        &post(
            &asked.path(),
            &asked.host(),
            &json!({"action": "submit", "values": {"answer": "main"}}),
        ),
    )
    .await
    .expect("answer");
    let (result, _) = asked.finish().await;
    assert_eq!(result["status"], "answered", "{result}");
}

/// A connection that has started its GET of the page and finishes it on `finish`.
async fn half_sent_get(asked: &Asked) -> (TcpStream, Vec<u8>) {
    half_sent(asked, get(&asked.path(), &asked.host())).await
}

/// A connection that has sent the first bytes of `request`, the rest to send on, once the
/// form has started to read it (so that it is told 410, not dropped, when the form closes).
async fn half_sent(asked: &Asked, request: Vec<u8>) -> (TcpStream, Vec<u8>) {
    let before = asked.requests_under_way();
    let mut tab = TcpStream::connect(("127.0.0.1", asked.port()))
        .await
        .expect("connect");
    let (start, rest) = request.split_at(10);
    tab.write_all(start).await.expect("first bytes");
    eventually("the form to start reading the request", || {
        asked.requests_under_way() > before
    })
    .await;
    (tab, rest.to_vec())
}

/// Waits until the form has closed its port (a connection is refused): past the timeout,
/// or the answer, requests under way are told 410 for a moment (`LINGER`, 1 s).
async fn closed(port: u16) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the form's port stayed open"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_reload_after_the_answer_gets_a_page_saying_so_with_the_same_headers() {
    let form = json!({"title": "The deploy key?", "fields": [
        {"name": "key", "type": "password", "label": "Key", "required": true}]});
    let asked = Asked::start(&["form", &form.to_string()]).await;
    let (port, path, host) = (asked.port(), asked.path(), asked.host());
    let (reload, rest) = half_sent_get(&asked).await;
    let reply = send(
        port,
        &post(
            &path,
            &host,
            &json!({"action": "submit", "values": {"key": "hunter2-secret"}}),
        ),
    )
    .await
    .expect("answer");
    assert_eq!(reply.status, 200, "{}", reply.body);
    let closed = send_on(reload, &rest).await.expect("the reload");
    assert_eq!(closed.status, 410, "{}", closed.head);
    assert_eq!(
        closed.header("content-type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert_secure(&closed);
    assert!(
        closed.body.contains("This question was answered.")
            && closed.body.contains("You can close this tab."),
        "{}",
        closed.body
    );
    // Nothing of the question or its answer, and no script.
    for absent in ["The deploy key?", "hunter2-secret", "<script"] {
        assert!(!closed.body.contains(absent), "{absent}: {}", closed.body);
    }
    let (result, _) = asked.finish().await;
    assert_eq!(result["status"], "answered", "{result}");
}

#[tokio::test]
async fn the_page_and_the_page_after_it_closed_are_in_the_browser_s_language() {
    // Long enough for the requests below to be under way before it.
    let asked = Asked::start(&["--timeout-ms", "3000", "text", "Quick?"]).await;
    let (port, path, host) = (asked.port(), asked.path(), asked.host());
    let german = send(port, &get_in(&path, &host, "de-DE,de;q=0.9,en;q=0.8"))
        .await
        .expect("page");
    assert_eq!(german.status, 200, "{}", german.head);
    assert_eq!(german.header("content-language").as_deref(), Some("de"));
    assert!(
        german.body.contains("<html lang=\"de\">"),
        "{}",
        german.body
    );
    assert!(
        german.body.contains("Ihr KI-Agent hat eine Frage an Sie."),
        "{}",
        german.body
    );
    assert!(german.body.contains("\"Ablehnen\""), "lib's words as data");
    let other = send(port, &get_in(&path, &host, "fr-FR, fr;q=0.9"))
        .await
        .expect("page");
    assert!(other.body.contains("<html lang=\"en\">"), "{}", other.body);
    let (reload, rest) = half_sent(&asked, get_in(&path, &host, "zh-CN,zh;q=0.9")).await;
    closed(port).await;
    let closed = send_on(reload, &rest).await.expect("the reload");
    assert_eq!(closed.status, 410, "{}", closed.head);
    assert_secure(&closed);
    assert_eq!(closed.header("content-language").as_deref(), Some("zh-CN"));
    assert!(
        closed.body.contains("这个问题已关闭：已超时。")
            && closed.body.contains("你可以关闭此标签页。"),
        "{}",
        closed.body
    );
    let (result, _) = asked.finish().await;
    assert_eq!(result["status"], "timeout", "{result}");
}

#[tokio::test]
async fn a_reload_after_the_timeout_gets_a_page_saying_it_timed_out() {
    // Long enough for the reload to be under way before it.
    let asked = Asked::start(&["--timeout-ms", "3000", "text", "Quick?"]).await;
    let (reload, rest) = half_sent_get(&asked).await;
    // Past the deadline, within the moment the form gives requests under way.
    closed(asked.port()).await;
    let closed = send_on(reload, &rest).await.expect("the reload");
    assert_eq!(closed.status, 410, "{}", closed.head);
    assert_secure(&closed);
    assert!(
        closed.body.contains("it timed out") && closed.body.contains("You can close this tab."),
        "{}",
        closed.body
    );
    let (result, _) = asked.finish().await;
    assert_eq!(result["status"], "timeout", "{result}");
}

#[tokio::test]
async fn the_page_is_served_with_a_strict_policy_and_the_answer_is_taken_once() {
    let asked = Asked::start(&CHOICE).await;
    let (port, path, host) = (asked.port(), asked.path(), asked.host());
    assert_eq!(path.len(), "/q/".len() + 32, "a 128-bit token: {path}");

    let page = send(port, &get(&path, &host)).await.expect("page");
    assert_eq!(page.status, 200, "{}", page.head);
    let csp = page.header("content-security-policy").expect("CSP");
    for rule in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(rule), "{csp}");
    }
    assert_eq!(page.header("cache-control").as_deref(), Some("no-store"));
    assert_eq!(
        page.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );
    assert_eq!(
        page.header("referrer-policy").as_deref(),
        Some("no-referrer")
    );
    assert_eq!(page.header("connection").as_deref(), Some("close"));
    assert!(page.body.contains("Which database?"), "{}", page.body);
    assert!(page.body.contains(&format!("{path}/page.js")));
    for asset in [
        "page.js",
        "form.js",
        "formmodel.js",
        "markdown.js",
        "form.css",
        "page.css",
    ] {
        let reply = send(port, &get(&format!("{path}/{asset}"), &host))
            .await
            .expect("asset");
        assert_eq!(reply.status, 200, "{asset}");
    }

    // A second tab, already connected (and accepted: the server is reading its request)
    // when the answer comes.
    let second = post(
        &path,
        &host,
        &json!({"action": "submit", "values": {"choice": "Postgres"}}),
    );
    let (second_tab, rest) = half_sent(&asked, second).await;
    let reply = send(
        port,
        &post(
            &path,
            &host,
            &json!({"action": "submit", "values": {"choice": "SQLite"}}),
        ),
    )
    .await
    .expect("answer");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()["status"], "answered");
    let again = send_on(second_tab, &rest).await.expect("second submit");
    assert_eq!(again.status, 410, "{}", again.body);

    let (result, stderr) = asked.finish().await;
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "http");
    assert_eq!(result["answer"], "SQLite");
    assert_eq!(result["fallback"], "http");
    assert_eq!(result["form_url"], format!("http://{host}{path}"));
    assert!(
        stderr.contains(&format!("http://{host}{path}")),
        "the URL is told: {stderr}"
    );
    // Told to the person, never logged: a log line names the port, not the token.
    let token = path.rsplit('/').next().expect("token");
    let logged: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            [" INFO ", " DEBUG ", " WARN ", " ERROR "]
                .iter()
                .any(|lvl| l.contains(lvl))
        })
        .collect();
    assert!(
        logged
            .iter()
            .any(|l| l.contains("loopback form opened") && l.contains(&port.to_string())),
        "{stderr}"
    );
    assert!(
        logged.iter().all(|l| !l.contains(token)),
        "the token was logged: {stderr}"
    );
    // Closed with the answer.
    let gone = TcpStream::connect(("127.0.0.1", port)).await;
    assert!(gone.is_err(), "the form still listens after the answer");
}

#[tokio::test]
async fn wrong_tokens_hosts_and_methods_are_refused_without_ending_the_question() {
    let asked = Asked::start(&CHOICE).await;
    let (port, path, host) = (asked.port(), asked.path(), asked.host());
    let wrong_token = format!("/q/{}", "0".repeat(32));
    let answer = json!({"action": "submit", "values": {"choice": "SQLite"}});

    assert_eq!(
        send(port, &get(&wrong_token, &host)).await.unwrap().status,
        404
    );
    assert_eq!(
        send(port, &post(&wrong_token, &host, &answer))
            .await
            .unwrap()
            .status,
        404
    );
    assert_eq!(send(port, &get("/", &host)).await.unwrap().status, 404);
    assert_eq!(send(port, &get("/q/", &host)).await.unwrap().status, 404);
    assert_eq!(
        send(port, &get(&format!("{path}/../etc/passwd"), &host))
            .await
            .unwrap()
            .status,
        404
    );
    // DNS rebinding: the right path under another name.
    for other in ["localhost", "evil.example", "127.0.0.1", "127.0.0.1:1"] {
        let other = if other == "localhost" {
            format!("localhost:{port}")
        } else {
            other.into()
        };
        assert_eq!(
            send(port, &get(&path, &other)).await.unwrap().status,
            421,
            "{other}"
        );
        assert_eq!(
            send(port, &post(&path, &other, &answer))
                .await
                .unwrap()
                .status,
            421
        );
    }
    let no_host = format!("GET {path} HTTP/1.1\r\n\r\n");
    assert_eq!(send(port, no_host.as_bytes()).await.unwrap().status, 421);
    // RFC 9112 §3.2: two Host lines are a bad request, even both right.
    let two_hosts = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nHost: {host}\r\n\r\n");
    assert_eq!(send(port, two_hosts.as_bytes()).await.unwrap().status, 400);
    // Another site's page posting to us.
    let foreign = String::from_utf8(post(&path, &host, &answer))
        .unwrap()
        .replace(
            &format!("Origin: http://{host}"),
            "Origin: http://evil.example",
        );
    assert_eq!(send(port, foreign.as_bytes()).await.unwrap().status, 403);
    // Not JSON.
    let form_post = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: 13\r\n\r\nchoice=SQLite"
    );
    assert_eq!(send(port, form_post.as_bytes()).await.unwrap().status, 415);
    // Too big: refused from the header alone.
    let huge = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        1024 * 1024
    );
    assert_eq!(send(port, huge.as_bytes()).await.unwrap().status, 413);
    let chunked = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    );
    assert_eq!(send(port, chunked.as_bytes()).await.unwrap().status, 501);
    let garbage = post(&path, &host, &json!({"hello": "world"}));
    assert_eq!(send(port, &garbage).await.unwrap().status, 400);
    let delete = format!("DELETE {path} HTTP/1.1\r\nHost: {host}\r\n\r\n");
    assert_eq!(send(port, delete.as_bytes()).await.unwrap().status, 405);

    // None of that took the question: the person still can.
    let reply = send(port, &post(&path, &host, &answer)).await.unwrap();
    assert_eq!(reply.status, 200);
    let (result, _) = asked.finish().await;
    assert_eq!(result["answer"], "SQLite", "{result}");
}

#[tokio::test]
async fn an_answer_that_does_not_fit_is_invalid_response() {
    let asked = Asked::start(&CHOICE).await;
    let (port, path, host) = (asked.port(), asked.path(), asked.host());
    let reply = send(
        port,
        &post(
            &path,
            &host,
            &json!({"action": "submit", "values": {"choice": "MySQL"}}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(reply.json()["status"], "invalid_response", "{}", reply.body);
    // The page words it for the person; the reason is the agent side's, as the agent gets it.
    let reason = reply.json()["reason"].as_str().map(str::to_owned);
    assert!(
        reason.as_deref().is_some_and(|r| r.contains("MySQL")),
        "{}",
        reply.body
    );
    let (result, _) = asked.finish().await;
    assert_eq!(result["status"], "invalid_response", "{result}");
    assert_eq!(result["via"], "http");
    assert_eq!(result["answer"], Value::Null);
}

#[tokio::test]
async fn a_decline_is_reported_as_declined() {
    let asked = Asked::start(&["confirm", "Deploy now?"]).await;
    let reply = send(
        asked.port(),
        &post(&asked.path(), &asked.host(), &json!({"action": "decline"})),
    )
    .await
    .unwrap();
    assert_eq!(reply.status, 200);
    let (result, _) = asked.finish().await;
    assert_eq!(result["status"], "declined", "{result}");
    assert_eq!(result["via"], "http");
}

#[tokio::test]
async fn the_form_closes_when_the_question_times_out() {
    let asked = Asked::start(&["--timeout-ms", "1000", "text", "Quick?"]).await;
    let port = asked.port();
    assert_eq!(
        send(port, &get(&asked.path(), &asked.host()))
            .await
            .unwrap()
            .status,
        200
    );
    let (result, _) = asked.finish().await;
    assert_eq!(result["status"], "timeout", "{result}");
    assert_eq!(result["via"], "http");
    assert!(result["form_url"].is_string());
    assert!(
        TcpStream::connect(("127.0.0.1", port)).await.is_err(),
        "still listening after the timeout"
    );
}

#[tokio::test]
async fn a_browser_extension_that_appears_meanwhile_can_answer_and_closes_the_form() {
    let asked = Asked::start(&CHOICE).await;
    let port = asked.port();
    let runtime = asked._runtime.path().to_owned();
    let mut ext = FakeExtension::start(&runtime).await;
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"choice": "Postgres"})).await;
    let (result, _) = asked.finish().await;
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "extension");
    assert_eq!(result["answer"], "Postgres");
    assert_eq!(result["fallback"], "http");
    assert!(
        TcpStream::connect(("127.0.0.1", port)).await.is_err(),
        "the form outlived the answer"
    );
}

#[tokio::test]
async fn through_mcp_the_url_comes_as_progress_and_as_form_url() {
    let runtime = runtime_dir();
    let browser = recording_browser(runtime.path());
    let browser = browser.display().to_string();
    let (agent, client) = start_agent(
        runtime.path(),
        "loopback-agent",
        &[("HIM_FALLBACK", "http"), ("BROWSER", &browser)],
    )
    .await;
    let call = tokio::spawn(async move {
        call(
            &agent,
            "ask_text",
            json!({"question": "Your name?", "default": "Ada"}),
        )
        .await
    });
    let url = recorded_url(runtime.path()).await;
    let progress = client.progress.clone();
    eventually("a progress notification", || {
        progress.load(std::sync::atomic::Ordering::SeqCst) >= 1
    })
    .await;
    let told = client.messages.lock().expect("lock").clone();
    assert!(
        told.iter().any(|m| m.contains(&url)),
        "no progress message names {url}: {told:?}"
    );
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let port: u16 = host.rsplit(':').next().unwrap().parse().unwrap();
    // The page says who asks with the MCP client's own name (its `clientInfo`).
    let page = send(port, &get(&format!("/{path}"), host)).await.unwrap();
    assert_eq!(page_data(&page.body)["agent"]["name"], "loopback-agent");
    let reply = send(
        port,
        &post(
            &format!("/{path}"),
            host,
            &json!({"action": "submit", "values": {"answer": "Grace"}}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(reply.status, 200);
    let result = call.await.unwrap();
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "http");
    assert_eq!(result["answer"], "Grace");
    assert_eq!(result["form_url"], url);
    assert_eq!(result["client_elicitation"], false);
}

#[tokio::test]
async fn status_reports_the_loopback_form_for_a_client_without_elicitation() {
    let runtime = runtime_dir();
    let (agent, _) = start_agent(runtime.path(), "status", &[("HIM_FALLBACK", "http")]).await;
    let status = call(&agent, "human_input_status", json!({})).await;
    assert_eq!(status["channel"], "http", "{status}");
    assert_eq!(status["elicitation"], "none");
    assert!(
        status["reason"]
            .as_str()
            .unwrap()
            .contains("did not declare"),
        "{status}"
    );
    let (agent, _) = start_agent(runtime.path(), "status", &[("HIM_FALLBACK", "return")]).await;
    assert_eq!(
        call(&agent, "human_input_status", json!({})).await["channel"],
        "chat"
    );
    let (agent, _) = start_agent(runtime.path(), "status", &[("HIM_FALLBACK", "off")]).await;
    assert_eq!(
        call(&agent, "human_input_status", json!({})).await["channel"],
        "none"
    );
}

#[tokio::test]
async fn a_password_sent_through_the_form_reaches_the_asker_and_no_log() {
    let form = json!({"title": "Log in to staging", "fields": [
        {"name": "user", "type": "text", "label": "User"},
        {"name": "pw", "type": "password", "label": "Password", "required": true}]});
    let asked = Asked::start_logging(&["form", &form.to_string()], "trace").await;
    let (port, path, host) = (asked.port(), asked.path(), asked.host());
    let page = send(port, &get(&path, &host)).await.unwrap();
    assert!(page.body.contains("\"password\""), "{}", page.body);
    let secret = "hunter2-correct-horse";
    let reply = send(
        port,
        &post(
            &path,
            &host,
            &json!({"action": "submit", "values": {"user": "ada", "pw": secret}}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(reply.status, 200);
    assert!(!reply.body.contains(secret), "{}", reply.body);
    let (result, stderr) = asked.finish().await;
    assert_eq!(result["values"]["pw"], secret, "{result}");
    assert!(!result["message"].as_str().unwrap().contains(secret));
    assert!(
        !stderr.contains(secret),
        "the password was logged: {stderr}"
    );
}

/// `him serve` tells the client the URL in a progress message, and logs neither it nor its
/// token, whatever the log level.
#[tokio::test]
async fn him_serve_never_logs_the_forms_token() {
    let runtime = runtime_dir();
    let browser = recording_browser(runtime.path());
    let log_path = runtime.path().join("serve.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let (agent, handler) = start_agent_with_stderr(
        runtime.path(),
        "logging",
        &[
            ("HIM_FALLBACK", "http"),
            ("BROWSER", browser.to_str().expect("utf-8 path")),
            ("HIM_LOG", "trace"),
        ],
        Stdio::from(log),
    )
    .await;
    let asked = tokio::spawn(async move {
        let result = call(&agent, "ask_text", json!({"question": "Which branch?"})).await;
        (result, agent)
    });
    let url = recorded_url(runtime.path()).await;
    let token = url.rsplit('/').next().expect("token").to_owned();
    let port: u16 = url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.split('/').next())
        .and_then(|port| port.parse().ok())
        .expect("port");
    let body = json!({"action": "submit", "values": {"answer": "main"}}).to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let path = url
        .strip_prefix(&format!("http://127.0.0.1:{port}"))
        .expect("path");
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("post");
    let (result, agent) = asked.await.expect("call");
    assert_eq!(result["answer"], "main", "{result}");
    drop(agent);
    let logged = std::fs::read_to_string(&log_path).expect("log");
    assert!(logged.contains("loopback form opened"), "{logged}");
    assert!(!logged.contains(&token), "the token was logged:\n{logged}");
    let _ = handler;
}

/// DESIGN.md §6: the token travels in an opener's arguments, which every user can read, so
/// the kernel's word on who is connecting is what keeps another user out.
#[tokio::test]
async fn another_local_user_gets_nothing_from_the_form_not_even_the_question() {
    let Some(attacker) = support::fresh_user::fresh_user() else {
        return;
    };
    let asked = Asked::start(&["text", "Deploy key passphrase?"]).await;
    let (port, path, host) = (asked.port(), asked.path(), asked.host());
    let as_text = |bytes: Vec<u8>| String::from_utf8(bytes).expect("ASCII request");

    let (connected, page) = attacker.send_raw(port, &as_text(get(&path, &host))).await;
    assert!(connected, "the other user could not even connect");
    assert_eq!(page, "", "another user was served the question");
    let theirs = json!({"action": "submit", "values": {"answer": "attacker's"}});
    let (connected, reply) = attacker
        .send_raw(port, &as_text(post(&path, &host, &theirs)))
        .await;
    assert!(connected);
    assert_eq!(reply, "", "another user's answer was read");

    let mine = json!({"action": "submit", "values": {"answer": "the person's"}});
    let reply = send(port, &post(&path, &host, &mine))
        .await
        .expect("answer");
    assert_eq!(reply.status, 200, "{}", reply.body);
    let (result, stderr) = asked.finish().await;
    assert_eq!(result["answer"], "the person's", "{result}");
    assert!(
        stderr.contains(&format!("belongs to uid {}", attacker.uid)),
        "the refusal is logged with the uid: {stderr}"
    );
}

/// Connections that send one byte, or nothing, and wait: more of them than the form has
/// room for must not keep out the person's answer.
#[tokio::test]
async fn a_crowd_of_idle_and_half_sent_connections_does_not_keep_the_answer_out() {
    let asked = Asked::start(&["text", "Release notes?"]).await;
    let (port, path, host) = (asked.port(), asked.path(), asked.host());
    let mut crowd = Vec::new();
    for i in 0..120 {
        let mut stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        if i % 2 == 0 {
            stream.write_all(b"P").await.expect("one byte");
        }
        crowd.push(stream);
    }
    let answer = json!({"action": "submit", "values": {"answer": "ship it"}});
    let reply = send(port, &post(&path, &host, &answer))
        .await
        .expect("the answer reached the form");
    assert_eq!(reply.status, 200, "{}", reply.body);
    let (result, _) = asked.finish().await;
    assert_eq!(result["answer"], "ship it", "{result}");
    drop(crowd);
}

// ---- issue 22.10: a page that cannot be opened hands the question back at once ----

/// `him serve` as the Python and TypeScript SDKs and the Inspector start it: only PATH, HOME,
/// USER, LOGNAME, SHELL and TERM (no DISPLAY, no WAYLAND_DISPLAY, no XDG_RUNTIME_DIR), with
/// the loopback form as its fallback and `env` on top.
async fn start_stripped_agent(runtime: &Path, env: &[(&str, &str)]) -> (Agent, TestClient) {
    use rmcp::ServiceExt;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let handler = TestClient {
        name: "stripped".into(),
        ..TestClient::default()
    };
    let mut vars: Vec<(String, String)> = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM"]
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    vars.push(("HIM_RUNTIME_DIR".into(), runtime.display().to_string()));
    vars.push((
        "HIM_STATE_DIR".into(),
        support::state_dir(runtime).display().to_string(),
    ));
    vars.push(("HIM_FALLBACK".into(), "http".into()));
    vars.push(("HIM_LOG".into(), "info".into()));
    vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let command = Command::new(him_bin()).configure(move |cmd| {
        cmd.arg("serve").env_clear().envs(vars.iter().cloned());
    });
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn him serve");
    let client = handler
        .clone()
        .serve(transport)
        .await
        .expect("initialize him serve");
    (client, handler)
}

/// A `$BROWSER` that records the URL it is given in `<dir>/url`, then runs `then`.
fn browser_that(dir: &Path, then: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("browser-then.sh");
    let url_file = dir.join("url");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > '{0}.tmp' && mv '{0}.tmp' '{0}'\n{then}\n",
            url_file.display()
        ),
    )
    .expect("write browser script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    script
}

/// ask_choice with a question far longer than the test waits: only a hand-back returns.
async fn ask_choice_long(agent: &Agent) -> Value {
    let args = json!({"question": "Which database?", "options": ["Postgres", "SQLite"], "timeout_ms": 600_000});
    tokio::time::timeout(PATIENCE, call(agent, "ask_choice", args))
        .await
        .expect("the call returned at once, not at the question's timeout")
}

fn assert_handed_back(result: &Value, why: &str) {
    assert_complete(result);
    assert_eq!(result["status"], "needs_user_input", "{result}");
    assert_eq!(result["via"], "chat", "{result}");
    let message = result["message"].as_str().expect("message");
    for part in ["Which database?", "1. Postgres", "2. SQLite"] {
        assert!(message.contains(part), "{part:?} not in {message:?}");
    }
    let next = result["next_step"].as_str().expect("next_step");
    assert!(
        next.contains("could not be opened in a browser") && next.contains(why),
        "{next}"
    );
    assert_eq!(result["form_url"], Value::Null, "a dead link: {result}");
}

#[tokio::test]
async fn a_page_whose_opener_fails_hands_the_question_back_at_once_and_closes() {
    let runtime = runtime_dir();
    let failing = browser_that(runtime.path(), "exit 3");
    let (agent, client) =
        start_stripped_agent(runtime.path(), &[("BROWSER", failing.to_str().unwrap())]).await;
    let result = ask_choice_long(&agent).await;
    assert_handed_back(&result, "exited with status 3");
    // Nobody was told where the page was, and it is gone.
    let url = std::fs::read_to_string(runtime.path().join("url")).expect("the opener ran");
    let told = client.messages.lock().expect("lock").clone();
    assert!(told.iter().all(|m| !m.contains(&url)), "{told:?}");
    let port: u16 = url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.split('/').next())
        .and_then(|port| port.parse().ok())
        .expect("port");
    assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err());
}

/// The system opener in a client's environment: xdg-open finds no display there and exits 3
/// (or is not installed: a missing opener fails as well); so does a PATH without any opener.
#[tokio::test]
async fn the_system_opener_without_a_display_or_none_at_all_hands_the_question_back() {
    let runtime = runtime_dir();
    let (agent, _) = start_stripped_agent(runtime.path(), &[]).await;
    let result = ask_choice_long(&agent).await;
    assert_handed_back(&result, "");
    let nothing = tempfile::tempdir().expect("empty dir");
    let (agent, _) = start_stripped_agent(
        runtime.path(),
        &[("PATH", nothing.path().to_str().unwrap())],
    )
    .await;
    let result = ask_choice_long(&agent).await;
    assert_handed_back(&result, "cannot run");
}

/// An opener still running when its time to fail is over (a `$BROWSER` that runs the browser in
/// the foreground) opened the page: the page is served meanwhile, its URL is told once the
/// opener is judged, and the opener failing later changes nothing.
#[tokio::test]
async fn an_opener_still_running_counts_as_opened() {
    let runtime = runtime_dir();
    let release = runtime.path().join("release");
    let slow = browser_that(
        runtime.path(),
        &format!(
            // Also ends once the test's folder is gone: a release written just before the
            // test ended and removed it would otherwise never be seen, and the loop outlive it.
            "while [ ! -e '{0}' ] && [ -d '{1}' ]; do sleep 0.05; done\nexit 3",
            release.display(),
            runtime.path().display()
        ),
    );
    let (agent, client) =
        start_stripped_agent(runtime.path(), &[("BROWSER", slow.to_str().unwrap())]).await;
    let call = tokio::spawn(async move {
        call(
            &agent,
            "ask_text",
            json!({"question": "Your name?", "timeout_ms": 600_000}),
        )
        .await
    });
    let url = recorded_url(runtime.path()).await;
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let port: u16 = host.rsplit(':').next().unwrap().parse().unwrap();
    let page = send(port, &get(&format!("/{path}"), host)).await.unwrap();
    assert_eq!(page.status, 200, "served while the opener runs");
    let messages = client.messages.clone();
    eventually("the URL told once the opener counts as opened", || {
        messages
            .lock()
            .expect("lock")
            .iter()
            .any(|m| m.contains(&url))
    })
    .await;
    std::fs::write(&release, b"").expect("release the opener");
    let reply = send(
        port,
        &post(
            &format!("/{path}"),
            host,
            &json!({"action": "submit", "values": {"answer": "Grace"}}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(reply.status, 200);
    let result = call.await.unwrap();
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "http");
    assert_eq!(result["form_url"], url);
}
