//! The agent side's links to hosts: closed when the agent's session ends, and never made
//! (nor anything deleted) in a runtime directory that others can write.

use std::os::unix::fs::PermissionsExt;

use crate::support::*;
use him::agent::pool::{Identity, Pool};
use him::wire::protocol::{AgentInfo, Ask, AskFrame};
use serde_json::json;

fn pool(runtime: &std::path::Path) -> Pool {
    let agent = AgentInfo {
        name: "pool-test".into(),
        title: None,
        version: None,
        via: None,
    };
    Pool::new(
        vec![runtime.to_owned()],
        Identity {
            agent,
            project: None,
        },
    )
}

fn ask() -> Ask {
    Ask {
        id: him::platform::random::question_id().expect("a question id"),
        form: json!({"title": "t", "fields": [{"name": "a", "type": "text", "label": "A"}]}),
        timeout_ms: 60_000,
        asked_at_ms: 0,
        project: None,
    }
}

/// Unix socket descriptors the host process holds open: its listener's, and each agent
/// link's (two: the link's writing half has a descriptor of its own).
fn host_sockets_open(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the host's fd table")
        .filter_map(Result::ok)
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with("socket:"))
        .count()
}

#[tokio::test]
async fn a_shut_down_pool_withdraws_its_questions_then_closes_its_links() {
    let runtime = runtime_dir();
    let mut ext = FakeExtension::start(runtime.path()).await;
    let idle = host_sockets_open(ext.pid);
    let pool = pool(runtime.path());
    let question = pool.open(AskFrame::new(ask())).await;
    let asked = ext.take_ask().await;
    assert!(host_sockets_open(ext.pid) > idle, "no link from this agent");
    pool.shutdown();
    let withdraw = ext.recv_type("withdraw").await;
    assert_eq!(
        (withdraw["id"].clone(), withdraw["reason"].clone()),
        (asked["id"].clone(), json!("shutdown"))
    );
    let pid = ext.pid;
    eventually("the host to see the link close", || {
        host_sockets_open(pid) == idle
    })
    .await;
    // A closed pool makes no new links.
    assert_eq!(pool.scan().await, 0);
    drop(question);
}

#[tokio::test]
async fn an_agent_neither_connects_nor_deletes_in_a_directory_others_can_write() {
    let runtime = runtime_dir();
    let hosts = runtime.path().join("hosts");
    std::fs::create_dir(&hosts).unwrap();
    let stale = hosts.join("999999.sock");
    leave_stale_socket(&stale);
    std::fs::set_permissions(&hosts, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(pool(runtime.path()).scan().await, 0);
    assert!(
        stale.exists(),
        "nothing is deleted in a directory others can write"
    );
    // Made private again, the same directory is cleaned up as usual.
    std::fs::set_permissions(&hosts, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(pool(runtime.path()).scan().await, 0);
    assert!(!stale.exists());
}
