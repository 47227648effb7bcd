//! `him ask text|choice|multi|confirm|form …`: one question from a shell script, through
//! the same path as the MCP tools. Prints the result object as JSON on stdout; exit 0 when
//! answered, 1 otherwise, 2 on bad arguments.

use std::io::{Read, Write};
use std::process::ExitCode;

use crate::BoxError;
use crate::agent::ask;
use crate::agent::pool::{Identity, Pool};
use crate::agent::prepare::{self, PrepareError, Prepared};
use crate::agent::tools::{
    ArgError, AskChoiceArgs, AskConfirmArgs, AskFormArgs, AskMultiSelectArgs, AskTextArgs, AskTool,
    OptionArg, ToolKind,
};
use crate::cli::{AskArgs, AskKind};
use crate::config::Config;
use crate::fallback::terminal::Terminal;
use crate::form::Form;
use crate::wire::protocol::AgentInfo;

const EXIT_BAD_ARGUMENTS: u8 = 2;

pub fn run(args: AskArgs) -> Result<ExitCode, BoxError> {
    crate::platform::logging::init();
    let kind = match (args.kind, &args.answer_of) {
        (None, Some(id)) => return answer_of(id, args.timeout_ms),
        (Some(kind), None) => kind,
        (Some(_), Some(_)) => {
            eprintln!("him ask: give either a question or --answer-of, not both");
            return Ok(ExitCode::from(EXIT_BAD_ARGUMENTS));
        }
        (None, None) => {
            eprintln!(
                "him ask: say what to ask (text, choice, multi, confirm, form), or give \
                 --answer-of QUESTION_ID"
            );
            return Ok(ExitCode::from(EXIT_BAD_ARGUMENTS));
        }
    };
    let (tool, form, form_timeout_ms) = match build_form(kind) {
        Ok(built) => built,
        Err(err) => {
            eprintln!("him ask: {err}");
            return Ok(ExitCode::from(EXIT_BAD_ARGUMENTS));
        }
    };
    let config = Config::from_env()?;
    // `--timeout-ms` wins over a wait the form's JSON names (`timeout_ms` or `timeoutMs`),
    // which would otherwise be read and then ignored.
    let timeout_ms = args.timeout_ms.or(form_timeout_ms);
    let prepared = match prepare::prepare(tool, form, config.wait_for(timeout_ms)) {
        Ok(prepared) => prepared,
        Err(PrepareError::TooLarge { error, .. }) => {
            eprintln!("him ask: {error}");
            return Ok(ExitCode::from(EXIT_BAD_ARGUMENTS));
        }
        Err(err) => return Err(err.into()),
    };
    let pool = |config: &Config| {
        Pool::for_runtime(&config.runtime, Identity::with_cwd_project(him_ask()))
            .with_matrix_route(config.matrix_route, config.reconnect_grace)
    };
    // Asked here only: `him serve` and hooks never take the terminal.
    let result = ask_once(&config, pool, prepared, !args.no_tty)?;
    print_result(&result)
}

/// Asks one prepared question through every channel `him ask` has (the terminal only when
/// `terminal` allows it) and returns its result once the question is over.
pub(crate) fn ask_once(
    config: &Config,
    pool: impl FnOnce(&Config) -> Pool,
    prepared: Prepared,
    terminal: bool,
) -> Result<crate::agent::result::AskResult, BoxError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(async {
        let pool = pool(config);
        // Ctrl-C, SIGTERM (`timeout`, a script's kill) and SIGHUP (the terminal closed) end
        // the call as its deadline would: the question is kept for a late answer, the result
        // is printed, and a terminal prompt gets the chance to put the terminal back.
        let interrupted = std::pin::pin!(crate::platform::signals::stop_signals());
        // The loopback form's address, for a person running this in a terminal.
        let notice = Box::new(|message: String| eprintln!("him: {message}"));
        let terminal = terminal.then(Terminal::open).flatten();
        let channels = ask::Channels::without_elicitation(terminal, notice);
        let result = match ask::ask(&pool, config, Box::new(prepared), channels, interrupted).await
        {
            ask::Asked::Done(result) => *result,
            // Only an MCP session offers elicitation; `him ask` never does.
            ask::Asked::InputRequired(_) => unreachable!("him ask offers no elicitation"),
        };
        // The panel that answered hears `accepted` (or the others the withdrawal) before
        // this process goes; otherwise it would tell the person the answer was not delivered.
        pool.close(crate::agent::pool::EXIT_WAIT).await;
        result
    }))
}

/// The result as JSON on stdout; exit 0 when it holds the person's answer.
pub(crate) fn print_result(result: &crate::agent::result::AskResult) -> Result<ExitCode, BoxError> {
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut stdout, result)?;
    writeln!(stdout)?;
    Ok(if result.is_answered() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `him ask --answer-of ID`: get_answer from a shell. Prints the result as JSON; exit 0
/// when it holds the person's answer.
fn answer_of(id: &str, timeout_ms: Option<u64>) -> Result<ExitCode, BoxError> {
    let config = Config::from_env()?;
    let wait = match timeout_ms {
        Some(0) => std::time::Duration::ZERO,
        given => config.wait_for(given),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let pool = Pool::for_runtime(&config.runtime, Identity::with_cwd_project(him_ask()))
            .with_matrix_route(config.matrix_route, config.reconnect_grace);
        let interrupted = std::pin::pin!(crate::platform::signals::stop_signals());
        let result = crate::agent::late::get_answer(
            &pool,
            &config,
            id,
            wait,
            crate::agent::result::Collect::AnswerOf,
            false,
            None,
            interrupted,
        )
        .await;
        pool.close(crate::agent::pool::EXIT_WAIT).await;
        result
    });
    let result = match result {
        Ok(result) => result,
        Err(err) => {
            eprintln!("him ask: --answer-of: {}", err.message);
            return Ok(ExitCode::from(EXIT_BAD_ARGUMENTS));
        }
    };
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut stdout, &result)?;
    writeln!(stdout)?;
    Ok(if result.is_answered() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn him_ask() -> AgentInfo {
    AgentInfo {
        name: "him ask".into(),
        title: None,
        version: Some(env!("CARGO_PKG_VERSION").into()),
        via: None,
    }
}

/// The form to ask, and the wait its JSON names (only `him ask form` has one).
fn build_form(kind: AskKind) -> Result<(ToolKind, Form, Option<u64>), ArgError> {
    let labels = |options: Vec<String>| options.into_iter().map(OptionArg::Label).collect();
    match kind {
        AskKind::Text {
            question,
            placeholder,
            default,
            multiline,
        } => {
            let args = AskTextArgs {
                question,
                placeholder: placeholder.unwrap_or_default(),
                default: default.unwrap_or_default(),
                multiline,
                timeout_ms: None,
            };
            args.asked()
        }
        AskKind::Choice {
            question,
            options,
            default,
            allow_free_text,
        } => {
            let args = AskChoiceArgs {
                question,
                options: labels(options),
                default: default.unwrap_or_default(),
                allow_free_text,
                timeout_ms: None,
            };
            args.asked()
        }
        AskKind::Multi {
            question,
            options,
            min,
            max,
        } => {
            let args = AskMultiSelectArgs {
                question,
                options: labels(options),
                min,
                max,
                timeout_ms: None,
            };
            args.asked()
        }
        AskKind::Confirm { question, default } => {
            let args = AskConfirmArgs {
                question,
                default,
                timeout_ms: None,
            };
            args.asked()
        }
        AskKind::Form { json } => {
            let text = if json == "-" {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|e| ArgError {
                        argument: "json".into(),
                        message: format!("cannot read stdin: {e}"),
                    })?;
                text
            } else {
                json
            };
            let args: AskFormArgs = serde_json::from_str(&text).map_err(|e| ArgError {
                argument: "json".into(),
                message: format!("not valid ask_form arguments: {e}"),
            })?;
            args.asked()
        }
    }
}
