//! Logs go to stderr, always: stdout is the protocol in both the MCP server and the host.

use tracing_subscriber::EnvFilter;

/// Installs the stderr logger, filtered by `HIM_LOG` (default `warn`). Safe to call twice.
pub fn init() {
    let filter = EnvFilter::try_from_env("HIM_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
