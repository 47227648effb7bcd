//! Runs `him serve --http 127.0.0.1:0` as a child process, learns the address it bound from
//! its stderr, and connects rmcp's own Streamable HTTP client (or plain requests) to it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::{Agent, PATIENCE, TestClient, him_bin};

pub const SERVING: &str = "him: serving MCP (Streamable HTTP) at ";
pub const ACCEPT: &str = "application/json, text/event-stream";

pub struct HttpServer {
    pub child: Child,
    /// Where the server keeps its tokens (`HIM_STATE_DIR`).
    pub state: PathBuf,
    pub url: String,
    pub addr: SocketAddr,
    pub token: String,
    /// Every stderr line so far.
    pub stderr: Arc<std::sync::Mutex<Vec<String>>>,
}

impl HttpServer {
    /// Starts `him serve --http 127.0.0.1:0 <args>` and waits until it listens. Its tokens
    /// go to `<runtime>/state/him` unless `env` names another `HIM_STATE_DIR`: never to the
    /// home directory of whoever runs the tests.
    pub async fn start(runtime: &Path, args: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let state = env
            .iter()
            .find(|(k, _)| *k == "HIM_STATE_DIR")
            .map(|(_, v)| PathBuf::from(v))
            .unwrap_or_else(|| super::state_dir(runtime));
        let mut command = Command::new(him_bin());
        command
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .env("HIM_RUNTIME_DIR", runtime)
            .env("HIM_STATE_DIR", &state)
            // Kept only where a test turns it on, as `start_agent` does.
            .env("HIM_KEEP_MS", "0")
            .env("HIM_LOG", "debug")
            .env_remove("HIM_HTTP_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("spawn him serve --http");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let stderr = Arc::new(std::sync::Mutex::new(Vec::new()));
        let url = tokio::time::timeout(PATIENCE, async {
            while let Some(line) = lines.next_line().await.expect("read stderr") {
                eprintln!("[him serve --http] {line}");
                stderr.lock().expect("stderr lines").push(line.clone());
                if let Some(url) = line.strip_prefix(SERVING) {
                    return url.to_owned();
                }
            }
            panic!("him serve --http exited before listening");
        })
        .await
        .expect("him serve --http did not say where it listens");
        let seen = stderr.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("[him serve --http] {line}");
                seen.lock().expect("stderr lines").push(line);
            }
        });
        let addr = url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .expect("url shape")
            .parse()
            .expect("bound address");
        let token = env
            .iter()
            .find(|(k, _)| *k == "HIM_HTTP_TOKEN")
            .map(|(_, v)| v.to_string())
            .unwrap_or_else(|| read_token(&state.join("http-token")));
        HttpServer {
            child,
            state,
            url,
            addr,
            token,
            stderr,
        }
    }

    /// The token a client that cannot send headers puts in the path.
    pub fn path_token(&self) -> String {
        read_token(&self.state.join("http-path-token"))
    }

    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// rmcp's Streamable HTTP client, initialized as `name`.
    pub async fn connect(&self, name: &str) -> (Agent, TestClient) {
        let handler = TestClient {
            name: name.into(),
            ..TestClient::default()
        };
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url.as_str())
                .auth_header(self.token.clone()),
        );
        let agent = handler
            .clone()
            .serve(transport)
            .await
            .expect("initialize over HTTP");
        (agent, handler)
    }

    /// A POST of `body` to the endpoint with the token and the headers MCP needs.
    pub fn post(&self, http: &reqwest::Client, body: &str) -> reqwest::RequestBuilder {
        http.post(&self.url)
            .header("Authorization", self.bearer())
            .header("Content-Type", "application/json")
            .header("Accept", ACCEPT)
            .body(body.to_owned())
    }

    /// Opens a session by hand; returns its id.
    pub async fn initialize(&self, http: &reqwest::Client, name: &str) -> String {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": name, "version": "1.0.0"}}
        });
        let response = self
            .post(http, &body.to_string())
            .send()
            .await
            .expect("initialize");
        assert_eq!(response.status(), 200, "initialize refused");
        let session = response
            .headers()
            .get("mcp-session-id")
            .expect("session id")
            .to_str()
            .expect("session id is text")
            .to_owned();
        response.bytes().await.expect("initialize body");
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let response = self
            .post(http, initialized)
            .header("Mcp-Session-Id", &session)
            .header("Mcp-Protocol-Version", "2025-06-18")
            .send()
            .await
            .expect("initialized");
        assert_eq!(response.status(), 202);
        session
    }

    pub fn stderr_text(&self) -> String {
        self.stderr.lock().expect("stderr lines").join("\n")
    }
}

pub fn read_token(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("token file {}: {e}", path.display()))
        .trim()
        .to_owned()
}
