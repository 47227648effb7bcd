//! The operating system's part, below everything but the runtime rules it shares with
//! [`crate::wire::runtime`] (the home folder, from the same probe):
//!
//! - [`state_dir`] — the persistent per-user state folder (HTTP tokens, kept answers).
//! - [`logging`] — logs to stderr, always.
//! - [`clock`] — now, in Unix milliseconds.
//! - [`random`] — question ids and tokens.
//! - [`file`] — files replaced whole, links followed.
//! - [`spawn`] — starting the gateway or the Matrix bridge detached.
//! - [`signals`] — the signals that stop `him serve` and `him ask` (SIGINT, SIGTERM, SIGHUP).
//! - and, here, the one platform call no well-kept crate offers safely. Everything else of
//!   the OS goes through `nix` or the standard library.

pub mod clock;
pub mod file;
pub mod logging;
pub mod random;
pub mod signals;
pub mod spawn;
pub mod state_dir;

use std::path::PathBuf;

/// macOS's per-user temporary folder (`confstr(_CS_DARWIN_USER_TEMP_DIR)`, what `$TMPDIR`
/// normally holds), which the OS gives without the environment: MCP clients often start
/// `him serve` without `TMPDIR` (DESIGN.md §1). `None` elsewhere, or if the call fails.
#[cfg(target_os = "macos")]
pub fn darwin_user_temp_dir() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let mut buffer = vec![0u8; 1024];
    // SAFETY: confstr writes at most `buffer.len()` bytes, NUL included, into the buffer we
    // own and pass with its true length; it returns the length it needed (0 on failure).
    #[allow(unsafe_code)]
    let needed = unsafe {
        libc::confstr(
            libc::_CS_DARWIN_USER_TEMP_DIR,
            buffer.as_mut_ptr().cast(),
            buffer.len(),
        )
    };
    if needed == 0 || needed > buffer.len() {
        return None;
    }
    buffer.truncate(needed - 1);
    Some(PathBuf::from(std::ffi::OsString::from_vec(buffer)))
}

#[cfg(not(target_os = "macos"))]
pub fn darwin_user_temp_dir() -> Option<PathBuf> {
    None
}
