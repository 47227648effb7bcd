//! Helpers for the load and fault tests: browsers (a real host started as Chrome starts it,
//! with an extension stand-in on its stdio) that can be killed or disconnected, agents
//! (`him serve` under rmcp's client) whose process can be killed, memory readings, and a
//! small seeded random generator so a failing run can be repeated.
#![allow(dead_code)] // each test file uses a different part of this module

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use him::frame::{FrameCodec, MAX_INBOUND};
use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Mutex, mpsc};
use tokio_util::codec::{FramedRead, FramedWrite};

use super::{Agent, PATIENCE, TestClient, eventually, him_bin, origin};

/// The extension's end of one host's stdio: frames from the host arrive on `frames`
/// (after the stand-in has answered `hello` with `ready`); `sender` writes to the host.
pub struct Browser {
    pub pid: u32,
    child: Child,
    pub frames: mpsc::UnboundedReceiver<Value>,
    pub sender: BrowserSender,
}

/// Writes frames to one host's stdin; shared by whatever plays the person.
#[derive(Clone)]
pub struct BrowserSender(Arc<Mutex<Option<FramedWrite<ChildStdin, FrameCodec>>>>);

impl BrowserSender {
    /// Sends one message; false once the port is closed or the host is gone.
    pub async fn send(&self, value: Value) -> bool {
        let bytes = Bytes::from(serde_json::to_vec(&value).expect("json"));
        match self.0.lock().await.as_mut() {
            Some(writer) => writer.send(bytes).await.is_ok(),
            None => false,
        }
    }

    pub async fn answer_text(&self, id: &Value, answer: &str) -> bool {
        self.send(json!({"type": "answer", "id": id, "action": "submit",
                         "values": {"answer": answer}}))
            .await
    }

    /// The extension closes the port: the host sees stdin EOF.
    pub async fn close(&self) {
        self.0.lock().await.take();
    }
}

impl Browser {
    /// Starts a host as Chrome does and waits until it listens.
    pub async fn start(runtime: &Path) -> Browser {
        let mut child = Command::new(him_bin())
            .arg(origin())
            .env("HIM_RUNTIME_DIR", runtime)
            .env("HIM_STATE_DIR", super::state_dir(runtime))
            .env("HIM_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
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
        let sender = BrowserSender(Arc::new(Mutex::new(Some(writer))));
        let (tx, frames) = mpsc::unbounded_channel();
        let ready = sender.clone();
        tokio::spawn(async move {
            while let Some(Ok(frame)) = reader.next().await {
                let value: Value =
                    serde_json::from_slice(&frame).expect("host wrote a frame that is not JSON");
                if value["type"] == "hello" {
                    ready
                        .send(json!({"type": "ready", "protocol": 1,
                                     "extension": {"id": him::EXTENSION_ID, "version": "0.0.0-load"}}))
                        .await;
                    continue;
                }
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let socket = him::runtime::socket_path(runtime, pid);
        eventually("the host socket", || socket.exists()).await;
        Browser {
            pid,
            child,
            frames,
            sender,
        }
    }

    /// The next frame, which must come within the test's patience.
    pub async fn recv(&mut self) -> Value {
        tokio::time::timeout(PATIENCE, self.frames.recv())
            .await
            .expect("timed out waiting for a frame from the host")
            .expect("host closed its stdout")
    }

    /// The browser dies: SIGKILL, the socket file left behind.
    pub async fn kill(mut self) {
        self.child.kill().await.expect("kill host");
    }

    /// The extension disconnects; the host must exit by itself.
    pub async fn disconnect(mut self) -> std::process::ExitStatus {
        self.sender.close().await;
        tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("host did not exit after stdin closed")
            .expect("wait")
    }
}

/// `him serve` under rmcp's client, with its process at hand so a test can kill it.
pub struct AgentProcess {
    pub client: Arc<Agent>,
    pub pid: u32,
    child: Child,
}

impl AgentProcess {
    pub async fn start(runtime: &Path, name: &str, env: &[(&str, &str)]) -> AgentProcess {
        let mut command = Command::new(him_bin());
        command
            .arg("serve")
            .env("HIM_RUNTIME_DIR", runtime)
            .env("HIM_STATE_DIR", super::state_dir(runtime))
            .env("HIM_KEEP_MS", "0")
            .env("HIM_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("spawn him serve");
        let pid = child.id().expect("pid");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take().expect("stdin");
        let handler = TestClient {
            name: name.into(),
            ..TestClient::default()
        };
        let client = handler
            .serve((stdout, stdin))
            .await
            .expect("initialize him serve");
        AgentProcess {
            client: Arc::new(client),
            pid,
            child,
        }
    }

    /// The agent dies mid-question: SIGKILL.
    pub async fn kill(mut self) {
        self.child.kill().await.expect("kill him serve");
    }
}

/// Resident memory of a process in KiB (`VmRSS`).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// SplitMix64: small, seeded, and the same sequence on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A whole number in `lo..hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo).max(1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// The seed for a test's random choices: `HIM_TEST_SEED` if set, else `default`. Printed
/// so a failure names the seed that repeats it.
pub fn seed(default: u64) -> u64 {
    let seed = std::env::var("HIM_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    eprintln!("seed {seed} (set HIM_TEST_SEED to repeat or vary)");
    seed
}
