//! `him hook claude-code|codex`: an agent's `PermissionRequest` hook, one process per
//! permission prompt. Reads the hook's JSON on stdin, asks the side panel with the same
//! permission card as the `approve` tool (`permission/mod.rs`), writes the decision in the
//! agent's format on stdout, and always exits 0.
//!
//! Formats, verified with Claude Code 2.1.197 and Codex 0.171.0 (offline, against loopback
//! model stand-ins):
//! - stdin, Claude Code: `{"session_id", "transcript_path", "cwd", "prompt_id",
//!   "permission_mode", "hook_event_name": "PermissionRequest", "tool_name": "Bash",
//!   "tool_input": {"command", "description"}, "permission_suggestions": […]}` (no
//!   `tool_use_id`: the process itself is the one call). Codex: `{"session_id", "turn_id",
//!   "transcript_path", "cwd", "hook_event_name": "PermissionRequest", "model",
//!   "permission_mode", "tool_name": "Bash", "tool_input": {…}}`.
//! - stdout, both: `{"hookSpecificOutput": {"hookEventName": "PermissionRequest",
//!   "decision": {"behavior": "allow"}}}`, or `"behavior": "deny", "message": M`. Claude Code
//!   also takes `updatedInput` in an allow (used for AskUserQuestion's answers); Codex fails
//!   closed on it, so Codex never gets one.
//! - Claude Code 2.1.332's `permission_suggestions` (seen in its interactive UI, offline): for
//!   `npm test` `[{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test
//!   *"}], "behavior": "allow", "destination": "localSettings"}]` (its prompt's "Yes, and don't
//!   ask again for: npm test *"; `git push origin main` gives `git push *`, `cd sub && make
//!   test` gives `make test *`); for a command that writes in the project (`echo ran >>
//!   marker.txt`) `[{"type": "addDirectories", "directories": [cwd], "destination":
//!   "session"}]`, for `rm -rf build` that and `{"type": "setMode", "mode": "acceptEdits",
//!   "destination": "session"}`, for a Write only the `setMode`. An allow may carry
//!   `"updatedPermissions": [...]` (its hook output schema: `decision: {behavior: "allow",
//!   updatedInput?, updatedPermissions?}`). The suggestion sent back verbatim writes
//!   `Bash(npm test *)` into the project's `.claude/settings.local.json`; sent back with
//!   `"destination": "session"` the rule holds for the session and nothing is written, and
//!   the same call again runs without the hook being run. So "allow for this session" sends
//!   the `addRules` suggestions back with the destination `session`, and nothing else
//!   (`permission::session_offer`). Codex sends no suggestions and gets no updates.
//! - No decision, which leaves the agent's own terminal prompt to ask, is empty stdout and
//!   exit 0. There is no "ask" behaviour, and exit 2 is a deny for Codex, so when nobody
//!   decides (no browser, no answer in time, the hook is stopped) this writes nothing and
//!   exits 0: it never denies and never allows on its own.
//!
//! Hooks run with no controlling terminal, so this never prompts in one, and it offers no
//! loopback form: the agent's terminal is the fallback.
//!
//! Run end to end in the agents' interactive UIs (tests/e2e/claude-code-tui.test.mjs and
//! codex-tui.test.mjs) with Claude Code 2.1.332 and Codex 0.171.0: allow runs the call
//! (Claude Code shows "Allowed by PermissionRequest hook"), deny reaches the model as an
//! error with the message, and no decision leaves the agent's own prompt waiting. Claude
//! Code draws its prompt while the hook runs and takes it down when the hook decides. Codex
//! sends an `exec_command` asked for outside the sandbox as `tool_name: "Bash"`,
//! `tool_input: {"command", "description"}` (the description is the model's justification).
//!
//! First answer wins between the panel and the agent's own prompt (`overtaken.rs` has what
//! each agent was seen to do to a running hook). Claude Code 2.1.332, answered Yes (or No
//! with a note) in its terminal, leaves the hook running and ignores its later output, so
//! the hook watches the transcript for the call's result; answered No or Esc there, it
//! sends SIGTERM (SIGKILL 1.3 s later). Codex 0.171.0 shows no prompt of its own while the
//! hook runs; Esc there SIGKILLs the hook (the host then withdraws the card), and its exit
//! closes the hook's stdout. Each ends the wait at once: the card is withdrawn and nothing
//! is written.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::BoxError;
use crate::agent::pool::{Identity, Pool};
use crate::agent::wait::Outcome;
use crate::cli::{HookAgent, HookArgs};
use crate::config::{Config, clamp_wait};
use crate::permission::{self, Decision, Request};
use crate::wire::protocol::AgentInfo;

mod overtaken;
use overtaken::{Call, overtaken};

/// How long `him hook` waits for the panel by default: well below both agents' default
/// command-hook timeout (600 s in Claude Code 2.1 and Codex 0.171), and short enough that
/// a person at the terminal is not kept long from the agent's own prompt. `him config`
/// sets the hook's `timeout` to [`HOOK_TIMEOUT_S`], above this.
pub const DEFAULT_WAIT_MS: u64 = 60_000;
/// The hook `timeout` (seconds) `him config` writes: the wait plus room to start and exit.
pub const HOOK_TIMEOUT_S: u64 = 90;

/// The hook's stdin is a few KiB; a tool input can be a whole file for Write.
const MAX_INPUT: u64 = 8 * 1024 * 1024;

/// The part of the hook's input this reads; everything else is ignored.
#[derive(Debug, Deserialize)]
struct HookInput {
    #[serde(default)]
    hook_event_name: String,
    tool_name: String,
    #[serde(default)]
    tool_input: Value,
    #[serde(default)]
    cwd: String,
    #[serde(default)]
    transcript_path: Option<PathBuf>,
    /// Claude Code's offers of permission updates for this call (see the module doc).
    #[serde(default)]
    permission_suggestions: Option<Value>,
}

impl HookAgent {
    fn label(self) -> &'static str {
        match self {
            HookAgent::ClaudeCode => "Claude Code",
            HookAgent::Codex => "Codex",
        }
    }
}

pub fn run(args: HookArgs) -> Result<ExitCode, BoxError> {
    crate::platform::logging::init();
    let agent = args.agent;
    let defer = |why: &str| {
        eprintln!("him hook: {why}; leaving the decision to {}", agent.label());
        Ok(ExitCode::SUCCESS)
    };
    let mut text = String::new();
    if let Err(err) = std::io::stdin().take(MAX_INPUT).read_to_string(&mut text) {
        return defer(&format!("cannot read the hook input ({err})"));
    }
    let input: HookInput = match serde_json::from_str(&text) {
        Ok(input) => input,
        Err(err) => {
            return defer(&format!(
                "the hook input is not what {} sends ({err})",
                agent.label()
            ));
        }
    };
    if input.hook_event_name != "PermissionRequest" {
        return defer(&format!(
            "him answers PermissionRequest hooks only, not {:?}",
            input.hook_event_name
        ));
    }
    let config = Config::from_env()?;
    let wait = clamp_wait(args.wait_ms.unwrap_or(DEFAULT_WAIT_MS));
    let answers_questions = input.tool_name == permission::ASK_USER_QUESTION;
    let decision = ask(agent, input, &config, wait)?;
    tracing::info!(decision = decision.name(), "hook decided");
    match decision_json(agent, answers_questions, &decision) {
        Some(output) => {
            let mut stdout = std::io::stdout().lock();
            serde_json::to_writer(&mut stdout, &output)?;
            writeln!(stdout)?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let Decision::Undecided { why } = decision else {
                return Ok(ExitCode::SUCCESS);
            };
            defer(why.trim_end_matches('.'))
        }
    }
}

fn ask(
    agent: HookAgent,
    input: HookInput,
    config: &Config,
    wait: Duration,
) -> Result<Decision, BoxError> {
    // Only Claude Code's own prompt can be answered while the hook waits (overtaken.rs).
    let call = Call {
        tool_name: input.tool_name.clone(),
        tool_input: input.tool_input.clone(),
        transcript: match agent {
            HookAgent::ClaudeCode => input.transcript_path.clone(),
            HookAgent::Codex => None,
        },
    };
    let request = Request {
        tool_name: input.tool_name,
        input: input.tool_input,
        tool_use_id: None,
        suggestions: suggestions(agent, input.permission_suggestions),
    };
    let prompt = permission::prompt_for(&request, agent.label());
    // The project is the agent's, which the hook input names; him's own working directory
    // is normally the same.
    let project = std::path::Path::new(&input.cwd)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let info = AgentInfo {
        name: agent.label().into(),
        title: None,
        version: None,
        via: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (prompt, outcome) = runtime.block_on(async {
        let identity = match project {
            Some(project) => Identity {
                agent: info,
                project: Some(project),
            },
            None => Identity::with_cwd_project(info),
        };
        let pool = Pool::for_runtime(&config.runtime, identity)
            .with_matrix_route(config.matrix_route, config.reconnect_grace);
        let started = std::time::Instant::now();
        let mut prompt = prompt;
        let mut outcome = permission::ask_until(
            &pool,
            &prompt,
            wait,
            config.reconnect_grace,
            overtaken(call.clone()),
        )
        .await;
        // A host or gateway older than "allow for this session" refuses a card with a
        // third choice: the person still gets Allow and Deny, in the time left.
        if matches!(outcome, Outcome::Refused(_)) && prompt.offers_session() {
            tracing::info!("a host refused the card with the session choice; asking without it");
            let plain = Request {
                suggestions: Vec::new(),
                ..request.clone()
            };
            prompt = permission::prompt_for(&plain, agent.label());
            outcome = permission::ask_until(
                &pool,
                &prompt,
                wait.saturating_sub(started.elapsed()),
                config.reconnect_grace,
                overtaken(call),
            )
            .await;
        }
        // The withdrawal (or the `accepted`) is queued on each host's link; let those tasks
        // write it before the runtime goes, so the panel says why the card left (timed out,
        // answered) rather than seeing the link close.
        pool.close(crate::agent::pool::EXIT_WAIT).await;
        (prompt, outcome)
    });
    Ok(permission::decide(&request, &prompt, outcome))
}

/// The suggestions the card may offer: Claude Code's, as it sent them. Codex sends none, and
/// an allow with updates is not in its hook format.
fn suggestions(agent: HookAgent, sent: Option<Value>) -> Vec<Value> {
    match (agent, sent) {
        (HookAgent::ClaudeCode, Some(Value::Array(suggestions))) => suggestions,
        _ => Vec::new(),
    }
}

/// The decision in the agent's hook format; `None` for no decision (empty stdout).
/// `answers_questions`: the call is AskUserQuestion, whose input the answers change.
fn decision_json(agent: HookAgent, answers_questions: bool, decision: &Decision) -> Option<Value> {
    let decision = match decision {
        Decision::Allow {
            updated_input,
            updated_permissions,
        } => {
            let mut allow = json!({"behavior": "allow"});
            // Codex fails closed on either key: it gets a bare allow.
            if agent == HookAgent::ClaudeCode {
                // Only where the answers are the point does the input change; any other
                // tool's input is its own, whatever keys it has.
                if answers_questions {
                    allow["updatedInput"] = updated_input.clone();
                }
                // The person chose "allow for this session": the rules Claude Code offered.
                if !updated_permissions.is_empty() {
                    allow["updatedPermissions"] = Value::from(updated_permissions.clone());
                }
            }
            allow
        }
        Decision::Deny { message } => json!({"behavior": "deny", "message": message}),
        Decision::Undecided { .. } => return None,
    };
    Some(json!({
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_never_gets_an_updated_input() {
        let allow = Decision::Allow {
            updated_input: json!({"questions": [], "answers": {}}),
            updated_permissions: Vec::new(),
        };
        let codex = decision_json(HookAgent::Codex, true, &allow).unwrap();
        assert_eq!(
            codex,
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
        );
        let claude = decision_json(HookAgent::ClaudeCode, true, &allow).unwrap();
        assert!(claude["hookSpecificOutput"]["decision"]["updatedInput"].is_object());
    }

    #[test]
    fn a_tool_whose_input_has_answers_keeps_its_input_and_gets_its_session_rules() {
        let offered = vec![json!({"type": "addRules",
            "rules": [{"toolName": "mcp__forms__submit"}],
            "behavior": "allow", "destination": "session"})];
        let allow = Decision::Allow {
            updated_input: json!({"answers": ["a"]}),
            updated_permissions: offered.clone(),
        };
        assert_eq!(
            decision_json(HookAgent::ClaudeCode, false, &allow).unwrap(),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow", "updatedPermissions": offered}}})
        );
    }

    #[test]
    fn nobody_deciding_writes_nothing() {
        let undecided = Decision::Undecided { why: "x".into() };
        assert_eq!(
            decision_json(HookAgent::ClaudeCode, false, &undecided),
            None
        );
        assert_eq!(decision_json(HookAgent::Codex, false, &undecided), None);
    }

    #[test]
    fn allow_for_the_session_sends_claude_code_the_updates_and_codex_none() {
        let offered = vec![json!({"type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "npm test *"}],
            "behavior": "allow", "destination": "session"})];
        let allow = Decision::Allow {
            updated_input: json!({"command": "npm test"}),
            updated_permissions: offered.clone(),
        };
        assert_eq!(
            decision_json(HookAgent::ClaudeCode, false, &allow).unwrap(),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow", "updatedPermissions": offered}}})
        );
        assert_eq!(
            decision_json(HookAgent::Codex, true, &allow).unwrap(),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
        );
    }

    #[test]
    fn claude_codes_suggestions_reach_the_card_and_codexs_input_never_does() {
        let input = r#"{"hook_event_name": "PermissionRequest", "tool_name": "Bash",
            "tool_input": {"command": "npm test"}, "cwd": "/p",
            "permission_suggestions": [{"type": "addRules", "behavior": "allow",
              "rules": [{"toolName": "Bash", "ruleContent": "npm test *"}],
              "destination": "localSettings"}]}"#;
        let input: HookInput = serde_json::from_str(input).unwrap();
        assert_eq!(
            suggestions(HookAgent::ClaudeCode, input.permission_suggestions.clone()).len(),
            1
        );
        assert!(suggestions(HookAgent::Codex, input.permission_suggestions).is_empty());
        assert!(suggestions(HookAgent::ClaudeCode, Some(json!("not a list"))).is_empty());
    }
}
