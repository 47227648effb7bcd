//! Scale: 1,000 questions pending at once, from 20 agents (`him serve` processes under
//! rmcp's client) through 2 hosts. Every question reaches both browsers once, is answered
//! once, and its answer goes back to the agent that asked it and to no other; the browser
//! that did not answer has it withdrawn once. Counts, not clocks: how long this takes is
//! measured by `cargo bench` (BENCHMARKS.md), never asserted here.

mod support;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::{Value, json};
use support::load::*;
use support::*;

const AGENTS: usize = 20;
const PER_AGENT: usize = 50;
const TOTAL: usize = AGENTS * PER_AGENT;
/// Far above what a host needs for 1,000 questions (a few MiB); catches a leak or a copy
/// per question per agent, not a few allocations.
const RSS_BOUND_KIB: u64 = 64 * 1024;

fn question(agent: usize, n: usize) -> String {
    format!("agent-{agent:02} q-{n:02}")
}

/// The browser that answers a question; the other one must see it withdrawn.
fn answerer(title: &str) -> usize {
    title.bytes().map(usize::from).sum::<usize>() % 2
}

fn reply(title: &str) -> String {
    format!("reply to {title}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_questions_from_twenty_agents_through_two_hosts_each_come_back_to_their_asker() {
    let runtime = runtime_dir();
    let mut browsers = vec![
        Browser::start(runtime.path()).await,
        Browser::start(runtime.path()).await,
    ];
    let mut agents = Vec::new();
    for a in 0..AGENTS {
        agents.push(AgentProcess::start(runtime.path(), &format!("agent-{a:02}"), &[]).await);
    }

    // Everyone asks at once; nobody is answered until every question is pending everywhere.
    let mut calls = Vec::new();
    for (a, agent) in agents.iter().enumerate() {
        for n in 0..PER_AGENT {
            let client = agent.client.clone();
            calls.push(tokio::spawn(async move {
                let result = call(
                    &client,
                    "ask_text",
                    json!({"question": question(a, n), "timeout_ms": 120_000}),
                )
                .await;
                (a, n, result)
            }));
        }
    }

    // Each browser sees each question exactly once, labelled with the agent that asked it.
    let mut ids_by_title: Vec<HashMap<String, Value>> = Vec::new();
    for (b, browser) in browsers.iter_mut().enumerate() {
        let mut seen: HashMap<String, Value> = HashMap::new();
        while seen.len() < TOTAL {
            let frame = tokio::time::timeout(PATIENCE, browser.frames.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!("browser {b} has only {} of {TOTAL} questions", seen.len())
                })
                .expect("host closed its stdout");
            assert_eq!(frame["type"], "ask", "before any answer: {frame}");
            let title = frame["form"]["title"].as_str().expect("title").to_owned();
            let agent = frame["agent"]["name"].as_str().expect("agent name");
            assert!(title.starts_with(agent), "{title} labelled as {agent}");
            assert!(
                seen.insert(title.clone(), frame["id"].clone()).is_none(),
                "{title} reached one browser twice"
            );
        }
        ids_by_title.push(seen);
    }
    assert_eq!(
        ids_by_title[0], ids_by_title[1],
        "both browsers got the same ids"
    );
    let distinct: HashSet<&Value> = ids_by_title[0].values().collect();
    assert_eq!(distinct.len(), TOTAL, "question ids are unique");

    // Memory with all 1,000 pending.
    for browser in &browsers {
        let rss = rss_kib(browser.pid);
        assert!(
            rss < RSS_BOUND_KIB,
            "host holds {rss} KiB with {TOTAL} pending"
        );
    }
    for agent in &agents {
        let rss = rss_kib(agent.pid);
        assert!(rss < RSS_BOUND_KIB, "him serve holds {rss} KiB");
    }

    // Each browser answers its share.
    let ids = ids_by_title[0].clone();
    let mut mine = [Vec::new(), Vec::new()];
    for (title, id) in &ids {
        mine[answerer(title)].push((title.clone(), id.clone()));
    }
    for (b, browser) in browsers.iter().enumerate() {
        for (title, id) in &mine[b] {
            assert!(browser.sender.answer_text(id, &reply(title)).await);
        }
    }

    // Every call returns its own answer, under the id the browsers saw for it.
    for call in calls {
        let (a, n, result) = call.await.expect("call task");
        let title = question(a, n);
        assert_eq!(result["status"], "answered", "{title}: {result}");
        assert_eq!(
            result["answer"],
            reply(&title),
            "{title} got another's answer"
        );
        assert_eq!(result["question_id"], ids[&title], "{title}: id");
    }

    // The browser that did not answer a question has it withdrawn, once; nothing else
    // arrives (no re-sent asks, no errors).
    for (b, browser) in browsers.iter_mut().enumerate() {
        let expected: HashSet<&Value> = mine[1 - b].iter().map(|(_, id)| id).collect();
        let mut withdrawn = HashSet::new();
        while withdrawn.len() < expected.len() {
            let frame = browser.recv().await;
            assert_eq!(frame["type"], "withdraw", "browser {b}: {frame}");
            assert_eq!(frame["reason"], "answered", "browser {b}: {frame}");
            assert!(
                expected.contains(&frame["id"]),
                "browser {b}: withdraw of a question it answered or never had: {frame}"
            );
            assert!(
                withdrawn.insert(frame["id"].clone()),
                "browser {b}: withdrawn twice: {frame}"
            );
        }
        let extra = tokio::time::timeout(Duration::from_millis(300), browser.frames.recv()).await;
        assert!(extra.is_err(), "browser {b}: unexpected frame {extra:?}");
    }

    for agent in agents {
        agent.kill().await;
    }
    for browser in browsers {
        assert!(browser.disconnect().await.success());
    }
}
