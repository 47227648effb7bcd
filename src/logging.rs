//! Logs go to stderr, always: stdout is the protocol in both the MCP server and the host.

use tracing_subscriber::EnvFilter;

/// Installs the stderr logger, filtered by `HIM_LOG` (default `warn`). Safe to call twice.
///
/// rmcp logs whole messages at debug level, and a tool result can hold a password the
/// person typed for the agent; its info lines are session chatter. So rmcp stays at `warn`
/// unless `HIM_LOG` names it on purpose.
pub fn init() {
    let filter = filter_directives(std::env::var("HIM_LOG").ok().as_deref());
    let filter = EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

fn filter_directives(him_log: Option<&str>) -> String {
    let base = him_log
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("warn");
    if base.contains("rmcp") {
        base.to_owned()
    } else {
        format!("{base},rmcp=warn")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rmcp_message_dumps_stay_off_unless_asked_for() {
        assert_eq!(super::filter_directives(None), "warn,rmcp=warn");
        assert_eq!(super::filter_directives(Some("debug")), "debug,rmcp=warn");
        assert_eq!(super::filter_directives(Some("rmcp=trace")), "rmcp=trace");
    }
}
