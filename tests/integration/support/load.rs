//! Helpers for the load and fault tests: browsers (`FakeExtension`, started quiet), agents
//! (`him serve` under rmcp's client) whose process can be killed, memory readings, and a
//! small seeded random generator so a failing run can be repeated.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use rmcp::ServiceExt;
use tokio::process::{Child, Command};

use super::{Agent, TestClient, him_bin};

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
