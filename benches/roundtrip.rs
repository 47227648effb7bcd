//! Round-trip latency, start-up and memory of `him`, measured on the real binaries, with the
//! physical floor measured in the same run. `cargo bench --bench roundtrip`; BENCHMARKS.md
//! defines each figure.
//!
//! ```text
//! him:   client ─stdio JSON-RPC─► him serve ─unix socket─► him host ─pipe─► stand-in
//!        client ◄─────────────────────────── (the same hops back) ◄──────── stand-in
//! floor: client ─stdio lines────► relay A ───unix socket─► relay B ─pipe─► stand-in
//!        client ◄─────────────────────────── (the same hops back) ◄──────── stand-in
//! ```
//!
//! The relays of the floor are this same binary re-executed in a role (`HIM_BENCH_ROLE`), so
//! the floor has the same processes, pipes and socket as `him`; they copy bytes and frame
//! them, parsing nothing. The extension stand-in is the same code for both paths, and each
//! client drives both: the raw line client and rmcp's client each have a floor of their own,
//! so every him row is compared with a floor that pays for the same client.
//!
//! Run without `--bench` (as `cargo test --benches` does) it makes a quick smoke pass.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use him::wire::frame::{MAX_INBOUND, read_frame_sync};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};

/// Selects a helper role when this binary re-executes itself.
const ROLE: &str = "HIM_BENCH_ROLE";
/// Socket path for the helper roles.
const SOCKET: &str = "HIM_BENCH_SOCKET";

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    let role = std::env::var(ROLE).ok();
    let result = match role.as_deref() {
        Some("floor-agent") => floor_agent(),
        Some("floor-host") => floor_host(),
        Some("trivial-init") => trivial_init(),
        Some("trivial-listen") => trivial_listen(),
        Some(other) => Err(format!("unknown {ROLE} {other:?}").into()),
        None => run(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("roundtrip bench: {err}");
            ExitCode::FAILURE
        }
    }
}

/// How much to measure: the full run under `cargo bench`, a smoke pass otherwise.
struct Plan {
    questions: usize,
    warmup: usize,
    rounds: usize,
    startups: usize,
    pending: Vec<usize>,
}

impl Plan {
    fn from_args() -> Plan {
        let full = std::env::args().any(|a| a == "--bench");
        let questions = std::env::var("HIM_BENCH_QUESTIONS")
            .ok()
            .and_then(|v| v.parse().ok());
        if full {
            Plan {
                questions: questions.unwrap_or(3000),
                warmup: 200,
                rounds: 5,
                startups: 40,
                pending: vec![250, 1000, 4000],
            }
        } else {
            Plan {
                questions: questions.unwrap_or(20),
                warmup: 5,
                rounds: 2,
                startups: 3,
                pending: vec![50],
            }
        }
    }
}

fn out(text: &str) {
    let _ = writeln!(io::stdout().lock(), "{text}");
}

fn run() -> Result<(), BoxError> {
    // A stuck run says so and fails, rather than hanging a CI job.
    thread::spawn(|| {
        thread::sleep(Duration::from_secs(600));
        eprintln!("roundtrip bench: no progress for 10 minutes; giving up");
        std::process::exit(2);
    });
    let plan = Plan::from_args();
    let runtime = private_dir()?;
    let dir = runtime.path();
    out("# him round-trip benchmark\n");
    out(&machine());
    // `-- --heap`: only the heap per pending question, which heaptrack makes slow.
    if std::env::args().any(|a| a == "--heap") {
        out(&heap(dir)?);
        return Ok(());
    }

    let latency = latencies(dir, &plan)?;
    out(&latency);
    out(&ssh_hop(dir, &plan)?);
    out(&startup(dir, &plan)?);
    out(&memory(dir, &plan)?);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Latency

fn latencies(dir: &Path, plan: &Plan) -> Result<String, BoxError> {
    // him: one host with its stand-in; two `him serve`, one driven by rmcp's client and one
    // by the raw line client.
    let host = HimHost::start(dir)?;
    let mut raw = LineClient::him_serve(dir)?;
    let initialize_response = raw.initialize()?;
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let rmcp_client = start_rmcp_client(
        &tokio,
        tokio::process::Command::new(him_bin()).configure(|cmd| {
            cmd.arg("serve")
                .env("HIM_RUNTIME_DIR", dir)
                .env("HIM_LOG", "warn");
        }),
    )?;

    // Capture one real exchange for the floor to carry.
    let request = tool_call_line(0);
    let response = raw.request(&request)?;
    check_answered(&response)?;

    // The floors: relay A (agent side) and relay B (host side) as child processes, one pair
    // driven by the raw client and one by rmcp's client, so that each him row has a floor
    // that pays for the same client.
    let floor_dir = dir.join("floor");
    std::fs::create_dir(&floor_dir)?;
    let floor_socket = floor_dir.join("raw.sock");
    // The stand-in answers with the real response line, newline and all: relay A passes it
    // to the client unchanged.
    let floor_relays = FloorRelays::start(&floor_socket, Reply::Fixed(response.clone()))?;
    let mut floor = LineClient::spawn(role_command("floor-agent").env(SOCKET, &floor_socket))?;
    // rmcp's client needs its own `initialize` answered and each response to carry its
    // request's id: the stand-in answers with the real responses captured above.
    let rmcp_floor_socket = floor_dir.join("rmcp.sock");
    let rmcp_floor_relays = FloorRelays::start(
        &rmcp_floor_socket,
        Reply::Mcp {
            initialize: ResponseTemplate::new(&initialize_response)?,
            tool_call: ResponseTemplate::new(&response)?,
        },
    )?;
    let rmcp_floor = start_rmcp_client(
        &tokio,
        tokio::process::Command::new(std::env::current_exe()?).configure(|cmd| {
            cmd.env(ROLE, "floor-agent").env(SOCKET, &rmcp_floor_socket);
        }),
    )?;

    let mut rmcp_samples = Vec::new();
    let mut raw_samples = Vec::new();
    let mut ping_samples = Vec::new();
    let mut floor_samples = Vec::new();
    let mut rmcp_floor_samples = Vec::new();

    for i in 0..plan.warmup {
        rmcp_call(&tokio, &rmcp_client, i)?;
        raw.request(&tool_call_line(i))?;
        floor.request(&request)?;
        rmcp_call(&tokio, &rmcp_floor, i)?;
    }
    // CPU on the raw client's paths: him serve and the host against relays A and B, each
    // counted only while its own path runs.
    let mut floor_cpu = CpuMeter::new(&[floor.child.id(), floor_relays.relay_b.id()]);
    let mut serve_cpu = CpuMeter::new(&[raw.child.id()]);
    let mut host_cpu = CpuMeter::new(&[host.child.id()]);
    let per_round = plan.questions.div_ceil(plan.rounds);
    let mut n = 0;
    for _ in 0..plan.rounds {
        floor_cpu.start()?;
        for _ in 0..per_round {
            floor_samples.push(timed(|| floor.request(&request))?);
        }
        floor_cpu.stop()?;
        for _ in 0..per_round {
            n += 1;
            rmcp_floor_samples.push(rmcp_call(&tokio, &rmcp_floor, n)?);
        }
        serve_cpu.start()?;
        host_cpu.start()?;
        for _ in 0..per_round {
            n += 1;
            let line = tool_call_line(n);
            let started = Instant::now();
            let response = raw.request(&line)?;
            raw_samples.push(started.elapsed());
            check_answered(&response)?;
        }
        serve_cpu.stop()?;
        host_cpu.stop()?;
        for _ in 0..per_round {
            n += 1;
            rmcp_samples.push(rmcp_call(&tokio, &rmcp_client, n)?);
        }
        for _ in 0..per_round {
            n += 1;
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{n},\"method\":\"ping\"}}\n");
            ping_samples.push(timed(|| raw.request(line.as_bytes()))?);
        }
    }
    for (what, stand_in) in [
        ("the host", &host.stand_in),
        ("rmcp's client on the floor", &rmcp_floor_relays.stand_in),
    ] {
        let errors = stand_in.errors.load(Ordering::SeqCst);
        if errors > 0 {
            return Err(format!("{what} sent {errors} unexpected frames to the stand-in").into());
        }
    }

    let floor_stats = Stats::of(&mut floor_samples);
    let rmcp_floor_stats = Stats::of(&mut rmcp_floor_samples);
    let raw_stats = Stats::of(&mut raw_samples);
    let rmcp_stats = Stats::of(&mut rmcp_samples);
    let ping_stats = Stats::of(&mut ping_samples);
    let mut report = String::from("## Round trip (sequential questions, answered at once)\n\n");
    report.push_str(&format!(
        "{} questions per path, in {} interleaved rounds after {} warm-up each.\n\n",
        per_round * plan.rounds,
        plan.rounds,
        plan.warmup
    ));
    report.push_str(
        "| path | p50 µs | p90 µs | p99 µs | max µs | p50 / floor, same client | \
         p99 / floor, same client |\n",
    );
    report.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    for (name, stats, floor) in [
        (
            "floor, raw client (relays that only frame bytes)",
            &floor_stats,
            &floor_stats,
        ),
        (
            "floor, rmcp client (relays that only frame bytes)",
            &rmcp_floor_stats,
            &rmcp_floor_stats,
        ),
        ("him, raw JSON-RPC client", &raw_stats, &floor_stats),
        ("him, rmcp client", &rmcp_stats, &rmcp_floor_stats),
        (
            "for scale: `ping` to him serve (rmcp and one pipe pair only)",
            &ping_stats,
            &floor_stats,
        ),
    ] {
        report.push_str(&format!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}× | {:.2}× |\n",
            stats.p50,
            stats.p90,
            stats.p99,
            stats.max,
            stats.p50 / floor.p50,
            stats.p99 / floor.p99,
        ));
    }
    report.push_str(
        "\nEach ratio divides by the floor driven by the same client: the raw client's rows \
         (him and `ping`) by the raw-driven floor, the rmcp row by the rmcp-driven floor.\n",
    );
    report.push_str(&format!(
        "\nTargets: p50 within 2× of the floor: rmcp client {:.2}× its floor (rmcp-driven), \
         raw client {:.2}× its floor (raw-driven); rmcp client {:.2}× the raw-driven floor \
         (which leaves out rmcp's client); p99 under 5 ms (rmcp client: {:.2} ms).\n",
        rmcp_stats.p50 / rmcp_floor_stats.p50,
        raw_stats.p50 / floor_stats.p50,
        rmcp_stats.p50 / floor_stats.p50,
        rmcp_stats.p99 / 1000.0
    ));
    report.push_str(&format!(
        "rmcp's client over the raw client at p50: +{:.1} µs on the floor, +{:.1} µs on him.\n",
        rmcp_floor_stats.p50 - floor_stats.p50,
        rmcp_stats.p50 - raw_stats.p50,
    ));
    let questions = (per_round * plan.rounds) as f64;
    let per_question = |meter: &CpuMeter| meter.used.as_secs_f64() * 1e6 / questions;
    let (serve_us, host_us, floor_us) = (
        per_question(&serve_cpu),
        per_question(&host_cpu),
        per_question(&floor_cpu),
    );
    report.push_str(&format!(
        "CPU per question on the raw client's paths (time on CPU, all threads): him serve \
         {serve_us:.1} µs + host {host_us:.1} µs = {:.1} µs; relays A + B of the floor \
         {floor_us:.1} µs; him / floor {:.2}×.\n",
        serve_us + host_us,
        (serve_us + host_us) / floor_us,
    ));
    report.push_str(&format!(
        "Bytes carried by the raw-driven floor per round trip: request line {} B, response \
         line {} B; the rmcp-driven floor carries rmcp's request line and the same response \
         line with the request's id.\n",
        request.len(),
        response.len()
    ));

    tokio.block_on(async {
        rmcp_client.cancel().await.ok();
        rmcp_floor.cancel().await.ok();
    });
    raw.close();
    floor.close();
    floor_relays.close();
    rmcp_floor_relays.close();
    host.close();
    Ok(report)
}

type RmcpClient = RunningService<RoleClient, ()>;

/// rmcp's client over a child's stdio (`initialize` and `notifications/initialized`
/// included), as an agent runs it.
fn start_rmcp_client(
    tokio: &tokio::runtime::Runtime,
    command: tokio::process::Command,
) -> Result<RmcpClient, BoxError> {
    tokio.block_on(async {
        let transport = TokioChildProcess::new(command)?;
        Ok::<_, BoxError>(().serve(transport).await?)
    })
}

/// One `ask_confirm` through rmcp's client, timed from the call to its result; fails unless
/// the result is the answered one.
fn rmcp_call(
    tokio: &tokio::runtime::Runtime,
    client: &RmcpClient,
    i: usize,
) -> Result<Duration, BoxError> {
    let params = CallToolRequestParams::new("ask_confirm").with_arguments(
        json!({"question": format!("Deploy build {i} to staging?"), "timeout_ms": 600_000})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let started = Instant::now();
    let result = tokio.block_on(client.call_tool(params))?;
    let took = started.elapsed();
    let status = result
        .structured_content
        .as_ref()
        .and_then(|s| s.get("status"))
        .cloned();
    if status != Some(json!("answered")) {
        return Err(format!("rmcp round trip {i} not answered: {result:?}").into());
    }
    Ok(took)
}

/// Time on CPU of some processes, summed over the spans between `start` and `stop`. Read
/// from `/proc/<pid>/task/*/schedstat` (nanoseconds, every thread), where `/proc/<pid>/stat`
/// would count 10 ms clock ticks.
struct CpuMeter {
    pids: Vec<u32>,
    started: Duration,
    used: Duration,
}

impl CpuMeter {
    fn new(pids: &[u32]) -> CpuMeter {
        CpuMeter {
            pids: pids.to_vec(),
            started: Duration::ZERO,
            used: Duration::ZERO,
        }
    }

    fn now(&self) -> Result<Duration, BoxError> {
        let mut total = Duration::ZERO;
        for pid in &self.pids {
            for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
                let stat = match std::fs::read_to_string(task?.path().join("schedstat")) {
                    Ok(stat) => stat,
                    // A thread that ended meanwhile; neither side keeps short-lived ones.
                    Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                    Err(err) => return Err(err.into()),
                };
                let ns = stat.split_whitespace().next().ok_or("empty schedstat")?;
                total += Duration::from_nanos(ns.parse()?);
            }
        }
        Ok(total)
    }

    fn start(&mut self) -> Result<(), BoxError> {
        self.started = self.now()?;
        Ok(())
    }

    fn stop(&mut self) -> Result<(), BoxError> {
        self.used += self.now()?.saturating_sub(self.started);
        Ok(())
    }
}

fn timed(mut f: impl FnMut() -> io::Result<Vec<u8>>) -> io::Result<Duration> {
    let started = Instant::now();
    f()?;
    Ok(started.elapsed())
}

fn tool_call_line(i: usize) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
        "params": {"name": "ask_confirm",
                   "arguments": {"question": format!("Deploy build {i} to staging?"),
                                 "timeout_ms": 600_000}}
    }))
    .unwrap_or_default();
    line.push(b'\n');
    line
}

fn check_answered(response: &[u8]) -> Result<(), BoxError> {
    let value: Value = serde_json::from_slice(response)?;
    if value["result"]["structuredContent"]["status"] != "answered" {
        return Err(format!("not answered: {value}").into());
    }
    Ok(())
}

struct Stats {
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

impl Stats {
    /// Percentiles in microseconds (nearest rank).
    fn of(samples: &mut [Duration]) -> Stats {
        samples.sort_unstable();
        let at = |q: f64| {
            if samples.is_empty() {
                return 0.0;
            }
            let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
            samples[rank - 1].as_secs_f64() * 1e6
        };
        Stats {
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Agents on other machines: the gateway and the SSH hop (DESIGN.md §10)

/// The same question three ways in interleaved rounds: to the host directly, to the
/// gateway (as a container reaches it: its socket in the agent's forwarded folder), and
/// through a real `ssh -N -R` forward onto the gateway (sshd on 127.0.0.1, as root only).
fn ssh_hop(dir: &Path, plan: &Plan) -> Result<String, BoxError> {
    let mut report = String::from("## Agents on other machines (gateway, SSH hop)\n\n");
    let host = HimHost::start(dir)?;
    let mut gateway = him_command(dir)
        .arg("gateway")
        .env("HIM_RECONNECT_GRACE_MS", "60000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()?;
    let gateway_socket = him::wire::runtime::gateway_socket(dir);
    wait_for(&gateway_socket)?;

    let mut local = LineClient::him_serve(dir)?;
    local.initialize()?;
    // The container's view: the gateway's socket in the agent's forwarded folder (a hard
    // link: the same socket, as a bind mount gives it).
    let direct_dir = private_dir()?;
    let forwarded = direct_dir.path().join("forwarded");
    std::fs::create_dir(&forwarded)?;
    set_private(&forwarded)?;
    std::fs::hard_link(&gateway_socket, forwarded.join("gateway.sock"))?;
    let mut direct = LineClient::him_serve(direct_dir.path())?;
    direct.initialize()?;

    let mut ssh = SshForward::start(&gateway_socket);
    let mut paths: Vec<(&str, LineClient)> =
        vec![("local host", local), ("gateway, no SSH", direct)];
    let ssh_dir = private_dir()?;
    match &mut ssh {
        Ok(forward) => {
            let forwarded = ssh_dir.path().join("forwarded");
            std::fs::create_dir(&forwarded)?;
            set_private(&forwarded)?;
            forward.forward_into(&forwarded.join("bench.sock"))?;
            let mut client = LineClient::him_serve(ssh_dir.path())?;
            client.initialize()?;
            paths.push(("gateway through `ssh -N -R`", client));
        }
        Err(why) => report.push_str(&format!("SSH hop skipped: {why}.\n\n")),
    }

    let mut samples: Vec<Vec<Duration>> = paths.iter().map(|_| Vec::new()).collect();
    let questions = (plan.questions / 3).max(10);
    let mut n = 1_000_000;
    for (_, client) in paths.iter_mut() {
        for _ in 0..plan.warmup.min(50) {
            n += 1;
            check_answered(&client.request(&tool_call_line(n))?)?;
        }
    }
    let per_round = questions.div_ceil(plan.rounds);
    for _ in 0..plan.rounds {
        for (i, (_, client)) in paths.iter_mut().enumerate() {
            for _ in 0..per_round {
                n += 1;
                let line = tool_call_line(n);
                let started = Instant::now();
                let response = client.request(&line)?;
                samples[i].push(started.elapsed());
                check_answered(&response)?;
            }
        }
    }
    let stats: Vec<Stats> = samples.iter_mut().map(|s| Stats::of(s)).collect();
    report.push_str(&format!(
        "{} questions per path (raw JSON-RPC client), in {} interleaved rounds.\n\n",
        per_round * plan.rounds,
        plan.rounds
    ));
    report.push_str("| path | p50 µs | p90 µs | p99 µs | max µs | p50 / local | p99 / local | p50 − local µs |\n");
    report.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for ((name, _), s) in paths.iter().zip(&stats) {
        report.push_str(&format!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}× | {:.2}× | {:+.1} |\n",
            s.p50,
            s.p90,
            s.p99,
            s.max,
            s.p50 / stats[0].p50,
            s.p99 / stats[0].p99,
            s.p50 - stats[0].p50,
        ));
    }
    for (_, client) in paths {
        client.close();
    }
    if let Ok(forward) = ssh {
        forward.close();
    }
    let _ = gateway.kill();
    let _ = gateway.wait();
    host.close();
    Ok(report)
}

fn set_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// sshd on a free loopback port with keys made here, and the `ssh -N -R` that holds the
/// forward: root only (sshd and a login of our own uid).
struct SshForward {
    sshd: Child,
    ssh: Option<Child>,
    port: u16,
    keys: tempfile::TempDir,
    target: PathBuf,
}

impl SshForward {
    fn start(target: &Path) -> Result<SshForward, String> {
        if !nix::unistd::geteuid().is_root() {
            return Err("sshd needs root".into());
        }
        if !Path::new("/usr/sbin/sshd").exists() || !Path::new("/usr/bin/ssh").exists() {
            return Err("openssh-server or openssh-client is not installed".into());
        }
        let fail = |e: &dyn std::fmt::Display| format!("cannot start sshd: {e}");
        let keys = private_dir().map_err(|e| fail(&e))?;
        for key in ["host", "client"] {
            let status = Command::new("/usr/bin/ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(keys.path().join(key))
                .status()
                .map_err(|e| fail(&e))?;
            if !status.success() {
                return Err("ssh-keygen failed".into());
            }
        }
        std::fs::copy(
            keys.path().join("client.pub"),
            keys.path().join("authorized_keys"),
        )
        .map_err(|e| fail(&e))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| fail(&e))?
            .port();
        let config = keys.path().join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "ListenAddress 127.0.0.1:{port}\nHostKey {}\nPidFile none\nUsePAM no\n\
                 StrictModes no\nAuthorizedKeysFile {}\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\n",
                keys.path().join("host").display(),
                keys.path().join("authorized_keys").display()
            ),
        )
        .map_err(|e| fail(&e))?;
        let _ = std::fs::create_dir_all("/run/sshd");
        let sshd = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| fail(&e))?;
        let give_up = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > give_up {
                return Err("sshd did not listen".into());
            }
            thread::sleep(Duration::from_millis(10));
        }
        Ok(SshForward {
            sshd,
            ssh: None,
            port,
            keys,
            target: target.to_owned(),
        })
    }

    /// `ssh -N -R <remote>:<gateway>`, until the forwarded socket is there.
    fn forward_into(&mut self, remote: &Path) -> Result<(), BoxError> {
        let ssh = Command::new("/usr/bin/ssh")
            .args([
                "-N",
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=no",
            ])
            .args([
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
                "-i",
            ])
            .arg(self.keys.path().join("client"))
            .args(["-p", &self.port.to_string(), "-R"])
            .arg(format!("{}:{}", remote.display(), self.target.display()))
            .arg("root@127.0.0.1")
            .stdin(Stdio::null())
            .spawn()?;
        self.ssh = Some(ssh);
        // The forward is up once its socket exists.
        wait_for(remote)
    }

    fn close(mut self) {
        if let Some(mut ssh) = self.ssh.take() {
            let _ = ssh.kill();
            let _ = ssh.wait();
        }
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
    }
}

// ---------------------------------------------------------------------------------------
// Start-up

fn startup(dir: &Path, plan: &Plan) -> Result<String, BoxError> {
    let init = initialize_line();
    let mut serve = Vec::new();
    let mut trivial_init_times = Vec::new();
    let mut host = Vec::new();
    let mut trivial_listen_times = Vec::new();
    let mut true_times = Vec::new();
    for _ in 0..plan.startups {
        true_times.push(timed_exit(Command::new("/bin/true"))?);
        serve.push(exec_to_answer(him_command(dir).arg("serve"), &init)?);
        trivial_init_times.push(exec_to_answer(
            role_command("trivial-init").env(SOCKET, dir),
            &init,
        )?);
        host.push(exec_to_listening(
            him_command(dir).arg(origin()),
            dir,
            true,
        )?);
        trivial_listen_times.push(exec_to_listening(
            role_command("trivial-listen").env("HIM_RUNTIME_DIR", dir),
            dir,
            false,
        )?);
    }
    let tidy_times = tidy_runs(dir, plan)?;
    let t = Stats::of(&mut true_times);
    let s = Stats::of(&mut serve);
    let ti = Stats::of(&mut trivial_init_times);
    let h = Stats::of(&mut host);
    let tl = Stats::of(&mut trivial_listen_times);
    let mut report = format!(
        "## Start-up ({} runs each, interleaved)\n\n\
         | what | p50 ms | p90 ms | max ms | p50 / trivial Rust binary | p50 / `/bin/true` |\n\
         |---|---:|---:|---:|---:|---:|\n",
        plan.startups
    );
    for (name, stats, base) in [
        ("`/bin/true`: exec → exit", &t, &t),
        (
            "trivial Rust binary: exec → its answer to `initialize`",
            &ti,
            &ti,
        ),
        ("`him serve`: exec → its answer to `initialize`", &s, &ti),
        ("trivial Rust binary: exec → socket accepts", &tl, &tl),
        ("`him` host: exec → socket accepts", &h, &tl),
        (
            "`him tidy-forwarded` (the `~/.ssh/rc` line): exec → exit; ratio to the next row",
            &tidy_times.0,
            &tidy_times.1,
        ),
        (
            "… its baseline, `/bin/true`, same loop",
            &tidy_times.1,
            &tidy_times.1,
        ),
    ] {
        report.push_str(&format!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2}× | {:.1}× |\n",
            stats.p50 / 1000.0,
            stats.p90 / 1000.0,
            stats.max / 1000.0,
            stats.p50 / base.p50,
            stats.p50 / t.p50,
        ));
    }
    report.push_str(&format!(
        "\nTargets: under 5 ms each (serve p50 {:.2} ms, host p50 {:.2} ms).\n",
        s.p50 / 1000.0,
        h.p50 / 1000.0
    ));
    Ok(report)
}

/// `him tidy-forwarded` as sshd's rc runs it at a session's start, in the usual state: this
/// connection's live forward at the name SSH binds (moved off it) and the socket the last
/// connection left under a name of its own (refused, removed); against `/bin/true` in the
/// same loop. Each run is checked to have done both.
fn tidy_runs(dir: &Path, plan: &Plan) -> Result<(Stats, Stats), BoxError> {
    let forwarded = dir.join("forwarded");
    std::fs::create_dir_all(&forwarded)?;
    set_private(&forwarded)?;
    let (bind, left) = (
        forwarded.join("laptop.sock"),
        forwarded.join("laptop@0a0b0c0d0e0f.sock"),
    );
    let (mut tidy, mut baseline) = (Vec::new(), Vec::new());
    for _ in 0..plan.startups {
        let live = UnixListener::bind(&bind)?;
        drop(UnixListener::bind(&left)?);
        let mut command = him_command(dir);
        command.arg("tidy-forwarded").stderr(Stdio::null());
        tidy.push(timed_exit(command)?);
        baseline.push(timed_exit(Command::new("/bin/true"))?);
        let moved: Vec<PathBuf> = him::wire::runtime::list_forwarded_sockets(&forwarded);
        if bind.exists() || left.exists() || moved.len() != 1 {
            return Err(format!("him tidy-forwarded left {moved:?}").into());
        }
        std::fs::remove_file(&moved[0])?;
        drop(live);
    }
    Ok((Stats::of(&mut tidy), Stats::of(&mut baseline)))
}

fn initialize_line() -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "him-bench", "version": "1.0.0"}}
    }))
    .unwrap_or_default();
    line.push(b'\n');
    line
}

fn timed_exit(mut command: Command) -> io::Result<Duration> {
    let started = Instant::now();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()?;
    Ok(started.elapsed())
}

/// From just before exec to the first line of the answer to `initialize`.
fn exec_to_answer(command: &mut Command, init: &[u8]) -> Result<Duration, BoxError> {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    stdin.write_all(init)?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut line = Vec::new();
    stdout.read_until(b'\n', &mut line)?;
    let took = started.elapsed();
    if !line.starts_with(b"{") || !line.windows(8).any(|w| w == b"\"result\"") {
        return Err(format!(
            "no answer to initialize: {}",
            String::from_utf8_lossy(&line)
        )
        .into());
    }
    drop(stdin);
    child.wait()?;
    Ok(took)
}

/// From just before exec to the first successful connect to the host socket.
fn exec_to_listening(
    command: &mut Command,
    dir: &Path,
    speaks_native_messaging: bool,
) -> Result<Duration, BoxError> {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let socket = him::wire::runtime::socket_path(dir, child.id());
    let give_up = started + Duration::from_secs(10);
    let took = loop {
        if UnixStream::connect(&socket).is_ok() {
            break started.elapsed();
        }
        if Instant::now() > give_up {
            let _ = child.kill();
            return Err(format!("{} never accepted", socket.display()).into());
        }
        thread::sleep(Duration::from_micros(20));
    };
    if speaks_native_messaging {
        let mut stdout = child.stdout.take().ok_or("no stdout")?;
        let hello = read_frame_sync(&mut stdout, MAX_INBOUND)?.ok_or("no hello")?;
        if !hello.windows(7).any(|w| w == b"\"hello\"") {
            return Err("the host's first frame is not hello".into());
        }
    }
    drop(child.stdin.take());
    child.wait()?;
    Ok(took)
}

// ---------------------------------------------------------------------------------------
// Memory and scaling of pending questions

fn memory(dir: &Path, plan: &Plan) -> Result<String, BoxError> {
    let host = HimHost::start(dir)?;
    let mut serve = LineClient::him_serve(dir)?;
    serve.initialize()?;
    let mut trivial = LineClient::spawn(role_command("trivial-init").env(SOCKET, dir))?;
    trivial.initialize()?;
    thread::sleep(Duration::from_millis(300));
    let serve_idle = rss_kib(serve.child.id())?;
    let host_idle = rss_kib(host.child.id())?;
    let trivial_idle = rss_kib(trivial.child.id())?;
    check_answered(&serve.request(&tool_call_line(0))?)?;
    thread::sleep(Duration::from_millis(300));
    let serve_one = rss_kib(serve.child.id())?;
    let host_one = rss_kib(host.child.id())?;

    let mut report = String::from("## Memory (VmRSS) and pending questions\n\n");
    let mut rows = Vec::new();
    let mut pending_rows = Vec::new();
    let mut next_id = 1;
    for &count in &plan.pending {
        let run = pending_round(&host, &mut serve, dir, count, next_id)?;
        next_id += count;
        pending_rows.push(format!(
            "| {count} | {:.1} | {:.1} | {} | {} |",
            run.fill.as_secs_f64() * 1e6 / count as f64,
            run.drain.as_secs_f64() * 1e6 / count as f64,
            kib(run.serve_rss),
            kib(run.host_rss),
        ));
        if count == 1000 || plan.pending.len() == 1 {
            rows.push((count, run.serve_rss, run.host_rss));
        }
    }
    thread::sleep(Duration::from_millis(300));
    let serve_after = rss_kib(serve.child.id())?;
    let host_after = rss_kib(host.child.id())?;

    report.push_str("| process | idle | after 1 question | ");
    for (count, _, _) in &rows {
        report.push_str(&format!(
            "{count} pending (`him serve`: {} of them) | growth | ",
            (*count).min(PER_SERVE)
        ));
    }
    report.push_str("after all answered | idle / trivial Rust binary |\n|---|---:|---:|");
    for _ in &rows {
        report.push_str("---:|---:|");
    }
    report.push_str("---:|---:|\n");
    for (name, idle, one, after, pick) in [
        ("`him serve`", serve_idle, serve_one, serve_after, 0usize),
        ("`him` host", host_idle, host_one, host_after, 1),
    ] {
        report.push_str(&format!("| {name} | {} | {} | ", kib(idle), kib(one)));
        for &(_, s, h) in &rows {
            let at = if pick == 0 { s } else { h };
            report.push_str(&format!(
                "{} | +{} | ",
                kib(at),
                kib(at.saturating_sub(idle))
            ));
        }
        report.push_str(&format!(
            "{} | {:.2}× |\n",
            kib(after),
            idle as f64 / trivial_idle as f64
        ));
    }
    report.push_str(&format!(
        "| trivial Rust binary (this bench, idle) | {} | | ",
        kib(trivial_idle)
    ));
    for _ in &rows {
        report.push_str("| | ");
    }
    report.push_str("| |\n");
    report.push_str(
        "\nTargets: idle under 6 MiB each; 1,000 pending under 10 MiB more.\n\n\
         Pending rounds: N questions sent at once by N / 64 `him serve`s (64 each, the most \
         one agent may have waiting at a host), held by the stand-in until all N arrived, \
         then answered at once. Flat cost per question from one N to the next means no step \
         grows with the number pending.\n\n\
         | N pending | fill µs / question | drain µs / question | RSS of a `him serve` holding 64 | host RSS at N |\n\
         |---:|---:|---:|---:|---:|\n",
    );
    for row in pending_rows {
        report.push_str(&row);
        report.push('\n');
    }
    serve.close();
    trivial.close();
    host.close();
    Ok(report)
}

// ---------------------------------------------------------------------------------------
// Heap per pending question (heaptrack)

/// The heap of one `him serve` (stdio) with 1, [`PER_SERVE`] / 2 and [`PER_SERVE`]
/// `ask_confirm` calls waiting at a host whose stand-in holds every question, under
/// `heaptrack`. Per pending question = (peak at PER_SERVE − peak at PER_SERVE / 2) /
/// (PER_SERVE / 2): both peaks are the moment all their questions wait, while the peak with
/// one may come before it (start-up's own peak is about as high); (peak at PER_SERVE − peak
/// at 1) / (PER_SERVE − 1) is given too. Each count runs `HIM_BENCH_HEAP_RUNS` times (default
/// 3), alternating, and its median peak is taken. heaptrack's files stay in
/// `HIM_BENCH_HEAP_DIR` when set (for `heaptrack_print -p`, which says where the bytes went).
fn heap(dir: &Path) -> Result<String, BoxError> {
    let mut report = String::from("## Heap per pending question (heaptrack)\n\n");
    if !on_path("heaptrack") {
        report.push_str("Skipped: `heaptrack` is not on PATH.\n");
        return Ok(report);
    }
    let runs: usize = std::env::var("HIM_BENCH_HEAP_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let scratch = private_dir()?;
    let files = match std::env::var_os("HIM_BENCH_HEAP_DIR") {
        Some(kept) => {
            std::fs::create_dir_all(&kept)?;
            PathBuf::from(kept)
        }
        None => scratch.path().to_owned(),
    };
    let counts = [1, PER_SERVE / 2, PER_SERVE];
    let mut peaks = counts.map(|_| Vec::new());
    for run in 0..runs {
        for (count, peaks) in counts.iter().zip(&mut peaks) {
            peaks.push(heap_peak(dir, &files, *count, run)?);
        }
    }
    let [one, half, all] = peaks.map(|mut peaks| median(&mut peaks));
    let per =
        |from: u64, to: u64, questions: usize| to.saturating_sub(from) as f64 / questions as f64;
    let per_question = per(half, all, PER_SERVE - PER_SERVE / 2);
    let per_from_one = per(one, all, PER_SERVE - 1);
    let kib = |bytes: f64| bytes / 1024.0;
    report.push_str(&format!(
        "`{}`, {runs} runs per count, medians of the peak heap.\n\n\
         | peak heap, 1 pending | {half_count} pending | {PER_SERVE} pending | per pending \
         question ({half_count} → {PER_SERVE}) | (1 → {PER_SERVE}) |\n\
         |---:|---:|---:|---:|---:|\n\
         | {:.1} KiB | {:.1} KiB | {:.1} KiB | {:.2} KiB ({per_question:.0} B) | {:.2} KiB |\n",
        him_bin().display(),
        kib(one as f64),
        kib(half as f64),
        kib(all as f64),
        kib(per_question),
        kib(per_from_one),
        half_count = PER_SERVE / 2,
    ));
    Ok(report)
}

/// One `him serve` under heaptrack with `count` questions held at the host at once, then
/// answered one by one; its peak heap in bytes.
fn heap_peak(dir: &Path, files: &Path, count: usize, run: usize) -> Result<u64, BoxError> {
    let host = HimHost::start(dir)?;
    let file = files.join(format!("serve-{count}-{run}"));
    let mut command = Command::new("heaptrack");
    command
        .arg("-o")
        .arg(&file)
        .arg(him_bin())
        .arg("serve")
        .env("HIM_RUNTIME_DIR", dir)
        .env("HIM_LOG", "warn");
    let mut serve = LineClient::spawn(&mut command)?;
    // heaptrack's script says where its file goes on stdout, before `him serve` starts.
    serve.stdin.write_all(&initialize_line())?;
    serve.stdin.flush()?;
    loop {
        let mut line = Vec::new();
        if serve.stdout.read_until(b'\n', &mut line)? == 0 {
            return Err("`him serve` under heaptrack closed its stdout".into());
        }
        if line.starts_with(b"{") {
            break;
        }
    }
    serve
        .stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
    let stand_in = &host.stand_in;
    stand_in.hold(true);
    // Asked one at a time, each once the last reached the stand-in: a burst would grow the
    // link's buffers, which is not what a question costs while it waits.
    let give_up = Instant::now() + Duration::from_secs(60);
    for i in 0..count {
        let seen_before = stand_in.asks.load(Ordering::SeqCst);
        serve.stdin.write_all(&tool_call_line(i))?;
        serve.stdin.flush()?;
        while stand_in.asks.load(Ordering::SeqCst) == seen_before {
            if Instant::now() > give_up {
                return Err(format!("heap run: only {i} of {count} questions arrived").into());
            }
            thread::sleep(Duration::from_micros(200));
        }
    }
    // Answered one at a time, so that the peak is the moment all of them wait, not a burst
    // of answers being read and results written.
    for _ in 0..count {
        stand_in.release(1);
        read_answers(&mut serve, 1)?;
    }
    stand_in.hold(false);
    serve.close();
    host.close();
    // Compressed with zstd where the script found it, else gzip.
    let (data, unpack) = [("zst", "zstd"), ("gz", "gzip")]
        .map(|(ext, unpack)| (file.with_extension(ext), unpack))
        .into_iter()
        .find(|(data, _)| data.exists())
        .ok_or_else(|| format!("heaptrack wrote no {}.zst or .gz", file.display()))?;
    let unpacked = Command::new(unpack).arg("-dc").arg(&data).output()?;
    if !unpacked.status.success() {
        return Err(format!("{unpack} could not read {}", data.display()).into());
    }
    heaptrack_peak(&String::from_utf8_lossy(&unpacked.stdout))
        .ok_or_else(|| format!("{} is not heaptrack's data", data.display()).into())
}

/// The peak heap of heaptrack's data, in bytes, replayed from its events: `a <size>
/// <trace>` defines an allocation's kind, `+ <kind>` allocates one, `-` frees one.
/// `heaptrack_print` says the same figure rounded to three digits, too coarse to divide by
/// the questions pending.
fn heaptrack_peak(data: &str) -> Option<u64> {
    let hex = |field: Option<&str>| field.and_then(|f| u64::from_str_radix(f, 16).ok());
    let (mut sizes, mut now, mut peak) = (Vec::new(), 0u64, 0u64);
    for line in data.lines() {
        let mut fields = line.split_whitespace();
        match fields.next() {
            Some("a") => sizes.push(hex(fields.next())?),
            Some("+") => {
                now += sizes.get(hex(fields.next())? as usize)?;
                peak = peak.max(now);
            }
            Some("-") => now = now.saturating_sub(*sizes.get(hex(fields.next())? as usize)?),
            _ => {}
        }
    }
    (!sizes.is_empty()).then_some(peak)
}

fn median(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

struct PendingRun {
    fill: Duration,
    drain: Duration,
    serve_rss: u64,
    host_rss: u64,
}

/// One agent link may have at most this many questions waiting at a host (host/relay.rs); a
/// round of N pending spreads them over as many `him serve`s as that takes.
const PER_SERVE: usize = him::host::relay::MAX_WAITING_QUESTIONS;

/// N pending: `serve` asks the first PER_SERVE, and as many more `him serve`s as it takes
/// (started in `dir` for this round) ask the rest.
fn pending_round(
    host: &HimHost,
    serve: &mut LineClient,
    dir: &Path,
    count: usize,
    first_id: usize,
) -> Result<PendingRun, BoxError> {
    let mut serves = Vec::new();
    for _ in 1..count.div_ceil(PER_SERVE) {
        let mut serve = LineClient::him_serve(dir)?;
        serve.initialize()?;
        serves.push(serve);
    }
    let stand_in = &host.stand_in;
    stand_in.hold(true);
    let seen_before = stand_in.asks.load(Ordering::SeqCst);
    let batches: Vec<Vec<u8>> = (first_id..first_id + count)
        .collect::<Vec<_>>()
        .chunks(PER_SERVE)
        .map(|ids| ids.iter().flat_map(|&i| tool_call_line(i)).collect())
        .collect();
    let started = Instant::now();
    for (client, batch) in std::iter::once(&mut *serve)
        .chain(serves.iter_mut())
        .zip(&batches)
    {
        client.stdin.write_all(batch)?;
        client.stdin.flush()?;
    }
    let give_up = started + Duration::from_secs(60);
    while stand_in.asks.load(Ordering::SeqCst) < seen_before + count {
        if Instant::now() > give_up {
            return Err(format!(
                "only {} of {count} questions arrived",
                stand_in.asks.load(Ordering::SeqCst) - seen_before
            )
            .into());
        }
        thread::sleep(Duration::from_micros(200));
    }
    let fill = started.elapsed();
    // It holds a full share, PER_SERVE questions (or all of them, when fewer).
    let serve_rss = rss_kib(serve.child.id())?;
    let host_rss = rss_kib(host.child.id())?;
    // Each `him serve`'s answers are read as they come, by a thread of its own, so that
    // every agent keeps reading while answers wait for it: one that reads nothing for the
    // stall time while frames wait is cut off (host/mod.rs, HIM_AGENT_STALL_MS), which is not
    // what this measures.
    let released = Instant::now();
    let count_lines = |batch: &Vec<u8>| batch.iter().filter(|&&c| c == b'\n').count();
    let readers: Vec<JoinHandle<Result<(LineClient, usize), String>>> = serves
        .into_iter()
        .zip(batches.iter().skip(1).map(count_lines))
        .map(|(mut client, expected)| {
            thread::spawn(move || {
                let n = read_answers(&mut client, expected)?;
                Ok((client, n))
            })
        })
        .collect();
    stand_in.hold(false);
    let mut answered = read_answers(serve, count_lines(&batches[0]))?;
    for reader in readers {
        let (client, n) = reader.join().map_err(|_| "a reader panicked")??;
        answered += n;
        client.close();
    }
    let drain = released.elapsed();
    if answered != count {
        return Err(format!("{answered} of {count} answered").into());
    }
    let errors = stand_in.errors.load(Ordering::SeqCst);
    if errors > 0 {
        return Err(format!("the host sent {errors} error frames to the stand-in").into());
    }
    Ok(PendingRun {
        fill,
        drain,
        serve_rss,
        host_rss,
    })
}

/// Reads `expected` answered responses from `client`, each to a request of its own.
fn read_answers(client: &mut LineClient, expected: usize) -> Result<usize, String> {
    let mut ids = std::collections::HashSet::new();
    for _ in 0..expected {
        let mut line = Vec::new();
        client
            .stdout
            .read_until(b'\n', &mut line)
            .map_err(|e| e.to_string())?;
        check_answered(&line).map_err(|e| e.to_string())?;
        let value: Value = serde_json::from_slice(&line).map_err(|e| e.to_string())?;
        if !ids.insert(value["id"].as_u64().unwrap_or(0)) {
            return Err(format!("duplicate response {}", value["id"]));
        }
    }
    Ok(ids.len())
}

fn rss_kib(pid: u32) -> Result<u64, BoxError> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("no VmRSS for {pid}").into())
}

fn kib(k: u64) -> String {
    format!("{:.1} MiB", k as f64 / 1024.0)
}

// ---------------------------------------------------------------------------------------
// The pieces: him host + stand-in, the floor's relays, the raw line client

/// The `him` measured: this build's, or `HIM_BENCH_BIN` (another build, for a before and
/// after with the same driver).
fn him_bin() -> PathBuf {
    std::env::var_os("HIM_BENCH_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_him")), PathBuf::from)
}

fn origin() -> String {
    format!("chrome-extension://{}/", him::EXTENSION_ID)
}

fn him_command(dir: &Path) -> Command {
    let mut command = Command::new(him_bin());
    command.env("HIM_RUNTIME_DIR", dir).env("HIM_LOG", "warn");
    command
}

fn role_command(role: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap_or_default());
    command.env(ROLE, role);
    command
}

fn private_dir() -> io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new().prefix("him-bench-").tempdir()?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}

/// One frame in one write, as a real peer sends it.
fn write_frame(w: &mut impl Write, payload: &[u8]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(4 + payload.len());
    buf.extend_from_slice(&(payload.len() as u32).to_ne_bytes());
    buf.extend_from_slice(payload);
    w.write_all(&buf)?;
    w.flush()
}

fn read_frame(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    read_frame_sync(r, MAX_INBOUND).map_err(|e| io::Error::other(e.to_string()))
}

/// What the stand-in sends back for a frame.
enum Reply {
    /// Playing the extension for a him host: answers each `ask` with a `submit`.
    Extension,
    /// Floor driven by the raw client: answers every frame with these bytes.
    Fixed(Vec<u8>),
    /// Floor driven by rmcp's client: answers each JSON-RPC request with a captured response
    /// carrying that request's id; notifications get no answer.
    Mcp {
        initialize: ResponseTemplate,
        tool_call: ResponseTemplate,
    },
}

/// A captured response line split around its `id`, so each request's id goes in without
/// re-serialising the rest: the stand-in's work stays close to the raw-driven floor's
/// copying fixed bytes.
struct ResponseTemplate {
    before_id: Vec<u8>,
    after_id: Vec<u8>,
}

impl ResponseTemplate {
    fn new(line: &[u8]) -> Result<ResponseTemplate, BoxError> {
        const MARK: &str = "him-bench-id-goes-here";
        let mut value: Value = serde_json::from_slice(line)?;
        value["id"] = json!(MARK);
        let text = serde_json::to_vec(&value)?;
        let mark = serde_json::to_vec(MARK)?;
        let at = text
            .windows(mark.len())
            .position(|w| w == mark)
            .ok_or("the id mark is not in the serialised response")?;
        let mut after_id = text[at + mark.len()..].to_vec();
        after_id.push(b'\n');
        Ok(ResponseTemplate {
            before_id: text[..at].to_vec(),
            after_id,
        })
    }

    fn with_id(&self, id: &Value) -> Vec<u8> {
        let id = serde_json::to_vec(id).unwrap_or_default();
        [&self.before_id[..], &id, &self.after_id].concat()
    }
}

/// The extension stand-in: reads frames from the host's stdout on its own thread and
/// answers at once (or holds answers back while `hold` is set).
struct StandIn {
    writer: Arc<Mutex<Option<ChildStdin>>>,
    holding: Arc<AtomicBool>,
    held: Arc<Mutex<Vec<Vec<u8>>>>,
    asks: Arc<AtomicUsize>,
    errors: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl StandIn {
    fn start(stdout: ChildStdout, stdin: ChildStdin, reply: Reply) -> StandIn {
        let writer = Arc::new(Mutex::new(Some(stdin)));
        let holding = Arc::new(AtomicBool::new(false));
        let held = Arc::new(Mutex::new(Vec::new()));
        let asks = Arc::new(AtomicUsize::new(0));
        let errors = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (writer, holding, held, asks, errors) = (
                writer.clone(),
                holding.clone(),
                held.clone(),
                asks.clone(),
                errors.clone(),
            );
            thread::spawn(move || {
                let mut reader = BufReader::new(stdout);
                while let Ok(Some(frame)) = read_frame(&mut reader) {
                    // Parse every frame in both paths, as the extension does (JSON.parse).
                    let Ok(value) = serde_json::from_slice::<Value>(&frame) else {
                        errors.fetch_add(1, Ordering::SeqCst);
                        continue;
                    };
                    let answer = match &reply {
                        Reply::Fixed(bytes) => bytes.clone(),
                        Reply::Mcp {
                            initialize,
                            tool_call,
                        } => match (value["method"].as_str(), value.get("id")) {
                            (_, None) => continue,
                            (Some("initialize"), Some(id)) => initialize.with_id(id),
                            (Some("tools/call"), Some(id)) => tool_call.with_id(id),
                            (_, Some(id)) => {
                                // Answered with an error, so the client fails at once
                                // rather than waiting.
                                eprintln!("unexpected request to the floor: {value}");
                                errors.fetch_add(1, Ordering::SeqCst);
                                let mut line = serde_json::to_vec(&json!({
                                    "jsonrpc": "2.0", "id": id,
                                    "error": {"code": -32601, "message": "not in the floor"}
                                }))
                                .unwrap_or_default();
                                line.push(b'\n');
                                line
                            }
                        },
                        Reply::Extension => match value["type"].as_str() {
                            Some("hello") => serde_json::to_vec(&json!({
                                "type": "ready", "protocol": 1,
                                "extension": {"id": him::EXTENSION_ID, "version": "0.0.0-bench"}
                            }))
                            .unwrap_or_default(),
                            Some("ask") => serde_json::to_vec(&json!({
                                "type": "answer", "id": value["id"], "action": "submit",
                                "values": {"confirmed": true}
                            }))
                            .unwrap_or_default(),
                            Some("error") => {
                                eprintln!("host error to the stand-in: {value}");
                                errors.fetch_add(1, Ordering::SeqCst);
                                continue;
                            }
                            _ => continue,
                        },
                    };
                    let is_ask = !matches!(reply, Reply::Extension) || value["type"] == "ask";
                    if is_ask {
                        if holding.load(Ordering::SeqCst) {
                            let mut held = held.lock().unwrap_or_else(|p| p.into_inner());
                            held.push(answer);
                            asks.fetch_add(1, Ordering::SeqCst);
                            continue;
                        }
                        asks.fetch_add(1, Ordering::SeqCst);
                    }
                    let mut w = writer.lock().unwrap_or_else(|p| p.into_inner());
                    let Some(w) = w.as_mut() else { return };
                    if write_frame(w, &answer).is_err() {
                        return;
                    }
                }
            })
        };
        StandIn {
            writer,
            holding,
            held,
            asks,
            errors,
            thread: Some(thread),
        }
    }

    /// Holds answers back (true) or sends every held answer now (false).
    fn hold(&self, on: bool) {
        self.holding.store(on, Ordering::SeqCst);
        if !on {
            self.release(usize::MAX);
        }
    }

    /// Sends up to `n` held answers, oldest first, in one write.
    fn release(&self, n: usize) {
        let held: Vec<Vec<u8>> = {
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            let n = n.min(held.len());
            held.drain(..n).collect()
        };
        let mut batch = Vec::new();
        for answer in held {
            batch.extend_from_slice(&(answer.len() as u32).to_ne_bytes());
            batch.extend_from_slice(&answer);
        }
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(w) = w.as_mut() {
            let _ = w.write_all(&batch);
            let _ = w.flush();
        }
    }
}

struct HimHost {
    child: Child,
    stand_in: StandIn,
}

impl HimHost {
    fn start(dir: &Path) -> Result<HimHost, BoxError> {
        let mut child = him_command(dir)
            .arg(origin())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stand_in = StandIn::start(stdout, stdin, Reply::Extension);
        let socket = him::wire::runtime::socket_path(dir, child.id());
        wait_for(&socket)?;
        Ok(HimHost { child, stand_in })
    }

    /// The browser closes the port: the host exits on stdin EOF.
    fn close(mut self) {
        close_stand_in(&mut self.stand_in);
        let _ = self.child.wait();
    }
}

/// Closes the stand-in's side of the pipe (the browser closing the port) and waits for its
/// reader to see the other end go.
fn close_stand_in(stand_in: &mut StandIn) {
    drop(
        stand_in
            .writer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(),
    );
    if let Some(thread) = stand_in.thread.take() {
        let _ = thread.join();
    }
}

fn wait_for(socket: &Path) -> Result<(), BoxError> {
    let give_up = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        if Instant::now() > give_up {
            return Err(format!("{} never appeared", socket.display()).into());
        }
        thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// A client that writes JSON-RPC lines and reads one line back per request.
struct LineClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl LineClient {
    fn spawn(command: &mut Command) -> Result<LineClient, BoxError> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(LineClient {
            child,
            stdin,
            stdout,
        })
    }

    fn him_serve(dir: &Path) -> Result<LineClient, BoxError> {
        LineClient::spawn(him_command(dir).arg("serve"))
    }

    fn initialize(&mut self) -> Result<Vec<u8>, BoxError> {
        let response = self.request(&initialize_line())?;
        self.stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
        self.stdin.flush()?;
        Ok(response)
    }

    fn request(&mut self, line: &[u8]) -> io::Result<Vec<u8>> {
        self.stdin.write_all(line)?;
        self.stdin.flush()?;
        let mut response = Vec::with_capacity(2048);
        if self.stdout.read_until(b'\n', &mut response)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server closed",
            ));
        }
        Ok(response)
    }

    fn close(self) {
        let LineClient {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let _ = child.wait();
    }
}

/// Relay B (where the host sits) with the stand-in on its stdio; relay A connects to its
/// socket.
struct FloorRelays {
    relay_b: Child,
    stand_in: StandIn,
}

impl FloorRelays {
    fn start(socket: &Path, reply: Reply) -> Result<FloorRelays, BoxError> {
        let mut relay_b = role_command("floor-host")
            .env(SOCKET, socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = relay_b.stdout.take().ok_or("no stdout")?;
        let stdin = relay_b.stdin.take().ok_or("no stdin")?;
        let stand_in = StandIn::start(stdout, stdin, reply);
        wait_for(socket)?;
        Ok(FloorRelays { relay_b, stand_in })
    }

    /// After relay A has gone (its client closed it), relay B exits and the stand-in's reader
    /// sees the end.
    fn close(self) {
        let FloorRelays {
            mut relay_b,
            mut stand_in,
        } = self;
        close_stand_in(&mut stand_in);
        let _ = relay_b.wait();
    }
}

// ---------------------------------------------------------------------------------------
// Helper roles (this binary, re-executed)

/// Relay A, where `him serve` sits: stdin lines → socket frames; socket frames → stdout.
/// Frames from the socket already end in a newline (the stand-in sends whole lines).
fn floor_agent() -> Result<(), BoxError> {
    let socket = std::env::var_os(SOCKET).ok_or("no socket")?;
    let give_up = Instant::now() + Duration::from_secs(10);
    let stream = loop {
        match UnixStream::connect(&socket) {
            Ok(stream) => break stream,
            Err(_) if Instant::now() < give_up => thread::sleep(Duration::from_millis(1)),
            Err(err) => return Err(err.into()),
        }
    };
    let mut to_socket = stream.try_clone()?;
    thread::spawn(move || {
        let mut stdin = io::stdin().lock();
        let mut line = Vec::with_capacity(4096);
        loop {
            line.clear();
            match stdin.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => std::process::exit(0),
                Ok(_) => {
                    if write_frame(&mut to_socket, &line).is_err() {
                        std::process::exit(0);
                    }
                }
            }
        }
    });
    let mut from_socket = BufReader::new(stream);
    let mut stdout = io::stdout().lock();
    while let Some(frame) = read_frame(&mut from_socket)? {
        stdout.write_all(&frame)?;
        stdout.flush()?;
    }
    Ok(())
}

/// Relay B, where the native host sits: socket frames → stdout; stdin frames → socket.
fn floor_host() -> Result<(), BoxError> {
    let socket = PathBuf::from(std::env::var_os(SOCKET).ok_or("no socket")?);
    let listener = UnixListener::bind(&socket)?;
    let (stream, _) = listener.accept()?;
    let mut to_socket = stream.try_clone()?;
    let cleanup = socket.clone();
    thread::spawn(move || {
        let mut stdin = BufReader::new(io::stdin().lock());
        while let Ok(Some(frame)) = read_frame(&mut stdin) {
            if write_frame(&mut to_socket, &frame).is_err() {
                break;
            }
        }
        let _ = std::fs::remove_file(&cleanup);
        std::process::exit(0);
    });
    let mut from_socket = BufReader::new(stream);
    let mut stdout = io::stdout().lock();
    while let Some(frame) = read_frame(&mut from_socket)? {
        write_frame(&mut stdout, &frame)?;
    }
    Ok(())
}

/// A trivial Rust binary that answers `initialize` with a canned line, then idles until
/// stdin closes: the baseline for `him serve` start-up and idle memory.
fn trivial_init() -> Result<(), BoxError> {
    let mut stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        if stdin.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if line.windows(12).any(|w| w == b"\"initialize\"") {
            stdout.write_all(
                b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\",\
                  \"capabilities\":{},\"serverInfo\":{\"name\":\"trivial\",\"version\":\"0\"}}}\n",
            )?;
            stdout.flush()?;
        }
    }
}

/// A trivial Rust binary that listens where a host would, then idles until stdin closes:
/// the baseline for host start-up.
fn trivial_listen() -> Result<(), BoxError> {
    let dir = PathBuf::from(std::env::var_os("HIM_RUNTIME_DIR").ok_or("no runtime dir")?);
    let socket = him::wire::runtime::socket_path(&dir, std::process::id());
    let listener = UnixListener::bind(&socket)?;
    let mut sink = Vec::new();
    let _ = io::stdin().lock().read_to_end(&mut sink);
    drop(listener);
    let _ = std::fs::remove_file(&socket);
    Ok(())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let cores = thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "Machine: {cores} cores, {cpu}, Linux {}; load average at start {}.\n",
        kernel.trim(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    )
}
