//! `him ask`. (Placeholder until the agent side lands.)
use std::process::ExitCode;

use crate::BoxError;
use crate::cli::AskArgs;

pub fn run(_args: AskArgs) -> Result<ExitCode, BoxError> {
    Err("`him ask` is not built yet".into())
}
