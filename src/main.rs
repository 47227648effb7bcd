//! Entry point: recognise the browser's way of starting a native host, else parse the
//! command line, then run one role and turn its outcome into an exit code.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;
use him::BoxError;
use him::cli::{Cli, Command};

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some(launch) = him::cli::role::browser_launch(&args) {
        return him::cli::role::run_host(launch);
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("him: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, BoxError> {
    match cli.command {
        Command::Host => Ok(him::cli::role::run_host(
            him::cli::role::BrowserLaunch::Manual,
        )),
        Command::Serve(args) => him::mcp::serve(args),
        Command::Ask(args) => him::cli::ask::run(args),
        Command::Install(args) => him::install::install(&args),
        Command::Uninstall(args) => him::install::uninstall(&args),
        Command::Doctor(args) => him::install::doctor(&args),
        Command::Manifest(args) => him::install::manifest(&args),
        Command::Config(args) => him::install::config(&args),
        Command::Try => him::cli::demo::run(),
        Command::Extension(args) => him::install::write_extension(&args),
        Command::TerminalPrompt => him::fallback::terminal::run_prompt(),
        Command::Hook(args) => him::permission::hook::run(args),
        Command::Matrix(_) => run_matrix(),
        Command::Remote(args) => him::remote::run(&args),
        Command::Gateway => Ok(him::host::gateway::run_gateway()),
        Command::ForwardedDir(args) => him::remote::forwarded_dir(&args),
        Command::TidyForwarded => him::remote::tidy_forwarded(),
    }
}

/// `him matrix ARGS`: executes `him-matrix ARGS`, installed beside this binary, which holds
/// all the Matrix code (so no other role loads it). Only returns when that fails.
fn run_matrix() -> Result<ExitCode, BoxError> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()?;
    let matrix = exe.with_file_name("him-matrix");
    let args = std::env::args_os().skip(2);
    let err = std::process::Command::new(&matrix).args(args).exec();
    Err(format!(
        "cannot run {}: {err}; install the Matrix bridge beside him: cargo install --path matrix (in him's source folder)",
        matrix.display()
    )
    .into())
}
