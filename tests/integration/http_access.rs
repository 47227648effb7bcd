//! Who may call `him serve --http`: only holders of the bearer token, only pages of allowed
//! origins (with the CORS and Private Network Access answers browsers need), only for the
//! loopback Host, with bounded bodies and a bounded number of sessions.

use std::os::unix::fs::PermissionsExt;

use crate::support;
use crate::support::http::*;
use crate::support::*;

const EXTENSION: &str = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";
const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

fn header<'a>(response: &'a reqwest::Response, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header: {:?}", response.headers()))
        .to_str()
        .expect("header is text")
}

#[tokio::test]
async fn a_request_without_the_token_or_with_a_wrong_one_is_401() {
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let http = reqwest::Client::new();

    let missing = http
        .post(&server.url)
        .header("Content-Type", "application/json")
        .header("Accept", ACCEPT)
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 401);
    assert_eq!(
        header(&missing, "www-authenticate"),
        r#"Bearer realm="him""#
    );
    assert!(missing.headers().get("mcp-session-id").is_none());

    let wrong = http
        .post(&server.url)
        .header("Content-Type", "application/json")
        .header("Accept", ACCEPT)
        .header("Authorization", format!("Bearer {}x", server.token))
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(header(&wrong, "www-authenticate").contains("invalid_token"));
    let text = wrong.text().await.unwrap();
    assert!(text.contains("--print-token"), "{text}");
    assert!(!text.contains(&server.token), "the token leaked: {text}");

    // The right token next to a wrong one is no better.
    let doubled = server
        .post(&http, INIT)
        .header("Authorization", "Bearer 0123456789abcdef0123")
        .send()
        .await
        .unwrap();
    assert_eq!(doubled.status(), 401);

    // Every method needs it, not just POST.
    let get = http
        .get(&server.url)
        .header("Accept", ACCEPT)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 401);
    let delete = http.delete(&server.url).send().await.unwrap();
    assert_eq!(delete.status(), 401);

    let right = server.post(&http, INIT).send().await.unwrap();
    assert_eq!(right.status(), 200);
    assert!(
        !server.stderr_text().contains(&server.token),
        "the token was logged"
    );
}

#[tokio::test]
async fn a_page_from_an_origin_that_was_not_allowed_is_403_even_with_the_token() {
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &["--allow-origin", EXTENSION], &[]).await;
    let http = reqwest::Client::new();
    for origin in [
        "https://evil.example",
        "http://localhost:3000",
        "chrome-extension://someotherextensionid",
        "null",
    ] {
        let response = server
            .post(&http, INIT)
            .header("Origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{origin}");
        assert!(
            response
                .headers()
                .get("access-control-allow-origin")
                .is_none()
        );
        assert!(response.headers().get("mcp-session-id").is_none());
        let text = response.text().await.unwrap();
        assert!(text.contains("--allow-origin"), "{text}");
        // Never advise what the server would refuse: `null` and wildcards cannot be allowed.
        assert!(!text.contains("--allow-origin null"), "{text}");
        assert!(!text.contains("--allow-origin *"), "{text}");
        if origin == "null" {
            assert!(text.contains("cannot be allowed"), "{text}");
        } else {
            assert!(
                text.contains(&format!("--allow-origin {origin}`")),
                "{text}"
            );
        }
    }
    // No Origin at all: a program, not a page; the token decides.
    assert_eq!(server.post(&http, INIT).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn the_servers_own_loopback_origins_are_served_without_allow_origin() {
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let http = reqwest::Client::new();
    let port = server.addr.port();
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ] {
        let response = server
            .post(&http, INIT)
            .header("Origin", &origin)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{origin}");
        assert_eq!(header(&response, "access-control-allow-origin"), origin);
    }
    // The same names on another port are someone else's pages.
    let other = server
        .post(&http, INIT)
        .header("Origin", format!("http://localhost:{}", port + 1))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 403);
}

#[tokio::test]
async fn an_allowed_origin_gets_cors_and_private_network_answers() {
    let runtime = runtime_dir();
    let server = HttpServer::start(
        runtime.path(),
        &[
            "--allow-origin",
            &format!("{EXTENSION}/"),
            "--allow-origin",
            "http://localhost:3000",
        ],
        &[],
    )
    .await;
    let http = reqwest::Client::new();

    // The preflight carries no token (browsers never send one on it).
    let preflight = http
        .request(reqwest::Method::OPTIONS, &server.url)
        .header("Origin", EXTENSION)
        .header("Access-Control-Request-Method", "POST")
        .header(
            "Access-Control-Request-Headers",
            "authorization, content-type, mcp-session-id, mcp-protocol-version",
        )
        .header("Access-Control-Request-Private-Network", "true")
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    assert_eq!(header(&preflight, "access-control-allow-origin"), EXTENSION);
    assert!(header(&preflight, "access-control-allow-methods").contains("POST"));
    assert!(header(&preflight, "access-control-allow-methods").contains("DELETE"));
    let allowed = header(&preflight, "access-control-allow-headers").to_ascii_lowercase();
    for name in [
        "authorization",
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ] {
        assert!(allowed.contains(name), "{name} not in {allowed}");
    }
    assert_eq!(
        header(&preflight, "access-control-allow-private-network"),
        "true"
    );
    assert!(header(&preflight, "vary").contains("Origin"));

    // Without the Private Network Access question there is no PNA answer.
    let plain = http
        .request(reqwest::Method::OPTIONS, &server.url)
        .header("Origin", "http://localhost:3000")
        .header("Access-Control-Request-Method", "POST")
        .send()
        .await
        .unwrap();
    assert!(plain.status().is_success());
    assert_eq!(
        header(&plain, "access-control-allow-origin"),
        "http://localhost:3000"
    );
    assert!(
        plain
            .headers()
            .get("access-control-allow-private-network")
            .is_none()
    );

    // A preflight from anywhere else, or from no page at all, is refused.
    for origin in [Some("https://evil.example"), None] {
        let mut request = http
            .request(reqwest::Method::OPTIONS, &server.url)
            .header("Access-Control-Request-Method", "POST");
        if let Some(origin) = origin {
            request = request.header("Origin", origin);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 403, "{origin:?}");
        assert!(
            response
                .headers()
                .get("access-control-allow-origin")
                .is_none()
        );
    }

    // The real request from the allowed page: its answer is readable there, session id too.
    let response = server
        .post(&http, INIT)
        .header("Origin", EXTENSION)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "access-control-allow-origin"), EXTENSION);
    assert!(header(&response, "access-control-expose-headers").contains("Mcp-Session-Id"));
    assert!(response.headers().get("mcp-session-id").is_some());

    // Even a 401 is readable by the allowed page, so it can tell the person what is wrong.
    let unauthorized = http
        .post(&server.url)
        .header("Origin", EXTENSION)
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorized.status(), 401);
    assert_eq!(
        header(&unauthorized, "access-control-allow-origin"),
        EXTENSION
    );
}

#[tokio::test]
async fn a_request_for_another_host_is_403() {
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let http = reqwest::Client::new();
    let port = server.addr.port();
    for host in [
        format!("evil.example:{port}"),
        format!("127.0.0.1:{}", port + 1),
    ] {
        let response = server
            .post(&http, INIT)
            .header("Host", &host)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{host}");
    }
    let localhost = server
        .post(&http, INIT)
        .header("Host", format!("localhost:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(localhost.status(), 200);
}

#[tokio::test]
async fn a_request_with_two_host_lines_is_400() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    // RFC 9112 §3.2, even when both name the server.
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {0}\r\nHost: {0}\r\nAuthorization: {1}\r\n\
                 Content-Type: application/json\r\nAccept: {ACCEPT}\r\nContent-Length: {2}\r\n\
                 Connection: close\r\n\r\n{INIT}",
                server.addr,
                server.bearer(),
                INIT.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut reply))
        .await
        .expect("an answer in time")
        .unwrap();
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 400 "), "{reply}");
}

#[tokio::test]
async fn an_oversize_body_is_413() {
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let http = reqwest::Client::new();
    let session = server.initialize(&http, "big").await;
    let padding = "x".repeat(5 * 1024 * 1024);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"ask_text","arguments":{{"question":"{padding}"}}}}}}"#
    );
    let response = server
        .post(&http, &body)
        .header("Mcp-Session-Id", &session)
        .header("Mcp-Protocol-Version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    // A body that hides its length (chunked) is cut off at the cap as well.
    let chunks: Vec<Result<String, std::io::Error>> = body
        .as_bytes()
        .chunks(64 * 1024)
        .map(|c| Ok(String::from_utf8(c.to_vec()).unwrap()))
        .collect();
    let response = http
        .post(&server.url)
        .header("Authorization", server.bearer())
        .header("Content-Type", "application/json")
        .header("Accept", ACCEPT)
        .header("Mcp-Session-Id", &session)
        .header("Mcp-Protocol-Version", "2025-06-18")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
}

async fn tools_list_status(server: &HttpServer, http: &reqwest::Client, session: &str) -> u16 {
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let response = server
        .post(http, list)
        .header("Mcp-Session-Id", session)
        .header("Mcp-Protocol-Version", "2025-06-18")
        .send()
        .await
        .expect("tools/list");
    let status = response.status().as_u16();
    response.bytes().await.expect("tools/list body");
    status
}

#[tokio::test]
async fn a_deleted_session_frees_its_place_and_at_the_cap_only_the_one_idle_longest_makes_room() {
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let http = reqwest::Client::new();
    let mut sessions = Vec::new();
    for i in 0..64 {
        sessions.push(server.initialize(&http, &format!("client-{i}")).await);
    }
    let deleted = http
        .delete(&server.url)
        .header("Authorization", server.bearer())
        .header("Mcp-Session-Id", &sessions[0])
        .send()
        .await
        .unwrap();
    // 204, as the specification's clients expect (the Python SDK logs a failure on 202).
    assert_eq!(deleted.status(), 204);
    assert_eq!(tools_list_status(&server, &http, &sessions[0]).await, 404);
    sessions[0] = server.initialize(&http, "client-64").await;
    // Below the cap (the place was free), nobody lost a session.
    for session in &sessions {
        assert_eq!(tools_list_status(&server, &http, session).await, 200);
    }
    // At the cap, a new session takes the place of the one idle longest: the first one
    // just listed.
    server.initialize(&http, "client-65").await;
    assert_eq!(tools_list_status(&server, &http, &sessions[0]).await, 404);
    for session in &sessions[1..] {
        assert_eq!(tools_list_status(&server, &http, session).await, 200);
    }
    assert!(
        server.stderr_text().contains("to make room for a new one"),
        "the eviction was not logged"
    );
}

fn print_token(runtime: &std::path::Path, state_home: &std::path::Path) -> String {
    let printed = std::process::Command::new(him_bin())
        .args(["serve", "--http", "--print-token"])
        .env("HIM_RUNTIME_DIR", runtime)
        .env("HIM_STATE_DIR", state_home)
        .env_remove("HIM_HTTP_TOKEN")
        .output()
        .expect("him serve --http --print-token");
    assert!(printed.status.success());
    String::from_utf8(printed.stdout)
        .expect("utf-8")
        .trim_end_matches('\n')
        .to_owned()
}

#[tokio::test]
async fn print_token_prints_the_token_the_server_uses_from_a_private_file_in_the_state_dir() {
    let runtime = runtime_dir();
    let state_home = runtime_dir();
    let token = print_token(runtime.path(), state_home.path());
    assert_eq!(token.len(), 64);
    let dir = state_home.path().to_path_buf();
    let file = dir.join("http-token");
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&dir), 0o700);
    // Never in the runtime directory, which a reboot empties.
    assert!(!runtime.path().join("http-token").exists());

    // The server uses that same token; a second print gives it again.
    let state_env = state_home.path().to_str().unwrap();
    let server = HttpServer::start(runtime.path(), &[], &[("HIM_STATE_DIR", state_env)]).await;
    assert_eq!(server.token, token);
    let http = reqwest::Client::new();
    assert_eq!(server.post(&http, INIT).send().await.unwrap().status(), 200);
    assert_eq!(print_token(runtime.path(), state_home.path()), token);
    // With no --allow-origin nothing may use a path token, so none is made.
    assert!(!dir.join("http-path-token").exists());
}

#[tokio::test]
async fn the_token_survives_a_restart_with_a_fresh_runtime_directory() {
    let state_home = runtime_dir();
    let state_env = state_home.path().to_str().unwrap();
    let before_reboot = runtime_dir();
    let first = HttpServer::start(before_reboot.path(), &[], &[("HIM_STATE_DIR", state_env)]).await;
    let token = first.token.clone();
    drop(first);
    drop(before_reboot);
    // After a reboot the runtime directory is new and empty; the token is still the same.
    let after_reboot = runtime_dir();
    let second = HttpServer::start(after_reboot.path(), &[], &[("HIM_STATE_DIR", state_env)]).await;
    assert_eq!(second.token, token);
    let http = reqwest::Client::new();
    assert_eq!(second.post(&http, INIT).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_token_an_older_version_left_in_the_runtime_directory_is_moved_and_kept() {
    let runtime = runtime_dir();
    let state_home = runtime_dir();
    let old = runtime.path().join("http-token");
    std::fs::write(&old, "0123456789abcdef0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        print_token(runtime.path(), state_home.path()),
        "0123456789abcdef0123456789abcdef"
    );
    assert!(!old.exists());
    assert!(state_home.path().join("http-token").exists());
}

#[tokio::test]
async fn him_http_token_overrides_the_file() {
    let runtime = runtime_dir();
    let chosen = "a-token-chosen-by-the-person-0123";
    let printed = std::process::Command::new(him_bin())
        .args(["serve", "--http", "--print-token"])
        .env("HIM_RUNTIME_DIR", runtime.path())
        .env("HIM_STATE_DIR", support::state_dir(runtime.path()))
        .env("HIM_HTTP_TOKEN", chosen)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(printed.stdout).unwrap().trim_end(),
        chosen
    );
    let server = HttpServer::start(runtime.path(), &[], &[("HIM_HTTP_TOKEN", chosen)]).await;
    let http = reqwest::Client::new();
    assert_eq!(server.post(&http, INIT).send().await.unwrap().status(), 200);
    assert!(!server.state.join("http-token").exists());
}

#[tokio::test]
async fn a_non_loopback_address_needs_allow_remote() {
    let runtime = runtime_dir();
    let refused = std::process::Command::new(him_bin())
        .args(["serve", "--http", "0.0.0.0:0"])
        .env("HIM_RUNTIME_DIR", runtime.path())
        .env("HIM_STATE_DIR", support::state_dir(runtime.path()))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8(refused.stderr).unwrap();
    assert!(stderr.contains("--allow-remote"), "{stderr}");

    let mut child = tokio::process::Command::new(him_bin())
        .args(["serve", "--http", "0.0.0.0:0", "--allow-remote"])
        .env("HIM_RUNTIME_DIR", runtime.path())
        .env("HIM_STATE_DIR", support::state_dir(runtime.path()))
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut warned = false;
    tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            warned |= line.contains("WARNING") && line.contains("clear text");
            if line.starts_with(SERVING) {
                break;
            }
        }
    })
    .await
    .expect("the remote server started");
    assert!(warned, "no warning about listening beyond loopback");
}

#[tokio::test]
async fn a_stalled_client_does_not_hold_up_another() {
    use tokio::io::AsyncWriteExt;
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    // One client stops in the middle of its headers, another in the middle of its body.
    let mut half_headers = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    half_headers
        .write_all(format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthor", server.addr).as_bytes())
        .await
        .unwrap();
    let mut half_body = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    half_body
        .write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\n\
                 Accept: {ACCEPT}\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\":",
                server.addr,
                server.bearer()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let response = tokio::time::timeout(PATIENCE, server.post(&http, INIT).send())
        .await
        .expect("a stalled client held up another")
        .unwrap();
    assert_eq!(response.status(), 200);
    drop((half_headers, half_body));
}

#[tokio::test]
async fn a_path_token_admits_pages_of_a_listed_origin_only_and_is_never_logged() {
    let runtime = runtime_dir();
    let server = HttpServer::start(
        runtime.path(),
        &["--allow-origin", EXTENSION],
        &[("HIM_LOG", "trace")],
    )
    .await;
    let path_token = server.path_token();
    assert_ne!(
        path_token, server.token,
        "the path token must be a secret of its own"
    );
    let url = format!("{}/{path_token}", server.url);
    let http = reqwest::Client::new();
    let post = |url: &str, origin: Option<&str>, body: &str| {
        let mut request = http
            .post(url)
            .header("Content-Type", "application/json")
            .header("Accept", ACCEPT)
            .body(body.to_owned());
        if let Some(origin) = origin {
            request = request.header("Origin", origin);
        }
        request
    };

    // SuperAssistant's way: no Authorization header, the token in the path, its origin.
    let preflight = http
        .request(reqwest::Method::OPTIONS, &url)
        .header("Origin", EXTENSION)
        .header("Access-Control-Request-Method", "POST")
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    let response = post(&url, Some(EXTENSION), INIT).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "access-control-allow-origin"), EXTENSION);
    let session = header(&response, "mcp-session-id").to_owned();
    response.bytes().await.unwrap();
    let list = post(
        &url,
        Some(EXTENSION),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    )
    .header("Mcp-Session-Id", &session)
    .header("Mcp-Protocol-Version", "2025-06-18")
    .send()
    .await
    .unwrap();
    assert_eq!(list.status(), 200);
    assert!(list.text().await.unwrap().contains("ask_text"));

    // Without a listed origin the path token is worth nothing: no Origin (a program, which
    // can send the header), or the server's own loopback origin.
    let own = format!("http://127.0.0.1:{}", server.addr.port());
    for origin in [None, Some(own.as_str())] {
        let response = post(&url, origin, INIT).send().await.unwrap();
        assert_eq!(response.status(), 403, "{origin:?}");
        let text = response.text().await.unwrap();
        assert!(text.contains("--allow-origin"), "{text}");
        assert!(!text.contains(&path_token), "the path token leaked: {text}");
    }
    // A wrong one, or the bearer token in its place, is 401.
    for wrong in [
        format!("{}x", path_token),
        server.token.clone(),
        String::new(),
    ] {
        let response = post(&format!("{}/{wrong}", server.url), Some(EXTENSION), INIT)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{wrong}");
    }
    // Other paths are not the endpoint.
    let elsewhere = post(
        &format!("{}x/{path_token}", server.url),
        Some(EXTENSION),
        INIT,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(elsewhere.status(), 404);

    let log = server.stderr_text();
    assert!(!log.contains(&path_token), "the path token was logged");
    assert!(!log.contains(&server.token), "the bearer token was logged");
}

#[tokio::test]
async fn new_path_token_replaces_the_path_token_alone() {
    let runtime = runtime_dir();
    let state_home = support::state_dir(runtime.path());
    let config = std::process::Command::new(him_bin())
        .args(["config", "superassistant"])
        .env("HIM_STATE_DIR", &state_home)
        .output()
        .unwrap();
    assert!(config.status.success());
    let first_url = String::from_utf8(config.stdout).unwrap();
    let bearer = print_token(runtime.path(), &state_home);
    let replaced = std::process::Command::new(him_bin())
        .args(["serve", "--http", "--new-path-token"])
        .env("HIM_STATE_DIR", &state_home)
        .output()
        .unwrap();
    assert!(replaced.status.success());
    let new_url = String::from_utf8(replaced.stdout).unwrap();
    assert!(
        new_url.starts_with("http://127.0.0.1:7676/mcp/"),
        "{new_url}"
    );
    assert_ne!(new_url, first_url);
    assert_eq!(print_token(runtime.path(), &state_home), bearer);

    let server = HttpServer::start(runtime.path(), &["--allow-origin", EXTENSION], &[]).await;
    let http = reqwest::Client::new();
    let call = |token: String| {
        http.post(format!("{}/{token}", server.url))
            .header("Content-Type", "application/json")
            .header("Accept", ACCEPT)
            .header("Origin", EXTENSION)
            .body(INIT)
            .send()
    };
    let old_token = first_url.trim().rsplit('/').next().unwrap().to_owned();
    let new_token = new_url.trim().rsplit('/').next().unwrap().to_owned();
    assert_eq!(call(old_token).await.unwrap().status(), 401);
    assert_eq!(call(new_token).await.unwrap().status(), 200);
}

/// DESIGN.md §1: a client's token can be stolen by whoever held the port while the server
/// was down; with it, another user still gets nothing, since the kernel says whose
/// process is connecting.
#[tokio::test]
async fn another_local_user_with_the_token_gets_nothing() {
    let Some(attacker) = support::fresh_user::fresh_user() else {
        return;
    };
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT}\r\nContent-Length: {}\r\n\r\n{INIT}",
        server.addr,
        server.bearer(),
        INIT.len()
    );
    let (connected, reply) = attacker.send_raw(server.addr.port(), &request).await;
    assert!(connected, "the other user could not even connect");
    assert_eq!(reply, "", "another user was served with the stolen token");

    let (agent, _) = server.connect("the person's client").await;
    let tools = agent.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), TOOLS.len());
    eventually("the refusal to be logged", || {
        server
            .stderr_text()
            .contains(&format!("belongs to uid {}", attacker.uid))
    })
    .await;
    agent.cancel().await.expect("close");
}

/// Idle and half-sent connections, reopened as fast as they are closed, may take every
/// slot a connection without the token can have, never one a real client needs.
#[tokio::test]
async fn a_reconnecting_flood_without_the_token_does_not_keep_clients_out() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let runtime = runtime_dir();
    let server = HttpServer::start(runtime.path(), &[], &[]).await;
    let stop = Arc::new(AtomicBool::new(false));
    let mut flood = Vec::new();
    for i in 0..300 {
        let (addr, stop) = (server.addr, stop.clone());
        flood.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                };
                if i % 2 == 0 {
                    let _ = stream.write_all(b"POST /mcp HTTP/1.1\r\n").await;
                }
                // Until the server closes it.
                let _ = stream.read(&mut [0u8; 1]).await;
            }
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    // Well inside the 10 s a half-sent head may take: served at once, not when it times out.
    let prompt = std::time::Duration::from_secs(5);
    for n in 0..15 {
        let served = tokio::time::timeout(prompt, async {
            let (agent, _) = server.connect(&format!("client {n}")).await;
            let tools = agent.list_all_tools().await.expect("tools/list");
            agent.cancel().await.expect("close");
            tools.len()
        })
        .await;
        assert_eq!(
            served,
            Ok(TOOLS.len()),
            "client {n} was kept out by the flood"
        );
    }
    stop.store(true, Ordering::Relaxed);
    for task in flood {
        task.abort();
    }
}
