//! The native host ends on SIGTERM (Firefox's way of closing it, and any supervisor's)
//! however the browser or test wired its stdin: a pipe (Chrome, Firefox) or a socket pair
//! (Node's `child_process`, which is how many tools and tests start programs). With a
//! socket pair the host reads stdin on a blocking thread that no one can interrupt, and it
//! once waited on that read for ever after the signal.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support;
use crate::support::*;
use him::wire::frame::{MAX_INBOUND, read_frame_sync};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Waits for `child` to exit, for at most `PATIENCE`.
fn exit_status(child: &mut Child) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Starts a host with `stdin`/`stdout` as given, waits for its socket, SIGTERMs it while
/// its stdin is still open, and checks that it exits 0 and removes its socket.
fn sigterm_ends_a_host_whose_stdin(stdin: Stdio, stdout: Stdio, mut read_hello: impl FnMut()) {
    let runtime = runtime_dir();
    let mut host = Command::new(him_bin())
        .arg(origin())
        .env("HIM_RUNTIME_DIR", runtime.path())
        .env("HIM_STATE_DIR", support::state_dir(runtime.path()))
        .env("HIM_LOG", "warn")
        .stdin(stdin)
        .stdout(stdout)
        .spawn()
        .expect("spawn host");
    read_hello();
    let socket = him::wire::runtime::socket_path(runtime.path(), host.id());
    let deadline = Instant::now() + PATIENCE;
    while !socket.exists() {
        assert!(Instant::now() < deadline, "the host never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(host.id() as i32), Signal::SIGTERM).expect("SIGTERM the host");
    let status = exit_status(&mut host);
    if status.is_none() {
        let _ = host.kill();
    }
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "the host must exit 0 on SIGTERM while its stdin stays open"
    );
    assert!(!socket.exists(), "the host left its socket behind");
}

#[test]
fn sigterm_ends_a_host_whose_stdin_is_a_socket_pair() {
    let (stdin_ours, stdin_theirs) = UnixStream::pair().expect("socket pair");
    let (mut stdout_ours, stdout_theirs) = UnixStream::pair().expect("socket pair");
    stdout_ours
        .set_read_timeout(Some(PATIENCE))
        .expect("read timeout");
    sigterm_ends_a_host_whose_stdin(
        Stdio::from(OwnedFd::from(stdin_theirs)),
        Stdio::from(OwnedFd::from(stdout_theirs)),
        || {
            let hello = read_frame_sync(&mut stdout_ours, MAX_INBOUND)
                .expect("read")
                .expect("the host's hello");
            assert!(String::from_utf8_lossy(&hello).contains("\"hello\""));
        },
    );
    drop(stdin_ours);
}

#[test]
fn sigterm_ends_a_host_whose_stdin_is_a_pipe() {
    let (stdin_read, stdin_write) = std::io::pipe().expect("pipe");
    let (mut stdout_read, stdout_write) = std::io::pipe().expect("pipe");
    sigterm_ends_a_host_whose_stdin(Stdio::from(stdin_read), Stdio::from(stdout_write), || {
        let hello = read_frame_sync(&mut stdout_read, MAX_INBOUND)
            .expect("read")
            .expect("the host's hello");
        assert!(String::from_utf8_lossy(&hello).contains("\"hello\""));
    });
    drop(stdin_write);
}
