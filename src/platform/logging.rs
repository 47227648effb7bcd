//! Logs go to stderr, always: stdout is the protocol in both the MCP server and the host.

use std::str::FromStr;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the stderr logger, filtered by `HIM_LOG` (default `warn`). Safe to call twice.
///
/// rmcp logs whole messages at debug level, and a tool result can hold a password the
/// person typed for the agent; its info lines are session chatter. So rmcp stays at `warn`
/// unless `HIM_LOG` names it on purpose.
///
/// The filter is a list of `target=level` and a bare default level (`Targets`), not
/// `EnvFilter`: span and field filters are of no use here, and `EnvFilter` brings a regex
/// engine whose code and start-up work every `him` process would pay for.
pub fn init() {
    let him_log = std::env::var("HIM_LOG").ok();
    let (filter, rejected) = parse_filter(him_log.as_deref());
    let installed = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false),
        )
        .with(filter)
        .try_init();
    if let (Ok(()), Some(why)) = (installed, rejected) {
        tracing::warn!("HIM_LOG ignored ({why}); logging at warn");
    }
}

/// The filter for `HIM_LOG`, and why it was rejected when it was.
fn parse_filter(him_log: Option<&str>) -> (Targets, Option<String>) {
    let directives = filter_directives(him_log);
    match Targets::from_str(&directives) {
        Ok(targets) => (targets, None),
        Err(err) => (
            Targets::from_str("warn,rmcp=warn").unwrap_or_default(),
            Some(format!("{:?}: {err}", him_log.unwrap_or_default())),
        ),
    }
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
    use tracing::Level;
    use tracing::level_filters::LevelFilter;

    use super::*;

    #[test]
    fn rmcp_message_dumps_stay_off_unless_asked_for() {
        assert_eq!(filter_directives(None), "warn,rmcp=warn");
        assert_eq!(filter_directives(Some("debug")), "debug,rmcp=warn");
        assert_eq!(filter_directives(Some("rmcp=trace")), "rmcp=trace");
        let (targets, rejected) = parse_filter(Some("debug"));
        assert!(rejected.is_none());
        assert!(targets.would_enable("him::agent", &Level::DEBUG));
        assert!(!targets.would_enable("rmcp::service", &Level::INFO));
        assert!(targets.would_enable("rmcp::service", &Level::WARN));
    }

    #[test]
    fn per_target_levels_apply() {
        let (targets, rejected) = parse_filter(Some("him=trace"));
        assert!(rejected.is_none());
        assert!(targets.would_enable("him::host", &Level::TRACE));
        assert!(!targets.would_enable("hyper", &Level::INFO));
        assert_eq!(targets.default_level(), None);
    }

    #[test]
    fn a_filter_that_does_not_parse_falls_back_to_warn_and_says_why() {
        let (targets, rejected) = parse_filter(Some("him=loud"));
        let why = rejected.expect("rejected");
        assert!(why.contains("him=loud"), "{why}");
        assert_eq!(targets.default_level(), Some(LevelFilter::WARN));
        assert!(!targets.would_enable("him::host", &Level::INFO));
    }
}
