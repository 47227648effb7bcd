//! Who is asking, as the card shows it, through real clients (rmcp's own, over stdio and
//! Streamable HTTP): the project from the call's `_meta`, the URL's `?project=`, the client's
//! roots or the working directory, in that order; the bridge a client came through when
//! the bridge named itself, and never a client merely named `mcp`.
//!
//! What the card would show is read where the browser reads it: the `ask` the real host
//! sends its extension (`FakeExtension`).
// Roots leave MCP with 2026-07-28 (SEP-2577, so rmcp deprecates them); clients of
// 2025-11-25 and before still name their folder only this way.
#![allow(deprecated)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use crate::support;
use crate::support::http::HttpServer;
use crate::support::*;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ErrorData, Implementation,
    ListRootsResult, ProtocolVersion, RequestMetaObject, Root,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;

/// A client that may declare roots, answering `roots/list` with `roots` — or, while
/// `silent` holds, never answering it. Counts the `roots/list` requests it got.
#[derive(Clone)]
struct Client {
    name: String,
    declares_roots: bool,
    roots: Vec<String>,
    silent: Arc<AtomicBool>,
    asked: Arc<AtomicUsize>,
}

impl Client {
    fn named(name: &str) -> Client {
        Client {
            name: name.into(),
            declares_roots: false,
            roots: Vec::new(),
            silent: Arc::default(),
            asked: Arc::default(),
        }
    }

    fn with_roots(name: &str, roots: &[&str]) -> Client {
        Client {
            declares_roots: true,
            roots: roots.iter().map(|r| r.to_string()).collect(),
            ..Client::named(name)
        }
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.declares_roots {
            ClientCapabilities::builder()
                .enable_roots()
                .enable_roots_list_changed()
                .build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(
            capabilities,
            Implementation::new(self.name.clone(), "1.0.0"),
        )
    }

    async fn list_roots(
        &self,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if self.silent.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        Ok(ListRootsResult::new(
            self.roots.iter().map(Root::new).collect(),
        ))
    }
}

type Session = RunningService<RoleClient, Client>;

/// `him serve` on stdio in the folder `cwd`, driven by `client`.
async fn serve_in(runtime: &Path, cwd: &Path, client: Client) -> Session {
    let (runtime, cwd) = (runtime.to_owned(), cwd.to_owned());
    let command = Command::new(him_bin()).configure(move |cmd| {
        cmd.arg("serve")
            .current_dir(&cwd)
            .env("HIM_RUNTIME_DIR", &runtime)
            .env(
                "HIM_STATE_DIR",
                support::state_dir(std::path::Path::new(&runtime)),
            )
            .env("HIM_LOG", "info");
    });
    let (transport, _) = TokioChildProcess::builder(command)
        .spawn()
        .expect("spawn him serve");
    client.serve(transport).await.expect("initialize him serve")
}

/// A folder named `name` to run him serve in.
fn folder(parent: &Path, name: &str) -> std::path::PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).expect("a folder");
    dir
}

/// Starts an ask_text call titled `question`, with `meta` as the call's `_meta`.
fn ask(
    session: &Arc<Session>,
    question: &str,
    meta: Option<Value>,
) -> tokio::task::JoinHandle<Value> {
    let mut params = params("ask_text", json!({"question": question}));
    params.meta = meta.map(|m| serde_json::from_value::<RequestMetaObject>(m).expect("a _meta"));
    let session = session.clone();
    tokio::spawn(async move { answered(&session, params).await })
}

async fn answered(session: &Session, params: CallToolRequestParams) -> Value {
    let result = session.call_tool(params).await.expect("tools/call");
    result.structured_content.expect("structured content")
}

/// The next ask the browser gets, answered; returns it as the extension saw it.
async fn next_ask(ext: &mut FakeExtension) -> Value {
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"answer": "ok"})).await;
    ask
}

#[tokio::test]
async fn a_client_that_declares_roots_names_the_project_after_its_first_file_root() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let cwd = folder(runtime.path(), "serve-folder");
    let client = Client::with_roots(
        "rooted",
        &[
            "https://example.com/repo",
            "file:///home/me/my%20shop/",
            "file:///home/me/other",
        ],
    );
    let asked = client.asked.clone();
    let session = Arc::new(serve_in(runtime.path(), &cwd, client).await);
    for n in 1..=2 {
        let started = Instant::now();
        let call = ask(&session, &format!("Which {n}?"), None);
        let shown = next_ask(&mut ext).await;
        eprintln!(
            "question {n} reached the browser {} µs after the call",
            started.elapsed().as_micros()
        );
        assert_eq!(shown["project"], "my shop", "{shown}");
        assert_eq!(call.await.expect("call")["status"], "answered");
    }
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "roots are asked once a session"
    );

    // A client that did not declare roots is never asked, and gets the working directory.
    let plain = Client::named("plain");
    let plain_asked = plain.asked.clone();
    let session = Arc::new(serve_in(runtime.path(), &cwd, plain).await);
    let started = Instant::now();
    let call = ask(&session, "Plain?", None);
    assert_eq!(next_ask(&mut ext).await["project"], "serve-folder");
    eprintln!(
        "without roots, question 1 reached the browser {} µs after the call",
        started.elapsed().as_micros()
    );
    call.await.expect("call");
    assert_eq!(plain_asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_client_whose_roots_never_answer_gets_the_working_directory_until_its_roots_change() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let cwd = folder(runtime.path(), "serve-folder");
    let client = Client::with_roots("silent", &["file:///srv/answered-at-last"]);
    client.silent.store(true, Ordering::SeqCst);
    let silent = client.silent.clone();
    let session = Arc::new(serve_in(runtime.path(), &cwd, client).await);

    let started = Instant::now();
    let call = ask(&session, "Still asked?", None);
    let shown = next_ask(&mut ext).await;
    eprintln!(
        "the question reached the browser {} ms after the call, roots/list unanswered",
        started.elapsed().as_millis()
    );
    assert_eq!(shown["project"], "serve-folder", "{shown}");
    assert_eq!(call.await.expect("call")["status"], "answered");

    // The roots change (and now answer): the next question asks again.
    silent.store(false, Ordering::SeqCst);
    session
        .peer()
        .notify_roots_list_changed()
        .await
        .expect("roots/list_changed");
    let call = ask(&session, "And now?", None);
    assert_eq!(next_ask(&mut ext).await["project"], "answered-at-last");
    call.await.expect("call");
}

#[tokio::test]
async fn a_project_named_in_the_calls_meta_comes_before_the_clients_roots() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let cwd = folder(runtime.path(), "serve-folder");
    let client = Client::with_roots("meta-client", &["file:///srv/rooted"]);
    let session = Arc::new(serve_in(runtime.path(), &cwd, client).await);

    let call = ask(
        &session,
        "Meta?",
        Some(json!({"dev.him/project": "named-in-call", "progressToken": 7})),
    );
    assert_eq!(next_ask(&mut ext).await["project"], "named-in-call");
    call.await.expect("call");
    let call = ask(&session, "Roots?", None);
    assert_eq!(next_ask(&mut ext).await["project"], "rooted");
    call.await.expect("call");
}

/// rmcp's Streamable HTTP client as `client`, at the server's URL with `query`.
async fn connect_with(server: &HttpServer, query: &str, client: Client) -> Session {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}?{query}", server.url))
            .auth_header(server.token.clone()),
    );
    client.serve(transport).await.expect("initialize over HTTP")
}

#[tokio::test]
async fn each_http_session_and_sessionless_request_names_its_project_in_the_url() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    // The URL's project comes before the roots.
    let alpha = connect_with(
        &server,
        "project=alpha",
        Client::with_roots("web-a", &["file:///srv/rooted"]),
    )
    .await;
    let beta = connect_with(&server, "x=1&project=caf%C3%A9%20b", Client::named("web-b")).await;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}?project=gamma", server.url))
            .auth_header(server.token.clone()),
    );
    let gamma = Client::named("web-c")
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover over HTTP");
    let sessions = [Arc::new(alpha), Arc::new(beta), Arc::new(gamma)];

    // All three wait at once, on one server.
    let calls: Vec<_> = sessions
        .iter()
        .zip(["From alpha?", "From beta?", "From gamma?"])
        .map(|(session, question)| ask(session, question, None))
        .collect();
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..3 {
        let shown = ext.take_ask().await;
        let title = shown["form"]["title"].as_str().expect("a title").to_owned();
        seen.insert(
            title,
            (shown["project"].clone(), shown["agent"]["name"].clone()),
        );
        ext.submit(&shown["id"], json!({"answer": "ok"})).await;
    }
    assert_eq!(
        seen,
        [
            ("From alpha?", ("alpha", "web-a")),
            ("From beta?", ("café b", "web-b")),
            ("From gamma?", ("gamma", "web-c")),
        ]
        .into_iter()
        .map(|(t, (p, a))| (t.to_owned(), (json!(p), json!(a))))
        .collect()
    );
    for call in calls {
        assert_eq!(call.await.expect("call")["status"], "answered");
    }
}

#[tokio::test]
async fn a_bridge_that_names_itself_is_said_and_a_client_named_mcp_is_only_a_client() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let cwd = folder(runtime.path(), "serve-folder");
    for (client, name, via) in [
        // What mcp-remote 0.15.1 sends for a client named Claude Desktop.
        (
            "Claude Desktop (via mcp-remote 0.15.1)",
            "Claude Desktop",
            Some("mcp-remote"),
        ),
        // supergateway 4.0 in its stateless mode, in the client's place.
        ("supergateway", "MCP client", Some("supergateway")),
        // The Python SDK's default name (and mcp-proxy's): a client, not a bridge.
        ("mcp", "mcp", None),
    ] {
        let session = Arc::new(serve_in(runtime.path(), &cwd, Client::named(client)).await);
        let call = ask(&session, client, None);
        let shown = next_ask(&mut ext).await;
        assert_eq!(shown["agent"]["name"], name, "{shown}");
        assert_eq!(
            shown["agent"].get("via").and_then(Value::as_str),
            via,
            "{shown}"
        );
        call.await.expect("call");
    }
}
