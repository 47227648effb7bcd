//! Answering from the phone: a real Synapse, the person's phone played by matrix-js-sdk with
//! its Rust crypto in an encrypted room, the real `him` binary set up with `him matrix login`
//! and `him matrix room`, and an agent (rmcp's client running `him serve`) that asks. The
//! bridge is started by `him serve` itself, on demand.
//!
//! Each test has its own users, room, state and runtime directories; one Synapse serves the
//! whole file (`support::matrix`). Skipped with a message when Synapse or the phone's packages
//! are missing, except under `HIM_E2E=1`.

use std::path::Path;
use std::sync::Arc;

use crate::support;
use crate::support::matrix::{
    Phone, Setup, Synapse, him_matrix, phone_available, private_dir, set_up, synapse, unique,
};
use crate::support::{Agent, FakeExtension, call};
use serde_json::{Value, json};

/// `tool` called with `args` by `agent`, in a task of its own: the person answers meanwhile.
fn call_meanwhile(
    agent: &Arc<Agent>,
    tool: &'static str,
    args: Value,
) -> tokio::task::JoinHandle<Value> {
    let agent = agent.clone();
    tokio::spawn(async move { call(&agent, tool, args).await })
}

/// The homeserver, the phone and the bridge, and this suite's turn among the heavy ones
/// (held for the test: bind it to a name, not `_`).
fn ready() -> Option<(&'static Synapse, support::HeavySuite)> {
    let alone = support::heavy_suite("matrix");
    phone_available()?;
    let server = synapse()?;
    support::matrix::bridge_built();
    Some((server, alone))
}

/// The bridge's own unit tests (its package, matrix/, is not `cargo test`'s here): they need
/// no homeserver.
#[test]
fn the_bridges_own_unit_tests_pass() {
    let said = support::matrix::cargo_in_target(&["test", "-p", "him-matrix"]);
    let passed: usize = said
        .lines()
        .filter_map(|line| line.strip_prefix("test result: ok. "))
        .filter_map(|rest| rest.split(' ').next()?.parse::<usize>().ok())
        .sum();
    assert!(passed >= 10, "the bridge's unit tests did not run:\n{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_question_kind_is_answered_from_the_phone_by_poll_or_reply() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let agent = s.agent("phone-test-agent").await;
    let me = s.phone.user_id.clone();

    // ask_text: a message; the answer is a reply to it.
    let asking = call_meanwhile(&agent, "ask_text", json!({"question": "Which *branch*?"}));
    let question = s.phone.question(&s.room, &s.bot).await;
    let body = question["content"]["body"].as_str().expect("body");
    assert!(
        body.contains("phone-test-agent"),
        "the agent is named: {body}"
    );
    assert!(
        body.contains("Which branch?"),
        "Markdown as plain text: {body}"
    );
    assert!(body.contains("left to answer"), "time left is said: {body}");
    s.phone.reply(&s.room, &question["event_id"], "main").await;
    let result = asking.await.expect("ask_text");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "matrix");
    assert_eq!(result["answer"], "main");
    assert_eq!(result["answered_by"], me.as_str());
    // The message now says who answered.
    let edit = s
        .phone
        .event("the edit of the answered question", |e| {
            e["content"]["m.relates_to"]["rel_type"] == "m.replace"
                && e["content"]["m.relates_to"]["event_id"] == question["event_id"]
        })
        .await;
    let edited = edit["content"]["m.new_content"]["body"]
        .as_str()
        .unwrap_or_default();
    assert!(edited.contains(&format!("Answered by {me}")), "{edited}");

    // ask_choice: a poll, answered by a vote.
    let asking = call_meanwhile(
        &agent,
        "ask_choice",
        json!({"question": "Which database?", "options": ["Postgres", "SQLite", "MySQL"]}),
    );
    let poll = s.phone.question(&s.room, &s.bot).await;
    assert_eq!(poll["type"], "org.matrix.msc3381.poll.start");
    let start = &poll["content"]["org.matrix.msc3381.poll.start"];
    assert_eq!(start["max_selections"], 1);
    assert_eq!(start["answers"][1]["org.matrix.msc1767.text"], "SQLite");
    s.phone.vote(&s.room, &poll["event_id"], &["2"]).await;
    let result = asking.await.expect("ask_choice");
    assert_eq!(result["via"], "matrix", "{result}");
    assert_eq!(result["answer"], "SQLite");
    assert_eq!(result["answered_by"], me.as_str());
    s.phone
        .event("the poll's end", |e| {
            e["type"] == "org.matrix.msc3381.poll.end"
                && e["content"]["m.relates_to"]["event_id"] == poll["event_id"]
        })
        .await;

    // ask_choice again, answered by a text reply naming the option.
    let asking = call_meanwhile(
        &agent,
        "ask_choice",
        json!({"question": "Which port?", "options": ["8080", "9090"]}),
    );
    let poll = s.phone.question(&s.room, &s.bot).await;
    s.phone.reply(&s.room, &poll["event_id"], "2").await;
    let result = asking.await.expect("ask_choice by reply");
    assert_eq!(result["answer"], "9090", "{result}");

    // ask_confirm: a yes/no poll, answered by a reply.
    let asking = call_meanwhile(&agent, "ask_confirm", json!({"question": "Deploy now?"}));
    let poll = s.phone.question(&s.room, &s.bot).await;
    s.phone.reply(&s.room, &poll["event_id"], "no").await;
    let result = asking.await.expect("ask_confirm");
    assert_eq!(result["confirmed"], false, "{result}");
    assert_eq!(result["via"], "matrix");

    // ask_multi_select: a poll of up to `max` picks; a vote below `min` is answered with the
    // reason and the question stays open.
    let asking = tokio::spawn({
        let agent = agent.clone();
        async move {
            call(&agent, "ask_multi_select", json!({"question": "Which checks?", "options": ["lint", "test", "bench"], "min": 2, "max": 2})).await
        }
    });
    let poll = s.phone.question(&s.room, &s.bot).await;
    assert_eq!(
        poll["content"]["org.matrix.msc3381.poll.start"]["max_selections"],
        2
    );
    s.phone.vote(&s.room, &poll["event_id"], &["1"]).await;
    let told = s
        .phone
        .event("the bot's reply to a vote below min", |e| {
            e["sender"] == s.bot.as_str() && e["content"]["msgtype"] == "m.notice"
        })
        .await;
    assert!(
        told["content"]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("Answer again"),
        "{told}"
    );
    s.phone.vote(&s.room, &poll["event_id"], &["1", "3"]).await;
    let result = asking.await.expect("ask_multi_select");
    assert_eq!(result["selected"], json!(["lint", "bench"]), "{result}");

    // A question longer than a Matrix event holds (65,536 bytes) is posted cut, saying how
    // much is hidden, and is answered all the same.
    let asking = call_meanwhile(&agent, "ask_text", json!({"question": "汉".repeat(16_000)}));
    let question = s.phone.question(&s.room, &s.bot).await;
    let body = question["content"]["body"].as_str().expect("body");
    let tail: String = body
        .chars()
        .skip(body.chars().count().saturating_sub(200))
        .collect();
    assert!(body.contains("more bytes are hidden"), "{tail}");
    assert!(
        body.ends_with("Reply to this message with your answer."),
        "{tail}"
    );
    s.phone.reply(&s.room, &question["event_id"], "long").await;
    assert_eq!(asking.await.expect("long ask_text")["answer"], "long");

    // human_input_status lists Matrix on its own, not as a browser.
    let status = call(&agent, "human_input_status", json!({})).await;
    assert_eq!(status["browsers"], json!([]), "{status}");
    assert_eq!(status["matrix"]["room"], s.room.as_str());
    assert_eq!(status["channel"], "matrix");
    drop(agent);
    s.phone.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_from_someone_not_among_the_answerers_is_ignored() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    // The phone's user is invited but may not answer; a second account may.
    let mut boss = Phone::start().await;
    let boss_name = unique("boss");
    let boss_id = boss.register(server, &boss_name, "boss-password").await;
    let mut s = set_up(server, Some(&boss_id)).await;
    boss.login(server, &boss_name, "boss-password").await;
    let agent = s.agent("answerers-agent").await;
    let asking = call_meanwhile(&agent, "ask_text", json!({"question": "Release name?"}));
    let question = s.phone.question(&s.room, &s.bot).await;
    // Only the answerer's reply counts, though the other's came first.
    s.phone
        .reply(&s.room, &question["event_id"], "from the phone")
        .await;
    // The boss joins (the bot invited only the phone's user): the phone invites them.
    s.phone
        .cmd(json!({"cmd": "invite", "room": s.room, "user": boss_id}))
        .await;
    boss.event("the boss joining", |e| e["event"] == "joined")
        .await;
    boss.reply(&s.room, &question["event_id"], "from the boss")
        .await;
    let result = asking.await.expect("ask_text");
    assert_eq!(result["answer"], "from the boss", "{result}");
    assert_eq!(result["answered_by"], boss_id.as_str());
    drop(agent);
    s.phone.stop().await;
    boss.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn answered_in_the_panel_first_the_message_says_so_and_the_poll_ends() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let mut panel = FakeExtension::start(&s.runtime()).await;
    let agent = s.agent("panel-first-agent").await;
    let asking = call_meanwhile(
        &agent,
        "ask_choice",
        json!({"question": "Ship it?", "options": ["yes", "later"]}),
    );
    let ask = panel.take_ask().await;
    let poll = s.phone.question(&s.room, &s.bot).await;
    panel.submit(&ask["id"], json!({"choice": "later"})).await;
    let result = asking.await.expect("ask_choice");
    assert_eq!(result["via"], "extension", "{result}");
    assert_eq!(result["answer"], "later");
    assert_eq!(result["answered_by"], Value::Null);
    let end = s
        .phone
        .event("the poll's end", |e| {
            e["type"] == "org.matrix.msc3381.poll.end"
                && e["content"]["m.relates_to"]["event_id"] == poll["event_id"]
        })
        .await;
    assert!(
        end["content"]["org.matrix.msc1767.text"]
            .as_str()
            .unwrap_or_default()
            .contains("Answered elsewhere"),
        "{end}"
    );
    // A vote after the end is told it came too late.
    s.phone.vote(&s.room, &poll["event_id"], &["1"]).await;
    let told = s
        .phone
        .event("the bot's reply to a late vote", |e| {
            e["sender"] == s.bot.as_str() && e["content"]["msgtype"] == "m.notice"
        })
        .await;
    assert!(
        told["content"]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("Already answered"),
        "{told}"
    );
    drop(agent);
    s.phone.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_room_that_is_not_encrypted_is_refused() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let home = tempfile::tempdir().expect("home");
    let (mut phone, bot, _) = support::matrix::bot_logged_in(server, home.path()).await;
    let room = phone
        .cmd(json!({"cmd": "create_room", "invite": [bot], "encrypted": false}))
        .await["room"]
        .as_str()
        .expect("room")
        .to_owned();
    let (ok, out, err) = him_matrix(
        home.path(),
        &["room", "--room", &room, "--answerers", &phone.user_id],
    );
    assert!(!ok, "an unencrypted room was taken: {out}");
    assert!(err.contains("not end-to-end encrypted"), "{err}");
    assert!(
        err.contains("--allow-unencrypted"),
        "the way out is named: {err}"
    );
    assert!(
        !home.path().join("state/him/matrix/room.json").exists(),
        "Matrix counts as set up after a refusal"
    );
    phone.stop().await;
}

/// The pid of the bridge listening in `runtime`, as its `welcome` says.
async fn bridge_pid(runtime: &Path) -> i32 {
    use futures::{SinkExt, StreamExt};
    use him::wire::frame::{FrameCodec, MAX_INBOUND};
    let socket = him::wire::runtime::matrix_socket(runtime);
    let stream = tokio::net::UnixStream::connect(&socket)
        .await
        .expect("the bridge listens");
    let mut framed = tokio_util::codec::Framed::new(stream, FrameCodec::new(MAX_INBOUND));
    let hello = json!({"type": "hello", "protocol": 1, "agent": {"name": "probe"}, "pid": std::process::id()});
    framed
        .send(bytes::Bytes::from(hello.to_string()))
        .await
        .expect("hello");
    loop {
        let frame = framed.next().await.expect("welcome").expect("frame");
        let value: Value = serde_json::from_slice(&frame).expect("json");
        if value["type"] == "welcome" {
            assert_eq!(value["host"]["kind"], "matrix", "{value}");
            return value["host"]["pid"].as_i64().expect("pid") as i32;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bridge_killed_while_the_person_votes_loses_nothing() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let agent = s.agent("restart-agent").await;
    let asking = call_meanwhile(
        &agent,
        "ask_choice",
        json!({"question": "Which region?", "options": ["eu", "us"]}),
    );
    let poll = s.phone.question(&s.room, &s.bot).await;
    let pid = nix::unistd::Pid::from_raw(bridge_pid(&s.runtime()).await);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("kill the bridge");
    // Its parent (him serve) reaps it; until then it is not gone.
    support::eventually("the bridge gone", || {
        nix::sys::signal::kill(pid, None).is_err()
    })
    .await;
    // The person votes while no bridge runs.
    s.phone.vote(&s.room, &poll["event_id"], &["2"]).await;
    let mut bridge = tokio::process::Command::new(support::him_bin())
        .args(["matrix", "bridge"])
        .env("HIM_STATE_DIR", s.home.path().join("state/him"))
        .env("HIM_RUNTIME_DIR", s.runtime())
        .env("HIM_LOG", "info")
        .env("HIM_MATRIX_IDLE_MS", "5000")
        .kill_on_drop(true)
        .spawn()
        .expect("start the bridge again");
    let result = asking.await.expect("ask_choice");
    assert_eq!(result["answer"], "us", "{result}");
    assert_eq!(result["via"], "matrix");
    // One question in the room: the bridge started again did not post it a second time.
    s.phone
        .event("the poll's end", |e| {
            e["type"] == "org.matrix.msc3381.poll.end"
                && e["content"]["m.relates_to"]["event_id"] == poll["event_id"]
        })
        .await;
    assert!(
        !s.phone
            .events
            .iter()
            .any(|e| e["type"] == "org.matrix.msc3381.poll.start"),
        "the question was posted again: {:#?}",
        s.phone.events
    );
    drop(agent);
    let _ = bridge.kill().await;
    s.phone.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_password_is_never_asked_over_matrix_and_stays_open_at_the_desk() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let mut panel = FakeExtension::start(&s.runtime()).await;
    let agent = s.agent("password-agent").await;
    let asking = call_meanwhile(
        &agent,
        "ask_form",
        json!({"title": "Database login", "fields": [
                {"name": "password", "type": "password", "label": "Password", "required": true}]}),
    );
    let ask = panel.take_ask().await;
    let question = s.phone.question(&s.room, &s.bot).await;
    let body = question["content"]["body"].as_str().expect("body");
    assert!(body.contains("never goes over Matrix"), "{body}");
    assert!(body.contains("at your desk"), "{body}");
    // A reply in the room is not taken: the bot says why, and the question stays open.
    s.phone
        .reply(&s.room, &question["event_id"], "hunter2")
        .await;
    let told = s
        .phone
        .event("the bot's reply to a password sent in the room", |e| {
            e["sender"] == s.bot.as_str() && e["content"]["msgtype"] == "m.notice"
        })
        .await;
    assert!(
        told["content"]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("at your desk"),
        "{told}"
    );
    panel
        .submit(&ask["id"], json!({"password": "from-the-desk"}))
        .await;
    let result = asking.await.expect("ask_form");
    assert_eq!(result["via"], "extension", "{result}");
    assert_eq!(result["values"]["password"], "from-the-desk");
    // The message then says it was answered elsewhere, and names no secret.
    let edit = s
        .phone
        .event("the edit of the question", |e| {
            e["content"]["m.relates_to"]["rel_type"] == "m.replace"
                && e["content"]["m.relates_to"]["event_id"] == question["event_id"]
        })
        .await;
    let edited = edit["content"]["m.new_content"]["body"]
        .as_str()
        .unwrap_or_default();
    assert!(edited.contains("Answered elsewhere"), "{edited}");
    assert!(
        !edited.contains("from-the-desk") && !edited.contains("hunter2"),
        "{edited}"
    );
    drop(agent);
    s.phone.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_that_times_out_says_so_in_the_room() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let agent = s.agent("timeout-agent").await;
    let asking = call_meanwhile(
        &agent,
        "ask_text",
        json!({"question": "Anyone there?", "timeout_ms": 3000}),
    );
    let question = s.phone.question(&s.room, &s.bot).await;
    let result = asking.await.expect("ask_text");
    assert_eq!(result["status"], "timeout", "{result}");
    assert_eq!(result["via"], "matrix");
    let edit = s
        .phone
        .event("the edit of the timed-out question", |e| {
            e["content"]["m.relates_to"]["rel_type"] == "m.replace"
                && e["content"]["m.relates_to"]["event_id"] == question["event_id"]
        })
        .await;
    let edited = edit["content"]["m.new_content"]["body"]
        .as_str()
        .unwrap_or_default();
    assert!(edited.contains("Timed out"), "{edited}");
    drop(agent);
    s.phone.stop().await;
}

/// The bot's edit of its message `question`, whose new text contains `text`.
async fn edit_saying(phone: &mut Phone, question: &Value, text: &str) -> String {
    let event = phone
        .event(&format!("an edit of the question saying {text:?}"), |e| {
            e["content"]["m.relates_to"]["rel_type"] == "m.replace"
                && e["content"]["m.relates_to"]["event_id"] == question["event_id"]
                && e["content"]["m.new_content"]["body"]
                    .as_str()
                    .is_some_and(|b| b.contains(text))
        })
        .await;
    event["content"]["m.new_content"]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_kept_for_its_agent_stays_answerable_on_the_phone_and_the_answer_is_kept() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let agent = s
        .agent_with("kept-agent", &[("HIM_KEEP_MS", "600000")])
        .await;
    let me = s.phone.user_id.clone();

    // A reply: the call times out, the message is marked kept, and the reply is kept.
    let asking = call_meanwhile(
        &agent,
        "ask_text",
        json!({"question": "Name the release", "timeout_ms": 2000}),
    );
    let question = s.phone.question(&s.room, &s.bot).await;
    let result = asking.await.expect("ask_text");
    assert_eq!(result["status"], "timeout", "{result}");
    let id = result["question_id"]
        .as_str()
        .expect("question_id")
        .to_owned();
    assert!(
        result["next_step"]
            .as_str()
            .unwrap_or_default()
            .contains("get_answer"),
        "the agent is told how to collect it: {result}"
    );
    let marked = edit_saying(&mut s.phone, &question, "kept for it").await;
    assert!(!marked.contains("no longer needed"), "{marked}");
    s.phone.reply(&s.room, &question["event_id"], "v2.0").await;
    let closed = edit_saying(&mut s.phone, &question, "Answered by").await;
    assert!(
        closed.contains(&format!(
            "Answered by {me}; the answer is kept for the agent"
        )),
        "{closed}"
    );
    let late = call(
        &agent,
        "get_answer",
        json!({"question_id": id, "wait_ms": 0}),
    )
    .await;
    assert_eq!(late["status"], "answered", "{late}");
    assert_eq!(late["answer"], "v2.0");
    assert_eq!(late["late"], true);
    assert_eq!(late["via"], "matrix");
    assert_eq!(late["answered_by"], me.as_str());

    // A poll: the note is a reply to it, the vote is kept, and get_answer waiting on the
    // open question gets it live, saying who answered.
    let asking = call_meanwhile(
        &agent,
        "ask_choice",
        json!({"question": "Which day?", "options": ["Mon", "Tue"], "timeout_ms": 2000}),
    );
    let poll = s.phone.question(&s.room, &s.bot).await;
    let result = asking.await.expect("ask_choice");
    assert_eq!(result["status"], "timeout", "{result}");
    let id = result["question_id"]
        .as_str()
        .expect("question_id")
        .to_owned();
    let note = s
        .phone
        .event("the bot's note that the poll is kept", |e| {
            e["sender"] == s.bot.as_str()
                && e["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == poll["event_id"]
                && e["content"]["body"]
                    .as_str()
                    .is_some_and(|b| b.contains("kept for it"))
        })
        .await;
    assert_eq!(note["content"]["msgtype"], "m.notice", "{note}");
    let collecting = call_meanwhile(
        &agent,
        "get_answer",
        json!({"question_id": id, "wait_ms": 60000}),
    );
    s.phone.vote(&s.room, &poll["event_id"], &["2"]).await;
    let late = collecting.await.expect("get_answer");
    assert_eq!(late["status"], "answered", "{late}");
    assert_eq!(late["answer"], "Tue");
    assert_eq!(late["via"], "matrix");
    assert_eq!(late["answered_by"], me.as_str());
    s.phone
        .event("the poll's end", |e| {
            e["type"] == "org.matrix.msc3381.poll.end"
                && e["content"]["m.relates_to"]["event_id"] == poll["event_id"]
        })
        .await;
    drop(agent);
    s.phone.stop().await;
}

/// Now, in Unix ms (the homeserver runs on this machine, on the same clock).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64
}

/// Opens the fake extension's side panel, and waits until `agent` has heard so.
async fn open_panel(panel: &mut FakeExtension, agent: &Agent, open: bool) {
    open_panel_of(panel, agent, open, 1).await;
}

/// As [`open_panel`], with `browsers` browsers linked: waits until the agent sees them all,
/// one with its panel open (or none).
async fn open_panel_of(panel: &mut FakeExtension, agent: &Agent, open: bool, browsers: usize) {
    panel.send(json!({"type": "panel", "open": open})).await;
    let deadline = tokio::time::Instant::now() + support::matrix::PHONE_PATIENCE;
    loop {
        let status = call(agent, "human_input_status", json!({})).await;
        let listed = status["browsers"].as_array().cloned().unwrap_or_default();
        let opened = listed.iter().filter(|b| b["panel_open"] == true).count();
        if listed.len() == browsers && opened == usize::from(open) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the agent never heard the panel is {}: {status}",
            if open { "open" } else { "closed" }
        );
        // The host re-broadcasts its welcome on the change; the next look sees it.
        tokio::task::yield_now().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_panel_open_the_phone_rings_only_when_the_person_is_away() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let mut panel = FakeExtension::start(&s.runtime()).await;
    let agent = s
        .agent_with("presence-agent", &[("HIM_AWAY_MS", "4000")])
        .await;
    open_panel(&mut panel, &agent, true).await;

    // Panel open: the room gets the question once it waited HIM_AWAY_MS unanswered.
    let asking = call_meanwhile(&agent, "ask_text", json!({"question": "Away?"}));
    let ask = panel.take_ask().await;
    let asked_at = ask["asked_at_ms"].as_u64().expect("asked_at_ms");
    let question = s.phone.question(&s.room, &s.bot).await;
    let posted = question["ts"].as_u64().expect("ts");
    assert!(
        posted >= asked_at + 4000,
        "posted {} ms after the question was asked, before HIM_AWAY_MS",
        posted.saturating_sub(asked_at)
    );
    s.phone.reply(&s.room, &question["event_id"], "yes").await;
    let result = asking.await.expect("ask_text");
    assert_eq!(result["via"], "matrix", "{result}");
    // The panel's card went: answered on the phone, by whom.
    let withdraw = panel.recv_type("withdraw").await;
    assert_eq!(withdraw["id"], ask["id"]);
    assert_eq!(withdraw["reason"], "answered", "{withdraw}");
    assert_eq!(withdraw["answered_via"], "matrix", "{withdraw}");
    assert_eq!(
        withdraw["answered_by"],
        s.phone.user_id.as_str(),
        "{withdraw}"
    );
    drop(agent);

    // A far away time, the panel open: the person closes the panel, and the phone rings.
    let agent = s
        .agent_with("presence-agent-2", &[("HIM_AWAY_MS", "600000")])
        .await;
    let asking = call_meanwhile(&agent, "ask_confirm", json!({"question": "Closed?"}));
    let ask = panel.take_ask().await;
    let closed_at = now_ms();
    open_panel(&mut panel, &agent, false).await;
    let poll = s.phone.question(&s.room, &s.bot).await;
    assert!(
        poll["ts"].as_u64().expect("ts") >= closed_at,
        "the phone got the question before the panel closed: {poll}"
    );
    panel.submit(&ask["id"], json!({"confirmed": true})).await;
    let result = asking.await.expect("ask_confirm");
    assert_eq!(result["via"], "extension", "{result}");
    drop(agent);
    s.phone.stop().await;
}

/// The body of the next question the bot posts in the room.
async fn next_question_body(s: &mut Setup) -> (Value, String) {
    let question = s.phone.question(&s.room, &s.bot).await;
    let body = question["content"]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (question, body)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_browser_restarting_its_host_does_not_ring_the_phone_until_its_grace_has_passed() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let mut panel = FakeExtension::start(&s.runtime()).await;
    // A second browser, its panel closed, stays linked throughout.
    let mut other = FakeExtension::start(&s.runtime()).await;
    let agent = s
        .agent_with("restarting-agent", &[("HIM_AWAY_MS", "600000")])
        .await;
    open_panel_of(&mut panel, &agent, true, 2).await;
    let asking = call_meanwhile(
        &agent,
        "ask_text",
        json!({"question": "Through a restart?"}),
    );
    panel.take_ask().await;
    other.take_ask().await;
    // The service worker restarts: its host ends, a new one starts, the panel still open.
    panel.close().await;
    let mut panel = FakeExtension::start(&s.runtime()).await;
    let ask = panel.take_ask().await;
    open_panel_of(&mut panel, &agent, true, 2).await;
    // Had the gap rung the phone, that question would be in the room before this one.
    let always = s
        .agent_with("marker-agent", &[("HIM_MATRIX", "always")])
        .await;
    let marking = call_meanwhile(&always, "ask_text", json!({"question": "Marker?"}));
    panel.take_ask().await;
    other.take_ask().await;
    let (marker, body) = next_question_body(&mut s).await;
    assert!(
        body.contains("Marker?"),
        "the phone was rung while the browser restarted its host: {body}"
    );
    s.phone.reply(&s.room, &marker["event_id"], "seen").await;
    assert_eq!(marking.await.expect("marker")["via"], "matrix");
    panel
        .submit(&ask["id"], json!({"answer": "still here"}))
        .await;
    let result = asking.await.expect("ask_text");
    assert_eq!(result["via"], "extension", "{result}");
    assert_eq!(result["answer"], "still here", "{result}");
    drop(agent);
    other.close().await;

    // No new host within the grace: the browser is gone, and the phone rings.
    let agent = s
        .agent_with(
            "gone-agent",
            &[
                ("HIM_AWAY_MS", "600000"),
                ("HIM_RECONNECT_GRACE_MS", "2000"),
            ],
        )
        .await;
    let asking = call_meanwhile(&agent, "ask_text", json!({"question": "Gone for good?"}));
    panel.take_ask().await;
    let closed_at = now_ms();
    panel.close().await;
    let (question, body) = next_question_body(&mut s).await;
    assert!(body.contains("Gone for good?"), "{body}");
    assert!(
        question["ts"].as_u64().expect("ts") >= closed_at + 2000,
        "the phone rang {} ms after the host ended, within its grace",
        question["ts"]
            .as_u64()
            .unwrap_or(0)
            .saturating_sub(closed_at)
    );
    s.phone
        .reply(&s.room, &question["event_id"], "from the phone")
        .await;
    let result = asking.await.expect("ask_text");
    assert_eq!(result["via"], "matrix", "{result}");
    drop(agent);
    drop(always);
    s.phone.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn never_keeps_questions_off_the_phone_and_always_sends_them_past_an_open_panel() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let mut panel = FakeExtension::start(&s.runtime()).await;
    let always = s
        .agent_with("always-agent", &[("HIM_MATRIX", "always")])
        .await;
    open_panel(&mut panel, &always, true).await;
    // `always`: at once, though the panel is open (the away time is a minute).
    let asking = call_meanwhile(&always, "ask_text", json!({"question": "First?"}));
    panel.take_ask().await;
    let first = s.phone.question(&s.room, &s.bot).await;
    s.phone.reply(&s.room, &first["event_id"], "one").await;
    assert_eq!(asking.await.expect("first")["via"], "matrix");

    // `never`: with no browser and no other channel, the question goes back to the chat at
    // once; the bridge never gets it.
    panel.close().await;
    let never = s
        .agent_with("never-agent", &[("HIM_MATRIX", "never")])
        .await;
    let result = call(&never, "ask_text", json!({"question": "Never here?"})).await;
    assert_eq!(result["status"], "needs_user_input", "{result}");
    let status = call(&never, "human_input_status", json!({})).await;
    assert_eq!(status["matrix"], Value::Null, "{status}");
    // The next question in the room is the always-agent's next one, not the never-agent's.
    let asking = call_meanwhile(&always, "ask_text", json!({"question": "Second?"}));
    let second = s.phone.question(&s.room, &s.bot).await;
    let body = second["content"]["body"].as_str().unwrap_or_default();
    assert!(body.contains("Second?"), "{body}");
    s.phone.reply(&s.room, &second["event_id"], "two").await;
    assert_eq!(asking.await.expect("second")["answer"], "two");
    drop(always);
    drop(never);
    s.phone.stop().await;
}

/// A client that shows forms itself (MCP elicitation) and whose person never answers there:
/// it tells the test each form it got, and how the server ended it.
#[derive(Clone)]
struct ElicitingClient {
    forms: tokio::sync::mpsc::UnboundedSender<&'static str>,
}

impl rmcp::ClientHandler for ElicitingClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities: rmcp::model::ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("capabilities");
        rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("eliciting-client", "1.0.0"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        cx: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::model::ErrorData> {
        let _ = self.forms.send("shown");
        cx.ct.cancelled().await;
        let _ = self.forms.send("cancelled by the server");
        Ok(rmcp::model::ElicitResult::new(
            rmcp::model::ElicitationAction::Cancel,
        ))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_browser_the_clients_own_form_comes_first_and_the_phone_alongside() {
    use rmcp::ServiceExt;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let (forms_tx, mut forms) = tokio::sync::mpsc::unbounded_channel();
    let runtime = s.runtime();
    let env = s.env();
    let command = tokio::process::Command::new(support::him_bin()).configure(move |cmd| {
        cmd.arg("serve")
            .env("HIM_RUNTIME_DIR", &runtime)
            .env("HIM_KEEP_MS", "0")
            .env("HIM_LOG", "debug");
        for (k, v) in &env {
            cmd.env(k, v);
        }
    });
    let client = ElicitingClient { forms: forms_tx }
        .serve(TokioChildProcess::new(command).expect("spawn him serve"))
        .await
        .expect("initialize");
    let client = Arc::new(client);
    let status = client
        .call_tool(support::params("human_input_status", json!({})))
        .await
        .expect("status")
        .structured_content
        .expect("structured");
    assert_eq!(status["channel"], "elicitation", "{status}");
    assert_eq!(
        status["browsers"],
        json!([]),
        "Matrix is no browser: {status}"
    );
    let asking = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .call_tool(support::params(
                    "ask_text",
                    json!({"question": "Both ways?"}),
                ))
                .await
                .expect("ask_text")
                .structured_content
                .expect("structured")
        }
    });
    // The client's form and the phone both have the question; the phone answers first.
    assert_eq!(forms.recv().await, Some("shown"));
    let question = s.phone.question(&s.room, &s.bot).await;
    s.phone
        .reply(&s.room, &question["event_id"], "from the phone")
        .await;
    let result = asking.await.expect("the call");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "matrix");
    assert_eq!(result["answer"], "from the phone");
    assert_eq!(result["client_elicitation"], true);
    assert_eq!(forms.recv().await, Some("cancelled by the server"));
    s.phone.stop().await;
}

/// `him serve --permission-tool` under rmcp's client, with the set-up's environment.
async fn permission_agent(s: &Setup) -> Arc<Agent> {
    use rmcp::ServiceExt;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let runtime = s.runtime();
    let env = s.env();
    let command = tokio::process::Command::new(support::him_bin()).configure(move |cmd| {
        cmd.args(["serve", "--permission-tool"])
            .env("HIM_RUNTIME_DIR", &runtime)
            .env("HIM_KEEP_MS", "0")
            .env("HIM_LOG", "debug");
        for (k, v) in &env {
            cmd.env(k, v);
        }
    });
    let handler = support::TestClient {
        name: "claude-code".into(),
        ..support::TestClient::default()
    };
    Arc::new(
        handler
            .serve(TokioChildProcess::new(command).expect("spawn him serve"))
            .await
            .expect("initialize"),
    )
}

/// Calls `approve` for a Bash `command`; returns the decision JSON.
fn approving(agent: &Arc<Agent>, command: String) -> tokio::task::JoinHandle<Value> {
    let agent = agent.clone();
    tokio::spawn(async move {
        let result = agent
            .call_tool(support::params(
                "approve",
                json!({"tool_name": "Bash", "input": {"command": command}, "tool_use_id": "toolu_1"}),
            ))
            .await
            .expect("approve");
        let text = result.content[0].as_text().expect("text").text.clone();
        serde_json::from_str(&text).expect("decision JSON")
    })
}

/// The bot's next notice that replies to `to` (why an answer was not taken).
async fn notice_to(phone: &mut Phone, bot: &str, to: &Value) -> String {
    let event = phone
        .event("the bot's notice", |e| {
            e["sender"] == bot
                && e["content"]["msgtype"] == "m.notice"
                && e["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == *to
        })
        .await;
    event["content"]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_permission_is_allowed_from_the_phone_only_with_its_code_and_denied_by_a_vote() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let agent = permission_agent(&s).await;

    // The input verbatim, marked where it would read otherwise than it runs.
    let call = approving(&agent, "terraform apply\u{202e} -auto-approve".into());
    let message = s.phone.question(&s.room, &s.bot).await;
    let body = message["content"]["body"]
        .as_str()
        .expect("body")
        .to_owned();
    assert!(body.contains("Bash"), "{body}");
    assert!(
        body.contains("terraform apply⟨U+202E⟩ -auto-approve"),
        "{body}"
    );
    assert!(body.contains("Marked:"), "{body}");
    let html = message["content"]["formatted_body"]
        .as_str()
        .unwrap_or_default();
    assert!(html.contains("<pre><code>terraform apply"), "{html}");
    let code = body
        .split("reply with the code ")
        .nth(1)
        .and_then(|rest| rest.get(..6))
        .expect("a code in the message")
        .to_owned();
    let poll = s.phone.question(&s.room, &s.bot).await;
    assert_eq!(poll["type"], "org.matrix.msc3381.poll.start", "{poll}");
    // Neither a reflex reply nor a vote for Allow allows.
    let yes = s.phone.reply(&s.room, &message["event_id"], "yes").await;
    let told = notice_to(&mut s.phone, &s.bot, &json!(yes)).await;
    assert!(told.contains("not the code"), "{told}");
    s.phone.vote(&s.room, &poll["event_id"], &["2"]).await;
    s.phone
        .event("the bot's answer to a vote for Allow", |e| {
            e["sender"] == s.bot.as_str()
                && e["content"]["body"]
                    .as_str()
                    .is_some_and(|b| b.contains("a vote cannot allow"))
        })
        .await;
    s.phone.reply(&s.room, &message["event_id"], &code).await;
    let decision = call.await.expect("approve");
    assert_eq!(decision["behavior"], "allow", "{decision}");
    assert_eq!(
        decision["updatedInput"]["command"],
        "terraform apply\u{202e} -auto-approve"
    );
    s.phone
        .event("the poll's end", |e| {
            e["type"] == "org.matrix.msc3381.poll.end"
                && e["content"]["m.relates_to"]["event_id"] == poll["event_id"]
        })
        .await;

    // A vote for Deny denies.
    let call = approving(&agent, "rm -rf /srv/data".into());
    s.phone.question(&s.room, &s.bot).await;
    let poll = s.phone.question(&s.room, &s.bot).await;
    s.phone.vote(&s.room, &poll["event_id"], &["1"]).await;
    let decision = call.await.expect("approve");
    assert_eq!(decision["behavior"], "deny", "{decision}");

    // Too long for a Matrix event: cut, saying how much is hidden, and no Allow on the phone.
    let call = approving(&agent, format!("echo {}", "x".repeat(40_000)));
    let message = s.phone.question(&s.room, &s.bot).await;
    let body = message["content"]["body"]
        .as_str()
        .expect("body")
        .to_owned();
    assert!(body.contains("bytes of the input are hidden"), "{body}");
    assert!(body.contains("at the desk"));
    assert!(!body.contains("reply with the code"));
    let poll = s.phone.question(&s.room, &s.bot).await;
    let answers = &poll["content"]["org.matrix.msc3381.poll.start"]["answers"];
    assert_eq!(answers.as_array().map(Vec::len), Some(1), "{poll}");
    let guess = s.phone.reply(&s.room, &message["event_id"], "000000").await;
    let told = notice_to(&mut s.phone, &s.bot, &json!(guess)).await;
    assert!(told.contains("at the desk only"), "{told}");
    s.phone.reply(&s.room, &message["event_id"], "deny").await;
    let decision = call.await.expect("approve");
    assert_eq!(decision["behavior"], "deny", "{decision}");
    s.phone.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_answerers_race_the_first_wins_and_the_second_hears_it_was_already_answered() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let mut boss = Phone::start().await;
    let boss_name = unique("boss");
    let boss_id = boss.register(server, &boss_name, "boss-password").await;
    boss.login(server, &boss_name, "boss-password").await;
    s.phone
        .cmd(json!({"cmd": "invite", "room": s.room, "user": boss_id}))
        .await;
    boss.event("the boss joining", |e| e["event"] == "joined")
        .await;
    let answerers = format!("{},{boss_id}", s.phone.user_id);
    let (ok, out, err) = him_matrix(
        s.home.path(),
        &["room", "--room", &s.room, "--answerers", &answerers],
    );
    assert!(ok, "{out}\n{err}");
    let agent = s.agent("race-agent").await;
    let asking = call_meanwhile(
        &agent,
        "ask_choice",
        json!({"question": "Which color?", "options": ["red", "blue"]}),
    );
    let poll = s.phone.question(&s.room, &s.bot).await;
    // Both vote, the phone first; neither waits for the other.
    s.phone.vote(&s.room, &poll["event_id"], &["1"]).await;
    boss.vote(&s.room, &poll["event_id"], &["2"]).await;
    let result = asking.await.expect("ask_choice");
    assert_eq!(result["answer"], "red", "{result}");
    assert_eq!(result["answered_by"], s.phone.user_id.as_str());
    let told = boss
        .event("the bot telling the boss", |e| {
            e["sender"] == s.bot.as_str() && e["content"]["msgtype"] == "m.notice"
        })
        .await;
    let body = told["content"]["body"].as_str().unwrap_or_default();
    assert!(body.contains("Already answered"), "{body}");
    assert!(
        body.contains(&s.phone.user_id),
        "who answered is said: {body}"
    );
    drop(agent);
    s.phone.stop().await;
    boss.stop().await;
}

/// `him doctor` with the set-up's directories: (its whole output, the Matrix section alone).
fn doctor(s: &Setup) -> (String, String) {
    let output = std::process::Command::new(support::him_bin())
        .arg("doctor")
        .env("HIM_STATE_DIR", s.home.path().join("state/him"))
        .env("HIM_RUNTIME_DIR", s.runtime())
        .env("HOME", s.home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run him doctor");
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let section = out
        .split("Matrix (answering from your phone)")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_else(|| panic!("no Matrix section in: {out}"))
        .to_owned();
    (out, section)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_doctor_checks_the_matrix_leg_and_says_how_to_fix_what_fails() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let me = s.phone.user_id.clone();
    let (_, section) = doctor(&s);
    for line in [
        format!("✓ logged in as {}", s.bot),
        format!("✓ the bot is in the room {}", s.room),
        "✓ the room is end-to-end encrypted".to_owned(),
        format!("✓ {me} may answer and is in the room"),
        "· the bridge has not synced yet".to_owned(),
    ] {
        assert!(section.contains(&line), "{line:?} not in:{section}");
    }
    assert!(
        !section.contains("syt_"),
        "no token in the report: {section}"
    );

    // After a question, the bridge's last sync and the device's state are reported.
    let agent = s.agent("doctor-agent").await;
    let asking = call_meanwhile(&agent, "ask_text", json!({"question": "Doctor?"}));
    let question = s.phone.question(&s.room, &s.bot).await;
    s.phone.reply(&s.room, &question["event_id"], "fine").await;
    asking.await.expect("ask_text");
    let (_, section) = doctor(&s);
    assert!(section.contains("✓ the bridge's last sync: "), "{section}");
    assert!(
        section.contains("✓ the bot's device is cross-signed by its account"),
        "{section}"
    );
    assert!(
        section.contains(&format!("⚠ {me} has not verified the bot")),
        "{section}"
    );

    // Someone who may answer but is not in the room, and a login that is no longer valid.
    let ghost = "@ghost:localhost";
    let answerers = format!("{me},{ghost}");
    let (ok, out, err) = him_matrix(
        s.home.path(),
        &["room", "--room", &s.room, "--answerers", &answerers],
    );
    assert!(ok, "{out}\n{err}");
    let (_, section) = doctor(&s);
    assert!(
        section.contains(&format!("⚠ {ghost} may answer but is not in the room")),
        "{section}"
    );
    assert!(section.contains(&format!("--invite {ghost}")), "{section}");
    let session_file = s.home.path().join("state/him/matrix/session.json");
    let mut session: Value =
        serde_json::from_str(&std::fs::read_to_string(&session_file).expect("session"))
            .expect("json");
    session["access_token"] = json!("not-a-token");
    std::fs::write(&session_file, session.to_string()).expect("write session");
    let (_, section) = doctor(&s);
    assert!(
        section.contains("✗ the bot's login is no longer valid"),
        "{section}"
    );
    assert!(
        section.contains(&format!(
            "fix: him matrix login --homeserver {}",
            server.url
        )),
        "{section}"
    );
    drop(agent);
    s.phone.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ci_runner_without_a_browser_asks_the_phone_with_him_ask() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    // The laptop set the bot and the room up once; the runner has the bot's password in its
    // secret store and the room's ID in its configuration (docs/matrix.md, "On a CI runner").
    let mut s = set_up(server, None).await;
    let runner = tempfile::tempdir().expect("runner home");
    private_dir(&runner.path().join("run"));
    private_dir(&runner.path().join("state"));
    let secret = runner.path().join("bot-password");
    std::fs::write(&secret, "bot-password\n").expect("secret");
    let (ok, out, err) = him_matrix(
        runner.path(),
        &[
            "login",
            "--homeserver",
            &server.url,
            "--user",
            &s.bot,
            "--password-file",
            &secret.display().to_string(),
        ],
    );
    assert!(ok, "{out}\n{err}");
    let (ok, out, err) = him_matrix(
        runner.path(),
        &["room", "--room", &s.room, "--answerers", &s.phone.user_id],
    );
    assert!(ok, "{out}\n{err}");
    // The job's step: `him ask`, no browser, no terminal; the bridge starts on demand.
    let asking = tokio::process::Command::new(support::him_bin())
        .args([
            "ask",
            "--no-tty",
            "--timeout-ms",
            "120000",
            "confirm",
            "Deploy build 42?",
        ])
        .env("HIM_STATE_DIR", runner.path().join("state/him"))
        .env("HIM_RUNTIME_DIR", runner.path().join("run"))
        .env("HIM_MATRIX_IDLE_MS", "5000")
        .env("HIM_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("him ask");
    let poll = s.phone.question(&s.room, &s.bot).await;
    let body = poll["content"]["org.matrix.msc1767.text"]
        .as_str()
        .unwrap_or_default();
    assert!(body.contains("him ask"), "who asks is said: {body}");
    s.phone.vote(&s.room, &poll["event_id"], &["1"]).await;
    let output = tokio::time::timeout(support::matrix::PHONE_PATIENCE, asking.wait_with_output())
        .await
        .expect("him ask ended")
        .expect("him ask output");
    let result: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["confirmed"], true);
    assert_eq!(result["via"], "matrix");
    assert_eq!(result["answered_by"], s.phone.user_id.as_str());
    s.phone.stop().await;
}

/// Replies in the thread under `root` and returns the bot's next message there saying `text`.
async fn in_thread(s: &mut Setup, root: &Value, reply: &str, text: &str) -> String {
    s.phone
        .cmd(json!({"cmd": "thread_reply", "room": s.room, "root": root, "body": reply}))
        .await;
    thread_message(s, root, text).await
}

/// The bot's next message in the thread under `root` that says `text`.
async fn thread_message(s: &mut Setup, root: &Value, text: &str) -> String {
    let bot = s.bot.clone();
    let event = s
        .phone
        .event(&format!("the bot saying {text:?} in the thread"), |e| {
            e["sender"] == bot.as_str()
                && e["content"]["m.relates_to"]["rel_type"] == "m.thread"
                && e["content"]["m.relates_to"]["event_id"] == *root
                && e["content"]["body"]
                    .as_str()
                    .is_some_and(|b| b.contains(text))
        })
        .await;
    event["content"]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_form_is_answered_in_a_thread_one_field_at_a_time_a_wrong_value_asked_again() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let agent = s.agent("form-agent").await;
    let asking = call_meanwhile(
        &agent,
        "ask_form",
        json!({"title": "Deploy", "fields": [
                    {"name": "env", "type": "radio", "label": "Environment", "required": true,
                     "options": ["staging", "production"]},
                    {"name": "replicas", "type": "number", "label": "Replicas", "min": 1, "max": 9},
                    {"name": "notify", "type": "checkbox", "label": "Notify the team"}]}),
    );
    let question = s.phone.question(&s.room, &s.bot).await;
    let body = question["content"]["body"].as_str().unwrap_or_default();
    assert!(body.contains("Answer in the thread"), "{body}");
    let root = question["event_id"].clone();
    thread_message(&mut s, &root, "1/3: Environment").await;
    in_thread(&mut s, &root, "production", "2/3: Replicas").await;
    let again = in_thread(&mut s, &root, "12", "Again").await;
    assert!(again.contains("2/3: Replicas"), "{again}");
    in_thread(&mut s, &root, "3", "3/3: Notify the team").await;
    let summary = in_thread(&mut s, &root, "yes", "Send this?").await;
    assert!(summary.contains("Environment: production"), "{summary}");
    assert!(summary.contains("Replicas: 3"), "{summary}");
    s.phone
        .cmd(json!({"cmd": "thread_reply", "room": s.room, "root": root, "body": "yes"}))
        .await;
    let result = asking.await.expect("ask_form");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "matrix");
    assert_eq!(result["values"]["env"], "production");
    assert_eq!(result["values"]["replicas"], 3);
    assert_eq!(result["values"]["notify"], true);
    drop(agent);
    s.phone.stop().await;
}

/// `him matrix verify` at the desk, its stdin a pipe (the person's keys), its output read as
/// it comes.
struct Verifying {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    seen: String,
}

impl Verifying {
    fn start(s: &Setup) -> Verifying {
        let mut child = tokio::process::Command::new(support::him_bin())
            .args(["matrix", "verify"])
            .envs(s.env())
            .env("HIM_RUNTIME_DIR", s.runtime())
            .env("HIM_LOG", "info")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("run him matrix verify");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        Verifying {
            child,
            stdin,
            stdout,
            seen: String::new(),
        }
    }

    /// Reads until the output holds `needle`; returns everything read so far.
    async fn until(&mut self, needle: &str) -> String {
        use tokio::io::AsyncReadExt;
        let deadline = tokio::time::Instant::now() + support::matrix::PHONE_PATIENCE;
        while !self.seen.contains(needle) {
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout_at(deadline, self.stdout.read(&mut buf))
                .await
                .unwrap_or_else(|_| panic!("verify never said {needle:?}: {}", self.seen))
                .expect("read verify");
            assert!(n > 0, "verify ended without {needle:?}: {}", self.seen);
            self.seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        self.seen.clone()
    }

    async fn answer(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("answer verify");
    }

    /// Its exit status and whole output.
    async fn finish(mut self) -> (bool, String) {
        use tokio::io::AsyncReadExt;
        let mut rest = String::new();
        self.stdout
            .read_to_string(&mut rest)
            .await
            .expect("read verify");
        let status = self.child.wait().await.expect("verify ends");
        (status.success(), self.seen + &rest)
    }
}

/// The 7 (emoji, name) pairs `him matrix verify` shows, in order.
fn emojis_shown(text: &str) -> Vec<(String, String)> {
    text.split("in this order:")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let (emoji, name) = line.split_once("  ")?;
            Some((emoji.trim().to_owned(), name.trim().to_owned()))
        })
        .take(7)
        .collect()
}

/// The emojis the phone shows, once the comparison is under way.
async fn phone_emojis(phone: &mut Phone) -> Vec<(String, String)> {
    let sas = phone
        .event("the phone's emojis", |e| {
            e["event"] == "verification" && (e["phase"] == "Sas" || e["phase"] == "Cancelled")
        })
        .await;
    assert_eq!(sas["phase"], "Sas", "{sas}");
    sas["emojis"]
        .as_array()
        .expect("emojis")
        .iter()
        .map(|pair| {
            (
                pair[0].as_str().expect("emoji").to_owned(),
                pair[1].as_str().expect("name").to_owned(),
            )
        })
        .collect()
}

fn bot_device(s: &Setup) -> String {
    let session: Value = serde_json::from_str(
        &std::fs::read_to_string(s.home.path().join("state/him/matrix/session.json"))
            .expect("session"),
    )
    .expect("json");
    session["device_id"].as_str().expect("device").to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_phone_verifies_the_bot_by_emojis_and_the_doctor_says_so() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let me = s.phone.user_id.clone();
    s.phone
        .cmd(json!({"cmd": "cross_sign", "password": "me-password"}))
        .await;
    // `him matrix login` with the password cross-signed the bot's device.
    let (_, section) = doctor(&s);
    assert!(
        section.contains("✓ the bot's device is cross-signed by its account"),
        "{section}"
    );
    assert!(
        section.contains(&format!("⚠ {me} has not verified the bot")),
        "{section}"
    );
    assert!(section.contains("hint: him matrix verify"), "{section}");

    let mut verifying = Verifying::start(&s);
    verifying.until("Waiting for a verification request").await;
    // As Element X does it: a request to the bot in the chat with it.
    s.phone
        .cmd(json!({"cmd": "verify_dm", "user": s.bot, "room": s.room}))
        .await;
    let on_phone = phone_emojis(&mut s.phone).await;
    let shown = verifying.until("Do they match? [y/N]").await;
    let on_desk = emojis_shown(&shown);
    assert_eq!(on_phone.len(), 7, "{on_phone:?}");
    assert_eq!(
        on_desk, on_phone,
        "the desk shows the phone's emojis: {shown}"
    );
    verifying.answer("y").await;
    s.phone.cmd(json!({"cmd": "sas_confirm"})).await;
    let done = s
        .phone
        .event("the verification's end", |e| {
            e["event"] == "verification" && (e["phase"] == "Verified" || e["phase"] == "Failed")
        })
        .await;
    assert_eq!(done["phase"], "Verified", "{done}");
    let (ok, out) = verifying.finish().await;
    assert!(ok, "verify failed: {out}");
    assert!(out.contains(&format!("Verified: {me}")), "{out}");

    // The phone trusts the bot's identity and its device; the doctor says they verified.
    let trust = s
        .phone
        .cmd(json!({"cmd": "trust", "user": s.bot, "device": bot_device(&s)}))
        .await;
    assert_eq!(trust["user_verified"], true, "{trust}");
    assert_eq!(trust["device_verified"], true, "{trust}");
    let (_, section) = doctor(&s);
    assert!(
        section.contains(&format!("✓ {me} and the bot verified each other")),
        "{section}"
    );
    s.phone.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mismatch_cancels_the_verification_and_a_stranger_may_not_verify() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let me = s.phone.user_id.clone();
    s.phone
        .cmd(json!({"cmd": "cross_sign", "password": "me-password"}))
        .await;
    // A question open: the bridge runs, and must not share the store with the verification.
    let agent = s.agent("verify-agent").await;
    let asking = call_meanwhile(&agent, "ask_text", json!({"question": "Still there?"}));
    let question = s.phone.question(&s.room, &s.bot).await;
    let bridge = nix::unistd::Pid::from_raw(bridge_pid(&s.runtime()).await);

    let mut verifying = Verifying::start(&s);
    let said = verifying.until("Waiting for a verification request").await;
    assert!(
        said.contains(&format!("The Matrix bridge (pid {bridge}) is stopped")),
        "{said}"
    );
    assert!(
        nix::sys::signal::kill(bridge, None).is_err()
            || std::fs::read_to_string(format!("/proc/{bridge}/stat"))
                .is_ok_and(|stat| stat.contains(") Z ")),
        "the bridge still runs beside the verification"
    );

    // Someone in the room who is not an answerer asks to verify the bot's device: refused.
    let mut stranger = Phone::start().await;
    let stranger_name = unique("stranger");
    let stranger_id = stranger
        .register(server, &stranger_name, "stranger-password")
        .await;
    stranger
        .login(server, &stranger_name, "stranger-password")
        .await;
    s.phone
        .cmd(json!({"cmd": "invite", "room": s.room, "user": stranger_id}))
        .await;
    stranger.event("joined", |e| e["event"] == "joined").await;
    stranger
        .cmd(json!({"cmd": "verify_device", "user": s.bot, "device": bot_device(&s)}))
        .await;
    let refused = stranger
        .event("the stranger's request cancelled", |e| {
            e["event"] == "verification" && (e["phase"] == "Cancelled" || e["phase"] == "Sas")
        })
        .await;
    assert_eq!(refused["phase"], "Cancelled", "{refused}");
    verifying
        .until(&format!(
            "Refused a verification request from {stranger_id}"
        ))
        .await;

    // The answerer's request; the emojis said not to match.
    s.phone
        .cmd(json!({"cmd": "verify_dm", "user": s.bot, "room": s.room}))
        .await;
    phone_emojis(&mut s.phone).await;
    verifying.until("Do they match? [y/N]").await;
    verifying.answer("n").await;
    let end = s
        .phone
        .event("the verification's end", |e| {
            e["event"] == "verification"
                && (e["phase"] == "Verified" || e["phase"] == "Failed" || e["phase"] == "Cancelled")
        })
        .await;
    assert_ne!(end["phase"], "Verified", "{end}");
    let (ok, out) = verifying.finish().await;
    assert!(!ok, "a mismatch is a failure: {out}");
    assert!(
        out.contains("someone may be between your phone and the bot"),
        "{out}"
    );
    assert!(out.contains("The Matrix bridge runs again"), "{out}");
    let trust = s
        .phone
        .cmd(json!({"cmd": "trust", "user": s.bot, "device": bot_device(&s)}))
        .await;
    assert_eq!(trust["user_verified"], false, "{trust}");
    let (_, section) = doctor(&s);
    assert!(
        section.contains(&format!("⚠ {me} has not verified the bot")),
        "{section}"
    );

    // The bridge started again takes the answer to the question left open.
    s.phone.reply(&s.room, &question["event_id"], "yes").await;
    let result = asking.await.expect("ask_text");
    assert_eq!(result["answer"], "yes", "{result}");
    drop(agent);
    stranger.stop().await;
    s.phone.stop().await;
}

/// The devices of `user`'s account, as the homeserver lists them (read with a login of its
/// own, which the list includes).
async fn account_devices(server: &Synapse, user: &str, password: &str) -> Vec<String> {
    let http = reqwest::Client::new();
    let login = json!({"type": "m.login.password",
        "identifier": {"type": "m.id.user", "user": user}, "password": password});
    let response = http
        .post(format!("{}/_matrix/client/v3/login", server.url))
        .body(login.to_string())
        .send()
        .await
        .expect("login");
    assert!(response.status().is_success(), "the account is gone");
    let body: Value = serde_json::from_str(&response.text().await.expect("body")).expect("json");
    let token = body["access_token"].as_str().expect("token").to_owned();
    let response = http
        .get(format!("{}/_matrix/client/v3/devices", server.url))
        .bearer_auth(&token)
        .send()
        .await
        .expect("devices");
    let body: Value = serde_json::from_str(&response.text().await.expect("body")).expect("json");
    body["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| d["device_id"].as_str().expect("device_id").to_owned())
        .collect()
}

/// `him uninstall ARGS` with the set-up's home: (success, stdout, stderr).
fn uninstall(s: &Setup, args: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new(support::him_bin())
        .arg("uninstall")
        .args(args)
        .env("HIM_STATE_DIR", s.home.path().join("state/him"))
        .env("HIM_RUNTIME_DIR", s.runtime())
        .env("HOME", s.home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run him uninstall");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn uninstall_removes_the_matrix_session_only_when_asked_and_logs_the_device_out() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let s = set_up(server, None).await;
    let device = bot_device(&s);
    let local = s.home.path().join("state/him/matrix");
    let bot_name = s
        .bot
        .trim_start_matches('@')
        .split(':')
        .next()
        .expect("name");

    // Plain uninstall keeps the session, and says how to remove it.
    let (ok, out, err) = uninstall(&s, &[]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("kept the Matrix session"), "{out}");
    assert!(out.contains("him uninstall --matrix"), "{out}");
    assert!(local.join("session.json").is_file());
    assert!(
        account_devices(server, bot_name, "bot-password")
            .await
            .contains(&device)
    );

    // --matrix logs the device out on the homeserver and removes the local session; the
    // account stays (it can still log in).
    let (ok, out, err) = uninstall(&s, &["--matrix"]);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains(&format!("Logged the bot's device {device} out")),
        "{out}"
    );
    assert!(out.contains("Removed the local Matrix session"), "{out}");
    assert!(
        !local.exists(),
        "the session is still in {}",
        local.display()
    );
    let devices = account_devices(server, bot_name, "bot-password").await;
    assert!(
        !devices.contains(&device),
        "{device} still listed: {devices:?}"
    );
    assert!(
        !out.contains("syt_") && !err.contains("syt_"),
        "no token: {out}{err}"
    );

    // Nothing left: logout says so.
    let (ok, out, _) = him_matrix(s.home.path(), &["logout"]);
    assert!(ok && out.contains("nothing to remove"), "{out}");
    s.phone.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_homeserver_down_mid_question_blocks_nothing_and_the_answer_comes_once_it_is_back() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    // The bot reaches the homeserver through a proxy of this test's own; the phone directly.
    let mut proxy = support::matrix::Proxy::start(server).await;
    let session_file = s.home.path().join("state/him/matrix/session.json");
    let mut session: Value =
        serde_json::from_str(&std::fs::read_to_string(&session_file).expect("session"))
            .expect("json");
    session["homeserver"] = json!(proxy.url);
    std::fs::write(&session_file, session.to_string()).expect("write session");
    let log = s.home.path().join("state/him/matrix/bridge.log");

    let mut panel = FakeExtension::start(&s.runtime()).await;
    let agent = s.agent("restart-homeserver-agent").await;
    let asking = call_meanwhile(&agent, "ask_text", json!({"question": "Which tag?"}));
    panel.take_ask().await;
    let question = s.phone.question(&s.room, &s.bot).await;

    // The homeserver goes away (as in a restart): the bridge's sync fails.
    let failures_before = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .matches("sync failed")
        .count();
    proxy.down().await;
    support::eventually("the bridge's sync failing", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("sync failed")
            .count()
            > failures_before
    })
    .await;

    // Meanwhile another question is answered in the panel: nothing waits on the homeserver.
    let meanwhile = call_meanwhile(&agent, "ask_text", json!({"question": "Meanwhile?"}));
    let ask = panel.take_ask().await;
    assert!(ask.to_string().contains("Meanwhile?"), "{ask}");
    panel
        .submit(&ask["id"], json!({"answer": "at the desk"}))
        .await;
    let result = meanwhile.await.expect("the question meanwhile");
    assert_eq!(result["answer"], "at the desk", "{result}");
    assert_eq!(result["via"], "extension");

    // A question asked while the homeserver is away cannot be posted: it is, once it is back.
    let later = call_meanwhile(&agent, "ask_text", json!({"question": "Posted once back?"}));
    panel.take_ask().await;
    support::eventually("the bridge failing to post it", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("cannot post the question")
    })
    .await;

    // The person answers the first on the phone while the bridge cannot see it.
    s.phone.reply(&s.room, &question["event_id"], "v2.1").await;
    assert!(
        !asking.is_finished(),
        "an answer came while the homeserver was away"
    );
    proxy.up().await;
    let result = asking.await.expect("ask_text");
    assert_eq!(result["answer"], "v2.1", "{result}");
    assert_eq!(result["via"], "matrix");
    assert_eq!(result["answered_by"], s.phone.user_id.as_str());
    // The one the homeserver could not take is in the room now ("Meanwhile?", answered at
    // the desk, never is).
    let posted = s.phone.question(&s.room, &s.bot).await;
    let body = posted["content"]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(body.contains("Posted once back?"), "{posted}");
    s.phone
        .reply(&s.room, &posted["event_id"], "yes, now")
        .await;
    let result = later.await.expect("the question asked while away");
    assert_eq!(result["answer"], "yes, now", "{result}");
    assert_eq!(result["via"], "matrix");
    drop(agent);
    s.phone.stop().await;
}

/// Kills the bridge that listens in `s`'s runtime, and waits until it is gone.
async fn kill_bridge(s: &Setup) {
    let pid = nix::unistd::Pid::from_raw(bridge_pid(&s.runtime()).await);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("kill the bridge");
    support::eventually("the bridge gone", || {
        nix::sys::signal::kill(pid, None).is_err()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| stat.contains(") Z "))
    })
    .await;
}

/// A bridge started again by hand (as the next question would start one).
fn start_bridge(s: &Setup) -> tokio::process::Child {
    tokio::process::Command::new(support::him_bin())
        .args(["matrix", "bridge"])
        .envs(s.env())
        .env("HIM_RUNTIME_DIR", s.runtime())
        .env("HIM_LOG", "info")
        .kill_on_drop(true)
        .spawn()
        .expect("start the bridge again")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_form_half_answered_in_its_thread_survives_the_bridge_restarting() {
    let Some((server, _alone)) = ready() else {
        return;
    };
    let mut s = set_up(server, None).await;
    let agent = s.agent("form-restart-agent").await;
    let asking = call_meanwhile(
        &agent,
        "ask_form",
        json!({"title": "Deploy", "fields": [
                    {"name": "env", "type": "radio", "label": "Environment", "required": true,
                     "options": ["staging", "production"]},
                    {"name": "replicas", "type": "number", "label": "Replicas", "min": 1, "max": 9},
                    {"name": "notify", "type": "checkbox", "label": "Notify the team"}]}),
    );
    let question = s.phone.question(&s.room, &s.bot).await;
    let root = question["event_id"].clone();
    thread_message(&mut s, &root, "1/3: Environment").await;
    in_thread(&mut s, &root, "production", "2/3: Replicas").await;

    // Killed with nothing said meanwhile: the bridge started again says where the person is.
    kill_bridge(&s).await;
    let mut bridge = start_bridge(&s);
    let resumed = thread_message(&mut s, &root, "Going on where you were").await;
    assert!(resumed.contains("2/3: Replicas"), "{resumed}");
    in_thread(&mut s, &root, "3", "3/3: Notify the team").await;

    // Killed again; the person answers while no bridge runs: taken where they were.
    bridge.kill().await.expect("kill the bridge");
    s.phone
        .cmd(json!({"cmd": "thread_reply", "room": s.room, "root": root, "body": "yes"}))
        .await;
    let _bridge = start_bridge(&s);
    let summary = thread_message(&mut s, &root, "Send this?").await;
    assert!(summary.contains("Environment: production"), "{summary}");
    assert!(summary.contains("Replicas: 3"), "{summary}");
    s.phone
        .cmd(json!({"cmd": "thread_reply", "room": s.room, "root": root, "body": "yes"}))
        .await;
    let result = asking.await.expect("ask_form");
    assert_eq!(result["status"], "answered", "{result}");
    assert_eq!(result["via"], "matrix");
    assert_eq!(result["values"]["env"], "production");
    assert_eq!(result["values"]["replicas"], 3);
    assert_eq!(result["values"]["notify"], true);
    // What was kept for the thread leaves with the question (before the message says it
    // was answered).
    edit_saying(&mut s.phone, &question, "Answered by").await;
    let posted = std::fs::read_to_string(s.home.path().join("state/him/matrix/posted.json"))
        .unwrap_or_default();
    assert!(!posted.contains("replicas"), "{posted}");
    drop(agent);
    s.phone.stop().await;
}
