//! The signals that stop a process of him's the way end of input does: SIGINT (Ctrl-C, and
//! how Claude Code stops `him serve` first), SIGTERM (a script's kill, a supervisor) and
//! SIGHUP (the terminal closing). `him serve`, `serve --http` and `him ask` stop on the same
//! three, so a question is kept or withdrawn alike whichever one comes.

use std::future::Future;

use tokio::signal::unix::{SignalKind, signal};

/// Resolves on SIGINT, SIGTERM or SIGHUP. The handlers are installed here, at once (call it
/// inside the runtime), so a signal that comes before the first poll is not lost to its
/// default action (the process ending without its clean-up).
pub fn stop_signals() -> impl Future<Output = ()> + Send + 'static {
    let kinds = [
        ("SIGINT", SignalKind::interrupt()),
        ("SIGTERM", SignalKind::terminate()),
        ("SIGHUP", SignalKind::hangup()),
    ];
    let mut streams: Vec<_> = kinds
        .into_iter()
        .filter_map(|(name, kind)| match signal(kind) {
            Ok(stream) => Some((name, stream)),
            Err(err) => {
                tracing::warn!("cannot handle {name}: {err}");
                None
            }
        })
        .collect();
    async move {
        if streams.is_empty() {
            return std::future::pending().await;
        }
        let waits = streams
            .iter_mut()
            .map(|(name, stream)| Box::pin(async move { stream.recv().await.map(|_| *name) }));
        if let (Some(name), ..) = futures::future::select_all(waits).await {
            tracing::info!("stopped by {name}");
        }
    }
}
