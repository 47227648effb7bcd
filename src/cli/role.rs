//! How the binary knows the browser started it as a native-messaging host. Browsers pass
//! no flags of ours: Chromium-family browsers pass the caller's origin
//! (`chrome-extension://<id>/`, plus `--parent-window=<n>` on Windows); Firefox passes the
//! host manifest's path and the add-on id.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrowserLaunch {
    /// `him host`, typed by a person or a test.
    Manual,
    Chromium {
        origin: String,
    },
    Firefox {
        manifest: OsString,
        addon_id: String,
    },
}

/// Recognises the browser's own arguments (`args[0]` is the program).
pub fn browser_launch(args: &[OsString]) -> Option<BrowserLaunch> {
    let rest: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
    if rest.len() != args.len().saturating_sub(1) {
        return None;
    }
    let origin = rest.iter().find(|a| a.starts_with("chrome-extension://"));
    if let Some(origin) = origin {
        let others_are_windows_flags = rest
            .iter()
            .all(|a| a == origin || a.starts_with("--parent-window="));
        if others_are_windows_flags {
            return Some(BrowserLaunch::Chromium {
                origin: (*origin).to_owned(),
            });
        }
        return None;
    }
    if let [manifest, addon_id] = rest[..]
        && manifest.ends_with(".json")
        && (addon_id.contains('@') || (addon_id.starts_with('{') && addon_id.ends_with('}')))
    {
        return Some(BrowserLaunch::Firefox {
            manifest: manifest.into(),
            addon_id: addon_id.to_owned(),
        });
    }
    None
}

/// Runs the host role to completion: 0 when the browser closed the port.
pub fn run_host(launch: BrowserLaunch) -> ExitCode {
    crate::platform::logging::init();
    tracing::debug!(?launch, "starting as native host");
    // One thread is plenty for a relay, and it starts faster and holds less memory.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("him host: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let dir = match crate::wire::runtime::runtime_dir() {
        Ok(located) => located.dir,
        Err(err) => {
            eprintln!("him host: {err}");
            return ExitCode::FAILURE;
        }
    };
    // The browser's pipe, read and written on the reactor rather than through tokio's
    // blocking pool (a thread hand-off per frame); falls back to that pool for anything
    // that is not a pipe.
    let outcome = runtime.block_on(async {
        // Agents on other machines and in containers reach this browser through the
        // gateway, which runs whenever forwarding is set up and the browser is open.
        tokio::spawn(crate::host::gateway::keep_running(dir.clone()));
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        crate::host::run(&dir, stdin, stdout, agent_stall()).await
    });
    // A stdin that is not a FIFO (a socket pair, as Node's child_process gives; any stdin
    // off Linux) is read on a blocking thread that nothing can interrupt. Dropping the
    // runtime would wait for that read, so a host told to stop by SIGTERM would live on
    // until the browser closed the pipe. Nothing is left to finish by now.
    runtime.shutdown_background();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("him host: {err}");
            ExitCode::FAILURE
        }
    }
}

/// `HIM_AGENT_STALL_MS` (at least 1 ms), read by the same rule as the server's `HIM_*_MS`;
/// the host cannot refuse to start over it, so a bad value is reported and the default used.
fn agent_stall() -> Duration {
    let default = crate::host::AGENT_STALL.as_millis() as u64;
    let lookup = |name: &str| std::env::var(name).ok();
    let ms = crate::config::millis(lookup, "HIM_AGENT_STALL_MS", default).unwrap_or_else(|err| {
        tracing::warn!("{err}; using {default} ms");
        default
    });
    Duration::from_millis(ms.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        std::iter::once("him")
            .chain(list.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn chromium_on_linux_and_macos_passes_the_origin() {
        assert_eq!(
            browser_launch(&args(&["chrome-extension://abc/"])),
            Some(BrowserLaunch::Chromium {
                origin: "chrome-extension://abc/".into()
            })
        );
    }

    #[test]
    fn chromium_on_windows_adds_the_parent_window() {
        assert!(matches!(
            browser_launch(&args(&["chrome-extension://abc/", "--parent-window=42"])),
            Some(BrowserLaunch::Chromium { .. })
        ));
    }

    #[test]
    fn firefox_passes_the_manifest_path_and_addon_id() {
        assert!(matches!(
            browser_launch(&args(&[
                "/home/u/.mozilla/native-messaging-hosts/dev.him.host.json",
                "him@him.dev"
            ])),
            Some(BrowserLaunch::Firefox { .. })
        ));
    }

    #[test]
    fn our_own_subcommands_are_not_mistaken_for_a_browser() {
        for list in [
            &["serve"][..],
            &["ask", "text", "q"],
            &["host"],
            &[],
            &["x.json", "y"],
        ] {
            assert_eq!(browser_launch(&args(list)), None, "{list:?}");
        }
    }
}
