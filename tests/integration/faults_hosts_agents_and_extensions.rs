//! Faults: browsers (hosts) killed and restarted at random while agents keep asking, agents
//! killed mid-question, extensions disconnecting. Every question ends exactly once —
//! answered with its own answer, timed out, or handed back when no browser came back in
//! the grace period — never lost (a call that does not return) and never duplicated (a
//! browser shown it twice, or left showing it after it ended). The survivors are
//! unaffected. Random choices come from a seeded generator: `HIM_TEST_SEED` repeats a run.
//! Counts, not clocks: no duration is asserted.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::load::*;
use crate::support::*;
use serde_json::{Value, json};

const SURVIVORS: usize = 6;
/// Questions each survivor asks, in two lanes at once.
const LANES: usize = 2;
const PER_LANE: usize = 8;
const VICTIMS: usize = 3;
const VICTIM_QUESTIONS: usize = 3;
const GRACE_MS: u64 = 800;

fn reply(title: &str) -> String {
    format!("reply to {title}")
}

/// What one browser (one host process, from start to death) saw.
#[derive(Default)]
struct Seen {
    alive: bool,
    asks: HashMap<String, usize>,
    titles: HashMap<String, String>,
    answered: HashSet<String>,
    refused: HashSet<String>,
    withdrawn: HashMap<String, usize>,
    unexpected: Vec<Value>,
}

impl Seen {
    /// Questions still showing, and questions ended more than once.
    fn open_and_doubled(&self) -> (Vec<String>, Vec<String>) {
        let mut open = Vec::new();
        let mut doubled = Vec::new();
        for id in self.asks.keys() {
            let by_answer = self.answered.contains(id) && !self.refused.contains(id);
            let ends = usize::from(by_answer) + self.withdrawn.get(id).copied().unwrap_or(0);
            match ends {
                0 => open.push(format!("{id} ({})", self.titles[id])),
                1 => {}
                _ => doubled.push(format!("{id} ({})", self.titles[id])),
            }
        }
        (open, doubled)
    }
}

type Ledger = Arc<Mutex<Vec<Seen>>>;

/// Plays the person at one browser: answers most questions after a short random delay,
/// leaves some unanswered (they time out unless another browser answers), and never
/// answers a victim's (so they are pending when the victim is killed).
fn drive(mut browser: FakeExtension, ledger: Ledger, seed: u64) -> (usize, FakeExtension) {
    let index = {
        let mut ledger = ledger.lock().expect("ledger");
        ledger.push(Seen {
            alive: true,
            ..Seen::default()
        });
        ledger.len() - 1
    };
    let sender = browser.sender.clone();
    let mut frames = std::mem::replace(
        &mut browser.frames,
        tokio::sync::mpsc::unbounded_channel().1,
    );
    tokio::spawn(async move {
        let mut rng = Rng::new(seed);
        while let Some(frame) = frames.recv().await {
            let id = frame["id"].as_str().unwrap_or_default().to_owned();
            let mut ledger = ledger.lock().expect("ledger");
            let seen = &mut ledger[index];
            match frame["type"].as_str() {
                Some("ask") => {
                    let title = frame["form"]["title"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    *seen.asks.entry(id.clone()).or_default() += 1;
                    seen.titles.insert(id.clone(), title.clone());
                    if title.starts_with("victim") || !rng.chance(0.75) {
                        continue;
                    }
                    seen.answered.insert(id.clone());
                    let delay = Duration::from_millis(rng.range(0, 300));
                    let sender = sender.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(delay).await;
                        sender.answer_text(&json!(id), &reply(&title)).await;
                    });
                }
                Some("withdraw") => *seen.withdrawn.entry(id).or_default() += 1,
                // A late answer to a question withdrawn meanwhile: the host says so.
                Some("error") if seen.answered.contains(&id) => {
                    seen.refused.insert(id);
                }
                _ => seen.unexpected.push(frame),
            }
        }
    });
    (index, browser)
}

struct Chaos {
    kills: AtomicUsize,
    disconnects: AtomicUsize,
    starts: AtomicUsize,
    stop: AtomicBool,
    /// Asked to hold still; `holding` once it does, with a browser up.
    paused: AtomicBool,
    holding: AtomicBool,
}

/// Kills, disconnects and restarts browsers at random until told to stop; at most two at
/// once, sometimes none.
async fn chaos(
    runtime: &Path,
    ledger: Ledger,
    seed: u64,
    stats: Arc<Chaos>,
) -> Vec<(usize, FakeExtension)> {
    let mut rng = Rng::new(seed);
    let mut live: Vec<(usize, FakeExtension)> = Vec::new();
    for _ in 0..2 {
        live.push(drive(
            FakeExtension::start_quiet(runtime).await,
            ledger.clone(),
            rng.next_u64(),
        ));
        stats.starts.fetch_add(1, Ordering::SeqCst);
    }
    let mut step = 0;
    while !stats.stop.load(Ordering::SeqCst) {
        if stats.paused.load(Ordering::SeqCst) {
            if live.is_empty() {
                live.push(drive(
                    FakeExtension::start_quiet(runtime).await,
                    ledger.clone(),
                    rng.next_u64(),
                ));
                stats.starts.fetch_add(1, Ordering::SeqCst);
            }
            stats.holding.store(true, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        stats.holding.store(false, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(rng.range(150, 600))).await;
        step += 1;
        // The first two steps are a kill and a disconnect, so every seed has both.
        let action = match step {
            1 => 0,
            2 => 4,
            _ => rng.range(0, 10),
        };
        if action < 4 && !live.is_empty() {
            let (index, browser) = live.remove(rng.range(0, live.len() as u64) as usize);
            ledger.lock().expect("ledger")[index].alive = false;
            browser.kill().await;
            stats.kills.fetch_add(1, Ordering::SeqCst);
        } else if action < 6 && !live.is_empty() {
            let (index, browser) = live.remove(rng.range(0, live.len() as u64) as usize);
            ledger.lock().expect("ledger")[index].alive = false;
            assert!(browser.disconnect().await.success(), "host exit status");
            stats.disconnects.fetch_add(1, Ordering::SeqCst);
        } else if live.len() < 2 {
            live.push(drive(
                FakeExtension::start_quiet(runtime).await,
                ledger.clone(),
                rng.next_u64(),
            ));
            stats.starts.fetch_add(1, Ordering::SeqCst);
        }
    }
    if live.is_empty() {
        live.push(drive(
            FakeExtension::start_quiet(runtime).await,
            ledger.clone(),
            rng.next_u64(),
        ));
    }
    live
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_question_ends_exactly_once_while_browsers_and_agents_come_and_go() {
    let seed = seed(0x6869_6d21);
    let mut rng = Rng::new(seed);
    let runtime = runtime_dir();
    let ledger: Ledger = Arc::default();
    let grace = GRACE_MS.to_string();
    let env = [("HIM_RECONNECT_GRACE_MS", grace.as_str())];

    let stats = Arc::new(Chaos {
        kills: AtomicUsize::new(0),
        disconnects: AtomicUsize::new(0),
        starts: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        paused: AtomicBool::new(false),
        holding: AtomicBool::new(false),
    });
    let chaos_task = {
        let (runtime, ledger, stats) = (runtime.path().to_owned(), ledger.clone(), stats.clone());
        let chaos_seed = rng.next_u64();
        tokio::spawn(async move { chaos(&runtime, ledger, chaos_seed, stats).await })
    };
    eventually("a browser", || !sockets(runtime.path()).is_empty()).await;

    // Survivors keep asking; each call must return by its deadline plus the grace, with
    // its own answer if it was answered.
    let mut survivors = Vec::new();
    let mut lanes = Vec::new();
    for s in 0..SURVIVORS {
        let agent = AgentProcess::start(runtime.path(), &format!("survivor-{s}"), &env).await;
        for lane in 0..LANES {
            let client = agent.client.clone();
            let mut rng = Rng::new(rng.next_u64());
            lanes.push(tokio::spawn(async move {
                let mut outcomes = Vec::new();
                for n in 0..PER_LANE {
                    let title = format!("survivor-{s} lane-{lane} q-{n}");
                    let timeout_ms = rng.range(1000, 2000);
                    let limit = Duration::from_millis(timeout_ms + GRACE_MS) + PATIENCE;
                    let result = tokio::time::timeout(
                        limit,
                        call(
                            &client,
                            "ask_text",
                            json!({"question": title, "timeout_ms": timeout_ms}),
                        ),
                    )
                    .await
                    .unwrap_or_else(|_| panic!("{title} was lost: no result within {limit:?}"));
                    let status = result["status"].as_str().unwrap_or_default().to_owned();
                    match status.as_str() {
                        "answered" => {
                            assert_eq!(result["answer"], reply(&title), "{title}: {result}")
                        }
                        "timeout" | "needs_user_input" => {}
                        other => panic!("{title} ended as {other}: {result}"),
                    }
                    outcomes.push((
                        result["question_id"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        status,
                    ));
                }
                outcomes
            }));
        }
        survivors.push(agent);
    }

    // Victims ask, and are killed once a browser shows their questions.
    let mut victim_calls = Vec::new();
    let mut victims_withdrawn = 0;
    for v in 0..VICTIMS {
        tokio::time::sleep(Duration::from_millis(rng.range(100, 800))).await;
        // Hold the chaos still (with a browser up) while a victim is shown, killed, and
        // its questions withdrawn, so the withdrawal is seen, not lost with its browser.
        stats.paused.store(true, Ordering::SeqCst);
        let still = || stats.holding.load(Ordering::SeqCst);
        eventually("the chaos to hold still", still).await;
        let victim = AgentProcess::start(runtime.path(), &format!("victim-{v}"), &env).await;
        for n in 0..VICTIM_QUESTIONS {
            let client = victim.client.clone();
            victim_calls.push(tokio::spawn(async move {
                let args = json!({"question": format!("victim-{v} q-{n}"), "timeout_ms": 60_000});
                client.call_tool(params("ask_text", args)).await
            }));
        }
        let prefix = format!("victim-{v} ");
        let shown = |ledger: &Ledger| {
            ledger.lock().expect("ledger").iter().any(|seen| {
                seen.alive
                    && seen
                        .titles
                        .values()
                        .filter(|t| t.starts_with(&prefix))
                        .count()
                        == VICTIM_QUESTIONS
            })
        };
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !shown(&ledger) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            shown(&ledger),
            "victim-{v}'s questions never reached a browser"
        );
        victim.kill().await;
        // Its questions leave every panel that still shows them.
        let gone = tokio::time::Instant::now() + PATIENCE;
        loop {
            let showing: Vec<String> = ledger
                .lock()
                .unwrap()
                .iter()
                .filter(|seen| seen.alive)
                .flat_map(|seen| {
                    seen.titles
                        .iter()
                        .filter(|(id, t)| {
                            t.starts_with(&prefix) && !seen.withdrawn.contains_key(*id)
                        })
                        .map(|(_, t)| t.clone())
                        .collect::<Vec<_>>()
                })
                .collect();
            if showing.is_empty() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < gone,
                "killed agent's questions still shown: {showing:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        victims_withdrawn += 1;
        stats.paused.store(false, Ordering::SeqCst);
        eventually("the chaos to resume", || {
            !stats.holding.load(Ordering::SeqCst)
        })
        .await;
    }
    assert_eq!(victims_withdrawn, VICTIMS);
    for call in victim_calls {
        let ended = tokio::time::timeout(PATIENCE, call).await;
        assert!(
            ended.is_ok(),
            "a killed agent's call never returned to its client"
        );
    }

    let mut outcomes: HashMap<String, usize> = HashMap::new();
    let mut ids = HashSet::new();
    for lane in lanes {
        for (id, status) in lane.await.expect("lane") {
            assert!(ids.insert(id.clone()), "question id {id} reused");
            *outcomes.entry(status).or_default() += 1;
        }
    }
    stats.stop.store(true, Ordering::SeqCst);
    let live = chaos_task.await.expect("chaos");

    // Every browser still alive shows nothing that has ended, and ended nothing twice.
    let settled = tokio::time::Instant::now() + PATIENCE;
    loop {
        let report = {
            let ledger = ledger.lock().expect("ledger");
            let mut report = Vec::new();
            for (i, seen) in ledger.iter().enumerate() {
                let doubled_asks: Vec<_> = seen.asks.iter().filter(|(_, n)| **n > 1).collect();
                assert!(
                    doubled_asks.is_empty(),
                    "browser {i} shown a question twice: {doubled_asks:?}"
                );
                assert!(
                    seen.unexpected.is_empty(),
                    "browser {i} got {:?}",
                    seen.unexpected
                );
                if seen.alive {
                    let (open, doubled) = seen.open_and_doubled();
                    // Not at once: an answer the person chose just before the question
                    // was withdrawn is still on its way, and counts as an end until the
                    // host refuses it. Only a double end that stays is one.
                    if !doubled.is_empty() {
                        report.push(format!("browser {i} saw questions end twice: {doubled:?}"));
                    }
                    if !open.is_empty() {
                        report.push(format!("browser {i} still shows {open:?}"));
                    }
                }
            }
            report
        };
        if report.is_empty() {
            break;
        }
        assert!(tokio::time::Instant::now() < settled, "{report:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let total: usize = outcomes.values().sum();
    assert_eq!(
        total,
        SURVIVORS * LANES * PER_LANE,
        "every survivor question ended"
    );
    assert!(
        outcomes.get("answered").copied().unwrap_or(0) > 0,
        "{outcomes:?}"
    );
    assert!(
        stats.kills.load(Ordering::SeqCst) >= 1 && stats.disconnects.load(Ordering::SeqCst) >= 1
    );
    eprintln!(
        "outcomes {outcomes:?}; browsers started {}, killed {}, disconnected {}",
        stats.starts.load(Ordering::SeqCst),
        stats.kills.load(Ordering::SeqCst),
        stats.disconnects.load(Ordering::SeqCst)
    );

    for agent in survivors {
        agent.kill().await;
    }
    for (_, browser) in live {
        browser.disconnect().await;
    }
}
