//! Agents on other machines (DESIGN.md §10): a remote agent's question reaches the local
//! browser through real OpenSSH — a forwarded Unix socket onto the laptop's gateway — with
//! the remote side unable to reach the laptop any other way (its own user, network, mount
//! and UTS namespaces: `support/ssh_lab.rs`). The laptop's host is started as the browser
//! starts it; SSH is set up with exactly what `him remote --write` wrote; the remote agent is
//! `him serve` under rmcp's client with a stripped environment. A container on the laptop
//! (a mount namespace given the gateway's folder by a bind mount) is checked the same way.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::ssh_lab::{Lab, REMOTE_ALIAS};
use crate::support::*;
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

/// The laptop's browser starts its host (the gateway's grace short, so the test ends soon).
async fn laptop_browser(lab: &Lab) -> FakeExtension {
    let mut env = lab.laptop.browser_env();
    env.push(("HIM_RECONNECT_GRACE_MS", "3000".into()));
    let mut command = lab.laptop.command(&env);
    command.stderr(Stdio::inherit());
    FakeExtension::launch(command, &lab.laptop_runtime).await
}

/// rmcp's client starts `him serve` on the remote machine, as the remote user.
async fn remote_agent(lab: &Lab, name: &str, extra: &[(&str, &str)]) -> Agent {
    let mut env = lab.remote_env(extra);
    env.push(("HIM_LOG", "debug".into()));
    let mut command = lab.on_remote(&lab.remote.him, &env);
    command.arg("serve");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn him serve on the remote");
    TestClient {
        name: name.into(),
        ..TestClient::default()
    }
    .serve(transport)
    .await
    .expect("initialize him serve on the remote")
}

/// `him remote devbox --write` as the laptop user, checked; returns what it printed.
async fn set_up_forwarding(lab: &Lab) -> String {
    let not_there = lab.him_on_laptop(&["remote", REMOTE_ALIAS]).await;
    let why = String::from_utf8_lossy(&not_there.stderr);
    assert!(!not_there.status.success());
    assert!(
        why.contains("him is not installed on devbox") && why.contains("--remote-him"),
        "{why}"
    );
    let remote_him = lab.remote.him.display().to_string();
    let output = lab
        .him_on_laptop(&[
            "remote",
            REMOTE_ALIAS,
            "--write",
            "--remote-him",
            &remote_him,
        ])
        .await;
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "him remote failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bind = lab.forwarded_dir().join(format!(
        "{}.sock",
        him::remote::bind_name(&him::wire::runtime::hostname().expect("host name"))
    ));
    let gateway = him::wire::runtime::gateway_socket(&lab.laptop_runtime);
    let forward = format!("RemoteForward {} {}", bind.display(), gateway.display());
    assert!(printed.contains(&forward), "{printed}");
    assert!(
        printed.contains(&format!(
            "ssh -R {}:{} devbox",
            bind.display(),
            gateway.display()
        )),
        "{printed}"
    );
    let config = std::fs::read_to_string(lab.laptop.home.join(".ssh/config")).expect("config");
    assert!(
        config.starts_with("# >>> him remote devbox >>>"),
        "{config}"
    );
    assert!(config.contains(&forward));
    // Run twice, the block is there once.
    let again = lab
        .him_on_laptop(&[
            "remote",
            REMOTE_ALIAS,
            "--write",
            "--remote-him",
            &remote_him,
        ])
        .await;
    assert!(again.status.success());
    let config = std::fs::read_to_string(lab.laptop.home.join(".ssh/config")).expect("config");
    assert_eq!(config.matches("# >>> him remote devbox >>>").count(), 1);
    printed
}

async fn ask_remote(agent: Agent, question: &str) -> tokio::task::JoinHandle<(Agent, Value)> {
    let question = question.to_owned();
    tokio::spawn(async move {
        let result = call(&agent, "ask_text", json!({"question": question})).await;
        (agent, result)
    })
}

async fn until<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Until an agent on the remote moved the live forward off the name SSH binds.
async fn until_forward_moved(lab: &Lab) {
    until("the forwarded socket to get a name of its own", || async {
        let names = lab.forwarded_sockets().await;
        names.len() == 1 && names[0].contains('@')
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_agents_question_is_answered_in_the_local_panel_marked_with_its_machine() {
    let Some(lab) = Lab::new().await else { return };
    set_up_forwarding(&lab).await;
    let mut ext = laptop_browser(&lab).await;
    // The browser's host started the gateway, because him remote set forwarding up.
    let gateway = him::wire::runtime::gateway_socket(&lab.laptop_runtime);
    eventually("the gateway's socket", || gateway.exists()).await;
    let doctor = lab.him_on_laptop(&["doctor"]).await;
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(report.contains("the gateway runs (pid"), "{report}");

    // Only the forward can make this pass: the remote cannot reach the laptop's sockets.
    assert!(
        !lab.remote_can_connect(&ext.socket).await,
        "the remote reached the host socket"
    );
    assert!(
        !lab.remote_can_connect(&gateway).await,
        "the remote reached the gateway"
    );

    lab.connect().await;
    let agent = remote_agent(&lab, "remote-claude", &[]).await;
    let status = call(&agent, "human_input_status", json!({})).await;
    assert_eq!(status["channel"], "extension", "{status}");
    let laptop_name = him::wire::runtime::hostname().expect("host name");
    assert_eq!(
        status["browsers"][0]["via_machine"],
        laptop_name.as_str(),
        "{status}"
    );
    until_forward_moved(&lab).await;

    let asked = ask_remote(agent, "Deploy the dev box?").await;
    let ask = ext.take_ask().await;
    assert_eq!(ask["agent"]["name"], "remote-claude", "{ask}");
    assert_eq!(ask["machine"], lab.remote_hostname.as_str(), "{ask}");
    ext.submit(&ask["id"], json!({"answer": "yes, deploy"}))
        .await;
    let (agent, result) = asked.await.expect("call task");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "extension", "{result}");
    assert_eq!(result["answer"], "yes, deploy");

    // him doctor on the remote says the panel is reached through SSH, and from where.
    let report = remote_doctor(&lab).await;
    assert!(
        report.contains(&format!(
            "the panel is reached through SSH, from {laptop_name}"
        )),
        "{report}"
    );

    // VS Code opens several sessions on one host: they share the master connection, whose
    // one forward stays one (OpenSSH's mux takes a duplicate forward as already there).
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(
            lab.ssh(&[REMOTE_ALIAS, "sleep", "1"])
                .stderr(Stdio::piped())
                .spawn()
                .expect("ssh"),
        );
    }
    for session in sessions {
        let out = session.wait_with_output().await.expect("ssh session");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && !stderr.contains("failed"),
            "{stderr}"
        );
    }
    // The master's one forward is all there is.
    assert_eq!(lab.forwarded_sockets().await.len(), 1);
    // And one that opens a connection of its own, as without ControlMaster: its forward
    // binds the name the first one left free, a second route to the same gateway.
    let mut own = lab
        .ssh(&[
            "-o",
            "ControlMaster=no",
            "-o",
            "ControlPath=none",
            "-N",
            REMOTE_ALIAS,
        ])
        .stderr(Stdio::piped())
        .spawn()
        .expect("ssh");
    until("the second connection's forward", || async {
        lab.forwarded_sockets().await.len() == 2
    })
    .await;
    let asked = ask_remote(agent, "Still one question?").await;
    let ask = ext.take_ask().await;
    // One route is used: the panel gets the question once.
    assert!(ext.quiet_for(Duration::from_millis(800)).await.is_none());
    ext.submit(&ask["id"], json!({"answer": "one"})).await;
    let (agent, result) = asked.await.expect("call task");
    assert_eq!(result["answer"], "one", "{result}");
    let status = call(&agent, "human_input_status", json!({})).await;
    assert_eq!(
        status["browsers"].as_array().map(Vec::len),
        Some(1),
        "{status}"
    );
    let _ = own.start_kill();
    drop(agent);
    ext.kill().await;

    // him uninstall takes out exactly the block him remote wrote.
    let removed = lab.him_on_laptop(&["uninstall"]).await;
    assert!(
        removed.status.success(),
        "{}",
        String::from_utf8_lossy(&removed.stderr)
    );
    let config = std::fs::read_to_string(lab.laptop.home.join(".ssh/config")).expect("config");
    assert!(!config.contains("him remote"), "{config}");
    assert!(config.starts_with("Host devbox\n  HostName "), "{config}");
}

/// Forwarding set up while the browser is open (on 019b820 the gateway stayed stopped until
/// the browser's next start, and every remote question went back to the chat in 0.09 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_question_reaches_the_panel_when_forwarding_is_set_up_with_the_browser_open() {
    let Some(lab) = Lab::new().await else { return };
    let mut ext = laptop_browser(&lab).await;
    let printed = set_up_forwarding(&lab).await;
    assert!(
        printed.contains("The gateway runs on this machine now"),
        "{printed}"
    );
    lab.connect().await;
    let agent = remote_agent(&lab, "remote-claude", &[]).await;
    let asked = ask_remote(agent, "Reached with the browser open?").await;
    let ask = ext.take_ask().await;
    assert_eq!(ask["machine"], lab.remote_hostname.as_str(), "{ask}");
    ext.submit(&ask["id"], json!({"answer": "yes"})).await;
    let (agent, result) = asked.await.expect("call task");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "extension", "{result}");
    let report = remote_doctor(&lab).await;
    assert!(
        report.contains("the panel is reached through SSH, from"),
        "{report}"
    );
    drop(agent);
    ext.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_question_survives_a_browser_restart_and_an_ssh_reconnect_and_falls_back_on_a_drop()
 {
    let Some(lab) = Lab::new().await else { return };
    set_up_forwarding(&lab).await;
    let mut ext = laptop_browser(&lab).await;
    lab.connect().await;
    let agent = remote_agent(&lab, "remote-codex", &[("HIM_RECONNECT_GRACE_MS", "4000")]).await;
    until_forward_moved(&lab).await;

    // The browser restarts mid-question: the gateway keeps the question and gives it to
    // the new host under the same id.
    let asked = ask_remote(agent, "Survive a browser restart?").await;
    let first = ext.take_ask().await;
    ext.kill().await;
    let mut ext = laptop_browser(&lab).await;
    let again = ext.take_ask().await;
    assert_eq!(again["id"], first["id"], "{again}");
    ext.submit(&again["id"], json!({"answer": "survived"}))
        .await;
    let (agent, result) = asked.await.expect("call task");
    assert_eq!(result["answer"], "survived", "{result}");

    // The SSH connection drops and comes back within the grace: the question is sent again
    // under its id. The name SSH binds was left free, so the new forward binds at once,
    // although the dropped one left its socket behind.
    let asked = ask_remote(agent, "Survive a reconnect?").await;
    let first = ext.take_ask().await;
    lab.drop_connection().await;
    let withdrawn = ext.recv_type("withdraw").await;
    assert_eq!(withdrawn["id"], first["id"]);
    // The question comes back under its id: only the new forward can have brought it.
    lab.connect().await;
    let again = ext.take_ask().await;
    assert_eq!(again["id"], first["id"], "{again}");
    ext.submit(&again["id"], json!({"answer": "reconnected"}))
        .await;
    let (agent, result) = asked.await.expect("call task");
    assert_eq!(result["answer"], "reconnected", "{result}");
    // The dropped connection's socket refused and was removed.
    until("one forwarded socket", || async {
        lab.forwarded_sockets().await.len() == 1
    })
    .await;

    // The SSH connection drops for good: as if the browser closed, the question moves on
    // to the fallback once the grace is over.
    until_forward_moved(&lab).await;
    let asked = ask_remote(agent, "And now?").await;
    ext.take_ask().await;
    let dropped = Instant::now();
    lab.drop_connection().await;
    let (agent, result) = asked.await.expect("call task");
    let waited = dropped.elapsed();
    assert_eq!(result["status"], "needs_user_input", "{result}");
    assert!(
        waited >= Duration::from_millis(3500),
        "moved on after {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(12),
        "moved on after {waited:?}"
    );

    // A connection no agent saw leaves its socket at the name SSH binds: with the remote
    // sshd's StreamLocalBindUnlink no (Debian's default), the next connection cannot bind.
    let _ = agent.cancel().await;
    until("no forwarded socket", || async {
        lab.forwarded_sockets().await.is_empty()
    })
    .await;
    lab.connect().await;
    until("the forward", || async {
        !lab.forwarded_sockets().await.is_empty()
    })
    .await;
    let bind = lab.forwarded_sockets().await;
    assert_eq!(
        lab.live_forwards().await,
        bind,
        "the forward binds its name"
    );
    assert!(bind.len() == 1 && !bind[0].contains('@'), "{bind:?}");
    lab.drop_connection().await;
    // The dropped connection's sshd lets go of the forward once it sees the connection end.
    until("the dropped connection's forward to close", || async {
        lab.live_forwards().await.is_empty()
    })
    .await;
    lab.connect().await;
    // One more forward asked on the new connection, after its own: once sshd has answered
    // it, it has dealt with the first, bound or not (no wait for a bind not to happen). Not a
    // session, whose ~/.ssh/rc would tidy the name away.
    let probe = format!(
        "{}:{}",
        lab.remote.home.join("probe.sock").display(),
        lab.laptop.home.join("probe.sock").display()
    );
    let forwarded = lab
        .ssh(&["-O", "forward", "-R", &probe, REMOTE_ALIAS])
        .output()
        .await
        .expect("ssh -O forward");
    assert!(forwarded.status.success(), "{forwarded:?}");
    assert!(
        lab.live_forwards().await.is_empty(),
        "the stale socket did not block the bind"
    );
    assert_eq!(lab.forwarded_sockets().await, bind);
    lab.ssh(&["-O", "exit", REMOTE_ALIAS])
        .stderr(Stdio::null())
        .status()
        .await
        .expect("ssh -O exit");
    // An agent that starts there removes the stale socket, and the next connection binds.
    let agent = remote_agent(&lab, "remote-codex", &[]).await;
    until("no forwarded socket", || async {
        lab.forwarded_sockets().await.is_empty()
    })
    .await;
    lab.connect().await;
    until("a live forward", || async {
        lab.live_forwards().await.len() == 1
    })
    .await;
    let asked = ask_remote(agent, "Bound again?").await;
    let ask = ext.take_ask().await;
    ext.submit(&ask["id"], json!({"answer": "bound"})).await;
    let (agent, result) = asked.await.expect("call task");
    assert_eq!(result["answer"], "bound", "{result}");
    drop(agent);
    ext.kill().await;
}

/// The network between the machines goes away without a FIN (a laptop asleep, Wi-Fi gone):
/// sshd on the remote keeps listening and forwarding into a TCP connection that leads
/// nowhere. The remote agent notices by its keep-alive (`HIM_KEEPALIVE_MS`): the question
/// shown before the loss and one asked after it both move on to the fallback once the
/// reconnect grace is over, as when a browser closes (on 019b820 both waited out their
/// whole timeout, the second shown nowhere). Prints how long the agent took to notice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_lost_without_a_goodbye_moves_remote_questions_on_after_the_grace() {
    const KEEPALIVE_MS: u64 = 1000;
    const GRACE_MS: u64 = 2000;
    let Some(lab) = Lab::new().await else { return };
    set_up_forwarding(&lab).await;
    let mut ext = laptop_browser(&lab).await;
    lab.connect().await;
    let agent = remote_agent(
        &lab,
        "remote-codex",
        &[
            ("HIM_RECONNECT_GRACE_MS", &GRACE_MS.to_string()),
            ("HIM_KEEPALIVE_MS", &KEEPALIVE_MS.to_string()),
        ],
    )
    .await;
    until_forward_moved(&lab).await;
    let agent = std::sync::Arc::new(agent);
    let ask = |question: &'static str| {
        let agent = agent.clone();
        tokio::spawn(async move {
            let result = call(
                &agent,
                "ask_text",
                json!({"question": question, "timeout_ms": 60000}),
            )
            .await;
            (result, Instant::now())
        })
    };
    // A question the panel shows, the link quiet long enough for the keep-alive to run.
    let before = ask("Shown before the network went?");
    ext.take_ask().await;
    let status = call(&agent, "human_input_status", json!({})).await;
    assert_eq!(status["channel"], "extension", "{status}");

    lab.cut_network();
    let cut = Instant::now();
    let after = ask("Asked after it went?");
    let (before, before_done) = before.await.expect("call task");
    let (after, after_done) = after.await.expect("call task");
    for result in [&before, &after] {
        assert_eq!(result["status"], "needs_user_input", "{result}");
        assert_eq!(result["via"], "chat", "{result}");
    }
    let noticed = before_done.duration_since(cut);
    let grace = Duration::from_millis(GRACE_MS);
    eprintln!(
        "a dead route: the question shown before moved on {noticed:?} after the cut ({:?} to \
         notice, keep-alive {KEEPALIVE_MS} ms, then the {GRACE_MS} ms grace); the one asked \
         after, {:?} after the cut",
        noticed.saturating_sub(grace),
        after_done.duration_since(cut)
    );
    // Noticed within twice the keep-alive period (one quiet period, one unanswered ping),
    // then the grace; the bound allows a loaded machine 3 s more, far below the timeout.
    let bound = Duration::from_millis(2 * KEEPALIVE_MS + GRACE_MS) + Duration::from_secs(3);
    assert!(noticed >= grace && noticed < bound, "{noticed:?}");
    assert!(after_done.duration_since(cut) < bound, "{after}");
    // Asked once the route is known gone: the forward still accepts, its hello gets no
    // welcome within the keep-alive period, and the question moves on at once.
    let asked = Instant::now();
    let (later, later_done) = ask("Asked once it was known gone?")
        .await
        .expect("call task");
    assert_eq!(later["status"], "needs_user_input", "{later}");
    let waited = later_done.duration_since(asked);
    eprintln!("a question asked once the route was known gone moved on after {waited:?}");
    assert!(
        waited < Duration::from_millis(KEEPALIVE_MS) + Duration::from_secs(3),
        "{waited:?}"
    );
    // The network back, the connection ends cleanly, its sshd session process with it.
    lab.restore_network();
    lab.exit_connection().await;
    ext.kill().await;
}

/// The container: a mount namespace, the laptop user's uid, the gateway's folder
/// bind-mounted where the agent looks ($HIM_RUNTIME_DIR/forwarded), another host name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_of_the_same_user_reaches_the_gateway_through_a_bind_mount() {
    let Some(lab) = Lab::new().await else { return };
    let enabled = lab.him_on_laptop(&["remote", "--container"]).await;
    let printed = String::from_utf8_lossy(&enabled.stdout);
    let gateway_dir = him::wire::runtime::gateway_dir(&lab.laptop_runtime);
    assert!(
        printed.contains(&format!("-v {}:/run/him/forwarded", gateway_dir.display())),
        "{printed}"
    );
    let mut ext = laptop_browser(&lab).await;
    eventually("the gateway's socket", || {
        him::wire::runtime::gateway_socket(&lab.laptop_runtime).exists()
    })
    .await;

    let root = tempfile::Builder::new()
        .prefix("him-ctr-")
        .tempdir()
        .expect("temp dir");
    let runtime: PathBuf = root.path().join("run-him");
    std::fs::create_dir_all(runtime.join("forwarded")).expect("mount point");
    for dir in [root.path(), runtime.as_path()] {
        std::os::unix::fs::chown(dir, Some(lab.laptop.uid), Some(lab.laptop.gid)).expect("chown");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    }
    let script = format!(
        "hostname container-1 && mount --bind {} {} && exec /usr/bin/setpriv --reuid {} --regid {} --clear-groups {} serve",
        gateway_dir.display(),
        runtime.join("forwarded").display(),
        lab.laptop.uid,
        lab.laptop.gid,
        lab.laptop.him.display()
    );
    let mut env = lab.laptop.client_env();
    env.push(("HIM_RUNTIME_DIR", runtime.display().to_string()));
    let mut command = tokio::process::Command::new("/usr/bin/unshare");
    command
        .args(["--mount", "--uts", "/bin/sh", "-c", &script])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the container's him serve");
    let agent = TestClient {
        name: "container-agent".into(),
        ..TestClient::default()
    }
    .serve(transport)
    .await
    .expect("initialize");
    let asked = ask_remote(agent, "From the container?").await;
    let ask = ext.take_ask().await;
    assert_eq!(ask["machine"], "container-1", "{ask}");
    ext.submit(&ask["id"], json!({"answer": "yes"})).await;
    let (agent, result) = asked.await.expect("call task");
    assert_eq!(result["answer"], "yes", "{result}");
    // The gateway's own socket was not moved: it is the laptop's.
    assert!(him::wire::runtime::gateway_socket(&lab.laptop_runtime).exists());

    // him uninstall removes what him remote wrote (the gateway's start).
    let removed = lab.him_on_laptop(&["uninstall"]).await;
    let said = String::from_utf8_lossy(&removed.stdout);
    assert!(said.contains("gateway-enabled"), "{said}");
    drop(agent);
    ext.kill().await;
}

/// A remote agent as the gateway sees it: a raw link to its socket, speaking §3 itself.
struct RawRemote {
    stream: tokio::net::UnixStream,
}

impl RawRemote {
    async fn connect(socket: &std::path::Path, machine: &str) -> (RawRemote, Value) {
        RawRemote::connect_saying(
            socket,
            json!({"type": "hello", "protocol": 1, "agent": {"name": "far-agent"},
                   "project": "far-project", "pid": 1, "verdicts": true, "machine": machine}),
        )
        .await
    }

    /// Connects and says `hello`, whatever it holds; returns the link and the `welcome`.
    async fn connect_saying(socket: &std::path::Path, hello: Value) -> (RawRemote, Value) {
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .expect("connect to the gateway");
        let mut remote = RawRemote { stream };
        remote.send(hello).await;
        let welcome = remote.recv().await;
        (remote, welcome)
    }

    async fn send(&mut self, value: Value) {
        use tokio::io::AsyncWriteExt;
        let body = serde_json::to_vec(&value).expect("json");
        let mut frame = (body.len() as u32).to_ne_bytes().to_vec();
        frame.extend_from_slice(&body);
        self.stream.write_all(&frame).await.expect("write");
    }

    async fn recv(&mut self) -> Value {
        self.recv_within(PATIENCE)
            .await
            .expect("a frame from the gateway")
    }

    async fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        use tokio::io::AsyncReadExt;
        let read = async {
            let mut len = [0u8; 4];
            self.stream
                .read_exact(&mut len)
                .await
                .expect("frame length");
            let mut body = vec![0u8; u32::from_ne_bytes(len) as usize];
            self.stream.read_exact(&mut body).await.expect("frame body");
            serde_json::from_slice::<Value>(&body).expect("json frame")
        };
        tokio::time::timeout(wait, read).await.ok()
    }

    /// The next frame that is not a `welcome` (the gateway says one each time the browsers'
    /// state changes).
    async fn recv_skipping_welcome(&mut self) -> Value {
        loop {
            let frame = self.recv().await;
            if frame["type"] != "welcome" {
                return frame;
            }
        }
    }
}

const REMOTE_QUESTION: &str = "0123456789abcdef0123456789abcdef";

/// The gateway without SSH or root: a browser's host of this user starts it (forwarding is
/// enabled in a state directory of the test's own), and a raw link to its socket plays the
/// remote agent, so that what the gateway sends a remote agent can be read frame by frame.
#[tokio::test]
async fn the_gateway_is_a_host_to_remote_agents_and_tells_them_only_of_their_own_questions() {
    let runtime = runtime_dir();
    let state = tempfile::tempdir().expect("state dir");
    std::fs::write(state.path().join("gateway-enabled"), "").expect("marker");
    let env = [
        ("HIM_STATE_DIR", state.path().to_str().expect("utf-8")),
        ("HIM_RECONNECT_GRACE_MS", "1500"),
    ];
    let mut ext = FakeExtension::start_correcting_with(runtime.path(), &env).await;
    let gateway = him::wire::runtime::gateway_socket(runtime.path());
    eventually("the gateway's socket", || gateway.exists()).await;

    let (mut remote, welcome) = RawRemote::connect(&gateway, "far-box").await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    assert_eq!(
        welcome["host"]["machine"],
        him::wire::runtime::hostname().expect("host name").as_str(),
        "{welcome}"
    );

    // A local agent's question and its answer: the remote agent hears nothing of either.
    let (local, _) = start_agent(runtime.path(), "local-agent", &[]).await;
    let asked =
        tokio::spawn(async move { call(&local, "ask_text", json!({"question": "Local?"})).await });
    let ask = ext.take_ask().await;
    assert_eq!(ask["agent"]["name"], "local-agent");
    assert!(
        ask.get("machine").is_none(),
        "a local question is not marked: {ask}"
    );
    ext.submit(&ask["id"], json!({"answer": "here"})).await;
    assert_eq!(asked.await.expect("call")["answer"], "here");
    loop {
        match remote.recv_within(Duration::from_millis(600)).await {
            None => break,
            Some(frame) => assert_eq!(frame["type"], "welcome", "the remote agent heard: {frame}"),
        }
    }

    // The remote question, labelled; an answer that does not fit is refused through the
    // gateway and corrected in the panel; the accepted one ends it there.
    remote
        .send(json!({"type": "ask", "id": REMOTE_QUESTION, "timeout_ms": 60000, "asked_at_ms": 0,
                     "form": {"title": "Port?", "fields": [{"name": "port", "type": "number", "label": "Port", "required": true}]}}))
        .await;
    let ask = ext.take_ask().await;
    assert_eq!(ask["id"], REMOTE_QUESTION);
    assert_eq!(
        (&ask["agent"]["name"], &ask["project"], &ask["machine"]),
        (
            &json!("far-agent"),
            &json!("far-project"),
            &json!("far-box")
        ),
        "{ask}"
    );
    assert_eq!(
        remote.recv_skipping_welcome().await,
        json!({"type": "shown", "id": REMOTE_QUESTION})
    );
    ext.submit(&ask["id"], json!({"port": "eighty"})).await;
    let answer = remote.recv_skipping_welcome().await;
    assert_eq!(answer["values"]["port"], "eighty", "{answer}");
    remote
        .send(json!({"type": "refused", "id": REMOTE_QUESTION, "field": "port", "message": "must be a number"}))
        .await;
    let refused = ext.recv_type("refused").await;
    assert_eq!(
        (&refused["id"], &refused["field"]),
        (&json!(REMOTE_QUESTION), &json!("port")),
        "{refused}"
    );
    ext.submit(&ask["id"], json!({"port": 8080})).await;
    let answer = remote.recv_skipping_welcome().await;
    assert_eq!(answer["values"]["port"], 8080, "{answer}");
    remote
        .send(json!({"type": "accepted", "id": REMOTE_QUESTION}))
        .await;
    assert_eq!(ext.recv_type("accepted").await["id"], REMOTE_QUESTION);

    // A question that names its own project (a remote `serve --http` session's) keeps it
    // through the gateway. A remote agent that goes away has its open question withdrawn
    // from the panel.
    let second = "fedcba9876543210fedcba9876543210";
    remote
        .send(json!({"type": "ask", "id": second, "timeout_ms": 60000, "asked_at_ms": 0,
                     "project": "far-session",
                     "form": {"title": "Gone?", "fields": [{"name": "a", "type": "text", "label": "A"}]}}))
        .await;
    let ask = ext.take_ask().await;
    assert_eq!(
        (&ask["id"], &ask["project"], &ask["machine"]),
        (&json!(second), &json!("far-session"), &json!("far-box")),
        "{ask}"
    );
    drop(remote);
    assert_eq!(ext.recv_type("withdraw").await["id"], second);

    // With no browser left, the gateway leaves after the grace and takes its socket along.
    ext.kill().await;
    eventually("the gateway to leave", || !gateway.exists()).await;
}

/// The name `him remote` has sshd bind on the remote machine.
fn bind_file_name() -> String {
    format!(
        "{}.sock",
        him::remote::bind_name(&him::wire::runtime::hostname().expect("host name"))
    )
}

/// Until the sockets that accept connections in the remote forwarded folder are `expected`
/// (`@` standing for any one socket under a name of its own).
async fn until_live(lab: &Lab, expected: &[&str]) {
    let bind = bind_file_name();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let live = lab.live_forwards().await;
        let matches = live.len() == expected.len()
            && live.iter().zip(expected).all(|(name, want)| match *want {
                "@" => name.contains('@'),
                _ => *name == bind,
            });
        if matches {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "live forwards {live:?}, not {expected:?}; all: {:?}",
            lab.forwarded_sockets().await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How often the remote user's own rc ran (it writes a line each time).
fn rc_runs(lab: &Lab) -> usize {
    std::fs::read_to_string(lab.remote.home.join("rc-ran")).map_or(0, |t| t.lines().count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_during_which_no_agent_ran_does_not_block_the_next_ones_forward() {
    let Some(lab) = Lab::new().await else { return };
    // The remote user's own ~/.ssh/rc, which must keep running.
    let mine = "echo \"rc ran\" >> \"$HOME/rc-ran\"\n";
    lab.write_remote_file(&lab.remote_rc(), mine);
    let printed = set_up_forwarding(&lab).await;
    let rc = std::fs::read_to_string(lab.remote_rc()).expect("rc");
    assert_eq!(rc.matches("# >>> him").count(), 1, "run twice, once: {rc}");
    assert!(rc.ends_with(mine), "{rc}");
    assert!(
        rc.contains(&format!("'{}' tidy-forwarded", lab.remote.him.display())),
        "{rc}"
    );
    assert!(
        printed.contains(&format!(
            "On devbox, a line in {} frees",
            lab.remote_rc().display()
        )),
        "{printed}"
    );
    let doctor = remote_doctor(&lab).await;
    assert!(
        doctor.contains(&format!(
            "{} frees the forwarded socket's name at each SSH session's start",
            lab.remote_rc().display()
        )),
        "{doctor}"
    );
    let mut ext = laptop_browser(&lab).await;
    let gateway = him::wire::runtime::gateway_socket(&lab.laptop_runtime);
    eventually("the gateway's socket", || gateway.exists()).await;
    let bind = bind_file_name();
    // The second `him remote --write` asked the remote through the block it had just
    // written, so its ssh became a master connection (ControlPersist) carrying the forward.
    lab.exit_connection().await;
    until_live(&lab, &[]).await;
    let before = rc_runs(&lab);
    assert_eq!(
        before, 3,
        "him remote's three ssh commands are sessions too"
    );

    // Connection 1, as VS Code makes it with the block's ControlMaster: a master that opens
    // no session (`ssh -N`: sshd runs no rc) and sessions through it. No agent runs.
    lab.connect().await;
    until_live(&lab, &["bind"]).await;
    let session = lab.session(&["true"]).await;
    assert!(
        session.status.success() && session.stdout.is_empty(),
        "{session:?}"
    );
    // sshd ran the rc after the forward was bound: it is live under a name of its own.
    assert_eq!(lab.forwarded_sockets().await.len(), 1);
    until_live(&lab, &["@"]).await;
    assert_eq!(
        rc_runs(&lab),
        before + 1,
        "the user's rc ran in the session"
    );
    lab.exit_connection().await;
    until_live(&lab, &[]).await;
    assert!(!lab.forwarded_sockets().await.contains(&bind));

    // Connection 2, a plain session (it becomes the master), then dropped.
    let session = lab.session(&["echo", "hello"]).await;
    assert_eq!(
        String::from_utf8_lossy(&session.stdout),
        "hello\n",
        "the rc says nothing on the session's stdout"
    );
    assert!(
        session.stderr.is_empty(),
        "nor on its stderr: {}",
        String::from_utf8_lossy(&session.stderr)
    );
    until_live(&lab, &["@"]).await;
    lab.drop_connection().await;
    until_live(&lab, &[]).await;

    // Connection 3 binds the name the rc of each one before left free; only now does an
    // agent run there, and its question is answered in the panel.
    let session = lab.session(&["true"]).await;
    assert!(session.status.success(), "{session:?}");
    until_live(&lab, &["@"]).await;
    let agent = remote_agent(&lab, "remote-claude", &[]).await;
    let asked = ask_remote(agent, "Through the third connection?").await;
    let ask = ext.take_ask().await;
    assert_eq!(ask["machine"], lab.remote_hostname.as_str(), "{ask}");
    ext.submit(&ask["id"], json!({"answer": "yes"})).await;
    let (agent, result) = asked.await.expect("call task");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["answer"], "yes", "{result}");
    drop(agent);
    lab.exit_connection().await;
    // Refused sockets are removed by the next rc: what is left is what still lives.
    let session = lab.session(&["true"]).await;
    assert!(session.status.success());
    until_live(&lab, &["@"]).await;
    assert_eq!(lab.forwarded_sockets().await.len(), 1, "stale ones removed");
    lab.exit_connection().await;

    // What the rc cannot do: a connection that only ever is `ssh -N` runs no rc, so with no
    // agent during it, the name stays taken and the next connection's forward fails; that
    // one's session frees it (the refused socket is removed), so the one after binds.
    lab.connect().await;
    until_live(&lab, &["bind"]).await;
    lab.exit_connection().await;
    // ssh's own warning goes to the master's stderr, which ControlPersist has detached;
    // the rc, which sees the refused socket where this connection's bind should be, says it.
    let blocked = lab.session(&["true"]).await;
    assert!(blocked.status.success(), "{blocked:?}");
    let said = String::from_utf8_lossy(&blocked.stderr);
    assert!(
        said.contains("this SSH connection's forward from")
            && said.contains(&format!("{bind} in its way"))
            && said.contains("reconnect"),
        "{said}"
    );
    assert!(lab.master_pid().await.is_some());
    until_live(&lab, &[]).await;
    assert!(
        lab.forwarded_sockets().await.is_empty(),
        "the rc removed the refused socket"
    );
    lab.exit_connection().await;
    lab.connect().await;
    until_live(&lab, &["bind"]).await;
    lab.exit_connection().await;

    assert_eq!(
        rc_runs(&lab),
        before + 5,
        "the user's rc ran at each session"
    );
    ext.kill().await;

    // him uninstall on the remote takes out only its block.
    let removed = remote_him(&lab, "uninstall").await;
    assert!(removed.status.success(), "{removed:?}");
    assert!(
        String::from_utf8_lossy(&removed.stdout).contains("removed the him block from"),
        "{removed:?}"
    );
    assert_eq!(std::fs::read_to_string(lab.remote_rc()).expect("rc"), mine);
    let doctor = remote_doctor(&lab).await;
    assert!(
        doctor.contains("does not run him: a connection during which no agent ran"),
        "{doctor}"
    );
}

/// `him <command>` run by the remote user on the remote machine.
async fn remote_him(lab: &Lab, command: &str) -> std::process::Output {
    lab.on_remote(&lab.remote.him, &lab.remote_env(&[]))
        .arg(command)
        .output()
        .await
        .unwrap_or_else(|err| panic!("him {command} on the remote: {err}"))
}

/// What `him doctor` on the remote machine says.
async fn remote_doctor(lab: &Lab) -> String {
    String::from_utf8_lossy(&remote_him(lab, "doctor").await.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rc_him_created_adds_the_x11_cookie_as_sshd_would_and_goes_whole_on_uninstall() {
    let Some(lab) = Lab::new().await else { return };
    // X11 forwarding with no ~/.ssh/rc: sshd runs xauth itself. The laptop has no X server
    // here, so ssh sends made-up cookie data; the remote's xauth records it all the same.
    let x11 = |lab: &Lab| {
        let mut command = lab.ssh(&["-X", REMOTE_ALIAS, "xauth", "list"]);
        command.env("DISPLAY", ":0");
        command
    };
    let entry = |output: &std::process::Output| {
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        // "devbox-…/unix:10  MIT-MAGIC-COOKIE-1  <hex>"
        let shape = text
            .lines()
            .find(|l| l.contains("MIT-MAGIC-COOKIE-1"))
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "));
        (shape, text)
    };
    let before = x11(&lab).output().await.expect("ssh -X");
    let (sshd_did, text) = entry(&before);
    let sshd_did = sshd_did.unwrap_or_else(|| panic!("sshd added no cookie: {text} {before:?}"));
    assert!(sshd_did.contains("/unix:1"), "{sshd_did}");
    let xauthority = lab.remote.home.join(".Xauthority");
    std::fs::remove_file(&xauthority).expect("sshd's xauth wrote ~/.Xauthority");

    set_up_forwarding(&lab).await;
    lab.exit_connection().await;
    let rc = std::fs::read_to_string(lab.remote_rc()).expect("him remote --write made an rc");
    assert!(
        rc.starts_with("# >>> him") && rc.contains("xauth -q -"),
        "{rc}"
    );
    let after = x11(&lab).output().await.expect("ssh -X");
    let (rc_did, text) = entry(&after);
    assert_eq!(
        rc_did.as_deref(),
        Some(sshd_did.as_str()),
        "{text} {after:?}"
    );
    lab.exit_connection().await;

    let removed = remote_him(&lab, "uninstall").await;
    assert!(removed.status.success(), "{removed:?}");
    assert!(!lab.remote_rc().exists(), "the rc him made is gone whole");
}

/// A forwarded socket whose far end never answers (a laptop asleep, a network gone while
/// sshd listens on: the connect works, no `welcome` ever comes) must not hold a question up
/// for the whole handshake: the local browser gets it, and a long-lived agent does not wait
/// for that route again. The bound asserted is the handshake's own limit (5 s), which the
/// old scan waited out before any question left; it is not a speed target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_forwarded_socket_does_not_hold_up_questions_to_the_local_browser() {
    use std::os::unix::fs::PermissionsExt;
    let runtime = runtime_dir();
    let forwarded = runtime.path().join("forwarded");
    std::fs::create_dir(&forwarded).expect("forwarded folder");
    std::fs::set_permissions(&forwarded, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let silent =
        std::os::unix::net::UnixListener::bind(forwarded.join("asleep.sock")).expect("bind");
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = held.clone();
    std::thread::spawn(move || {
        for stream in silent.incoming().flatten() {
            keep.lock().expect("lock").push(stream); // accepted, never answered
        }
    });
    let mut ext = FakeExtension::start(runtime.path()).await;
    let (agent, _client) = start_agent(runtime.path(), "patient-agent", &[]).await;
    for round in 0..2 {
        let started = Instant::now();
        let question = call(
            &agent,
            "ask_text",
            json!({"question": format!("Round {round}?")}),
        );
        let answering = async {
            let ask = ext.take_ask().await;
            let waited = started.elapsed();
            ext.submit(&ask["id"], json!({"answer": "fine"})).await;
            waited
        };
        let (result, waited) = tokio::join!(question, answering);
        assert!(
            waited < Duration::from_millis(4500),
            "round {round}: the question waited {waited:?} for a silent forwarded socket"
        );
        assert_eq!(result["status"], "answered", "{result}");
    }
    assert!(
        !held.lock().expect("lock").is_empty(),
        "the silent socket was never tried, so this test showed nothing"
    );
}

/// A remote agent cannot pass itself off as local: whatever its `hello` says of its machine —
/// nothing, an empty name, a blank or an invisible one, a name that moves the cursor — the
/// gateway names one in every question it passes on, so the panel marks it as remote.
#[tokio::test]
async fn a_remote_agent_that_names_no_readable_machine_is_still_marked_as_remote() {
    let runtime = runtime_dir();
    let state = tempfile::tempdir().expect("state dir");
    std::fs::write(state.path().join("gateway-enabled"), "").expect("marker");
    let env = [
        ("HIM_STATE_DIR", state.path().to_str().expect("utf-8")),
        ("HIM_RECONNECT_GRACE_MS", "1500"),
    ];
    let mut ext = FakeExtension::start_correcting_with(runtime.path(), &env).await;
    let gateway = him::wire::runtime::gateway_socket(runtime.path());
    eventually("the gateway's socket", || gateway.exists()).await;
    let claims = [
        None,
        Some(""),
        Some("   "),
        Some("\u{200B}"),
        Some("\u{3164}"),
        Some("\u{1b}[2K\rlocal"),
        Some(" devbox "),
    ];
    for (n, claim) in claims.into_iter().enumerate() {
        let mut hello = json!({"type": "hello", "protocol": 1, "agent": {"name": "far-agent"},
                               "pid": 1, "verdicts": true});
        if let Some(claim) = claim {
            hello["machine"] = json!(claim);
        }
        let (mut remote, welcome) = RawRemote::connect_saying(&gateway, hello).await;
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        let id = format!("{n:032x}");
        remote
            .send(json!({"type": "ask", "id": id, "timeout_ms": 60000, "asked_at_ms": 0,
                         "form": {"title": "Who?", "fields": [{"name": "a", "type": "text", "label": "A"}]}}))
            .await;
        let ask = ext.take_ask().await;
        assert_eq!(ask["id"], id.as_str());
        let shown = if claim == Some(" devbox ") {
            "devbox"
        } else {
            "another machine"
        };
        assert_eq!(ask["machine"], shown, "hello said {claim:?}: {ask}");
        drop(remote);
        assert_eq!(ext.recv_type("withdraw").await["id"], id.as_str());
    }
    ext.kill().await;
    eventually("the gateway to leave", || !gateway.exists()).await;
}

/// A person's machine for `him remote` without SSH: its own home, runtime and state
/// folders, and an `ssh` on the PATH that answers `him forwarded-dir` with `answer`.
struct SetUp {
    root: tempfile::TempDir,
}

impl SetUp {
    fn new() -> SetUp {
        let root = tempfile::Builder::new()
            .prefix("him-remote-")
            .tempdir()
            .expect("temp dir");
        for dir in ["home/.ssh", "bin", "state", "run"] {
            std::fs::create_dir_all(root.path().join(dir)).expect("mkdir");
        }
        use std::os::unix::fs::PermissionsExt;
        let ssh = root.path().join("bin/ssh");
        std::fs::write(&ssh, "#!/bin/sh\nprintf '%s\\n' \"$HIM_TEST_SSH_ANSWER\"\n").expect("ssh");
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::set_permissions(
            root.path().join("run"),
            std::fs::Permissions::from_mode(0o700),
        )
        .expect("chmod");
        SetUp { root }
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    fn config(&self) -> PathBuf {
        self.home().join(".ssh/config")
    }

    /// `him <args>` as this person, the remote answering that its forwarded folder is
    /// `forwarded`.
    fn him(&self, args: &[&str], forwarded: &str) -> std::process::Output {
        let answer = json!({"forwarded": forwarded, "hostname": "devbox", "version": "0.1.0",
                            "him": "/usr/bin/him", "ssh_rc": "/home/r/.ssh/rc"});
        let path = format!(
            "{}:{}",
            self.root.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        std::process::Command::new(env!("CARGO_BIN_EXE_him"))
            .args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.home())
            .env("HIM_STATE_DIR", self.root.path().join("state/him"))
            .env("HIM_RUNTIME_DIR", self.root.path().join("run"))
            .env("HIM_RECONNECT_GRACE_MS", "1000")
            .env("HIM_TEST_SSH_ANSWER", answer.to_string())
            .output()
            .expect("run him")
    }

    /// The names in `~/.ssh`, sorted.
    fn ssh_dir(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.home().join(".ssh"))
            .expect("list ~/.ssh")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// What the real ssh reads from `config` for host `devbox`: its `remoteforward` lines and
/// any `proxycommand`.
fn ssh_reads(config: &std::path::Path) -> Vec<String> {
    let out = std::process::Command::new("/usr/bin/ssh")
        .args(["-G", "-F"])
        .arg(config)
        .arg("devbox")
        .output()
        .expect("ssh -G");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("remoteforward ") || l.starts_with("proxycommand "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_forwarded_path_that_would_add_a_directive_is_refused_and_the_config_is_left_as_it_was() {
    let set_up = SetUp::new();
    let mine = "Host devbox\n  HostName 10.0.0.1\n";
    std::fs::write(set_up.config(), mine).expect("config");
    let pwned = set_up.root.path().join("pwned");
    for (forwarded, why) in [
        (
            format!(
                "/home/r/fwd\n  ProxyCommand touch {}\nHost *\n#",
                pwned.display()
            ),
            r"holds '\n'",
        ),
        ("/home/%u/fwd".to_owned(), "holds '%'"),
        ("/home/r/fwd:/tmp/x".to_owned(), "holds ':'"),
        ("/home/r/\"fwd".to_owned(), r#"holds '"'"#),
        ("home/r/fwd".to_owned(), "not an absolute path"),
        ("/home/r/../../etc".to_owned(), "not a plain path"),
    ] {
        let out = set_up.him(&["remote", "devbox", "--write"], &forwarded);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{forwarded:?} was taken");
        assert!(
            said.contains("devbox answered that its folder for forwarded sockets is")
                && said.contains(why)
                && said.contains("nothing was written"),
            "{forwarded:?}: {said}"
        );
        assert_eq!(
            std::fs::read_to_string(set_up.config()).expect("config"),
            mine,
            "{forwarded:?}"
        );
        assert_eq!(set_up.ssh_dir(), ["config"], "nothing left beside it");
    }
    assert!(ssh_reads(&set_up.config()).is_empty());
    assert!(!pwned.exists());
    assert!(
        !set_up
            .root
            .path()
            .join("state/him/gateway-enabled")
            .exists(),
        "forwarding was not enabled"
    );
}

#[test]
fn a_forwarded_path_with_a_space_is_one_quoted_word_written_through_a_linked_config() {
    let set_up = SetUp::new();
    let dotfiles = set_up.root.path().join("dotfiles");
    std::fs::create_dir(&dotfiles).expect("mkdir");
    let mine = "Host other\n  User me\n";
    std::fs::write(dotfiles.join("ssh_config"), mine).expect("config");
    std::os::unix::fs::symlink("../../dotfiles/ssh_config", set_up.config()).expect("symlink");
    let forwarded = "/home/r b/.local/state/him/run/devbox/forwarded";
    let out = set_up.him(&["remote", "devbox", "--write"], forwarded);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::symlink_metadata(set_up.config())
            .expect("meta")
            .file_type()
            .is_symlink(),
        "the link stays"
    );
    let written = std::fs::read_to_string(dotfiles.join("ssh_config")).expect("config");
    assert!(
        written.starts_with("# >>> him remote devbox >>>") && written.ends_with(mine),
        "{written}"
    );
    let gateway = him::wire::runtime::gateway_socket(&set_up.root.path().join("run"));
    let bind = format!("{forwarded}/{}", bind_file_name());
    assert_eq!(
        ssh_reads(&set_up.config()),
        [format!("remoteforward {bind} {}", gateway.display())],
        "{written}"
    );
    assert_eq!(set_up.ssh_dir(), ["config"], "nothing left beside it");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains(&format!("ssh -R '{bind}:{}' devbox", gateway.display())),
        "{printed}"
    );
}

#[test]
fn an_rc_is_written_whole_and_a_link_planted_where_it_used_to_be_made_is_not_followed() {
    let set_up = SetUp::new();
    let victim = set_up.root.path().join("victim");
    std::fs::write(&victim, "the person's file\n").expect("victim");
    // 019b820 wrote ~/.ssh/rc.him-tmp, through whatever was there, then renamed it.
    std::os::unix::fs::symlink(&victim, set_up.home().join(".ssh/rc.him-tmp")).expect("plant");
    let out = set_up.him(&["forwarded-dir", "--ssh-rc"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "the person's file\n"
    );
    let rc = set_up.home().join(".ssh/rc");
    let meta = std::fs::symlink_metadata(&rc).expect("rc");
    assert!(meta.file_type().is_file(), "{meta:?}");
    assert!(
        std::fs::read_to_string(&rc)
            .expect("rc")
            .contains("tidy-forwarded"),
    );
    assert_eq!(set_up.ssh_dir(), ["rc", "rc.him-tmp"]);
}

#[test]
fn uninstall_edits_an_rc_that_is_a_link_where_it_points_and_never_removes_the_link() {
    let set_up = SetUp::new();
    let dotfiles = set_up.root.path().join("dotfiles");
    std::fs::create_dir(&dotfiles).expect("mkdir");
    let rc = set_up.home().join(".ssh/rc");
    let is_link = |path: &std::path::Path| {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    };
    // A link to the person's own rc: the block goes on top there, and only it comes out.
    let mine = "echo mine >&2\n";
    std::fs::write(dotfiles.join("rc"), mine).expect("rc");
    std::os::unix::fs::symlink("../../dotfiles/rc", &rc).expect("symlink");
    assert!(
        set_up
            .him(&["forwarded-dir", "--ssh-rc"], "")
            .status
            .success()
    );
    let with_block = std::fs::read_to_string(dotfiles.join("rc")).expect("rc");
    assert!(
        with_block.contains("tidy-forwarded") && with_block.ends_with(mine),
        "{with_block}"
    );
    let out = set_up.him(&["uninstall"], "");
    assert!(out.status.success(), "{out:?}");
    assert!(is_link(&rc), "the link stays");
    assert_eq!(
        std::fs::read_to_string(dotfiles.join("rc")).expect("rc"),
        mine
    );

    // A link to a file that was not there: him made it, holding only its block.
    std::fs::remove_file(&rc).expect("rm");
    std::os::unix::fs::symlink("../../dotfiles/rc-new", &rc).expect("symlink");
    assert!(
        set_up
            .him(&["forwarded-dir", "--ssh-rc"], "")
            .status
            .success()
    );
    assert!(is_link(&rc));
    assert!(
        std::fs::read_to_string(dotfiles.join("rc-new"))
            .expect("rc")
            .contains("tidy-forwarded")
    );
    let out = set_up.him(&["uninstall"], "");
    assert!(out.status.success(), "{out:?}");
    assert!(is_link(&rc), "the link stays: {:?}", set_up.ssh_dir());
    assert!(
        !dotfiles.join("rc-new").exists(),
        "the file him made, and its block, are gone"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("removed the him block from"),
        "{out:?}"
    );
}

/// The gateway's pid, from its `welcome`.
async fn gateway_pid(gateway: &std::path::Path) -> u64 {
    let (_, welcome) = RawRemote::connect(gateway, "far-box").await;
    welcome["host"]["pid"]
        .as_u64()
        .expect("a pid in the welcome")
}

/// Forwarding set up while the browser is already open: `him remote` starts the gateway
/// before it returns, so the very next remote question reaches the panel (on 019b820 it went
/// back to the chat until the browser's next start).
#[tokio::test]
async fn him_remote_starts_the_gateway_at_once_while_the_browser_is_open() {
    let set_up = SetUp::new();
    let runtime = set_up.root.path().join("run");
    let state = set_up.root.path().join("state/him");
    let env = [
        ("HIM_STATE_DIR", state.to_str().expect("utf-8")),
        ("HIM_RECONNECT_GRACE_MS", "1000"),
    ];
    let mut ext = FakeExtension::start_correcting_with(&runtime, &env).await;
    let out = set_up.him(
        &["remote", "devbox", "--write"],
        "/home/r/.local/state/him/run/devbox/forwarded",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let gateway = him::wire::runtime::gateway_socket(&runtime);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains(&format!(
            "The gateway runs on this machine now ({})",
            gateway.display()
        )),
        "{printed}"
    );
    // No waiting: it answered before him remote returned.
    let (mut remote, welcome) = RawRemote::connect(&gateway, "far-box").await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    remote
        .send(json!({"type": "ask", "id": REMOTE_QUESTION, "timeout_ms": 60000, "asked_at_ms": 0,
                     "form": {"title": "Reached?", "fields": [{"name": "a", "type": "text", "label": "A"}]}}))
        .await;
    let ask = ext.take_ask().await;
    assert_eq!(ask["id"], REMOTE_QUESTION, "{ask}");
    assert_eq!(ask["machine"], "far-box", "{ask}");
    drop(remote);
    ext.kill().await;
    eventually("the gateway to leave", || !gateway.exists()).await;
}

/// A browser's host that runs while forwarding gets set up (another way than `him remote`,
/// or the start there failed), or while the gateway dies, starts it.
#[tokio::test]
async fn a_running_browsers_host_starts_the_gateway_whenever_it_is_enabled_and_not_running() {
    let runtime = runtime_dir();
    let state = tempfile::tempdir().expect("state dir");
    let env = [
        ("HIM_STATE_DIR", state.path().to_str().expect("utf-8")),
        ("HIM_RECONNECT_GRACE_MS", "1000"),
    ];
    let ext = FakeExtension::start_correcting_with(runtime.path(), &env).await;
    let gateway = him::wire::runtime::gateway_socket(runtime.path());
    std::fs::write(state.path().join("gateway-enabled"), "").expect("marker");
    eventually("the host to start the gateway", || {
        std::os::unix::net::UnixStream::connect(&gateway).is_ok()
    })
    .await;
    let first = gateway_pid(&gateway).await;
    // It dies without a word, leaving its socket; the host starts another.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the gateway");
    let mut second = first;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while second == first {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no new gateway after {first} died"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        if std::os::unix::net::UnixStream::connect(&gateway).is_ok() {
            second = gateway_pid(&gateway).await;
        }
    }
    ext.kill().await;
    eventually("the gateway to leave", || !gateway.exists()).await;
}
