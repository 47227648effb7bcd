//! Starting him's own per-user services (the gateway, the Matrix bridge) so that they
//! outlive whoever started them.

use std::os::unix::process::CommandExt;
use std::process::Stdio;

/// Starts `him ARGS…` (a per-user service: the gateway, the Matrix bridge), detached, its
/// log going to `stderr`; returns its pid.
pub fn spawn_detached(args: &[&str], stderr: Stdio) -> Option<u32> {
    let what = args.join(" ");
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            tracing::warn!("cannot start him {what}: {err}");
            return None;
        }
    };
    // Its own process group: the browser ends its host (an MCP client its server), not the
    // service, whose questions must outlive it. Stdout is never the starter's pipe.
    let spawned = std::process::Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .process_group(0)
        .spawn();
    match spawned {
        Ok(mut child) => {
            let pid = child.id();
            tracing::info!(pid, "started him {what}");
            // Reaped when it ends, so no zombie stays while this process runs.
            std::thread::spawn(move || child.wait());
            Some(pid)
        }
        Err(err) => {
            tracing::warn!("cannot start him {what}: {err}");
            None
        }
    }
}
