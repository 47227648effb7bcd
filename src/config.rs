//! The `HIM_*` configuration of DESIGN.md §5, read once from the environment. Parsing takes
//! a lookup function so tests need not touch the process environment.

use std::time::Duration;

use crate::agent::presence::MatrixRoute;
use crate::wire::runtime::Located;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackMode {
    /// Hand the question back to the chat (`needs_user_input`).
    Return,
    /// Serve a one-time loopback web form.
    Http,
    /// Answer `unsupported`.
    Off,
}

impl FallbackMode {
    pub fn name(self) -> &'static str {
        match self {
            FallbackMode::Return => "return",
            FallbackMode::Http => "http",
            FallbackMode::Off => "off",
        }
    }
}

/// Which clients that declare the MCP tasks extension get a task from an ask tool
/// (`HIM_TASKS`, `mcp/tasks.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TasksMode {
    /// Every one but Claude Code, whose terminal UI (2.1.332) moves a task to the background
    /// at once and hands its result to the model marked as not the user's input.
    Auto,
    /// Every one.
    On,
    /// None: every call blocks, as for a client that declares nothing.
    Off,
}

impl TasksMode {
    pub fn name(self) -> &'static str {
        match self {
            TasksMode::Auto => "auto",
            TasksMode::On => "on",
            TasksMode::Off => "off",
        }
    }
}

/// When an ask tool's call returns `pending` with the question still open (`HIM_RETURN_AFTER_MS`,
/// `agent/pending.rs`), so that a client that cuts or backgrounds a long call still gets the
/// person's answer as a tool result (of `get_answer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnAfter {
    /// [`AUTO_RETURN_AFTER`] for Claude Code, whose terminal UI (2.1.332) moves a call still
    /// running at 120 s to the background; never for other clients.
    Auto,
    /// Never: every call waits to its end.
    Never,
    /// After this long, for every client.
    After(Duration),
}

/// The limit `auto` gives Claude Code: well inside its 120 s.
pub const AUTO_RETURN_AFTER: Duration = Duration::from_secs(100);

impl ReturnAfter {
    /// As `HIM_RETURN_AFTER_MS` would say it.
    pub fn name(self) -> String {
        match self {
            ReturnAfter::Auto => "auto".into(),
            ReturnAfter::Never => "0".into(),
            ReturnAfter::After(after) => after.as_millis().to_string(),
        }
    }

    /// The limit for the client named `client` (its `clientInfo.name`), if it has one.
    pub fn for_client(self, client: Option<&str>) -> Option<Duration> {
        match self {
            ReturnAfter::Auto => client
                .is_some_and(crate::agent::asker::is_claude_code)
                .then_some(AUTO_RETURN_AFTER),
            ReturnAfter::Never => None,
            ReturnAfter::After(after) => Some(after),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub timeout: Duration,
    pub fallback: FallbackMode,
    pub tasks: TasksMode,
    pub auto_reject: Duration,
    pub heartbeat: Duration,
    pub reconnect_grace: Duration,
    /// How long a question whose call ended unanswered stays answerable, its answer kept
    /// for the agent (`HIM_KEEP_MS`; zero keeps nothing).
    pub keep: Duration,
    /// When a call returns `pending` (`HIM_RETURN_AFTER_MS`).
    pub return_after: ReturnAfter,
    /// When a question goes to the Matrix room (`HIM_MATRIX`, `HIM_AWAY_MS`).
    pub matrix_route: MatrixRoute,
    /// Where hosts listen and agents look (DESIGN.md §1).
    pub runtime: Located,
}

pub const MIN_WAIT: Duration = Duration::from_secs(1);
pub const MAX_WAIT: Duration = Duration::from_secs(24 * 60 * 60);
/// The longest a question is kept for its agent (`HIM_KEEP_MS`).
pub const MAX_KEEP: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// A `HIM_*_MS` variable: `default` when unset or blank, else a whole number of
/// milliseconds.
pub fn millis(
    lookup: impl Fn(&str) -> Option<String>,
    variable: &'static str,
    default: u64,
) -> Result<u64, ConfigError> {
    match lookup(variable).filter(|v| !v.trim().is_empty()) {
        None => Ok(default),
        Some(value) => value.trim().parse().map_err(|_| ConfigError {
            variable,
            value,
            expected: "a whole number of milliseconds",
        }),
    }
}

/// Every wait is clamped to 1 s – 24 h (§5).
pub fn clamp_wait(ms: u64) -> Duration {
    Duration::from_millis(ms).clamp(MIN_WAIT, MAX_WAIT)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}={:?} is not valid: expected {}",
            self.variable, self.value, self.expected
        )
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    pub fn from_env() -> Result<Config, ConfigError> {
        let located = crate::wire::runtime::runtime_dir().unwrap_or_else(|err| {
            // The other channels still work; only the browser cannot be found.
            tracing::warn!("{err}; questions go to the other channels");
            Located {
                dir: std::path::PathBuf::new(),
                rule: crate::wire::runtime::Rule::Home,
                also: Vec::new(),
                forwarded: None,
            }
        });
        Config::from_lookup(|name| std::env::var(name).ok(), located)
    }

    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        located: Located,
    ) -> Result<Config, ConfigError> {
        let millis = |variable: &'static str, default: u64| millis(&lookup, variable, default);
        let fallback = match lookup("HIM_FALLBACK").as_deref().map(str::trim) {
            None | Some("") | Some("return") => FallbackMode::Return,
            Some("http") => FallbackMode::Http,
            Some("off") => FallbackMode::Off,
            Some(other) => {
                return Err(ConfigError {
                    variable: "HIM_FALLBACK",
                    value: other.to_owned(),
                    expected: "return, http or off",
                });
            }
        };
        let tasks = match lookup("HIM_TASKS").as_deref().map(str::trim) {
            None | Some("") | Some("auto") => TasksMode::Auto,
            Some("on") => TasksMode::On,
            Some("off") => TasksMode::Off,
            Some(other) => {
                return Err(ConfigError {
                    variable: "HIM_TASKS",
                    value: other.to_owned(),
                    expected: "auto, on or off",
                });
            }
        };
        let return_after = match lookup("HIM_RETURN_AFTER_MS").as_deref().map(str::trim) {
            None | Some("") | Some("auto") => ReturnAfter::Auto,
            Some(_) => match millis("HIM_RETURN_AFTER_MS", 0) {
                Ok(0) => ReturnAfter::Never,
                // Clamped as a wait is: a call that returns at once would only spin.
                Ok(ms) => ReturnAfter::After(clamp_wait(ms)),
                Err(err) => {
                    return Err(ConfigError {
                        expected: "auto, 0 (never) or a whole number of milliseconds",
                        ..err
                    });
                }
            },
        };
        let away = Duration::from_millis(millis(
            "HIM_AWAY_MS",
            crate::agent::presence::DEFAULT_AWAY.as_millis() as u64,
        )?)
        .min(MAX_WAIT);
        let matrix_route = match lookup("HIM_MATRIX").as_deref().map(str::trim) {
            None | Some("") | Some("away") => MatrixRoute::Away(away),
            Some("always") => MatrixRoute::Always,
            Some("never") => MatrixRoute::Never,
            Some(other) => {
                return Err(ConfigError {
                    variable: "HIM_MATRIX",
                    value: other.to_owned(),
                    expected: "away, always or never",
                });
            }
        };
        Ok(Config {
            timeout: clamp_wait(millis("HIM_TIMEOUT_MS", 300_000)?),
            fallback,
            tasks,
            auto_reject: Duration::from_millis(millis("HIM_AUTO_REJECT_MS", 400)?),
            // A zero period would spin; 100 ms is already far more often than any client needs.
            heartbeat: Duration::from_millis(millis("HIM_HEARTBEAT_MS", 10_000)?.max(100))
                .min(MAX_WAIT),
            // Bounded like every wait: a huge value would overflow the clock arithmetic.
            reconnect_grace: Duration::from_millis(millis("HIM_RECONNECT_GRACE_MS", 15_000)?)
                .min(MAX_WAIT),
            // Bounded so that the clock arithmetic cannot overflow.
            keep: Duration::from_millis(millis(
                "HIM_KEEP_MS",
                crate::wire::keep::DEFAULT_KEEP.as_millis() as u64,
            )?)
            .min(MAX_KEEP),
            return_after,
            matrix_route,
            runtime: located,
        })
    }

    /// The wait for one question: the call's own `timeout_ms`, else the configured default,
    /// clamped either way.
    pub fn wait_for(&self, timeout_ms: Option<u64>) -> Duration {
        timeout_ms.map(clamp_wait).unwrap_or(self.timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::runtime::Rule;
    use std::path::PathBuf;

    fn config(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(
            move |name| {
                pairs
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            },
            Located {
                dir: PathBuf::from("/r"),
                rule: Rule::Override,
                also: Vec::new(),
                forwarded: None,
            },
        )
    }

    #[test]
    fn defaults_are_those_of_the_design() {
        let c = config(&[]).unwrap();
        assert_eq!(c.timeout, Duration::from_secs(300));
        assert_eq!(c.fallback, FallbackMode::Return);
        assert_eq!(c.tasks, TasksMode::Auto);
        assert_eq!(c.auto_reject, Duration::from_millis(400));
        assert_eq!(c.heartbeat, Duration::from_secs(10));
        assert_eq!(c.reconnect_grace, Duration::from_secs(15));
        assert_eq!(c.keep, Duration::from_secs(24 * 60 * 60));
        assert_eq!(c.return_after, ReturnAfter::Auto);
    }

    #[test]
    fn return_after_auto_is_100_s_for_claude_code_only() {
        let auto = config(&[]).unwrap().return_after;
        assert_eq!(
            auto.for_client(Some("claude-code")),
            Some(Duration::from_secs(100))
        );
        for other in [Some("codex"), Some("Claude Code"), Some("mcp"), None] {
            assert_eq!(auto.for_client(other), None, "{other:?}");
        }
        let never = config(&[("HIM_RETURN_AFTER_MS", "0")])
            .unwrap()
            .return_after;
        assert_eq!(never, ReturnAfter::Never);
        assert_eq!(never.for_client(Some("claude-code")), None);
        let set = config(&[("HIM_RETURN_AFTER_MS", " 15000 ")]).unwrap();
        assert_eq!(
            set.return_after.for_client(Some("codex")),
            Some(Duration::from_secs(15))
        );
        assert_eq!(set.return_after.name(), "15000");
        // Clamped as every wait: at least a second.
        let tiny = config(&[("HIM_RETURN_AFTER_MS", "5")]).unwrap();
        assert_eq!(tiny.return_after, ReturnAfter::After(MIN_WAIT));
        let err = config(&[("HIM_RETURN_AFTER_MS", "100s")]).unwrap_err();
        assert_eq!(err.variable, "HIM_RETURN_AFTER_MS");
        assert!(err.to_string().contains("auto, 0 (never)"), "{err}");
    }

    #[test]
    fn waits_are_clamped_to_a_second_and_a_day() {
        let c = config(&[("HIM_TIMEOUT_MS", "5")]).unwrap();
        assert_eq!(c.timeout, MIN_WAIT);
        assert_eq!(c.wait_for(Some(u64::MAX)), MAX_WAIT);
        assert_eq!(c.wait_for(Some(2500)), Duration::from_millis(2500));
        assert_eq!(c.wait_for(None), MIN_WAIT);
    }

    #[test]
    fn a_bad_value_names_the_variable() {
        let err = config(&[("HIM_FALLBACK", "email")]).unwrap_err();
        assert_eq!(err.variable, "HIM_FALLBACK");
        assert!(err.to_string().contains("return, http or off"));
        let err = config(&[("HIM_TASKS", "yes")]).unwrap_err();
        assert_eq!(err.variable, "HIM_TASKS");
        assert!(err.to_string().contains("auto, on or off"));
        let err = config(&[("HIM_HEARTBEAT_MS", "soon")]).unwrap_err();
        assert_eq!(err.variable, "HIM_HEARTBEAT_MS");
    }
}
