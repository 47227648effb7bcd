//! How the binary knows it was started by a browser as a native-messaging host.
//! (Placeholder until the host lands.)

use std::ffi::OsString;
use std::process::ExitCode;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrowserLaunch {
    Manual,
}

pub fn browser_launch(_args: &[OsString]) -> Option<BrowserLaunch> {
    None
}

pub fn run_host(_launch: BrowserLaunch) -> ExitCode {
    ExitCode::FAILURE
}
