//! A question to the phone over Matrix, against a plain message, in one run on one homeserver
//! (`cargo bench --bench matrix`; BENCHMARKS.md, "Answering from the phone"):
//!
//! ```text
//! question: rmcp client ─► him serve ─► Matrix bridge ─► Synapse ─► phone (matrix-js-sdk)
//! plain:    second matrix-js-sdk client ─────────────────► Synapse ─► the same phone
//! ```
//!
//! Each round times a question asked (the tool call sent) until the phone has its decrypted
//! event, then a plain message sent by a second client until the same phone has it; rounds
//! interleave, so both see the same homeserver and machine. The figure is their ratio.
//!
//! Needs the test Synapse and the phone's Node packages (as the Matrix tests do: `.ci/run`
//! installs them); without them it says so and measures nothing. Run without `--bench` (as
//! `cargo test --benches` does) it does nothing: a homeserver per run is not a smoke test.

// The integration tests' helpers, of which this bench uses a few.
#[allow(dead_code)]
#[path = "../tests/integration/support/mod.rs"]
mod support;

use std::process::ExitCode;

use serde_json::json;
use support::call;
use support::matrix::{Phone, Synapse, set_up, unique};

const ROUNDS: usize = 20;
const WARMUP: usize = 3;

fn main() -> ExitCode {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("matrix bench: measured only under `cargo bench --bench matrix`");
        return ExitCode::SUCCESS;
    }
    if support::matrix::phone_available().is_none() {
        return ExitCode::SUCCESS;
    }
    let Some(server) = support::matrix::synapse() else {
        return ExitCode::SUCCESS;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("matrix bench: {err}");
            return ExitCode::FAILURE;
        }
    };
    let report = runtime.block_on(measure(server));
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{report}");
    ExitCode::SUCCESS
}

async fn measure(server: &Synapse) -> String {
    // The machine is shared: the load at the start goes with the figures.
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into());
    let mut s = set_up(server, None).await;
    let mut other = Phone::start().await;
    let other_name = unique("other");
    let other_id = other.register(server, &other_name, "other-password").await;
    other.login(server, &other_name, "other-password").await;
    s.phone
        .cmd(json!({"cmd": "invite", "room": s.room, "user": other_id}))
        .await;
    other.event("joined", |e| e["event"] == "joined").await;
    let agent = s.agent("bench-agent").await;
    let (mut question_ms, mut plain_ms) = (Vec::new(), Vec::new());
    // The first rounds warm up: the bridge started, room keys shared both ways.
    for round in 0..WARMUP + ROUNDS {
        let started = std::time::Instant::now();
        let asking = tokio::spawn({
            let agent = agent.clone();
            async move {
                call(
                    &agent,
                    "ask_text",
                    json!({"question": format!("bench {round}")}),
                )
                .await
            }
        });
        let q = s.phone.question(&s.room, &s.bot).await;
        let question = started.elapsed().as_secs_f64() * 1000.0;
        s.phone.reply(&s.room, &q["event_id"], "ok").await;
        let result = asking.await.expect("the bench question");
        assert_eq!(result["via"], "matrix", "{result}");

        let text = format!("plain {round}");
        let started = std::time::Instant::now();
        other
            .cmd(json!({"cmd": "send", "room": s.room, "body": text}))
            .await;
        s.phone
            .event("the plain message", |e| {
                e["content"]["body"] == text.as_str()
            })
            .await;
        let plain = started.elapsed().as_secs_f64() * 1000.0;
        if round >= WARMUP {
            question_ms.push(question);
            plain_ms.push(plain);
        }
    }
    drop(agent);
    s.phone.stop().await;
    other.stop().await;
    let (q50, q90) = (
        quantile(&mut question_ms, 0.5),
        quantile(&mut question_ms, 0.9),
    );
    let (m50, m90) = (quantile(&mut plain_ms, 0.5), quantile(&mut plain_ms, 0.9));
    format!(
        "## Answering from the phone (Matrix)\n\n\
         {ROUNDS} rounds after {WARMUP} to warm up, interleaved, one Synapse; load average \
         {load} at the start.\n\n\
         | path | p50 | p90 |\n|---|---|---|\n\
         | question asked → event at the phone | {q50:.0} ms | {q90:.0} ms |\n\
         | plain message sent → at the phone | {m50:.0} ms | {m90:.0} ms |\n\
         | ratio (question / plain) | {:.2} | {:.2} |",
        q50 / m50,
        q90 / m90
    )
}

fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[((values.len() - 1) as f64 * q).round() as usize]
}
