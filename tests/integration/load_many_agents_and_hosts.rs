//! Scale: 1,000 questions pending at once, from 20 agents (`him serve` processes under
//! rmcp's client) through 2 hosts. Every question reaches both browsers once, is answered
//! once, and its answer goes back to the agent that asked it and to no other; the browser
//! that did not answer has it withdrawn once. Counts, not clocks: how long this takes is
//! measured by `cargo bench` (BENCHMARKS.md), never asserted here.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::support::load::*;
use crate::support::*;
use serde_json::{Value, json};

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
        FakeExtension::start_quiet(runtime.path()).await,
        FakeExtension::start_quiet(runtime.path()).await,
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

/// A question id for a raw agent's question `n` (128 bits of hex, as the protocol asks).
fn raw_id(agent: u8, n: usize) -> String {
    format!("{agent:02x}{n:030x}")
}

/// An agent speaking §3 itself on a host's socket, as a program that skips `him serve`
/// could: it said hello as `name` and got its welcome.
fn raw_agent(socket: &std::path::Path, name: &str) -> std::os::unix::net::UnixStream {
    let mut stream = std::os::unix::net::UnixStream::connect(socket).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let hello = json!({"type": "hello", "protocol": 1, "agent": {"name": name}, "pid": 1});
    him::wire::frame::write_frame_sync(&mut stream, &serde_json::to_vec(&hello).expect("json"))
        .expect("hello");
    assert_eq!(read_raw(&mut stream)["type"], "welcome");
    stream
}

fn read_raw(stream: &mut std::os::unix::net::UnixStream) -> Value {
    let frame = him::wire::frame::read_frame_sync(stream, him::wire::frame::MAX_INBOUND)
        .expect("read")
        .expect("a frame, not EOF");
    serde_json::from_slice(&frame).expect("json")
}

fn raw_ask(stream: &mut std::os::unix::net::UnixStream, id: &str, form: Value) {
    let ask =
        json!({"type": "ask", "id": id, "form": form, "timeout_ms": 120_000, "asked_at_ms": 0});
    him::wire::frame::write_frame_sync(stream, &serde_json::to_vec(&ask).expect("json"))
        .expect("ask");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_past_its_64_waiting_questions_or_4_mib_is_refused_by_name_and_others_still_get_through()
 {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let socket = ext.socket.clone();

    // One agent asks 65 questions, nobody answering: the 65th is refused, naming the limit.
    let runaway = tokio::task::spawn_blocking(move || {
        let mut raw = raw_agent(&socket, "runaway");
        for n in 0..=64 {
            let form = json!({"title": format!("runaway {n}"),
                              "fields": [{"name": "a", "type": "text", "label": "A"}]});
            raw_ask(&mut raw, &raw_id(1, n), form);
        }
        // Nothing else comes to it before: the browser has said nothing of the others.
        let reply = read_raw(&mut raw);
        (raw, reply)
    });
    for n in 0..64 {
        let ask = ext.recv_type("ask").await;
        assert_eq!(ask["form"]["title"], format!("runaway {n}"));
    }
    let (_runaway, refusal) = runaway.await.expect("runaway agent");
    assert_eq!(refusal["type"], "error", "{refusal}");
    assert_eq!(refusal["id"], raw_id(1, 64));
    let message = refusal["message"].as_str().expect("message");
    assert!(message.contains("64 questions"), "{message}");

    // Another agent, through him serve, is not held up: its question is the next to reach
    // the browser (so the runaway's 65th never did), and its answer comes back.
    let (agent, _) = start_agent(runtime.path(), "bystander", &[]).await;
    let bystander =
        tokio::spawn(
            async move { call(&agent, "ask_text", json!({"question": "Still heard?"})).await },
        );
    let ask = ext.recv_type("ask").await;
    assert_eq!(ask["form"]["title"], "Still heard?");
    ext.submit(&ask["id"], json!({"answer": "yes"})).await;
    assert_eq!(bystander.await.expect("call")["answer"], "yes");

    // By size: about 1 MB each (as many fields as a form may have, each with a long label),
    // the fifth goes past 4 MiB waiting.
    let socket = ext.socket.clone();
    let large = tokio::task::spawn_blocking(move || {
        let mut raw = raw_agent(&socket, "large");
        let fields: Vec<Value> = (0..him::form::MAX_FIELDS)
            .map(|i| json!({"name": format!("f{i}"), "type": "text", "label": "x".repeat(15_600)}))
            .collect();
        for n in 0..5 {
            raw_ask(
                &mut raw,
                &raw_id(2, n),
                json!({"title": format!("large {n}"), "fields": fields}),
            );
        }
        read_raw(&mut raw)
    });
    for n in 0..4 {
        assert_eq!(
            ext.recv_type("ask").await["form"]["title"],
            format!("large {n}")
        );
    }
    let refusal = large.await.expect("large agent");
    assert_eq!(
        (refusal["type"].as_str(), refusal["id"].as_str()),
        (Some("error"), Some(raw_id(2, 4).as_str()))
    );
    let message = refusal["message"].as_str().expect("message");
    assert!(message.contains("4 MiB"), "{message}");
    host_still_works(&mut ext, runtime.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ask_tool_past_the_limit_returns_status_error_naming_it_not_a_wait() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let agent = AgentProcess::start(runtime.path(), "busy", &[]).await;
    let mut calls = Vec::new();
    for n in 0..65 {
        let client = agent.client.clone();
        calls.push(tokio::spawn(async move {
            call(
                &client,
                "ask_text",
                json!({"question": format!("busy {n}"), "timeout_ms": 120_000}),
            )
            .await
        }));
    }
    let mut shown = Vec::new();
    for _ in 0..64 {
        shown.push(ext.recv_type("ask").await);
    }
    // The call the host refused returns on its own, while the other 64 still wait.
    let (done, _, waiting) = futures::future::select_all(calls).await;
    let result = done.expect("call task");
    assert_complete(&result);
    assert_eq!(result["status"], "error", "{result}");
    let message = result["message"].as_str().expect("message");
    assert!(message.contains("64 questions waiting"), "{message}");
    assert!(
        result["next_step"]
            .as_str()
            .expect("next_step")
            .contains("wait"),
        "{result}"
    );
    // Each of the others is answered in turn.
    for ask in &shown {
        let title = ask["form"]["title"].as_str().expect("title").to_owned();
        ext.submit(&ask["id"], json!({"answer": format!("re {title}")}))
            .await;
    }
    for call in waiting {
        let result = call.await.expect("call task");
        assert_eq!(result["status"], "answered", "{result}");
        assert_eq!(
            result["answer"],
            format!("re {}", result["question"].as_str().expect("question"))
        );
    }
    agent.kill().await;
}
