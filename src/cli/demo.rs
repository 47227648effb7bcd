//! `him try`: a demo question in the side panel, so a person sees him work before any agent
//! is set up. It goes only to a browser's panel: with none connected, `him try` says so and
//! how to find out why (`him doctor`) instead of asking in the terminal, which would show
//! nothing of what the install was for.

use std::process::ExitCode;
use std::time::Duration;

use crate::BoxError;
use crate::agent::pool::{Identity, Pool};
use crate::agent::prepare;
use crate::agent::presence::MatrixRoute;
use crate::agent::tools::{AskFormArgs, AskTool, ToolKind};
use crate::config::Config;
use crate::form::Form;
use crate::wire::protocol::AgentInfo;

/// How long the demo question waits for the person.
const WAIT: Duration = Duration::from_secs(10 * 60);

/// How long a connected host gets to say which extension is behind it.
const WELCOME_WAIT: Duration = Duration::from_secs(3);

/// The demo question: a choice and an optional note, as an agent's `ask_form` would send.
pub const DEMO_FORM: &str = r#"{
  "title": "Hello from him: this is how an agent asks you",
  "description": "When an agent needs a decision, its question appears here. Pick an answer: it goes back to `him try` in your terminal, as it would to the agent.",
  "submitLabel": "Send to the terminal",
  "fields": [
    {"name": "next", "type": "radio", "label": "What should the agent do next?",
     "options": ["Run the tests", "Open a pull request", "Wait for me"], "required": true},
    {"name": "note", "type": "text", "label": "Anything to add? (optional)"}
  ]
}"#;

pub fn demo_form() -> Result<Form, BoxError> {
    let args: AskFormArgs = serde_json::from_str(DEMO_FORM)?;
    Ok(args.to_form().map_err(|e| e.message)?)
}

fn him_try() -> AgentInfo {
    AgentInfo {
        name: "him try".into(),
        title: None,
        version: Some(env!("CARGO_PKG_VERSION").into()),
        via: None,
    }
}

pub fn run() -> Result<ExitCode, BoxError> {
    crate::platform::logging::init();
    let config = Config::from_env()?;
    let pool = |config: &Config| {
        // The demo is for the panel just installed: never the phone, nor a team's room.
        Pool::for_runtime(&config.runtime, Identity::with_cwd_project(him_try()))
            .with_matrix_route(MatrixRoute::Never, config.reconnect_grace)
    };
    if !browser_connected(&config, pool)? {
        eprintln!(
            "him try: no browser with the him extension is connected, so there is no panel to \
             show the demo question in.\n  Start the browser you loaded the extension in (`him \
             install` said how). If it is running, `him doctor` says what is missing."
        );
        return Ok(ExitCode::FAILURE);
    }
    let prepared = prepare::prepare(ToolKind::Form, demo_form()?, WAIT)?;
    // `ask_once` says where it waits, how to open the panel, and that Ctrl-C withdraws it.
    let result = crate::cli::ask::ask_once(&config, pool, prepared, false)?;
    eprintln!("him: this is what the agent would get:");
    crate::cli::ask::print_result(&result)
}

/// Whether a browser's host is running with the extension behind it.
fn browser_connected(
    config: &Config,
    pool: impl FnOnce(&Config) -> Pool,
) -> Result<bool, BoxError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(async {
        let pool = pool(config);
        let found = pool.scan().await > 0 && {
            pool.welcomed(WELCOME_WAIT).await;
            pool.hosts().iter().any(|h| h.extension.is_some())
        };
        pool.close(Duration::ZERO).await;
        found
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_demo_form_is_a_valid_ask_form() {
        let form = super::demo_form().expect("valid");
        assert_eq!(form.fields.len(), 2);
    }
}
