//! Test helpers that drive the real `him` binary: `FakeExtension` plays the browser side
//! by starting `him chrome-extension://<id>/` exactly as Chrome does and speaking native
//! messaging on its stdio; `Agent` is rmcp's own client running `him serve`.

pub mod fresh_user;
pub mod http;
pub mod install;
pub mod load;
pub mod matrix;
pub mod ssh_lab;
pub mod terminal;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use him::wire::frame::{FrameCodec, MAX_INBOUND};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};

/// Every tool him serve lists.
pub const TOOLS: [&str; 7] = [
    "ask_text",
    "ask_choice",
    "ask_multi_select",
    "ask_confirm",
    "ask_form",
    "human_input_status",
    "get_answer",
];

/// Long enough for a loaded CI machine; a test that needs it has already failed.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// A test of a heavy suite (real browsers and agent CLIs, the Matrix homeserver and phone, the
/// SSH lab) holds this while it runs. Each such suite had a test binary of its own, run one
/// after another: its tests overlapped only with each other, and their real clients' timing
/// was measured so. In one binary that still holds: a test of one heavy suite waits until no
/// test of another is running (the light tests run beside any of them).
pub struct HeavySuite {
    suite: &'static str,
}

static HEAVY_ROOM: std::sync::Mutex<(Option<&'static str>, usize)> =
    std::sync::Mutex::new((None, 0));
static HEAVY_ROOM_FREED: std::sync::Condvar = std::sync::Condvar::new();

/// Waits until no other heavy suite than `suite` has a test running, and enters. Blocks the
/// test's thread: nothing of the test has started yet.
pub fn heavy_suite(suite: &'static str) -> HeavySuite {
    let mut room = HEAVY_ROOM.lock().unwrap_or_else(|p| p.into_inner());
    while room.0.is_some_and(|inside| inside != suite) {
        room = HEAVY_ROOM_FREED
            .wait(room)
            .unwrap_or_else(|p| p.into_inner());
    }
    *room = (Some(suite), room.1 + 1);
    HeavySuite { suite }
}

impl Drop for HeavySuite {
    fn drop(&mut self) {
        let mut room = HEAVY_ROOM.lock().unwrap_or_else(|p| p.into_inner());
        debug_assert_eq!(room.0, Some(self.suite));
        room.1 -= 1;
        if room.1 == 0 {
            room.0 = None;
            HEAVY_ROOM_FREED.notify_all();
        }
    }
}

/// Whether `HIM_E2E=1` (`.ci/run` sets it): everything the tests can use must be there.
pub fn e2e_required() -> bool {
    std::env::var_os("HIM_E2E").is_some_and(|v| v == "1")
}

/// The one rule for a test that needs what a machine may lack (a browser, a real client, the
/// packages of tests/e2e, root, Synapse): when `have` is false the test is skipped, saying on
/// stderr what is `missing` and `how_to_get_it`, or, under `HIM_E2E=1`, it fails saying so.
/// Returns `have`: the test goes on when true.
pub fn require(have: bool, missing: &str, how_to_get_it: &str) -> bool {
    if have {
        return true;
    }
    assert!(
        !e2e_required(),
        "HIM_E2E=1, but {missing} ({how_to_get_it})"
    );
    eprintln!("skipped: {missing} ({how_to_get_it}; HIM_E2E=1 makes this a failure)");
    false
}

pub fn him_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_him"))
}

/// `him serve` on piped stdio, for a test that writes its JSON-RPC lines itself (to send
/// what no SDK client sends, or to close its input while it goes on reading).
pub fn spawn_raw_serve(runtime: &Path) -> std::process::Child {
    std::process::Command::new(him_bin())
        .arg("serve")
        .env("HIM_RUNTIME_DIR", runtime)
        .env("HIM_STATE_DIR", state_dir(runtime))
        .env("HIM_KEEP_MS", "0")
        .env("HIM_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn him serve")
}

pub fn origin() -> String {
    format!("chrome-extension://{}/", him::EXTENSION_ID)
}

/// The state directory (`HIM_STATE_DIR`) the helpers give the agents and hosts of the test
/// whose runtime directory is `runtime`: kept answers of one test never reach another, nor
/// the user's own.
pub fn state_dir(runtime: &Path) -> PathBuf {
    runtime.join("state/him")
}

/// A private runtime directory for one test.
pub fn runtime_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("him-test-")
        .tempdir()
        .expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    dir
}

/// A listener where a host of pid `pid` listens (`<runtime>/hosts/<pid>.sock`, its folders
/// private as a host makes them): for a test that plays the host itself.
pub fn host_listener(runtime: &Path, pid: u32) -> std::os::unix::net::UnixListener {
    use std::os::unix::fs::PermissionsExt;
    let hosts = runtime.join("hosts");
    std::fs::create_dir_all(&hosts).expect("the hosts folder");
    for dir in [runtime, hosts.as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    }
    std::os::unix::net::UnixListener::bind(hosts.join(format!("{pid}.sock")))
        .expect("bind a host socket")
}

pub fn sockets(runtime: &Path) -> Vec<PathBuf> {
    him::wire::runtime::list_host_sockets(runtime)
}

/// Leaves a socket file nobody listens on, as a host killed with SIGKILL does. Bound by a
/// child process that exits at once: bound here, the listening socket could live on for a
/// moment in a child that another test is spawning (fork copies every descriptor until
/// exec), and a connect in that moment would succeed.
pub fn leave_stale_socket(path: &Path) {
    let status = std::process::Command::new("python3")
        .args([
            "-c",
            "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
        ])
        .arg(path)
        .status()
        .expect("python3 binds a socket");
    assert!(
        status.success() && path.exists(),
        "could not leave a stale socket at {}",
        path.display()
    );
}

pub async fn eventually<F: FnMut() -> bool>(what: &str, mut check: F) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The browser side, the one stand-in for it in these tests: a native host started as Chrome
/// starts it, and the extension's end of its stdio. Frames from the host are read as they
/// come, as a browser reads them, onto `frames` (`recv` takes the next); `sender`, which can
/// be cloned, writes to the host, so that whatever plays the person can answer while the test
/// reads. The host can be killed (SIGKILL, its socket left behind) or disconnected (stdin EOF).
pub struct FakeExtension {
    pub child: Child,
    pub pid: u32,
    pub socket: PathBuf,
    pub frames: mpsc::UnboundedReceiver<Value>,
    pub sender: BrowserSender,
}

/// Writes frames to one host's stdin; shared by whatever plays the person.
#[derive(Clone)]
pub struct BrowserSender(Arc<tokio::sync::Mutex<Option<FramedWrite<ChildStdin, FrameCodec>>>>);

impl BrowserSender {
    /// Sends one message; false once the port is closed or the host is gone.
    pub async fn send(&self, value: Value) -> bool {
        self.send_raw(serde_json::to_vec(&value).expect("json"))
            .await
    }

    /// Sends `bytes` as one frame, whatever they hold; false once the port is closed.
    pub async fn send_raw(&self, bytes: Vec<u8>) -> bool {
        match self.0.lock().await.as_mut() {
            Some(writer) => writer.send(Bytes::from(bytes)).await.is_ok(),
            None => false,
        }
    }

    pub async fn answer_text(&self, id: &Value, answer: &str) -> bool {
        self.send(json!({"type": "answer", "id": id, "action": "submit",
                         "values": {"answer": answer}}))
            .await
    }

    /// Writes bytes with no framing at all.
    pub async fn write_unframed(&self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt;
        let mut writer = self.0.lock().await;
        let writer = writer.as_mut().expect("stdin still open");
        writer.get_mut().write_all(bytes).await.expect("write");
        writer.get_mut().flush().await.expect("flush");
    }

    /// The extension closes the port: the host sees stdin EOF.
    pub async fn close(&self) {
        self.0.lock().await.take();
    }
}

impl FakeExtension {
    /// Starts a host, checks its `hello`, sends `ready`, and waits until it listens.
    pub async fn start(runtime: &Path) -> FakeExtension {
        FakeExtension::start_with_stderr(runtime, Stdio::inherit()).await
    }

    /// As `start`, as the extension of today: its `ready` says it shows the agent side's
    /// verdict on each answer (`accepted`, `refused`), so a refused answer can be corrected.
    pub async fn start_correcting(runtime: &Path) -> FakeExtension {
        let mut command = Command::new(him_bin());
        command
            .env("HIM_RUNTIME_DIR", runtime)
            .env("HIM_STATE_DIR", state_dir(runtime))
            .env("HIM_LOG", "trace");
        FakeExtension::launch_saying(command, runtime, true).await
    }

    /// As `start_correcting`, with more environment.
    pub async fn start_correcting_with(runtime: &Path, env: &[(&str, &str)]) -> FakeExtension {
        let mut command = Command::new(him_bin());
        command
            .env("HIM_RUNTIME_DIR", runtime)
            .env("HIM_STATE_DIR", state_dir(runtime))
            .env("HIM_LOG", "debug")
            .envs(env.iter().copied());
        FakeExtension::launch_saying(command, runtime, true).await
    }

    /// As `start`, with the host's log going to `stderr`.
    pub async fn start_with_stderr(runtime: &Path, stderr: Stdio) -> FakeExtension {
        FakeExtension::start_with(runtime, stderr, &[]).await
    }

    /// As `start`, with the host's log going to `stderr` and more environment.
    pub async fn start_with(runtime: &Path, stderr: Stdio, env: &[(&str, &str)]) -> FakeExtension {
        let mut command = Command::new(him_bin());
        command
            .env("HIM_RUNTIME_DIR", runtime)
            .env("HIM_STATE_DIR", state_dir(runtime))
            .env("HIM_LOG", "trace")
            .envs(env.iter().copied())
            .stderr(stderr);
        FakeExtension::launch(command, runtime).await
    }

    /// As `start`, logging errors only: one of many browsers of a load or fault test.
    pub async fn start_quiet(runtime: &Path) -> FakeExtension {
        FakeExtension::start_with(runtime, Stdio::inherit(), &[("HIM_LOG", "error")]).await
    }

    /// Starts `command` as Chrome starts the host (its origin as the one argument, stdio
    /// piped) and does the handshake; the host must listen in `runtime`. The command
    /// carries the environment, user and log destination the test chose.
    pub async fn launch(command: Command, runtime: &Path) -> FakeExtension {
        FakeExtension::launch_saying(command, runtime, false).await
    }

    /// As `launch`, for an extension that takes the host's verdicts (as the real one does).
    pub async fn launch_correcting(command: Command, runtime: &Path) -> FakeExtension {
        FakeExtension::launch_saying(command, runtime, true).await
    }

    /// As `launch`; `verdicts` is what the `ready` says.
    async fn launch_saying(mut command: Command, runtime: &Path, verdicts: bool) -> FakeExtension {
        let mut child = command
            .arg(origin())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn host");
        let pid = child.id().expect("pid");
        let mut reader = FramedRead::new(
            child.stdout.take().expect("stdout"),
            FrameCodec::new(MAX_INBOUND),
        );
        let writer = FramedWrite::new(
            child.stdin.take().expect("stdin"),
            FrameCodec::new(MAX_INBOUND),
        );
        let (tx, frames) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(frame) = reader.next().await {
                // What is not JSON reaches `recv` as a string, which it refuses by name.
                let value = match frame {
                    Ok(frame) => serde_json::from_slice(&frame).unwrap_or_else(|_| {
                        Value::String(format!("not JSON: {}", String::from_utf8_lossy(&frame)))
                    }),
                    Err(err) => Value::String(format!("a bad frame: {err}")),
                };
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let socket = him::wire::runtime::socket_path(runtime, pid);
        let mut ext = FakeExtension {
            child,
            pid,
            socket,
            frames,
            sender: BrowserSender(Arc::new(tokio::sync::Mutex::new(Some(writer)))),
        };
        let hello = ext.recv().await;
        assert_eq!(hello["type"], "hello", "first frame from the host: {hello}");
        assert_eq!(hello["protocol"], 1);
        ext.send(json!({"type": "ready", "protocol": 1,
                        "extension": {"id": him::EXTENSION_ID, "version": "0.0.0-test"}, "browser": "test",
                        "verdicts": verdicts}))
            .await;
        let socket = ext.socket.clone();
        eventually("the host socket", || socket.exists()).await;
        ext
    }

    /// The next frame from the host, which must arrive and be a JSON object.
    pub async fn recv(&mut self) -> Value {
        let value = tokio::time::timeout(PATIENCE, self.frames.recv())
            .await
            .expect("timed out waiting for a frame from the host")
            .expect("host closed its stdout");
        assert!(value.is_object(), "host wrote a non-object: {value}");
        value
    }

    /// The next frame of type `kind`, skipping others of `skippable` types.
    pub async fn recv_type(&mut self, kind: &str) -> Value {
        loop {
            let frame = self.recv().await;
            if frame["type"] == kind {
                return frame;
            }
            assert!(
                frame["type"] != "ask" || kind == "ask",
                "unexpected ask while waiting for {kind}: {frame}"
            );
        }
    }

    /// Whether a frame arrives within `wait`.
    pub async fn quiet_for(&mut self, wait: Duration) -> Option<Value> {
        match tokio::time::timeout(wait, self.frames.recv()).await {
            Ok(Some(frame)) => Some(frame),
            Ok(None) => panic!("host link ended"),
            Err(_) => None,
        }
    }

    pub async fn send(&mut self, value: Value) {
        assert!(self.sender.send(value).await, "write to host stdin");
    }

    pub async fn send_raw(&mut self, bytes: Vec<u8>) {
        assert!(self.sender.send_raw(bytes).await, "write to host stdin");
    }

    /// Writes bytes with no framing at all.
    pub async fn write_unframed(&mut self, bytes: &[u8]) {
        self.sender.write_unframed(bytes).await;
    }

    /// Takes the next `ask`, says it is shown, and returns it.
    pub async fn take_ask(&mut self) -> Value {
        let ask = self.recv_type("ask").await;
        self.send(json!({"type": "shown", "id": ask["id"]})).await;
        ask
    }

    /// Sends `reply` (`{action, values?, note?}`) as the person's answer to `ask`.
    pub async fn answer(&mut self, ask: &Value, mut reply: Value) {
        reply["type"] = json!("answer");
        reply["id"] = ask["id"].clone();
        self.send(reply).await;
    }

    pub async fn submit(&mut self, id: &Value, values: Value) {
        self.send(json!({"type": "answer", "id": id, "action": "submit", "values": values}))
            .await;
    }

    /// The browser closes the port: stdin EOF. Returns the host's exit status, which it must
    /// reach by itself.
    pub async fn close(mut self) -> std::process::ExitStatus {
        self.sender.close().await;
        tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("host did not exit after stdin closed")
            .expect("wait")
    }

    /// As `close`: the extension disconnects.
    pub async fn disconnect(self) -> std::process::ExitStatus {
        self.close().await
    }

    /// The browser dies: SIGKILL, the socket file left behind.
    pub async fn kill(mut self) {
        self.child.kill().await.expect("kill host");
    }
}

/// Counts progress notifications; otherwise a plain client.
#[derive(Clone, Default)]
pub struct TestClient {
    pub name: String,
    pub progress: Arc<AtomicUsize>,
    /// The messages of the progress notifications, in order.
    pub messages: Arc<std::sync::Mutex<Vec<String>>>,
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(self.name.clone(), "1.0.0"),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        if let Some(message) = params.message
            && let Ok(mut messages) = self.messages.lock()
        {
            messages.push(message);
        }
        self.progress.fetch_add(1, Ordering::SeqCst);
    }
}

pub type Agent = RunningService<RoleClient, TestClient>;

/// rmcp's client running `him serve` with `HIM_RUNTIME_DIR` and any extra environment.
pub async fn start_agent(runtime: &Path, name: &str, env: &[(&str, &str)]) -> (Agent, TestClient) {
    start_agent_with_stderr(runtime, name, env, Stdio::inherit()).await
}

/// As `start_agent`, with the server's log going to `stderr`.
pub async fn start_agent_with_stderr(
    runtime: &Path,
    name: &str,
    env: &[(&str, &str)],
    stderr: Stdio,
) -> (Agent, TestClient) {
    let (agent, handler, _) = start_agent_with_pid(runtime, name, env, stderr).await;
    (agent, handler)
}

/// As `start_agent_with_stderr`, with the process id of `him serve`, for a test that
/// signals it.
pub async fn start_agent_with_pid(
    runtime: &Path,
    name: &str,
    env: &[(&str, &str)],
    stderr: Stdio,
) -> (Agent, TestClient, u32) {
    let handler = TestClient {
        name: name.into(),
        progress: Arc::default(),
        messages: Arc::default(),
    };
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let runtime = runtime.to_owned();
    let command = Command::new(him_bin()).configure(move |cmd| {
        // Questions are kept only where a test turns it on (HIM_KEEP_MS), in the test's
        // own state directory.
        cmd.arg("serve")
            .env("HIM_RUNTIME_DIR", &runtime)
            .env("HIM_STATE_DIR", state_dir(&runtime))
            .env("HIM_KEEP_MS", "0")
            .env("HIM_LOG", "trace");
        for (k, v) in &env {
            cmd.env(k, v);
        }
    });
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(stderr)
        .spawn()
        .expect("spawn him serve");
    let pid = transport.id().expect("him serve's pid");
    let client = handler
        .clone()
        .serve(transport)
        .await
        .expect("initialize him serve");
    (client, handler, pid)
}

pub fn params(tool: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().expect("object args").clone())
}

/// Calls a tool and returns its structured content, checking the text copy agrees.
pub async fn call(agent: &Agent, tool: &str, args: Value) -> Value {
    let result = agent
        .call_tool(params(tool, args))
        .await
        .expect("tools/call");
    assert_eq!(
        result.is_error,
        Some(false),
        "tool reported an error: {result:?}"
    );
    let structured = result.structured_content.expect("structured content");
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .expect("text copy");
    assert_eq!(
        serde_json::from_str::<Value>(&text).expect("text is JSON"),
        structured
    );
    structured
}

/// Every key of the result object, always present.
pub const RESULT_KEYS: [&str; 20] = him::agent::result::AskResult::FIELDS;

pub fn assert_complete(result: &Value) {
    for key in RESULT_KEYS {
        assert!(result.get(key).is_some(), "result lacks {key}: {result}");
    }
    assert!(
        !result["next_step"].as_str().unwrap_or_default().is_empty(),
        "next_step empty: {result}"
    );
}

/// As [`host_still_works`], and the new agent's question is the first frame the browser gets
/// from here: nothing the test provoked before reached it. An ordering check, not a wait for
/// nothing to come: the host writes its frames to the browser in order, and whatever it had
/// relayed before was on its way before the new agent even started.
pub async fn nothing_came_before_a_new_question(ext: &mut FakeExtension, runtime: &Path) {
    let (agent, _) = start_agent(runtime, "survivor", &[]).await;
    let call =
        tokio::spawn(
            async move { call(&agent, "ask_text", json!({"question": "Still fine?"})).await },
        );
    let ask = ext.recv().await;
    assert_eq!(
        (&ask["type"], &ask["agent"]["name"]),
        (&json!("ask"), &json!("survivor")),
        "the browser got this before the new question: {ask}"
    );
    ext.send(json!({"type": "shown", "id": ask["id"]})).await;
    ext.submit(&ask["id"], json!({"answer": "yes"})).await;
    assert_eq!(call.await.expect("call task")["answer"], "yes");
}

/// Proves the host still relays for a well-behaved agent.
pub async fn host_still_works(ext: &mut FakeExtension, runtime: &Path) {
    let (agent, _) = start_agent(runtime, "survivor", &[]).await;
    let call =
        tokio::spawn(
            async move { call(&agent, "ask_text", json!({"question": "Still fine?"})).await },
        );
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"answer": "yes"})).await;
    assert_eq!(call.await.expect("call task")["answer"], "yes");
}

impl FakeExtension {
    /// The host's verdict on the answer to `id`, for an extension that takes verdicts
    /// (`start_correcting`): `accepted`, or the `error` saying it was not delivered.
    pub async fn verdict_on(&mut self, id: &Value) -> Value {
        loop {
            let frame = self.recv().await;
            if &frame["id"] == id
                && ["accepted", "error", "refused"].contains(&frame["type"].as_str().unwrap_or(""))
            {
                return frame;
            }
        }
    }
}
