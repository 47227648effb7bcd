//! The MCP server. (Placeholder until the server lands.)
use std::process::ExitCode;

use crate::BoxError;
use crate::cli::ServeArgs;

pub fn serve(_args: ServeArgs) -> Result<ExitCode, BoxError> {
    Err("`him serve` is not built yet".into())
}
