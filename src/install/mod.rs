//! Browser host manifests: print, install, uninstall, doctor; MCP client snippets.
//! (Placeholder: filled in by the install work, issue 4.)

use std::process::ExitCode;

use crate::BoxError;
use crate::cli::{ConfigArgs, DoctorArgs, InstallArgs, ManifestArgs, UninstallArgs};

pub fn install(_args: &InstallArgs) -> Result<ExitCode, BoxError> {
    Err("`him install` is not built yet".into())
}
pub fn uninstall(_args: &UninstallArgs) -> Result<ExitCode, BoxError> {
    Err("`him uninstall` is not built yet".into())
}
pub fn doctor(_args: &DoctorArgs) -> Result<ExitCode, BoxError> {
    Err("`him doctor` is not built yet".into())
}
pub fn manifest(_args: &ManifestArgs) -> Result<ExitCode, BoxError> {
    Err("`him manifest` is not built yet".into())
}
pub fn config(_args: &ConfigArgs) -> Result<ExitCode, BoxError> {
    Err("`him config` is not built yet".into())
}
